//! [`HeapRing`]: a ring in memory of its own on the Rust heap.

use core::ptr::NonNull;

#[cfg(loom)]
use super::RingHeader;
#[cfg(loom)]
use super::HEADER_BYTES;
use super::{PtrRing, RingError, RingLayout, DEFAULT_BATCH, MAX_CAPACITY};
#[cfg(loom)]
use crate::sync::AtomicUsize;

/// A ring on the Rust heap, for tests, benchmarks and users outside DPDK.
pub struct HeapRing {
    mem: NonNull<u8>,
    slots: usize,
    layout: std::alloc::Layout,
}

// SAFETY: the ring it owns is `Sync`; the allocation is not thread-affine.
unsafe impl Send for HeapRing {}
// SAFETY: as above, all access goes through `&PtrRing`.
unsafe impl Sync for HeapRing {}

impl HeapRing {
    /// A heap ring with the given layout.
    pub fn new(layout: RingLayout) -> HeapRing {
        let alloc = std::alloc::Layout::from_size_align(layout.bytes(), layout.align())
            .expect("RingLayout gives a valid allocation layout");
        // SAFETY: `alloc` has non-zero size (the header alone is non-empty).
        let raw = unsafe { std::alloc::alloc_zeroed(alloc) };
        let Some(mem) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(alloc);
        };
        // SAFETY: freshly allocated with the size and alignment of a layout
        // only `RingLayout`'s constructors can make, owned by the returned
        // value until `drop`.
        unsafe { PtrRing::init(mem, &layout) };
        HeapRing {
            mem,
            slots: layout.slots(),
            layout: alloc,
        }
    }

    /// A heap ring holding `capacity` objects with the default batch.
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
        // SAFETY: initialised in `new` with `slots` slots, freed only in
        // `drop`; `mem` comes from the allocator and covers the whole ring.
        unsafe { PtrRing::from_raw(self.mem, self.slots) }
    }
}

impl Drop for HeapRing {
    fn drop(&mut self) {
        #[cfg(loom)]
        {
            // Loom's atomics own model state: drop them in place.
            let hdr = self.mem.as_ptr().cast::<RingHeader>();
            // SAFETY: initialised in `new`; nothing uses them after this.
            unsafe {
                let s = self.mem.as_ptr().add(HEADER_BYTES).cast::<AtomicUsize>();
                for i in 0..self.slots {
                    core::ptr::drop_in_place(s.add(i));
                }
                core::ptr::drop_in_place(hdr);
            }
        }
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.mem.as_ptr(), self.layout) };
    }
}
