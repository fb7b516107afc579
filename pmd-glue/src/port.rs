//! Safe port shutdown with inflight tracking, device events, and the DPDK
//! DMA mapper.
//!
//! Like the kernel's page_pool destroy: a pool is never freed while buffers
//! are out. [`shutdown_ports`] stops and closes the ports, drains the pool,
//! waits a bounded time, and otherwise defers the release to an EAL alarm
//! that retries every second (the core's retry period), warns every minute
//! (its warn period) naming the pool and its inflight count, and frees the
//! pool once the last buffer is back.
//!
//! The release belongs to one shutdown: the first call claims the pool
//! (a token stored once in its zone); a second call is refused with
//! `-EALREADY`. The alarm's argument is that token, not the pool: the
//! callback finds the pool in a process-wide table under the release lock
//! ([`release_lock`]) and checks the zone still holds its token, so it can
//! act on no other pool. `ops->free` (the deferred release itself, or an
//! application calling `rte_mempool_free`) forgets the token and cancels the
//! alarm. Telemetry and port events take the same lock before using a pool
//! they looked up, so no release frees a pool under them.

use core::ffi::{c_int, c_void};
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, Once, OnceLock};
use std::time::{Duration, Instant};

use dpdk_sys as sys;
use mempool::{ChunkInfo, DeviceId, DmaMapper, PollOutcome, PoolState};

use crate::error::GlueError;
use crate::ffi::{self, pool_name};
use crate::log::Level;
use crate::{log, zone};

/// What [`shutdown_ports`] did with the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownOutcome {
    /// Every buffer was back: the pool is freed.
    Freed {
        /// Time spent waiting for buffers.
        waited: Duration,
    },
    /// Buffers are still out: the pool stays, and an EAL alarm frees it when
    /// the last one comes back.
    Deferred {
        /// Buffers out when the wait ended.
        inflight: i64,
    },
}

/// `CLOCK_MONOTONIC` in ns: one clock for every process sharing the pool.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

// ---------------------------------------------------------------- devices

/// One device we mapped pools for: its `rte_device` (process-local) and the
/// ports of it that were attached.
struct DeviceEntry {
    dev: usize,
    name: String,
    ports: BTreeSet<u16>,
}

/// Devices by [`DeviceId`], and the device of each attached port.
#[derive(Default)]
struct Devices {
    by_id: HashMap<u64, DeviceEntry>,
    port_device: HashMap<u16, u64>,
}

fn devices() -> MutexGuard<'static, Devices> {
    static DEVICES: OnceLock<Mutex<Devices>> = OnceLock::new();
    DEVICES
        .get_or_init(|| Mutex::new(Devices::default()))
        .lock()
        .unwrap_or_else(|e| e.into_inner())
}

/// The id under which the core keeps a device's mappings: a hash of the
/// `rte_device` name, the same in every process (port ids are not: two
/// ports of one device share its mappings, and a port id can be reused by
/// another device).
pub fn device_id(name: &str) -> DeviceId {
    // FNV-1a, 64 bits.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    DeviceId(h)
}

// ------------------------------------------------------------ DMA mapping

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
        let dev = devices()
            .by_id
            .get(&device.0)
            .map(|d| d.dev as *mut sys::rte_device)
            .ok_or(-libc::ENODEV)?;
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
        if r == 0 {
            Ok(())
        } else {
            Err(-sys::errno())
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

/// Mapped pages by (device, page address), process-wide.
fn page_maps() -> MutexGuard<'static, BTreeMap<(u64, usize), PageMap>> {
    static PAGES: Mutex<BTreeMap<(u64, usize), PageMap>> = Mutex::new(BTreeMap::new());
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
        let mut result = Ok(());
        while page < end {
            let key = (device.0, page);
            if let Some(m) = pages.get_mut(&key) {
                m.refs += 1;
                done.push(page);
            } else {
                // SAFETY: `page` lies in `msl` (same registered area as
                // `start`); lookup only.
                let ms = unsafe { sys::rte_mem_virt2memseg(page as *const c_void, msl) };
                let iova = if ms.is_null() {
                    BAD_IOVA
                } else {
                    // SAFETY: a live memseg of `msl`.
                    unsafe { (*ms).iova }
                };
                if iova == BAD_IOVA {
                    result = Err(-libc::EINVAL);
                    break;
                }
                match self.backend.map(device, page, iova, pg) {
                    Ok(()) => {
                        self.pages_mapped += 1;
                        pages.insert(
                            key,
                            PageMap {
                                refs: 1,
                                iova,
                                len: pg,
                            },
                        );
                        done.push(page);
                    }
                    Err(e) => {
                        if e == -libc::ENOTSUP {
                            self.unsupported = true;
                        }
                        result = Err(e);
                        break;
                    }
                }
            }
            page += pg;
        }
        if result.is_err() {
            // All or nothing: the core retries the record later.
            for p in done {
                if let Err(e) = self.drop_page(&mut pages, device, p) {
                    log!(
                        Level::Err,
                        "DMA: undoing the map of page {p:#x} for {device} after a failed map: {e}"
                    );
                }
            }
        }
        result
    }

    fn drop_page(
        &mut self,
        pages: &mut BTreeMap<(u64, usize), PageMap>,
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

/// Maps `mp` for the `rte_device` of `port` (see [`attach_device`]); two
/// ports of one device share its mappings. Keeps the port's device so that
/// its mappings are removed when the device goes away (port release of its
/// last attached port, or device removal).
///
/// # Safety
/// `mp` is a live mempool created with the ptr_ring ops.
pub unsafe fn attach_port(mp: *mut sys::rte_mempool, port: u16) -> Result<DmaAttach, GlueError> {
    // SAFETY: the caller passes a live mempool.
    unsafe { zone::ours(mp) }?;
    register_event_callbacks();
    let dev = port_device(port)?;
    // SAFETY: a live device of a valid port; DPDK returns its
    // NUL-terminated name.
    let name = unsafe { zone::cstr_ptr(sys::rte_dev_name(dev)) };
    let id = device_id(&name);
    {
        let mut d = devices();
        d.by_id
            .entry(id.0)
            .or_insert_with(|| DeviceEntry {
                dev: dev as usize,
                name: name.clone(),
                ports: BTreeSet::new(),
            })
            .ports
            .insert(port);
        d.port_device.insert(port, id.0);
    }
    // SAFETY: forwarded caller contract.
    let a = unsafe { attach_device(mp, id, &mut RteDevDma) }?;
    if a.unsupported {
        log!(
            Level::Notice,
            "pool {}: port {port} (device {name}): device does not implement DMA mapping \
             (-ENOTSUP): nothing to map",
            pool_name(mp)
        );
    } else {
        log!(
            Level::Info,
            "pool {}: port {port} (device {name}): {} chunks handled now: {} in EAL memory \
             (mapped by EAL), {} external pages mapped",
            pool_name(mp),
            a.records,
            a.eal_records,
            a.pages_mapped
        );
    }
    Ok(a)
}

fn port_device(port: u16) -> Result<*mut sys::rte_device, GlueError> {
    // SAFETY: all-zero is a valid rte_eth_dev_info to be filled.
    let mut info: sys::rte_eth_dev_info = unsafe { core::mem::zeroed() };
    // SAFETY: valid out pointer.
    let r = unsafe { sys::rte_eth_dev_info_get(port, &mut info) };
    if r < 0 || info.device.is_null() {
        return Err(GlueError::Dpdk {
            call: "rte_eth_dev_info_get",
            errno: if r < 0 { r } else { -libc::ENODEV },
        });
    }
    Ok(info.device)
}

// ------------------------------------------------- release lock and alarms

/// Deferred releases armed by this process: alarm token -> pool. Only
/// touched under the release lock.
#[derive(Default)]
pub struct Pending {
    by_token: BTreeMap<u64, usize>,
}

static RELEASE: Mutex<Pending> = Mutex::new(Pending {
    by_token: BTreeMap::new(),
});

thread_local! {
    /// Whether this thread holds [`RELEASE`] (the deferred release frees
    /// the pool, and `ops->free` runs inside that call).
    static HOLDS_RELEASE: Cell<bool> = const { Cell::new(false) };
}

/// The process-wide lock between everything that frees a pool (`ops->free`,
/// the deferred release) and everything that uses a pool it looked up by
/// name (telemetry, port events): whoever holds it knows a pool it finds
/// stays alive until it lets go. Re-entrant on one thread: the deferred
/// release calls `rte_mempool_free`, whose `ops->free` takes it again.
pub struct ReleaseLock {
    guard: Option<MutexGuard<'static, Pending>>,
}

impl Drop for ReleaseLock {
    fn drop(&mut self) {
        if self.guard.is_some() {
            HOLDS_RELEASE.with(|h| h.set(false));
        }
    }
}

/// Takes the release lock (see [`ReleaseLock`]).
pub fn release_lock() -> ReleaseLock {
    if HOLDS_RELEASE.with(Cell::get) {
        return ReleaseLock { guard: None };
    }
    let guard = RELEASE.lock().unwrap_or_else(|e| e.into_inner());
    HOLDS_RELEASE.with(|h| h.set(true));
    ReleaseLock { guard: Some(guard) }
}

/// A token no other shutdown in any process has: process id and a sequence.
fn new_token() -> u64 {
    static SEQ: AtomicU32 = AtomicU32::new(1);
    // Relaxed: uniqueness only.
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    // SAFETY: plain query.
    let pid = unsafe { libc::getpid() } as u32;
    (u64::from(pid) << 32) | u64::from(seq)
}

/// Called by `ops->free` (under the release lock): the pool is going, so a
/// deferred release armed for it must never run. Returns the token whose
/// alarm to cancel once the lock is dropped.
pub(crate) fn forget_deferred_release(lock: &mut ReleaseLock, z: &zone::Zone<'_>) -> Option<u64> {
    // Acquire pairs with the AcqRel exchange in `shutdown_ports_with_caches`.
    let token = z.header.release_token.load(Ordering::Acquire);
    if token == 0 {
        return None;
    }
    if let Some(g) = lock.guard.as_mut() {
        g.by_token.remove(&token);
    }
    // (Re-entrant: the deferred release itself is freeing the pool and has
    // already forgotten it.)
    Some(token)
}

/// Cancels the alarm of `token` (nothing when none is armed; from inside
/// the alarm itself, EAL leaves it to finish).
pub(crate) fn cancel_deferred_release(token: u64) {
    // SAFETY: the callback and argument we armed with.
    let r =
        unsafe { sys::rte_eal_alarm_cancel(Some(deferred_release), token as usize as *mut c_void) };
    if r > 0 {
        log!(
            Level::Debug,
            "deferred release {token:#x}: alarm cancelled, the pool was freed"
        );
    }
}

/// Whether deferred releases armed by this process are pending (tests).
pub fn deferred_releases_pending() -> usize {
    let lock = release_lock();
    lock.guard.as_ref().map_or(0, |g| g.by_token.len())
}

// ---------------------------------------------------------------- shutdown

/// Where objects a pool still counts as out may be, for the messages that
/// name them.
const WHERE_OBJECTS_ARE: &str = "held by the application, in user-owned mempool caches \
     (rte_mempool_cache_create: flush them with rte_mempool_cache_flush, or pass them to the \
     shutdown), or in DPDK's per-lcore caches of a process that kept using the pool";

/// Stops and closes `ports`, then drains `mp` and frees it when every buffer
/// is back within `wait`; otherwise defers the release (see module docs).
/// [`shutdown_ports_with_caches`] with no user-owned caches.
///
/// # Safety
/// As [`shutdown_ports_with_caches`].
pub unsafe fn shutdown_ports(
    ports: &[u16],
    mp: *mut sys::rte_mempool,
    wait: Duration,
) -> Result<ShutdownOutcome, GlueError> {
    // SAFETY: forwarded caller contract.
    unsafe { shutdown_ports_with_caches(ports, &[], mp, wait) }
}

/// Stops and closes `ports`, hands the objects in `caches` (user-owned
/// caches, `rte_mempool_cache_create`, used with `mp`) back to the pool,
/// then drains `mp` and frees it when every buffer is back within `wait`;
/// otherwise defers the release to an EAL alarm (see module docs).
///
/// Stopping RX and letting TX complete come first (`rte_eth_dev_rx_queue_stop`,
/// `rte_eth_tx_done_cleanup`, skipped where the driver lacks them), then
/// `rte_eth_dev_stop` and `rte_eth_dev_close`, which give back the mbufs the
/// driver holds. Then the user caches, DPDK's per-lcore caches (which are
/// then turned off, see [`close_dpdk_caches`]) and every handler cache are
/// flushed to the ring. A user cache not passed here keeps its objects out
/// of the pool until the application flushes it (`rte_mempool_cache_flush`):
/// the release waits for them.
///
/// One shutdown per pool: a second call, from any process, while the first
/// is still draining (or after it) fails with `-EALREADY`
/// ([`GlueError::AlreadyShuttingDown`]) and changes nothing.
///
/// # Safety
/// * `mp` is a live mempool created with the ptr_ring ops;
/// * no lcore is inside a get or put on `mp` during the call (forwarding
///   stopped, e.g. after `rte_eal_mp_wait_lcore`), and no other thread uses
///   the caches in `caches`. Buffers the application still holds may be
///   returned afterwards, from any thread;
/// * after `Freed`, and after a `Deferred` release completes, `mp` is gone;
///   the application must not call `rte_mempool_free` on it (if it does
///   while the release is deferred, the pending release is cancelled).
pub unsafe fn shutdown_ports_with_caches(
    ports: &[u16],
    caches: &[*mut sys::rte_mempool_cache],
    mp: *mut sys::rte_mempool,
    wait: Duration,
) -> Result<ShutdownOutcome, GlueError> {
    // SAFETY: live mempool (caller's contract).
    let z = unsafe { zone::ours(mp) }?;
    let name = pool_name(mp);
    let token = new_token();
    // One shutdown per pool. AcqRel: pairs with the loads in `ops->free`
    // and the deferred release, and orders this claim before the drain.
    if z.header
        .release_token
        .compare_exchange(0, token, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        let e = GlueError::AlreadyShuttingDown {
            pool: name,
            state: z.core.state(),
        };
        log!(Level::Err, "shutdown: {e}");
        return Err(e);
    }
    for &port in ports {
        stop_port(port);
    }
    let mut user_cached = 0u32;
    for &c in caches.iter().filter(|c| !c.is_null()) {
        // SAFETY: a user-owned cache of this pool, unused during the call
        // (caller's contract); flushing puts its objects to the handler.
        unsafe {
            user_cached += (*c).len;
            sys::rte_mempool_cache_flush(c, mp);
        }
    }
    if user_cached > 0 {
        log!(
            Level::Info,
            "pool {name}: {user_cached} objects handed back from {} user-owned caches",
            caches.len()
        );
    }
    // SAFETY: live mempool, no lcore in a get/put (caller's contract).
    unsafe { close_dpdk_caches(mp) };
    let mut backend = RteDevDma;
    let mut mapper = PoolDmaMapper::new(&mut backend);
    let start = Instant::now();
    // SAFETY: quiescent per the caller's contract.
    let mut outcome = unsafe { z.core.drain_quiescent(now_ns(), &mut mapper) }?;
    loop {
        match outcome {
            PollOutcome::Released { .. } => {
                log!(Level::Info, "pool {name}: every buffer back, freeing it");
                // SAFETY: released: nothing is out, nobody uses the pool.
                unsafe { sys::rte_mempool_free(mp) };
                return Ok(ShutdownOutcome::Freed {
                    waited: start.elapsed(),
                });
            }
            PollOutcome::Waiting { inflight, .. } | PollOutcome::Warn { inflight, .. } => {
                if start.elapsed() >= wait {
                    let retry_us = (z.core.retry_period_ns() / 1000).max(1);
                    log!(
                        Level::Warning,
                        "pool {name}: {inflight} buffers still out after {} ms ({WHERE_OBJECTS_ARE}): \
                         release deferred, retrying every {} ms",
                        start.elapsed().as_millis(),
                        retry_us / 1000
                    );
                    {
                        let mut lock = release_lock();
                        if let Some(g) = lock.guard.as_mut() {
                            g.by_token.insert(token, mp as usize);
                        }
                    }
                    // From here on the alarm may free the pool at any time.
                    if let Err(e) = arm(token, retry_us) {
                        let mut lock = release_lock();
                        if let Some(g) = lock.guard.as_mut() {
                            g.by_token.remove(&token);
                        }
                        return Err(e);
                    }
                    return Ok(ShutdownOutcome::Deferred { inflight });
                }
                std::thread::sleep(Duration::from_millis(1));
                outcome = z.core.poll(now_ns(), &mut mapper);
            }
            PollOutcome::Busy => {
                // Another driver call (another process) is in progress.
                std::thread::sleep(Duration::from_millis(1));
                outcome = z.core.poll(now_ns(), &mut mapper);
            }
            other @ (PollOutcome::AlreadyReleased | PollOutcome::NotDraining) => {
                // Someone else released or re-activated it: not ours to free.
                log!(Level::Err, "pool {name}: shutdown found the pool {other:?}");
                return Err(GlueError::Dpdk {
                    call: "shutdown_ports",
                    errno: -libc::EALREADY,
                });
            }
        }
    }
}

/// Empties DPDK's own per-lcore mempool caches into the handler and turns
/// them off, so that buffers returned after shutdown reach the handler (and
/// its inflight count) instead of idling in a cache nobody flushes.
///
/// Turning them off writes `mp->cache_size = 0`, which lives in the pool's
/// shared memory: it turns DPDK's per-lcore cache off for this pool in
/// **every process** that uses it, not only this one. That is on purpose:
/// the shutdown is global too (the core refuses gets in every process once
/// draining), and returns from a secondary process must reach the handler
/// as well. It also means the flush below empties the caches of every
/// lcore id, a secondary's included: those processes must be quiescent on
/// this pool too, like this process's lcores.
///
/// # Safety
/// `mp` is live and no lcore, in any process, is inside a get/put on it.
pub unsafe fn close_dpdk_caches(mp: *mut sys::rte_mempool) {
    // SAFETY: live mempool (caller's contract).
    if unsafe { (*mp).cache_size } == 0 {
        return;
    }
    for lcore in 0..sys::RTE_MAX_LCORE {
        // SAFETY: the index is below RTE_MAX_LCORE; the caches are quiescent.
        unsafe {
            let cache = sys::rte_mempool_default_cache(mp, lcore);
            if !cache.is_null() && (*cache).len > 0 {
                sys::rte_mempool_cache_flush(cache, mp);
            }
        }
    }
    // With cache_size 0, rte_mempool_default_cache() returns NULL: every
    // later put, in every process, goes straight to the handler.
    // SAFETY: live mempool; no concurrent user (caller's contract).
    unsafe { (*mp).cache_size = 0 };
}

fn stop_port(port: u16) {
    // SAFETY: all-zero is a valid rte_eth_dev_info to be filled.
    let mut info: sys::rte_eth_dev_info = unsafe { core::mem::zeroed() };
    // SAFETY: valid out pointer.
    if unsafe { sys::rte_eth_dev_info_get(port, &mut info) } == 0 {
        for q in 0..info.nb_rx_queues {
            // SAFETY: a valid port and queue id; -ENOTSUP where unsupported.
            let r = unsafe { sys::rte_eth_dev_rx_queue_stop(port, q) };
            if r < 0 && r != -libc::ENOTSUP {
                log!(Level::Debug, "port {port}: rx queue {q} stop: {r}");
            }
        }
        for q in 0..info.nb_tx_queues {
            // SAFETY: as above; frees mbufs whose transmission completed.
            let r = unsafe { sys::rte_eth_tx_done_cleanup(port, q, 0) };
            if r < 0 && r != -libc::ENOTSUP {
                log!(Level::Debug, "port {port}: tx queue {q} done cleanup: {r}");
            }
        }
    }
    // SAFETY: valid port id; errors only logged (already stopped is fine).
    let r = unsafe { sys::rte_eth_dev_stop(port) };
    if r < 0 {
        log!(Level::Debug, "port {port}: stop: {r}");
    }
    // SAFETY: as above.
    let r = unsafe { sys::rte_eth_dev_close(port) };
    if r < 0 {
        log!(Level::Debug, "port {port}: close: {r}");
    }
}

fn arm(token: u64, us: u64) -> Result<(), GlueError> {
    // SAFETY: the argument is a token, not a pointer: the callback looks it
    // up under the release lock and acts only on the pool armed with it.
    let r = unsafe {
        sys::rte_eal_alarm_set(us, Some(deferred_release), token as usize as *mut c_void)
    };
    if r < 0 {
        return Err(GlueError::Dpdk {
            call: "rte_eal_alarm_set",
            errno: r,
        });
    }
    Ok(())
}

/// The deferred release: one poll of the core's state machine per alarm.
/// `arg` is the token of the shutdown that armed it; a pool freed meanwhile
/// (`ops->free` forgets its token) or another pool at the same address is
/// never touched.
unsafe extern "C" fn deferred_release(arg: *mut c_void) {
    let token = arg as usize as u64;
    ffi::guard_void("the deferred release", || {
        let mut lock = release_lock();
        let Some(g) = lock.guard.as_mut() else {
            // Only reachable if an alarm ran nested in a release: never
            // act without the lock.
            return;
        };
        let Some(&mp) = g.by_token.get(&token) else {
            log!(
                Level::Debug,
                "deferred release {token:#x}: its pool was already freed; nothing to do"
            );
            return;
        };
        let mp = mp as *mut sys::rte_mempool;
        // SAFETY: a pool in the registry is alive: `ops->free` removes it
        // under the lock we hold.
        let z = match unsafe { zone::attach(mp) } {
            Ok(z) => z,
            Err(e) => {
                g.by_token.remove(&token);
                log!(Level::Err, "deferred release {token:#x}: {e}");
                return;
            }
        };
        // Acquire pairs with the exchange in `shutdown_ports_with_caches`.
        if z.header.release_token.load(Ordering::Acquire) != token {
            g.by_token.remove(&token);
            log!(
                Level::Err,
                "deferred release {token:#x}: pool {} is not the pool this release was armed \
                 for; left alone",
                pool_name(mp)
            );
            return;
        }
        let retry_us = (z.core.retry_period_ns() / 1000).max(1);
        let mut backend = RteDevDma;
        let mut mapper = PoolDmaMapper::new(&mut backend);
        let rearm = |what: &str| {
            if let Err(e) = arm(token, retry_us) {
                log!(
                    Level::Err,
                    "deferred release: pool {what}: cannot re-arm the release alarm: {e}"
                );
            }
        };
        let outcome = z.core.poll(now_ns(), &mut mapper);
        match outcome {
            PollOutcome::Released { waited_ns, .. } => {
                g.by_token.remove(&token);
                log!(
                    Level::Notice,
                    "pool {}: last buffer back after {} ms of deferred release: freeing it",
                    pool_name(mp),
                    waited_ns / 1_000_000
                );
                // SAFETY: released: nothing is out; this alarm owns the
                // pool. `ops->free` runs inside, on this thread, under the
                // lock we hold (re-entrant).
                unsafe { sys::rte_mempool_free(mp) };
            }
            PollOutcome::Warn {
                inflight,
                waited_ns,
                ..
            } => {
                log!(
                    Level::Warning,
                    "stalled pool shutdown: pool {} still has {inflight} buffers inflight after \
                     {} s; they may be {WHERE_OBJECTS_ARE}",
                    pool_name(mp),
                    waited_ns / 1_000_000_000
                );
                rearm(&pool_name(mp));
            }
            PollOutcome::Busy | PollOutcome::Waiting { .. } => {
                log!(
                    Level::Debug,
                    "pool {}: deferred release: {outcome:?}",
                    pool_name(mp)
                );
                rearm(&pool_name(mp));
            }
            other @ (PollOutcome::AlreadyReleased | PollOutcome::NotDraining) => {
                g.by_token.remove(&token);
                log!(
                    Level::Err,
                    "deferred release: pool {} found {other:?}; left alone",
                    pool_name(mp)
                );
            }
        }
    });
}

/// Port release and device removal: the device's mappings are removed from
/// every ptr_ring pool, once, when the device goes away (removal), or when
/// the last attached port of it is released; the pools keep serving and
/// accept late returns.
unsafe extern "C" fn on_port_event(
    port: u16,
    event: sys::rte_eth_event_type,
    _arg: *mut c_void,
    _ret: *mut c_void,
) -> c_int {
    ffi::guard_void("the port event callback", || {
        let removed = event == sys::RTE_ETH_EVENT_INTR_RMV;
        let (device, name) = {
            let mut d = devices();
            let Some(id) = d.port_device.remove(&port) else {
                return;
            };
            let Some(entry) = d.by_id.get_mut(&id) else {
                return;
            };
            entry.ports.remove(&port);
            if !removed && !entry.ports.is_empty() {
                log!(
                    Level::Debug,
                    "port {port} released; device {} still has attached ports {:?}: mappings kept",
                    entry.name,
                    entry.ports
                );
                return;
            }
            (DeviceId(id), entry.name.clone())
        };
        // The pools looked up below stay alive while we hold the lock.
        let lock = release_lock();
        for pool in crate::telemetry::pools() {
            let Ok(c) = std::ffi::CString::new(pool.clone()) else {
                continue;
            };
            let Some((_, z)) = zone::lookup(&c, &lock) else {
                continue;
            };
            if z.core.device_stats(device).is_none() || z.core.state() == PoolState::Released {
                continue;
            }
            let mut backend = RteDevDma;
            let mut mapper = PoolDmaMapper::new(&mut backend);
            match z.core.dma_remove(device, &mut mapper) {
                Ok(n) => log!(
                    Level::Notice,
                    "pool {pool}: device {name} (port {port}) {}: {n} chunk mappings removed \
                     ({} pages unmapped); pool keeps serving",
                    if removed { "removed" } else { "released" },
                    mapper.pages_unmapped
                ),
                Err(e) => log!(
                    Level::Err,
                    "pool {pool}: device {name} (port {port}): unmap failed: {e}"
                ),
            }
        }
    });
    0
}

/// Registers the port event callbacks once (EAL must be initialised).
pub fn register_event_callbacks() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for event in [sys::RTE_ETH_EVENT_INTR_RMV, sys::RTE_ETH_EVENT_DESTROY] {
            // SAFETY: a valid callback for all ports.
            let r = unsafe {
                sys::rte_eth_dev_callback_register(
                    sys::RTE_ETH_ALL as u16,
                    event,
                    Some(on_port_event),
                    core::ptr::null_mut(),
                )
            };
            if r < 0 {
                log!(Level::Warning, "cannot listen to port event {event}: {r}");
            }
        }
    });
}
