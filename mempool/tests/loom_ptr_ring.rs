//! loom models of the batched ptr_ring: every interleaving (up to the
//! preemption bound) of tiny rings, asserting that every object is delivered
//! exactly once and that `is_empty` never reports a false "empty".
//!
//! The `spsc_*` models run the lockless single-producer/single-consumer mode
//! with one producer thread and one consumer thread (the mode's contract),
//! every check in a spawned thread.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p mempool --release --test loom_ptr_ring`
#![cfg(loom)]

use core::ffi::c_void;
use std::collections::BTreeSet;

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use mempool::{HeapRing, RingLayout};

mod loom_model;
use loom_model::model;

fn obj(i: usize) -> *mut c_void {
    i as *mut c_void
}

fn ring(cap: usize, batch: usize) -> Arc<HeapRing> {
    Arc::new(HeapRing::new(RingLayout::with_batch(cap, batch).unwrap()))
}

/// A ring in single-producer/single-consumer mode: no locks at all, so the
/// models below check the slot protocol alone.
fn ring_spsc(cap: usize, batch: usize) -> Arc<HeapRing> {
    // SAFETY: every model below runs one producer and one consumer thread.
    let l = unsafe {
        RingLayout::with_batch(cap, batch)
            .unwrap()
            .with_single_producer(true)
            .with_single_consumer(true)
    };
    let r = HeapRing::new(l);
    assert!(r.is_single_producer() && r.is_single_consumer());
    Arc::new(r)
}

fn put(r: &HeapRing, objs: &[*mut c_void]) {
    while r.enqueue_bulk(objs).is_err() {
        thread::yield_now();
    }
}

fn take(r: &HeapRing, n: usize) -> Vec<usize> {
    let mut out = vec![core::ptr::null_mut(); n];
    while r.dequeue_bulk(&mut out).is_err() {
        thread::yield_now();
    }
    out.into_iter().map(|p| p as usize).collect()
}

fn drain(r: &HeapRing) -> Vec<usize> {
    let mut out = vec![core::ptr::null_mut(); r.capacity()];
    let n = r.dequeue_burst(&mut out);
    out[..n].iter().map(|&p| p as usize).collect()
}

#[test]
fn producer_vs_consumer_fifo_exactly_once() {
    for (cap, batch) in [(2, 1), (2, 2)] {
        model(move || {
            let r = ring(cap, batch);
            let p = {
                let r = r.clone();
                thread::spawn(move || {
                    for i in 1..=3 {
                        put(&r, &[obj(i)]);
                    }
                })
            };
            // The consumer in a spawned thread too: loom explores the
            // interleavings of spawned threads against each other.
            let c = {
                let r = r.clone();
                thread::spawn(move || {
                    let mut got = Vec::new();
                    for _ in 0..3 {
                        got.extend(take(&r, 1));
                    }
                    got
                })
            };
            p.join().unwrap();
            assert_eq!(c.join().unwrap(), vec![1, 2, 3]);
            assert!(r.is_empty());
            assert_eq!(r.len(), 0);
        });
    }
}

#[test]
fn two_producers_exactly_once() {
    model(|| {
        // Room for everything: the race is between the two producers' locked
        // sections and the consumer's head/invalidation, not a wait for room.
        let r = ring(4, 2);
        let data = Contents::new(9);
        data.write(9);
        r.enqueue_bulk(&[obj(9)]).unwrap();
        let hs: Vec<_> = [[1usize, 2], [3, 4]]
            .into_iter()
            .map(|pair| {
                let (r, data) = (r.clone(), data.clone());
                thread::spawn(move || {
                    data.write(pair[0]);
                    data.write(pair[1]);
                    r.enqueue_bulk(&[obj(pair[0]), obj(pair[1])]).unwrap()
                })
            })
            .collect();
        let mut got = drain(&r);
        // Contents of whatever came out while the producers ran: ordered
        // by the ring (loom reports a causality violation otherwise).
        for &i in &got {
            data.check(i);
        }
        for h in hs {
            h.join().unwrap();
        }
        got.extend(drain(&r));
        assert_eq!(got.len(), 5);
        assert_eq!(got[0], 9, "FIFO: the pre-filled object first");
        let set: BTreeSet<_> = got.iter().copied().collect();
        assert_eq!(set, [1, 2, 3, 4, 9].into_iter().collect());
        // Each producer's bulk stays together and in order.
        let pos = |v| got.iter().position(|&x| x == v).unwrap();
        assert_eq!(pos(2), pos(1) + 1);
        assert_eq!(pos(4), pos(3) + 1);
    });
}

#[test]
fn two_consumers_exactly_once() {
    model(|| {
        let r = ring(4, 2);
        r.enqueue_bulk(&[obj(1), obj(2), obj(3), obj(4)]).unwrap();
        let hs: Vec<_> = (0..2)
            .map(|k| {
                let r = r.clone();
                thread::spawn(move || {
                    let mut v = take(&r, 1);
                    // The second consumer also refills one, racing the other's
                    // batched invalidation.
                    if k == 1 {
                        put(&r, &[obj(v[0] + 10)]);
                        v.clear();
                    }
                    v
                })
            })
            .collect();
        let mut got: Vec<usize> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
        got.extend(drain(&r));
        got.sort_unstable();
        // One object went out and came back as +10: 3 originals + 1 renamed.
        assert_eq!(got.len(), 4);
        let renamed = got.iter().filter(|&&x| x > 10).count();
        assert_eq!(renamed, 1);
        let mut base: Vec<_> = got
            .iter()
            .map(|&x| if x > 10 { x - 10 } else { x })
            .collect();
        base.sort_unstable();
        assert_eq!(base, vec![1, 2, 3, 4]);
    });
}

#[test]
fn bulk_all_or_nothing_under_concurrency() {
    model(|| {
        let r = ring(4, 2);
        let p = {
            let r = r.clone();
            thread::spawn(move || {
                put(&r, &[obj(1), obj(2)]);
                put(&r, &[obj(3), obj(4), obj(5)]);
            })
        };
        let mut got = Vec::new();
        // Bulk of 2 must come out whole: never a partial or torn bulk.
        got.extend(take(&r, 2));
        got.extend(take(&r, 3));
        p.join().unwrap();
        assert_eq!(got, vec![1, 2, 3, 4, 5]);
        assert!(r.is_empty());
    });
}

/// A reader checks emptiness while a consumer takes `n` of `objs`, all
/// enqueued before either starts, after `pre` objects were put and taken
/// one by one (so that the take completes a batch, or starts its due range
/// at a slot left from them). `objs` is longer than `n`, so "empty" is
/// always wrong; the taker gets the first `n`, a drain the rest.
fn is_empty_races_a_take(r: Arc<HeapRing>, pre: usize, objs: &'static [usize], n: usize) {
    for i in 0..pre {
        r.enqueue_bulk(&[obj(8 + i)]).unwrap();
        assert_eq!(take(&r, 1), vec![8 + i]);
    }
    let ptrs: Vec<_> = objs.iter().map(|&i| obj(i)).collect();
    r.enqueue_bulk(&ptrs).unwrap();
    let c = {
        let r = r.clone();
        thread::spawn(move || take(&r, n))
    };
    let e = {
        let r = r.clone();
        thread::spawn(move || r.is_empty())
    };
    assert!(!e.join().unwrap(), "false empty with an object in the ring");
    assert_eq!(c.join().unwrap(), objs[..n]);
    assert_eq!(drain(&r), objs[n..]);
    assert!(r.is_empty());
}

/// The seed's unresolved race: a reader checks emptiness while the consumer
/// takes one object and invalidates a batch. Two objects were enqueued before
/// the check; at most one is taken; so "empty" is always wrong.
#[test]
fn is_empty_never_false_while_consumer_invalidates() {
    for (cap, batch) in [(2, 1), (4, 2), (3, 3)] {
        // `batch - 1` taken first: the take of one completes a batch, and
        // its invalidation races the check.
        model(move || is_empty_races_a_take(ring(cap, batch), batch - 1, &[1, 2], 1));
    }
}

/// The same race with a bulk above loom's `SMALL_BULK_MAX` (the big path:
/// copy, `head`, `invalidate`), its due range starting at a slot left over
/// from an earlier dequeue (`tail != h`): four objects in, three taken
/// while a reader checks.
#[test]
fn is_empty_never_false_while_a_big_bulk_is_taken() {
    model(|| is_empty_races_a_take(ring(4, 2), 1, &[1, 2, 3, 4], 3));
}

/// Same, with the objects enqueued by another thread whose completion the
/// checker observes through a flag (happens-before, not program order).
#[test]
fn is_empty_sees_completed_enqueue_from_other_thread() {
    model(|| {
        let r = ring(2, 1);
        let done = Arc::new(AtomicBool::new(false));
        let p = {
            let (r, done) = (r.clone(), done.clone());
            thread::spawn(move || {
                r.enqueue_bulk(&[obj(1), obj(2)]).unwrap();
                done.store(true, Ordering::Release);
            })
        };
        let c = {
            let r = r.clone();
            thread::spawn(move || take(&r, 1))
        };
        // The checker in a spawned thread as well (see above).
        let k = {
            let (r, done) = (r.clone(), done.clone());
            thread::spawn(move || {
                if done.load(Ordering::Acquire) {
                    assert!(!r.is_empty(), "false empty after a completed enqueue");
                }
            })
        };
        k.join().unwrap();
        p.join().unwrap();
        assert_eq!(c.join().unwrap(), vec![1]);
        assert_eq!(drain(&r), vec![2]);
    });
}

// ------------------------------------------------------------------ SP/SC

/// Contents of objects `1..=n`: the producer writes an object's contents
/// before enqueueing it, the consumer reads them after dequeueing it. loom
/// reports a causality violation if the ring does not order the two (the
/// Release fill / Acquire take pairing).
struct Contents(Vec<UnsafeCell<usize>>);

impl Contents {
    fn new(n: usize) -> Arc<Contents> {
        Arc::new(Contents((0..=n).map(|_| UnsafeCell::new(0)).collect()))
    }
    fn write(&self, i: usize) {
        // SAFETY: only the producer writes object `i`, once, before it
        // enqueues it; loom checks that no read races with it.
        self.0[i].with_mut(|p| unsafe { *p = i * 10 });
    }
    fn check(&self, i: usize) {
        // SAFETY: read after the object was dequeued; the ring must order
        // it after the producer's write (loom checks).
        let v = self.0[i].with(|p| unsafe { *p });
        assert_eq!(v, i * 10, "object {i} contents not visible to the consumer");
    }
}

/// Lockless mode, single objects: one producer, one consumer, FIFO and
/// exactly once, with a ring small enough that the producer waits for room
/// (and, with batch 2, for the batched invalidation).
#[test]
fn spsc_producer_vs_consumer_single_exactly_once() {
    for (cap, batch) in [(1, 1), (2, 1), (2, 2)] {
        model(move || {
            let r = ring_spsc(cap, batch);
            let data = Contents::new(3);
            let p = {
                let (r, data) = (r.clone(), data.clone());
                thread::spawn(move || {
                    for i in 1..=3 {
                        data.write(i);
                        put(&r, &[obj(i)]);
                    }
                })
            };
            let c = {
                let (r, data) = (r.clone(), data.clone());
                thread::spawn(move || {
                    let mut got = Vec::new();
                    for _ in 0..3 {
                        let v = take(&r, 1);
                        data.check(v[0]);
                        got.extend(v);
                    }
                    got
                })
            };
            p.join().unwrap();
            let got = c.join().unwrap();
            assert_eq!(got, vec![1, 2, 3], "FIFO, exactly once");
            assert!(r.is_empty());
            assert_eq!(r.len(), 0);
        });
    }
}

/// A lockless (SPSC) ring of 4 slots (capacity 3, batch 2), objects 1 to
/// 5 put in the bulks `puts` by one thread and taken in bulks of `takes` by
/// another: they come out whole and in order, each exactly once.
fn spsc_bulks_exactly_once(puts: &'static [&'static [usize]], takes: &'static [usize]) {
    model(move || {
        let r = ring_spsc(3, 2);
        let data = Contents::new(5);
        let p = {
            let (r, data) = (r.clone(), data.clone());
            thread::spawn(move || {
                for i in 1..=5 {
                    data.write(i);
                }
                for bulk in puts {
                    let objs: Vec<_> = bulk.iter().map(|&i| obj(i)).collect();
                    put(&r, &objs);
                }
            })
        };
        let c = {
            let (r, data) = (r.clone(), data.clone());
            thread::spawn(move || {
                let mut got = Vec::new();
                for &n in takes {
                    got.extend(take(&r, n));
                }
                for &i in &got {
                    data.check(i);
                }
                got
            })
        };
        p.join().unwrap();
        assert_eq!(c.join().unwrap(), vec![1, 2, 3, 4, 5]);
        assert!(r.is_empty());
        assert_eq!(r.len(), 0);
    });
}

/// Lockless mode, bulks: the second bulk of each side straddles the wrap
/// point (fill, copy and batched invalidation over two runs).
#[test]
fn spsc_producer_vs_consumer_bulk_exactly_once() {
    spsc_bulks_exactly_once(&[&[1, 2], &[3, 4, 5]], &[2, 3]);
}

/// Lockless mode, bulks of 2 (the small-bulk path): the third bulk of each
/// side straddles the wrap point, where the fill, the copy and the
/// invalidation go slot by slot; the producer's wrapped bulk needs the slot
/// the consumer's previous invalidation clears.
#[test]
fn spsc_small_bulks_across_the_wrap_exactly_once() {
    spsc_bulks_exactly_once(&[&[1], &[2, 3], &[4, 5]], &[1, 2, 2]);
}

/// Lockless mode, the consumer bursting whatever is there while the
/// producer's bulks arrive: every object exactly once, in order.
#[test]
fn spsc_burst_consumer_exactly_once() {
    model(|| {
        let r = ring_spsc(3, 2);
        let p = {
            let r = r.clone();
            thread::spawn(move || {
                put(&r, &[obj(1), obj(2)]);
                put(&r, &[obj(3), obj(4)]);
            })
        };
        let c = {
            let r = r.clone();
            thread::spawn(move || {
                let mut got = Vec::new();
                while got.len() < 4 {
                    let d = drain(&r);
                    if d.is_empty() {
                        thread::yield_now();
                    }
                    got.extend(d);
                }
                got
            })
        };
        p.join().unwrap();
        assert_eq!(c.join().unwrap(), vec![1, 2, 3, 4]);
        assert!(r.is_empty());
    });
}

/// Lockless mode: a reader checks emptiness while the single consumer takes
/// one object and invalidates a batch (two objects enqueued before, at most
/// one taken: "empty" is always wrong). The check runs in its own thread.
#[test]
fn spsc_is_empty_never_false_while_consumer_invalidates() {
    for (cap, batch) in [(2, 1), (4, 2), (3, 3)] {
        // Advance head/tail so the take below completes a batch.
        model(move || is_empty_races_a_take(ring_spsc(cap, batch), batch - 1, &[1, 2], 1));
    }
}

/// Lockless mode, three threads: the producer enqueues two objects and
/// raises a flag, the consumer takes one (completing an invalidation batch),
/// and a checker that sees the flag must not see the ring empty. Every
/// object exactly once.
#[test]
fn spsc_is_empty_sees_completed_enqueue_while_consumer_invalidates() {
    for (cap, batch) in [(2, 1), (2, 2)] {
        model(move || {
            let r = ring_spsc(cap, batch);
            for i in 0..batch - 1 {
                r.enqueue_bulk(&[obj(8 + i)]).unwrap();
                assert_eq!(take(&r, 1), vec![8 + i]);
            }
            let done = Arc::new(AtomicBool::new(false));
            let p = {
                let (r, done) = (r.clone(), done.clone());
                thread::spawn(move || {
                    r.enqueue_bulk(&[obj(1), obj(2)]).unwrap();
                    done.store(true, Ordering::Release);
                })
            };
            let c = {
                let r = r.clone();
                thread::spawn(move || take(&r, 1))
            };
            let e = {
                let (r, done) = (r.clone(), done.clone());
                thread::spawn(move || {
                    if done.load(Ordering::Acquire) {
                        assert!(!r.is_empty(), "false empty after a completed enqueue");
                    }
                })
            };
            p.join().unwrap();
            e.join().unwrap();
            assert_eq!(c.join().unwrap(), vec![1]);
            assert_eq!(drain(&r), vec![2]);
            assert!(r.is_empty());
        });
    }
}

/// The guarantees, with no retry: a dequeue succeeds when the objects it
/// asks for were enqueued (happens-before) and are in the ring, and an
/// enqueue that keeps the ring within capacity succeeds when every dequeue
/// that made room happens-before it, whatever the batching lag. The ring
/// stays full: one object is pre-filled, then the producer adds one and
/// the consumer takes one, in turns (capacity 2: consumed slots stay full
/// until a batch is invalidated, so the producer's slot may be lagging),
/// over the wrap. Every operation must succeed at its first try.
#[test]
fn capacity_and_dequeue_guarantees_hold_without_retry() {
    for (cap, batch) in [(2, 2), (2, 1), (3, 3)] {
        model(move || {
            let r = ring(cap, batch);
            for i in 0..cap - 1 {
                r.enqueue_bulk(&[obj(100 + i)]).unwrap();
            }
            // Turn: even = producer may enqueue, odd = consumer may dequeue.
            let turn = Arc::new(loom::sync::atomic::AtomicUsize::new(0));
            let rounds = 3;
            let p = {
                let (r, turn) = (r.clone(), turn.clone());
                thread::spawn(move || {
                    for k in 0..rounds {
                        // Acquire pairs with the consumer's Release below:
                        // its dequeue happens-before this enqueue.
                        while turn.load(Ordering::Acquire) != 2 * k {
                            thread::yield_now();
                        }
                        r.enqueue_bulk(&[obj(k + 1)])
                            .expect("enqueue within capacity refused");
                        turn.store(2 * k + 1, Ordering::Release);
                    }
                })
            };
            let c = {
                let (r, turn) = (r.clone(), turn.clone());
                thread::spawn(move || {
                    let mut got = Vec::new();
                    for k in 0..rounds {
                        // Acquire pairs with the producer's Release above.
                        while turn.load(Ordering::Acquire) != 2 * k + 1 {
                            thread::yield_now();
                        }
                        let mut out = [core::ptr::null_mut(); 1];
                        r.dequeue_bulk(&mut out)
                            .expect("dequeue of objects in the ring refused");
                        got.push(out[0] as usize);
                        turn.store(2 * k + 2, Ordering::Release);
                    }
                    got
                })
            };
            p.join().unwrap();
            let got = c.join().unwrap();
            assert_eq!(got.len(), rounds);
            assert_eq!(r.len(), cap - 1);
        });
    }
}

/// A newest-first dequeue (both locks, `seq` moved back) racing a
/// producer: the bulk whole, every object delivered exactly once, and the
/// producer's one-slot room check right on the slots the take-back frees.
#[test]
fn take_back_vs_producer_exactly_once() {
    for (cap, batch) in [(4, 2), (3, 1)] {
        model(move || {
            let r = ring(cap, batch);
            r.enqueue_bulk(&[obj(1), obj(2)]).unwrap();
            let p = {
                let r = r.clone();
                thread::spawn(move || {
                    while r.enqueue_bulk_as(1, &[obj(3)]).is_err() {
                        thread::yield_now();
                    }
                })
            };
            let mut back = vec![core::ptr::null_mut(); 2];
            r.dequeue_newest_bulk(&mut back).unwrap();
            let back: Vec<usize> = back.into_iter().map(|p| p as usize).collect();
            // The newest two at the instant: before the put, or after it.
            assert!(back == [1, 2] || back == [2, 3], "took {back:?}");
            p.join().unwrap();
            let mut got = back;
            got.extend(drain(&r));
            got.sort_unstable();
            assert_eq!(got, vec![1, 2, 3]);
            assert!(r.is_empty());
        });
    }
}

/// A newest-first dequeue racing a FIFO consumer whose take completes a
/// batch, so that its invalidation runs too: the consumer gets the oldest,
/// the take-back the newest, nothing twice, and the ring takes its whole
/// capacity again afterwards.
#[test]
fn take_back_vs_fifo_consumer_exactly_once() {
    model(|| {
        let r = ring(4, 2);
        // One object in and out first: the consumer's next take makes the
        // lag a batch and clears, racing the take-back.
        r.enqueue_bulk(&[obj(9)]).unwrap();
        assert_eq!(take(&r, 1), vec![9]);
        r.enqueue_bulk(&[obj(1), obj(2), obj(3)]).unwrap();
        let c = {
            let r = r.clone();
            thread::spawn(move || take(&r, 1))
        };
        let mut back = vec![core::ptr::null_mut(); 2];
        r.dequeue_newest_bulk(&mut back).unwrap();
        assert_eq!(back, [obj(2), obj(3)]);
        assert_eq!(c.join().unwrap(), vec![1]);
        assert!(r.is_empty());
        let all: Vec<_> = (10..14).map(obj).collect();
        r.enqueue_bulk(&all).unwrap();
        assert_eq!(drain(&r), vec![10, 11, 12, 13]);
    });
}

/// Two newest-first dequeues and a producer: each bulk whole, nothing
/// twice, and the ring's length right after them.
#[test]
fn two_take_backs_and_a_producer_exactly_once() {
    model(|| {
        let r = ring(4, 2);
        r.enqueue_bulk(&[obj(1), obj(2), obj(3)]).unwrap();
        let hs: Vec<_> = (0..2)
            .map(|k| {
                let r = r.clone();
                thread::spawn(move || {
                    if k == 1 {
                        put(&r, &[obj(4)]);
                    }
                    let mut out = vec![core::ptr::null_mut(); 2];
                    r.dequeue_newest_bulk(&mut out)
                        .map(|_| out.iter().map(|&p| p as usize).collect::<Vec<_>>())
                        .unwrap_or_default()
                })
            })
            .collect();
        let mut got: Vec<usize> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
        assert_eq!(r.len(), 4 - got.len());
        got.extend(drain(&r));
        got.sort_unstable();
        assert_eq!(got, vec![1, 2, 3, 4]);
    });
}

/// `is_empty` while a newest-first dequeue takes one of two objects: never
/// "empty".
#[test]
fn is_empty_never_false_during_a_take_back() {
    model(|| {
        let r = ring(4, 2);
        r.enqueue_bulk(&[obj(1), obj(2)]).unwrap();
        let t = {
            let r = r.clone();
            thread::spawn(move || {
                let mut out = vec![core::ptr::null_mut(); 1];
                r.dequeue_newest_bulk(&mut out).unwrap();
                out[0] as usize
            })
        };
        thread::yield_now();
        assert!(!r.is_empty(), "false empty with an object in the ring");
        assert_eq!(t.join().unwrap(), 2);
        assert_eq!(drain(&r), vec![1]);
    });
}
