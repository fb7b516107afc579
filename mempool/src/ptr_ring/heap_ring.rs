//! [`HeapRing`]: a ring in memory of its own on the Rust heap.

use super::{PtrRing, RingError, RingLayout, DEFAULT_BATCH, MAX_CAPACITY};
use crate::heap_block::HeapBlock;

/// A ring on the Rust heap, for tests, benchmarks and users outside DPDK.
///
/// It dereferences to [`PtrRing`], which has every operation.
///
/// # Examples
/// ```
/// use core::ffi::c_void;
/// use mempool::{HeapRing, RingError};
///
/// let ring = HeapRing::with_capacity(4)?;
/// // The ring stores addresses; it never dereferences them.
/// let objs = [1u64, 2, 3];
/// let ptrs = objs.each_ref().map(|o| o as *const u64 as *mut c_void);
///
/// ring.enqueue_bulk(&ptrs)?;
/// assert_eq!(ring.len(), 3);
/// // All or nothing: two more do not fit, so neither goes in.
/// assert_eq!(
///     ring.enqueue_bulk(&ptrs[..2]),
///     Err(RingError::NoSpace { requested: 2 })
/// );
///
/// let mut out = [core::ptr::null_mut(); 2];
/// ring.dequeue_bulk(&mut out)?;
/// assert_eq!(out, [ptrs[0], ptrs[1]]); // first in, first out
/// assert_eq!(ring.dequeue_burst(&mut out), 1); // as many as there are
/// assert!(ring.is_empty());
/// # Ok::<(), RingError>(())
/// ```
pub struct HeapRing {
    block: HeapBlock,
    slots: usize,
}

// SAFETY: the ring it owns is `Sync`; the allocation is not thread-affine.
unsafe impl Send for HeapRing {}
// SAFETY: as above, all access goes through `&PtrRing`.
unsafe impl Sync for HeapRing {}

impl HeapRing {
    /// A heap ring with the given layout, in the layout's modes. A
    /// single-sided layout comes only from the `unsafe`
    /// [`RingLayout::with_single_producer`] /
    /// [`RingLayout::with_single_consumer`], whose caller promised their
    /// contract for every ring made from it.
    pub fn new(layout: RingLayout) -> HeapRing {
        let block = HeapBlock::zeroed(layout.bytes(), layout.align());
        // SAFETY: freshly allocated with the size and alignment of a layout
        // only `RingLayout`'s constructors can make, owned by the returned
        // value until `drop`.
        unsafe { PtrRing::init(block.as_ptr(), &layout) };
        HeapRing {
            block,
            slots: layout.slots(),
        }
    }

    /// A heap ring holding `capacity` objects with the default batch.
    ///
    /// # Errors
    /// [`RingError::BadCapacity`] for a capacity of 0 or above
    /// [`MAX_CAPACITY`].
    pub fn with_capacity(capacity: usize) -> Result<HeapRing, RingError> {
        RingLayout::for_capacity(capacity)
            .map(HeapRing::new)
            .ok_or(RingError::BadCapacity {
                capacity,
                batch: DEFAULT_BATCH,
                max: MAX_CAPACITY,
            })
    }
}

impl core::ops::Deref for HeapRing {
    type Target = PtrRing;
    #[inline(always)]
    fn deref(&self) -> &PtrRing {
        // SAFETY: initialised in `new` with `slots` slots, freed only when
        // the block drops; the block comes from the allocator and covers
        // the whole ring.
        unsafe { PtrRing::from_raw(self.block.as_ptr(), self.slots) }
    }
}

/// Loom's atomics own model state: drop them in place before the block is
/// freed (without loom the block's own drop is all there is to do).
#[cfg(loom)]
impl Drop for HeapRing {
    fn drop(&mut self) {
        // SAFETY: initialised in `new` with `slots` slots; nothing uses them
        // after this.
        unsafe { super::drop_in_place(self.block.as_ptr().as_ptr(), self.slots) };
    }
}
