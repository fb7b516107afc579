//! The get side of the callbacks: `ops->dequeue` from its inlined fast
//! path down to the checked entry, mirroring `put.rs` (see the route table
//! in `ops/mod.rs`).

use core::ffi::{c_int, c_uint, c_void};

use dpdk_sys as sys;
use mempool::{DirectSlot, PoolCore, PoolError, CACHE_INLINE_MAX, SMALL_BULK_MAX};

use super::report;
use crate::error::{pool_errno, GlueError};
use crate::ffi::pool_name;
use crate::log::Level;
use crate::{log, zone};

/// `ops->dequeue`; fast paths as in `put::enqueue`.
#[inline(always)]
pub(super) unsafe fn dequeue(
    mp: *mut sys::rte_mempool,
    objs: *mut *mut c_void,
    n: c_uint,
) -> c_int {
    // SAFETY: DPDK passes its own mempool.
    if let Some(z) = unsafe { zone::attach_fast(mp) } {
        // SAFETY: forwarded DPDK arguments, room for `n` object
        // pointers at `objs`; the lcore id as in `enqueue`.
        unsafe {
            match (z.direct, n) {
                (true, 1) => return dequeue_one_direct(mp, objs, z.core),
                // The gate tested here, before any stack frame: a closed
                // pool goes straight to the checked entry.
                (true, _) => {
                    // The zone word said direct.
                    z.core.assume_direct();
                    return match z.core.direct_gate(false) {
                        Some(slot) if (2..=SMALL_BULK_MAX).contains(&(n as usize)) => {
                            dequeue_direct::<true>(mp, objs, n, z.core, slot)
                        }
                        Some(slot) => dequeue_direct::<false>(mp, objs, n, z.core, slot),
                        None => dequeue_slow(mp, objs, n),
                    };
                }
                (false, 1) => {
                    // The zone word said cache on.
                    z.core.assume_cached();
                    if z.core
                        .try_get_cached(sys::lcore_id(), core::slice::from_raw_parts_mut(objs, 1))
                    {
                        z.header.note_cache_hit();
                        return 0;
                    }
                }
                (false, _) if n as usize <= CACHE_INLINE_MAX => {
                    let lcore = sys::lcore_id();
                    return dequeue_cached_bulk::<true>(mp, objs, n, z.header, z.core, lcore);
                }
                (false, _) => {
                    let lcore = sys::lcore_id();
                    return dequeue_cached_bulk::<false>(mp, objs, n, z.header, z.core, lcore);
                }
            }
        }
    }
    // A newest-first pool without the handler cache: its own route.
    // SAFETY: DPDK passes its own mempool.
    if let Some(z) = unsafe { zone::attach_newest(mp) } {
        let lcore = sys::lcore_id();
        // SAFETY: forwarded DPDK arguments; the lcore id as in
        // `put::enqueue`.
        return unsafe {
            if n == 1 {
                dequeue_newest::<true>(mp, objs, 1, z.core, lcore)
            } else {
                dequeue_newest::<false>(mp, objs, n, z.core, lcore)
            }
        };
    }
    // SAFETY: forwarded DPDK arguments.
    unsafe { dequeue_slow(mp, objs, n) }
}

/// `dequeue` of a newest-first pool with the handler cache off
/// ([`zone::attach_newest`]): [`PoolCore::try_get_newest`], the ring's
/// newest objects when the caller's put was its last, else its oldest,
/// without the checked entry; whatever it refuses (a caller without a
/// slot, validation mode, a draining pool, too few objects) goes on to
/// [`dequeue_slow`]. `ONE`: the copy for single objects, whose take-back
/// is the ring's single-object one (`n` a constant); the other copy is
/// told that `n` is not 1, so it does not test for it again.
#[inline(never)]
unsafe fn dequeue_newest<const ONE: bool>(
    mp: *mut sys::rte_mempool,
    objs: *mut *mut c_void,
    n: c_uint,
    core: &PoolCore,
    lcore: u32,
) -> c_int {
    let n = if ONE { 1 } else { n };
    // SAFETY: `dequeue` sends single objects to the `ONE` copy alone.
    unsafe { core::hint::assert_unchecked(ONE == (n == 1)) };
    // SAFETY: `dequeue` calls this only for a pool whose zone word said
    // newest first, cache off: `zone::create` writes that word from the
    // core's own flags, for such a pool alone.
    unsafe { core.assume_direct_newest() };
    // SAFETY: DPDK passes room for `n` object pointers; the lcore id is
    // the caller's own (`dequeue`).
    if unsafe { core.try_get_newest(lcore, core::slice::from_raw_parts_mut(objs, n as usize)) } {
        // No `clear_trailing_failures`, as in `dequeue_direct`.
        return 0;
    }
    // SAFETY: forwarded DPDK arguments.
    unsafe { dequeue_slow(mp, objs, n) }
}

/// `dequeue` of a bulk with the handler cache on (see
/// `put::enqueue_cached_bulk`, `INLINE` too).
#[inline(never)]
unsafe fn dequeue_cached_bulk<const INLINE: bool>(
    mp: *mut sys::rte_mempool,
    objs: *mut *mut c_void,
    n: c_uint,
    header: &zone::ZoneHeader,
    core: &PoolCore,
    lcore: u32,
) -> c_int {
    // SAFETY: `dequeue` calls each copy only for its own bulks.
    unsafe { core::hint::assert_unchecked((n as usize <= CACHE_INLINE_MAX) == INLINE) };
    // SAFETY: `dequeue` calls this only for a pool whose zone word said
    // cache on.
    unsafe { core.assume_cached() };
    // SAFETY: DPDK passes room for `n` object pointers; the lcore id as in
    // `put::enqueue`.
    if unsafe { core.try_get_cached_bulk(lcore, core::slice::from_raw_parts_mut(objs, n as usize)) }
    {
        header.note_cache_hit();
        return 0;
    }
    // SAFETY: forwarded DPDK arguments.
    unsafe { dequeue_slow(mp, objs, n) }
}

/// `dequeue` of a bulk with the handler cache off, for an lcore with a
/// slot (see `put::enqueue_direct`, `SMALL` too).
#[inline(never)]
unsafe fn dequeue_direct<const SMALL: bool>(
    mp: *mut sys::rte_mempool,
    objs: *mut *mut c_void,
    n: c_uint,
    core: &PoolCore,
    slot: DirectSlot<'_>,
) -> c_int {
    // SAFETY: `dequeue` calls each copy only for its own bulks, and this one
    // never for a single object.
    unsafe { core::hint::assert_unchecked((2..=SMALL_BULK_MAX).contains(&(n as usize)) == SMALL) };
    // SAFETY: `dequeue` calls this only for a pool whose zone word said direct.
    unsafe { core.assume_direct() };
    // SAFETY: DPDK passes room for `n` object pointers; a direct pool's
    // slot is every caller's (`dequeue` tested its gate).
    let out = unsafe { core::slice::from_raw_parts_mut(objs, n as usize) };
    // SAFETY: as above.
    if unsafe { core.try_get_direct_at(slot, out) } {
        // No `clear_trailing_failures`: the get moved the ring, which ends
        // a run of failures (see `ZoneHeader::count_get_failure`), as every
        // cache hit does where `PoolCore::MARK_SEES_CACHE`.
        return 0;
    }
    // SAFETY: forwarded DPDK arguments.
    unsafe { dequeue_slow(mp, objs, n) }
}

/// `dequeue` of one object with the handler cache off, from any caller
/// (an EAL lcore or a thread without an lcore id: a direct pool counts by
/// its ring's totals, and its gate reads no lcore id): the bulk length a
/// constant, so the ring's single-slot path alone is compiled in.
#[inline(never)]
unsafe fn dequeue_one_direct(
    mp: *mut sys::rte_mempool,
    objs: *mut *mut c_void,
    core: &PoolCore,
) -> c_int {
    // SAFETY: `dequeue` calls this only for a pool whose zone word said direct.
    unsafe { core.assume_direct() };
    if let Some(slot) = core.direct_gate(false) {
        // SAFETY: DPDK passes room for one object pointer; a direct pool's
        // slot is every caller's.
        if unsafe { core.try_get_direct_at(slot, core::slice::from_raw_parts_mut(objs, 1)) } {
            // No `clear_trailing_failures`, as in `dequeue_direct`.
            return 0;
        }
    }
    // SAFETY: forwarded DPDK arguments.
    unsafe { dequeue_slow(mp, objs, 1) }
}

/// Every dequeue the fast paths did not serve: with the handler cache on,
/// a refill or a caller without a slot; with it off, a draining pool or
/// too few objects; validation mode; what a newest-first pool's route
/// refused; a pool that is not ours.
#[inline(never)]
unsafe fn dequeue_slow(mp: *mut sys::rte_mempool, objs: *mut *mut c_void, n: c_uint) -> c_int {
    // SAFETY: DPDK passes its own mempool.
    let z = match unsafe { zone::attach(mp) } {
        Ok(z) => z,
        Err(e) => return report(mp, "dequeue", &e),
    };
    // SAFETY: DPDK passes room for `n` object pointers.
    let out = unsafe { core::slice::from_raw_parts_mut(objs, n as usize) };
    // SAFETY: as in `put::enqueue`.
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
        z.header
            .count_get_failure(z.core.activity_mark(sys::lcore_id()));
        log!(Level::Debug, "dequeue on pool {}: {e}", pool_name(mp));
        pool_errno(&e)
    } else {
        report(mp, "dequeue", &GlueError::Core(e))
    }
}
