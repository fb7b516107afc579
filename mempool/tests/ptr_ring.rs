//! Edge cases of the batched ptr_ring, single-threaded, plus a multi-thread
//! stress test checking every object is delivered exactly once.
#![cfg(not(loom))]

use core::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

use mempool::{HeapRing, RingError, RingLayout};

fn obj(i: usize) -> *mut c_void {
    // Never dereferenced: the ring only stores addresses.
    (i + 1) as *mut c_void
}

fn idx(p: *mut c_void) -> usize {
    p as usize - 1
}

#[test]
fn layout_holds_capacity_plus_batch_lag() {
    for cap in [1, 2, 3, 63, 64, 65, 127, 1000, 4096, 8191, 8180, 262_144] {
        let l = RingLayout::for_capacity(cap).unwrap();
        assert!(l.slots().is_power_of_two());
        assert!(l.slots() >= cap + l.batch() - 1, "{l:?}");
        assert!(l.bytes() >= l.slots() * 8);
        if cap < 64 {
            assert_eq!(l.batch(), 1);
        } else if cap.next_power_of_two() - cap + 1 >= 2 {
            // A batch that fits the next power of two: never more slots.
            assert_eq!(l.slots(), cap.next_power_of_two(), "{l:?}");
            assert!((2..=16).contains(&l.batch()), "{l:?}");
        } else {
            assert_eq!((l.batch(), l.slots()), (16, 2 * cap), "{l:?}");
        }
    }
    // DPDK's recommended 2^k - 1 sizes: 2^k slots (batch 2), not 2^(k+1).
    let l = RingLayout::for_capacity(8191).unwrap();
    assert_eq!((l.batch(), l.slots()), (2, 8192));
    assert!(RingLayout::for_capacity(0).is_none());
    assert!(RingLayout::with_batch(4, 5).is_none());
    assert!(RingLayout::with_batch(0, 1).is_none());
}

#[test]
fn capacity_one_and_two() {
    for cap in [1usize, 2] {
        let r = HeapRing::with_capacity(cap).unwrap();
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
            assert_eq!(out, objs, "FIFO order");
            assert!(r.is_empty());
            assert_eq!(r.len(), 0);
        }
    }
}

#[test]
fn full_ring_of_a_pool_always_takes_every_object_back() {
    // Whatever the batch lag, a ring sized for n takes all n back.
    let default = |cap: usize| RingLayout::for_capacity(cap).unwrap().batch();
    for (cap, batch) in [
        (64usize, 16usize),
        (100, 16),
        (8, 4),
        (5, 3),
        (1000, 16),
        (127, default(127)),
        (255, default(255)),
        (250, default(250)),
    ] {
        let r = HeapRing::new(RingLayout::with_batch(cap, batch).unwrap());
        let all: Vec<_> = (0..cap).map(obj).collect();
        r.enqueue_bulk(&all).unwrap();
        let mut held = Vec::new();
        // Drain and refill in odd-sized steps so head/tail sit at every offset.
        for step in 1..=7usize {
            for _ in 0..(3 * cap) {
                let k = step.min(cap - held.len()).max(1);
                if held.len() + k <= cap {
                    let mut out = vec![core::ptr::null_mut(); k];
                    r.dequeue_bulk(&mut out).unwrap();
                    held.extend(out);
                }
                // Everything held must go back in, every time.
                r.enqueue_bulk(&held).unwrap();
                held.clear();
                assert_eq!(r.len(), cap);
            }
        }
        let mut out = vec![core::ptr::null_mut(); cap];
        r.dequeue_bulk(&mut out).unwrap();
        let mut seen: Vec<_> = out.into_iter().map(idx).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..cap).collect::<Vec<_>>());
    }
}

#[test]
fn wrap_around_keeps_fifo_order() {
    let r = HeapRing::new(RingLayout::with_batch(6, 2).unwrap());
    let mut next_in = 0;
    let mut next_out = 0;
    for _ in 0..1000 {
        let k = 1 + next_in % 4;
        let objs: Vec<_> = (next_in..next_in + k).map(obj).collect();
        r.enqueue_bulk(&objs).unwrap();
        next_in += k;
        let mut out = vec![core::ptr::null_mut(); k];
        r.dequeue_bulk(&mut out).unwrap();
        for o in out {
            assert_eq!(idx(o), next_out);
            next_out += 1;
        }
    }
}

#[test]
fn big_bulks_across_the_wrap_keep_fifo_order() {
    // Dequeues of 64 objects or more take the path that prefetches their
    // slot lines; ranges of every length from 64 up, at every offset, many
    // of them split by the end of the slot array.
    let r = HeapRing::with_capacity(1000).unwrap();
    let mut next_in = 0;
    let mut next_out = 0;
    for round in 0..400 {
        let k = 64 + (round * 37) % 300;
        let objs: Vec<_> = (next_in..next_in + k).map(obj).collect();
        r.enqueue_bulk(&objs).unwrap();
        next_in += k;
        let mut out = vec![core::ptr::null_mut(); k];
        if round % 2 == 0 {
            r.dequeue_bulk(&mut out).unwrap();
        } else {
            assert_eq!(r.dequeue_burst(&mut out), k);
        }
        for o in out {
            assert_eq!(idx(o), next_out);
            next_out += 1;
        }
        assert!(r.is_empty());
    }
}

#[test]
fn bulk_is_all_or_nothing() {
    let r = HeapRing::with_capacity(8).unwrap();
    let objs: Vec<_> = (0..5).map(obj).collect();
    r.enqueue_bulk(&objs).unwrap();
    // 4 more do not fit: nothing of them goes in.
    let more: Vec<_> = (10..14).map(obj).collect();
    assert_eq!(
        r.enqueue_bulk(&more),
        Err(RingError::NoSpace { requested: 4 })
    );
    assert_eq!(r.len(), 5);
    // 6 are not there: nothing comes out, `out` untouched.
    let mut out = vec![obj(77); 6];
    assert_eq!(
        r.dequeue_bulk(&mut out),
        Err(RingError::NotEnough { requested: 6 })
    );
    assert!(out.iter().all(|&o| o == obj(77)));
    assert_eq!(r.len(), 5);
    let mut out = vec![core::ptr::null_mut(); 5];
    r.dequeue_bulk(&mut out).unwrap();
    assert_eq!(out, objs);
}

#[test]
fn bulk_larger_than_capacity_and_zero_length() {
    let r = HeapRing::with_capacity(4).unwrap();
    let objs: Vec<_> = (0..5).map(obj).collect();
    let e = r.enqueue_bulk(&objs).unwrap_err();
    assert_eq!(
        e,
        RingError::BulkTooLarge {
            requested: 5,
            capacity: 4
        }
    );
    assert!(e.to_string().contains("exceeds ring capacity 4"));
    let mut out = vec![core::ptr::null_mut(); 5];
    assert!(matches!(
        r.dequeue_bulk(&mut out),
        Err(RingError::BulkTooLarge { .. })
    ));
    assert_eq!(r.enqueue_bulk(&[]), Ok(()));
    assert_eq!(r.dequeue_bulk(&mut []), Ok(()));
    assert_eq!(r.dequeue_burst(&mut []), 0);
    assert!(r.is_empty());
}

#[test]
fn null_object_is_rejected_and_nothing_inserted() {
    let r = HeapRing::with_capacity(8).unwrap();
    let objs = [obj(1), core::ptr::null_mut(), obj(3)];
    let e = r.enqueue_bulk(&objs).unwrap_err();
    assert_eq!(e, RingError::NullObject { index: 1 });
    assert!(r.is_empty());
    assert_eq!(r.len(), 0);
}

#[test]
fn burst_takes_what_is_there() {
    let r = HeapRing::with_capacity(100).unwrap();
    let objs: Vec<_> = (0..30).map(obj).collect();
    r.enqueue_bulk(&objs).unwrap();
    let mut out = vec![core::ptr::null_mut(); 64];
    assert_eq!(r.dequeue_burst(&mut out), 30);
    assert_eq!(&out[..30], &objs[..]);
    assert_eq!(r.dequeue_burst(&mut out), 0);
    assert!(r.is_empty());
}

/// Producers and consumers on separate threads, bulk sizes 1..=64, every
/// object delivered exactly once (per-object counters) and no null handed
/// out. A ring of capacity `cap`.
fn stress(producers: usize, consumers: usize, total: usize, cap: usize) {
    let r = Arc::new(HeapRing::with_capacity(cap).unwrap());
    let delivered: Arc<Vec<AtomicU8>> = Arc::new((0..total).map(|_| AtomicU8::new(0)).collect());
    let consumed = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let mut handles = Vec::new();
    for p in 0..producers {
        let r = r.clone();
        handles.push(std::thread::spawn(move || {
            let mut i = p;
            let mut bulk = 1 + p;
            let mut batch = Vec::with_capacity(64);
            while i < total {
                batch.clear();
                while batch.len() < bulk && i < total {
                    batch.push(obj(i));
                    i += producers;
                }
                while r.enqueue_bulk(&batch).is_err() {
                    std::thread::yield_now();
                }
                bulk = bulk % 64 + 1;
            }
        }));
    }
    for c in 0..consumers {
        let r = r.clone();
        let delivered = delivered.clone();
        let consumed = consumed.clone();
        let done = done.clone();
        handles.push(std::thread::spawn(move || {
            let mut bulk = 1 + c * 7;
            let mut out = vec![core::ptr::null_mut(); 64];
            while !done.load(Ordering::Acquire) {
                let n = if bulk % 3 == 0 {
                    r.dequeue_burst(&mut out[..bulk])
                } else if r.dequeue_bulk(&mut out[..bulk]).is_ok() {
                    bulk
                } else {
                    // Fall back to single objects so the tail drains.
                    r.dequeue_burst(&mut out[..1])
                };
                for &o in &out[..n] {
                    assert!(!o.is_null(), "a null object handed out");
                    let prev = delivered[idx(o)].fetch_add(1, Ordering::Relaxed);
                    assert_eq!(prev, 0, "object {} delivered twice", idx(o));
                }
                if n == 0 {
                    std::thread::yield_now();
                } else if consumed.fetch_add(n, Ordering::AcqRel) + n == total {
                    done.store(true, Ordering::Release);
                }
                bulk = bulk % 64 + 1;
            }
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(consumed.load(Ordering::Acquire), total);
    assert!(delivered.iter().all(|d| d.load(Ordering::Relaxed) == 1));
    assert!(r.is_empty());
}

#[test]
fn stress_2p2c_every_object_exactly_once() {
    // 10^7 in release builds (`make test`), fewer in debug.
    let total = if cfg!(debug_assertions) {
        200_000
    } else {
        10_000_000
    };
    stress(2, 2, total, 4096);
}

#[test]
fn stress_1p1c_every_object_exactly_once() {
    let total = if cfg!(debug_assertions) {
        200_000
    } else {
        2_000_000
    };
    stress(1, 1, total, 4096);
}

/// A ring about as large as the biggest bulk, so that producers keep
/// finding it nearly full: the room check of every bulk then reads slots
/// that consumers have just cleared (two at a time where slot stores are
/// paired), and bulks of every length start and end on both halves of a
/// pair.
#[test]
fn stress_small_ring_2p2c_every_object_exactly_once() {
    let total = if cfg!(debug_assertions) {
        100_000
    } else {
        3_000_000
    };
    stress(2, 2, total, 100);
}

/// `len` is a snapshot: one object circulates through a 4-slot ring
/// between two threads while a third reads `len`, which must never exceed
/// 1 (reading `head` then `seq` once counted the object on every lap it
/// made between the two loads: up to 4, and a debug-build panic).
#[test]
fn len_is_a_snapshot_while_one_object_circulates() {
    let (reads, laps): (usize, usize) = if cfg!(miri) {
        (100, 50)
    } else {
        (200_000, 200_000)
    };
    let r = Arc::new(HeapRing::new(RingLayout::with_batch(4, 1).unwrap()));
    let moved = Arc::new(AtomicUsize::new(0));
    assert_eq!(r.slots(), 4);
    r.enqueue_bulk(&[obj(0)]).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let movers: Vec<_> = (0..2)
        .map(|_| {
            let (r, stop, moved) = (r.clone(), stop.clone(), moved.clone());
            std::thread::spawn(move || {
                let mut o = [core::ptr::null_mut()];
                while !stop.load(Ordering::Relaxed) {
                    if r.dequeue_bulk(&mut o).is_ok() {
                        r.enqueue_bulk(&o).unwrap();
                        moved.fetch_add(1, Ordering::Relaxed);
                    } else {
                        std::thread::yield_now();
                    }
                }
            })
        })
        .collect();
    let mut max = 0;
    let mut i = 0;
    while i < reads || moved.load(Ordering::Relaxed) < laps {
        max = max.max(r.len());
        i += 1;
        if cfg!(miri) {
            std::thread::yield_now();
        }
    }
    stop.store(true, Ordering::Relaxed);
    for m in movers {
        m.join().unwrap();
    }
    assert!(max <= 1, "len {max} with one object in the ring");
    assert_eq!(r.len(), 1);
}
