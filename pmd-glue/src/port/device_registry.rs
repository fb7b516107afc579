//! The devices of attached ports, by [`DeviceId`]: each one's
//! `rte_device` (process-local) and its attached ports, so that a port
//! event finds the device whose mappings must go, and a device unplugged
//! is never handed to `rte_dev_dma_map` again. `devices.rs` fills it
//! (`attach_port`) and empties it (the port events); the DMA mapper reads
//! it (`rte_device`).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard, OnceLock};

use dpdk_sys as sys;
use mempool::DeviceId;

use crate::error::GlueError;
use crate::log;
use crate::log::Level;

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

/// The `rte_device` of `port`.
pub(super) fn port_device(port: u16) -> Result<*mut sys::rte_device, GlueError> {
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
pub(super) fn remember_port(port: u16, dev: *mut sys::rte_device, name: &str) -> DeviceId {
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

/// The device (id and name) of `port` when the device's mappings must go
/// with this event: it was removed, or `port` is its last attached port.
pub(super) fn mappings_go(port: u16, removed: bool) -> Option<(DeviceId, String)> {
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
pub(super) fn forget_port(port: u16) {
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
