#!/usr/bin/env bash
# Runs the DPDK-free core's Miri subset (default aliasing model, Stacked
# Borrows): small uses of every part of the pool's block, the ring's len
# snapshot under concurrency, and late returns racing a pool that frees
# itself at release. Under a minute in all once Miri's sysroot is built.
# Skips cleanly without a nightly toolchain; installs the miri component and
# its sysroot when missing.
set -euo pipefail
# shellcheck source=scripts/help.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/help.sh"
help_if_asked "$@"
cd "$(dirname "$0")/../.."
CARGO=${CARGO:-cargo}
if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    echo "SKIP miri: no nightly toolchain"
    exit 0
fi
if ! $CARGO +nightly miri --version >/dev/null 2>&1; then
    rustup component add --toolchain nightly miri rust-src
fi
$CARGO +nightly miri setup >/dev/null
# The tests use synthetic object addresses (never dereferenced).
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-permissive-provenance}"
t0=$(date +%s)
$CARGO +nightly miri test -p mempool --test miri_core
$CARGO +nightly miri test -p mempool --test ptr_ring -- len_is_a_snapshot
$CARGO +nightly miri test -p mempool --test state -- late_returns_race_a_freeing_poller
echo "miri: core subset clean in $(( $(date +%s) - t0 )) s"
