//! DPDK's list of mempools, as the one arbiter of whether a pool may still
//! be touched: `rte_mempool_free` unlinks the pool from the list (under the
//! tailq lock's write side) before it frees anything, in whichever process
//! calls it.

use core::ffi::{c_int, c_void};

use crate::bindings::rte_mempool;

mod ffi {
    use super::{c_int, c_void, rte_mempool};
    extern "C" {
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
