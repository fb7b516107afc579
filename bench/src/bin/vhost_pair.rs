//! `vhost_pair --handlers A,B[,C,D] [options] -- EAL ARGS`: two to four
//! mbuf pools in one process, one per handler, each feeding its own port,
//! compared within the same second.
//!
//! testpmd gives every pool of a process the one handler of
//! `--mbuf-pool-ops-name`, so its rows compare handlers in runs seconds
//! apart. Over virtio-user to a vhost peer, the host moves such runs
//! between two levels three times apart (bench/NOTES.md, "The vhost rows'
//! two levels"). Here port `i` (the EAL arguments' `i`-th port, a
//! virtio-user vdev) transmits from pool `i`, made with handler `i` and
//! DPDK's cache of `--cache` on each (or that of the entry, `NAME:CACHE`:
//! `ptr_ring:0` with `PTR_RING_CACHE_SIZE=250` in the environment puts
//! the handler's own cache in the place of DPDK's on that pool alone;
//! `ptr_ring-newest` is `ptr_ring` with newest-first gets on its pool, set
//! through its `struct ptr_ring_pool_config`).
//! The lcore switches between them every `--window-ms`, in the order A B
//! B A (A B C C B A with three), so every handler runs in every second
//! under the same level.
//!
//! Each window is txonly's loop: `rte_pktmbuf_alloc_bulk` of `--burst`
//! mbufs (above the cache: the gets reach the handler), a 64-byte UDP
//! frame written into each, `rte_eth_tx_burst`, and what the port did not
//! take freed at once with `rte_pktmbuf_free_bulk`.
//!
//! Output: one line per block of `--block-ms`, `block K A RATE B RATE ...`
//! (Mpps: packets the port took over the time of that handler's windows
//! in the block), after `--warmup` blocks that print nothing. With
//! `--wait`, it prints `vhost_pair: ready` before the first timed block
//! and `vhost_pair: done` after the last, and waits for a line on stdin
//! after each: a driver reads the handlers' counters through telemetry
//! at both points (`bench/vhost.sh`, variant `pair`).

use std::ffi::{CStr, CString};
use std::io::{BufRead, Write};
use std::os::raw::{c_char, c_int};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bench::pool_config::{PtrRingPoolConfig, PTR_RING_NEWEST};
use dpdk_sys as sys;

const HELP: &str =
    "usage: vhost_pair --handlers A[:CACHE],B[:CACHE][,C,D] [--burst 512] [--window-ms 100] \
[--block-ms 1000] [--blocks 10] [--warmup 1] [--mbufs 16384] [--cache 250] [--wait] -- EAL ARGS
(the EAL arguments give one port per handler, in the same order; CACHE: that pool's
DPDK cache in place of --cache; ptr_ring-newest: ptr_ring with newest-first gets)";

/// A 64-byte frame: Ethernet (locally administered addresses), IPv4 and
/// UDP headers, zero payload.
const FRAME: [u8; 64] = {
    let mut f = [0u8; 64];
    let head: [u8; 42] = [
        0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00, // Ethernet
        0x45, 0, 0, 50, 0, 0, 0, 0, 64, 17, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2, // IPv4
        0x04, 0x00, 0x04, 0x01, 0, 30, 0, 0, // UDP
    ];
    let mut i = 0;
    while i < head.len() {
        f[i] = head[i];
        i += 1;
    }
    f
};

/// The most handlers one run compares.
const MAX_HANDLERS: usize = 4;

/// One `--handlers` entry, `NAME` or `NAME:CACHE`.
#[derive(Debug, PartialEq)]
struct Handler {
    /// The entry as given: the handler's name in the output.
    entry: String,
    /// The pool's ops name.
    ops: String,
    /// The pool's DPDK cache, when the entry gives one (else `--cache`).
    cache: Option<u32>,
    /// `ptr_ring` with newest-first gets (entry `ptr_ring-newest`).
    newest: bool,
}

impl Handler {
    /// `None` when the name is empty or the cache not a number up to 512.
    fn parse(entry: &str) -> Option<Self> {
        let (ops, cache) = match entry.split_once(':') {
            Some((ops, c)) => (ops, Some(c.parse().ok().filter(|&c| c <= 512)?)),
            None => (entry, None),
        };
        let newest = ops == PTR_RING_NEWEST;
        (!ops.is_empty()).then(|| Handler {
            entry: entry.to_string(),
            ops: if newest { "ptr_ring" } else { ops }.to_string(),
            cache,
            newest,
        })
    }
}

struct Opts {
    handlers: Vec<Handler>,
    burst: usize,
    window: Duration,
    block: Duration,
    blocks: usize,
    warmup: usize,
    mbufs: u32,
    cache: u32,
    wait: bool,
    eal: Vec<String>,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        handlers: Vec::new(),
        burst: 512,
        window: Duration::from_millis(100),
        block: Duration::from_millis(1000),
        blocks: 10,
        warmup: 1,
        mbufs: 16384,
        cache: 250,
        wait: false,
        eal: Vec::new(),
    };
    let mut it = args.iter();
    // The next argument as a number of at least `min`.
    let num = |v: Option<&String>, what: &str, min: u32| -> Result<u32, String> {
        v.and_then(|s| s.parse().ok())
            .filter(|&n| n >= min)
            .ok_or_else(|| format!("{what}: a number, at least {min}"))
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--handlers" => {
                let v = it.next().ok_or("--handlers: A,B")?;
                // The same handler twice is allowed: a control of the
                // ports against each other.
                o.handlers = v
                    .split(',')
                    .map(Handler::parse)
                    .collect::<Option<Vec<_>>>()
                    .filter(|hs| (2..=MAX_HANDLERS).contains(&hs.len()))
                    .ok_or_else(|| {
                        format!("--handlers {v}: two to {MAX_HANDLERS} handlers, A,B[,C,D]")
                    })?;
            }
            "--burst" => o.burst = num(it.next(), "--burst", 1)? as usize,
            "--window-ms" => {
                o.window = Duration::from_millis(num(it.next(), "--window-ms", 1)?.into())
            }
            "--block-ms" => {
                o.block = Duration::from_millis(num(it.next(), "--block-ms", 1)?.into())
            }
            "--blocks" => o.blocks = num(it.next(), "--blocks", 1)? as usize,
            "--warmup" => o.warmup = num(it.next(), "--warmup", 0)? as usize,
            "--mbufs" => o.mbufs = num(it.next(), "--mbufs", 1)?,
            "--cache" => o.cache = num(it.next(), "--cache", 0)?,
            "--wait" => o.wait = true,
            "--" => {
                o.eal = it.cloned().collect();
                break;
            }
            "-h" | "--help" => return Err(String::new()),
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    if o.handlers.is_empty() {
        return Err("--handlers A,B is required".into());
    }
    let cycle = 2 * o.handlers.len() as u32;
    if o.block < o.window * cycle {
        return Err(format!(
            "--block-ms must hold {cycle} windows (each handler twice)"
        ));
    }
    if o.burst > u16::MAX as usize {
        return Err("--burst: at most 65535".into());
    }
    Ok(o)
}

fn eal_init(args: &[String]) -> Result<(), String> {
    let owned: Vec<CString> = std::iter::once("vhost_pair".to_string())
        .chain(args.iter().cloned())
        .map(|a| CString::new(a).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let mut ptrs: Vec<*mut c_char> = owned.iter().map(|c| c.as_ptr().cast_mut()).collect();
    // SAFETY: argc/argv are valid for the call; the strings are leaked
    // because EAL may keep pointers into argv.
    let r = unsafe { sys::rte_eal_init(ptrs.len() as c_int, ptrs.as_mut_ptr()) };
    std::mem::forget(owned);
    if r < 0 {
        return Err(format!("rte_eal_init failed: {}", strerror(sys::errno())));
    }
    Ok(())
}

fn strerror(e: c_int) -> String {
    // SAFETY: rte_strerror returns a static string.
    unsafe { CStr::from_ptr(sys::rte_strerror(e.abs())) }
        .to_string_lossy()
        .into_owned()
}

fn check(r: c_int, what: &str) -> Result<(), String> {
    if r < 0 {
        Err(format!("{what}: {}", strerror(r)))
    } else {
        Ok(())
    }
}

/// An mbuf pool `name` of `n` mbufs with DPDK's cache `cache`, on
/// `ptr_ring` with newest-first gets: what `rte_pktmbuf_pool_create_by_ops`
/// does, with the handler's `pool_config` set. Null, with `rte_errno`
/// set, on failure.
fn newest_pool(name: &CStr, n: u32, cache: u32) -> *mut sys::rte_mempool {
    let data_room = sys::RTE_MBUF_DEFAULT_BUF_SIZE;
    let elt = std::mem::size_of::<sys::rte_mbuf>() as u32 + data_room;
    let priv_size = std::mem::size_of::<sys::rte_pktmbuf_pool_private>() as u32;
    let cfg = PtrRingPoolConfig::new(-1, true);
    let mut pool_priv = sys::rte_pktmbuf_pool_private {
        mbuf_data_room_size: data_room as u16,
        mbuf_priv_size: 0,
        flags: 0,
    };
    // SAFETY: EAL is initialised; `name` and `cfg` outlive the calls
    // (the handler reads `cfg` at populate); the callbacks are DPDK's own.
    unsafe {
        let mp = sys::rte_mempool_create_empty(
            name.as_ptr(),
            n,
            elt,
            cache,
            priv_size,
            sys::rte_socket_id() as c_int,
            0,
        );
        if mp.is_null() {
            return mp;
        }
        let ops = c"ptr_ring";
        let cfg_ptr = (&cfg as *const PtrRingPoolConfig).cast_mut().cast();
        if sys::rte_mempool_set_ops_byname(mp, ops.as_ptr(), cfg_ptr) != 0 {
            sys::rte_mempool_free(mp);
            return core::ptr::null_mut();
        }
        sys::rte_pktmbuf_pool_init(
            mp,
            (&mut pool_priv as *mut sys::rte_pktmbuf_pool_private).cast(),
        );
        if sys::rte_mempool_populate_default(mp) < 0 {
            sys::rte_mempool_free(mp);
            return core::ptr::null_mut();
        }
        sys::rte_mempool_obj_iter(mp, Some(sys::rte_pktmbuf_init), core::ptr::null_mut());
        mp
    }
}

/// Pool `i` (`vhost_pair_i`) with handler `h`, and port `i` started with
/// it.
fn setup(i: u16, h: &Handler, o: &Opts) -> Result<*mut sys::rte_mempool, String> {
    let name = CString::new(format!("vhost_pair_{i}")).expect("no NUL");
    let ops = CString::new(h.ops.as_str()).map_err(|e| e.to_string())?;
    let mp = if h.newest {
        newest_pool(&name, o.mbufs, h.cache.unwrap_or(o.cache))
    } else {
        // SAFETY: EAL is initialised; the strings outlive the call.
        unsafe {
            sys::rte_pktmbuf_pool_create_by_ops(
                name.as_ptr(),
                o.mbufs,
                h.cache.unwrap_or(o.cache),
                0,
                sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16,
                sys::rte_socket_id() as c_int,
                ops.as_ptr(),
            )
        }
    };
    if mp.is_null() {
        return Err(format!(
            "pool {} with handler {}: {}",
            name.to_string_lossy(),
            h.ops,
            strerror(sys::errno())
        ));
    }
    // SAFETY: all-zero is a valid default rte_eth_conf; port `i` exists
    // (checked by the caller); the pool is live.
    unsafe {
        let conf: sys::rte_eth_conf = core::mem::zeroed();
        let socket = sys::rte_eth_dev_socket_id(i).max(0) as u32;
        check(
            sys::rte_eth_dev_configure(i, 1, 1, &conf),
            "rte_eth_dev_configure",
        )?;
        check(
            sys::rte_eth_rx_queue_setup(i, 0, 0, socket, core::ptr::null(), mp),
            "rte_eth_rx_queue_setup",
        )?;
        check(
            sys::rte_eth_tx_queue_setup(i, 0, 0, socket, core::ptr::null()),
            "rte_eth_tx_queue_setup",
        )?;
        check(sys::rte_eth_dev_start(i), "rte_eth_dev_start")?;
    }
    Ok(mp)
}

/// txonly's loop on port `port` from `mp` for `span`, bursts of
/// `bufs.len()`: the packets the port took and the time it ran.
fn window(
    port: u16,
    mp: *mut sys::rte_mempool,
    bufs: &mut [*mut sys::rte_mbuf],
    span: Duration,
) -> (u64, Duration) {
    let burst = bufs.len();
    let mut sent_total = 0u64;
    let t0 = Instant::now();
    loop {
        // SAFETY: `mp` is a live mbuf pool; `bufs` has room for `burst`.
        if unsafe { sys::rte_pktmbuf_alloc_bulk(mp, bufs.as_mut_ptr(), burst as u32) } == 0 {
            for &m in bufs.iter() {
                // SAFETY: a fresh mbuf of the pool, reset by the alloc,
                // with 2 KiB of data room: 64 bytes fit.
                unsafe {
                    let p = sys::rte_pktmbuf_append(m, FRAME.len() as u16);
                    core::ptr::copy_nonoverlapping(FRAME.as_ptr(), p.cast::<u8>(), FRAME.len());
                }
            }
            // SAFETY: port `port` is started with one TX queue; the mbufs
            // are ours until the port takes them.
            let sent = usize::from(unsafe {
                sys::rte_eth_tx_burst(port, 0, bufs.as_mut_ptr(), burst as u16)
            });
            if sent < burst {
                // SAFETY: the mbufs past `sent` are still ours.
                unsafe {
                    sys::rte_pktmbuf_free_bulk(bufs.as_mut_ptr().add(sent), (burst - sent) as u32)
                };
            }
            sent_total += sent as u64;
        }
        let t = t0.elapsed();
        if t >= span {
            return (sent_total, t);
        }
    }
}

/// The pool of the `w`-th window of a block among `n`: forwards then
/// backwards (A B B A, A B C C B A), so that no handler's windows come
/// only right after another's, or only right after its own.
fn turn(w: usize, n: usize) -> usize {
    let k = w % (2 * n);
    if k < n {
        k
    } else {
        2 * n - 1 - k
    }
}

/// One block: the windows in [`turn`]'s order, each handler's rate over
/// its own windows, Mpps.
fn block(pools: &[*mut sys::rte_mempool], bufs: &mut [*mut sys::rte_mbuf], o: &Opts) -> Vec<f64> {
    let n = pools.len();
    let mut pkts = vec![0u64; n];
    let mut time = vec![Duration::ZERO; n];
    let windows = (o.block.as_nanos() / o.window.as_nanos()) as usize;
    for w in 0..windows {
        let i = turn(w, n);
        let (p, t) = window(i as u16, pools[i], bufs, o.window);
        pkts[i] += p;
        time[i] += t;
    }
    (0..n)
        .map(|i| pkts[i] as f64 / time[i].as_secs_f64() / 1e6)
        .collect()
}

fn pause(what: &str) {
    println!("vhost_pair: {what}");
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
}

fn run(o: &Opts) -> Result<(), String> {
    eal_init(&o.eal)?;
    // SAFETY: plain query after EAL init.
    let ports = usize::from(unsafe { sys::rte_eth_dev_count_avail() });
    let n = o.handlers.len();
    if ports != n {
        return Err(format!(
            "{n} ports needed (one per handler), the EAL arguments give {ports}"
        ));
    }
    let pools = o
        .handlers
        .iter()
        .enumerate()
        .map(|(i, h)| setup(i as u16, h, o))
        .collect::<Result<Vec<_>, _>>()?;
    let names: Vec<String> = (0..n)
        .map(|i| format!("port {i} {}", o.handlers[i].entry))
        .collect();
    let order: Vec<String> = (0..2 * n)
        .map(|w| char::from(b'A' + turn(w, n) as u8).to_string())
        .collect();
    println!(
        "vhost_pair: {}, {} mbufs each, DPDK cache {} (where no :CACHE), burst {}, windows of {} ms, {}",
        names.join(" / "),
        o.mbufs,
        o.cache,
        o.burst,
        o.window.as_millis(),
        order.join(" ")
    );
    let mut bufs = vec![core::ptr::null_mut::<sys::rte_mbuf>(); o.burst];
    for _ in 0..o.warmup {
        block(&pools, &mut bufs, o);
    }
    if o.wait {
        pause("ready");
    }
    for k in 1..=o.blocks {
        let rates: Vec<String> = o
            .handlers
            .iter()
            .zip(block(&pools, &mut bufs, o))
            .map(|(h, r)| format!("{} {r:.3}", h.entry))
            .collect();
        println!("block {k} {}", rates.join(" "));
        let _ = std::io::stdout().flush();
    }
    if o.wait {
        pause("done");
    }
    // Every mbuf back before the pools go: the ports' rings give theirs
    // back when closed, this lcore's DPDK caches when flushed.
    let mut lost = Vec::new();
    // SAFETY: the ports and pools made above, no mbuf held here; the
    // default cache is this lcore's own.
    unsafe {
        for i in 0..n as u16 {
            sys::rte_eth_dev_stop(i);
            sys::rte_eth_dev_close(i);
        }
        for (mp, h) in pools.iter().zip(&o.handlers) {
            let cache = sys::rte_mempool_default_cache(*mp, sys::lcore_id());
            if !cache.is_null() {
                sys::rte_mempool_cache_flush(cache, *mp);
            }
            let out = sys::rte_mempool_in_use_count(*mp);
            if out != 0 {
                lost.push(format!("{out} mbufs of the {} pool", h.entry));
            }
            sys::rte_mempool_free(*mp);
        }
        sys::rte_eal_cleanup();
    }
    if !lost.is_empty() {
        return Err(format!("not returned at the end: {}", lost.join(", ")));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match parse(&args) {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("vhost_pair: {e}");
            }
            eprintln!("{HELP}");
            return ExitCode::from(2);
        }
    };
    match run(&o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("vhost_pair: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn windows_go_forwards_then_backwards() {
        let order = |n| (0..4 * n).map(|w| turn(w, n)).collect::<Vec<_>>();
        assert_eq!(order(2), [0, 1, 1, 0, 0, 1, 1, 0]);
        assert_eq!(order(3), [0, 1, 2, 2, 1, 0, 0, 1, 2, 2, 1, 0]);
    }

    #[test]
    fn handlers_two_to_four_and_a_block_that_holds_each_twice() {
        let o = parse(&args(&[
            "--handlers",
            "ptr_ring,ring_mp_mc,stack",
            "--",
            "-l",
            "1",
        ]))
        .unwrap();
        let entries: Vec<&str> = o.handlers.iter().map(|h| h.entry.as_str()).collect();
        assert_eq!(entries, ["ptr_ring", "ring_mp_mc", "stack"]);
        assert_eq!(o.eal, ["-l", "1"]);
        let o = parse(&args(&[
            "--handlers",
            "ptr_ring:0,ring_mp_mc",
            "--cache",
            "250",
        ]))
        .unwrap();
        // The pool's ops name and DPDK cache: the entry's, else --cache.
        let pools: Vec<(&str, u32)> = o
            .handlers
            .iter()
            .map(|h| (h.ops.as_str(), h.cache.unwrap_or(o.cache)))
            .collect();
        assert_eq!(pools, [("ptr_ring", 0), ("ring_mp_mc", 250)]);
        assert_eq!(o.handlers[0].entry, "ptr_ring:0");
        for bad in ["ptr_ring", "a,b,c,d,e", "a,,b", "a:x,b", "a:513,b", ":0,b"] {
            assert!(parse(&args(&["--handlers", bad])).is_err(), "{bad}");
        }
        // Three handlers need 6 windows of 100 ms in a block.
        let e = parse(&args(&["--handlers", "a,b,c", "--block-ms", "500"])).err();
        assert!(e.is_some_and(|e| e.contains("6 windows")));
        assert!(parse(&args(&["--handlers", "a,b", "--block-ms", "500"])).is_ok());
    }
}
