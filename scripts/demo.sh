#!/usr/bin/env bash
# The main job: dpdk-testpmd io forwarding on two net_null ports, DPDK's
# default handler (ring_mp_mc) against ptr_ring loaded with -d, alternated
# A B A B, with DPDK's default mbuf cache and with --mbcache=0. Prints a
# side-by-side table (median and spread of the rounds) and the handler's own
# report, which proves it served the pool.
#
# Settings: DEMO_ROUNDS (default 3), TESTPMD_SECONDS (default 4).
set -euo pipefail

# shellcheck source=scripts/testpmd-rate.sh
source "$(dirname "${BASH_SOURCE[0]}")/testpmd-rate.sh"

lib=$repo_root/target/release/librte_mempool_ptr_ring.so
[[ -f $lib ]] || { echo "demo: $lib missing: run 'make build' first" >&2; exit 1; }
rounds=${DEMO_ROUNDS:-3}
export TESTPMD_SECONDS=${TESTPMD_SECONDS:-4}
logs=$repo_root/build/demo
mkdir -p "$logs"

median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{v[NR]=$1} END {printf "%.2f", (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
spread() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk 'NR==1{lo=$1} {hi=$1} END {printf "%.2f-%.2f", lo, hi}'; }

echo "demo: dpdk-testpmd io forwarding net_null0 <-> net_null1, lcores 0-1, EAL ${EAL_MEM}"
echo "demo: ${rounds} rounds per configuration, handlers alternated, ${TESTPMD_SECONDS} s of 1-s samples each"
declare -A runs
for mbcache in default 0; do
    extra=()
    [[ $mbcache == default ]] || extra=(--mbcache="$mbcache")
    for ((r = 1; r <= rounds; r++)); do
        for ops in ring_mp_mc ptr_ring; do
            log=$logs/testpmd-$ops-mbcache-$mbcache-$r.log
            TESTPMD_LOG=$log testpmd_mpps -d "$lib" --mbuf-pool-ops-name "$ops" -- "${extra[@]}" >/dev/null
            if [[ $ops == ptr_ring ]] && ! grep -q '^PTR_RING: pool mb_pool_0:' "$log"; then
                echo "demo: ptr_ring did not serve mb_pool_0 (no handler log line in $log)" >&2
                exit 1
            fi
            runs[$mbcache,$ops]+="$TESTPMD_MPPS "
            printf 'demo: round %d, mbcache %-7s %-10s %6s Mpps\n' "$r" "$mbcache" "$ops" "$TESTPMD_MPPS"
        done
    done
done

echo
printf '%-22s %-22s %-22s %s\n' "configuration" "ring_mp_mc Mpps" "ptr_ring Mpps" "ratio (medians)"
for mbcache in default 0; do
    a=${runs[$mbcache,ring_mp_mc]}; b=${runs[$mbcache,ptr_ring]}
    ma=$(median <<<"$a"); mb=$(median <<<"$b")
    printf '%-22s %-22s %-22s %.2fx\n' "testpmd mbcache=$mbcache" \
        "$ma ($(spread <<<"$a"))" "$mb ($(spread <<<"$b"))" "$(awk -v a="$ma" -v b="$mb" 'BEGIN{print (a>0)?b/a:0}')"
done
echo "(median over rounds, range in parentheses; absolute rates drift on shared machines, compare the ratio)"
echo
echo "demo: the handler's own report from the last ptr_ring run (log type mempool.ptr_ring):"
grep '^PTR_RING:' "$logs/testpmd-ptr_ring-mbcache-0-$rounds.log" | sed 's/^/  /'
