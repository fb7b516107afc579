//! Multi-threaded stress of the ring's x86-64 fast paths, which loom and
//! Miri never run (they build without `cfg(ring_asm)`): the paired 16-byte
//! fills and clears, the partner check of `reads_through`, the AVX2 null
//! scan, `prefetchw` ahead of big copy-outs and the plain copy-out itself.
//! `mempool/build.rs` turns those paths on for x86-64 outside loom and
//! Miri, which is what this file is built for.
//!
//! Two producers and two consumers share a small ring, so that every few
//! bulks cross the wrap, and bulks and clears of every length start and end
//! on both halves of a 16-byte pair. Every object is a distinct address,
//! delivered exactly once, never null, with the payload its producer wrote
//! just before the enqueue. A lost object (a fill overwritten by a late
//! clear) shows as a ring that never hands out the last objects: the run
//! then stops at a deadline and fails, saying how many came out.
//!
//! What they catch, tried by breaking the asm paths on purpose: fills or
//! clears out of sequence order (the lone last slot before the pairs, the
//! four stores of the unrolled loop reversed, the wrapped run first) and,
//! with the pairs stored as two 8-byte halves upper first (as a CPU that
//! splits 16-byte stores may show them), the partner check left out on
//! either side: each failed one or more of these tests in every run, with
//! nulls handed out. The partner check left out with real 16-byte stores
//! passes here: on CPUs with AVX an aligned 16-byte store is one atomic
//! access, so only a CPU that splits it could show the difference.
#![cfg(all(target_arch = "x86_64", not(loom), not(miri)))]

use core::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mempool::{HeapRing, RingError, RingLayout};

/// Base of the synthetic object addresses (never dereferenced: the ring
/// only stores them), chosen so that no half of a slot is ever zero.
const BASE: usize = 0x5a5a_0000_0000;

/// Object `i`.
fn obj(i: usize) -> *mut c_void {
    (BASE + 8 * i) as *mut c_void
}

/// The payload a producer writes for object `i` before enqueuing it.
fn stamp(i: usize) -> u64 {
    (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1
}

/// Waits a little after a failed attempt: spins, so that a side polls
/// the other's stores closely (a mutation of the store order shows in a
/// window of a few stores), and yields now and then, so that the four
/// threads also make progress on fewer cores.
fn backoff(spins: &mut u32) {
    *spins = spins.wrapping_add(1);
    if spins.is_multiple_of(64) {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}

/// The longest a run may take before it counts as stuck (objects lost).
const DEADLINE: Duration = Duration::from_secs(60);

/// One stress run: `total` objects through `ring`, producers enqueuing
/// bulks of up to `max_put`, consumers taking up to `max_get` (bulks and
/// bursts in turn).
struct Run {
    ring: HeapRing,
    total: usize,
    max_put: usize,
    max_get: usize,
    /// Written by the producer before the enqueue, read by the consumer
    /// after the dequeue (Relaxed both): only the ring's Release fill and
    /// Acquire check order them.
    payload: Vec<AtomicU64>,
    /// How often each object came out.
    delivered: Vec<AtomicU8>,
    consumed: AtomicUsize,
    /// Set when every object came out, at the first failure, or at the
    /// deadline.
    stop: AtomicBool,
    failure: Mutex<Option<String>>,
}

impl Run {
    fn new(layout: RingLayout, total: usize, max_put: usize, max_get: usize) -> Arc<Run> {
        assert!(max_put <= layout.capacity() && max_get <= layout.capacity());
        Arc::new(Run {
            ring: HeapRing::new(layout),
            total,
            max_put,
            max_get,
            payload: (0..total).map(|_| AtomicU64::new(0)).collect(),
            delivered: (0..total).map(|_| AtomicU8::new(0)).collect(),
            consumed: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            failure: Mutex::new(None),
        })
    }

    fn stopped(&self) -> bool {
        // Relaxed: a flag to leave the loops; the results are read after
        // the joins.
        self.stop.load(Ordering::Relaxed)
    }

    /// Records the first failure and stops every thread.
    fn fail(&self, why: String) {
        self.failure.lock().unwrap().get_or_insert(why);
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Producer `p` of `producers`: objects `p, p + producers, ...`, in
    /// bulks whose lengths step through `1..=max_put` (7 is prime to every
    /// length tried, so each length, at each offset, comes up).
    fn produce(&self, p: usize, producers: usize) {
        let mut i = p;
        let mut k = p * 3;
        let mut bulk = Vec::with_capacity(self.max_put);
        let mut spins = 0u32;
        while i < self.total && !self.stopped() {
            let len = 1 + k % self.max_put;
            k += 7;
            bulk.clear();
            while bulk.len() < len && i < self.total {
                // Relaxed: see `payload`.
                self.payload[i].store(stamp(i), Ordering::Relaxed);
                bulk.push(obj(i));
                i += producers;
            }
            loop {
                match self.ring.enqueue_bulk(&bulk) {
                    Ok(()) => break,
                    Err(RingError::NoSpace { .. }) if !self.stopped() => backoff(&mut spins),
                    Err(RingError::NoSpace { .. }) => return,
                    Err(e) => return self.fail(format!("enqueue of {len}: {e}")),
                }
            }
        }
    }

    /// Consumer `c`: bulks of lengths stepping through `1..=max_get`, every
    /// third a burst; a bulk the ring cannot serve becomes a burst of the
    /// same length, so that the last objects come out too.
    fn consume(&self, c: usize) {
        let mut k = c * 11;
        let mut out = vec![core::ptr::null_mut(); self.max_get];
        let mut spins = 0u32;
        while !self.stopped() {
            let len = 1 + k % self.max_get;
            k += 5;
            let out = &mut out[..len];
            let n = if !k.is_multiple_of(3) && self.ring.dequeue_bulk(out).is_ok() {
                len
            } else {
                self.ring.dequeue_burst(out)
            };
            if let Err(why) = self.check(&out[..n]) {
                return self.fail(why);
            }
            if n == 0 {
                backoff(&mut spins);
            } else if self.consumed.fetch_add(n, Ordering::Relaxed) + n == self.total {
                self.stop.store(true, Ordering::Relaxed);
            }
        }
    }

    /// Each of `got` is an object of this run, out for the first time, with
    /// its producer's payload.
    fn check(&self, got: &[*mut c_void]) -> Result<(), String> {
        for (at, &o) in got.iter().enumerate() {
            let a = o as usize;
            if o.is_null() {
                return Err(format!("null at {at} of a bulk of {}", got.len()));
            }
            let i = a.wrapping_sub(BASE) / 8;
            if a < BASE || !a.is_multiple_of(8) || i >= self.total {
                return Err(format!("{a:#x} at {at} of {} is no object", got.len()));
            }
            if self.delivered[i].fetch_add(1, Ordering::Relaxed) != 0 {
                return Err(format!("object {i} delivered twice"));
            }
            // Relaxed: see `payload`.
            let seen = self.payload[i].load(Ordering::Relaxed);
            if seen != stamp(i) {
                return Err(format!(
                    "object {i}: payload {seen:#x}, its producer wrote {:#x}",
                    stamp(i)
                ));
            }
        }
        Ok(())
    }

    /// Runs two producers and two consumers to the end (or the deadline),
    /// then checks exactly-once delivery of every object.
    fn two_by_two(self: Arc<Run>) {
        let t0 = Instant::now();
        let mut threads = Vec::new();
        for p in 0..2 {
            let run = self.clone();
            threads.push(std::thread::spawn(move || run.produce(p, 2)));
        }
        for c in 0..2 {
            let run = self.clone();
            threads.push(std::thread::spawn(move || run.consume(c)));
        }
        while !self.stopped() {
            if t0.elapsed() > DEADLINE {
                self.fail(format!(
                    "stuck: {} of {} objects out after {DEADLINE:?} (objects lost, or a hole \
                     in the ring)",
                    self.consumed.load(Ordering::Relaxed),
                    self.total
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        for t in threads {
            t.join().expect("a test thread panicked");
        }
        if let Some(why) = self.failure.lock().unwrap().take() {
            panic!("{why}");
        }
        let missing = self
            .delivered
            .iter()
            .filter(|d| d.load(Ordering::Relaxed) != 1)
            .count();
        assert_eq!(missing, 0, "objects not delivered exactly once");
        assert_eq!(self.consumed.load(Ordering::Relaxed), self.total);
        assert!(self.ring.is_empty());
        assert_eq!(self.ring.len(), 0);
        eprintln!(
            "{} objects through a ring of {} slots (batch {}) in {:?}",
            self.total,
            self.ring.slots(),
            self.ring.batch(),
            t0.elapsed()
        );
    }
}

/// Objects per run: many in the release build (`make test-core`), fewer
/// in debug builds.
fn objects(release: usize) -> usize {
    if cfg!(debug_assertions) {
        release / 20
    } else {
        release
    }
}

/// A ring of 128 slots (capacity 100, batch 16), bulks of up to 72: every
/// other bulk crosses the wrap; fills and clears use the four-pair loop,
/// bulks of 16 and more the AVX2 null scan, dequeues of 64 and more
/// `prefetchw`, and invalidations clear 16 to 87 slots from any offset.
#[test]
fn fills_and_clears_across_the_wrap_2p2c() {
    let layout = RingLayout::for_capacity(100).unwrap();
    assert_eq!((layout.slots(), layout.batch()), (128, 16));
    Run::new(layout, objects(8_000_000), 72, 72).two_by_two();
}

/// A ring of 32 slots that clears every dequeued range at once (batch 1),
/// bulks of 1 to 15: fills and clears of every length start and end on
/// both halves of a pair, so both sides' room and fill checks keep landing
/// on an upper half just written (or cleared) together with its partner.
#[test]
fn bulks_straddling_the_pairs_2p2c() {
    let layout = RingLayout::with_batch(30, 1).unwrap();
    assert_eq!(layout.slots(), 32);
    Run::new(layout, objects(6_000_000), 15, 15).two_by_two();
}

/// A ring kept nearly full (capacity 31, batch 2, 32 slots, bulks up to
/// 31): producers check room in slots consumers are clearing one lag
/// behind, and most bulks wrap.
#[test]
fn nearly_full_ring_2p2c() {
    let layout = RingLayout::with_batch(31, 2).unwrap();
    assert_eq!(layout.slots(), 32);
    Run::new(layout, objects(6_000_000), 31, 31).two_by_two();
}
