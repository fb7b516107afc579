//! The pool's memory as devices see it: chunk registration, IOVA look-ups,
//! and DMA mapping per device.

use super::PoolCore;
use crate::dma_table::{DeviceId, DeviceStats, DmaMapper};
use crate::error::PoolError;
use crate::iova::{ChunkId, ChunkInfo, ChunkSpec, Iova, ObjIndex, VirtAddr};
use crate::state::PoolState;

impl PoolCore {
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

    /// Records several chunks at once, all or nothing: when one of them is
    /// refused (bad run, no room in the table, too many objects, an overlap
    /// with a recorded chunk or with another of `specs`), none is recorded
    /// and the populated count is unchanged. Returns the records, in the
    /// order of `specs`. Same call order as [`register_chunk`](Self::register_chunk).
    pub fn register_chunks(&self, specs: &[ChunkSpec]) -> Result<Vec<ChunkInfo>, PoolError> {
        let first = self.table().insert_all(specs, self.objects(), || {
            self.require("register_chunks", |s| s == PoolState::Active)
        })?;
        Ok((first..)
            .zip(specs)
            .filter_map(|(id, _)| self.chunk(ChunkId(id)))
            .collect())
    }

    /// Forgets every chunk and the objects laid in them, after their owner
    /// took every object back and freed the memory: DPDK does this when a
    /// populate fails part-way (`rte_mempool_free_memchunks` dequeues every
    /// object, frees the chunks and resets the pool). The pool can then be
    /// populated again as a new one; validation no longer knows the old
    /// objects. Returns how many objects were forgotten.
    ///
    /// Refused, changing nothing, unless the pool is `Active`, no object
    /// is in the ring or a cache and every populated object is out (taken
    /// back), and no device is attached (its mappings would outlive their
    /// records).
    ///
    /// # Safety
    /// No other thread uses the pool during the call, and nothing uses a
    /// record, object index or object of the forgotten chunks afterwards.
    pub unsafe fn forget_chunks(&self) -> Result<usize, PoolError> {
        self.require("forget_chunks", |s| s == PoolState::Active)?;
        let (available, inflight, populated) =
            (self.available(), self.inflight(), self.populated());
        let devices = self.dma().attached();
        if available != 0 || inflight != populated as i64 || devices != 0 {
            return Err(PoolError::ChunksInUse {
                available,
                inflight,
                populated,
                devices,
            });
        }
        // SAFETY: forwarded caller contract.
        unsafe { self.table().forget_all() };
        Ok(populated)
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

    /// Unmaps everything mapped for `device` and retires it: no
    /// [`dma_sync`](Self::dma_sync) maps it again, only an explicit
    /// [`dma_attach`](Self::dma_attach) (the device plugged again) does. A
    /// second call does nothing (`Ok(0)`).
    pub fn dma_remove(
        &self,
        device: DeviceId,
        mapper: &mut dyn DmaMapper,
    ) -> Result<usize, PoolError> {
        self.dma().remove(device, self.table(), mapper)
    }

    /// Unmaps every device still attached and retires it, as the final
    /// release does, for a pool whose memory goes without one (its owner
    /// frees it while it is active, or while objects are out). Devices
    /// already removed, or unmapped by the release, are not touched again:
    /// a second call does nothing (`Ok(0)`). Returns the chunk mappings
    /// undone; the first failure is reported after all were tried.
    pub fn dma_release_all(&self, mapper: &mut dyn DmaMapper) -> Result<usize, PoolError> {
        self.dma().release_all(self.table(), mapper)
    }

    /// Counters of `device`, if it was ever attached.
    pub fn device_stats(&self, device: DeviceId) -> Option<DeviceStats> {
        self.dma().device(device)
    }
}
