//! Who may free a pool, and when: the release lock, the release word a
//! shutdown claims, and the deferred release, an EAL alarm that polls a
//! draining pool and frees it once the last buffer is back.
//!
//! **One freer.** Whoever frees a pool (the shutdown that found every buffer
//! back, its deferred release, the application in any process) is decided
//! by two things every process sees:
//!
//! * DPDK's mempool list. `rte_mempool_free` unlinks the pool, under the
//!   tailq lock, before it frees anything; the handler reads a pool it did
//!   not just receive from DPDK only inside
//!   [`dpdk_sys::mempool_list::with_listed`], which holds that lock's read
//!   side, so no free of that pool can have begun or begin meanwhile;
//! * the release word in the zone ([`ZoneHeader::release_token`]): 0, then
//!   the token of the one shutdown that claimed the release, then that word
//!   with [`FREEING`] set by the one party that frees. The handler sets
//!   [`FREEING`] (by compare-exchange from its own token, inside
//!   `with_listed`) before it calls `rte_mempool_free`; the application
//!   sets it with [`BY_APP`] through [`cancel_release`], or `ops->free`
//!   does when the application called `rte_mempool_free` directly.
//!
//! So an application free that begins before the alarm looks is seen by
//! the alarm as "not listed" and left alone, and [`cancel_release`] and the
//! alarm cannot both win the word. What no handler can prevent is an
//! application calling `rte_mempool_free` after the handler's release took
//! the pool (after [`FREEING`] was set): that is a double free of the
//! application's making, which `ops->free` reports if it gets that far.
//!
//! [`ZoneHeader::release_token`]: crate::zone::ZoneHeader::release_token

use core::ffi::c_void;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};

use dpdk_sys as sys;
use mempool::PollOutcome;

use super::dma::{PoolDmaMapper, RteDevDma};
use super::{now_ns, still_out};
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
    /// The pool this thread is freeing on the handler's behalf (0: none),
    /// for `ops->free` to tell the handler's own free from an
    /// application's.
    static HANDLER_FREES: Cell<usize> = const { Cell::new(0) };
}

/// Set by [`cleanup`]: no deferred release runs or is armed any more.
static CLEANED_UP: AtomicBool = AtomicBool::new(false);

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

// ------------------------------------------------------------ release word

/// Set in the release word by the one party that frees the pool.
pub(crate) const FREEING: u64 = 1 << 63;
/// Set with [`FREEING`] when that party is the application.
pub(crate) const BY_APP: u64 = 1 << 62;
/// The token part of the release word.
const TOKEN: u64 = !(FREEING | BY_APP);

/// A token no other shutdown in any process has: process id (below 2^22 on
/// Linux, so clear of [`FREEING`] and [`BY_APP`]) and a sequence.
fn new_token() -> u64 {
    static SEQ: AtomicU32 = AtomicU32::new(1);
    // Relaxed: uniqueness only.
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    // SAFETY: plain query.
    let pid = unsafe { libc::getpid() } as u32;
    ((u64::from(pid) << 32) & TOKEN) | u64::from(seq)
}

/// The process that made token `v`.
fn token_pid(v: u64) -> i32 {
    ((v & TOKEN) >> 32) as i32
}

/// Whether process `pid` exists (in this PID namespace, which DPDK's
/// multi-process support shares). A reused PID reads as alive: the safe
/// side, a release is then refused rather than taken twice.
fn process_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence and permission.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// One shutdown per pool: claims the release of `mp` for a new token, or
/// refuses when a shutdown (maybe in another process) already has. A claim
/// whose process has exited (it died, or exited without [`cleanup`]) is
/// taken over, with a warning, unless that process had begun freeing.
pub(super) fn claim_release(
    mp: *mut sys::rte_mempool,
    z: &zone::Zone<'_>,
) -> Result<u64, GlueError> {
    let token = new_token();
    let word = &z.header.release_token;
    // AcqRel: pairs with the loads and exchanges of the other parties
    // (`ops->free`, the deferred release, `cancel_release`), and orders this
    // claim before the drain.
    let held = match word.compare_exchange(0, token, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => return Ok(token),
        Err(v) => v,
    };
    let owner = token_pid(held);
    if held & FREEING == 0
        && !process_alive(owner)
        && word
            .compare_exchange(held, token, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    {
        log!(
            Level::Warning,
            "shutdown: pool {}: its release was claimed by process {owner}, which has exited \
             without finishing it: taking it over",
            pool_name(mp)
        );
        return Ok(token);
    }
    let e = GlueError::AlreadyShuttingDown {
        pool: pool_name(mp),
        state: z.core.state(),
    };
    log!(Level::Err, "shutdown: {e}");
    Err(e)
}

/// Gives back the release claimed with `token` (the shutdown failed before
/// anything was deferred, or [`cleanup`] abandons it), so that a later
/// shutdown can claim it.
pub(super) fn give_back_release(z: &zone::Zone<'_>, token: u64) {
    // AcqRel: as in `claim_release`. Fails only if the word moved on
    // (someone took the free), which then stands.
    let _ = z
        .header
        .release_token
        .compare_exchange(token, 0, Ordering::AcqRel, Ordering::Acquire);
}

/// The handler's claim to free `mp`, whose release it holds with `token`:
/// false when the application took the free first ([`cancel_release`]).
pub(super) fn claim_free(z: &zone::Zone<'_>, token: u64) -> bool {
    // AcqRel: as in `claim_release`; the winner of this word is the one
    // freer.
    z.header
        .release_token
        .compare_exchange(token, token | FREEING, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
}

/// Frees `mp` on the handler's behalf (it won [`claim_free`]).
///
/// # Safety
/// The caller won [`claim_free`] for `mp`, and nothing of this thread uses
/// `mp` afterwards.
pub(super) unsafe fn free_as_handler(mp: *mut sys::rte_mempool) {
    HANDLER_FREES.with(|h| h.set(mp as usize));
    // SAFETY: the caller's contract; `ops->free` runs inside, on this
    // thread, and sees HANDLER_FREES.
    unsafe { sys::rte_mempool_free(mp) };
    HANDLER_FREES.with(|h| h.set(0));
}

/// Called by `ops->free` (under the release lock): marks the free in the
/// release word, reports a free that races the handler's own, and forgets a
/// deferred release still armed for the pool. Returns the token whose alarm
/// to cancel once the lock is dropped.
pub(crate) fn note_free(
    lock: &mut ReleaseLock,
    mp: *const sys::rte_mempool,
    z: &zone::Zone<'_>,
) -> Option<u64> {
    let word = &z.header.release_token;
    // Acquire pairs with the AcqRel exchanges of the other parties.
    let mut v = word.load(Ordering::Acquire);
    while v & FREEING == 0 {
        // The application called rte_mempool_free itself: its free wins
        // every later claim (AcqRel as above).
        match word.compare_exchange(v, v | FREEING | BY_APP, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => break,
            Err(now) => v = now,
        }
    }
    let handler_frees = HANDLER_FREES.with(Cell::get) == mp as usize;
    if v & FREEING != 0 && v & BY_APP == 0 && !handler_frees {
        log!(
            Level::Err,
            "pool {}: rte_mempool_free called while the handler's release was freeing it: a \
             double free by the application (after ptr_ring_port_shutdown the pool is the \
             handler's to free; take it back with ptr_ring_release_cancel first)",
            pool_name(mp)
        );
    }
    let token = v & TOKEN;
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

/// Takes the free of `mp` back from the handler: afterwards no release of
/// the handler frees it, and the caller must free it (`rte_mempool_free`).
/// Also for a pool with no shutdown (nothing to cancel): it is the caller's
/// to free either way. Fails, having touched nothing, when `mp` is not on
/// DPDK's mempool list ([`GlueError::PoolGone`]: freed, by the release or
/// anyone, or being freed) or when the handler's release is freeing it
/// ([`GlueError::ReleaseInProgress`]); the caller must then not free it.
/// Safe to call with a pointer to a pool that is gone: it is only compared
/// with the listed pools.
// `mp` is only compared with the listed pools until it is found.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn cancel_release(mp: *mut sys::rte_mempool) -> Result<(), GlueError> {
    let mut lock = release_lock();
    let taken = dpdk_sys::mempool_list::with_listed(mp, |mp| {
        // SAFETY: listed, so alive while this closure runs.
        let z = unsafe { zone::ours(mp) }?;
        let word = &z.header.release_token;
        // Acquire/AcqRel: as in `claim_release`.
        let mut v = word.load(Ordering::Acquire);
        loop {
            if v & FREEING != 0 {
                return Err(GlueError::ReleaseInProgress {
                    pool: pool_name(mp),
                });
            }
            match word.compare_exchange(
                v,
                v | FREEING | BY_APP,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => break,
                Err(now) => v = now,
            }
        }
        let token = v & TOKEN;
        if token != 0 {
            log!(
                Level::Notice,
                "pool {}: release cancelled by the application, which frees the pool ({} \
                 buffers out)",
                pool_name(mp),
                z.core.inflight()
            );
        }
        Ok(token)
    })
    .unwrap_or(Err(GlueError::PoolGone { addr: mp as usize }))?;
    if taken != 0 {
        if let Some(p) = lock.pending() {
            p.by_token.remove(&taken);
        }
        drop(lock);
        cancel_deferred_release(taken);
    }
    Ok(())
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
    if CLEANED_UP.load(Ordering::Acquire) {
        return Err(GlueError::Dpdk {
            call: "ptr_ring deferred release (after ptr_ring_cleanup)",
            errno: -libc::ESHUTDOWN,
        });
    }
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
/// the alarm itself, EAL leaves it to finish; from another thread, waits
/// for a run in progress).
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

/// What one run of the deferred release found, decided while the pool was
/// listed.
enum Step {
    /// Not the pool this release is for any more: forget the token.
    Forget,
    /// Still draining: poll again.
    Again {
        name: String,
        outcome: PollOutcome,
        retry_us: u64,
    },
    /// Released, and the free is this alarm's.
    Free { name: String, waited_ns: u64 },
}

/// Test hook: runs the deferred release of every pending token on the
/// calling thread now, as if its alarm fired at this instant (the alarms
/// stay armed). Lets a test put an alarm at an exact point of another call.
#[doc(hidden)]
pub fn run_deferred_releases_now() {
    let tokens: Vec<u64> = release_lock()
        .pending()
        .map(|p| p.by_token.keys().copied().collect())
        .unwrap_or_default();
    for t in tokens {
        // SAFETY: the alarm callback with the argument it is armed with.
        unsafe { deferred_release(t as usize as *mut c_void) };
    }
}

/// The deferred release: one poll of the core's state machine per alarm.
/// `arg` is the token of the shutdown that armed it. The pool is read only
/// while it is on DPDK's mempool list, and only if its release word still
/// holds that token, so a pool being freed by anyone, in any process, or
/// another pool at the same address, is never touched.
unsafe extern "C" fn deferred_release(arg: *mut c_void) {
    let token = arg as usize as u64;
    ffi::guard_void("the deferred release", || {
        let mut lock = release_lock();
        let Some(pending) = lock.pending() else {
            // Only reachable if an alarm ran nested in a release: never
            // act without the lock.
            return;
        };
        if CLEANED_UP.load(Ordering::Acquire) {
            pending.by_token.remove(&token);
            return;
        }
        let Some(&mp) = pending.by_token.get(&token) else {
            log!(
                Level::Debug,
                "deferred release {token:#x}: its pool was already freed; nothing to do"
            );
            return;
        };
        let mp = mp as *mut sys::rte_mempool;
        let step = dpdk_sys::mempool_list::with_listed(mp, |mp| poll_listed(mp, token))
            .unwrap_or_else(|| {
                log!(
                    Level::Info,
                    "deferred release {token:#x}: its pool is no longer on DPDK's mempool list \
                     (freed by the application or another process): release cancelled"
                );
                Step::Forget
            });
        match step {
            Step::Forget => {
                pending.by_token.remove(&token);
            }
            Step::Again {
                name,
                outcome,
                retry_us,
            } => {
                report_draining(&name, &outcome);
                rearm(&name, token, retry_us);
            }
            Step::Free { name, waited_ns } => {
                pending.by_token.remove(&token);
                log!(
                    Level::Notice,
                    "pool {name}: last buffer back after {} ms of deferred release: freeing it",
                    waited_ns / 1_000_000
                );
                // SAFETY: released and claimed (`claim_free`): this alarm is
                // the one freer; `ops->free` runs inside, on this thread,
                // under the lock held here (re-entrant).
                unsafe { free_as_handler(mp) };
            }
        }
    });
}

/// The deferred release's look at pool `mp`, listed (the tailq lock is
/// held): whether it is still the pool of `token`, and one poll.
fn poll_listed(mp: *mut sys::rte_mempool, token: u64) -> Step {
    // SAFETY: listed, so alive while the caller's lock is held.
    let z = match unsafe { zone::attach(mp) } {
        Ok(z) => z,
        Err(e) => {
            log!(Level::Err, "deferred release {token:#x}: {e}");
            return Step::Forget;
        }
    };
    // Acquire pairs with the exchanges of the other parties.
    let word = z.header.release_token.load(Ordering::Acquire);
    if word != token {
        let why = if word & TOKEN == token && word & BY_APP != 0 {
            "the application took its free"
        } else {
            "it is not the pool this release was armed for"
        };
        log!(
            Level::Info,
            "deferred release {token:#x}: pool {}: {why}; left alone",
            pool_name(mp)
        );
        return Step::Forget;
    }
    let name = pool_name(mp);
    let mut backend = RteDevDma;
    let outcome = z.core.poll(now_ns(), &mut PoolDmaMapper::new(&mut backend));
    match outcome {
        PollOutcome::Released { waited_ns, .. } if claim_free(&z, token) => {
            Step::Free { name, waited_ns }
        }
        PollOutcome::Released { .. } => {
            log!(
                Level::Info,
                "pool {name}: released, but the application took its free; left to it"
            );
            Step::Forget
        }
        PollOutcome::Busy | PollOutcome::Waiting { .. } | PollOutcome::Warn { .. } => Step::Again {
            name,
            outcome,
            retry_us: retry_us(&z),
        },
        other @ (PollOutcome::AlreadyReleased | PollOutcome::NotDraining) => {
            log!(
                Level::Err,
                "deferred release: pool {name} found {other:?}; left alone"
            );
            Step::Forget
        }
    }
}

/// The log line of a poll that leaves the pool draining.
fn report_draining(name: &str, outcome: &PollOutcome) {
    match outcome {
        PollOutcome::Warn {
            inflight,
            unfilled,
            waited_ns,
            ..
        } => log!(
            Level::Warning,
            "stalled pool shutdown: pool {name} after {} s: {}",
            waited_ns / 1_000_000_000,
            still_out(*inflight, *unfilled)
        ),
        _ => log!(Level::Debug, "pool {name}: deferred release: {outcome:?}"),
    }
}

fn rearm(name: &str, token: u64, retry_us: u64) {
    if let Err(e) = arm(token, retry_us) {
        log!(
            Level::Err,
            "deferred release: pool {name}: cannot re-arm the release alarm: {e}"
        );
    }
}

// ------------------------------------------------------------------- exit

/// Ends this process's deferred releases before EAL goes away: call it
/// before `rte_eal_cleanup` (whose memory detach would leave an armed
/// alarm reading unmapped memory; DPDK offers a plugin no hook there). Each
/// alarm is cancelled (a run in progress finishes first); each pool whose
/// release was still waiting is reported with its inflight count and
/// given back, so that another process can shut it down again. No release
/// is deferred afterwards. Returns how many releases were abandoned.
pub fn cleanup() -> usize {
    CLEANED_UP.store(true, Ordering::Release);
    let tokens: Vec<(u64, usize)> = release_lock()
        .pending()
        .map(|p| p.by_token.iter().map(|(&t, &mp)| (t, mp)).collect())
        .unwrap_or_default();
    for &(t, _) in &tokens {
        cancel_deferred_release(t);
    }
    let mut lock = release_lock();
    let mut abandoned = 0;
    for (token, mp) in tokens {
        let still = lock
            .pending()
            .is_some_and(|p| p.by_token.remove(&token).is_some());
        if !still {
            continue;
        }
        let mp = mp as *mut sys::rte_mempool;
        let found = dpdk_sys::mempool_list::with_listed(mp, |mp| {
            // SAFETY: listed, so alive while the lock is held.
            let Ok(z) = (unsafe { zone::attach(mp) }) else {
                return false;
            };
            // Acquire: as in `poll_listed`.
            if z.header.release_token.load(Ordering::Acquire) != token {
                return false;
            }
            log!(
                Level::Warning,
                "pool {}: {} buffers still out at cleanup: its deferred release is abandoned \
                 and the pool is not freed (another process may shut it down again)",
                pool_name(mp),
                z.core.inflight()
            );
            give_back_release(&z, token);
            true
        });
        abandoned += usize::from(found == Some(true));
    }
    abandoned
}
