//! Safe port shutdown with a deferred pool release, end to end.
//!
//! Two `net_null` ports forward to each other on lcore 1 for a while, through
//! an application queue that keeps `--hold N` mbufs out of the pool (packets
//! wait there before they are sent). Then forwarding stops with those N mbufs
//! still queued, and `MbufPool::shutdown` (`port::shutdown_ports`) stops and closes both ports: the pool
//! cannot be freed, so its release is deferred (an EAL alarm retries every
//! second). The program prints the pool's inflight count while it waits,
//! gives the queued mbufs back in a few batches (from lcore 0 and from a
//! non-EAL thread, racing the alarm), and waits for the alarm to free the
//! pool.
//!
//! It exits non-zero when the pool is freed while buffers are still out, when
//! an mbuf goes missing (inflight differs from what the application holds),
//! when the pool is not freed soon after the last buffer is back, or when a
//! device's DMA mappings are made more than once per chunk.
//!
//! ```text
//! port_shutdown [--hold N] [--mbufs N] [--cache N] [--forward-ms MS]
//!               [--batches N] [--gap-ms MS] [--free-deadline-ms MS]
//! ```
//!
//! EAL memory arguments come from `$EAL_MEM`, else from `build/eal-mem.env`
//! (written by `scripts/setup.sh`; read by `scripts/eal_mem.rs`), else
//! `--no-huge -m 1024 --no-shconf`.

use core::ffi::{c_int, c_void};
use std::collections::VecDeque;
use std::ffi::CString;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use dpdk_sys as sys;
use mempool::{PoolState, PoolStats};
use rte_mempool_ptr_ring::api::{self, MbufPool};
use rte_mempool_ptr_ring::port::{self, ShutdownOutcome};

const POOL_NAME: &str = "port_shutdown";
const PORTS: [u16; 2] = [0, 1];
const BURST: usize = 32;
const RING_DESC: u16 = 512;
/// Lcore that forwards; lcore 0 (main) runs the shutdown.
const FWD_LCORE: u32 = 1;

/// Command-line settings.
#[derive(Debug, Clone)]
struct Args {
    hold: usize,
    mbufs: u32,
    cache: u32,
    forward_ms: u64,
    batches: usize,
    gap_ms: u64,
    free_deadline_ms: u64,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            hold: 512,
            mbufs: 8191,
            cache: 0,
            forward_ms: 1000,
            batches: 4,
            gap_ms: 400,
            free_deadline_ms: 5000,
        }
    }
}

const USAGE: &str = "usage: port_shutdown [--hold N] [--mbufs N] [--cache N] [--forward-ms MS] \
                     [--batches N] [--gap-ms MS] [--free-deadline-ms MS]";

fn parse_args() -> Result<Args, String> {
    let mut a = Args::default();
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "-h" || flag == "--help" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        let value = it
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let num = |what: &str| -> Result<u64, String> {
            value
                .parse::<u64>()
                .map_err(|_| format!("{what}: not a number: {value:?}\n{USAGE}"))
        };
        match flag.as_str() {
            "--hold" => a.hold = num("--hold")? as usize,
            "--mbufs" => a.mbufs = num("--mbufs")? as u32,
            "--cache" => a.cache = num("--cache")? as u32,
            "--forward-ms" => a.forward_ms = num("--forward-ms")?,
            "--batches" => a.batches = (num("--batches")? as usize).max(1),
            "--gap-ms" => a.gap_ms = num("--gap-ms")?,
            "--free-deadline-ms" => a.free_deadline_ms = num("--free-deadline-ms")?,
            _ => return Err(format!("unknown argument {flag:?}\n{USAGE}")),
        }
    }
    // Forwarding needs free mbufs beyond the queue: a burst per port.
    if a.hold + 4 * BURST > a.mbufs as usize {
        return Err(format!(
            "--hold {} leaves too few of the {} mbufs for forwarding (need hold + {} <= mbufs)",
            a.hold,
            a.mbufs,
            4 * BURST
        ));
    }
    Ok(a)
}

#[path = "../../scripts/eal_mem.rs"]
mod eal_mem_file;

/// EAL memory arguments: `$EAL_MEM`, else `build/eal-mem.env` (read as every
/// Rust program here reads it, with the same default).
fn eal_mem() -> Vec<String> {
    match std::env::var("EAL_MEM") {
        Ok(mem) if !mem.trim().is_empty() => eal_mem_file::mem_args(&mem),
        _ => eal_mem_file::eal_mem().args,
    }
}

/// State shared with the forwarding lcore.
struct Forwarder {
    stop: AtomicBool,
    hold: usize,
    /// What is left in the application queue when forwarding stops.
    held: Mutex<Vec<usize>>,
    rx: AtomicU64,
    tx: AtomicU64,
    dropped: AtomicU64,
}

fn tx_flush(port: u16, batch: &mut Vec<*mut sys::rte_mbuf>, fwd: &Forwarder) {
    if batch.is_empty() {
        return;
    }
    // SAFETY: a started port with tx queue 0; `batch` holds mbufs we own.
    let sent =
        unsafe { sys::rte_eth_tx_burst(port, 0, batch.as_mut_ptr(), batch.len() as u16) } as usize;
    let rest = batch.len() - sent;
    if rest > 0 {
        // SAFETY: the mbufs the port did not take are still ours.
        unsafe { sys::rte_pktmbuf_free_bulk(batch.as_mut_ptr().add(sent), rest as u32) };
    }
    fwd.tx.fetch_add(sent as u64, Ordering::Relaxed);
    fwd.dropped.fetch_add(rest as u64, Ordering::Relaxed);
    batch.clear();
}

/// lcore 1: port 0 -> port 1 and port 1 -> port 0, every packet passing
/// through a queue that keeps the last `hold` of them.
unsafe extern "C" fn forward(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the Forwarder of `run`, alive until rte_eal_wait_lcore
    // returns there.
    let fwd = unsafe { &*arg.cast::<Forwarder>() };
    let mut queue: VecDeque<(u16, *mut sys::rte_mbuf)> =
        VecDeque::with_capacity(fwd.hold + 2 * BURST);
    let mut rx = [core::ptr::null_mut::<sys::rte_mbuf>(); BURST];
    let mut tx: [Vec<*mut sys::rte_mbuf>; 2] =
        [Vec::with_capacity(BURST), Vec::with_capacity(BURST)];
    while !fwd.stop.load(Ordering::Relaxed) {
        for (from, to) in [(PORTS[0], PORTS[1]), (PORTS[1], PORTS[0])] {
            // SAFETY: a started port with rx queue 0; room for BURST mbufs.
            let n =
                unsafe { sys::rte_eth_rx_burst(from, 0, rx.as_mut_ptr(), BURST as u16) } as usize;
            fwd.rx.fetch_add(n as u64, Ordering::Relaxed);
            queue.extend(rx[..n].iter().map(|&m| (to, m)));
        }
        while queue.len() > fwd.hold {
            let (to, m) = queue.pop_front().expect("non-empty");
            let b = &mut tx[to as usize];
            b.push(m);
            if b.len() == BURST {
                tx_flush(to, b, fwd);
            }
        }
        for (p, b) in tx.iter_mut().enumerate() {
            tx_flush(p as u16, b, fwd);
        }
    }
    let mut held = fwd.held.lock().unwrap_or_else(|e| e.into_inner());
    held.extend(queue.into_iter().map(|(_, m)| m as usize));
    0
}

fn check(r: c_int, what: &str) -> Result<(), String> {
    if r < 0 {
        Err(format!("{what}: {r} ({})", strerror(r)))
    } else {
        Ok(())
    }
}

fn strerror(e: c_int) -> String {
    // SAFETY: rte_strerror returns a static string.
    unsafe { std::ffi::CStr::from_ptr(sys::rte_strerror(e.abs())) }
        .to_string_lossy()
        .into_owned()
}

fn setup_port(port: u16, mp: *mut sys::rte_mempool) -> Result<(), String> {
    // SAFETY: all-zero is a valid default rte_eth_conf.
    let conf: sys::rte_eth_conf = unsafe { core::mem::zeroed() };
    // SAFETY: a probed port; the calls only read their arguments.
    unsafe {
        let socket = sys::rte_eth_dev_socket_id(port).max(0) as u32;
        check(
            sys::rte_eth_dev_configure(port, 1, 1, &conf),
            "rte_eth_dev_configure",
        )?;
        check(
            sys::rte_eth_rx_queue_setup(port, 0, RING_DESC, socket, core::ptr::null(), mp),
            "rte_eth_rx_queue_setup",
        )?;
        check(
            sys::rte_eth_tx_queue_setup(port, 0, RING_DESC, socket, core::ptr::null()),
            "rte_eth_tx_queue_setup",
        )?;
        check(sys::rte_eth_dev_start(port), "rte_eth_dev_start")?;
    }
    Ok(())
}

/// Whether the pool is still registered with the mempool library (it is
/// removed from the list when freed). Never dereferences the pool.
fn pool_alive(name: &CString) -> bool {
    // SAFETY: a valid name; lookup only walks the library's list under its lock.
    !unsafe { sys::rte_mempool_lookup(name.as_ptr()) }.is_null()
}

fn show(s: &PoolStats) -> String {
    format!(
        "inflight {} (ring {}, handler caches {}, populated {}), state {:?}",
        s.inflight, s.in_ring, s.in_caches, s.populated, s.state
    )
}

/// Gives `batch` back to the pool from the calling thread.
fn give_back(batch: &[usize]) {
    let mut v: Vec<*mut sys::rte_mbuf> = batch.iter().map(|&m| m as *mut sys::rte_mbuf).collect();
    // SAFETY: mbufs the application owns, each freed once.
    unsafe { sys::rte_pktmbuf_free_bulk(v.as_mut_ptr(), v.len() as u32) };
}

fn run(args: &Args) -> Result<(), String> {
    let mut eal = vec!["port_shutdown".to_string()];
    eal.extend(eal_mem());
    eal.extend(
        [
            "--no-pci",
            "--no-telemetry",
            "-l",
            "0-1",
            "--vdev",
            "net_null0",
            "--vdev",
            "net_null1",
            "--log-level=lib.eal:notice",
            "--log-level=pmd.mempool.ptr_ring:info",
        ]
        .map(String::from),
    );
    let idx = api::ensure_registered().map_err(|e| format!("registering ptr_ring: {e}"))?;
    println!(
        "port_shutdown: ptr_ring ops at index {idx}; EAL {}",
        eal[1..].join(" ")
    );
    api::eal_init(&eal).map_err(|e| format!("EAL init: {e}"))?;
    // SAFETY: plain query after EAL init.
    let nports = unsafe { sys::rte_eth_dev_count_avail() };
    if nports < 2 {
        return Err(format!("need two net_null ports, found {nports}"));
    }

    // The pool is freed by its shutdown (MbufPool::shutdown consumes it), at
    // once or by the deferred release.
    let pool = MbufPool::create(
        POOL_NAME,
        args.mbufs,
        args.cache,
        sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16,
        -1,
    )
    .map_err(|e| format!("creating the pool: {e}"))?;
    let mp = pool.as_ptr();
    let cname = CString::new(POOL_NAME).expect("no NUL");
    // SAFETY: read only while the pool is alive: before the shutdown, and
    // after it while the application still holds mbufs (checked below).
    let stats = || unsafe { api::stats_of(mp) }.map_err(|e| format!("pool stats: {e}"));
    let s0 = stats()?;
    println!(
        "port_shutdown: pool {POOL_NAME}: {} mbufs, DPDK cache {}, handler cache {}, {} chunks",
        pool.size(),
        args.cache,
        s0.cache_size,
        s0.chunks
    );

    // SAFETY: `mp` is the live ptr_ring pool created above.
    let attached = unsafe { port::attach_port(mp, PORTS[0]) }
        .map_err(|e| format!("attach_port(port 0): {e}"))?;
    // SAFETY: as above.
    let again = unsafe { port::attach_port(mp, PORTS[0]) }
        .map_err(|e| format!("attach_port(port 0) again: {e}"))?;
    let s_attached = stats()?;
    println!(
        "port_shutdown: attach_port(pool, port 0): {} chunks handled ({} in EAL memory: mapped by EAL, \
         {} external pages mapped); a second attach: {} chunks; dma records {} over {} chunks, {} device(s)",
        attached.records,
        attached.eal_records,
        attached.pages_mapped,
        again.records,
        s_attached.dma_maps,
        s_attached.chunks,
        s_attached.devices
    );
    if again.records != 0 || again.pages_mapped != 0 {
        return Err(format!("a second attach_port mapped again: {again:?}"));
    }
    // The pool lives in EAL memory (memzones), which EAL maps for VFIO
    // devices itself: nothing may be mapped again with rte_dev_dma_map.
    if attached.pages_mapped != 0 || attached.eal_records != attached.records {
        return Err(format!(
            "a pool in EAL memory must not be mapped again with rte_dev_dma_map: {attached:?}"
        ));
    }

    for p in PORTS {
        setup_port(p, mp).map_err(|e| format!("port {p}: {e}"))?;
    }

    let fwd = Forwarder {
        stop: AtomicBool::new(false),
        hold: args.hold,
        held: Mutex::new(Vec::new()),
        rx: AtomicU64::new(0),
        tx: AtomicU64::new(0),
        dropped: AtomicU64::new(0),
    };
    // SAFETY: `fwd` outlives the launched function: we wait for it below.
    let r = unsafe {
        sys::rte_eal_remote_launch(
            Some(forward),
            (&fwd as *const Forwarder).cast_mut().cast(),
            FWD_LCORE,
        )
    };
    check(r, "rte_eal_remote_launch")?;
    let t_fwd = Instant::now();
    std::thread::sleep(Duration::from_millis(args.forward_ms));
    fwd.stop.store(true, Ordering::Relaxed);
    // SAFETY: waits for lcore 1 to return; afterwards nothing runs there.
    let rc = unsafe { sys::rte_eal_wait_lcore(FWD_LCORE) };
    let secs = t_fwd.elapsed().as_secs_f64();
    if rc != 0 {
        return Err(format!("forwarding lcore returned {rc}"));
    }
    let mut held = std::mem::take(&mut *fwd.held.lock().unwrap_or_else(|e| e.into_inner()));
    let (rx, tx, dropped) = (
        fwd.rx.load(Ordering::Relaxed),
        fwd.tx.load(Ordering::Relaxed),
        fwd.dropped.load(Ordering::Relaxed),
    );
    println!(
        "port_shutdown: forwarded for {secs:.2} s on lcore {FWD_LCORE}: rx {rx} tx {tx} dropped {dropped} \
         ({:.1} Mpps); application queue holds {} mbufs",
        rx as f64 / secs / 1e6,
        held.len()
    );
    if rx == 0 || tx == 0 {
        return Err("no packet was forwarded".into());
    }
    if held.len() != args.hold {
        return Err(format!(
            "application queue holds {} mbufs, expected --hold {}",
            held.len(),
            args.hold
        ));
    }

    // DPDK's own per-lcore caches (when --cache > 0) sit above the handler.
    // The shutdown gives them back while every lcore is quiescent (or their
    // objects would count as inflight for ever) and closes them (cache_size
    // 0: rte_mempool_default_cache then returns NULL), or the mbufs the
    // application returns from an EAL lcore after the shutdown would stop in
    // that lcore's cache and never reach the handler. Count them here.
    let mut dpdk_cached: i64 = 0;
    for lcore in 0..sys::RTE_MAX_LCORE {
        // SAFETY: a live pool; every lcore is quiescent (lcore 1 was waited
        // for, lcore 0 is us), so their caches are ours to read.
        unsafe {
            let c = sys::rte_mempool_default_cache(mp, lcore);
            if !c.is_null() {
                dpdk_cached += i64::from((*c).len);
            }
        }
    }
    if args.cache > 0 {
        println!(
            "port_shutdown: DPDK's per-lcore caches hold {dpdk_cached} mbufs (shutdown_ports flushes them into the handler and closes the caches)"
        );
    }

    let s_stop = stats()?;
    println!("port_shutdown: forwarding stopped: {}", show(&s_stop));
    if s_stop.inflight != held.len() as i64 + dpdk_cached {
        return Err(format!(
            "before shutdown: pool inflight {} but the application holds {} mbufs (and DPDK's caches {dpdk_cached})",
            s_stop.inflight,
            held.len()
        ));
    }
    if s_stop.dma_maps != s_attached.dma_maps || s_stop.dma_unmaps != s_attached.dma_unmaps {
        return Err(format!(
            "recycling changed the DMA counters: maps {} -> {}, unmaps {} -> {}",
            s_attached.dma_maps, s_stop.dma_maps, s_attached.dma_unmaps, s_stop.dma_unmaps
        ));
    }

    // Shut both ports down with the queue still full.
    let t_shut = Instant::now();
    // Forwarding has stopped (lcore 1 returned from `forward`), and lcore 0
    // is not in a get/put; the pool is consumed: freed by the shutdown.
    let outcome = pool
        .shutdown(&PORTS, Duration::from_millis(200))
        .map_err(|e| format!("shutdown: {e}"))?;
    println!(
        "port_shutdown: shutdown(ports 0,1, wait 200 ms) = {outcome:?} after {} ms",
        t_shut.elapsed().as_millis()
    );
    match outcome {
        ShutdownOutcome::Freed { .. } if held.is_empty() => {
            if pool_alive(&cname) {
                return Err("shutdown_ports said Freed but the pool is still registered".into());
            }
            println!("port_shutdown: PASS (nothing held: freed at once)");
            return Ok(());
        }
        ShutdownOutcome::Freed { .. } => {
            // Leak the held mbufs: their pool is gone.
            return Err(format!(
                "the pool was freed while the application holds {} mbufs",
                held.len()
            ));
        }
        ShutdownOutcome::Deferred { inflight } if inflight != held.len() as i64 => {
            return Err(format!(
                "deferred with {inflight} inflight, but the application holds {}{}",
                held.len(),
                if dpdk_cached > 0 {
                    format!(
                        " ({dpdk_cached} more sit in DPDK's per-lcore caches, which shutdown_ports does not \
                         flush: this pool can never be released)"
                    )
                } else {
                    String::new()
                }
            ));
        }
        ShutdownOutcome::Deferred { .. } => {}
    }

    // Deferred: print inflight as the release waits, give the mbufs back in
    // batches racing the alarm's retries, then wait for the pool to go.
    let n_batches = args.batches.min(held.len()).max(1);
    let per = held.len().div_ceil(n_batches);
    let mut batches: VecDeque<Vec<usize>> = held.chunks(per).map(<[usize]>::to_vec).collect();
    held.clear();
    let mut holding: usize = batches.iter().map(Vec::len).sum();
    let tick = Duration::from_millis(20);
    let print_every = Duration::from_millis(300);
    let gap = Duration::from_millis(args.gap_ms);
    let t0 = Instant::now();
    let mut next_print = Duration::ZERO;
    let mut next_batch = gap;
    let mut batch_no = 0usize;
    // Odd batches from lcore 0, even ones from a non-EAL thread.
    let mut from_thread = true;
    let mut last_stats = stats()?;
    while let Some(batch) = batches.front() {
        let now = t0.elapsed();
        let want_print = now >= next_print;
        let want_batch = now >= next_batch;
        if want_print || want_batch {
            // The application still holds `holding` > 0 mbufs, so the pool
            // must be alive, and reading its stats is safe.
            if !pool_alive(&cname) {
                // Forget the held mbufs: their pool is gone.
                return Err(format!(
                    "the pool was freed while the application still holds {holding} mbufs"
                ));
            }
            let s = stats()?;
            if want_print {
                println!(
                    "port_shutdown: +{:>4} ms deferred release waiting: {} (application holds {holding})",
                    now.as_millis(),
                    show(&s)
                );
                next_print += print_every;
            }
            if s.inflight != holding as i64 {
                return Err(format!(
                    "mbuf lost: pool inflight {} but the application holds {holding}",
                    s.inflight
                ));
            }
            if s.state != PoolState::Draining {
                return Err(format!("pool state {:?} while draining", s.state));
            }
            last_stats = s;
        }
        if want_batch {
            batch_no += 1;
            let n = batch.len();
            from_thread = !from_thread;
            if from_thread {
                // A plain (non-EAL) thread returns this one: LCORE_ID_ANY.
                let b = batch.clone();
                std::thread::spawn(move || give_back(&b))
                    .join()
                    .map_err(|_| "returning thread panicked".to_string())?;
            } else {
                give_back(batch);
            }
            holding -= n;
            batches.pop_front();
            println!(
                "port_shutdown: +{:>4} ms returned batch {batch_no} ({n} mbufs, from {}); application holds {holding}",
                t0.elapsed().as_millis(),
                if from_thread { "a non-EAL thread" } else { "lcore 0" }
            );
            next_batch += gap;
        }
        std::thread::sleep(tick);
    }

    // Every mbuf is back: the next alarm frees the pool. Do not touch it;
    // the DMA counters below were read before the last batch went back.
    println!(
        "port_shutdown: DMA counters (last read with buffers out): dma_maps {} dma_unmaps {} over {} chunks; \
         forwarding, shutdown and returns added {} maps",
        last_stats.dma_maps,
        last_stats.dma_unmaps,
        last_stats.chunks,
        last_stats.dma_maps - s_attached.dma_maps
    );
    if last_stats.dma_maps != s_attached.dma_maps {
        return Err("recycling changed dma_maps".into());
    }
    if last_stats.dma_unmaps > last_stats.dma_maps {
        return Err(format!(
            "more DMA unmaps ({}) than maps ({})",
            last_stats.dma_unmaps, last_stats.dma_maps
        ));
    }
    let t_last = Instant::now();
    let deadline = Duration::from_millis(args.free_deadline_ms);
    while pool_alive(&cname) {
        if t_last.elapsed() > deadline {
            return Err(format!(
                "every mbuf is back but the pool was not freed within {} ms",
                deadline.as_millis()
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    println!(
        "port_shutdown: pool freed {} ms after the last return ({} ms after shutdown_ports)",
        t_last.elapsed().as_millis(),
        t_shut.elapsed().as_millis()
    );
    // Before EAL goes: ends any deferred release still armed (none here,
    // the pool is freed; an application that may exit with one calls it).
    let abandoned = rte_mempool_ptr_ring::port::cleanup();
    assert_eq!(abandoned, 0, "no release left to abandon");
    // SAFETY: ports closed, pool freed, no lcore running.
    let r = unsafe { sys::rte_eal_cleanup() };
    if r < 0 {
        println!("port_shutdown: rte_eal_cleanup: {r} (ignored)");
    }
    println!(
        "port_shutdown: PASS ({} mbufs held through shutdown, returned in {batch_no} batches, no loss, no early free)",
        args.hold
    );
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("port_shutdown: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("port_shutdown: FAIL: {e}");
            ExitCode::FAILURE
        }
    }
}
