//! Exactly one party frees a pool, with EAL:
//!
//! * an application free whose window (`rte_mempool_free` has unlinked the
//!   pool and is taking its objects back, `ops->free` has not run yet)
//!   holds the deferred release's alarm: the alarm finds the pool unlisted
//!   and leaves it; the window is stretched on purpose by a hook on DPDK's
//!   mempool destroy event, which fires inside it;
//! * `cancel_release` takes the free back: the alarm never frees the pool,
//!   the application's free is quiet, and a pointer to a pool that is gone
//!   is refused without being read;
//! * `cleanup` before `rte_eal_cleanup` ends the deferred releases of a
//!   process that exits with buffers out (in a child process: EAL cleans up
//!   once per process);
//! * a pool whose populate failed part-way (DPDK took every object back and
//!   freed every chunk) populates again as `ring_mp_mc`'s would, counts
//!   only its new objects, and shuts down at once;
//! * a shutdown of a pool another driver call holds gives up after its wait;
//! * a soak of shutdown, release, cancel and free in random orders.
//!
//! The cases with a second process are in `eal_release_mp`.
//!
//! EAL initialises once per process; the cases take turns on one lock.

mod common;

use std::ffi::{c_void, CString};
use std::io::Read;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::{Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

use common::release_hook::{init_with_hook, lookup, wait_gone, STRETCH_MS};
use common::*;
use dpdk_sys as sys;
use rte_mempool_ptr_ring::api::MbufPool;
use rte_mempool_ptr_ring::port::{self, ShutdownOutcome};
use rte_mempool_ptr_ring::GlueError;

const DATA_ROOM: u16 = sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16;
/// The child process of [`exit_with_buffers_out`].
const CHILD_ENV: &str = "PTR_RING_TEST_EXIT_CHILD";
fn setup() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    static EAL: Once = Once::new();
    let guard = TURN.lock().unwrap_or_else(|e| e.into_inner());
    EAL.call_once(|| init_with_hook(&eal_args("eal_release", "0")));
    guard
}

/// One mbuf out, shutdown deferred (its alarm is due in one retry period,
/// 1 s): the pool, its pointer and the mbuf.
fn deferred(name: &str) -> (*mut sys::rte_mempool, *mut sys::rte_mbuf) {
    let pool = MbufPool::create(name, 256, 0, DATA_ROOM, -1).expect("pool");
    let mp = pool.as_ptr();
    let m = pool.alloc().expect("alloc").into_raw();
    let out = pool
        .shutdown(&[], Duration::from_millis(20))
        .expect("shutdown");
    assert_eq!(out, ShutdownOutcome::Deferred { inflight: 1 });
    assert_eq!(port::deferred_releases_pending(), 1);
    (mp, m)
}

#[test]
fn alarm_inside_the_application_free() {
    let _turn = setup();
    let name = "rel_window";
    let (mp, m) = deferred(name);
    // SAFETY: our mbuf, its pool alive: every buffer is back now, and the
    // alarm (due within a second) would free the pool.
    unsafe { sys::rte_pktmbuf_free(m) };
    // The application frees the pool itself, well before the alarm is due,
    // and the destroy event holds its free inside the window for longer
    // than the retry period: the alarm fires there.
    STRETCH_MS.store(1500, Ordering::SeqCst);
    let t = Instant::now();
    // SAFETY: a live pool, freed once by the application.
    let ((), log) = capture_log(|| unsafe { sys::rte_mempool_free(mp) });
    assert!(
        t.elapsed() >= Duration::from_millis(1500),
        "the destroy event hook did not hold the free ({:?})",
        t.elapsed()
    );
    assert!(
        log.contains("its pool is no longer on DPDK's mempool list"),
        "the alarm ran inside the free and saw the pool unlisted:\n{log}"
    );
    assert!(
        !log.contains("freeing it") && !log.contains("not allocated"),
        "the alarm freed the pool as well:\n{log}"
    );
    assert!(
        log.contains(&format!("PTR_RING: pool {name} freed")),
        "the application's free ran ops->free once:\n{log}"
    );
    assert_eq!(port::deferred_releases_pending(), 0);
    assert!(lookup(name).is_null());
    eprintln!("test: an alarm inside the application's free leaves the pool to it");
}

#[test]
fn cancel_takes_the_free_back() {
    let _turn = setup();
    let name = "rel_cancel";
    let (mp, m) = deferred(name);
    let ((), log) = capture_log(|| port::cancel_release(mp).expect("cancel"));
    assert!(
        log.contains(&format!(
            "pool {name}: release cancelled by the application"
        )),
        "{log}"
    );
    assert_eq!(
        port::deferred_releases_pending(),
        0,
        "the alarm is forgotten"
    );
    // Every buffer back, and longer than a retry period: no alarm frees it.
    // SAFETY: our mbuf; its pool is alive.
    unsafe { sys::rte_pktmbuf_free(m) };
    std::thread::sleep(Duration::from_millis(1300));
    assert_eq!(
        lookup(name),
        mp,
        "the pool is the application's, still there"
    );
    // A second shutdown is refused: the free is taken.
    // SAFETY: a live pool of ours; no lcore uses it.
    let r = unsafe { port::shutdown_ports(&[], mp, Duration::ZERO) };
    assert!(
        matches!(r, Err(GlueError::AlreadyShuttingDown { .. })),
        "{r:?}"
    );
    // SAFETY: the application's to free now, once.
    let ((), log) = capture_log(|| unsafe { sys::rte_mempool_free(mp) });
    assert!(!log.contains("double free"), "{log}");
    assert!(
        log.contains(&format!("PTR_RING: pool {name} freed")),
        "{log}"
    );
    // A pointer to the freed pool is only compared, never read.
    match port::cancel_release(mp) {
        Err(e @ GlueError::PoolGone { .. }) => assert_eq!(e.errno(), -libc::ENOENT),
        other => panic!("cancel of a freed pool: {other:?}"),
    }
    // The same through the C API.
    // SAFETY: any pointer is fine: it is only compared.
    let rc = unsafe { rte_mempool_ptr_ring::capi::ptr_ring_release_cancel(mp) };
    assert_eq!(rc, -libc::ENOENT);
    eprintln!("test: cancel takes the free back; a gone pool is refused unread");
}

#[test]
fn cancel_after_the_release_freed_it() {
    let _turn = setup();
    let name = "rel_late_cancel";
    let (mp, m) = deferred(name);
    // SAFETY: our mbuf; its pool is alive.
    unsafe { sys::rte_pktmbuf_free(m) };
    let t = Instant::now();
    while !lookup(name).is_null() {
        assert!(t.elapsed() < Duration::from_secs(3), "not released");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(matches!(
        port::cancel_release(mp),
        Err(GlueError::PoolGone { .. })
    ));
    eprintln!("test: cancel after the release freed the pool is refused");
}

#[test]
fn exit_with_buffers_out() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return exit_child();
    }
    let mut child = rerun_self(
        test_name_of(&exit_with_buffers_out),
        &[(CHILD_ENV, "1")],
        true,
    );
    let st = wait_timeout(&mut child, 60, "exit child");
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("piped")
        .read_to_string(&mut out)
        .expect("child stdout");
    assert!(st.success(), "the exiting child failed: {st:?}\n{out}");
    assert!(out.contains("child: survived rte_eal_cleanup"), "{out}");
    eprintln!("test: cleanup ends the deferred releases of an exiting process");
}

/// The child: one mbuf out, a deferred release, `cleanup`, EAL cleaned up,
/// then longer than a retry period alive (an alarm still armed would read
/// unmapped memory now).
fn exit_child() {
    init_eal(&eal_args("eal_release_exit", "0"));
    let name = "rel_exit";
    let pool = MbufPool::create(name, 256, 0, DATA_ROOM, -1).expect("pool");
    let _m = pool.alloc().expect("alloc").into_raw();
    let out = pool
        .shutdown(&[], Duration::from_millis(20))
        .expect("shutdown");
    assert_eq!(out, ShutdownOutcome::Deferred { inflight: 1 });
    let (n, log) = capture_log(port::cleanup);
    assert_eq!(n, 1, "one release abandoned:\n{log}");
    assert!(
        log.contains(&format!(
            "pool {name}: 1 buffers still out at cleanup: its deferred release is abandoned"
        )),
        "{log}"
    );
    assert_eq!(port::deferred_releases_pending(), 0);
    // SAFETY: EAL was initialised by this process.
    assert_eq!(unsafe { sys::rte_eal_cleanup() }, 0);
    std::thread::sleep(Duration::from_millis(2500));
    println!("child: survived rte_eal_cleanup");
}

#[test]
fn populate_again_after_a_failed_populate() {
    let _turn = setup();
    let n: u32 = 128;
    let name = CString::new("rel_repop").expect("name");
    // SAFETY: valid arguments; a plain pool of 256-byte objects, no cache.
    let mp = unsafe { sys::rte_mempool_create_empty(name.as_ptr(), n, 256, 0, 0, -1, 0) };
    assert!(!mp.is_null(), "create_empty");
    // Validation on: it must forget the freed chunks' objects too.
    let mut cfg = rte_mempool_ptr_ring::pool_config::PoolConfigArg::DEFAULT;
    cfg.validate = 1;
    // SAFETY: a pool nobody populated yet; our ops by name, a valid config.
    let r = unsafe {
        sys::rte_mempool_set_ops_byname(
            mp,
            c"ptr_ring".as_ptr(),
            (&mut cfg as *mut rte_mempool_ptr_ring::pool_config::PoolConfigArg).cast(),
        )
    };
    assert_eq!(r, 0, "set_ops_byname");
    // SAFETY: a live mempool.
    let total = unsafe { ((*mp).header_size + (*mp).elt_size + (*mp).trailer_size) as usize };
    let len = (n as usize / 2) * total + 64;
    // SAFETY: plain EAL allocation.
    let buf = unsafe { sys::rte_zmalloc(c"rel_repop".as_ptr(), len, 64) };
    assert!(!buf.is_null(), "rte_zmalloc");
    // SAFETY: EAL memory.
    let iova = unsafe { sys::rte_malloc_virt2iova(buf) };
    // Half the pool in one chunk: accepted.
    // SAFETY: `len` bytes of EAL memory at `buf`, no free callback.
    let got = unsafe {
        sys::rte_mempool_populate_iova(mp, buf.cast(), iova, len, None, core::ptr::null_mut())
    };
    assert_eq!(got, n as i32 / 2, "first chunk");
    // The same memory again, through populate_virt: the handler refuses the
    // overlap, and DPDK undoes the whole population (rte_mempool_free_memchunks:
    // every object taken back, every chunk freed).
    let (r, log) = capture_log(|| {
        // SAFETY: as above; the page size covers the whole buffer.
        unsafe {
            sys::rte_mempool_populate_virt(
                mp,
                buf.cast(),
                len,
                1 << 30,
                None,
                core::ptr::null_mut(),
            )
        }
    });
    assert!(r < 0, "the overlapping populate fails: {r}\n{log}");
    // SAFETY: a live mempool.
    let dpdk_side = unsafe { ((*mp).nb_mem_chunks, (*mp).populated_size) };
    assert_eq!(dpdk_side, (0, 0), "DPDK freed every chunk");
    // An object of the freed chunk is no object of the pool any more.
    // SAFETY: no cache (size 0): the put reaches the handler, which only
    // compares the pointer.
    let (rejected, log) = capture_log(|| unsafe {
        let stale = buf.cast::<u8>().add(64 + (*mp).header_size as usize);
        let objs = [stale.cast::<c_void>()];
        sys::rte_mempool_ops_enqueue_bulk(mp, objs.as_ptr(), 1)
    });
    assert!(
        rejected < 0,
        "a put into the freed chunk was accepted:\n{log}"
    );
    // Populated again, the usual way: accepted, as ring_mp_mc's would be.
    // SAFETY: a live, empty pool.
    let (r, log) = capture_log(|| unsafe { sys::rte_mempool_populate_default(mp) });
    assert_eq!(r, n as i32, "populated again:\n{log}");
    assert!(
        log.contains(
            "DPDK freed every memory chunk (a populate failed part-way): 64 objects forgotten"
        ),
        "{log}"
    );
    // SAFETY: a live pool of ours.
    let st = unsafe { rte_mempool_ptr_ring::api::stats_of(mp) }.expect("stats");
    check_stats(&st, n as usize, "populated again");
    assert_eq!(st.inflight, 0);
    // Nothing is out: the shutdown frees it at once.
    // SAFETY: live, unused.
    let out = unsafe { port::shutdown_ports(&[], mp, Duration::ZERO) }.expect("shutdown");
    assert!(matches!(out, ShutdownOutcome::Freed { .. }), "{out:?}");
    // SAFETY: ours, no longer used by the freed pool.
    unsafe { sys::rte_free(buf) };
    eprintln!("test: a pool whose populate failed populates again and shuts down at once");
}

#[test]
fn shutdown_bounded_while_busy() {
    let _turn = setup();
    let name = "rel_busy";
    let pool = MbufPool::create(name, 256, 0, DATA_ROOM, -1).expect("pool");
    let mp = pool.as_ptr() as usize;
    let (entered_tx, entered) = mpsc::channel();
    let (go, go_rx) = mpsc::channel::<()>();
    // Another driver call (another thread's) holds the core's driver token
    // until told to go on.
    let driver = std::thread::spawn(move || {
        // SAFETY: the pool stays alive until this thread is joined.
        let z = unsafe { rte_mempool_ptr_ring::zone::attach(mp as *mut sys::rte_mempool) }
            .expect("ours");
        z.core.with_driver_token(|| {
            let _ = entered_tx.send(());
            let _ = go_rx.recv();
        })
    });
    entered
        .recv_timeout(Duration::from_secs(5))
        .expect("driver token held");
    // The shutdown gives up after its wait instead of spinning for ever.
    let (tx, rx) = mpsc::channel();
    let shut = std::thread::spawn(move || {
        // SAFETY: live, no lcore in a get or put.
        let r = unsafe {
            port::shutdown_ports(&[], mp as *mut sys::rte_mempool, Duration::from_millis(100))
        };
        let _ = tx.send(r.map_err(|e| e.errno()));
    });
    let r = rx.recv_timeout(Duration::from_secs(3));
    go.send(()).expect("let the driver go");
    driver
        .join()
        .expect("driver thread")
        .expect("the token was free");
    shut.join().expect("shutdown thread");
    assert_eq!(
        r.expect("shutdown_ports returned within 3 s while the pool was busy"),
        Err(-libc::EBUSY)
    );
    // It gave the release back: the pool is the application's to free.
    std::mem::forget(pool);
    port::cancel_release(mp as *mut sys::rte_mempool).expect("nothing claimed");
    // SAFETY: live, freed once.
    unsafe { sys::rte_mempool_free(mp as *mut sys::rte_mempool) };
    eprintln!("test: a shutdown of a busy pool gives up after its wait");
}

// ------------------------------------------------------------------- soak

/// xorshift64*: a reproducible sequence from a printed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// One round of the soak: a pool with `out` mbufs out, shut down, then
/// ended one of five ways, chosen by `how`. Returns what it did.
fn soak_round(round: usize, how: u64, out: usize, rng: &mut Rng) -> &'static str {
    let name = format!("rel_soak{round}");
    let pool = MbufPool::create(&name, 128, 0, DATA_ROOM, -1).expect("pool");
    let mp = pool.as_ptr();
    let held: Vec<*mut sys::rte_mbuf> = (0..out)
        .map(|_| pool.alloc().expect("alloc").into_raw())
        .collect();
    let outcome = pool.shutdown(&[], Duration::ZERO).expect("shutdown");
    let return_all = || {
        for &m in &held {
            // SAFETY: our mbufs; the pool is alive (they are out).
            unsafe { sys::rte_pktmbuf_free(m) };
        }
    };
    let what = match (outcome, how) {
        (ShutdownOutcome::Freed { .. }, _) => "freed at once",
        // The buffers come back; the alarm frees the pool.
        (ShutdownOutcome::Deferred { .. }, 0) => {
            return_all();
            wait_gone(&name, Duration::from_secs(3));
            "returned, alarm freed"
        }
        // The application takes the free back and frees it (buffers lost).
        (ShutdownOutcome::Deferred { .. }, 1) => {
            port::cancel_release(mp).expect("cancel");
            // SAFETY: the application's to free now.
            unsafe { sys::rte_mempool_free(mp) };
            "cancelled, application freed"
        }
        // The application frees it directly, with buffers out.
        (ShutdownOutcome::Deferred { .. }, 2) => {
            // SAFETY: live (buffers out: the release cannot be freeing it).
            unsafe { sys::rte_mempool_free(mp) };
            "application freed with buffers out"
        }
        // Buffers back, then the application races the alarm at a random
        // moment, by the rule: free only if the cancel succeeds.
        (ShutdownOutcome::Deferred { .. }, _) => {
            return_all();
            std::thread::sleep(Duration::from_millis(rng.next(1300)));
            match port::cancel_release(mp) {
                Ok(()) => {
                    // SAFETY: the cancel gave the free to the application.
                    unsafe { sys::rte_mempool_free(mp) };
                    "raced the alarm: application freed"
                }
                Err(GlueError::PoolGone { .. } | GlueError::ReleaseInProgress { .. }) => {
                    wait_gone(&name, Duration::from_secs(3));
                    "raced the alarm: alarm freed"
                }
                Err(e) => panic!("round {round}: cancel: {e}"),
            }
        }
    };
    assert!(lookup(&name).is_null(), "round {round}: {name} still there");
    what
}

/// Shutdown, release, cancel and free in random orders, buffers out; every
/// pool freed exactly once (no "double free", no EAL "not allocated", no
/// pending release left), within a time budget. `PTR_RING_SOAK_SEED` picks
/// the sequence (printed).
#[test]
fn soak_release_orders() {
    let _turn = setup();
    let seed = std::env::var("PTR_RING_SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        });
    eprintln!("test: soak seed {seed} (PTR_RING_SOAK_SEED)");
    let mut rng = Rng(seed);
    let start = Instant::now();
    let mut done: std::collections::BTreeMap<&str, usize> = Default::default();
    let ((), log) = capture_log(|| {
        let mut round = 0;
        while round < 40 && start.elapsed() < Duration::from_secs(15) {
            let how = rng.next(4);
            let out = rng.next(3) as usize;
            let what = soak_round(round, how, out, &mut rng);
            *done.entry(what).or_default() += 1;
            round += 1;
        }
    });
    eprintln!(
        "test: soak {:?} in {:?}: {done:?}",
        done.values().sum::<usize>(),
        start.elapsed()
    );
    for bad in ["double free", "not allocated", "SIGSEGV", "PANIC"] {
        assert!(!log.contains(bad), "soak: {bad} in the log:\n{log}");
    }
    assert_eq!(
        port::deferred_releases_pending(),
        0,
        "a release left pending"
    );
    assert!(done.len() >= 3, "the soak tried too few orders: {done:?}");
}
