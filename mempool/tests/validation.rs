//! Validation mode: foreign pointers and double frees are rejected, counted
//! and never inserted; the valid objects of the same bulk are accepted;
//! nothing is corrupted. Off by default.
#![cfg(not(loom))]

mod common;

use core::ffi::c_void;
use core::ptr::null_mut;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use common::*;
use mempool::{PoolConfig, PoolError, RejectKind, RejectStats, VirtAddr};

fn cfg(validate: bool) -> PoolConfig {
    PoolConfig {
        max_lcores: 4,
        cache_size: Some(8),
        validate,
        ..PoolConfig::new(128)
    }
}

#[test]
fn off_by_default() {
    let c = PoolConfig::new(10);
    assert!(!c.validate);
    assert_eq!(c.layout().unwrap().bitmap_words(), 0);
    let pool = populated_pool(cfg(false), 0);
    assert!(!pool.validating());
    assert_eq!(pool.is_home(obj(0)), None);
}

#[test]
fn populate_marks_objects_home() {
    let pool = populated_pool(cfg(true), 0);
    assert!((0..128).all(|i| pool.is_home(obj(i)) == Some(true)));
    let mut o = [null_mut(); 3];
    // SAFETY: single thread.
    unsafe { pool.get(1, &mut o) }.unwrap();
    assert!(o.iter().all(|&p| pool.is_home(p) == Some(false)));
    assert_eq!(pool.stats().rejected, RejectStats::default());
}

#[test]
fn foreign_pointers_are_rejected_and_counted() {
    let pool = populated_pool(cfg(true), 0);
    let before = pool.stats();
    let foreign: [*mut c_void; 4] = [
        null_mut(),
        (BASE + HDR + 1) as *mut c_void, // inside the chunk, off boundary
        (BASE + 128 * STRIDE) as *mut c_void, // just past the chunk
        0x1234 as *mut c_void,
    ];
    for (l, &p) in [0u32, 1, u32::MAX, 2].iter().zip(&foreign) {
        // SAFETY: single thread.
        let e = unsafe { pool.put(*l, &[p]) }.unwrap_err();
        assert_eq!(
            e,
            PoolError::Rejected {
                requested: 1,
                rejected: 1,
                kind: RejectKind::Foreign,
                first: VirtAddr::of(p)
            }
        );
    }
    let s = pool.stats();
    assert_eq!(s.rejected.foreign, 4);
    assert_eq!((s.in_ring, s.in_caches), (before.in_ring, before.in_caches));
    assert_eq!(s.release, before.release, "nothing counted as returned");
    assert_exactly_once(&pool);
}

#[test]
fn double_free_is_rejected_and_counted() {
    let pool = populated_pool(cfg(true), 0);
    let mut o = [null_mut(); 2];
    // SAFETY: single thread.
    unsafe { pool.get(1, &mut o) }.unwrap();
    // SAFETY: single thread.
    unsafe { pool.put(1, &o[..1]) }.unwrap();
    // Same object again, on the same lcore and on another path.
    // SAFETY: single thread.
    let e = unsafe { pool.put(1, &o[..1]) }.unwrap_err();
    assert!(
        matches!(
            e,
            PoolError::Rejected {
                kind: RejectKind::DoubleFree,
                rejected: 1,
                ..
            }
        ),
        "{e}"
    );
    let e = pool.put_shared(&o[..1]).unwrap_err();
    assert!(matches!(
        e,
        PoolError::Rejected {
            kind: RejectKind::DoubleFree,
            ..
        }
    ));
    // An object that was never taken out (home since populate).
    let home = (0..128)
        .map(obj)
        .find(|&p| pool.is_home(p) == Some(true) && p != o[0])
        .unwrap();
    assert!(pool.put_shared(&[home]).is_err());
    assert_eq!(pool.stats().rejected.double_free, 3);
    assert_eq!(pool.inflight(), 1);
    assert_conserved(&pool);
    pool.put_shared(&o[1..]).unwrap();
    assert_exactly_once(&pool);
}

#[test]
fn valid_objects_in_a_mixed_bulk_are_accepted() {
    let pool = populated_pool(cfg(true), 0);
    let mut o = vec![null_mut(); 70]; // above the internal batch of 32
    pool.get_shared(&mut o).unwrap();
    let mut bulk = Vec::new();
    for (i, &p) in o.iter().enumerate() {
        bulk.push(p);
        if i % 10 == 0 {
            bulk.push(0xdead_0000 as *mut c_void); // foreign
        }
        if i % 7 == 0 {
            bulk.push(p); // double in the same bulk
        }
    }
    let n_bad = bulk.len() - 70;
    // SAFETY: single thread.
    let e = unsafe { pool.put(2, &bulk) }.unwrap_err();
    assert_eq!(
        e,
        PoolError::Rejected {
            requested: bulk.len(),
            rejected: n_bad,
            kind: RejectKind::Foreign, // index 1 is the first bad one
            first: VirtAddr(0xdead_0000)
        }
    );
    let s = pool.stats();
    assert_eq!(s.rejected.foreign, 7);
    assert_eq!(s.rejected.double_free, 10);
    assert_eq!(s.inflight, 0, "every valid object was accepted");
    assert_exactly_once(&pool);
}

/// Bulks of exactly one, two and three internal batches (the put keeps the
/// newest accepted object back until the end, so a concurrent release can
/// never free the pool under the rest of the loop): everything is accepted,
/// nothing is duplicated, on a cached lcore and on the ring path.
#[test]
fn whole_batches_are_accepted_exactly_once() {
    let pool = populated_pool(cfg(true), 0);
    for n in [32usize, 64, 96, 33, 31] {
        for lcore in [1u32, u32::MAX] {
            let mut o = vec![null_mut(); n];
            pool.get_shared(&mut o).unwrap();
            assert_eq!(pool.inflight(), n as i64);
            // SAFETY: single thread.
            unsafe { pool.put(lcore, &o) }.unwrap();
            assert_eq!(pool.inflight(), 0, "n = {n}, lcore = {lcore}");
            assert!(o.iter().all(|&p| pool.is_home(p) == Some(true)));
            assert_exactly_once(&pool);
        }
    }
    assert_eq!(pool.stats().rejected, RejectStats::default());
}

#[test]
fn racing_double_free_accepts_exactly_one() {
    let pool = Arc::new(populated_pool(cfg(true), u32::MAX));
    for round in 0..300 {
        let mut o = [null_mut()];
        pool.get_shared(&mut o).unwrap();
        let p = o[0] as usize;
        let barrier = Arc::new(Barrier::new(2));
        let ok = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..2u32)
            .map(|l| {
                let (pool, barrier, ok) =
                    (Arc::clone(&pool), Arc::clone(&barrier), Arc::clone(&ok));
                std::thread::spawn(move || {
                    barrier.wait();
                    // SAFETY: lcore `l` is used by this thread only.
                    if unsafe { pool.put(l, &[p as *mut c_void]) }.is_ok() {
                        ok.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(ok.load(Ordering::Relaxed), 1, "round {round}");
    }
    assert_eq!(pool.stats().rejected.double_free, 300);
    assert_exactly_once(&pool);
}

#[test]
fn without_validation_a_double_free_is_not_caught() {
    // The contrast: with validation off, the default, there is no check at
    // all (zero cost): the duplicate goes into the cache.
    let pool = populated_pool(cfg(false), u32::MAX);
    let mut o = [null_mut()];
    // SAFETY: single thread.
    unsafe { pool.get(0, &mut o) }.unwrap();
    // SAFETY: single thread.
    unsafe {
        pool.put(0, &o).unwrap();
        pool.put(0, &o).unwrap();
    }
    assert_eq!(pool.stats().rejected, RejectStats::default());
    assert_eq!(pool.inflight(), -1, "over-return shows as negative");
}

/// A validated put that fails mid-bulk (`Overfull`) leaves every object it
/// did not insert "out": the newest accepted object, held back while the
/// first batch went in, included. A later legitimate free of all of them
/// is accepted (no false double free).
#[test]
fn failed_put_mid_bulk_leaves_every_uninserted_object_out() {
    let pool = populated_pool(cfg(true), 0);
    let mut out = [null_mut(); 40];
    pool.get_shared(&mut out).unwrap();
    // Fill every free slot of the ring behind the pool's back, so the
    // put's first batch of 31 finds no room.
    let in_ring = pool.ring().len();
    let mut junk = 0usize;
    while pool
        .ring()
        .enqueue_bulk(&[((junk + 1) * 8) as *mut c_void])
        .is_ok()
    {
        junk += 1;
    }
    let e = pool.put_shared(&out).unwrap_err();
    assert!(matches!(e, PoolError::Overfull { .. }), "{e}");
    for (i, &o) in out.iter().enumerate() {
        assert_eq!(pool.is_home(o), Some(false), "object {i} left marked home");
    }
    // Take the junk out again (behind the objects, FIFO).
    let mut all = Vec::new();
    let mut chunk = [null_mut(); 64];
    while all.len() < in_ring + junk {
        let n = pool.ring().dequeue_burst(&mut chunk);
        all.extend_from_slice(&chunk[..n]);
    }
    assert!(pool.ring().is_empty());
    pool.ring().enqueue_bulk(&all[..in_ring]).unwrap();
    pool.put_shared(&out).unwrap();
    assert_eq!(pool.stats().rejected, RejectStats::default());
    assert_conserved(&pool);
}
