//! `mempool_bench`: objects per second through DPDK's own
//! `rte_mempool_get_bulk`/`rte_mempool_put_bulk` on mbuf pools served by
//! different mempool handlers, in one process, the handlers' order rotated
//! every round (A B C, B C A, C A B, ...).
//!
//! Besides `ptr_ring` and `ring_mp_mc`, which run in every round, the core
//! rows (`bench::matrix::core_row`) run every other software handler DPDK
//! ships (`bench::matrix::PEERS`), a few of them per round in turn. A
//! handler that is not registered in the process, refuses the pool or fails
//! a run is left out of the row with a `mempool2skip` line saying why.
//!
//! Every row says which caches each handler runs with (`bench::matrix`):
//! DPDK's per-lcore mempool cache (`cache_size`) and `ptr_ring`'s own
//! per-lcore cache, set per pool through `rte_mempool_set_ops_byname`'s
//! `pool_config` (`struct ptr_ring_pool_config`). Run `mempool_bench --help`
//! for the options.
//!
//! Output: one CSV record per handler per round (`mempool2`, format 2,
//! see `bench::record`), progress and a per-row summary on stderr. Rates are
//! wall-clock (TSC); each line also carries the smallest share of the run
//! that a lane's thread was on its CPU, and for `ptr_ring` the share of the
//! objects got that its own counters saw leave the handler (near 0: DPDK's
//! cache served everything). Around each two-lcore row a `line2` line gives
//! the round trip of one cache line between the two lcores just before and
//! just after the row's rounds (`line_trip.rs`).

mod lane;
mod line_trip;
mod opts;
mod peers;
mod placement;
mod pools;

use std::collections::HashMap;
use std::ffi::{c_int, CString};
use std::fs::OpenOptions;
use std::hint::spin_loop;
use std::io::Write;
use std::process::ExitCode;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Instant;

use bench::matrix::{self, BASELINE};
use bench::record::{Group, LineTrip, MempoolKey, MempoolRound, Pattern, Record, Skipped, Writer};
use bench::stats::{round_ratios, Paired, Summary};
use dpdk_sys as sys;

use lane::{run_lane, worker_entry, Job, Lane};
use opts::{parse_opts, Opts, HELP};
use peers::{is_peer, round_order};
use placement::{Spacer, Spot};
use pools::Pools;

/// Largest bulk size the loops support (DPDK's cache refills up to 512 + n).
const MAX_BULK: u32 = 512;
/// Slots of the SP/SC hand-over ring of the `handoff` pattern.
const HANDOFF_RING_SLOTS: u32 = 1024;

/// The handler-independent pieces of a run: the hand-over ring, the lcores.
struct Bench {
    pools: Pools,
    ring: NonNull<sys::rte_ring>,
    worker: u32,
    tsc_hz: f64,
}

/// What one run measured.
struct Measured {
    /// Objects per second.
    rate: f64,
    /// Smallest share of the run a lane's thread was on its CPU.
    on_cpu: f64,
    /// Objects the handler handed out per object got (-1: unknown).
    share: f64,
}

impl Bench {
    fn new(pool_size: u32, plugin: Option<&str>) -> Result<Bench, String> {
        let name = CString::new("bench_handoff").expect("literal");
        // SAFETY: valid name; DPDK returns null with rte_errno on failure.
        let ring = unsafe {
            sys::rte_ring_create(
                name.as_ptr(),
                HANDOFF_RING_SLOTS,
                sys::SOCKET_ID_ANY,
                sys::RING_F_SP_ENQ | sys::RING_F_SC_DEQ,
            )
        };
        let ring =
            NonNull::new(ring).ok_or_else(|| format!("rte_ring_create: errno {}", sys::errno()))?;
        // SAFETY: plain EAL queries after rte_eal_init.
        let (main, hz) = unsafe { (sys::rte_get_main_lcore(), sys::rte_get_tsc_hz()) };
        // SAFETY: as above; wrap so that a main lcore above the worker works.
        let worker = unsafe { sys::rte_get_next_lcore(main, 1, 1) };
        Ok(Bench {
            pools: Pools::new(pool_size, plugin),
            ring,
            worker,
            tsc_hz: hz as f64,
        })
    }

    fn has_worker(&self) -> bool {
        self.worker < sys::RTE_MAX_LCORE
    }

    /// One run of `secs` seconds of `handler` in `key`, its memory placed
    /// at `spot`.
    fn measure(
        &mut self,
        key: &MempoolKey,
        handler: &str,
        secs: f64,
        spot: Spot,
    ) -> Result<Measured, String> {
        // Freed after the pool (declared first, dropped last).
        let _spacer = Spacer::reserve(spot.spacer)?;
        // This run's own pool, freed when the run is over (see pools.rs).
        let pool = self.pools.create(handler, matrix::side(key, handler))?;
        let mp = pool.as_ptr();
        let job = Job {
            mp,
            ring: self.ring.as_ptr(),
            bulk: key.bulk,
            kept: key.kept,
            pattern: key.pattern,
            skew: spot.skew,
            duration: (secs * self.tsc_hz) as u64,
            ready: AtomicU32::new(0),
            go: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            non_eal: AtomicBool::new(false),
            lanes: Default::default(),
        };
        let before = self.pools.handed_out(mp);
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
        if key.group == Group::NonEal {
            // A plain thread that never registered with EAL: rte_lcore_id()
            // is LCORE_ID_ANY there, so DPDK's cache is bypassed.
            std::thread::scope(|s| {
                s.spawn(|| run_lane(&job, 0));
            });
            if !job.non_eal.load(Ordering::Relaxed) {
                return Err("the non-EAL thread has an lcore id".into());
            }
        } else {
            run_lane(&job, 0);
        }
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
        // SAFETY: a live pool, no thread is using it now.
        let (avail, size) = unsafe { (sys::rte_mempool_avail_count(mp), (*mp).size) };
        if avail != size {
            return Err(format!(
                "{handler} {key}: {avail} of {size} objects available after the run"
            ));
        }
        Ok(self.summarise(&job, key, before.zip(self.pools.handed_out(mp))))
    }

    fn summarise(&self, job: &Job, key: &MempoolKey, hold: Option<(u64, u64)>) -> Measured {
        let per_sec = |l: &Lane, n: u64| {
            n as f64 * self.tsc_hz / l.cycles.load(Ordering::Relaxed).max(1) as f64
        };
        let on_cpu = |l: &Lane| {
            let wall_ns = l.cycles.load(Ordering::Relaxed).max(1) as f64 * 1e9 / self.tsc_hz;
            (l.cpu_ns.load(Ordering::Relaxed) as f64 / wall_ns).min(1.0)
        };
        let lanes = &job.lanes[..key.lcores as usize];
        let rate = match key.pattern {
            Pattern::Recycle | Pattern::Burst | Pattern::FreeOne => lanes
                .iter()
                .map(|l| per_sec(l, l.got.load(Ordering::Relaxed)))
                .sum(),
            Pattern::Handoff => per_sec(&job.lanes[1], job.lanes[1].put.load(Ordering::Relaxed)),
        };
        let got: u64 = lanes.iter().map(|l| l.got.load(Ordering::Relaxed)).sum();
        let share = match hold {
            Some((b, a)) if got > 0 => a.saturating_sub(b) as f64 / got as f64,
            _ => -1.0,
        };
        Measured {
            rate,
            on_cpu: lanes.iter().map(|l| on_cpu(l)).fold(1.0, f64::min),
            share,
        }
    }

    /// Puts back what the hand-over ring still holds.
    fn drain(&self, mp: *mut sys::rte_mempool, bulk: u32) {
        let mut objs = vec![std::ptr::null_mut(); bulk as usize];
        // SAFETY: both lanes have stopped: this thread is the only user of
        // the ring; every enqueue was exactly `bulk` objects from `mp`.
        while unsafe {
            sys::rte_ring_dequeue_bulk(
                self.ring.as_ptr(),
                objs.as_mut_ptr(),
                bulk,
                std::ptr::null_mut(),
            )
        } == bulk
        {
            // SAFETY: the objects came from `mp`.
            unsafe { sys::rte_mempool_put_bulk(mp, objs.as_mut_ptr(), bulk) };
        }
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        // SAFETY: our ring, empty and unused.
        unsafe { sys::rte_ring_free(self.ring.as_ptr()) };
    }
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

/// The `-d` path of the EAL arguments that names the ptr_ring plugin.
fn plugin_path(eal: &[String]) -> Option<&str> {
    eal.windows(2)
        .find(|w| w[0] == "-d" && w[1].contains("ptr_ring"))
        .map(|w| w[1].as_str())
}

fn main() -> ExitCode {
    let mut o = match parse_opts() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("mempool_bench: {e}\n\n{HELP}");
            return ExitCode::from(2);
        }
    };
    let mut keys = matrix::rows();
    keys.retain(|k| {
        o.only.iter().all(|(f, v)| match (f.as_str(), v.as_str()) {
            ("set", "core") => matrix::core_row(k),
            ("set", _) => matrix::swinging_row(k),
            _ => k.matches(f, v),
        })
    });
    if keys.is_empty() {
        eprintln!("mempool_bench: the filter selects no row");
        return ExitCode::from(2);
    }
    if o.list {
        for k in &keys {
            println!("{}  ({})", k.filter(), k.describe());
        }
        return ExitCode::SUCCESS;
    }
    if let Err(e) = eal_init(&o.eal) {
        eprintln!("mempool_bench: {e}");
        return ExitCode::FAILURE;
    }
    // The reference only where DPDK's ops table has a slot left (see
    // bench::floor): otherwise its rows are left out, and the parameter line
    // says why.
    let mut floor = "not-asked".to_string();
    if o.handlers.iter().any(|h| h == bench::floor::NAME) {
        match bench::floor::register_if_room() {
            Ok(r) => {
                floor = r.field();
                if let bench::floor::Registration::NoRoom { used, max } = r {
                    eprintln!(
                        "mempool_bench: {} not registered: DPDK's mempool ops table holds {used} of \
                         its {max} handlers already; its rows are left out",
                        bench::floor::NAME
                    );
                    o.handlers.retain(|h| h != bench::floor::NAME);
                }
            }
            Err(e) => {
                eprintln!("mempool_bench: {e}");
                // SAFETY: EAL is up and nothing of it is in use.
                unsafe { sys::rte_eal_cleanup() };
                return ExitCode::FAILURE;
            }
        }
    }
    // Every other handler must be registered in this process (DPDK's ring,
    // stack and bucket drivers load from EAL's plugin directory): one that is
    // not is left out of its rows, and the CSV says why.
    let mut missing = Vec::new();
    o.handlers.retain(|h| {
        if !matrix::PEERS.contains(&h.as_str()) || pools::registered(h) {
            return true;
        }
        let why = format!(
            "not registered in this process (no mempool ops named {h}; its driver is not in \
             EAL's plugin directory or was not loaded)"
        );
        eprintln!("mempool_bench: {h} {why}: left out");
        missing.push((h.clone(), why));
        false
    });
    if o.handlers.is_empty() {
        eprintln!("mempool_bench: no handler left to run");
        // SAFETY: as above.
        unsafe { sys::rte_eal_cleanup() };
        return ExitCode::FAILURE;
    }
    let code = match run(&o, &keys, &floor, &missing) {
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

fn open_out(csv: Option<&str>) -> Result<Box<dyn Write>, String> {
    Ok(match csv {
        Some(p) => Box::new(
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| format!("{p}: {e}"))?,
        ),
        None => Box::new(std::io::stdout()),
    })
}

fn run(
    o: &Opts,
    keys: &[MempoolKey],
    floor: &str,
    missing: &[(String, String)],
) -> Result<(), String> {
    if let Some(k) = keys.iter().find(|k| k.bulk > MAX_BULK) {
        return Err(format!("{k}: bulk above {MAX_BULK}"));
    }
    let needed = keys
        .iter()
        .map(|k| matrix::pool_size_needed(k, HANDOFF_RING_SLOTS))
        .max()
        .unwrap_or(0);
    let pool_size = o.pool_size.unwrap_or(needed.max(16383));
    let mut bench = Bench::new(pool_size, plugin_path(&o.eal))?;
    if keys.iter().any(|k| k.lcores == 2) && !bench.has_worker() {
        return Err("two-lcore rows need a worker lcore: pass -l 0-1".into());
    }
    let out = open_out(o.csv.as_deref())?;
    let fits = |k: &MempoolKey| -> Vec<&str> {
        o.handlers
            .iter()
            .filter(|h| matrix::handler_fits(h, k))
            .map(String::as_str)
            .collect()
    };
    let per_round = |k: &MempoolKey| {
        let hs = fits(k);
        let peers = hs.iter().filter(|h| is_peer(h)).count();
        hs.len() - peers + peers.min(o.peers_per_round)
    };
    let total_runs: usize = keys.iter().map(|k| per_round(k) * o.rounds as usize).sum();
    // SAFETY: plain EAL queries.
    let (main_cpu, worker_cpu) = unsafe {
        (
            sys::rte_lcore_to_cpu_id(sys::rte_get_main_lcore() as c_int),
            if bench.has_worker() {
                sys::rte_lcore_to_cpu_id(bench.worker as c_int)
            } else {
                -1
            },
        )
    };
    eprintln!(
        "mempool_bench: {} rows, {} rounds of {} s, {} timed runs (about {:.0} s); pools of {pool_size} mbufs; \
         main lcore on CPU {main_cpu}, worker on CPU {worker_cpu}; TSC {:.2} GHz",
        keys.len(),
        o.rounds,
        o.secs,
        total_runs,
        total_runs as f64 * (o.secs + 0.01) + keys.len() as f64 * 2.5 * o.warmup,
        bench.tsc_hz / 1e9
    );
    let params = format!(
        "mempool_bench rounds={} secs={} warmup={} pool_size={pool_size} handoff_ring={HANDOFF_RING_SLOTS} \
         tsc_hz={:.0} main_cpu={main_cpu} worker_cpu={worker_cpu} floor_lifo={floor} peers_per_round={} placement={}",
        o.rounds,
        o.secs,
        o.warmup,
        bench.tsc_hz,
        o.peers_per_round,
        o.placement.describe()
    );
    let mut out = Writer::new(out, &[&params]).map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    for (i, key) in keys.iter().enumerate() {
        let skip = |out: &mut Out, h: &str, why: &str| {
            eprintln!("mempool_bench: {key}: {h} left out: {why}");
            emit(
                out,
                Record::Skipped(Skipped {
                    key: *key,
                    handler: h.to_string(),
                    reason: why.to_string(),
                }),
            )
        };
        for (h, why) in missing {
            if matrix::handler_fits(h, key) {
                skip(&mut out, h, why)?;
            }
        }
        // A peer whose run fails is left out of the rest of the row (the
        // report leaves it out of the whole row); every run has a fresh
        // pool, so a pool that lost objects is gone with its run.
        let mut failed: Vec<&str> = Vec::new();
        let mut hs = Vec::new();
        for h in fits(key) {
            // A pool the handler refuses (or that names other ops) leaves a
            // peer out of this row; ptr_ring and ring_mp_mc must run.
            match bench.pools.create(h, matrix::side(key, h)) {
                Ok(_) => hs.push(h),
                Err(e) if is_peer(h) => skip(&mut out, h, &e)?,
                Err(e) => return Err(e),
            }
        }
        if o.warmup > 0.0 {
            let mut kept = Vec::new();
            for h in hs {
                match bench.measure(key, h, o.warmup, o.placement.of(i + 1, 0)) {
                    Ok(_) => kept.push(h),
                    Err(e) if is_peer(h) => {
                        skip(&mut out, h, &format!("a run failed (warm-up): {e}"))?;
                    }
                    Err(e) => return Err(e),
                }
            }
            hs = kept;
        }
        // What a line moving between the two lcores costs around the
        // row's rounds (see line_trip.rs).
        let (worker, tsc_hz) = (bench.worker, bench.tsc_hz);
        let trip = || line_trip::round_trip_ns(worker, tsc_hz);
        let before_ns = if key.lcores == 2 { Some(trip()?) } else { None };
        let mut samples: HashMap<&str, Vec<(u32, f64)>> = HashMap::new();
        let mut shares = Vec::new();
        for round in 1..=o.rounds {
            let order = round_order(&hs, round, o.peers_per_round);
            for (pos, h) in order.iter().enumerate() {
                if failed.contains(h) {
                    continue;
                }
                let m = match bench.measure(key, h, o.secs, o.placement.of(i + 1, round)) {
                    Ok(m) => m,
                    Err(e) if is_peer(h) => {
                        skip(&mut out, h, &format!("a run failed in round {round}: {e}"))?;
                        failed.push(h);
                        samples.remove(*h);
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                emit(
                    &mut out,
                    Record::Mempool(MempoolRound {
                        key: *key,
                        handler: h.to_string(),
                        side: matrix::side(key, h),
                        round,
                        position: pos as u32 + 1,
                        rate: m.rate,
                        on_cpu: m.on_cpu,
                        handler_share: m.share,
                    }),
                )?;
                samples.entry(h).or_default().push((round, m.rate));
                if m.share >= 0.0 {
                    shares.push(m.share);
                }
            }
        }
        let trips = match before_ns {
            Some(before_ns) => {
                let t = LineTrip {
                    key: *key,
                    before_ns,
                    after_ns: trip()?,
                };
                emit(&mut out, Record::Line(t))?;
                Some(t)
            }
            None => None,
        };
        out.flush().map_err(|e| e.to_string())?;
        progress(
            i + 1,
            keys.len(),
            key,
            &hs,
            &samples,
            &notes(&shares, trips),
            t0.elapsed().as_secs_f64(),
        );
    }
    Ok(())
}

/// Where the records go.
type Out = Writer<Box<dyn Write>>;

fn emit(out: &mut Out, r: Record) -> Result<(), String> {
    out.write(&r).map_err(|e| e.to_string())
}

/// The end of a row's progress line: the median handler share, the line
/// round trip around the row.
fn notes(shares: &[f64], trips: Option<LineTrip>) -> String {
    let mut s = String::new();
    if let Some(m) = Summary::of(shares) {
        s.push_str(&format!(" | handler share {:.3}", m.median));
    }
    if let Some(t) = trips {
        s.push_str(&format!(
            " | line round trip {:.0} / {:.0} ns",
            t.before_ns, t.after_ns
        ));
    }
    s
}

/// One stderr line per row: median and ratio (paired, with its interval).
fn progress(
    done: usize,
    total: usize,
    key: &MempoolKey,
    hs: &[&str],
    samples: &HashMap<&str, Vec<(u32, f64)>>,
    notes: &str,
    elapsed: f64,
) {
    let mut line = format!("[{done:2}/{total}] {:<40}", key.to_string());
    for h in hs {
        let Some(v) = samples.get(h) else { continue };
        let rates: Vec<f64> = v.iter().map(|&(_, r)| r).collect();
        let Some(s) = Summary::of(&rates) else {
            continue;
        };
        line.push_str(&format!(" | {h} {:.1} M/s", s.median / 1e6));
        if *h != BASELINE {
            if let Some(p) = samples
                .get(BASELINE)
                .and_then(|b| Paired::of(&round_ratios(v, b)))
            {
                line.push_str(&format!(" {:.2}x [{:.2}-{:.2}]", p.median, p.lo, p.hi));
            }
        }
    }
    eprintln!("{line}{notes}  [{elapsed:.0} s]");
}
