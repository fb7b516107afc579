//! Forgetting a pool's chunks after their owner took every object back and
//! freed the memory (DPDK's answer to a populate that failed part-way): the
//! pool can be populated again exactly as a new one, its counts restart,
//! and validation no longer accepts the old objects.

mod common;

use core::ffi::c_void;

use common::*;
use mempool::{HeapPool, PoolConfig, PoolError};

/// Takes every object back, one at a time, as DPDK's take-back loop does.
fn take_back(pool: &HeapPool, n: usize) -> Vec<*mut c_void> {
    (0..n)
        .map(|_| {
            let mut one = [core::ptr::null_mut()];
            pool.get_shared(&mut one).expect("take back");
            one[0]
        })
        .collect()
}

fn validating(n: usize) -> PoolConfig {
    PoolConfig {
        validate: true,
        ..PoolConfig::new(n)
    }
}

#[test]
fn a_pool_whose_chunks_were_taken_back_populates_again() {
    let n = 64;
    let pool = populated_pool(validating(n), 0);
    // A second chunk for the whole pool: refused (too many objects), as
    // for a populate retried without forgetting.
    let again = chunk_spec(n);
    assert!(matches!(
        pool.register_chunk(again),
        Err(PoolError::TooManyObjects { .. }) | Err(PoolError::ChunkOverlap { .. })
    ));
    let _objs = take_back(&pool, n);
    assert_eq!(pool.inflight(), n as i64);
    // SAFETY: this thread is the pool's only user; the old objects are
    // never used again.
    assert_eq!(unsafe { pool.forget_chunks() }, Ok(n));
    assert_eq!(pool.populated(), 0);
    assert_eq!(pool.chunks(), 0);
    assert_eq!(pool.inflight(), 0, "the taken-back objects are not out");
    // Validation forgot them: a put of an old object is refused.
    assert!(pool.put_shared(&[obj(0)]).is_err(), "old object accepted");
    // The same memory populates again, as in a new pool.
    pool.register_chunk(chunk_spec(n)).expect("populate again");
    let objs: Vec<*mut c_void> = (0..n).map(obj).collect();
    pool.put_shared(&objs).expect("the new objects");
    assert_conserved(&pool);
    assert_eq!(pool.inflight(), 0);
    assert_exactly_once(&pool);
}

#[test]
fn chunks_in_use_are_not_forgotten() {
    let n = 32;
    let pool = populated_pool(PoolConfig::new(n), 0);
    // Every object home: not taken back.
    // SAFETY: only this thread uses the pool.
    let r = unsafe { pool.forget_chunks() };
    assert!(
        matches!(r, Err(PoolError::ChunksInUse { available: 32, .. })),
        "{r:?}"
    );
    // One object still in the ring.
    let objs = take_back(&pool, n - 1);
    // SAFETY: as above.
    let r = unsafe { pool.forget_chunks() };
    assert!(
        matches!(r, Err(PoolError::ChunksInUse { available: 1, .. })),
        "{r:?}"
    );
    assert_eq!(pool.populated(), n, "nothing changed");
    pool.put_shared(&objs).expect("back");
    assert_conserved(&pool);
}
