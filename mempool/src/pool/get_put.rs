//! [`PoolCore::put`] and [`PoolCore::get`]: an lcore's own cache first, the
//! ring behind it, and the cache flushes.

use core::ffi::c_void;

use super::PoolCore;
use crate::error::PoolError;
use crate::inflight;
use crate::iova::VirtAddr;
use crate::lcore_cache::LcoreCache;
use crate::ptr_ring::RingError;
use crate::shutdown::PoolState;
use crate::validation::RejectKind;

fn put_error(e: RingError, n: usize) -> PoolError {
    match e {
        RingError::NullObject { index } => PoolError::NullObject { index },
        _ => PoolError::Overfull { requested: n },
    }
}

impl PoolCore {
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
    /// # pool.put_any(&objs)?;
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
    /// pool.get_any(&mut two)?;
    /// let in_ring = pool.ring().len();
    /// pool.put_any(&two)?; // into the ring
    /// assert_eq!(pool.ring().len(), in_ring + 2);
    ///
    /// // A caller bug is reported, and the put leaves the objects out.
    /// pool.get_any(&mut two)?;
    /// two[1] = core::ptr::null_mut();
    /// assert!(matches!(pool.put_any(&two), Err(PoolError::NullObject { index: 1 })));
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

    /// [`put`](PoolCore::put) for a caller without an lcore id: always the ring.
    #[inline]
    pub fn put_any(&self, objs: &[*mut c_void]) -> Result<(), PoolError> {
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
                    self.put_slow(c, objs)
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
        self.ring()
            .enqueue_bulk(objs)
            .map_err(|e| put_error(e, objs.len()))?;
        // The last touch of the pool: once the release is counted, a
        // concurrent deferred release may free it (see `Shutdown`). Don't
        // touch the pool after this.
        inflight::shared_add(&self.any.release, objs.len());
        Ok(())
    }

    /// Put that missed the fast path: cache full, cache closed (draining) or
    /// disabled.
    #[inline(never)]
    unsafe fn put_slow(&self, c: &LcoreCache, objs: &[*mut c_void]) -> Result<(), PoolError> {
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
            ring.enqueue_bulk(objs).map_err(|e| put_error(e, n))?;
            // The last touch of the pool (see `put_ring`): don't touch the
            // pool after this.
            c.count_release(n);
            return Ok(());
        }
        // Full: flush the top of the stack in one bulk, keep at most half.
        let keep = c.len().min(limit / 2).min(limit - n);
        // SAFETY: the caller owns the cache.
        unsafe { c.flush_above(ring, keep) }.map_err(|e| put_error(e, c.len() - keep))?;
        // `push` counts the release last: don't touch the pool after it.
        // SAFETY: owner; `keep + n <= limit <= cache_size`.
        unsafe { c.push(objs) };
        Ok(())
    }

    /// Takes exactly `out.len()` objects for lcore `lcore` (its own cache
    /// first, refilled from the ring; the ring for an id without a cache).
    ///
    /// On failure `out` holds nothing usable and no object was lost or
    /// duplicated: [`PoolError::Exhausted`] when the ring plus the caller's
    /// own cache hold fewer than asked (objects may have moved from the ring
    /// into that cache), [`PoolError::NotActive`] once the pool drains.
    ///
    /// # Safety
    /// No other thread uses the same `lcore` id (below `max_lcores`) at the
    /// same time.
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
    /// # pool.put_any(&objs)?;
    /// use mempool::PoolError;
    ///
    /// let mut a = [core::ptr::null_mut(); 4];
    /// // SAFETY: no other thread uses lcore id 1.
    /// unsafe { pool.get(1, &mut a) }?;
    /// // Lcore 1's cache took a burst from the ring, for this get and the next.
    /// assert!(pool.cache_len(1) > 0);
    ///
    /// // Without an lcore id (`get_any`, or an id without a cache): the ring.
    /// let mut b = [core::ptr::null_mut(); 4];
    /// pool.get_any(&mut b)?;
    /// assert_eq!(pool.inflight(), 8);
    ///
    /// // All or nothing: more than the ring holds fails and takes nothing.
    /// let mut all = vec![core::ptr::null_mut(); 64];
    /// assert!(matches!(pool.get_any(&mut all), Err(PoolError::Exhausted { .. })));
    /// assert_eq!(pool.inflight(), 8);
    /// # Ok::<(), mempool::PoolError>(())
    /// ```
    #[inline]
    pub unsafe fn get(&self, lcore: u32, out: &mut [*mut c_void]) -> Result<(), PoolError> {
        if self.hdr.validate {
            // SAFETY: forwarded caller contract.
            return unsafe { self.get_validated(lcore, out) };
        }
        // SAFETY: forwarded caller contract.
        unsafe { self.get_unvalidated(lcore, out) }
    }

    /// [`get`](PoolCore::get) for a caller without an lcore id: always the ring.
    #[inline]
    pub fn get_any(&self, out: &mut [*mut c_void]) -> Result<(), PoolError> {
        // SAFETY: `u32::MAX` never selects a cache.
        unsafe { self.get(u32::MAX, out) }
    }

    #[inline(always)]
    pub(super) unsafe fn get_unvalidated(
        &self,
        lcore: u32,
        out: &mut [*mut c_void],
    ) -> Result<(), PoolError> {
        match self.cache(lcore) {
            // SAFETY: the caller owns this lcore's cache.
            Some(c) => unsafe {
                if c.try_get(out) {
                    Ok(())
                } else {
                    self.get_slow(c, out)
                }
            },
            None => self.get_ring(out),
        }
    }

    /// Get without a cache: straight from the ring, shared counter.
    #[inline(never)]
    fn get_ring(&self, out: &mut [*mut c_void]) -> Result<(), PoolError> {
        let state = self.shutdown.state();
        if !state.serves_gets() {
            return Err(PoolError::NotActive { state });
        }
        let ring = self.ring();
        ring.dequeue_bulk(out).map_err(|_| PoolError::Exhausted {
            requested: out.len(),
            available: ring.len(),
        })?;
        inflight::shared_add(&self.any.hold, out.len());
        Ok(())
    }

    /// Get that missed the fast path: refill, or an oversized bulk.
    #[inline(never)]
    unsafe fn get_slow(&self, c: &LcoreCache, out: &mut [*mut c_void]) -> Result<(), PoolError> {
        let state = self.shutdown.state();
        if !state.serves_gets() {
            return Err(PoolError::NotActive { state });
        }
        let ring = self.ring();
        let n = out.len();
        let limit = c.limit();
        if n <= limit {
            // Refill in one burst to half a cache above the request.
            // SAFETY: the caller owns the cache; target <= limit <= cache_size.
            unsafe { c.refill(ring, limit.min(n + limit / 2)) };
            if c.len() >= n {
                // SAFETY: owner; checked just above.
                unsafe { c.pop(out) };
                return Ok(());
            }
            return Err(PoolError::Exhausted {
                requested: n,
                available: c.len() + ring.len(),
            });
        }
        // Oversized: the ring supplies what the cache lacks, all or nothing.
        let have = c.len();
        let need = n - have;
        ring.dequeue_bulk(&mut out[..need])
            .map_err(|_| PoolError::Exhausted {
                requested: n,
                available: have + ring.len(),
            })?;
        // SAFETY: owner; `out[need..]` has exactly `have` slots.
        unsafe { c.take_all_uncounted(&mut out[need..]) };
        c.count_hold(n);
        Ok(())
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
