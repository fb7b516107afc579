//! Who may free a pool, and when: the release lock, the release token a
//! shutdown claims, and the deferred release, an EAL alarm that polls a
//! draining pool and frees it once the last buffer is back.

use core::ffi::c_void;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};

use dpdk_sys as sys;
use mempool::PollOutcome;

use super::dma::{PoolDmaMapper, RteDevDma};
use super::{now_ns, WHERE_OBJECTS_ARE};
use crate::error::GlueError;
use crate::ffi::{self, pool_name};
use crate::log::Level;
use crate::{log, zone};

// ------------------------------------------------------------ release lock

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

impl ReleaseLock {
    /// The table of pending releases, when this holder took the lock (not
    /// when it is a nested take on a thread that holds it already).
    fn pending(&mut self) -> Option<&mut Pending> {
        self.guard.as_deref_mut()
    }
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

/// Whether deferred releases armed by this process are pending (tests).
pub fn deferred_releases_pending() -> usize {
    let lock = release_lock();
    lock.guard.as_ref().map_or(0, |g| g.by_token.len())
}

// ---------------------------------------------------------- release tokens

/// A token no other shutdown in any process has: process id and a sequence.
fn new_token() -> u64 {
    static SEQ: AtomicU32 = AtomicU32::new(1);
    // Relaxed: uniqueness only.
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    // SAFETY: plain query.
    let pid = unsafe { libc::getpid() } as u32;
    (u64::from(pid) << 32) | u64::from(seq)
}

/// One shutdown per pool: claims the release of `mp` for a new token, or
/// refuses when a shutdown (maybe in another process) already has.
pub(super) fn claim_release(
    mp: *mut sys::rte_mempool,
    z: &zone::Zone<'_>,
) -> Result<u64, GlueError> {
    let token = new_token();
    // AcqRel: pairs with the loads in `ops->free` and the deferred release,
    // and orders this claim before the drain.
    if z.header
        .release_token
        .compare_exchange(0, token, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        let e = GlueError::AlreadyShuttingDown {
            pool: pool_name(mp),
            state: z.core.state(),
        };
        log!(Level::Err, "shutdown: {e}");
        return Err(e);
    }
    Ok(token)
}

/// Called by `ops->free` (under the release lock): the pool is going, so a
/// deferred release armed for it must never run. Returns the token whose
/// alarm to cancel once the lock is dropped.
pub(crate) fn forget_deferred_release(lock: &mut ReleaseLock, z: &zone::Zone<'_>) -> Option<u64> {
    // Acquire pairs with the AcqRel exchange in `claim_release`.
    let token = z.header.release_token.load(Ordering::Acquire);
    if token == 0 {
        return None;
    }
    if let Some(p) = lock.pending() {
        p.by_token.remove(&token);
    }
    // (Re-entrant: the deferred release itself is freeing the pool and has
    // already forgotten it.)
    Some(token)
}

// -------------------------------------------------------- deferred release

/// The deferred release's period: the core's retry period, in µs.
pub(super) fn retry_us(z: &zone::Zone<'_>) -> u64 {
    (z.core.retry_period_ns() / 1000).max(1)
}

/// Hands the release of `mp`, claimed with `token`, to an alarm that polls
/// the pool every `retry_us`.
pub(super) fn defer_release(
    token: u64,
    mp: *mut sys::rte_mempool,
    retry_us: u64,
) -> Result<(), GlueError> {
    if let Some(p) = release_lock().pending() {
        p.by_token.insert(token, mp as usize);
    }
    // From here on the alarm may free the pool at any time.
    if let Err(e) = arm(token, retry_us) {
        if let Some(p) = release_lock().pending() {
            p.by_token.remove(&token);
        }
        return Err(e);
    }
    Ok(())
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

/// The deferred release: one poll of the core's state machine per alarm.
/// `arg` is the token of the shutdown that armed it; a pool freed meanwhile
/// (`ops->free` forgets its token) or another pool at the same address is
/// never touched.
unsafe extern "C" fn deferred_release(arg: *mut c_void) {
    let token = arg as usize as u64;
    ffi::guard_void("the deferred release", || {
        let mut lock = release_lock();
        let Some(pending) = lock.pending() else {
            // Only reachable if an alarm ran nested in a release: never
            // act without the lock.
            return;
        };
        let Some((mp, z)) = armed_pool(pending, token) else {
            return;
        };
        let retry_us = retry_us(&z);
        let mut backend = RteDevDma;
        let outcome = z.core.poll(now_ns(), &mut PoolDmaMapper::new(&mut backend));
        if !still_draining(&outcome) {
            // Released, or in a state that is not this release's to act on.
            pending.by_token.remove(&token);
        }
        after_poll(mp, token, retry_us, outcome);
    });
}

/// The pool the alarm of `token` was armed for, while it still is that
/// pool; otherwise forgets the token.
fn armed_pool<'a>(
    pending: &mut Pending,
    token: u64,
) -> Option<(*mut sys::rte_mempool, zone::Zone<'a>)> {
    let Some(&mp) = pending.by_token.get(&token) else {
        log!(
            Level::Debug,
            "deferred release {token:#x}: its pool was already freed; nothing to do"
        );
        return None;
    };
    let mp = mp as *mut sys::rte_mempool;
    // SAFETY: a pool in the registry is alive: `ops->free` removes it
    // under the lock our caller holds.
    let z = match unsafe { zone::attach(mp) } {
        Ok(z) => z,
        Err(e) => {
            pending.by_token.remove(&token);
            log!(Level::Err, "deferred release {token:#x}: {e}");
            return None;
        }
    };
    // Acquire pairs with the exchange in `claim_release`.
    if z.header.release_token.load(Ordering::Acquire) != token {
        pending.by_token.remove(&token);
        log!(
            Level::Err,
            "deferred release {token:#x}: pool {} is not the pool this release was armed \
             for; left alone",
            pool_name(mp)
        );
        return None;
    }
    Some((mp, z))
}

/// Whether a poll leaves the pool draining, for the alarm to poll again.
fn still_draining(outcome: &PollOutcome) -> bool {
    matches!(
        outcome,
        PollOutcome::Busy | PollOutcome::Waiting { .. } | PollOutcome::Warn { .. }
    )
}

/// Acts on one poll of a deferred release (the caller holds the release
/// lock and has forgotten the token unless the pool is still draining):
/// frees a released pool, re-arms for a draining one.
fn after_poll(mp: *mut sys::rte_mempool, token: u64, retry_us: u64, outcome: PollOutcome) {
    match outcome {
        PollOutcome::Released { waited_ns, .. } => {
            log!(
                Level::Notice,
                "pool {}: last buffer back after {} ms of deferred release: freeing it",
                pool_name(mp),
                waited_ns / 1_000_000
            );
            // SAFETY: released: nothing is out; this alarm owns the pool.
            // `ops->free` runs inside, on this thread, under the lock our
            // caller holds (re-entrant).
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
            rearm(mp, token, retry_us);
        }
        PollOutcome::Busy | PollOutcome::Waiting { .. } => {
            log!(
                Level::Debug,
                "pool {}: deferred release: {outcome:?}",
                pool_name(mp)
            );
            rearm(mp, token, retry_us);
        }
        other @ (PollOutcome::AlreadyReleased | PollOutcome::NotDraining) => log!(
            Level::Err,
            "deferred release: pool {} found {other:?}; left alone",
            pool_name(mp)
        ),
    }
}

fn rearm(mp: *mut sys::rte_mempool, token: u64, retry_us: u64) {
    if let Err(e) = arm(token, retry_us) {
        log!(
            Level::Err,
            "deferred release: pool {}: cannot re-arm the release alarm: {e}",
            pool_name(mp)
        );
    }
}
