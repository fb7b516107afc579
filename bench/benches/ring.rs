//! Ring micro-benchmarks: the `mempool` ptr_ring, in
//! its default multi-producer/multi-consumer mode (`ptr_ring`, locks) and in
//! its single-producer/single-consumer mode (`ptr_ring_spsc`, no locks), next
//! to DPDK's `rte_ring` (SP/SC and MP/MC) and crossbeam's `ArrayQueue`, in the
//! same process and run. The honest pairs are `ptr_ring` vs `rte_mp_mc` and
//! `ptr_ring_spsc` vs `rte_sp_sc`: each is used exactly as its mode allows
//! (one producer thread and one consumer thread at a time in the SP/SC
//! cases).
//!
//! * `ring_1t/<contender>/<bulk>`: one thread (pinned to CPU 0), one
//!   enqueue of `bulk` objects followed by one dequeue of `bulk` objects per
//!   iteration, on an empty ring. Throughput is in objects (each object is
//!   enqueued once and dequeued once).
//! * `ring_2t/<contender>/<bulk>`: one producer pinned to CPU 0, one consumer
//!   pinned to CPU 1 (the shape of the kernel's `ptr_ring_test -s 1000 -m 1`),
//!   ring size ~1000, [`OBJS_2T`] objects moved per iteration
//!   (`iter_custom`: the time from the producer's start to the consumer
//!   having taken the last object). The producer spins while the ring is
//!   full, the consumer while it is empty, with a `pause` (`spin_loop`)
//!   after each failed try (`RING_PAUSE=0`: plain busy retry).
//!
//! Every contender holds about 1000 objects: ptr_ring capacity 1000 (1024
//! slots, invalidation batch 16; `ptr_ring_spsc` the same layout with
//! `with_single_producer(true).with_single_consumer(true)`);
//! `rte_ring_create(1024)` (1023 usable);
//! `ArrayQueue::new(1024)`. DPDK rings are driven through the explicit
//! `sp/sc` and `mp/mc` bulk calls (no run-time sync-type switch) of rings
//! created with `RING_F_SP_ENQ | RING_F_SC_DEQ` and `0` respectively. Those
//! calls are DPDK `static inline` functions reached through dpdk-sys's C
//! wrappers: one extra direct call per operation that the inlined Rust
//! contenders do not pay. An `ArrayQueue` "bulk" is a loop of `push`/`pop`.
//!
//! After criterion, a second pass ("rounds") measures every configuration
//! again in rounds that alternate the contenders (the order rotates each
//! round), so that slow phases of a shared machine hit all of them alike; it
//! prints median/min/max ns per object and the per-round paired ratios of
//! `ptr_ring` and of `ptr_ring_spsc` against every contender, and for two
//! threads the failed polls
//! (producer found the ring full, consumer found it empty) per bulk and the
//! cross-core cache-line round trip measured before each round (the host
//! decides it, and every two-thread number scales with it). Results and
//! analysis: `bench/RING-RESULTS.md`.
//!
//! Environment:
//! * `RING_ROUNDS` (default 9; 0 skips the rounds pass; skipped as well under
//!   criterion's `--list`, `--test` and `--profile-time`);
//! * `RING_PROFILE=<1t|2t>/<bulk>/<contender>[/<seconds>]`: run only that one
//!   configuration in a loop for the given time (default 5 s) and exit, for
//!   `perf stat` / `valgrind` (e.g. `RING_PROFILE=2t/32/ptr_ring_spsc/5`);
//! * `RING_PAUSE=0`: no `pause` after a failed try (default: pause, as a
//!   kernel `cpu_relax()` / DPDK `rte_pause()` spin would);
//! * `RING_EAL_ARGS`: EAL arguments replacing the default (memory arguments
//!   from `build/eal-mem.env`, `--no-pci --no-telemetry -l 0
//!   --log-level=lib.eal:error`). Without EAL the DPDK contenders are
//!   skipped, with a message.

use std::ffi::{c_char, c_void, CString};
use std::hint::{black_box, spin_loop};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput};
use crossbeam_queue::ArrayQueue;
use dpdk_sys as sys;
use mempool::{HeapRing, RingLayout};

/// Objects each ring must hold (the selftest's `-s 1000`).
const RING_OBJS: usize = 1000;
/// Size passed to `rte_ring_create` / `ArrayQueue::new` (power of two >= RING_OBJS).
const RING_POW2: usize = 1024;
/// Bulk sizes measured.
const BULKS: [usize; 2] = [1, 32];
/// Largest bulk (buffer size).
const MAX_BULK: usize = 32;
/// Objects moved per iteration of a two-thread benchmark.
const OBJS_2T: u64 = 1 << 18;
/// Objects per measurement of the one-thread rounds pass.
const ROUND_OBJS_1T: u64 = 1 << 22;
/// Objects per measurement of the two-thread rounds pass.
const ROUND_OBJS_2T: u64 = 1 << 19;
/// CPUs of the producer (and of every one-thread benchmark) and the consumer.
const PRODUCER_CPU: usize = 0;
const CONSUMER_CPU: usize = 1;

/// Whether a failed try is followed by a `pause` (`spin_loop`); see
/// `RING_PAUSE` in the module documentation.
static PAUSE: AtomicBool = AtomicBool::new(true);

/// Called after every failed try, by every contender alike.
#[inline(always)]
fn backoff() {
    if PAUSE.load(Ordering::Relaxed) {
        spin_loop();
    }
}

/// Calls `attempt` until it succeeds, backing off after each failure;
/// returns the number of failures. The one retry loop of every contender.
#[inline(always)]
fn retry(mut attempt: impl FnMut() -> bool) -> u64 {
    let mut fails = 0;
    while !attempt() {
        fails += 1;
        backoff();
    }
    fails
}

/// A ring under test. Every method moves all of its objects before
/// returning, spinning while the ring cannot take or give them, and returns
/// how many tries failed.
trait Contender: Sync {
    /// Enqueues all of `objs`.
    fn put(&self, objs: &[*mut c_void]) -> u64;
    /// Dequeues exactly `out.len()` objects into `out`.
    fn get(&self, out: &mut [*mut c_void]) -> u64;
}

/// This crate's ptr_ring (heap-backed), all-or-nothing bulks; the ring's
/// mode (MP/MC or SP/SC) is set when it is built.
struct Ours(HeapRing);

impl Contender for Ours {
    #[inline(always)]
    fn put(&self, objs: &[*mut c_void]) -> u64 {
        retry(|| self.0.enqueue_bulk(objs).is_ok())
    }
    #[inline(always)]
    fn get(&self, out: &mut [*mut c_void]) -> u64 {
        retry(|| self.0.dequeue_bulk(out).is_ok())
    }
}

/// A DPDK ring created by `rte_ring_create`, never freed (EAL lives for the
/// whole process).
struct RteRing(*mut sys::rte_ring);

// SAFETY: rte_ring is a shared-memory structure built for concurrent use from
// any thread (the SP/SC one by one producer and one consumer thread, which is
// how the benchmarks use it); the pointer stays valid for the process.
unsafe impl Sync for RteRing {}
// SAFETY: as above.
unsafe impl Send for RteRing {}

impl RteRing {
    fn create(name: &str, flags: u32) -> Option<RteRing> {
        let cname = CString::new(name).expect("ring name without NUL");
        // SAFETY: EAL is initialised (the caller checked); `cname` is a valid
        // C string for the call; DPDK copies the name.
        let r = unsafe {
            sys::rte_ring_create(cname.as_ptr(), RING_POW2 as u32, sys::SOCKET_ID_ANY, flags)
        };
        if r.is_null() {
            eprintln!(
                "ring bench: rte_ring_create({name}) failed: rte_errno {}",
                sys::errno()
            );
            None
        } else {
            Some(RteRing(r))
        }
    }
}

/// `rte_ring` with `RING_F_SP_ENQ | RING_F_SC_DEQ`, driven by the `sp`/`sc` calls.
struct RteSpSc(RteRing);
/// `rte_ring` with flags 0, driven by the `mp`/`mc` calls.
struct RteMpMc(RteRing);

impl Contender for RteSpSc {
    #[inline(always)]
    fn put(&self, objs: &[*mut c_void]) -> u64 {
        let n = objs.len() as u32;
        // SAFETY: a live ring; `objs` holds `n` readable pointers; one
        // producer thread at a time (the SP contract).
        retry(|| unsafe {
            sys::rte_ring_sp_enqueue_bulk(self.0 .0, objs.as_ptr(), n, core::ptr::null_mut()) == n
        })
    }
    #[inline(always)]
    fn get(&self, out: &mut [*mut c_void]) -> u64 {
        let n = out.len() as u32;
        // SAFETY: a live ring; `out` has room for `n` pointers; one consumer
        // thread at a time (the SC contract).
        retry(|| unsafe {
            sys::rte_ring_sc_dequeue_bulk(self.0 .0, out.as_mut_ptr(), n, core::ptr::null_mut())
                == n
        })
    }
}

impl Contender for RteMpMc {
    #[inline(always)]
    fn put(&self, objs: &[*mut c_void]) -> u64 {
        let n = objs.len() as u32;
        // SAFETY: a live ring; `objs` holds `n` readable pointers.
        retry(|| unsafe {
            sys::rte_ring_mp_enqueue_bulk(self.0 .0, objs.as_ptr(), n, core::ptr::null_mut()) == n
        })
    }
    #[inline(always)]
    fn get(&self, out: &mut [*mut c_void]) -> u64 {
        let n = out.len() as u32;
        // SAFETY: a live ring; `out` has room for `n` pointers.
        retry(|| unsafe {
            sys::rte_ring_mc_dequeue_bulk(self.0 .0, out.as_mut_ptr(), n, core::ptr::null_mut())
                == n
        })
    }
}

/// crossbeam's bounded MPMC queue; a bulk is a loop of single pushes/pops.
/// Holds the objects as `usize` (raw pointers are not `Send`).
struct Crossbeam(ArrayQueue<usize>);

impl Contender for Crossbeam {
    #[inline(always)]
    fn put(&self, objs: &[*mut c_void]) -> u64 {
        objs.iter()
            .map(|&o| {
                let mut v = o as usize;
                retry(|| match self.0.push(v) {
                    Ok(()) => true,
                    Err(back) => {
                        v = back;
                        false
                    }
                })
            })
            .sum()
    }
    #[inline(always)]
    fn get(&self, out: &mut [*mut c_void]) -> u64 {
        out.iter_mut()
            .map(|o| {
                retry(|| match self.0.pop() {
                    Some(v) => {
                        *o = v as *mut c_void;
                        true
                    }
                    None => false,
                })
            })
            .sum()
    }
}

/// Pins the calling thread to `cpu` (ignored, with a note, if that fails:
/// the numbers are then less stable, not wrong).
fn pin(cpu: usize) {
    // SAFETY: `cpu_set_t` is plain data, valid zeroed; CPU_SET indexes within
    // it (cpu < CPU_SETSIZE) and sched_setaffinity only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = core::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            eprintln!(
                "ring bench: cannot pin to CPU {cpu}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

#[path = "../../scripts/eal_mem.rs"]
mod eal_mem_file;

/// The EAL arguments: `RING_EAL_ARGS`, or the memory mode of
/// `build/eal-mem.env` plus a minimal single-lcore set-up.
fn eal_args() -> Vec<String> {
    if let Ok(a) = std::env::var("RING_EAL_ARGS") {
        let mut v = vec!["ring-bench".to_string()];
        v.extend(a.split_whitespace().map(String::from));
        return v;
    }
    let mut v = vec!["ring-bench".to_string()];
    v.extend(eal_mem_file::eal_mem().args);
    v.extend(
        [
            "--no-pci",
            "--no-telemetry",
            "-l",
            "0",
            "--log-level=lib.eal:error",
        ]
        .map(String::from),
    );
    v
}

/// Initialises EAL once; `false` (with a message) when it cannot.
fn init_eal() -> bool {
    let args = eal_args();
    // EAL may keep pointers into argv: leak the strings.
    let mut ptrs: Vec<*mut c_char> = args
        .iter()
        .map(|a| {
            CString::new(a.as_str())
                .expect("EAL arg without NUL")
                .into_raw()
        })
        .collect();
    ptrs.push(core::ptr::null_mut());
    let argv = Box::leak(ptrs.into_boxed_slice());
    // SAFETY: argc/argv describe NUL-terminated strings that live for the
    // process; EAL is initialised at most once (only here).
    let r = unsafe { sys::rte_eal_init(args.len() as i32, argv.as_mut_ptr()) };
    if r < 0 {
        eprintln!(
            "ring bench: rte_eal_init({args:?}) failed (rte_errno {}): rte_ring contenders skipped",
            sys::errno()
        );
        return false;
    }
    eprintln!("ring bench: EAL up with {args:?}");
    true
}

/// Objects `1..=MAX_BULK` as pointers.
fn objects() -> [*mut c_void; MAX_BULK] {
    core::array::from_fn(|i| (i + 1) as *mut c_void)
}

/// One thread: `iters` times, enqueue `bulk` objects and dequeue them again.
#[inline(never)]
fn run_1t<R: Contender>(r: &R, bulk: usize, iters: u64) -> Duration {
    let objs = objects();
    let mut out = [core::ptr::null_mut(); MAX_BULK];
    let objs = black_box(&objs[..bulk]);
    let start = Instant::now();
    for _ in 0..iters {
        r.put(objs);
        r.get(&mut out[..bulk]);
        black_box(&out);
    }
    start.elapsed()
}

/// Result of one two-thread run.
struct PairRun {
    elapsed: Duration,
    /// Failed enqueue tries (ring full).
    put_fails: u64,
    /// Failed dequeue tries (ring empty).
    get_fails: u64,
    /// Involuntary context switches of the two threads during the run: a
    /// run with any was disturbed by another process (its partner then spins
    /// for a whole time slice).
    preempted: u64,
}

/// Involuntary context switches of the calling thread so far.
fn involuntary_switches() -> u64 {
    // SAFETY: `rusage` is plain data, valid zeroed; getrusage writes it.
    unsafe {
        let mut ru: libc::rusage = core::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_THREAD, &mut ru) != 0 {
            return 0;
        }
        ru.ru_nivcsw as u64
    }
}

/// Two threads: a producer on [`PRODUCER_CPU`] enqueues objects `1..=total`
/// in bulks of `bulk`, a consumer on [`CONSUMER_CPU`] dequeues them in bulks
/// of `bulk` and checks their sum. Time from the producer's start to the
/// consumer's last dequeue. `total` is a multiple of `bulk`.
fn run_2t<R: Contender>(r: &R, bulk: usize, total: u64) -> PairRun {
    assert_eq!(total % bulk as u64, 0);
    let start = Barrier::new(2);
    let (t0, put_fails, pre, (t1, get_fails, sum, cpre)) = std::thread::scope(|s| {
        let consumer = s.spawn(|| {
            pin(CONSUMER_CPU);
            let mut out = [core::ptr::null_mut(); MAX_BULK];
            let out = &mut out[..bulk];
            let mut sum = 0u64;
            let mut fails = 0u64;
            let mut got = 0u64;
            start.wait();
            let nivcsw = involuntary_switches();
            while got < total {
                fails += r.get(out);
                for &o in out.iter() {
                    sum = sum.wrapping_add(o as u64);
                }
                got += bulk as u64;
            }
            let t1 = Instant::now();
            (t1, fails, sum, involuntary_switches() - nivcsw)
        });
        pin(PRODUCER_CPU);
        let mut objs = [core::ptr::null_mut(); MAX_BULK];
        let objs = &mut objs[..bulk];
        let mut next = 1u64;
        let mut fails = 0u64;
        start.wait();
        let t0 = Instant::now();
        let nivcsw = involuntary_switches();
        while next <= total {
            for o in objs.iter_mut() {
                *o = next as *mut c_void;
                next += 1;
            }
            fails += r.put(objs);
        }
        let pre = involuntary_switches() - nivcsw;
        (t0, fails, pre, consumer.join().expect("consumer thread"))
    });
    assert_eq!(sum, total * (total + 1) / 2, "objects lost or duplicated");
    PairRun {
        elapsed: t1.saturating_duration_since(t0),
        put_fails,
        get_fails,
        preempted: pre + cpre,
    }
}

/// The rings of one run.
struct Contenders {
    /// MP/MC mode (producer and consumer locks), the default.
    ours: Ours,
    /// SP/SC mode (no locks): DPDK's `RING_F_SP_ENQ | RING_F_SC_DEQ`.
    ours_spsc: Ours,
    sp_sc: Option<RteSpSc>,
    mp_mc: Option<RteMpMc>,
    crossbeam: Crossbeam,
}

impl Contenders {
    fn new(eal: bool) -> Contenders {
        let layout = RingLayout::for_capacity(RING_OBJS).expect("ptr_ring of 1000");
        let ours = Ours(HeapRing::new(layout));
        // SAFETY: the SP/SC contenders run one producer and one consumer
        // thread at most (the two-thread cases: one of each).
        let spsc = unsafe { layout.with_single_producer(true).with_single_consumer(true) };
        let ours_spsc = Ours(HeapRing::new(spsc));
        assert!(ours.0.capacity() >= RING_OBJS);
        assert!(!ours.0.is_single_producer() && !ours.0.is_single_consumer());
        assert!(ours_spsc.0.is_single_producer() && ours_spsc.0.is_single_consumer());
        Contenders {
            ours,
            ours_spsc,
            sp_sc: eal
                .then(|| RteRing::create("bench_sp_sc", sys::RING_F_SP_ENQ | sys::RING_F_SC_DEQ))
                .flatten()
                .map(RteSpSc),
            mp_mc: eal
                .then(|| RteRing::create("bench_mp_mc", 0))
                .flatten()
                .map(RteMpMc),
            crossbeam: Crossbeam(ArrayQueue::new(RING_POW2)),
        }
    }

    /// Calls `f` with every contender present, in a fixed order (the two
    /// ptr_ring modes first: the rounds pass compares against them).
    fn each<'a>(&'a self, f: &mut dyn FnMut(&'static str, &'a dyn Runner)) {
        f("ptr_ring", &self.ours);
        f("ptr_ring_spsc", &self.ours_spsc);
        if let Some(r) = &self.sp_sc {
            f("rte_sp_sc", r);
        }
        if let Some(r) = &self.mp_mc {
            f("rte_mp_mc", r);
        }
        f("array_queue", &self.crossbeam);
    }
}

/// Object-safe entry points into the monomorphic loops (the dynamic call is
/// once per measurement, never per operation).
trait Runner: Sync {
    fn one_thread(&self, bulk: usize, iters: u64) -> Duration;
    fn two_threads(&self, bulk: usize, total: u64) -> PairRun;
}

impl<R: Contender> Runner for R {
    fn one_thread(&self, bulk: usize, iters: u64) -> Duration {
        run_1t(self, bulk, iters)
    }
    fn two_threads(&self, bulk: usize, total: u64) -> PairRun {
        run_2t(self, bulk, total)
    }
}

fn bench_1t(c: &mut Criterion, set: &Contenders) {
    let mut g: BenchmarkGroup<'_, WallTime> = c.benchmark_group("ring_1t");
    for bulk in BULKS {
        g.throughput(Throughput::Elements(bulk as u64));
        set.each(&mut |name, r| {
            g.bench_with_input(BenchmarkId::new(name, bulk), &bulk, |b, &bulk| {
                b.iter_custom(|iters| r.one_thread(bulk, iters));
            });
        });
    }
    g.finish();
}

fn bench_2t(c: &mut Criterion, set: &Contenders) {
    let mut g = c.benchmark_group("ring_2t");
    g.sample_size(10);
    g.throughput(Throughput::Elements(OBJS_2T));
    for bulk in BULKS {
        set.each(&mut |name, r| {
            g.bench_with_input(BenchmarkId::new(name, bulk), &bulk, |b, &bulk| {
                b.iter_custom(|iters| r.two_threads(bulk, iters * OBJS_2T).elapsed);
            });
        });
    }
    g.finish();
}

/// One measurement of the rounds pass.
struct Sample {
    /// Nanoseconds per object.
    ns: f64,
    /// Failed enqueue tries per bulk enqueue (two threads only).
    put_polls: f64,
    /// Failed dequeue tries per bulk dequeue (two threads only).
    get_polls: f64,
    /// Involuntary context switches during the measurement.
    preempted: u64,
}

fn measure(r: &dyn Runner, threads: usize, bulk: usize) -> Sample {
    if threads == 1 {
        let iters = ROUND_OBJS_1T / bulk as u64;
        let before = involuntary_switches();
        let d = r.one_thread(bulk, iters);
        Sample {
            ns: d.as_nanos() as f64 / ROUND_OBJS_1T as f64,
            put_polls: 0.0,
            get_polls: 0.0,
            preempted: involuntary_switches() - before,
        }
    } else {
        let p = r.two_threads(bulk, ROUND_OBJS_2T);
        let ops = (ROUND_OBJS_2T / bulk as u64) as f64;
        Sample {
            ns: p.elapsed.as_nanos() as f64 / ROUND_OBJS_2T as f64,
            put_polls: p.put_fails as f64 / ops,
            get_polls: p.get_fails as f64 / ops,
            preempted: p.preempted,
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Round trip of one cache line between [`PRODUCER_CPU`] and
/// [`CONSUMER_CPU`] in ns (median of 5 runs of 10^4 round trips): the
/// machine's cost of moving a line between the two cores at that moment,
/// the unit every two-thread result is built of.
fn cross_core_round_trip() -> f64 {
    const N: u64 = 10_000;
    #[repr(align(128))]
    struct Line(AtomicU64);
    let mut runs: Vec<f64> = (0..5)
        .map(|_| {
            let line = Line(AtomicU64::new(0));
            std::thread::scope(|s| {
                s.spawn(|| {
                    pin(CONSUMER_CPU);
                    for i in 0..N {
                        // Acquire/Release: a plain ping-pong; the orderings
                        // only keep the loop honest.
                        while line.0.load(Ordering::Acquire) != 2 * i + 1 {}
                        line.0.store(2 * i + 2, Ordering::Release);
                    }
                });
                pin(PRODUCER_CPU);
                let t0 = Instant::now();
                for i in 0..N {
                    line.0.store(2 * i + 1, Ordering::Release);
                    while line.0.load(Ordering::Acquire) != 2 * i + 2 {}
                }
                t0.elapsed().as_nanos() as f64 / N as f64
            })
        })
        .collect();
    median(&mut runs)
}

/// The rounds pass: each configuration, `rounds` rounds, every contender once
/// per round in an order that rotates by one each round.
fn rounds(set: &Contenders, rounds: usize) {
    let mut names: Vec<&'static str> = Vec::new();
    let mut runners: Vec<&dyn Runner> = Vec::new();
    set.each(&mut |n, r| {
        names.push(n);
        runners.push(r);
    });
    let m = names.len();
    println!("\n## rounds: {rounds} rounds per configuration, contender order rotating\n");
    for (threads, bulk) in [(1, 1), (1, 32), (2, 1), (2, 32)] {
        let mut samples: Vec<Vec<Sample>> = (0..m).map(|_| Vec::new()).collect();
        let mut rtt = Vec::new();
        for round in 0..rounds {
            if threads == 2 {
                rtt.push(cross_core_round_trip());
            }
            for k in 0..m {
                let i = (round + k) % m;
                samples[i].push(measure(runners[i], threads, bulk));
            }
        }
        println!("### {threads} thread(s), bulk {bulk}\n");
        if !rtt.is_empty() {
            let med = median(&mut rtt);
            println!(
                "cross-core cache-line round trip before each round: median {med:.0} ns \
                 (min {:.0}, max {:.0})\n",
                rtt[0],
                rtt[rtt.len() - 1]
            );
        }
        println!(
            "| contender | median ns/obj | min | max | median Mobj/s | ptr_ring speed-up: \
             median of per-round ratios (min–max) | ptr_ring_spsc speed-up (min–max) | \
             full polls/put | empty polls/get | runs with an involuntary context switch |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|");
        // Speed-up of contender `base` over contender `i`: median (min–max)
        // of the per-round ratios time(i) / time(base).
        let speedup = |i: usize, base: usize| -> String {
            let mut ratio: Vec<f64> = (0..rounds)
                .map(|j| samples[i][j].ns / samples[base][j].ns)
                .collect();
            let rmed = median(&mut ratio);
            format!("{rmed:.2}x ({:.2}–{:.2})", ratio[0], ratio[ratio.len() - 1])
        };
        let base = |name: &str| names.iter().position(|&n| n == name);
        let (plain, spsc) = (base("ptr_ring"), base("ptr_ring_spsc"));
        for i in 0..m {
            let col =
                |f: &dyn Fn(&Sample) -> f64| -> Vec<f64> { samples[i].iter().map(f).collect() };
            let mut ns = col(&|s| s.ns);
            let med = median(&mut ns);
            println!(
                "| {} | {:.2} | {:.2} | {:.2} | {:.1} | {} | {} | {:.2} | {:.2} | {}/{} |",
                names[i],
                med,
                ns[0],
                ns[ns.len() - 1],
                1e3 / med,
                plain.map_or("–".into(), |b| speedup(i, b)),
                spsc.map_or("–".into(), |b| speedup(i, b)),
                median(&mut col(&|s| s.put_polls)),
                median(&mut col(&|s| s.get_polls)),
                samples[i].iter().filter(|s| s.preempted > 0).count(),
                rounds,
            );
        }
        println!();
    }
}

/// `RING_PROFILE=<1t|2t>/<bulk>/<contender>[/<seconds>]`.
fn profile(set: &Contenders, spec: &str) {
    let parts: Vec<&str> = spec.split('/').collect();
    let (threads, bulk, name) = match parts[..] {
        [t, b, n] | [t, b, n, _] => (t, b.parse::<usize>().expect("bulk"), n),
        _ => panic!("RING_PROFILE=<1t|2t>/<bulk>/<contender>[/<seconds>], got {spec}"),
    };
    assert!((1..=MAX_BULK).contains(&bulk), "bulk 1..={MAX_BULK}");
    let secs: f64 = parts.get(3).map_or(5.0, |s| s.parse().expect("seconds"));
    let threads = match threads {
        "1t" => 1,
        "2t" => 2,
        t => panic!("threads {t}: 1t or 2t"),
    };
    let mut found = false;
    set.each(&mut |n, r| {
        if n != name {
            return;
        }
        found = true;
        let deadline = Instant::now() + Duration::from_secs_f64(secs);
        let mut all = Vec::new();
        while Instant::now() < deadline {
            all.push(measure(r, threads, bulk).ns);
        }
        let runs = all.len();
        let med = median(&mut all);
        println!(
            "profile {threads}t/{bulk}/{name}: {runs} runs, ns/obj min {:.2} median {med:.2} max {:.2}",
            all[0],
            all[runs - 1]
        );
        if std::env::var_os("RING_PROFILE_ALL").is_some() {
            println!("{all:.2?}");
        }
    });
    assert!(
        found,
        "no contender {name} (ptr_ring, ptr_ring_spsc, rte_sp_sc, rte_mp_mc, array_queue)"
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let listing = args.iter().any(|a| a == "--list");
    let eal = !listing && init_eal();
    pin(PRODUCER_CPU);
    let pause = std::env::var("RING_PAUSE").map_or(true, |v| v != "0");
    PAUSE.store(pause, Ordering::Relaxed);
    eprintln!(
        "ring bench: failed tries {} pause",
        if pause { "do" } else { "do not" }
    );
    let set = Contenders::new(eal);
    eprintln!(
        "ring bench: ptr_ring header at {:p}, ptr_ring_spsc at {:p} ({} bytes each)",
        &*set.ours.0 as *const mempool::PtrRing,
        &*set.ours_spsc.0 as *const mempool::PtrRing,
        RingLayout::for_capacity(RING_OBJS).map_or(0, |l| l.bytes())
    );
    if let Ok(spec) = std::env::var("RING_PROFILE") {
        profile(&set, &spec);
        return;
    }
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30)
        .configure_from_args();
    bench_1t(&mut c, &set);
    bench_2t(&mut c, &set);
    c.final_summary();
    let skip = args
        .iter()
        .any(|a| a == "--list" || a == "--test" || a == "--profile-time");
    let n: usize = std::env::var("RING_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(9);
    if !skip && n > 0 {
        rounds(&set, n);
    }
}
