//! The border with C. Every function DPDK or a C program calls (ops
//! callbacks, the C API, telemetry commands, alarms, event and IPC
//! callbacks, the bus-scan hook, the load constructor) runs its body in
//! [`guard`] or [`guard_void`]: a panic (possible only in builds that unwind;
//! release builds abort) is logged and becomes an error value instead of
//! unwinding into C.

use core::ffi::c_int;

use dpdk_sys as sys;

use crate::error::GlueError;
use crate::log::Level;
use crate::{cname, log};

/// Runs `f`, turning a panic (only possible in builds that unwind) into
/// `-EFAULT` instead of unwinding into C.
#[inline(always)]
pub(crate) fn guard(what: &str, f: impl FnOnce() -> c_int) -> c_int {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(_) => {
            log!(Level::Err, "internal error (panic) in {what}");
            -libc::EFAULT
        }
    }
}

/// [`guard`] for callbacks that return nothing, or whose return value C
/// ignores: a panic is logged and dropped.
#[inline]
pub(crate) fn guard_void(what: &str, f: impl FnOnce()) {
    guard(what, || {
        f();
        0
    });
}

/// The C convention for a result: the value, or the error's negative errno.
#[inline]
pub(crate) fn c_result(r: Result<c_int, GlueError>) -> c_int {
    r.unwrap_or_else(|e| e.errno())
}

/// The name of a mempool, for log lines and errors.
pub(crate) fn pool_name(mp: *const sys::rte_mempool) -> String {
    // SAFETY: DPDK passes a valid mempool whose name is NUL-terminated.
    cname::cstr_field(unsafe { &(*mp).name })
}
