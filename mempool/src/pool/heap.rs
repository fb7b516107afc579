//! [`HeapPool`]: a pool in a block of its own on the Rust heap.

use core::ptr::NonNull;

use super::PoolCore;
use crate::config::PoolConfig;
use crate::dma::{DeviceId, DmaMapper};
use crate::error::PoolError;
use crate::shutdown::PollOutcome;

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
