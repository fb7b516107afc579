//! Validation mode: off by default, chosen when the pool is created.
//!
//! Off, it costs the inlined get/put paths that the glue builds its
//! callbacks on (`PoolCore::try_get_cached`, `try_put_cached`,
//! `try_get_direct`, `try_put_direct`) nothing: their one bound check
//! compares the lcore id with `fast_lcores`, which is `max_lcores` with
//! validation off and 0 with it on, so that every call on a validating pool
//! takes the checked path. `PoolCore::get` / `put` pay one predictable
//! branch on the `validate` flag of the pool's read-only header line.
//! On, every put checks each object and rejects, counts and never inserts:
//!
//! * a pointer that is not exactly one of the pool's objects (`Foreign`:
//!   null, inside no recorded chunk, or not on an object boundary);
//! * an object already home (`DoubleFree`);
//! * any return once the pool is released (`AfterRelease`; detected in every
//!   mode on the put slow paths, which every put reaches once the pool is
//!   released: draining closed the caches, and the cache-off direct path
//!   hands a released pool's puts to them).
//!
//! Valid objects of the same bulk are still accepted. Home-ness is one bit
//! per object ([`ObjIndex`]) in the shared block, set by put (atomic
//! `fetch_or`, so two racing frees of one object are caught) and cleared
//! when a get hands the object out. Registered objects start "out": DPDK
//! puts each one once while populating.

use core::fmt;

use crossbeam_utils::CachePadded;

use crate::iova::ObjIndex;
use crate::sync::{AtomicU64, Ordering};

/// Why validation refused an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RejectKind {
    /// Not one of the pool's objects.
    Foreign,
    /// Returned while already in the pool.
    DoubleFree,
    /// Returned after the pool was released.
    AfterRelease,
}

impl fmt::Display for RejectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RejectKind::Foreign => "foreign pointer",
            RejectKind::DoubleFree => "double free",
            RejectKind::AfterRelease => "return after release",
        })
    }
}

/// Rejections by kind, since the pool was created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RejectStats {
    /// Pointers that were not the pool's objects.
    pub foreign: u64,
    /// Objects returned twice.
    pub double_free: u64,
    /// Objects returned after release.
    pub after_release: u64,
}

/// Rejection counters and the home bitmap's location, in the pool header.
#[repr(C)]
pub(crate) struct Validator {
    counts: CachePadded<[AtomicU64; 3]>,
    words: usize,
    /// Offset of the `AtomicU64` bitmap from this header.
    bitmap_rel: usize,
}

/// Words of the home bitmap for `objects` (0 when validation is off).
pub(crate) const fn bitmap_words(objects: usize, enabled: bool) -> usize {
    if enabled {
        objects.div_ceil(64)
    } else {
        0
    }
}

impl Validator {
    /// A validator with `words` bitmap words (0 when validation is off).
    pub(crate) fn new(words: usize, bitmap_rel: usize) -> Validator {
        Validator {
            counts: CachePadded::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]),
            words,
            bitmap_rel,
        }
    }
}

/// The validator as its methods use it: the header, and a pointer to it
/// whose provenance covers the pool's whole block (the bitmap lies outside
/// what a `&Validator` covers).
#[derive(Clone, Copy)]
pub(crate) struct Bitmap<'a> {
    hdr: &'a Validator,
    at: *const u8,
}

impl core::ops::Deref for Bitmap<'_> {
    type Target = Validator;
    #[inline(always)]
    fn deref(&self) -> &Validator {
        self.hdr
    }
}

impl<'a> Bitmap<'a> {
    /// The validator whose header is at `at`.
    ///
    /// # Safety
    /// `at` points to an initialised validator header inside the pool's
    /// block, with provenance over the whole block, valid for `'a`.
    #[inline(always)]
    pub(crate) unsafe fn new(at: *const Validator) -> Bitmap<'a> {
        Bitmap {
            // SAFETY: the caller's guarantee.
            hdr: unsafe { &*at },
            at: at.cast(),
        }
    }

    /// # Safety
    /// The header is at its final address in memory laid out by the pool.
    pub(crate) unsafe fn init_bitmap(&self) {
        for i in 0..self.words {
            // SAFETY: the layout reserved `words` words at `bitmap_rel`.
            unsafe { self.word_ptr(i).cast_mut().write(AtomicU64::new(0)) };
        }
    }

    /// # Safety
    /// Nothing uses the bitmap afterwards.
    #[cfg(loom)]
    pub(crate) unsafe fn drop_bitmap(&self) {
        for i in 0..self.words {
            // SAFETY: written in `init_bitmap`, unused from here on.
            unsafe { core::ptr::drop_in_place(self.word_ptr(i).cast_mut()) };
        }
    }

    fn word_ptr(&self, i: usize) -> *const AtomicU64 {
        debug_assert!(i < self.words);
        // SAFETY: the layout reserved `words` words at `bitmap_rel`.
        unsafe { self.at.add(self.bitmap_rel).cast::<AtomicU64>().add(i) }
    }

    fn word(&self, idx: ObjIndex) -> Option<(&AtomicU64, u64)> {
        let w = idx.0 / 64;
        // SAFETY: written in `init_bitmap`, lives as long as the pool.
        (w < self.words).then(|| (unsafe { &*self.word_ptr(w) }, 1u64 << (idx.0 % 64)))
    }

    /// Marks the object home. `false` if it already was (a double free).
    #[inline]
    pub(crate) fn mark_home(&self, idx: ObjIndex) -> bool {
        let Some((w, bit)) = self.word(idx) else {
            return false;
        };
        // AcqRel pairs with the `fetch_and` in `mark_out` of the get that
        // handed the object out (and with racing frees of the same object):
        // exactly one of two racing frees sees the bit clear.
        w.fetch_or(bit, Ordering::AcqRel) & bit == 0
    }

    /// Marks the object out (handed to the application).
    #[inline]
    pub(crate) fn mark_out(&self, idx: ObjIndex) {
        if let Some((w, bit)) = self.word(idx) {
            // AcqRel pairs with the `fetch_or` in `mark_home`.
            w.fetch_and(!bit, Ordering::AcqRel);
        }
    }

    /// Whether the object is home (tests, statistics).
    pub(crate) fn is_home(&self, idx: ObjIndex) -> bool {
        // Acquire pairs with the RMWs above.
        self.word(idx)
            .is_some_and(|(w, bit)| w.load(Ordering::Acquire) & bit != 0)
    }

    /// Counts `n` rejections of `kind`.
    pub(crate) fn count(&self, kind: RejectKind, n: usize) {
        // Relaxed: statistics only.
        self.counts[kind as usize].fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Rejections so far.
    pub(crate) fn stats(&self) -> RejectStats {
        // Relaxed: statistics only.
        let c = |k: RejectKind| self.counts[k as usize].load(Ordering::Relaxed);
        RejectStats {
            foreign: c(RejectKind::Foreign),
            double_free: c(RejectKind::DoubleFree),
            after_release: c(RejectKind::AfterRelease),
        }
    }
}
