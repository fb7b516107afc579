//! Pool shutdown and free with EAL, the cases around the deferred release:
//!
//! * a pool whose alloc never ran is freed quietly (DPDK calls `ops->free`
//!   and `ops->get_count` anyway);
//! * a second shutdown of a draining pool is refused with `-EALREADY` (Rust
//!   and C API) and arms nothing; once the first release freed the pool, a
//!   new pool of the same name (likely at the same address) is never acted
//!   on by a stale alarm;
//! * an application that frees the pool itself during a deferred release
//!   cancels it, and the free reports the exact number of mbufs still out;
//! * user-owned caches (`rte_mempool_cache_create`) passed to the shutdown
//!   are handed back (the pool is freed at once); not passed, they stall the
//!   release, the deferral names them, and a flush lets the release finish;
//! * telemetry reports a signed inflight (a double free shows as -1).
//!
//! EAL initialises once per process; the cases are separate tests (so that
//! each reports on its own) that take turns on one lock.

mod common;

use std::ffi::{c_void, CString};
use std::sync::{Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

use common::release_hook::lookup;
use common::*;
use dpdk_sys as sys;
use rte_mempool_ptr_ring::api::MbufPool;
use rte_mempool_ptr_ring::port::{self, ShutdownOutcome};
use rte_mempool_ptr_ring::telemetry::{self, StatValue};
use rte_mempool_ptr_ring::GlueError;

const DATA_ROOM: u16 = sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16;

/// Initialises EAL once; the guard keeps the cases one at a time (they
/// share DPDK's log stream and count this process's deferred releases).
fn setup() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    static EAL: Once = Once::new();
    let guard = TURN.lock().unwrap_or_else(|e| e.into_inner());
    EAL.call_once(|| init_eal(&eal_args("eal_shutdown", "0")));
    guard
}

/// Waits until the pool `name` is gone (freed by its deferred release).
fn wait_freed(name: &str, within: Duration) {
    let t = Instant::now();
    while !lookup(name).is_null() {
        assert!(
            t.elapsed() < within,
            "{name}: not freed within {within:?} of the last return"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn ptr_ring_lines(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains("PTR_RING:")).collect()
}

/// `rte_mempool_create_empty` + `set_ops_byname` + `rte_mempool_free`:
/// the handler's alloc never ran, `pool_data` is NULL.
#[test]
fn free_without_alloc() {
    let _turn = setup();
    let name = c"shut_noalloc";
    // SAFETY: a valid name; DPDK returns null on failure.
    let mp = unsafe { sys::rte_mempool_create_empty(name.as_ptr(), 64, 2048, 0, 0, -1, 0) };
    assert!(!mp.is_null(), "rte_mempool_create_empty");
    // SAFETY: a live, empty pool; our registered ops name.
    let rc =
        unsafe { sys::rte_mempool_set_ops_byname(mp, c"ptr_ring".as_ptr(), core::ptr::null_mut()) };
    assert_eq!(rc, 0, "set_ops_byname");
    let (avail, log) = capture_log(|| {
        // SAFETY: a live pool (get_count on a pool never allocated), then
        // freed once.
        unsafe {
            let n = sys::rte_mempool_avail_count(mp);
            sys::rte_mempool_free(mp);
            n
        }
    });
    assert_eq!(avail, 0, "an unallocated pool holds nothing");
    let lines = ptr_ring_lines(&log);
    assert!(
        lines.is_empty(),
        "freeing a pool whose alloc never ran must be quiet, got: {lines:#?}"
    );
    eprintln!("test: free without alloc: quiet");
}

/// Stale alarms must never act on a new pool of the same name.
fn no_stale_alarm(name: &str) {
    let (pool, log) = capture_log(|| {
        let pool = MbufPool::create(name, 256, 0, DATA_ROOM, -1).expect("pool again");
        // Two retry periods: any alarm still armed for the old pool fires.
        std::thread::sleep(Duration::from_millis(2500));
        pool
    });
    let s = pool.stats().expect("stats");
    assert_eq!(
        s.state,
        mempool::PoolState::Active,
        "{name}: the new pool was acted on"
    );
    assert!(
        !log.contains("deferred release"),
        "{name}: a stale deferred release ran after its pool was freed:\n{log}"
    );
    let ((), log) = capture_log(|| drop(pool));
    assert!(
        log.contains(&format!(
            "PTR_RING: pool {name} freed: every object returned"
        )),
        "{name}: {log}"
    );
}

#[test]
fn second_shutdown_refused() {
    let _turn = setup();
    let name = "shut_twice";
    let pool = MbufPool::create(name, 256, 0, DATA_ROOM, -1).expect("pool");
    let mp = pool.as_ptr();
    let m = pool.alloc().expect("alloc").into_raw();
    let out = pool
        .shutdown(&[], Duration::from_millis(20))
        .expect("first shutdown");
    assert_eq!(out, ShutdownOutcome::Deferred { inflight: 1 });
    assert_eq!(port::deferred_releases_pending(), 1);

    // SAFETY: the pool is alive (one mbuf is out); no lcore uses it.
    let (r, log) = capture_log(|| unsafe { port::shutdown_ports(&[], mp, Duration::ZERO) });
    match r {
        Err(e @ GlueError::AlreadyShuttingDown { .. }) => {
            assert_eq!(e.errno(), -libc::EALREADY)
        }
        other => panic!("second shutdown of a draining pool: {other:?}, expected -EALREADY"),
    }
    assert!(
        log.contains("PTR_RING: ERROR: shutdown: pool \"shut_twice\" is already shutting down"),
        "the refusal is logged: {log}"
    );
    let mut n: i64 = -7;
    // SAFETY: as above; the C API with no ports.
    let rc = unsafe {
        rte_mempool_ptr_ring::capi::ptr_ring_port_shutdown(core::ptr::null(), 0, mp, 0, &mut n)
    };
    assert_eq!(rc, -libc::EALREADY, "C API: second shutdown");
    assert_eq!(n, -7, "C API: refused call writes nothing");
    assert_eq!(
        port::deferred_releases_pending(),
        1,
        "a refused shutdown arms no second alarm"
    );

    // SAFETY: the mbuf we took; its pool is alive.
    unsafe { sys::rte_pktmbuf_free(m) };
    wait_freed(name, Duration::from_secs(3));
    assert_eq!(port::deferred_releases_pending(), 0);
    no_stale_alarm(name);
    eprintln!("test: second shutdown refused, no stale alarm");
}

#[test]
fn app_free_cancels_release() {
    let _turn = setup();
    let name = "shut_appfree";
    let pool = MbufPool::create(name, 256, 0, DATA_ROOM, -1).expect("pool");
    let mp = pool.as_ptr();
    let _m = pool.alloc().expect("alloc").into_raw(); // never returned
    let out = pool
        .shutdown(&[], Duration::from_millis(20))
        .expect("shutdown");
    assert_eq!(out, ShutdownOutcome::Deferred { inflight: 1 });
    // The application frees the pool itself during the deferred release.
    // SAFETY: a live pool, freed once; the mbuf out is never touched again.
    let ((), log) = capture_log(|| unsafe { sys::rte_mempool_free(mp) });
    assert!(
        log.contains(&format!(
            "PTR_RING: pool {name} freed with 1 objects not returned during its draining shutdown"
        )),
        "the free reports the mbuf still out: {log}"
    );
    assert_eq!(
        port::deferred_releases_pending(),
        0,
        "ops->free forgets the deferred release"
    );
    no_stale_alarm(name);
    eprintln!("test: application free cancels the deferred release");
}

fn user_cache(mp: *mut sys::rte_mempool, n: usize) -> *mut sys::rte_mempool_cache {
    // SAFETY: plain allocation; null on failure.
    let cache = unsafe { sys::rte_mempool_cache_create(64, sys::SOCKET_ID_ANY) };
    assert!(!cache.is_null(), "rte_mempool_cache_create");
    let mut objs = vec![core::ptr::null_mut::<c_void>(); n];
    // SAFETY: a live pool, room for n pointers, our cache.
    unsafe {
        assert_eq!(
            sys::rte_mempool_generic_get(mp, objs.as_mut_ptr(), n as u32, cache),
            0
        );
        sys::rte_mempool_generic_put(mp, objs.as_ptr(), n as u32, cache);
        assert!((*cache).len > 0, "the user cache keeps objects");
    }
    cache
}

#[test]
fn user_caches() {
    let _turn = setup();
    // Passed to the shutdown: handed back, the pool is freed at once.
    let pool = MbufPool::create("shut_ucache_a", 512, 0, DATA_ROOM, -1).expect("pool");
    let mp = pool.as_ptr();
    let cache = user_cache(mp, 32);
    // SAFETY: cache length read while nobody uses it.
    let cached = unsafe { (*cache).len };
    let s = pool.stats().expect("stats");
    assert_eq!(s.inflight, i64::from(cached), "cached objects count as out");
    let pool_ptr = pool.as_ptr();
    core::mem::forget(pool); // freed by the shutdown below
                             // SAFETY: a live pool of ours, quiescent; `cache` is unused meanwhile.
    let out = unsafe {
        port::shutdown_ports_with_caches(&[], &[cache], pool_ptr, Duration::from_millis(200))
    }
    .expect("shutdown with caches");
    assert!(
        matches!(out, ShutdownOutcome::Freed { .. }),
        "user cache handed back: {out:?}"
    );
    assert!(lookup("shut_ucache_a").is_null());
    // SAFETY: the cache is empty and ours.
    unsafe { sys::rte_mempool_cache_free(cache) };

    // Not passed: the release waits, the deferral says where to look.
    let name = "shut_ucache_b";
    let pool = MbufPool::create(name, 512, 0, DATA_ROOM, -1).expect("pool");
    let mp = pool.as_ptr();
    let cache = user_cache(mp, 32);
    // SAFETY: as above.
    let cached = unsafe { (*cache).len };
    let (out, log) = capture_log(|| pool.shutdown(&[], Duration::from_millis(50)));
    assert_eq!(
        out.expect("shutdown"),
        ShutdownOutcome::Deferred {
            inflight: i64::from(cached)
        }
    );
    assert!(
        log.contains("user-owned mempool caches") && log.contains("rte_mempool_cache_flush"),
        "the deferral names user caches and the flush call: {log}"
    );
    // The documented way out: flush the user cache into the pool.
    // SAFETY: the pool is alive (the cache's objects are out); our cache.
    unsafe { sys::rte_mempool_cache_flush(cache, mp) };
    wait_freed(name, Duration::from_secs(3));
    // SAFETY: empty and ours.
    unsafe { sys::rte_mempool_cache_free(cache) };
    eprintln!("test: user caches handed back");
}

#[test]
fn telemetry_signed_inflight() {
    let _turn = setup();
    let name = "shut_tel";
    let pool = MbufPool::create(name, 64, 0, DATA_ROOM, -1).expect("pool");
    let mp = pool.as_ptr();
    let mut obj: *mut c_void = core::ptr::null_mut();
    // SAFETY: a live pool; the same object put twice (a double free that
    // validation mode, off here, would have refused).
    unsafe {
        assert_eq!(sys::rte_mempool_get(mp, &mut obj), 0);
        sys::rte_mempool_put(mp, obj);
        sys::rte_mempool_put(mp, obj);
    }
    let cname = CString::new(name).expect("name");
    let stats = telemetry::pool_stats(&cname).expect("stats of a ptr_ring pool");
    let get = |k: &str| {
        stats
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no {k} in {stats:?}"))
    };
    assert_eq!(
        get("inflight"),
        StatValue::I64(-1),
        "a double free shows as inflight -1"
    );
    assert!(matches!(get("handler_dequeue_failures"), StatValue::U64(_)));
    assert!(telemetry::pool_stats(c"no_such_pool").is_none());
    // Take the extra pointer back out, so that the pool frees cleanly.
    // SAFETY: a live pool.
    unsafe { assert_eq!(sys::rte_mempool_get(mp, &mut obj), 0) };
    drop(pool);
    eprintln!("test: telemetry inflight is signed");
}

/// Telemetry reads a pool by name while the application creates and frees
/// pools of that name: every reply is either "no such pool" or a whole,
/// consistent pool (the release lock keeps a pool it found alive). The
/// cycles go on until the reader has, many times each, found the pool,
/// found it absent, and made a read that overlapped a free (a generation
/// counter, odd while a free runs, was odd or moved across the read): a run
/// in which the race never happened fails instead of passing.
#[test]
fn telemetry_races_free() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    /// Replies of each kind the reader must see.
    const EACH: u64 = 100;
    /// How long the cycles may go on to get them.
    const WITHIN: Duration = Duration::from_secs(60);
    let _turn = setup();
    let name = "shut_race";
    let stop = Arc::new(AtomicBool::new(false));
    let generation = Arc::new(AtomicU64::new(0));
    // Replies with the pool, without it, and reads that overlapped a free.
    let counts: Arc<[AtomicU64; 3]> = Arc::new(Default::default());
    let reader = {
        let (stop, generation, counts) = (stop.clone(), generation.clone(), counts.clone());
        std::thread::spawn(move || {
            let cname = CString::new(name).expect("name");
            // Relaxed: a flag to leave the loop.
            while !stop.load(Ordering::Relaxed) {
                // Acquire pairs with the Release increments around each
                // free below: a read that starts after a free finished sees
                // its even generation.
                let before = generation.load(Ordering::Acquire);
                let reply = telemetry::pool_stats(&cname);
                let after = generation.load(Ordering::Acquire);
                match reply {
                    None => counts[1].fetch_add(1, Ordering::Relaxed),
                    Some(v) => {
                        let get = |k: &str| v.iter().find(|(n, _)| *n == k).map(|(_, x)| x.clone());
                        assert_eq!(get("size"), Some(StatValue::U64(128)));
                        assert_eq!(get("state"), Some(StatValue::Str("active".into())));
                        counts[0].fetch_add(1, Ordering::Relaxed)
                    }
                };
                if before % 2 == 1 || before != after {
                    counts[2].fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };
    let enough = || counts.iter().all(|c| c.load(Ordering::Relaxed) >= EACH);
    let t0 = Instant::now();
    let mut cycles = 0u64;
    let ((), log) = capture_log(|| {
        while (cycles < 1000 || !enough()) && t0.elapsed() < WITHIN && !reader.is_finished() {
            let pool = MbufPool::create(name, 128, 0, DATA_ROOM, -1).expect("pool");
            // Release (both): pairs with the reader's Acquire loads.
            generation.fetch_add(1, Ordering::Release);
            drop(pool);
            generation.fetch_add(1, Ordering::Release);
            cycles += 1;
        }
    });
    stop.store(true, Ordering::Relaxed);
    reader.join().expect("reader");
    let [seen, absent, raced] = [0, 1, 2].map(|i| counts[i].load(Ordering::Relaxed));
    eprintln!(
        "test: telemetry during {cycles} create/free: {seen} replies, {absent} absent, {raced} \
         overlapped a free"
    );
    assert!(
        seen >= EACH && absent >= EACH && raced >= EACH,
        "the race never happened often enough in {WITHIN:?}: {seen} replies with the pool, \
         {absent} without, {raced} during a free (at least {EACH} of each wanted)"
    );
    assert!(
        !log.contains("PTR_RING: ERROR: "),
        "no handler error while telemetry races free: {log}"
    );
}
