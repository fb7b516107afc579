//! Stub ops-table entries: a handler the primary has and this process
//! lacks keeps its index here under its name, with callbacks that refuse
//! (`-ENOTSUP`) and say which plugin to load.

use core::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

use dpdk_sys as sys;

use super::MAX_OPS;
use crate::error::GlueError;
use crate::ffi::{self, pool_name};
use crate::log::Level;
use crate::{log, ops_name};

/// One error line per stub index, then debug lines.
static STUB_REPORTED: [AtomicBool; MAX_OPS] = [const { AtomicBool::new(false) }; MAX_OPS];

/// The entry for a handler the primary has and this process lacks: its
/// name, and callbacks that refuse.
pub(super) fn stub_ops(name: &str) -> sys::rte_mempool_ops {
    // SAFETY: all-zero is a valid rte_mempool_ops (null callbacks, empty name).
    let mut o: sys::rte_mempool_ops = unsafe { core::mem::zeroed() };
    for (d, s) in o.name.iter_mut().zip(name.bytes()) {
        *d = s as c_char;
    }
    o.alloc = Some(stub_alloc);
    o.free = Some(stub_free);
    o.enqueue = Some(stub_enqueue);
    o.dequeue = Some(stub_dequeue);
    o.get_count = Some(stub_get_count);
    o
}

/// Logs that `mp`'s handler is missing here; returns `-ENOTSUP`. The stub
/// that stands for ptr_ring itself after a failed handshake
/// (`secondary::refuse_pools`) names that failure instead and returns
/// `-EPROTO`.
fn refuse(mp: *const sys::rte_mempool, what: &str) -> c_int {
    let mut errno = -libc::ENOTSUP;
    ffi::guard_void("a stub ops callback", || {
        // SAFETY: DPDK passes a live mempool whose ops index chose this stub.
        let i = unsafe { (*mp).ops_index };
        let pool = pool_name(mp);
        // SAFETY: as above; the name of the entry at the pool's index.
        let handler = unsafe { ops_name::ops_name_of(mp) };
        let first = usize::try_from(i)
            .ok()
            .and_then(|i| STUB_REPORTED.get(i))
            .is_some_and(|r| !r.swap(true, Ordering::Relaxed));
        let level = if first { Level::Err } else { Level::Debug };
        if let (true, Some(cause)) = (handler == ops_name::OPS_NAME, super::refusal()) {
            let e = GlueError::HandshakeFailed {
                pool,
                cause: cause.to_owned(),
            };
            errno = e.errno();
            return log!(level, "{what} on pool {}: {e}", pool_name(mp));
        }
        log!(
            level,
            "{what} on pool {pool}: its mempool handler \"{handler}\" (index {i} in the \
             primary) is not loaded in this process; load the primary's -d plugins here too"
        );
    });
    errno
}

unsafe extern "C" fn stub_alloc(mp: *mut sys::rte_mempool) -> c_int {
    refuse(mp, "alloc")
}

unsafe extern "C" fn stub_free(mp: *mut sys::rte_mempool) {
    refuse(mp, "free");
}

unsafe extern "C" fn stub_enqueue(
    mp: *mut sys::rte_mempool,
    _objs: *const *mut c_void,
    _n: c_uint,
) -> c_int {
    refuse(mp, "enqueue")
}

unsafe extern "C" fn stub_dequeue(
    mp: *mut sys::rte_mempool,
    _objs: *mut *mut c_void,
    _n: c_uint,
) -> c_int {
    refuse(mp, "dequeue")
}

unsafe extern "C" fn stub_get_count(mp: *const sys::rte_mempool) -> c_uint {
    refuse(mp, "get_count");
    0
}
