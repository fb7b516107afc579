# shellcheck shell=bash
# Sourced (not run) by the scripts that must know which mempool handler
# served a pool. The answer comes from DPDK's record of the pool, never from
# the wording of the handler's log lines:
#
#   pool_ops_query PREFIX POOL OUT [PID]
#       A running DPDK process with telemetry (started with --file-prefix
#       PREFIX, without --no-telemetry): waits (up to POOL_OPS_WAIT seconds,
#       default 30, or until PID exits) until POOL exists and is populated,
#       writes the telemetry replies to OUT and prints the pool's ops name as
#       pool_ops_from_tel does.
#   pool_ops_from_tel OUT POOL
#       From replies written by pool_ops_query: "ptr_ring", "ops_index N"
#       (another handler, at index N of the process's ops table), or nothing
#       (no such pool, or no reply).
#   pool_ops_from_dump LOG POOL
#       From DPDK's own dump of a pool (rte_mempool_dump, rte_mempool_list_dump;
#       testpmd's `dump_mempool`, dpdk-test's mempool_autotest) in LOG:
#       "mempool <POOL>@..." followed by "  ops_name: <NAME>". Prints the
#       distinct names found for POOL, one a line.
#   testpmd_pool_ops LOGDIR LABEL [EAL ARG...]
#       dpdk-testpmd on two net_null ports with --mbuf-pool-ops-name ptr_ring,
#       $EAL_MEM and the EAL ARGs (-d ...): prints mb_pool_0's ops name as
#       pool_ops_query does, read while it runs; testpmd's output goes to
#       LOGDIR/LABEL.log, the telemetry replies to LOGDIR/LABEL.tel.
#   testpmd_dump_mempool POOL
#       The testpmd command that prints DPDK's dump of POOL: `dump_mempool
#       POOL` up to 24.11, `dump mempool POOL` in 25.11 (whichever the
#       installed dpdk-testpmd knows).
#   tel_query PREFIX COMMAND...
#       Sends each command to the telemetry socket of PREFIX, prints one JSON
#       reply a line.
#   dpdk_runtime_dir PREFIX
#       The process's runtime directory, where its telemetry socket lies
#       (what EAL and dpdk-telemetry.py compute).
#
# How an ops index becomes a name: DPDK 22.11's /mempool/info,POOL reports
# the pool's ops_index (its slot in the process's rte_mempool_ops_table) but
# not the name, and 22.11 has no telemetry command that lists the ops table.
# The handler's /ptr_ring/pools lists exactly the pools for which
# rte_mempool_ops_table.ops[mp->ops_index].name is "ptr_ring" in that process
# (the lookup rte_mempool_dump makes for its ops_name line): a pool listed
# there is named ptr_ring; one that is not listed (or a process without the
# handler) is another handler, named by its index only. The pool must also be
# populated in /mempool/info (populated_size == size): DPDK lists a pool from
# rte_mempool_create_empty on, before rte_mempool_set_ops_byname has set its
# ops, and populates it only afterwards.

testpmd_pool_ops() {
    local dir=$1 label=$2
    shift 2
    local fp=ptrring_ops_$$_$label log=$dir/$label.log eal_mem
    read -r -a eal_mem <<<"$EAL_MEM"
    rm -rf "$(dpdk_runtime_dir "$fp")"
    {
        # testpmd -i reads commands from this pipe; query while it runs.
        pool_ops_query "$fp" mb_pool_0 "$dir/$label.tel" >"$dir/$label.ops"
        echo quit
    } | timeout 60 dpdk-testpmd -l 0-1 "${eal_mem[@]}" --file-prefix "$fp" --no-pci \
        --vdev net_null0 --vdev net_null1 --mbuf-pool-ops-name ptr_ring "$@" -- -i >"$log" 2>&1
    rm -rf "$(dpdk_runtime_dir "$fp")"
    cat "$dir/$label.ops"
}

testpmd_dump_mempool() {
    # (grep reads to the end: grep -q would stop strings early, and SIGPIPE
    # fails the pipe in scripts with pipefail.)
    if [[ -n $(strings -a "$(command -v dpdk-testpmd)" | grep '^dump mempool') ]]; then
        echo "dump mempool $1"
    else
        echo "dump_mempool $1"
    fi
}

dpdk_runtime_dir() {
    local run=${RUNTIME_DIRECTORY:-}
    if [[ -z $run ]]; then
        if (($(id -u) == 0)); then run=/var/run; else run=${XDG_RUNTIME_DIR:-/tmp}; fi
    fi
    echo "$run/dpdk/$1"
}

# The telemetry v2 protocol: SOCK_SEQPACKET, a JSON greeting, then one JSON
# reply per command. argv: socket, wait seconds, pid to watch (or ""), pool
# to wait for (or ""), commands. Waits for the socket (and for the pool to be
# populated), then prints the replies to the commands, one a line.
_pool_ops_tel_py='
import json, os, socket, sys, time
path, wait, pid, pool, cmds = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
deadline = time.monotonic() + wait

def alive():
    if not pid:
        return True
    try:
        os.kill(int(pid), 0)
        return True
    except OSError:
        return False

def ask(s, size, cmd):
    s.send(cmd.encode())
    return s.recv(size).decode()

while True:
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.connect(path)
        size = json.loads(s.recv(1024).decode())["max_output_len"]
        if pool:
            info = {}
            while alive() and time.monotonic() < deadline:
                info = json.loads(ask(s, size, "/mempool/info," + pool)).get("/mempool/info") or {}
                if info.get("size", 0) > 0 and info.get("populated_size") == info.get("size"):
                    break
                time.sleep(0.1)
            print(json.dumps({"/mempool/info": info}))
        for c in cmds:
            print(ask(s, size, c))
        break
    except (OSError, ValueError) as e:
        if not alive() or time.monotonic() >= deadline:
            print("telemetry: " + path + ": " + repr(e), file=sys.stderr)
            sys.exit(1)
        time.sleep(0.1)
'

tel_query() {
    local prefix=$1
    shift
    timeout 15 python3 -c "$_pool_ops_tel_py" "$(dpdk_runtime_dir "$prefix")/dpdk_telemetry.v2" 10 "" "" "$@"
}

pool_ops_query() {
    local prefix=$1 pool=$2 out=$3 pid=${4:-} wait=${POOL_OPS_WAIT:-30}
    timeout $((wait + 5)) python3 -c "$_pool_ops_tel_py" "$(dpdk_runtime_dir "$prefix")/dpdk_telemetry.v2" \
        "$wait" "$pid" "$pool" /ptr_ring/pools >"$out" 2>&1
    pool_ops_from_tel "$out" "$pool"
}

pool_ops_from_tel() {
    python3 - "$1" "$2" <<'PY' 2>/dev/null
import json, sys
d = {}
for line in open(sys.argv[1]):
    line = line.strip()
    if line.startswith("{"):
        d.update(json.loads(line))
info, ours = d.get("/mempool/info") or {}, d.get("/ptr_ring/pools") or []
if info.get("name") == sys.argv[2] and info.get("size", 0) > 0 and info.get("populated_size") == info.get("size"):
    print("ptr_ring" if sys.argv[2] in ours else "ops_index %d" % info["ops_index"])
PY
}

pool_ops_from_dump() {
    # (A log line can land inside a line of the dump, which is buffered
    # while log lines are flushed as they come: only whole
    # "  ops_name: <...>" lines count.)
    awk -v pool="$2" '
        match($0, /mempool <[^>]*>@/) { cur = substr($0, RSTART + 9, RLENGTH - 11); next }
        cur == pool && match($0, /^  ops_name: <[^>]*>$/) { n[substr($0, RSTART + 13, RLENGTH - 14)]++ }
        /ops_name: </ { cur = "" }
        END { for (k in n) print k }' "$1"
}
