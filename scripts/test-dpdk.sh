#!/usr/bin/env bash
# DPDK-level checks of the ptr_ring mempool handler, with real DPDK programs:
#
#   1. mempool_autotest  DPDK's own mempool unit test (dpdk-test) on ptr_ring
#                        (DPDK's dump of the test's default_pool names it);
#   2. testpmd           io forwarding on two net_null ports, DPDK mbuf cache
#                        default and --mbcache=0: forwards, exits cleanly,
#                        mb_pool_0's ops name (read through telemetry) is
#                        ptr_ring and the handler accounts for it at free;
#   3. l2fwd             DPDK's l2fwd example, built here with pkg-config,
#                        forwarding between two net_null ports, its pool's
#                        ops name (telemetry) ptr_ring;
#   4. telemetry         /ptr_ring/pools and /ptr_ring/stats,mb_pool_0 read
#                        from a running testpmd with dpdk-telemetry.py
#                        (--mbcache=0, so that forwarding reaches the handler
#                        and its hold counter grows between two reads);
#   5. cargo EAL tests   pmd-glue/tests/eal_*.rs (exhaustion, validation mode,
#                        two lcores, primary + secondary processes, IOVA
#                        stability over recycles, shutdown and free, DMA
#                        mapping, populate with IOVA as PA);
#   and first, without DPDK: the summary helpers of the demo and the
#   benchmark scripts (testpmd-rate.sh: paired ratios, median, range, swing).
#
# Prints one PASS/FAIL (or SKIP) line per check and ends with
# "dpdk: N passed, M failed, K skipped"; exits non-zero if any check failed.
# A check that skips itself counts as failed (make test needs every one),
# except the checks that cannot run without hugepages (NOHUGE_ONLY below)
# when EAL runs with --no-huge and TEST_DPDK_ALLOW_NOHUGE_SKIP=1. Logs go to
# build/test-dpdk/. Every DPDK run is a private process (--in-memory, or
# --no-huge --no-shconf) or uses a --file-prefix of its own that is removed
# afterwards, so runs can be repeated and run next to other DPDK programs.
#
# Needs: scripts/setup.sh run once (build/eal-mem.env) and
# `cargo build --release --workspace` (target/release/librte_mempool_ptr_ring.so).
#
# Environment:
#   PTR_RING_LIB          the handler .so (default target/release/...)
#   PTR_RING_EAL_ENV      a file like build/eal-mem.env to use instead of it,
#                         e.g. to try --no-huge on a machine with hugepages
#   TEST_DPDK_SKIP_CARGO  1: leave out check 5 (e.g. when `cargo test` ran it)
#   TEST_DPDK_CARGO_SKIPS with TEST_DPDK_SKIP_CARGO=1: the skip log
#                         (PTR_RING_SKIP_LOG) of that cargo test run, whose
#                         skips are then reported and counted here as check
#                         5's would be (make test-dpdk passes it)
#   TEST_DPDK_ONLY        space-separated subset of: summary autotest testpmd
#                         l2fwd telemetry cargo valgrind
#   TEST_DPDK_ALLOW_NOHUGE_SKIP  1: in --no-huge mode, a skipped NOHUGE_ONLY
#                         check counts as skipped instead of failed
set -euo pipefail
# shellcheck source=scripts/help.sh
source "$(dirname "${BASH_SOURCE[0]}")/help.sh"
help_if_asked "$@"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
# shellcheck source=scripts/testpmd-rate.sh
source "$repo/scripts/testpmd-rate.sh" # also sources eal-args.sh: EAL_MEM, EAL_MODE
# shellcheck source=scripts/pool-ops.sh
source "$repo/scripts/pool-ops.sh" # which handler served a pool, from DPDK's side
if [[ -n ${PTR_RING_EAL_ENV:-} ]]; then
    # Another memory mode than setup.sh chose (the cargo tests read it too).
    # shellcheck source=/dev/null
    source "$PTR_RING_EAL_ENV"
fi

LIB=${PTR_RING_LIB:-$repo/target/release/librte_mempool_ptr_ring.so}
plugin_path_ok "$LIB" || exit 1
logs=$repo/build/test-dpdk
mkdir -p "$logs"
start=$SECONDS

passed=0
failed=0
skipped=0
check_start=$SECONDS
took=""
# Checks that cannot run with --no-huge: multi-process needs shared hugepage
# memory; EAL gives IOVA as PA only with hugepages.
NOHUGE_ONLY=" cargo_eal_multiprocess cargo_eal_populate "
lap() { took="$((SECONDS - check_start)) s"; check_start=$SECONDS; }
pass() { lap; echo "PASS $1${2:+ ($2)} [$took]"; passed=$((passed + 1)); }
fail() {
    lap
    echo "FAIL $1: $2 [$took]"
    [[ -n ${3:-} && -f ${3:-} ]] && { echo "  --- last lines of $3:"; tail -n 15 "$3" | awk '{ print "  | " $0 }'; }
    failed=$((failed + 1))
}
# A check that could not run: a failure, unless it is a no-huge-only check
# in --no-huge mode and the run opted out explicitly.
skip() {
    if [[ $NOHUGE_ONLY == *" $1 "* && ${EAL_MODE:-} != hugepages && ${TEST_DPDK_ALLOW_NOHUGE_SKIP:-0} == 1 ]]; then
        lap
        echo "SKIP $1: $2 [$took]"
        skipped=$((skipped + 1))
    else
        fail "$1" "skipped, but every check must run: $2${3:+ (no-huge-only: set TEST_DPDK_ALLOW_NOHUGE_SKIP=1 to accept)}" "${4:-}"
    fi
}
wanted() { [[ -z ${TEST_DPDK_ONLY:-} ]] || [[ " $TEST_DPDK_ONLY " == *" $1 "* ]]; }
# The parts of cargo EAL tests that skipped themselves, in the log $1
# (`test: SKIP <test>/<part>: <why>`, written by pmd-glue/tests/common's
# skip): one SKIP line each, counted as skipped, not as part of the test's
# PASS.
part_skips() {
    local line
    while IFS= read -r line; do
        echo "SKIP cargo_${line%%: *}: ${line#*: }"
        skipped=$((skipped + 1))
    done < <(grep -oE 'test: SKIP [a-z0-9_]+/[^:]*: .*' "$1" | sed 's/^test: SKIP //' || true)
}
# The skip log $1 of a cargo test run made before this script (make
# test-dpdk): a test that skipped itself as a whole goes through skip,
# as in check 5; its skipped parts through part_skips.
earlier_cargo_skips() {
    local line t
    [[ -f $1 ]] || return 0
    while IFS= read -r line; do
        t=${line%%: *}
        skip "cargo_$t" "${line#*: }" "$([[ $NOHUGE_ONLY == *" cargo_$t "* ]] && echo nohuge)" "$1"
    done < <(grep -oE 'test: SKIP [a-z0-9_]+: .*' "$1" | sed 's/^test: SKIP //' || true)
    part_skips "$1"
}

# Every error line the handler prints (log::write tags them all
# "PTR_RING: ERROR: ", panics caught at the FFI boundary included): none may
# appear in a healthy run.
handler_errors() {
    grep -E 'PTR_RING: ERROR: ' "$1" || true
}

if [[ ! -f $LIB ]]; then
    echo "test-dpdk: $LIB not found; run: cargo build --release --workspace" >&2
    fail setup "handler library missing"
    echo "dpdk: $passed passed, $failed failed, $skipped skipped"
    exit 1
fi
# shellcheck disable=SC2206 # EAL_MEM is a list of arguments
eal_mem=($EAL_MEM)
echo "test-dpdk: EAL mode $EAL_MODE ($EAL_MEM), handler $LIB"
check_start=$SECONDS

# --------------------------------------------------------------- 1. autotest
check_autotest() {
    local log=$logs/mempool_autotest.log rc=0
    DPDK_TEST=mempool_autotest timeout -k 5 120 dpdk-test "${eal_mem[@]}" --no-telemetry --no-pci -l 0-1 \
        -d "$LIB" --log-level=pmd.mempool.ptr_ring:info --mbuf-pool-ops-name ptr_ring </dev/null >"$log" 2>&1 || rc=$?
    # Which handler served the test's pool: the test creates "default_pool"
    # on the --mbuf-pool-ops-name handler and prints DPDK's dump of it
    # (rte_mempool_dump: "ops_name: <...>", from DPDK's ops table). No
    # telemetry here: the test runs in well under a second and frees every
    # pool before it exits, with no point to wait at, so no query can be
    # sure to find the pool alive.
    local ops allocs frees leaks errs
    ops=$(pool_ops_from_dump "$log" default_pool | paste -sd ' ' -)
    # The handler's own accounting: every pool it created was freed.
    allocs=$(grep -c 'PTR_RING: pool [^ ]*: [0-9]* objects' "$log" || true)
    frees=$(grep -c 'PTR_RING: pool [^ ]* freed' "$log" || true)
    leaks=$(grep -c 'PTR_RING: pool [^ ]* freed with' "$log" || true)
    errs=$(handler_errors "$log")
    if ((rc != 0)); then
        fail mempool_autotest "dpdk-test exit status $rc" "$log"
    elif ! grep -q '^Test OK' "$log"; then
        fail mempool_autotest "no 'Test OK'" "$log"
    elif [[ $ops != ptr_ring ]]; then
        fail mempool_autotest "DPDK's dump of default_pool gives ops_name '${ops:-none}', not ptr_ring" "$log"
    elif ((frees != allocs)); then
        fail mempool_autotest "$allocs pools created on ptr_ring but $frees freed" "$log"
    elif [[ -n $errs ]]; then
        fail mempool_autotest "handler errors: $errs" "$log"
    else
        pass mempool_autotest "Test OK; default_pool ops_name ptr_ring (DPDK's dump); $allocs ptr_ring pools created and freed, $leaks freed with objects out"
    fi
}

# ---------------------------------------------------------------- 2. testpmd
# $1: label, rest: extra testpmd arguments.
check_testpmd() {
    local label=$1; shift
    local log=$logs/testpmd-$label.log
    # (testpmd_mpps reads mb_pool_0's ops name through telemetry:
    # TESTPMD_OPS; and the handler share, objects ptr_ring handed out per
    # packet the two net_null ports received: TESTPMD_SHARE.)
    if ! TESTPMD_SECONDS=2 TESTPMD_SHARE_PORTS="0 1" TESTPMD_LOG=$log testpmd_mpps -d "$LIB" --log-level=pmd.mempool.ptr_ring:info --mbuf-pool-ops-name ptr_ring \
        -- "$@" >/dev/null 2>"$logs/testpmd-$label.err"; then
        fail "testpmd_$label" "no forwarding rate: $(head -n 1 "$logs/testpmd-$label.err")" "$log"
        return
    fi
    local mpps=$TESTPMD_MPPS share=$TESTPMD_SHARE errs freed nocache=0
    [[ " $* " == *" --mbcache=0 "* ]] && nocache=1
    errs=$(handler_errors "$log")
    freed=$(grep -m1 'PTR_RING: pool mb_pool_0 freed' "$log" || true)
    if ! awk -v r="$mpps" 'BEGIN { exit !(r > 0) }'; then
        fail "testpmd_$label" "forwarding rate $mpps Mpps" "$log"
    elif [[ $TESTPMD_OPS != ptr_ring ]]; then
        fail "testpmd_$label" "mb_pool_0 ops_name '${TESTPMD_OPS:-no telemetry answer}', not ptr_ring" "$log.tel"
    elif ! grep -q '^Bye' "$log"; then
        fail "testpmd_$label" "testpmd did not exit cleanly (no 'Bye...')" "$log"
    elif [[ -z $freed ]]; then
        # testpmd frees its mbuf pools at exit (rte_mempool_free in
        # pmd_test_exit), so the handler must have said so.
        fail "testpmd_$label" "no 'PTR_RING: pool mb_pool_0 freed' line at exit" "$log"
    elif [[ -n $errs ]]; then
        fail "testpmd_$label" "handler errors: $errs" "$log"
    elif ((nocache)) && ! awk -v s="$share" 'BEGIN { exit !(s >= 0.98 && s <= 1.02) }'; then
        # No cache anywhere: net_null's receive takes every mbuf from the
        # handler, one per packet, and the handler's hold counter says so.
        fail "testpmd_$label" "handler share $share with --mbcache=0 (telemetry: hold per packet received), not 1" "$log.c1"
    elif ((!nocache)) && ! awk -v s="$share" 'BEGIN { exit !(s < 0.01) }'; then
        # DPDK's cache (250) serves bursts of 32 on one lcore: after
        # start-up the handler is not on the path (the bench's control).
        fail "testpmd_$label" "handler share $share behind DPDK's cache, not about 0" "$log.c1"
    elif ((nocache)) && [[ $freed != *"freed: every object returned"* ]]; then
        # No DPDK cache: every object is in the handler at exit.
        fail "testpmd_$label" "with --mbcache=0 every object must come back: $freed" "$log"
    elif [[ $freed =~ freed\ with\ ([0-9]+)\ objects ]] && ((BASH_REMATCH[1] > 750)); then
        # With DPDK's cache (testpmd: 250 per lcore) rte_mempool_free does
        # not flush the per-lcore caches: up to 2 lcores x 1.5 x 250 objects
        # may sit there. More than that is a loss.
        fail "testpmd_$label" "more objects missing at free than DPDK's caches can hold: $freed" "$log"
    else
        pass "testpmd_$label" "$mpps Mpps; mb_pool_0 ops_name ptr_ring (telemetry); handler share $share; ${freed#*PTR_RING: }"
    fi
}

# ------------------------------------------------------------------ 3. l2fwd
check_l2fwd() {
    local src=/usr/share/dpdk/examples/l2fwd/main.c bin=$repo/build/l2fwd
    local blog=$logs/l2fwd-build.log log=$logs/l2fwd.log rc=0
    if [[ ! -f $src ]]; then
        fail l2fwd "$src missing (Debian package dpdk-doc)"
        return
    fi
    if [[ ! -x $bin || $src -nt $bin ]]; then
        # shellcheck disable=SC2046 # pkg-config output is a list of flags
        if ! cc -O2 -DALLOW_EXPERIMENTAL_API $(pkg-config --cflags libdpdk) "$src" -o "$bin" \
            $(pkg-config --libs libdpdk) >"$blog" 2>&1; then
            fail l2fwd "build of $src failed" "$blog"
            return
        fi
    fi
    # l2fwd runs until SIGINT; --preserve-status gives its own exit status.
    # Its pool's ops name is read through telemetry while it runs.
    local fp=ptrring_l2fwd_$$ pid ops
    rm -rf "$(dpdk_runtime_dir "$fp")"
    timeout --preserve-status -k 5 -s INT 4 "$bin" "${eal_mem[@]}" --file-prefix "$fp" --no-pci -l 0-1 \
        --vdev net_null0 --vdev net_null1 -d "$LIB" --log-level=pmd.mempool.ptr_ring:info --mbuf-pool-ops-name ptr_ring \
        -- -p 0x3 -T 1 </dev/null >"$log" 2>&1 &
    pid=$!
    ops=$(pool_ops_query "$fp" mbuf_pool "$logs/l2fwd.tel" "$pid")
    wait "$pid" || rc=$?
    rm -rf "$(dpdk_runtime_dir "$fp")"
    local sent errs
    sent=$(awk '/Total packets sent:/ { v = $4 } END { print v + 0 }' "$log")
    errs=$(handler_errors "$log")
    if ((rc != 0)); then
        fail l2fwd "exit status $rc" "$log"
    elif [[ $ops != ptr_ring ]]; then
        fail l2fwd "mbuf_pool ops_name '${ops:-no telemetry answer}', not ptr_ring" "$logs/l2fwd.tel"
    elif ((sent == 0)); then
        fail l2fwd "no packets forwarded" "$log"
    elif [[ -n $errs ]]; then
        fail l2fwd "handler errors: $errs" "$log"
    else
        pass l2fwd "$sent packets sent; mbuf_pool ops_name ptr_ring (telemetry)"
    fi
}

# -------------------------------------------------------------- 4. telemetry
check_telemetry() {
    local fp=ptrring_tel_$$ log=$logs/telemetry-testpmd.log
    local rundir
    rundir=$(dpdk_runtime_dir "$fp")
    local sock=$rundir/dpdk_telemetry.v2
    rm -rf "$rundir"
    local keep keeper pid
    exec {keep}< <(exec sleep 3600)
    keeper=$!
    dpdk-testpmd -l 0-1 "${eal_mem[@]}" --file-prefix "$fp" --no-pci --vdev net_null0 --vdev net_null1 \
        -d "$LIB" --log-level=pmd.mempool.ptr_ring:info --mbuf-pool-ops-name ptr_ring -- -a --forward-mode=io --mbcache=0 <&"$keep" >"$log" 2>&1 &
    pid=$!
    # Waits until mb_pool_0 is populated; ports start right after the pool.
    local ops
    ops=$(pool_ops_query "$fp" mb_pool_0 "$logs/telemetry-ops.tel" "$pid")
    sleep 1
    local pools="" s1="" s2="" none="" bad=""
    if [[ ! -S $sock ]]; then
        bad="no telemetry socket $sock"
    elif [[ $ops != ptr_ring ]]; then
        bad="mb_pool_0 ops_name '${ops:-no telemetry answer}', not ptr_ring (see $logs/telemetry-ops.tel)"
    else
        pools=$(tel_query "$fp" /ptr_ring/pools 2>&1) || true
        s1=$(tel_query "$fp" /ptr_ring/stats,mb_pool_0 2>&1) || true
        sleep 0.5
        s2=$(tel_query "$fp" /ptr_ring/stats,mb_pool_0 2>&1) || true
        none=$(tel_query "$fp" /ptr_ring/stats,no_such_pool 2>&1) || true
    fi
    kill -INT "$pid" 2>/dev/null || true
    local waited=0 rc=0
    while kill -0 "$pid" 2>/dev/null && ((waited < 100)); do sleep 0.1; waited=$((waited + 1)); done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" || rc=$?
    exec {keep}<&-
    kill "$keeper" 2>/dev/null || true
    wait "$keeper" 2>/dev/null || true
    rm -rf "$rundir"
    {
        echo "pools: $pools"
        echo "stats: $s1"
        echo "stats 0.5 s later: $s2"
        echo "unknown pool: ${none:-}"
    } >"$logs/telemetry.json"
    if [[ -n $bad ]]; then
        fail telemetry "$bad" "$log"
        return
    fi
    local verdict
    verdict=$(python3 - "$pools" "$s1" "$s2" "${none:-}" <<'PY'
import json, sys
def parse(t):
    t = t.strip()
    return json.loads(t[t.index("{"):]) if "{" in t else None
try:
    pools = parse(sys.argv[1])["/ptr_ring/pools"]
    a = parse(sys.argv[2])["/ptr_ring/stats"]
    b = parse(sys.argv[3])["/ptr_ring/stats"]
    none = parse(sys.argv[4])
except Exception as e:
    print(f"bad reply: {e!r}"); sys.exit()
need = ["size", "available", "populated", "in_ring", "in_handler_caches", "inflight", "hold", "release",
        "handler_dequeue_failures"]
if "mb_pool_0" not in (pools or []):
    print(f"mb_pool_0 not listed by /ptr_ring/pools: {pools}")
elif not isinstance(a, dict) or any(k not in a for k in need):
    print(f"stats lack fields {[k for k in need if not isinstance(a, dict) or k not in a]}: {a}")
elif not isinstance(a["inflight"], int):
    print(f"inflight is not a number: {a['inflight']!r}")
elif a["size"] <= 0 or a["populated"] != a["size"]:
    print(f"size {a['size']} populated {a['populated']}")
elif a["available"] > a["size"] or a["in_ring"] + a["in_handler_caches"] > a["size"]:
    print(f"counts exceed the pool: {a}")
elif a.get("ring_mode") != "MP/MC":
    print(f"testpmd's pool (no SP/SC flags) reports ring_mode {a.get('ring_mode')!r}, expected 'MP/MC'")
elif not (b["hold"] > a["hold"] > 0):
    print(f"hold not growing while forwarding: {a['hold']} -> {b['hold']}")
elif none and (none.get("/ptr_ring/stats") not in (None, {})):
    print(f"stats of an unknown pool answered: {none}")
else:
    print(f"OK size {a['size']}, in_ring {a['in_ring']}, inflight {a['inflight']}, hold +{b['hold'] - a['hold']} in 0.5 s")
PY
)
    if [[ $verdict != OK* ]]; then
        fail telemetry "$verdict" "$logs/telemetry.json"
    elif ((rc != 0 && rc != 130)); then
        fail telemetry "testpmd exit status $rc" "$log"
    elif [[ -e $rundir ]]; then
        fail telemetry "$rundir left behind"
    else
        pass telemetry "${verdict#OK }"
    fi
}

# ------------------------------------------------------ 5. cargo EAL tests
check_cargo() {
    # Build once, then run the test executables themselves: no cargo lock
    # to wait on (other builds may hold it) and no rebuild between tests.
    local blog=$logs/cargo-build.log list
    if ! list=$(cargo test --profile release-test -p pmd-glue --no-run --message-format=json 2>"$blog" | python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "test" in m["target"]["kind"]:
        print(m["target"]["name"], m["executable"])
'); then
        fail cargo_build "cargo test --no-run failed" "$blog"
        return
    fi
    lap
    echo "test-dpdk: test executables built [$took]"
    local t exe log out rc errs
    for t in eal_exhaustion eal_validation eal_two_lcores eal_multiprocess eal_iova_recycle \
        eal_shutdown eal_release eal_release_mp eal_dma eal_populate; do
        exe=$(awk -v t="$t" '$1 == t { print $2 }' <<<"$list")
        log=$logs/cargo-$t.log
        if [[ -z $exe || ! -x $exe ]]; then
            fail "cargo_$t" "test executable not built (see $blog)"
            continue
        fi
        rc=0
        (cd "$repo/pmd-glue" && timeout -k 5 120 "$exe" --nocapture --test-threads=1) </dev/null >"$log" 2>&1 || rc=$?
        # (libtest prints "test NAME ... " without a newline before the
        # test's own first line: match "test: " anywhere on a line.)
        out=$(grep -oE 'test: (SKIP|ops-index hazard).*' "$log" | sed 's/^test: //' | paste -sd ';' - || true)
        errs=$(handler_errors "$log")
        if ((rc != 0)); then
            fail "cargo_$t" "exit status $rc: $(grep -m1 -A1 'panicked' "$log" | tail -n 1 || true)" "$log"
        elif grep -qE "(^|\.\.\. )test: SKIP $t:" "$log"; then
            skip "cargo_$t" "${out#SKIP }" "$([[ $NOHUGE_ONLY == *" cargo_$t "* ]] && echo nohuge)" "$log"
        elif [[ -n $errs && $t != eal_validation && $t != eal_shutdown && $t != eal_release &&
            $t != eal_multiprocess ]]; then
            # (Those four provoke and check handler errors on purpose:
            # rejected frees, a refused second shutdown, a foreign pool.)
            fail "cargo_$t" "handler errors: $errs" "$log"
        else
            pass "cargo_$t" "$out"
            part_skips "$log"
        fi
    done
}

# eal_release's soak (shutdown, release, cancel and free in random orders,
# buffers out) once more under valgrind's memcheck, on --no-huge memory
# (valgrind does not follow hugepage mappings).
check_release_soak_valgrind() {
    local exe log=$logs/valgrind-eal_release.log env=$logs/valgrind-eal.env rc=0
    if ! command -v valgrind >/dev/null; then
        fail valgrind_release_soak "valgrind not installed (make setup installs it)"
        return
    fi
    exe=$(cargo test --profile release-test -p pmd-glue --test eal_release --no-run --message-format=json \
        2>"$log" | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
    if [[ -z $exe || ! -x $exe ]]; then
        fail valgrind_release_soak "eal_release not built" "$log"
        return
    fi
    printf 'EAL_MODE=nohuge\nEAL_MEM="--no-huge -m 512"\n' >"$env"
    (cd "$repo/pmd-glue" && PTR_RING_EAL_ENV=$env timeout -k 5 300 valgrind -q --error-exitcode=9 \
        "$exe" soak_release_orders --exact --nocapture --test-threads=1) </dev/null >"$log" 2>&1 || rc=$?
    if ((rc != 0)); then
        fail valgrind_release_soak "exit status $rc (9: memcheck errors)" "$log"
    else
        pass valgrind_release_soak "$(grep -oE 'soak [0-9]+ in [^:]*' "$log" | head -n 1)"
    fi
}

# The summary helpers of the demo and the benchmark scripts
# (testpmd-rate.sh): per-round ratios paired by round, their median and
# range, and the swing that flags a row as not steady.
check_summary_helpers() {
    local got want
    got="$(paired "10 20 40" "20 10 40")|$(median <<<"$(paired "10 20 40" "20 10 40")")"
    got+="|$(spread <<<"20 10 40")|$(swing <<<"11.5 30")|$(swing <<<"80 90")|$(median <<<"3 1 2 4")"
    want="2.0000 0.5000 1.0000 |1.00|10.00-40.00|2.61|1.12|2.50"
    if [[ $got == "$want" ]]; then
        pass summary_helpers
    else
        fail summary_helpers "got '$got', want '$want'"
    fi
}

wanted summary && check_summary_helpers
wanted autotest && check_autotest
wanted testpmd && check_testpmd mbcache_default
wanted testpmd && check_testpmd mbcache_0 --mbcache=0
wanted l2fwd && check_l2fwd
wanted telemetry && check_telemetry
if [[ ${TEST_DPDK_SKIP_CARGO:-0} != 1 ]] && wanted cargo; then check_cargo; fi
if [[ -n ${DPDK_ROOT_SUITE:-} ]]; then
    echo "test-dpdk: valgrind_release_soak left out in the $DPDK_ROOT_SUITE root (DPDK-release independent; runs on the host)"
elif wanted valgrind; then
    check_release_soak_valgrind
fi
if [[ ${TEST_DPDK_SKIP_CARGO:-0} == 1 && -n ${TEST_DPDK_CARGO_SKIPS:-} ]]; then
    earlier_cargo_skips "$TEST_DPDK_CARGO_SKIPS"
fi

echo "test-dpdk: $((SECONDS - start)) s, logs in $logs"
echo "dpdk: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
