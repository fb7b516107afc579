//! The producer side: [`PtrRing::enqueue_bulk`] and its single-object path.

use core::ffi::c_void;

use super::runs::{any_null, fill_run, prefetch_runs_for_write};
use super::small::{any_null_small, fill_small};
use super::{PtrRing, RingError, SmallRange, SMALL_BULK_MAX};
use crate::sync::{Ordering, Poisoned, SpinGuard};

impl PtrRing {
    /// Takes the producer lock, unless the ring is single-producer (see
    /// `repair.rs` for the takeover; `Err` when the side is poisoned).
    #[inline(always)]
    fn producer_guard(&self) -> Result<Option<SpinGuard<'_>>, Poisoned> {
        if self.hdr.config.single_producer {
            Ok(None)
        } else {
            self.producer_lock().map(Some)
        }
    }

    /// Enqueues all of `objs`, or none of them.
    ///
    /// Fails with [`RingError::NullObject`] for a null pointer (checked
    /// first), [`RingError::BulkTooLarge`] above capacity and
    /// [`RingError::NoSpace`] when any slot needed is still full (occupied or
    /// consumed but not yet invalidated). An empty slice succeeds.
    ///
    /// In single-producer mode the caller guarantees that no other enqueue
    /// runs at the same time and that the previous one happens-before this
    /// one (module documentation, "Modes").
    ///
    /// # Examples
    /// ```
    /// use core::ffi::c_void;
    /// use mempool::{HeapRing, RingError};
    ///
    /// let ring = HeapRing::with_capacity(2)?;
    /// let objs = [1u64, 2, 3];
    /// let [a, b, c] = objs.each_ref().map(|o| o as *const u64 as *mut c_void);
    ///
    /// let null = core::ptr::null_mut();
    /// assert_eq!(ring.enqueue_bulk(&[a, null]), Err(RingError::NullObject { index: 1 }));
    /// assert_eq!(
    ///     ring.enqueue_bulk(&[a, b, c]),
    ///     Err(RingError::BulkTooLarge { requested: 3, capacity: 2 })
    /// );
    /// ring.enqueue_bulk(&[a, b])?;
    /// assert_eq!(ring.enqueue_bulk(&[c]), Err(RingError::NoSpace { requested: 1 }));
    /// assert_eq!(ring.len(), 2); // the failures left the ring as it was
    /// # Ok::<(), RingError>(())
    /// ```
    #[inline]
    pub fn enqueue_bulk(&self, objs: &[*mut c_void]) -> Result<(), RingError> {
        self.enqueue_bulk_then(objs, || {})
    }

    /// [`enqueue_bulk`](PtrRing::enqueue_bulk) that runs `locked` after the
    /// fills, while the producer side is still held (its lock, or the
    /// single-producer contract), and only when the enqueue succeeds: the
    /// shared release counter is written there, so every writer of it holds
    /// the producer side. Always inlined, as
    /// [`dequeue_bulk_then`](PtrRing::dequeue_bulk_then), for a second call
    /// site in one function's reach.
    #[inline(always)]
    pub(crate) fn enqueue_bulk_then(
        &self,
        objs: &[*mut c_void],
        locked: impl FnOnce(),
    ) -> Result<(), RingError> {
        let n = objs.len();
        if n == 1 {
            return self.enqueue_one_then(objs[0], locked);
        }
        if n == 0 {
            return Ok(());
        }
        self.fits(n)?;
        // Branch-free null scan (one test for the whole bulk), before the
        // lock; the position only on the error path.
        let null = if n <= SMALL_BULK_MAX {
            any_null_small(objs)
        } else {
            any_null(objs)
        };
        if null {
            let index = objs.iter().position(|o| o.is_null()).unwrap_or(0);
            return Err(RingError::NullObject { index });
        }
        let Ok(_guard) = self.producer_guard() else {
            return Err(self.refused_enqueue(n));
        };
        if n <= SMALL_BULK_MAX {
            self.produce_small(objs)?;
            locked();
            return Ok(());
        }
        // Relaxed: `seq` is only written by the producer side, and the
        // previous writer happens-before us (the producer lock we hold, or
        // the single-producer contract).
        let p = self.hdr.producer.seq.load(Ordering::Relaxed);
        // Clears happen in sequence order (one consumer at a time, each
        // clearing its range first to last, each invalidation
        // happening-before the next), so the bulk's last slot (with its
        // pair partner, see `reads_through`) being free means every slot of
        // it is, and every one of those clears happens-before our fills
        // below. Slots are only ever filled by the producer side, so a slot
        // read free stays free until we fill it.
        if !self.reads_through(p, n, false) {
            return Err(RingError::NoSpace { requested: n });
        }
        let (a, b) = self.runs(p, n);
        // Big bulks take their lines for writing first, once the room
        // check passed: a failing enqueue takes no line from a consumer.
        prefetch_runs_for_write((a, b));
        if !self.publish_seq(p, objs) {
            return Ok(());
        }
        // Fills in sequence order (first run, then the wrapped one): the
        // consumer relies on it (see `dequeue_bulk`).
        let (oa, ob) = objs.split_at(a.len());
        fill_run(a, oa);
        if !b.is_empty() {
            fill_run(b, ob);
        }
        locked();
        Ok(())
    }

    /// `enqueue_bulk` of one object.
    ///
    /// The lock is taken in its own branch rather than through an optional
    /// guard, so that the unlock needs no test.
    #[inline(always)]
    pub(crate) fn enqueue_one(&self, obj: *mut c_void) -> Result<(), RingError> {
        self.enqueue_one_then(obj, || {})
    }

    /// [`enqueue_one`](PtrRing::enqueue_one) that runs `locked` as
    /// [`enqueue_bulk_then`](PtrRing::enqueue_bulk_then) does.
    #[inline(always)]
    pub(crate) fn enqueue_one_then(
        &self,
        obj: *mut c_void,
        locked: impl FnOnce(),
    ) -> Result<(), RingError> {
        if obj.is_null() {
            return Err(RingError::NullObject { index: 0 });
        }
        if self.hdr.config.single_producer {
            self.produce_one(obj)?;
            locked();
            return Ok(());
        }
        let Ok(_guard) = self.producer_lock() else {
            return Err(self.refused_enqueue(1));
        };
        self.produce_one(obj)?;
        locked();
        Ok(())
    }

    /// Waits until no enqueue holds the producer side: takes the producer
    /// lock (taking it over from a dead holder, as every enqueue does) and
    /// lets it go. A pool's final release calls it before the memory may
    /// be freed: a put by a caller without a slot counts its release while
    /// it still holds the lock (see `enqueue_bulk_then`), so the count can
    /// be visible before that put's unlock, its last store to the ring.
    /// The Acquire CAS of the lock pairs with that unlock's Release store.
    /// Nothing to wait for on a single-producer ring (its enqueue counts
    /// last and unlocks nothing: `producer_guard` takes no lock there) or a
    /// poisoned side (nobody can hold it).
    pub(crate) fn wait_producers(&self) {
        let _ = self.producer_guard();
    }

    /// Moves the producer's `seq` past the bulk `objs` claims from `p`,
    /// before its fills, so a consumer can never be seen ahead of `seq`
    /// (pairs, through the Release fills and the consumer's Release `head`
    /// store in `publish_head`, with the Acquire `head` load in `len`).
    /// Release (a plain store on x86) pairs with the first Acquire `seq`
    /// load in `len`: a reader that sees this `seq` sees every `head` store
    /// that happens-before this enqueue, so its `head` is not from an older
    /// lap. False when a crash point (tests only) stopped the enqueue here,
    /// the fills left undone.
    #[inline(always)]
    fn publish_seq(&self, p: usize, objs: &[*mut c_void]) -> bool {
        self.hdr
            .producer
            .seq
            .store(p.wrapping_add(objs.len()), Ordering::Release);
        #[cfg(any(loom, feature = "crash-points"))]
        if self.crash_filling(p, objs) {
            return false;
        }
        true
    }

    /// The bulk enqueue of 2 to [`SMALL_BULK_MAX`] objects (no null among
    /// them), with the producer side held: one contiguous fill where the
    /// range does not wrap, run by run in sequence order where it does, as
    /// `consume_small` takes them; the same room check and order as a big
    /// bulk.
    #[inline(always)]
    fn produce_small(&self, objs: &[*mut c_void]) -> Result<(), RingError> {
        let n = objs.len();
        // Relaxed: as in `enqueue_bulk`, the previous writer of `seq`
        // happens-before us (producer lock or single-producer contract).
        let p = self.hdr.producer.seq.load(Ordering::Relaxed);
        // Acquire: as in `enqueue_bulk_then`, the last slot (and its pair
        // partner) free means every slot of the range is, its clear visible.
        let run = match self.small_range(p, n, false) {
            SmallRange::NotReady => return Err(RingError::NoSpace { requested: n }),
            SmallRange::Run(run) => Some(run),
            SmallRange::Wraps => None,
        };
        if !self.publish_seq(p, objs) {
            return Ok(());
        }
        match run {
            Some(run) => fill_small(run, objs),
            None => {
                // Fills in sequence order: first run, then the wrapped one.
                let (a, b) = self.runs(p, n);
                let (oa, ob) = objs.split_at(a.len());
                fill_small(a, oa);
                fill_small(b, ob);
            }
        }
        Ok(())
    }

    /// [`enqueue_one`](PtrRing::enqueue_one) with the producer side already
    /// held (its lock, or the single-producer contract).
    #[inline(always)]
    fn produce_one(&self, obj: *mut c_void) -> Result<(), RingError> {
        // Relaxed: as in `enqueue_bulk`, the previous writer of `seq`
        // happens-before us (producer lock or single-producer contract).
        let p = self.hdr.producer.seq.load(Ordering::Relaxed);
        let s = self.slot(p);
        // Acquire pairs with the Release clears in `clear_inline` and
        // `clear_run` (see `enqueue_bulk`).
        if s.load(Ordering::Acquire) != 0 {
            return Err(RingError::NoSpace { requested: 1 });
        }
        // Before the fill; Release pairs with the first Acquire `seq` load
        // in `len` (see `enqueue_bulk`).
        self.hdr
            .producer
            .seq
            .store(p.wrapping_add(1), Ordering::Release);
        // Release pairs with the Acquire loads in `dequeue_bulk`,
        // `consume_one`, `dequeue_burst` and `is_empty`.
        s.store(obj as usize, Ordering::Release);
        Ok(())
    }
}
