#!/usr/bin/env bash
# The one command of the benchmarks: builds, waits for a quiet machine, runs
#   1. mempool_bench: rte_mempool_get_bulk/put_bulk on ptr_ring and ring_mp_mc
#      (and the floor_lifo reference on one lcore; on the core rows every other
#      software handler DPDK ships, a few per round), every row naming the
#      caches each side uses, the handlers' order rotated every round; the
#      rows of two lcores each recycling run twice more, spaced through the
#      benchmark (after 2 and after 4), for their spread between runs;
#   2. DPDK's own mempool_perf_autotest (dpdk-test), ring_mp_mc and ptr_ring
#      without cache in one process (one per core count from 24.11 on), its
#      clock slowed so that it fits;
#   3. dpdk-testpmd io forwarding on net_null ports: no cache on either side,
#      DPDK's cache on both, --burst=512 (reaches the handler), ptr_ring's
#      own cache against no cache (labelled as such), and a net_null + net_ring
#      pipeline where mbufs are allocated on one lcore and freed on another,
#      with its control (the same lcores on two net_null ports), each of
#      its runs between two line_trip readings (a cache line's round trip
#      between its two CPUs); every ptr_ring run reads its handler share
#      through telemetry;
#      then (bench/vhost.sh) two testpmd processes over vhost-user, the
#      handler under test on the virtio-user side (1024-descriptor rings),
#      ptr_ring against ring_mp_mc and stack;
#   4. DPDK's l2fwd example on the net_null ports (cache 256 on both);
#   5. perf profiles of the mempool_bench rows that miss a target;
# and writes the full report of the run for the DPDK release it ran on,
# bench/results/dpdk-<release>/RESULTS.md and ratios.svg, and that release's
# section of bench/RESULTS.md (one section per release measured: the others
# are kept). Raw data and logs go to build/bench/. About 20 minutes on a
# quiet 2-CPU machine (3 of them the vhost-user rows; a few more from 24.11
# on), plus the wait for a quiet machine.
#
#   bash bench/run.sh                                  (or: make bench) DPDK of this machine
#   bash scripts/dpdk-root.sh trixie bash bench/run.sh    DPDK 24.11, in a Debian root
#   bash scripts/dpdk-root.sh forky bash bench/run.sh     DPDK 25.11, in a Debian root
#   bash bench/run.sh --help
#
# Environment:
#   BENCH_ROUNDS=11          mempool_bench rounds per row
#   BENCH_SECS=0.3           mempool_bench seconds per handler per round
#   BENCH_ONLY=              mempool_bench --only filter (default: every row)
#   BENCH_PEERS_PER_ROUND=3  DPDK's other handlers measured per round (in turn)
#   BENCH_SWING_RUNS=3       runs of the two-lcore recycling rows, 1 to 3 (1: only the main one)
#   BENCH_E2E_ROUNDS=4       testpmd / l2fwd runs per handler
#   BENCH_E2E_HANDLERS="ring_mp_mc ptr_ring"
#   BENCH_VHOST_ROUNDS=3     vhost-user runs per handler (0: skip them)
#   BENCH_VHOST_ONLY=1       build, run only the vhost-user rows (bench/vhost.sh) and
#                            the report, into build/bench-vhost/ (RESULTS.md there)
#   TESTPMD_SECONDS=3        1-second samples per testpmd run
#   L2FWD_SECONDS=3          1-second statistics intervals per l2fwd run
#   AUTOTEST_CLOCK_SCALE=20  how much faster mempool_perf_autotest's cases run (0: skip it)
#   AUTOTEST_CORES="1 2"     from DPDK 24.11 on: the core counts run (one process each)
#   BENCH_QUIET_WAIT=600     seconds to wait for a quiet machine (0: don't)
#   BENCH_PROFILE_MAX=3      missed rows to profile (0: none)
#   BENCH_QUICK=1            a short smoke run (about 3 minutes); RESULTS.md says SMOKE RUN
#   BENCH_REPLACE=1          replace the release's section of RESULTS.md even where the host
#                            ran ring_mp_mc in the control rows or in the no-cache rows on
#                            one lcore below 0.8x the committed run's rates (otherwise that
#                            run's report stays in build/bench/ and the section is kept)
set -euo pipefail

if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 0
fi
if (($#)); then
    echo "bench: unknown argument $1 (try --help)" >&2
    exit 2
fi

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
t_start=$SECONDS
step() { printf '\nbench: [%3d s] == %s\n' $((SECONDS - t_start)) "$*"; }
say() { printf 'bench: [%3d s] %s\n' $((SECONDS - t_start)) "$*"; }
die() { echo "bench: error: $*" >&2; exit 1; }

quick=${BENCH_QUICK:-0}
if [[ $quick == 1 ]]; then
    : "${BENCH_ROUNDS:=3}" "${BENCH_SECS:=0.05}" "${BENCH_E2E_ROUNDS:=1}" "${TESTPMD_SECONDS:=2}" "${L2FWD_SECONDS:=2}"
    : "${BENCH_QUIET_WAIT:=0}" "${BENCH_PROFILE_MAX:=1}" "${AUTOTEST_CLOCK_SCALE:=100}" "${AUTOTEST_CORES:=1}"
    : "${BENCH_VHOST_ROUNDS:=1}"
fi
export BENCH_VHOST_ROUNDS=${BENCH_VHOST_ROUNDS:-3}
rounds=${BENCH_ROUNDS:-11}
secs=${BENCH_SECS:-0.3}
only=${BENCH_ONLY:-}
peers_per_round=${BENCH_PEERS_PER_ROUND:-3}
swing_runs=${BENCH_SWING_RUNS:-3}
e2e_rounds=${BENCH_E2E_ROUNDS:-4}
read -r -a e2e_handlers <<<"${BENCH_E2E_HANDLERS:-ring_mp_mc ptr_ring}"
export TESTPMD_SECONDS=${TESTPMD_SECONDS:-3}
l2fwd_secs=${L2FWD_SECONDS:-3}
autotest_scale=${AUTOTEST_CLOCK_SCALE:-20}
read -r -a autotest_cores <<<"${AUTOTEST_CORES:-1 2}"
quiet_wait=${BENCH_QUIET_WAIT:-600}
profile_max=${BENCH_PROFILE_MAX:-3}

out=$repo/build/bench
logs=$out/logs
lib=$repo/target/release/librte_mempool_ptr_ring.so
bench_bin=$repo/target/release/mempool_bench
report_bin=$repo/target/release/bench_report
line_bin=$repo/target/release/line_trip
l2fwd_bin=$out/l2fwd

# The DPDK release this run measures (build/ and target/ are that release's
# own: inside a root of scripts/dpdk-root.sh they are the root's).
dpdk_version=$(pkg-config --modversion libdpdk) || die "pkg-config finds no libdpdk (make setup)"
dpdk_release=$(cut -d. -f1,2 <<<"$dpdk_version")
# dpdk_at_least X.Y: this DPDK is release X.Y or later.
dpdk_at_least() { printf '%s\n%s\n' "$1" "$dpdk_release" | sort -V -C; }
os_codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
if [[ -n ${DPDK_ROOT_SUITE:-} ]]; then
    run_cmd="bash scripts/dpdk-root.sh $DPDK_ROOT_SUITE bash bench/run.sh"
    dpdk_origin="Debian ${os_codename:-$DPDK_ROOT_SUITE} packages, dynamic libraries, in a Debian root of scripts/dpdk-root.sh on this machine"
else
    run_cmd="bash bench/run.sh"
    dpdk_origin="Debian ${os_codename:+$os_codename }packages, dynamic libraries"
fi

# ---------------------------------------------------------------- build
step "build (cargo build --release -p pmd-glue-so -p bench; l2fwd example)"
[[ -f build/eal-mem.env ]] || bash scripts/setup.sh
# shellcheck source=scripts/testpmd-rate.sh
source scripts/testpmd-rate.sh
# shellcheck source=scripts/pool-ops.sh
source scripts/pool-ops.sh # which handler served a pool, read through telemetry
cargo build --release -p pmd-glue-so -p bench
mkdir -p "$out"
# The example as the installed DPDK ships it (package dpdk-doc), built
# against that DPDK.
l2fwd_src=/usr/share/dpdk/examples/l2fwd/main.c
if [[ ! -f $l2fwd_src ]]; then
    say "no $l2fwd_src (package dpdk-doc): the l2fwd rows are left out"
    l2fwd_bin=""
elif [[ ! -x $l2fwd_bin || $l2fwd_src -nt $l2fwd_bin ]]; then
    # shellcheck disable=SC2046 # pkg-config prints lists of flags
    cc -O3 -DALLOW_EXPERIMENTAL_API $(pkg-config --cflags libdpdk) "$l2fwd_src" -o "$l2fwd_bin" $(pkg-config --libs libdpdk)
fi
clock_so=$out/autotest-clock.so
if [[ ! -f $clock_so || bench/autotest-clock.c -nt $clock_so ]]; then
    cc -O2 -shared -fPIC -o "$clock_so" bench/autotest-clock.c -ldl
fi
# BENCH_VHOST_ONLY=1: the vhost-user rows alone, and their report, into
# build/bench-vhost/ (build/bench/ and bench/RESULTS.md are left alone).
if [[ ${BENCH_VHOST_ONLY:-0} == 1 ]]; then
    vout=$repo/build/bench-vhost
    rm -rf "$vout"
    mkdir -p "$vout"
    {
        echo "command=BENCH_VHOST_ONLY=1 $run_cmd"
        echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
        echo "dpdk=$dpdk_version ($dpdk_origin)"
        echo "dpdk_release=$dpdk_release"
        echo "git=$(git rev-parse --short HEAD 2>/dev/null || echo '?')"
    } >"$vout/meta.env"
    step "vhost-user rows only (BENCH_VHOST_ONLY=1), into $vout"
    bash bench/vhost.sh --out "$vout"
    "$report_bin" --dir "$vout" --out "$vout/RESULTS.md"
    exit 0
fi
rm -rf "$logs" "$out/profile"
rm -f "$out"/{mempool.csv,e2e.csv,autotest.csv,meta.env,monitor.log,phase} "$out"/mempool-run*.csv
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
    cpu_between "$1" "$s0" "$s1" "$a" "$b"
}
# cpu_between SECONDS STAT0 STAT1 SNAP0 SNAP1: what others_cpu prints, from
# two /proc/stat lines and two proc_snap outputs taken SECONDS apart.
cpu_between() {
    awk -v me=$$ -v dt="$1" -v hz="$(getconf CLK_TCK)" -v s0="$2" -v s1="$3" '
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
        }' <(echo "$4") <(echo "$5")
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
# Timed lcores stay off CPU 0 where there are CPUs enough: the main lcore
# (which runs every one-lcore row) on CPU 1, the worker on CPU 2. A 2-CPU
# machine has no third CPU: the worker (second lane of the two-lcore rows)
# runs on CPU 0 there.
if (($(nproc) >= 3)); then
    lcore_args=(-l 1-2 --main-lcore 1)
    lcores_note="mempool_bench: main lcore on CPU 1 (one-lcore rows), worker on CPU 2; CPU 0 left to the system"
    xlcore_args="--lcores 0@0,1@1,2@2"
    xlcore_cpus=(1 2)
else
    lcore_args=(-l 0-1 --main-lcore 1)
    lcores_note="2 CPUs: mempool_bench's main lcore (every one-lcore row) on CPU 1, the worker lcore of the two-lcore rows on CPU 0 (no third CPU); testpmd forwards on lcore 1 = CPU 1; the cross-lcore testpmd pipeline forwards on CPU 1 and CPU 0, sharing CPU 0 with testpmd's main lcore"
    xlcore_args="--lcores 0@0,1@1,2@0"
    xlcore_cpus=(1 0)
fi
eal=("${lcore_args[@]}" --no-pci)
# shellcheck disable=SC2206 # EAL_MEM is a list of arguments
eal+=($EAL_MEM -d "$lib" --log-level=pmd.mempool.ptr_ring:info)
only_args=()
[[ -n $only ]] && only_args=(--only "$only")
# mempool_perf_autotest's output changed twice (section 2 below reads all
# three): up to 23.11 one test, 5-s cases, count / 5 s printed; from 24.11
# 1-s cases with rates from the measured cycles, sections repeated per core
# count (one process per core count here); from 25.07 padded fields,
# n_max_bulk= rows (random bulks) and the pool default_pool_nocache.
if dpdk_at_least 24.11; then
    autotest_tests=()
    for c in "${autotest_cores[@]}"; do
        case $c in
        1) autotest_tests+=(mempool_perf_autotest_1core) ;;
        2) autotest_tests+=(mempool_perf_autotest_2cores) ;;
        *) die "AUTOTEST_CORES: $c (1 or 2)" ;;
        esac
    done
    autotest_format=$(dpdk_at_least 25.07 && echo 25.07 || echo 24.11)
else
    autotest_tests=(mempool_perf_autotest)
    autotest_format=22.11
fi
# The pool of the --mbuf-pool-ops-name handler (ptr_ring) without cache; the
# ring_mp_mc side is perf_test_nocache in every release.
at_pool_h=$([[ $autotest_format == 25.07 ]] && echo default_pool_nocache || echo default_pool)
autotest_cmd="DPDK_TEST=TEST PTR_RING_CACHE_SIZE=0 AUTOTEST_CLOCK_SCALE=$autotest_scale LD_PRELOAD=build/bench/autotest-clock.so dpdk-test -l 0-1 $EAL_MEM --file-prefix PREFIX --no-pci -d target/release/librte_mempool_ptr_ring.so --mbuf-pool-ops-name ptr_ring   (TEST: $(sed 's/ /, then /g' <<<"${autotest_tests[*]}"); each process stopped when its cached sections begin)"

# lscpu read once; cpu_field NAME gives the first value of its line NAME.
cpu_info=$(lscpu)
cpu_field() { sed -n "s/^$1: *//p" <<<"$cpu_info" | head -1; }
{
    echo "command=$run_cmd"
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    # The family / model / stepping too: a VM's model name ("Intel(R) Xeon(R)
    # Processor") does not tell one host CPU from another (bench/NOTES.md).
    cpu_id=$(awk -F': *' '/^CPU family:/ { f = $2 } /^Model:/ { m = $2 } /^Stepping:/ { s = $2 }
        END { if (m != "") printf " (family %s, model %s, stepping %s)", f, m, s }' <<<"$cpu_info")
    echo "cpu=$(cpu_field 'Model name')$cpu_id"
    echo "cpus=$(nproc) ($(cpu_field 'Thread(s) per core') thread(s) per core, $(cpu_field 'L3 cache') L3)"
    echo "hypervisor=$(cpu_field 'Hypervisor vendor') ($(cpu_field 'Virtualization type'))"
    echo "kernel=$(uname -r)"
    echo "dpdk=$dpdk_version ($dpdk_origin)"
    echo "dpdk_release=$dpdk_release"
    echo "eal_mem=$EAL_MODE: $EAL_MEM ($(awk '/HugePages_Total/ {t=$2} /Hugepagesize/ {s=$2} END {printf "%d hugepages of %d kB", t, s}' /proc/meminfo))"
    echo "rustc=$(rustc --version)"
    echo "handler=target/release/librte_mempool_ptr_ring.so ($(stat -c %s "$lib") bytes, sha256 $(sha256sum "$lib" | cut -c1-12)), loaded with -d"
    echo "git=$(git rev-parse --short HEAD 2>/dev/null || echo '?') $(git diff --quiet 2>/dev/null && echo '(clean)' || echo '(with uncommitted changes)')"
    echo "quiet=$quiet"
    echo "quick=$quick"
    echo "lcores=$lcores_note"
    echo "mempool_cmd=target/release/mempool_bench --rounds $rounds --secs $secs --peers-per-round $peers_per_round ${only_args[*]} --csv build/bench/mempool.csv -- ${eal[*]/#$repo\//}"
    echo "swing_cmd=target/release/mempool_bench --rounds $rounds --secs $secs --only set=swing${only:+,$only} --handlers ptr_ring,ring_mp_mc --csv build/bench/mempool-runN.csv -- ... (runs 2-$swing_runs)"
    echo "autotest_cmd=$autotest_cmd"
    echo "autotest_scale=$autotest_scale"
    echo "autotest_format=$autotest_format"
    echo "autotest_pools=perf_test_nocache $at_pool_h"
    echo "testpmd_cmd=[PTR_RING_CACHE_SIZE=0] dpdk-testpmd -l 0-1 $EAL_MEM --file-prefix PREFIX --no-pci --vdev net_null0 --vdev net_null1 -d target/release/librte_mempool_ptr_ring.so --mbuf-pool-ops-name HANDLER -- -a --forward-mode=io --stats-period 1 [--mbcache=0] [--burst=512]"
    echo "xlcore_cmd=[PTR_RING_CACHE_SIZE=0] dpdk-testpmd $xlcore_args $EAL_MEM --file-prefix PREFIX --no-pci --vdev net_null0 --vdev net_ring0 -d target/release/librte_mempool_ptr_ring.so --mbuf-pool-ops-name HANDLER -- -a --forward-mode=io --stats-period 1 --nb-cores=2 [--mbcache=0]   (rate: port 1 = net_ring0 Rx-pps; the control: --vdev net_null0 --vdev net_null1, DPDK cache default, rate: both ports; before and after each run: target/release/line_trip ${xlcore_cpus[*]})"
    echo "l2fwd_cmd=build/bench/l2fwd -l 0-1 $EAL_MEM --file-prefix PREFIX --no-pci --vdev net_null0 --vdev net_null1 -d target/release/librte_mempool_ptr_ring.so --mbuf-pool-ops-name HANDLER -- -p 0x3 -T 1"
    echo "profile_cmd=perf stat -e task-clock,context-switches,cpu-migrations,page-faults and perf record -e cpu-clock -F 4000 of mempool_bench --only ROW --handlers HANDLER --rounds 1 --secs 3"
    echo "e2e_rounds=$e2e_rounds"
    echo "testpmd_secs=$TESTPMD_SECONDS"
    echo "l2fwd_secs=$l2fwd_secs"
} >"$out/meta.env"

# ------------------------------------------------------- 1. mempool_bench
step "1/5 mempool_bench ($rounds rounds of $secs s per handler per row): one progress line per row"
set_phase mempool_bench
"$bench_bin" --rounds "$rounds" --secs "$secs" --peers-per-round "$peers_per_round" "${only_args[@]}" --csv "$out/mempool.csv" -- "${eal[@]}" \
    2> >(tee "$logs/mempool_bench.err" >&2) >"$logs/mempool_bench.log" ||
    die "mempool_bench failed; see $logs/mempool_bench.log and .err"
params=$(grep '^# mempool_bench' "$out/mempool.csv" | tail -1 | tr ' ' '\n' | grep '=')
echo "$params" >>"$out/meta.env"
awk -F= '$1 == "tsc_hz" { printf "tsc_ghz=%.2f\n", $2 / 1e9 }' <<<"$params" >>"$out/meta.env"
# swing_run N: run N of the rows that swing between runs (two lcores each
# recycling through the handler), ptr_ring and ring_mp_mc only, as a process
# of its own, into mempool-runN.csv (monitor phase mempool_runN).
swing_run() {
    local sel="set=swing${only:+,$only}"
    ((swing_runs >= $1)) || return 0
    "$bench_bin" --list --only "$sel" >/dev/null 2>&1 || return 0
    set_phase "mempool_run$1"
    say "mempool_bench run $1 of $swing_runs of the two-lcore recycling rows"
    # The machine over this short run (the monitor's samples are 15 s
    # apart): one sample spanning it, in monitor.log under the run's phase.
    local s0 a t0 dt
    s0=$(head -1 /proc/stat) a=$(proc_snap) t0=$EPOCHREALTIME
    "$bench_bin" --rounds "$rounds" --secs "$secs" --only "$sel" --handlers ptr_ring,ring_mp_mc \
        --csv "$out/mempool-run$1.csv" -- "${eal[@]}" 2> >(tee "$logs/mempool_bench-run$1.err" >&2) \
        >"$logs/mempool_bench-run$1.log" || die "mempool_bench run $1 failed; see $logs/mempool_bench-run$1.err"
    dt=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
    echo "$(date +%s) mempool_run$1 $(cpu_between "$dt" "$s0" "$(head -1 /proc/stat)" "$a" "$(proc_snap)")" >>"$out/monitor.log"
}

# ---------------------------------------------- 2. mempool_perf_autotest
# DPDK's own test; per process it runs the no-cache section of its pool
# perf_test_nocache (ring_mp_mc, the default ops) and then that of the
# --mbuf-pool-ops-name handler's pool (at_pool_h: ptr_ring), then cached
# sections, which are not used: the process is stopped when they begin. The
# LD_PRELOAD clock shim makes the test's timer frequency autotest_scale times
# lower, so every case runs its time / autotest_scale:
#   22.11 format (up to 23.11): mempool_perf_autotest runs both no-cache
#     sections for 1, 2 and all cores, each case 5 s, and prints count / 5 s,
#     too low by the slowed clock and by how far the case overran: the real
#     rate is count / the time between two lines (each line is time-stamped).
#   24.11 format: the sections repeat per core count, so each core count runs
#     as its own test (mempool_perf_autotest_1core, _2cores); each case runs
#     1 s (at least one inner loop of 4M objects per lcore) and prints
#     count * timer_hz / cycles: exactly autotest_scale times too low.
#   25.07 format: as 24.11, with padded fields ("n_keep=   32"), n_max_bulk=
#     rows (random bulks 1..N, the same sequence on both pools), headers that
#     name the ops ("start performance test (using ring_mp_mc, without
#     cache)") and the pool default_pool_nocache.
step "2/5 mempool_perf_autotest (clock ${autotest_scale}x faster; ${autotest_tests[*]})"
set_phase autotest
autotest_skip=""
if ((autotest_scale == 0)); then
    autotest_skip="not run (AUTOTEST_CLOCK_SCALE=0)"
elif ! command -v dpdk-test >/dev/null; then
    autotest_skip="not run: no dpdk-test (package dpdk)"
fi
# autotest_run TEST: one dpdk-test process until its cached sections begin;
# appends its cases to autotest.csv.
autotest_run() {
    local test=$1 at_log=$logs/$1.log prefix=ptrring_bench_at_$$ pid ops_h ops_r
    rm -rf "$(dpdk_runtime_dir "$prefix")"
    # shellcheck disable=SC2086 # EAL_MEM is a list of arguments
    DPDK_TEST=$test PTR_RING_CACHE_SIZE=0 AUTOTEST_CLOCK_SCALE=$autotest_scale \
        LD_PRELOAD=$clock_so stdbuf -oL timeout 900 dpdk-test -l 0-1 $EAL_MEM --file-prefix "$prefix" --no-pci -d "$lib" \
        --log-level=pmd.mempool.ptr_ring:info --mbuf-pool-ops-name ptr_ring </dev/null \
        > >(while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done >"$at_log") 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        grep -Eq ' start performance test .*with cache\)' "$at_log" 2>/dev/null && break
        sleep 0.5
    done
    # Which handler served each side's pool, read through telemetry before
    # the test is stopped.
    ops_h=$(pool_ops_query "$prefix" "$at_pool_h" "$logs/$test-$at_pool_h.tel" "$pid")
    ops_r=$(pool_ops_query "$prefix" perf_test_nocache "$logs/$test-perf_test_nocache.tel" "$pid")
    # timeout passes the SIGINT on to dpdk-test.
    kill -INT "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    rm -rf "$(dpdk_runtime_dir "$prefix")"
    sleep 1 # the time-stamping reader drains the pipe
    [[ $ops_h == ptr_ring ]] ||
        die "$test: $at_pool_h ops_name '${ops_h:-no telemetry answer}', not ptr_ring; see $logs/$test-$at_pool_h.tel and $at_log"
    [[ $ops_r == "ops_index "* ]] ||
        die "$test: perf_test_nocache (the ring_mp_mc side) ops_name '${ops_r:-no telemetry answer}'; see $logs/$test-perf_test_nocache.tel"
    # autotest2,<handler>,<cores>,<max_bulk>,<get>,<put>,<keep>,<constant_n>,<objects/s>
    # (max_bulk 0: fixed bulks; get and put 0 in the random-bulk rows)
    awk -v fmt="$autotest_format" -v scale="$autotest_scale" '
        { t = $1; sub(/^[^ ]* /, "") }
        /^start performance test \(without cache\)/ { h = "ring_mp_mc"; last = t; next }
        /^start performance test \(using [^,]*, without cache\)/ { h = $5; sub(/,$/, "", h); last = t; next }
        /^start performance test for [^ ]* \(without cache\)/ { h = $5; last = t; next }
        /^start performance test/ { h = ""; next }
        h != "" && /^mempool_autotest cache=0 / {
            line = $0; gsub(/= +/, "=", line); n = split(line, w, " ")
            split("", f)
            for (i = 2; i <= n; i++) { split(w[i], kv, "="); f[kv[1]] = kv[2] }
            dt = t - last; last = t
            rate = fmt == "22.11" ? (dt > 0 ? f["rate_persec"] * 5 / dt : 0) : f["rate_persec"] * scale
            if (rate > 0) printf "autotest2,%s,%d,%d,%d,%d,%d,%d,%.0f\n", h, f["cores"], f["n_max_bulk"], f["n_get_bulk"], f["n_put_bulk"], f["n_keep"], f["constant_n"], rate
        }' "$at_log" >>"$out/autotest.csv"
    say "$test: $(grep -c ',ring_mp_mc,' "$out/autotest.csv") ring_mp_mc and $(grep -c ',ptr_ring,' "$out/autotest.csv") ptr_ring cases so far"
}
if [[ -z $autotest_skip ]]; then
    for t in "${autotest_tests[@]}"; do autotest_run "$t"; done
    # Only pairs measured in one process make a ratio; a format this script
    # does not know gives none.
    n_r=$(grep -c ',ring_mp_mc,' "$out/autotest.csv" || true)
    n_h=$(grep -c ',ptr_ring,' "$out/autotest.csv" || true)
    if ((n_r == 0 || n_h == 0)); then
        autotest_skip="left out: no like-for-like case pairs read from DPDK $dpdk_version's output ($n_r ring_mp_mc and $n_h ptr_ring cases; see build/bench/logs/mempool_perf_autotest*.log)"
    fi
fi
if [[ -n $autotest_skip ]]; then
    say "mempool_perf_autotest $autotest_skip"
    echo "autotest_skip=$autotest_skip" >>"$out/meta.env"
fi

swing_run 2

# ---------------------------------------------------------- 3. testpmd
# served HANDLER TEL POOL: POOL's ops name, from the telemetry replies in TEL
# (scripts/pool-ops.sh), is ptr_ring when HANDLER is ptr_ring, and another
# handler's (telemetry names it by its ops index only) otherwise.
served() {
    local got
    got=$(pool_ops_from_tel "$2" "$3")
    if [[ $1 == ptr_ring ]]; then [[ $got == ptr_ring ]]; else [[ $got == "ops_index "* ]]; fi
}

declare -A e2e_rate
record_e2e() { # app variant handler dpdk_cache handler_cache round rate [handler_share [line_before line_after]]
    local IFS=,
    echo "e2e2,$*" >>"$out/e2e.csv"
    e2e_rate[$1,$2,$3,$6]=$7
}
# One line per app and variant: each handler's median rate over the rounds
# and, against ring_mp_mc, the median of the per-round ratios (the report's
# figure).
e2e_summary() { # app variant
    local line="" h m r a b rates ratios
    for h in "${e2e_handlers[@]}"; do
        rates="" ratios=""
        for ((r = 1; r <= e2e_rounds; r++)); do
            a=${e2e_rate[$1,$2,$h,$r]:-} b=${e2e_rate[$1,$2,ring_mp_mc,$r]:-}
            rates+="$a "
            [[ $h != ring_mp_mc && -n $a && -n $b ]] && ratios+=$(awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.4f ", a / b }')
        done
        m=$(median <<<"$rates")
        line+=" | $h ${m:--} Mpps"
        [[ -n $ratios ]] && line+=" $(median <<<"$ratios")x (median of paired ratios)"
    done
    say "$1 $2:${line}"
}

# xlcore_line: the round trip of a cache line between the CPUs of the
# pipeline's two forwarding lcores, in ns (line_trip); nothing if it failed.
xlcore_line() { "$line_bin" "${xlcore_cpus[@]}" 2>>"$logs/line_trip.err" || true; }

# testpmd_variant APP VARIANT HANDLER ROUND: one run; the variant decides the
# caches of each side, the ports and the lcores.
testpmd_variant() {
    local app=$1 variant=$2 h=$3 r=$4 extra=() env=() dc=250 hc=0 rate="" try
    case $variant in
    mbcache=0) extra=(--mbcache=0) dc=0 env=(PTR_RING_CACHE_SIZE=0) ;;
    mbcache=default | control) ;;
    burst512) extra=(--burst=512) ;;
    ownvsnone) extra=(--mbcache=0) dc=0 hc=128 env=(PTR_RING_CACHE_SIZE=128) ;;
    esac
    [[ $h == ptr_ring ]] || hc=none
    # Both net_null ports allocate on receive (the handler share counts
    # their packets).
    local share_ports="0 1" tp_env=()
    if [[ $app == testpmd-xlcore ]]; then
        extra+=(--nb-cores=2)
        tp_env=(TESTPMD_LCORE_ARGS="$xlcore_args")
        # The pipeline: only net_null0 allocates, the rate is net_ring0's.
        # Its control keeps the two net_null ports: each lcore frees on
        # transmit what it allocated on receive, so DPDK's cache serves
        # everything and only the host can move that row.
        if [[ $variant != control ]]; then
            tp_env+=(TESTPMD_VDEVS="--vdev net_null0 --vdev net_ring0" TESTPMD_RX_PORTS=1)
            share_ports=0
        fi
    fi
    tp_env+=(TESTPMD_SHARE_PORTS="$share_ports")
    local log=$logs/$app-$variant-$h-$r.log lb="" la="" lines=()
    # The pipeline's rate follows the cache line between its two CPUs:
    # measured just before and just after each run.
    [[ $app == testpmd-xlcore ]] && lb=$(xlcore_line)
    for try in 1 2; do
        if env "${env[@]}" "${tp_env[@]}" TESTPMD_LOG="$log" bash -c 'source scripts/testpmd-rate.sh; testpmd_mpps "$@"' _ \
            -d "$lib" --log-level=pmd.mempool.ptr_ring:info --mbuf-pool-ops-name "$h" -- "${extra[@]}" >"$log.rate"; then
            rate=$(cat "$log.rate")
            break
        fi
        say "$app $variant $h round $r failed (try $try); see $log"
    done
    [[ -n $rate ]] || return 0
    [[ $app == testpmd-xlcore ]] && la=$(xlcore_line)
    [[ -n $lb && -n $la ]] && lines=("$lb" "$la")
    served "$h" "$log.tel" mb_pool_0 || die "$app $variant $h: mb_pool_0 was not served as asked (its ops name read through telemetry); see $log.tel"
    if [[ $h == ptr_ring && $hc == default ]]; then
        hc="default ($(sed -n 's/^PTR_RING: pool mb_pool_0: .*per-lcore cache \([0-9]*\).*/\1/p' "$log" | head -1))"
    fi
    local share
    share=$(cat "$log.share")
    [[ $share == - ]] && share=-1
    [[ $h == ptr_ring && $share == -1 ]] && die "$app $variant ptr_ring: no ptr_ring counters through telemetry; see $log.c0, $log.c1"
    record_e2e "$app" "$variant" "$h" "$dc" "$hc" "$r" "$rate" "$share" "${lines[@]}"
    say "$app $variant round $r/$e2e_rounds $h: $rate Mpps (DPDK cache $dc, handler cache $hc$([[ $share != -1 ]] && echo ", handler share $share")$( ((${#lines[@]})) && echo "; line between the CPUs ${lines[0]} / ${lines[1]} ns"))"
}

e2e_runs=$((e2e_rounds * ${#e2e_handlers[@]} * 6 + e2e_rounds))
step "3/5 dpdk-testpmd: ${e2e_rounds} rounds x ${#e2e_handlers[@]} handlers x 6 settings, plus ptr_ring's own cache alone (about $((e2e_runs * (TESTPMD_SECONDS + 4))) s)"
set_phase testpmd
for pair in testpmd:mbcache=0 testpmd:mbcache=default testpmd:burst512 testpmd-xlcore:mbcache=0 testpmd-xlcore:mbcache=default \
    testpmd-xlcore:control; do
    app=${pair%%:*} variant=${pair#*:}
    for ((r = 1; r <= e2e_rounds; r++)); do
        # Alternate the order every round.
        hs=("${e2e_handlers[@]}")
        ((r % 2 == 0)) && mapfile -t hs < <(printf '%s\n' "${e2e_handlers[@]}" | tac)
        for h in "${hs[@]}"; do testpmd_variant "$app" "$variant" "$h" "$r"; done
    done
    e2e_summary "$app" "$variant"
done
# ptr_ring's own cache against ring_mp_mc with no cache: not like for like;
# the ring_mp_mc side is the mbcache=0 runs above (the same configuration).
for ((r = 1; r <= e2e_rounds; r++)); do
    testpmd_variant testpmd ownvsnone ptr_ring "$r"
done
# (Read whole into a variable first: the file is not read and appended in one pipeline.)
rows=$(grep '^e2e2,testpmd,mbcache=0,ring_mp_mc,' "$out/e2e.csv" || true)
[[ -z $rows ]] || sed 's/,mbcache=0,/,ownvsnone,/' <<<"$rows" >>"$out/e2e.csv"
# Over vhost-user: the PMD's rings hold more mbufs than the cache.
if ((BENCH_VHOST_ROUNDS > 0)); then
    step "3/5 (vhost-user) dpdk-testpmd pairs: $BENCH_VHOST_ROUNDS rounds x 3 handlers x 2 settings, then vhost_pair: 6 runs of 6 s with 3 handlers, pools of 16384 and of 65536 mbufs (about $((BENCH_VHOST_ROUNDS * 6 * (TESTPMD_SECONDS + 7) + 125)) s)"
    set_phase vhost
    bash bench/vhost.sh --out "$out" || say "the vhost-user rows stopped early; see $logs/testpmd-vhost-*"
fi

# ------------------------------------------------------------ 4. l2fwd
# l2fwd_mpps HANDLER LOG: runs l2fwd until it printed L2FWD_SECONDS+2 statistics
# blocks, stops it with SIGINT, prints packets received per second (both ports,
# Mpps) between the second block and the last one. At start-up it reads the
# ops name of l2fwd's pool (mbuf_pool) through telemetry into LOG.tel.
l2fwd_mpps() {
    local h=$1 log=$2 pid blocks deadline waited=0 prefix=ptrring_bench_l2fwd_$$
    rm -rf "$(dpdk_runtime_dir "$prefix")"
    # shellcheck disable=SC2086 # EAL_MEM is a list of arguments
    "$l2fwd_bin" -l 0-1 $EAL_MEM --file-prefix "$prefix" --no-pci --vdev net_null0 --vdev net_null1 -d "$lib" \
        --log-level=pmd.mempool.ptr_ring:info --mbuf-pool-ops-name "$h" -- -p 0x3 -T 1 </dev/null >"$log" 2>&1 &
    pid=$!
    pool_ops_query "$prefix" mbuf_pool "$log.tel" "$pid" >/dev/null
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
    rm -rf "$(dpdk_runtime_dir "$prefix")"
    grep -a '^Total packets received:' "$log" | awk '
        { v[++n] = $4 }
        END { if (n >= 3) printf "%.3f", (v[n] - v[2]) / (n - 2) / 1e6; else exit 1 }'
}

step "4/5 l2fwd, ${e2e_rounds} rounds x ${#e2e_handlers[@]} handlers (about $((e2e_rounds * ${#e2e_handlers[@]} * (l2fwd_secs + 4))) s)"
set_phase l2fwd
[[ -n $l2fwd_bin ]] || say "skipped: no l2fwd example to build"
for ((r = 1; r <= e2e_rounds; r++)); do
    [[ -n $l2fwd_bin ]] || break
    for h in "${e2e_handlers[@]}"; do
        log=$logs/l2fwd-$h-$r.log
        if ! rate=$(l2fwd_mpps "$h" "$log"); then
            say "l2fwd $h round $r: no rate; see $log"
            continue
        fi
        served "$h" "$log.tel" mbuf_pool || die "l2fwd $h: mbuf_pool was not served as asked (its ops name read through telemetry); see $log.tel"
        record_e2e l2fwd default "$h" 256 0 "$r" "$rate"
        say "l2fwd round $r/$e2e_rounds $h: $rate Mpps"
    done
done
[[ -n $l2fwd_bin ]] && e2e_summary l2fwd default

swing_run 3

# ---------------------------------------------------------- 5. profiles
step "5/5 profiles of missed mempool_bench targets (at most ${profile_max})"
set_phase profile
mapfile -t missed < <("$report_bin" --dir "$out" --missed)
if ((${#missed[@]} == 0 || profile_max == 0)); then
    say "nothing to profile"
elif ! perf stat -e task-clock true >/dev/null 2>&1; then
    say "perf does not work here; no profiles"
    echo "profile_skip=no profiles: perf does not work here$(command -v perf >/dev/null || echo ' (not installed)')" >>"$out/meta.env"
else
    for f in "${missed[@]:0:profile_max}"; do
        name=$(tr ',=' ' -' <<<"$f" | sed 's/pattern-//; s/ /_/g')
        txt=$out/profile/$name.txt
        say "profiling $f"
        echo "mempool_bench --only $f, each handler alone for 3 s" >"$txt"
        for h in ptr_ring ring_mp_mc; do
            run=("$bench_bin" --only "$f" --handlers "$h" --rounds 1 --secs 3 --warmup 0.05)
            perf stat -x, -e task-clock,context-switches,cpu-migrations,page-faults \
                -o "$logs/perf-stat-$name-$h.csv" -- "${run[@]}" --csv "$logs/perf-$name-$h.csv" -- "${eal[@]}" \
                >"$logs/perf-stat-$name-$h.log" 2>&1 || { say "perf stat $h failed"; continue; }
            perf record -q -e cpu-clock -F 4000 -o "$logs/perf-$name-$h.data" -- "${run[@]}" -- "${eal[@]}" \
                >"$logs/perf-record-$name-$h.log" 2>&1 || { say "perf record $h failed"; continue; }
            {
                echo
                echo "== $h: $(awk -F, '/^mempool2,/ { printf "%.1f M objects/s", $13 / 1e6 }' "$logs/perf-$name-$h.csv") under perf stat"
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
# The full report and chart of this run go to bench/results/dpdk-<release>/;
# bench/RESULTS.md gets this release's section, the others stay.
# A host that ran ring_mp_mc in the control rows (the handler never called)
# or in the no-cache rows on one lcore (its atomics) below 0.8x the rates
# of the committed run of this release is not comparable with
# it: bench_report then leaves bench/RESULTS.md and results/ alone, writes
# this run's report into $out and fails, unless BENCH_REPLACE=1.
replace=()
[[ ${BENCH_REPLACE:-0} == 1 ]] && replace=(--replace)
"$report_bin" --dir "$out" --index bench/RESULTS.md "${replace[@]}" "${notes[@]}"
say "done: bench/results/dpdk-$dpdk_release/RESULTS.md and ratios.svg, DPDK $dpdk_release's section of bench/RESULTS.md (raw data and logs in build/bench/)"
