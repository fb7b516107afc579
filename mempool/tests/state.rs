//! The shutdown state machine with a fake clock: retry and warn periods,
//! release only at zero inflight and exactly once, late returns while
//! draining (also after a device was removed), and returns after release
//! reported.
#![cfg(not(loom))]

mod common;

use core::ptr::null_mut;

use common::*;
use mempool::{
    DeviceId, NoDma, PollOutcome, PoolConfig, PoolError, PoolState, RejectKind, VirtAddr,
};

const S: u64 = 1_000_000_000;

fn cfg() -> PoolConfig {
    PoolConfig {
        max_lcores: 4,
        cache_size: Some(8),
        ..PoolConfig::new(64)
    }
}

#[test]
fn empty_pool_releases_at_once() {
    let pool = populated_pool(cfg(), 0);
    assert_eq!(pool.poll(0, &mut NoDma), PollOutcome::NotDraining);
    assert_eq!(
        pool.begin_drain(5 * S, &mut NoDma).unwrap(),
        PollOutcome::Released {
            waited_ns: 0,
            dma: Ok(0)
        }
    );
    assert_eq!(pool.state(), PoolState::Released);
    assert_eq!(pool.poll(6 * S, &mut NoDma), PollOutcome::AlreadyReleased);
    assert_eq!(pool.stats().shutdown.releases, 1);
    assert!(matches!(
        pool.begin_drain(7 * S, &mut NoDma),
        Err(PoolError::WrongState {
            state: PoolState::Released,
            ..
        })
    ));
}

#[test]
fn retry_and_warn_periods_with_a_fake_clock() {
    let pool = populated_pool(cfg(), 0);
    let mut held = [null_mut(); 3];
    // SAFETY: single thread owns lcore 1.
    unsafe { pool.get(1, &mut held) }.unwrap();
    let t0 = 1000 * S;
    assert_eq!(
        pool.begin_drain(t0, &mut NoDma).unwrap(),
        PollOutcome::Waiting {
            inflight: 3,
            unfilled: false,
            retry_in_ns: S
        }
    );
    assert_eq!(pool.state(), PoolState::Draining);
    // Every second for a minute: waiting, no warning before 60 s.
    let mut warns = Vec::new();
    for sec in 1..=185 {
        match pool.poll(t0 + sec * S, &mut NoDma) {
            PollOutcome::Waiting {
                inflight: 3,
                unfilled: false,
                retry_in_ns,
            } => assert_eq!(retry_in_ns, S),
            PollOutcome::Warn {
                inflight: 3,
                unfilled: false,
                waited_ns,
                retry_in_ns: S,
            } => warns.push(waited_ns / S),
            other => panic!("at {sec} s: {other:?}"),
        }
    }
    assert_eq!(warns, vec![60, 120, 180], "one warning per warn period");
    let st = pool.stats().shutdown;
    assert_eq!((st.warnings, st.waits, st.releases), (3, 186, 0));
    // Returns one by one: still waiting until the last.
    // SAFETY: single thread.
    unsafe { pool.put(2, &held[..2]) }.unwrap();
    assert!(matches!(
        pool.poll(t0 + 186 * S, &mut NoDma),
        PollOutcome::Waiting { inflight: 1, .. }
    ));
    pool.put_shared(&held[2..]).unwrap();
    assert_eq!(
        pool.poll(t0 + 187 * S, &mut NoDma),
        PollOutcome::Released {
            waited_ns: 187 * S,
            dma: Ok(0)
        }
    );
    assert_eq!(
        pool.poll(t0 + 188 * S, &mut NoDma),
        PollOutcome::AlreadyReleased
    );
    assert_eq!(pool.stats().shutdown.releases, 1);
    assert_exactly_once_released(&pool);
}

fn assert_exactly_once_released(pool: &mempool::HeapPool) {
    // Released pools refuse gets; count what is home instead.
    assert_eq!(pool.available(), pool.populated());
    assert_eq!(pool.inflight(), 0);
}

#[test]
fn custom_periods() {
    let pool = populated_pool(
        PoolConfig {
            retry_period_ns: 5,
            warn_period_ns: 20,
            ..cfg()
        },
        u32::MAX,
    );
    let mut o = [null_mut()];
    pool.get_shared(&mut o).unwrap();
    assert_eq!(pool.retry_period_ns(), 5);
    assert!(matches!(
        pool.begin_drain(100, &mut NoDma).unwrap(),
        PollOutcome::Waiting { retry_in_ns: 5, .. }
    ));
    assert!(matches!(
        pool.poll(119, &mut NoDma),
        PollOutcome::Waiting { .. }
    ));
    assert!(matches!(
        pool.poll(120, &mut NoDma),
        PollOutcome::Warn { waited_ns: 20, .. }
    ));
    assert!(matches!(
        pool.poll(121, &mut NoDma),
        PollOutcome::Waiting { .. }
    ));
    // A late warn-time poll warns once, then the next is due a period later.
    assert!(matches!(
        pool.poll(200, &mut NoDma),
        PollOutcome::Warn { waited_ns: 100, .. }
    ));
    assert!(matches!(
        pool.poll(219, &mut NoDma),
        PollOutcome::Waiting { .. }
    ));
}

#[test]
fn draining_closes_caches_refuses_gets_accepts_returns() {
    let pool = populated_pool(cfg(), 0);
    let mut a = [null_mut(); 4];
    let mut b = [null_mut(); 4];
    // SAFETY: single thread.
    unsafe {
        pool.get(1, &mut a).unwrap();
        pool.get(2, &mut b).unwrap();
    }
    assert!(pool.cache_len(1) > 0);
    pool.begin_drain(0, &mut NoDma).unwrap();
    // Gets are refused on the slow paths.
    let mut c = [null_mut(); 8];
    assert_eq!(
        pool.get_shared(&mut c).unwrap_err(),
        PoolError::NotActive {
            state: PoolState::Draining
        }
    );
    // SAFETY: single thread. Lcore 3's cache is empty: slow path.
    let e = unsafe { pool.get(3, &mut c) }.unwrap_err();
    assert_eq!(
        e,
        PoolError::NotActive {
            state: PoolState::Draining
        }
    );
    // A late return on lcore 1 goes to the ring and takes lcore 1's cache along.
    let ring = pool.ring().len();
    let cached = pool.cache_len(1);
    // SAFETY: single thread.
    unsafe { pool.put(1, &a[..1]) }.unwrap();
    assert_eq!(pool.cache_len(1), 0);
    assert_eq!(pool.ring().len(), ring + cached + 1);
    assert_conserved(&pool);
    // SAFETY: single thread.
    unsafe { pool.put(1, &a[1..]) }.unwrap();
    assert!(matches!(
        pool.poll(S, &mut NoDma),
        PollOutcome::Waiting { inflight: 4, .. }
    ));
    // SAFETY: single thread.
    unsafe { pool.put(2, &b) }.unwrap();
    assert!(matches!(
        pool.poll(2 * S, &mut NoDma),
        PollOutcome::Released { .. }
    ));
    assert_conserved(&pool);
}

#[test]
fn drain_quiescent_flushes_every_cache() {
    let pool = populated_pool(cfg(), 0);
    let mut a = [null_mut(); 4];
    for l in 0..4 {
        // SAFETY: single thread.
        unsafe {
            pool.get(l, &mut a).unwrap();
            pool.put(l, &a).unwrap();
        }
    }
    assert!(pool.in_caches() > 0);
    // SAFETY: single thread: every lcore is quiescent.
    let out = unsafe { pool.drain_quiescent(0, &mut NoDma) }.unwrap();
    assert!(matches!(out, PollOutcome::Released { .. }));
    assert_eq!(pool.in_caches(), 0);
    assert_eq!(pool.ring().len(), 64);
}

#[test]
fn return_after_release_is_detected_and_counted() {
    let pool = populated_pool(cfg(), 0);
    let mut a = [null_mut(); 2];
    // SAFETY: single thread.
    unsafe { pool.get(1, &mut a) }.unwrap();
    pool.begin_drain(0, &mut NoDma).unwrap();
    // SAFETY: single thread.
    unsafe { pool.put(1, &a[..1]) }.unwrap();
    // Pretend the application lost track of a[1]: the caller forces release
    // by returning it, then returns it again after release.
    pool.put_shared(&a[1..]).unwrap();
    assert!(matches!(
        pool.poll(S, &mut NoDma),
        PollOutcome::Released { .. }
    ));
    let ring = pool.ring().len();
    for put in [
        // SAFETY: single thread.
        |p: &mempool::HeapPool, o: &[*mut core::ffi::c_void]| unsafe { p.put(1, o) },
        |p: &mempool::HeapPool, o: &[*mut core::ffi::c_void]| p.put_shared(o),
    ] {
        let e = put(&pool, &a[..1]).unwrap_err();
        assert_eq!(
            e,
            PoolError::Rejected {
                requested: 1,
                rejected: 1,
                kind: RejectKind::AfterRelease,
                first: VirtAddr::of(a[0]),
            }
        );
    }
    assert_eq!(pool.ring().len(), ring, "nothing inserted after release");
    assert_eq!(pool.stats().rejected.after_release, 2);
}

#[test]
fn a_device_removed_while_draining_is_unmapped_once_and_never_touched_again() {
    let pool = populated_pool(cfg(), 0);
    let mut m = CountingMapper::default();
    let nic = DeviceId(7);
    let other = DeviceId(8);
    pool.dma_attach(nic, &mut m).unwrap();
    pool.dma_attach(other, &mut m).unwrap();
    let mut held = [null_mut(); 5];
    // SAFETY: single thread.
    unsafe { pool.get(3, &mut held) }.unwrap();
    assert!(matches!(
        pool.begin_drain(10 * S, &mut m).unwrap(),
        PollOutcome::Waiting { inflight: 5, .. }
    ));
    // The device goes away with 5 objects out (the glue's port removal).
    assert_eq!(pool.dma_remove(nic, &mut m), Ok(1));
    assert_eq!(pool.state(), PoolState::Draining);
    assert_eq!(m.unmaps.get(&(nic.0, 0)), Some(&1));
    // A second removal notice touches nothing.
    let calls = m.calls;
    assert_eq!(pool.dma_remove(nic, &mut m), Ok(0));
    assert_eq!(m.calls, calls);
    // Late returns: accepted, no mapper call.
    // SAFETY: single thread.
    unsafe { pool.put(3, &held[..4]) }.unwrap();
    assert_eq!(m.calls, calls);
    assert!(matches!(
        pool.poll(12 * S, &mut m),
        PollOutcome::Waiting { inflight: 1, .. }
    ));
    pool.put_shared(&held[4..]).unwrap();
    // Final release unmaps the other device only.
    assert_eq!(
        pool.poll(13 * S, &mut m),
        PollOutcome::Released {
            waited_ns: 3 * S,
            dma: Ok(1)
        }
    );
    assert_eq!(m.total_unmaps(), 2);
    assert!(m.unmaps.values().all(|&c| c == 1));
    assert!(m.live.values().all(|&l| l == 0));
    // Removing a device of a released pool unmaps nothing again.
    assert_eq!(pool.dma_remove(other, &mut m), Ok(0));
    assert_eq!(m.total_unmaps(), 2);
}

#[test]
fn racing_pollers_release_exactly_once() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    for _ in 0..200 {
        let pool = Arc::new(populated_pool(cfg(), u32::MAX));
        let mut o = [null_mut(); 2];
        pool.get_shared(&mut o).unwrap();
        pool.begin_drain(0, &mut NoDma).unwrap();
        let released = Arc::new(AtomicUsize::new(0));
        let pollers: Vec<_> = (0..2)
            .map(|_| {
                let (pool, released) = (Arc::clone(&pool), Arc::clone(&released));
                std::thread::spawn(move || loop {
                    match pool.poll(1, &mut NoDma) {
                        PollOutcome::Released { .. } => {
                            assert_eq!(pool.available(), 64, "released with an object out");
                            released.fetch_add(1, Ordering::Relaxed);
                            return;
                        }
                        PollOutcome::AlreadyReleased => return,
                        _ => std::hint::spin_loop(),
                    }
                })
            })
            .collect();
        pool.put_shared(&o[..1]).unwrap();
        pool.put_shared(&o[1..]).unwrap();
        for p in pollers {
            p.join().unwrap();
        }
        assert_eq!(released.load(Ordering::Relaxed), 1);
        assert_eq!(pool.stats().shutdown.releases, 1);
    }
}

/// Late returns on two lcores and a non-EAL thread race one poller on a
/// pool that frees its block the moment it is released (as a DPDK
/// application frees the memzone): no return may touch the pool after its
/// last counted release. Run under valgrind (`make test-valgrind`) or Miri
/// to catch a touch after the free.
#[test]
fn late_returns_race_a_freeing_poller() {
    use std::sync::Arc;
    if !mempool::ACCOUNTING {
        // Without the counters inflight is exact only when quiescent: the
        // pool must then not be polled while returns race.
        return;
    }
    let rounds = if cfg!(miri) { 2 } else { 50 };
    for _ in 0..rounds {
        // One chunk record and one device: the tables the default config
        // sizes for 256 chunks and 8 devices make every access to the
        // pool's block slow under Miri (this test there: 260 s -> 28 s).
        let c = PoolConfig {
            max_chunks: 1,
            max_devices: 1,
            ..cfg()
        };
        // SAFETY: after the poller's `Released`, nothing below uses the pool.
        let pool = Arc::new(unsafe { mempool::HeapPool::new_freeing(&c) }.unwrap());
        pool.register_chunk(chunk_spec(c.objects)).unwrap();
        for i in 0..c.objects {
            pool.put_shared(&[obj(i)]).unwrap();
        }
        // Three holders: lcores 1 and 2 and a non-EAL thread.
        let mut held = Vec::new();
        for lcore in [1u32, 2, u32::MAX] {
            let mut o = [null_mut(); 5];
            // SAFETY: single thread so far; each lcore then moves to one thread.
            unsafe { pool.get(lcore, &mut o) }.unwrap();
            held.push((lcore, o.map(|p| p as usize)));
        }
        assert!(matches!(
            pool.begin_drain(0, &mut NoDma).unwrap(),
            PollOutcome::Waiting { inflight: 15, .. }
        ));
        let returners: Vec<_> = held
            .into_iter()
            .map(|(lcore, o)| {
                let pool = Arc::clone(&pool);
                std::thread::spawn(move || {
                    for p in o {
                        // SAFETY: this thread is `lcore`'s only user.
                        unsafe { pool.put(lcore, &[p as *mut core::ffi::c_void]) }.unwrap();
                    }
                })
            })
            .collect();
        let mut now = 1;
        loop {
            match pool.poll(now, &mut NoDma) {
                PollOutcome::Released { .. } => break,
                PollOutcome::Waiting { .. } | PollOutcome::Warn { .. } => {
                    now += 1;
                    std::thread::yield_now();
                }
                other => panic!("{other:?}"),
            }
        }
        for r in returners {
            r.join().unwrap();
        }
    }
}
