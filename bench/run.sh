#!/usr/bin/env bash
# The one command of the benchmarks: builds, waits for a quiet machine, runs
#   1. mempool_bench: rte_mempool_get_bulk/put_bulk on ptr_ring, ring_mp_mc,
#      stack (and ring_sp_sc where legal, and the floor_lifo ruler on one lcore),
#      handlers alternated round by round;
#   2. dpdk-testpmd io forwarding on two net_null ports, --mbcache=0 and the
#      default cache, handlers alternated;
#   3. DPDK's l2fwd example on the same ports, handlers alternated;
#   4. perf profiles of the mempool_bench configurations that miss a target;
# and regenerates bench/RESULTS.md and bench/ratios.svg. Raw data and logs go
# to build/bench/. Takes about 12 minutes plus the wait for a quiet machine.
#
#   bash bench/run.sh          (or: make bench)
#
# Environment:
#   BENCH_ROUNDS=5           mempool_bench rounds per configuration
#   BENCH_SECS=0.4           mempool_bench seconds per handler per round
#   BENCH_E2E_ROUNDS=5       testpmd / l2fwd runs per handler
#   BENCH_E2E_HANDLERS="ring_mp_mc ptr_ring stack"
#   TESTPMD_SECONDS=4        1-second samples per testpmd run
#   L2FWD_SECONDS=4          1-second statistics intervals per l2fwd run
#   BENCH_QUIET_WAIT=600     seconds to wait for a quiet machine (0: don't)
#   BENCH_PROFILE_MAX=6      missed configurations to profile (0: none)
#   BENCH_QUICK=1            a short smoke run (2 rounds, short runs)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
t_start=$SECONDS
step() { printf '\nbench: [%3d s] == %s\n' $((SECONDS - t_start)) "$*"; }
say() { printf 'bench: [%3d s] %s\n' $((SECONDS - t_start)) "$*"; }
die() { echo "bench: error: $*" >&2; exit 1; }

if [[ ${BENCH_QUICK:-0} == 1 ]]; then
    : "${BENCH_ROUNDS:=2}" "${BENCH_SECS:=0.1}" "${BENCH_E2E_ROUNDS:=1}" "${TESTPMD_SECONDS:=2}" "${L2FWD_SECONDS:=2}"
    : "${BENCH_QUIET_WAIT:=0}" "${BENCH_PROFILE_MAX:=1}"
fi
rounds=${BENCH_ROUNDS:-5}
secs=${BENCH_SECS:-0.4}
e2e_rounds=${BENCH_E2E_ROUNDS:-5}
read -r -a e2e_handlers <<<"${BENCH_E2E_HANDLERS:-ring_mp_mc ptr_ring stack}"
export TESTPMD_SECONDS=${TESTPMD_SECONDS:-4}
l2fwd_secs=${L2FWD_SECONDS:-4}
quiet_wait=${BENCH_QUIET_WAIT:-600}
profile_max=${BENCH_PROFILE_MAX:-6}

out=$repo/build/bench
logs=$out/logs
lib=$repo/target/release/librte_mempool_ptr_ring.so
bench_bin=$repo/target/release/mempool_bench
report_bin=$repo/target/release/bench_report
l2fwd_bin=$out/l2fwd

# ---------------------------------------------------------------- build
step "build (cargo build --release -p pmd-glue -p bench; l2fwd example)"
[[ -f build/eal-mem.env ]] || bash scripts/setup.sh
# shellcheck source=scripts/testpmd-rate.sh
source scripts/testpmd-rate.sh
cargo build --release -p pmd-glue -p bench
mkdir -p "$out"
l2fwd_src=/usr/share/dpdk/examples/l2fwd/main.c
if [[ ! -x $l2fwd_bin || $l2fwd_src -nt $l2fwd_bin ]]; then
    # shellcheck disable=SC2046 # pkg-config prints lists of flags
    cc -O3 -DALLOW_EXPERIMENTAL_API $(pkg-config --cflags libdpdk) "$l2fwd_src" -o "$l2fwd_bin" $(pkg-config --libs libdpdk)
fi
rm -rf "$logs" "$out/profile"
rm -f "$out"/{mempool.csv,e2e.csv,meta.env,monitor.log,phase}
mkdir -p "$logs" "$out/profile"

# ------------------------------------------------ who else uses the CPUs
# One line per process: pid ppid cpu-ticks comm.
proc_snap() {
    cat /proc/[0-9]*/stat 2>/dev/null | awk '{
        i = index($0, " ("); j = 0
        for (k = length($0); k > i; k--) if (substr($0, k, 2) == ") ") { j = k; break }
        if (!j) next
        comm = substr($0, i + 2, j - i - 2); gsub(/[ ,:]/, "_", comm)
        split(substr($0, j + 2), f, " ")
        print $1, f[2], f[12] + f[13], comm
    }'
}
# Over $1 seconds: CPU use (percent of one CPU, summed) of processes that are
# not this script's descendants, the host's steal time (percent of all CPU
# time: the vCPUs were not running), and the busiest other processes:
# "<others> <steal> <comm:pct,...>".
others_cpu() {
    local a b s0 s1
    s0=$(head -1 /proc/stat)
    a=$(proc_snap)
    sleep "$1"
    b=$(proc_snap)
    s1=$(head -1 /proc/stat)
    awk -v me=$$ -v dt="$1" -v hz="$(getconf CLK_TCK)" -v s0="$s0" -v s1="$s1" '
        FNR == NR { t0[$1] = $3; next }
        { pp[$1] = $2; t1[$1] = $3; c[$1] = $4 }
        END {
            for (p in t1) {
                if (!(p in t0)) continue
                d = (t1[p] - t0[p]) / hz / dt * 100
                if (d <= 0) continue
                q = p; ours = 0
                for (k = 0; k < 64 && q > 1; k++) { if (q == me) { ours = 1; break } q = pp[q] }
                if (ours) continue
                tot += d
                if (d >= 5) list = list sprintf("%s%s:%.0f", (list == "" ? "" : ","), c[p], d)
            }
            n = split(s0, x, " "); split(s1, y, " ")
            for (k = 2; k <= n; k++) all += y[k] - x[k]
            steal = all > 0 ? (y[9] - x[9]) / all * 100 : 0
            printf "%.0f %.0f %s\n", tot, steal, list
        }' <(echo "$a") <(echo "$b")
}
set_phase() { echo "$1" >"$out/phase"; }
monitor() {
    local s nap=""
    trap '[[ -n $nap ]] && kill "$nap" 2>/dev/null; exit 0' TERM
    while :; do
        s=$(others_cpu 2)
        echo "$(date +%s) $(cat "$out/phase" 2>/dev/null || echo -) $s" >>"$out/monitor.log"
        sleep 13 &
        nap=$!
        wait "$nap" || true
        nap=""
    done
}

cleanup() {
    if [[ -n ${monitor_pid:-} ]]; then
        kill "$monitor_pid" 2>/dev/null || true
        wait "$monitor_pid" 2>/dev/null || true
        monitor_pid=""
    fi
}
trap cleanup EXIT

step "waiting for a quiet machine (up to ${quiet_wait} s)"
waited=0
wait_start=$SECONDS
quiet="not checked (BENCH_QUIET_WAIT=0)"
if ((quiet_wait > 0)); then
    while :; do
        waited=$((SECONDS - wait_start))
        # Quiet means three 3-second windows in a row below 15% of a CPU:
        # builds and tests of other people come in bursts.
        calm=0
        while ((calm < 3)); do
            read -r busy steal who < <(others_cpu 3)
            ((busy < 15)) || break
            calm=$((calm + 1))
        done
        if ((calm == 3)); then
            quiet="quiet after ${waited} s of waiting (other processes below 15% of a CPU for 9 s; host steal time ${steal}%)"
            say "$quiet"
            break
        fi
        if ((waited >= quiet_wait)); then
            quiet="NOT quiet: still busy after ${waited} s of waiting (other processes ${busy}% of a CPU: ${who})"
            say "$quiet; running anyway"
            break
        fi
        say "busy: other processes use ${busy}% of a CPU (${who}; host steal time ${steal}%); checking again in 30 s"
        sleep 30
    done
fi
set_phase setup
monitor &
monitor_pid=$!

# ------------------------------------------------------------- metadata
eal=(-l 0-1 --no-pci)
# shellcheck disable=SC2206 # EAL_MEM is a list of arguments
eal+=($EAL_MEM -d "$lib")
{
    echo "command=bash bench/run.sh"
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
    echo "cpus=$(nproc) ($(lscpu | sed -n 's/^Thread(s) per core: *//p') thread(s) per core, $(lscpu | sed -n 's/^L3 cache: *//p' | head -1) L3)"
    echo "hypervisor=$(lscpu | sed -n 's/^Hypervisor vendor: *//p' | head -1) ($(lscpu | sed -n 's/^Virtualization type: *//p' | head -1))"
    echo "kernel=$(uname -r)"
    echo "dpdk=$(pkg-config --modversion libdpdk) (Debian packages, dynamic libraries)"
    echo "eal_mem=$EAL_MODE: $EAL_MEM ($(awk '/HugePages_Total/ {t=$2} /Hugepagesize/ {s=$2} END {printf "%d hugepages of %d kB", t, s}' /proc/meminfo))"
    echo "rustc=$(rustc --version)"
    echo "handler=target/release/librte_mempool_ptr_ring.so ($(stat -c %s "$lib") bytes, sha256 $(sha256sum "$lib" | cut -c1-12)), loaded with -d"
    echo "git=$(git rev-parse --short HEAD 2>/dev/null || echo '?') $(git diff --quiet 2>/dev/null && echo '(clean)' || echo '(with uncommitted changes)')"
    echo "quiet=$quiet"
    echo "mempool_cmd=target/release/mempool_bench --rounds $rounds --secs $secs --csv build/bench/mempool.csv -- ${eal[*]/#$repo\//}"
    echo "testpmd_cmd=dpdk-testpmd -l 0-1 $EAL_MEM --no-pci --vdev net_null0 --vdev net_null1 -d target/release/librte_mempool_ptr_ring.so --mbuf-pool-ops-name HANDLER -- -a --forward-mode=io --stats-period 1 [--mbcache=0]"
    echo "l2fwd_cmd=build/bench/l2fwd -l 0-1 $EAL_MEM --no-pci --vdev net_null0 --vdev net_null1 -d target/release/librte_mempool_ptr_ring.so --mbuf-pool-ops-name HANDLER -- -p 0x3 -T 1"
    echo "profile_cmd=perf stat -e cycles,instructions,cache-misses,task-clock,context-switches,cpu-migrations,page-faults and perf record -e cpu-clock -F 4000 of mempool_bench --only CONFIG --handlers HANDLER --rounds 1 --secs 3"
    echo "e2e_rounds=$e2e_rounds"
    echo "testpmd_secs=$TESTPMD_SECONDS"
    echo "l2fwd_secs=$l2fwd_secs"
} >"$out/meta.env"

# ------------------------------------------------------- 1. mempool_bench
step "1/4 mempool_bench (about $(awk -v r="$rounds" -v s="$secs" 'BEGIN { printf "%.0f", 66 * r * s + 10 }') s): progress per configuration"
set_phase mempool_bench
"$bench_bin" --rounds "$rounds" --secs "$secs" --csv "$out/mempool.csv" -- "${eal[@]}" \
    2> >(tee "$logs/mempool_bench.err" >&2) >"$logs/mempool_bench.log" ||
    die "mempool_bench failed; see $logs/mempool_bench.log and .err"
params=$(grep '^# mempool_bench' "$out/mempool.csv" | tail -1 | tr ' ' '\n' | grep '=')
echo "$params" >>"$out/meta.env"
awk -F= '$1 == "tsc_hz" { printf "tsc_ghz=%.2f\n", $2 / 1e9 }' <<<"$params" >>"$out/meta.env"

# ---------------------------------------------------------- 2. testpmd
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{v[NR]=$1} END {if (NR) printf "%.2f", (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

# served HANDLER LOG: the handler's own log line proves ptr_ring served the pool;
# the other handlers must not have produced it.
served() {
    local pool_line
    pool_line=$(grep -a -c '^PTR_RING: pool ' "$2" || true)
    if [[ $1 == ptr_ring ]]; then ((pool_line > 0)); else ((pool_line == 0)); fi
}

declare -A e2e_samples
record_e2e() { # app variant handler round rate
    echo "e2e,$1,$2,$3,$4,$5" >>"$out/e2e.csv"
    e2e_samples[$1,$2,$3]+="$5 "
}
e2e_summary() { # app variant
    local line="" h m base
    base=$(median <<<"${e2e_samples[$1,$2,ring_mp_mc]:-}")
    for h in "${e2e_handlers[@]}"; do
        m=$(median <<<"${e2e_samples[$1,$2,$h]:-}")
        line+=" | $h ${m:--} Mpps"
        [[ $h != ring_mp_mc && -n $m && -n $base ]] && line+=$(awk -v a="$m" -v b="$base" 'BEGIN { printf " %.2fx", a / b }')
    done
    say "$1 $2:${line}"
}

step "2/4 dpdk-testpmd io forwarding, ${e2e_rounds} rounds x ${#e2e_handlers[@]} handlers x 2 cache settings (about $((e2e_rounds * ${#e2e_handlers[@]} * 2 * (TESTPMD_SECONDS + 4))) s)"
set_phase testpmd
for variant in mbcache=0 mbcache=default; do
    extra=()
    [[ $variant == mbcache=0 ]] && extra=(--mbcache=0)
    for ((r = 1; r <= e2e_rounds; r++)); do
        for h in "${e2e_handlers[@]}"; do
            log=$logs/testpmd-$variant-$h-$r.log
            rate=""
            for try in 1 2; do
                if TESTPMD_LOG=$log testpmd_mpps -d "$lib" --mbuf-pool-ops-name "$h" -- "${extra[@]}" >/dev/null; then
                    rate=$TESTPMD_MPPS
                    break
                fi
                say "testpmd $variant $h round $r failed (try $try); see $log"
            done
            [[ -n $rate ]] || continue
            served "$h" "$log" || die "testpmd $variant $h: the pool was not served as asked (PTR_RING log line); see $log"
            record_e2e testpmd "$variant" "$h" "$r" "$rate"
            say "testpmd $variant round $r/$e2e_rounds $h: $rate Mpps"
        done
    done
    e2e_summary testpmd "$variant"
done

# ------------------------------------------------------------ 3. l2fwd
# l2fwd_mpps HANDLER LOG: runs l2fwd until it printed L2FWD_SECONDS+2 statistics
# blocks, stops it with SIGINT, prints packets received per second (both ports,
# Mpps) between the second block and the last one.
l2fwd_mpps() {
    local h=$1 log=$2 pid blocks deadline waited=0
    # shellcheck disable=SC2086 # EAL_MEM is a list of arguments
    "$l2fwd_bin" -l 0-1 $EAL_MEM --no-pci --vdev net_null0 --vdev net_null1 -d "$lib" \
        --mbuf-pool-ops-name "$h" -- -p 0x3 -T 1 </dev/null >"$log" 2>&1 &
    pid=$!
    deadline=$((SECONDS + l2fwd_secs + 60))
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do
        blocks=$(grep -a -c '^Aggregate statistics' "$log" 2>/dev/null || true)
        ((${blocks:-0} >= l2fwd_secs + 2)) && break
        sleep 0.2
    done
    kill -INT "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null && ((waited < 100)); do sleep 0.1; waited=$((waited + 1)); done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    grep -a '^Total packets received:' "$log" | awk '
        { v[++n] = $4 }
        END { if (n >= 3) printf "%.3f", (v[n] - v[2]) / (n - 2) / 1e6; else exit 1 }'
}

step "3/4 l2fwd, ${e2e_rounds} rounds x ${#e2e_handlers[@]} handlers (about $((e2e_rounds * ${#e2e_handlers[@]} * (l2fwd_secs + 4))) s)"
set_phase l2fwd
for ((r = 1; r <= e2e_rounds; r++)); do
    for h in "${e2e_handlers[@]}"; do
        log=$logs/l2fwd-$h-$r.log
        if ! rate=$(l2fwd_mpps "$h" "$log"); then
            say "l2fwd $h round $r: no rate; see $log"
            continue
        fi
        served "$h" "$log" || die "l2fwd $h: the pool was not served as asked (PTR_RING log line); see $log"
        record_e2e l2fwd default "$h" "$r" "$rate"
        say "l2fwd round $r/$e2e_rounds $h: $rate Mpps"
    done
done
e2e_summary l2fwd default

# ---------------------------------------------------------- 4. profiles
step "4/4 profiles of missed mempool_bench targets (at most ${profile_max})"
set_phase profile
mapfile -t missed < <("$report_bin" --dir "$out" --missed)
if ((${#missed[@]} == 0 || profile_max == 0)); then
    say "nothing to profile"
elif ! perf stat -e task-clock true >/dev/null 2>&1; then
    say "perf does not work here; no profiles"
else
    for f in "${missed[@]:0:profile_max}"; do
        name=$(tr ',=' ' -' <<<"$f" | sed 's/pattern-//; s/ /_/g')
        txt=$out/profile/$name.txt
        say "profiling $f"
        echo "mempool_bench --only $f, each handler alone for 3 s" >"$txt"
        for h in ptr_ring ring_mp_mc; do
            run=("$bench_bin" --only "$f" --handlers "$h" --rounds 1 --secs 3 --warmup 0.05)
            perf stat -x, -e cycles,instructions,cache-misses,task-clock,context-switches,cpu-migrations,page-faults \
                -o "$logs/perf-stat-$name-$h.csv" -- "${run[@]}" --csv "$logs/perf-$name-$h.csv" -- "${eal[@]}" \
                >"$logs/perf-stat-$name-$h.log" 2>&1 || { say "perf stat $h failed"; continue; }
            perf record -q -e cpu-clock -F 4000 -o "$logs/perf-$name-$h.data" -- "${run[@]}" -- "${eal[@]}" \
                >"$logs/perf-record-$name-$h.log" 2>&1 || { say "perf record $h failed"; continue; }
            {
                echo
                echo "== $h: $(awk -F, '/^mempool/ { printf "%.1f M objects/s", $8 / 1e6 }' "$logs/perf-$name-$h.csv") under perf stat"
                echo "perf stat (whole process):"
                awk -F, '/^[0-9<]/ { printf "  %-18s %s %s\n", $3, $1, $2 }' "$logs/perf-stat-$name-$h.csv"
                echo "perf record -e cpu-clock, share of all samples by library:"
                perf report -i "$logs/perf-$name-$h.data" --stdio --no-children --sort dso \
                    --percent-limit 1 2>/dev/null | grep -v '^#' | sed '/^$/d; s/^ */  /; s/ *$//' | head -8 || true
                echo "top symbols (Debian's DPDK libraries carry no symbols: addresses):"
                perf report -i "$logs/perf-$name-$h.data" --stdio --no-children --sort dso,symbol \
                    --percent-limit 2 2>/dev/null | grep -v '^#' | sed '/^$/d; s/^ */  /; s/ *- *- *$//' | head -12 || true
            } >>"$txt"
            rm -f "$logs/perf-$name-$h.data"
        done
    done
fi

# ------------------------------------------------------------- report
set_phase report
cleanup
echo "duration=$(((SECONDS - t_start) / 60)) min $(((SECONDS - t_start) % 60)) s, of which ${waited} s waiting for a quiet machine" >>"$out/meta.env"
step "report"
notes=()
[[ -f bench/NOTES.md ]] && notes=(--notes bench/NOTES.md)
"$report_bin" --dir "$out" --out bench/RESULTS.md --svg bench/ratios.svg "${notes[@]}"
say "done: bench/RESULTS.md, bench/ratios.svg (raw data and logs in build/bench/)"
