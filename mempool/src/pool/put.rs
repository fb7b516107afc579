//! Every way of putting objects back into a [`PoolCore`], in the order a
//! caller tries them (as in `get.rs`), then the cache flushes.
//!
//! # Routes
//! | caller | entry | what happens |
//! |---|---|---|
//! | handler cache on, an lcore with a slot, up to 8 objects | [`PoolCore::try_put_cached`] | push onto the lcore's own cache if they fit under its limit |
//! | handler cache on, any bulk | [`PoolCore::try_put_cached_bulk`] | the same, in blocks of 8 up to 64 objects, `memcpy` above |
//! | handler cache off, any caller (an lcore, a non-EAL thread) | [`PoolCore::try_put_direct`] | the ring, whose totals are a direct pool's counts: no other write; no lcore id read ([`PoolCore::direct_gate`]) |
//! | handler cache on, a caller without a slot, one object | [`PoolCore::try_put_direct`] | the ring and the shared release counter (a bulk: `put`) |
//! | whatever a fast path refused | [`PoolCore::put`] | validation mode: `put_validated` (each object checked, in batches); a cache: `try_put`, else `put_slow` (flush the top of the stack, or the ring for an oversized bulk or a closed cache); no cache: `put_ring` |
//!
//! Each path counts the release last: once the count is visible a
//! concurrent deferred release may free the pool, so nothing touches it
//! after that, except the producer unlock of a caller without a slot,
//! which counts under the lock (the release waits for the lock, see
//! `count_shared_release`). A direct pool's count is the ring's `seq`,
//! which an enqueue moves before its fills: its release waits for the
//! producer lock and for the last fill (`PoolCore::poll`).

use core::ffi::c_void;

use super::{DirectSlot, PoolCore};
use crate::error::PoolError;
use crate::inflight;
use crate::iova::VirtAddr;
use crate::lcore_cache::LcoreCache;
use crate::ptr_ring::RingError;
use crate::state::PoolState;
use crate::validation::RejectKind;

/// Objects checked per inner put in validation mode (a stack buffer).
const VALIDATE_BATCH: usize = 32;

fn put_error(e: RingError, n: usize) -> PoolError {
    match e {
        RingError::NullObject { index } => PoolError::NullObject { index },
        _ => PoolError::Overfull { requested: n },
    }
}

impl PoolCore {
    /// The put fast path alone (see [`try_get_cached`](PoolCore::try_get_cached)):
    /// with the handler cache on, pushes `objs` (at most 8) onto lcore
    /// `lcore`'s cache when validation is off and they fit under its limit;
    /// otherwise returns `false`, having changed nothing, and the caller
    /// calls [`put`](PoolCore::put).
    ///
    /// # Safety
    /// As for [`put`](PoolCore::put).
    #[inline(always)]
    pub unsafe fn try_put_cached(&self, lcore: u32, objs: &[*mut c_void]) -> bool {
        match self.fast_cache(lcore) {
            // SAFETY: the caller owns this lcore's cache.
            Some(c) => unsafe { c.try_put_small(objs) },
            _ => false,
        }
    }

    /// [`try_put_cached`](PoolCore::try_put_cached) for any bulk size (see
    /// [`try_get_cached_bulk`](PoolCore::try_get_cached_bulk)).
    ///
    /// # Safety
    /// As for [`put`](PoolCore::put).
    #[inline(always)]
    pub unsafe fn try_put_cached_bulk(&self, lcore: u32, objs: &[*mut c_void]) -> bool {
        match self.fast_cache(lcore) {
            // SAFETY: the caller owns this lcore's cache.
            Some(c) => unsafe { c.try_put(objs) },
            _ => false,
        }
    }

    /// With the handler cache off: puts `objs` straight into the ring
    /// (validation off), with no write beyond the ring's (a direct pool's
    /// counts are its ring's totals). Returns `false`, having changed
    /// nothing, where
    /// [`put`](PoolCore::put) must decide (and report): a released pool, a
    /// null object, a ring without room (more objects back than went out),
    /// validation mode, on a pool with the handler cache a bulk from a
    /// caller without a cache slot (one object from such a caller is
    /// served, as `put` serves it).
    ///
    /// Meant for direct pools, where every caller is served alike, as
    /// [`try_get_direct`](PoolCore::try_get_direct).
    ///
    /// # Safety
    /// As for [`put`](PoolCore::put).
    #[inline(always)]
    pub unsafe fn try_put_direct(&self, lcore: u32, objs: &[*mut c_void]) -> bool {
        // Read first, as in `try_get_direct`.
        let direct = self.hdr.direct;
        match self.direct_slot_of(lcore, true) {
            // SAFETY: forwarded; the slot is the caller's own lcore's.
            Some(slot) => unsafe { self.put_direct_at(direct, slot, objs) },
            None => objs.len() == 1 && self.shared_put(direct, objs),
        }
    }

    /// [`try_put_direct`](PoolCore::try_put_direct) with the slot already
    /// looked up, as [`try_get_direct_at`](PoolCore::try_get_direct_at).
    ///
    /// # Safety
    /// As for [`put`](PoolCore::put); `slot` is the calling lcore's own,
    /// from this pool (on a direct pool: its gate's, every caller's).
    #[inline(always)]
    pub unsafe fn try_put_direct_at(&self, slot: DirectSlot<'_>, objs: &[*mut c_void]) -> bool {
        // SAFETY: forwarded.
        unsafe { self.put_direct_at(self.hdr.direct, slot, objs) }
    }

    /// [`try_put_direct_at`](PoolCore::try_put_direct_at), `direct` being
    /// the pool's flag as the caller read it before any atomic.
    ///
    /// # Safety
    /// As for `try_put_direct_at`.
    #[inline(always)]
    unsafe fn put_direct_at(
        &self,
        direct: bool,
        slot: DirectSlot<'_>,
        objs: &[*mut c_void],
    ) -> bool {
        let ring = self.ring();
        let ok = if objs.len() == 1 {
            ring.enqueue_one(objs[0]).is_ok()
        } else {
            ring.enqueue_bulk(objs).is_ok()
        };
        if !ok {
            return false;
        }
        // The last touch of the pool: once the count is visible a
        // concurrent deferred release may free it (see `Shutdown`). A
        // direct pool's count is the ring's `seq`, which the enqueue moved
        // before its fills: its release waits for the producers (`poll`).
        if !direct {
            slot.cache().count_release(objs.len());
        }
        true
    }

    /// The put of [`try_put_direct`](PoolCore::try_put_direct) for a
    /// caller without a cache slot on a pool with the handler cache, as
    /// `shared_get`: the ring and the shared release counter.
    #[inline(always)]
    fn shared_put(&self, direct: bool, objs: &[*mut c_void]) -> bool {
        if self.hdr.checked || !self.shutdown.state().takes_puts() {
            return false;
        }
        let ring = self.ring();
        let n = objs.len();
        // Counted while the producer side is held (see `count_shared_release`).
        let count = || self.count_shared_release(direct, n);
        if n == 1 {
            ring.enqueue_one_then(objs[0], count).is_ok()
        } else {
            ring.enqueue_bulk_then(objs, count).is_ok()
        }
    }

    /// Counts `n` objects back from a caller without a slot, on the shared
    /// release counter. Runs inside the enqueue, while the ring's producer
    /// side is held (`enqueue_bulk_then` / `enqueue_one_then`), so every
    /// writer of the counter holds that side and a plain load and Release
    /// store do (`owner_add`), as for the shared hold counter. The count
    /// can then be visible before the put's unlock, its last store to the
    /// pool: the final release waits for the producer side before the
    /// memory may be freed (`PtrRing::wait_producers`, in `poll`). Release
    /// pairs with the Acquire load in `inflight::snapshot`, and the store
    /// follows the objects' fills.
    ///
    /// `direct` is the pool's flag, read by the caller before the ring's
    /// atomics: a direct pool counts by the ring's totals instead (see
    /// `inflight_snapshot`) and writes nothing here. The touch stays: under
    /// the producer lock it is the put's end either way; a single
    /// producer's put (no lock) ends, for the release, with its last fill
    /// (`PtrRing::fills_done`), and writes nothing to the pool after it.
    #[inline(always)]
    fn count_shared_release(&self, direct: bool, n: usize) {
        if !direct {
            inflight::owner_add(&self.shared.release, n);
        }
        // The end of the put's touches of the pool (loom: ordered before
        // the free only through the producer lock's unlock).
        self.shutdown.touch();
    }

    /// Returns `objs` to the pool on behalf of lcore `lcore` (its own cache
    /// first; the ring for an id without a cache).
    ///
    /// Fails only for caller bugs, every one leaving the objects out of the
    /// pool: [`PoolError::Rejected`] in validation mode (the valid objects of
    /// the bulk *were* accepted) or after release, [`PoolError::Overfull`]
    /// when more objects come back than went out, [`PoolError::NullObject`].
    ///
    /// # Safety
    /// No other thread uses the same `lcore` id (below `max_lcores`) at the
    /// same time: DPDK's one-thread-per-lcore rule.
    ///
    /// # Examples
    /// ```
    /// # use core::ffi::c_void;
    /// # use mempool::{ChunkSpec, HeapPool, PoolConfig, VirtAddr, VirtRange};
    /// # let mem = vec![[0u64; 8]; 64];
    /// # let base = VirtAddr::of(mem.as_ptr());
    /// # let objs: Vec<*mut c_void> = mem.iter().map(|o| o.as_ptr() as *mut c_void).collect();
    /// // 64 objects, lcores 0 and 1 with a cache, populated as in `HeapPool`'s example.
    /// let pool = HeapPool::new(&PoolConfig { max_lcores: 2, ..PoolConfig::new(64) })?;
    /// # let spec = ChunkSpec { va: VirtRange::new(base, 64 * 64), iova: None, first: base, stride: 64, count: 64 };
    /// # pool.register_chunk(spec)?;
    /// # pool.put_shared(&objs)?;
    /// use mempool::PoolError;
    ///
    /// let mut two = [core::ptr::null_mut(); 2];
    /// // SAFETY: no other thread uses lcore id 0.
    /// unsafe { pool.get(0, &mut two) }?;
    /// let in_cache = pool.cache_len(0);
    /// // SAFETY: as above.
    /// unsafe { pool.put(0, &two) }?; // into lcore 0's cache
    /// assert_eq!(pool.cache_len(0), in_cache + 2);
    ///
    /// pool.get_shared(&mut two)?;
    /// let in_ring = pool.ring().len();
    /// pool.put_shared(&two)?; // into the ring
    /// assert_eq!(pool.ring().len(), in_ring + 2);
    ///
    /// // A caller bug is reported, and the put leaves the objects out.
    /// pool.get_shared(&mut two)?;
    /// two[1] = core::ptr::null_mut();
    /// assert!(matches!(pool.put_shared(&two), Err(PoolError::NullObject { index: 1 })));
    /// assert_eq!(pool.inflight(), 2);
    /// # Ok::<(), mempool::PoolError>(())
    /// ```
    #[inline]
    pub unsafe fn put(&self, lcore: u32, objs: &[*mut c_void]) -> Result<(), PoolError> {
        if self.hdr.validate {
            // SAFETY: forwarded caller contract.
            return unsafe { self.put_validated(lcore, objs) };
        }
        // SAFETY: forwarded caller contract.
        unsafe { self.put_unvalidated(lcore, objs) }
    }

    /// [`put`](PoolCore::put) for a caller without a slot: always the ring.
    #[inline]
    pub fn put_shared(&self, objs: &[*mut c_void]) -> Result<(), PoolError> {
        // SAFETY: `u32::MAX` never selects a cache.
        unsafe { self.put(u32::MAX, objs) }
    }

    #[inline(always)]
    pub(super) unsafe fn put_unvalidated(
        &self,
        lcore: u32,
        objs: &[*mut c_void],
    ) -> Result<(), PoolError> {
        match self.cache(lcore) {
            // SAFETY: the caller owns this lcore's cache.
            Some(c) => unsafe {
                // A successful `try_put` counts the release last: don't
                // touch the pool after it (see `put_ring`).
                if c.try_put(objs) {
                    Ok(())
                } else {
                    self.put_slow(lcore, c, objs)
                }
            },
            None => self.put_ring(objs),
        }
    }

    pub(super) fn after_release(&self, objs: &[*mut c_void]) -> PoolError {
        self.validator().count(RejectKind::AfterRelease, objs.len());
        PoolError::Rejected {
            requested: objs.len(),
            rejected: objs.len(),
            kind: RejectKind::AfterRelease,
            first: VirtAddr::of(objs.first().copied().unwrap_or(core::ptr::null_mut())),
        }
    }

    /// Put without a cache: straight to the ring, shared counter.
    #[inline(never)]
    fn put_ring(&self, objs: &[*mut c_void]) -> Result<(), PoolError> {
        if !self.shutdown.state().takes_puts() {
            return Err(self.after_release(objs));
        }
        let n = objs.len();
        // Counted under the producer side; nothing but the unlock follows
        // (see `count_shared_release`).
        self.ring()
            .enqueue_bulk_then(objs, || self.count_shared_release(self.hdr.direct, n))
            .map_err(|e| put_error(e, n))
    }

    /// Put that missed the fast path: cache full, cache closed (draining) or
    /// disabled, by lcore `lcore`, whose cache `c` is.
    #[inline(never)]
    unsafe fn put_slow(
        &self,
        lcore: u32,
        c: &LcoreCache,
        objs: &[*mut c_void],
    ) -> Result<(), PoolError> {
        let state = self.shutdown.state();
        if !state.takes_puts() {
            return Err(self.after_release(objs));
        }
        let ring = self.ring();
        let n = objs.len();
        let limit = c.limit();
        if state != PoolState::Active || n > limit {
            // Closing: give the whole cache back too. Oversized bulk: keep
            // the cache as it is. Either way the objects go to the ring.
            if state != PoolState::Active {
                // SAFETY: the caller owns the cache.
                unsafe { c.flush_above(ring, 0) }.map_err(|e| put_error(e, c.len()))?;
            }
            self.ring_put(lcore, objs).map_err(|e| put_error(e, n))?;
            // The last touch of the pool (see `put_ring`): don't touch the
            // pool after this. A direct pool counts by the ring instead.
            if !self.hdr.direct {
                c.count_release(n);
            }
            return Ok(());
        }
        // Full: flush the top of the stack in one bulk, keep at most half.
        let keep = c.len().min(limit / 2).min(limit - n);
        // SAFETY: the caller owns the cache.
        unsafe { c.flush_above_with(keep, |top| self.ring_put(lcore, top)) }
            .map_err(|e| put_error(e, c.len() - keep))?;
        // `push` counts the release last: don't touch the pool after it.
        // SAFETY: owner; `keep + n <= limit <= cache_size`.
        unsafe { c.push(objs) };
        Ok(())
    }

    /// The put of a newest-first pool with the handler cache off, for an
    /// lcore with a slot, without the checked entry: into the ring,
    /// naming the lcore ([`PtrRing::enqueue_bulk_as`](crate::PtrRing::enqueue_bulk_as)).
    /// `false`, having changed nothing, where
    /// [`try_get_newest`](PoolCore::try_get_newest) is, and once the pool
    /// takes no more puts or the ring refuses: [`put`](PoolCore::put) then
    /// decides and reports.
    ///
    /// # Safety
    /// As for [`put`](PoolCore::put).
    #[inline(always)]
    pub unsafe fn try_put_newest(&self, lcore: u32, objs: &[*mut c_void]) -> bool {
        self.serves_newest(lcore)
            && self.shutdown.state().takes_puts()
            && self.ring().enqueue_bulk_as(lcore, objs).is_ok()
    }

    /// An lcore's put into the ring: on a newest-first pool naming the
    /// lcore ([`PtrRing::enqueue_bulk_as`](crate::PtrRing::enqueue_bulk_as)),
    /// so that its next get takes these objects back first.
    #[inline(always)]
    fn ring_put(&self, lcore: u32, objs: &[*mut c_void]) -> Result<(), RingError> {
        if self.hdr.newest_first {
            self.ring().enqueue_bulk_as(lcore, objs)
        } else {
            self.ring().enqueue_bulk(objs)
        }
    }

    #[inline(never)]
    pub(super) unsafe fn put_validated(
        &self,
        lcore: u32,
        objs: &[*mut c_void],
    ) -> Result<(), PoolError> {
        if !self.shutdown.state().takes_puts() {
            return Err(self.after_release(objs));
        }
        let mut buf = [core::ptr::null_mut::<c_void>(); VALIDATE_BATCH];
        let mut k = 0;
        let mut rejected = 0;
        let mut first = None;
        for &o in objs {
            let verdict = match self.owns(o) {
                None => Err(RejectKind::Foreign),
                Some(idx) if self.validator().mark_home(idx) => Ok(()),
                Some(_) => Err(RejectKind::DoubleFree),
            };
            match verdict {
                Ok(()) => {
                    buf[k] = o;
                    k += 1;
                    if k == VALIDATE_BATCH {
                        // Keep the newest accepted object back: while one
                        // object of this call is still out, the pool cannot
                        // reach inflight 0 and be released under the rest
                        // of the loop (which still reads the validator).
                        // SAFETY: forwarded caller contract.
                        if let Err(e) = unsafe { self.put_checked_batch(lcore, &buf[..k - 1]) } {
                            // The held-back object was marked home but goes
                            // nowhere: out again, like the batch.
                            self.mark_out_all(&buf[k - 1..k]);
                            return Err(e);
                        }
                        buf[0] = buf[k - 1];
                        k = 1;
                    }
                }
                Err(kind) => {
                    self.validator().count(kind, 1);
                    rejected += 1;
                    first.get_or_insert((kind, o));
                }
            }
        }
        // The last touch of the pool: once these are back a concurrent
        // deferred release may free it (see `Shutdown`). Nothing is put when
        // every object was rejected.
        if k > 0 {
            // SAFETY: forwarded caller contract.
            unsafe { self.put_checked_batch(lcore, &buf[..k]) }?;
        }
        match first {
            None => Ok(()),
            Some((kind, o)) => Err(PoolError::Rejected {
                requested: objs.len(),
                rejected,
                kind,
                first: VirtAddr::of(o),
            }),
        }
    }

    /// Inserts objects validation accepted; marks them out again if the
    /// insertion fails.
    unsafe fn put_checked_batch(&self, lcore: u32, batch: &[*mut c_void]) -> Result<(), PoolError> {
        // SAFETY: forwarded caller contract.
        let r = unsafe { self.put_unvalidated(lcore, batch) };
        if r.is_err() {
            self.mark_out_all(batch);
        }
        r
    }

    /// Marks accepted objects out again (their insertion failed).
    fn mark_out_all(&self, objs: &[*mut c_void]) {
        for &o in objs {
            if let Some(idx) = self.owns(o) {
                self.validator().mark_out(idx);
            }
        }
    }

    /// Gives all objects of `lcore`'s cache back to the ring. Returns how
    /// many moved (0 for an id without a cache).
    ///
    /// # Safety
    /// `lcore` is quiescent: no get or put with that id runs now, and its
    /// last one happens-before this call (e.g. the thread was joined, or the
    /// lcore waits on something this thread releases).
    pub unsafe fn flush_lcore(&self, lcore: u32) -> Result<usize, PoolError> {
        let Some(c) = self.cache(lcore) else {
            return Ok(0);
        };
        // SAFETY: the caller guarantees the owner is quiescent.
        unsafe { c.flush_above(self.ring(), 0) }.map_err(|e| put_error(e, c.len()))
    }

    /// Flushes every lcore's cache ([`flush_lcore`](PoolCore::flush_lcore)
    /// for all ids). Returns how many objects moved.
    ///
    /// # Safety
    /// Every lcore is quiescent (e.g. DPDK's `ops->free`: the application no
    /// longer uses the pool).
    pub unsafe fn flush_all_quiescent(&self) -> Result<usize, PoolError> {
        let mut n = 0;
        for i in 0..self.max_lcores() {
            // SAFETY: the caller guarantees every lcore is quiescent.
            n += unsafe { self.flush_lcore(i) }?;
        }
        Ok(n)
    }
}
