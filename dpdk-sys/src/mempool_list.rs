//! DPDK's list of mempools, as the one arbiter of whether a pool may still
//! be touched: `rte_mempool_free` unlinks the pool from the list (under the
//! tailq lock's write side) before it frees anything, in whichever process
//! calls it.

use core::ffi::{c_char, c_int, c_void, CStr};

use crate::bindings::rte_mempool;

mod ffi {
    use super::{c_char, c_int, c_void, rte_mempool};
    extern "C" {
        pub fn dpdk_sys_mempool_lookup_listed(name: *const c_char) -> *mut rte_mempool;
        pub fn dpdk_sys_mempool_walk_listed(
            f: unsafe extern "C" fn(*mut rte_mempool, *mut c_void),
            arg: *mut c_void,
        );
        pub fn dpdk_sys_mempool_listed_call(
            mp: *const rte_mempool,
            f: unsafe extern "C" fn(*mut rte_mempool, *mut c_void),
            arg: *mut c_void,
        ) -> c_int;
    }
}

/// Runs `f(mp)` if `mp` is still on DPDK's mempool list, holding the tailq
/// read lock: while `f` runs, no `rte_mempool_free` of `mp`, in any
/// process, has begun, so `mp` and everything its handler keeps stay alive
/// (as long as `f` neither frees `mp` nor takes the tailq lock again).
/// `None` when `mp` is not listed: it is gone or being freed, and `mp` was
/// only compared, never read. A panic in `f` is carried past the C frame
/// and resumed here.
///
/// A new pool created at the address of a freed one is listed again: the
/// caller checks it is still the pool it means (its handler's own state).
// `mp` is only compared with the listed pools; `f` gets it once it is found.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn with_listed<F, R>(mp: *const rte_mempool, f: F) -> Option<R>
where
    F: FnOnce(*mut rte_mempool) -> R,
{
    struct Call<F, R> {
        f: Option<F>,
        out: Option<std::thread::Result<R>>,
    }
    unsafe extern "C" fn trampoline<F: FnOnce(*mut rte_mempool) -> R, R>(
        mp: *mut rte_mempool,
        arg: *mut c_void,
    ) {
        // SAFETY: `arg` is the `Call` on `with_listed`'s stack, alive for
        // the whole C call, used by this one callback only.
        let call = unsafe { &mut *arg.cast::<Call<F, R>>() };
        if let Some(f) = call.f.take() {
            call.out = Some(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
                || f(mp),
            )));
        }
    }
    let mut call = Call {
        f: Some(f),
        out: None,
    };
    // SAFETY: the trampoline matches the C signature and `arg` its type;
    // the C side only compares `mp` until it finds it listed.
    let found = unsafe {
        ffi::dpdk_sys_mempool_listed_call(
            mp,
            trampoline::<F, R>,
            (&mut call as *mut Call<F, R>).cast(),
        )
    };
    match call.out {
        Some(Ok(r)) if found != 0 => Some(r),
        Some(Err(panic)) => std::panic::resume_unwind(panic),
        _ => None,
    }
}

/// The listed pool named `name` (null when none): `rte_mempool_lookup`
/// without its race against a concurrent free. DPDK's lookup walks the list
/// under the mempool lock, while `rte_mempool_free` unlinks and frees the
/// list entry under the tailq lock, so a lookup during a free can read a
/// freed entry; this walks under the tailq lock. As with DPDK's, the pool
/// may be freed as soon as this returns unless the caller keeps it alive
/// (the handler's release lock holds off its own `ops->free`).
pub fn lookup(name: &CStr) -> *mut rte_mempool {
    // SAFETY: a NUL-terminated name; the C side only reads listed pools.
    unsafe { ffi::dpdk_sys_mempool_lookup_listed(name.as_ptr()) }
}

/// Every listed pool, as `rte_mempool_walk` gives them but without its race
/// (see [`lookup`]): `f(mp)` runs under the tailq read lock, so each `mp`
/// is alive while `f` runs; `f` must not take the tailq or the mempool
/// lock (no `rte_mempool_lookup`, no `rte_mempool_free`).
pub fn walk<F: FnMut(*mut rte_mempool)>(mut f: F) {
    unsafe extern "C" fn visit<F: FnMut(*mut rte_mempool)>(mp: *mut rte_mempool, arg: *mut c_void) {
        // SAFETY: `arg` is the closure on `walk`'s stack, alive for the
        // whole C call.
        let f = unsafe { &mut *arg.cast::<F>() };
        // A panic must not cross the C frame: it is caught here and the
        // walk goes on with the next pool.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(mp)));
    }
    // SAFETY: the callback matches the C signature and `arg` its type.
    unsafe { ffi::dpdk_sys_mempool_walk_listed(visit::<F>, (&mut f as *mut F).cast()) };
}
