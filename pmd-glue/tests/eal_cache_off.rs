//! A pool whose DPDK cache is 0 behaves like ring_mp_mc's: a pool of N
//! serves N gets, whichever lcore freed the objects. The handler's own
//! per-lcore cache is off unless the application asks for it (per pool
//! through `pool_config`, or `PTR_RING_CACHE_SIZE`); with it on, objects
//! freed on one lcore may sit idle in that lcore's cache, at most its size,
//! until `ptr_ring_flush_lcore_cache` gives them back (the documented
//! bound), which this test checks too.

mod common;

use std::ffi::{c_int, c_void, CString};

use common::*;
use dpdk_sys as sys;
use rte_mempool_ptr_ring::capi::{ptr_ring_flush_lcore_cache, ptr_ring_stats, PtrRingStats};
use rte_mempool_ptr_ring::pool_config::PoolConfigArg;

const N: u32 = 512;

/// A pool of `N` 64-byte objects, DPDK cache 0, on ptr_ring with `cfg`.
fn pool(name: &str, cfg: Option<&PoolConfigArg>) -> *mut sys::rte_mempool {
    pool_with_flags(name, cfg, 0)
}

/// [`pool`] with DPDK's pool `flags` (`RTE_MEMPOOL_F_*`).
fn pool_with_flags(name: &str, cfg: Option<&PoolConfigArg>, flags: u32) -> *mut sys::rte_mempool {
    let cname = CString::new(name).unwrap();
    let ops = CString::new("ptr_ring").unwrap();
    // SAFETY: valid strings; DPDK returns null on failure.
    let mp = unsafe { sys::rte_mempool_create_empty(cname.as_ptr(), N, 64, 0, 0, -1, flags) };
    assert!(!mp.is_null(), "create_empty {name}");
    let arg = cfg.map_or(core::ptr::null_mut(), |c| {
        (c as *const PoolConfigArg).cast_mut().cast::<c_void>()
    });
    // SAFETY: a fresh pool; `cfg` outlives the populate below.
    let r = unsafe { sys::rte_mempool_set_ops_byname(mp, ops.as_ptr(), arg) };
    assert_eq!(r, 0, "set_ops_byname {name}");
    // SAFETY: as above.
    let n = unsafe { sys::rte_mempool_populate_default(mp) };
    assert_eq!(n, N as c_int, "populate {name}");
    mp
}

/// Lcore 1: takes every object, one at a time, then frees them all.
unsafe extern "C" fn take_and_free_all(arg: *mut c_void) -> c_int {
    let mp = arg.cast::<sys::rte_mempool>();
    let mut held = Vec::with_capacity(N as usize);
    for _ in 0..N {
        let mut o = core::ptr::null_mut();
        // SAFETY: a live pool, a valid out pointer.
        if unsafe { sys::rte_mempool_get(mp, &mut o) } != 0 {
            return held.len() as c_int + 1;
        }
        held.push(o);
    }
    for o in held {
        // SAFETY: an object of `mp`.
        unsafe { sys::rte_mempool_put(mp, o) };
    }
    0
}

fn on_lcore_1(mp: *mut sys::rte_mempool) {
    // SAFETY: `mp` outlives the call (we wait for the lcore).
    let r = unsafe { sys::rte_eal_remote_launch(Some(take_and_free_all), mp.cast(), 1) };
    assert_eq!(r, 0, "remote launch");
    // SAFETY: launched above.
    let r = unsafe { sys::rte_eal_wait_lcore(1) };
    assert_eq!(
        r, 0,
        "lcore 1 could not take all {N} objects (returned {r})"
    );
}

/// Gets on lcore 0 until one fails; returns what it got.
fn take_all_here(mp: *mut sys::rte_mempool) -> Vec<*mut c_void> {
    let mut held = Vec::new();
    loop {
        let mut o = core::ptr::null_mut();
        // SAFETY: a live pool, a valid out pointer.
        if unsafe { sys::rte_mempool_get(mp, &mut o) } != 0 {
            return held;
        }
        held.push(o);
    }
}

fn free_all(mp: *mut sys::rte_mempool, held: Vec<*mut c_void>) {
    for o in held {
        // SAFETY: objects of `mp`.
        unsafe { sys::rte_mempool_put(mp, o) };
    }
}

#[test]
fn a_pool_of_n_serves_n_gets_whoever_freed_them() {
    init_eal(&eal_args("eal_cache_off", "0-1"));

    // Default settings: objects freed on lcore 1 are all reachable from
    // lcore 0.
    let mp = pool("co_default", None);
    on_lcore_1(mp);
    let held = take_all_here(mp);
    assert_eq!(
        held.len(),
        N as usize,
        "lcore 0 got {} of {N} objects after lcore 1 freed them all",
        held.len()
    );
    free_all(mp, held);
    // SAFETY: a live pool.
    assert_eq!(unsafe { sys::rte_mempool_avail_count(mp) }, N);
    // SAFETY: every object is back.
    unsafe { sys::rte_mempool_free(mp) };

    // The handler's cache asked for (32 per lcore): at most 32 objects may
    // stay with lcore 1 until it is flushed.
    let cfg = PoolConfigArg {
        cache_size: 32,
        ..PoolConfigArg::DEFAULT
    };
    let mp = pool("co_cache32", Some(&cfg));
    // Populate put every object from this lcore, whose cache kept some.
    // SAFETY: this thread is lcore 0 and uses no pool now.
    assert!(unsafe { ptr_ring_flush_lcore_cache(mp, 0) } > 0);
    on_lcore_1(mp);
    let mut held = take_all_here(mp);
    assert!(
        held.len() >= (N - 32) as usize,
        "lcore 0 got only {} of {N} with a 32-object cache on lcore 1",
        held.len()
    );
    // SAFETY: lcore 1 is idle (waited for above).
    let moved = unsafe { ptr_ring_flush_lcore_cache(mp, 1) };
    assert_eq!(moved as usize, N as usize - held.len(), "flush of lcore 1");
    held.extend(take_all_here(mp));
    assert_eq!(held.len(), N as usize, "after the flush every object");
    free_all(mp, held);
    // SAFETY: a live pool.
    assert_eq!(unsafe { sys::rte_mempool_avail_count(mp) }, N);
    // SAFETY: every object is back.
    unsafe { sys::rte_mempool_free(mp) };

    // Freed without flushing lcore 1's cache: DPDK's take-back (every
    // object once, from this lcore) cannot reach the objects there. The
    // free line says every object came back, how many sit in the caches,
    // and that hold - release is short by exactly that many.
    let mp = pool("co_cache32_unflushed", Some(&cfg));
    // SAFETY: as above.
    assert!(unsafe { ptr_ring_flush_lcore_cache(mp, 0) } > 0);
    on_lcore_1(mp);
    // SAFETY: a live pool.
    assert_eq!(unsafe { sys::rte_mempool_avail_count(mp) }, N);
    // SAFETY: every object is back; lcore 1 is idle.
    let ((), log) = capture_log(|| unsafe { sys::rte_mempool_free(mp) });
    let line = log
        .lines()
        .find(|l| l.contains("pool co_cache32_unflushed freed: every object returned, "))
        .unwrap_or_else(|| panic!("no free line naming the cached objects; log:\n{log}"));
    let in_caches = number_after(line, "returned, ");
    assert!(
        (1..=32).contains(&in_caches),
        "between 1 and 32 objects left in lcore 1's cache: {line}"
    );
    let (hold, release) = (
        number_after(line, "(hold "),
        number_after(line, ", release "),
    );
    assert_eq!(
        (release as u32).wrapping_sub(hold as u32),
        in_caches as u32,
        "release - hold is the cached count: {line}"
    );

    free_line_counts_only_the_trailing_failures(&cfg);
    every_bulk_round_trips_through_the_cache();
    newest_first_hands_an_lcore_back_its_own();
    newest_first_on_a_single_producer_pool_is_oldest_first();
}

/// `order` 2 on a pool created `RTE_MEMPOOL_F_SP_PUT`: a notice says the
/// gets stay oldest first (the ring's producer takes no lock), the
/// creation line says so too, and lcore 0 gets the oldest of what it
/// freed, not the newest.
fn newest_first_on_a_single_producer_pool_is_oldest_first() {
    let cfg = PoolConfigArg {
        order: 2,
        ..PoolConfigArg::DEFAULT
    };
    let (mp, log) =
        capture_log(|| pool_with_flags("co_newest_sp", Some(&cfg), sys::RTE_MEMPOOL_F_SP_PUT));
    assert!(
        log.contains(
            "pool co_newest_sp: newest-first gets asked for, but the pool is single-producer"
        ),
        "no notice for the single-producer pool; log:\n{log}"
    );
    assert!(
        log.lines()
            .any(|l| l.contains("pool co_newest_sp: ") && l.contains("gets oldest first")),
        "the creation line says oldest first; log:\n{log}"
    );
    let held = take_all_here(mp);
    assert_eq!(held.len(), N as usize);
    free_all(mp, held.clone());
    let mut o = core::ptr::null_mut();
    // SAFETY: a live pool, a valid out pointer.
    assert_eq!(unsafe { sys::rte_mempool_get(mp, &mut o) }, 0);
    assert_eq!(o, held[0], "the oldest object first");
    // SAFETY: the object taken above; then every object is back.
    unsafe {
        sys::rte_mempool_put(mp, o);
        sys::rte_mempool_free(mp);
    }
}

/// `order` 2 (newest first), DPDK cache 0: an lcore that put last gets its
/// own objects back first, in single gets and in bulks; once another lcore
/// has put last, the oldest; every object reachable, the count exact.
fn newest_first_hands_an_lcore_back_its_own() {
    let cfg = PoolConfigArg {
        order: 2,
        ..PoolConfigArg::DEFAULT
    };
    let mp = pool("co_newest", Some(&cfg));
    let held = take_all_here(mp);
    assert_eq!(held.len(), N as usize);
    free_all(mp, held.clone());
    // The last four freed, newest first one at a time...
    for k in 1..=4 {
        let mut o = core::ptr::null_mut();
        // SAFETY: a live pool, a valid out pointer.
        assert_eq!(unsafe { sys::rte_mempool_get(mp, &mut o) }, 0);
        assert_eq!(o, held[N as usize - k], "single get {k}");
    }
    // ...then a bulk: the four before them, in the order they were freed.
    let mut bulk = [core::ptr::null_mut(); 4];
    // SAFETY: a live pool, room for four.
    let rc = unsafe { sys::rte_mempool_get_bulk(mp, bulk.as_mut_ptr(), 4) };
    assert_eq!(rc, 0);
    assert_eq!(bulk[..], held[N as usize - 8..N as usize - 4]);
    // The pool's zone word is its own (the callbacks' newest-first
    // route): the checked entry points still know the pool, and count
    // the eight taken back as out.
    let mut stats = PtrRingStats::default();
    // SAFETY: a live pool, a valid out pointer.
    assert_eq!(unsafe { ptr_ring_stats(mp, &mut stats) }, 0);
    assert_eq!((stats.inflight, stats.in_ring), (8, u64::from(N) - 8));
    // SAFETY: the eight objects taken above.
    unsafe {
        sys::rte_mempool_put_bulk(mp, bulk.as_ptr(), 4);
        for k in (1..=4).rev() {
            sys::rte_mempool_put(mp, held[N as usize - k]);
        }
    }
    // Lcore 1 takes and frees everything; lcore 0 reaches every object.
    on_lcore_1(mp);
    let all = take_all_here(mp);
    assert_eq!(all.len(), N as usize, "every object reachable from lcore 0");
    free_all(mp, all);
    // SAFETY: a live pool.
    assert_eq!(unsafe { sys::rte_mempool_avail_count(mp) }, N);
    // SAFETY: every object is back.
    unsafe { sys::rte_mempool_free(mp) };
}

/// With the handler cache on (256 per lcore), a put of `n` objects then a
/// get of `n` on the same lcore hands back the same objects in the same
/// order (the top of the lcore's stack), for every `n` from 1 to 200: the
/// single-object path, the inline copies of up to 8 objects and up to
/// `CACHE_INLINE_MAX` (64) in blocks of 8, and `memcpy` above, across the
/// callbacks' split at 64. Every object comes back at the end.
fn every_bulk_round_trips_through_the_cache() {
    let cfg = PoolConfigArg {
        cache_size: 256,
        ..PoolConfigArg::DEFAULT
    };
    let mp = pool("co_bulks", Some(&cfg));
    for n in 1..=200usize {
        let mut first = vec![core::ptr::null_mut::<c_void>(); n];
        // SAFETY: a live pool; room for `n` pointers.
        let r = unsafe { sys::rte_mempool_get_bulk(mp, first.as_mut_ptr(), n as u32) };
        assert_eq!(r, 0, "get_bulk({n}): {r}");
        let distinct: std::collections::HashSet<_> = first.iter().copied().collect();
        assert_eq!(distinct.len(), n, "get_bulk({n}): {n} distinct objects");
        // SAFETY: objects of `mp`, from the get above.
        unsafe { sys::rte_mempool_put_bulk(mp, first.as_ptr(), n as u32) };
        let mut again = vec![core::ptr::null_mut::<c_void>(); n];
        // SAFETY: as above.
        let r = unsafe { sys::rte_mempool_get_bulk(mp, again.as_mut_ptr(), n as u32) };
        assert_eq!(r, 0, "second get_bulk({n}): {r}");
        assert_eq!(again, first, "bulk {n}: the get pops what the put pushed");
        // SAFETY: as above.
        unsafe { sys::rte_mempool_put_bulk(mp, again.as_ptr(), n as u32) };
    }
    // SAFETY: a live pool.
    assert_eq!(unsafe { sys::rte_mempool_avail_count(mp) }, N);
    // SAFETY: this thread is lcore 0 and uses no pool now.
    let moved = unsafe { ptr_ring_flush_lcore_cache(mp, 0) };
    assert!(
        moved > 0,
        "the bulks left objects in lcore 0's cache: {moved}"
    );
    // SAFETY: every object is back.
    unsafe { sys::rte_mempool_free(mp) };
}

/// The free line of a pool freed here (lcore 0) with the handler cache
/// on: failed gets at the end of DPDK's take-back loop are objects that
/// never came back; failed gets before objects came back are not, even
/// when those came back into this lcore's cache alone and the take-back
/// found them there, without the ring moving (the cache's line is in the
/// mark each failure leaves). Returning 10 of 512: 502 missing, not 505.
fn free_line_counts_only_the_trailing_failures(cfg: &PoolConfigArg) {
    for (name, back) in [("co_trail_all_back", N as usize), ("co_trail_10_back", 10)] {
        let mp = pool(name, Some(cfg));
        let mut held = take_all_here(mp);
        assert_eq!(held.len(), N as usize, "{name}: every object");
        for _ in 0..3 {
            let mut o = core::ptr::null_mut();
            // SAFETY: a live pool, a valid out pointer.
            let r = unsafe { sys::rte_mempool_get(mp, &mut o) };
            assert_ne!(r, 0, "{name}: empty");
        }
        // `out` is never used again.
        let out = held.split_off(back);
        free_all(mp, held);
        let expected = if out.is_empty() {
            format!("pool {name} freed: every object returned")
        } else {
            format!("pool {name} freed with {} objects not returned", out.len())
        };
        // SAFETY: a live pool; the objects in `out` are never touched again.
        let ((), log) = capture_log(|| unsafe { sys::rte_mempool_free(mp) });
        assert!(
            log.contains(&expected),
            "{name}: free must log \"{expected}\"; log:\n{log}"
        );
    }
}

/// The decimal number right after the first `word` in `line`.
fn number_after(line: &str, word: &str) -> u64 {
    let rest = &line[line
        .find(word)
        .unwrap_or_else(|| panic!("no {word:?} in {line}"))
        + word.len()..];
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("no number after {word:?} in {line}"))
}
