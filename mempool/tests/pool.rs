//! The pool as a whole: init/attach by magic in caller memory, exhaustion
//! (all-or-nothing, nothing lost, recovery), error values (their errno is
//! pmd-glue's: `pmd-glue/src/error.rs`).
#![cfg(not(loom))]

mod common;

use core::ptr::{null_mut, NonNull};

use common::*;
use mempool::{HeapPool, PoolConfig, PoolCore, PoolError, PoolState};

fn cfg() -> PoolConfig {
    PoolConfig {
        max_lcores: 4,
        cache_size: Some(16),
        ..PoolConfig::new(100)
    }
}

#[test]
fn attach_finds_the_same_pool_in_the_same_memory() {
    let pool = populated_pool(cfg(), 0);
    // SAFETY: the memory is the live pool's block.
    let other = unsafe { PoolCore::attach(pool.as_ptr()) }.unwrap();
    let mut o = [null_mut(); 3];
    other.get_shared(&mut o).unwrap();
    assert_eq!(pool.inflight(), 3);
    pool.put_shared(&o).unwrap();
    assert_eq!(other.available(), 100);
    assert_eq!(other.layout(), pool.layout());
}

#[test]
fn attach_rejects_memory_without_a_pool() {
    let mut junk = vec![0u128; 1024];
    let p = NonNull::new(junk.as_mut_ptr().cast::<u8>()).unwrap();
    // SAFETY: `junk` is readable and larger than a pool header.
    let e = unsafe { PoolCore::attach(p) }.err().unwrap();
    assert_eq!(
        e,
        PoolError::NotAPool {
            addr: p.as_ptr() as usize
        }
    );
}

#[test]
fn init_in_caller_memory_holds_no_pointers() {
    // Initialise in one buffer, copy the bytes elsewhere: the copy is a
    // working pool (offsets, not pointers), as a secondary mapping the
    // memzone at another address would need.
    let layout = cfg().layout().unwrap();
    let words = layout.bytes().div_ceil(128);
    #[repr(C, align(128))]
    #[derive(Clone, Copy)]
    struct Line([u64; 16]);
    let mut a = vec![Line([0; 16]); words];
    let mut b = vec![Line([0; 16]); words];
    assert_eq!(a[0].0.len() * 8, 128);
    let pa = NonNull::new(a.as_mut_ptr().cast::<u8>()).unwrap();
    // SAFETY: `a` is large and aligned enough and outlives `pool`.
    let pool = unsafe { PoolCore::init(pa, &layout) };
    pool.register_chunk(chunk_spec(100)).unwrap();
    for i in 0..100 {
        // SAFETY: single thread.
        unsafe { pool.put(1, &[obj(i)]) }.unwrap();
    }
    b.copy_from_slice(&a);
    drop(a);
    let pb = NonNull::new(b.as_mut_ptr().cast::<u8>()).unwrap();
    // SAFETY: `b` holds a byte copy of an initialised pool.
    let copy = unsafe { PoolCore::attach(pb) }.unwrap();
    assert_eq!(copy.available(), 100);
    assert_eq!(copy.owns(obj(42)).map(|i| i.0), Some(42));
    let mut all = vec![null_mut(); 100];
    // SAFETY: single thread.
    unsafe { copy.get(1, &mut all) }.unwrap();
    let mut idx: Vec<_> = all.iter().map(|&p| idx(p)).collect();
    idx.sort_unstable();
    assert_eq!(idx, (0..100).collect::<Vec<_>>());
}

#[test]
fn exhaustion_is_all_or_nothing_and_recovers() {
    let pool = populated_pool(cfg(), 0);
    for lcore in [0u32, 3, u32::MAX] {
        let mut all = vec![null_mut(); 101];
        // SAFETY: single thread.
        let e = unsafe { pool.get(lcore, &mut all) }.unwrap_err();
        assert!(
            matches!(e, PoolError::Exhausted { requested: 101, .. }),
            "{e}"
        );
        assert_eq!(pool.inflight(), 0, "a failed get hands out nothing");
        assert_eq!(pool.available(), 100);
        assert_conserved(&pool);
    }
    // Take everything, one lcore at a time, then fail, then recover.
    let mut held = Vec::new();
    let mut o = [null_mut(); 7];
    let mut l = 0u32;
    loop {
        // SAFETY: single thread.
        match unsafe { pool.get(l % 4, &mut o) } {
            Ok(()) => held.extend_from_slice(&o),
            Err(PoolError::Exhausted { .. }) => {
                // SAFETY: single thread: every lcore is quiescent.
                unsafe { pool.flush_all_quiescent() }.unwrap();
                if pool.available() < 7 {
                    break;
                }
            }
            Err(e) => panic!("{e}"),
        }
        l += 1;
        assert_conserved(&pool);
    }
    assert_eq!(held.len(), 98);
    let mut rest = [null_mut(); 2];
    pool.get_shared(&mut rest).unwrap();
    held.extend_from_slice(&rest);
    assert_eq!(pool.available(), 0);
    assert!(pool.get_shared(&mut rest[..1]).is_err());
    // Recovery: return everything, then a full-size get works.
    pool.put_shared(&held).unwrap();
    let mut all = vec![null_mut(); 100];
    pool.get_shared(&mut all).unwrap();
    pool.put_shared(&all).unwrap();
    assert_exactly_once(&pool);
}

#[test]
fn empty_bulks_and_null_objects() {
    let pool = populated_pool(cfg(), 0);
    // SAFETY: single thread.
    unsafe {
        pool.get(0, &mut []).unwrap();
        pool.put(0, &[]).unwrap();
    }
    pool.get_shared(&mut []).unwrap();
    pool.put_shared(&[]).unwrap();
    assert_eq!(
        pool.put_shared(&[obj(0), null_mut()]).unwrap_err(),
        PoolError::NullObject { index: 1 }
    );
    assert_eq!(pool.available(), 100, "failed put inserted nothing");
}

#[test]
fn overfull_put_is_refused_whole() {
    // Returning objects that never went out (a double free with validation
    // off) eventually overflows the ring (it guarantees room for `objects`,
    // may take a few more): refused whole, nothing inserted.
    let pool = populated_pool(cfg(), u32::MAX);
    let mut extra = 0;
    let e = loop {
        let before = pool.ring().len();
        match pool.put_shared(&[obj(1), obj(2)]) {
            Ok(()) => extra += 2,
            Err(e) => {
                assert_eq!(pool.ring().len(), before, "refused put inserted something");
                break e;
            }
        }
        assert!(extra < 1000, "ring never refused");
    };
    assert_eq!(e, PoolError::Overfull { requested: 2 });
    assert!(pool.ring().len() >= 100);
}

#[test]
fn stats_report_configuration() {
    let pool = populated_pool(cfg(), 0);
    let s = pool.stats();
    assert_eq!(
        (s.objects, s.populated, s.cache_size, s.max_lcores),
        (100, 100, 16, 4)
    );
    assert_eq!(s.state, PoolState::Active);
    assert_eq!(s.chunks, 1);
    assert!(!s.validate);
    assert_eq!(s.accounting, mempool::ACCOUNTING);
    assert_eq!(s.in_ring + s.in_caches, 100);
}

/// The activity mark moves with every get and put that moves an object,
/// through the ring or through the marking lcore's cache, and stays put
/// across failed gets; another lcore's mark differs.
#[test]
fn the_activity_mark_moves_with_every_object_moved() {
    let pool = populated_pool(cfg(), 0);
    let mut o = [null_mut(); 1];
    let mut seen = vec![pool.activity_mark(1)];
    // With `accounting` every mark is new (the hold count only grows);
    // without, each differs from the one before (the length moved).
    let mut moved = |pool: &PoolCore, what: &str| {
        let m = pool.activity_mark(1);
        assert_ne!(Some(&m), seen.last(), "{what}: the mark must move");
        if PoolCore::MARK_SEES_CACHE {
            assert!(!seen.contains(&m), "{what}: the mark must be new");
        }
        seen.push(m);
    };
    // SAFETY: single thread; objects of `pool`.
    unsafe { pool.get(1, &mut o) }.unwrap();
    moved(&pool, "a get that refilled lcore 1's cache");
    // SAFETY: single thread; objects of `pool`.
    unsafe { pool.put(1, &o) }.unwrap();
    moved(&pool, "a put into the cache");
    // SAFETY: single thread; objects of `pool`.
    assert!(unsafe { pool.try_get_cached(1, &mut o) });
    moved(&pool, "a cache hit");
    // SAFETY: single thread; objects of `pool`.
    assert!(unsafe { pool.try_put_cached(1, &o) });
    moved(&pool, "a put into the cache, on the fast path");
    pool.get_shared(&mut o).unwrap();
    moved(&pool, "a get from the ring");
    pool.put_shared(&o).unwrap();
    moved(&pool, "a put to the ring");
    if PoolCore::MARK_SEES_CACHE {
        // A get and a put of the same size on the fast path: the length is
        // back where it was, the hold count is not.
        let before = pool.activity_mark(1);
        // SAFETY: single thread; objects of `pool`.
        assert!(unsafe { pool.try_get_cached(1, &mut o) });
        // SAFETY: single thread; objects of `pool`.
        assert!(unsafe { pool.try_put_cached(1, &o) });
        assert_ne!(pool.activity_mark(1), before, "a get and a put, cached");
    }
    // Failures change nothing; another lcore's mark is another mark.
    let mut all = vec![null_mut(); 101];
    let before = pool.activity_mark(1);
    // SAFETY: single thread; objects of `pool`.
    assert!(unsafe { pool.get(1, &mut all) }.is_err());
    assert!(pool.get_shared(&mut all).is_err());
    assert_eq!(pool.activity_mark(1), before, "failed gets");
    assert_ne!(pool.activity_mark(2), before);
    assert_conserved(&pool);
}

/// The fast paths find an lcore's cache with a shift by a constant (every
/// pool with a cache has the same per-lcore stride), the checked paths and
/// the accounting with the pool's stride: both must name the same memory,
/// whatever the cache size and the lcore. A fast-path put on each lcore in
/// turn must show in that lcore's `cache_len` alone, a checked get on that
/// lcore must take it back from the cache, and a fast-path get must return
/// what a checked put left there.
#[test]
fn the_fast_paths_and_the_checked_paths_find_the_same_cache() {
    for cache_size in [1, 3, 16, 100, 128, 511, 512] {
        let lcores = 5;
        let cfg = PoolConfig {
            max_lcores: lcores,
            cache_size: Some(cache_size),
            ..PoolConfig::new(1024)
        };
        let pool = populated_pool(cfg, lcores);
        let mut all = vec![null_mut(); lcores as usize];
        pool.get_shared(&mut all).unwrap();
        for (lcore, &o) in (0..lcores).zip(&all) {
            let before: Vec<usize> = (0..lcores).map(|l| pool.cache_len(l)).collect();
            // SAFETY: single thread; an object of `pool`.
            let put = unsafe { pool.try_put_cached(lcore, &[o]) };
            assert!(put, "size {cache_size}");
            for l in 0..lcores {
                let want = before[l as usize] + usize::from(l == lcore);
                assert_eq!(
                    pool.cache_len(l),
                    want,
                    "size {cache_size}, put on {lcore}, lcore {l}"
                );
            }
            let mut back = [null_mut(); 1];
            // SAFETY: single thread; room for one object.
            unsafe { pool.get(lcore, &mut back) }.unwrap();
            assert_eq!(
                back[0], o,
                "size {cache_size}, lcore {lcore}: the checked get"
            );
            assert_eq!(pool.cache_len(lcore), before[lcore as usize]);
            // SAFETY: single thread; an object of `pool`.
            unsafe { pool.put(lcore, &back) }.unwrap();
            let mut again = [null_mut(); 1];
            // SAFETY: single thread; room for one object.
            assert!(unsafe { pool.try_get_cached(lcore, &mut again) });
            assert_eq!(
                again[0], o,
                "size {cache_size}, lcore {lcore}: the fast get"
            );
            assert_eq!(pool.cache_len(lcore), before[lcore as usize]);
            // SAFETY: single thread; an object of `pool`.
            unsafe { pool.put(lcore, &again) }.unwrap();
        }
        assert_conserved(&pool);
    }
}

/// A newest-first pool of 64 objects for lcores 0 and 1, with a handler
/// cache of `cache` (0: off), populated by `lcore`.
fn newest_pool(cache: usize, lcore: u32) -> HeapPool {
    populated_pool(
        PoolConfig {
            max_lcores: 2,
            cache_size: Some(cache),
            newest_first: true,
            ..PoolConfig::new(64)
        },
        lcore,
    )
}

/// A single-producer pool ignores newest first (its producer takes no lock
/// to take objects back under): it says so, keeps the fast paths, and
/// hands out the oldest.
#[test]
fn newest_first_on_a_single_producer_pool_stays_oldest_first() {
    // SAFETY: one thread, the only producer.
    let pool = unsafe {
        populated_pool_unchecked(
            PoolConfig {
                max_lcores: 2,
                cache_size: Some(0),
                newest_first: true,
                single_producer: true,
                ..PoolConfig::new(64)
            },
            0,
        )
    };
    assert!(!pool.newest_first());
    let mut two = [null_mut(); 2];
    // SAFETY: one thread uses every lcore id here.
    unsafe {
        assert!(pool.try_get_direct(0, &mut two));
        assert_eq!(two, [obj(0), obj(1)]);
        assert!(pool.try_put_direct(0, &two));
        pool.get(0, &mut two).unwrap();
        assert_eq!(two, [obj(2), obj(3)]);
        pool.put(0, &two).unwrap();
    }
}

/// `newest_first`: a get by the lcore whose put was the ring's last takes
/// those objects back first; other lcores and callers without a slot get
/// the oldest; the fast paths refuse such a pool, and the counts stay exact.
#[test]
fn newest_first_gives_an_lcore_back_what_it_put_last() {
    let pool = newest_pool(0, 0);
    assert!(pool.newest_first());
    let mut two = [null_mut(); 2];
    // SAFETY: one thread uses every lcore id here.
    unsafe {
        // The fast paths leave it to the checked entry.
        assert!(!pool.try_get_direct(0, &mut two));
        assert!(!pool.try_get_direct(u32::MAX, &mut two[..1]));
        // Lcore 0 put every object, the 63rd last.
        let before = pool.stats();
        pool.get(0, &mut two).unwrap();
        assert_eq!(two, [obj(62), obj(63)]);
        // A take-back counts as handed out, and as nothing taken back.
        let after = pool.stats();
        assert_eq!(after.hold, before.hold + 2, "hold counts the take-back");
        assert_eq!(after.release, before.release);
        assert_eq!(after.inflight, 2);
        // Lcore 1 put nothing: the oldest.
        let mut one = [null_mut()];
        pool.get(1, &mut one).unwrap();
        assert_eq!(one, [obj(0)]);
        // Lcore 0 again, and now its put back comes back first.
        pool.put(0, &two[..1]).unwrap();
        pool.get(0, &mut one).unwrap();
        assert_eq!(one, [obj(62)]);
        // Once lcore 1 has put last, lcore 0 gets the oldest.
        pool.put(1, &[obj(0)]).unwrap();
        pool.get(0, &mut one).unwrap();
        assert_eq!(one, [obj(1)]);
        // A caller without a slot: the oldest, and its put names nobody.
        pool.get_shared(&mut two).unwrap();
        assert_eq!(two, [obj(2), obj(3)]);
        pool.put_shared(&two).unwrap();
        pool.get(1, &mut one).unwrap();
        assert_eq!(one, [obj(3)], "lcore 1's put was still the last named");
        assert_eq!(pool.inflight(), 4);
        pool.put(1, &[obj(1), obj(3), obj(62), obj(63)]).unwrap();
    }
    assert_eq!(pool.inflight(), 0);
    assert_conserved(&pool);
    assert_exactly_once(&pool);
}

/// With the handler cache on, a newest-first pool keeps the cache's fast
/// paths: a hit never reaches the ring, where the order is chosen.
#[test]
fn newest_first_keeps_the_cache_fast_paths() {
    let pool = newest_pool(8, 1);
    let mut four = [null_mut(); 4];
    let mut one = [null_mut()];
    // SAFETY: one thread uses every lcore id here.
    unsafe {
        // An empty cache: the fast path misses, the checked get refills.
        assert!(!pool.try_get_cached(0, &mut one));
        pool.get(0, &mut four).unwrap();
        // Now the cache's own paths serve lcore 0, last in, first out.
        assert!(pool.try_put_cached(0, &four[3..]));
        assert!(pool.try_get_cached(0, &mut one));
        assert_eq!(one[0], four[3]);
        assert!(pool.try_put_cached_bulk(0, &four));
    }
    assert_eq!(pool.inflight(), 0);
    assert_conserved(&pool);
}

/// With the handler cache on, a refill by the lcore that flushed last
/// takes back what it flushed.
#[test]
fn newest_first_refills_an_lcore_with_what_it_flushed() {
    let pool = newest_pool(8, 1);
    let mut mine = vec![null_mut(); 40];
    // SAFETY: one thread uses every lcore id here.
    unsafe {
        pool.get(0, &mut mine).unwrap();
        // Back through lcore 0's cache: its flushes name it.
        for o in mine.chunks(4) {
            pool.put(0, o).unwrap();
        }
        assert_eq!(pool.ring().last_putter(), 0);
        // Empty the cache into the ring, then refill: the newest objects,
        // all of them among those lcore 0 put.
        pool.flush_lcore(0).unwrap();
        let mut got = [null_mut(); 6];
        pool.get(0, &mut got).unwrap();
        assert!(got.iter().all(|o| mine.contains(o)), "{got:?}");
        pool.put(0, &got).unwrap();
    }
    assert_eq!(pool.inflight(), 0);
    assert_conserved(&pool);
}
