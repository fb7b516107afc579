//! Every way of getting objects from a [`PoolCore`], in the order a
//! caller tries them: the fast paths a DPDK callback inlines, then the
//! checked entry [`PoolCore::get`] with its slow paths, then validation
//! mode.
//!
//! # Routes
//! | caller | entry | what happens |
//! |---|---|---|
//! | handler cache on, an lcore with a slot, up to 8 objects | [`PoolCore::try_get_cached`] | pop from the lcore's own cache, inline copies; `false` on a miss |
//! | handler cache on, any bulk | [`PoolCore::try_get_cached_bulk`] | the same, in blocks of 8 up to 64 objects, `memcpy` above |
//! | handler cache off, any caller (an lcore, a non-EAL thread) | [`PoolCore::try_get_direct`] | the ring, whose totals are a direct pool's counts: no other write; no lcore id read ([`PoolCore::direct_gate`]) |
//! | handler cache on, a caller without a slot (a non-EAL thread, an id past `max_lcores`), one object | [`PoolCore::try_get_direct`] | the ring and the shared hold counter (a bulk: `get`) |
//! | whatever a fast path refused | [`PoolCore::get`] | validation mode: `get_validated`; a cache: `try_get`, else `get_slow` (refill in one burst, or the ring supplies what an oversized bulk lacks); no cache: `get_ring` |
//!
//! Every fast path either completes the get or returns `false` having
//! changed nothing; `get` decides and reports the rest (a draining pool,
//! too few objects). The fast paths are split by how a caller inlines
//! them (no stack frame for single objects, one call site per ring
//! operation): see `bench/NOTES.md` for the measurements.

use core::ffi::c_void;

use super::{DirectSlot, PoolCore};
use crate::error::PoolError;
use crate::inflight;
use crate::lcore_cache::LcoreCache;

impl PoolCore {
    /// The get fast path alone, for a caller that wants it inlined into its
    /// own entry point: with the handler cache on, pops `out.len()` objects
    /// (at most 8; the copy is inline, with no call) from lcore `lcore`'s
    /// cache when validation is off and the cache holds enough. Returns
    /// `false`, having changed nothing, in every other case (a miss, a
    /// caller without an lcore id, validation mode, the cache off); the
    /// caller then calls [`get`](PoolCore::get), which handles them all.
    ///
    /// # Safety
    /// As for [`get`](PoolCore::get).
    ///
    /// # Examples
    /// The pattern of an entry point that inlines the fast paths:
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
    /// let mut one = [core::ptr::null_mut()];
    /// // SAFETY: no other thread uses lcore id 0.
    /// unsafe {
    ///     if !pool.try_get_cached(0, &mut one) {
    ///         pool.get(0, &mut one)?; // a miss: `get` refills the cache
    ///     }
    ///     // The cache has room now: the put stays on the fast path.
    ///     assert!(pool.try_put_cached(0, &one));
    /// }
    /// # Ok::<(), mempool::PoolError>(())
    /// ```
    #[inline(always)]
    pub unsafe fn try_get_cached(&self, lcore: u32, out: &mut [*mut c_void]) -> bool {
        match self.fast_cache(lcore) {
            // SAFETY: the caller owns this lcore's cache.
            Some(c) => unsafe { c.try_get_small(out) },
            _ => false,
        }
    }

    /// [`try_get_cached`](PoolCore::try_get_cached) for any bulk size: the
    /// copy is inline up to [`CACHE_INLINE_MAX`](crate::CACHE_INLINE_MAX)
    /// objects and a `memcpy` call above. A caller that tells the compiler
    /// `out.len() <= CACHE_INLINE_MAX` (`core::hint::assert_unchecked`) gets
    /// code with no call, which needs no stack frame; the glue keeps one
    /// entry point for those bulks and one for the larger.
    ///
    /// # Safety
    /// As for [`get`](PoolCore::get).
    #[inline(always)]
    pub unsafe fn try_get_cached_bulk(&self, lcore: u32, out: &mut [*mut c_void]) -> bool {
        match self.fast_cache(lcore) {
            // SAFETY: the caller owns this lcore's cache.
            Some(c) => unsafe { c.try_get(out) },
            _ => false,
        }
    }

    /// With the handler cache off: takes `out.len()` objects straight from
    /// the ring (validation off), with no write beyond the ring's: a direct
    /// pool's counts are its ring's totals (see
    /// [`inflight_snapshot`](PoolCore::inflight_snapshot)). Returns `false`,
    /// having changed nothing, where [`get`](PoolCore::get) must decide
    /// (and report): a draining pool, too few objects, validation mode, on
    /// a pool with the handler cache a bulk from a caller without a cache
    /// slot (one object from such a caller is served, as `get` serves it).
    ///
    /// Meant for pools where [`is_direct`](PoolCore::is_direct) holds (the
    /// caller checks it once to choose its path, and may then tell the
    /// compiler with [`assume_direct`](PoolCore::assume_direct)): every
    /// caller is served alike there, `lcore` unread
    /// ([`direct_gate`](PoolCore::direct_gate)). With the handler cache on
    /// it is still correct, the objects only bypassing the cache and
    /// counted on the lcore's line (or the shared counter).
    ///
    /// # Safety
    /// As for [`get`](PoolCore::get).
    #[inline(always)]
    pub unsafe fn try_get_direct(&self, lcore: u32, out: &mut [*mut c_void]) -> bool {
        // Read first, before any atomic load, so that a caller's
        // `assume_direct` still decides it for the compiler.
        let direct = self.hdr.direct;
        match self.direct_slot_of(lcore, false) {
            // SAFETY: forwarded; the slot is the caller's own lcore's.
            Some(slot) => unsafe { self.get_direct_at(direct, slot, out) },
            None => out.len() == 1 && self.shared_get(direct, out),
        }
    }

    /// [`try_get_direct`](PoolCore::try_get_direct) with the slot already
    /// looked up ([`direct_slot_of`](PoolCore::direct_slot_of)): `false`,
    /// having changed nothing, where `get` must decide. The slot may have
    /// been closed since the look-up (a shutdown): the get is then served
    /// or refused as it would have been just before the close, as any get
    /// that was already past the check.
    ///
    /// # Safety
    /// As for [`get`](PoolCore::get); `slot` is the calling lcore's own,
    /// from this pool (on a direct pool: its gate's, every caller's).
    #[inline(always)]
    pub unsafe fn try_get_direct_at(&self, slot: DirectSlot<'_>, out: &mut [*mut c_void]) -> bool {
        // SAFETY: forwarded.
        unsafe { self.get_direct_at(self.hdr.direct, slot, out) }
    }

    /// [`try_get_direct_at`](PoolCore::try_get_direct_at), `direct` being
    /// the pool's flag as the caller read it before any atomic.
    ///
    /// # Safety
    /// As for `try_get_direct_at`.
    #[inline(always)]
    unsafe fn get_direct_at(
        &self,
        direct: bool,
        slot: DirectSlot<'_>,
        out: &mut [*mut c_void],
    ) -> bool {
        let ring = self.ring();
        if out.len() == 1 {
            let Some(obj) = ring.dequeue_one() else {
                return false;
            };
            out[0] = obj;
        } else if ring.dequeue_bulk(out).is_err() {
            return false;
        }
        // A direct pool counts by the ring's totals (`inflight_snapshot`).
        if !direct {
            slot.cache().count_hold(out.len());
        }
        true
    }

    /// The get of [`try_get_direct`](PoolCore::try_get_direct) for a
    /// caller without a cache slot (a non-EAL thread, an lcore id past
    /// `max_lcores`) on a pool with the handler cache: what `get` does for
    /// it (the ring and the shared hold counter), without the checked
    /// entry. `false`, having changed nothing, in validation mode and
    /// wherever `get` must decide. `direct` is the pool's flag as the
    /// caller read it before any atomic.
    #[inline(always)]
    fn shared_get(&self, direct: bool, out: &mut [*mut c_void]) -> bool {
        if self.hdr.checked || !self.shutdown.state().serves_gets() {
            return false;
        }
        let ring = self.ring();
        let n = out.len();
        // Counted while the consumer side is held (see `count_shared_hold`).
        let count = || self.count_shared_hold(direct, n);
        if n == 1 {
            let Some(obj) = ring.dequeue_one_then(count) else {
                return false;
            };
            out[0] = obj;
        } else if ring.dequeue_bulk_then(out, count).is_err() {
            return false;
        }
        true
    }

    /// Counts `n` objects handed out to a caller without a slot, on the
    /// shared hold counter. Called only while the ring's consumer side is
    /// held (by the ring's `*_then` dequeues): every writer of the counter
    /// holds it, so a plain load and a Release store do (`owner_add`; a
    /// locked RMW here cost a non-EAL thread's get a third of its time).
    /// Release pairs with the Acquire load in `inflight::snapshot`, and the
    /// store follows the objects' removal from the ring, as every hold
    /// count does. `direct` is the pool's flag, read by the caller before
    /// the ring's atomics: a direct pool counts by the ring's totals
    /// instead (see `inflight_snapshot`), and writes nothing here.
    #[inline(always)]
    fn count_shared_hold(&self, direct: bool, n: usize) {
        if !direct {
            inflight::owner_add(&self.shared.hold, n);
        }
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
    /// # pool.put_shared(&objs)?;
    /// use mempool::PoolError;
    ///
    /// let mut a = [core::ptr::null_mut(); 4];
    /// // SAFETY: no other thread uses lcore id 1.
    /// unsafe { pool.get(1, &mut a) }?;
    /// // Lcore 1's cache took a burst from the ring, for this get and the next.
    /// assert!(pool.cache_len(1) > 0);
    ///
    /// // Without an lcore id (`get_shared`, or an id without a cache): the ring.
    /// let mut b = [core::ptr::null_mut(); 4];
    /// pool.get_shared(&mut b)?;
    /// assert_eq!(pool.inflight(), 8);
    ///
    /// // All or nothing: more than the ring holds fails and takes nothing.
    /// let mut all = vec![core::ptr::null_mut(); 64];
    /// assert!(matches!(pool.get_shared(&mut all), Err(PoolError::Exhausted { .. })));
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

    /// [`get`](PoolCore::get) for a caller without a slot: always the ring.
    #[inline]
    pub fn get_shared(&self, out: &mut [*mut c_void]) -> Result<(), PoolError> {
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
                    self.get_slow(lcore, c, out)
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
        let n = out.len();
        ring.dequeue_bulk_then(out, || self.count_shared_hold(self.hdr.direct, n))
            .map_err(|_| PoolError::Exhausted {
                requested: n,
                available: ring.len(),
            })?;
        Ok(())
    }

    /// Get that missed the fast path: refill, or an oversized bulk, by
    /// lcore `lcore`, whose cache `c` is.
    #[inline(never)]
    unsafe fn get_slow(
        &self,
        lcore: u32,
        c: &LcoreCache,
        out: &mut [*mut c_void],
    ) -> Result<(), PoolError> {
        let state = self.shutdown.state();
        if !state.serves_gets() {
            return Err(PoolError::NotActive { state });
        }
        let ring = self.ring();
        let n = out.len();
        let limit = c.limit();
        if n <= limit {
            // Refill in one burst to half a cache above the request.
            let newest = self.takes_newest(lcore);
            // SAFETY: the caller owns the cache; target <= limit <= cache_size.
            unsafe {
                c.refill(limit.min(n + limit / 2), |room| {
                    if newest {
                        ring.dequeue_newest_burst(room)
                    } else {
                        ring.dequeue_burst(room)
                    }
                })
            };
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
        let taken = if self.takes_newest(lcore) {
            ring.dequeue_newest_bulk(&mut out[..need])
        } else {
            ring.dequeue_bulk(&mut out[..need])
        };
        taken.map_err(|_| PoolError::Exhausted {
            requested: n,
            available: have + ring.len(),
        })?;
        // SAFETY: owner; `out[need..]` has exactly `have` slots.
        unsafe { c.take_all_uncounted(&mut out[need..]) };
        // A direct pool (no cache, so `have` is 0) counts by the ring.
        if !self.hdr.direct {
            c.count_hold(n);
        }
        Ok(())
    }

    /// The get of a newest-first pool with the handler cache off
    /// ([`PoolConfig::newest_first`](crate::PoolConfig::newest_first)), for
    /// an lcore with a slot, without the checked entry: the ring's newest
    /// objects when `lcore`'s put was its last, else its oldest; the
    /// pool counts by the ring's totals, as every direct pool does.
    /// `false`, having changed nothing, for any other pool or caller
    /// (validation mode too), once the pool drains, and when the ring
    /// holds too few: [`get`](PoolCore::get) then decides and reports.
    /// The fast paths above refuse such a pool, so that the order is
    /// never skipped; a caller tries this one first.
    ///
    /// # Safety
    /// As for [`get`](PoolCore::get).
    #[inline(always)]
    pub unsafe fn try_get_newest(&self, lcore: u32, out: &mut [*mut c_void]) -> bool {
        if !self.serves_newest(lcore) || !self.shutdown.state().serves_gets() {
            return false;
        }
        let ring = self.ring();
        if ring.last_putter() == lcore {
            ring.take_back(out)
        } else {
            self.oldest_for_newest(out)
        }
    }

    /// The oldest objects for [`try_get_newest`](PoolCore::try_get_newest)
    /// (another caller's put was the ring's last): the FIFO dequeue, out of
    /// line so that the take-back's callers keep a small frame.
    #[inline(never)]
    fn oldest_for_newest(&self, out: &mut [*mut c_void]) -> bool {
        self.ring().dequeue_bulk(out).is_ok()
    }

    /// Whether [`try_get_newest`](PoolCore::try_get_newest) /
    /// [`try_put_newest`](PoolCore::try_put_newest) serve `lcore` on this
    /// pool: newest first, the handler cache off, validation off, an lcore
    /// with a slot.
    #[inline(always)]
    pub(super) fn serves_newest(&self, lcore: u32) -> bool {
        self.hdr.newest_first
            && self.hdr.direct
            && !self.hdr.validate
            && (lcore as usize) < self.hdr.max_lcores
    }

    /// Whether a get by `lcore` takes the ring's newest objects: a
    /// newest-first pool whose ring's last put was `lcore`'s (read as a
    /// hint: either answer is correct, only the order differs).
    #[inline(always)]
    fn takes_newest(&self, lcore: u32) -> bool {
        self.hdr.newest_first && self.ring().last_putter() == lcore
    }

    #[inline(never)]
    pub(super) unsafe fn get_validated(
        &self,
        lcore: u32,
        out: &mut [*mut c_void],
    ) -> Result<(), PoolError> {
        // SAFETY: forwarded caller contract.
        unsafe { self.get_unvalidated(lcore, out) }?;
        for &o in out.iter() {
            if let Some(idx) = self.owns(o) {
                self.validator().mark_out(idx);
            }
        }
        Ok(())
    }
}
