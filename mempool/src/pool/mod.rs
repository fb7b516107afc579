//! [`PoolCore`]: the pool in one block of shared memory, tying together the
//! ring, the per-lcore caches, inflight accounting, the IOVA table, DMA
//! bookkeeping, validation and the shutdown state machine.
//!
//! # Life of an object
//! ```text
//! register_chunk ──▶ (out, with DPDK's populate) ──put──▶ cache / ring
//!        cache ◀──refill (burst)── ring ◀──flush (bulk)── cache
//!   get: own cache (fast) ─▶ refill from ring ─▶ application
//!   put: own cache (fast) ─▶ flush top to ring when full
//!   no lcore id: ring directly, shared counters
//! ```
//!
//! # Caller identity
//! Every get/put names its caller's lcore id as DPDK gives it
//! (`rte_lcore_id()`). An id below `max_lcores` selects that lcore's cache;
//! any other id (`LCORE_ID_ANY = u32::MAX` on non-EAL threads, or an id
//! beyond the array) bypasses the caches and uses the ring directly, with
//! shared atomic counters. No array is ever indexed with an id that was not
//! checked against `max_lcores`.
//!
//! # Guarantees
//! * Get and put are all-or-nothing toward the caller: a failed get hands
//!   out nothing and loses nothing (objects may have moved from the ring
//!   into the caller's own cache). A put never fails for an object that was
//!   taken from the pool (the ring holds every object).
//! * **Idle objects in other caches.** With no concurrent dequeuers, a get
//!   of `k` objects by lcore `L` fails only if `ring + cache[L] < k` (by a
//!   caller without an lcore: only if `ring < k`). At most
//!   `Σ_{L' ≠ L} cache[L']` objects are idle out of its reach: at most
//!   `(lcores that used the pool − 1) × cache_size`, and with the default
//!   sizing never more than two thirds of the pool. `flush_lcore` /
//!   `flush_all_quiescent` give them back to the ring.
//! * `populated == in_ring + in_caches + inflight` whenever no operation is
//!   in progress (see [`crate::inflight`]).

use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::ptr::NonNull;

use crossbeam_utils::CachePadded;

use crate::config::{PoolConfig, PoolLayout};
use crate::dma::{DeviceId, DeviceStats, Dma, DmaMapper, DmaTable};
use crate::error::PoolError;
use crate::inflight::{self, InflightSnapshot, SharedCounters, ACCOUNTING};
use crate::iova::{ChunkId, ChunkInfo, ChunkSpec, ChunkTable, Chunks, Iova, ObjIndex, VirtAddr};
use crate::lcore_cache::LcoreCache;
use crate::ptr_ring::{PtrRing, RingError};
use crate::shutdown::{PollOutcome, PoolState, Shutdown, ShutdownStats};
use crate::sync::{AtomicU64, Ordering};
use crate::validation::{Bitmap, RejectKind, RejectStats, Validator};

const POOL_MAGIC: u64 = 0x7072_5f70_6f6f_6c31; // "pr_pool1"

/// Objects checked per inner put in validation mode (a stack buffer).
const VALIDATE_BATCH: usize = 32;

/// Read-only after `init`: everything the fast path needs, on one line.
#[repr(C)]
struct Header {
    /// Release-stored last in `init`; pairs with the Acquire load in `attach`.
    magic: AtomicU64,
    max_lcores: usize,
    /// `max_lcores` without validation, 0 with it: the one bound the inlined
    /// fast paths check (`try_get_cached`), so validation mode costs them no
    /// extra branch.
    fast_lcores: usize,
    caches_offset: usize,
    lcore_stride: usize,
    ring_offset: usize,
    /// The handler cache is off (`cache_size == 0`): the inlined fast
    /// paths of an EAL lcore go straight to the ring.
    direct: bool,
    validate: bool,
    layout: PoolLayout,
}

/// The pool: its block, header first. Holds no pointers: every part is
/// found at an offset from the block's base, so every process mapping the
/// block (at any address) can use it.
///
/// A dynamically sized type whose tail is the rest of the block: a
/// `&PoolCore` covers the whole block, so the ring, the caches, the chunk
/// records, the device slots and the bitmap are all reached through
/// pointers derived from it (never from a reference to one of the header's
/// parts, which would cover only that part).
#[repr(C)]
pub struct PoolCore {
    hdr: CachePadded<Header>,
    any: SharedCounters,
    table_hdr: CachePadded<ChunkTable>,
    dma_hdr: CachePadded<DmaTable>,
    shutdown: CachePadded<Shutdown>,
    validator_hdr: Validator,
    /// Everything after the header: ring, caches, tables. `UnsafeCell`
    /// because it is written through shared references.
    block: [UnsafeCell<u8>],
}

/// Bytes of the pool header (where the ring and the rest of the block
/// begin, at the offsets of the layout). The last header field is padded
/// to whole lines, so the tail starts right after it.
pub const HEADER_BYTES: usize =
    core::mem::offset_of!(PoolCore, validator_hdr) + core::mem::size_of::<Validator>();

/// Alignment of the pool header (and of the block).
pub(crate) const HEADER_ALIGN: usize = core::mem::align_of::<CachePadded<Header>>();

const _: () = assert!(HEADER_BYTES.is_multiple_of(HEADER_ALIGN));

// SAFETY: shared mutable state is atomic, or written under the chunk table's
// lock (records, published by a Release store), or owned by one lcore
// (cache slots: the `put`/`get` safety contract). Nothing is thread-affine.
unsafe impl Sync for PoolCore {}
// SAFETY: as above; the pool holds no pointers.
unsafe impl Send for PoolCore {}

/// Everything a pool can tell about itself, read on demand. Exact when no
/// operation is in progress; otherwise each field is a recent value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Objects the pool was sized for.
    pub objects: usize,
    /// Objects registered (populated).
    pub populated: usize,
    /// Objects in the ring.
    pub in_ring: usize,
    /// Objects in all lcore caches.
    pub in_caches: usize,
    /// Objects out with the application (`populated + hold − release`;
    /// derived from the other counts in a build without `accounting`).
    pub inflight: i64,
    /// Σ hold (objects handed out, ever). Wrapping: per-lcore hold counts
    /// are 32-bit, so compare differences modulo 2^32 only.
    pub hold: u64,
    /// Σ release (objects taken back, ever; wrapping).
    pub release: u64,
    /// Chunk records.
    pub chunks: usize,
    /// Devices attached (not removed).
    pub devices: usize,
    /// Successful DMA map calls, ever.
    pub dma_maps: u64,
    /// DMA unmap calls, ever.
    pub dma_unmaps: u64,
    /// Life-cycle state.
    pub state: PoolState,
    /// Validation rejections by kind.
    pub rejected: RejectStats,
    /// Shutdown counters.
    pub shutdown: ShutdownStats,
    /// Per-lcore cache size.
    pub cache_size: usize,
    /// Lcore ids with a cache.
    pub max_lcores: u32,
    /// Validation mode.
    pub validate: bool,
    /// Whether this build counts hold/release.
    pub accounting: bool,
}

fn put_error(e: RingError, n: usize) -> PoolError {
    match e {
        RingError::NullObject { index } => PoolError::NullObject { index },
        _ => PoolError::Overfull { requested: n },
    }
}

impl PoolCore {
    /// Initialises a pool in `mem` and returns it.
    ///
    /// # Safety
    /// * `mem` is valid for writes of `layout.bytes` bytes, aligned to
    ///   `layout.align`, and used for nothing else while the pool lives;
    /// * `layout` comes from [`PoolConfig::layout`];
    /// * the memory outlives `'a`;
    /// * with `single_producer` (`single_consumer`) in the configuration: for
    ///   the pool's whole life at most one thread at a time puts objects into
    ///   it (gets objects from it), through any method, safe ones included.
    pub unsafe fn init<'a>(mem: NonNull<u8>, layout: &PoolLayout) -> &'a PoolCore {
        let base = mem.as_ptr();
        let p =
            core::ptr::slice_from_raw_parts_mut(base, layout.bytes - HEADER_BYTES) as *mut PoolCore;
        let cfg = &layout.config;
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
            core::ptr::addr_of_mut!((*p).hdr).write(CachePadded::new(Header {
                magic: AtomicU64::new(0),
                max_lcores: cfg.max_lcores as usize,
                fast_lcores: if cfg.validate {
                    0
                } else {
                    cfg.max_lcores as usize
                },
                caches_offset: layout.caches_offset,
                lcore_stride: layout.lcore_stride,
                ring_offset: layout.ring_offset,
                direct: layout.cache_size() == 0,
                validate: cfg.validate,
                layout: *layout,
            }));
            core::ptr::addr_of_mut!((*p).any).write(SharedCounters::new());
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
            )));
            core::ptr::addr_of_mut!((*p).validator_hdr).write(Validator::new(
                layout.bitmap_words,
                layout.bitmap_offset - val_at,
            ));
            let core = &*p;
            core.table().init_arrays();
            core.dma().init_slots();
            core.validator().init_bitmap();
            PtrRing::init(
                NonNull::new_unchecked(base.add(layout.ring_offset)),
                &layout.ring,
            );
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
    /// process).
    ///
    /// # Safety
    /// `mem` points to at least [`HEADER_BYTES`] readable bytes: the magic
    /// is read through the raw pointer before any reference to the memory
    /// is made. If it matches, `mem` holds a pool [`PoolCore::init`]
    /// initialised, valid (with provenance over the whole block) for `'a`.
    #[inline]
    pub unsafe fn attach<'a>(mem: NonNull<u8>) -> Result<&'a PoolCore, PoolError> {
        // The header is the first field (`repr(C)`) and `CachePadded` keeps
        // its value at offset 0 (checked in this module's tests): the magic,
        // the header's first field, is the block's first word.
        let magic = mem.as_ptr().cast::<Header>();
        // SAFETY: the caller guarantees the header bytes are readable; only
        // the magic word is read, through a raw place. Acquire pairs with
        // the Release store at the end of `init`.
        let magic = unsafe { (*core::ptr::addr_of!((*magic).magic)).load(Ordering::Acquire) };
        if magic != POOL_MAGIC {
            return Err(PoolError::NotAPool {
                addr: mem.as_ptr() as usize,
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
    fn table(&self) -> Chunks<'_> {
        // SAFETY: initialised by `init`; `part` has the block's provenance.
        unsafe { Chunks::new(self.part(&*self.table_hdr)) }
    }

    /// The DMA table, reaching its device slots.
    #[inline(always)]
    fn dma(&self) -> Dma<'_> {
        // SAFETY: as in `table`.
        unsafe { Dma::new(self.part(&*self.dma_hdr)) }
    }

    /// The validator, reaching its bitmap.
    #[inline(always)]
    fn validator(&self) -> Bitmap<'_> {
        // SAFETY: as in `table`.
        unsafe { Bitmap::new(self.part(&self.validator_hdr)) }
    }

    #[inline(always)]
    fn base(&self) -> *const u8 {
        self as *const PoolCore as *const u8
    }

    /// The layout the pool was created with.
    pub fn layout(&self) -> &PoolLayout {
        &self.hdr.layout
    }

    /// Objects the pool was sized for.
    pub fn objects(&self) -> usize {
        self.hdr.layout.config.objects
    }

    /// Per-lcore cache size.
    pub fn cache_size(&self) -> usize {
        self.hdr.layout.cache_size
    }

    /// Lcore ids `0..max_lcores` have a cache.
    pub fn max_lcores(&self) -> u32 {
        self.hdr.max_lcores as u32
    }

    /// Whether validation mode is on.
    pub fn validating(&self) -> bool {
        self.hdr.validate
    }

    /// The ring behind the caches.
    #[inline(always)]
    pub fn ring(&self) -> &PtrRing {
        // SAFETY: `init` placed an initialised ring of `ring.slots` slots
        // at `ring_offset`; it lives as long as the pool, and `base` has
        // the whole block's provenance.
        unsafe {
            PtrRing::from_raw(
                NonNull::new_unchecked(self.base().add(self.hdr.ring_offset).cast_mut()),
                self.hdr.layout.ring.slots(),
            )
        }
    }

    /// The cache of `lcore`, or `None` for an id without one.
    #[inline(always)]
    fn cache(&self, lcore: u32) -> Option<&LcoreCache> {
        let i = lcore as usize;
        if i >= self.hdr.max_lcores {
            return None;
        }
        // SAFETY: just checked.
        Some(unsafe { self.cache_at(i) })
    }

    /// The cache of lcore index `i`, unchecked.
    ///
    /// # Safety
    /// `i < max_lcores`.
    #[inline(always)]
    unsafe fn cache_at(&self, i: usize) -> &LcoreCache {
        // SAFETY: `i < max_lcores` (caller), and `init` placed `max_lcores`
        // caches of `cache_size` slots `lcore_stride` bytes apart from
        // `caches_offset`; `base` has the whole block's provenance.
        unsafe {
            LcoreCache::from_raw(
                self.base()
                    .add(self.hdr.caches_offset + i * self.hdr.lcore_stride),
                self.hdr.layout.cache_size,
            )
        }
    }

    /// [`cache`](PoolCore::cache) for the inlined fast paths: `None` also in
    /// validation mode (every operation must then take the checked path).
    #[inline(always)]
    fn fast_cache(&self, lcore: u32) -> Option<&LcoreCache> {
        let i = lcore as usize;
        if i >= self.hdr.fast_lcores {
            return None;
        }
        // SAFETY: `i < fast_lcores <= max_lcores`.
        Some(unsafe { self.cache_at(i) })
    }

    fn caches(&self) -> impl Iterator<Item = &LcoreCache> + Clone {
        (0..self.hdr.max_lcores as u32).filter_map(move |i| self.cache(i))
    }

    // ----------------------------------------------------------------- put

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
    unsafe fn put_unvalidated(&self, lcore: u32, objs: &[*mut c_void]) -> Result<(), PoolError> {
        match self.cache(lcore) {
            // SAFETY: the caller owns this lcore's cache.
            Some(c) => unsafe {
                if c.try_put(objs) {
                    Ok(())
                } else {
                    self.put_slow(c, objs)
                }
            },
            None => self.put_ring(objs),
        }
    }

    fn after_release(&self, objs: &[*mut c_void]) -> PoolError {
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
        if self.shutdown.state() == PoolState::Released {
            return Err(self.after_release(objs));
        }
        self.ring()
            .enqueue_bulk(objs)
            .map_err(|e| put_error(e, objs.len()))?;
        inflight::shared_add(&self.any.release, objs.len());
        Ok(())
    }

    /// Put that missed the fast path: cache full, cache closed (draining) or
    /// disabled.
    #[inline(never)]
    unsafe fn put_slow(&self, c: &LcoreCache, objs: &[*mut c_void]) -> Result<(), PoolError> {
        let state = self.shutdown.state();
        if state == PoolState::Released {
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
            c.count_release(n);
            return Ok(());
        }
        // Full: flush the top of the stack in one bulk, keep at most half.
        let keep = c.len().min(limit / 2).min(limit - n);
        // SAFETY: the caller owns the cache.
        unsafe { c.flush_above(ring, keep) }.map_err(|e| put_error(e, c.len() - keep))?;
        // SAFETY: owner; `keep + n <= limit <= cache_size`.
        unsafe { c.push(objs) };
        Ok(())
    }

    #[inline(never)]
    unsafe fn put_validated(&self, lcore: u32, objs: &[*mut c_void]) -> Result<(), PoolError> {
        if self.shutdown.state() == PoolState::Released {
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

    // ----------------------------------------------------------------- get

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
    unsafe fn get_unvalidated(&self, lcore: u32, out: &mut [*mut c_void]) -> Result<(), PoolError> {
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

    /// Whether the handler cache is off (`cache_size == 0`): the fast paths
    /// of an lcore with a cache slot are then
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
    #[inline(always)]
    pub unsafe fn try_get_cached(&self, lcore: u32, out: &mut [*mut c_void]) -> bool {
        match self.fast_cache(lcore) {
            // SAFETY: the caller owns this lcore's cache.
            Some(c) if !self.hdr.direct => unsafe { c.try_get_small(out) },
            _ => false,
        }
    }

    /// With the handler cache off: takes `out.len()` objects straight from
    /// the ring for an lcore with a cache slot (validation off), counted on
    /// the lcore's own line, with no shared write beyond the ring's. Returns
    /// `false`, having changed nothing, where [`get`](PoolCore::get) must
    /// decide (and report): a draining pool, too few objects, no slot.
    ///
    /// Meant for pools where [`is_direct`](PoolCore::is_direct) holds (the
    /// caller checks it once to choose its path); with the handler cache on
    /// it is still correct, the objects only bypassing the cache.
    ///
    /// # Safety
    /// As for [`get`](PoolCore::get).
    #[inline(always)]
    pub unsafe fn try_get_direct(&self, lcore: u32, out: &mut [*mut c_void]) -> bool {
        let Some(c) = self.fast_cache(lcore) else {
            return false;
        };
        if self.shutdown.state() != PoolState::Active {
            return false;
        }
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

    /// With the handler cache off: puts `objs` straight into the ring for an
    /// lcore with a cache slot (validation off), counted on the lcore's own
    /// line. Returns `false`, having changed nothing, where
    /// [`put`](PoolCore::put) must decide (and report): a released pool, a
    /// null object, a ring without room (more objects back than went out).
    ///
    /// Meant for direct pools, as
    /// [`try_get_direct`](PoolCore::try_get_direct).
    ///
    /// # Safety
    /// As for [`put`](PoolCore::put).
    #[inline(always)]
    pub unsafe fn try_put_direct(&self, lcore: u32, objs: &[*mut c_void]) -> bool {
        let Some(c) = self.fast_cache(lcore) else {
            return false;
        };
        if self.shutdown.state() == PoolState::Released {
            return false;
        }
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

    /// Get without a cache: straight from the ring, shared counter.
    #[inline(never)]
    fn get_ring(&self, out: &mut [*mut c_void]) -> Result<(), PoolError> {
        let state = self.shutdown.state();
        if state != PoolState::Active {
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
        if state != PoolState::Active {
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

    #[inline(never)]
    unsafe fn get_validated(&self, lcore: u32, out: &mut [*mut c_void]) -> Result<(), PoolError> {
        // SAFETY: forwarded caller contract.
        unsafe { self.get_unvalidated(lcore, out) }?;
        for &o in out.iter() {
            if let Some(idx) = self.owns(o) {
                self.validator().mark_out(idx);
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------ counting

    /// Objects in the ring and all caches (DPDK's `get_count`). Exact when
    /// quiescent.
    pub fn available(&self) -> usize {
        self.ring().len() + self.in_caches()
    }

    /// Objects in all lcore caches.
    pub fn in_caches(&self) -> usize {
        self.caches().map(LcoreCache::len).sum()
    }

    /// Objects in lcore `lcore`'s cache (0 for an id without one).
    pub fn cache_len(&self, lcore: u32) -> usize {
        self.cache(lcore).map_or(0, LcoreCache::len)
    }

    /// Objects registered with [`register_chunk`](PoolCore::register_chunk).
    pub fn populated(&self) -> usize {
        self.table().registered()
    }

    /// The hold/release counters, read in release-safe order.
    pub fn inflight_snapshot(&self) -> InflightSnapshot {
        let lcores = self.caches().map(|c| c.counters());
        let any = core::iter::once((inflight::Hold::Whole(&self.any.hold), &*self.any.release));
        inflight::snapshot(lcores.chain(any), || self.populated())
    }

    /// Objects out with the application: `populated + Σhold − Σrelease`
    /// (never below the true count while it is read, see
    /// [`crate::inflight`]). Negative means more came back than went out.
    /// Without the `accounting` feature: `populated − available`, exact only
    /// when quiescent.
    pub fn inflight(&self) -> i64 {
        if ACCOUNTING {
            self.inflight_snapshot().inflight()
        } else {
            self.populated() as i64 - self.available() as i64
        }
    }

    /// Everything at once.
    pub fn stats(&self) -> PoolStats {
        let snap = self.inflight_snapshot();
        let in_ring = self.ring().len();
        let in_caches = self.in_caches();
        let (dma_maps, dma_unmaps) = self.dma().totals();
        PoolStats {
            objects: self.objects(),
            populated: snap.populated,
            in_ring,
            in_caches,
            inflight: if ACCOUNTING {
                snap.inflight()
            } else {
                snap.populated as i64 - (in_ring + in_caches) as i64
            },
            hold: snap.hold,
            release: snap.release,
            chunks: self.table().len(),
            devices: self.dma().attached(),
            dma_maps,
            dma_unmaps,
            state: self.state(),
            rejected: self.validator().stats(),
            shutdown: self.shutdown.stats(),
            cache_size: self.cache_size(),
            max_lcores: self.max_lcores(),
            validate: self.validating(),
            accounting: ACCOUNTING,
        }
    }

    // --------------------------------------------------------------- flush

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

    // ---------------------------------------------------------------- IOVA

    /// Records a chunk and the objects laid in it; they count as populated
    /// (and out, with the caller) from now on, until they are put.
    ///
    /// Call it **before** the chunk's objects are put (DPDK enqueues each
    /// object while populating): then `populated = ring + caches + inflight`
    /// holds at every step, and validation knows the objects.
    pub fn register_chunk(&self, spec: ChunkSpec) -> Result<ChunkInfo, PoolError> {
        self.table().insert(&spec, self.objects(), || {
            self.require("register_chunk", |s| s == PoolState::Active)
        })
    }

    /// `Ok` if the state passes `ok`, else `WrongState` for `op`.
    fn require(
        &self,
        op: &'static str,
        ok: impl FnOnce(PoolState) -> bool,
    ) -> Result<(), PoolError> {
        let state = self.state();
        if ok(state) {
            Ok(())
        } else {
            Err(PoolError::WrongState { op, state })
        }
    }

    /// The chunk record `id`.
    pub fn chunk(&self, id: ChunkId) -> Option<ChunkInfo> {
        self.table().get(id)
    }

    /// Chunk records so far.
    pub fn chunks(&self) -> usize {
        self.table().len()
    }

    /// Bound on chunk records.
    pub fn max_chunks(&self) -> usize {
        self.table().max_chunks()
    }

    /// The chunk containing `addr`. O(log chunks), lockless.
    pub fn chunk_of<T>(&self, addr: *const T) -> Option<ChunkInfo> {
        self.table().find(VirtAddr::of(addr))
    }

    /// The IOVA of `addr` (any byte of a recorded chunk that has an IOVA).
    pub fn iova_of<T>(&self, addr: *const T) -> Option<Iova> {
        let a = VirtAddr::of(addr);
        self.table().find(a)?.iova_of(a)
    }

    /// `Some(index)` if `obj` is exactly one of the pool's objects.
    #[inline]
    pub fn owns<T>(&self, obj: *const T) -> Option<ObjIndex> {
        let a = VirtAddr::of(obj);
        self.table().find(a)?.object_index(a)
    }

    /// In validation mode, whether the object is home (ring or cache).
    /// `None` when validation is off or `obj` is not ours.
    pub fn is_home<T>(&self, obj: *const T) -> Option<bool> {
        if !self.hdr.validate {
            return None;
        }
        Some(self.validator().is_home(self.owns(obj)?))
    }

    // ----------------------------------------------------------------- DMA

    /// Attaches `device` (once) and maps every chunk not yet mapped for it.
    /// Returns the number of chunks this call mapped.
    pub fn dma_attach(
        &self,
        device: DeviceId,
        mapper: &mut dyn DmaMapper,
    ) -> Result<usize, PoolError> {
        self.dma().attach(device, self.table(), mapper, || {
            self.require("dma_attach", |s| s == PoolState::Active)
        })
    }

    /// Maps chunks registered since the last attach/sync for every attached
    /// device. Call after registering chunks on a pool with devices.
    pub fn dma_sync(&self, mapper: &mut dyn DmaMapper) -> Result<usize, PoolError> {
        self.dma().sync(self.table(), mapper, || {
            self.require("dma_sync", |s| s != PoolState::Released)
        })
    }

    /// Unmaps everything mapped for `device` and retires it for good (it is
    /// never mapped again). A second call does nothing (`Ok(0)`).
    pub fn dma_remove(
        &self,
        device: DeviceId,
        mapper: &mut dyn DmaMapper,
    ) -> Result<usize, PoolError> {
        self.dma().remove(device, self.table(), mapper)
    }

    /// Counters of `device`, if it was ever attached.
    pub fn device_stats(&self, device: DeviceId) -> Option<DeviceStats> {
        self.dma().device(device)
    }

    // ------------------------------------------------------------ shutdown

    /// The life-cycle state.
    #[inline]
    pub fn state(&self) -> PoolState {
        self.shutdown.state()
    }

    /// Closes every cache to puts (limit 0). Called before the state
    /// leaves `Active`: the Relaxed limit stores are published by the
    /// Release half of that state CAS, so a put that happens-after the
    /// state change (in particular one ordered after `Released`) reads
    /// limit 0, misses the fast path and reaches a path that checks the
    /// state.
    fn close_caches(&self) {
        for c in self.caches() {
            c.close();
        }
        self.shutdown.touch();
    }

    /// Runs `f` as the one shutdown driver, or returns `busy` when another
    /// driver call holds the token (or the pool was released: the call
    /// that released it never gives the token back, so nothing gets past
    /// it once the memory may be freed).
    fn drive<R>(&self, busy: impl FnOnce(PoolState) -> R, f: impl FnOnce() -> (R, bool)) -> R {
        if !self.shutdown.claim_driver() {
            return busy(self.state());
        }
        let (r, released) = f();
        if !released {
            self.shutdown.release_driver();
        }
        r
    }

    /// Starts shutdown: closes the caches (every later put goes to the
    /// ring, each lcore gives its cache back on its next put), refuses
    /// further gets, and polls once. `now` is in ns on the caller's clock.
    ///
    /// Gets must have stopped, as the kernel requires of page_pool users:
    /// the slow paths refuse them, but a fast-path get from a non-empty
    /// cache cannot see the state. Use
    /// [`drain_quiescent`](PoolCore::drain_quiescent) when the application
    /// is known to be quiescent, to also empty every cache at once.
    ///
    /// One driver at a time (see [`poll`](PoolCore::poll)): a call racing
    /// another driver call returns [`PollOutcome::Busy`] having done
    /// nothing.
    pub fn begin_drain(
        &self,
        now: u64,
        mapper: &mut dyn DmaMapper,
    ) -> Result<PollOutcome, PoolError> {
        self.drive(
            |state| Self::busy("drain", state),
            || {
                if let Err(e) = self.close_as(PoolState::Draining, now) {
                    return (Err(e), false);
                }
                let out = self.poll_driver(now, mapper);
                let released = matches!(out, PollOutcome::Released { .. });
                (Ok(out), released)
            },
        )
    }

    /// What a driver call refused by the token returns.
    fn busy(op: &'static str, state: PoolState) -> Result<PollOutcome, PoolError> {
        match state {
            PoolState::Released => Err(PoolError::WrongState { op, state }),
            _ => Ok(PollOutcome::Busy),
        }
    }

    /// Closes the caches, then moves the state to `to` (the driver holds
    /// the token).
    fn close_as(&self, to: PoolState, now: u64) -> Result<PoolState, PoolError> {
        if self.state() == PoolState::Released {
            let op = if to == PoolState::Orphaned {
                "orphan"
            } else {
                "drain"
            };
            return Err(PoolError::WrongState {
                op,
                state: PoolState::Released,
            });
        }
        self.close_caches();
        self.shutdown.close(to, now)
    }

    /// [`begin_drain`](PoolCore::begin_drain), then flushes every cache.
    ///
    /// # Safety
    /// As [`flush_all_quiescent`](PoolCore::flush_all_quiescent).
    pub unsafe fn drain_quiescent(
        &self,
        now: u64,
        mapper: &mut dyn DmaMapper,
    ) -> Result<PollOutcome, PoolError> {
        self.drive(
            |state| Self::busy("drain", state),
            || {
                if let Err(e) = self.close_as(PoolState::Draining, now) {
                    return (Err(e), false);
                }
                // SAFETY: forwarded caller contract.
                if let Err(e) = unsafe { self.flush_all_quiescent() } {
                    return (Err(e), false);
                }
                let out = self.poll_driver(now, mapper);
                let released = matches!(out, PollOutcome::Released { .. });
                (Ok(out), released)
            },
        )
    }

    /// The forced path for a device that disappeared: unmaps its DMA
    /// mappings once, then drains as orphaned. Late returns are still
    /// accepted and never touch that device again; the final release does
    /// not unmap it again. An unmap failure is reported after the pool was
    /// orphaned (the mappings count as gone either way).
    pub fn orphan(
        &self,
        device: DeviceId,
        now: u64,
        mapper: &mut dyn DmaMapper,
    ) -> Result<PollOutcome, PoolError> {
        self.drive(
            |state| match state {
                PoolState::Released => Ok(PollOutcome::AlreadyReleased),
                _ => Ok(PollOutcome::Busy),
            },
            || {
                if self.state() == PoolState::Released {
                    return (Ok(PollOutcome::AlreadyReleased), false);
                }
                let unmapped = match self.dma().remove(device, self.table(), mapper) {
                    Err(PoolError::UnknownDevice { .. }) => Ok(0),
                    r => r,
                };
                if let Err(e) = self.close_as(PoolState::Orphaned, now) {
                    return (Err(e), false);
                }
                let outcome = self.poll_driver(now, mapper);
                let released = matches!(outcome, PollOutcome::Released { .. });
                (unmapped.map(|_| outcome), released)
            },
        )
    }

    /// One step of the deferred release: releases the pool when no object
    /// is out (exactly one call ever gets [`PollOutcome::Released`], and it
    /// unmaps the devices still attached), otherwise says when to poll again
    /// and whether to warn.
    ///
    /// **One driver at a time.** `begin_drain`, `drain_quiescent`, `orphan`
    /// and `poll` take a driver token: a call racing another one returns
    /// [`PollOutcome::Busy`] having touched nothing but the token, and the
    /// call that releases the pool keeps the token, so no later driver call
    /// gets past it. The caller that got `Released` may free the memory
    /// once no other call on the pool can still start (e.g. one alarm or
    /// thread drives shutdown): the token shortens a racing caller's touch
    /// to one CAS, it cannot make a call that starts after the free safe.
    pub fn poll(&self, now: u64, mapper: &mut dyn DmaMapper) -> PollOutcome {
        self.drive(
            |state| match state {
                PoolState::Released => PollOutcome::AlreadyReleased,
                _ => PollOutcome::Busy,
            },
            || {
                let out = self.poll_driver(now, mapper);
                let released = matches!(out, PollOutcome::Released { .. });
                (out, released)
            },
        )
    }

    /// [`poll`](PoolCore::poll) for the token holder.
    fn poll_driver(&self, now: u64, mapper: &mut dyn DmaMapper) -> PollOutcome {
        self.shutdown.touch();
        match self.state() {
            PoolState::Active => return PollOutcome::NotDraining,
            PoolState::Released => return PollOutcome::AlreadyReleased,
            PoolState::Draining | PoolState::Orphaned => {}
        }
        {
            // No registration between the inflight read and the release
            // (see `register_chunk`).
            let _registrations = self.table().hold_registrations();
            let inflight = self.inflight();
            if inflight > 0 {
                return self.shutdown.wait(now, inflight);
            }
            if !self.shutdown.try_release() {
                return PollOutcome::AlreadyReleased;
            }
        }
        // `release_all` takes the DMA lock, which `dma_attach` / `dma_sync`
        // hold while they check the state and map.
        PollOutcome::Released {
            waited_ns: self.shutdown.waited(now),
            dma: self.dma().release_all(self.table(), mapper),
        }
    }

    /// Suggested delay between polls (ns).
    pub fn retry_period_ns(&self) -> u64 {
        self.shutdown.retry_period()
    }

    /// Drops every atomic in place (loom's own model state).
    ///
    /// # Safety
    /// Nothing uses the pool afterwards.
    #[cfg(loom)]
    unsafe fn drop_atomics(&self) {
        let base = self.base().cast_mut();
        let ring_slots = self.ring().slots();
        // SAFETY: all written by `init`; the caller guarantees no further use.
        unsafe {
            let ring = base.add(self.hdr.ring_offset);
            let slots = ring
                .add(crate::ptr_ring::HEADER_BYTES)
                .cast::<crate::sync::AtomicUsize>();
            for i in 0..ring_slots {
                core::ptr::drop_in_place(slots.add(i));
            }
            crate::ptr_ring::drop_header_in_place(ring);
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
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*p).any));
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*p).table_hdr));
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*p).dma_hdr));
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*p).shutdown));
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*p).validator_hdr));
        }
    }
}

/// A pool on the Rust heap, for tests, benchmarks and users outside DPDK.
///
/// Made with [`HeapPool::new_freeing`], it frees its block as soon as one of
/// its own driver methods (`begin_drain`, `drain_quiescent`, `orphan`,
/// `poll`, which shadow `PoolCore`'s) returns [`PollOutcome::Released`], as
/// a DPDK application frees the memzone: a touch after release is then a
/// use after free that Miri and valgrind report.
pub struct HeapPool {
    mem: NonNull<u8>,
    alloc: std::alloc::Layout,
    free_on_release: bool,
    freed: std::sync::atomic::AtomicBool,
}

// SAFETY: the pool it owns is `Sync`; the allocation is not thread-affine.
unsafe impl Send for HeapPool {}
// SAFETY: as above; all access goes through `&PoolCore`.
unsafe impl Sync for HeapPool {}

impl HeapPool {
    /// A heap pool for `config`. No object is registered yet.
    ///
    /// # Errors
    /// [`PoolError::BadConfig`] for an invalid configuration, and for
    /// `single_producer` / `single_consumer`, whose contract safe code cannot
    /// promise: use [`HeapPool::new_unchecked`].
    pub fn new(config: &PoolConfig) -> Result<HeapPool, PoolError> {
        if config.single_producer || config.single_consumer {
            return Err(PoolError::BadConfig {
                what: "single_producer/single_consumer (HeapPool::new_unchecked takes them)",
                value: 1,
                min: 0,
                max: 0,
            });
        }
        // SAFETY: no single-sided flag, so no contract beyond the memory's.
        unsafe { Self::new_unchecked(config) }
    }

    /// [`HeapPool::new`] that also takes `single_producer` /
    /// `single_consumer`.
    ///
    /// # Safety
    /// With either flag, the caller keeps the contract of
    /// [`PoolCore::init`] for every use of the returned pool.
    pub unsafe fn new_unchecked(config: &PoolConfig) -> Result<HeapPool, PoolError> {
        let layout = config.layout()?;
        let alloc = std::alloc::Layout::from_size_align(layout.bytes, layout.align)
            .expect("PoolLayout gives a valid allocation layout");
        // SAFETY: `alloc` has non-zero size (the header alone is non-empty).
        let raw = unsafe { std::alloc::alloc_zeroed(alloc) };
        let Some(mem) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(alloc);
        };
        // SAFETY: freshly allocated with the layout's size and alignment,
        // owned by the returned value until `drop`; the single-sided
        // contract is our caller's (this function's own contract).
        unsafe { PoolCore::init(mem, &layout) };
        Ok(HeapPool {
            mem,
            alloc,
            free_on_release: false,
            freed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// [`HeapPool::new`] for a pool that frees its block at release (see
    /// the type's documentation).
    ///
    /// # Safety
    /// Once a driver method of the returned value returned
    /// [`PollOutcome::Released`], nothing uses the pool any more (no
    /// method, no dereference, on any thread) except dropping it.
    pub unsafe fn new_freeing(config: &PoolConfig) -> Result<HeapPool, PoolError> {
        let mut p = Self::new(config)?;
        p.free_on_release = true;
        Ok(p)
    }

    /// Frees the block when `out` is the release and the pool frees at
    /// release.
    fn after(&self, out: &PollOutcome) {
        if !self.free_on_release || !matches!(out, PollOutcome::Released { .. }) {
            return;
        }
        // Relaxed: only this value's own methods read it (`drop`, which
        // runs after every other use).
        self.freed.store(true, std::sync::atomic::Ordering::Relaxed);
        #[cfg(loom)]
        (**self).shutdown.mark_freed();
        #[cfg(not(loom))]
        // SAFETY: allocated in `new` with this layout; released, so by
        // `new_freeing`'s contract nothing uses the pool any more.
        unsafe {
            std::alloc::dealloc(self.mem.as_ptr(), self.alloc)
        };
    }

    /// [`PoolCore::poll`], then the free at release ([`HeapPool::new_freeing`]).
    pub fn poll(&self, now: u64, mapper: &mut dyn DmaMapper) -> PollOutcome {
        let out = (**self).poll(now, mapper);
        self.after(&out);
        out
    }

    /// [`PoolCore::begin_drain`], then the free at release.
    pub fn begin_drain(
        &self,
        now: u64,
        mapper: &mut dyn DmaMapper,
    ) -> Result<PollOutcome, PoolError> {
        let out = (**self).begin_drain(now, mapper)?;
        self.after(&out);
        Ok(out)
    }

    /// [`PoolCore::drain_quiescent`], then the free at release.
    ///
    /// # Safety
    /// As [`PoolCore::drain_quiescent`].
    pub unsafe fn drain_quiescent(
        &self,
        now: u64,
        mapper: &mut dyn DmaMapper,
    ) -> Result<PollOutcome, PoolError> {
        // SAFETY: forwarded caller contract.
        let out = unsafe { (**self).drain_quiescent(now, mapper) }?;
        self.after(&out);
        Ok(out)
    }

    /// [`PoolCore::orphan`], then the free at release.
    pub fn orphan(
        &self,
        device: DeviceId,
        now: u64,
        mapper: &mut dyn DmaMapper,
    ) -> Result<PollOutcome, PoolError> {
        let out = (**self).orphan(device, now, mapper)?;
        self.after(&out);
        Ok(out)
    }

    /// The block's base address (what [`PoolCore::attach`] takes).
    pub fn as_ptr(&self) -> NonNull<u8> {
        self.mem
    }
}

impl core::ops::Deref for HeapPool {
    type Target = PoolCore;
    #[inline(always)]
    fn deref(&self) -> &PoolCore {
        // SAFETY: initialised in `new`, freed only in `drop`; `mem` comes
        // from the allocator and covers the whole block.
        unsafe { PoolCore::attach_unchecked(self.mem) }
    }
}

impl Drop for HeapPool {
    fn drop(&mut self) {
        #[cfg(not(loom))]
        if *self.freed.get_mut() {
            return;
        }
        #[cfg(loom)]
        // SAFETY: we own the pool and nothing uses it after this.
        unsafe {
            (**self).drop_atomics()
        };
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.mem.as_ptr(), self.alloc) };
    }
}
