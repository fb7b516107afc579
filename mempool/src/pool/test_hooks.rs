//! Test hooks (feature `test-hooks`): ways into a pool's states that a test
//! cannot otherwise reach on demand. Enabled only by the tests of the
//! crates above (`pmd-glue`'s dev-dependencies), never in a shipped build.

use super::PoolCore;

impl PoolCore {
    /// Runs `f` holding the shutdown's driver token, as a driver call
    /// (`begin_drain`, `drain_quiescent`, `poll`) holds it while it runs:
    /// every other driver call meanwhile returns
    /// [`PollOutcome::Busy`](crate::PollOutcome::Busy). Returns `None`
    /// without running `f` when another driver call holds the token or the
    /// pool was released. The token is given back when `f` returns (not
    /// when it panics: the pool then stays busy).
    #[doc(hidden)]
    pub fn with_driver_token<R>(&self, f: impl FnOnce() -> R) -> Option<R> {
        if !self.shutdown.claim_driver() {
            return None;
        }
        let r = f();
        self.shutdown.release_driver();
        Some(r)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::{HeapPool, NoDma, PollOutcome, PoolConfig, PoolState};

    #[test]
    fn a_held_driver_token_makes_every_driver_call_busy() {
        let pool = HeapPool::new(&PoolConfig::new(64)).expect("pool");
        let inner = pool.with_driver_token(|| {
            // Nothing is out, so each of these would release the pool.
            let drain = pool.begin_drain(0, &mut NoDma);
            // SAFETY: this is the only thread.
            let quiescent = unsafe { pool.drain_quiescent(0, &mut NoDma) };
            let nested = pool.with_driver_token(|| ());
            (drain, quiescent, nested, pool.state())
        });
        assert_eq!(
            inner,
            Some((
                Ok(PollOutcome::Busy),
                Ok(PollOutcome::Busy),
                None,
                PoolState::Active
            ))
        );
        // Given back: the next drain runs (and releases the empty pool).
        let out = pool.begin_drain(1, &mut NoDma).expect("drain");
        assert!(matches!(out, PollOutcome::Released { .. }), "{out:?}");
        assert_eq!(pool.poll(2, &mut NoDma), PollOutcome::AlreadyReleased);
        // The releasing call kept the token.
        assert_eq!(pool.with_driver_token(|| ()), None);
    }
}
