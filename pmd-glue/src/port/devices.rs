//! Ports' devices: [`attach_port`] maps a pool for a port's device and
//! records the device (`device_registry`); the port events (port release, device
//! removal) remove the device's mappings from every pool when it goes.

use core::ffi::{c_int, c_void};
use std::ffi::CString;
use std::sync::Once;

use dpdk_sys as sys;
use mempool::{DeviceId, PoolState};

use super::device_registry::{forget_port, mappings_go, port_device, remember_port};
use super::dma::{attach_zone, DmaAttach, PoolDmaMapper, RteDevDma};
use super::release::release_lock;
use crate::error::GlueError;
use crate::ffi::{self, pool_name};
use crate::log::Level;
use crate::{cname, log, zone};

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
