# shellcheck shell=bash
# Sourced (not run): measures io-forwarding throughput with dpdk-testpmd on two
# net_null ports (RX allocates an mbuf per packet, TX frees it, so the rate is
# bound by the mempool get/put path).
#
#   testpmd_mpps [EXTRA_EAL_ARGS...] -- [EXTRA_TESTPMD_ARGS...]
#
# prints the forwarding rate in Mpps (packets received per second summed over
# both ports; median of the 1-second stats samples after the first) on stdout,
# and also leaves it in TESTPMD_MPPS, with the per-second values in
# TESTPMD_SAMPLES (only visible when not called inside $(...)).
#
# During testpmd's start-up (before the first stats period ends, which is not
# sampled) it reads the ops name of mb_pool_0 through telemetry
# (scripts/pool-ops.sh): the replies go to $TESTPMD_LOG.tel, the name to
# TESTPMD_OPS ("ptr_ring"; "ops_index N" for another handler; empty when
# telemetry gave no answer). After a call inside $(...), read it with
# `pool_ops_from_tel LOG.tel mb_pool_0`. So the extra EAL arguments must not
# include --no-telemetry or --file-prefix: each run gets a prefix of its own,
# removed afterwards. Example:
#
#   testpmd_mpps -d "$lib" --mbuf-pool-ops-name ptr_ring -- --mbcache=0
#
# Settings (environment):
#   TESTPMD_SECONDS  seconds of forwarding to sample (default 5)
#   TESTPMD_LOG      where testpmd's output goes (default build/testpmd.log)
#   TESTPMD_LCORES   EAL -l value (default 0-1: lcore 1 forwards)
#   TESTPMD_LCORE_ARGS  EAL lcore arguments instead of -l (e.g. "--lcores 0@0,1@1,2@0")
#   TESTPMD_VDEVS    the ports (default "--vdev net_null0 --vdev net_null1")
#   TESTPMD_RX_PORTS ports whose Rx-pps is summed (default: all)
#   TESTPMD_SHARE_PORTS  ports whose receive allocates a fresh mbuf per
#                    packet (net_null); when set, the handler share of
#                    mb_pool_0 is measured: objects ptr_ring handed out
#                    (/ptr_ring/stats: hold) per packet those ports received
#                    (/ethdev/stats: ipackets), between the ends of the first
#                    and of the last sampled stats block, both read through
#                    telemetry. It goes to TESTPMD_SHARE and to $TESTPMD_LOG.share
#                    ("-" where mb_pool_0 is not ptr_ring's; replies in
#                    $TESTPMD_LOG.c0 / .c1). About 0: DPDK's cache served
#                    every get, the handler was not on the path (a control).
#
# Also defines the summary helpers of the benchmark scripts: `median`
# (reads numbers separated by blanks or newlines on stdin, prints their
# median with 2 decimals), `spread` (their range, LO-HI), `swing` (highest
# over lowest) and `paired A B` (the per-round ratios B/A of two lists of
# rates measured in the same rounds).

# shellcheck source=scripts/eal-args.sh
source "$(dirname "${BASH_SOURCE[0]}")/eal-args.sh"
# shellcheck source=scripts/pool-ops.sh
source "$(dirname "${BASH_SOURCE[0]}")/pool-ops.sh"

TESTPMD_SAMPLES=""
TESTPMD_MPPS=""
TESTPMD_OPS=""
TESTPMD_SHARE=""

median() {
    tr ' ' '\n' | sed '/^$/d' | sort -g |
        awk '{ v[NR] = $1 } END { if (NR) printf "%.2f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
spread() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk 'NR==1{lo=$1} {hi=$1} END {printf "%.2f-%.2f", lo, hi}'; }
swing() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk 'NR==1{lo=$1} {hi=$1} END {printf "%.2f", (lo>0)?hi/lo:0}'; }
paired() {
    paste -d' ' <(tr ' ' '\n' <<<"$1" | sed '/^$/d') <(tr ' ' '\n' <<<"$2" | sed '/^$/d') |
        awk '$1 > 0 { printf "%.4f ", $2 / $1 }'
}

testpmd_mpps() {
    local eal_extra=() testpmd_extra=()
    while (($#)) && [[ $1 != -- ]]; do eal_extra+=("$1"); shift; done
    (($#)) && shift
    testpmd_extra=("$@")

    local secs=${TESTPMD_SECONDS:-5}
    local log=${TESTPMD_LOG:-$repo_root/build/testpmd.log}
    mkdir -p "$(dirname "$log")"

    # testpmd -a quits as soon as stdin reaches EOF: hold a pipe open.
    local keep keeper
    exec {keep}< <(exec sleep 3600)
    keeper=$!

    local lcores vdevs prefix=ptrring_rate_${BASHPID}_$RANDOM
    rm -rf "$(dpdk_runtime_dir "$prefix")"
    read -r -a lcores <<<"${TESTPMD_LCORE_ARGS:--l ${TESTPMD_LCORES:-0-1}}"
    read -r -a vdevs <<<"${TESTPMD_VDEVS:---vdev net_null0 --vdev net_null1}"
    # shellcheck disable=SC2086 # EAL_MEM is a list of arguments
    dpdk-testpmd "${lcores[@]}" $EAL_MEM --file-prefix "$prefix" --no-pci \
        "${vdevs[@]}" "${eal_extra[@]}" -- \
        -a --forward-mode=io --stats-period 1 "${testpmd_extra[@]}" \
        <&"$keep" >"$log" 2>&1 &
    local pid=$!
    # Start-up: the pool is populated before the ports start forwarding.
    TESTPMD_OPS=$(pool_ops_query "$prefix" mb_pool_0 "$log.tel" "$pid")

    # Wait for secs+1 stats blocks (the first covers start-up), then stop
    # testpmd the way a user would (SIGINT), with a hard deadline.
    local deadline=$((SECONDS + secs + 60)) blocks counted=""
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
        blocks=$(grep -c '^Port statistics =' "$log" 2>/dev/null || true)
        if [[ -n ${TESTPMD_SHARE_PORTS:-} && -z $counted ]] && ((${blocks:-0} >= 2)); then
            _testpmd_counters "$prefix" >"$log.c0"
            counted=1
        fi
        if ((${blocks:-0} > secs + 1)); then
            [[ -n ${TESTPMD_SHARE_PORTS:-} ]] && _testpmd_counters "$prefix" >"$log.c1"
            break
        fi
        sleep 0.2
    done
    kill -INT "$pid" 2>/dev/null || true
    local waited=0
    while kill -0 "$pid" 2>/dev/null && ((waited < 100)); do sleep 0.1; waited=$((waited + 1)); done
    kill -KILL "$pid" 2>/dev/null || true
    local rc=0
    wait "$pid" || rc=$?
    exec {keep}<&-
    kill "$keeper" 2>/dev/null || true
    wait "$keeper" 2>/dev/null || true
    rm -rf "$(dpdk_runtime_dir "$prefix")"

    TESTPMD_MPPS=""
    TESTPMD_SAMPLES=$(testpmd_samples <"$log" | tail -n +2 | tr '\n' ' ')
    if [[ -z $TESTPMD_SAMPLES ]] || ((rc != 0 && rc != 130)); then
        echo "testpmd-rate: no forwarding rate (testpmd exit status $rc); last lines of $log:" >&2
        tail -n 20 "$log" >&2
        return 1
    fi
    TESTPMD_MPPS=$(median <<<"$TESTPMD_SAMPLES")
    if [[ -n ${TESTPMD_SHARE_PORTS:-} ]]; then
        TESTPMD_SHARE=$(handler_share "$log.c0" "$log.c1" ipackets)
        TESTPMD_SHARE=${TESTPMD_SHARE%% *}
        [[ -n $TESTPMD_SHARE ]] || { echo "testpmd-rate: no handler share from $log.c0, $log.c1" >&2; return 1; }
        echo "$TESTPMD_SHARE" >"$log.share"
    fi
    echo "$TESTPMD_MPPS"
}

# _testpmd_counters PREFIX: telemetry replies, one a line, in this order:
# /ptr_ring/stats of mb_pool_0, then /ethdev/stats of each port of
# TESTPMD_SHARE_PORTS.
_testpmd_counters() {
    local cmds=("/ptr_ring/stats,mb_pool_0") p
    for p in $TESTPMD_SHARE_PORTS; do cmds+=("/ethdev/stats,$p"); done
    tel_query "$1" "${cmds[@]}"
}

# handler_share C0 C1 FIELD: "SHARE INFLIGHT" from two files of telemetry
# replies (tel_query's output, one reply a line, in any order): SHARE is
# ptr_ring's objects handed out between the two (`hold` of /ptr_ring/stats,
# which counts modulo 2^32) per packet counted by FIELD (ipackets,
# opackets) of every /ethdev/stats reply summed, 4 decimals; INFLIGHT is
# C1's `inflight`. "- -" where the pool is not ptr_ring's (no stats reply).
# Nothing, and status 1, when a file is missing or unreadable, or no packet
# was counted between the two. The testpmd rows (above) and bench/vhost.sh
# read their shares here.
handler_share() {
    python3 - "$@" <<'PY' 2>/dev/null
import json, sys
def read(path):
    stats, packets = None, 0
    for line in open(path):
        if not line.startswith("{"):
            continue
        for key, value in json.loads(line).items():
            if key == "/ptr_ring/stats":
                stats = value
            elif key == "/ethdev/stats":
                packets += value[sys.argv[3]]
    return stats, packets
(s0, n0), (s1, n1) = read(sys.argv[1]), read(sys.argv[2])
if n1 <= n0:
    sys.exit(1)
if not s0 or not s1:
    print("- -")
else:
    print("%.4f %d" % (((s1["hold"] - s0["hold"]) % 2**32) / (n1 - n0), s1["inflight"]))
PY
}

# Reads testpmd output and prints one line per stats block: the Rx-pps of the
# ports in TESTPMD_RX_PORTS (all when empty) summed, in Mpps.
testpmd_samples() {
    awk -v want=" ${TESTPMD_RX_PORTS:-} " '
        /^Port statistics =/ { if (seen) printf "%.3f\n", sum / 1e6; sum = 0; seen = 1 }
        /NIC statistics for port/ { port = $6 }
        /Rx-pps:/ { if (want == "  " || index(want, " " port " ")) sum += $2 }
        END { if (seen) printf "%.3f\n", sum / 1e6 }
    '
}
