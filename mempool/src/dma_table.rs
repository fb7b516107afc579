//! DMA-mapping bookkeeping: each recorded chunk is mapped once per device for
//! the pool's whole life and unmapped once (at final release, or when the
//! device goes away), never per object and never per recycle.
//!
//! Chunk records are append-only while a device is attached (they are
//! forgotten only with none attached, `PoolCore::forget_chunks`), so a
//! device's mappings are always a prefix of the table: each device slot
//! keeps `mapped`, the number of chunks mapped for it. Mapping a device
//! (again) maps only chunks `mapped..len`; removing it unmaps `0..mapped`
//! and marks the slot removed: no sync maps it again, and only an explicit
//! attach (a device of that id plugged again) maps it afresh, from chunk 0.
//! Counters per device and per pool prove the once-only rule.
//!
//! The mapper is process-local (the glue's `rte_dev_dma_map` calls); the
//! bookkeeping lives in the shared block, under a spinlock (control path).

use core::fmt;

use crate::chunk_table::Chunks;
use crate::error::PoolError;
use crate::iova::{ChunkId, ChunkInfo};
use crate::sync::{AtomicU32, AtomicU64, Ordering, SpinLock};

/// A device the pool's memory is mapped for. Opaque to the core: the glue
/// picks the encoding (e.g. a port id or `rte_device` identity), stable
/// across processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceId(pub u64);

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "device {:#x}", self.0)
    }
}

/// Maps and unmaps chunks for devices (process-local; `rte_dev_dma_map` in
/// the glue, a counter in tests). Errors are negative errno values.
pub trait DmaMapper {
    /// Makes `chunk` reachable by `device`.
    fn map(&mut self, device: DeviceId, chunk: &ChunkInfo) -> Result<(), i32>;
    /// Undoes a successful [`DmaMapper::map`]. Called at most once per map.
    fn unmap(&mut self, device: DeviceId, chunk: &ChunkInfo) -> Result<(), i32>;
}

/// A mapper for pools that never attach a device: mapping fails with
/// `-ENOTSUP`, unmapping (never reached without a map) succeeds.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoDma;

impl DmaMapper for NoDma {
    fn map(&mut self, _device: DeviceId, _chunk: &ChunkInfo) -> Result<(), i32> {
        Err(-libc::ENOTSUP)
    }
    fn unmap(&mut self, _device: DeviceId, _chunk: &ChunkInfo) -> Result<(), i32> {
        Ok(())
    }
}

/// Life of a device slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceState {
    /// Mapped chunks `0..mapped`; new chunks get mapped on sync.
    Attached,
    /// Unmapped and gone (removed, or the pool was released): no sync maps
    /// it again; an explicit attach (the device plugged again) does.
    Removed,
}

/// Counters of one device slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceStats {
    /// The device.
    pub device: DeviceId,
    /// Its state.
    pub state: DeviceState,
    /// Chunks currently mapped for it.
    pub mapped: u32,
    /// Successful map calls for it, ever.
    pub maps: u64,
    /// Unmap calls for it, ever.
    pub unmaps: u64,
}

const SLOT_FREE: u32 = 0;
const SLOT_ATTACHED: u32 = 1;
const SLOT_REMOVED: u32 = 2;

/// One device slot in shared memory. Written under the table lock; read by
/// `stats` with Relaxed loads (monitoring only).
#[repr(C)]
pub(crate) struct DeviceSlot {
    state: AtomicU32,
    mapped: AtomicU32,
    device: AtomicU64,
    maps: AtomicU64,
    unmaps: AtomicU64,
}

/// Bytes of `n` device slots.
pub(crate) const fn slots_bytes(n: usize) -> usize {
    n * core::mem::size_of::<DeviceSlot>()
}

/// Alignment of the device slots.
pub(crate) const SLOT_ALIGN: usize = core::mem::align_of::<DeviceSlot>();

/// Bookkeeping header inside the pool header; slots at a header-relative
/// offset.
#[repr(C)]
pub(crate) struct DmaTable {
    lock: SpinLock,
    /// Pool-wide successful maps (sum over devices). Written under `lock`.
    maps: AtomicU64,
    /// Pool-wide unmaps.
    unmaps: AtomicU64,
    max_devices: usize,
    slots_rel: usize,
}

impl DmaTable {
    pub(crate) fn new(max_devices: usize, slots_rel: usize) -> DmaTable {
        DmaTable {
            lock: SpinLock::new(),
            maps: AtomicU64::new(0),
            unmaps: AtomicU64::new(0),
            max_devices,
            slots_rel,
        }
    }
}

/// The DMA table as its methods use it: the header, and a pointer to it
/// whose provenance covers the pool's whole block (the device slots lie
/// outside what a `&DmaTable` covers).
#[derive(Clone, Copy)]
pub(crate) struct Dma<'a> {
    hdr: &'a DmaTable,
    at: *const u8,
}

impl core::ops::Deref for Dma<'_> {
    type Target = DmaTable;
    #[inline(always)]
    fn deref(&self) -> &DmaTable {
        self.hdr
    }
}

impl<'a> Dma<'a> {
    /// The table whose header is at `at`.
    ///
    /// # Safety
    /// `at` points to an initialised table header inside the pool's block,
    /// with provenance over the whole block, valid for `'a`.
    #[inline(always)]
    pub(crate) unsafe fn new(at: *const DmaTable) -> Dma<'a> {
        Dma {
            // SAFETY: the caller's guarantee.
            hdr: unsafe { &*at },
            at: at.cast(),
        }
    }

    /// # Safety
    /// The header is at its final address in memory laid out by the pool.
    pub(crate) unsafe fn init_slots(&self) {
        for i in 0..self.max_devices {
            // SAFETY: the layout reserved `max_devices` slots at `slots_rel`.
            unsafe {
                self.slot_ptr(i).cast_mut().write(DeviceSlot {
                    state: AtomicU32::new(SLOT_FREE),
                    mapped: AtomicU32::new(0),
                    device: AtomicU64::new(0),
                    maps: AtomicU64::new(0),
                    unmaps: AtomicU64::new(0),
                })
            };
        }
    }

    /// # Safety
    /// Nothing uses the table afterwards.
    #[cfg(loom)]
    pub(crate) unsafe fn drop_slots(&self) {
        for i in 0..self.max_devices {
            // SAFETY: written in `init_slots`, unused from here on.
            unsafe { core::ptr::drop_in_place(self.slot_ptr(i).cast_mut()) };
        }
    }

    fn slot_ptr(&self, i: usize) -> *const DeviceSlot {
        debug_assert!(i < self.max_devices);
        // SAFETY: the layout reserved `max_devices` slots at `slots_rel`.
        unsafe { self.at.add(self.slots_rel).cast::<DeviceSlot>().add(i) }
    }

    fn slot(&self, i: usize) -> &DeviceSlot {
        // SAFETY: written in `init_slots`, lives as long as the table.
        unsafe { &*self.slot_ptr(i) }
    }

    /// Slot index of `device` (attached or removed). Caller holds `lock`.
    fn find(&self, device: DeviceId) -> Option<usize> {
        // Relaxed: slots are only written under the lock the caller holds.
        (0..self.max_devices).find(|&i| {
            let s = self.slot(i);
            s.state.load(Ordering::Relaxed) != SLOT_FREE
                && s.device.load(Ordering::Relaxed) == device.0
        })
    }

    fn bump(c: &AtomicU64) {
        // Relaxed: written under the lock only; readers want a count, not order.
        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// Maps chunks `mapped..len` of slot `i`. Caller holds `lock`.
    fn map_tail(
        &self,
        i: usize,
        chunks: Chunks<'_>,
        mapper: &mut dyn DmaMapper,
    ) -> Result<usize, PoolError> {
        let s = self.slot(i);
        let device = DeviceId(s.device.load(Ordering::Relaxed));
        let from = s.mapped.load(Ordering::Relaxed) as usize;
        let to = chunks.len();
        for c in from..to {
            let info = chunks
                .get(ChunkId(c as u32))
                .expect("chunk below len is published");
            if let Err(errno) = mapper.map(device, &info) {
                return Err(PoolError::DmaMap {
                    device,
                    chunk: info.id,
                    errno,
                });
            }
            // Relaxed: under the lock; `stats` only wants the value.
            s.mapped.store(c as u32 + 1, Ordering::Relaxed);
            Self::bump(&s.maps);
            Self::bump(&self.maps);
        }
        Ok(to - from)
    }

    /// Unmaps `0..mapped` of slot `i` and marks it removed. Every chunk is
    /// tried once; the first failure is reported. Caller holds `lock`.
    fn unmap_all(
        &self,
        i: usize,
        chunks: Chunks<'_>,
        mapper: &mut dyn DmaMapper,
    ) -> Result<usize, PoolError> {
        let s = self.slot(i);
        let device = DeviceId(s.device.load(Ordering::Relaxed));
        let mapped = s.mapped.load(Ordering::Relaxed) as usize;
        let mut first_err = None;
        // Marked removed first: whatever the mapper says, never again.
        s.state.store(SLOT_REMOVED, Ordering::Relaxed);
        for c in (0..mapped).rev() {
            let info = chunks
                .get(ChunkId(c as u32))
                .expect("mapped chunk is published");
            let r = mapper.unmap(device, &info);
            s.mapped.store(c as u32, Ordering::Relaxed);
            Self::bump(&s.unmaps);
            Self::bump(&self.unmaps);
            if let (Err(errno), None) = (r, first_err) {
                first_err = Some(PoolError::DmaUnmap {
                    device,
                    chunk: info.id,
                    errno,
                });
            }
        }
        first_err.map_or(Ok(mapped), Err)
    }

    /// Attaches `device` (if new) and maps every chunk not yet mapped for it.
    /// Returns how many chunks were mapped by this call.
    pub(crate) fn attach(
        &self,
        device: DeviceId,
        chunks: Chunks<'_>,
        mapper: &mut dyn DmaMapper,
        state_ok: impl FnOnce() -> Result<(), PoolError>,
    ) -> Result<usize, PoolError> {
        let _g = self.lock.lock();
        // Under the lock the final release also takes before it unmaps:
        // either the release sees this device, or this call sees the
        // release and maps nothing.
        state_ok()?;
        let i = match self.find(device) {
            Some(i) => {
                let s = self.slot(i);
                // Relaxed: slot fields are only written under the lock.
                if s.state.load(Ordering::Relaxed) == SLOT_REMOVED {
                    // Plugged again: its old mappings were all undone at
                    // removal (`mapped` is 0); map everything afresh.
                    s.mapped.store(0, Ordering::Relaxed);
                    s.state.store(SLOT_ATTACHED, Ordering::Relaxed);
                }
                i
            }
            None => {
                let i = (0..self.max_devices)
                    .find(|&i| self.slot(i).state.load(Ordering::Relaxed) == SLOT_FREE)
                    .ok_or(PoolError::DeviceTableFull {
                        max_devices: self.max_devices,
                        device,
                    })?;
                let s = self.slot(i);
                s.device.store(device.0, Ordering::Relaxed);
                s.mapped.store(0, Ordering::Relaxed);
                s.state.store(SLOT_ATTACHED, Ordering::Relaxed);
                i
            }
        };
        self.map_tail(i, chunks, mapper)
    }

    /// Maps chunks registered since the last sync for every attached device.
    /// Returns how many map calls succeeded.
    pub(crate) fn sync(
        &self,
        chunks: Chunks<'_>,
        mapper: &mut dyn DmaMapper,
        state_ok: impl FnOnce() -> Result<(), PoolError>,
    ) -> Result<usize, PoolError> {
        let _g = self.lock.lock();
        // Under the lock, as in `attach`.
        state_ok()?;
        let mut n = 0;
        for i in 0..self.max_devices {
            if self.slot(i).state.load(Ordering::Relaxed) == SLOT_ATTACHED {
                n += self.map_tail(i, chunks, mapper)?;
            }
        }
        Ok(n)
    }

    /// Unmaps everything mapped for `device` and retires it for good.
    /// Idempotent: a removed device is not touched again (`Ok(0)`).
    pub(crate) fn remove(
        &self,
        device: DeviceId,
        chunks: Chunks<'_>,
        mapper: &mut dyn DmaMapper,
    ) -> Result<usize, PoolError> {
        let _g = self.lock.lock();
        let i = self
            .find(device)
            .ok_or(PoolError::UnknownDevice { device })?;
        if self.slot(i).state.load(Ordering::Relaxed) == SLOT_REMOVED {
            return Ok(0);
        }
        self.unmap_all(i, chunks, mapper)
    }

    /// Final release: unmaps every attached device once. Returns the unmap
    /// count; the first failure is reported after all were tried.
    pub(crate) fn release_all(
        &self,
        chunks: Chunks<'_>,
        mapper: &mut dyn DmaMapper,
    ) -> Result<usize, PoolError> {
        let _g = self.lock.lock();
        let mut n = 0;
        let mut first_err = None;
        for i in 0..self.max_devices {
            if self.slot(i).state.load(Ordering::Relaxed) == SLOT_ATTACHED {
                match self.unmap_all(i, chunks, mapper) {
                    Ok(k) => n += k,
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                }
            }
        }
        first_err.map_or(Ok(n), Err)
    }

    /// Pool-wide (maps, unmaps).
    pub(crate) fn totals(&self) -> (u64, u64) {
        // Relaxed: monitoring counters.
        (
            self.maps.load(Ordering::Relaxed),
            self.unmaps.load(Ordering::Relaxed),
        )
    }

    /// Devices attached (not removed).
    pub(crate) fn attached(&self) -> usize {
        (0..self.max_devices)
            // Relaxed: monitoring.
            .filter(|&i| self.slot(i).state.load(Ordering::Relaxed) == SLOT_ATTACHED)
            .count()
    }

    /// Counters of `device`, if it was ever attached.
    pub(crate) fn device(&self, device: DeviceId) -> Option<DeviceStats> {
        let _g = self.lock.lock();
        let s = self.slot(self.find(device)?);
        // Relaxed: read under the lock that orders all writes.
        Some(DeviceStats {
            device,
            state: if s.state.load(Ordering::Relaxed) == SLOT_REMOVED {
                DeviceState::Removed
            } else {
                DeviceState::Attached
            },
            mapped: s.mapped.load(Ordering::Relaxed),
            maps: s.maps.load(Ordering::Relaxed),
            unmaps: s.unmaps.load(Ordering::Relaxed),
        })
    }
}
