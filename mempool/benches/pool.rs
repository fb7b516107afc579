//! The seed's three page_pool paths, on the pool core:
//!
//! Every case calls the pool the way the glue's `dequeue`/`enqueue`
//! callbacks do: one call per bulk that is not inlined into the loop, with
//! the lcore id known only at run time.
//!
//! * `fast_path/get_put_1`: get + put of one object on one lcore, served by
//!   its cache (the kernel's `tasklet_page_pool01_fast_path`, 14 cycles);
//!   `_inlined`: the same inlined into the bench loop, for reference.
//! * `ring_path/*`, per object through the ring (the kernel's
//!   `tasklet_page_pool02_ptr_ring`, 49 cycles):
//!   - `lcore0_get_lcore1_put`: one thread acting as two lcores in turn:
//!     lcore 0 allocates (its cache refills from the ring in bursts), lcore 1
//!     frees (its cache flushes to the ring in bulk): every object crosses
//!     the ring, as when RX and TX-completion run on different cores;
//!   - `lcore_get_shared_put`: one thread; the get is served by lcore 0's
//!     cache, refilled from the ring in bursts, the put goes straight into
//!     the ring on the shared path (a caller without a slot, `LCORE_ID_ANY`
//!     as on a non-EAL thread), like the kernel's bench (alloc from the
//!     cache, recycle into the ptr_ring);
//!   - `shared_get_shared_put`: one thread, the shared path both ways;
//!     `_32`: in bulks of 32 (per object), which amortises the shared
//!     counters' atomic RMW;
//!   - `cross_thread`: lcore 0 gets on one thread, hands objects over through
//!     a ring, lcore 1 puts them on another thread (its cache flushes to the
//!     pool ring), per object, handover included.
//! * the cost of inflight accounting: run the fast path with and without the
//!   `accounting` feature (`--no-default-features`); the bench id says which.
//! * `fast_path/get_put_1_validate`: the same with validation mode on, to
//!   show what the default (off) does not pay.
//!
//! After criterion, a TSC report runs each single-thread loop 20 M times and
//! prints ns and cycles per operation, with the measured TSC frequency.
//!
//! ```text
//! cargo bench -p mempool --bench pool -- --warm-up-time 1 --measurement-time 3
//! cargo bench -p mempool --bench pool --no-default-features -- --warm-up-time 1 --measurement-time 3
//! ROUNDS=5 mempool/benches/compare_accounting.sh   # both builds alternated, min per row
//! ```

use core::ffi::c_void;
use core::hint::black_box;
use core::ptr::null_mut;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use mempool::{ChunkSpec, HeapPool, HeapRing, PoolConfig, PoolCore, VirtAddr, VirtRange};

const OBJECTS: usize = 8192;
const BASE: usize = 0x7f00_0000_0000;
const STRIDE: usize = 2176; // an mbuf with a 2 KiB data room
const ACCOUNTING: &str = if mempool::ACCOUNTING {
    "accounting=on"
} else {
    "accounting=off"
};

fn pool(validate: bool) -> HeapPool {
    let pool = HeapPool::new(&PoolConfig {
        max_lcores: 128,
        cache_size: Some(128),
        validate,
        ..PoolConfig::new(OBJECTS)
    })
    .unwrap();
    pool.register_chunk(ChunkSpec {
        va: VirtRange::new(VirtAddr(BASE), OBJECTS * STRIDE),
        iova: None,
        first: VirtAddr(BASE + 64),
        stride: STRIDE,
        count: OBJECTS,
    })
    .unwrap();
    for i in 0..OBJECTS {
        pool.put_shared(&[(BASE + 64 + i * STRIDE) as *mut c_void])
            .unwrap();
    }
    pool
}

/// What the glue's `dequeue` callback does: one call that is not inlined
/// into the caller's loop (DPDK calls through a function pointer), the lcore
/// id known only at run time, a return code out (the glue maps errors to
/// an errno; these benches never fail).
#[inline(never)]
fn dequeue(pool: &PoolCore, lcore: u32, out: &mut [*mut c_void]) -> i32 {
    // SAFETY: each bench thread uses its own lcore ids, one call at a time.
    match unsafe { pool.get(lcore, out) } {
        Ok(()) => 0,
        Err(_) => -1,
    }
}

/// The glue's `enqueue` callback, likewise.
#[inline(never)]
fn enqueue(pool: &PoolCore, lcore: u32, objs: &[*mut c_void]) -> i32 {
    // SAFETY: as in `dequeue`.
    match unsafe { pool.put(lcore, objs) } {
        Ok(()) => 0,
        Err(_) => -1,
    }
}

/// Lcore ids the compiler cannot see through: lcore 0, lcore 1 and an id
/// without a slot (`LCORE_ID_ANY`, the shared path).
fn ids() -> (u32, u32, u32) {
    (black_box(0), black_box(1), black_box(u32::MAX))
}

/// Get + put of one object on lcore 0, through the callback-like calls.
#[inline(always)]
fn fast_path(pool: &PoolCore, l0: u32) {
    let mut o = [null_mut()];
    assert_eq!(dequeue(pool, l0, &mut o), 0);
    assert_eq!(enqueue(pool, l0, &o), 0);
}

/// The same, inlined into the bench loop (the compiler may then keep the
/// pool's configuration in registers across iterations).
#[inline(always)]
fn fast_path_inlined(pool: &PoolCore) {
    let mut o = [null_mut()];
    // SAFETY: the bench thread is the only user of lcore 0.
    unsafe {
        pool.get(0, black_box(&mut o)).unwrap();
        pool.put(0, black_box(&o)).unwrap();
    }
}

/// Lcore 0 allocates (its cache refills from the ring in bursts), lcore 1
/// frees (its cache flushes to the ring in bulk): one thread acting as both
/// in turn, every object crossing the ring.
#[inline(always)]
fn lcore0_get_lcore1_put(pool: &PoolCore, l0: u32, l1: u32) {
    let mut o = [null_mut()];
    assert_eq!(dequeue(pool, l0, &mut o), 0);
    assert_eq!(enqueue(pool, l1, &o), 0);
}

/// Lcore 0 allocates, a caller without a slot frees straight into the ring.
#[inline(always)]
fn lcore_get_shared_put(pool: &PoolCore, l0: u32, no_slot: u32) {
    let mut o = [null_mut()];
    assert_eq!(dequeue(pool, l0, &mut o), 0);
    assert_eq!(enqueue(pool, no_slot, &o), 0);
}

/// The shared path both ways: the ring and the shared counters, per object.
#[inline(always)]
fn shared_get_shared_put(pool: &PoolCore, no_slot: u32) {
    let mut o = [null_mut()];
    assert_eq!(dequeue(pool, no_slot, &mut o), 0);
    assert_eq!(enqueue(pool, no_slot, &o), 0);
}

/// The shared path both ways in bulks of 32.
#[inline(always)]
fn shared_get_shared_put_32(pool: &PoolCore, no_slot: u32) {
    let mut o = [null_mut(); 32];
    assert_eq!(dequeue(pool, no_slot, &mut o), 0);
    assert_eq!(enqueue(pool, no_slot, &o), 0);
}

/// `iters` objects got one at a time by lcore 0 on this thread and put one
/// at a time by lcore 1 on another (its cache flushes into the pool ring,
/// where lcore 0's refills find them). The handover between the threads
/// moves batches of 32 through a ring, so its cost is amortised. Returns the
/// elapsed time.
fn cross_thread(pool: &Arc<HeapPool>, iters: u64) -> Duration {
    const BATCH: usize = 32;
    let handover = Arc::new(HeapRing::with_capacity(1024).unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let consumer = {
        let (pool, handover, done) = (Arc::clone(pool), Arc::clone(&handover), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut buf = [null_mut(); BATCH];
            loop {
                let n = handover.dequeue_burst(&mut buf);
                if n == 0 {
                    if done.load(Ordering::Acquire) && handover.is_empty() {
                        return;
                    }
                    core::hint::spin_loop();
                    continue;
                }
                for o in &buf[..n] {
                    // SAFETY: this thread is the only user of lcore 1.
                    unsafe { pool.put(1, core::slice::from_ref(o)) }.unwrap();
                }
            }
        })
    };
    let t0 = Instant::now();
    let mut batch = [null_mut(); BATCH];
    let mut k = 0;
    for _ in 0..iters {
        // SAFETY: this thread is the only user of lcore 0.
        while unsafe { pool.get(0, &mut batch[k..k + 1]) }.is_err() {
            core::hint::spin_loop();
        }
        k += 1;
        if k == BATCH {
            while handover.enqueue_bulk(&batch).is_err() {
                core::hint::spin_loop();
            }
            k = 0;
        }
    }
    while handover.enqueue_bulk(&batch[..k]).is_err() {
        core::hint::spin_loop();
    }
    done.store(true, Ordering::Release);
    consumer.join().unwrap();
    let el = t0.elapsed();
    // Give both caches back so the next sample starts alike.
    // SAFETY: the consumer thread was joined; this thread is lcore 0.
    unsafe { pool.flush_all_quiescent() }.unwrap();
    el
}

fn benches(c: &mut Criterion) {
    let (l0, l1, no_slot) = ids();
    let p = pool(false);
    let mut g = c.benchmark_group("fast_path");
    g.throughput(Throughput::Elements(1));
    g.bench_function(format!("get_put_1/{ACCOUNTING}"), |b| {
        b.iter(|| fast_path(&p, l0))
    });
    g.bench_function(format!("get_put_1_inlined/{ACCOUNTING}"), |b| {
        b.iter(|| fast_path_inlined(&p))
    });
    let pv = pool(true);
    g.bench_function(format!("get_put_1_validate/{ACCOUNTING}"), |b| {
        b.iter(|| fast_path(&pv, l0))
    });
    g.finish();

    let mut g = c.benchmark_group("ring_path");
    g.throughput(Throughput::Elements(1));
    g.bench_function(format!("lcore0_get_lcore1_put/{ACCOUNTING}"), |b| {
        b.iter(|| lcore0_get_lcore1_put(&p, l0, l1))
    });
    g.bench_function(format!("lcore_get_shared_put/{ACCOUNTING}"), |b| {
        b.iter(|| lcore_get_shared_put(&p, l0, no_slot))
    });
    g.bench_function(format!("shared_get_shared_put/{ACCOUNTING}"), |b| {
        b.iter(|| shared_get_shared_put(&p, no_slot))
    });
    g.throughput(Throughput::Elements(32));
    g.bench_function(format!("shared_get_shared_put_32/{ACCOUNTING}"), |b| {
        b.iter(|| shared_get_shared_put_32(&p, no_slot))
    });
    g.throughput(Throughput::Elements(1));
    if std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2 {
        let shared = Arc::new(pool(false));
        g.bench_function(format!("cross_thread/{ACCOUNTING}"), |b| {
            b.iter_custom(|iters| cross_thread(&shared, iters))
        });
    }
    g.finish();
}

#[cfg(target_arch = "x86_64")]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC is available on every x86_64 CPU.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
fn rdtsc() -> u64 {
    0
}

/// TSC ticks per nanosecond, measured against the monotonic clock.
fn tsc_ghz() -> f64 {
    let (t0, c0) = (Instant::now(), rdtsc());
    std::thread::sleep(Duration::from_millis(200));
    let (t1, c1) = (Instant::now(), rdtsc());
    (c1 - c0) as f64 / (t1 - t0).as_nanos() as f64
}

/// Best of 5 runs of `n` calls: (ns, cycles) per call.
fn measure(n: u64, mut f: impl FnMut()) -> (f64, f64) {
    let mut best = (f64::MAX, f64::MAX);
    for _ in 0..5 {
        let (t0, c0) = (Instant::now(), rdtsc());
        for _ in 0..n {
            f();
        }
        let (c1, t1) = (rdtsc(), Instant::now());
        let ns = (t1 - t0).as_nanos() as f64 / n as f64;
        let cy = (c1 - c0) as f64 / n as f64;
        if cy < best.1 {
            best = (ns, cy);
        }
    }
    best
}

fn tsc_report() {
    if std::env::var_os("NO_TSC_REPORT").is_some() {
        return;
    }
    let ghz = tsc_ghz();
    println!("\nTSC report ({ACCOUNTING}): TSC {ghz:.3} GHz, best of 5 x 20M calls");
    let p = pool(false);
    let pv = pool(true);
    const N: u64 = 20_000_000;
    let (l0, l1, no_slot) = ids();
    for (name, per, (ns, cy)) in [
        (
            "fast_path/get_put_1",
            "get+put",
            measure(N, || fast_path(&p, l0)),
        ),
        (
            "fast_path/get_put_1_inlined",
            "get+put",
            measure(N, || fast_path_inlined(&p)),
        ),
        (
            "fast_path/get_put_1_validate",
            "get+put",
            measure(N / 4, || fast_path(&pv, l0)),
        ),
        (
            "ring_path/lcore0_get_lcore1_put",
            "object",
            measure(N, || lcore0_get_lcore1_put(&p, l0, l1)),
        ),
        (
            "ring_path/lcore_get_shared_put",
            "object",
            measure(N, || lcore_get_shared_put(&p, l0, no_slot)),
        ),
        (
            "ring_path/shared_get_shared_put",
            "object",
            measure(N, || shared_get_shared_put(&p, no_slot)),
        ),
    ] {
        println!("  {name:32} {ns:7.2} ns {cy:7.1} cycles per {per}");
    }
    let (ns, cy) = measure(N / 32, || shared_get_shared_put_32(&p, no_slot));
    println!(
        "  {:32} {:7.2} ns {:7.1} cycles per object (bulks of 32)",
        "ring_path/shared_get_shared_put_32",
        ns / 32.0,
        cy / 32.0
    );
    // Floor: the bare ring (ptr_ring.rs) the ring path runs through.
    let ring = HeapRing::with_capacity(OBJECTS).unwrap();
    let one = [BASE as *mut c_void];
    let (ns, cy) = measure(N, || {
        ring.enqueue_bulk(black_box(&one)).unwrap();
        let mut o = [null_mut()];
        ring.dequeue_bulk(black_box(&mut o)).unwrap();
    });
    println!(
        "  {:32} {ns:7.2} ns {cy:7.1} cycles per object (reference)",
        "bare_ring/enqueue+dequeue_1"
    );
    let shared = Arc::new(pool(false));
    let n = 5_000_000;
    let (c0, el, c1) = (rdtsc(), cross_thread(&shared, n), rdtsc());
    println!(
        "  {:32} {:7.2} ns {:7.1} cycles per object (2 threads, handover incl.)",
        "ring_path/cross_thread",
        el.as_nanos() as f64 / n as f64,
        (c1 - c0) as f64 / n as f64
    );
}

fn main() {
    // TSC_ONLY=1: skip criterion, print the TSC report only (used by
    // `benches/compare_accounting.sh` to alternate the two builds).
    if std::env::var_os("TSC_ONLY").is_none() {
        let mut c = Criterion::default().configure_from_args();
        benches(&mut c);
        c.final_summary();
    }
    tsc_report();
}
