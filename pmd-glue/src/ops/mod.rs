//! The `rte_mempool_ops` callbacks: each a thin translation onto
//! [`mempool::PoolCore`], then the ops table and its registration.
//! Nothing here panics across `extern "C"`: errors become negative errno.

use core::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicI32, Ordering};

use dpdk_sys as sys;
use mempool::{PoolCore, PoolError};

use crate::error::{pool_errno, GlueError};
use crate::ffi::{guard, pool_name};
use crate::log::Level;
use crate::{log, zone};

mod setup;
mod teardown;

pub(crate) use setup::forget_freed_chunks;
pub use setup::max_chunks_for;

/// Name under which the handler registers.
pub const OPS_NAME: &str = "ptr_ring";

/// Our index in this process's `rte_mempool_ops_table`, or -1.
pub static OPS_INDEX: AtomicI32 = AtomicI32::new(-1);

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

/// `ops->enqueue`. Inlined here, with no call and no stack frame: the
/// handler cache's single-object fast path (`PoolCore::try_put_cached`,
/// the length a constant). Every other fast path is a tail call: a bulk
/// with the cache on to [`enqueue_cached_bulk`], the cache off to the
/// direct path (single objects apart, so that each is a leaf function).
/// Everything else goes through [`enqueue_slow`].
///
/// With the handler cache on, the trailing-failure hint is cleared before
/// the put: once the last buffer is back a deferred release may free the
/// zone, so the put must be our last touch of it. With it off, the hint is
/// left alone: a put moves the ring, which ends a run of failures by itself
/// (`ZoneHeader::count_get_failure`).
unsafe extern "C" fn enqueue(
    mp: *mut sys::rte_mempool,
    objs: *const *mut c_void,
    n: c_uint,
) -> c_int {
    guard("enqueue", || {
        // SAFETY: DPDK passes its own mempool.
        if let Some(z) = unsafe { zone::attach_fast(mp) } {
            // The caller's own lcore id: DPDK's one thread per lcore rule
            // makes it the owner of that lcore's cache and counters.
            let lcore = sys::lcore_id();
            // SAFETY: forwarded DPDK arguments, `n` valid object pointers
            // at `objs`; the lcore id is the caller's own.
            unsafe {
                match (z.core.is_direct(), n) {
                    (true, 1) => return enqueue_one_direct(mp, objs, z.core, lcore),
                    (true, _) => return enqueue_direct(mp, objs, n, z.core, lcore),
                    // One object: the length a constant, so the copy is
                    // one move and the length update one add.
                    (false, 1) => {
                        z.header.clear_trailing_failures();
                        if z.core
                            .try_put_cached(lcore, core::slice::from_raw_parts(objs, 1))
                        {
                            return 0;
                        }
                    }
                    (false, _) => return enqueue_cached_bulk(mp, objs, n, z.header, z.core, lcore),
                }
            }
        }
        // SAFETY: forwarded DPDK arguments.
        unsafe { enqueue_slow(mp, objs, n) }
    })
}

/// `enqueue` of a bulk with the handler cache on: onto the lcore's cache
/// (inline copies up to 8 objects, a `memcpy` above; a tail call from
/// `enqueue`, whose single-object path so needs no stack frame), else
/// [`enqueue_slow`].
#[inline(never)]
unsafe fn enqueue_cached_bulk(
    mp: *mut sys::rte_mempool,
    objs: *const *mut c_void,
    n: c_uint,
    header: &zone::ZoneHeader,
    core: &PoolCore,
    lcore: u32,
) -> c_int {
    // Cleared before the put, as in `enqueue`.
    header.clear_trailing_failures();
    // SAFETY: DPDK passes `n` valid object pointers; the lcore id is the
    // caller's own (as in `enqueue`).
    if unsafe { core.try_put_cached_bulk(lcore, core::slice::from_raw_parts(objs, n as usize)) } {
        return 0;
    }
    // SAFETY: forwarded DPDK arguments.
    unsafe { enqueue_slow(mp, objs, n) }
}

/// `enqueue` with the handler cache off: straight to the ring (a tail call
/// from `enqueue`, whose cache path so needs no stack frame).
#[inline(never)]
unsafe fn enqueue_direct(
    mp: *mut sys::rte_mempool,
    objs: *const *mut c_void,
    n: c_uint,
    core: &PoolCore,
    lcore: u32,
) -> c_int {
    // SAFETY: forwarded from `enqueue`.
    unsafe { put_direct(mp, objs, n, core, lcore) }
}

/// [`enqueue_direct`] of one object: the bulk length a constant, so the
/// ring's single-slot path alone is compiled in.
#[inline(never)]
unsafe fn enqueue_one_direct(
    mp: *mut sys::rte_mempool,
    objs: *const *mut c_void,
    core: &PoolCore,
    lcore: u32,
) -> c_int {
    // SAFETY: forwarded from `enqueue`, which passes one object.
    unsafe { put_direct(mp, objs, 1, core, lcore) }
}

/// The body of [`enqueue_direct`] and [`enqueue_one_direct`].
#[inline(always)]
unsafe fn put_direct(
    mp: *mut sys::rte_mempool,
    objs: *const *mut c_void,
    n: c_uint,
    core: &PoolCore,
    lcore: u32,
) -> c_int {
    // SAFETY: DPDK passes `n` valid object pointers; the lcore id is the
    // caller's own (as in `enqueue`).
    if unsafe { core.try_put_direct(lcore, core::slice::from_raw_parts(objs, n as usize)) } {
        return 0;
    }
    if n > 1 && !core.has_direct_slot(lcore, true) {
        // SAFETY: forwarded DPDK arguments.
        return unsafe { enqueue_shared(mp, objs, n, core) };
    }
    // SAFETY: forwarded DPDK arguments.
    unsafe { enqueue_slow(mp, objs, n) }
}

/// A bulk [`put_direct`] did not take from a caller without a slot (a
/// non-EAL thread): the ring, counted on the shared release counter, in a
/// function of its own so that the lcore path keeps its registers.
#[inline(never)]
unsafe fn enqueue_shared(
    mp: *mut sys::rte_mempool,
    objs: *const *mut c_void,
    n: c_uint,
    core: &PoolCore,
) -> c_int {
    // SAFETY: DPDK passes `n` valid object pointers.
    if core.try_put_shared(unsafe { core::slice::from_raw_parts(objs, n as usize) }) {
        return 0;
    }
    // SAFETY: forwarded DPDK arguments.
    unsafe { enqueue_slow(mp, objs, n) }
}

/// Every enqueue the fast paths did not take: with the handler cache on,
/// more than 8 objects, a full or closed cache or a caller without an lcore
/// id; with it off, a released pool or a ring without room; validation
/// mode; a pool that is not ours.
#[inline(never)]
unsafe fn enqueue_slow(mp: *mut sys::rte_mempool, objs: *const *mut c_void, n: c_uint) -> c_int {
    // SAFETY: DPDK passes its own mempool.
    let z = match unsafe { zone::attach(mp) } {
        Ok(z) => z,
        Err(e) => return report(mp, "enqueue", &e),
    };
    if z.core.validating() && setup::chunks_freed(mp, &z) {
        // Validation would still know the freed chunks' objects.
        let e = GlueError::NoMemoryChunks {
            pool: pool_name(mp),
        };
        return report(mp, "enqueue", &e);
    }
    // SAFETY: DPDK passes `n` valid object pointers.
    let objs = unsafe { core::slice::from_raw_parts(objs, n as usize) };
    // SAFETY: as in `enqueue`.
    match unsafe { z.core.put(sys::lcore_id(), objs) } {
        Ok(()) => 0,
        Err(e) => put_failed(mp, e),
    }
}

#[cold]
#[inline(never)]
fn put_failed(mp: *mut sys::rte_mempool, e: PoolError) -> c_int {
    let e = GlueError::Core(e);
    // A put that was partly accepted may have brought the pool's last
    // buffers back and let its deferred release free it meanwhile: the name
    // is read only while the pool is still listed.
    let name = dpdk_sys::mempool_list::with_listed(mp, |mp| pool_name(mp))
        .unwrap_or_else(|| format!("at {mp:p} (freed since)"));
    log!(Level::Err, "enqueue on pool {name}: {e}");
    e.errno()
}

/// `ops->dequeue`; fast paths as in [`enqueue`].
unsafe extern "C" fn dequeue(
    mp: *mut sys::rte_mempool,
    objs: *mut *mut c_void,
    n: c_uint,
) -> c_int {
    guard("dequeue", || {
        // SAFETY: DPDK passes its own mempool.
        if let Some(z) = unsafe { zone::attach_fast(mp) } {
            let lcore = sys::lcore_id();
            // SAFETY: forwarded DPDK arguments, room for `n` object
            // pointers at `objs`; the lcore id as in `enqueue`.
            unsafe {
                match (z.core.is_direct(), n) {
                    (true, 1) => return dequeue_one_direct(mp, objs, z.core, lcore),
                    (true, _) => return dequeue_direct(mp, objs, n, z.core, lcore),
                    (false, 1) => {
                        if z.core
                            .try_get_cached(lcore, core::slice::from_raw_parts_mut(objs, 1))
                        {
                            z.header.clear_trailing_failures();
                            return 0;
                        }
                    }
                    (false, _) => return dequeue_cached_bulk(mp, objs, n, z.header, z.core, lcore),
                }
            }
        }
        // SAFETY: forwarded DPDK arguments.
        unsafe { dequeue_slow(mp, objs, n) }
    })
}

/// `dequeue` of a bulk with the handler cache on (see
/// [`enqueue_cached_bulk`]).
#[inline(never)]
unsafe fn dequeue_cached_bulk(
    mp: *mut sys::rte_mempool,
    objs: *mut *mut c_void,
    n: c_uint,
    header: &zone::ZoneHeader,
    core: &PoolCore,
    lcore: u32,
) -> c_int {
    // SAFETY: DPDK passes room for `n` object pointers; the lcore id as in
    // `enqueue`.
    if unsafe { core.try_get_cached_bulk(lcore, core::slice::from_raw_parts_mut(objs, n as usize)) }
    {
        header.clear_trailing_failures();
        return 0;
    }
    // SAFETY: forwarded DPDK arguments.
    unsafe { dequeue_slow(mp, objs, n) }
}

/// `dequeue` with the handler cache off (see [`enqueue_direct`]).
#[inline(never)]
unsafe fn dequeue_direct(
    mp: *mut sys::rte_mempool,
    objs: *mut *mut c_void,
    n: c_uint,
    core: &PoolCore,
    lcore: u32,
) -> c_int {
    // SAFETY: forwarded from `dequeue`.
    unsafe { get_direct(mp, objs, n, core, lcore) }
}

/// [`dequeue_direct`] of one object (see [`enqueue_one_direct`]).
#[inline(never)]
unsafe fn dequeue_one_direct(
    mp: *mut sys::rte_mempool,
    objs: *mut *mut c_void,
    core: &PoolCore,
    lcore: u32,
) -> c_int {
    // SAFETY: forwarded from `dequeue`, which asks for one object.
    unsafe { get_direct(mp, objs, 1, core, lcore) }
}

/// The body of [`dequeue_direct`] and [`dequeue_one_direct`].
#[inline(always)]
unsafe fn get_direct(
    mp: *mut sys::rte_mempool,
    objs: *mut *mut c_void,
    n: c_uint,
    core: &PoolCore,
    lcore: u32,
) -> c_int {
    // SAFETY: DPDK passes room for `n` object pointers; the lcore id as in
    // `enqueue`.
    if unsafe { core.try_get_direct(lcore, core::slice::from_raw_parts_mut(objs, n as usize)) } {
        // No `clear_trailing_failures`: the get moved the ring, which ends
        // a run of failures (see `ZoneHeader::count_get_failure`).
        return 0;
    }
    if n > 1 && !core.has_direct_slot(lcore, false) {
        // SAFETY: forwarded DPDK arguments.
        return unsafe { dequeue_shared(mp, objs, n, core) };
    }
    // SAFETY: forwarded DPDK arguments.
    unsafe { dequeue_slow(mp, objs, n) }
}

/// A bulk [`get_direct`] did not serve for a caller without a slot (see
/// [`enqueue_shared`]).
#[inline(never)]
unsafe fn dequeue_shared(
    mp: *mut sys::rte_mempool,
    objs: *mut *mut c_void,
    n: c_uint,
    core: &PoolCore,
) -> c_int {
    // SAFETY: DPDK passes room for `n` object pointers.
    if core.try_get_shared(unsafe { core::slice::from_raw_parts_mut(objs, n as usize) }) {
        return 0;
    }
    // SAFETY: forwarded DPDK arguments.
    unsafe { dequeue_slow(mp, objs, n) }
}

/// Every dequeue the fast paths did not serve: with the handler cache on,
/// more than 8 objects, a refill or a caller without an lcore id; with it
/// off, a draining pool or too few objects; validation mode; a pool that is
/// not ours.
#[inline(never)]
unsafe fn dequeue_slow(mp: *mut sys::rte_mempool, objs: *mut *mut c_void, n: c_uint) -> c_int {
    // SAFETY: DPDK passes its own mempool.
    let z = match unsafe { zone::attach(mp) } {
        Ok(z) => z,
        Err(e) => return report(mp, "dequeue", &e),
    };
    // SAFETY: DPDK passes room for `n` object pointers.
    let out = unsafe { core::slice::from_raw_parts_mut(objs, n as usize) };
    // SAFETY: as in `enqueue`.
    match unsafe { z.core.get(sys::lcore_id(), out) } {
        Ok(()) => {
            z.header.clear_trailing_failures();
            0
        }
        Err(e) => get_failed(mp, &z, e),
    }
}

#[cold]
#[inline(never)]
fn get_failed(mp: *mut sys::rte_mempool, z: &zone::Zone<'_>, e: PoolError) -> c_int {
    if let PoolError::NotActive { .. } = e {
        // A drained pool being freed: the library's take-back loop asks for
        // objects the state machine no longer hands out.
        log!(Level::Debug, "dequeue on pool {}: {e}", pool_name(mp));
        pool_errno(&e)
    } else if let PoolError::Exhausted { .. } = e {
        z.header.count_get_failure(z.core.ring().totals());
        log!(Level::Debug, "dequeue on pool {}: {e}", pool_name(mp));
        pool_errno(&e)
    } else {
        report(mp, "dequeue", &GlueError::Core(e))
    }
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

/// Records the object runs of a chunk in the IOVA table and maps the chunk
/// for the devices attached to the pool, then lets DPDK's helper lay out
/// (and enqueue) the objects. Never writes object memory.
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
        // SAFETY: DPDK passes its own mempool.
        let recorded = unsafe { zone::attach(mp) }.and_then(|z| {
            // SAFETY: DPDK populates a pool nobody uses yet.
            unsafe { setup::forget_freed_chunks(mp, &z) }?;
            let recorded = setup::record_chunk(mp, &z, max_objs as usize, vaddr, iova, len)?;
            crate::port::map_new_chunks(mp, &z);
            Ok(recorded)
        });
        let (expected, runs) = match recorded {
            Ok(r) => r,
            Err(e) => return report(mp, "populate", &e),
        };
        // SAFETY: forwarding DPDK's own arguments to DPDK's helper.
        let n = unsafe {
            sys::rte_mempool_op_populate_helper(
                mp, 0, max_objs, vaddr, iova, len, obj_cb, obj_cb_arg,
            )
        };
        if n >= 0 && n as usize != expected {
            log!(
                Level::Err,
                "populate on pool {}: DPDK laid out {n} objects, IOVA table expected {expected}",
                pool_name(mp)
            );
        }
        log!(
            Level::Debug,
            "pool {}: chunk va {:#x} iova {iova:#x} len {len}: {n} objects in {runs} runs",
            pool_name(mp),
            vaddr as usize
        );
        n
    })
}

/// The handler's ops table entry.
pub fn ops_table() -> sys::rte_mempool_ops {
    // SAFETY: all-zero is a valid rte_mempool_ops (null callbacks, empty name).
    let mut ops: sys::rte_mempool_ops = unsafe { core::mem::zeroed() };
    for (d, s) in ops.name.iter_mut().zip(OPS_NAME.bytes()) {
        *d = s as core::ffi::c_char;
    }
    ops.alloc = Some(alloc);
    ops.free = Some(free);
    ops.enqueue = Some(enqueue);
    ops.dequeue = Some(dequeue);
    ops.get_count = Some(get_count);
    ops.populate = Some(populate);
    ops
}

/// What [`register`] found in the ops table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registration {
    /// Registered now, at this index.
    Added(i32),
    /// Already registered by this copy of the handler.
    Present(i32),
    /// Registered by another copy of the handler (the same library loaded
    /// twice, e.g. from EAL's plugin directory and with `-d`): this copy's
    /// callbacks are not in the table and it must stay idle.
    OtherCopy(i32),
}

/// Registers the ops unless `ptr_ring` is in the table already: a second
/// registration of a name would take another slot, and DPDK looks names up
/// first come first served.
pub fn register() -> Result<Registration, GlueError> {
    if let Some(i) = lookup_index() {
        // SAFETY: `i` is below num_ops (lookup_index); entries there are set.
        let theirs =
            unsafe { (*core::ptr::addr_of!(sys::rte_mempool_ops_table)).ops[i as usize].enqueue };
        let ours = ops_table().enqueue;
        if theirs.map(|f| f as usize) != ours.map(|f| f as usize) {
            return Ok(Registration::OtherCopy(i));
        }
        // Relaxed: read by telemetry only.
        OPS_INDEX.store(i, Ordering::Relaxed);
        return Ok(Registration::Present(i));
    }
    let ops = ops_table();
    // SAFETY: a valid ops struct; DPDK copies it into its table.
    let idx = unsafe { sys::rte_mempool_register_ops(&ops) };
    if idx < 0 {
        return Err(GlueError::NotRegistered {
            name: OPS_NAME.into(),
            errno: idx,
        });
    }
    // Relaxed: read by telemetry only.
    OPS_INDEX.store(idx, Ordering::Relaxed);
    Ok(Registration::Added(idx))
}

/// Index of `ptr_ring` in this process's ops table, if registered.
pub fn lookup_index() -> Option<i32> {
    // SAFETY: reading DPDK's process-local ops table; entries below
    // `num_ops` are initialised (registration and renumbering happen in
    // constructors and in EAL's bus scan, before any pool exists).
    unsafe {
        let table = &*core::ptr::addr_of!(sys::rte_mempool_ops_table);
        (0..table.num_ops as usize)
            .find(|&i| zone::cstr_field(&table.ops[i].name) == OPS_NAME)
            .map(|i| i as i32)
    }
}

/// Name of the ops a pool uses in this process.
///
/// # Safety
/// `mp` is a live mempool.
pub unsafe fn ops_name_of(mp: *const sys::rte_mempool) -> String {
    // SAFETY: `mp` is live (caller's contract); reading DPDK's ops table at
    // the pool's index, bounds-checked.
    unsafe {
        let table = &*core::ptr::addr_of!(sys::rte_mempool_ops_table);
        let i = (*mp).ops_index;
        if i < 0 || i as u32 >= table.num_ops {
            return String::new();
        }
        zone::cstr_field(&table.ops[i as usize].name)
    }
}
