//! The devices of attached ports: [`attach_port`] maps a pool for a port's
//! device and remembers the device; the port events (port release, device
//! removal) remove the device's mappings from every pool when it goes.

use core::ffi::{c_int, c_void};
use std::collections::{BTreeSet, HashMap};
use std::ffi::CString;
use std::sync::{Mutex, MutexGuard, Once, OnceLock};

use dpdk_sys as sys;
use mempool::{DeviceId, PoolState};

use super::dma::{attach_zone, DmaAttach, PoolDmaMapper, RteDevDma};
use super::release::release_lock;
use crate::error::GlueError;
use crate::ffi::{self, pool_name};
use crate::log::Level;
use crate::{cname, log, zone};

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

/// The `rte_device` recorded for `device` (by [`attach_port`]), while one
/// of its attached ports still reports it as its device: a device that was
/// unplugged (and maybe plugged again under the same name, at another
/// address) is never handed out from the record.
pub(super) fn rte_device(device: DeviceId) -> Option<*mut sys::rte_device> {
    let d = devices();
    let entry = d.by_id.get(&device.0)?;
    let dev = entry.dev as *mut sys::rte_device;
    entry
        .ports
        .iter()
        .any(|&p| port_device(p).is_ok_and(|live| live == dev))
        .then_some(dev)
}

/// The device recorded under `name`, as [`rte_device`] hands it out (tests).
#[doc(hidden)]
pub fn recorded_device(name: &str) -> Option<*mut sys::rte_device> {
    rte_device(device_id(name))
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

/// Maps `mp` for the `rte_device` of `port` (see
/// [`attach_device`](super::attach_device)); two ports of one device share
/// its mappings. Keeps the port's device so that its mappings are removed
/// when the device goes away (port release of its last attached port, or
/// device removal).
///
/// # Safety
/// `mp` is a live mempool created with the ptr_ring ops.
pub unsafe fn attach_port(mp: *mut sys::rte_mempool, port: u16) -> Result<DmaAttach, GlueError> {
    // SAFETY: the caller passes a live mempool.
    let z = unsafe { zone::ours(mp) }?;
    register_event_callbacks();
    let dev = port_device(port)?;
    // SAFETY: a live device of a valid port; DPDK returns its
    // NUL-terminated name.
    let name = unsafe { cname::cstr_ptr(sys::rte_dev_name(dev)) };
    let id = remember_port(port, dev, &name);
    let a = attach_zone(mp, &z, id, &mut RteDevDma)?;
    log_attach(mp, port, &name, &a);
    Ok(a)
}

/// The `rte_device` of `port`.
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

/// Records `port` as an attached port of `dev` (named `name`); returns the
/// device's id.
fn remember_port(port: u16, dev: *mut sys::rte_device, name: &str) -> DeviceId {
    let id = device_id(name);
    let mut d = devices();
    let entry = d.by_id.entry(id.0).or_insert_with(|| DeviceEntry {
        dev: dev as usize,
        name: name.to_string(),
        ports: BTreeSet::new(),
    });
    // A device of this name plugged again is another rte_device.
    entry.dev = dev as usize;
    entry.ports.insert(port);
    d.port_device.insert(port, id.0);
    id
}

fn log_attach(mp: *mut sys::rte_mempool, port: u16, name: &str, a: &DmaAttach) {
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
        // While the port is still attached (the event comes before the
        // port and its device go), so that the unmap still finds the
        // device through it.
        if let Some((device, name)) = mappings_go(port, removed) {
            unmap_from_pools(device, &name, port, removed);
        }
        forget_port(port);
    });
    0
}

/// The device (id and name) of `port` when the device's mappings must go
/// with this event: it was removed, or `port` is its last attached port.
fn mappings_go(port: u16, removed: bool) -> Option<(DeviceId, String)> {
    let d = devices();
    let id = *d.port_device.get(&port)?;
    let entry = d.by_id.get(&id)?;
    let others: Vec<u16> = entry.ports.iter().copied().filter(|&p| p != port).collect();
    if !removed && !others.is_empty() {
        log!(
            Level::Debug,
            "port {port} released; device {} still has attached ports {others:?}: mappings kept",
            entry.name
        );
        return None;
    }
    Some((DeviceId(id), entry.name.clone()))
}

/// Forgets `port`, and its device once no attached port is left: a device
/// plugged again later is recorded afresh.
fn forget_port(port: u16) {
    let mut d = devices();
    let Some(id) = d.port_device.remove(&port) else {
        return;
    };
    if let Some(entry) = d.by_id.get_mut(&id) {
        entry.ports.remove(&port);
        if entry.ports.is_empty() {
            d.by_id.remove(&id);
        }
    }
}

/// Removes `device`'s mappings from every ptr_ring pool of this process.
fn unmap_from_pools(device: DeviceId, name: &str, port: u16, removed: bool) {
    // The pools looked up below stay alive while we hold the lock.
    let lock = release_lock();
    for pool in crate::telemetry::pools() {
        let Ok(c) = CString::new(pool.clone()) else {
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
