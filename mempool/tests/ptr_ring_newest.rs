//! Newest-first dequeues (`PtrRing::dequeue_newest_bulk` / `_burst`)
//! beside the plain FIFO ones: order against a reference model, all or
//! nothing, room after a take-back, the totals, and every object
//! delivered exactly once by threads mixing all of them.
#![cfg(not(loom))]

use core::ffi::c_void;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

use mempool::ptr_ring::NOBODY;
use mempool::{HeapRing, RingError, RingLayout};

fn obj(i: usize) -> *mut c_void {
    i as *mut c_void
}

fn ids(v: &[*mut c_void]) -> Vec<usize> {
    v.iter().map(|&p| p as usize).collect()
}

fn nulls(n: usize) -> Vec<*mut c_void> {
    vec![core::ptr::null_mut(); n]
}

#[test]
fn newest_first_pops_what_came_last_and_fifo_still_takes_the_oldest() {
    let r = HeapRing::new(RingLayout::with_batch(8, 2).unwrap());
    r.enqueue_bulk(&(1..=6).map(obj).collect::<Vec<_>>())
        .unwrap();
    let mut out = nulls(2);
    r.dequeue_newest_bulk(&mut out).unwrap();
    assert_eq!(ids(&out), [5, 6]);
    r.enqueue_bulk(&[obj(7)]).unwrap();
    let mut one = nulls(1);
    r.dequeue_newest_bulk(&mut one).unwrap();
    assert_eq!(ids(&one), [7]);
    r.dequeue_bulk(&mut one).unwrap();
    assert_eq!(ids(&one), [1]);
    assert_eq!(r.len(), 3);
    // A burst takes what there is, newest last in `out`.
    let mut all = nulls(8);
    assert_eq!(r.dequeue_newest_burst(&mut all), 3);
    assert_eq!(ids(&all[..3]), [2, 3, 4]);
    assert!(r.is_empty());
    assert_eq!(r.dequeue_newest_burst(&mut all), 0);
}

#[test]
fn a_newest_bulk_is_all_or_nothing() {
    let r = HeapRing::new(RingLayout::with_batch(4, 1).unwrap());
    r.enqueue_bulk(&[obj(1), obj(2), obj(3)]).unwrap();
    let mut out = nulls(4);
    assert_eq!(
        r.dequeue_newest_bulk(&mut out),
        Err(RingError::NotEnough { requested: 4 })
    );
    let mut big = nulls(5);
    assert_eq!(
        r.dequeue_newest_bulk(&mut big),
        Err(RingError::BulkTooLarge {
            requested: 5,
            capacity: 4
        })
    );
    assert!(r.dequeue_newest_bulk(&mut []).is_ok());
    assert_eq!(r.len(), 3);
    let mut rest = nulls(3);
    r.dequeue_bulk(&mut rest).unwrap();
    assert_eq!(ids(&rest), [1, 2, 3]);
}

#[test]
fn a_take_back_leaves_room_for_the_whole_capacity() {
    // Capacity 6, batch 2: the consumer's lag and the wrap both in play.
    let r = HeapRing::new(RingLayout::with_batch(6, 2).unwrap());
    let mut next = 1;
    for round in 0..40 {
        let room = r.capacity() - r.len();
        let put: Vec<_> = (0..room).map(|i| obj(next + i)).collect();
        next += room;
        r.enqueue_bulk(&put).unwrap();
        assert_eq!(r.len(), r.capacity(), "round {round}");
        let mut out = nulls(1 + round % 3);
        r.dequeue_newest_bulk(&mut out).unwrap();
        assert_eq!(
            ids(&out),
            ids(&put[put.len() - out.len()..]),
            "round {round}"
        );
        let mut old = nulls(1 + round % 2);
        r.dequeue_bulk(&mut old).unwrap();
    }
}

/// A deterministic sequence of mixed operations checked against a deque.
#[test]
fn mixed_operations_match_a_deque() {
    for (cap, batch) in [(7, 1), (8, 2), (13, 3), (64, 16)] {
        let r = HeapRing::new(RingLayout::with_batch(cap, batch).unwrap());
        let mut model: VecDeque<usize> = VecDeque::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = 1usize;
        for step in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let n = 1 + (x >> 8) as usize % cap.min(9);
            let what = format!("cap {cap} batch {batch} step {step}: op {} n {n}", x % 5);
            match x % 5 {
                0 | 1 => {
                    let objs: Vec<_> = (0..n).map(|i| obj(next + i)).collect();
                    let fits = model.len() + n <= cap;
                    let res = if (x >> 3) & 1 == 0 {
                        r.enqueue_bulk(&objs)
                    } else {
                        r.enqueue_bulk_as(7, &objs)
                    };
                    if fits {
                        res.unwrap_or_else(|e| panic!("{what}: {e}"));
                    }
                    if res.is_ok() {
                        model.extend(next..next + n);
                        next += n;
                    }
                }
                2 => {
                    let mut out = nulls(n);
                    let res = r.dequeue_bulk(&mut out);
                    assert_eq!(res.is_ok(), model.len() >= n, "{what}");
                    if res.is_ok() {
                        let want: Vec<_> = model.drain(..n).collect();
                        assert_eq!(ids(&out), want, "{what}");
                    }
                }
                3 => {
                    let mut out = nulls(n);
                    let res = r.dequeue_newest_bulk(&mut out);
                    assert_eq!(res.is_ok(), model.len() >= n, "{what}");
                    if res.is_ok() {
                        let want: Vec<_> = model.drain(model.len() - n..).collect();
                        assert_eq!(ids(&out), want, "{what}");
                    }
                }
                _ => {
                    let mut out = nulls(n);
                    let got = r.dequeue_newest_burst(&mut out);
                    assert_eq!(got, n.min(model.len()), "{what}");
                    let want: Vec<_> = model.drain(model.len() - got..).collect();
                    assert_eq!(ids(&out[..got]), want, "{what}");
                }
            }
            assert_eq!(r.len(), model.len(), "{what}");
            assert_eq!(r.is_empty(), model.is_empty(), "{what}");
        }
    }
}

#[test]
fn totals_still_only_grow_and_the_last_putter_is_named() {
    let r = HeapRing::new(RingLayout::with_batch(8, 2).unwrap());
    assert_eq!(r.last_putter(), NOBODY);
    r.enqueue_bulk_as(3, &[obj(1), obj(2)]).unwrap();
    assert_eq!(r.last_putter(), 3);
    r.enqueue_bulk(&[obj(3)]).unwrap();
    assert_eq!(r.last_putter(), 3, "a plain enqueue names nobody");
    assert!(r.enqueue_bulk_as(4, &[core::ptr::null_mut()]).is_err());
    assert_eq!(r.last_putter(), 3, "a failed enqueue names nobody");
    let before = r.totals();
    let mut out = nulls(1);
    r.dequeue_newest_bulk(&mut out).unwrap();
    r.enqueue_bulk(&out).unwrap();
    let after = r.totals();
    assert_eq!(after, (before.0 + 1, before.1 + 1));
}

#[test]
fn on_a_single_producer_ring_newest_is_fifo() {
    // SAFETY: one thread uses the ring.
    let l = unsafe {
        RingLayout::with_batch(4, 1)
            .unwrap()
            .with_single_producer(true)
    };
    let r = HeapRing::new(l);
    r.enqueue_bulk(&[obj(1), obj(2)]).unwrap();
    let mut out = nulls(1);
    r.dequeue_newest_bulk(&mut out).unwrap();
    assert_eq!(ids(&out), [1]);
    assert_eq!(r.dequeue_newest_burst(&mut out), 1);
    assert_eq!(ids(&out), [2]);
}

/// Producers, FIFO consumers and newest-first consumers at once: every
/// object out at most once at any time, all of them home at the end.
#[test]
fn threads_mixing_all_dequeues_deliver_each_object_once() {
    const OBJECTS: usize = 1023;
    const ROUNDS: usize = 200_000;
    let r = Arc::new(HeapRing::new(RingLayout::for_capacity(OBJECTS).unwrap()));
    r.enqueue_bulk(&(1..=OBJECTS).map(obj).collect::<Vec<_>>())
        .unwrap();
    let out: Arc<Vec<AtomicU8>> = Arc::new((0..=OBJECTS).map(|_| AtomicU8::new(0)).collect());
    let moved = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..4u32)
        .map(|t| {
            let (r, out, moved) = (r.clone(), out.clone(), moved.clone());
            std::thread::spawn(move || {
                let mut x = 0x2545_f491_4f6c_dd1du64 ^ u64::from(t + 1);
                let mut held = Vec::new();
                for _ in 0..ROUNDS {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let n = 1 + (x >> 16) as usize % 40;
                    let mut buf = nulls(n);
                    let got = match (x >> 8) % 3 {
                        0 => r.dequeue_bulk(&mut buf).map_or(0, |_| n),
                        1 => r.dequeue_newest_bulk(&mut buf).map_or(0, |_| n),
                        _ => r.dequeue_newest_burst(&mut buf),
                    };
                    for &p in &buf[..got] {
                        let prev = out[p as usize].swap(1, Ordering::AcqRel);
                        assert_eq!(prev, 0, "object {} handed out twice", p as usize);
                    }
                    moved.fetch_add(got, Ordering::Relaxed);
                    held.extend_from_slice(&buf[..got]);
                    let back = held.len().min(1 + (x >> 24) as usize % 40);
                    let give: Vec<_> = held.drain(held.len() - back..).collect();
                    for &p in &give {
                        out[p as usize].store(0, Ordering::Release);
                    }
                    r.enqueue_bulk_as(t, &give).expect("room for every object");
                }
                for &p in &held {
                    out[p as usize].store(0, Ordering::Release);
                }
                r.enqueue_bulk(&held).expect("room for every object");
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(
        moved.load(Ordering::Relaxed) > ROUNDS,
        "the threads moved objects"
    );
    assert_eq!(r.len(), OBJECTS);
    let mut all = nulls(OBJECTS);
    r.dequeue_bulk(&mut all).unwrap();
    let mut seen = ids(&all);
    seen.sort_unstable();
    assert_eq!(seen, (1..=OBJECTS).collect::<Vec<_>>());
}
