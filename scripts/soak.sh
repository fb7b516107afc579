#!/usr/bin/env bash
# Soak: dpdk-testpmd with the ptr_ring handler forwards between two net_null
# ports (lcore 1, io forwarding, DPDK's mbuf cache off) while its ports are
# stopped and restarted over and over, commands fed on stdin:
#
#   start, then { sleep 1-2 s; stop; port stop all; port start all; start }
#   until SECONDS (default 60) have passed, then stop, quit.
#
# Passes when mb_pool_0's ops name, read through telemetry before the first
# start (scripts/pool-ops.sh), is ptr_ring, testpmd exits 0 (no crash), every
# forwarding period forwarded packets, and at quit (testpmd frees its pools)
# the handler logs
#   PTR_RING: pool mb_pool_0 freed: every object returned
# i.e. every mbuf of the pool was back when it was freed. Prints
#   soak: PASS (N cycles, T s)
# or fails non-zero. `make test` runs it shortened (`bash scripts/soak.sh 10`);
# the full soak is `bash scripts/soak.sh` (60 s) or any longer duration.
#
# Afterwards a short run with testpmd's default mbuf cache (SOAK_DEFAULT_CACHE_SECONDS,
# default 3; 0 skips it) shows what the handler reports there: DPDK's
# per-lcore caches still hold objects when testpmd frees the pool, which
# rte_mempool_free never takes back, so the handler's free line counts them
# as not returned. That run is reported, not asserted (beyond exit 0, traffic
# and the pool's ops name).
#
# Logs: build/soak/.
set -euo pipefail
# shellcheck source=scripts/help.sh
source "$(dirname "${BASH_SOURCE[0]}")/help.sh"
help_if_asked "$@"

# shellcheck source=scripts/eal-args.sh
source "$(dirname "${BASH_SOURCE[0]}")/eal-args.sh"
# shellcheck source=scripts/pool-ops.sh
source "$(dirname "${BASH_SOURCE[0]}")/pool-ops.sh"

secs=${1:-60}
if ! [[ $secs =~ ^[0-9]+$ ]] || ((secs == 0)); then
    echo "usage: $0 [SECONDS]   (default 60)" >&2
    exit 2
fi
default_cache_secs=${SOAK_DEFAULT_CACHE_SECONDS:-3}
lib=$repo_root/target/release/librte_mempool_ptr_ring.so
plugin_path_ok "$lib" || exit 1
[[ -f $lib ]] || { echo "soak: $lib missing: run 'make build' first" >&2; exit 1; }
command -v dpdk-testpmd >/dev/null || { echo "soak: dpdk-testpmd not found (make setup)" >&2; exit 1; }
logs=$repo_root/build/soak
mkdir -p "$logs"

fail() {
    echo "soak: FAIL: $*" >&2
    [[ -n ${log:-} && -f ${log:-} ]] && { echo "soak: last lines of $log:" >&2; tail -n 30 "$log" >&2; }
    exit 1
}

# Feeds the commands; waits for testpmd's prompt first so that start-up time
# does not eat the forwarding periods, then reads mb_pool_0's ops name through
# telemetry (file prefix $4; the replies in $log.tel). Writes the number of
# cycles to $2.
feed() {
    local log=$1 cycles_file=$2 duration=$3 prefix=$4 cycle=0 t0 waited=0 periods=(1 1.5 2)
    while ! grep -q 'testpmd> ' "$log" 2>/dev/null; do
        sleep 0.1
        waited=$((waited + 1))
        ((waited < 600)) || break # testpmd is checked by the caller
    done
    POOL_OPS_WAIT=10 pool_ops_query "$prefix" mb_pool_0 "$log.tel" >/dev/null
    t0=$SECONDS
    echo start
    while ((SECONDS - t0 < duration)); do
        sleep "${periods[cycle % 3]}"
        printf '%s\n' stop "port stop all" "port start all" start
        cycle=$((cycle + 1))
        echo "$cycle" >"$cycles_file"
    done
    sleep 1
    printf '%s\n' stop quit
    # Keep stdin open until testpmd is gone (it quits on EOF as well): the
    # first write after it exited fails (SIGPIPE) and ends the feeder.
    for ((waited = 0; waited < 300; waited++)); do
        sleep 0.1
        echo 2>/dev/null || break
    done
}

# run_testpmd LOG DURATION [testpmd args...]: sets rc, cycles and ops (the
# ops name of mb_pool_0).
run_testpmd() {
    local duration=$2 prefix=ptrring_soak_$$
    log=$1
    shift 2
    local cycles_file=$log.cycles
    rm -f "$log" "$cycles_file" "$log.tel"
    rm -rf "$(dpdk_runtime_dir "$prefix")"
    echo 0 >"$cycles_file"
    : >"$log"
    set +e
    # SC2086: EAL_MEM is a list of arguments. SC2094: feed only reads the log
    # (for the prompt) while testpmd writes it.
    # shellcheck disable=SC2086,SC2094
    feed "$log" "$cycles_file" "$duration" "$prefix" |
        timeout -k 5 $((duration + 90)) dpdk-testpmd -l 0-1 $EAL_MEM --file-prefix "$prefix" --no-pci \
            --vdev net_null0 --vdev net_null1 -d "$lib" --mbuf-pool-ops-name ptr_ring \
            --log-level=pmd.mempool.ptr_ring:info -- -i --forward-mode=io "$@" >"$log" 2>&1
    local st=("${PIPESTATUS[@]}")
    set -e
    rc=${st[1]}
    cycles=$(cat "$cycles_file")
    rm -rf "$(dpdk_runtime_dir "$prefix")"
    ops=$(pool_ops_from_tel "$log.tel" mb_pool_0)
}

# Forwarded packets of each stop ("Accumulated forward statistics" block).
rx_per_stop() {
    awk '/Accumulated forward statistics/ { acc = 1; next }
         acc && /RX-packets:/ { print $2; acc = 0 }' "$1"
}

echo "soak: dpdk-testpmd io forwarding net_null0 <-> net_null1 with ptr_ring, --mbcache=0, lcores 0-1," \
    "port stop/start cycles for ${secs} s (EAL ${EAL_MEM})"
t_start=$SECONDS
run_testpmd "$logs/soak-mbcache-0.log" "$secs" --mbcache=0
elapsed=$((SECONDS - t_start))
soak_cycles=$cycles

((rc == 0)) || fail "testpmd exited with status $rc (124/137: hung and killed; >128: crashed)"
[[ $ops == ptr_ring ]] || fail "mb_pool_0 ops_name '${ops:-no telemetry answer}', not ptr_ring (see $log.tel)"
((cycles >= 1)) || fail "no port stop/start cycle ran"
mapfile -t rx < <(rx_per_stop "$log")
((${#rx[@]} == cycles + 1)) || fail "expected $((cycles + 1)) forwarding periods (stop outputs), found ${#rx[@]}"
total=0
for i in "${!rx[@]}"; do
    ((rx[i] > 0)) || fail "forwarding period $((i + 1)) forwarded nothing"
    total=$((total + rx[i]))
done
starts=$(grep -c '^Port 0: ' "$log" || true)
((starts == cycles + 1)) || fail "port 0 started $starts times, expected $((cycles + 1))"
if grep -Ei 'fail|error|cannot|panic|segmentation|core dumped' "$log" | grep -v '^PTR_RING: .* freed: every object returned' >&2; then
    fail "error lines in the testpmd log (above)"
fi
free_line=$(grep '^PTR_RING: pool mb_pool_0 freed' "$log" || true)
[[ -n $free_line ]] || fail "no free line for mb_pool_0: testpmd did not free its pool at quit"
[[ $free_line == *"freed: every object returned"* ]] || fail "not every mbuf was back at exit: $free_line"
echo "soak: mb_pool_0 ops_name $ops (telemetry); $cycles port stop/start cycles, $((cycles + 1)) forwarding periods, $total packets received (min per period $(printf '%s\n' "${rx[@]}" | sort -n | head -1))"
echo "soak: $free_line"

if ((default_cache_secs > 0)); then
    run_testpmd "$logs/soak-mbcache-default.log" "$default_cache_secs"
    mapfile -t rx < <(rx_per_stop "$log")
    if ((rc != 0)) || ((${#rx[@]} == 0)) || ((rx[0] == 0)); then
        fail "default mbuf cache run: testpmd status $rc, forwarding periods ${#rx[@]}"
    fi
    [[ $ops == ptr_ring ]] || fail "default mbuf cache run: mb_pool_0 ops_name '${ops:-no telemetry answer}', not ptr_ring (see $log.tel)"
    echo "soak: default mbuf cache ($cycles cycles, not asserted): $(grep '^PTR_RING: pool mb_pool_0 freed' "$log" || echo 'no free line')"
fi

echo "soak: PASS ($soak_cycles cycles, $elapsed s)"
