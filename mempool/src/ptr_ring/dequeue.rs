//! The consumer side: [`PtrRing::dequeue_bulk`], [`PtrRing::dequeue_burst`],
//! their single-object path, and the batched invalidation of consumed slots.

use core::ffi::c_void;

use super::runs::{clear_run, copy_run, prefetch_runs_for_write};
use super::small::{clear_small, copy_small};
use super::{PtrRing, RingError, SmallRange, SMALL_BULK_MAX};
use crate::sync::{AtomicUsize, Ordering, Poisoned, SpinGuard};

impl PtrRing {
    /// Takes the consumer lock, unless the ring is single-consumer (see
    /// `repair.rs` for the takeover; `Err` when the side is poisoned).
    #[inline(always)]
    fn consumer_guard(&self) -> Result<Option<SpinGuard<'_>>, Poisoned> {
        if self.hdr.config.single_consumer {
            Ok(None)
        } else {
            self.consumer_lock().map(Some)
        }
    }

    /// Dequeues exactly `out.len()` objects into `out`, or none.
    ///
    /// Fails with [`RingError::NotEnough`] (ring and `out` unchanged) when
    /// fewer are in the ring, with [`RingError::BulkTooLarge`] above capacity.
    /// An empty slice succeeds.
    ///
    /// In single-consumer mode the caller guarantees that no other dequeue
    /// (bulk or burst) runs at the same time and that the previous one
    /// happens-before this one (module documentation, "Modes").
    ///
    /// # Examples
    /// ```
    /// use core::ffi::c_void;
    /// use mempool::{HeapRing, RingError};
    ///
    /// let ring = HeapRing::with_capacity(4)?;
    /// let objs = [1u64, 2, 3];
    /// let ptrs = objs.each_ref().map(|o| o as *const u64 as *mut c_void);
    /// ring.enqueue_bulk(&ptrs)?;
    ///
    /// let mut out = [core::ptr::null_mut(); 4];
    /// // Four asked, three there: nothing is taken.
    /// assert_eq!(ring.dequeue_bulk(&mut out), Err(RingError::NotEnough { requested: 4 }));
    /// ring.dequeue_bulk(&mut out[..2])?;
    /// assert_eq!(out[..2], ptrs[..2]);
    /// assert_eq!(ring.len(), 1);
    /// # Ok::<(), RingError>(())
    /// ```
    #[inline]
    pub fn dequeue_bulk(&self, out: &mut [*mut c_void]) -> Result<(), RingError> {
        self.dequeue_bulk_then(out, || {})
    }

    /// [`dequeue_bulk`](PtrRing::dequeue_bulk) that runs `locked` after
    /// taking the objects and before releasing the consumer side (its lock,
    /// or within the single-consumer contract), and only when the dequeue
    /// succeeds: a counter that only consumers write can then be updated
    /// with a plain load and store, no atomic RMW. Always inlined, so a
    /// second call site in one function's reach (a caller inlining both an
    /// lcore and a shared path) does not make the compiler call both out of
    /// line.
    #[inline(always)]
    pub(crate) fn dequeue_bulk_then(
        &self,
        out: &mut [*mut c_void],
        locked: impl FnOnce(),
    ) -> Result<(), RingError> {
        let n = out.len();
        if n == 0 {
            return Ok(());
        }
        self.fits(n)?;
        if n == 1 {
            out[0] = self
                .dequeue_one_then(locked)
                .ok_or(RingError::NotEnough { requested: 1 })?;
            return Ok(());
        }
        let Ok(_guard) = self.consumer_guard() else {
            return Err(self.refused_dequeue(n));
        };
        if n <= SMALL_BULK_MAX {
            if !self.consume_small(out) {
                return Err(RingError::NotEnough { requested: n });
            }
            locked();
            return Ok(());
        }
        // Relaxed: `head` is only written by the consumer side, and the
        // previous writer happens-before us (the consumer lock we hold, or
        // the single-consumer contract).
        let h = self.hdr.consumer.head.load(Ordering::Relaxed);
        // Acquire pairs with the Release fill in `enqueue_bulk` /
        // `enqueue_one`. Slots are filled in sequence order (one producer at
        // a time, in order, each enqueue happening-before the next), so the
        // last one being full means all `n` are, and their fills
        // happen-before this load. `n <= capacity` keeps `h + n - 1` clear
        // of the previous lap's consumed-but-not-invalidated slots
        // (`head - tail < batch`, `slots >= capacity + batch - 1`).
        if !self.reads_through(h, n, true) {
            return Err(RingError::NotEnough { requested: n });
        }
        Self::copy_out(self.runs(h, n), out);
        #[cfg(any(loom, feature = "crash-points"))]
        if crate::crash::before_head() && crate::crash::die() {
            return Ok(());
        }
        self.publish_head(h.wrapping_add(n), Clears::Runs);
        locked();
        Ok(())
    }

    /// `dequeue_bulk` of one object: `None` when the ring is empty.
    ///
    /// Locked in its own branch as in [`enqueue_one`](PtrRing::enqueue_one),
    /// and with its invalidation inline (see `consume_one`): a caller that
    /// inlines it stays a leaf function with no stack frame.
    #[inline(always)]
    pub(crate) fn dequeue_one(&self) -> Option<*mut c_void> {
        self.dequeue_one_then(|| {})
    }

    /// [`dequeue_one`](PtrRing::dequeue_one) that runs `locked` as
    /// [`dequeue_bulk_then`](PtrRing::dequeue_bulk_then) does.
    #[inline(always)]
    pub(crate) fn dequeue_one_then(&self, locked: impl FnOnce()) -> Option<*mut c_void> {
        if self.hdr.config.single_consumer {
            let obj = self.consume_one()?;
            locked();
            return Some(obj);
        }
        let Ok(_guard) = self.consumer_lock() else {
            return None;
        };
        let obj = self.consume_one()?;
        locked();
        Some(obj)
    }

    /// [`dequeue_one`](PtrRing::dequeue_one) with the consumer side already
    /// held (its lock, or the single-consumer contract).
    #[inline(always)]
    fn consume_one(&self) -> Option<*mut c_void> {
        // Relaxed: as in `dequeue_bulk`, the previous writer of `head`
        // happens-before us (consumer lock or single-consumer contract).
        let h = self.hdr.consumer.head.load(Ordering::Relaxed);
        // Acquire pairs with the Release fill in `fill_run` / `produce_one`
        // (as in `dequeue_bulk`, for a bulk of one).
        let obj = self.slot(h).load(Ordering::Acquire);
        if obj == 0 {
            return None;
        }
        // Every clear inline: before this dequeue `head - tail < batch`, so
        // a due range is exactly `batch` slots long, and a call to
        // `invalidate` would make every caller save registers around it.
        self.publish_head(h.wrapping_add(1), Clears::Single);
        Some(obj as *mut c_void)
    }

    /// The bulk dequeue of 2 to [`SMALL_BULK_MAX`] objects, with the
    /// consumer side held: one contiguous copy where the range does not
    /// wrap, slot by slot where it does, and the invalidation of
    /// `Clears::Small`. The runs, the copy's size
    /// classes and the paired clears of a big bulk cost a bulk of 4 about
    /// as many instructions as a bulk of 32 (their setup), twice what
    /// `rte_ring` spends on it. `false`, with nothing taken, when fewer
    /// than `out.len()` objects are in the ring.
    #[inline(always)]
    fn consume_small(&self, out: &mut [*mut c_void]) -> bool {
        let n = out.len();
        // Relaxed: as in `dequeue_bulk`, the previous writer of `head`
        // happens-before us (consumer lock or single-consumer contract).
        let h = self.hdr.consumer.head.load(Ordering::Relaxed);
        // Acquire: as in `dequeue_bulk_then`, the last slot (and its pair
        // partner) full means every slot of the range is, its fill visible.
        // `publish_head` is called from each arm, with the run known to be
        // there or not at each call site.
        match self.small_range(h, n, true) {
            SmallRange::NotReady => return false,
            SmallRange::Run(run) => {
                copy_small(run, out);
                self.publish_head(h.wrapping_add(n), Clears::Small(Some(run)));
            }
            // Slot by slot rather than `runs` and `copy_run` per run: that
            // split cost every small get 3 to 4 instructions more (callgrind),
            // wrapped or not, in the registers it kept.
            SmallRange::Wraps => {
                let mask = self.hdr.config.mask;
                let mut i = h & mask;
                for o in out.iter_mut() {
                    // SAFETY: `i <= mask`, and the slot array has `mask + 1`
                    // slots.
                    let slot = unsafe { &*self.slots.as_ptr().add(i) };
                    // Relaxed: the Acquire loads above made this slot's
                    // fill visible, and nobody writes it before our clear.
                    *o = slot.load(Ordering::Relaxed) as *mut c_void;
                    i = (i + 1) & mask;
                }
                self.publish_head(h.wrapping_add(n), Clears::Small(None));
            }
        }
        true
    }

    /// Clears `[tail, head)` (at least one slot) in sequence order, as
    /// [`invalidate`](PtrRing::invalidate) does, one slot at a time in a
    /// loop that is not unrolled: the single-object dequeue, whose due
    /// range is one batch, then stays a leaf function with no stack frame.
    /// Consumer side held.
    #[inline(always)]
    fn clear_inline(&self, tail: usize, head: usize) {
        // Relaxed: only the consumer side reads `tail`, and we hold it.
        self.hdr.consumer.tail.store(head, Ordering::Relaxed);
        // Indexes wrapped with the mask keep the trip count opaque to the
        // optimiser, which would otherwise unroll the loop into more live
        // registers than a leaf caller has.
        let mask = self.hdr.config.mask;
        let end = head & mask;
        let mut i = tail & mask;
        loop {
            // SAFETY: `i <= mask`, and the slot array has `mask + 1` slots.
            let slot = unsafe { &*self.slots.as_ptr().add(i) };
            // Release pairs with the Acquire room checks in `enqueue_bulk` /
            // `produce_one` and the slot loads in `is_empty`.
            slot.store(0, Ordering::Release);
            i = (i + 1) & mask;
            if i == end {
                break;
            }
        }
    }

    /// Copies the (filled) slots of `runs` into `out` (`out.len()` is the
    /// runs' total length), which the caller, holding the consumer side,
    /// will clear. Big bulks first take the slot lines for writing
    /// ([`prefetch_runs_for_write`]). Called only once the range's last
    /// slot read full, so a dequeue that fails takes no line from a
    /// producer.
    #[inline(always)]
    pub(super) fn copy_out((a, b): (&[AtomicUsize], &[AtomicUsize]), out: &mut [*mut c_void]) {
        prefetch_runs_for_write((a, b));
        let (oa, ob) = out.split_at_mut(a.len());
        copy_run(a, oa);
        if !b.is_empty() {
            copy_run(b, ob);
        }
        debug_assert!(
            out.iter().all(|o| !o.is_null()),
            "hole in a filled ptr_ring run"
        );
    }

    /// Copies filled slots of `run` into `out` up to the first free one;
    /// returns how many.
    #[inline(always)]
    fn take_filled(run: &[AtomicUsize], out: &mut [*mut c_void]) -> usize {
        let mut got = 0;
        for (o, s) in out.iter_mut().zip(run) {
            // Acquire pairs with the Release fill in `enqueue_bulk` /
            // `enqueue_one`: this object's fill happens-before our use.
            let v = s.load(Ordering::Acquire);
            if v == 0 {
                break;
            }
            *o = v as *mut c_void;
            got += 1;
        }
        got
    }

    /// Dequeues up to `out.len()` objects into the front of `out` and returns
    /// how many (0 when empty).
    ///
    /// Same single-consumer contract as [`dequeue_bulk`](PtrRing::dequeue_bulk).
    ///
    /// # Examples
    /// ```
    /// use core::ffi::c_void;
    /// use mempool::HeapRing;
    ///
    /// let ring = HeapRing::with_capacity(4)?;
    /// let objs = [1u64, 2, 3];
    /// let ptrs = objs.each_ref().map(|o| o as *const u64 as *mut c_void);
    /// ring.enqueue_bulk(&ptrs)?;
    ///
    /// let mut out = [core::ptr::null_mut(); 4];
    /// let n = ring.dequeue_burst(&mut out); // up to four: the three there are
    /// assert_eq!(out[..n], ptrs);
    /// assert_eq!(ring.dequeue_burst(&mut out), 0);
    /// # Ok::<(), mempool::RingError>(())
    /// ```
    #[inline]
    pub fn dequeue_burst(&self, out: &mut [*mut c_void]) -> usize {
        let max = out.len().min(self.hdr.config.capacity);
        if max == 0 {
            return 0;
        }
        let Ok(_guard) = self.consumer_guard() else {
            return 0;
        };
        // Relaxed: `head` is only written by the consumer side, and the
        // previous writer happens-before us (consumer lock or
        // single-consumer contract).
        let h = self.hdr.consumer.head.load(Ordering::Relaxed);
        let runs = self.runs(h, max);
        // Acquire pairs with the Release fill in `enqueue_bulk` /
        // `enqueue_one`. As in `dequeue_bulk`: `max <= capacity`, so a full
        // last slot means the whole range is filled and visible; then copy
        // it without a test per slot.
        let got = if self.reads_through(h, max, true) {
            Self::copy_out(runs, &mut out[..max]);
            max
        } else {
            // Partial: each slot up to the first free one, each checked by
            // its own Acquire load (in `take_filled`). A slot in range is
            // never a stale previous-lap value (same bound as above).
            let (a, b) = runs;
            let (oa, ob) = out[..max].split_at_mut(a.len());
            let got = Self::take_filled(a, oa);
            if got == a.len() {
                got + Self::take_filled(b, ob)
            } else {
                got
            }
        };
        if got > 0 {
            self.publish_head(h.wrapping_add(got), Clears::Runs);
        }
        got
    }

    /// Publishes the new head, then invalidates a batch when due, as
    /// `clears` says (a constant at each caller).
    /// Called by the consumer side (lock held or single consumer) after
    /// reading every slot in `[old head, new_head)`.
    #[inline(always)]
    fn publish_head(&self, new_head: usize, clears: Clears<'_>) {
        // Release pairs with the Acquire head load in `len`/`is_empty`. It is
        // stored before any slot is cleared: see `is_empty`.
        self.hdr.consumer.head.store(new_head, Ordering::Release);
        // Relaxed: `tail` is only touched by the consumer side, whose
        // previous writer happens-before us.
        let tail = self.hdr.consumer.tail.load(Ordering::Relaxed);
        let lag = new_head.wrapping_sub(tail);
        if lag < self.hdr.config.batch {
            return;
        }
        #[cfg(any(loom, feature = "crash-points"))]
        if self.crash_clearing(tail, new_head) {
            return;
        }
        match clears {
            Clears::Single => self.clear_inline(tail, new_head),
            Clears::Small(copied) => {
                // Nothing was due before this bulk in the common case (the
                // bulk size at least the batch), and then the due range is
                // the run just copied out: no second split to compute.
                match copied {
                    Some(run) if run.len() == lag => {
                        // At most `SMALL_BULK_MAX` slots.
                        clear_small(run);
                        // Relaxed: only the consumer side reads `tail`.
                        self.hdr.consumer.tail.store(new_head, Ordering::Relaxed);
                    }
                    _ => self.invalidate(tail, new_head),
                }
            }
            Clears::Runs => self.invalidate(tail, new_head),
        }
    }

    /// Clears `[tail, head)` in sequence order (first run, then the wrapped
    /// one), so that clears, like fills, happen in sequence order: a
    /// producer then learns from one slot that a whole bulk is free (see
    /// `enqueue_bulk`). The kernel clears in reverse, so that the line a
    /// producer spinning on a full ring polls is written last; a mempool's
    /// ring holds every object of its pool and is never polled full. The
    /// range is at most `batch - 1 + capacity <= slots` long.
    #[inline(always)]
    fn invalidate(&self, tail: usize, head: usize) {
        let (a, b) = self.runs(tail, head.wrapping_sub(tail));
        clear_run(a);
        if !b.is_empty() {
            clear_run(b);
        }
        // Relaxed: only the consumer side reads `tail`.
        self.hdr.consumer.tail.store(head, Ordering::Relaxed);
    }
}

/// How [`PtrRing::publish_head`] clears a due range.
#[derive(Clone, Copy)]
enum Clears<'a> {
    /// After a single-object dequeue: the plain loop of `clear_inline`,
    /// which keeps that path a leaf function (its due range is one batch).
    Single,
    /// After a small bulk (`consume_small`), with the run it copied out
    /// where that did not wrap: where the due range is that run (nothing
    /// was due before), one store per slot (`clear_small`); else
    /// `invalidate`, as after a big bulk.
    Small(Option<&'a [AtomicUsize]>),
    /// After a big bulk or a burst: `invalidate`, run by run.
    Runs,
}
