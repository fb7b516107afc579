//! loom models of the pool's concurrent protocols, run with
//! `RUSTFLAGS="--cfg loom" cargo test -p mempool --release --test loom_pool`.
//!
//! * cache refill/flush on one lcore racing direct ring use by a non-EAL
//!   thread: every object delivered exactly once, conservation at the end;
//! * late returns (lcore slow path and non-EAL path) racing pollers of the
//!   shutdown state machine: never released while an object is out,
//!   released exactly once;
//! * a direct pool, counted by its ring's totals: the release waits for a
//!   put's fills (single producer) or its unlock (the producer lock), and a
//!   single producer dead mid-put is waited for as an unfinished put
//!   (`unfilled`), not as an object out.
#![cfg(loom)]

use core::ffi::c_void;
use core::ptr::null_mut;

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use mempool::crash::{self, CrashSite};
use mempool::{
    ChunkSpec, HeapPool, NoDma, PollOutcome, PoolConfig, PoolError, PoolState, VirtAddr, VirtRange,
};

mod loom_model;

const BASE: usize = 0x1000;
const STRIDE: usize = 64;

fn obj(i: usize) -> *mut c_void {
    (BASE + i * STRIDE) as *mut c_void
}

/// A pool of `n` objects, all in the ring, lcore 0 with a cache of `cache`.
fn pool(n: usize, cache: usize) -> HeapPool {
    pool_with(n, cache, false)
}

/// [`pool`] that frees its block (for loom: marks it freed, and every
/// shutdown-path touch checks it is ordered before) when one of its driver
/// methods returns `Released`.
fn freeing_pool(n: usize, cache: usize) -> HeapPool {
    pool_with(n, cache, true)
}

fn pool_with(n: usize, cache: usize, freeing: bool) -> HeapPool {
    let cfg = PoolConfig {
        max_lcores: 1,
        cache_size: Some(cache),
        max_chunks: 1,
        max_devices: 0,
        ..PoolConfig::new(n)
    };
    let pool = if freeing {
        // SAFETY: every model below stops using a freeing pool once one of
        // its driver methods returned `Released` (the checks after it only
        // count outcomes).
        unsafe { HeapPool::new_freeing(&cfg) }
    } else {
        HeapPool::new(&cfg)
    }
    .unwrap();
    pool.register_chunk(ChunkSpec {
        va: VirtRange::new(VirtAddr(BASE), n * STRIDE),
        iova: None,
        first: VirtAddr(BASE),
        stride: STRIDE,
        count: n,
    })
    .unwrap();
    for i in 0..n {
        pool.put_shared(&[obj(i)]).unwrap();
    }
    pool
}

/// Runs `f` under loom (`loom_model::run`: the executions explored on
/// stderr, a failure when only one was). No preemption bound by default: these models are small enough to explore
/// exhaustively (~30k executions, a few seconds each; the count stops
/// growing from a bound of 20 on). `LOOM_MAX_PREEMPTIONS` sets one.
fn check(name: &str, f: impl Fn() + Sync + Send + 'static) {
    check_bounded(name, None, f)
}

/// [`check`] with a preemption bound when `LOOM_MAX_PREEMPTIONS` sets none
/// (three-thread models).
fn check_bounded(name: &str, bound: Option<usize>, f: impl Fn() + Sync + Send + 'static) {
    loom_model::run(name, bound, f);
}

/// Raw addresses cross threads as `usize`.
fn addrs(o: &[*mut c_void]) -> Vec<usize> {
    o.iter().map(|&p| p as usize).collect()
}

fn ptrs(a: &[usize]) -> Vec<*mut c_void> {
    a.iter().map(|&p| p as *mut c_void).collect()
}

#[test]
fn cache_refill_and_flush_race_the_ring_path() {
    check("cache_refill_and_flush_race_the_ring_path", || {
        // 4 objects, lcore 0 caches up to 2.
        let pool = Arc::new(pool(4, 2));
        let lcore = {
            let pool = Arc::clone(&pool);
            thread::spawn(move || {
                let mut a = [null_mut(); 2];
                let mut b = [null_mut(); 1];
                // Refill (burst of 2 from the ring), pop 2.
                // SAFETY: this thread is the only user of lcore 0.
                let got_a = unsafe { pool.get(0, &mut a) }.is_ok();
                // Refill again (the ring may be short: the other thread holds one).
                // SAFETY: as above.
                let got_b = unsafe { pool.get(0, &mut b) }.is_ok();
                let mut back = Vec::new();
                if got_a {
                    back.extend_from_slice(&a);
                }
                if got_b {
                    back.extend_from_slice(&b);
                }
                // One by one: fills the cache, then flushes its top to the ring.
                for o in back {
                    // SAFETY: as above.
                    unsafe { pool.put(0, &[o]) }.unwrap();
                }
            })
        };
        // Non-EAL caller: straight at the ring.
        let mut o = [null_mut()];
        match pool.get_shared(&mut o) {
            Ok(()) => pool.put_shared(&o).unwrap(),
            Err(PoolError::Exhausted { requested: 1, .. }) => {}
            Err(e) => panic!("{e}"),
        }
        lcore.join().unwrap();
        // Conservation and exactly-once.
        assert_eq!(pool.inflight(), 0);
        assert_eq!(pool.available(), 4);
        // SAFETY: the lcore thread was joined.
        unsafe { pool.flush_all_quiescent() }.unwrap();
        let mut all = [null_mut(); 4];
        pool.get_shared(&mut all).unwrap();
        let mut got = addrs(&all);
        got.sort_unstable();
        assert_eq!(got, addrs(&[obj(0), obj(1), obj(2), obj(3)]));
    });
}

/// Two callers without a slot get at once: the shared hold counter is
/// written with a plain load and store inside the ring's consumer side, so
/// no count may be lost, and a snapshot taken meanwhile never counts fewer
/// objects out than are out. A pool with the handler cache (lcore 0's);
/// the direct pool's variant below counts by the ring's totals instead.
#[test]
fn shared_gets_count_every_hold_under_the_consumer_side() {
    shared_gets_race("shared_gets_count_every_hold_under_the_consumer_side", 1);
}

/// [`shared_gets_count_every_hold_under_the_consumer_side`] on a direct
/// pool (no handler cache), whose counts are the ring's totals.
#[test]
fn shared_gets_on_a_direct_pool_count_by_the_ring() {
    shared_gets_race("shared_gets_on_a_direct_pool_count_by_the_ring", 0);
}

fn shared_gets_race(name: &str, cache: usize) {
    check(name, move || {
        let pool = Arc::new(pool(4, cache));
        let other = {
            let pool = Arc::clone(&pool);
            thread::spawn(move || {
                let mut a = [null_mut(); 2];
                pool.get_shared(&mut a).unwrap();
                addrs(&a)
            })
        };
        let mut b = [null_mut(); 1];
        pool.get_shared(&mut b).unwrap();
        // The other thread's get may or may not have happened: at least
        // this thread's object is out.
        assert!(pool.inflight() >= 1, "{}", pool.inflight());
        let a = other.join().unwrap();
        assert_eq!(pool.inflight(), 3);
        let s = pool.stats();
        if s.accounting {
            assert_eq!(s.hold, 3, "{s:?}");
        }
        pool.put_shared(&ptrs(&a)).unwrap();
        pool.put_shared(&b).unwrap();
        assert_eq!(pool.inflight(), 0);
    });
}

#[test]
fn late_returns_race_the_final_release() {
    check("late_returns_race_the_final_release", || {
        // 2 objects out, pool draining; lcore 0's cache closed.
        let pool = Arc::new(pool(2, 1));
        let mut a = [null_mut()];
        let mut b = [null_mut()];
        // SAFETY: no other thread exists yet.
        unsafe { pool.get(0, &mut a) }.unwrap();
        pool.get_shared(&mut b).unwrap();
        assert!(matches!(
            pool.begin_drain(0, &mut NoDma).unwrap(),
            PollOutcome::Waiting { inflight: 2, .. }
        ));
        let released = Arc::new(AtomicUsize::new(0));
        let check_released = |pool: &HeapPool, released: &AtomicUsize, out: PollOutcome| {
            if let PollOutcome::Released { .. } = out {
                // Never released while an object is out: both are home.
                let mut home = [null_mut(); 2];
                pool.ring()
                    .dequeue_bulk(&mut home)
                    .expect("released with an object out");
                released.fetch_add(1, Ordering::Relaxed);
            }
        };
        let (a, b) = (addrs(&a), addrs(&b));
        // Late return on lcore 0 (slow path: the cache is closed), then poll.
        let t1 = {
            let (pool, released) = (Arc::clone(&pool), Arc::clone(&released));
            thread::spawn(move || {
                // SAFETY: this thread is the only user of lcore 0 now.
                unsafe { pool.put(0, &ptrs(&a)) }.unwrap();
                check_released(&pool, &released, pool.poll(1, &mut NoDma));
            })
        };
        // Late return by a non-EAL thread, then poll.
        let t2 = {
            let (pool, released) = (Arc::clone(&pool), Arc::clone(&released));
            thread::spawn(move || {
                pool.put_shared(&ptrs(&b)).unwrap();
                check_released(&pool, &released, pool.poll(1, &mut NoDma));
            })
        };
        t1.join().unwrap();
        t2.join().unwrap();
        // The returners' own polls may both still see the other's return in
        // flight (store-buffer pattern: each reads the other's counter
        // before its store is visible); the next periodic poll, which
        // happens-after both, must release, unless one of them already did.
        check_released(&pool, &released, pool.poll(2, &mut NoDma));
        assert_eq!(pool.state(), PoolState::Released);
        assert_eq!(released.load(Ordering::Relaxed), 1, "released exactly once");
        assert_eq!(pool.stats().shutdown.releases, 1);
        assert_eq!(pool.poll(3, &mut NoDma), PollOutcome::AlreadyReleased);
    });
}

/// Shutdown has one driver at a time: `begin_drain` races a concurrent
/// poller (an alarm) while lcore 0 returns its object on the fast path.
/// The pool frees itself at release; no driver may touch it afterwards
/// (loom checks every shutdown-path touch against the free). With the
/// caches closed after the state change and no driver token, the poller
/// could release (and free) while `begin_drain` still wrote cache limits.
#[test]
fn begin_drain_races_a_fast_path_put_and_a_poller() {
    check_bounded(
        "begin_drain_races_a_fast_path_put_and_a_poller",
        Some(3),
        || {
            let pool = Arc::new(freeing_pool(3, 2));
            let mut a = [null_mut()];
            // SAFETY: no other thread exists yet; lcore 0 moves to `put` below.
            unsafe { pool.get(0, &mut a) }.unwrap();
            let a = addrs(&a);
            let released = Arc::new(AtomicUsize::new(0));
            let count = |released: &AtomicUsize, out: PollOutcome| {
                if let PollOutcome::Released { .. } = out {
                    released.fetch_add(1, Ordering::Relaxed);
                }
            };
            let put = {
                let pool = Arc::clone(&pool);
                thread::spawn(move || {
                    let o = ptrs(&a);
                    // SAFETY: this thread is the only user of lcore 0 now.
                    unsafe {
                        if !pool.try_put_cached(0, &o) {
                            pool.put(0, &o).unwrap();
                        }
                    }
                })
            };
            let drainer = {
                let (pool, released) = (Arc::clone(&pool), Arc::clone(&released));
                thread::spawn(move || loop {
                    // A driver call racing another one is refused: retry.
                    match pool.begin_drain(0, &mut NoDma).unwrap() {
                        PollOutcome::Busy => thread::yield_now(),
                        out => return count(&released, out),
                    }
                })
            };
            let poller = {
                let (pool, released) = (Arc::clone(&pool), Arc::clone(&released));
                thread::spawn(move || count(&released, pool.poll(1, &mut NoDma)))
            };
            put.join().unwrap();
            drainer.join().unwrap();
            poller.join().unwrap();
            if released.load(Ordering::Relaxed) == 0 {
                // Both drivers returned before the object was back: the next
                // periodic poll releases.
                let out = pool.poll(2, &mut NoDma);
                assert!(matches!(out, PollOutcome::Released { .. }), "{out:?}");
            } else {
                assert_eq!(released.load(Ordering::Relaxed), 1, "released exactly once");
            }
        },
    );
}

/// Two pollers (each after a late return) on a pool that frees itself at
/// release: the loser never runs the poll body (inflight read, wait
/// accounting, release CAS) while or after the winner frees.
#[test]
fn two_pollers_on_a_freeing_pool() {
    check_bounded("two_pollers_on_a_freeing_pool", Some(3), || {
        let pool = Arc::new(freeing_pool(2, 1));
        let mut a = [null_mut()];
        let mut b = [null_mut()];
        pool.get_shared(&mut a).unwrap();
        pool.get_shared(&mut b).unwrap();
        assert!(matches!(
            pool.begin_drain(0, &mut NoDma).unwrap(),
            PollOutcome::Waiting { inflight: 2, .. }
        ));
        let released = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = [addrs(&a), addrs(&b)]
            .into_iter()
            .map(|o| {
                let (pool, released) = (Arc::clone(&pool), Arc::clone(&released));
                thread::spawn(move || {
                    pool.put_shared(&ptrs(&o)).unwrap();
                    if let PollOutcome::Released { .. } = pool.poll(1, &mut NoDma) {
                        released.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        if released.load(Ordering::Relaxed) == 0 {
            let out = pool.poll(2, &mut NoDma);
            assert!(matches!(out, PollOutcome::Released { .. }), "{out:?}");
        } else {
            assert_eq!(released.load(Ordering::Relaxed), 1, "released exactly once");
        }
    });
}

/// A caller without a slot returns the last object while a poller (an
/// alarm) drives the release of a pool that frees itself: the put counts
/// its release while it still holds the ring's producer lock, so the
/// poller may see inflight 0 before that put's unlock. The release must
/// wait for the producer side before the free; loom checks the put's
/// touches against it (fails when `poll` does not wait for the producers).
/// A pool with the handler cache (lcore 0's), whose callers without a
/// slot count on the shared counters; the direct pool's variant below
/// counts by the ring's `seq`, moved before the fills, and waits the same
/// way.
#[test]
fn a_shared_put_counted_under_the_lock_is_unlocked_before_the_free() {
    put_races_the_free(
        "a_shared_put_counted_under_the_lock_is_unlocked_before_the_free",
        1,
        false,
    );
}

/// [`a_shared_put_counted_under_the_lock_is_unlocked_before_the_free`] on
/// a direct pool (no handler cache).
#[test]
fn a_direct_pools_put_is_unlocked_before_the_free() {
    put_races_the_free("a_direct_pools_put_is_unlocked_before_the_free", 0, false);
}

/// [`a_direct_pools_put_is_unlocked_before_the_free`] through the direct
/// pool's fast path (`try_put_direct`), which every caller takes, a
/// non-EAL thread too: it passes the gate, moves the ring's `seq` and
/// fills, with no count of its own. The gate is still open when it is
/// tested (the release waits for the `seq` it moves), and the free waits
/// for its fill and unlock.
#[test]
fn a_direct_pools_fast_path_put_is_unlocked_before_the_free() {
    put_races_the_free(
        "a_direct_pools_fast_path_put_is_unlocked_before_the_free",
        0,
        true,
    );
}

/// The put of one object back into a draining pool that frees itself,
/// racing a poller; `fast`: through `try_put_direct` for a caller without
/// an lcore id, else `put_shared`.
fn put_races_the_free(name: &str, cache: usize, fast: bool) {
    check(name, move || {
        let pool = Arc::new(freeing_pool(2, cache));
        let mut a = [null_mut()];
        pool.get_shared(&mut a).unwrap();
        assert!(matches!(
            pool.begin_drain(0, &mut NoDma).unwrap(),
            PollOutcome::Waiting { inflight: 1, .. }
        ));
        let a = addrs(&a);
        let put = {
            let pool = Arc::clone(&pool);
            thread::spawn(move || {
                if fast {
                    // SAFETY: no other thread uses an lcore id here; the
                    // object is this pool's, out.
                    assert!(unsafe { pool.try_put_direct(u32::MAX, &ptrs(&a)) });
                } else {
                    pool.put_shared(&ptrs(&a)).unwrap();
                }
            })
        };
        let poller = {
            let pool = Arc::clone(&pool);
            thread::spawn(move || pool.poll(1, &mut NoDma))
        };
        put.join().unwrap();
        let out = poller.join().unwrap();
        match out {
            PollOutcome::Released { .. } => {}
            PollOutcome::Waiting { inflight: 1, .. } => {
                // The poll read the counters before the return: the
                // next one, after it, releases.
                let out = pool.poll(2, &mut NoDma);
                assert!(matches!(out, PollOutcome::Released { .. }), "{out:?}");
            }
            out => panic!("{out:?}"),
        }
    });
}

/// A direct pool of two objects, both home, on a single-producer ring: its
/// puts must come one at a time, which each model keeps (this thread fills
/// it, then one putter at a time).
fn single_producer_pool() -> HeapPool {
    let cfg = PoolConfig {
        max_lcores: 1,
        cache_size: Some(0),
        max_chunks: 1,
        max_devices: 0,
        single_producer: true,
        ..PoolConfig::new(2)
    };
    // SAFETY: one putter at a time (above).
    let pool = unsafe { HeapPool::new_unchecked(&cfg) }.unwrap();
    pool.register_chunk(ChunkSpec {
        va: VirtRange::new(VirtAddr(BASE), 2 * STRIDE),
        iova: None,
        first: VirtAddr(BASE),
        stride: STRIDE,
        count: 2,
    })
    .unwrap();
    pool.put_shared(&[obj(0), obj(1)]).unwrap();
    pool
}

/// A direct pool (no handler cache) counts by the ring's totals, and a put
/// counts when it moves `seq`, before its fill. A single-producer ring has
/// no producer lock to wait for: the release must wait until the last
/// fill shows (`PtrRing::fills_done`), or it would release the pool with
/// the object still on its way into its slot (the check below then finds
/// the ring short of it). Fails when `poll` skips that wait.
#[test]
fn a_single_producer_put_is_filled_before_the_release() {
    check("a_single_producer_put_is_filled_before_the_release", || {
        let pool = single_producer_pool();
        let mut a = [null_mut()];
        pool.get_shared(&mut a).unwrap();
        let pool = Arc::new(pool);
        assert!(matches!(
            pool.begin_drain(0, &mut NoDma).unwrap(),
            PollOutcome::Waiting { inflight: 1, .. }
        ));
        let a = addrs(&a);
        let put = {
            let pool = Arc::clone(&pool);
            thread::spawn(move || pool.put_shared(&ptrs(&a)).unwrap())
        };
        let home = |pool: &HeapPool| {
            let mut both = [null_mut(); 2];
            pool.ring()
                .dequeue_bulk(&mut both)
                .expect("released with a put's fill not done");
        };
        let poller = {
            let pool = Arc::clone(&pool);
            thread::spawn(move || {
                let out = pool.poll(1, &mut NoDma);
                if let PollOutcome::Released { .. } = out {
                    home(&pool);
                }
                out
            })
        };
        put.join().unwrap();
        let out = poller.join().unwrap();
        if !matches!(out, PollOutcome::Released { .. }) {
            // The poll came before the put, or before its fill showed: the
            // next one, after both, releases.
            let out = pool.poll(2, &mut NoDma);
            assert!(matches!(out, PollOutcome::Released { .. }), "{out:?}");
            home(&pool);
        }
    });
}

/// Counts live mappings across threads (each thread has its own mapper,
/// as each process has its own `rte_dev_dma_map` calls).
struct LiveMapper(Arc<AtomicUsize>);

impl mempool::DmaMapper for LiveMapper {
    fn map(&mut self, _: mempool::DeviceId, _: &mempool::ChunkInfo) -> Result<(), i32> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    fn unmap(&mut self, _: mempool::DeviceId, _: &mempool::ChunkInfo) -> Result<(), i32> {
        self.0.fetch_sub(1, Ordering::Relaxed);
        Ok(())
    }
}

/// A device attach races the final release: either the release unmaps
/// what the attach mapped, or the attach maps nothing. With the state
/// checked before the DMA lock, the attach could map after the release had
/// unmapped everything: a mapping never undone.
#[test]
fn dma_attach_races_the_final_release() {
    check("dma_attach_races_the_final_release", || {
        let pool = HeapPool::new(&PoolConfig {
            max_lcores: 0,
            max_chunks: 1,
            max_devices: 1,
            ..PoolConfig::new(1)
        })
        .unwrap();
        pool.register_chunk(ChunkSpec {
            va: VirtRange::new(VirtAddr(BASE), STRIDE),
            iova: None,
            first: VirtAddr(BASE),
            stride: STRIDE,
            count: 1,
        })
        .unwrap();
        pool.put_shared(&[obj(0)]).unwrap();
        let pool = Arc::new(pool);
        let live = Arc::new(AtomicUsize::new(0));
        let attach = {
            let (pool, live) = (Arc::clone(&pool), Arc::clone(&live));
            thread::spawn(move || {
                let _ = pool.dma_attach(mempool::DeviceId(1), &mut LiveMapper(live));
            })
        };
        // Nothing out: the drain releases at once (and unmaps).
        let out = pool
            .begin_drain(0, &mut LiveMapper(Arc::clone(&live)))
            .unwrap();
        assert!(matches!(out, PollOutcome::Released { .. }), "{out:?}");
        attach.join().unwrap();
        assert_eq!(
            live.load(Ordering::Relaxed),
            0,
            "a mapping outlived the release"
        );
    });
}

/// A single producer dies in a put of two objects, after moving `seq` past
/// both and filling the first slot, while a poller drains the pool. The
/// pool is never released (for all the pool can tell, the second object
/// is still on its way into its slot), and once the put has counted, the
/// polls report what they wait for: no object out and a put unfinished
/// (`unfilled`), also in the warning, not an object out. Fails if a poll
/// releases the pool, or reports the wait as objects out.
#[test]
fn a_single_producer_that_dies_mid_put_is_waited_for_as_unfilled() {
    check(
        "a_single_producer_that_dies_mid_put_is_waited_for_as_unfilled",
        || {
            let pool = Arc::new(single_producer_pool());
            let mut both = [null_mut(); 2];
            pool.get_shared(&mut both).unwrap();
            assert!(matches!(
                pool.begin_drain(0, &mut NoDma).unwrap(),
                PollOutcome::Waiting {
                    inflight: 2,
                    unfilled: false,
                    ..
                }
            ));
            let both = addrs(&both);
            let put = {
                let pool = Arc::clone(&pool);
                thread::spawn(move || {
                    crash::arm(CrashSite::ProducerFills(1));
                    pool.put_shared(&ptrs(&both)).unwrap();
                    assert!(crash::dying(), "the put passed its crash point");
                })
            };
            let poller = {
                let pool = Arc::clone(&pool);
                thread::spawn(move || pool.poll(1, &mut NoDma))
            };
            put.join().unwrap();
            let out = poller.join().unwrap();
            // Before the put counted: both objects out; after: none out, a
            // put unfinished.
            let unfinished = |out: &PollOutcome| {
                matches!(
                    out,
                    PollOutcome::Waiting {
                        inflight: 0,
                        unfilled: true,
                        ..
                    }
                )
            };
            let before = matches!(
                out,
                PollOutcome::Waiting {
                    inflight: 2,
                    unfilled: false,
                    ..
                }
            );
            assert!(before || unfinished(&out), "{out:?}");
            let out = pool.poll(2, &mut NoDma);
            assert!(unfinished(&out), "{out:?}");
            // An hour on: the warning says the same.
            let out = pool.poll(3_600_000_000_000, &mut NoDma);
            assert!(
                matches!(
                    out,
                    PollOutcome::Warn {
                        inflight: 0,
                        unfilled: true,
                        ..
                    }
                ),
                "{out:?}"
            );
            assert_eq!(pool.state(), PoolState::Draining);
        },
    );
}
