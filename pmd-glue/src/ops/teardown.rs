//! Pool release (`ops->free`): the devices still attached are unmapped and
//! the zone goes, after one line saying how many objects never came back.

use dpdk_sys as sys;
use mempool::HoldRelease;

use crate::error::GlueError;
use crate::ffi::pool_name;
use crate::log::Level;
use crate::{log, port, zone};

/// Frees the zone of pool `mp` (`ops->free` of a pool our `alloc` set up),
/// after unmapping it from every device still attached (its chunk records
/// are in the zone: the last moment they can be), holding the release lock so that telemetry and a deferred release never
/// see it half gone; a deferred release still armed for it is forgotten
/// (under the lock) and its alarm cancelled (after).
///
/// # Safety
/// `mp` is the valid mempool DPDK passes to `free`, with our zone in
/// `pool_data`.
pub(super) unsafe fn release(mp: *mut sys::rte_mempool) -> Result<(), GlueError> {
    let mut lock = port::release_lock();
    // SAFETY: the caller's contract.
    let z = unsafe { zone::attach(mp) }?;
    // A deferred release still armed for this pool must never act on it
    // (or on a pool that later reuses its memory).
    let pending = port::note_free(&mut lock, mp, &z);
    leak_report(mp, &z);
    port::unmap_at_free(mp, &z);
    let destroyed = zone::destroy(&pool_name(mp));
    drop(lock);
    if let Some(token) = pending {
        port::cancel_deferred_release(token);
    }
    destroyed
}

/// The `free` log line: how many objects never came back.
fn leak_report(mp: *mut sys::rte_mempool, z: &zone::Zone<'_>) {
    let st = z.core.stats();
    let name = pool_name(mp);
    // Per-lcore hold and release counts are 32-bit and wrap: printed as
    // they relate (their difference, and the sums mod 2^32).
    let counts = HoldRelease::new(st.hold, st.release);
    if st.state == mempool::PoolState::Released {
        log!(
            Level::Info,
            "pool {name} freed after a drained shutdown ({} populated; {counts})",
            st.populated
        );
        return;
    }
    let missing = missing_objects(z, &st);
    if missing > 0 {
        let during = if st.state == mempool::PoolState::Draining {
            format!(" during its {} shutdown", st.state)
        } else {
            String::new()
        };
        log!(
            Level::Warning,
            "pool {name} freed with {missing} objects not returned{during} (still with the \
             application, in user-owned mempool caches, or in DPDK's per-lcore mempool caches)"
        );
    } else if missing < 0 {
        log!(
            Level::Warning,
            "pool {name} freed with {} more objects returned than handed out (a double free); \
             {counts}",
            -missing
        );
    } else if st.in_caches > 0 {
        // DPDK's take-back before `free` gets every object once, from the
        // freeing thread: objects in other lcores' handler caches stay
        // there, so hold - release is short by exactly their number.
        log!(
            Level::Info,
            "pool {name} freed: every object returned, {} of them in the handler's per-lcore \
             caches, where DPDK's take-back does not reach; {counts}",
            st.in_caches
        );
    } else {
        log!(
            Level::Info,
            "pool {name} freed: every object returned; {counts}"
        );
    }
}

/// Objects of pool `z` that never came back, at `free` (negative: more came
/// back than went out).
fn missing_objects(z: &zone::Zone<'_>, st: &mempool::PoolStats) -> i64 {
    if st.state == mempool::PoolState::Draining {
        // Draining: gets are refused, so the library's take-back loop took
        // nothing and the caches were flushed at shutdown: the inflight
        // snapshot is exactly what is still out (signed: a double free
        // that got through shows as negative).
        return st.inflight;
    }
    // The library has just taken back, one at a time, every object it
    // could; the failures at the end are the objects that never came back.
    // Objects still in the handler caches of other lcores were out of the
    // freeing lcore's reach but are not lost.
    // Written by this thread's take-back loop (see
    // `ZoneHeader::trailing_get_failures`).
    z.header
        .trailing_failures(z.core.activity_mark(sys::lcore_id()))
        .saturating_sub(st.in_caches as u64) as i64
}
