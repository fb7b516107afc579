//! DMA mapping of a pool's memory for a device: the core's [`DmaMapper`]
//! over `rte_dev_dma_map` ([`PoolDmaMapper`]), and [`attach_device`] /
//! [`detach_device`], which run it on a pool. The ranges mapped, per
//! mapping domain and shared by every process, are `dma_domains`'.

use core::ffi::c_void;
use std::sync::{Mutex, MutexGuard};

use dpdk_sys as sys;
use mempool::{ChunkInfo, DeviceId, DmaMapper};

use super::device_registry;
use super::dma_domains::{self, Domain, Locked, Run};
use crate::error::GlueError;
use crate::ffi::pool_name;
use crate::log::Level;
use crate::{log, zone};

/// The device calls behind [`PoolDmaMapper`]: `rte_dev_dma_map` /
/// `rte_dev_dma_unmap` in production ([`RteDevDma`]); tests model VFIO
/// instead. Ranges are runs of whole, VA- and IOVA-contiguous pages of
/// memory registered with `rte_extmem_register`.
pub trait DevDma {
    /// Maps `[va, va + len)` at `iova` for `device` (for every device of
    /// its [`domain`](DevDma::domain)).
    fn map(&mut self, device: DeviceId, va: usize, iova: u64, len: usize) -> Result<(), i32>;
    /// Undoes one successful [`DevDma::map`] of exactly that range in the
    /// device's domain; `device` may be another device of the domain than
    /// the one it was mapped for.
    fn unmap(&mut self, device: DeviceId, va: usize, iova: u64, len: usize) -> Result<(), i32>;
    /// Where `device`'s mappings live; asked before its first mapping.
    fn domain(&mut self, device: DeviceId) -> Domain {
        Domain::Device(device)
    }
}

/// `rte_dev_dma_map` / `rte_dev_dma_unmap` on the `rte_device` recorded for
/// the id. Devices without DMA mapping fail with `-ENOTSUP`; a bus that has
/// the call but nothing to map (the vdev bus, for `net_null`) returns 0.
///
/// Domains: a PCI device bound to `vfio-pci` maps through DPDK's VFIO
/// fallback into the default container, which all such devices share
/// ([`Domain::Container`] 0); every other device (a driver with its own
/// mapping, another bus) is its own domain.
#[derive(Debug, Default)]
pub struct RteDevDma;

impl RteDevDma {
    fn call(device: DeviceId, va: usize, iova: u64, len: usize, map: bool) -> Result<(), i32> {
        let dev = device_registry::rte_device(device).ok_or(-libc::ENODEV)?;
        // A failure that sets no rte_errno must not read an older one (a
        // stale ENOTSUP would turn it into "nothing to map").
        sys::set_errno(0);
        // SAFETY: a device pointer recorded at attach (the device stays
        // until its removal event, which unmaps first); a run of whole
        // pages of memory registered with rte_extmem_register.
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
        if let Some(b) = dev_dma_override().as_mut() {
            return b.map(device, va, iova, len);
        }
        Self::call(device, va, iova, len, true)
    }
    fn unmap(&mut self, device: DeviceId, va: usize, iova: u64, len: usize) -> Result<(), i32> {
        if let Some(b) = dev_dma_override().as_mut() {
            return b.unmap(device, va, iova, len);
        }
        Self::call(device, va, iova, len, false)
    }
    fn domain(&mut self, device: DeviceId) -> Domain {
        if let Some(b) = dev_dma_override().as_mut() {
            return b.domain(device);
        }
        let Some(dev) = device_registry::rte_device(device) else {
            return Domain::Device(device);
        };
        // SAFETY: a live device (as in `call`).
        match unsafe { sys::compat::dev_vfio_group(dev) } {
            Some(_) => Domain::Container(0),
            None => Domain::Device(device),
        }
    }
}

type DevDmaOverride = Option<Box<dyn DevDma + Send>>;

fn dev_dma_override() -> MutexGuard<'static, DevDmaOverride> {
    static OVERRIDE: Mutex<DevDmaOverride> = Mutex::new(None);
    OVERRIDE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Tests only: [`RteDevDma`] forwards every call to `backend` instead of
/// DPDK while one is set (the paths that make their own `RteDevDma`:
/// populate, `ops->free`, port events, the deferred release).
#[doc(hidden)]
pub fn set_dev_dma_override(backend: DevDmaOverride) {
    *dev_dma_override() = backend;
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
/// * memory registered with `rte_extmem_register` is mapped in runs of
///   whole, aligned pages that are VA- and IOVA-contiguous (one map entry
///   per run, not per page), once per mapping domain: pages the domain has
///   mapped already (for a neighbouring record, or another device of the
///   domain) are used, not mapped again; a run is unmapped, exactly as
///   mapped, when its last use goes;
/// * anything else cannot be mapped: `-EINVAL` (see [`GlueError::NotDmaMemory`]).
pub struct PoolDmaMapper<'a> {
    backend: &'a mut dyn DevDma,
    /// Records found in EAL memory (not mapped again).
    pub eal_records: usize,
    /// Pages mapped by this mapper's map calls.
    pub pages_mapped: usize,
    /// Pages unmapped by this mapper's unmap calls.
    pub pages_unmapped: usize,
    /// Map calls (entries made) by this mapper.
    pub entries_mapped: usize,
    /// Unmap calls by this mapper.
    pub entries_unmapped: usize,
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
            entries_mapped: 0,
            entries_unmapped: 0,
            unsupported: false,
            unregistered: None,
        }
    }

    /// Maps `[start, end)` of external memory for `device`, all or
    /// nothing: uses the ranges its domain has mapped over any of those
    /// pages, maps the other pages in contiguous runs.
    fn map_external(
        &mut self,
        device: DeviceId,
        msl: *const sys::rte_memseg_list,
        start: usize,
        end: usize,
    ) -> Result<(), i32> {
        // SAFETY: a live memseg list returned by EAL.
        let pg = (unsafe { (*msl).page_sz } as usize).max(1);
        let mut t = dma_domains::lock()?;
        let domain = match t.device_domain(device) {
            Some(d) => d,
            None => self.backend.domain(device),
        };
        let Plan { used, runs } = plan(&mut t, domain, msl, start - start % pg, end, pg)?;
        if t.free_slots() < runs.len() {
            return Err(-libc::ENOSPC);
        }
        t.add_device_use(device, domain)?;
        let mut made = Vec::with_capacity(runs.len());
        for &(va, iova, len) in &runs {
            if let Err(e) = self.backend.map(device, va, iova, len) {
                if e == -libc::ENOTSUP {
                    self.unsupported = true;
                }
                // All or nothing: the core retries the record later.
                for &i in made.iter().rev() {
                    if let Some(run) = t.drop_ref(i) {
                        if let Err(e) = self.unmap_run(device, &run) {
                            log!(
                                Level::Err,
                                "DMA: undoing the map of {:#x}+{:#x} for {device} after a \
                                 failed map: {e}",
                                run.va,
                                run.len
                            );
                        }
                    }
                }
                t.drop_device_use(device);
                return Err(e);
            }
            made.push(t.insert(domain, (va, iova, len), pg));
            self.entries_mapped += 1;
            self.pages_mapped += len / pg;
        }
        for i in used {
            t.take(i);
        }
        Ok(())
    }

    /// Undoes one mapping of `[start, end)` for `device`: drops its use of
    /// every range of its domain over those pages, and unmaps each range
    /// whose last use that was. Nothing when the device has no mapping
    /// there (a record in EAL memory).
    fn unmap_external(&mut self, device: DeviceId, start: usize, end: usize) -> Result<(), i32> {
        let Some(mut t) = dma_domains::lock_if_made()? else {
            return Ok(());
        };
        let Some(domain) = t.device_domain(device) else {
            return Ok(());
        };
        let used = t.overlapping(domain, start, end);
        if used.is_empty() {
            return Ok(());
        }
        t.drop_device_use(device);
        let mut result = Ok(());
        for i in used {
            if let Some(run) = t.drop_ref(i) {
                // Gone from the table whatever the device says: an unmap
                // is never retried.
                result = result.and(self.unmap_run(device, &run));
            }
        }
        result
    }

    /// Unmaps exactly the range `run` was mapped as.
    fn unmap_run(&mut self, device: DeviceId, run: &Run) -> Result<(), i32> {
        self.entries_unmapped += 1;
        self.pages_unmapped += run.len / run.page_sz.max(1);
        self.backend.unmap(device, run.va, run.iova, run.len)
    }
}

/// What mapping some pages in a domain takes.
struct Plan {
    /// Ranges the domain has mapped over some of the pages (table indices,
    /// each once): used, not mapped again.
    used: Vec<usize>,
    /// Runs (va, iova, len) of the other pages, each VA- and
    /// IOVA-contiguous: one map call each.
    runs: Vec<(usize, u64, usize)>,
}

/// The [`Plan`] for the pages `[first, end)` (page aligned from `first`)
/// of `msl` in `domain`.
fn plan(
    t: &mut Locked,
    domain: Domain,
    msl: *const sys::rte_memseg_list,
    first: usize,
    end: usize,
    pg: usize,
) -> Result<Plan, i32> {
    let mut used: Vec<usize> = Vec::new();
    let mut runs: Vec<(usize, u64, usize)> = Vec::new();
    let mut page = first;
    while page < end {
        if let Some((i, run)) = t.covering(domain, page) {
            if !used.contains(&i) {
                used.push(i);
            }
            page = run.end();
            continue;
        }
        let iova = page_iova(msl, page).ok_or(-libc::EINVAL)?;
        match runs.last_mut() {
            Some((va, io, len)) if *va + *len == page && *io + *len as u64 == iova => *len += pg,
            _ => runs.push((page, iova, pg)),
        }
        page += pg;
    }
    Ok(Plan { used, runs })
}

impl DmaMapper for PoolDmaMapper<'_> {
    fn map(&mut self, device: DeviceId, chunk: &ChunkInfo) -> Result<(), i32> {
        let (start, end) = (chunk.va.start.0, chunk.va.end());
        match mem_kind(start) {
            MemKind::Eal => {
                self.eal_records += 1;
                Ok(())
            }
            MemKind::External(msl) => self.map_external(device, msl, start, end),
            MemKind::Unregistered => {
                self.unregistered = Some(start);
                Err(-libc::EINVAL)
            }
        }
    }

    fn unmap(&mut self, device: DeviceId, chunk: &ChunkInfo) -> Result<(), i32> {
        // By the table, not by the memory: it may be unregistered by now.
        self.unmap_external(device, chunk.va.start.0, chunk.va.end())
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
    /// Pages of external memory mapped now (not those its domain had
    /// mapped already).
    pub pages_mapped: usize,
    /// Map entries made now (one per contiguous run).
    pub entries_mapped: usize,
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
        entries_mapped: mapper.entries_mapped,
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
    /// Pages of external memory unmapped (each exactly once; none while
    /// another device of its domain still uses them).
    pub pages_unmapped: usize,
    /// Map entries removed.
    pub entries_unmapped: usize,
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
        entries_unmapped: mapper.entries_unmapped,
    })
}

/// Maps a chunk just recorded by `ops->populate` for every device attached
/// to the pool (objects are laid out after, so a device never gets one of
/// them unmapped). A failure is logged, not returned: the chunk's objects
/// are counted as populated already, and a later attach of the device
/// maps what is missing.
pub(crate) fn map_new_chunks(mp: *mut sys::rte_mempool, z: &zone::Zone<'_>) {
    with_pool_mapper(mp, "new chunk mapped for the attached devices", |m| {
        z.core.dma_sync(m)
    });
}

/// `ops->free`: unmaps the pool from every device still attached (a pool
/// freed while active, without a drained shutdown; after one, the release
/// has unmapped them and this does nothing).
pub(crate) fn unmap_at_free(mp: *mut sys::rte_mempool, z: &zone::Zone<'_>) {
    with_pool_mapper(mp, "freed with devices attached: unmapped", |m| {
        z.core.dma_release_all(m)
    });
}

/// Runs `f` with a [`PoolDmaMapper`] over [`RteDevDma`] and logs what it
/// did as `what` (nothing when it handled no chunk mapping).
fn with_pool_mapper(
    mp: *mut sys::rte_mempool,
    what: &str,
    f: impl FnOnce(&mut PoolDmaMapper<'_>) -> Result<usize, mempool::PoolError>,
) {
    let mut backend = RteDevDma;
    let mut m = PoolDmaMapper::new(&mut backend);
    match f(&mut m) {
        Ok(0) => {}
        Ok(n) => log!(
            Level::Info,
            "pool {}: {what}: {n} chunk mappings; external memory: {} pages in {} entries \
             mapped, {} pages in {} entries unmapped",
            pool_name(mp),
            m.pages_mapped,
            m.entries_mapped,
            m.pages_unmapped,
            m.entries_unmapped
        ),
        Err(e) => log!(Level::Err, "pool {}: {what}: failed: {e}", pool_name(mp)),
    }
}
