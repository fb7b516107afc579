//! Per-lcore object cache: a LIFO stack of object pointers in front of the
//! ring, owned by one lcore, after page_pool's per-CPU alloc cache.
//!
//! # Memory
//! Each lcore's cache is `stride` bytes of the shared block: a
//! [`CachePadded`] header (length, limit, hold/release counters: the only
//! line the fast path writes) followed by its pointer slots, so no two
//! lcores ever share a cache line. With a cache, the stride is the same for
//! every pool, `1 << AREA_SHIFT` bytes (room for the largest cache,
//! [`MAX_CACHE_SIZE`] slots, rounded up to a power of two): the fast paths
//! find an lcore's cache with a shift of its id by a constant, where a
//! multiply by the pool's own stride cost the bulk-1 get and put 7% of
//! their rate (`bench/NOTES.md`, "The lcore's cache at a shift"). DPDK
//! sizes its own per-lcore caches for the largest cache too.
//!
//! # Ownership
//! Only the owner lcore writes `len`, the slots and its counters (Relaxed
//! load + plain store: a `mov` on x86, never an RMW). Other threads read
//! `len` and the counters for statistics. The one exception is `limit`,
//! which the shutdown path lowers to 0 so that the owner's next put misses
//! the fast path and goes to the ring. Flushing another lcore's cache needs
//! that lcore to be quiescent (the caller's promise; see `PoolCore::flush_lcore`).
//!
//! # Sizing rule
//! See [`crate::config`]: an explicit size must satisfy DPDK's `cache_size <=
//! objects / 1.5` and `cache_size <= 512`. A [`PoolConfig`](crate::PoolConfig)
//! that leaves it unset gets `min(128, objects / (1.5 × max_lcores))`, so all
//! caches together never hold more than two thirds of the pool. The handler
//! (`pmd-glue`) always sets a size: 0, the cache off, unless the application
//! asks for one.
//!
//! # Policies (implemented in `pool/get.rs` and `pool/put.rs` with the primitives here)
//! * get `k` with `k <= len`: pop from the stack (fast path).
//! * get `k <= limit` with `k > len`: refill from the ring with one burst up
//!   to `min(limit, k + limit/2)` objects, then pop.
//! * get `k > limit`: the ring supplies what the cache lacks (one bulk, all
//!   or nothing), the whole cache the rest.
//! * put `k` with `len + k <= limit`: push (fast path).
//! * put `k > limit`: straight to the ring, the cache left as it is; a put to
//!   a closed cache (draining) sends the whole cache to the ring, then `k`.
//! * put otherwise: flush the top of the stack down to
//!   `min(len, limit/2, limit − k)` objects to the ring in one bulk, push.

use core::cell::UnsafeCell;
use core::ffi::c_void;

use crossbeam_utils::CachePadded;

use crate::config::MAX_CACHE_SIZE;
use crate::inflight::{owner_add, Hold, ACCOUNTING};
use crate::ptr_ring::{PtrRing, RingError};
use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// One object in the `hold` count, the high half of the packed word.
const HOLD_ONE: u64 = 1 << 32;
const LEN_MASK: u64 = HOLD_ONE - 1;

/// The header line of one lcore's cache.
#[repr(C)]
pub(crate) struct CacheHeader {
    /// Packed: low 32 bits are the objects in the stack (`len`), high 32
    /// bits the objects this lcore handed out (`hold`, wrapping; see
    /// `inflight`). One word, so a get updates both with the one store it
    /// needs anyway: counting holds costs the fast path nothing. Only the
    /// owner stores it (Release, pairs with the Acquire load in
    /// `inflight::snapshot`); anyone loads it.
    len_hold: AtomicU64,
    /// Most objects the owner may keep: `cache_size` while the pool is
    /// active, 0 once it drains. Written at init and by `close`; the owner
    /// loads it (Relaxed) on every put.
    limit: AtomicU32,
    /// Objects this lcore took back (see `inflight`).
    release: AtomicU64,
    /// The header is written through `&self` by the owner only through
    /// atomics, but keep it `!Freeze` whatever the atomics are made of
    /// (loom's have no `UnsafeCell`), as the slots after it are.
    _slots_are_mutable: UnsafeCell<()>,
}

/// One lcore's cache: the padded header line, then `cache_size` pointer
/// slots. A dynamically sized type: a `&LcoreCache` covers header *and*
/// slots, so the slot accesses derive from a reference whose provenance
/// spans them (the slice length is the cache size). The slots are
/// `UnsafeCell`s: the owner writes them through a shared reference.
#[repr(C)]
pub(crate) struct LcoreCache {
    hdr: CachePadded<CacheHeader>,
    slots: [UnsafeCell<*mut c_void>],
}

impl core::ops::Deref for LcoreCache {
    type Target = CacheHeader;
    #[inline(always)]
    fn deref(&self) -> &CacheHeader {
        &self.hdr
    }
}

/// Bytes from a cache header to its first slot.
pub(crate) const HEADER_BYTES: usize = core::mem::size_of::<CachePadded<CacheHeader>>();
/// Alignment of each cache (a padded header's).
pub(crate) const CACHE_ALIGN: usize = core::mem::align_of::<CachePadded<CacheHeader>>();

/// Bytes of one lcore's cache: the header alone without a cache (a pool
/// without one keeps only the header lines), else `1 << AREA_SHIFT` for
/// every cache size (see the module's "Memory").
pub(crate) const fn stride(cache_size: usize) -> usize {
    if cache_size == 0 {
        HEADER_BYTES
    } else {
        1 << AREA_SHIFT
    }
}

/// `log2` of the stride of a pool with a cache: the header and
/// [`MAX_CACHE_SIZE`] slots, rounded up to a power of two (8 KiB).
#[cfg(not(miri))]
pub(crate) const AREA_SHIFT: u32 = (HEADER_BYTES
    + MAX_CACHE_SIZE * core::mem::size_of::<*mut c_void>())
.next_power_of_two()
.trailing_zeros();
/// Under Miri, 1 KiB (caches up to 112 slots): Miri's time grows with the
/// pool's block, and its tests use caches of 2 to 16. The code is the same.
#[cfg(miri)]
pub(crate) const AREA_SHIFT: u32 = 10;

/// Most slots an lcore's area holds: at least [`MAX_CACHE_SIZE`] (under
/// Miri, 112); `PoolConfig::layout` refuses a larger cache.
pub(crate) const AREA_SLOTS: usize =
    ((1 << AREA_SHIFT) - HEADER_BYTES) / core::mem::size_of::<*mut c_void>();
#[cfg(not(miri))]
const _: () = assert!(AREA_SLOTS >= MAX_CACHE_SIZE);
const _: () = assert!((1usize << AREA_SHIFT).is_multiple_of(CACHE_ALIGN));

/// Most objects [`copy_small`] copies: the inlined fast paths
/// (`PoolCore::try_get_cached` / `try_put_cached`) take bulks up to this.
pub(crate) const SMALL_MAX: usize = 8;

/// Copies `n <= SMALL_MAX` object pointers inline, without a `memcpy` call:
/// `n == 1` (DPDK's uncached single-object calls) as one move, `2..=8` as two
/// overlapping fixed-size blocks (both blocks write the same values where
/// they overlap). Has no call in it, so a fast path built on it needs no
/// stack frame.
///
/// # Safety
/// `n <= SMALL_MAX`; `src` is valid for `n` reads, `dst` for `n` writes, and
/// they do not overlap.
#[inline(always)]
unsafe fn copy_small(src: *const *mut c_void, dst: *mut *mut c_void, n: usize) {
    // SAFETY: the caller's guarantee. Every arm touches only `src[..n]` and
    // `dst[..n]`: the second block starts at `n - 2` (or `n - 4`), in range
    // for the arm's `n`.
    unsafe {
        match n {
            0 => {}
            1 => dst.write(src.read()),
            2..=4 => {
                core::ptr::copy_nonoverlapping(src, dst, 2);
                core::ptr::copy_nonoverlapping(src.add(n - 2), dst.add(n - 2), 2);
            }
            _ => {
                debug_assert!(n <= SMALL_MAX);
                core::ptr::copy_nonoverlapping(src, dst, 4);
                core::ptr::copy_nonoverlapping(src.add(n - 4), dst.add(n - 4), 4);
            }
        }
    }
}

/// Most objects the cache copies inline, in blocks of 8 with no call:
/// bulks up to this on the cache fast paths
/// ([`PoolCore::try_get_cached_bulk`](crate::PoolCore::try_get_cached_bulk) /
/// `try_put_cached_bulk`) need no stack frame once the caller tells the
/// compiler `n <= INLINE_MAX` (the glue's bulk callbacks do). Above,
/// `memcpy`. Re-exported as `mempool::CACHE_INLINE_MAX`.
pub const INLINE_MAX: usize = 64;

/// Copies `SMALL_MAX < n <= INLINE_MAX` object pointers inline: blocks of
/// `SMALL_MAX` from the front while a whole one fits before the last, then
/// one last block ending at `n` (overlapping the one before it where `n`
/// is not a multiple; both write the same values there).
///
/// The loop has a constant bound and an early exit: the compiler unrolls
/// it into a chain of compares, each followed by one block at a constant
/// offset, which needs no register beyond the two pointers and `n` (a loop
/// with a run-time count it would unroll eight times over, with registers
/// to save, or turn into a `memcpy` call).
///
/// # Safety
/// `SMALL_MAX < n <= INLINE_MAX`; `src` is valid for `n` reads, `dst` for
/// `n` writes, and they do not overlap.
#[inline(always)]
unsafe fn copy_blocks(src: *const *mut c_void, dst: *mut *mut c_void, n: usize) {
    debug_assert!(n > SMALL_MAX && n <= INLINE_MAX);
    // SAFETY: the caller's guarantee: every block lies in `[0, n)`, the
    // loop's because `i + SMALL_MAX < n`, the last's because `n > SMALL_MAX`.
    unsafe {
        let mut i = 0;
        for _ in 0..INLINE_MAX / SMALL_MAX - 1 {
            if i + SMALL_MAX >= n {
                break;
            }
            core::ptr::copy_nonoverlapping(src.add(i), dst.add(i), SMALL_MAX);
            i += SMALL_MAX;
        }
        core::ptr::copy_nonoverlapping(src.add(n - SMALL_MAX), dst.add(n - SMALL_MAX), SMALL_MAX);
    }
}

/// Copies `n` object pointers: [`copy_small`] up to `SMALL_MAX` and
/// [`copy_blocks`] up to [`INLINE_MAX`] (a `memcpy` call with a run-time
/// length would cost more than the rest of the fast path), `memcpy` above.
///
/// # Safety
/// `src` is valid for `n` reads, `dst` for `n` writes, and they do not overlap.
#[inline(always)]
unsafe fn copy_objs(src: *const *mut c_void, dst: *mut *mut c_void, n: usize) {
    // SAFETY: the caller's guarantee; each copy within its own range of `n`.
    unsafe {
        if n <= SMALL_MAX {
            copy_small(src, dst, n);
        } else if n <= INLINE_MAX {
            copy_blocks(src, dst, n);
        } else {
            core::ptr::copy_nonoverlapping(src, dst, n);
        }
    }
}

impl LcoreCache {
    /// Writes an empty cache with `slots` slots and limit `limit` at `at`.
    ///
    /// # Safety
    /// `at` is valid for writes of [`stride`]`(slots)` bytes, aligned to
    /// [`CACHE_ALIGN`].
    pub(crate) unsafe fn init(at: *mut u8, slots: usize, limit: u32) {
        // SAFETY: the caller's guarantee: the header, then `slots` slots.
        unsafe {
            at.cast::<CachePadded<CacheHeader>>()
                .write(CachePadded::new(CacheHeader {
                    len_hold: AtomicU64::new(0),
                    limit: AtomicU32::new(limit),
                    release: AtomicU64::new(0),
                    _slots_are_mutable: UnsafeCell::new(()),
                }));
            let s = at.add(HEADER_BYTES).cast::<*mut c_void>();
            for i in 0..slots {
                s.add(i).write(core::ptr::null_mut());
            }
        }
    }

    /// Drops the header's atomics in place (loom's hold model state).
    ///
    /// # Safety
    /// `at` holds a cache from [`init`](LcoreCache::init) that nothing
    /// uses afterwards.
    #[cfg(loom)]
    pub(crate) unsafe fn drop_in_place(at: *mut u8) {
        // SAFETY: the caller's guarantee.
        unsafe { core::ptr::drop_in_place(at.cast::<CachePadded<CacheHeader>>()) };
    }

    /// The cache at `at` with `slots` slots, as one reference covering
    /// header and slots.
    ///
    /// # Safety
    /// `at` holds a cache from [`init`](LcoreCache::init) with `slots`
    /// slots, valid for `'a`, and its provenance covers all of it.
    #[inline(always)]
    pub(crate) unsafe fn from_raw<'a>(at: *const u8, slots: usize) -> &'a LcoreCache {
        // A pointer cast between unsized types keeps the metadata: the
        // slice length becomes the `slots` field's length.
        let fat = core::ptr::slice_from_raw_parts(at, slots) as *const LcoreCache;
        // SAFETY: the caller's guarantee.
        unsafe { &*fat }
    }

    /// Objects in the cache (exact for the owner; a recent value for others).
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        // Relaxed: a count for statistics; the owner is the only writer.
        (self.len_hold.load(Ordering::Relaxed) & LEN_MASK) as usize
    }

    /// The current limit.
    #[inline(always)]
    pub(crate) fn limit(&self) -> usize {
        // Relaxed: the owner re-reads it on every put; a stale value only
        // delays the switch to the ring by one operation.
        self.limit.load(Ordering::Relaxed) as usize
    }

    /// Closes the cache to puts: the owner's next put goes to the ring.
    pub(crate) fn close(&self) {
        // Relaxed: see `limit`.
        self.limit.store(0, Ordering::Relaxed);
    }

    /// `(hold, release)` counters: the packed word whose high half is the
    /// hold count, and the release counter.
    #[inline]
    pub(crate) fn counters(&self) -> (Hold<'_>, &AtomicU64) {
        (Hold::HighHalf(&self.len_hold), &self.release)
    }

    /// The packed `len | hold` word: exact for the owner; for any other
    /// thread a recent value, which changes with every get and put of the
    /// owner's (the length, or the hold count), except that without
    /// `accounting` a get and a put of the same size leave it as it was
    /// (see [`PoolCore::activity_mark`]).
    ///
    /// [`PoolCore::activity_mark`]: crate::PoolCore::activity_mark
    #[inline(always)]
    pub(crate) fn word(&self) -> u64 {
        // Relaxed: the owner is the only writer; another thread only
        // compares the value with an earlier one of the same word.
        self.len_hold.load(Ordering::Relaxed)
    }

    /// Stores `len` and adds `held` objects to the hold count, in one store
    /// issued after the objects moved.
    #[inline(always)]
    fn store(&self, word: u64, len: usize, held: usize) {
        let hold = if ACCOUNTING {
            held as u64 * HOLD_ONE
        } else {
            0
        };
        let w = ((word & !LEN_MASK).wrapping_add(hold)) | len as u64;
        // Release pairs with the Acquire load in `inflight::snapshot`; a
        // plain `mov` on x86.
        self.len_hold.store(w, Ordering::Release);
    }

    /// The fast paths' form of [`store`](LcoreCache::store): `len` moves by
    /// `+n` (put) or `-n` (get, which also adds `n` to the hold half), as
    /// one add on the whole word. No carry or borrow crosses into the hold
    /// half: a put keeps `len + n <= limit < 2^32`, a get has `n <= len`.
    #[inline(always)]
    fn store_moved(&self, word: u64, n: usize, get: bool) {
        let n = n as u64;
        let w = if !get {
            word.wrapping_add(n)
        } else if ACCOUNTING {
            // `+n` in the hold half, `-n` in the length half.
            word.wrapping_add(n.wrapping_mul(HOLD_ONE - 1))
        } else {
            word.wrapping_sub(n)
        };
        // Release pairs with the Acquire load in `inflight::snapshot`; a
        // plain `mov` on x86.
        self.len_hold.store(w, Ordering::Release);
    }

    #[inline(always)]
    fn set_len(&self, len: usize) {
        self.store(self.word(), len, 0);
    }

    #[inline(always)]
    fn slots(&self) -> *mut *mut c_void {
        // `UnsafeCell` is `repr(transparent)` and permits writes through a
        // shared reference; the pointer's provenance is `self`'s, which
        // covers every slot.
        UnsafeCell::raw_get(self.slots.as_ptr())
    }

    /// Fast-path put: pushes all of `objs` if they fit under the limit.
    /// Counts the release after the objects are in place.
    ///
    /// # Safety
    /// The caller is the owner (no other thread touches this cache now).
    #[inline(always)]
    pub(crate) unsafe fn try_put(&self, objs: &[*mut c_void]) -> bool {
        // SAFETY: forwarded contract.
        unsafe { self.try_put_with(objs, copy_objs) }
    }

    /// [`try_put`](LcoreCache::try_put) for at most [`SMALL_MAX`] objects
    /// (more: returns `false`), with no call in it.
    ///
    /// # Safety
    /// The caller is the owner.
    #[inline(always)]
    pub(crate) unsafe fn try_put_small(&self, objs: &[*mut c_void]) -> bool {
        if objs.len() > SMALL_MAX {
            return false;
        }
        // SAFETY: forwarded contract; `copy_small` gets `n <= SMALL_MAX`.
        unsafe { self.try_put_with(objs, copy_small) }
    }

    #[inline(always)]
    unsafe fn try_put_with(
        &self,
        objs: &[*mut c_void],
        copy: unsafe fn(*const *mut c_void, *mut *mut c_void, usize),
    ) -> bool {
        let w = self.word();
        let len = (w & LEN_MASK) as usize;
        let n = objs.len();
        if len + n > self.limit() {
            return false;
        }
        // SAFETY: `len + n <= limit <= cache_size` slots exist; owner-only;
        // `copy` is `copy_small` only when `n <= SMALL_MAX`.
        unsafe { copy(objs.as_ptr(), self.slots().add(len), n) };
        self.store_moved(w, n, false);
        // Counted last: once it is, a concurrent deferred release may free
        // the pool, this cache included. Don't touch the pool after this.
        owner_add(&self.release, n);
        true
    }

    /// Fast-path get: pops `out.len()` objects if the stack has them.
    /// Counts the hold after the objects are taken.
    ///
    /// # Safety
    /// The caller is the owner.
    #[inline(always)]
    pub(crate) unsafe fn try_get(&self, out: &mut [*mut c_void]) -> bool {
        // SAFETY: forwarded contract.
        unsafe { self.try_get_with(out, copy_objs) }
    }

    /// [`try_get`](LcoreCache::try_get) for at most [`SMALL_MAX`] objects
    /// (more: returns `false`), with no call in it.
    ///
    /// # Safety
    /// The caller is the owner.
    #[inline(always)]
    pub(crate) unsafe fn try_get_small(&self, out: &mut [*mut c_void]) -> bool {
        if out.len() > SMALL_MAX {
            return false;
        }
        // SAFETY: forwarded contract; `copy_small` gets `n <= SMALL_MAX`.
        unsafe { self.try_get_with(out, copy_small) }
    }

    #[inline(always)]
    unsafe fn try_get_with(
        &self,
        out: &mut [*mut c_void],
        copy: unsafe fn(*const *mut c_void, *mut *mut c_void, usize),
    ) -> bool {
        let w = self.word();
        let len = (w & LEN_MASK) as usize;
        let n = out.len();
        if n > len {
            return false;
        }
        // SAFETY: slots `[len - n, len)` hold objects; owner-only; `copy`
        // is `copy_small` only when `n <= SMALL_MAX`.
        unsafe { copy(self.slots().add(len - n), out.as_mut_ptr(), n) };
        self.store_moved(w, n, true);
        true
    }

    /// Pushes `objs` without a limit check and counts their release.
    ///
    /// # Safety
    /// The caller is the owner and `len + objs.len() <= cache_size`.
    #[inline]
    pub(crate) unsafe fn push(&self, objs: &[*mut c_void]) {
        let len = self.len();
        // SAFETY: the caller guarantees the room; owner-only.
        unsafe { copy_objs(objs.as_ptr(), self.slots().add(len), objs.len()) };
        self.set_len(len + objs.len());
        // Counted last (see `try_put_with`): don't touch the pool after this.
        owner_add(&self.release, objs.len());
    }

    /// Pops `out.len()` objects (the caller checked they are there) and
    /// counts the hold.
    ///
    /// # Safety
    /// The caller is the owner and `out.len() <= len`.
    #[inline]
    pub(crate) unsafe fn pop(&self, out: &mut [*mut c_void]) {
        let w = self.word();
        let len = (w & LEN_MASK) as usize;
        let n = out.len();
        debug_assert!(n <= len);
        // SAFETY: slots `[len - n, len)` hold objects; owner-only.
        unsafe { copy_objs(self.slots().add(len - n), out.as_mut_ptr(), n) };
        self.store(w, len - n, n);
    }

    /// Moves all objects into `out` (front), leaving the cache empty, without
    /// counting (the caller counts the whole get). Returns how many.
    ///
    /// # Safety
    /// The caller is the owner and `out.len() >= len`.
    #[inline]
    pub(crate) unsafe fn take_all_uncounted(&self, out: &mut [*mut c_void]) -> usize {
        let len = self.len();
        debug_assert!(out.len() >= len);
        // SAFETY: slots `[0, len)` hold objects; owner-only.
        unsafe { core::ptr::copy_nonoverlapping(self.slots(), out.as_mut_ptr(), len) };
        self.set_len(0);
        len
    }

    /// Counts `n` objects handed out by a get that bypassed the stack: one
    /// add to the hold half of the packed word (`len` is untouched; the hold
    /// half wraps, see `inflight`).
    #[inline(always)]
    pub(crate) fn count_hold(&self, n: usize) {
        if ACCOUNTING {
            let w = self.word().wrapping_add((n as u64).wrapping_mul(HOLD_ONE));
            // Release pairs with the Acquire load in `inflight::snapshot`;
            // issued after the objects were taken. A plain `mov` on x86.
            self.len_hold.store(w, Ordering::Release);
        }
    }

    /// Counts `n` objects taken back by a put that bypassed the stack.
    #[inline(always)]
    pub(crate) fn count_release(&self, n: usize) {
        owner_add(&self.release, n);
    }

    /// Refills with one burst until the cache holds up to `target`
    /// objects (`target <= cache_size`): `take` fills the front of the
    /// free slots it is given (from the ring) and returns how many it
    /// filled. Returns how many came.
    ///
    /// # Safety
    /// The caller is the owner.
    #[inline(always)]
    pub(crate) unsafe fn refill(
        &self,
        target: usize,
        take: impl FnOnce(&mut [*mut c_void]) -> usize,
    ) -> usize {
        let len = self.len();
        if target <= len {
            return 0;
        }
        // SAFETY: slots `[len, target)` exist (`target <= cache_size`) and
        // are free; owner-only, so nobody else aliases them.
        let room = unsafe { core::slice::from_raw_parts_mut(self.slots().add(len), target - len) };
        let got = take(room);
        self.set_len(len + got);
        got
    }

    /// Moves the objects above `keep` to the ring in one bulk (all or
    /// nothing). Returns how many moved.
    ///
    /// # Safety
    /// The caller is the owner, or the owner is quiescent and the caller's
    /// access happens-after its last operation.
    #[inline(never)]
    pub(crate) unsafe fn flush_above(
        &self,
        ring: &PtrRing,
        keep: usize,
    ) -> Result<usize, RingError> {
        // SAFETY: forwarded.
        unsafe { self.flush_above_with(keep, |top| ring.enqueue_bulk(top)) }
    }

    /// [`flush_above`](LcoreCache::flush_above) with `put` taking the
    /// objects, all or none.
    ///
    /// # Safety
    /// As for `flush_above`.
    #[inline(always)]
    pub(crate) unsafe fn flush_above_with(
        &self,
        keep: usize,
        put: impl FnOnce(&[*mut c_void]) -> Result<(), RingError>,
    ) -> Result<usize, RingError> {
        let len = self.len();
        if len <= keep {
            return Ok(0);
        }
        // SAFETY: slots `[keep, len)` hold objects; no other thread touches
        // them (caller's guarantee).
        let top = unsafe { core::slice::from_raw_parts(self.slots().add(keep), len - keep) };
        put(top)?;
        self.set_len(keep);
        Ok(len - keep)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Every size class of `copy_objs` (and so of `copy_small` and
    /// `copy_blocks`) copies exactly `n` pointers: nothing
    /// missed, nothing written past `n`, nothing read past `n` changes the result.
    #[test]
    fn copy_objs_copies_exactly_n() {
        for n in 0..=INLINE_MAX + 20 {
            let src: Vec<*mut c_void> = (0..INLINE_MAX + 24)
                .map(|i| (0x1000 + i * 8) as *mut c_void)
                .collect();
            let guard = 0xdead_0000usize as *mut c_void;
            let mut dst = vec![guard; INLINE_MAX + 24];
            // SAFETY: both buffers hold INLINE_MAX + 24 >= n pointers and do not overlap.
            unsafe { copy_objs(src.as_ptr(), dst.as_mut_ptr(), n) };
            assert_eq!(&dst[..n], &src[..n], "n = {n}");
            assert!(dst[n..].iter().all(|&p| p == guard), "wrote past n = {n}");
        }
    }
}
