//! Newest first: [`PtrRing::dequeue_newest_bulk`] and
//! [`PtrRing::dequeue_newest_burst`] take the objects enqueued last, and
//! [`PtrRing::enqueue_bulk_as`] names its caller, so that a caller can
//! tell whether those are the objects it gave back itself.
//!
//! # Newest first
//!
//! A ring hands out the objects enqueued longest ago, so every object of
//! a pool goes round: a pool of 65536 mbufs whose lcore writes three lines
//! of each touches 12 MB, where a LIFO store (DPDK's `stack`) keeps the
//! same few thousand mbufs in the CPU's caches. A newest-first dequeue
//! takes its objects back from the producer's end instead, as a stack
//! pops, while the plain dequeues go on taking the oldest:
//!
//! 1. it takes the consumer lock, then the producer lock (the only path
//!    that holds both, always in this order, so no two paths wait for
//!    each other). Every producer's fills are then complete and visible,
//!    so every slot of `[head, seq)` is full;
//! 2. copies out the newest `n` objects, positions `[seq - n, seq)`;
//! 3. clears those slots, last first, then moves `seq` back to `seq - n`.
//!
//! `head` does not move and no slot below `head` is touched, so the
//! consumer's batched invalidation goes on as before. The slots above the
//! new `seq` are free, as a producer's room check expects, and the next
//! enqueue fills them again. What changes for the lockless readers: `seq`
//! is no longer a total that only grows. The ring's length `seq - head`
//! stays exact (a take-back is a dequeue of `n`), and so do the inflight
//! counts of a direct pool, which read `seq` before `head`: their count is
//! never below the objects out at the instant `seq` was read, whether or
//! not a take-back came in between (`head` only grows).
//! [`totals`](PtrRing::totals) and the inflight totals (a direct pool's
//! `hold` and `release`) add the objects ever taken back to both indexes,
//! so that they still count every object handed out and given back. `len`
//! retries while `seq` differs between its two readings; a take-back and
//! an enqueue of the same size that both come between them go unseen, and
//! its count is then off by at most their size (never above the slot
//! count).
//!
//! A holder that dies in step 3 leaves a full prefix below `seq` and free
//! slots above it: what a producer that died filling its claim leaves,
//! which the producer lock's takeover repairs (`repair_producer` moves
//! `seq` back over the free slots). The objects it copied out and cleared
//! are gone with it; the others stay in the ring, once.
//!
//! The cost over a FIFO dequeue: a second lock, on the line the producers
//! write on every enqueue, and the clears of the slots it takes at once
//! (a FIFO dequeue clears in batches).

use core::ffi::c_void;

use super::runs::clear_run_from_top;
use super::small::copy_small;
use super::{PtrRing, RingError, SMALL_BULK_MAX};
use crate::sync::Ordering;

impl PtrRing {
    /// [`enqueue_bulk`](PtrRing::enqueue_bulk) that names its caller:
    /// `who` becomes [`last_putter`](PtrRing::last_putter) when the
    /// enqueue succeeds (stored while the producer side is held). A pool
    /// names the lcore, so that the lcore's next get can tell whether the
    /// newest objects are the ones it gave back.
    #[inline]
    pub fn enqueue_bulk_as(&self, who: u32, objs: &[*mut c_void]) -> Result<(), RingError> {
        self.enqueue_bulk_then(objs, || {
            // Relaxed: a hint for the next dequeue's choice, which is
            // correct whatever it reads.
            self.hdr.producer.last_putter.store(who, Ordering::Relaxed);
        })
    }

    /// The id the last [`enqueue_bulk_as`](PtrRing::enqueue_bulk_as)
    /// named, [`NOBODY`](super::NOBODY) before the first. Lockless; may be
    /// stale by the time the caller acts on it.
    #[inline]
    pub fn last_putter(&self) -> u32 {
        // Relaxed: a hint (see `enqueue_bulk_as`).
        self.hdr.producer.last_putter.load(Ordering::Relaxed)
    }

    /// Dequeues exactly `out.len()` objects, the newest ones (those
    /// enqueued last, back from the producer's end), or none: what
    /// [`dequeue_bulk`](PtrRing::dequeue_bulk) does from the other end,
    /// with the same errors. Takes both locks (see the module
    /// documentation of `newest.rs`). On a single-producer ring, whose
    /// producer takes no lock, it is `dequeue_bulk`.
    ///
    /// # Examples
    /// ```
    /// use core::ffi::c_void;
    /// use mempool::{HeapRing, RingError};
    ///
    /// let ring = HeapRing::with_capacity(8)?;
    /// let objs = [1u64, 2, 3, 4];
    /// let p = objs.each_ref().map(|o| o as *const u64 as *mut c_void);
    /// ring.enqueue_bulk(&p)?;
    ///
    /// let mut out = [core::ptr::null_mut(); 2];
    /// ring.dequeue_newest_bulk(&mut out)?; // the last two in
    /// assert_eq!(out, [p[2], p[3]]);
    /// ring.dequeue_bulk(&mut out[..1])?; // the oldest, as ever
    /// assert_eq!(out[0], p[0]);
    /// assert_eq!(ring.len(), 1);
    /// # Ok::<(), RingError>(())
    /// ```
    pub fn dequeue_newest_bulk(&self, out: &mut [*mut c_void]) -> Result<(), RingError> {
        let n = out.len();
        self.fits(n)?;
        // Every other failure (too few, a poisoned side) is `NotEnough`,
        // as `dequeue_bulk` reports them.
        if self.take_back(out) {
            Ok(())
        } else {
            Err(RingError::NotEnough { requested: n })
        }
    }

    /// [`dequeue_newest_bulk`](PtrRing::dequeue_newest_bulk) for a pool's
    /// get: whether it took `out.len()` objects (`false`, having taken
    /// none, on every error; `true` for an empty `out`), with the
    /// single-producer case out of line (a pool never asks it there), so
    /// that a caller inlining it keeps a small frame.
    #[inline(always)]
    pub(crate) fn take_back(&self, out: &mut [*mut c_void]) -> bool {
        let n = out.len();
        if n == 0 || n > self.hdr.config.capacity {
            return n == 0;
        }
        if self.hdr.config.single_producer {
            return self.dequeue_bulk_out_of_line(out);
        }
        if n == 1 {
            return self.take_back_one(&mut out[0]);
        }
        self.dequeue_newest(out, true, || {}) != 0
    }

    /// [`dequeue_newest`](PtrRing::dequeue_newest) of exactly one object,
    /// into `out`: a function of its own, without the bulk's run split and
    /// copies, so that it needs no stack frame (the general one saves six
    /// registers), as the FIFO side has `dequeue_one`. `false`, with
    /// nothing taken, on an empty ring or a poisoned side.
    #[inline(never)]
    fn take_back_one(&self, out: &mut *mut c_void) -> bool {
        let Ok(_consumer) = self.consumer_lock() else {
            return false;
        };
        let Ok(_producer) = self.producer_lock() else {
            return false;
        };
        // Relaxed, both, and the plain read: as in `dequeue_newest`.
        let h = self.hdr.consumer.head.load(Ordering::Relaxed);
        let s = self.hdr.producer.seq.load(Ordering::Relaxed);
        if s == h {
            return false;
        }
        let first = s.wrapping_sub(1);
        let slot = self.slot(first);
        *out = slot.load(Ordering::Relaxed) as *mut c_void;
        #[cfg(any(loom, feature = "crash-points"))]
        if self.crash_taking_back(first, 1) {
            return true;
        }
        // Release, as the clears in `dequeue_newest`.
        slot.store(0, Ordering::Release);
        self.hand_back_seq(first, 1);
        true
    }

    /// [`dequeue_bulk`](PtrRing::dequeue_bulk) as a call, for
    /// [`take_back`](PtrRing::take_back)'s case that never happens.
    #[cold]
    #[inline(never)]
    fn dequeue_bulk_out_of_line(&self, out: &mut [*mut c_void]) -> bool {
        self.dequeue_bulk(out).is_ok()
    }

    /// Dequeues up to `out.len()` of the newest objects into the front of
    /// `out` and returns how many: [`dequeue_burst`](PtrRing::dequeue_burst)
    /// from the producer's end, as
    /// [`dequeue_newest_bulk`](PtrRing::dequeue_newest_bulk).
    pub fn dequeue_newest_burst(&self, out: &mut [*mut c_void]) -> usize {
        let max = out.len().min(self.hdr.config.capacity);
        if max == 0 {
            return 0;
        }
        if self.hdr.config.single_producer {
            return self.dequeue_burst(out);
        }
        self.dequeue_newest(&mut out[..max], false, || {})
    }

    /// Dequeues the newest objects of the ring into `out` (`1 <= out.len()
    /// <= capacity`): exactly `out.len()` or none with `exact`, else as
    /// many as there are up to `out.len()`, into the front of `out` in
    /// sequence order. Returns how many; `locked` runs before the consumer
    /// side is released when that is not 0. Takes both locks, whatever the
    /// consumer side's single flag says (a dequeue is under its contract);
    /// never called on a single-producer ring. Out of line: its callers
    /// pay a call, the FIFO paths none of its code.
    #[inline(never)]
    pub(super) fn dequeue_newest(
        &self,
        out: &mut [*mut c_void],
        exact: bool,
        locked: impl FnOnce(),
    ) -> usize {
        let Ok(_consumer) = self.consumer_lock() else {
            return 0;
        };
        let Ok(_producer) = self.producer_lock() else {
            return 0;
        };
        // Relaxed, both: each is written only under the lock of its side,
        // which we hold, and the previous holders' writes happen-before
        // our acquisitions.
        let h = self.hdr.consumer.head.load(Ordering::Relaxed);
        let s = self.hdr.producer.seq.load(Ordering::Relaxed);
        let avail = s.wrapping_sub(h);
        debug_assert!(avail <= self.slots(), "producer index behind the head");
        let n = if exact {
            if avail < out.len() {
                return 0;
            }
            out.len()
        } else {
            out.len().min(avail)
        };
        if n == 0 {
            return 0;
        }
        let first = s.wrapping_sub(n);
        // Plain reads are race-free: every fill of `[h, s)` happened
        // before the producer lock came to us, and nobody else writes
        // these slots while we hold both sides. A small bulk that does
        // not wrap (the common take-back: what the caller's last put
        // gave) is copied as the FIFO paths copy theirs, without the
        // general copy's run split and size dispatch. (A single object
        // comes here only from a burst: `take_back` has `take_back_one`.)
        let (a, b) = self.runs(first, n);
        if (2..=SMALL_BULK_MAX).contains(&n) && b.is_empty() {
            copy_small(a, &mut out[..n]);
        } else {
            Self::copy_out((a, b), &mut out[..n]);
        }
        // Last slot first, then `seq`: see the module documentation for a
        // holder that dies in between.
        #[cfg(any(loom, feature = "crash-points"))]
        if self.crash_taking_back(first, n) {
            return n;
        }
        // Release stores, pairing with the Acquire room check of the next
        // producer (which follows our unlock anyway) and with the Acquire
        // slot loads of `is_empty` and the repairs. The wrapped part (`b`)
        // holds the newest.
        clear_run_from_top(b);
        clear_run_from_top(a);
        self.hand_back_seq(first, n);
        locked();
        n
    }

    /// The end of a take-back of `n` objects from `first` on, both sides
    /// held and the slots cleared: moves `seq` back to `first` and counts
    /// the `n` taken back.
    #[inline(always)]
    fn hand_back_seq(&self, first: usize, n: usize) {
        // Release pairs with the Acquire `seq` loads of `len` and of the
        // inflight totals.
        self.hdr.producer.seq.store(first, Ordering::Release);
        // Relaxed: statistics (`totals`); written under both locks.
        let back = self.hdr.producer.taken_back.load(Ordering::Relaxed);
        self.hdr
            .producer
            .taken_back
            .store(back.wrapping_add(n), Ordering::Relaxed);
    }
}

/// A newest-first dequeue that died holding both sides, emulated as in
/// `repair.rs`: the dead holder's id in both lock words, the slots as it
/// left them.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::owner::{self, Takeover, TEST_DEAD as DEAD};
    use crate::{HeapRing, RingLayout};

    fn obj(i: usize) -> *mut c_void {
        i as *mut c_void
    }

    /// Objects 1 to 5 in a ring of 8 (batch 1), and a take-back of the
    /// newest three that died after clearing the last of them.
    fn died_taking_back() -> HeapRing {
        owner::set_test_liveness();
        owner::set_report(|t: &Takeover| assert_eq!(t.dead, DEAD));
        let r = HeapRing::new(RingLayout::with_batch(8, 1).unwrap());
        let objs: Vec<_> = (1..=5).map(obj).collect();
        r.enqueue_bulk(&objs).unwrap();
        assert!(r.hdr.consumer.lock.try_take(DEAD));
        assert!(r.hdr.producer.lock.try_take(DEAD));
        r.slot(4).store(0, Ordering::Relaxed);
        r
    }

    /// Every take-back size at every position of a ring of 16, wrapped or
    /// not (the single-object, small-run and general copies): the newest
    /// `n` in sequence order, their slots free, the rest left oldest first.
    #[test]
    fn take_backs_of_every_size_at_every_offset() {
        for start in 0..16 {
            for held in 1..=12 {
                for n in 1..=held {
                    let r = HeapRing::new(RingLayout::with_batch(16, 1).unwrap());
                    // Move the ring's indexes to `start`.
                    let pad: Vec<_> = (1000..1000 + start).map(obj).collect();
                    let mut sink = vec![core::ptr::null_mut(); 16];
                    r.enqueue_bulk(&pad).unwrap();
                    assert_eq!(r.dequeue_burst(&mut sink), start);
                    let objs: Vec<_> = (1..=held).map(obj).collect();
                    r.enqueue_bulk(&objs).unwrap();
                    let mut out = vec![core::ptr::null_mut(); n];
                    assert!(r.take_back(&mut out), "start {start}, {n} of {held}");
                    assert_eq!(out[..], objs[held - n..], "start {start}, {n} of {held}");
                    assert_eq!(r.len(), held - n);
                    // The freed slots take a full ring's worth again.
                    let more: Vec<_> = (100..100 + n).map(obj).collect();
                    r.enqueue_bulk(&more).unwrap();
                    let mut rest = vec![core::ptr::null_mut(); held];
                    assert_eq!(r.dequeue_burst(&mut rest), held);
                    let want: Vec<_> = objs[..held - n].iter().chain(&more).copied().collect();
                    assert_eq!(rest, want, "start {start}, {n} of {held}");
                }
            }
        }
    }

    #[test]
    fn a_dead_take_back_leaves_the_uncleared_objects_once() {
        let r = died_taking_back();
        let mut out = [core::ptr::null_mut(); 8];
        // The consumer's takeover: objects 1 to 4, the fifth gone with
        // the dead holder.
        assert_eq!(r.dequeue_burst(&mut out), 4);
        assert_eq!(out[..4], (1..=4).map(obj).collect::<Vec<_>>()[..]);
        // The producer's takeover moves `seq` back over the cleared slot:
        // the next enqueue continues the run, and the whole capacity fits.
        r.enqueue_bulk(&(10..18).map(obj).collect::<Vec<_>>())
            .unwrap();
        assert_eq!(r.len(), 8);
        assert_eq!(r.dequeue_burst(&mut out), 8);
        assert_eq!(out[..], (10..18).map(obj).collect::<Vec<_>>()[..]);
        assert_eq!(r.takeovers(), (1, 1));
    }

    #[test]
    fn a_take_back_after_a_dead_one_takes_the_newest_left() {
        let r = died_taking_back();
        let mut out = [core::ptr::null_mut(); 2];
        r.dequeue_newest_bulk(&mut out).unwrap();
        assert_eq!(out, [obj(3), obj(4)]);
        assert_eq!(r.len(), 2);
        assert_eq!(r.takeovers(), (1, 1));
        r.dequeue_bulk(&mut out).unwrap();
        assert_eq!(out, [obj(1), obj(2)]);
        assert!(r.is_empty());
    }
}
