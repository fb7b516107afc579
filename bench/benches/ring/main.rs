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
//!
//! The code: [`contenders`] (the rings and their one retry loop), [`loops`]
//! (the one-thread and two-thread loops), [`rounds`] (the rounds pass and
//! `RING_PROFILE`), [`eal`]; the criterion groups and `main` here.

mod contenders;
mod eal;
mod loops;
mod rounds;

use std::sync::atomic::Ordering;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, BenchmarkId, Criterion, Throughput};
use mempool::RingLayout;

use contenders::{Contenders, PAUSE};
use eal::init_eal;
use loops::pin;
use rounds::{profile, rounds};

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
