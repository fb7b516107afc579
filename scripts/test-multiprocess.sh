#!/usr/bin/env bash
# Multi-process checks: primary and secondary processes that number their
# mempool ops tables differently (other drivers, other load order, with and
# without the ptr_ring handler) must still agree on every pool's handler.
#
#   1. proc-info    testpmd primary on ptr_ring (-d), dpdk-proc-info -d
#                   secondary: mb_pool_0 shows ops_name ptr_ring, sane avail;
#   2. other-binary testpmd primary on ptr_ring, examples mp_peer secondary
#                   (links the handler, registers one more handler before
#                   EAL init): gets and puts mbufs of mb_pool_0, every one back.
#                   Where the primary's ops table is full (ptr_ring in its
#                   last slot: Debian's 24.11 and 25.11 drivers take 15 of
#                   16), mp_peer registers nothing more and loads
#                   librte_mempool_stack with -d first instead, which numbers
#                   its table unlike testpmd's within the limit;
#   3. no-ptr-ring-primary  testpmd primary without the handler (ring_mp_mc
#                   pools), dpdk-proc-info -d secondary: mb_pool_0 shows
#                   ring_mp_mc, and a stale ptr_ring marker file in the
#                   runtime directory does not make it ask the primary;
#   3b. no-ptr-ring-secondary  testpmd primary that loads the handler but
#                   keeps its ring_mp_mc pools, dpdk-proc-info secondary
#                   without it: mb_pool_0 shows ring_mp_mc (loading ptr_ring
#                   moved no other handler);
#   4. pdump        testpmd primary on ptr_ring forwarding, dpdk-pdump
#                   secondary without the handler: captures packets to a pcap
#                   file through its own ring_mp_mc pool (which the primary
#                   fills) and exits cleanly; the primary then frees
#                   mb_pool_0 with no handler error;
#
# dpdk-testpmd links a mempool driver (Debian: librte_mempool_dpaa), which
# therefore registers before the plugin directory's drivers: its ops table
# differs from that of dpdk-proc-info or dpdk-pdump even without ptr_ring,
# and DPDK's rule (same drivers, same order) has those tools load it first
# with -d. Checks 3, 3b and 4 do that for the tools that do not load
# ptr_ring, or whose primary does not, so they test that ptr_ring moves no
# other handler; checks 1 and 2 need no such help (the handshake aligns the
# whole table).
#   5. handshake    the secondaries' log line giving the time the ops-table
#                   handshake took at start;
#   6. two-copies   one testpmd loading the handler twice (two paths): one
#                   registration, the second copy says so and stays unused,
#                   mb_pool_0 runs on ptr_ring (DPDK's dump of the pool);
#   7. missing-handler  mp_peer primary with a pool on a handler only it has
#                   (mp_peer_extra; in a full table it takes over the slot
#                   of another driver), dpdk-proc-info -d secondary: the pool
#                   shows that name, and the stub refuses it with an error
#                   naming the handler.
#   8. other-build  a testpmd primary of one build, a dpdk-proc-info
#                   secondary of another (the accounting feature on / off),
#                   both ways: the secondary refuses the pool with an error
#                   naming both builds;
#   9. handshake-refused  a primary that serves its ops table but answers
#                   the handshake malformed, in another format version, or
#                   not at all (the other build's test hook,
#                   PTR_RING_TEST_HANDSHAKE_REPLY): the secondary says why
#                   at ERR and refuses the primary's ptr_ring pool, whose
#                   index still names ptr_ring there.
#
# Needs hugepages (secondaries attach to the primary's shared memory): with
# --no-huge in build/eal-mem.env it prints SKIP and exits 0. Each check uses a
# --file-prefix of its own, removed afterwards. Ends with
# "multiprocess: N passed, M failed"; exits non-zero if a check failed.
# Logs go to build/test-multiprocess/.
#
# Environment: PTR_RING_LIB (the handler .so, default target/release/...),
# PTR_RING_OTHER_LIB (another build of it for checks 8 and 9, default
# target/release-test/...: cargo build --profile release-test -p pmd-glue-so
# --no-default-features --features test-hooks),
# PTR_RING_EAL_ENV (a file like build/eal-mem.env to use instead of it).
set -uo pipefail
# shellcheck source=scripts/help.sh
source "$(dirname "${BASH_SOURCE[0]}")/help.sh"
help_if_asked "$@"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
# shellcheck source=scripts/eal-args.sh
source "$repo/scripts/eal-args.sh"
# shellcheck source=scripts/pool-ops.sh
source "$repo/scripts/pool-ops.sh" # which handler served a pool, from DPDK's side
if [[ -n ${PTR_RING_EAL_ENV:-} ]]; then
    # shellcheck source=/dev/null
    source "$PTR_RING_EAL_ENV"
fi

LIB=${PTR_RING_LIB:-$repo/target/release/librte_mempool_ptr_ring.so}
PEER=$repo/target/release/mp_peer
OTHER_LIB=${PTR_RING_OTHER_LIB:-$repo/target/release-test/librte_mempool_ptr_ring.so}
logs=$repo/build/test-multiprocess
mkdir -p "$logs"
passed=0
failed=0
pass() { echo "PASS $1${2:+ ($2)}"; passed=$((passed + 1)); }
fail() {
    echo "FAIL $1: $2"
    [[ -n ${3:-} && -f ${3:-} ]] && { echo "  --- last lines of $3:"; tail -n 12 "$3" | awk '{ print "  | " $0 }'; }
    failed=$((failed + 1))
}
finish() {
    echo "multiprocess: $passed passed, $failed failed"
    [[ $failed -eq 0 ]]
    exit
}

if [[ $EAL_MEM == *--no-huge* ]]; then
    echo "SKIP multiprocess: EAL mode is --no-huge: secondary processes need the primary's hugepage memory"
    finish
fi
for f in "$LIB" "$PEER" "$OTHER_LIB"; do
    [[ -f $f ]] || { fail setup "$f missing; run: cargo build --release --workspace"; finish; }
done
for t in dpdk-testpmd dpdk-proc-info dpdk-pdump; do
    command -v "$t" >/dev/null || { fail setup "$t missing (Debian package dpdk)"; finish; }
done

# The mempool drivers testpmd links, as -d options in its load order.
pmd_dir=$(pkg-config --variable=libdir libdpdk)/dpdk/$(basename "$(ls -d "$(pkg-config --variable=libdir libdpdk)"/dpdk/pmds-* | head -1)")
testpmd_drivers=()
for l in $(ldd "$(command -v dpdk-testpmd)" | grep -o 'librte_mempool_[a-z0-9_]*\.so' | sort -u); do
    [[ -e $pmd_dir/$l ]] && testpmd_drivers+=(-d "$pmd_dir/$l")
done
echo "multiprocess: mempool drivers linked into dpdk-testpmd: ${testpmd_drivers[*]:-none}"
# Slots of DPDK's mempool ops table (rte_mempool.h).
max_ops=$(sed -n 's/^#define RTE_MEMPOOL_MAX_OPS_IDX *\([0-9]*\).*/\1/p' \
    "$(dirname "$(find "$(pkg-config --variable=includedir libdpdk)" -name rte_mempool.h -print -quit)")/rte_mempool.h")
[[ -n $max_ops ]] || { fail setup "RTE_MEMPOOL_MAX_OPS_IDX not found in rte_mempool.h"; finish; }
peer_args=()

prefix_base="ptrring_mpt_$$"
pri_pid=""
fifo=$logs/primary-stdin.$$
cleanup_prefix() { rm -rf "/var/run/dpdk/$1"; rm -f /dev/hugepages/"$1"map_* 2>/dev/null || true; }
# Closes the primary's stdin (testpmd then exits as after "quit" / Enter),
# then SIGINT, then SIGKILL, each after a grace period.
stop_primary() {
    [[ -z $pri_pid ]] && return
    exec 7>&-
    local i
    for i in $(seq 75); do
        kill -0 "$pri_pid" 2>/dev/null || break
        [[ $i -eq 50 ]] && kill -INT "$pri_pid" 2>/dev/null
        sleep 0.2
    done
    kill -KILL "$pri_pid" 2>/dev/null
    wait "$pri_pid" 2>/dev/null
    pri_rc=$?
    pri_pid=""
    rm -f "$fifo"
}
trap 'stop_primary; for p in /var/run/dpdk/${prefix_base}_*; do [[ -e $p ]] && cleanup_prefix "$(basename "$p")"; done' EXIT

# start_primary PREFIX LOG [extra EAL args...] -- [testpmd args...]
# testpmd as primary with two net_null ports, its stdin a FIFO this script
# holds open (testpmd exits at EOF); waits until it is ready.
start_primary() {
    local prefix=$1 log=$2
    shift 2
    local eal=() app=()
    while [[ $# -gt 0 && $1 != -- ]]; do eal+=("$1"); shift; done
    [[ $# -gt 0 ]] && shift
    app=("$@")
    cleanup_prefix "$prefix"
    rm -f "$fifo"
    mkfifo "$fifo"
    timeout -s INT 120 stdbuf -oL dpdk-testpmd -l 0-1 --file-prefix "$prefix" \
        --no-pci --vdev net_null0 --vdev net_null1 \
        --log-level=pmd.mempool.ptr_ring:debug "${eal[@]}" \
        -- --total-num-mbufs=2048 "${app[@]}" <"$fifo" >"$log" 2>&1 &
    pri_pid=$!
    exec 7>"$fifo"
    for _ in $(seq 150); do
        if grep -qE 'Press enter to exit|testpmd> ' "$log"; then
            sleep 0.5
            return 0
        fi
        kill -0 "$pri_pid" 2>/dev/null || return 1
        sleep 0.2
    done
    return 1
}

# secondary EAL arguments for PREFIX
# (dpdk-proc-info and dpdk-pdump add --proc-type=secondary themselves, and
# 25.11's argument parser refuses it twice; mp_peer is given it.)
sec_eal() { echo "--file-prefix $1 --no-pci --no-telemetry --log-level=pmd.mempool.ptr_ring:debug"; }

handshake_lines() { grep -ho 'PTR_RING: ops table synchronised with the primary.*' "$@" 2>/dev/null; }

# ------------------------------------------------------------------ 1, 2
p=${prefix_base}_a
log=$logs/primary-ptr-ring.log
if start_primary "$p" "$log" -d "$LIB" --mbuf-pool-ops-name ptr_ring -- -i; then
    # shellcheck disable=SC2046
    timeout 30 dpdk-proc-info $(sec_eal "$p") -d "$LIB" -- --show-mempool=mb_pool_0 \
        >"$logs/proc-info-ptr-ring.log" 2>&1
    rc=$?
    info=$(grep -o 'ops_index [0-9]* ops_name [a-z_0-9]*' "$logs/proc-info-ptr-ring.log" | head -1)
    # ptr_ring registers after every other handler: in the last slot, the
    # table is full.
    peer_order=()
    if [[ $info == "ops_index $((max_ops - 1)) ops_name ptr_ring" ]]; then
        peer_order=(-d "$pmd_dir/librte_mempool_stack.so")
        peer_args=(--no-extra)
        echo "multiprocess: the primary's ops table is full ($max_ops handlers): mp_peer numbers its table by load order (${peer_order[*]}) instead of one more handler"
    fi
    avail=$(grep -oE 'avail \([0-9]+\)' "$logs/proc-info-ptr-ring.log" | head -1 | tr -dc 0-9)
    if [[ $rc -eq 0 && $info == *"ops_name ptr_ring" && -n $avail && $avail -gt 0 && $avail -le 2048 ]]; then
        pass proc-info "$info, avail $avail of 2048"
    else
        fail proc-info "rc $rc, '${info:-no ops line}', avail '${avail}'" "$logs/proc-info-ptr-ring.log"
    fi

    # shellcheck disable=SC2046
    timeout 30 "$PEER" -l 1 --proc-type=secondary $(sec_eal "$p") "${peer_order[@]}" -- --pool mb_pool_0 --gets 1024 \
        --expect-ops ptr_ring "${peer_args[@]}" \
        >"$logs/mp-peer.log" 2>&1
    rc=$?
    if [[ $rc -eq 0 ]] && grep -q 'mp_peer: OK' "$logs/mp-peer.log"; then
        pass other-binary "$(grep -o 'ops_index [0-9]* ops_name [a-z_0-9]*' "$logs/mp-peer.log"), $(grep -o 'OK: .*' "$logs/mp-peer.log")"
    else
        fail other-binary "mp_peer exit $rc" "$logs/mp-peer.log"
    fi
else
    fail proc-info "testpmd primary did not start" "$log"
    fail other-binary "testpmd primary did not start" "$log"
fi
stop_primary
cleanup_prefix "$p"

# ------------------------------------------------------------------ 3
p=${prefix_base}_b
log=$logs/primary-ring.log
if start_primary "$p" "$log" -- -i; then
    touch -d '1 hour ago' "/var/run/dpdk/$p/ptr_ring_ops_table"
    # shellcheck disable=SC2046
    timeout 30 dpdk-proc-info $(sec_eal "$p") "${testpmd_drivers[@]}" -d "$LIB" \
        -- --show-mempool=mb_pool_0 >"$logs/proc-info-ring.log" 2>&1
    rc=$?
    info=$(grep -o 'ops_index [0-9]* ops_name [a-z_0-9]*' "$logs/proc-info-ring.log" | head -1)
    # A marker left by an earlier primary with ptr_ring must not make the
    # secondary ask (and wait) in vain.
    if [[ $rc -eq 0 && $info == *"ops_name ring_mp_mc" ]] &&
        grep -q 'does not serve its ops table (.*left by an earlier primary)' "$logs/proc-info-ring.log"; then
        pass no-ptr-ring-primary "$info, no handshake asked"
    else
        fail no-ptr-ring-primary "rc $rc, '${info:-no ops line}' (primary's pool is ring_mp_mc)" "$logs/proc-info-ring.log"
    fi
else
    fail no-ptr-ring-primary "testpmd primary did not start" "$log"
fi
stop_primary
cleanup_prefix "$p"

# ------------------------------------------------------------------ 3b
p=${prefix_base}_d
log=$logs/primary-ring-with-lib.log
if start_primary "$p" "$log" -d "$LIB" -- -i; then
    # shellcheck disable=SC2046
    timeout 30 dpdk-proc-info $(sec_eal "$p") "${testpmd_drivers[@]}" \
        -- --show-mempool=mb_pool_0 >"$logs/proc-info-ring-nolib.log" 2>&1
    rc=$?
    info=$(grep -o 'ops_index [0-9]* ops_name [a-z_0-9]*' "$logs/proc-info-ring-nolib.log" | head -1)
    if [[ $rc -eq 0 && $info == *"ops_name ring_mp_mc" ]]; then
        pass no-ptr-ring-secondary "$info"
    else
        fail no-ptr-ring-secondary "rc $rc, '${info:-no ops line}' (primary's pool is ring_mp_mc)" "$logs/proc-info-ring-nolib.log"
    fi
else
    fail no-ptr-ring-secondary "testpmd primary did not start" "$log"
fi
stop_primary
cleanup_prefix "$p"

# ------------------------------------------------------------------ 4
p=${prefix_base}_c
log=$logs/primary-pdump.log
pcap=$logs/pdump-rx.pcap
rm -f "$pcap"
if start_primary "$p" "$log" -d "$LIB" --mbuf-pool-ops-name ptr_ring -- -i --forward-mode=io --mbcache=32; then
    # dpdk-pdump captures the RX of port 0 until SIGINT; forwarding stops as
    # soon as pdump is ready (net_null is fast). It starts before pdump:
    # testpmd refuses to start with pdump's own (unstarted) port present.
    echo start >&7
    timeout -s INT 30 stdbuf -oL dpdk-pdump -l 1 --file-prefix "$p" --no-pci "${testpmd_drivers[@]}" \
        -- --pdump "port=0,queue=*,rx-dev=$pcap" >"$logs/pdump.log" 2>&1 &
    pdump_pid=$!
    for _ in $(seq 200); do
        grep -q 'capture for' "$logs/pdump.log" && break
        kill -0 "$pdump_pid" 2>/dev/null || break
        sleep 0.05
    done
    # Until the first packets reach the pcap file (the primary enables
    # capture when pdump asks, after its port is up), at most 10 s.
    for _ in $(seq 200); do
        [[ $(stat -c %s "$pcap" 2>/dev/null || echo 0) -gt 1024 ]] && break
        kill -0 "$pdump_pid" 2>/dev/null || break
        sleep 0.05
    done
    echo stop >&7 # bounds the pcap: about 80 MB a second of forwarding
    sleep 0.5
    kill -INT "$pdump_pid" 2>/dev/null
    wait "$pdump_pid"
    rc=$?
    size=$(stat -c %s "$pcap" 2>/dev/null || echo 0)
    rm -f "$pcap"
    if ! kill -0 "$pri_pid" 2>/dev/null; then
        fail pdump "the testpmd primary died while dpdk-pdump ran" "$log"
    elif [[ $rc -eq 0 && $size -gt 1024 ]]; then
        pass pdump "dpdk-pdump exit 0, pcap $size bytes, $(grep -o 'packets dequeued:.*' "$logs/pdump.log" | tr -s '\t ' ' ')"
    else
        fail pdump "dpdk-pdump exit $rc, pcap $size bytes" "$logs/pdump.log"
    fi
else
    fail pdump "testpmd primary did not start" "$log"
fi
stop_primary
# (The free's take-back loop logs, at debug level, the objects left in
# DPDK's per-lcore caches as "pool exhausted": not an error.)
if grep -q 'PTR_RING: pool mb_pool_0 freed' "$log" &&
    ! grep -E 'PTR_RING: ((alloc|enqueue|dequeue|get_count) on pool|internal error)' "$log" | grep -qv 'pool exhausted'; then
    pass pdump-primary "primary exited, mb_pool_0 freed without handler errors"
else
    fail pdump-primary "primary: no clean free of mb_pool_0" "$log"
fi
cleanup_prefix "$p"

# ------------------------------------------------------------------ 5
mapfile -t hs < <(handshake_lines "$logs"/proc-info-ptr-ring.log "$logs"/mp-peer.log)
if [[ ${#hs[@]} -ge 2 ]]; then
    pass handshake "$(printf '%s; ' "${hs[@]#PTR_RING: }")"
else
    fail handshake "no handshake log line in the secondaries" "$logs/mp-peer.log"
fi

# ------------------------------------------------------------------ 7
p=${prefix_base}_e
log=$logs/primary-mp-peer.log
cleanup_prefix "$p"
rm -f "$fifo"
mkfifo "$fifo"
timeout -s INT 60 "$PEER" -l 0 --file-prefix "$p" --no-pci --no-telemetry --vdev net_null0 \
    --log-level=pmd.mempool.ptr_ring:debug -- --primary --pool mp_extra <"$fifo" >"$log" 2>&1 &
pri_pid=$!
exec 7>"$fifo"
for _ in $(seq 100); do
    grep -q 'mp_peer: ready' "$log" && break
    kill -0 "$pri_pid" 2>/dev/null || break
    sleep 0.1
done
if grep -q 'mp_peer: ready' "$log"; then
    # shellcheck disable=SC2046
    timeout 30 dpdk-proc-info $(sec_eal "$p") -d "$LIB" -- --show-mempool=mp_extra \
        >"$logs/proc-info-missing.log" 2>&1
    rc=$?
    info=$(grep -o 'ops_index [0-9]* ops_name [a-z_0-9]*' "$logs/proc-info-missing.log" | head -1)
    if [[ $rc -eq 0 && $info == *"ops_name mp_peer_extra" ]] &&
        grep -q 'handler "mp_peer_extra" (index [0-9]* in the primary) is not loaded in this process' "$logs/proc-info-missing.log"; then
        pass missing-handler "$info, refused by name"
    else
        fail missing-handler "rc $rc, '${info:-no ops line}'" "$logs/proc-info-missing.log"
    fi
else
    fail missing-handler "mp_peer primary did not start" "$log"
fi
stop_primary
cleanup_prefix "$p"

# ------------------------------------------------------------------ 6
dup=$repo/build/test-multiprocess/dup
mkdir -p "$dup"
cp "$LIB" "$dup/"
log=$logs/two-copies.log
# testpmd's dump_mempool prints DPDK's dump of the pool, with its ops name.
# shellcheck disable=SC2086 # EAL_MEM is a list of arguments
printf '%s\n' "$(testpmd_dump_mempool mb_pool_0)" quit | timeout 60 dpdk-testpmd -l 0-1 $EAL_MEM --no-pci --vdev net_null0 \
    -d "$LIB" -d "$dup/$(basename "$LIB")" --mbuf-pool-ops-name ptr_ring \
    --log-level=pmd.mempool.ptr_ring:debug -- -i --total-num-mbufs=2048 >"$log" 2>&1
rc=$?
regs=$(grep -c 'PTR_RING: mempool ops "ptr_ring" registered at index' "$log")
ops=$(pool_ops_from_dump "$log" mb_pool_0 | paste -sd ' ' -)
if [[ $rc -eq 0 && $regs -eq 1 && $ops == ptr_ring ]] && grep -q 'by another copy of the handler' "$log"; then
    pass two-copies "$(grep -o 'already registered at index [0-9]*' "$log"); mb_pool_0 ops_name ptr_ring (DPDK's dump)"
else
    fail two-copies "exit $rc, $regs registrations, mb_pool_0 ops_name '${ops:-none}'" "$log"
fi
rm -rf "$dup"

# ------------------------------------------------------------------ 8
# LIB has the default features (accounting on), OTHER_LIB accounting off.
for way in on-off off-on; do
    if [[ $way == on-off ]]; then
        pri_lib=$LIB sec_lib=$OTHER_LIB made=on runs=off
    else
        pri_lib=$OTHER_LIB sec_lib=$LIB made=off runs=on
    fi
    p=${prefix_base}_f
    log=$logs/primary-build-$way.log
    slog=$logs/proc-info-build-$way.log
    if start_primary "$p" "$log" -d "$pri_lib" --mbuf-pool-ops-name ptr_ring -- -i; then
        # shellcheck disable=SC2046
        timeout 30 dpdk-proc-info $(sec_eal "$p") -d "$sec_lib" -- --show-mempool=mb_pool_0 \
            >"$slog" 2>&1
        rc=$?
        want="ERROR: get_count on pool mb_pool_0: pool \"mb_pool_0\" was made by another build of the ptr_ring handler: build [0-9a-f]{16} \(accounting $made, DPDK [^)]*\) made it, this process runs build [0-9a-f]{16} \(accounting $runs, DPDK"
        if grep -qE "$want" "$slog"; then
            pass "other-build-$way" "$(grep -oE 'build [0-9a-f]{16} \(accounting [a-z]+' "$slog" | head -2 | tr -d '(' | paste -sd ';' | sed 's/;/ refused by /')"
        else
            fail "other-build-$way" "rc $rc, no refusal naming both builds" "$slog"
        fi
    else
        fail "other-build-$way" "testpmd primary did not start" "$log"
    fi
    stop_primary
    cleanup_prefix "$p"
done

# ------------------------------------------------------------------ 9
for mode in malformed version silent; do
    case $mode in
    malformed) cause='malformed reply: 2 bytes' ;;
    version) cause='the primary answers in format version [0-9]+, this process in [0-9]+' ;;
    silent) cause='no answer to ptr_ring_ops_table in [0-9]+ ms' ;;
    esac
    p=${prefix_base}_g
    log=$logs/primary-handshake-$mode.log
    slog=$logs/proc-info-handshake-$mode.log
    export PTR_RING_TEST_HANDSHAKE_REPLY=$mode
    start_primary "$p" "$log" -d "$OTHER_LIB" --mbuf-pool-ops-name ptr_ring -- -i
    started=$?
    unset PTR_RING_TEST_HANDSHAKE_REPLY
    if [[ $started -eq 0 ]]; then
        # shellcheck disable=SC2046
        timeout 30 dpdk-proc-info $(sec_eal "$p") -d "$OTHER_LIB" -- --show-mempool=mb_pool_0 \
            >"$slog" 2>&1
        rc=$?
        info=$(grep -o 'ops_index [0-9]* ops_name [a-z_0-9]*' "$slog" | head -1)
        if grep -qE "ERROR: ops-table handshake with the primary failed: $cause" "$slog" &&
            grep -q 'ERROR: get_count on pool mb_pool_0: pool "mb_pool_0" refused: the ops-table handshake' "$slog" &&
            [[ $info == *"ops_name ptr_ring" ]]; then
            pass "handshake-refused-$mode" "$info, $(grep -oE "$cause" "$slog" | head -1)"
        else
            fail "handshake-refused-$mode" "rc $rc, '${info:-no ops line}', no refusal" "$slog"
        fi
    else
        fail "handshake-refused-$mode" "testpmd primary did not start" "$log"
    fi
    stop_primary
    cleanup_prefix "$p"
done

finish
