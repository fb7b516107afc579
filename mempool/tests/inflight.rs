//! Inflight accounting: `populated == ring + caches + inflight` after every
//! phase of a pool's life, and hold/release counts per path.
#![cfg(not(loom))]

mod common;

use core::ptr::null_mut;

use common::*;
use mempool::{HeapPool, PoolConfig};

fn cfg(objects: usize) -> PoolConfig {
    PoolConfig {
        max_lcores: 4,
        cache_size: Some(16),
        ..PoolConfig::new(objects)
    }
}

#[test]
fn registration_counts_objects_out_until_put() {
    let pool = HeapPool::new(&cfg(100)).unwrap();
    assert_eq!(pool.inflight(), 0);
    assert_conserved(&pool);
    pool.register_chunk(chunk_spec(40)).unwrap();
    assert_eq!(pool.populated(), 40);
    assert_eq!(pool.inflight(), 40);
    assert_conserved(&pool);
    for i in 0..40 {
        // SAFETY: single thread owns lcore 1.
        unsafe { pool.put(1, &[obj(i)]) }.unwrap();
        assert_eq!(pool.inflight(), 39 - i as i64);
        assert_conserved(&pool);
    }
}

#[test]
fn conservation_after_every_phase() {
    // Phase 1: populate through lcore 0 (checked per object inside).
    let pool = populated_pool(cfg(200), 0);
    let mut held = Vec::new();
    // Phase 2: each lcore and a non-EAL caller take objects.
    for (l, k) in [(0u32, 5usize), (1, 17), (2, 1), (3, 40), (u32::MAX, 9)] {
        let mut o = vec![null_mut(); k];
        // SAFETY: single thread.
        unsafe { pool.get(l, &mut o) }.unwrap();
        held.push((l, o));
        assert_conserved(&pool);
    }
    assert_eq!(pool.inflight(), 5 + 17 + 1 + 40 + 9);
    // Phase 3: return everything on a different lcore than it came from.
    for (l, o) in held.drain(..) {
        let back = if l == u32::MAX { 0 } else { (l + 1) % 5 };
        let back = if back == 4 { u32::MAX } else { back };
        // SAFETY: single thread.
        unsafe { pool.put(back, &o) }.unwrap();
        assert_conserved(&pool);
    }
    assert_eq!(pool.inflight(), 0);
    // Phase 4: flush.
    // SAFETY: single thread.
    unsafe { pool.flush_all_quiescent() }.unwrap();
    assert_conserved(&pool);
    assert_eq!(pool.ring().len(), 200);
    // Phase 5: drain (closes caches, puts go to the ring).
    let mut o = vec![null_mut(); 10];
    // SAFETY: single thread.
    unsafe { pool.get(2, &mut o) }.unwrap();
    let out = pool.begin_drain(0, &mut mempool::NoDma).unwrap();
    assert!(
        matches!(out, mempool::PollOutcome::Waiting { inflight: 10, .. }),
        "{out:?}"
    );
    assert_conserved(&pool);
    // SAFETY: single thread.
    unsafe { pool.put(2, &o) }.unwrap();
    assert_conserved(&pool);
    assert_eq!(pool.in_caches(), 0);
    assert!(matches!(
        pool.poll(1, &mut mempool::NoDma),
        mempool::PollOutcome::Released { .. }
    ));
    assert_conserved(&pool);
}

#[test]
#[cfg(feature = "accounting")]
fn hold_and_release_count_every_path() {
    let pool = populated_pool(cfg(300), u32::MAX);
    let s0 = pool.stats();
    assert_eq!((s0.hold, s0.release), (0, 300));
    let mut a = vec![null_mut(); 3]; // fast path after refill
    let mut b = vec![null_mut(); 50]; // oversized: cache + ring
    let mut c = vec![null_mut(); 7]; // ring only
                                     // SAFETY: single thread.
    unsafe {
        pool.get(1, &mut a).unwrap();
        pool.get(1, &mut b).unwrap();
    }
    pool.get_shared(&mut c).unwrap();
    let s = pool.stats();
    assert_eq!(s.hold, 60);
    assert_eq!(s.inflight, 60);
    // SAFETY: single thread.
    unsafe {
        pool.put(2, &a).unwrap(); // fast path
        pool.put(2, &b).unwrap(); // oversized
        pool.put(3, &c).unwrap(); // fast path on another lcore
    }
    let s = pool.stats();
    assert_eq!((s.hold, s.release), (60, 360));
    assert_eq!(s.inflight, 0);
    assert_conserved(&pool);
}

#[test]
fn snapshot_is_wrapping_and_signed() {
    let pool = populated_pool(cfg(64), 0);
    if mempool::ACCOUNTING {
        assert_eq!(pool.inflight_snapshot().inflight(), 0);
    }
    let fake = mempool::InflightSnapshot {
        populated: 10,
        hold: u64::MAX, // wrapped
        release: 8,
    };
    // 10 + (2^64 - 1) - 8 wraps to 1.
    assert_eq!(fake.inflight(), 1);
    let over = mempool::InflightSnapshot {
        populated: 10,
        hold: 0,
        release: 11,
    };
    assert_eq!(over.inflight(), -1, "over-return is visible as negative");
}

#[test]
fn hold_release_relate_modulo_2_32() {
    use mempool::HoldRelease;
    // Just filled: every populated object taken back once, none handed out.
    assert_eq!(HoldRelease::new(0, 2047).net(), -2047);
    // Lcore hold counts wrapped (the sum lost 2^32 twice), releases did not.
    let c = HoldRelease::new(5, (2 << 32) + 2052);
    assert_eq!((c.hold(), c.release(), c.net()), (5, 2052, -2047));
    // The pool's own counters relate the same way.
    let pool = HeapPool::new(&cfg(100)).unwrap();
    pool.register_chunk(chunk_spec(40)).unwrap();
    let s = pool.stats();
    assert_eq!(
        s.populated as i64 + HoldRelease::new(s.hold, s.release).net(),
        s.inflight
    );
}

/// Every route of a cached pool (fast get and put, refill, flush, the
/// oversized get that empties the cache and takes the rest from the ring,
/// the oversized put straight to the ring, a caller without a slot) keeps
/// the hold and release counts equal to the gets and puts made, objects
/// handed between lcores as applications do: a route that moves objects
/// without counting them, or counts them twice, shows here.
#[test]
#[cfg(feature = "accounting")]
fn hold_and_release_match_the_gets_and_puts_made() {
    let populated = 400u64;
    let pool = populated_pool(cfg(populated as usize), u32::MAX);
    let (mut gets, mut puts) = (0u64, populated);
    let mut held: Vec<*mut core::ffi::c_void> = Vec::new();
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for step in 0..20_000 {
        next_random(&mut x);
        // Lcores 0-3 have a cache of 16; 9 has no slot.
        let lcore = [0, 1, 2, 3, 9][(x % 5) as usize];
        let k = ((x >> 8) % 40) as usize; // up to 2.5 times the cache
        if x & (1 << 40) != 0 {
            let mut out = vec![null_mut(); k];
            // SAFETY: one thread plays every lcore, one at a time.
            if unsafe { pool.get(lcore, &mut out) }.is_ok() {
                gets += k as u64;
                held.extend_from_slice(&out);
            }
        } else {
            let k = k.min(held.len());
            let back: Vec<_> = held.drain(held.len() - k..).collect();
            // SAFETY: as above.
            unsafe { pool.put(lcore, &back) }.unwrap();
            puts += k as u64;
        }
        let s = pool.stats();
        assert_eq!(
            (s.hold as u32, s.release as u32, s.inflight),
            (gets as u32, puts as u32, held.len() as i64),
            "step {step}: {s:?}"
        );
        assert_conserved(&pool);
    }
}
