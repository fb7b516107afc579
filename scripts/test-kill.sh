#!/usr/bin/env bash
# Kill test: a process killed inside the handler never hangs the others.
#
# testpmd is the primary (--mbcache=0: every packet reaches the handler; io
# forwarding between two net_null ports) on ptr_ring; examples mp_churn
# secondaries get and put bulks of 32 of its pool mb_pool_0 until killed:
#
#   random  KILL_ROUNDS (16) secondaries, each SIGKILLed at a random moment
#           (0.05-0.4 s after its first bulk; in a tight loop most of that
#           time is inside a ring side's lock);
#   forced  one secondary per crash site, parked inside the ring's critical
#           section (mp_churn --crash: a producer after k fills of its bulk, a
#           consumer before publishing head, a consumer after publishing head
#           and k clears), then SIGKILLed; then, with the primary restarted
#           on a newest-first pool (PTR_RING_ORDER=newest-first), a get that
#           takes back from the producer end, holding both sides' locks,
#           after k of its clears. Primary and secondary are the
#           crash-points build (target/crash), which no other build is.
#
# After each kill: the primary forwards again within a second (port 0's
# ipackets, by telemetry); then, forwarding stopped, the objects the dead
# process took with it (L) are gone from the ring and counted out by the
# handler, and no more: the ring holds L fewer objects and the handler's
# inflight count is L higher. L is exact for the forced kills (32-k for a
# producer dead after k fills: those reached the ring; 0 before head: its
# objects are still in the ring; 32 after head: it had taken them; k for a
# take-back dead after k clears: the uncleared stay in the ring) and at
# most one bulk for the random ones; a forced kill is one more lock
# takeover (two for a take-back: both sides) and the ring is never
# poisoned. At the end testpmd stops on SIGINT.
#
# Needs hugepages (secondaries map the primary's memory): with --no-huge in
# build/eal-mem.env it prints SKIP. Ends with "kill: N passed, M failed";
# logs in build/test-kill/.
#
# Environment: PTR_RING_LIB (the random phase's handler, default
# target/release/...), MP_CHURN (its secondary, default target/release/mp_churn),
# KILL_ROUNDS (16), KILL_FORCED (1; 0 skips the forced phase and its build).
set -uo pipefail
# shellcheck source=scripts/help.sh
source "$(dirname "${BASH_SOURCE[0]}")/help.sh"
help_if_asked "$@"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
# shellcheck source=scripts/eal-args.sh
source "$repo/scripts/eal-args.sh"

LIB=${PTR_RING_LIB:-$repo/target/release/librte_mempool_ptr_ring.so}
CHURN=${MP_CHURN:-$repo/target/release/mp_churn}
ROUNDS=${KILL_ROUNDS:-16}
FORCED=${KILL_FORCED:-1}
CARGO=${CARGO:-cargo}
logs=$repo/build/test-kill
mkdir -p "$logs"
results=()
# result PASS|FAIL NAME MESSAGE [LOG]: one line, and the log's tail on FAIL.
result() {
    results+=("$1")
    echo "$1 $2${3:+: $3}"
    if [[ $1 == FAIL && -f ${4:-} ]]; then
        tail -n 8 "$4" | sed 's/^/  | /'
    fi
}
pass() { result PASS "$1" "${2:-}"; }
fail() { result FAIL "$1" "$2" "${3:-}"; }
finish() {
    local n_fail n_pass
    n_fail=$(printf '%s\n' "${results[@]}" | grep -c '^FAIL$')
    n_pass=$(printf '%s\n' "${results[@]}" | grep -c '^PASS$')
    echo "kill: $n_pass passed, $n_fail failed"
    exit $((n_fail > 0))
}

if [[ $EAL_MEM == *--no-huge* ]]; then
    echo "SKIP kill: EAL mode is --no-huge: secondary processes need the primary's hugepage memory"
    finish
fi
command -v dpdk-testpmd >/dev/null || { fail setup "dpdk-testpmd missing (Debian package dpdk)"; finish; }
for f in "$LIB" "$CHURN"; do
    [[ -f $f ]] || { fail setup "$f missing; run: cargo build --release --workspace"; finish; }
done

prefix=ptrring_kill_$$
fifo=$logs/primary-stdin.$$
pri_pid=""
churn_pid=""
cleanup_prefix() { rm -rf "/var/run/dpdk/$1"; rm -f /dev/hugepages/"$1"map_* 2>/dev/null || true; }
stop_churn() {
    [[ -n $churn_pid ]] && { kill -KILL "$churn_pid" 2>/dev/null; wait "$churn_pid" 2>/dev/null; }
    churn_pid=""
}
# SIGINT, then SIGKILL after 10 s; sets pri_stopped_by_int.
stop_primary() {
    pri_stopped_by_int=0
    [[ -z $pri_pid ]] && return
    kill -INT "$pri_pid" 2>/dev/null
    local i
    for i in $(seq 50); do
        kill -0 "$pri_pid" 2>/dev/null || { pri_stopped_by_int=1; break; }
        sleep 0.2
    done
    kill -KILL "$pri_pid" 2>/dev/null
    wait "$pri_pid" 2>/dev/null
    exec 7>&-
    pri_pid=""
    rm -f "$fifo"
    cleanup_prefix "$prefix"
}
trap 'stop_churn; stop_primary' EXIT

# The reply to telemetry command $1 of the primary: the values of keys $2...
tel() {
    timeout 5 python3 - "$prefix" "$@" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(3)
s.connect(f"/var/run/dpdk/{sys.argv[1]}/dpdk_telemetry.v2")
s.recv(4096)
s.send(sys.argv[2].encode())
reply = next(iter(json.loads(s.recv(1 << 16)).values()))
print(" ".join(str(reply.get(k, 0)) for k in sys.argv[3:]))
PY
}
ipackets() { tel /ethdev/stats,0 ipackets; }
# in_ring, inflight, populated, lock takeovers, poisoned, forwarding
# stopped meanwhile (testpmd's own mbufs are all back then).
measure() {
    echo stop >&7
    sleep 0.5
    local v
    v=$(tel /ptr_ring/stats,mb_pool_0 in_ring inflight populated lock_takeovers ring_poisoned) || return 1
    echo start >&7
    read -r in_ring inflight populated takeovers poisoned <<<"$v"
}

# start_primary LIB: testpmd on LIB's ptr_ring, forwarding.
start_primary() {
    cleanup_prefix "$prefix"
    rm -f "$fifo"
    mkfifo "$fifo"
    plog=$logs/primary-$(basename "$(dirname "$(dirname "$1")")").log
    timeout -s INT 300 stdbuf -oL dpdk-testpmd -l 0-1 --file-prefix "$prefix" --no-pci \
        --vdev net_null0 --vdev net_null1 -d "$1" --mbuf-pool-ops-name ptr_ring \
        --log-level=pmd.mempool.ptr_ring:info \
        -- -i --mbcache=0 --total-num-mbufs=2048 --forward-mode=io <"$fifo" >"$plog" 2>&1 &
    pri_pid=$!
    exec 7>"$fifo"
    for _ in $(seq 150); do
        if grep -q 'testpmd> ' "$plog"; then
            echo start >&7
            sleep 0.5
            return 0
        fi
        kill -0 "$pri_pid" 2>/dev/null || return 1
        sleep 0.2
    done
    return 1
}

# start_churn BINARY LOG [mp_churn args...]: a secondary, after its first bulk.
start_churn() {
    local bin=$1 log=$2
    shift 2
    "$bin" --proc-type=secondary --file-prefix "$prefix" --no-pci --no-telemetry \
        --lcores 2@0 --log-level=pmd.mempool.ptr_ring:info -- --pool mb_pool_0 --bulk 32 "$@" \
        >"$log" 2>&1 &
    churn_pid=$!
    for _ in $(seq 100); do
        grep -q 'mp_churn: running' "$log" && return 0
        kill -0 "$churn_pid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# forwards_again: port 0 receives again within a second of now.
forwards_again() {
    local a b
    a=$(ipackets) || return 1
    for _ in $(seq 10); do
        sleep 0.1
        b=$(ipackets) || return 1
        [[ $b -gt $a ]] && return 0
    done
    return 1
}

# kill_and_check NAME LOG EXPECT [SIDES]: SIGKILL the secondary, then the
# checks; EXPECT is L, the objects the dead process took with it, or "bulk"
# for 0 to 32; SIDES the lock takeovers a forced kill makes (1). Returns
# non-zero when the primary no longer forwards (the phase then ends).
kill_and_check() {
    local name=$1 log=$2 expect=$3 sides=${4:-1} before_r=$in_ring before_i=$inflight before_t=$takeovers
    kill -KILL "$churn_pid" 2>/dev/null
    wait "$churn_pid" 2>/dev/null
    churn_pid=""
    if ! forwards_again; then
        fail "$name" "the primary did not forward within 1 s of the kill" "$plog"
        return 1
    fi
    if ! measure; then
        fail "$name" "no telemetry from the primary" "$plog"
        return 1
    fi
    # Lost: gone from the ring; counted out: the handler's inflight change.
    local lost=$((before_r - in_ring)) out=$((inflight - before_i)) dt=$((takeovers - before_t))
    local ok=1
    [[ $out -eq $lost ]] || ok=0
    if [[ $expect == bulk ]]; then
        [[ $lost -ge 0 && $lost -le 32 ]] || ok=0
    else
        [[ $lost -eq $expect && $dt -eq $sides ]] || ok=0
    fi
    [[ $poisoned -eq 0 ]] || ok=0
    if [[ $ok -eq 1 ]]; then
        pass "$name" "forwards again; $lost objects lost with it, counted out; takeovers +$dt"
    else
        fail "$name" "$lost objects lost (expected $expect), inflight +$out, takeovers +$dt, poisoned $poisoned" "$log"
    fi
}

# sigint_stops NAME: the primary stops on SIGINT (within 10 s).
sigint_stops() {
    stop_primary
    if [[ $pri_stopped_by_int -eq 1 ]]; then
        pass "$1" "testpmd stopped on SIGINT"
    else
        fail "$1" "testpmd did not stop on SIGINT within 10 s" "$plog"
    fi
}

# ------------------------------------------------------------------ random
if start_primary "$LIB" && measure; then
    echo "kill: random phase: $ROUNDS kills; pool: $in_ring in the ring, $populated populated"
    for i in $(seq "$ROUNDS"); do
        clog=$logs/churn-random-$i.log
        if ! start_churn "$CHURN" "$clog"; then
            fail "random-$i" "mp_churn did not start" "$clog"
            stop_churn
            continue
        fi
        sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.3f", 0.05 + (r % 350) / 1000 }')"
        kill_and_check "random-$i" "$clog" bulk || break
    done
    sigint_stops random-sigint
else
    fail random "testpmd primary did not start" "${plog:-}"
    stop_primary
fi

# ------------------------------------------------------------------ forced
if [[ $FORCED -eq 1 ]]; then
    crash=$repo/target/crash/release-test
    echo "kill: building the crash-points handler and mp_churn into target/crash"
    if ! { "$CARGO" build --profile release-test --target-dir target/crash -p pmd-glue-so -p mempool --features mempool/crash-points &&
        "$CARGO" build --profile release-test --target-dir target/crash -p examples --bin mp_churn --features crash-points; } \
        >"$logs/build-crash.log" 2>&1; then
        fail forced "cannot build the crash-points handler" "$logs/build-crash.log"
        finish
    fi
    # forced_site SITE EXPECT SIDES: one secondary parked at SITE, killed.
    forced_site() {
        local site=$1 clog=$logs/churn-forced-${1/:/-}.log parked=0
        if ! start_churn "$crash/mp_churn" "$clog" --crash "$site" --after-ms 100; then
            fail "forced-$site" "mp_churn did not start" "$clog"
            stop_churn
            return 0
        fi
        for _ in $(seq 50); do
            grep -q 'crash point reached' "$clog" && { parked=1; break; }
            sleep 0.1
        done
        if [[ $parked -eq 0 ]]; then
            fail "forced-$site" "mp_churn never reached the crash point" "$clog"
            stop_churn
            return 0
        fi
        kill_and_check "forced-$site" "$clog" "$2" "$3"
    }
    if start_primary "$crash/librte_mempool_ptr_ring.so" && measure; then
        for site in fill:0 fill:13 fill:32 head clear:0 clear:9; do
            case $site in
            fill:*) expect=$((32 - ${site#fill:})) ;;
            head) expect=0 ;;
            clear:*) expect=32 ;;
            esac
            forced_site "$site" "$expect" 1 || break
        done
        sigint_stops forced-sigint
    else
        fail forced "testpmd primary (crash-points build) did not start" "${plog:-}"
        stop_primary
    fi
    # A take-back holds both sides: the consumer's lock, then the
    # producer's; k clears made, the rest of its bulk still in the ring.
    if PTR_RING_ORDER=newest-first start_primary "$crash/librte_mempool_ptr_ring.so" && measure; then
        order=$(tel /ptr_ring/stats,mb_pool_0 order) || order=unknown
        if [[ $order != newest_first ]]; then
            fail forced-takeback "mb_pool_0 gets '$order', not newest_first" "$plog"
        else
            for k in 0 9; do
                forced_site "takeback:$k" "$k" 2 || break
            done
        fi
        sigint_stops forced-takeback-sigint
    else
        fail forced-takeback "testpmd primary (newest first) did not start" "${plog:-}"
        stop_primary
    fi
fi
finish
