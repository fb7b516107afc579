//! The shutdown driver: draining and polling for the deferred release (the
//! state machine itself is [`crate::state`]).

use super::PoolCore;
use crate::dma_table::DmaMapper;
use crate::error::PoolError;
use crate::state::{PollOutcome, PoolState};

impl PoolCore {
    /// The life-cycle state.
    #[inline]
    pub fn state(&self) -> PoolState {
        self.shutdown.state()
    }

    /// Closes every cache to puts (limit 0). Called before the state
    /// leaves `Active`: the Relaxed limit stores are published by the
    /// Release half of that state CAS, so a put that happens-after the
    /// state change (in particular one ordered after `Released`) reads
    /// limit 0, misses the fast path and reaches a path that checks the
    /// state.
    fn close_caches(&self) {
        for c in self.caches() {
            c.close();
        }
        self.shutdown.touch();
    }

    /// Runs `f` as the one shutdown driver, or returns `busy` when another
    /// driver call holds the token (or the pool was released: the call
    /// that released it never gives the token back, so nothing gets past
    /// it once the memory may be freed).
    fn drive<R>(&self, busy: impl FnOnce(PoolState) -> R, f: impl FnOnce() -> (R, bool)) -> R {
        if !self.shutdown.claim_driver() {
            return busy(self.state());
        }
        let (r, released) = f();
        if !released {
            self.shutdown.release_driver();
        }
        r
    }

    /// Starts shutdown: closes the caches (every later put goes to the
    /// ring, each lcore gives its cache back on its next put), refuses
    /// further gets, and polls once. `now` is in ns on the caller's clock.
    ///
    /// Gets must have stopped, as the kernel requires of page_pool users:
    /// the slow paths refuse them, but a fast-path get from a non-empty
    /// cache cannot see the state. Use
    /// [`drain_quiescent`](PoolCore::drain_quiescent) when the application
    /// is known to be quiescent, to also empty every cache at once.
    ///
    /// One driver at a time (see [`poll`](PoolCore::poll)): a call racing
    /// another driver call returns [`PollOutcome::Busy`] having done
    /// nothing.
    ///
    /// # Examples
    /// ```
    /// # use core::ffi::c_void;
    /// # use mempool::{ChunkSpec, HeapPool, PoolConfig, VirtAddr, VirtRange};
    /// # let mem = vec![[0u64; 8]; 64];
    /// # let base = VirtAddr::of(mem.as_ptr());
    /// # let objs: Vec<*mut c_void> = mem.iter().map(|o| o.as_ptr() as *mut c_void).collect();
    /// // 64 objects, lcores 0 and 1 with a cache, populated as in `HeapPool`'s example.
    /// let pool = HeapPool::new(&PoolConfig { max_lcores: 2, ..PoolConfig::new(64) })?;
    /// # let spec = ChunkSpec { va: VirtRange::new(base, 64 * 64), iova: None, first: base, stride: 64, count: 64 };
    /// # pool.register_chunk(spec)?;
    /// # pool.put_shared(&objs)?;
    /// use mempool::{NoDma, PollOutcome, PoolError, PoolState};
    ///
    /// let mut one = [core::ptr::null_mut()];
    /// pool.get_shared(&mut one)?; // an object the application still holds
    ///
    /// // `now` is in ns on the caller's clock.
    /// let out = pool.begin_drain(0, &mut NoDma)?;
    /// assert!(matches!(
    ///     out,
    ///     PollOutcome::Waiting { inflight: 1, .. } | PollOutcome::Warn { inflight: 1, .. }
    /// ));
    /// assert_eq!(pool.state(), PoolState::Draining);
    /// let mut more = [core::ptr::null_mut()];
    /// assert!(matches!(pool.get_shared(&mut more), Err(PoolError::NotActive { .. })));
    ///
    /// // The late return is accepted; the next poll releases the pool.
    /// pool.put_shared(&one)?;
    /// assert!(matches!(pool.poll(1_000, &mut NoDma), PollOutcome::Released { .. }));
    /// assert_eq!(pool.state(), PoolState::Released);
    /// # Ok::<(), mempool::PoolError>(())
    /// ```
    pub fn begin_drain(
        &self,
        now: u64,
        mapper: &mut dyn DmaMapper,
    ) -> Result<PollOutcome, PoolError> {
        self.drain_with(now, mapper, || Ok(()))
    }

    /// The drain of [`begin_drain`](PoolCore::begin_drain) and
    /// [`drain_quiescent`](PoolCore::drain_quiescent), as the one driver:
    /// closes the caches and enters `Draining`, runs `flush`, polls once.
    fn drain_with(
        &self,
        now: u64,
        mapper: &mut dyn DmaMapper,
        flush: impl FnOnce() -> Result<(), PoolError>,
    ) -> Result<PollOutcome, PoolError> {
        self.drive(
            |state| Self::busy("drain", state),
            || {
                if let Err(e) = self.enter_draining(now) {
                    return (Err(e), false);
                }
                if let Err(e) = flush() {
                    return (Err(e), false);
                }
                let out = self.poll_driver(now, mapper);
                let released = matches!(out, PollOutcome::Released { .. });
                (Ok(out), released)
            },
        )
    }

    /// What a driver call refused by the token returns.
    fn busy(op: &'static str, state: PoolState) -> Result<PollOutcome, PoolError> {
        match state {
            PoolState::Released => Err(PoolError::WrongState { op, state }),
            _ => Ok(PollOutcome::Busy),
        }
    }

    /// Closes the caches, then moves the state to `Draining` (the driver
    /// holds the token).
    fn enter_draining(&self, now: u64) -> Result<PoolState, PoolError> {
        if self.state() == PoolState::Released {
            return Err(PoolError::WrongState {
                op: "drain",
                state: PoolState::Released,
            });
        }
        self.close_caches();
        self.shutdown.close(now)
    }

    /// [`begin_drain`](PoolCore::begin_drain), then flushes every cache.
    ///
    /// # Safety
    /// As [`flush_all_quiescent`](PoolCore::flush_all_quiescent).
    ///
    /// # Examples
    /// ```
    /// # use core::ffi::c_void;
    /// # use mempool::{ChunkSpec, HeapPool, PoolConfig, VirtAddr, VirtRange};
    /// # let mem = vec![[0u64; 8]; 64];
    /// # let base = VirtAddr::of(mem.as_ptr());
    /// # let objs: Vec<*mut c_void> = mem.iter().map(|o| o.as_ptr() as *mut c_void).collect();
    /// // 64 objects, lcores 0 and 1 with a cache, populated as in `HeapPool`'s example.
    /// let pool = HeapPool::new(&PoolConfig { max_lcores: 2, ..PoolConfig::new(64) })?;
    /// # let spec = ChunkSpec { va: VirtRange::new(base, 64 * 64), iova: None, first: base, stride: 64, count: 64 };
    /// # pool.register_chunk(spec)?;
    /// # pool.put_shared(&objs)?;
    /// use mempool::{NoDma, PollOutcome};
    ///
    /// let mut two = [core::ptr::null_mut(); 2];
    /// // SAFETY: no other thread uses lcore id 0.
    /// unsafe { pool.get(0, &mut two) }?;
    /// // SAFETY: as above.
    /// unsafe { pool.put(0, &two) }?;
    /// assert!(pool.cache_len(0) > 0);
    ///
    /// // SAFETY: every lcore is quiescent (this is the only thread).
    /// let out = unsafe { pool.drain_quiescent(0, &mut NoDma) }?;
    /// assert!(matches!(out, PollOutcome::Released { .. }));
    /// assert_eq!(pool.cache_len(0), 0); // flushed back to the ring
    /// # Ok::<(), mempool::PoolError>(())
    /// ```
    pub unsafe fn drain_quiescent(
        &self,
        now: u64,
        mapper: &mut dyn DmaMapper,
    ) -> Result<PollOutcome, PoolError> {
        self.drain_with(now, mapper, || {
            // SAFETY: forwarded caller contract.
            unsafe { self.flush_all_quiescent() }.map(drop)
        })
    }

    /// One step of the deferred release: releases the pool when no object
    /// is out (exactly one call ever gets [`PollOutcome::Released`], and it
    /// unmaps the devices still attached), otherwise says when to poll again
    /// and whether to warn.
    ///
    /// **One driver at a time.** `begin_drain`, `drain_quiescent` and
    /// `poll` take a driver token: a call racing another one returns
    /// [`PollOutcome::Busy`] having touched nothing but the token, and the
    /// call that releases the pool keeps the token, so no later driver call
    /// gets past it. The caller that got `Released` may free the memory
    /// once no other call on the pool can still start (e.g. one alarm or
    /// thread drives shutdown): the token shortens a racing caller's touch
    /// to one CAS, it cannot make a call that starts after the free safe.
    pub fn poll(&self, now: u64, mapper: &mut dyn DmaMapper) -> PollOutcome {
        self.drive(
            |state| match state {
                PoolState::Released => PollOutcome::AlreadyReleased,
                _ => PollOutcome::Busy,
            },
            || {
                let out = self.poll_driver(now, mapper);
                let released = matches!(out, PollOutcome::Released { .. });
                (out, released)
            },
        )
    }

    /// [`poll`](PoolCore::poll) for the token holder.
    fn poll_driver(&self, now: u64, mapper: &mut dyn DmaMapper) -> PollOutcome {
        self.shutdown.touch();
        match self.state() {
            PoolState::Active => return PollOutcome::NotDraining,
            PoolState::Released => return PollOutcome::AlreadyReleased,
            PoolState::Draining => {}
        }
        {
            // No registration between the inflight read and the release
            // (see `register_chunk`).
            let _registrations = self.table().hold_registrations();
            let mut inflight = self.inflight();
            let mut unfilled = false;
            if inflight <= 0 && self.hdr.direct {
                // A direct pool's puts count when they move `seq`, before
                // their fills (`inflight_snapshot`): let the last ones
                // finish. With a producer lock, wait for its holder (a dead
                // one is taken over and repaired: `seq` moves back over what
                // it never filled, so count again); a single producer holds
                // none, and until its fills show the pool waits as if an
                // object were out (for good if that producer died there:
                // its objects are lost, as any a dead process held),
                // reported as `unfilled` with nothing out.
                self.ring().wait_producers();
                inflight = self.inflight();
                unfilled = inflight <= 0 && !self.ring().fills_done();
            }
            if inflight > 0 || unfilled {
                return self.shutdown.wait(now, inflight, unfilled);
            }
            if !self.shutdown.try_release() {
                return PollOutcome::AlreadyReleased;
            }
        }
        // A put by a caller without a slot counts its release before it
        // lets the producer side go: wait for that unlock, the last store a
        // put makes to the pool, before anyone may free it.
        self.ring().wait_producers();
        // `release_all` takes the DMA lock, which `dma_attach` / `dma_sync`
        // hold while they check the state and map.
        PollOutcome::Released {
            waited_ns: self.shutdown.waited(now),
            dma: self.dma().release_all(self.table(), mapper),
        }
    }

    /// Suggested delay between polls (ns).
    pub fn retry_period_ns(&self) -> u64 {
        self.shutdown.retry_period()
    }
}

/// The driver token's takeover, with a dead holder emulated by its id in
/// the token.
#[cfg(all(test, not(loom)))]
mod tests {
    use crate::owner::{self, TEST_DEAD as DEAD};
    use crate::sync::Ordering;
    use crate::{HeapPool, NoDma, PollOutcome, PoolConfig, PoolState};

    /// An id the tests' liveness check calls alive.
    const ALIVE: u32 = 0xdead_0002;

    #[test]
    fn a_dead_drivers_token_is_taken_over_and_a_live_ones_waited_for() {
        owner::set_test_liveness();
        let pool = HeapPool::new(&PoolConfig::new(64)).expect("pool");
        let token = pool.shutdown.driver_word();
        // A live driver call in progress (another process): Busy.
        token.store(ALIVE, Ordering::Relaxed);
        assert_eq!(pool.begin_drain(0, &mut NoDma), Ok(PollOutcome::Busy));
        assert_eq!(pool.state(), PoolState::Active);
        // Its process died inside the call: the next driver call takes the
        // token over and runs (nothing is out, so it releases).
        token.store(DEAD, Ordering::Relaxed);
        let out = pool.begin_drain(0, &mut NoDma).expect("drain");
        assert!(matches!(out, PollOutcome::Released { .. }), "{out:?}");
        assert_eq!(pool.state(), PoolState::Released);
        // The releasing call keeps the token: nothing gets past it.
        assert_eq!(pool.poll(1, &mut NoDma), PollOutcome::AlreadyReleased);
    }
}
