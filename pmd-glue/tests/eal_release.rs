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
//!   once per process).
//!
//! EAL initialises once per process; the cases take turns on one lock.

mod common;

use std::ffi::{c_int, c_void, CString};
use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

use common::*;
use dpdk_sys as sys;
use rte_mempool_ptr_ring::api::MbufPool;
use rte_mempool_ptr_ring::port::{self, ShutdownOutcome};
use rte_mempool_ptr_ring::GlueError;

const DATA_ROOM: u16 = sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16;
/// `RTE_MEMPOOL_EVENT_DESTROY`.
const EVENT_DESTROY: u32 = 1;
/// The child process of [`exit_with_buffers_out`].
const CHILD_ENV: &str = "PTR_RING_TEST_EXIT_CHILD";

extern "C" {
    // DPDK's driver API (exported by librte_mempool, not in the public
    // headers' stable set): only the test's hook into rte_mempool_free.
    fn rte_mempool_event_callback_register(
        func: Option<unsafe extern "C" fn(u32, *mut sys::rte_mempool, *mut c_void)>,
        user_data: *mut c_void,
    ) -> c_int;
}

/// How long the next destroy event sleeps (ms; 0: not at all). One shot.
static STRETCH_MS: AtomicU64 = AtomicU64::new(0);

/// Fires in `rte_mempool_free` after the pool is unlinked and before its
/// objects are taken back and its chunks and `ops->free` run.
unsafe extern "C" fn on_event(event: u32, _mp: *mut sys::rte_mempool, _arg: *mut c_void) {
    if event == EVENT_DESTROY {
        let ms = STRETCH_MS.swap(0, Ordering::SeqCst);
        if ms > 0 {
            std::thread::sleep(Duration::from_millis(ms));
        }
    }
}

fn setup() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    static EAL: Once = Once::new();
    let guard = TURN.lock().unwrap_or_else(|e| e.into_inner());
    EAL.call_once(|| {
        init_eal(&eal_args("eal_release", "0"));
        // SAFETY: a valid callback with no user data.
        let r =
            unsafe { rte_mempool_event_callback_register(Some(on_event), core::ptr::null_mut()) };
        assert_eq!(r, 0, "rte_mempool_event_callback_register");
    });
    guard
}

fn lookup(name: &str) -> *mut sys::rte_mempool {
    let c = CString::new(name).expect("name");
    // SAFETY: a valid name; null when absent.
    unsafe { sys::rte_mempool_lookup(c.as_ptr()) }
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
    let mut child = rerun_self("exit_with_buffers_out", &[(CHILD_ENV, "1")], true);
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
