//! The zone's first word: which build made the zone and which route its
//! pool's gets and puts take (`ZONE_MAGIC`, `ZONE_MAGIC_DIRECT`,
//! `ZONE_MAGIC_NEWEST`), and the checks that find a pool's zone from it:
//! [`attach_fast`] for the callbacks' fast paths, [`attach_newest`] for a
//! newest-first pool's route, [`attach`] for every checked entry, which
//! names the build of a zone it refuses.

use core::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use dpdk_sys as sys;
use mempool::pool::BuildId;
use mempool::PoolCore;

use super::{build_name, Zone, ZoneHeader, BUILD, HEADER_BYTES, MAGIC_PREFIX, ZONE_FAMILY};
use crate::error::GlueError;
use crate::ffi;

/// The zone's first word in this build, for a pool with the handler cache
/// on: [`MAGIC_PREFIX`] and the low half of [`BUILD`]'s hash folded in, its
/// two low bits clear (they name the route). The fast path checks this
/// word alone, so a zone of another build (or another format) fails it
/// there at no cost, and [`attach`] then names the build that made it.
pub(super) const ZONE_MAGIC: u64 =
    (MAGIC_PREFIX << 32) | ((BUILD.hash ^ (BUILD.hash >> 32)) & 0xffff_fffc);
/// [`ZONE_MAGIC`] with bit 0 set: the first word of a zone whose pool has
/// the handler cache off ([`PoolCore::is_direct`]). The one load of the
/// fast path's zone check also chooses its route, with no read of the
/// core's flag.
pub(super) const ZONE_MAGIC_DIRECT: u64 = ZONE_MAGIC | 1;
/// [`ZONE_MAGIC_DIRECT`] with bit 1 set as well: a pool with the handler
/// cache off whose gets are newest first ([`PoolCore::newest_first`]).
/// The fast paths' two compares fail on it, at no cost to the other
/// pools, and the callbacks then send it to its own route
/// ([`attach_newest`]), which the direct paths would otherwise have to
/// refuse first.
pub(super) const ZONE_MAGIC_NEWEST: u64 = ZONE_MAGIC | 3;

/// The first word of a zone whose pool is (`direct`) or is not direct,
/// newest first or not (`newest`, with `direct` only).
pub(super) const fn zone_magic(direct: bool, newest: bool) -> u64 {
    if direct && newest {
        ZONE_MAGIC_NEWEST
    } else {
        ZONE_MAGIC | direct as u64
    }
}

/// The zone behind `mp->pool_data`, after checking it is one of ours: a
/// process whose ops table is numbered differently from the creator's would
/// otherwise hand us another handler's pool.
///
/// # Safety
/// `mp` is a valid mempool; its `pool_data` is null or points to at least
/// 8 readable bytes (true of every handler's private data).
#[inline(always)]
pub unsafe fn attach<'a>(mp: *const sys::rte_mempool) -> Result<Zone<'a>, GlueError> {
    // SAFETY: per the caller's contract (the same as `attach_fast`'s).
    let word = unsafe { first_word(mp) };
    let (base, direct, newest) = match word {
        Some((base, ZONE_MAGIC)) => (base, false, false),
        Some((base, ZONE_MAGIC_DIRECT)) => (base, true, false),
        Some((base, ZONE_MAGIC_NEWEST)) => (base, true, true),
        // SAFETY: as above.
        _ => return Err(unsafe { refusal(mp) }),
    };
    // SAFETY: the word is one of this build's.
    let z = unsafe { zone_at(base, direct) };
    // The whole build hash (the magic holds 32 bits of it), then the core's
    // own magic and build: a second, independent check of the block.
    if z.header.build.hash != BUILD.hash {
        return Err(other_build(mp, &z.header.build));
    }
    // SAFETY: the zone magic proves `create` initialised the core here.
    let core = unsafe { PoolCore::attach(NonNull::from(z.core).cast::<u8>()) }?;
    if core.is_direct() != z.direct || (core.is_direct() && core.newest_first() != newest) {
        // The first word's route bits and the core disagree: not a zone
        // `create` wrote.
        return Err(GlueError::NotOurPool {
            addr: (z.header as *const ZoneHeader) as usize,
        });
    }
    Ok(Zone {
        header: z.header,
        core,
        direct: z.direct,
    })
}

/// Why [`attach_fast`] refused `mp`: a zone of this format made by another
/// build (both named), or no zone of ours.
///
/// # Safety
/// As for [`attach`].
#[cold]
#[inline(never)]
unsafe fn refusal(mp: *const sys::rte_mempool) -> GlueError {
    // SAFETY: per the caller's contract. The word of whichever build.
    let Some((base, magic)) = (unsafe { first_word(mp) }) else {
        return GlueError::NotOurPool { addr: 0 };
    };
    let base = base.cast::<ZoneHeader>();
    let not_ours = GlueError::NotOurPool {
        addr: base as usize,
    };
    if magic >> 32 != MAGIC_PREFIX {
        return not_ours;
    }
    // SAFETY: the prefix marks a zone of this family, whose header (128
    // bytes) every build writes before its magic, with `family` and
    // `build` at these offsets; plain reads of fields read-only after
    // `create`.
    let (family, build) = unsafe {
        (
            core::ptr::addr_of!((*base).family).read(),
            core::ptr::addr_of!((*base).build).read(),
        )
    };
    if family != ZONE_FAMILY {
        return not_ours;
    }
    other_build(mp, &build)
}

/// The error for pool `mp`, whose zone build `found` made.
fn other_build(mp: *const sys::rte_mempool, found: &BuildId) -> GlueError {
    GlueError::OtherBuild {
        pool: ffi::pool_name(mp),
        found: build_name(found),
        ours: build_name(&BUILD),
    }
}

/// [`attach`] for the get/put fast path: the same zone check (null and
/// magic, the first word of `pool_data`), inlined, and the core found at its
/// fixed offset without re-checking the core's own magic: `create` stores
/// the zone magic (Release) only after `PoolCore::init` has finished, so a
/// matching zone magic, read with Acquire, already proves an initialised
/// core. `None` wherever [`attach`] would fail; the caller then takes its
/// slow path, which calls [`attach`] and reports the error.
///
/// # Safety
/// As for [`attach`].
#[inline(always)]
pub unsafe fn attach_fast<'a>(mp: *const sys::rte_mempool) -> Option<Zone<'a>> {
    // SAFETY: per the caller's contract.
    let (base, magic) = unsafe { first_word(mp) }?;
    // Which of the two words is compared first is the compiler's choice
    // (the lower value: the cached one, whose path is inlined here whole).
    let direct = if magic == ZONE_MAGIC {
        false
    } else if magic == ZONE_MAGIC_DIRECT {
        true
    } else {
        return None;
    };
    // SAFETY: the word is one of this build's.
    Some(unsafe { zone_at(base, direct) })
}

/// The zone of `mp` when its first word is this build's
/// `ZONE_MAGIC_NEWEST`: a pool with the handler cache off and newest-first
/// gets, which [`attach_fast`] refuses so that the direct fast paths never
/// see it. The same checks as `attach_fast`, for the callbacks' own route
/// of such a pool; `None` for every other pool.
///
/// # Safety
/// As for [`attach`].
#[inline(always)]
pub unsafe fn attach_newest<'a>(mp: *const sys::rte_mempool) -> Option<Zone<'a>> {
    // SAFETY: per the caller's contract.
    let (base, magic) = unsafe { first_word(mp) }?;
    // SAFETY: the word is this build's.
    (magic == ZONE_MAGIC_NEWEST).then(|| unsafe { zone_at(base, true) })
}

/// `mp`'s `pool_data` and the first word there, `None` where `pool_data`
/// is null. Acquire pairs with the Release store of the magic in
/// `create`: a process that reads a build's word sees what that build
/// wrote before it.
///
/// # Safety
/// As for [`attach`].
#[inline(always)]
unsafe fn first_word(mp: *const sys::rte_mempool) -> Option<(*mut u8, u64)> {
    // SAFETY: per the caller's contract.
    let base = unsafe { (*mp).__bindgen_anon_1.pool_data }.cast::<u8>();
    if base.is_null() {
        return None;
    }
    // SAFETY: at least 8 readable bytes at `base` (caller's contract).
    Some((base, unsafe {
        (*(base.cast::<AtomicU64>())).load(Ordering::Acquire)
    }))
}

/// The zone at `base`, found at fixed offsets without re-checking the
/// core's own magic.
///
/// # Safety
/// `base`'s first word was one of this build's (read with Acquire): `create`
/// stores it only after writing the header and, at `HEADER_BYTES`, the
/// core; `direct` is what the word says.
#[inline(always)]
unsafe fn zone_at<'a>(base: *mut u8, direct: bool) -> Zone<'a> {
    // SAFETY: the caller's contract.
    unsafe {
        Zone {
            header: &*base.cast::<ZoneHeader>(),
            core: PoolCore::attach_unchecked(NonNull::new_unchecked(base.add(HEADER_BYTES))),
            direct,
        }
    }
}
