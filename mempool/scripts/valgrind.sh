#!/usr/bin/env bash
# Runs the shutdown tests under valgrind: late returns race a poller of a
# pool that frees its block at release, so a touch after release is an
# invalid read or write. Skips cleanly when valgrind is missing.
set -euo pipefail
# shellcheck source=scripts/help.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/help.sh"
help_if_asked "$@"
cd "$(dirname "$0")/../.."
CARGO=${CARGO:-cargo}
if ! command -v valgrind >/dev/null; then
    echo "SKIP valgrind: not installed"
    exit 0
fi
bin=$($CARGO test --profile release-test -p mempool --test state --no-run --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1)
valgrind -q --error-exitcode=1 "$bin" --test-threads=1
