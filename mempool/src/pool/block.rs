//! The pool in its block: [`PoolCore::init`] places every part at its
//! offset, [`PoolCore::attach`] finds an initialised pool, and the accessors
//! here reach each part through a pointer with the whole block's provenance.

use core::marker::PhantomData;
use core::ptr::NonNull;

use crossbeam_utils::CachePadded;

use super::{BuildId, Header, PoolCore, HEADER_BYTES, POOL_MAGIC, RING_OFFSET};
use crate::chunk_table::{ChunkTable, Chunks};
use crate::config::PoolLayout;
use crate::dma_table::{Dma, DmaTable};
use crate::error::PoolError;
use crate::inflight::SharedCounters;
use crate::lcore_cache::{self, LcoreCache};
use crate::ptr_ring::PtrRing;
use crate::state::{Shutdown, GET_BOUND, PUT_BOUND};
use crate::sync::{AtomicU64, Ordering};
use crate::validation::{Bitmap, Validator};

impl PoolCore {
    /// Initialises a pool in `mem` and returns it.
    ///
    /// # Safety
    /// * `mem` is valid for writes of `layout.bytes` bytes, aligned to
    ///   `layout.align`, and used for nothing else while the pool lives;
    /// * `layout` comes from [`PoolConfig::layout`](crate::PoolConfig::layout);
    /// * the memory outlives `'a`;
    /// * with `single_producer` (`single_consumer`) in the configuration: for
    ///   the pool's whole life at most one thread at a time puts objects into
    ///   it (gets objects from it), through any method, safe ones included.
    pub unsafe fn init<'a>(mem: NonNull<u8>, layout: &PoolLayout) -> &'a PoolCore {
        let base = mem.as_ptr();
        let p =
            core::ptr::slice_from_raw_parts_mut(base, layout.bytes - HEADER_BYTES) as *mut PoolCore;
        let cfg = &layout.config;
        // The layout's ring is MP/MC (see `PoolLayout::ring`): the modes are
        // set here, where the caller takes on their contract.
        // SAFETY: the single-producer/consumer contract is our caller's
        // (this function's own contract).
        let ring = unsafe {
            layout
                .ring
                .with_single_producer(cfg.single_producer)
                .with_single_consumer(cfg.single_consumer)
        };
        // SAFETY: only addresses are computed (no reference to the
        // uninitialised memory is made); they lie inside the block.
        let (table_at, dma_at, val_at) = unsafe {
            (
                core::ptr::addr_of!((*p).table_hdr) as usize - base as usize,
                core::ptr::addr_of!((*p).dma_hdr) as usize - base as usize,
                core::ptr::addr_of!((*p).validator_hdr) as usize - base as usize,
            )
        };
        // SAFETY: the caller guarantees `mem` is writable, aligned and holds
        // `layout.bytes` bytes, which the layout (only `PoolConfig::layout`
        // makes one) made large enough for the header, the ring, the caches
        // and the tables at their offsets. Each header field is written in
        // place through the raw pointer.
        unsafe {
            // Newest first needs the producer lock to take objects back: a
            // single-producer ring has none, so such a pool stays oldest
            // first, and keeps the fast paths.
            let newest_first = cfg.newest_first && !cfg.single_producer;
            // The handler cache's fast paths touch the lcore's cache alone:
            // a newest-first pool's refills and flushes, where the order
            // is chosen, are on the checked paths, so with the cache on it
            // keeps them. The cache-off fast paths go to the ring and leave
            // a newest-first pool to its own route.
            let direct = layout.cache_size() == 0;
            let fast_lcores = if cfg.validate || (newest_first && direct) {
                0
            } else {
                cfg.max_lcores as usize
            };
            core::ptr::addr_of_mut!((*p).hdr).write(CachePadded::new(Header {
                magic: AtomicU64::new(0),
                build: BuildId::CORE,
                max_lcores: cfg.max_lcores as usize,
                fast_lcores,
                caches_offset: layout.caches_offset,
                lcore_stride: layout.lcore_stride,
                direct,
                validate: cfg.validate,
                checked: cfg.validate || newest_first,
                newest_first,
                layout: *layout,
            }));
            core::ptr::addr_of_mut!((*p).shared).write(SharedCounters::new());
            core::ptr::addr_of_mut!((*p).table_hdr).write(CachePadded::new(ChunkTable::new(
                cfg.max_chunks,
                layout.chunks_offset - table_at,
                layout.order_offset - table_at,
            )));
            core::ptr::addr_of_mut!((*p).dma_hdr).write(CachePadded::new(DmaTable::new(
                cfg.max_devices,
                layout.devices_offset - dma_at,
            )));
            core::ptr::addr_of_mut!((*p).shutdown).write(CachePadded::new(Shutdown::new(
                cfg.retry_period_ns,
                cfg.warn_period_ns,
                fast_lcores,
            )));
            core::ptr::addr_of_mut!((*p).validator_hdr).write(Validator::new(
                layout.bitmap_words,
                layout.bitmap_offset - val_at,
            ));
            let core = &*p;
            core.table().init_arrays();
            core.dma().init_slots();
            core.validator().init_bitmap();
            PtrRing::init(NonNull::new_unchecked(base.add(layout.ring_offset)), &ring);
            for i in 0..cfg.max_lcores as usize {
                LcoreCache::init(
                    base.add(layout.caches_offset + i * layout.lcore_stride),
                    layout.cache_size,
                    layout.cache_size as u32,
                );
            }
            // Release pairs with the Acquire load in `attach`: a process that
            // sees the magic sees an initialised pool.
            core.hdr.magic.store(POOL_MAGIC, Ordering::Release);
            core
        }
    }

    /// Returns the pool already initialised in `mem` (by this or another
    /// process): `NotAPool` unless the magic is this format's, `OtherBuild`
    /// (naming both builds) unless the creator's [`BuildId`] is this one's.
    ///
    /// # Safety
    /// `mem` points to at least [`HEADER_BYTES`] readable bytes: the magic
    /// is read through the raw pointer before any reference to the memory
    /// is made. If it matches, `mem` holds a pool [`PoolCore::init`]
    /// initialised, valid (with provenance over the whole block) for `'a`.
    #[inline]
    pub unsafe fn attach<'a>(mem: NonNull<u8>) -> Result<&'a PoolCore, PoolError> {
        // The header is the first field (`repr(C)`) and `CachePadded` keeps
        // its value at offset 0 (checked by a unit test in `ptr_ring`): the
        // magic, the header's first field, is the block's first word.
        let hdr = mem.as_ptr().cast::<Header>();
        // SAFETY: the caller guarantees the header bytes are readable; only
        // the magic word is read, through a raw place. Acquire pairs with
        // the Release store at the end of `init`.
        let magic = unsafe { (*core::ptr::addr_of!((*hdr).magic)).load(Ordering::Acquire) };
        if magic != POOL_MAGIC {
            return Err(PoolError::NotAPool {
                addr: mem.as_ptr() as usize,
            });
        }
        // SAFETY: readable header bytes (caller's contract); every build of
        // this magic's format stores its `BuildId` here, before the magic's
        // Release store, which the Acquire load above pairs with. Read-only
        // after `init`.
        let build = unsafe { core::ptr::addr_of!((*hdr).build).read() };
        if build.hash != BuildId::CORE.hash {
            return Err(PoolError::OtherBuild {
                addr: mem.as_ptr() as usize,
                found: build,
                ours: BuildId::CORE,
            });
        }
        // SAFETY: the magic proves an initialised pool (caller's contract).
        Ok(unsafe { Self::attach_unchecked(mem) })
    }

    /// The pool in `mem`, without checking the magic: for a caller that
    /// already proved the pool initialised (the glue's inlined fast path
    /// checks its own zone magic, stored after `init` returned).
    ///
    /// # Safety
    /// `mem` holds a pool [`PoolCore::init`] initialised, valid (with
    /// provenance over the whole block) for `'a`.
    #[inline(always)]
    pub unsafe fn attach_unchecked<'a>(mem: NonNull<u8>) -> &'a PoolCore {
        let hdr = mem.as_ptr().cast::<Header>();
        // SAFETY: an initialised header (caller's contract); read-only field.
        let bytes = unsafe { (*core::ptr::addr_of!((*hdr).layout)).bytes };
        let p = core::ptr::slice_from_raw_parts(mem.as_ptr().cast_const(), bytes - HEADER_BYTES)
            as *const PoolCore;
        // SAFETY: the caller's guarantee; the slice length makes the
        // reference cover exactly the block.
        unsafe { &*p }
    }

    /// A pointer to `part` (a field of the header) with the provenance of
    /// the whole block, for the parts that reach past themselves.
    #[inline(always)]
    fn part<T>(&self, part: &T) -> *const T {
        let off = part as *const T as usize - self.base() as usize;
        // SAFETY: `part` is a field of `self`, so `off` is inside the block.
        unsafe { self.base().add(off).cast() }
    }

    /// The chunk table, reaching its records and order array.
    #[inline(always)]
    pub(crate) fn table(&self) -> Chunks<'_> {
        // SAFETY: initialised by `init`; `part` has the block's provenance.
        unsafe { Chunks::new(self.part(&*self.table_hdr)) }
    }

    /// The DMA table, reaching its device slots.
    #[inline(always)]
    pub(super) fn dma(&self) -> Dma<'_> {
        // SAFETY: as in `table`.
        unsafe { Dma::new(self.part(&*self.dma_hdr)) }
    }

    /// The validator, reaching its bitmap.
    #[inline(always)]
    pub(super) fn validator(&self) -> Bitmap<'_> {
        // SAFETY: as in `table`.
        unsafe { Bitmap::new(self.part(&self.validator_hdr)) }
    }

    #[inline(always)]
    fn base(&self) -> *const u8 {
        self as *const PoolCore as *const u8
    }

    /// The ring behind the caches.
    #[inline(always)]
    pub fn ring(&self) -> &PtrRing {
        // SAFETY: `init` placed an initialised ring of `ring.slots` slots
        // at `RING_OFFSET`; it lives as long as the pool, and `base` has
        // the whole block's provenance.
        unsafe {
            PtrRing::from_raw(
                NonNull::new_unchecked(self.base().add(RING_OFFSET).cast_mut()),
                self.hdr.layout.ring.slots(),
            )
        }
    }

    /// The cache of `lcore`, or `None` for an id without one.
    #[inline(always)]
    pub(super) fn cache(&self, lcore: u32) -> Option<&LcoreCache> {
        let i = lcore as usize;
        if i >= self.hdr.max_lcores {
            return None;
        }
        // SAFETY: `i < max_lcores`.
        Some(unsafe { self.cache_at(i) })
    }

    /// The cache of lcore index `i`, unchecked.
    ///
    /// # Safety
    /// `i < max_lcores`.
    #[inline(always)]
    pub(super) unsafe fn cache_at(&self, i: usize) -> &LcoreCache {
        // SAFETY: `i < max_lcores` (caller), and `init` placed `max_lcores`
        // caches `lcore_stride` bytes apart from `caches_offset`.
        unsafe { self.cache_from(i * self.hdr.lcore_stride) }
    }

    /// The cache `offset` bytes after lcore 0's: where `cache_at` and
    /// `fast_cache` (each with its own way to the offset) make it.
    ///
    /// # Safety
    /// `offset` is `i * lcore_stride` for some `i < max_lcores`.
    #[inline(always)]
    unsafe fn cache_from(&self, offset: usize) -> &LcoreCache {
        // SAFETY: `init` placed a cache of `cache_size` slots there (caller);
        // `base` has the whole block's provenance.
        unsafe {
            LcoreCache::from_raw(
                self.base().add(self.hdr.caches_offset + offset),
                self.hdr.layout.cache_size,
            )
        }
    }

    pub(super) fn caches(&self) -> impl Iterator<Item = &LcoreCache> + Clone {
        (0..self.hdr.max_lcores as u32).filter_map(move |i| self.cache(i))
    }

    /// Drops every atomic in place (loom's own model state).
    ///
    /// # Safety
    /// Nothing uses the pool afterwards.
    #[cfg(loom)]
    pub(super) unsafe fn drop_atomics(&self) {
        let base = self.base().cast_mut();
        let ring_slots = self.ring().slots();
        // SAFETY: all written by `init`; the caller guarantees no further use.
        unsafe {
            crate::ptr_ring::drop_in_place(base.add(RING_OFFSET), ring_slots);
            for i in 0..self.hdr.max_lcores {
                LcoreCache::drop_in_place(
                    base.add(self.hdr.caches_offset + i * self.hdr.lcore_stride),
                );
            }
            self.table().drop_arrays();
            self.dma().drop_slots();
            self.validator().drop_bitmap();
            let p = self as *const PoolCore as *mut PoolCore;
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*p).hdr));
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*p).shared));
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*p).table_hdr));
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*p).dma_hdr));
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*p).shutdown));
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*p).validator_hdr));
        }
    }
}

/// An lcore's counters on the cache-off fast paths, as
/// [`PoolCore::direct_slot_of`] found them (the slot of one lcore, which only
/// that lcore's thread may use); on a pool with the handler cache the
/// cache-off paths count on them. A direct pool counts by its ring's totals
/// and never reads them: its slot ([`PoolCore::direct_gate`]) points
/// nowhere and stands for the passed gate alone, for every caller.
///
/// It holds a raw pointer, not a reference: an `Option<DirectSlot>` then
/// has a tag of its own, which the bound check sets, instead of the
/// reference's null niche, for which the compiler tested the computed
/// address for null once more on every cache-off call.
#[derive(Clone, Copy)]
pub struct DirectSlot<'a>(*const LcoreCache, PhantomData<&'a LcoreCache>);

impl<'a> DirectSlot<'a> {
    /// The slot's counters.
    #[inline(always)]
    pub(super) fn cache(self) -> &'a LcoreCache {
        // Only a pool with the handler cache reads its slot's counters,
        // and only `direct_gate`, for a direct pool, makes a null slot.
        debug_assert!(!self.0.is_null(), "a direct pool's slot read");
        // SAFETY: made from a `&'a LcoreCache` in `direct_slot_of`.
        unsafe { &*self.0 }
    }
}

/// Which cache slot a fast path may use.
impl PoolCore {
    /// [`cache`](PoolCore::cache) for the inlined fast paths: `None` also in
    /// validation mode (every operation must then take the checked path).
    /// Also `None` for a pool without a cache (`direct`), which a caller
    /// that has told the compiler otherwise (`assume_cached`) does not
    /// test.
    ///
    /// The lcore's cache is found with a shift by a constant (the stride
    /// of every pool with a cache, see `lcore_cache`), not with
    /// [`cache_at`](PoolCore::cache_at)'s multiply by the pool's stride:
    /// on the way from the lcore id to the length word and the slot moved,
    /// that multiply cost the bulk-1 fast paths 7% of their rate.
    #[inline(always)]
    pub(super) fn fast_cache(&self, lcore: u32) -> Option<&LcoreCache> {
        let i = lcore as usize;
        if i >= self.hdr.fast_lcores || self.hdr.direct {
            return None;
        }
        debug_assert_eq!(self.hdr.lcore_stride, 1 << lcore_cache::AREA_SHIFT);
        // SAFETY: `i < fast_lcores <= max_lcores`, and the stride of a pool
        // with a cache is `1 << AREA_SHIFT` (`lcore_cache::stride`), so this
        // is `i * lcore_stride`.
        Some(unsafe { self.cache_from(i << lcore_cache::AREA_SHIFT) })
    }

    /// `lcore`'s slot on the cache-off get path (`put`: the put path) now,
    /// for [`try_get_direct_at`](PoolCore::try_get_direct_at) /
    /// [`try_put_direct_at`](PoolCore::try_put_direct_at); `None` for a
    /// caller without one, in validation mode and once the pool is past the
    /// state that path serves, and the caller then takes the checked entry
    /// for a bulk. A caller that dispatches on it before any stack frame
    /// is set up leaves no look-up for the lcore path to repeat. On a
    /// direct pool this is [`direct_gate`](PoolCore::direct_gate),
    /// whatever `lcore` is.
    #[inline(always)]
    pub fn direct_slot_of(&self, lcore: u32, put: bool) -> Option<DirectSlot<'_>> {
        if self.hdr.direct {
            return self.direct_gate(put);
        }
        let i = lcore as usize;
        // One check past the bound of `Shutdown::direct_bound`: a caller
        // without a slot, validation mode, and a pool past the state this
        // path serves (gets: `Active`; puts: until `Released`); the caller
        // then takes the path for callers without a slot, which checks the
        // state itself. Checked here, not through an `Option<&LcoreCache>`
        // (see `DirectSlot`).
        if i >= self
            .shutdown
            .direct_bound(if put { PUT_BOUND } else { GET_BOUND })
        {
            return None;
        }
        // SAFETY: the bound is 0 or `fast_lcores <= max_lcores`.
        let c: *const LcoreCache = unsafe { self.cache_at(i) };
        Some(DirectSlot(c, PhantomData))
    }

    /// On a pool with the handler cache off (`is_direct`): whether the
    /// cache-off get path (`put`: the put path) is open now, for every
    /// caller, an EAL lcore or a thread without an lcore id alike. Such a
    /// pool counts by its ring's totals and no caller needs a slot of its
    /// own, so no lcore id is read: the slot returned points nowhere and
    /// stands for the passed gate. The gate is the direction's bound of
    /// [`direct_slot_of`](PoolCore::direct_slot_of) tested for 0: 0 in
    /// validation mode (a direct pool's `fast_lcores` is 0 exactly when
    /// its checked entry must see every call) and from the moment the pool
    /// leaves the state that path serves (see `Shutdown::direct_bound`).
    /// `None` on a pool with the handler cache, whose cache-off paths
    /// count on the lcore's slot (the compiler drops the test after
    /// [`assume_direct`](PoolCore::assume_direct)).
    #[inline(always)]
    pub fn direct_gate(&self, put: bool) -> Option<DirectSlot<'_>> {
        if !self.hdr.direct {
            return None;
        }
        let open = self
            .shutdown
            .direct_bound(if put { PUT_BOUND } else { GET_BOUND })
            != 0;
        // SAFETY: tested above, and the header never changes once `init`
        // wrote it; said again because the compiler cannot carry the test
        // past the atomic load, and the caller's path reads the flag again
        // to choose how to count (measured: a load and a test more per
        // single-object call).
        unsafe { core::hint::assert_unchecked(self.hdr.direct) };
        // A null pointer to a cache of no slots (`LcoreCache` ends in a slice).
        let nowhere =
            core::ptr::slice_from_raw_parts(core::ptr::null::<u8>(), 0) as *const LcoreCache;
        open.then_some(DirectSlot(nowhere, PhantomData))
    }

    /// Whether the handler cache is off (`cache_size == 0`): the fast paths
    /// are then
    /// [`try_get_direct`](PoolCore::try_get_direct) /
    /// [`try_put_direct`](PoolCore::try_put_direct), straight to the ring.
    #[inline(always)]
    pub fn is_direct(&self) -> bool {
        self.hdr.direct
    }

    /// Tells the compiler that the handler cache is on, as the caller
    /// already knows from a word of its own (the glue's zone word): the
    /// cache fast paths inlined after this ([`try_get_cached`](PoolCore::try_get_cached)
    /// and the others) then skip their test of the flag, one load and a
    /// branch.
    ///
    /// # Safety
    /// `!self.is_direct()`.
    #[inline(always)]
    pub unsafe fn assume_cached(&self) {
        // SAFETY: the caller's contract.
        unsafe { core::hint::assert_unchecked(!self.hdr.direct) }
    }

    /// The converse of [`assume_cached`](PoolCore::assume_cached): the
    /// cache-off fast paths inlined after this
    /// ([`try_get_direct`](PoolCore::try_get_direct) and the others) then
    /// skip their test of the flag before counting (a direct pool counts
    /// by the ring's totals, a cached one on its counters).
    ///
    /// # Safety
    /// `self.is_direct()`.
    #[inline(always)]
    pub unsafe fn assume_direct(&self) {
        // SAFETY: the caller's contract.
        unsafe { core::hint::assert_unchecked(self.hdr.direct) }
    }

    /// [`assume_direct`](PoolCore::assume_direct) for a newest-first pool
    /// (the glue's newest zone word): the newest-first route
    /// ([`try_get_newest`](PoolCore::try_get_newest),
    /// [`try_put_newest`](PoolCore::try_put_newest)) then skips its tests
    /// of both flags.
    ///
    /// # Safety
    /// `self.is_direct()` and the pool created newest first.
    #[inline(always)]
    pub unsafe fn assume_direct_newest(&self) {
        // SAFETY: the caller's contract.
        unsafe { core::hint::assert_unchecked(self.hdr.direct && self.hdr.newest_first) }
    }
}
