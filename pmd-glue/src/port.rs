//! Safe port shutdown with inflight tracking, device events, and the DPDK
//! DMA mapper.
//!
//! Like the kernel's page_pool destroy: a pool is never freed while buffers
//! are out. [`shutdown_ports`] stops and closes the ports, drains the pool,
//! waits a bounded time, and otherwise defers the release to an EAL alarm
//! that retries every second (the core's retry period), warns every minute
//! (its warn period) naming the pool and its inflight count, and frees the
//! pool once the last buffer is back.

use core::ffi::{c_int, c_void};
use std::collections::HashMap;
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use dpdk_sys as sys;
use mempool::{ChunkInfo, DeviceId, DmaMapper, PollOutcome, PoolState};

use crate::error::GlueError;
use crate::log::Level;
use crate::{log, ops, zone};

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

/// `rte_device` of each port we attached, remembered so that unmapping still
/// works while the port is being released.
fn devices() -> &'static Mutex<HashMap<u64, usize>> {
    static DEVICES: std::sync::OnceLock<Mutex<HashMap<u64, usize>>> = std::sync::OnceLock::new();
    DEVICES.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Maps pool chunks for an ethdev port's device with `rte_dev_dma_map`.
/// A device without DMA mapping support (`-ENOTSUP`) has nothing to map.
#[derive(Debug, Default)]
pub struct EthDmaMapper {
    /// Set when the device said `-ENOTSUP`.
    pub unsupported: bool,
}

impl EthDmaMapper {
    fn device(&self, device: DeviceId) -> Result<*mut sys::rte_device, i32> {
        let map = devices().lock().map_err(|_| -libc::EFAULT)?;
        map.get(&device.0)
            .map(|&d| d as *mut sys::rte_device)
            .ok_or(-libc::ENODEV)
    }

    fn call(&mut self, device: DeviceId, chunk: &ChunkInfo, map: bool) -> Result<(), i32> {
        let dev = self.device(device)?;
        let Some(iova) = chunk.iova else {
            return Err(-libc::EINVAL);
        };
        let (addr, len) = (chunk.va.start.0 as *mut c_void, chunk.va.len);
        // SAFETY: a live device pointer we recorded at attach; the range is a
        // chunk of a pool we own.
        let r = unsafe {
            if map {
                sys::rte_dev_dma_map(dev, addr, iova.0, len)
            } else {
                sys::rte_dev_dma_unmap(dev, addr, iova.0, len)
            }
        };
        if r == 0 {
            return Ok(());
        }
        let errno = sys::errno();
        if errno == libc::ENOTSUP {
            self.unsupported = true;
        }
        Err(-errno)
    }
}

impl DmaMapper for EthDmaMapper {
    fn map(&mut self, device: DeviceId, chunk: &ChunkInfo) -> Result<(), i32> {
        self.call(device, chunk, true)
    }
    fn unmap(&mut self, device: DeviceId, chunk: &ChunkInfo) -> Result<(), i32> {
        self.call(device, chunk, false)
    }
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

/// Maps every chunk of `mp` for the device of `port`, once for the pool's
/// life (a second attach maps nothing new). Returns the chunks mapped now;
/// 0 with a log line when the device does not implement DMA mapping.
///
/// # Safety
/// `mp` is a live mempool created with the ptr_ring ops.
pub unsafe fn attach_port(mp: *mut sys::rte_mempool, port: u16) -> Result<usize, GlueError> {
    register_event_callbacks();
    let dev = port_device(port)?;
    devices()
        .lock()
        .map_err(|_| GlueError::Dpdk {
            call: "attach_port",
            errno: -libc::EFAULT,
        })?
        .insert(port as u64, dev as usize);
    // SAFETY: the caller passes a live mempool.
    let z = unsafe { zone::attach(mp) }?;
    let mut mapper = EthDmaMapper::default();
    match z.core.dma_attach(DeviceId(port as u64), &mut mapper) {
        Ok(n) => {
            log!(
                Level::Info,
                "pool {}: port {port}: {n} chunks DMA-mapped",
                pool_name(mp)
            );
            Ok(n)
        }
        Err(_) if mapper.unsupported => {
            log!(
                Level::Notice,
                "pool {}: port {port}: device does not implement DMA mapping (-ENOTSUP): nothing to map",
                pool_name(mp)
            );
            Ok(0)
        }
        Err(e) => Err(e.into()),
    }
}

fn pool_name(mp: *const sys::rte_mempool) -> String {
    // SAFETY: a live mempool.
    zone::cstr_field(unsafe { &(*mp).name })
}

/// Stops and closes `ports`, then drains `mp` and frees it when every buffer
/// is back within `wait`; otherwise defers the release (see module docs).
///
/// Stopping RX and letting TX complete come first (`rte_eth_dev_rx_queue_stop`,
/// `rte_eth_tx_done_cleanup`, skipped where the driver lacks them), then
/// `rte_eth_dev_stop` and `rte_eth_dev_close`, which give back the mbufs the
/// driver holds. Then every handler cache is flushed to the ring.
///
/// # Safety
/// * `mp` is a live mempool created with the ptr_ring ops;
/// * no lcore is inside a get or put on `mp` during the call (forwarding
///   stopped, e.g. after `rte_eal_mp_wait_lcore`). Buffers the application
///   still holds may be returned afterwards, from any thread;
/// * after `Freed`, and after a `Deferred` release completes, `mp` is gone.
pub unsafe fn shutdown_ports(
    ports: &[u16],
    mp: *mut sys::rte_mempool,
    wait: Duration,
) -> Result<ShutdownOutcome, GlueError> {
    for &port in ports {
        stop_port(port);
    }
    // SAFETY: live mempool (caller's contract).
    let z = unsafe { zone::attach(mp) }?;
    // SAFETY: live mempool, no lcore in a get/put (caller's contract).
    unsafe { close_dpdk_caches(mp) };
    let mut mapper = EthDmaMapper::default();
    let start = Instant::now();
    // SAFETY: quiescent per the caller's contract.
    let mut outcome = unsafe { z.core.drain_quiescent(now_ns(), &mut mapper) }?;
    loop {
        match outcome {
            PollOutcome::Released { .. } => {
                log!(
                    Level::Info,
                    "pool {}: every buffer back, freeing it",
                    pool_name(mp)
                );
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
                        "pool {}: {inflight} buffers still out after {} ms: release deferred, \
                         retrying every {} ms",
                        pool_name(mp),
                        start.elapsed().as_millis(),
                        retry_us / 1000
                    );
                    arm(mp, retry_us)?;
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
                log!(
                    Level::Err,
                    "pool {}: shutdown found the pool {other:?}",
                    pool_name(mp)
                );
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
/// # Safety
/// `mp` is live and no lcore is inside a get/put on it.
unsafe fn close_dpdk_caches(mp: *mut sys::rte_mempool) {
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
    // later put goes straight to the handler.
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

fn arm(mp: *mut sys::rte_mempool, us: u64) -> Result<(), GlueError> {
    // SAFETY: the callback only uses `mp` while the pool is not released; it
    // is the one that frees it.
    let r = unsafe { sys::rte_eal_alarm_set(us, Some(deferred_release), mp.cast()) };
    if r < 0 {
        return Err(GlueError::Dpdk {
            call: "rte_eal_alarm_set",
            errno: r,
        });
    }
    Ok(())
}

/// The deferred release: one poll of the core's state machine per alarm.
unsafe extern "C" fn deferred_release(arg: *mut c_void) {
    let mp = arg.cast::<sys::rte_mempool>();
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: the pool stays alive until this callback frees it.
        let z = match unsafe { zone::attach(mp) } {
            Ok(z) => z,
            Err(e) => {
                log!(Level::Err, "deferred release: {e}");
                return;
            }
        };
        let retry_us = (z.core.retry_period_ns() / 1000).max(1);
        let mut mapper = EthDmaMapper::default();
        let outcome = z.core.poll(now_ns(), &mut mapper);
        match outcome {
            PollOutcome::Released { waited_ns, .. } => {
                log!(
                    Level::Notice,
                    "pool {}: last buffer back after {} ms of deferred release: freeing it",
                    pool_name(mp),
                    waited_ns / 1_000_000
                );
                // SAFETY: released: nothing is out; this alarm owns the pool.
                unsafe { sys::rte_mempool_free(mp) };
            }
            PollOutcome::Warn {
                inflight,
                waited_ns,
                ..
            } => {
                log!(
                    Level::Warning,
                    "stalled pool shutdown: pool {} still has {inflight} buffers inflight after {} s",
                    pool_name(mp),
                    waited_ns / 1_000_000_000
                );
                if let Err(e) = arm(mp, retry_us) {
                    log!(
                        Level::Err,
                        "pool {}: cannot re-arm deferred release: {e}",
                        pool_name(mp)
                    );
                }
            }
            PollOutcome::AlreadyReleased | PollOutcome::NotDraining => {
                log!(
                    Level::Err,
                    "pool {}: deferred release found nothing to do",
                    pool_name(mp)
                );
            }
            PollOutcome::Busy | PollOutcome::Waiting { .. } => {
                log!(
                    Level::Debug,
                    "pool {}: deferred release: {outcome:?}",
                    pool_name(mp)
                );
                if let Err(e) = arm(mp, retry_us) {
                    log!(
                        Level::Err,
                        "pool {}: cannot re-arm deferred release: {e}",
                        pool_name(mp)
                    );
                }
            }
        }
    });
}

/// Device removal and port release: unmap that device's mappings from every
/// ptr_ring pool, once; the pools keep serving and accept late returns.
unsafe extern "C" fn on_port_event(
    port: u16,
    event: sys::rte_eth_event_type,
    _arg: *mut c_void,
    _ret: *mut c_void,
) -> c_int {
    let _ =
        std::panic::catch_unwind(|| {
            let device = DeviceId(port as u64);
            for name in crate::telemetry::pools() {
                let Ok(c) = std::ffi::CString::new(name.clone()) else {
                    continue;
                };
                // SAFETY: valid name; null when absent.
                let mp = unsafe { sys::rte_mempool_lookup(c.as_ptr()) };
                // SAFETY: `mp` is checked non-null first; callers pass live pools.
                if mp.is_null() || unsafe { ops::ops_name_of(mp) } != ops::OPS_NAME {
                    continue;
                }
                // SAFETY: a live pool of ours.
                let Ok(z) = (unsafe { zone::attach(mp) }) else {
                    continue;
                };
                if z.core.device_stats(device).is_none() || z.core.state() == PoolState::Released {
                    continue;
                }
                let mut mapper = EthDmaMapper::default();
                match z.core.dma_remove(device, &mut mapper) {
                    Ok(n) => {
                        log!(
                    Level::Notice,
                    "pool {name}: port {port} {}: {n} DMA mappings removed; pool keeps serving",
                    if event == sys::RTE_ETH_EVENT_INTR_RMV { "removed" } else { "released" }
                )
                    }
                    Err(e) => log!(Level::Err, "pool {name}: port {port}: unmap failed: {e}"),
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
