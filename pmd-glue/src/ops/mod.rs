//! The `rte_mempool_ops` callbacks, each a few lines onto the files that
//! do the work, then the ops table (`register.rs`). Nothing here panics
//! across `extern "C"`: every callback runs in `guard`, and errors become
//! negative errno.
//!
//! # Routes of a get and a put
//! A put (`put.rs`) and a get (`get.rs`) try these in order; the first that
//! applies completes the call or falls through to the next row's entry:
//!
//! | pool / caller | path | in the core |
//! |---|---|---|
//! | handler cache on, one object, lcore with a slot | inlined into the callback, no call, no stack frame | `try_put_cached` / `try_get_cached` |
//! | handler cache on, a bulk | tail call: up to 64 objects a function with inline copies and no stack frame, above 64 one with `memcpy` | `try_put_cached_bulk` / `try_get_cached_bulk` |
//! | handler cache off (the default), any caller (an EAL lcore or a non-EAL thread) | tail call, one leaf function for single objects, one for bulks (the callback tests the gate and passes its slot); no lcore id read | `direct_gate`, then `try_put_direct_at` / `try_get_direct_at` |
//! | handler cache off, newest-first gets (`ZONE_MAGIC_NEWEST`: the fast rows' zone check fails), lcore with a slot | tail call from the callback after a second compare of the zone word, own function (single objects a copy of their own, the get with `take_back_one`) | `try_put_newest` / `try_get_newest` |
//! | everything else: a miss (cache full or empty, ring empty), a closing pool, validation mode, a pool that is not ours | checked entry: `zone::attach`, then the core decides and reports | `PoolCore::put` / `PoolCore::get` |
//!
//! A pool without the handler cache counts by its ring's totals, so its
//! rows need no lcore's slot (every caller passes the same gate, a
//! non-EAL thread too) and write nothing but the ring (the functions tell
//! the core so with `PoolCore::assume_direct`). Why the rows are split as
//! they are (stack frames, inlining, the ring at a constant offset) is
//! measured in `bench/NOTES.md`.

use core::ffi::{c_int, c_uint, c_void};

use dpdk_sys as sys;

use crate::error::GlueError;
use crate::ffi::{guard, pool_name};
use crate::log::Level;
use crate::{log, zone};

mod get;
mod put;
mod register;
mod setup;
mod teardown;

pub use crate::ops_name::{lookup_index, ops_name_of, OPS_INDEX, OPS_NAME};
pub use register::{ops_table, register, Registration};
pub(crate) use setup::forget_freed_chunks;
pub use setup::max_chunks_for;

fn report(mp: *const sys::rte_mempool, what: &str, e: &GlueError) -> c_int {
    log!(Level::Err, "{what} on pool {}: {e}", pool_name(mp));
    e.errno()
}

unsafe extern "C" fn alloc(mp: *mut sys::rte_mempool) -> c_int {
    guard("alloc", || {
        // SAFETY: DPDK calls alloc with a valid mempool and the
        // application's `pool_config`.
        match unsafe { setup::create(mp) } {
            Ok(()) => 0,
            Err(e) => report(mp, "alloc", &e),
        }
    })
}

unsafe extern "C" fn free(mp: *mut sys::rte_mempool) {
    guard("free", || {
        // SAFETY: DPDK calls free with a valid mempool.
        if unsafe { (*mp).__bindgen_anon_1.pool_data }.is_null() {
            // DPDK calls ops->free for every pool it frees, also when our
            // alloc never ran (rte_mempool_create_empty, set_ops, free) or
            // failed: nothing of ours to free, as in DPDK's own handlers.
            return 0;
        }
        // SAFETY: as above; `pool_data` is set, by our alloc.
        match unsafe { teardown::release(mp) } {
            Ok(()) => 0,
            Err(e) => report(mp, "free", &e),
        }
    });
}

/// `ops->enqueue`: `put::enqueue`, inlined here.
unsafe extern "C" fn enqueue(
    mp: *mut sys::rte_mempool,
    objs: *const *mut c_void,
    n: c_uint,
) -> c_int {
    // SAFETY: forwarded DPDK arguments.
    guard("enqueue", || unsafe { put::enqueue(mp, objs, n) })
}

/// `ops->dequeue`: `get::dequeue`, inlined here.
unsafe extern "C" fn dequeue(
    mp: *mut sys::rte_mempool,
    objs: *mut *mut c_void,
    n: c_uint,
) -> c_int {
    // SAFETY: forwarded DPDK arguments.
    guard("dequeue", || unsafe { get::dequeue(mp, objs, n) })
}

unsafe extern "C" fn get_count(mp: *const sys::rte_mempool) -> c_uint {
    let mut count: c_uint = 0;
    guard("get_count", || {
        // SAFETY: DPDK passes its own mempool.
        if unsafe { (*mp).__bindgen_anon_1.pool_data }.is_null() {
            // Not allocated (yet, or alloc failed): nothing in it.
            return 0;
        }
        // SAFETY: DPDK passes its own mempool.
        match unsafe { zone::attach(mp) } {
            Ok(z) => {
                count = z.core.available() as c_uint;
                0
            }
            Err(e) => report(mp, "get_count", &e),
        }
    });
    count
}

/// `ops->populate`: `setup::populate`.
unsafe extern "C" fn populate(
    mp: *mut sys::rte_mempool,
    max_objs: c_uint,
    vaddr: *mut c_void,
    iova: sys::rte_iova_t,
    len: usize,
    obj_cb: sys::rte_mempool_populate_obj_cb_t,
    obj_cb_arg: *mut c_void,
) -> c_int {
    guard("populate", || {
        // SAFETY: forwarded DPDK arguments.
        unsafe { setup::populate(mp, max_objs, vaddr, iova, len, obj_cb, obj_cb_arg) }
    })
}
