//! The ring's single-producer / single-consumer modes (DPDK's
//! `RING_F_SP_ENQ` / `RING_F_SC_DEQ`): edge cases and wrap-around in every
//! mode, a model-based check against a `VecDeque`, the slice split at the
//! wrap point, the pool flags reaching the pool's ring (and only through
//! `unsafe` code), and a one-producer one-consumer stress test of the
//! lockless mode.
#![cfg(not(loom))]

mod common;

use core::ffi::c_void;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use mempool::{HeapPool, HeapRing, PoolConfig, RingError, RingLayout};

fn obj(i: usize) -> *mut c_void {
    // Never dereferenced: the ring only stores addresses.
    (i + 1) as *mut c_void
}

fn idx(p: *mut c_void) -> usize {
    p as usize - 1
}

/// (single_producer, single_consumer) for every mode.
const MODES: [(bool, bool); 4] = [(false, false), (true, true), (true, false), (false, true)];

/// Every ring built from these layouts in this file keeps the contract of
/// the single-sided modes: each test uses a single-sided side from one
/// thread at a time (one producer thread and one consumer thread at most).
fn layout(cap: usize, batch: usize, (sp, sc): (bool, bool)) -> RingLayout {
    // SAFETY: see above.
    unsafe {
        RingLayout::with_batch(cap, batch)
            .unwrap()
            .with_single_producer(sp)
            .with_single_consumer(sc)
    }
}

#[test]
fn flags_default_off_and_reach_the_ring() {
    let l = RingLayout::for_capacity(100).unwrap();
    assert!(!l.single_producer() && !l.single_consumer());
    let r = HeapRing::new(l);
    assert!(!r.is_single_producer() && !r.is_single_consumer());
    let base = RingLayout::with_batch(100, 16).unwrap();
    for mode in MODES {
        let l = layout(100, 16, mode);
        // The mode changes nothing of the size and shape.
        assert_eq!(
            (l.capacity(), l.batch(), l.slots(), l.bytes(), l.align()),
            (
                base.capacity(),
                base.batch(),
                base.slots(),
                base.bytes(),
                base.align()
            )
        );
        let r = HeapRing::new(l);
        assert_eq!((r.is_single_producer(), r.is_single_consumer()), mode);
    }
}

/// A small pool's configuration with the single-sided flags of `mode`.
fn flagged((sp, sc): (bool, bool)) -> PoolConfig {
    PoolConfig {
        single_producer: sp,
        single_consumer: sc,
        max_lcores: 2,
        ..PoolConfig::new(100)
    }
}

#[test]
fn pool_config_flags_reach_the_ring() {
    let c = PoolConfig::new(100);
    assert!(!c.single_producer && !c.single_consumer);
    let l = c.layout().unwrap();
    assert!(!l.ring().single_producer() && !l.ring().single_consumer());
    for (sp, sc) in MODES {
        let cfg = flagged((sp, sc));
        let l = cfg.layout().unwrap();
        assert!(
            !l.ring().single_producer() && !l.ring().single_consumer(),
            "the safe layout's ring is MP/MC"
        );
        assert_eq!(
            l.bytes(),
            flagged((false, false)).layout().unwrap().bytes(),
            "the flags change no size"
        );
        // SAFETY: the pool is never used by more than this thread.
        let pool = unsafe { HeapPool::new_unchecked(&cfg) }.unwrap();
        assert_eq!(
            HeapPool::new(&cfg).is_err(),
            sp || sc,
            "the safe constructor refuses the single-sided flags"
        );
        assert_eq!(
            (
                pool.ring().is_single_producer(),
                pool.ring().is_single_consumer()
            ),
            (sp, sc)
        );
    }
}

/// Safe code cannot make a single-sided ring: the layouts it can reach
/// from a configuration with the flags (a fresh one, or the one a pool
/// keeps) build MP/MC rings with the safe `HeapRing::new`.
#[test]
fn safe_code_cannot_build_a_single_sided_ring() {
    for (sp, sc) in MODES {
        let cfg = flagged((sp, sc));
        let fresh = *cfg.layout().unwrap().ring();
        // SAFETY: the pool is never used by more than this thread.
        let pool = unsafe { HeapPool::new_unchecked(&cfg) }.unwrap();
        let kept = *pool.layout().ring();
        assert_eq!(fresh, kept);
        for l in [fresh, kept] {
            let r = HeapRing::new(l);
            assert_eq!(r.mode_name(), "MP/MC", "flags {:?}", (sp, sc));
            assert_eq!(
                (r.capacity(), r.slots()),
                (pool.ring().capacity(), pool.ring().slots())
            );
        }
        // The pool's own ring, made by the unsafe constructor, has them.
        assert_eq!(
            (
                pool.ring().is_single_producer(),
                pool.ring().is_single_consumer()
            ),
            (sp, sc)
        );
    }
}

#[test]
fn capacity_one_and_two_every_mode() {
    for mode in MODES {
        for cap in [1usize, 2] {
            let r = HeapRing::new(layout(cap, 1, mode));
            assert!(r.is_empty());
            for round in 0..10 {
                let objs: Vec<_> = (0..cap).map(|i| obj(round * 10 + i)).collect();
                r.enqueue_bulk(&objs).unwrap();
                assert_eq!(r.len(), cap);
                assert!(!r.is_empty());
                assert_eq!(
                    r.enqueue_bulk(&[obj(99)]),
                    Err(RingError::NoSpace { requested: 1 })
                );
                let mut out = vec![core::ptr::null_mut(); cap];
                r.dequeue_bulk(&mut out).unwrap();
                assert_eq!(out, objs, "FIFO order, mode {mode:?}");
                assert!(r.is_empty());
                assert_eq!(r.len(), 0);
                let mut one = [core::ptr::null_mut()];
                assert_eq!(
                    r.dequeue_bulk(&mut one),
                    Err(RingError::NotEnough { requested: 1 })
                );
                assert_eq!(r.dequeue_burst(&mut one), 0);
            }
        }
    }
}

#[test]
fn errors_leave_the_ring_unchanged_every_mode() {
    for mode in MODES {
        let r = HeapRing::new(layout(8, 4, mode));
        let five: Vec<_> = (0..5).map(obj).collect();
        r.enqueue_bulk(&five).unwrap();
        // Null wins over "no space", reports its index, inserts nothing.
        let bad = [obj(10), obj(11), core::ptr::null_mut(), obj(12)];
        assert_eq!(
            r.enqueue_bulk(&bad),
            Err(RingError::NullObject { index: 2 })
        );
        assert_eq!(
            r.enqueue_bulk(&[core::ptr::null_mut()]),
            Err(RingError::NullObject { index: 0 })
        );
        let many: Vec<_> = (10..19).map(obj).collect();
        assert_eq!(
            r.enqueue_bulk(&many),
            Err(RingError::BulkTooLarge {
                requested: 9,
                capacity: 8
            })
        );
        assert_eq!(r.len(), 5);
        let mut out = vec![obj(77); 6];
        assert_eq!(
            r.dequeue_bulk(&mut out),
            Err(RingError::NotEnough { requested: 6 })
        );
        assert!(out.iter().all(|&o| o == obj(77)), "out untouched");
        let mut big = vec![core::ptr::null_mut(); 9];
        assert!(matches!(
            r.dequeue_bulk(&mut big),
            Err(RingError::BulkTooLarge { .. })
        ));
        assert_eq!(r.enqueue_bulk(&[]), Ok(()));
        assert_eq!(r.dequeue_bulk(&mut []), Ok(()));
        assert_eq!(r.dequeue_burst(&mut []), 0);
        // A burst larger than capacity takes at most capacity (here: all 5).
        assert_eq!(r.dequeue_burst(&mut big), 5);
        assert_eq!(&big[..5], &five[..]);
        assert!(r.is_empty());
    }
}

/// Puts the ring's head (and producer sequence) at `offset` with the ring
/// empty, by moving single objects through it.
fn advance(r: &HeapRing, offset: usize) {
    let mut o = [core::ptr::null_mut()];
    for i in 0..offset {
        r.enqueue_bulk(&[obj(1_000_000 + i)]).unwrap();
        r.dequeue_bulk(&mut o).unwrap();
    }
    assert!(r.is_empty());
}

/// Every bulk size at every start offset: the run split at the wrap point
/// (none, in the middle, exactly at the end) for fills, copies, bursts and
/// the batched invalidation.
#[test]
fn every_bulk_at_every_offset_every_mode() {
    for mode in MODES {
        for (cap, batch) in [(6usize, 2usize), (7, 3), (8, 1), (5, 5), (13, 4)] {
            let slots = layout(cap, batch, mode).slots();
            for offset in 0..2 * slots {
                for k in 1..=cap {
                    let r = HeapRing::new(layout(cap, batch, mode));
                    advance(&r, offset);
                    let objs: Vec<_> = (0..k).map(|i| obj(offset * 100 + i)).collect();
                    r.enqueue_bulk(&objs).unwrap();
                    assert_eq!(r.len(), k);
                    // Bulk out, then the same through burst.
                    let mut out = vec![core::ptr::null_mut(); k];
                    r.dequeue_bulk(&mut out).unwrap();
                    assert_eq!(out, objs, "{mode:?} cap {cap} off {offset} k {k}");
                    assert!(r.is_empty());
                    r.enqueue_bulk(&objs).unwrap();
                    let mut out = vec![core::ptr::null_mut(); cap + 3];
                    assert_eq!(r.dequeue_burst(&mut out), k);
                    assert_eq!(&out[..k], &objs[..]);
                    assert!(r.is_empty());
                    // Whatever the lag, the full capacity goes back in.
                    let all: Vec<_> = (0..cap).map(obj).collect();
                    r.enqueue_bulk(&all).unwrap();
                    assert_eq!(r.len(), cap);
                }
            }
        }
    }
}

/// A partial burst across the wrap point stops at the first free slot.
#[test]
fn partial_burst_across_the_wrap() {
    for mode in MODES {
        let r = HeapRing::new(layout(6, 2, mode)); // 8 slots
        advance(&r, 5);
        let objs: Vec<_> = (0..5).map(obj).collect(); // seq 5..10: slots 5,6,7,0,1
        r.enqueue_bulk(&objs).unwrap();
        let mut out = vec![core::ptr::null_mut(); 6];
        assert_eq!(r.dequeue_burst(&mut out), 5);
        assert_eq!(&out[..5], &objs[..]);
        // Slot 2 was free: nothing beyond it was read.
        assert_eq!(out[5], core::ptr::null_mut());
        assert!(r.is_empty());
    }
}

/// Tiny deterministic PRNG (xorshift64*), so failures reproduce.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Random single-threaded operations against a `VecDeque` model, in every
/// mode: FIFO, all-or-nothing, exact `len`/`is_empty`, guaranteed room up to
/// capacity, dequeue fails exactly when too few objects are in.
#[test]
fn model_based_every_mode() {
    for mode in MODES {
        for (cap, batch) in [
            (1usize, 1usize),
            (3, 2),
            (16, 16),
            (64, 16),
            (100, 16),
            (9, 4),
        ] {
            let r = HeapRing::new(layout(cap, batch, mode));
            let mut model: VecDeque<usize> = VecDeque::new();
            let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (cap * 31 + batch) as u64);
            let mut next = 0usize;
            for _ in 0..20_000 {
                let k = 1 + rng.below(cap + 2);
                match rng.below(3) {
                    0 => {
                        let objs: Vec<_> = (next..next + k).map(obj).collect();
                        match r.enqueue_bulk(&objs) {
                            Ok(()) => {
                                assert!(k <= cap);
                                model.extend(next..next + k);
                                next += k;
                            }
                            Err(RingError::BulkTooLarge { .. }) => assert!(k > cap),
                            Err(RingError::NoSpace { requested }) => {
                                assert_eq!(requested, k);
                                assert!(
                                    model.len() + k > cap,
                                    "room refused: len {} + {k} <= {cap} ({mode:?})",
                                    model.len()
                                );
                            }
                            Err(e) => panic!("{e}"),
                        }
                    }
                    1 => {
                        let mut out = vec![obj(usize::MAX - 2); k];
                        match r.dequeue_bulk(&mut out) {
                            Ok(()) => {
                                for o in out {
                                    assert_eq!(Some(idx(o)), model.pop_front());
                                }
                            }
                            Err(RingError::NotEnough { .. }) => {
                                assert!(model.len() < k);
                                assert!(out.iter().all(|&o| o == obj(usize::MAX - 2)));
                            }
                            Err(RingError::BulkTooLarge { .. }) => assert!(k > cap),
                            Err(e) => panic!("{e}"),
                        }
                    }
                    _ => {
                        let mut out = vec![core::ptr::null_mut(); k];
                        let got = r.dequeue_burst(&mut out);
                        assert_eq!(got, k.min(cap).min(model.len()));
                        for &o in &out[..got] {
                            assert_eq!(Some(idx(o)), model.pop_front());
                        }
                    }
                }
                assert_eq!(r.len(), model.len());
                assert_eq!(r.is_empty(), model.is_empty());
            }
        }
    }
}

/// Spin politely (the machine may have fewer cores than threads): a pause,
/// and every 64th failed try a yield.
fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins >= 64 {
        *spins = 0;
        std::thread::yield_now();
    } else {
        core::hint::spin_loop();
    }
}

/// One producer thread, one consumer thread on a ring in SP/SC mode: every
/// object delivered exactly once and in order, bulk sizes 1..=64 on both
/// sides (the consumer alternating bulk and burst).
fn stress_spsc(layout: RingLayout, total: usize) {
    assert!(layout.single_producer() && layout.single_consumer());
    let r = Arc::new(HeapRing::new(layout));
    let delivered: Arc<Vec<AtomicU8>> = Arc::new((0..total).map(|_| AtomicU8::new(0)).collect());
    let producer = {
        let r = r.clone();
        std::thread::spawn(move || {
            let mut i = 0;
            let mut bulk = 1;
            let mut batch = Vec::with_capacity(64);
            while i < total {
                batch.clear();
                while batch.len() < bulk && i < total {
                    batch.push(obj(i));
                    i += 1;
                }
                let mut spins = 0u32;
                while r.enqueue_bulk(&batch).is_err() {
                    backoff(&mut spins);
                }
                bulk = bulk % 64 + 1;
            }
        })
    };
    let consumer = {
        let r = r.clone();
        let delivered = delivered.clone();
        std::thread::spawn(move || {
            let mut bulk = 1usize;
            let mut out = vec![core::ptr::null_mut(); 64];
            let mut expect = 0usize;
            let mut spins = 0u32;
            while expect < total {
                let want = bulk.min(total - expect);
                let n = if bulk % 3 == 1 {
                    r.dequeue_burst(&mut out[..want])
                } else if r.dequeue_bulk(&mut out[..want]).is_ok() {
                    want
                } else {
                    // What is there: a bulk larger than the ring holds
                    // while the producer waits for room for a bulk larger
                    // than is free would wait forever.
                    r.dequeue_burst(&mut out[..want])
                };
                for &o in &out[..n] {
                    let i = idx(o);
                    assert_eq!(i, expect, "FIFO order broken");
                    let prev = delivered[i].fetch_add(1, Ordering::Relaxed);
                    assert_eq!(prev, 0, "object {i} delivered twice");
                    expect += 1;
                }
                if n == 0 {
                    backoff(&mut spins);
                } else {
                    bulk = bulk % 64 + 1;
                }
            }
        })
    };
    producer.join().unwrap();
    consumer.join().unwrap();
    assert!(delivered.iter().all(|d| d.load(Ordering::Relaxed) == 1));
    assert!(r.is_empty());
    assert_eq!(r.len(), 0);
}

#[test]
fn stress_spsc_1p1c_every_object_exactly_once() {
    // 10^7 in release builds, fewer in debug.
    let total = if cfg!(debug_assertions) {
        200_000
    } else {
        10_000_000
    };
    // SAFETY: one producer thread and one consumer thread (`stress_spsc`).
    let l = unsafe {
        RingLayout::for_capacity(1000)
            .unwrap()
            .with_single_producer(true)
            .with_single_consumer(true)
    };
    stress_spsc(l, total);
}

#[test]
fn stress_spsc_1p1c_small_ring() {
    // A ring barely above the largest bulk: full and empty all the time,
    // wrapping every few operations.
    let total = if cfg!(debug_assertions) {
        100_000
    } else {
        2_000_000
    };
    stress_spsc(spsc_layout(64, 16), total);
}

fn spsc_layout(cap: usize, batch: usize) -> RingLayout {
    layout(cap, batch, (true, true))
}

/// A pool in SP/SC mode used as DPDK allows it: lcore 0 only gets, lcore 1
/// only puts (so the ring has one producer, lcore 1's cache flushes, and one
/// consumer, lcore 0's cache refills); objects travel from 0 to 1 by channel.
#[test]
fn spsc_pool_one_getter_one_putter() {
    let cfg = PoolConfig {
        objects: 512,
        max_lcores: 2,
        cache_size: Some(32),
        single_producer: true,
        single_consumer: true,
        ..PoolConfig::new(512)
    };
    // SAFETY: lcore 0's thread is the only getter, lcore 1's the only putter
    // (populating included, on this thread before the spawn).
    let pool = Arc::new(unsafe { common::populated_pool_unchecked(cfg, 1) });
    // SAFETY: single thread so far; lcore 1 owns its cache.
    unsafe { pool.flush_lcore(1) }.unwrap();
    let rounds = if cfg!(debug_assertions) {
        20_000
    } else {
        200_000
    };
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<usize>>(64);
    let getter = {
        let pool = pool.clone();
        std::thread::spawn(move || {
            let mut out = [core::ptr::null_mut(); 8];
            for i in 0..rounds {
                let k = 1 + i % 8;
                // SAFETY: this thread is the only user of lcore 0.
                while unsafe { pool.get(0, &mut out[..k]) }.is_err() {
                    std::thread::yield_now();
                }
                tx.send(out[..k].iter().map(|&p| p as usize).collect())
                    .unwrap();
            }
        })
    };
    let putter = {
        let pool = pool.clone();
        std::thread::spawn(move || {
            for objs in rx {
                let objs: Vec<_> = objs.into_iter().map(|p| p as *mut c_void).collect();
                // SAFETY: this thread is the only user of lcore 1.
                unsafe { pool.put(1, &objs) }.unwrap();
            }
        })
    };
    getter.join().unwrap();
    putter.join().unwrap();
    common::assert_conserved(&pool);
    common::assert_exactly_once(&pool);
}
