//! [`HeapPool`]: a pool in a block of its own on the Rust heap.

use core::mem::ManuallyDrop;
use core::ptr::NonNull;

use super::PoolCore;
use crate::config::PoolConfig;
use crate::dma_table::DmaMapper;
use crate::error::PoolError;
use crate::heap_block::HeapBlock;
use crate::state::PollOutcome;

/// A pool on the Rust heap, for tests, benchmarks and users outside DPDK.
///
/// Made with [`HeapPool::new_freeing`], it frees its block as soon as one of
/// its own driver methods (`begin_drain`, `drain_quiescent`, `poll`,
/// which shadow `PoolCore`'s) returns [`PollOutcome::Released`], as
/// a DPDK application frees the memzone: a touch after release is then a
/// use after free that Miri and valgrind report.
///
/// It dereferences to [`PoolCore`], which has every operation.
///
/// # Examples
/// A pool's whole life:
/// ```
/// use core::ffi::c_void;
/// use mempool::{ChunkSpec, HeapPool, NoDma, PollOutcome, PoolConfig, VirtAddr, VirtRange};
///
/// // 64 objects of 64 bytes; the pool stores their addresses only.
/// let mem = vec![[0u64; 8]; 64];
/// let objs: Vec<*mut c_void> = mem.iter().map(|o| o.as_ptr() as *mut c_void).collect();
/// let pool = HeapPool::new(&PoolConfig { max_lcores: 2, ..PoolConfig::new(64) })?;
///
/// // Populate as DPDK does: record the chunk, then put every object once.
/// let base = VirtAddr::of(mem.as_ptr());
/// pool.register_chunk(ChunkSpec {
///     va: VirtRange::new(base, 64 * 64),
///     iova: None,
///     first: base,
///     stride: 64,
///     count: 64,
/// })?;
/// pool.put_shared(&objs)?;
/// assert_eq!(pool.available(), 64);
///
/// // Lcore 0 gets and puts through its own cache...
/// let mut two = [core::ptr::null_mut(); 2];
/// // SAFETY: no other thread uses lcore id 0.
/// unsafe { pool.get(0, &mut two) }?;
/// assert_eq!(pool.inflight(), 2);
/// // SAFETY: as above.
/// unsafe { pool.put(0, &two) }?;
/// assert!(pool.cache_len(0) >= 2);
/// // ... and a thread without a slot uses the ring.
/// pool.get_shared(&mut two)?;
/// pool.put_shared(&two)?;
/// assert_eq!(pool.inflight(), 0);
///
/// // Shutdown: nothing is out, so the first poll releases the pool.
/// let out = pool.begin_drain(0, &mut NoDma)?;
/// assert!(matches!(out, PollOutcome::Released { .. }));
/// # Ok::<(), mempool::PoolError>(())
/// ```
pub struct HeapPool {
    /// The pool's block. Freed by `after` at release for a pool made with
    /// `new_freeing` (which then sets `freed`), otherwise by `drop`.
    block: ManuallyDrop<HeapBlock>,
    /// Made with `new_freeing`.
    free_on_release: bool,
    /// `after` freed the block (under loom: would have freed it).
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
        let block = HeapBlock::zeroed(layout.bytes, layout.align);
        // SAFETY: freshly allocated with the layout's size and alignment,
        // owned by the returned value until `drop`; the single-sided
        // contract is our caller's (this function's own contract).
        unsafe { PoolCore::init(block.as_ptr(), &layout) };
        Ok(HeapPool {
            block: ManuallyDrop::new(block),
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
        self.shutdown.mark_freed();
        #[cfg(not(loom))]
        // SAFETY: released, so by `new_freeing`'s contract nothing uses the
        // pool any more; exactly one call gets the release, and `drop` sees
        // `freed` and frees nothing.
        unsafe {
            self.block.free()
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

    /// The block's base address (what [`PoolCore::attach`] takes).
    pub fn as_ptr(&self) -> NonNull<u8> {
        self.block.as_ptr()
    }
}

impl core::ops::Deref for HeapPool {
    type Target = PoolCore;
    #[inline(always)]
    fn deref(&self) -> &PoolCore {
        // SAFETY: initialised in `new`, freed only in `drop` (or at release,
        // after which `new_freeing`'s contract forbids this call); the block
        // comes from the allocator and covers the whole pool.
        unsafe { PoolCore::attach_unchecked(self.block.as_ptr()) }
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
        // SAFETY: not freed at release (`freed` is clear; under loom `after`
        // frees nothing), and nothing uses the block after this.
        unsafe { ManuallyDrop::drop(&mut self.block) };
    }
}
