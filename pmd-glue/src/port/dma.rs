//! DMA mapping of a pool's memory for a device: the core's [`DmaMapper`]
//! over `rte_dev_dma_map` ([`PoolDmaMapper`]), and [`attach_device`] /
//! [`detach_device`], which run it on a pool.

use core::ffi::c_void;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use dpdk_sys as sys;
use mempool::{ChunkInfo, DeviceId, DmaMapper};

use super::devices;
use crate::error::GlueError;
use crate::ffi::pool_name;
use crate::log::Level;
use crate::{log, zone};

/// The device calls behind [`PoolDmaMapper`]: `rte_dev_dma_map` /
/// `rte_dev_dma_unmap` in production ([`RteDevDma`]); tests count instead.
/// Ranges are whole pages of memory registered with `rte_extmem_register`.
pub trait DevDma {
    /// Maps `[va, va + len)` at `iova` for `device`.
    fn map(&mut self, device: DeviceId, va: usize, iova: u64, len: usize) -> Result<(), i32>;
    /// Undoes one successful [`DevDma::map`] of the same range.
    fn unmap(&mut self, device: DeviceId, va: usize, iova: u64, len: usize) -> Result<(), i32>;
}

/// `rte_dev_dma_map` / `rte_dev_dma_unmap` on the `rte_device` recorded for
/// the id. Devices without DMA mapping fail with `-ENOTSUP`; a bus that has
/// the call but nothing to map (the vdev bus, for `net_null`) returns 0.
#[derive(Debug, Default)]
pub struct RteDevDma;

impl RteDevDma {
    fn call(device: DeviceId, va: usize, iova: u64, len: usize, map: bool) -> Result<(), i32> {
        let dev = devices::rte_device(device).ok_or(-libc::ENODEV)?;
        // A failure that sets no rte_errno must not read an older one (a
        // stale ENOTSUP would turn it into "nothing to map").
        sys::set_errno(0);
        // SAFETY: a device pointer recorded at attach (the device stays
        // until its removal event, which unmaps first); a page range of
        // memory registered with rte_extmem_register.
        let r = unsafe {
            if map {
                sys::rte_dev_dma_map(dev, va as *mut c_void, iova, len)
            } else {
                sys::rte_dev_dma_unmap(dev, va as *mut c_void, iova, len)
            }
        };
        match r {
            0 => Ok(()),
            // The bus needs no mapping for this device (a PCI device with
            // no driver-specific mapping, not bound to VFIO): nothing to
            // map, as for a bus without the call.
            r if r > 0 => Err(-libc::ENOTSUP),
            _ => match sys::errno() {
                0 => Err(-libc::EIO),
                e => Err(-e.abs()),
            },
        }
    }
}

impl DevDma for RteDevDma {
    fn map(&mut self, device: DeviceId, va: usize, iova: u64, len: usize) -> Result<(), i32> {
        Self::call(device, va, iova, len, true)
    }
    fn unmap(&mut self, device: DeviceId, va: usize, iova: u64, len: usize) -> Result<(), i32> {
        Self::call(device, va, iova, len, false)
    }
}

/// One mapped page of external memory for one device, with the number of
/// chunk records that use it (neighbouring records share pages).
#[derive(Debug, Clone, Copy)]
struct PageMap {
    refs: u32,
    iova: u64,
    len: usize,
}

/// Mapped pages by (device, page address).
type PageMaps = BTreeMap<(u64, usize), PageMap>;

/// Mapped pages, process-wide.
fn page_maps() -> MutexGuard<'static, PageMaps> {
    static PAGES: Mutex<PageMaps> = Mutex::new(BTreeMap::new());
    PAGES.lock().unwrap_or_else(|e| e.into_inner())
}

/// `RTE_BAD_IOVA` (a macro bindgen does not carry).
const BAD_IOVA: u64 = u64::MAX;

/// Where a chunk's memory comes from.
enum MemKind {
    /// EAL's own memory: EAL maps it for VFIO devices itself.
    Eal,
    /// Registered with `rte_extmem_register`: ours to map.
    External(*const sys::rte_memseg_list),
    /// Neither (e.g. `rte_mempool_populate_anon`): no device can be given it.
    Unregistered,
}

fn mem_kind(va: usize) -> MemKind {
    // SAFETY: a plain lookup in EAL's memory map.
    let msl = unsafe { sys::rte_mem_virt2memseg_list(va as *const c_void) };
    if msl.is_null() {
        MemKind::Unregistered
    // SAFETY: a live memseg list returned by EAL.
    } else if unsafe { (*msl).external } == 0 {
        MemKind::Eal
    } else {
        MemKind::External(msl)
    }
}

/// The IOVA of the page at `page` in `msl`, when EAL knows one.
fn page_iova(msl: *const sys::rte_memseg_list, page: usize) -> Option<u64> {
    // SAFETY: `page` lies in `msl` (the registered area of the chunk being
    // mapped); lookup only.
    let ms = unsafe { sys::rte_mem_virt2memseg(page as *const c_void, msl) };
    if ms.is_null() {
        return None;
    }
    // SAFETY: a live memseg of `msl`.
    let iova = unsafe { (*ms).iova };
    (iova != BAD_IOVA).then_some(iova)
}

/// The core's [`DmaMapper`] the DPDK way:
/// * EAL memory (memzones, the default `rte_mempool_populate_default`) is
///   mapped by EAL for VFIO devices already: recorded as mapped, no call;
/// * memory registered with `rte_extmem_register` is mapped page by page
///   (whole, aligned pages of its memseg list) once per device, shared by
///   the records that touch a page, unmapped when the last one goes;
/// * anything else cannot be mapped: `-EINVAL` (see [`GlueError::NotDmaMemory`]).
pub struct PoolDmaMapper<'a> {
    backend: &'a mut dyn DevDma,
    /// Records found in EAL memory (not mapped again).
    pub eal_records: usize,
    /// Pages mapped by this mapper.
    pub pages_mapped: usize,
    /// Pages unmapped by this mapper.
    pub pages_unmapped: usize,
    /// Set when the device said `-ENOTSUP`.
    pub unsupported: bool,
    /// An address of a chunk in unregistered memory, when one was met.
    pub unregistered: Option<usize>,
}

impl<'a> PoolDmaMapper<'a> {
    /// A mapper over `backend`.
    pub fn new(backend: &'a mut dyn DevDma) -> PoolDmaMapper<'a> {
        PoolDmaMapper {
            backend,
            eal_records: 0,
            pages_mapped: 0,
            pages_unmapped: 0,
            unsupported: false,
            unregistered: None,
        }
    }

    /// Maps every page of `[start, end)` for `device`, all or nothing.
    fn map_pages(
        &mut self,
        device: DeviceId,
        msl: *const sys::rte_memseg_list,
        start: usize,
        end: usize,
    ) -> Result<(), i32> {
        // SAFETY: a live memseg list returned by EAL.
        let pg = unsafe { (*msl).page_sz } as usize;
        let mut pages = page_maps();
        let mut done: Vec<usize> = Vec::new();
        let mut page = start - start % pg.max(1);
        while page < end {
            if let Err(e) = self.map_page(&mut pages, device, msl, page, pg) {
                // All or nothing: the core retries the record later.
                self.undo_pages(&mut pages, device, &done);
                return Err(e);
            }
            done.push(page);
            page += pg;
        }
        Ok(())
    }

    /// Maps one page for `device`, or takes one more reference on its
    /// mapping.
    fn map_page(
        &mut self,
        pages: &mut PageMaps,
        device: DeviceId,
        msl: *const sys::rte_memseg_list,
        page: usize,
        len: usize,
    ) -> Result<(), i32> {
        let key = (device.0, page);
        if let Some(m) = pages.get_mut(&key) {
            m.refs += 1;
            return Ok(());
        }
        let iova = page_iova(msl, page).ok_or(-libc::EINVAL)?;
        if let Err(e) = self.backend.map(device, page, iova, len) {
            if e == -libc::ENOTSUP {
                self.unsupported = true;
            }
            return Err(e);
        }
        self.pages_mapped += 1;
        pages.insert(key, PageMap { refs: 1, iova, len });
        Ok(())
    }

    /// Drops the references [`map_pages`](Self::map_pages) took before it
    /// failed.
    fn undo_pages(&mut self, pages: &mut PageMaps, device: DeviceId, done: &[usize]) {
        for &p in done {
            if let Err(e) = self.drop_page(pages, device, p) {
                log!(
                    Level::Err,
                    "DMA: undoing the map of page {p:#x} for {device} after a failed map: {e}"
                );
            }
        }
    }

    /// Drops one reference on a mapped page; unmaps it with the last one.
    fn drop_page(
        &mut self,
        pages: &mut PageMaps,
        device: DeviceId,
        page: usize,
    ) -> Result<(), i32> {
        let key = (device.0, page);
        let Some(m) = pages.get_mut(&key) else {
            return Ok(());
        };
        m.refs -= 1;
        if m.refs > 0 {
            return Ok(());
        }
        let m = pages.remove(&key).expect("present");
        self.pages_unmapped += 1;
        self.backend.unmap(device, page, m.iova, m.len)
    }
}

impl DmaMapper for PoolDmaMapper<'_> {
    fn map(&mut self, device: DeviceId, chunk: &ChunkInfo) -> Result<(), i32> {
        let (start, end) = (chunk.va.start.0, chunk.va.end());
        match mem_kind(start) {
            MemKind::Eal => {
                self.eal_records += 1;
                Ok(())
            }
            MemKind::External(msl) => self.map_pages(device, msl, start, end),
            MemKind::Unregistered => {
                self.unregistered = Some(start);
                Err(-libc::EINVAL)
            }
        }
    }

    fn unmap(&mut self, device: DeviceId, chunk: &ChunkInfo) -> Result<(), i32> {
        let (start, end) = (chunk.va.start.0, chunk.va.end());
        let mut pages = page_maps();
        // Pages that overlap the record (a page starts at most 1 GB before it).
        let overlapping: Vec<usize> = pages
            .range((device.0, start.saturating_sub(1 << 30))..(device.0, end))
            .filter(|(&(_, p), m)| p + m.len > start)
            .map(|(&(_, p), _)| p)
            .collect();
        let mut result = Ok(());
        for p in overlapping {
            if let Err(e) = self.drop_page(&mut pages, device, p) {
                result = result.and(Err(e));
            }
        }
        result
    }
}

/// What [`attach_device`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DmaAttach {
    /// Chunk records newly handled for the device (mapped now, or found in
    /// EAL memory).
    pub records: usize,
    /// Of those, records in EAL memory: EAL maps it for VFIO devices, no call.
    pub eal_records: usize,
    /// Pages of external memory mapped now.
    pub pages_mapped: usize,
    /// The device does not implement DMA mapping (`-ENOTSUP`): nothing mapped.
    pub unsupported: bool,
}

/// Records of `mp` for `device`, once for the pool's life (see
/// [`PoolDmaMapper`] for what is mapped). A second attach handles only
/// records added since.
///
/// # Safety
/// `mp` is a live mempool created with the ptr_ring ops.
pub unsafe fn attach_device(
    mp: *mut sys::rte_mempool,
    device: DeviceId,
    backend: &mut dyn DevDma,
) -> Result<DmaAttach, GlueError> {
    // SAFETY: the caller passes a live mempool.
    let z = unsafe { zone::ours(mp) }?;
    attach_zone(mp, &z, device, backend)
}

/// [`attach_device`] on a pool already found to be ours.
pub(super) fn attach_zone(
    mp: *mut sys::rte_mempool,
    z: &zone::Zone<'_>,
    device: DeviceId,
    backend: &mut dyn DevDma,
) -> Result<DmaAttach, GlueError> {
    let mut mapper = PoolDmaMapper::new(backend);
    let r = z.core.dma_attach(device, &mut mapper);
    let out = DmaAttach {
        records: 0,
        eal_records: mapper.eal_records,
        pages_mapped: mapper.pages_mapped,
        unsupported: mapper.unsupported,
    };
    match r {
        Ok(n) => Ok(DmaAttach { records: n, ..out }),
        Err(_) if mapper.unsupported => Ok(out),
        Err(_) if mapper.unregistered.is_some() => Err(GlueError::NotDmaMemory {
            pool: pool_name(mp),
            addr: mapper.unregistered.unwrap_or(0),
        }),
        Err(e) => Err(e.into()),
    }
}

/// What [`detach_device`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DmaDetach {
    /// Chunk records unmapped for the device (0 when already detached).
    pub records: usize,
    /// Pages of external memory unmapped (each exactly once).
    pub pages_unmapped: usize,
}

/// Removes `device`'s mappings of `mp` and retires the device for this
/// pool (what a device removal does). A second call does nothing.
///
/// # Safety
/// `mp` is a live mempool created with the ptr_ring ops.
pub unsafe fn detach_device(
    mp: *mut sys::rte_mempool,
    device: DeviceId,
    backend: &mut dyn DevDma,
) -> Result<DmaDetach, GlueError> {
    // SAFETY: the caller passes a live mempool.
    let z = unsafe { zone::ours(mp) }?;
    let mut mapper = PoolDmaMapper::new(backend);
    let records = z.core.dma_remove(device, &mut mapper)?;
    Ok(DmaDetach {
        records,
        pages_unmapped: mapper.pages_unmapped,
    })
}
