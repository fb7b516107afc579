#!/usr/bin/env bash
# The main job: dpdk-testpmd io forwarding on two net_null ports, DPDK's
# default handler (ring_mp_mc) against ptr_ring loaded with -d, alternated
# A B A B, each row with the same caches on both sides:
#   cache=both-250    DPDK's default mbuf cache (250) on both; ptr_ring's own
#                     cache is off whenever DPDK's is on
#   cache=none        --mbcache=0 on both, ptr_ring's own cache off too
#                     (PTR_RING_CACHE_SIZE=0)
#   burst512          DPDK's default cache on both, --burst=512: bursts above
#                     1.5x the cache, which reach the handler (with the
#                     cache's own refills and flushes: a share above 1)
# and one row that is NOT like for like, labelled as such:
#   own-vs-none       --mbcache=0; ptr_ring with its own per-lcore cache of 128
#                     (PTR_RING_CACHE_SIZE=128),
#                     ring_mp_mc with no cache at all
# Every run reads mb_pool_0's ops name through telemetry (scripts/pool-ops.sh):
# ptr_ring on the ptr_ring side, another handler on the other, or the demo
# stops. Each ptr_ring run also measures its handler share (objects ptr_ring
# handed out per packet received, through telemetry: TESTPMD_SHARE_PORTS in
# scripts/testpmd-rate.sh): under 1%, DPDK's cache served every get and the
# row is a control, which the table says. Prints a side-by-side table
# (median and spread of the rounds, the median and range of the per-round
# ratios, the handler share), a NOT STEADY line for a row whose rates moved
# by more than 1.5x between rounds, and the handler's own report of its
# last run.
#
# Settings: DEMO_ROUNDS (default 3), TESTPMD_SECONDS (default 4).
set -euo pipefail
# shellcheck source=scripts/help.sh
source "$(dirname "${BASH_SOURCE[0]}")/help.sh"
help_if_asked "$@"

# shellcheck source=scripts/testpmd-rate.sh
source "$(dirname "${BASH_SOURCE[0]}")/testpmd-rate.sh"
# shellcheck source=scripts/pool-ops.sh
source "$(dirname "${BASH_SOURCE[0]}")/pool-ops.sh"

lib=$repo_root/target/release/librte_mempool_ptr_ring.so
plugin_path_ok "$lib" || exit 1
[[ -f $lib ]] || { echo "demo: $lib missing: run 'make build' first" >&2; exit 1; }
rounds=${DEMO_ROUNDS:-3}
export TESTPMD_SECONDS=${TESTPMD_SECONDS:-4}
# Both net_null ports allocate an mbuf per packet received.
export TESTPMD_SHARE_PORTS="0 1"
logs=$repo_root/build/demo
mkdir -p "$logs"

# A row whose rates moved by more than this between rounds, on either
# side, is flagged: its ratio depends on which rounds were fast. On the
# 2-vCPU VMs of this project the no-cache row's testpmd rate has switched
# between about 12 and 32 Mpps from one start to the next (bench/NOTES.md).
max_swing=1.5

echo "demo: dpdk-testpmd io forwarding net_null0 <-> net_null1, lcores 0-1, EAL ${EAL_MEM}"
echo "demo: ${rounds} rounds per row, handlers alternated, ${TESTPMD_SECONDS} s of 1-s samples each"
declare -A runs shares
rows=(both-250 none burst512 own-vs-none)
for row in "${rows[@]}"; do
    extra=() env=()
    case $row in
    both-250) ;;
    none) extra=(--mbcache=0) env=(PTR_RING_CACHE_SIZE=0) ;;
    burst512) extra=(--burst=512) ;;
    own-vs-none) extra=(--mbcache=0) env=(PTR_RING_CACHE_SIZE=128) ;;
    esac
    for ((r = 1; r <= rounds; r++)); do
        for ops in ring_mp_mc ptr_ring; do
            # own-vs-none's ring_mp_mc side is the same run as none's.
            if [[ $row == own-vs-none && $ops == ring_mp_mc ]]; then
                continue
            fi
            log=$logs/testpmd-$ops-$row-$r.log
            if [[ $ops == ptr_ring ]]; then
                env "${env[@]}" TESTPMD_LOG="$log" bash -c 'source "$1"; shift; testpmd_mpps "$@"' _ \
                    "$repo_root/scripts/testpmd-rate.sh" -d "$lib" --log-level=pmd.mempool.ptr_ring:info --mbuf-pool-ops-name "$ops" -- "${extra[@]}" >"$log.rate"
            else
                TESTPMD_LOG=$log testpmd_mpps -d "$lib" --log-level=pmd.mempool.ptr_ring:info --mbuf-pool-ops-name "$ops" -- "${extra[@]}" >"$log.rate"
            fi
            # Which handler served mb_pool_0 (telemetry, read by testpmd_mpps):
            # ptr_ring on its side; on the other, a handler that is not
            # ptr_ring (telemetry names that one by its ops index only).
            served=$(pool_ops_from_tel "$log.tel" mb_pool_0)
            if [[ $ops == ptr_ring && $served != ptr_ring ]] || [[ $ops != ptr_ring && $served != "ops_index "* ]]; then
                echo "demo: $ops run: mb_pool_0 ops_name '${served:-no telemetry answer}' (see $log.tel)" >&2
                exit 1
            fi
            rate=$(cat "$log.rate")
            runs[$row,$ops]+="$rate "
            share=""
            if [[ $ops == ptr_ring ]]; then
                share=$(cat "$log.share")
                shares[$row]+="$share "
                share=", handler share $share"
            fi
            printf 'demo: round %d, %-12s %-10s %6s Mpps (mb_pool_0 ops: %s%s)\n' "$r" "$row" "$ops" "$rate" "$served" "$share"
        done
    done
done
runs[own-vs-none,ring_mp_mc]=${runs[none,ring_mp_mc]}
unsteady=()

echo
printf '%-58s %-24s %-24s %-23s %s\n' "row (caches: ring_mp_mc side | ptr_ring side)" "ring_mp_mc Mpps" "ptr_ring Mpps" "ptr_ring / ring_mp_mc" "handler share"
for row in "${rows[@]}"; do
    case $row in
    both-250) label="like for like: DPDK cache 250 | DPDK cache 250" ;;
    none) label="like for like: no cache | no cache" ;;
    burst512) label="like for like: cache 250, --burst=512 | the same" ;;
    own-vs-none) label="NOT like for like: no cache | ptr_ring's own cache" ;;
    esac
    a=${runs[$row,ring_mp_mc]}; b=${runs[$row,ptr_ring]}
    ma=$(median <<<"$a"); mb=$(median <<<"$b")
    ratios=$(paired "$a" "$b")
    share=$(median <<<"${shares[$row]}")
    note=""
    awk -v s="$share" 'BEGIN { exit !(s < 0.01) }' && note=" (control: DPDK's cache served every get)"
    printf '%-58s %-24s %-24s %-23s %s\n' "$label" \
        "$ma ($(spread <<<"$a"))" "$mb ($(spread <<<"$b"))" "$(median <<<"$ratios")x ($(spread <<<"$ratios"))" "$share$note"
    for side in "$a" "$b"; do
        sw=$(swing <<<"$side")
        if awk -v s="$sw" -v m="$max_swing" 'BEGIN { exit !(s > m) }'; then
            unsteady+=("$label: rates moved by up to ${sw}x between rounds")
            break
        fi
    done
done
echo "(rates: median over rounds, range in parentheses; ratio: median of the per-round ratios, each round"
echo " running both handlers back to back, range in parentheses. Absolute rates drift on shared machines:"
echo " compare the ratios. Handler share: objects ptr_ring handed out per packet received (median"
echo " over its runs); a row where it is about 0 is a control: DPDK's cache served every get, the"
echo " handler was not on the path, and only the host moves its ratio. The last row gives ptr_ring a"
echo " cache that ring_mp_mc does not have (its ring_mp_mc side is the no-cache row's): it is not a"
echo " like-for-like result.)"
for u in "${unsteady[@]}"; do
    echo "demo: NOT STEADY: $u (above ${max_swing}x): this row's ratio is no result; rerun, or DEMO_ROUNDS=9 for more rounds"
done
echo
echo "demo: the handler's own report from the last ptr_ring run with its own cache (log type pmd.mempool.ptr_ring):"
grep '^PTR_RING:' "$logs/testpmd-ptr_ring-own-vs-none-$rounds.log" | sed 's/^/  /'
