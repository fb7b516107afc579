//! The put side of the callbacks: `ops->enqueue` from its inlined fast
//! path down to the checked entry, in the order a put tries them (see the
//! route table in `ops/mod.rs`).

use core::ffi::{c_int, c_uint, c_void};

use dpdk_sys as sys;
use mempool::{DirectSlot, PoolCore, PoolError, CACHE_INLINE_MAX, SMALL_BULK_MAX};

use super::{report, setup};
use crate::error::GlueError;
use crate::ffi::pool_name;
use crate::log::Level;
use crate::{log, zone};

/// `ops->enqueue`: inlined into the callback, with no call and no stack frame: the
/// handler cache's single-object fast path (`PoolCore::try_put_cached`,
/// the length a constant). Every other fast path is a tail call: a bulk
/// with the cache on to [`enqueue_cached_bulk`] (one copy up to
/// [`CACHE_INLINE_MAX`] objects, one above), the cache off to the
/// direct path (single objects apart, so that each is a leaf function).
/// Everything else goes through [`enqueue_slow`].
///
/// The trailing-failure hint is left alone: a put moves the ring or the
/// lcore's cache line, which ends a run of failures by itself
/// (`ZoneHeader::count_get_failure`). Only in a build whose activity mark
/// does not see cache traffic does the cache path clear it
/// (`ZoneHeader::note_cache_hit`), before the put: once the last buffer is
/// back a deferred release may free the zone, so the put must be our last
/// touch of it.
#[inline(always)]
pub(super) unsafe fn enqueue(
    mp: *mut sys::rte_mempool,
    objs: *const *mut c_void,
    n: c_uint,
) -> c_int {
    // SAFETY: DPDK passes its own mempool.
    if let Some(z) = unsafe { zone::attach_fast(mp) } {
        // SAFETY: forwarded DPDK arguments, `n` valid object pointers
        // at `objs`. The handler cache's paths take the caller's own lcore
        // id: DPDK's one thread per lcore rule makes it the owner of that
        // lcore's cache and counters. The direct paths read none.
        unsafe {
            match (z.direct, n) {
                (true, 1) => return enqueue_one_direct(mp, objs, z.core),
                // The gate tested here, before any stack frame: a closed
                // pool goes straight to the checked entry.
                (true, _) => {
                    // The zone word said direct.
                    z.core.assume_direct();
                    return match z.core.direct_gate(true) {
                        Some(slot) if (2..=SMALL_BULK_MAX).contains(&(n as usize)) => {
                            enqueue_direct::<true>(mp, objs, n, z.core, slot)
                        }
                        Some(slot) => enqueue_direct::<false>(mp, objs, n, z.core, slot),
                        None => enqueue_slow(mp, objs, n),
                    };
                }
                // One object: the length a constant, so the copy is
                // one move and the length update one add.
                (false, 1) => {
                    // The zone word said cache on.
                    z.core.assume_cached();
                    z.header.note_cache_hit();
                    if z.core
                        .try_put_cached(sys::lcore_id(), core::slice::from_raw_parts(objs, 1))
                    {
                        return 0;
                    }
                }
                (false, _) if n as usize <= CACHE_INLINE_MAX => {
                    let lcore = sys::lcore_id();
                    return enqueue_cached_bulk::<true>(mp, objs, n, z.header, z.core, lcore);
                }
                (false, _) => {
                    let lcore = sys::lcore_id();
                    return enqueue_cached_bulk::<false>(mp, objs, n, z.header, z.core, lcore);
                }
            }
        }
    }
    // A newest-first pool without the handler cache: its own route.
    // SAFETY: DPDK passes its own mempool.
    if let Some(z) = unsafe { zone::attach_newest(mp) } {
        let lcore = sys::lcore_id();
        // SAFETY: forwarded DPDK arguments; the lcore id as above.
        return unsafe {
            if n == 1 {
                enqueue_newest::<true>(mp, objs, 1, z.core, lcore)
            } else {
                enqueue_newest::<false>(mp, objs, n, z.core, lcore)
            }
        };
    }
    // SAFETY: forwarded DPDK arguments.
    unsafe { enqueue_slow(mp, objs, n) }
}

/// `enqueue` of a newest-first pool with the handler cache off
/// ([`zone::attach_newest`]): [`PoolCore::try_put_newest`], into the ring
/// naming the lcore, without the checked entry; whatever it refuses goes
/// on to [`enqueue_slow`] (see `get::dequeue_newest`). `ONE`: the copy
/// for single objects, the length a constant (a leaf without the bulk
/// code's stack frame), as the direct paths have.
#[inline(never)]
unsafe fn enqueue_newest<const ONE: bool>(
    mp: *mut sys::rte_mempool,
    objs: *const *mut c_void,
    n: c_uint,
    core: &PoolCore,
    lcore: u32,
) -> c_int {
    let n = if ONE { 1 } else { n };
    // SAFETY: as in `get::dequeue_newest`: the zone word said newest
    // first, cache off.
    unsafe { core.assume_direct_newest() };
    // SAFETY: DPDK passes `n` valid object pointers; the lcore id is the
    // caller's own (`enqueue`).
    if unsafe { core.try_put_newest(lcore, core::slice::from_raw_parts(objs, n as usize)) } {
        return 0;
    }
    // SAFETY: forwarded DPDK arguments.
    unsafe { enqueue_slow(mp, objs, n) }
}

/// `enqueue` of a bulk with the handler cache on: onto the lcore's cache
/// (a tail call from `enqueue`, whose single-object path so needs no stack
/// frame), else [`enqueue_slow`]. `INLINE`: `n` is at most
/// [`CACHE_INLINE_MAX`], and this copy holds the inline copies alone, with
/// no `memcpy` call and so no stack frame; the other copy takes the larger
/// bulks, with `memcpy`.
#[inline(never)]
unsafe fn enqueue_cached_bulk<const INLINE: bool>(
    mp: *mut sys::rte_mempool,
    objs: *const *mut c_void,
    n: c_uint,
    header: &zone::ZoneHeader,
    core: &PoolCore,
    lcore: u32,
) -> c_int {
    // SAFETY: `enqueue` calls each copy only for its own bulks.
    unsafe { core::hint::assert_unchecked((n as usize <= CACHE_INLINE_MAX) == INLINE) };
    // SAFETY: `enqueue` calls this only for a pool whose zone word said
    // cache on.
    unsafe { core.assume_cached() };
    // Before the put, as in `enqueue`.
    header.note_cache_hit();
    // SAFETY: DPDK passes `n` valid object pointers; the lcore id is the
    // caller's own (as in `enqueue`).
    if unsafe { core.try_put_cached_bulk(lcore, core::slice::from_raw_parts(objs, n as usize)) } {
        return 0;
    }
    // SAFETY: forwarded DPDK arguments.
    unsafe { enqueue_slow(mp, objs, n) }
}

/// `enqueue` of a bulk with the handler cache off, for an lcore with a
/// slot: straight to the ring (a tail call from `enqueue`, whose cache path
/// so needs no stack frame). `SMALL`: `n` is 2 to [`SMALL_BULK_MAX`], and
/// this copy holds the ring's small-bulk path alone (no test for 0 or 1
/// object), without the registers the big one saves.
#[inline(never)]
unsafe fn enqueue_direct<const SMALL: bool>(
    mp: *mut sys::rte_mempool,
    objs: *const *mut c_void,
    n: c_uint,
    core: &PoolCore,
    slot: DirectSlot<'_>,
) -> c_int {
    // SAFETY: `enqueue` calls each copy only for its own bulks, and this one
    // never for a single object.
    unsafe { core::hint::assert_unchecked((2..=SMALL_BULK_MAX).contains(&(n as usize)) == SMALL) };
    // SAFETY: `enqueue` calls this only for a pool whose zone word said direct.
    unsafe { core.assume_direct() };
    // SAFETY: DPDK passes `n` valid object pointers; a direct pool's slot
    // is every caller's (`enqueue` tested its gate).
    let objs_slice = unsafe { core::slice::from_raw_parts(objs, n as usize) };
    // SAFETY: as above.
    if unsafe { core.try_put_direct_at(slot, objs_slice) } {
        return 0;
    }
    // SAFETY: forwarded DPDK arguments.
    unsafe { enqueue_slow(mp, objs, n) }
}

/// `enqueue` of one object with the handler cache off, from any caller
/// (an EAL lcore or a thread without an lcore id, as
/// `get::dequeue_one_direct`): the bulk length a constant, so the ring's
/// single-slot path alone is compiled in.
#[inline(never)]
unsafe fn enqueue_one_direct(
    mp: *mut sys::rte_mempool,
    objs: *const *mut c_void,
    core: &PoolCore,
) -> c_int {
    // SAFETY: `enqueue` calls this only for a pool whose zone word said direct.
    unsafe { core.assume_direct() };
    if let Some(slot) = core.direct_gate(true) {
        // SAFETY: DPDK passes one valid object pointer; a direct pool's
        // slot is every caller's.
        if unsafe { core.try_put_direct_at(slot, core::slice::from_raw_parts(objs, 1)) } {
            return 0;
        }
    }
    // SAFETY: forwarded DPDK arguments.
    unsafe { enqueue_slow(mp, objs, 1) }
}

/// Every enqueue the fast paths did not take: with the handler cache on,
/// a full or closed cache or a caller without a slot; with it off, a
/// released pool or a ring without room; validation mode; what a
/// newest-first pool's route refused; a pool that is not ours.
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
