//! loom model of the producer's one-slot room check: a bulk enqueue looks
//! only at the last slot it needs, which is sound because the consumer
//! clears consumed slots in sequence order. The model races an enqueue of
//! two objects into slots that a concurrent dequeue is clearing; if the
//! clears ran in another order (the kernel's reverse order), the producer
//! could see its last slot free, fill the first one, and have the consumer
//! clear the new object away: the exactly-once check below catches that.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p mempool --release --test loom_ring_room`
#![cfg(loom)]

use core::ffi::c_void;

use loom::sync::Arc;
use loom::thread;
use mempool::{HeapRing, RingLayout};

mod loom_model;
use loom_model::model;

fn obj(i: usize) -> *mut c_void {
    i as *mut c_void
}

/// A ring of capacity 3, batch 2 (4 slots), locked or single-producer /
/// single-consumer.
fn ring(single: bool) -> Arc<HeapRing> {
    let layout = RingLayout::with_batch(3, 2).unwrap();
    // SAFETY: every model runs one producer thread and one consumer thread.
    let layout = unsafe {
        layout
            .with_single_producer(single)
            .with_single_consumer(single)
    };
    let r = Arc::new(HeapRing::new(layout));
    assert_eq!(r.slots(), 4);
    r
}

fn check(single: bool) {
    model(move || {
        let r = ring(single);
        // Sequence 0..3 filled, 0 consumed (not yet cleared: lag 1), then
        // sequence 3: slots 0..3 all hold something or await a clear.
        r.enqueue_bulk(&[obj(1), obj(2), obj(3)]).unwrap();
        let mut one = [core::ptr::null_mut(); 1];
        r.dequeue_bulk(&mut one).unwrap();
        assert_eq!(one[0], obj(1));
        r.enqueue_bulk(&[obj(4)]).unwrap();
        let consumer = {
            let r = r.clone();
            thread::spawn(move || {
                // Takes sequence 1 and 2; the lag reaches the batch, so it
                // clears slots 0, 1 and 2 while the producer runs.
                let mut two = [core::ptr::null_mut(); 2];
                r.dequeue_bulk(&mut two).unwrap();
                assert_eq!(two, [obj(2), obj(3)]);
            })
        };
        // Sequence 4 and 5: slots 0 and 1, the last of which the consumer
        // may clear before the first.
        while r.enqueue_bulk(&[obj(5), obj(6)]).is_err() {
            thread::yield_now();
        }
        consumer.join().unwrap();
        let mut rest = [core::ptr::null_mut(); 3];
        r.dequeue_bulk(&mut rest)
            .expect("every object enqueued is still in the ring");
        assert_eq!(rest, [obj(4), obj(5), obj(6)]);
        assert!(r.is_empty());
    });
}

/// The same race against a short invalidation (two slots), which the
/// consumer does inline: capacity 3, batch 2, 4 slots. The producer's bulk
/// goes past the capacity (as a double free would): it may fail, but must
/// never overwrite an object or lose one.
fn check_short(single: bool) {
    model(move || {
        let r = ring(single);
        // Sequence 0..3, sequence 0 consumed (lag 1, not cleared), then
        // sequence 3: the producer is at sequence 4 (slot 0).
        r.enqueue_bulk(&[obj(1), obj(2), obj(3)]).unwrap();
        let mut one = [core::ptr::null_mut(); 1];
        r.dequeue_bulk(&mut one).unwrap();
        r.enqueue_bulk(&[obj(4)]).unwrap();
        let consumer = {
            let r = r.clone();
            thread::spawn(move || {
                // Takes sequence 1; the lag reaches the batch: slots 0 and 1
                // are cleared inline while the producer runs.
                let mut one = [core::ptr::null_mut(); 1];
                r.dequeue_bulk(&mut one).unwrap();
                assert_eq!(one[0], obj(2));
            })
        };
        // Sequence 4 and 5: slots 0 and 1.
        while r.enqueue_bulk(&[obj(5), obj(6)]).is_err() {
            thread::yield_now();
        }
        consumer.join().unwrap();
        let mut three = [core::ptr::null_mut(); 3];
        r.dequeue_bulk(&mut three)
            .expect("every object enqueued is still in the ring");
        let mut last = [core::ptr::null_mut(); 1];
        r.dequeue_bulk(&mut last)
            .expect("every object enqueued is still in the ring");
        assert_eq!(
            [three[0], three[1], three[2], last[0]],
            [obj(3), obj(4), obj(5), obj(6)]
        );
        assert!(r.is_empty());
    });
}

#[test]
fn room_check_vs_short_invalidation_locked() {
    check_short(false);
}

#[test]
fn room_check_vs_short_invalidation_single_producer_consumer() {
    check_short(true);
}

#[test]
fn room_check_vs_invalidation_locked() {
    check(false);
}

#[test]
fn room_check_vs_invalidation_single_producer_consumer() {
    check(true);
}
