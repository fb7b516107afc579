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

use core::ffi::c_int;
use std::collections::VecDeque;
use std::ffi::CString;
use std::process::ExitCode;
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
#[path = "port_shutdown/forwarding.rs"]
mod forwarding;

/// EAL memory arguments: `$EAL_MEM`, else `build/eal-mem.env` (read as every
/// Rust program here reads it, with the same default).
fn eal_mem() -> Vec<String> {
    match std::env::var("EAL_MEM") {
        Ok(mem) if !mem.trim().is_empty() => eal_mem_file::mem_args(&mem),
        _ => eal_mem_file::eal_mem().args,
    }
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

/// The pool as the steps after its creation see it: the pointer stays
/// usable after `MbufPool::shutdown` consumed the handle, for as long as the
/// pool is registered.
struct PoolView {
    mp: *mut sys::rte_mempool,
    name: CString,
}

impl PoolView {
    fn of(pool: &MbufPool) -> Self {
        PoolView {
            mp: pool.as_ptr(),
            name: CString::new(POOL_NAME).expect("no NUL"),
        }
    }

    /// The pool's counters. Called only while the pool is alive: before the
    /// shutdown, and after it while the application still holds mbufs.
    fn stats(&self) -> Result<PoolStats, String> {
        // SAFETY: the pool is alive (the callers' rule above).
        unsafe { api::stats_of(self.mp) }.map_err(|e| format!("pool stats: {e}"))
    }

    /// Whether the pool is still registered with the mempool library (it is
    /// removed from the list when freed). Never dereferences the pool.
    fn alive(&self) -> bool {
        // SAFETY: a valid name; lookup only walks the library's list under its lock.
        !unsafe { sys::rte_mempool_lookup(self.name.as_ptr()) }.is_null()
    }
}

/// Registers the ptr_ring ops, starts EAL with two `net_null` ports on
/// lcores 0-1 and checks both ports are there.
fn init_eal() -> Result<(), String> {
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
    Ok(())
}

/// Creates the ptr_ring mbuf pool. It is freed by its shutdown
/// (`MbufPool::shutdown` consumes it), at once or by the deferred release.
fn create_pool(args: &Args) -> Result<MbufPool, String> {
    let pool = MbufPool::create(
        POOL_NAME,
        args.mbufs,
        args.cache,
        sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16,
        -1,
    )
    .map_err(|e| format!("creating the pool: {e}"))?;
    let s0 = PoolView::of(&pool).stats()?;
    println!(
        "port_shutdown: pool {POOL_NAME}: {} mbufs, DPDK cache {}, handler cache {}, {} chunks",
        pool.size(),
        args.cache,
        s0.cache_size,
        s0.chunks
    );
    Ok(pool)
}

/// Attaches port 0 to the pool twice (DMA mappings): the second attach must
/// map nothing, and a pool in EAL memory nothing at all. Returns the pool's
/// counters after the attach, which recycling must not change.
fn attach_dma(pool: &PoolView) -> Result<PoolStats, String> {
    // SAFETY: `pool.mp` is the live ptr_ring pool created by `create_pool`.
    let attached = unsafe { port::attach_port(pool.mp, PORTS[0]) }
        .map_err(|e| format!("attach_port(port 0): {e}"))?;
    // SAFETY: as above.
    let again = unsafe { port::attach_port(pool.mp, PORTS[0]) }
        .map_err(|e| format!("attach_port(port 0) again: {e}"))?;
    let s_attached = pool.stats()?;
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
    Ok(s_attached)
}

/// Configures and starts both ports, their rx queues filled from the pool.
fn start_ports(mp: *mut sys::rte_mempool) -> Result<(), String> {
    for p in PORTS {
        setup_port(p, mp).map_err(|e| format!("port {p}: {e}"))?;
    }
    Ok(())
}

/// Counts the mbufs in DPDK's own per-lcore caches (when --cache > 0), which
/// sit above the handler. The shutdown gives them back while every lcore is
/// quiescent (or their objects would count as inflight for ever) and closes
/// them (cache_size 0: rte_mempool_default_cache then returns NULL), or the
/// mbufs the application returns from an EAL lcore after the shutdown would
/// stop in that lcore's cache and never reach the handler.
fn count_dpdk_cached(mp: *mut sys::rte_mempool, cache: u32) -> i64 {
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
    if cache > 0 {
        println!(
            "port_shutdown: DPDK's per-lcore caches hold {dpdk_cached} mbufs (shutdown_ports flushes them into the handler and closes the caches)"
        );
    }
    dpdk_cached
}

/// Before the shutdown: every mbuf out of the pool is in the application
/// queue or in DPDK's caches, and recycling left the DMA counters alone.
fn check_before_shutdown(
    pool: &PoolView,
    held: usize,
    dpdk_cached: i64,
    s_attached: &PoolStats,
) -> Result<(), String> {
    let s_stop = pool.stats()?;
    println!("port_shutdown: forwarding stopped: {}", show(&s_stop));
    if s_stop.inflight != held as i64 + dpdk_cached {
        return Err(format!(
            "before shutdown: pool inflight {} but the application holds {held} mbufs (and DPDK's caches {dpdk_cached})",
            s_stop.inflight,
        ));
    }
    if s_stop.dma_maps != s_attached.dma_maps || s_stop.dma_unmaps != s_attached.dma_unmaps {
        return Err(format!(
            "recycling changed the DMA counters: maps {} -> {}, unmaps {} -> {}",
            s_attached.dma_maps, s_stop.dma_maps, s_attached.dma_unmaps, s_stop.dma_unmaps
        ));
    }
    Ok(())
}

/// How the shutdown released the pool.
enum Release {
    /// Freed by the shutdown itself (nothing was held).
    AtOnce,
    /// Deferred to the EAL alarm; the shutdown started at `since`.
    Deferred { since: Instant },
}

/// Shuts both ports down with the application queue still full, which
/// consumes the pool. With `held` mbufs out, the release must be deferred
/// with exactly those inflight.
fn shut_down(
    pool: MbufPool,
    view: &PoolView,
    held: usize,
    dpdk_cached: i64,
) -> Result<Release, String> {
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
        ShutdownOutcome::Freed { .. } if held == 0 => {
            if view.alive() {
                return Err("shutdown_ports said Freed but the pool is still registered".into());
            }
            Ok(Release::AtOnce)
        }
        // Leak the held mbufs: their pool is gone.
        ShutdownOutcome::Freed { .. } => Err(format!(
            "the pool was freed while the application holds {held} mbufs"
        )),
        ShutdownOutcome::Deferred { inflight } if inflight != held as i64 => Err(format!(
            "deferred with {inflight} inflight, but the application holds {held}{}",
            if dpdk_cached > 0 {
                format!(
                    " ({dpdk_cached} more sit in DPDK's per-lcore caches, which shutdown_ports does not \
                     flush: this pool can never be released)"
                )
            } else {
                String::new()
            }
        )),
        ShutdownOutcome::Deferred { .. } => Ok(Release::Deferred { since: t_shut }),
    }
}

/// While the release is deferred: prints inflight as it waits and gives the
/// held mbufs back in `--batches` batches, `--gap-ms` apart, racing the
/// alarm's retries (odd batches from lcore 0, even ones from a non-EAL
/// thread). Checks at each step that the pool is alive, draining, and that
/// no mbuf is lost. Returns the last counters read (with buffers still out)
/// and the number of batches.
fn return_in_batches(
    args: &Args,
    pool: &PoolView,
    held: Vec<usize>,
) -> Result<(PoolStats, usize), String> {
    let n_batches = args.batches.min(held.len()).max(1);
    let per = held.len().div_ceil(n_batches);
    let mut batches: VecDeque<Vec<usize>> = held.chunks(per).map(<[usize]>::to_vec).collect();
    drop(held);
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
    let mut last_stats = pool.stats()?;
    while let Some(batch) = batches.front() {
        let now = t0.elapsed();
        let want_print = now >= next_print;
        let want_batch = now >= next_batch;
        if want_print || want_batch {
            // The application still holds `holding` > 0 mbufs, so the pool
            // must be alive, and reading its stats is safe.
            if !pool.alive() {
                // Forget the held mbufs: their pool is gone.
                return Err(format!(
                    "the pool was freed while the application still holds {holding} mbufs"
                ));
            }
            let s = pool.stats()?;
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
    Ok((last_stats, batch_no))
}

/// The DMA counters last read with buffers out: forwarding, shutdown and the
/// returns mapped nothing, and nothing was unmapped more than mapped.
fn check_dma_counters(last_stats: &PoolStats, s_attached: &PoolStats) -> Result<(), String> {
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
    Ok(())
}

/// Every mbuf is back: the next alarm frees the pool (never touched here).
/// Waits at most `--free-deadline-ms` for it to go.
fn wait_until_freed(args: &Args, pool: &PoolView, t_shut: Instant) -> Result<(), String> {
    let t_last = Instant::now();
    let deadline = Duration::from_millis(args.free_deadline_ms);
    while pool.alive() {
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
    Ok(())
}

/// Ends any deferred release still armed (none here, the pool is freed; an
/// application that may exit with one calls it), then EAL.
fn clean_up_eal() {
    let abandoned = rte_mempool_ptr_ring::port::cleanup();
    assert_eq!(abandoned, 0, "no release left to abandon");
    // SAFETY: ports closed, pool freed, no lcore running.
    let r = unsafe { sys::rte_eal_cleanup() };
    if r < 0 {
        println!("port_shutdown: rte_eal_cleanup: {r} (ignored)");
    }
}

fn run(args: &Args) -> Result<(), String> {
    init_eal()?;
    let pool = create_pool(args)?;
    let view = PoolView::of(&pool);
    let s_attached = attach_dma(&view)?;
    start_ports(view.mp)?;
    let held = forwarding::forward_for_a_while(args)?;
    let dpdk_cached = count_dpdk_cached(view.mp, args.cache);
    check_before_shutdown(&view, held.len(), dpdk_cached, &s_attached)?;
    let t_shut = match shut_down(pool, &view, held.len(), dpdk_cached)? {
        Release::AtOnce => {
            println!("port_shutdown: PASS (nothing held: freed at once)");
            return Ok(());
        }
        Release::Deferred { since } => since,
    };
    let (last_stats, batch_no) = return_in_batches(args, &view, held)?;
    check_dma_counters(&last_stats, &s_attached)?;
    wait_until_freed(args, &view, t_shut)?;
    clean_up_eal();
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
