//! `mempool_bench`: objects per second through DPDK's own
//! `rte_mempool_get_bulk`/`rte_mempool_put_bulk` on mbuf pools served by
//! different mempool handlers, in one process, handlers alternated round by
//! round (A B C A B C ...).
//!
//! ```text
//! mempool_bench [OPTIONS] -- EAL_ARGS...
//!   --rounds N        rounds per configuration (default 5)
//!   --secs S          seconds per handler per round (default 0.4)
//!   --warmup S        untimed seconds per handler before round 1 (default 0.05)
//!   --pool-size N     mbufs per pool (default 8191)
//!   --handlers A,B    handlers to compare (default ptr_ring,ring_mp_mc,stack,ring_sp_sc,
//!                     floor_lifo; ring_sp_sc only runs where a single producer and a
//!                     single consumer touch the handler: 1 lcore, or the handoff
//!                     pattern; floor_lifo, an unsynchronised single-thread stack
//!                     registered by this binary as the ops interface's cost floor,
//!                     only on 1 lcore)
//!   --only FILTER     e.g. pattern=recycle,lcores=1,cache=0,bulk=1 (any subset)
//!   --csv PATH        append the CSV lines there instead of stdout
//! ```
//!
//! The EAL arguments need two lcores (`-l 0-1`) for the two-lcore
//! configurations, and `-d <abs path>/librte_mempool_ptr_ring.so` for the
//! `ptr_ring` handler (the exact artifact users load; this binary does not link
//! the handler's crate).
//!
//! Matrix: lcores 1 and 2; DPDK mempool cache 0 and 256; bulk 1, 4, 32;
//! patterns `recycle` (each lcore gets `bulk` objects and puts them back) and,
//! with two lcores, `handoff` (the main lcore gets, hands the objects over
//! through an SP/SC `rte_ring`, the worker lcore puts them back; the ring costs
//! the same for every handler). One "object" is one get plus one put.
//!
//! Output: one CSV line per handler per round (see `bench::record`), progress
//! and a per-configuration summary on stderr. Rates are wall-clock (TSC); each
//! line also carries the smallest share of the run that a lane's thread was
//! actually on its CPU (`CLOCK_THREAD_CPUTIME_ID`), which exposes runs that
//! other processes or the hypervisor disturbed.

use std::collections::HashMap;
use std::ffi::{c_int, c_void, CStr, CString};
use std::fs::OpenOptions;
use std::hint::spin_loop;
use std::io::Write;
use std::process::ExitCode;
use std::ptr::{null_mut, NonNull};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use bench::record::{MempoolKey, Pattern, Record};
use bench::stats::Summary;
use crossbeam_utils::CachePadded;
use dpdk_sys as sys;

/// Largest bulk size the loops support.
const MAX_BULK: usize = 64;
/// Loop iterations between two looks at the clock (leader) or at the stop
/// flag (follower): rare enough that `rdtsc` costs < 1% even at bulk 1.
const CHECK_EVERY: u32 = 256;
/// Slots of the SP/SC hand-over ring of the `handoff` pattern.
const HANDOFF_RING_SLOTS: u32 = 1024;
/// The handler the ratios are taken against.
const BASELINE: &str = "ring_mp_mc";
/// `RING_F_SP_ENQ | RING_F_SC_DEQ` (rte_ring_core.h; bindgen does not bind
/// these macros).
const RING_F_SP_SC: u32 = 0x0001 | 0x0002;

/// Command-line settings.
struct Opts {
    rounds: u32,
    secs: f64,
    warmup: f64,
    pool_size: u32,
    handlers: Vec<String>,
    only: Vec<(String, String)>,
    csv: Option<String>,
    eal: Vec<String>,
}

fn usage() -> ! {
    eprintln!(
        "usage: mempool_bench [--rounds N] [--secs S] [--warmup S] [--pool-size N] \
         [--handlers A,B,..] [--only pattern=P,lcores=L,cache=C,bulk=B] [--csv PATH] -- EAL_ARGS..."
    );
    std::process::exit(2)
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        rounds: 5,
        secs: 0.4,
        warmup: 0.05,
        pool_size: 8191,
        handlers: [
            "ptr_ring",
            "ring_mp_mc",
            "stack",
            "ring_sp_sc",
            "floor_lifo",
        ]
        .map(String::from)
        .to_vec(),
        only: Vec::new(),
        csv: None,
        eal: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    fn val<T: std::str::FromStr>(args: &mut impl Iterator<Item = String>, name: &str) -> T {
        let v = args.next().unwrap_or_else(|| usage());
        v.parse().unwrap_or_else(|_| {
            eprintln!("mempool_bench: bad value {v:?} for {name}");
            usage()
        })
    }
    while let Some(a) = args.next() {
        match a.as_str() {
            "--rounds" => o.rounds = val(&mut args, &a),
            "--secs" => o.secs = val(&mut args, &a),
            "--warmup" => o.warmup = val(&mut args, &a),
            "--pool-size" => o.pool_size = val(&mut args, &a),
            "--handlers" => {
                o.handlers = val::<String>(&mut args, &a)
                    .split(',')
                    .map(String::from)
                    .collect()
            }
            "--only" => {
                let f: String = val(&mut args, &a);
                for kv in f.split(',').filter(|s| !s.is_empty()) {
                    let Some((k, v)) = kv.split_once('=') else {
                        usage()
                    };
                    if !["pattern", "lcores", "cache", "bulk"].contains(&k) {
                        eprintln!("mempool_bench: unknown filter key {k:?}");
                        usage()
                    }
                    o.only.push((k.to_string(), v.to_string()));
                }
            }
            "--csv" => o.csv = Some(val(&mut args, &a)),
            "--" => {
                o.eal = args.by_ref().collect();
                break;
            }
            "-h" | "--help" => usage(),
            _ => {
                eprintln!("mempool_bench: unknown option {a:?}");
                usage()
            }
        }
    }
    if o.rounds == 0 || o.secs <= 0.0 || o.handlers.is_empty() {
        usage()
    }
    o
}

/// The configurations of the matrix, in run order, that pass the filter.
fn matrix(only: &[(String, String)]) -> Vec<MempoolKey> {
    let mut keys = Vec::new();
    for lcores in [1u32, 2] {
        let patterns: &[Pattern] = if lcores == 1 {
            &[Pattern::Recycle]
        } else {
            &[Pattern::Recycle, Pattern::Handoff]
        };
        for &pattern in patterns {
            for cache in [0u32, 256] {
                for bulk in [1u32, 4, 32] {
                    keys.push(MempoolKey {
                        lcores,
                        pattern,
                        cache,
                        bulk,
                    });
                }
            }
        }
    }
    keys.retain(|k| {
        only.iter().all(|(f, v)| match f.as_str() {
            "pattern" => k.pattern.name() == v,
            "lcores" => k.lcores.to_string() == *v,
            "cache" => k.cache.to_string() == *v,
            "bulk" => k.bulk.to_string() == *v,
            _ => false,
        })
    });
    keys
}

/// Whether `handler` may serve `key`: `ring_sp_sc` only where one lcore
/// enqueues into it and one dequeues (at most one of each).
/// The single-thread ruler `floor_lifo` only on one lcore.
fn handler_fits(handler: &str, key: &MempoolKey) -> bool {
    if handler == bench::floor::NAME {
        return key.lcores == 1;
    }
    !handler.ends_with("sp_sc") || key.lcores == 1 || key.pattern == Pattern::Handoff
}

/// What one lcore counted in one run.
#[derive(Default)]
struct Lane {
    /// Objects moved (gets that succeeded, times bulk; for the consumer of
    /// the handoff pattern: objects put back).
    objects: AtomicU64,
    /// TSC cycles from the start signal to the lane's own stop.
    cycles: AtomicU64,
    /// Gets that found the pool empty (recycle, producer) or polls that found
    /// the hand-over ring empty (consumer).
    misses: AtomicU64,
    /// The thread's CPU time over the same span, in ns: below the wall time
    /// when other processes or the hypervisor took the CPU away.
    cpu_ns: AtomicU64,
}

/// One timed run, shared by the main lcore and the worker lcore.
struct Job {
    mp: *mut sys::rte_mempool,
    ring: *mut sys::rte_ring,
    bulk: u32,
    pattern: Pattern,
    /// Run length in TSC cycles (the main lcore watches the clock).
    duration: u64,
    /// Worker lanes that are spinning on `go`.
    ready: AtomicU32,
    /// Start signal (main lcore -> worker).
    go: AtomicBool,
    /// Stop signal (main lcore -> worker).
    stop: AtomicBool,
    lanes: [CachePadded<Lane>; 2],
}

/// Reads the TSC.
#[inline(always)]
fn tsc() -> u64 {
    // SAFETY: reads the time-stamp counter; no preconditions.
    unsafe { sys::rte_get_tsc_cycles() }
}

/// CPU time of the calling thread, in ns.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-parameter; CLOCK_THREAD_CPUTIME_ID always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Runs `step` until the run ends; returns (successful steps, failed steps).
/// The leader (main lcore) ends the run when the clock passes `deadline` and
/// tells the follower through `job.stop`.
#[inline(always)]
fn drive(job: &Job, leader: bool, deadline: u64, mut step: impl FnMut() -> bool) -> (u64, u64) {
    let (mut ok, mut missed) = (0u64, 0u64);
    loop {
        for _ in 0..CHECK_EVERY {
            if step() {
                ok += 1;
            } else {
                missed += 1;
            }
        }
        if leader {
            if tsc() >= deadline {
                // Pairs with the Relaxed load below: the follower only needs
                // to see the flag eventually; its counts are read after
                // rte_eal_wait_lcore, which synchronises.
                job.stop.store(true, Ordering::Relaxed);
                break;
            }
        } else if job.stop.load(Ordering::Relaxed) {
            break;
        }
    }
    (ok, missed)
}

/// One lane of a run: lane 0 on the main lcore (the leader), lane 1 on the
/// worker lcore.
fn run_lane(job: &Job, lane: usize) {
    let leader = lane == 0;
    let mut objs = [null_mut::<c_void>(); MAX_BULK];
    let table = objs.as_mut_ptr();
    let (mp, ring, n) = (job.mp, job.ring, job.bulk);
    if !leader {
        job.ready.fetch_add(1, Ordering::Release);
        // Pairs with the Release store of `go` in `measure`.
        while !job.go.load(Ordering::Acquire) {
            spin_loop();
        }
    }
    let cpu_start = thread_cpu_ns();
    let start = tsc();
    let deadline = start + job.duration;
    let (ok, missed) = match (job.pattern, leader) {
        (Pattern::Recycle, _) => drive(job, leader, deadline, || {
            // SAFETY: `mp` is a live pool; `table` has room for MAX_BULK >= n
            // pointers and is this lane's own.
            let got = unsafe { sys::rte_mempool_get_bulk(mp, table, n) } == 0;
            if got {
                // SAFETY: the `n` objects just got from `mp` go back to it.
                unsafe { sys::rte_mempool_put_bulk(mp, table, n) };
            }
            got
        }),
        (Pattern::Handoff, true) => drive(job, leader, deadline, || {
            // SAFETY: as above.
            if unsafe { sys::rte_mempool_get_bulk(mp, table, n) } != 0 {
                return false;
            }
            // SAFETY: `ring` is a live ring whose only producer is this lane;
            // the consumer keeps draining it until the leader says stop, so
            // the loop ends.
            while unsafe { sys::rte_ring_enqueue_bulk(ring, table, n, null_mut()) } == 0 {
                spin_loop();
            }
            true
        }),
        (Pattern::Handoff, false) => drive(job, leader, deadline, || {
            // SAFETY: `ring` is a live ring whose only consumer is this lane;
            // `table` has room for `n` pointers.
            let got = unsafe { sys::rte_ring_dequeue_bulk(ring, table, n, null_mut()) } == n;
            if got {
                // SAFETY: the objects came from `mp` through the ring; this
                // lane owns them now.
                unsafe { sys::rte_mempool_put_bulk(mp, table, n) };
            }
            got
        }),
    };
    let end = tsc();
    let cpu_end = thread_cpu_ns();
    let l = &job.lanes[lane];
    l.cpu_ns.store(cpu_end - cpu_start, Ordering::Relaxed);
    l.objects.store(ok * u64::from(n), Ordering::Relaxed);
    l.misses.store(missed, Ordering::Relaxed);
    l.cycles.store(end - start, Ordering::Relaxed);
}

/// Entry point of the worker lcore (`rte_eal_remote_launch`).
unsafe extern "C" fn worker_entry(arg: *mut c_void) -> c_int {
    // SAFETY: `measure` passes a pointer to a Job that outlives the launch
    // (it waits with rte_eal_wait_lcore before the Job goes away); the Job is
    // only accessed through shared references and atomics.
    let job = unsafe { &*arg.cast::<Job>() };
    run_lane(job, 1);
    0
}

/// The handler's pools, one per (handler, cache size), and the hand-over ring.
struct Bench {
    pools: HashMap<(String, u32), NonNull<sys::rte_mempool>>,
    ring: NonNull<sys::rte_ring>,
    worker: u32,
    tsc_hz: f64,
}

impl Bench {
    /// Creates the mbuf pools and the ring.
    fn new(handlers: &[String], caches: &[u32], pool_size: u32) -> Result<Bench, String> {
        let mut pools = HashMap::new();
        for h in handlers {
            for &cache in caches {
                let mp = create_pool(h, cache, pool_size)?;
                pools.insert((h.clone(), cache), mp);
            }
        }
        let name = CString::new("bench_handoff").expect("literal");
        // SAFETY: valid name; DPDK returns null with rte_errno on failure.
        let ring = unsafe {
            sys::rte_ring_create(
                name.as_ptr(),
                HANDOFF_RING_SLOTS,
                sys::SOCKET_ID_ANY,
                RING_F_SP_SC,
            )
        };
        let ring =
            NonNull::new(ring).ok_or_else(|| format!("rte_ring_create: errno {}", sys::errno()))?;
        // SAFETY: plain EAL queries after rte_eal_init.
        let (main, hz) = unsafe { (sys::rte_get_main_lcore(), sys::rte_get_tsc_hz()) };
        // SAFETY: as above.
        let worker = unsafe { sys::rte_get_next_lcore(main, 1, 0) };
        Ok(Bench {
            pools,
            ring,
            worker,
            tsc_hz: hz as f64,
        })
    }

    fn has_worker(&self) -> bool {
        self.worker < sys::RTE_MAX_LCORE
    }

    /// One run of `secs` seconds; returns objects per second and the
    /// smallest share of the run that a lane spent on its CPU.
    fn measure(&self, key: &MempoolKey, handler: &str, secs: f64) -> Result<(f64, f64), String> {
        let mp = self.pools[&(handler.to_string(), key.cache)].as_ptr();
        let job = Job {
            mp,
            ring: self.ring.as_ptr(),
            bulk: key.bulk,
            pattern: key.pattern,
            duration: (secs * self.tsc_hz) as u64,
            ready: AtomicU32::new(0),
            go: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            lanes: Default::default(),
        };
        let two = key.lcores == 2;
        if two {
            // SAFETY: `job` outlives the launch: we wait for the worker below
            // before returning; the worker lcore is idle (WAIT state).
            let r = unsafe {
                sys::rte_eal_remote_launch(
                    Some(worker_entry),
                    (&job as *const Job).cast_mut().cast(),
                    self.worker,
                )
            };
            if r != 0 {
                return Err(format!("rte_eal_remote_launch: {r}"));
            }
            while job.ready.load(Ordering::Acquire) < 1 {
                spin_loop();
            }
        }
        // Pairs with the Acquire load in `run_lane`.
        job.go.store(true, Ordering::Release);
        run_lane(&job, 0);
        if two {
            // SAFETY: the worker was launched above.
            let r = unsafe { sys::rte_eal_wait_lcore(self.worker) };
            if r != 0 {
                return Err(format!("worker lcore returned {r}"));
            }
        }
        if key.pattern == Pattern::Handoff {
            self.drain(mp, key.bulk);
        }
        // Every object must be back (handler plus DPDK caches).
        // SAFETY: a live pool, no lcore is using it now.
        let (avail, size) = unsafe { (sys::rte_mempool_avail_count(mp), (*mp).size) };
        if avail != size {
            return Err(format!(
                "{handler} {key}: {avail} of {size} objects available after the run"
            ));
        }
        let rate = |l: &Lane| {
            let cycles = l.cycles.load(Ordering::Relaxed).max(1) as f64;
            l.objects.load(Ordering::Relaxed) as f64 * self.tsc_hz / cycles
        };
        let on_cpu = |l: &Lane| {
            let wall_ns = l.cycles.load(Ordering::Relaxed).max(1) as f64 * 1e9 / self.tsc_hz;
            (l.cpu_ns.load(Ordering::Relaxed) as f64 / wall_ns).min(1.0)
        };
        let total = match (key.pattern, two) {
            (Pattern::Recycle, false) => rate(&job.lanes[0]),
            (Pattern::Recycle, true) => rate(&job.lanes[0]) + rate(&job.lanes[1]),
            (Pattern::Handoff, _) => rate(&job.lanes[1]),
        };
        let share = if two {
            on_cpu(&job.lanes[0]).min(on_cpu(&job.lanes[1]))
        } else {
            on_cpu(&job.lanes[0])
        };
        Ok((total, share))
    }

    /// Puts back what the hand-over ring still holds.
    fn drain(&self, mp: *mut sys::rte_mempool, bulk: u32) {
        let mut objs = [null_mut::<c_void>(); MAX_BULK];
        // SAFETY: both lanes have stopped: this thread is the only user of
        // the ring; every enqueue was exactly `bulk` objects from `mp`.
        while unsafe {
            sys::rte_ring_dequeue_bulk(self.ring.as_ptr(), objs.as_mut_ptr(), bulk, null_mut())
        } == bulk
        {
            // SAFETY: the objects came from `mp`.
            unsafe { sys::rte_mempool_put_bulk(mp, objs.as_mut_ptr(), bulk) };
        }
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        for mp in self.pools.values() {
            // SAFETY: our pools; every object is back (checked after each run).
            unsafe { sys::rte_mempool_free(mp.as_ptr()) };
        }
        // SAFETY: our ring, empty and unused.
        unsafe { sys::rte_ring_free(self.ring.as_ptr()) };
    }
}

/// An mbuf pool of `n` mbufs served by `handler`, proven to use it.
fn create_pool(handler: &str, cache: u32, n: u32) -> Result<NonNull<sys::rte_mempool>, String> {
    let name = CString::new(format!("bp_{handler}_{cache}")).map_err(|e| e.to_string())?;
    let ops = CString::new(handler).map_err(|e| e.to_string())?;
    // SAFETY: valid strings; DPDK returns null with rte_errno on failure.
    let mp = unsafe {
        sys::rte_pktmbuf_pool_create_by_ops(
            name.as_ptr(),
            n,
            cache,
            0,
            sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16,
            sys::SOCKET_ID_ANY,
            ops.as_ptr(),
        )
    };
    let mp = NonNull::new(mp).ok_or_else(|| {
        format!(
            "cannot create a pool with mempool ops {handler:?} (rte_errno {}); for ptr_ring pass \
             -d <abs path>/librte_mempool_ptr_ring.so in the EAL arguments",
            sys::errno()
        )
    })?;
    // SAFETY: a live pool; its ops index names a registered ops entry.
    let used = unsafe {
        CStr::from_ptr(
            (*sys::rte_mempool_get_ops((*mp.as_ptr()).ops_index))
                .name
                .as_ptr(),
        )
    };
    if used.to_bytes() != handler.as_bytes() {
        return Err(format!("pool {name:?} uses ops {used:?}, not {handler:?}"));
    }
    Ok(mp)
}

fn eal_init(args: &[String]) -> Result<(), String> {
    let owned: Vec<CString> = std::iter::once("mempool_bench".to_string())
        .chain(args.iter().cloned())
        .map(|a| CString::new(a).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let mut ptrs: Vec<*mut std::ffi::c_char> =
        owned.iter().map(|c| c.as_ptr().cast_mut()).collect();
    // SAFETY: argc/argv are valid for the call; the strings are leaked below
    // because EAL may keep pointers into argv.
    let r = unsafe { sys::rte_eal_init(ptrs.len() as c_int, ptrs.as_mut_ptr()) };
    std::mem::forget(owned);
    if r < 0 {
        return Err(format!("rte_eal_init failed (rte_errno {})", sys::errno()));
    }
    Ok(())
}

fn main() -> ExitCode {
    let o = parse_opts();
    let keys = matrix(&o.only);
    if keys.is_empty() {
        eprintln!("mempool_bench: the filter selects no configuration");
        return ExitCode::from(2);
    }
    if o.handlers.iter().any(|h| h == bench::floor::NAME) {
        if let Err(e) = bench::floor::register() {
            eprintln!("mempool_bench: {e}");
            return ExitCode::FAILURE;
        }
    }
    if let Err(e) = eal_init(&o.eal) {
        eprintln!("mempool_bench: {e}");
        return ExitCode::FAILURE;
    }
    let code = match run(&o, &keys) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mempool_bench: {e}");
            ExitCode::FAILURE
        }
    };
    // SAFETY: every pool and ring was freed when `run` returned.
    unsafe { sys::rte_eal_cleanup() };
    code
}

fn run(o: &Opts, keys: &[MempoolKey]) -> Result<(), String> {
    let mut caches: Vec<u32> = keys.iter().map(|k| k.cache).collect();
    caches.sort_unstable();
    caches.dedup();
    let handlers: Vec<String> = o
        .handlers
        .iter()
        .filter(|h| keys.iter().any(|k| handler_fits(h, k)))
        .cloned()
        .collect();
    if keys.iter().any(|k| k.bulk as usize > MAX_BULK) {
        return Err(format!("bulk above {MAX_BULK}"));
    }
    let bench = Bench::new(&handlers, &caches, o.pool_size)?;
    if keys.iter().any(|k| k.lcores == 2) && !bench.has_worker() {
        return Err("two-lcore configurations need a worker lcore: pass -l 0-1".into());
    }

    let mut out: Box<dyn Write> = match &o.csv {
        Some(p) => Box::new(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| format!("{p}: {e}"))?,
        ),
        None => Box::new(std::io::stdout()),
    };
    let total_runs: usize = keys
        .iter()
        .map(|k| handlers.iter().filter(|h| handler_fits(h, k)).count() * o.rounds as usize)
        .sum();
    eprintln!(
        "mempool_bench: {} configurations, handlers {}, {} rounds of {} s (about {:.0} s); pools of {} mbufs, TSC {:.2} GHz",
        keys.len(),
        handlers.join(" "),
        o.rounds,
        o.secs,
        total_runs as f64 * o.secs + keys.len() as f64 * handlers.len() as f64 * o.warmup,
        o.pool_size,
        bench.tsc_hz / 1e9
    );
    writeln!(
        out,
        "# mempool_bench rounds={} secs={} warmup={} pool_size={} handoff_ring={} tsc_hz={:.0}",
        o.rounds, o.secs, o.warmup, o.pool_size, HANDOFF_RING_SLOTS, bench.tsc_hz
    )
    .map_err(|e| e.to_string())?;

    let t0 = Instant::now();
    for (i, key) in keys.iter().enumerate() {
        let hs: Vec<&String> = handlers.iter().filter(|h| handler_fits(h, key)).collect();
        if o.warmup > 0.0 {
            for h in &hs {
                bench.measure(key, h, o.warmup)?;
            }
        }
        let mut samples: HashMap<&str, Vec<f64>> = HashMap::new();
        let mut min_on_cpu = 1.0f64;
        for round in 1..=o.rounds {
            for h in &hs {
                let (rate, on_cpu) = bench.measure(key, h, o.secs)?;
                writeln!(out, "{}", Record::mempool_line(key, h, round, rate, on_cpu))
                    .map_err(|e| e.to_string())?;
                min_on_cpu = min_on_cpu.min(on_cpu);
                samples.entry(h.as_str()).or_default().push(rate);
            }
        }
        out.flush().map_err(|e| e.to_string())?;
        progress(
            i + 1,
            keys.len(),
            key,
            &hs,
            &samples,
            min_on_cpu,
            t0.elapsed().as_secs_f64(),
        );
    }
    Ok(())
}

/// One stderr line per configuration: median, spread and ratio per handler.
fn progress(
    done: usize,
    total: usize,
    key: &MempoolKey,
    hs: &[&String],
    samples: &HashMap<&str, Vec<f64>>,
    min_on_cpu: f64,
    elapsed: f64,
) {
    let base = samples
        .get(BASELINE)
        .and_then(|v| Summary::of(v))
        .map(|s| s.median);
    let mut line = format!("[{done:2}/{total}] {:<24}", key.to_string());
    for h in hs {
        let Some(s) = samples.get(h.as_str()).and_then(|v| Summary::of(v)) else {
            continue;
        };
        line.push_str(&format!(
            " | {h} {:.1} M/s ({:.0}-{:.0})",
            s.median / 1e6,
            s.min / 1e6,
            s.max / 1e6
        ));
        if let Some(b) = base.filter(|_| h.as_str() != BASELINE) {
            line.push_str(&format!(" {:.2}x", s.median / b));
        }
    }
    if min_on_cpu < 0.95 {
        line.push_str(&format!(
            "  (a lane ran only {:.0}% of a run)",
            min_on_cpu * 100.0
        ));
    }
    eprintln!("{line}  [{elapsed:.0} s]");
}
