//! Exhaustion with EAL: a pool of N mbufs served by ptr_ring hands out
//! exactly N distinct mbufs, then fails (None / -ENOBUFS) without losing
//! anything; all come back; N can be taken again, singly and in one bulk.
//! Run with DPDK's per-lcore cache off (every get/put reaches the handler,
//! whose own cache is then on) and on (32). The handler's counters must obey
//! `populated == in_ring + in_caches + inflight` after every phase, with
//! `inflight` exactly the mbufs held by the test plus DPDK's cache.
//! Also a non-EAL thread (lcore id ANY: the handler's ring path).

mod common;

use std::collections::HashSet;
use std::ffi::c_void;

use common::*;
use dpdk_sys as sys;
use rte_mempool_ptr_ring::api::{Mbuf, MbufPool};

const N: u32 = 1000;

/// A pool of `n` default-sized mbufs with DPDK's cache of `cache`.
fn create_pool(name: &str, n: u32, cache: u32) -> MbufPool {
    MbufPool::create(name, n, cache, sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16, -1)
        .unwrap_or_else(|e| panic!("create {name}: {e}"))
}

/// Frees `pool` and asserts that the handler's free line says `outcome`
/// ("freed: every object returned", "freed with 7 objects not returned").
fn assert_free_reports(pool: MbufPool, name: &str, outcome: &str) {
    let ((), log) = capture_log(|| drop(pool));
    let line = format!("PTR_RING: pool {name} {outcome}");
    assert!(
        log.contains(&line),
        "{name}: free must log \"{line}\"; log:\n{log}"
    );
}

fn exhaust(cache: u32) {
    let name = format!("exh_c{cache}");
    let pool = create_pool(&name, N, cache);
    let mp = pool.as_ptr();
    assert_eq!(pool.size(), N);
    assert_eq!(pool.available(), N, "fresh pool: everything available");
    let s = conserved(&pool, &format!("{name} fresh"));
    assert_eq!(s.inflight, 0, "fresh pool: nothing in flight");
    assert_eq!(s.in_ring + s.in_caches, N as usize);

    // Phase 1: take every mbuf, one at a time.
    let mut held: Vec<Mbuf> = Vec::with_capacity(N as usize);
    for i in 0..N {
        held.push(pool.alloc().unwrap_or_else(|| {
            panic!(
                "{name}: alloc {i} of {N} failed, available {}",
                pool.available()
            )
        }));
    }
    let distinct: HashSet<usize> = held.iter().map(|m| m.as_ptr() as usize).collect();
    assert_eq!(distinct.len(), N as usize, "{name}: {N} distinct mbufs");
    assert!(pool.alloc().is_none(), "{name}: alloc N+1 must fail");
    assert!(
        pool.alloc_bulk(1).is_none(),
        "{name}: alloc_bulk(1) on an empty pool must fail"
    );
    let mut obj: *mut c_void = core::ptr::null_mut();
    // SAFETY: a live pool, a valid out pointer.
    let r = unsafe { sys::rte_mempool_get(mp, &mut obj) };
    assert_eq!(
        r,
        -libc::ENOBUFS,
        "{name}: rte_mempool_get on an empty pool: {r} ({})",
        strerror(r)
    );
    assert_eq!(pool.available(), 0);
    let s = conserved(&pool, &format!("{name} exhausted"));
    assert_eq!(s.inflight, N as i64, "{name}: all N in flight");
    assert_eq!(s.in_ring + s.in_caches, 0, "{name}: handler empty");

    // Phase 2: all-or-nothing bulk: 5 back, a bulk of 6 fails and takes nothing.
    held.truncate(N as usize - 5);
    assert_eq!(pool.available(), 5);
    assert!(
        pool.alloc_bulk(6).is_none(),
        "{name}: bulk 6 of 5 must fail"
    );
    assert_eq!(pool.available(), 5, "{name}: a failed bulk takes nothing");
    held.extend(pool.alloc_bulk(5).expect("bulk of the 5 left"));
    assert_eq!(pool.available(), 0);
    conserved(&pool, &format!("{name} refilled"));

    // Phase 3: everything back.
    drop(held);
    assert_eq!(pool.available(), N, "{name}: all back");
    let s = conserved(&pool, &format!("{name} all freed"));
    let dpdk_cached = dpdk_cache_len(mp, 0);
    assert_eq!(
        s.inflight, dpdk_cached as i64,
        "{name}: in flight is exactly what DPDK's lcore-0 cache holds"
    );
    if cache == 0 {
        assert_eq!(dpdk_cached, 0);
    }

    // Phase 4: N again, singly.
    let again: Vec<Mbuf> = (0..N)
        .map(|i| {
            pool.alloc()
                .unwrap_or_else(|| panic!("{name}: second round alloc {i} failed"))
        })
        .collect();
    assert!(pool.alloc().is_none(), "{name}: second round N+1 fails");
    drop(again);
    assert_eq!(pool.available(), N);

    // Phase 5: N in one bulk (DPDK takes its cache first, the rest from us).
    let bulk = pool
        .alloc_bulk(N as usize)
        .expect("bulk of N from a full pool");
    assert_eq!(bulk.len(), N as usize);
    assert!(pool.alloc().is_none());
    conserved(&pool, &format!("{name} bulk N"));
    drop(bulk);
    assert_eq!(pool.available(), N);

    // Phase 6: a non-EAL thread (no lcore id: no cache anywhere).
    let mpa = mp as usize;
    std::thread::spawn(move || {
        let mp = mpa as *mut sys::rte_mempool;
        assert_eq!(
            dpdk_sys::lcore_id(),
            u32::MAX,
            "non-EAL thread has LCORE_ID_ANY"
        );
        let mut objs = [core::ptr::null_mut::<c_void>(); 64];
        for _ in 0..100 {
            // SAFETY: a live pool, room for 64 pointers.
            let r = unsafe { sys::rte_mempool_get_bulk(mp, objs.as_mut_ptr(), 64) };
            assert_eq!(r, 0, "non-EAL get_bulk(64): {r}");
            // SAFETY: returning what we got.
            unsafe { sys::rte_mempool_put_bulk(mp, objs.as_ptr(), 64) };
        }
    })
    .join()
    .expect("non-EAL thread");
    assert_eq!(pool.available(), N, "{name}: after the non-EAL thread");
    let s = conserved(&pool, &format!("{name} after non-EAL thread"));
    assert_eq!(s.inflight, dpdk_cache_len(mp, 0) as i64);
    assert!(
        s.hold >= 4 * N as u64,
        "{name}: hold counts the gets ({})",
        s.hold
    );

    // Phase 7: DPDK's cache back to the handler, then free: the handler
    // must report every object returned.
    dpdk_cache_flush(mp, 0);
    let s = conserved(&pool, &format!("{name} flushed"));
    assert_eq!(
        s.inflight, 0,
        "{name}: nothing in flight once DPDK's cache is flushed"
    );
    assert_eq!(s.in_ring + s.in_caches, N as usize);
    assert_free_reports(pool, &name, "freed: every object returned");
}

/// A pool freed while mbufs are still out: the handler says how many.
fn leak_report() {
    let pool = create_pool("exh_leak", 256, 0);
    let kept: Vec<*mut sys::rte_mbuf> = (0..7)
        .map(|_| pool.alloc().expect("alloc").into_raw())
        .collect();
    let s = conserved(&pool, "exh_leak 7 out");
    assert_eq!(s.inflight, 7);
    assert_free_reports(pool, "exh_leak", "freed with 7 objects not returned");
    drop(kept); // raw pointers into freed memory: never touched again.
}

/// A run of failed gets, then every mbuf back through the cache-off fast
/// paths alone (which leave the failure hint alone: they move the ring),
/// then free: the earlier failures must not be reported as lost objects.
fn failures_before_a_full_return() {
    let pool = create_pool("exh_trail", 64, 0);
    let held: Vec<Mbuf> = (0..64).map(|_| pool.alloc().expect("alloc")).collect();
    for _ in 0..3 {
        assert!(pool.alloc().is_none(), "exh_trail: the pool is empty");
    }
    drop(held);
    let s = conserved(&pool, "exh_trail all back");
    assert_eq!(s.inflight, 0);
    assert_free_reports(pool, "exh_trail", "freed: every object returned");
}

#[test]
fn a_pool_of_n_hands_out_n_mbufs_then_fails_losing_none() {
    init_eal(&eal_args("eal_exhaustion", "0"));
    exhaust(0);
    exhaust(32);
    leak_report();
    failures_before_a_full_return();
    eprintln!("test: eal_exhaustion OK");
}
