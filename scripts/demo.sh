#!/usr/bin/env bash
# Forwards packets between two net_null ports with dpdk-testpmd (io mode) and
# prints the rate. Uses the EAL memory arguments chosen by scripts/setup.sh.
set -euo pipefail

# shellcheck source=scripts/testpmd-rate.sh
source "$(dirname "${BASH_SOURCE[0]}")/testpmd-rate.sh"

echo "demo: dpdk-testpmd io forwarding, net_null0 <-> net_null1, ${TESTPMD_SECONDS:-5} s, EAL ${EAL_MEM}"
TESTPMD_LOG=$repo_root/build/demo-ring_mp_mc.log testpmd_mpps -- >/dev/null
echo "demo: ring_mp_mc (DPDK default handler): ${TESTPMD_MPPS} Mpps  (per-second samples: ${TESTPMD_SAMPLES% })"
