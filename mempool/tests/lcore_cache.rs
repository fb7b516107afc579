//! Per-lcore caches: fast path, refill/flush sizes, bounds, the non-EAL
//! bypass, flushing, and the documented guarantee about objects idle in
//! other lcores' caches.
#![cfg(not(loom))]

mod common;

use core::ffi::c_void;
use core::ptr::null_mut;

use common::*;
use mempool::{PoolConfig, PoolError};

const ANY: u32 = u32::MAX;

fn cfg(objects: usize, lcores: u32, cache: usize) -> PoolConfig {
    PoolConfig {
        max_lcores: lcores,
        cache_size: Some(cache),
        ..PoolConfig::new(objects)
    }
}

#[test]
fn fast_path_get_put_stays_in_own_cache() {
    let pool = populated_pool(cfg(256, 4, 32), 0);
    // Populating through lcore 0 left its cache partly full.
    let in_cache = pool.cache_len(0);
    assert!(in_cache > 0 && in_cache <= 32);
    let ring_before = pool.ring().len();
    let mut o = [null_mut()];
    for _ in 0..1000 {
        // SAFETY: single thread owns lcore 0.
        unsafe { pool.get(0, &mut o) }.unwrap();
        // SAFETY: as above.
        unsafe { pool.put(0, &o) }.unwrap();
    }
    assert_eq!(pool.ring().len(), ring_before, "fast path touched the ring");
    assert_eq!(pool.cache_len(0), in_cache);
    assert_conserved(&pool);
}

#[test]
fn lifo_order_returns_hottest_object() {
    let pool = populated_pool(cfg(64, 2, 16), ANY);
    let mut a = [null_mut(); 3];
    // SAFETY: single thread owns lcore 1.
    unsafe { pool.get(1, &mut a) }.unwrap();
    // SAFETY: as above.
    unsafe { pool.put(1, &a[2..]) }.unwrap();
    let mut b = [null_mut()];
    // SAFETY: as above.
    unsafe { pool.get(1, &mut b) }.unwrap();
    assert_eq!(b[0], a[2], "last freed is first allocated");
    // SAFETY: as above.
    unsafe { pool.put(1, &[a[0], a[1], b[0]]) }.unwrap();
    assert_conserved(&pool);
}

#[test]
fn refill_takes_request_plus_half_cache() {
    let pool = populated_pool(cfg(256, 2, 32), ANY);
    assert_eq!(pool.cache_len(0), 0);
    let mut o = [null_mut(); 4];
    // SAFETY: single thread owns lcore 0.
    unsafe { pool.get(0, &mut o) }.unwrap();
    // Refilled to min(32, 4 + 16) = 20, handed out 4.
    assert_eq!(pool.cache_len(0), 16);
    assert_eq!(pool.ring().len(), 256 - 20);
    assert_conserved(&pool);
}

#[test]
fn overflow_flushes_top_down_to_half() {
    let pool = populated_pool(cfg(256, 2, 32), ANY);
    let mut out = vec![null_mut(); 40];
    pool.get_shared(&mut out).unwrap();
    for (i, o) in out.iter().enumerate() {
        // SAFETY: single thread owns lcore 0.
        unsafe { pool.put(0, &[*o]) }.unwrap();
        assert!(
            pool.cache_len(0) <= 32,
            "cache above its size after {i} puts"
        );
    }
    // 32 fit; the 33rd flushed down to 16 and pushed: 17; then 7 more: 24.
    assert_eq!(pool.cache_len(0), 24);
    assert_conserved(&pool);
}

#[test]
fn cache_never_exceeds_size_under_random_bulks() {
    let size = 24;
    let pool = populated_pool(cfg(512, 2, size), 0);
    let mut held: Vec<*mut c_void> = Vec::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..20_000 {
        next_random(&mut x);
        let k = (x % 40) as usize; // includes bulks above the cache size
        if x & (1 << 40) != 0 {
            let mut out = vec![null_mut(); k];
            // SAFETY: single thread owns lcore 1.
            match unsafe { pool.get(1, &mut out) } {
                Ok(()) => held.extend_from_slice(&out),
                Err(PoolError::Exhausted { requested, .. }) => assert_eq!(requested, k),
                Err(e) => panic!("{e}"),
            }
        } else {
            let k = k.min(held.len());
            let back: Vec<_> = held.drain(held.len() - k..).collect();
            // SAFETY: as above.
            unsafe { pool.put(1, &back) }.unwrap();
        }
        assert!(pool.cache_len(1) <= size);
        assert_conserved(&pool);
    }
    // SAFETY: as above.
    unsafe { pool.put(1, &held) }.unwrap();
    assert_exactly_once(&pool);
}

#[test]
fn oversized_bulks_bypass_the_cache() {
    let pool = populated_pool(cfg(256, 2, 8), ANY);
    let mut o = vec![null_mut(); 3];
    // SAFETY: single thread owns lcore 0.
    unsafe { pool.get(0, &mut o) }.unwrap();
    let cached = pool.cache_len(0);
    assert!(cached > 0);
    // A get above the cache size empties the cache and takes the rest from the ring.
    let mut big = vec![null_mut(); 20];
    // SAFETY: as above.
    unsafe { pool.get(0, &mut big) }.unwrap();
    assert_eq!(pool.cache_len(0), 0);
    // A put above the cache size goes straight to the ring.
    let ring = pool.ring().len();
    // SAFETY: as above.
    unsafe { pool.put(0, &big) }.unwrap();
    assert_eq!(pool.ring().len(), ring + 20);
    assert_eq!(pool.cache_len(0), 0);
    // SAFETY: as above.
    unsafe { pool.put(0, &o) }.unwrap();
    assert_exactly_once(&pool);
}

#[test]
fn ids_without_a_cache_use_the_ring() {
    let pool = populated_pool(cfg(128, 4, 16), ANY);
    // 4 == max_lcores, u32::MAX == LCORE_ID_ANY, and anything above.
    for id in [4u32, 5, 127, 4096, u32::MAX - 1, u32::MAX] {
        let mut o = [null_mut(); 5];
        // SAFETY: ids without a cache touch no per-lcore state.
        unsafe { pool.get(id, &mut o) }.unwrap();
        assert_eq!(pool.ring().len(), 123);
        assert_eq!(pool.in_caches(), 0);
        assert_eq!(pool.inflight(), 5);
        // SAFETY: as above.
        unsafe { pool.put(id, &o) }.unwrap();
        assert_eq!(pool.ring().len(), 128);
        assert_conserved(&pool);
    }
    if mempool::ACCOUNTING {
        let s = pool.stats();
        assert_eq!((s.hold, s.release), (30, 128 + 30));
    }
}

#[test]
fn zero_lcores_and_zero_cache_work_through_the_ring() {
    for c in [cfg(64, 0, 0), cfg(64, 4, 0)] {
        let pool = populated_pool(c, 0);
        let mut o = [null_mut(); 64];
        // SAFETY: single thread.
        unsafe { pool.get(0, &mut o) }.unwrap();
        assert_eq!(pool.available(), 0);
        // SAFETY: as above.
        unsafe { pool.put(0, &o) }.unwrap();
        assert_eq!(pool.in_caches(), 0);
        assert_exactly_once(&pool);
    }
}

#[test]
fn flush_lcore_gives_every_object_back() {
    let pool = populated_pool(cfg(256, 4, 32), ANY);
    let mut o = [null_mut(); 2];
    for l in 0..4 {
        // SAFETY: single thread.
        unsafe { pool.get(l, &mut o) }.unwrap();
        // SAFETY: as above.
        unsafe { pool.put(l, &o) }.unwrap();
    }
    assert!(pool.in_caches() > 0);
    // SAFETY: single thread: every lcore is quiescent.
    let moved = unsafe { pool.flush_lcore(2) }.unwrap();
    assert!(moved > 0);
    assert_eq!(pool.cache_len(2), 0);
    // SAFETY: as above.
    unsafe { pool.flush_all_quiescent() }.unwrap();
    assert_eq!(pool.in_caches(), 0);
    assert_eq!(pool.ring().len(), 256);
    // SAFETY: an id without a cache: nothing to flush.
    assert_eq!(unsafe { pool.flush_lcore(u32::MAX) }.unwrap(), 0);
    assert_conserved(&pool);
}

/// The guarantee: a get of k by lcore L fails only if ring + cache[L] < k;
/// objects idle in other caches are out of reach until flushed.
#[test]
fn idle_objects_in_other_caches_guarantee() {
    let size = 16;
    let pool = populated_pool(cfg(64, 4, size), ANY);
    // Lcores 1, 2, 3 each end up holding a full cache: 48 idle objects.
    for l in 1..4 {
        let mut o = vec![null_mut(); size];
        pool.get_shared(&mut o).unwrap();
        // SAFETY: single thread.
        unsafe { pool.put(l, &o) }.unwrap();
        assert_eq!(pool.cache_len(l), size);
    }
    assert_eq!(pool.ring().len(), 16);
    // Lcore 0 can get exactly ring + own cache = 16, in any bulk sizes.
    let mut got = Vec::new();
    let mut one = [null_mut()];
    for _ in 0..16 {
        // SAFETY: single thread.
        unsafe { pool.get(0, &mut one) }.unwrap();
        got.push(one[0]);
    }
    // SAFETY: as above.
    let err = unsafe { pool.get(0, &mut one) }.unwrap_err();
    assert_eq!(
        err,
        PoolError::Exhausted {
            requested: 1,
            available: 0
        }
    );
    // The idle objects are bounded by the other caches' sizes...
    assert_eq!(pool.in_caches(), 3 * size);
    assert_conserved(&pool);
    // ...and a flush of a quiescent lcore brings them back.
    // SAFETY: single thread: lcore 3 is quiescent.
    assert_eq!(unsafe { pool.flush_lcore(3) }.unwrap(), size);
    let mut more = vec![null_mut(); size];
    // SAFETY: single thread.
    unsafe { pool.get(0, &mut more) }.unwrap();
    got.extend(more);
    // SAFETY: as above.
    unsafe { pool.put(0, &got) }.unwrap();
    assert_exactly_once(&pool);
}

#[test]
fn failed_get_may_fill_own_cache_but_loses_nothing() {
    let pool = populated_pool(cfg(64, 2, 16), ANY);
    let mut most = vec![null_mut(); 60];
    pool.get_shared(&mut most).unwrap();
    let mut want = [null_mut(); 8];
    // SAFETY: single thread.
    let err = unsafe { pool.get(0, &mut want) }.unwrap_err();
    assert_eq!(
        err,
        PoolError::Exhausted {
            requested: 8,
            available: 4
        }
    );
    // The 4 ring objects moved into lcore 0's cache; none handed out.
    assert_eq!(pool.cache_len(0), 4);
    assert_eq!(pool.inflight(), 60);
    assert_conserved(&pool);
    // A smaller get from the same lcore now succeeds from the cache.
    // SAFETY: as above.
    unsafe { pool.get(0, &mut want[..4]) }.unwrap();
    // SAFETY: as above.
    unsafe { pool.put(0, &want[..4]) }.unwrap();
    pool.put_shared(&most).unwrap();
    assert_exactly_once(&pool);
}
