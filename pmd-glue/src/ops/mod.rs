//! The `rte_mempool_ops` callbacks: each a thin translation onto
//! [`mempool::PoolCore`], then the ops table and its registration.
//! Nothing here panics across `extern "C"`: errors become negative errno.

use core::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicI32, Ordering};

use dpdk_sys as sys;
use mempool::{ChunkSpec, Iova, PoolConfig, PoolCore, PoolError, VirtAddr, VirtRange};

use crate::error::GlueError;
use crate::log::Level;
use crate::{log, pool_config, port, settings, zone};

/// Name under which the handler registers.
pub const OPS_NAME: &str = "ptr_ring";

/// Our index in this process's `rte_mempool_ops_table`, or -1.
pub static OPS_INDEX: AtomicI32 = AtomicI32::new(-1);

/// Runs `f`, turning a panic (only possible in builds that unwind) into
/// `-EFAULT` instead of unwinding into C.
#[inline(always)]
fn guard(what: &str, f: impl FnOnce() -> c_int) -> c_int {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(_) => {
            log!(Level::Err, "internal error (panic) in {what}");
            -libc::EFAULT
        }
    }
}

fn pool_name(mp: *const sys::rte_mempool) -> String {
    // SAFETY: DPDK passes a valid mempool whose name is NUL-terminated.
    zone::cstr_field(unsafe { &(*mp).name })
}

fn report(mp: *const sys::rte_mempool, what: &str, e: &GlueError) -> c_int {
    log!(Level::Err, "{what} on pool {}: {e}", pool_name(mp));
    e.errno()
}

/// Page size the mempool library uses to keep objects within pages.
fn page_size(mp: *mut sys::rte_mempool) -> usize {
    let mut pg: usize = 0;
    // SAFETY: valid mempool, valid out pointer.
    if unsafe { sys::rte_mempool_get_page_size(mp, &mut pg) } < 0 {
        0
    } else {
        pg
    }
}

fn elt_total(mp: *const sys::rte_mempool) -> usize {
    // SAFETY: DPDK passes a valid mempool.
    unsafe { ((*mp).header_size + (*mp).elt_size + (*mp).trailer_size) as usize }
}

/// The pool configuration for `mp`: object count from DPDK, the rest from the
/// settings read at load, and an IOVA table large enough for any way DPDK
/// may hand out the memory (see [`max_chunks_for`]).
fn config_for(mp: *mut sys::rte_mempool) -> PoolConfig {
    let s = settings::get();
    // SAFETY: DPDK passes a valid mempool.
    let objects = unsafe { (*mp).size } as usize;
    let mut cfg = PoolConfig::new(objects);
    cfg.max_lcores = sys::RTE_MAX_LCORE;
    cfg.validate = s.validate;
    // DPDK's single-producer / single-consumer pool flags (what makes
    // ring_mp_mc pools ring_sp_sc ones, e.g. `rte_mempool_create(...,
    // MEMPOOL_F_SP_PUT | MEMPOOL_F_SC_GET)`): the application promises one
    // putting / getting thread at a time, so the ring side takes no lock.
    // SAFETY: DPDK passes a valid mempool.
    let flags = unsafe { (*mp).flags };
    cfg.single_producer = flags & sys::RTE_MEMPOOL_F_SP_PUT != 0;
    cfg.single_consumer = flags & sys::RTE_MEMPOOL_F_SC_GET != 0;
    // The handler's own per-lcore cache is off unless asked for
    // (PTR_RING_CACHE_SIZE here, or per pool through `pool_config`): with
    // DPDK's cache above us a second one only adds copies and idle objects,
    // and without it the application chose no cache, expecting what
    // ring_mp_mc gives: a pool of n serves n gets, whichever lcore freed
    // the objects (a cache would keep some idle on other lcores).
    let cache = s.cache_size.unwrap_or(0);
    let max_cache = PoolConfig::max_cache_size(objects);
    if cache > max_cache {
        log!(
            Level::Warning,
            "PTR_RING_CACHE_SIZE={cache} is too large for pool {} ({objects} objects: at most \
             {max_cache}): using {max_cache}",
            pool_name(mp)
        );
    }
    cfg.cache_size = Some(cache.min(max_cache));
    cfg.max_chunks = max_chunks_for(objects, page_size(mp), elt_total(mp));
    cfg
}

/// IOVA-table records a pool of `objects` objects of `total` bytes may need.
///
/// Each record is a run of at least one object, so `objects` records always
/// suffice, whatever the memory: DPDK may populate one page at a time (IOVA
/// as PA on anonymous memory gives one chunk per 4 KB page, split again
/// where an object would straddle a page). `ring_mp_mc` has no such table,
/// so anything smaller could refuse memory that DPDK's own handler accepts.
/// Bounded by the core's `MAX_CHUNKS`; never below the page-count estimate
/// plus slack for pools larger than that bound.
pub fn max_chunks_for(objects: usize, page_size: usize, total: usize) -> usize {
    let total = total.max(1);
    let per_page_runs = if page_size == 0 || total > page_size {
        0
    } else {
        objects.div_ceil(page_size / total)
    };
    objects
        .max(per_page_runs + 256)
        .clamp(1, mempool::config::MAX_CHUNKS)
}

unsafe extern "C" fn alloc(mp: *mut sys::rte_mempool) -> c_int {
    guard("alloc", || {
        let mut cfg = config_for(mp);
        // SAFETY: DPDK calls alloc with a valid mempool whose `pool_config`
        // is what the application passed to rte_mempool_set_ops_byname.
        if let Err(e) = unsafe { pool_config::apply_from(mp, &mut cfg) } {
            return report(mp, "alloc", &e);
        }
        // SAFETY: DPDK calls alloc with a valid mempool.
        let ops_index = unsafe { (*mp).ops_index };
        // SAFETY: as above.
        match unsafe { zone::create(mp, &cfg, ops_index) } {
            Ok(z) => {
                log!(
                    Level::Info,
                    "pool {}: {} objects, per-lcore cache {}, ring {} slots (batch {}, {}), validation {}",
                    pool_name(mp),
                    cfg.objects,
                    z.core.cache_size(),
                    z.core.ring().slots(),
                    z.core.ring().batch(),
                    z.core.ring().mode_name(),
                    if cfg.validate { "on" } else { "off" }
                );
                0
            }
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
        // Held until the zone is gone: telemetry and the deferred release
        // take the same lock before they touch a pool.
        let mut lock = port::release_lock();
        // SAFETY: DPDK calls free with a valid mempool.
        let z = match unsafe { zone::attach(mp) } {
            Ok(z) => z,
            Err(e) => return report(mp, "free", &e),
        };
        // A deferred release still armed for this pool must never act on
        // it (or on a pool that later reuses its memory): forget it now,
        // cancel its alarm once the lock is dropped.
        let pending = port::forget_deferred_release(&mut lock, &z);
        leak_report(mp, &z);
        if let Err(e) = zone::destroy(&pool_name(mp)) {
            report(mp, "free", &e);
        }
        drop(lock);
        if let Some(token) = pending {
            port::cancel_deferred_release(token);
        }
        0
    });
}

/// The `free` log line: how many objects never came back.
fn leak_report(mp: *mut sys::rte_mempool, z: &zone::Zone<'_>) {
    let st = z.core.stats();
    let name = pool_name(mp);
    if st.state == mempool::PoolState::Released {
        log!(
            Level::Info,
            "pool {name} freed after a drained shutdown (hold {}, release {})",
            st.hold,
            st.release
        );
        return;
    }
    let missing = if st.state.is_closing() {
        // Draining: gets are refused, so the library's take-back loop took
        // nothing and the caches were flushed at shutdown: the inflight
        // snapshot is exactly what is still out (signed: a double free
        // that got through shows as negative).
        st.inflight
    } else {
        // The library has just taken back, one at a time, every object it
        // could; the failures at the end are the objects that never came
        // back. Objects still in the handler caches of other lcores were
        // out of the freeing lcore's reach but are not lost.
        z.header
            .trailing_get_failures
            .load(Ordering::Relaxed)
            .saturating_sub(st.in_caches as u64) as i64
    };
    if missing > 0 {
        log!(
            Level::Warning,
            "pool {name} freed with {missing} objects not returned{} (still with the \
             application, in user-owned mempool caches, or in DPDK's per-lcore mempool caches)",
            if st.state.is_closing() {
                format!(" during its {} shutdown", st.state)
            } else {
                String::new()
            }
        );
    } else if missing < 0 {
        log!(
            Level::Warning,
            "pool {name} freed with {} more objects returned than handed out (a double free; \
             hold {}, release {})",
            -missing,
            st.hold,
            st.release
        );
    } else {
        log!(
            Level::Info,
            "pool {name} freed: every object returned (hold {}, release {})",
            st.hold,
            st.release
        );
    }
}

/// `ops->enqueue`. The fast path (up to 8 objects pushed onto the calling
/// lcore's own cache, see `PoolCore::try_put_cached`) is inlined here: no
/// call, no stack frame; everything else, larger bulks included (their
/// `memcpy` call amortised; `PoolCore::put` tries the cache first), goes
/// through [`enqueue_slow`].
unsafe extern "C" fn enqueue(
    mp: *mut sys::rte_mempool,
    objs: *const *mut c_void,
    n: c_uint,
) -> c_int {
    guard("enqueue", || {
        // SAFETY: DPDK passes its own mempool.
        if let Some(z) = unsafe { zone::attach_fast(mp) } {
            // Cleared before the put: once the last buffer is back a
            // deferred release may free the zone, so the put must be our
            // last touch of it.
            z.header.clear_trailing_failures();
            let lcore = sys::lcore_id();
            if z.core.is_direct() {
                // Tail calls, single objects apart: each path is a leaf
                // with few live values, so neither needs a stack frame.
                // SAFETY: forwarded DPDK arguments; the lcore id as below.
                return unsafe {
                    if n == 1 {
                        enqueue_one_direct(mp, objs, z.core, lcore)
                    } else {
                        enqueue_direct(mp, objs, n, z.core, lcore)
                    }
                };
            }
            // SAFETY: DPDK passes `n` valid object pointers; `lcore_id()` is
            // the calling thread's own lcore id (DPDK's one thread per lcore
            // rule makes it the cache's owner).
            if unsafe {
                z.core
                    .try_put_cached(lcore, core::slice::from_raw_parts(objs, n as usize))
            } {
                return 0;
            }
        }
        // SAFETY: forwarded DPDK arguments.
        unsafe { enqueue_slow(mp, objs, n) }
    })
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
    // SAFETY: DPDK passes `n` valid object pointers; the lcore id is the
    // caller's own (as in `enqueue`).
    if unsafe { core.try_put_direct(lcore, core::slice::from_raw_parts(objs, n as usize)) } {
        return 0;
    }
    // SAFETY: forwarded DPDK arguments.
    unsafe { enqueue_slow(mp, objs, n) }
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
    // SAFETY: DPDK passes one valid object pointer; the lcore id as in
    // `enqueue_direct`.
    if unsafe { core.try_put_direct(lcore, core::slice::from_raw_parts(objs, 1)) } {
        return 0;
    }
    // SAFETY: forwarded DPDK arguments.
    unsafe { enqueue_slow(mp, objs, 1) }
}

/// Every enqueue the inlined fast path did not take: more than 8 objects, a
/// full or closed cache,
/// a caller without an lcore id, validation mode, or a pool that is not ours.
#[inline(never)]
unsafe fn enqueue_slow(mp: *mut sys::rte_mempool, objs: *const *mut c_void, n: c_uint) -> c_int {
    // SAFETY: DPDK passes its own mempool.
    let z = match unsafe { zone::attach(mp) } {
        Ok(z) => z,
        Err(e) => return report(mp, "enqueue", &e),
    };
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
    report(mp, "enqueue", &GlueError::Core(e))
}

/// `ops->dequeue`; fast path inlined as in [`enqueue`].
unsafe extern "C" fn dequeue(
    mp: *mut sys::rte_mempool,
    objs: *mut *mut c_void,
    n: c_uint,
) -> c_int {
    guard("dequeue", || {
        // SAFETY: DPDK passes its own mempool.
        if let Some(z) = unsafe { zone::attach_fast(mp) } {
            let lcore = sys::lcore_id();
            if z.core.is_direct() {
                // Tail calls, as in `enqueue`.
                // SAFETY: forwarded DPDK arguments.
                return unsafe {
                    if n == 1 {
                        dequeue_one_direct(mp, objs, z.core, lcore)
                    } else {
                        dequeue_direct(mp, objs, n, z.core, lcore)
                    }
                };
            }
            // SAFETY: DPDK passes room for `n` object pointers; the lcore id
            // as in `enqueue`.
            if unsafe {
                z.core
                    .try_get_cached(lcore, core::slice::from_raw_parts_mut(objs, n as usize))
            } {
                z.header.clear_trailing_failures();
                return 0;
            }
        }
        // SAFETY: forwarded DPDK arguments.
        unsafe { dequeue_slow(mp, objs, n) }
    })
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
    // SAFETY: DPDK passes room for `n` object pointers; the lcore id as in
    // `enqueue`.
    if unsafe { core.try_get_direct(lcore, core::slice::from_raw_parts_mut(objs, n as usize)) } {
        // SAFETY: `dequeue` attached this pool's zone; a pool is not freed
        // while a get on it runs.
        unsafe { zone::header_of(mp) }.clear_trailing_failures();
        return 0;
    }
    // SAFETY: forwarded DPDK arguments.
    unsafe { dequeue_slow(mp, objs, n) }
}

/// [`dequeue_direct`] of one object (see [`enqueue_one_direct`]).
#[inline(never)]
unsafe fn dequeue_one_direct(
    mp: *mut sys::rte_mempool,
    objs: *mut *mut c_void,
    core: &PoolCore,
    lcore: u32,
) -> c_int {
    // SAFETY: DPDK passes room for one object pointer; the lcore id as in
    // `enqueue`.
    if unsafe { core.try_get_direct(lcore, core::slice::from_raw_parts_mut(objs, 1)) } {
        // SAFETY: as in `dequeue_direct`.
        unsafe { zone::header_of(mp) }.clear_trailing_failures();
        return 0;
    }
    // SAFETY: forwarded DPDK arguments.
    unsafe { dequeue_slow(mp, objs, 1) }
}

/// Every dequeue the inlined fast path did not serve: more than 8 objects, a
/// refill, a caller
/// without an lcore id, validation mode, or a pool that is not ours.
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
        e.errno()
    } else if let PoolError::Exhausted { .. } = e {
        // Relaxed: statistics.
        z.header.get_failures.fetch_add(1, Ordering::Relaxed);
        z.header
            .trailing_get_failures
            .fetch_add(1, Ordering::Relaxed);
        log!(Level::Debug, "dequeue on pool {}: {e}", pool_name(mp));
        e.errno()
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

/// Records the object runs of a chunk in the IOVA table, then lets DPDK's
/// helper lay out (and enqueue) the objects. Never writes object memory.
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
        let z = match unsafe { zone::attach(mp) } {
            Ok(z) => z,
            Err(e) => return report(mp, "populate", &e),
        };
        let runs = object_runs(mp, max_objs as usize, vaddr as usize, len);
        let total = elt_total(mp);
        // SAFETY: valid mempool.
        let header = unsafe { (*mp).header_size } as usize;
        let expected: usize = runs.iter().map(|r| r.count).sum();
        // All or nothing, as DPDK's populate is: on error no object of this
        // chunk may stay recorded.
        if z.core.chunks() + runs.len() > z.core.max_chunks() {
            let e = PoolError::ChunkTableFull {
                max_chunks: z.core.max_chunks(),
                va: VirtRange::new(VirtAddr(vaddr as usize), len),
            };
            return report(mp, "populate", &GlueError::Core(e));
        }
        for r in &runs {
            let start = r.first - header;
            let spec = ChunkSpec {
                va: VirtRange::new(VirtAddr(start), (r.count - 1) * r.stride + total),
                iova: Iova::from_raw(iova).map(|i| Iova(i.0 + (start - vaddr as usize) as u64)),
                first: VirtAddr(r.first),
                stride: r.stride,
                count: r.count,
            };
            if let Err(e) = z.core.register_chunk(spec) {
                return report(mp, "populate", &GlueError::Core(e));
            }
        }
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
            "pool {}: chunk va {:#x} iova {:#x} len {len}: {n} objects in {} runs",
            pool_name(mp),
            vaddr as usize,
            iova,
            runs.len()
        );
        n
    })
}

/// A run of evenly spaced objects in a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    first: usize,
    stride: usize,
    count: usize,
}

/// Where `rte_mempool_op_populate_helper` (flags 0) puts objects in a chunk,
/// as runs of evenly spaced objects. Objects never straddle a page when the
/// pool needs IOVA-contiguous objects, so a page boundary can change the
/// spacing: with objects smaller than half a page each page starts a run;
/// with one object per page (4 KB pages, no hugepages) the whole chunk is
/// one run whose stride is the page size.
fn object_runs(mp: *mut sys::rte_mempool, max_objs: usize, va: usize, len: usize) -> Vec<Run> {
    let pg = page_size(mp);
    let total = elt_total(mp);
    // SAFETY: valid mempool.
    let header = unsafe { (*mp).header_size } as usize;
    let mut runs: Vec<Run> = Vec::new();
    let mut off = 0usize;
    for _ in 0..max_objs {
        let start = va + off;
        if pg != 0 && total <= pg && start / pg != (start + total - 1) / pg {
            off += start.next_multiple_of(pg) - start;
        }
        if off + total > len {
            break;
        }
        let obj = va + off + header;
        match runs.last_mut() {
            Some(r) if r.count == 1 => {
                r.stride = obj - r.first;
                r.count = 2;
            }
            Some(r) if r.first + r.count * r.stride == obj => r.count += 1,
            _ => runs.push(Run {
                first: obj,
                stride: total,
                count: 1,
            }),
        }
        off += total;
    }
    runs
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
