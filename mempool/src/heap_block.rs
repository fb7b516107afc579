//! [`HeapBlock`]: the aligned, zeroed allocation on the Rust heap behind
//! [`HeapRing`](crate::HeapRing) and [`HeapPool`](crate::HeapPool).

use core::ptr::NonNull;
use std::alloc::Layout;

/// A zeroed block of the Rust heap with a given size and alignment, freed
/// when dropped. Its owner initialises a ring or a pool in it and reaches
/// that only through [`as_ptr`](HeapBlock::as_ptr).
pub(crate) struct HeapBlock {
    /// Start of the block, with provenance over all of it.
    ptr: NonNull<u8>,
    /// The size and alignment it was allocated with (what the free needs).
    layout: Layout,
}

impl HeapBlock {
    /// `bytes` zeroed bytes aligned to `align`.
    ///
    /// # Panics
    /// If `bytes` is 0 or `align` is not a power of two (never for the size
    /// and alignment of a `RingLayout` or a `PoolLayout`). Running out of
    /// memory aborts, as it does for a `Vec`.
    pub(crate) fn zeroed(bytes: usize, align: usize) -> HeapBlock {
        assert!(bytes > 0, "a heap block is never empty");
        let layout = Layout::from_size_align(bytes, align)
            .expect("ring and pool layouts give a valid allocation layout");
        // SAFETY: `layout` has a non-zero size (asserted above).
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(layout);
        };
        HeapBlock { ptr, layout }
    }

    /// The block's start.
    #[inline(always)]
    pub(crate) fn as_ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// Frees the block now, through a shared reference: for a pool that
    /// frees its memory the moment it is released, as DPDK frees a memzone.
    ///
    /// # Safety
    /// Called at most once; afterwards nothing uses the memory, and the
    /// block is never dropped (its owner keeps it in a `ManuallyDrop`).
    pub(crate) unsafe fn free(&self) {
        // SAFETY: allocated in `zeroed` with this layout; the caller
        // guarantees this is its only free.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

impl Drop for HeapBlock {
    fn drop(&mut self) {
        // SAFETY: a block freed with `free` is never dropped (its contract),
        // so this is the only free.
        unsafe { self.free() };
    }
}
