#!/usr/bin/env bash
# The end-to-end rows over vhost-user, where the PMD's rings hold more mbufs
# than DPDK's mempool cache: two dpdk-testpmd processes,
#
#   A (handler under test): net_virtio_user0, 1024 descriptors per ring,
#     --forward-mode=txonly: allocates every packet from its pool
#     (mb_pool_0, served by HANDLER, DPDK cache 250); the virtio TX ring
#     keeps each mbuf until the peer consumed it and A reclaims it;
#   B (peer, always ring_mp_mc, DPDK cache 250): net_vhost0, the vhost-user
#     backend, --forward-mode=rxonly: copies every packet out of A's ring
#     into its own mbufs and frees them;
#
# on two CPUs: A forwards on CPU 1 (-l 0,1, main lcore 0), B forwards on CPU
# 0 (--lcores 0@0,1@0: its main lcore shares CPU 0 with it and with A's main
# lcore; main lcores only print statistics). Variants:
#   default   testpmd's defaults (bursts of 32): A's rings hold over 1000
#             mbufs, but A gets and puts one burst at a time on one lcore,
#             so DPDK's cache absorbs it: a control when ptr_ring's handler
#             share says so (and A allocates faster than B copies: A drops
#             most packets, the rate is B's);
#   burst512  --burst=512: A gets 512 mbufs per burst (above the cache), so
#             the gets go to the handler, and the mbufs the ring did not
#             take are put back at once.
#   pair      not testpmd: A is `vhost_pair` (bench/src/bin/vhost_pair.rs),
#             txonly's loop with bursts of 512 over one virtio-user port per
#             handler of BENCH_VHOST_PAIR_HANDLERS (default "ptr_ring
#             ring_mp_mc stack ptr_ring-newest": the last is ptr_ring with
#             newest-first gets on its pool), port i from a pool of its own
#             with handler i, the lcore switching between them every 100 ms
#             (A B C D D C B A);
#             B is testpmd rxonly on as many vhost ports. Every handler runs
#             in every second, so a level of the host (NOTES: "The vhost
#             rows' two levels") moves all alike. Rate: each handler's
#             packets sent per second of its own windows, one figure per
#             handler per block of 1 s; BENCH_VHOST_PAIR_RUNS runs (default
#             twice the handlers, the list rotated every run so that each
#             port serves each handler as often) of BENCH_VHOST_PAIR_BLOCKS
#             blocks (default 6) after one of warm-up. Its handler share is
#             per packet sent.
#   pair65536 the same with pools of 65536 mbufs: a FIFO handler cycles
#             through four times as many mbufs as with 16384, a LIFO one
#             (stack) keeps reusing the same few thousand.
# Rate: B's Rx-pps (testpmd's 1-s statistics, median after the first). Per
# run it reads through telemetry which handler served each pool
# (scripts/pool-ops.sh) and, for ptr_ring, its counters at the start and the
# end of the sampled seconds: handler share = objects ptr_ring handed out /
# packets A sent (above 1 where A drops what its TX ring did not take);
# inflight = objects out of the handler (in the rings, in DPDK's caches, in
# flight).
#
#   bash bench/vhost.sh [--out DIR]     (default build/bench-vhost; bench/run.sh
#                                        passes build/bench)
#
# Appends e2e2 lines (app testpmd-vhost, and vhost-pair with one round per
# block, with the handler share) to
# DIR/e2e.csv and vhost_* lines to DIR/meta.env; logs in DIR/logs/.
# Environment: BENCH_VHOST_ROUNDS (runs per handler, default 3; handlers
# rotated every round), BENCH_VHOST_VARIANTS (default "default burst512 pair
# pair65536"),
# BENCH_VHOST_HANDLERS (default "ptr_ring ring_mp_mc stack"; also
# ptr_ring-newest: ptr_ring with PTR_RING_ORDER=newest-first in A's
# environment, checked through telemetry), BENCH_VHOST_MBUFS (A's pool in
# the testpmd variants and in pair, default 16384),
# TESTPMD_SECONDS (1-s samples per run, default 3).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
out=$repo/build/bench-vhost
if [[ ${1:-} == --out ]]; then
    out=$2
    shift 2
fi
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 0
fi
(($# == 0)) || { echo "vhost: unknown argument $1 (try --help)" >&2; exit 2; }

# shellcheck source=scripts/testpmd-rate.sh
source scripts/testpmd-rate.sh # median, testpmd_samples, EAL_MEM, pool-ops.sh

rounds=${BENCH_VHOST_ROUNDS:-3}
secs=${TESTPMD_SECONDS:-3}
read -r -a handlers <<<"${BENCH_VHOST_HANDLERS:-ptr_ring ring_mp_mc stack}"
lib=$repo/target/release/librte_mempool_ptr_ring.so
logs=$out/logs
mkdir -p "$logs"
app=testpmd-vhost
qsize=1024
mbufs=${BENCH_VHOST_MBUFS:-16384}
t0=$SECONDS
say() { printf 'bench: vhost [%3d s] %s\n' $((SECONDS - t0)) "$*"; }

a_eal="-l 0,1 --main-lcore 0 $EAL_MEM --single-file-segments --no-pci"
b_eal="--lcores 0@0,1@0 --main-lcore 0 $EAL_MEM --no-pci"
common="--nb-cores=1 --total-num-mbufs=$mbufs --stats-period 1"
read -r -a pair_handlers <<<"${BENCH_VHOST_PAIR_HANDLERS:-ptr_ring ring_mp_mc stack ptr_ring-newest}"
[[ " ${pair_handlers[*]} " == *" ptr_ring "* && " ${pair_handlers[*]} " == *" ring_mp_mc "* && ${#pair_handlers[@]} -le 4 ]] ||
    { echo "vhost: BENCH_VHOST_PAIR_HANDLERS: ptr_ring, ring_mp_mc and up to two more" >&2; exit 2; }
pair_runs=${BENCH_VHOST_PAIR_RUNS:-$((2 * ${#pair_handlers[@]}))}
pair_blocks=${BENCH_VHOST_PAIR_BLOCKS:-6}
pair_bin=$repo/target/release/vhost_pair
# vdev_args ARRAY KIND SOCKET...: sets ARRAY to the --vdev arguments of one
# port per SOCKET (KIND virtio: A's virtio-user ports; vhost: B's vhost-user
# backends).
vdev_args() {
    local -n _args=$1
    local kind=$2 i=0 s
    shift 2
    _args=()
    for s; do
        if [[ $kind == virtio ]]; then
            _args+=(--vdev "net_virtio_user$i,path=$s,queue_size=$qsize,queues=1")
        else
            _args+=(--vdev "net_vhost$i,iface=$s,queues=1")
        fi
        i=$((i + 1))
    done
}
meta_socks=() meta_a=() meta_b=()
for ((i = 0; i < ${#pair_handlers[@]}; i++)); do meta_socks+=("SOCKET$i"); done
vdev_args meta_a virtio "${meta_socks[@]}"
vdev_args meta_b vhost "${meta_socks[@]}"
{
    echo "vhost_peer_cmd=dpdk-testpmd $b_eal --file-prefix PREFIX_B --vdev net_vhost0,iface=SOCKET,queues=1 -- -a --forward-mode=rxonly $common"
    echo "vhost_cmd=[PTR_RING_CACHE_SIZE=0] dpdk-testpmd $a_eal --file-prefix PREFIX_A -d target/release/librte_mempool_ptr_ring.so --mbuf-pool-ops-name HANDLER --vdev net_virtio_user0,path=SOCKET,queue_size=$qsize,queues=1 -- -a --forward-mode=txonly $common [--burst=512]"
    echo "vhost_ring=$qsize"
    echo "vhost_mbufs=$mbufs"
    echo "vhost_rounds=$rounds"
    echo "vhost_pair_cmd=PTR_RING_CACHE_SIZE=0 target/release/vhost_pair --handlers $(IFS=,; echo "${pair_handlers[*]}") --blocks $pair_blocks --mbufs $mbufs --wait -- -l 1 $EAL_MEM --single-file-segments --no-pci --file-prefix PREFIX_A -d target/release/librte_mempool_ptr_ring.so ${meta_a[*]} (run r: the list rotated by r - 1; the pair65536 row: --mbufs 65536)"
    echo "vhost_pair_peer_cmd=dpdk-testpmd $b_eal --file-prefix PREFIX_B ${meta_b[*]} -- -a --forward-mode=rxonly $common"
    echo "vhost_pair_handlers=${pair_handlers[*]}"
    echo "vhost_pair_runs=$pair_runs"
    echo "vhost_pair_blocks=$pair_blocks"
} >>"$out/meta.env"

# blocks LOG: testpmd statistics blocks printed so far.
blocks() { grep -c '^Port statistics =' "$1" 2>/dev/null || true; }
# stop PID: SIGINT, then SIGKILL after 10 s.
stop() {
    local waited=0
    kill -INT "$1" 2>/dev/null || true
    while kill -0 "$1" 2>/dev/null && ((waited < 100)); do sleep 0.1; waited=$((waited + 1)); done
    kill -KILL "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}
# peer_start PREFIX LOG SOCKET...: B, testpmd rxonly on one vhost port per
# SOCKET, with a pipe held open as its stdin (testpmd -a quits when stdin
# reaches EOF; A may read it too: peer_keep); waits for the sockets.
# Sets peer_pid, peer_keep and peer_keeper, for peer_stop.
peer_start() {
    local pb=$1 lb=$2 vdevs s
    shift 2
    vdev_args vdevs vhost "$@"
    exec {peer_keep}< <(exec sleep 3600)
    peer_keeper=$!
    # shellcheck disable=SC2086 # lists of arguments
    dpdk-testpmd $b_eal --file-prefix "$pb" "${vdevs[@]}" -- -a --forward-mode=rxonly $common \
        <&"$peer_keep" >"$lb" 2>&1 &
    peer_pid=$!
    local missing
    for _ in $(seq 100); do
        missing=0
        for s; do [[ -S $s ]] || missing=1; done
        ((missing)) || break
        sleep 0.1
    done
}
peer_stop() {
    stop "$peer_pid"
    exec {peer_keep}<&-
    kill "$peer_keeper" 2>/dev/null || true
    wait "$peer_keeper" 2>/dev/null || true
}
# vhost_run HANDLER VARIANT ROUND: one run; prints "rate share inflight"
# (share and inflight "-" for other handlers) or fails.
vhost_run() {
    local h=$1 v=$2 r=$3 extra=() tag=$app-$2-$1-$3 pa pb sock vdevs pid_a n0 n1 ok=0
    # The ops A asks for, and the handler's order of gets (ptr_ring-newest:
    # ptr_ring with newest-first gets, set through the environment).
    local ops=$h order=
    [[ $h == ptr_ring-newest ]] && ops=ptr_ring order=newest-first
    case $v in
    default) ;;
    txfreet=512) extra=(--txfreet=512) ;;
    burst512) extra=(--burst=512) ;;
    burst512,txfreet=512) extra=(--burst=512 --txfreet=512) ;;
    *) echo "vhost: unknown variant $v" >&2; return 2 ;;
    esac
    pa=ptrring_vha_$$ pb=ptrring_vhb_$$ sock=$(dpdk_runtime_dir ptrring_vh_$$).sock
    local la=$logs/$tag-a.log lb=$logs/$tag-b.log
    rm -rf "$(dpdk_runtime_dir "$pa")" "$(dpdk_runtime_dir "$pb")" "$sock"
    mkdir -p "$(dirname "$sock")"
    peer_start "$pb" "$lb" "$sock"
    vdev_args vdevs virtio "$sock"
    # shellcheck disable=SC2086 # lists of arguments
    PTR_RING_CACHE_SIZE=0 PTR_RING_ORDER=$order dpdk-testpmd $a_eal --file-prefix "$pa" -d "$lib" --mbuf-pool-ops-name "$ops" \
        --log-level=pmd.mempool.ptr_ring:info "${vdevs[@]}" -- \
        -a --forward-mode=txonly $common "${extra[@]}" <&"$peer_keep" >"$la" 2>&1 &
    pid_a=$!
    local ops_a ops_b q_b
    pool_ops_query "$pb" mb_pool_0 "$lb.tel" "$peer_pid" >"$lb.ops" &
    q_b=$!
    ops_a=$(pool_ops_query "$pa" mb_pool_0 "$la.tel" "$pid_a")
    wait "$q_b" || true
    ops_b=$(cat "$lb.ops")
    # One statistics block of warm-up after A started, then the sampled ones.
    n0=$(($(blocks "$lb") + 1))
    local deadline=$((SECONDS + secs + 30))
    while kill -0 "$pid_a" 2>/dev/null && (($(blocks "$lb") < n0)) && ((SECONDS < deadline)); do sleep 0.1; done
    kill -0 "$pid_a" 2>/dev/null && tel_query "$pa" /ethdev/stats,0 /ptr_ring/stats,mb_pool_0 >"$la.c0" 2>&1
    n0=$(blocks "$lb")
    while kill -0 "$pid_a" 2>/dev/null && (($(blocks "$lb") < n0 + secs)) && ((SECONDS < deadline)); do sleep 0.1; done
    kill -0 "$pid_a" 2>/dev/null && tel_query "$pa" /ethdev/stats,0 /ptr_ring/stats,mb_pool_0 >"$la.c1" 2>&1 && ok=1
    n1=$(blocks "$lb")
    stop "$pid_a"
    peer_stop
    rm -rf "$(dpdk_runtime_dir "$pa")" "$(dpdk_runtime_dir "$pb")" "$sock"
    if ((ok == 0 || n1 < n0 + secs)); then
        echo "vhost: $tag: A stopped early or too few statistics blocks; see $la and $lb" >&2
        return 1
    fi
    # The handler each side asked for served its pool.
    if [[ $ops == ptr_ring ]]; then [[ $ops_a == ptr_ring ]]; else [[ $ops_a == "ops_index "* ]]; fi ||
        { echo "vhost: $tag: A's mb_pool_0 ops '${ops_a:-no answer}', not as asked; see $la.tel" >&2; return 2; }
    [[ $ops_b == "ops_index "* ]] ||
        { echo "vhost: $tag: B's mb_pool_0 ops '${ops_b:-no answer}'; see $lb.tel" >&2; return 2; }
    # Two handlers other than ptr_ring must sit at different ops indexes
    # (telemetry names them by index only).
    local seen
    for seen in "${!ops_of[@]}"; do
        [[ $seen == "$h" || ${ops_of[$seen]} != "$ops_a" || $ops == ptr_ring ]] ||
            { echo "vhost: $tag: A's pool has $ops_a, as $seen's had: not the handler asked for" >&2; return 2; }
    done
    echo "$ops_a" >"$la.ops"
    # B's Rx-pps of the sampled blocks (block k's figure is printed in block k).
    local rate
    rate=$(TESTPMD_RX_PORTS="" testpmd_samples <"$lb" | sed -n "$((n0 + 1)),${n1}p" | median)
    [[ -n $rate ]] || { echo "vhost: $tag: no Rx-pps in $lb" >&2; return 1; }
    local share inflight
    # Objects the handler handed out per packet A sent.
    read -r share inflight < <(handler_share "$la.c0" "$la.c1" opackets) ||
        { echo "vhost: $tag: no packet count through telemetry; see $la.c0, $la.c1" >&2; return 1; }
    if [[ $ops == ptr_ring ]]; then
        [[ $share != - ]] ||
            { echo "vhost: $tag: no ptr_ring counters through telemetry; see $la.c0, $la.c1" >&2; return 2; }
        local want=oldest_first
        [[ -n $order ]] && want=newest_first
        grep -q "\"order\":\"$want\"" "$la.c1" ||
            { echo "vhost: $tag: the pool's order is not $want; see $la.c1" >&2; return 2; }
        echo "$rate $share $inflight"
    else
        echo "$rate - -"
    fi
}

# pair_run RUN MBUFS: one run of vhost_pair against a testpmd rxonly peer,
# one port per handler, the list rotated by RUN - 1, pools of MBUFS; prints
# "K H RATE H RATE ..." per block, then "share S P" (of ptr_ring's pool,
# per packet its port P sent over the timed blocks), or fails.
pair_run() {
    local r=$1 pool=$2 n=${#pair_handlers[@]} order=() socks=() vdevs pa pb pid_a fifo w ok=0 p i
    for ((i = 0; i < n; i++)); do
        order+=("${pair_handlers[(i + r - 1) % n]}")
        [[ ${order[i]} == ptr_ring ]] && p=$i
        socks+=("$(dpdk_runtime_dir ptrring_vp_$$).s$i")
    done
    vdev_args vdevs virtio "${socks[@]}"
    pa=ptrring_vpa_$$ pb=ptrring_vpb_$$
    local la=$logs/vhost-pair-$pool-$r-a.log lb=$logs/vhost-pair-$pool-$r-b.log
    rm -rf "$(dpdk_runtime_dir "$pa")" "$(dpdk_runtime_dir "$pb")" "${socks[@]}"
    mkdir -p "$(dirname "${socks[0]}")"
    # A's stdin is a FIFO: a line there lets it go on.
    fifo=$(mktemp -u "$logs/vhost-pair-fifo.XXXX")
    mkfifo "$fifo"
    exec {w}<>"$fifo"
    peer_start "$pb" "$lb" "${socks[@]}"
    # shellcheck disable=SC2086 # lists of arguments
    PTR_RING_CACHE_SIZE=0 "$pair_bin" --handlers "$(IFS=,; echo "${order[*]}")" --blocks "$pair_blocks" \
        --mbufs "$pool" --wait -- -l 1 $EAL_MEM --single-file-segments --no-pci --file-prefix "$pa" -d "$lib" \
        --log-level=pmd.mempool.ptr_ring:info "${vdevs[@]}" <"$fifo" >"$la" 2>&1 &
    pid_a=$!
    local deadline=$((SECONDS + pair_blocks + 60))
    # _pair_await WORD: A printed "vhost_pair: WORD" (false when A ended or
    # the deadline passed).
    _pair_await() {
        while ! grep -qsx "vhost_pair: $1" "$la"; do
            if ! kill -0 "$pid_a" 2>/dev/null || ((SECONDS >= deadline)); then return 1; fi
            sleep 0.1
        done
    }
    if _pair_await ready; then
        tel_query "$pa" "/ethdev/stats,$p" "/ptr_ring/stats,vhost_pair_$p" >"$la.c0" 2>&1
        echo >&"$w"
        if _pair_await "done"; then
            tel_query "$pa" "/ethdev/stats,$p" "/ptr_ring/stats,vhost_pair_$p" >"$la.c1" 2>&1
            echo >&"$w"
            wait "$pid_a" && ok=1
        fi
    fi
    ((ok)) || stop "$pid_a"
    peer_stop
    exec {w}<&-
    rm -f "$fifo"
    rm -rf "$(dpdk_runtime_dir "$pa")" "$(dpdk_runtime_dir "$pb")" "${socks[@]}"
    if ((ok == 0)); then
        echo "vhost: pair run $r: vhost_pair did not finish; see $la and $lb" >&2
        return 1
    fi
    local share
    if ! read -r share _ < <(handler_share "$la.c0" "$la.c1" opackets) || [[ $share == - ]]; then
        echo "vhost: pair run $r: no ptr_ring counters through telemetry; see $la.c0, $la.c1" >&2
        return 2
    fi
    awk '$1 == "block" { $1 = ""; print substr($0, 2) }' "$la"
    echo "share $share $p"
}

# pair_variant MBUFS VARIANT: the pair runs with pools of MBUFS, recorded as
# VARIANT one round per block (the blocks of run r after those of the runs
# before), each handler under its own name.
pair_variant() {
    local pool=$1 pv=$2 r k f i h x hc sh share port res rc round=0 ratios="" ours base
    [[ -x $pair_bin ]] || { echo "vhost: no $pair_bin (cargo build --release -p bench)" >&2; exit 1; }
    for ((r = 1; r <= pair_runs; r++)); do
        rc=0
        res=$(pair_run "$r" "$pool") || rc=$?
        if ((rc != 0)); then
            ((rc == 2)) && exit 1
            say "pair run $r failed"
            continue
        fi
        read -r share port < <(awk '$1 == "share" { print $2, $3 }' <<<"$res")
        while read -r k f; do
            [[ $k == share ]] && continue
            round=$((round + 1))
            read -r -a f <<<"$f"
            for ((i = 0; i + 1 < ${#f[@]}; i += 2)); do
                h=${f[i]} x=${f[i + 1]}
                # ptr_ring with its cache off and its share (newest first:
                # its cache off, no share read), the others with no cache
                # of their own and no share.
                case $h in
                ptr_ring) hc=0 sh=$share ours=$x ;;
                ptr_ring-newest) hc=0 sh=-1 ;;
                *) hc=none sh=-1 ;;
                esac
                [[ $h == ring_mp_mc ]] && base=$x
                echo "e2e2,vhost-pair,$pv,$h,250,$hc,$round,$x,$sh" >>"$out/e2e.csv"
            done
            ratios+=$(awk -v a="$ours" -v b="$base" 'BEGIN { if (b > 0) printf "%.4f ", a / b }')
        done <<<"$res"
        say "pair ($pool mbufs) run $r/$pair_runs (ptr_ring on port $port): handler share $share"
    done
    [[ -n $ratios ]] && say "vhost-pair $pv: ptr_ring / ring_mp_mc per block of 1 s: $ratios(median $(median <<<"$ratios")x)"
}

declare -A rate_of ops_of
recorded=0
for v in ${BENCH_VHOST_VARIANTS:-default burst512 pair pair65536}; do
    case $v in
    pair) pair_variant "$mbufs" burst512; continue ;;
    pair65536) pair_variant 65536 burst512-mbufs65536; continue ;;
    esac
    for ((r = 1; r <= rounds; r++)); do
        # The order rotated every round (A B C, B C A, C A B, ...).
        hs=()
        for ((i = 0; i < ${#handlers[@]}; i++)); do hs+=("${handlers[(i + r - 1) % ${#handlers[@]}]}"); done
        for h in "${hs[@]}"; do
            res=""
            for try in 1 2; do
                rc=0
                res=$(vhost_run "$h" "$v" "$r") || rc=$?
                ((rc == 0)) && break
                ((rc == 2)) && exit 1
                res=""
                say "$v $h round $r failed (try $try)"
            done
            if [[ -z $res ]]; then
                # Failing from the first run on: vhost-user does not work here.
                if ((recorded == 0)); then
                    echo "vhost_skip=left out: the first run failed twice (see ${logs#"$repo"/}/$app-$v-$h-$r-a.log and -b.log)" >>"$out/meta.env"
                    say "left out: the first run failed twice"
                    exit 0
                fi
                continue
            fi
            ops_of[$h]=$(cat "$logs/$app-$v-$h-$r-a.log.ops")
            read -r rate share inflight <<<"$res"
            hc=0
            [[ $h == ptr_ring || $h == ptr_ring-newest ]] || hc=none
            [[ $share == - ]] && share=-1
            # e2e2,<app>,<variant>,<handler>,<dpdk_cache>,<handler_cache>,<round>,<Mpps>,<handler_share>
            echo "e2e2,$app,$v,$h,250,$hc,$r,$rate,$share" >>"$out/e2e.csv"
            [[ $h == ptr_ring && $inflight != - ]] && echo "vhost_inflight_$v=$inflight" >>"$out/meta.env"
            rate_of[$v,$h,$r]=$rate
            recorded=$((recorded + 1))
            say "$v round $r/$rounds $h: $rate Mpps$([[ $share != -1 ]] && echo ", handler share $share, $inflight mbufs out of the handler")"
        done
    done
    line=""
    for h in "${handlers[@]}"; do
        rates="" ratios=""
        for ((r = 1; r <= rounds; r++)); do
            a=${rate_of[$v,$h,$r]:-} b=${rate_of[$v,ring_mp_mc,$r]:-}
            rates+="$a "
            [[ $h != ring_mp_mc && -n $a && -n $b ]] && ratios+=$(awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.4f ", a / b }')
        done
        line+=" | $h $(median <<<"$rates") Mpps"
        [[ -n $ratios ]] && line+=" $(median <<<"$ratios")x"
    done
    say "$app $v:$line (x: median of the paired ratios to ring_mp_mc)"
done
