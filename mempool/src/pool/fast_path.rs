//! The fast paths alone, `#[inline(always)]`, for a caller that wants them
//! inlined into its own entry point (the glue's DPDK callbacks): each either
//! completes the operation or returns `false` having changed nothing, and
//! the caller then calls [`PoolCore::get`] / [`PoolCore::put`].

use core::ffi::c_void;

use super::PoolCore;
use crate::inflight;
use crate::lcore_cache::LcoreCache;
use crate::shutdown::{GET_BOUND, PUT_BOUND};

impl PoolCore {
    /// [`cache`](PoolCore::cache) for the inlined fast paths: `None` also in
    /// validation mode (every operation must then take the checked path).
    #[inline(always)]
    fn fast_cache(&self, lcore: u32) -> Option<&LcoreCache> {
        // SAFETY: `fast_lcores <= max_lcores`.
        unsafe { self.cache_below(lcore, self.hdr.fast_lcores) }
    }

    /// Whether `lcore` has a slot on the cache-off get path (`put`: the put
    /// path) now: `false` for a caller without one, in validation mode and
    /// once the pool is past the state that path serves. A caller that saw
    /// [`try_get_direct`](PoolCore::try_get_direct) fail for a bulk uses it
    /// to choose between [`try_get_shared`](PoolCore::try_get_shared) and
    /// `get`.
    #[inline(always)]
    pub fn has_direct_slot(&self, lcore: u32, put: bool) -> bool {
        self.direct_slot(lcore, if put { PUT_BOUND } else { GET_BOUND })
            .is_some()
    }

    /// The counters' slot of `lcore` for the cache-off fast paths, `None`
    /// past the bound `which` of `Shutdown::direct_bound`: a caller
    /// without a slot, validation mode, and a pool past the state that path
    /// serves (gets: `Active`; puts: until `Released`), all in one check.
    /// The caller then takes the path for callers without a slot, which
    /// checks the state itself.
    #[inline(always)]
    fn direct_slot(&self, lcore: u32, which: usize) -> Option<&LcoreCache> {
        // SAFETY: the bound is 0 or `fast_lcores <= max_lcores`.
        unsafe { self.cache_below(lcore, self.shutdown.direct_bound(which)) }
    }

    /// Whether the handler cache is off (`cache_size == 0`): the fast paths
    /// are then
    /// [`try_get_direct`](PoolCore::try_get_direct) /
    /// [`try_put_direct`](PoolCore::try_put_direct), straight to the ring.
    #[inline(always)]
    pub fn is_direct(&self) -> bool {
        self.hdr.direct
    }

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
    /// # pool.put_any(&objs)?;
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
            Some(c) if !self.hdr.direct => unsafe { c.try_get_small(out) },
            _ => false,
        }
    }

    /// [`try_get_cached`](PoolCore::try_get_cached) for any bulk size: the
    /// copy is a `memcpy` call above 8 objects, so a caller inlines this in
    /// an entry point of its own (one with a stack frame) for the bulks
    /// above 8, and `try_get_cached` in the frameless one.
    ///
    /// # Safety
    /// As for [`get`](PoolCore::get).
    #[inline(always)]
    pub unsafe fn try_get_cached_bulk(&self, lcore: u32, out: &mut [*mut c_void]) -> bool {
        match self.fast_cache(lcore) {
            // SAFETY: the caller owns this lcore's cache.
            Some(c) if !self.hdr.direct => unsafe { c.try_get(out) },
            _ => false,
        }
    }

    /// With the handler cache off: takes `out.len()` objects straight from
    /// the ring (validation off), counted on the lcore's own line, with no
    /// shared write beyond the ring's. Returns `false`, having changed
    /// nothing, where [`get`](PoolCore::get) must decide (and report): a
    /// draining pool, too few objects, validation mode, a bulk from a caller
    /// without a cache slot (one object from such a caller is counted on
    /// the shared hold counter, as `get` counts it).
    ///
    /// Meant for pools where [`is_direct`](PoolCore::is_direct) holds (the
    /// caller checks it once to choose its path); with the handler cache on
    /// it is still correct, the objects only bypassing the cache.
    ///
    /// # Safety
    /// As for [`get`](PoolCore::get).
    #[inline(always)]
    pub unsafe fn try_get_direct(&self, lcore: u32, out: &mut [*mut c_void]) -> bool {
        let Some(c) = self.direct_slot(lcore, GET_BOUND) else {
            return out.len() == 1 && self.try_get_shared(out);
        };
        let ring = self.ring();
        if out.len() == 1 {
            let Some(obj) = ring.dequeue_one() else {
                return false;
            };
            out[0] = obj;
        } else if ring.dequeue_bulk(out).is_err() {
            return false;
        }
        c.count_hold(out.len());
        true
    }

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
            Some(c) if !self.hdr.direct => unsafe { c.try_put_small(objs) },
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
            Some(c) if !self.hdr.direct => unsafe { c.try_put(objs) },
            _ => false,
        }
    }

    /// With the handler cache off: puts `objs` straight into the ring
    /// (validation off), counted on the lcore's own line. Returns `false`,
    /// having changed nothing, where
    /// [`put`](PoolCore::put) must decide (and report): a released pool, a
    /// null object, a ring without room (more objects back than went out),
    /// validation mode, a bulk from a caller without a cache slot (one
    /// object from such a caller is counted on the shared release counter).
    ///
    /// Meant for direct pools, as
    /// [`try_get_direct`](PoolCore::try_get_direct).
    ///
    /// # Safety
    /// As for [`put`](PoolCore::put).
    #[inline(always)]
    pub unsafe fn try_put_direct(&self, lcore: u32, objs: &[*mut c_void]) -> bool {
        let Some(c) = self.direct_slot(lcore, PUT_BOUND) else {
            return objs.len() == 1 && self.try_put_shared(objs);
        };
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
        // concurrent deferred release may free it (see `Shutdown`).
        c.count_release(objs.len());
        true
    }

    /// [`try_get_direct`](PoolCore::try_get_direct) for a caller without a
    /// cache slot (a non-EAL thread, an lcore id past `max_lcores`): what
    /// `get` does for it (the ring, the shared hold counter), without the
    /// checked entry. `false`, having changed nothing, in validation mode
    /// and wherever `get` must decide. Correct for any caller, but meant
    /// for those without a slot (see [`has_direct_slot`](PoolCore::has_direct_slot)):
    /// `try_get_direct` serves single objects for them itself, a caller
    /// inlines this for their bulks into a function of its own. It uses
    /// the ring's always-inlined bulk operations: with a second call site
    /// of the plain ones the compiler would stop inlining them into the
    /// lcore path (measured: 30 instructions more per bulk of 32), and
    /// making those always inlined costs the lcore path the `memcpy` the
    /// compiler makes of their copy loop (6 instructions more per bulk of
    /// 32).
    #[inline(always)]
    pub fn try_get_shared(&self, out: &mut [*mut c_void]) -> bool {
        if self.hdr.validate || !self.shutdown.state().serves_gets() {
            return false;
        }
        let ring = self.ring();
        if out.len() == 1 {
            let Some(obj) = ring.dequeue_one() else {
                return false;
            };
            out[0] = obj;
        } else if ring.dequeue_bulk_inline(out).is_err() {
            return false;
        }
        inflight::shared_add(&self.any.hold, out.len());
        true
    }

    /// [`try_put_direct`](PoolCore::try_put_direct) for a caller without a
    /// cache slot, as [`try_get_shared`](PoolCore::try_get_shared).
    #[inline(always)]
    pub fn try_put_shared(&self, objs: &[*mut c_void]) -> bool {
        if self.hdr.validate || !self.shutdown.state().takes_puts() {
            return false;
        }
        let ring = self.ring();
        let ok = if objs.len() == 1 {
            ring.enqueue_one(objs[0]).is_ok()
        } else {
            ring.enqueue_bulk_inline(objs).is_ok()
        };
        if !ok {
            return false;
        }
        // The last touch of the pool (see `try_put_direct`).
        inflight::shared_add(&self.any.release, objs.len());
        true
    }
}
