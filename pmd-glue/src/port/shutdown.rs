//! [`shutdown_ports`]: stop the ports, give every cached object back, drain
//! the pool, free it once every buffer is back or hand its release to the
//! deferred-release alarm. Each step is a function of its own, in the order
//! [`shutdown_ports_with_caches`] runs them.

use std::time::{Duration, Instant};

use dpdk_sys as sys;
use mempool::PollOutcome;

use super::dma::{PoolDmaMapper, RteDevDma};
use super::release::{
    claim_free, claim_release, defer_release, free_as_handler, give_back_release, retry_us,
};
use super::{now_ns, still_out};
use crate::error::GlueError;
use crate::ffi::pool_name;
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
        /// Buffers out when the wait ended: 0 when none was out but a put
        /// had not finished storing its buffers (a single-producer pool,
        /// `mempool::PollOutcome::Waiting`'s `unfilled`; the log says so).
        inflight: i64,
    },
}

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
    // A pool whose populate failed part-way: its objects are gone with
    // their memory, not out.
    // SAFETY: live and quiescent (caller's contract).
    if let Err(e) = unsafe { crate::ops::forget_freed_chunks(mp, &z) } {
        log!(Level::Warning, "shutdown: pool {}: {e}", pool_name(mp));
    }
    let token = claim_release(mp, &z)?;
    for &port in ports {
        stop_port(port);
    }
    // SAFETY: caches of this pool that nobody else uses (caller's contract).
    unsafe { flush_user_caches(mp, caches) };
    // SAFETY: live mempool, no lcore in a get/put (caller's contract).
    unsafe { close_dpdk_caches(mp) };
    // SAFETY: quiescent per the caller's contract.
    unsafe { drain_and_wait(mp, &z, token, wait) }
}

/// Stops RX, lets TX complete, then stops and closes `port`; every failure
/// is only logged (a port already stopped is fine).
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

/// Hands the objects of user-owned caches (nulls skipped) back to `mp`.
///
/// # Safety
/// `mp` is live; `caches` are caches used with it that no other thread
/// uses during the call.
unsafe fn flush_user_caches(mp: *mut sys::rte_mempool, caches: &[*mut sys::rte_mempool_cache]) {
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
            "pool {}: {user_cached} objects handed back from {} user-owned caches",
            pool_name(mp),
            caches.len()
        );
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

/// Drains the pool (gets refused from now on, handler caches flushed), then
/// polls it until every buffer is back, and frees it, or until `wait` has
/// passed, and hands the release to the alarm.
///
/// # Safety
/// `mp` is live and quiescent (as for [`shutdown_ports_with_caches`]); its
/// release was claimed with `token`.
unsafe fn drain_and_wait(
    mp: *mut sys::rte_mempool,
    z: &zone::Zone<'_>,
    token: u64,
    wait: Duration,
) -> Result<ShutdownOutcome, GlueError> {
    let name = pool_name(mp);
    let mut backend = RteDevDma;
    let mut mapper = PoolDmaMapper::new(&mut backend);
    let start = Instant::now();
    let mut outcome = loop {
        // SAFETY: quiescent per the caller's contract.
        match unsafe { z.core.drain_quiescent(now_ns(), &mut mapper) } {
            // Another driver call (another process's or thread's) holds
            // the core's driver token: retry within the wait, then give up.
            Ok(PollOutcome::Busy) if start.elapsed() < wait => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Ok(PollOutcome::Busy) => {
                give_back_release(z, token);
                log!(
                    Level::Err,
                    "shutdown: pool {name}: another driver call held the pool for the whole \
                     wait ({} ms): nothing done, retry later",
                    wait.as_millis()
                );
                return Err(GlueError::Dpdk {
                    call: "shutdown_ports (pool busy with another driver call)",
                    errno: -libc::EBUSY,
                });
            }
            Ok(o) => break o,
            Err(e) => {
                // Nothing deferred: a later shutdown may try again.
                give_back_release(z, token);
                return Err(e.into());
            }
        }
    };
    loop {
        match outcome {
            PollOutcome::Released { .. } if claim_free(z, token) => {
                log!(Level::Info, "pool {name}: every buffer back, freeing it");
                // SAFETY: released and claimed: nothing is out, nobody uses
                // the pool, and this call is its one freer.
                unsafe { free_as_handler(mp) };
                return Ok(ShutdownOutcome::Freed {
                    waited: start.elapsed(),
                });
            }
            PollOutcome::Released { .. } => {
                // The application took the free (ptr_ring_release_cancel).
                return Err(GlueError::ReleaseInProgress { pool: name });
            }
            PollOutcome::Waiting {
                inflight, unfilled, ..
            }
            | PollOutcome::Warn {
                inflight, unfilled, ..
            } if start.elapsed() >= wait => {
                return defer(mp, z, token, (inflight, unfilled), start);
            }
            // Another driver call (another process's alarm) holds the
            // core's driver token: the wait bounds this too; the alarm
            // polls on.
            PollOutcome::Busy if start.elapsed() >= wait => {
                return defer(mp, z, token, (z.core.inflight(), false), start);
            }
            // Buffers still out, or another driver call (another process)
            // in progress: poll again.
            PollOutcome::Waiting { .. } | PollOutcome::Warn { .. } | PollOutcome::Busy => {
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

/// The wait is over with `inflight` buffers out (or, `unfilled`, none out
/// but a put's fills not shown): the deferred-release alarm takes the pool
/// over.
fn defer(
    mp: *mut sys::rte_mempool,
    z: &zone::Zone<'_>,
    token: u64,
    (inflight, unfilled): (i64, bool),
    start: Instant,
) -> Result<ShutdownOutcome, GlueError> {
    let retry_us = retry_us(z);
    let why = still_out(inflight, unfilled);
    log!(
        Level::Warning,
        "pool {}: {why} after {} ms: release deferred, retrying every {} ms",
        pool_name(mp),
        start.elapsed().as_millis(),
        retry_us / 1000
    );
    if let Err(e) = defer_release(token, mp, retry_us) {
        // No alarm: the release is nobody's, so a later shutdown may
        // claim it (the pool stays draining).
        give_back_release(z, token);
        return Err(e);
    }
    Ok(ShutdownOutcome::Deferred { inflight })
}
