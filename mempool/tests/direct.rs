//! The fast paths of a pool whose handler cache is off (`cache_size 0`):
//! every caller's get and put (an EAL lcore's, a thread's without an lcore
//! id) go straight to the ring, whose totals are the pool's counts (`try_*_direct`, any bulk; `try_*_cached`, the callbacks'
//! inlined path, one object); every other case is refused with nothing
//! changed, so that the caller's slow path handles (and reports) it.
#![cfg(not(loom))]

mod common;

use core::ptr::null_mut;

use common::*;
use mempool::{PoolConfig, PoolError, PoolState, RejectKind};

fn cfg(cache: usize) -> PoolConfig {
    PoolConfig {
        max_lcores: 4,
        cache_size: Some(cache),
        ..PoolConfig::new(64)
    }
}

#[test]
fn cache_off_gets_and_puts_go_to_the_ring_and_are_counted() {
    let pool = populated_pool(cfg(0), 0);
    let mut out = [null_mut(); 5];
    // SAFETY: one thread, lcore 1.
    assert!(unsafe { pool.try_get_direct(1, &mut out) });
    assert_eq!(pool.inflight(), 5);
    assert_eq!(pool.ring().len(), 59);
    assert_eq!(pool.in_caches(), 0);
    // SAFETY: as above; lcore 2 returns what lcore 1 took.
    assert!(unsafe { pool.try_put_direct(2, &out) });
    assert_eq!(pool.inflight(), 0);
    assert_eq!(pool.ring().len(), 64);
    let s = pool.stats();
    if s.accounting {
        // Every object was put once by populate and taken and returned once.
        assert_eq!(s.hold, 5, "{s:?}");
        assert_eq!(s.release, 64 + 5, "{s:?}");
    }
    assert_conserved(&pool);
    assert_exactly_once(&pool);
}

/// A direct pool counts by its ring's totals: every route (an lcore's fast
/// path, a caller without a slot, the checked entry) moves `(enqueued,
/// dequeued)` by exactly what it hands out or takes back, and `hold` /
/// `release` are those totals, so the inflight count stays exact whichever
/// route an object takes out and back; no route writes an lcore's counters.
#[test]
fn a_direct_pool_counts_every_route_by_the_rings_totals() {
    let pool = populated_pool(cfg(0), 0);
    let counts = |pool: &mempool::HeapPool| {
        let s = pool.stats();
        let (enqueued, dequeued) = pool.ring().totals();
        assert_eq!(
            (s.hold, s.release),
            (dequeued as u64, enqueued as u64),
            "{s:?}"
        );
        s.inflight
    };
    assert_eq!(counts(&pool), 0);
    let mut a = [null_mut(); 3];
    let mut b = [null_mut(); 1];
    let mut c = [null_mut(); 4];
    // SAFETY: one thread, acting as lcore 1, then as ids without a slot.
    unsafe {
        assert!(pool.try_get_direct(1, &mut a));
        assert!(pool.try_get_direct(u32::MAX, &mut b));
        pool.get(3, &mut c).unwrap();
    }
    assert_eq!(counts(&pool), 8);
    // No route wrote an lcore's `len | hold` word (the activity mark's last
    // field): the fast path and the checked one alike count by the ring.
    for lcore in 0..4 {
        assert_eq!(pool.activity_mark(lcore)[3], 0, "lcore {lcore}");
    }
    // Back by other routes than they went out by.
    // SAFETY: as above.
    unsafe {
        pool.put(2, &a).unwrap();
        assert!(pool.try_put_direct(u32::MAX, &b));
    }
    pool.put_shared(&c).unwrap();
    assert_eq!(counts(&pool), 0);
    assert_eq!(pool.stats().hold, 8);
    assert_eq!(pool.stats().release, 64 + 8);
    assert_conserved(&pool);
    assert_exactly_once(&pool);
}

#[test]
fn cache_off_refuses_what_the_ring_cannot_do_and_changes_nothing() {
    let pool = populated_pool(cfg(0), 0);
    let mut all = vec![null_mut(); 64];
    // SAFETY: one thread.
    assert!(unsafe { pool.try_get_direct(0, &mut all) });
    let mut one = [null_mut(); 1];
    // SAFETY: one thread.
    assert!(!unsafe { pool.try_get_direct(0, &mut one) }, "empty ring");
    assert_eq!(pool.inflight(), 64);
    // SAFETY: one thread.
    assert!(!unsafe { pool.try_put_direct(0, &[null_mut()]) }, "null");
    // SAFETY: one thread; the slow path reports what the fast path refused.
    let e = unsafe { pool.get(0, &mut one) }.unwrap_err();
    assert!(matches!(e, PoolError::Exhausted { .. }), "{e:?}");
    // SAFETY: one thread.
    assert!(unsafe { pool.try_put_direct(0, &all) });
    assert_eq!(pool.inflight(), 0);
    assert_exactly_once(&pool);
}

#[test]
fn cache_off_fast_paths_follow_the_shutdown_state() {
    let pool = populated_pool(cfg(0), 0);
    let mut out = [null_mut(); 2];
    // SAFETY: one thread.
    assert!(unsafe { pool.try_get_direct(0, &mut out) });
    let mut m = CountingMapper::default();
    pool.begin_drain(0, &mut m).unwrap();
    assert_eq!(pool.state(), PoolState::Draining);
    let mut more = [null_mut(); 1];
    // SAFETY: one thread. No gets once draining...
    assert!(!unsafe { pool.try_get_direct(0, &mut more) });
    // ...but late returns still go back.
    // SAFETY: one thread.
    assert!(unsafe { pool.try_put_direct(0, &out[..1]) });
    assert_eq!(pool.inflight(), 1);
    // SAFETY: one thread.
    assert!(unsafe { pool.put(0, &out[1..]) }.is_ok());
    pool.poll(1, &mut m);
    assert_eq!(pool.state(), PoolState::Released);
    // After the release a put is refused, counted, and the ring untouched.
    // SAFETY: one thread.
    assert!(!unsafe { pool.try_put_direct(0, &out[..1]) });
    // SAFETY: one thread.
    let e = unsafe { pool.put(0, &out[..1]) }.unwrap_err();
    assert!(
        matches!(
            e,
            PoolError::Rejected {
                kind: RejectKind::AfterRelease,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(pool.ring().len(), 64);
}

/// A direct pool serves every caller alike, ids without a cache slot too
/// (past `max_lcores`, or a non-EAL thread's `u32::MAX`), single objects
/// and bulks, counted by the ring's totals; its gate closes for all of
/// them at once: gets when the pool drains, puts at its release. In
/// validation mode nobody passes.
#[test]
fn a_direct_pool_serves_callers_without_a_slot_and_validation_none() {
    let pool = populated_pool(cfg(0), 0);
    let mut out = [null_mut(); 4];
    // SAFETY: one thread, acting as ids without a slot.
    assert!(unsafe { pool.try_get_direct(4, &mut out[..1]) });
    // SAFETY: as above.
    assert!(unsafe { pool.try_get_direct(u32::MAX, &mut out[1..2]) });
    // SAFETY: as above; a bulk too: no slot is needed.
    assert!(unsafe { pool.try_get_direct(u32::MAX, &mut out[2..]) });
    assert_eq!(pool.inflight(), 4);
    assert_eq!(pool.ring().len(), 60);
    // SAFETY: as above; returned by other ids without a slot.
    assert!(unsafe { pool.try_put_direct(u32::MAX, &out[..3]) });
    // SAFETY: as above.
    assert!(unsafe { pool.try_put_direct(4, &out[3..]) });
    assert_eq!(pool.inflight(), 0);
    let s = pool.stats();
    if s.accounting {
        // By the ring's totals: nothing on the shared counters.
        assert_eq!(s.hold, 4, "{s:?}");
        assert_eq!(s.release, 64 + 4, "{s:?}");
    }
    assert_exactly_once(&pool);
    // Gets are refused once the pool drains, for every caller, as `get`
    // refuses them; puts are taken until the release.
    // SAFETY: as above.
    assert!(unsafe { pool.try_get_direct(u32::MAX, &mut out[..2]) });
    let mut m = CountingMapper::default();
    pool.begin_drain(0, &mut m).unwrap();
    assert!(pool.direct_gate(false).is_none() && pool.direct_gate(true).is_some());
    // SAFETY: as above.
    assert!(!unsafe { pool.try_get_direct(u32::MAX, &mut out[2..3]) });
    // SAFETY: as above.
    assert!(!unsafe { pool.try_get_direct(0, &mut out[2..3]) });
    // SAFETY: as above.
    assert!(unsafe { pool.try_put_direct(u32::MAX, &out[..2]) });
    pool.poll(1, &mut m);
    assert_eq!(pool.state(), PoolState::Released);
    assert!(pool.direct_gate(true).is_none());
    // SAFETY: as above.
    assert!(!unsafe { pool.try_put_direct(u32::MAX, &out[..2]) });
    assert_eq!(pool.ring().len(), 64);
    let validating = populated_pool(
        PoolConfig {
            validate: true,
            ..cfg(0)
        },
        0,
    );
    // SAFETY: one thread; every call in validation mode takes the checked
    // path, with or without a slot.
    assert!(!unsafe { validating.try_get_direct(0, &mut out[..1]) });
    // SAFETY: as above.
    assert!(!unsafe { validating.try_get_direct(u32::MAX, &mut out[..1]) });
    // SAFETY: as above.
    assert!(!unsafe { validating.try_put_direct(u32::MAX, &out[..1]) });
    assert!(validating.direct_gate(false).is_none() && validating.direct_gate(true).is_none());
    assert_eq!(validating.inflight(), 0);
    // A pool with the handler cache has no gate: its cache-off paths
    // count on the caller's slot.
    let cached = populated_pool(cfg(8), 0);
    assert!(cached.direct_gate(false).is_none() && cached.direct_gate(true).is_none());
}

/// On a pool with the handler cache, the cache-off paths need the
/// caller's slot: one object from a caller without one is served on the
/// shared counters, a bulk is left to the checked entry, which counts it
/// there too; once the pool drains no slot remains and gets are refused.
#[test]
fn callers_without_a_slot_take_bulks_through_the_checked_entry() {
    let pool = populated_pool(cfg(8), u32::MAX);
    assert!(pool.direct_slot_of(u32::MAX, false).is_none());
    assert!(pool.direct_slot_of(4, true).is_none(), "past max_lcores");
    assert!(pool.direct_slot_of(3, false).is_some() && pool.direct_slot_of(3, true).is_some());
    let mut out = [null_mut(); 8];
    // SAFETY: one thread, acting as ids without a slot.
    unsafe {
        assert!(!pool.try_get_direct(u32::MAX, &mut out));
        assert_eq!(pool.inflight(), 0);
        assert!(pool.try_get_direct(u32::MAX, &mut out[..1]));
        pool.get(u32::MAX, &mut out[1..]).unwrap();
    }
    assert_eq!(pool.inflight(), 8);
    assert_eq!(pool.ring().len(), 56);
    // SAFETY: as above.
    unsafe {
        assert!(!pool.try_put_direct(4, &out[1..]), "a bulk");
        assert!(pool.try_put_direct(4, &out[..1]));
        pool.put(u32::MAX, &out[1..]).unwrap();
    }
    assert_eq!(pool.inflight(), 0);
    let s = pool.stats();
    if s.accounting {
        // Counted on the shared counters, as `get` and `put` count them.
        assert_eq!(s.hold, 8, "{s:?}");
        assert_eq!(s.release, 64 + 8, "{s:?}");
    }
    assert_conserved(&pool);
    assert_exactly_once(&pool);
    // SAFETY: as above.
    assert!(unsafe { pool.try_get_direct(u32::MAX, &mut out[..1]) });
    let mut m = CountingMapper::default();
    pool.begin_drain(0, &mut m).unwrap();
    assert!(pool.direct_slot_of(0, false).is_none());
    // SAFETY: as above.
    assert!(!unsafe { pool.try_get_direct(u32::MAX, &mut out[1..2]) });
    // Puts are still taken while draining.
    // SAFETY: as above.
    assert!(unsafe { pool.try_put_direct(u32::MAX, &out[..1]) });
    assert_eq!(pool.inflight(), 0);
}

#[test]
fn cache_on_fast_path_is_unchanged() {
    let pool = populated_pool(cfg(8), 0);
    let mut out = [null_mut(); 1];
    // SAFETY: one thread. The cache of lcore 3 is empty: the inlined path
    // does not refill (the slow path does).
    assert!(!unsafe { pool.try_get_cached(3, &mut out) });
    // SAFETY: one thread.
    unsafe { pool.get(3, &mut out) }.unwrap();
    // SAFETY: one thread; now the refilled cache serves it.
    assert!(unsafe { pool.try_put_cached(3, &out) });
    // SAFETY: one thread.
    assert!(unsafe { pool.try_get_cached(3, &mut out) });
    assert!(pool.cache_len(3) > 0);
    // SAFETY: one thread.
    unsafe { pool.put(3, &out) }.unwrap();
    assert_eq!(pool.inflight(), 0);
}

#[test]
fn cache_on_bulk_fast_path_takes_any_size_that_fits() {
    // Populated through the ring (by a caller without a slot): every cache starts empty.
    let pool = populated_pool(cfg(32), u32::MAX);
    let mut big = [null_mut(); 20];
    // SAFETY: one thread. Lcore 1's cache is empty: the bulk fast path
    // does not refill either.
    assert!(!unsafe { pool.try_get_cached_bulk(1, &mut big) });
    // SAFETY: one thread; the slow path refills the cache.
    unsafe { pool.get(1, &mut big) }.unwrap();
    let before = pool.cache_len(1);
    // SAFETY: one thread. Above 8 objects (the inline copy's limit) the
    // bulk fast path still takes a put that fits under the limit...
    assert!(!unsafe { pool.try_put_cached(1, &big) });
    // SAFETY: one thread.
    assert!(unsafe { pool.try_put_cached_bulk(1, &big) });
    assert_eq!(pool.cache_len(1), before + 20);
    // ...and refuses one that does not, changing nothing.
    // SAFETY: one thread.
    assert!(unsafe { pool.try_get_cached_bulk(1, &mut big) });
    let mut more = vec![null_mut(); 33];
    // SAFETY: one thread.
    unsafe { pool.get(1, &mut more) }.unwrap();
    let len = pool.cache_len(1);
    assert!(
        // SAFETY: one thread.
        !unsafe { pool.try_put_cached_bulk(1, &more) },
        "above the limit"
    );
    assert_eq!(pool.cache_len(1), len);
    assert_eq!(pool.inflight(), 53);
    // SAFETY: one thread.
    unsafe { pool.put(1, &more) }.unwrap();
    // SAFETY: one thread.
    unsafe { pool.put(1, &big) }.unwrap();
    assert_eq!(pool.inflight(), 0);
    assert_conserved(&pool);
    assert_exactly_once(&pool);
    // A cache-off pool never serves the cached paths.
    let direct = populated_pool(cfg(0), 0);
    // SAFETY: one thread.
    assert!(!unsafe { direct.try_get_cached_bulk(0, &mut big) });
}

#[test]
fn cache_off_leaves_the_cache_fast_path_to_the_direct_one() {
    let pool = populated_pool(cfg(0), 0);
    assert!(pool.is_direct());
    let mut one = [null_mut(); 1];
    // SAFETY: one thread. The cache fast path refuses a cache-off pool...
    assert!(!unsafe { pool.try_get_cached(0, &mut one) });
    assert_eq!(pool.inflight(), 0);
    // SAFETY: one thread. ...whose single objects and bulks go direct.
    assert!(unsafe { pool.try_get_direct(0, &mut one) });
    assert_eq!(pool.inflight(), 1);
    // SAFETY: one thread.
    assert!(!unsafe { pool.try_put_cached(0, &one) });
    // SAFETY: one thread.
    assert!(unsafe { pool.try_put_direct(0, &one) });
    assert_eq!(pool.inflight(), 0);
    let cached = populated_pool(cfg(8), 0);
    assert!(!cached.is_direct());
    // SAFETY: one thread. On a cache-on pool the direct path (which the
    // glue never takes there) bypasses the cache and still counts.
    assert!(unsafe { cached.try_get_direct(0, &mut one) });
    assert_eq!(cached.inflight(), 1);
    // SAFETY: one thread.
    assert!(unsafe { cached.try_put_direct(0, &one) });
    assert_eq!(cached.inflight(), 0);
    assert_exactly_once(&pool);
    assert_exactly_once(&cached);
}

/// A slot looked up once (`direct_slot_of`) serves the lcore's gets and
/// puts as `try_get_direct` / `try_put_direct` would, counted by the
/// ring's totals; on a direct pool every caller has one (its gate), a
/// caller without an lcore id too; a slot looked up before a drain began
/// still serves what was in flight, and the next look-up finds none for
/// gets (puts keep theirs until the release).
#[test]
fn a_slot_looked_up_once_serves_like_the_lookup_each_time() {
    let pool = populated_pool(cfg(0), 0);
    assert!(pool.direct_slot_of(u32::MAX, false).is_some());
    assert!(pool.direct_slot_of(4, true).is_some(), "past max_lcores");
    let get = pool
        .direct_slot_of(2, false)
        .expect("lcore 2 has a get slot");
    let put = pool.direct_slot_of(u32::MAX, true).expect("and a put slot");
    let mut out = [null_mut(); 8];
    // SAFETY: one thread, acting as lcore 2; objects of `pool`.
    assert!(unsafe { pool.try_get_direct_at(get, &mut out) });
    assert_eq!(pool.inflight(), 8);
    assert_eq!(pool.ring().len(), 56);
    let mut bad = out;
    bad[3] = null_mut();
    // SAFETY: as above.
    let took = unsafe { pool.try_put_direct_at(put, &bad) };
    assert!(!took, "a null object");
    assert_eq!(pool.inflight(), 8);
    // SAFETY: as above.
    assert!(unsafe { pool.try_put_direct_at(put, &out) });
    assert_eq!(pool.inflight(), 0);
    let s = pool.stats();
    if s.accounting {
        assert_eq!(s.hold, 8, "counted by the ring's totals: {s:?}");
    }
    // SAFETY: as above.
    assert!(unsafe { pool.try_get_direct_at(get, &mut out[..2]) });
    let mut m = CountingMapper::default();
    pool.begin_drain(0, &mut m).unwrap();
    assert!(
        pool.direct_slot_of(2, false).is_none() && pool.direct_slot_of(u32::MAX, false).is_none(),
        "draining: no get slot"
    );
    let put = pool.direct_slot_of(2, true).expect("puts are still taken");
    // SAFETY: as above.
    assert!(unsafe { pool.try_put_direct_at(put, &out[..2]) });
    assert_eq!(pool.inflight(), 0);
    assert_conserved(&pool);
}
