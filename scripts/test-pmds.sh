#!/usr/bin/env bash
# ptr_ring behind PMDs that keep mbufs in descriptor rings of their own (the
# nearest this machine has to a NIC's RX ring): two dpdk-testpmd processes per
# check, both loading the handler (-d LIB --mbuf-pool-ops-name ptr_ring) with
# --mbcache=0 (DPDK's per-lcore cache off: every get and put reaches the
# handler, and nothing hides in a cache at exit). One side sends (txonly), the
# other receives (rxonly) for about 3 s; then both stop forwarding ("stop"),
# and exit ("quit"): testpmd stops and closes its port and frees mb_pool_0.
#
#   1. vhost_virtio   net_vhost (vhost-user backend, rxonly) <-
#                     net_virtio_user (frontend, txonly)
#   2. memif_copy     net_memif server (rxonly) <- client (txonly), copy mode
#   3. memif_zc       the same with zero-copy=yes on the client: the server
#                     reads the client's mbufs in place
#   4. vhost_pair     bench/vhost.sh's pair variant, one run of 2 blocks:
#                     vhost_pair sends from a ptr_ring, a ring_mp_mc and a
#                     stack pool, DPDK's cache of 250 on each, bursts of 512,
#                     over three virtio-user ports to a testpmd rxonly peer.
#                     Needs a rate from each pool in each block, ptr_ring's handler
#                     share at least 1 (a burst of 512 is above the cache,
#                     so each of its gets reaches the handler), and every
#                     object back at the free of the ptr_ring pool (the
#                     handler's report; vhost_pair itself fails when either
#                     pool misses an mbuf at the end).
#
# Each check needs: packets received by the rx side (the largest RX-packets
# that testpmd printed: memif zeroes its counters when the peer disconnects,
# so the exit summary can read 0), both pools on ptr_ring (mb_pool_0's ops
# name in each process, read through telemetry: scripts/pool-ops.sh), the
# handler's report at the free of both ("pool mb_pool_0 freed" in each
# process), and every object back in both pools ("freed: every object
# returned"). The one exception is memif_zc's client, whose PMD keeps the mbufs
# still in its rings at close: in zero-copy mode memif stores mbuf pointers in
# mq->buffers, the TX ring's until the server has read them and the next TX
# burst reclaims them, the RX ring's as posted buffers (refilled by any RX
# poll, testpmd's RX flush at start included), and 22.11's memif_disconnect
# and queue release free neither (rte_free(mq) only). The check accepts from
# 0 to both rings' slots (2 << rsize) kept by the client and prints the
# count; anything else fails. Zero-copy itself needs --single-file-segments
# (memif refuses zero-copy=yes without) and pool memory in EAL memsegs, which
# the client shares as memif regions: ptr_ring's pools are.
#
# Prints one PASS/FAIL/SKIP line per check, ends with
# "pmds: N passed, M failed" and exits non-zero on a failure. Logs and sockets
# in build/pmds/. Each process has a --file-prefix of its own, removed at the
# end. Under --no-huge (build/eal-mem.env) the checks run with
# --no-huge -m 512; one that cannot is a SKIP with the reason.
#
# Environment: PTR_RING_LIB (the handler .so), PTR_RING_EAL_ENV (a file like
# build/eal-mem.env to use instead), PTR_RING_PMDS_MEMIF_RSIZE (memif's
# log2 ring size, default 10: what the zero-copy client keeps follows it,
# e.g. 8 keeps at most 512).
set -euo pipefail
# shellcheck source=scripts/help.sh
source "$(dirname "${BASH_SOURCE[0]}")/help.sh"
help_if_asked "$@"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
# shellcheck source=scripts/eal-args.sh
source "$repo/scripts/eal-args.sh" # EAL_MODE
# shellcheck source=scripts/pool-ops.sh
source "$repo/scripts/pool-ops.sh" # which handler served a pool, from DPDK's side
if [[ -n ${PTR_RING_EAL_ENV:-} ]]; then
    # shellcheck source=/dev/null
    source "$PTR_RING_EAL_ENV"
fi
LIB=${PTR_RING_LIB:-$repo/target/release/librte_mempool_ptr_ring.so}
dir=$repo/build/pmds
mkdir -p "$dir"
TRAFFIC_S=3
MEMIF_LOG2_RING=${PTR_RING_PMDS_MEMIF_RSIZE:-10}

passed=0
failed=0
skipped=0
pass() { echo "PASS $1 ($2)"; passed=$((passed + 1)); }
fail() {
    echo "FAIL $1: $2"
    local f
    for f in "${@:3}"; do
        [[ -f $f ]] && { echo "  --- last lines of $f:"; tail -n 8 "$f" | awk '{ print "  | " $0 }'; }
    done
    failed=$((failed + 1))
}
skip() { echo "SKIP $1: $2"; skipped=$((skipped + 1)); }
finish() {
    local sk=""
    ((skipped > 0)) && sk=", $skipped skipped"
    echo "pmds: $passed passed, $failed failed$sk"
    ((failed == 0))
}

if [[ ! -f $LIB ]]; then
    fail setup "$LIB not found; run: cargo build --release -p pmd-glue-so"
    finish
    exit 1
fi

if [[ $EAL_MODE == hugepages ]]; then
    mem=()
else
    mem=(--no-huge -m 512)
fi

# testpmd runs interactive (-i --auto-start) and reads its commands from a
# FIFO per side, held open here (no EOF): "stop" on both sides first, so that
# no lcore polls a port any more when the ports close and memif or vhost tear
# the shared rings down, then "quit". (Stopped by SIGINT instead, each side
# closes its port while the peer still polls: 22.11's memif then crashes
# the peer now and then, with DPDK's default handler as with ptr_ring, since
# memif_disconnect unmaps the regions under the peer's polling lcore.)
prefix_base=ptrring_pmds_$$
pids=()
rx_fifo=$dir/rx-stdin.fifo
tx_fifo=$dir/tx-stdin.fifo
rm -f "$rx_fifo" "$tx_fifo"
mkfifo "$rx_fifo" "$tx_fifo"
exec 8<>"$rx_fifo" 9<>"$tx_fifo"
cleanup() {
    local p
    for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
    sleep 0.2
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
    rm -rf /var/run/dpdk/"${prefix_base}"_*
    rm -f "$dir"/*.sock "$rx_fifo" "$tx_fifo"
}
trap cleanup EXIT

# $1 log, $2 stdin FIFO, $3 file prefix, $4 lcores ("0,1 --main-lcore 0"),
# $5 forward mode, $6 vdev, rest: extra EAL arguments. Starts testpmd in the
# background, line-buffered (the log is polled), under a 30 s timeout (a
# guard: the commands end it long before);
# the pid of timeout (which passes SIGINT on to testpmd) goes to $started.
start_testpmd() {
    local log=$1 fifo=$2 prefix=$3 cores=$4 mode=$5 vdev=$6
    shift 6
    # shellcheck disable=SC2086 # cores is "LIST --main-lcore N"
    timeout -k 3 -s INT 30 stdbuf -oL dpdk-testpmd -l $cores --file-prefix "$prefix" --no-pci \
        "${mem[@]}" "$@" -d "$LIB" --mbuf-pool-ops-name ptr_ring \
        --log-level=mempool.ptr_ring:info --log-level=pmd.mempool.ptr_ring:info \
        --vdev "$vdev" -- -i --auto-start --mbcache=0 --total-num-mbufs=16384 --forward-mode="$mode" \
        <"$fifo" >"$log" 2>&1 &
    started=$!
    pids+=("$started")
}

# Largest "RX-packets: N" / "TX-packets: N" in a testpmd log.
max_count() { grep -o "$2-packets: *[0-9]*" "$1" | awk '{ if ($2 > m) m = $2 } END { print m + 0 }'; }
# The handler's accounting of mb_pool_0 at free: "ok", "kept N", "extra N" or "none".
pool_report() {
    local line
    line=$(grep -E 'PTR_RING: pool mb_pool_0 freed' "$1" | tail -n 1 || true)
    if [[ $line == *"freed: every object returned"* ]]; then
        echo ok
    elif [[ $line =~ freed\ with\ ([0-9]+)\ objects\ not\ returned ]]; then
        echo "kept ${BASH_REMATCH[1]}"
    elif [[ $line =~ freed\ with\ ([0-9]+)\ more\ objects ]]; then
        echo "extra ${BASH_REMATCH[1]}"
    else
        echo none
    fi
}

# $1 check name, $2 rx-side vdev, $3 tx-side vdev, $4 socket file (removed
# first, if any),
# $5 extra EAL argument of the tx side (or ""), $6 kept objects allowed on the
# tx side (0: none).
run_pair() {
    local name=$1 rx_vdev=$2 tx_vdev=$3 sock=$4 tx_extra=$5 tx_kept_max=$6
    local rxlog=$dir/$name-rx.log txlog=$dir/$name-tx.log rx_pid tx_pid rc_rx=0 rc_tx=0 i ops_rx ops_tx
    local t0=$SECONDS
    rm -f "$sock"
    # rx side: forwarding lcore 1; tx side: forwarding lcore 0.
    start_testpmd "$rxlog" "$rx_fifo" "${prefix_base}_${name}_rx" "0,1 --main-lcore 0" rxonly "$rx_vdev"
    rx_pid=$started
    # Ready once forwarding started (the vhost socket exists from the probe
    # on; memif's is an abstract socket by default in 22.11, no file).
    for ((i = 0; i < 100; i++)); do
        grep -q 'packet forwarding - ports=' "$rxlog" 2>/dev/null && break
        kill -0 "$rx_pid" 2>/dev/null || break
        sleep 0.1
    done
    if ! kill -0 "$rx_pid" 2>/dev/null || ! grep -q 'packet forwarding - ports=' "$rxlog"; then
        kill -INT "$rx_pid" 2>/dev/null || true
        wait "$rx_pid" || true
        if [[ $EAL_MODE != hugepages ]] && grep -qiE 'no-huge|hugepage|memfd' "$rxlog"; then
            skip "$name" "the rx side cannot start under --no-huge: $(grep -iE 'no-huge|hugepage|memfd' "$rxlog" | head -n 1)"
        else
            fail "$name" "rx side did not start forwarding" "$rxlog"
        fi
        return
    fi
    ops_rx=$(pool_ops_query "${prefix_base}_${name}_rx" mb_pool_0 "$dir/$name-rx.tel" "$rx_pid")
    start_testpmd "$txlog" "$tx_fifo" "${prefix_base}_${name}_tx" "0,1 --main-lcore 1" txonly "$tx_vdev" \
        ${tx_extra:+"$tx_extra"}
    tx_pid=$started
    for ((i = 0; i < 100; i++)); do
        grep -q 'packet forwarding - ports=' "$txlog" 2>/dev/null && break
        kill -0 "$tx_pid" 2>/dev/null || break
        sleep 0.1
    done
    ops_tx=$(pool_ops_query "${prefix_base}_${name}_tx" mb_pool_0 "$dir/$name-tx.tel" "$tx_pid")
    sleep "$TRAFFIC_S"
    # Counters while both run (memif zeroes them when the peer goes), then
    # stop both sides' forwarding, then close the ports and exit.
    echo "show port stats 0" >&9
    echo "show port stats 0" >&8
    sleep 0.3
    echo stop >&9
    echo stop >&8
    sleep 1
    echo quit >&9
    wait "$tx_pid" || rc_tx=$?
    echo quit >&8
    wait "$rx_pid" || rc_rx=$?
    rm -rf /var/run/dpdk/"${prefix_base}_${name}"_*

    local rx tx rep_rx rep_tx took=$((SECONDS - t0))
    rx=$(max_count "$rxlog" RX)
    tx=$(max_count "$txlog" TX)
    rep_rx=$(pool_report "$rxlog")
    rep_tx=$(pool_report "$txlog")
    local errs
    errs=$(grep -h 'PTR_RING: ERROR: ' "$rxlog" "$txlog" || true)
    if ((rc_tx != 0 || rc_rx != 0)); then
        if [[ $EAL_MODE != hugepages && $rx == 0 ]]; then
            skip "$name" "does not run under --no-huge (tx exit $rc_tx, rx exit $rc_rx): $(grep -iE 'fail|error' "$txlog" | head -n 1)"
        else
            fail "$name" "testpmd exit status: tx side $rc_tx, rx side $rc_rx" "$txlog" "$rxlog"
        fi
    elif [[ $ops_rx != ptr_ring || $ops_tx != ptr_ring ]]; then
        fail "$name" "mb_pool_0 ops_name (telemetry): rx side '${ops_rx:-no answer}', tx side '${ops_tx:-no answer}'; both must be ptr_ring" \
            "$dir/$name-rx.tel" "$dir/$name-tx.tel"
    elif [[ $rep_rx == none || $rep_tx == none ]]; then
        fail "$name" "no ptr_ring report at the free of mb_pool_0 (rx side: $rep_rx, tx side: $rep_tx)" "$txlog" "$rxlog"
    elif ((rx == 0)); then
        if [[ $EAL_MODE != hugepages ]]; then
            skip "$name" "no packet arrived under --no-huge (tx sent $tx): $(grep -iE 'fail' "$txlog" | head -n 1)"
        else
            fail "$name" "no packet received (tx side sent $tx)" "$txlog" "$rxlog"
        fi
    elif ((rx > tx)); then
        fail "$name" "rx side counted $rx packets, more than the $tx sent" "$txlog" "$rxlog"
    elif [[ -n $errs ]]; then
        fail "$name" "handler errors: $errs" "$txlog" "$rxlog"
    elif [[ $rep_rx != ok ]]; then
        fail "$name" "rx side's mb_pool_0: $rep_rx" "$rxlog"
    elif [[ $rep_tx != ok ]] && ! [[ $rep_tx =~ ^kept\ ([0-9]+)$ && ${BASH_REMATCH[1]} -le $tx_kept_max ]]; then
        fail "$name" "tx side's mb_pool_0: $rep_tx (allowed: at most $tx_kept_max kept)" "$txlog"
    else
        local kept=""
        [[ $rep_tx == kept* ]] && kept="tx side's PMD kept ${rep_tx#kept } mbufs at close (in its ring slots, at most $tx_kept_max; not freed by the PMD)"
        pass "$name" "$tx sent, $rx received; both mb_pool_0 ops_name ptr_ring (telemetry); rx side every object back; ${kept:-tx side every object back}; ${took} s"
    fi
}

echo "test-pmds: EAL mode $EAL_MODE, handler $LIB"

run_pair vhost_virtio \
    "net_vhost0,iface=$dir/vhost.sock,queues=1" \
    "net_virtio_user0,path=$dir/vhost.sock,queues=1" \
    "$dir/vhost.sock" --single-file-segments 0

run_pair memif_copy \
    "net_memif0,role=server,socket=$dir/memif.sock" \
    "net_memif0,role=client,socket=$dir/memif.sock" \
    "$dir/memif.sock" "" 0

run_pair memif_zc \
    "net_memif0,role=server,socket=$dir/memif.sock,rsize=$MEMIF_LOG2_RING" \
    "net_memif0,role=client,socket=$dir/memif.sock,rsize=$MEMIF_LOG2_RING,zero-copy=yes" \
    "$dir/memif.sock" --single-file-segments $((2 << MEMIF_LOG2_RING))

# The fourth check: bench/vhost.sh's pair variant (see the top).
check_vhost_pair() {
    local name=vhost_pair out=$dir/pair t0=$SECONDS lines share hs=(ptr_ring ring_mp_mc stack)
    rm -rf "$out"
    if ! BENCH_VHOST_VARIANTS=pair BENCH_VHOST_PAIR_RUNS=1 BENCH_VHOST_PAIR_BLOCKS=2 \
        BENCH_VHOST_PAIR_HANDLERS="${hs[*]}" bash bench/vhost.sh --out "$out" >"$dir/pair.log" 2>&1; then
        fail "$name" "bench/vhost.sh failed" "$dir/pair.log" "$out/logs/vhost-pair-16384-1-a.log"
        return
    fi
    lines=$(grep -c '^e2e2,vhost-pair,burst512,' "$out/e2e.csv" || true)
    share=$(awk -F, '$2 == "vhost-pair" && $4 == "ptr_ring" { print $9; exit }' "$out/e2e.csv")
    if [[ $lines != $((2 * ${#hs[@]})) ]] || awk -F, '$2 == "vhost-pair" && !($8 > 0) { bad = 1 } END { exit !bad }' "$out/e2e.csv"; then
        fail "$name" "want 2 blocks x ${#hs[@]} handlers with a rate each, got $lines records" "$out/e2e.csv" "$dir/pair.log"
    elif ! awk -v s="$share" 'BEGIN { exit !(s >= 1.0) }'; then
        fail "$name" "ptr_ring's handler share ${share:-none}, want at least 1 (bursts above the cache)" "$out/e2e.csv"
    elif ! grep -q "pool vhost_pair_0 freed: every object returned" "$out/logs/vhost-pair-16384-1-a.log"; then
        fail "$name" "no 'every object returned' at the free of the ptr_ring pool" "$out/logs/vhost-pair-16384-1-a.log"
    else
        pass "$name" "$(grep -o 'per block of 1 s: .*' "$dir/pair.log"); ptr_ring's handler share $share; every object returned; $((SECONDS - t0)) s"
    fi
}
check_vhost_pair

finish
