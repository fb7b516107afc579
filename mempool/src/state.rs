//! The shutdown state machine, after page_pool's deferred release.
//!
//! ```text
//!   Active ──begin_drain──▶ Draining ──poll: inflight == 0──▶ Released
//! ```
//!
//! * **Draining**: the caches are closed (every put goes to the ring) and
//!   flushed; gets are refused on every path that can see the state; returns
//!   are accepted, late returns being normal. The pool is released only when
//!   inflight reaches zero, by exactly one `poll` (a state CAS).
//! * **Released**: terminal. The caller that got [`PollOutcome::Released`]
//!   frees the memory. A put that still reaches the pool is a caller bug: it
//!   is refused and counted (`AfterRelease`) as long as the memory exists.
//!
//! Time is the caller's: every call takes `now` in nanoseconds from any
//! monotonic clock (tests pass a fake one). The retry period (default 1 s)
//! tells the caller when to poll again; the warn period (default 60 s) spaces
//! out the "stalled shutdown" warnings, like the kernel's.

use core::fmt;

use crate::error::PoolError;
use crate::sync::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Default delay between two polls while draining (the kernel's 1 s).
pub const DEFAULT_RETRY_PERIOD_NS: u64 = 1_000_000_000;
/// Default delay between two "stalled shutdown" warnings (the kernel's 60 s).
pub const DEFAULT_WARN_PERIOD_NS: u64 = 60_000_000_000;

/// Where the pool is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum PoolState {
    /// Serving gets and puts.
    Active = 0,
    /// Shutting down, waiting for inflight objects.
    Draining = 1,
    // 2 is not a state: the C API's `PTR_RING_STATE_*` values keep it
    // reserved, so `Released` stays 3.
    /// Released; terminal.
    Released = 3,
}

impl PoolState {
    fn from_raw(v: u32) -> PoolState {
        match v {
            0 => PoolState::Active,
            1 => PoolState::Draining,
            // 3, and any word that is no state (2 included): refuses every
            // get and put.
            _ => PoolState::Released,
        }
    }

    /// Whether a pool in this state hands objects out: only while active
    /// (page_pool's rule: gets stop first).
    #[inline(always)]
    pub fn serves_gets(self) -> bool {
        self == PoolState::Active
    }

    /// Whether a pool in this state takes objects back: until it is
    /// released (late returns of a draining pool are what it waits for).
    #[inline(always)]
    pub fn takes_puts(self) -> bool {
        self != PoolState::Released
    }
}

impl fmt::Display for PoolState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PoolState::Active => "active",
            PoolState::Draining => "draining",
            PoolState::Released => "released",
        })
    }
}

/// What a [`poll`](crate::PoolCore::poll) tells its caller to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PollOutcome {
    /// This call released the pool: free its memory now. Returned by exactly
    /// one call in the pool's life. `dma` is the result of the final unmap
    /// of still-attached devices (count of unmaps, or the first failure).
    Released {
        /// Nanoseconds since draining began.
        waited_ns: u64,
        /// The final unmap.
        dma: Result<usize, PoolError>,
    },
    /// Objects are still out, or a put is still storing its objects: poll
    /// again in `retry_in_ns`.
    Waiting {
        /// Objects out with the application.
        inflight: i64,
        /// No object is out (`inflight` 0), but a put that counted its
        /// objects home has not yet stored them all in their slots: a
        /// single-producer pool without the handler cache, whose put is in
        /// progress, or whose putting thread died in it (those objects are
        /// then lost, and the pool is never released).
        unfilled: bool,
        /// When to poll again (the retry period).
        retry_in_ns: u64,
    },
    /// Objects are still out and it is time to warn ("stalled pool shutdown,
    /// N inflight, waited T"); poll again in `retry_in_ns`.
    Warn {
        /// Objects out with the application.
        inflight: i64,
        /// As in [`Waiting`](PollOutcome::Waiting).
        unfilled: bool,
        /// Nanoseconds since draining began.
        waited_ns: u64,
        /// When to poll again (the retry period).
        retry_in_ns: u64,
    },
    /// An earlier call (maybe in another process) released the pool.
    AlreadyReleased,
    /// Another driver call (`begin_drain`, `drain_quiescent`, `poll`) is
    /// in progress, maybe in another process: this one did
    /// nothing. Shutdown has one driver at a time; poll again later.
    Busy,
    /// The pool is active: nothing to poll.
    NotDraining,
}

/// Shutdown counters, for statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ShutdownStats {
    /// Polls that found objects still out.
    pub waits: u64,
    /// Warnings handed out.
    pub warnings: u64,
    /// Times the pool was released (0 or 1, by construction).
    pub releases: u32,
}

/// Index of the cache-off get path's bound in `Shutdown::direct_bound`.
pub(crate) const GET_BOUND: usize = 0;
/// Index of the cache-off put path's bound.
pub(crate) const PUT_BOUND: usize = 1;

/// The state machine's shared state, in the pool header.
#[repr(C)]
pub(crate) struct Shutdown {
    state: AtomicU32,
    releases: AtomicU32,
    /// The lcore ids below which the cache-off fast paths may get (put):
    /// the pool's `fast_lcores` while its state
    /// [`serves_gets`](PoolState::serves_gets)
    /// ([`takes_puts`](PoolState::takes_puts)), 0 from then on, set to 0
    /// before the state changes. One bound check on those paths stands for
    /// the caller's cache slot, validation mode and the state together; a
    /// direct pool, which needs no slot, tests it for 0 alone
    /// (`PoolCore::direct_gate`).
    direct_bounds: [AtomicUsize; 2],
    /// When draining began (ns, caller's clock).
    drain_start: AtomicU64,
    /// When the next warning is due.
    next_warn: AtomicU64,
    waits: AtomicU64,
    warnings: AtomicU64,
    /// The driver token: 0 free, else the owner id of the process whose
    /// driver call is in progress.
    /// The call that releases the pool never gives it back, so no driver
    /// call gets past it once the memory may be freed.
    driver: AtomicU32,
    retry_period: u64,
    warn_period: u64,
    /// Models the block's lifetime for loom: set when the test's owner
    /// frees the pool; every touch of the shutdown paths reads it, so loom
    /// reports a touch that is not ordered before the free.
    #[cfg(loom)]
    freed: loom::cell::UnsafeCell<bool>,
}

impl Shutdown {
    pub(crate) fn new(retry_period: u64, warn_period: u64, fast_lcores: usize) -> Shutdown {
        Shutdown {
            state: AtomicU32::new(PoolState::Active as u32),
            releases: AtomicU32::new(0),
            direct_bounds: [AtomicUsize::new(fast_lcores), AtomicUsize::new(fast_lcores)],
            drain_start: AtomicU64::new(0),
            next_warn: AtomicU64::new(0),
            waits: AtomicU64::new(0),
            warnings: AtomicU64::new(0),
            driver: AtomicU32::new(0),
            retry_period,
            warn_period,
            #[cfg(loom)]
            freed: loom::cell::UnsafeCell::new(false),
        }
    }

    /// Takes the driver token, holding this process's owner id in it;
    /// `false` if another driver call holds it (or the pool was released).
    /// A token whose holder died inside a driver call is taken over (see
    /// [`take_over_driver`](Self::take_over_driver)).
    #[inline]
    pub(crate) fn claim_driver(&self) -> bool {
        let me = crate::owner::process_owner();
        // Acquire pairs with the Release store in `release_driver`: the
        // previous driver's writes (cache limits, clock) are visible.
        match self
            .driver
            .compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed)
        {
            Ok(_) => true,
            Err(held) => self.take_over_driver(held, me),
        }
    }

    /// The token held by `held`: taken over when that owner is dead and the
    /// pool not released (the releasing call keeps the token for good). The
    /// dead driver's steps are each a CAS or a complete store, or under
    /// locks of their own (taken over and repaired apart), so the next
    /// driver call can run as usual: a drain closes what is still open, a
    /// poll releases when nothing is out.
    #[cold]
    #[inline(never)]
    fn take_over_driver(&self, held: u32, me: u32) -> bool {
        if held == me
            || self.state() == PoolState::Released
            || crate::owner::liveness(held) != crate::owner::Liveness::Dead
        {
            return false;
        }
        // Acquire: as in `claim_driver`. Ids never repeat, so a word still
        // reading `held` is the dead driver's; losing the CAS means another
        // caller took it over first.
        if self
            .driver
            .compare_exchange(held, me, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return false;
        }
        crate::owner::report(&crate::owner::Takeover {
            lock: crate::owner::LockKind::ShutdownDriver,
            at: &self.driver as *const AtomicU32 as usize,
            dead: held,
            repair: crate::owner::Repair::Nothing,
        });
        true
    }

    /// The driver token's word (tests: emulating a dead driver).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn driver_word(&self) -> &AtomicU32 {
        &self.driver
    }

    /// Gives the driver token back (never after a release).
    #[inline]
    pub(crate) fn release_driver(&self) {
        // Release pairs with the Acquire CAS in `claim_driver`.
        self.driver.store(0, Ordering::Release);
    }

    /// Marks a touch of the pool's memory by a shutdown path (loom only:
    /// checks it is ordered before the owner's free).
    #[inline(always)]
    pub(crate) fn touch(&self) {
        #[cfg(loom)]
        self.freed.with(|f| {
            // SAFETY: loom checks this read against the write in
            // `mark_freed`; `f` points to the cell's value.
            assert!(!unsafe { *f }, "pool touched after it was freed");
        });
    }

    /// Models the owner's free of the block (loom only).
    #[cfg(loom)]
    pub(crate) fn mark_freed(&self) {
        // SAFETY: loom checks this write against every `touch`.
        self.freed.with_mut(|f| unsafe { *f = true });
    }

    /// The bound of the cache-off get (`GET_BOUND`) or put (`PUT_BOUND`)
    /// fast path: a caller whose lcore id is below it may take that path.
    #[inline(always)]
    pub(crate) fn direct_bound(&self, which: usize) -> usize {
        // Acquire pairs with the Release stores in `close` and
        // `try_release`, as the `state` load does with the CASes there.
        self.direct_bounds[which].load(Ordering::Acquire)
    }

    /// The current state.
    #[inline]
    pub(crate) fn state(&self) -> PoolState {
        // Acquire pairs with the AcqRel CASes in `close` and `try_release`.
        PoolState::from_raw(self.state.load(Ordering::Acquire))
    }

    /// Moves to `Draining`; from `Active` it starts the clock. Returns the
    /// state it left.
    pub(crate) fn close(&self, now: u64) -> Result<PoolState, PoolError> {
        loop {
            let cur = self.state();
            match cur {
                PoolState::Released => {
                    return Err(PoolError::WrongState {
                        op: "drain",
                        state: cur,
                    })
                }
                PoolState::Draining => return Ok(cur),
                PoolState::Active => {}
            }
            // Before the state leaves `Active`: the bound is never more
            // permissive than the state. A close that loses the CAS below
            // loses it to another close, so the pool is draining either way.
            // Release pairs with the Acquire load in `direct_bound`.
            self.direct_bounds[GET_BOUND].store(0, Ordering::Release);
            // Relaxed: published by the Release half of the CAS below.
            self.drain_start.store(now, Ordering::Relaxed);
            self.next_warn
                .store(now.saturating_add(self.warn_period), Ordering::Relaxed);
            // AcqRel pairs with the Acquire load in `state`: whoever sees the
            // new state sees the clock above.
            if self
                .state
                .compare_exchange(
                    cur as u32,
                    PoolState::Draining as u32,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                return Ok(cur);
            }
        }
    }

    /// Moves a draining pool to `Released`. `true` for exactly one caller.
    pub(crate) fn try_release(&self) -> bool {
        loop {
            let cur = self.state();
            if cur != PoolState::Draining {
                return false;
            }
            // Before the state becomes `Released`, as in `close`: a draining
            // pool never reopens, so if the CAS below fails the next try
            // (or another caller's) releases it. Release pairs with the
            // Acquire load in `direct_bound`.
            self.direct_bounds[PUT_BOUND].store(0, Ordering::Release);
            // AcqRel: the winner's later unmaps and the caller's free come
            // after every put it counted; pairs with the Acquire in `state`.
            if self
                .state
                .compare_exchange(
                    cur as u32,
                    PoolState::Released as u32,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                // Relaxed: statistics (and the exactly-once check in tests).
                self.releases.fetch_add(1, Ordering::Relaxed);
                return true;
            }
        }
    }

    /// Nanoseconds since draining began.
    pub(crate) fn waited(&self, now: u64) -> u64 {
        // Relaxed: made visible by the Acquire load of the draining state.
        now.saturating_sub(self.drain_start.load(Ordering::Relaxed))
    }

    /// Records a poll that found `inflight` objects out (or, `unfilled`, a
    /// put's fills not yet shown); warns at most once per warn period
    /// across all pollers.
    pub(crate) fn wait(&self, now: u64, inflight: i64, unfilled: bool) -> PollOutcome {
        self.touch();
        // Relaxed: statistics.
        self.waits.fetch_add(1, Ordering::Relaxed);
        // Relaxed: only a deadline; the CAS below picks one warner.
        let due = self.next_warn.load(Ordering::Relaxed);
        if now >= due
            && self
                .next_warn
                .compare_exchange(
                    due,
                    now.saturating_add(self.warn_period),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            // Relaxed: statistics.
            self.warnings.fetch_add(1, Ordering::Relaxed);
            return PollOutcome::Warn {
                inflight,
                unfilled,
                waited_ns: self.waited(now),
                retry_in_ns: self.retry_period,
            };
        }
        PollOutcome::Waiting {
            inflight,
            unfilled,
            retry_in_ns: self.retry_period,
        }
    }

    /// Retry period (ns).
    pub(crate) fn retry_period(&self) -> u64 {
        self.retry_period
    }

    pub(crate) fn stats(&self) -> ShutdownStats {
        // Relaxed: statistics.
        ShutdownStats {
            waits: self.waits.load(Ordering::Relaxed),
            warnings: self.warnings.load(Ordering::Relaxed),
            releases: self.releases.load(Ordering::Relaxed),
        }
    }
}
