//! The tests' hook into `rte_mempool_free` (eal_release, eal_release_mp):
//! DPDK's mempool destroy event fires after the pool is unlinked and before
//! its objects are taken back and its chunks and `ops->free` run, and the
//! hook can hold the free there for a while; and the look-ups around it.

use std::ffi::{c_int, c_void, CString};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dpdk_sys as sys;

/// `RTE_MEMPOOL_EVENT_DESTROY`.
const EVENT_DESTROY: u32 = 1;

extern "C" {
    // DPDK's driver API (exported by librte_mempool, not in the public
    // headers' stable set): only the test's hook into rte_mempool_free.
    fn rte_mempool_event_callback_register(
        func: Option<unsafe extern "C" fn(u32, *mut sys::rte_mempool, *mut c_void)>,
        user_data: *mut c_void,
    ) -> c_int;
}

/// How long the next destroy event sleeps (ms; 0: not at all). One shot.
pub static STRETCH_MS: AtomicU64 = AtomicU64::new(0);

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

/// Initialises EAL with `args` and registers the destroy-event hook.
pub fn init_with_hook(args: &[String]) {
    super::init_eal(args);
    // SAFETY: a valid callback with no user data.
    let r = unsafe { rte_mempool_event_callback_register(Some(on_event), core::ptr::null_mut()) };
    assert_eq!(r, 0, "rte_mempool_event_callback_register");
}

/// The pool named `name`, or null.
pub fn lookup(name: &str) -> *mut sys::rte_mempool {
    let c = CString::new(name).expect("name");
    // SAFETY: a valid name; null when absent.
    unsafe { sys::rte_mempool_lookup(c.as_ptr()) }
}

/// Waits until the pool `name` is gone.
pub fn wait_gone(name: &str, within: Duration) {
    let t = Instant::now();
    while !lookup(name).is_null() {
        assert!(t.elapsed() < within, "{name}: not freed within {within:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}
