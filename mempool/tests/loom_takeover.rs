//! loom models of a ring side taken over from a holder that died inside its
//! critical section: every interleaving (up to the preemption bound) of a
//! dying thread, a live producer and a live consumer, asserting that every
//! object that reached the ring is delivered exactly once, that only the
//! objects the dead thread held are missing, and that the ring is whole
//! afterwards (a full-capacity bulk goes in and comes out in order).
//!
//! A dead holder is a thread armed with a crash point
//! (`mempool::crash::CrashSite`): its operation stops there, inside the
//! critical section, and its guard never unlocks; it then reports its
//! owner id dead (Release, read with Acquire by the liveness check: the
//! model of a kernel that has torn the process down before anyone learns
//! that it died).
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p mempool --release --test loom_takeover`
#![cfg(loom)]

use core::ffi::c_void;

use loom::sync::atomic::{AtomicU32, Ordering};
use loom::sync::Arc;
use loom::thread;
use mempool::crash::{self, CrashSite};
use mempool::owner::{self, Liveness, OwnerId};
use mempool::{HeapRing, RingLayout};

mod loom_model;

loom::lazy_static! {
    /// The owner id that died (0: none yet).
    static ref DEAD: AtomicU32 = AtomicU32::new(0);
}

fn dead_or_alive(id: u32) -> Liveness {
    // Acquire pairs with the Release store of the dying thread.
    if DEAD.load(Ordering::Acquire) == id {
        Liveness::Dead
    } else {
        Liveness::Alive
    }
}

const DYING: u32 = 10;
const PRODUCER: u32 = 20;
const CONSUMER: u32 = 30;

fn obj(i: usize) -> *mut c_void {
    i as *mut c_void
}

fn ids(v: &[*mut c_void]) -> Vec<usize> {
    v.iter().map(|&p| p as usize).collect()
}

fn be(id: u32) {
    owner::set_process_owner(OwnerId::new(id).unwrap());
}

/// Runs `f` under loom with the preemption bound of `loom_ptr_ring` (3
/// unless `LOOM_MAX_PREEMPTIONS` sets one), the liveness check installed.
#[track_caller]
fn model(f: impl Fn() + Sync + Send + 'static) {
    owner::set_liveness(dead_or_alive);
    loom_model::model(f);
}

fn drain(r: &HeapRing) -> Vec<usize> {
    let mut out = vec![core::ptr::null_mut(); r.capacity()];
    let n = r.dequeue_burst(&mut out);
    ids(&out[..n])
}

/// The ring is whole: empty, and a bulk of its capacity goes in and comes
/// out in order (a hole left by a dead producer, or a consumed slot left
/// full by a dead consumer, would make one of the two fail), after which
/// `len` counts nothing (before a producer took the lock over, it counts
/// the dead producer's unfilled claim).
fn assert_whole(r: &HeapRing) {
    assert!(r.is_empty());
    let objs: Vec<_> = (100..100 + r.capacity()).map(obj).collect();
    r.enqueue_bulk(&objs).expect("room for a full bulk");
    let mut out = vec![core::ptr::null_mut(); r.capacity()];
    r.dequeue_bulk(&mut out).expect("a full bulk back");
    assert_eq!(out, objs);
    assert!(r.is_empty());
    assert_eq!(r.len(), 0);
}

/// A live producer's two tries to put `objs`; true if one succeeded.
fn try_put(r: &HeapRing, objs: &[*mut c_void]) -> bool {
    for _ in 0..2 {
        if r.enqueue_bulk(objs).is_ok() {
            return true;
        }
        thread::yield_now();
    }
    false
}

/// A live consumer's two tries at taking what the ring has.
fn try_take(r: &HeapRing) -> Vec<usize> {
    let mut got = Vec::new();
    for _ in 0..2 {
        got.extend(drain(r));
        thread::yield_now();
    }
    got
}

/// A producer dies after publishing `seq` past its bulk of two and filling
/// `fills` slots of it, while a live producer puts one object and a live
/// consumer takes. The filled prefix is delivered (in order), the rest of
/// the bulk is lost with the producer, and no hole stays in the ring.
fn producer_dies_after(fills: usize, batch: usize) {
    model(move || {
        DEAD.store(0, Ordering::Relaxed);
        let r = Arc::new(HeapRing::new(RingLayout::with_batch(3, batch).unwrap()));
        let dying = {
            let r = r.clone();
            thread::spawn(move || {
                be(DYING);
                crash::arm(CrashSite::ProducerFills(fills));
                r.enqueue_bulk(&[obj(1), obj(2)]).unwrap();
                let died = crash::dying();
                if died {
                    // Release pairs with the Acquire load in `dead_or_alive`.
                    DEAD.store(DYING, Ordering::Release);
                }
                died
            })
        };
        let producer = {
            let r = r.clone();
            thread::spawn(move || {
                be(PRODUCER);
                try_put(&r, &[obj(3)])
            })
        };
        let consumer = {
            let r = r.clone();
            thread::spawn(move || {
                be(CONSUMER);
                try_take(&r)
            })
        };
        let died = dying.join().unwrap();
        let mut put = producer.join().unwrap();
        let mut got = consumer.join().unwrap();
        // The main thread (owner 1) finishes the live producer's put and
        // drains, taking the producer lock over if nobody has yet.
        while !put {
            put = r.enqueue_bulk(&[obj(3)]).is_ok();
            got.extend(drain(&r));
        }
        got.extend(drain(&r));
        let reached = if died { fills } else { 2 };
        let mut expect: Vec<usize> = (1..=reached).collect();
        expect.push(3);
        let mut sorted = got.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, expect, "delivered {got:?}");
        // The dead producer's filled prefix stays in order.
        let mine: Vec<_> = got.iter().copied().filter(|&x| x < 3).collect();
        assert_eq!(mine, (1..=reached).collect::<Vec<_>>());
        assert_whole(&r);
        assert_eq!(r.takeovers(), (u32::from(died), 0));
        assert_eq!(r.poisoned(), (false, false));
    });
}

#[test]
fn producer_dies_before_filling() {
    producer_dies_after(0, 1);
}

#[test]
fn producer_dies_mid_bulk() {
    producer_dies_after(1, 2);
}

#[test]
fn producer_dies_after_filling_all() {
    producer_dies_after(2, 1);
}

/// The dying thread of the consumer-side models: armed at `site`, it
/// dequeues `n` objects with `dequeue`; joined, it says whether it died
/// there and what it copied out (nothing if the dequeue failed).
fn dying_dequeue(
    r: &Arc<HeapRing>,
    n: usize,
    site: CrashSite,
    dequeue: fn(&HeapRing, &mut [*mut c_void]) -> Result<(), mempool::RingError>,
) -> thread::JoinHandle<(bool, Vec<usize>)> {
    let r = r.clone();
    thread::spawn(move || {
        be(DYING);
        crash::arm(site);
        let mut out = vec![core::ptr::null_mut(); n];
        let took = dequeue(&r, &mut out).is_ok();
        let died = crash::dying();
        if died {
            // Release pairs with the Acquire load in `dead_or_alive`.
            DEAD.store(DYING, Ordering::Release);
        }
        (died, if took { ids(&out) } else { Vec::new() })
    })
}

/// A consumer dies inside a dequeue of `n` from a ring holding 1, 2, 3
/// (capacity 3, batch 2: the dequeue's clear is due), at `site`, while a
/// live producer puts 4, 5 and a live consumer takes. Two objects go the
/// small-bulk path (`consume_small`), three, above loom's `SMALL_BULK_MAX`,
/// the big one (`copy_out`, `publish_head`, `invalidate`). What the dead
/// consumer copied out is lost only if it had published `head`; every
/// other object is delivered exactly once; no consumed slot stays full,
/// and no slot a producer refilled after the dead consumer cleared it is
/// cleared again.
fn consumer_dies_at(site: CrashSite, n: usize) {
    model(move || {
        DEAD.store(0, Ordering::Relaxed);
        let r = Arc::new(HeapRing::new(RingLayout::with_batch(3, 2).unwrap()));
        r.enqueue_bulk(&[obj(1), obj(2), obj(3)]).unwrap();
        let dying = dying_dequeue(&r, n, site, |r, out| r.dequeue_bulk(out));
        let producer = {
            let r = r.clone();
            thread::spawn(move || {
                be(PRODUCER);
                try_put(&r, &[obj(4), obj(5)])
            })
        };
        let consumer = {
            let r = r.clone();
            thread::spawn(move || {
                be(CONSUMER);
                try_take(&r)
            })
        };
        let (died, held) = dying.join().unwrap();
        let mut put = producer.join().unwrap();
        let mut got = consumer.join().unwrap();
        while !put {
            got.extend(drain(&r));
            put = r.enqueue_bulk(&[obj(4), obj(5)]).is_ok();
        }
        got.extend(drain(&r));
        // Before `head` the dead consumer's copies are not taken: the
        // objects are still in the ring.
        let lost = if died && site == CrashSite::ConsumerBeforeHead {
            Vec::new()
        } else {
            held
        };
        let mut all = got.clone();
        all.extend(&lost);
        all.sort_unstable();
        assert_eq!(all, vec![1, 2, 3, 4, 5], "delivered {got:?}, lost {lost:?}");
        assert_whole(&r);
        assert_eq!(r.takeovers(), (0, u32::from(died)));
        assert_eq!(r.poisoned(), (false, false));
    });
}

#[test]
fn consumer_dies_before_publishing_head() {
    consumer_dies_at(CrashSite::ConsumerBeforeHead, 2);
}

#[test]
fn consumer_dies_before_clearing() {
    consumer_dies_at(CrashSite::ConsumerClears(0), 2);
}

#[test]
fn consumer_dies_mid_clear() {
    consumer_dies_at(CrashSite::ConsumerClears(1), 2);
}

#[test]
fn consumer_dies_before_publishing_the_head_of_a_big_bulk() {
    consumer_dies_at(CrashSite::ConsumerBeforeHead, 3);
}

#[test]
fn consumer_dies_before_clearing_a_big_bulk() {
    consumer_dies_at(CrashSite::ConsumerClears(0), 3);
}

#[test]
fn consumer_dies_clearing_a_big_bulk() {
    consumer_dies_at(CrashSite::ConsumerClears(2), 3);
}

/// A newest-first dequeue of `n` (1: `take_back_one`, 2: the bulk path)
/// from a ring holding 1, 2, 3 dies after clearing the last `clears` of
/// its slots (holding both sides, `seq` not yet moved back), while a
/// live producer puts 4; the main thread then drains and finishes the put.
/// The objects whose slots it cleared are lost with it; the rest of what
/// it copied out is still in the ring and delivered, with every other
/// object, exactly once; both sides are taken over and the ring is whole.
/// (A live consumer as a fourth thread, as in `consumer_dies_at`, takes
/// the model past loom's branch limit: its spins on two dead locks.)
fn take_back_dies_after(n: usize, clears: usize) {
    model(move || {
        DEAD.store(0, Ordering::Relaxed);
        let r = Arc::new(HeapRing::new(RingLayout::with_batch(3, 2).unwrap()));
        r.enqueue_bulk(&[obj(1), obj(2), obj(3)]).unwrap();
        let site = CrashSite::TakeBackClears(clears);
        let dying = dying_dequeue(&r, n, site, |r, out| r.dequeue_newest_bulk(out));
        let producer = {
            let r = r.clone();
            thread::spawn(move || {
                be(PRODUCER);
                try_put(&r, &[obj(4)])
            })
        };
        let (died, held) = dying.join().unwrap();
        let mut put = producer.join().unwrap();
        let mut got = Vec::new();
        while !put {
            got.extend(drain(&r));
            put = r.enqueue_bulk(&[obj(4)]).is_ok();
        }
        // The ring may hold more than a drain's worth: its room is its
        // slots (4 here), the capacity only the room it guarantees, and
        // the dead take-back left 1, 2, 3 in place for 4 to join.
        loop {
            let more = drain(&r);
            if more.is_empty() {
                break;
            }
            got.extend(more);
        }
        // Cleared last first: the newest `clears` of the two are gone.
        let lost = if died {
            held[held.len() - clears.min(held.len())..].to_vec()
        } else {
            Vec::new()
        };
        let mut all = got.clone();
        if !died {
            all.extend(&held);
        }
        all.extend(&lost);
        all.sort_unstable();
        assert_eq!(
            all,
            vec![1, 2, 3, 4],
            "delivered {got:?}, held {held:?}, died {died}"
        );
        assert_whole(&r);
        let d = u32::from(died);
        assert_eq!(r.takeovers(), (d, d));
        assert_eq!(r.poisoned(), (false, false));
    });
}

#[test]
fn take_back_dies_before_clearing() {
    take_back_dies_after(2, 0);
}

#[test]
fn take_back_dies_mid_clear() {
    take_back_dies_after(2, 1);
}

#[test]
fn take_back_dies_after_clearing_all() {
    take_back_dies_after(2, 2);
}

#[test]
fn take_back_of_one_dies_before_clearing() {
    take_back_dies_after(1, 0);
}

#[test]
fn take_back_of_one_dies_after_its_clear() {
    take_back_dies_after(1, 1);
}
