//! Atomics shim: std atomics normally, loom's under `--cfg loom` so the ring
//! and cache protocols can be model-checked with the very code that ships;
//! and the spinlock every shared-memory structure of the pool uses.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::owner::{self, Liveness, LockKind, Repair, Takeover};

/// Called in every spin loop. Under loom it yields so the model explores the
/// other threads instead of spinning forever.
#[inline(always)]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}

/// Lock word of a lock whose repair failed: never an owner id
/// ([`owner::OwnerId`] excludes it), so no CAS from 0 or from a dead owner
/// ever succeeds on it again.
pub(crate) const POISONED: u32 = u32::MAX;

/// Spins a waiter makes before it asks whether the holder is alive, and
/// between two asks: about a millisecond of `pause`, far longer than any
/// critical section of the pool, short against the second within which a
/// dead holder's lock is taken over. Under loom every spin asks.
#[cfg(not(loom))]
pub(crate) const SPINS_PER_CHECK: u32 = 1 << 14;
#[cfg(loom)]
pub(crate) const SPINS_PER_CHECK: u32 = 1;

/// What [`SpinLock::check_holder`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// Keep waiting.
    Wait,
    /// The holder was dead: the caller now holds the lock (repaired).
    Held,
    /// The lock is poisoned.
    Poisoned,
}

/// The lock was poisoned: a waiter took it over from a dead holder and
/// could not repair what that holder left. The structure it guards refuses
/// every operation from then on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Poisoned;

/// Test-and-test-and-set spinlock that lives in shared memory: one `u32`, no
/// process-local state, valid when zero-initialised. The word is 0 when
/// free and the holder's owner id ([`owner::process_owner`]) when held, set
/// by the same single CAS that took it, so the fast path costs what a 0/1
/// lock does. A waiter that has spun long asks whether the holder is alive
/// and, if it is not, takes the lock over (see [`SpinLock::lock_repairing`]).
#[repr(C)]
pub(crate) struct SpinLock {
    owner: AtomicU32,
}

impl SpinLock {
    pub(crate) fn new() -> Self {
        SpinLock {
            owner: AtomicU32::new(0),
        }
    }

    /// Takes the lock. A dead holder's lock is taken over with nothing to
    /// repair (the structure's writes under it are each complete or never
    /// published); `kind` names the lock in the report.
    #[inline(always)]
    pub(crate) fn lock_as(&self, kind: LockKind) -> SpinGuard<'_> {
        match self.lock_repairing(kind, || Repair::Nothing) {
            Ok(g) => g,
            // `|| Repair::Nothing` never poisons; a lock another
            // structure's repair poisoned is not shared with this one.
            Err(Poisoned) => unreachable!("a lock without repair was poisoned"),
        }
    }

    /// [`lock_as`](SpinLock::lock_as) for a lock the report names only by
    /// its address.
    #[inline(always)]
    pub(crate) fn lock(&self) -> SpinGuard<'_> {
        self.lock_as(LockKind::Other)
    }

    /// Takes the lock; when it takes it over from a dead holder, runs
    /// `repair` under it first, which puts the guarded structure back in a
    /// state its operations accept (or says it cannot: the lock is then
    /// poisoned and this and every later call fail).
    ///
    /// Uncontended: one CAS, as before owner ids. Contended: loads (no
    /// RMW) until the word reads 0, out of line. The ring's sides, whose
    /// callers must stay leaf functions, spin inline instead (`repair.rs`)
    /// on [`try_take`](SpinLock::try_take) and
    /// [`check_holder`](SpinLock::check_holder).
    #[inline(always)]
    pub(crate) fn lock_repairing(
        &self,
        kind: LockKind,
        repair: impl FnOnce() -> Repair,
    ) -> Result<SpinGuard<'_>, Poisoned> {
        let me = owner::process_owner();
        if !self.try_take(me) {
            self.wait(me, kind, repair)?;
        }
        Ok(SpinGuard { lock: self })
    }

    /// One CAS from free to `me`. Acquire pairs with the Release store in
    /// `SpinGuard::drop` (the previous holder's writes are visible inside
    /// our critical section); a failed CAS reads nothing we act on.
    #[inline(always)]
    pub(crate) fn try_take(&self, me: u32) -> bool {
        self.owner
            .compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// The word as it is: 0 free, [`POISONED`], or the holder's id.
    /// Relaxed: only a hint to retry; the CASes do the synchronising.
    #[inline(always)]
    pub(crate) fn holder(&self) -> u32 {
        self.owner.load(Ordering::Relaxed)
    }

    /// The guard of a lock the caller took with [`try_take`](SpinLock::try_take)
    /// or [`check_holder`](SpinLock::check_holder).
    #[inline(always)]
    pub(crate) fn guard(&self) -> SpinGuard<'_> {
        SpinGuard { lock: self }
    }

    /// The contended path of [`lock_repairing`](SpinLock::lock_repairing):
    /// returns holding the lock, or `Poisoned`.
    #[cold]
    #[inline(never)]
    fn wait(
        &self,
        me: u32,
        kind: LockKind,
        repair: impl FnOnce() -> Repair,
    ) -> Result<(), Poisoned> {
        let mut spins = 0u32;
        let mut repair = Some(repair);
        loop {
            let held = self.holder();
            if held == 0 {
                if self.try_take(me) {
                    return Ok(());
                }
                continue;
            }
            spins += 1;
            if spins >= SPINS_PER_CHECK || held == POISONED {
                spins = 0;
                match self.check_holder(me, kind, &mut repair) {
                    Check::Wait => {}
                    Check::Held => return Ok(()),
                    Check::Poisoned => return Err(Poisoned),
                }
            }
            spin_hint();
        }
    }

    /// What a waiter that has spun long does: asks whether the holder is
    /// alive and, if it is dead, takes the lock over, runs `repair` (taken
    /// out of the option) and reports. `Wait` while the holder lives, the
    /// liveness is unknown, or another waiter won the takeover. Our own id
    /// is alive by definition (another thread of this process holds it).
    #[cold]
    #[inline(never)]
    pub(crate) fn check_holder(
        &self,
        me: u32,
        kind: LockKind,
        repair: &mut Option<impl FnOnce() -> Repair>,
    ) -> Check {
        let dead = self.holder();
        if dead == POISONED {
            return Check::Poisoned;
        }
        if dead == 0 || dead == me || owner::liveness(dead) != Liveness::Dead {
            return Check::Wait;
        }
        // Acquire pairs with the dead holder's CAS that took the lock
        // (Acquire/Release chains through every earlier holder). What it
        // wrote afterwards is complete before the liveness check said
        // "dead" (the kernel has torn the process down), which the repair
        // relies on; loom models that with a Release/Acquire pair in the
        // death report. Ids never repeat, so a word still reading `dead`
        // is still held by `dead`: losing the CAS means another waiter
        // took it over first.
        if self
            .owner
            .compare_exchange(dead, me, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return Check::Wait;
        }
        let repair = repair.take().map_or(Repair::Nothing, |r| r());
        let poisoned = matches!(repair, Repair::Impossible(_));
        owner::report(&Takeover {
            lock: kind,
            at: self as *const SpinLock as usize,
            dead,
            repair,
        });
        if poisoned {
            // Release: whoever reads POISONED refuses the structure without
            // reading it; ordering our repair attempt before it is harmless.
            self.owner.store(POISONED, Ordering::Release);
            return Check::Poisoned;
        }
        Check::Held
    }

    /// The lock word itself, for tests that emulate a holder.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn owner_word(&self) -> &AtomicU32 {
        &self.owner
    }

    /// Whether the lock was poisoned (lockless; for error paths and tests).
    pub(crate) fn is_poisoned(&self) -> bool {
        // Relaxed: a plain snapshot of the word.
        self.owner.load(Ordering::Relaxed) == POISONED
    }
}

/// The pool's owner-tracked spinlock for a structure outside the pool that
/// processes share (the handler's table of DMA mappings): one `u32`, valid
/// when zeroed, so it can live in a memzone. A holder that dies inside is
/// taken over as the pool's own locks are (asked about after about a
/// millisecond of spinning, reported through [`owner::set_report`]), with
/// nothing to repair: the user keeps every write under it complete or
/// invisible, so whatever a dead holder left is a state its operations
/// accept.
#[repr(transparent)]
pub struct SharedLock {
    lock: SpinLock,
}

/// A held [`SharedLock`]; dropping it lets the lock go.
pub struct SharedGuard<'a> {
    _guard: SpinGuard<'a>,
}

impl SharedLock {
    /// A free lock (the same as zeroed memory).
    pub fn new() -> Self {
        SharedLock {
            lock: SpinLock::new(),
        }
    }

    /// Takes the lock, taking it over from a dead holder (reported with
    /// [`LockKind::Named`]`(name)`).
    pub fn lock(&self, name: &'static str) -> SharedGuard<'_> {
        SharedGuard {
            _guard: self.lock.lock_as(LockKind::Named(name)),
        }
    }

    /// The lock word: 0 when free, else the holder's owner id.
    pub fn holder(&self) -> u32 {
        self.lock.holder()
    }

    /// Sets the lock word to `id` without taking the lock (0: free), for
    /// tests that emulate a holder, live or dead. Not for anything else:
    /// it overrides whoever holds the lock.
    #[doc(hidden)]
    pub fn set_holder_for_tests(&self, id: u32) {
        // Release: a test's later taker sees what came before.
        self.lock.owner.store(id, Ordering::Release);
    }
}

impl Default for SharedLock {
    fn default() -> Self {
        SharedLock::new()
    }
}

pub(crate) struct SpinGuard<'a> {
    lock: &'a SpinLock,
}

impl Drop for SpinGuard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        // A model thread that died at a crash point keeps its locks.
        #[cfg(loom)]
        if crate::crash::dying() {
            return;
        }
        // Release pairs with the Acquire CASes in `try_take` and
        // `check_holder`.
        self.lock.owner.store(0, Ordering::Release);
    }
}
