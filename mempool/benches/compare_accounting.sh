#!/usr/bin/env bash
# Cost of inflight accounting: builds the pool bench with and without the
# `accounting` feature, runs their TSC reports alternately ROUNDS times (so
# machine noise hits both alike) and prints the best ns and TSC cycles per
# row for each build, and the difference.
#
#   ROUNDS=5 mempool/benches/compare_accounting.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${ROUNDS:-5}

exe() { # cargo bench args... -> path of the built bench binary
    cargo bench -p mempool --bench pool --no-run "$@" 2>&1 |
        sed -n 's/.*Executable benches\/pool.rs (\(.*\))/\1/p' | tail -1
}
on=$(exe)
off=$(exe --no-default-features)
[ -x "$on" ] && [ -x "$off" ] || { echo "could not build both benches" >&2; exit 1; }

out=$(mktemp)
trap 'rm -f "$out"' EXIT
for r in $(seq "$rounds"); do
    for b in on off; do
        bin=$on; [ "$b" = off ] && bin=$off
        TSC_ONLY=1 "$bin" | sed -n "s/^  \([a-z_0-9/+]*\) *\([0-9.]*\) ns *\([0-9.]*\) cycles.*/$b \1 \2 \3/p" >>"$out"
    done
    echo "round $r/$rounds done" >&2
done
TSC_ONLY=1 "$on" | grep '^TSC report' | sed 's/(accounting=on)//'
awk '
    { k = $2; if (!(k in seen)) { seen[k] = 1; order[++n] = k }
      if (!((k, $1) in ns) || $4 < cy[k, $1]) { ns[k, $1] = $3; cy[k, $1] = $4 } }
    END {
        printf "%-32s %22s %22s %10s\n", "best of runs", "accounting=on", "accounting=off", "diff"
        for (i = 1; i <= n; i++) { k = order[i]
            printf "%-32s %8.2f ns %7.1f cy %8.2f ns %7.1f cy %+7.1f cy\n", k,
                ns[k, "on"], cy[k, "on"], ns[k, "off"], cy[k, "off"], cy[k, "on"] - cy[k, "off"] }
    }' "$out"
