//! Where a pool's handler state lives: one memzone per pool, named
//! `PR_<pool name>` (the mempool library owns `MP_*`), on the pool's socket.
//! `mp->pool_data` points at its start, a [`ZoneHeader`]; the core's block
//! (ring, caches, counters, IOVA table) follows at `core_offset`. Nothing in
//! it is process-local, so secondary processes use it as it is.

use core::ffi::{c_void, CStr};
use core::mem::{align_of, offset_of, size_of};
use core::ptr::NonNull;
use std::ffi::CString;
use std::sync::atomic::{AtomicU64, Ordering};

use dpdk_sys as sys;
use mempool::pool::BuildId;
use mempool::{ActivityMark, PoolConfig, PoolCore, PoolLayout};

use crate::error::GlueError;
use crate::port::ReleaseLock;
use crate::{ffi, ops_name};

mod word;

use word::zone_magic;
pub use word::{attach, attach_fast, attach_newest};

// Public here, where the crate's users find them; they live in the leaf
// module `cname`, which every module may use.
pub use crate::cname::{cstr_field, cstr_ptr, dpdk_max_pool_name};

/// Memzone name prefix of our pools.
pub const ZONE_PREFIX: &str = "PR_";
/// Names the format of the zone and of the pool block behind it, and
/// changes with either. Every build of this format keeps `family` and
/// `build` where they are, so that a process of another build can name the
/// zone's.
const ZONE_FAMILY: u64 = 0x5054_525f_5a4f_4e34; // "PTR_ZON4"
/// High half of every build's [`ZONE_MAGIC`] ("PTR_"): a first word with
/// it is a zone of this family, whose `family` and `build` can be read.
const MAGIC_PREFIX: u64 = 0x5054_525f;
const HEADER_BYTES: usize = 128;

/// This build of the handler: the core's [`BuildId`] with the zone
/// header's layout and the DPDK release and ABI the handler was built
/// against hashed in; the release word is `year.month.minor.ABI`, a byte
/// each. Pools are shared only by processes of one build.
pub const BUILD: BuildId = {
    let (year, month, minor) = sys::compat::RELEASE;
    let abi = sys::compat::ABI;
    BuildId::CORE.extend(
        &[
            ZONE_FAMILY as usize,
            size_of::<ZoneHeader>(),
            align_of::<ZoneHeader>(),
            offset_of!(ZoneHeader, magic),
            offset_of!(ZoneHeader, family),
            offset_of!(ZoneHeader, build),
            offset_of!(ZoneHeader, creator_ops_index),
            offset_of!(ZoneHeader, core_bytes),
            offset_of!(ZoneHeader, trailing_get_failures),
            offset_of!(ZoneHeader, get_failures),
            offset_of!(ZoneHeader, release_token),
            offset_of!(ZoneHeader, fail_mark),
            year as usize,
            month as usize,
            abi as usize,
        ],
        ((year & 0xff) << 24) | ((month & 0xff) << 16) | ((minor & 0xff) << 8) | (abi & 0xff),
    )
};

/// `0123456789abcdef (accounting on, DPDK 24.11.1, ABI 25)`: a build as the
/// errors name it.
pub fn build_name(b: &BuildId) -> String {
    let r = b.release;
    format!(
        "{}, DPDK {}.{:02}.{}, ABI {}",
        b.to_string().trim_end_matches(')'),
        r >> 24,
        (r >> 16) & 0xff,
        (r >> 8) & 0xff,
        r & 0xff
    ) + ")"
}

/// Start of every pool's memzone. `magic`, `family` and `build` stay at
/// these offsets in every build of this format; the fast path reads
/// `magic`, on the first line.
#[repr(C, align(128))]
pub struct ZoneHeader {
    /// [`ZONE_MAGIC`] of the creating build; stored last (Release).
    magic: u64,
    /// [`ZONE_FAMILY`].
    family: u64,
    /// [`BUILD`] of the creating process.
    build: BuildId,
    /// Ops index of `ptr_ring` in the process that created the pool.
    pub creator_ops_index: i32,
    _pad: u32,
    /// Bytes of the core block.
    pub core_bytes: u64,
    /// Failed gets since the last success: at `free`, the objects the
    /// mempool library could not take back (see `ops::free`). A get that
    /// fails for lack of objects starts a new run when the pool's activity
    /// mark moved since the previous failure (see
    /// [`ZoneHeader::count_get_failure`]): the ring, or the failing lcore's
    /// cache line, which every success changes. So no fast path touches it,
    /// except the handler cache's in a build without `accounting`, whose
    /// mark does not see cache hits (see
    /// [`ZoneHeader::note_cache_hit`]).
    pub trailing_get_failures: AtomicU64,
    /// Gets that failed for lack of objects, ever.
    pub get_failures: AtomicU64,
    /// The release word: the token of the shutdown that owns this pool's
    /// release (0: none yet), set by compare-exchange by the first shutdown
    /// call (a second one finds it set and is refused); then, set by the
    /// one party that frees the pool, `FREEING` (and `BY_APP` when that is
    /// the application). The deferred-release alarm carries the token and
    /// acts only on the pool whose zone holds exactly it (see
    /// `port::release`).
    pub release_token: AtomicU64,
    /// `PoolCore::activity_mark` at the last failed get.
    fail_mark: [AtomicU64; 4],
}

const _: () = assert!(size_of::<ZoneHeader>() == HEADER_BYTES);
const _: () = assert!(offset_of!(ZoneHeader, family) == 8 && offset_of!(ZoneHeader, build) == 16);

impl ZoneHeader {
    /// A handler-cache hit (get or put) ends a run of failed gets: nothing
    /// to do where the activity mark sees it (`PoolCore::MARK_SEES_CACHE`,
    /// the default build), else [`clear_trailing_failures`]. The one place
    /// the cache fast paths decide; compiled away with `accounting`. A put
    /// calls it before its put: once the last buffer is back a deferred
    /// release may free the zone.
    ///
    /// [`clear_trailing_failures`]: ZoneHeader::clear_trailing_failures
    #[inline(always)]
    pub fn note_cache_hit(&self) {
        if !PoolCore::MARK_SEES_CACHE {
            self.clear_trailing_failures();
        }
    }

    /// A successful get or put ends a run of failed gets: for the checked
    /// get, and the cache fast paths of a build whose activity mark does not
    /// see them ([`note_cache_hit`](ZoneHeader::note_cache_hit)). Written
    /// only when set, so the common case is one load from the line that
    /// holds the magic (read anyway).
    #[inline(always)]
    pub fn clear_trailing_failures(&self) {
        // Relaxed: a hint for `ops::free`, which reads it after the
        // mempool library's take-back loop on the same thread.
        if self.trailing_get_failures.load(Ordering::Relaxed) != 0 {
            self.trailing_get_failures.store(0, Ordering::Relaxed);
        }
    }

    /// Counts a get that failed for lack of objects, `mark` being the
    /// failing thread's `PoolCore::activity_mark`: the run of trailing
    /// failures goes on if the mark has not moved since the previous
    /// failure, and restarts at one if it has (an object went through the
    /// ring or that lcore's cache in between, or another lcore failed, so
    /// the earlier failures were not trailing).
    pub fn count_get_failure(&self, mark: ActivityMark) {
        self.get_failures.fetch_add(1, Ordering::Relaxed);
        if self.still_at_mark(mark) {
            self.trailing_get_failures.fetch_add(1, Ordering::Relaxed);
        } else {
            for (m, v) in self.fail_mark.iter().zip(mark) {
                m.store(v, Ordering::Relaxed);
            }
            self.trailing_get_failures.store(1, Ordering::Relaxed);
        }
    }

    /// The failed gets since the last success, `mark` being the calling
    /// thread's activity mark now: the count of the last run of failures if
    /// the mark has not moved since it, else 0 (a get or put since then, or
    /// the failures were another lcore's).
    pub fn trailing_failures(&self, mark: ActivityMark) -> u64 {
        if self.still_at_mark(mark) {
            // Relaxed: as in `count_get_failure`.
            self.trailing_get_failures.load(Ordering::Relaxed)
        } else {
            0
        }
    }

    /// Whether `mark` is that of the last failed get.
    fn still_at_mark(&self, mark: ActivityMark) -> bool {
        self.fail_mark
            .iter()
            .zip(mark)
            // Relaxed: statistics and a hint, as `clear_trailing_failures`.
            .all(|(m, v)| m.load(Ordering::Relaxed) == v)
    }
}

/// A pool's handler state as seen through `mp->pool_data`.
pub struct Zone<'a> {
    /// The header.
    pub header: &'a ZoneHeader,
    /// The core.
    pub core: &'a PoolCore,
    /// `core.is_direct()`, as the zone's first word says it.
    pub direct: bool,
}

/// Longest pool name a zone name has room for: `RTE_MEMZONE_NAMESIZE`
/// less [`ZONE_PREFIX`] and the NUL (28), more than DPDK takes
/// ([`dpdk_max_pool_name`]), so every pool gets a zone name.
pub const MAX_POOL_NAME: usize = sys::RTE_MEMZONE_NAMESIZE as usize - 1 - ZONE_PREFIX.len();

/// Builds the memzone name for a pool.
pub fn zone_name(pool_name: &str) -> Result<CString, GlueError> {
    let name = format!("{ZONE_PREFIX}{pool_name}");
    if name.len() >= sys::RTE_MEMZONE_NAMESIZE as usize {
        return Err(GlueError::NameTooLong { name });
    }
    CString::new(name.clone()).map_err(|_| GlueError::NameTooLong { name })
}

/// Reserves and initialises the zone for a pool.
///
/// # Safety
/// `mp` is a valid mempool being allocated (inside `ops->alloc`).
pub unsafe fn create(
    mp: *mut sys::rte_mempool,
    config: &PoolConfig,
    ops_index: i32,
) -> Result<Zone<'static>, GlueError> {
    let layout: PoolLayout = config.layout()?;
    // SAFETY: `mp` is valid per the caller's contract; `name` is NUL-terminated.
    let (pool_name, socket) = unsafe { (cstr_field(&(*mp).name), (*mp).socket_id) };
    let name = zone_name(&pool_name)?;
    let bytes = HEADER_BYTES + layout.bytes();
    let align = layout.align().max(HEADER_BYTES) as u32;
    // SAFETY: valid name; DPDK returns null with rte_errno set on failure.
    let mz = unsafe { sys::rte_memzone_reserve_aligned(name.as_ptr(), bytes, socket, 0, align) };
    if mz.is_null() {
        return Err(GlueError::NoMemory {
            what: "memzone",
            name: name.to_string_lossy().into_owned(),
            bytes,
            errno: sys::errno(),
        });
    }
    // SAFETY: a freshly reserved memzone of `bytes` bytes aligned to `align`.
    unsafe {
        let base = (*mz).__bindgen_anon_1.addr.cast::<u8>();
        let zone = init_at(base, &layout, ops_index);
        (*mp).__bindgen_anon_1.pool_data = base.cast::<c_void>();
        Ok(zone)
    }
}

/// Lays a zone out at `base`: zeroes `HEADER_BYTES + layout.bytes()`
/// bytes, writes the header and the core, and stores the first word last.
///
/// # Safety
/// `base` is valid for writes of that many bytes, aligned to
/// `layout.align().max(HEADER_BYTES)`, and nothing else uses them.
unsafe fn init_at(base: *mut u8, layout: &PoolLayout, ops_index: i32) -> Zone<'static> {
    // SAFETY: the caller's contract.
    unsafe {
        core::ptr::write_bytes(base, 0, HEADER_BYTES + layout.bytes());
        let hdr = base.cast::<ZoneHeader>();
        hdr.write(ZoneHeader {
            magic: 0,
            family: ZONE_FAMILY,
            build: BUILD,
            creator_ops_index: ops_index,
            _pad: 0,
            core_bytes: layout.bytes() as u64,
            trailing_get_failures: AtomicU64::new(0),
            get_failures: AtomicU64::new(0),
            release_token: AtomicU64::new(0),
            fail_mark: [const { AtomicU64::new(0) }; 4],
        });
        let core = PoolCore::init(NonNull::new_unchecked(base.add(HEADER_BYTES)), layout);
        // Release pairs with the Acquire loads in `attach_fast` and
        // `refusal`: a process that sees the magic sees the whole header.
        let direct = core.is_direct();
        let newest = core.newest_first();
        (*(hdr.cast::<AtomicU64>())).store(zone_magic(direct, newest), Ordering::Release);
        Zone {
            header: &*hdr,
            core,
            direct,
        }
    }
}

/// The zone of `mp` when `mp` is a pool of ours: not null, on the
/// `ptr_ring` ops in this process, and its `pool_data` one of our zones.
/// The preamble of every entry point a pool is handed to (C API, Rust API,
/// telemetry, port events, shutdown, DMA mapping); DPDK's own ops callbacks
/// need no ops check (DPDK chose the ops) and call [`attach`].
///
/// # Safety
/// `mp` is null or a live mempool.
pub unsafe fn ours<'a>(mp: *const sys::rte_mempool) -> Result<Zone<'a>, GlueError> {
    if mp.is_null() {
        return Err(GlueError::NullPool);
    }
    // SAFETY: a live mempool (caller's contract).
    let ops = unsafe { ops_name::ops_name_of(mp) };
    if ops != ops_name::OPS_NAME {
        return Err(GlueError::OtherHandler {
            pool: ffi::pool_name(mp),
            ops,
        });
    }
    // A secondary whose handshake failed cannot tell which pools are ours
    // (its ops entry refuses DPDK's calls: `ops_sync`); nor do we here.
    if let Some(cause) = crate::ops_sync::refusal() {
        return Err(GlueError::HandshakeFailed {
            pool: ffi::pool_name(mp),
            cause: cause.to_owned(),
        });
    }
    // SAFETY: as above.
    unsafe { attach(mp) }
}

/// The pool named `name` and its zone, when it is one of ours ([`ours`]).
/// The release lock, held for as long as the zone is borrowed, keeps a
/// pool found by name alive: whatever frees a pool takes it first.
pub fn lookup<'l>(
    name: &CStr,
    _held: &'l ReleaseLock,
) -> Option<(*mut sys::rte_mempool, Zone<'l>)> {
    // Not rte_mempool_lookup: it can read a list entry a concurrent free
    // has freed (see `mempool_list::lookup`).
    let mp = sys::mempool_list::lookup(name);
    // SAFETY: null or live, and it stays live while the lock is held.
    let z = unsafe { ours(mp) }.ok()?;
    Some((mp, z))
}

/// Frees the zone of pool `pool_name`.
pub fn destroy(pool_name: &str) -> Result<(), GlueError> {
    let name = zone_name(pool_name)?;
    // SAFETY: valid name; lookup returns null when absent.
    let mz = unsafe { sys::rte_memzone_lookup(name.as_ptr()) };
    if mz.is_null() {
        return Err(GlueError::NoZone {
            name: name.to_string_lossy().into_owned(),
        });
    }
    // SAFETY: `mz` is a live memzone of ours. Clearing the magic first makes
    // a stale `pool_data` fail `attach` instead of reading freed state.
    unsafe {
        let base = (*mz).__bindgen_anon_1.addr.cast::<AtomicU64>();
        // Release: ordered after every use of the zone by this thread.
        (*base).store(0, Ordering::Release);
        sys::rte_memzone_free(mz);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::word::{ZONE_MAGIC, ZONE_MAGIC_DIRECT, ZONE_MAGIC_NEWEST};
    use super::*;

    #[test]
    fn every_pool_name_dpdk_takes_fits_a_zone_name() {
        assert_eq!(dpdk_max_pool_name(), 25);
        assert!(dpdk_max_pool_name() <= MAX_POOL_NAME);
        let longest = zone_name(&"p".repeat(MAX_POOL_NAME)).unwrap();
        assert_eq!(
            longest.as_bytes().len(),
            sys::RTE_MEMZONE_NAMESIZE as usize - 1
        );
        let e = zone_name(&"p".repeat(MAX_POOL_NAME + 1)).unwrap_err();
        assert!(e.to_string().contains("up to 25 characters"), "{e}");
    }

    fn header() -> ZoneHeader {
        ZoneHeader {
            magic: 0,
            family: ZONE_FAMILY,
            build: BUILD,
            creator_ops_index: 0,
            _pad: 0,
            core_bytes: 0,
            trailing_get_failures: AtomicU64::new(0),
            get_failures: AtomicU64::new(0),
            release_token: AtomicU64::new(0),
            fail_mark: [const { AtomicU64::new(0) }; 4],
        }
    }

    /// A mempool whose `pool_data` is `hdr`'s bytes.
    fn pool_on(hdr: &mut ZoneHeader) -> sys::rte_mempool {
        let mut mp = sys::rte_mempool::default();
        mp.__bindgen_anon_1.pool_data = (hdr as *mut ZoneHeader).cast::<c_void>();
        mp
    }

    #[test]
    fn the_magic_holds_the_build() {
        assert_eq!(ZONE_MAGIC >> 32, MAGIC_PREFIX);
        assert_eq!(
            ZONE_MAGIC & 0xffff_fffc,
            (BUILD.hash ^ (BUILD.hash >> 32)) & 0xffff_fffc
        );
        assert_eq!(ZONE_MAGIC & 3, 0);
        assert_eq!(ZONE_MAGIC_DIRECT, ZONE_MAGIC | 1);
        assert_eq!(ZONE_MAGIC_NEWEST, ZONE_MAGIC | 3);
        assert_eq!(BUILD.features, BuildId::CORE.features);
        let (year, month, minor) = sys::compat::RELEASE;
        let name = build_name(&BUILD);
        let want = format!(
            "{:016x} (accounting {}, DPDK {year}.{month:02}.{minor}, ABI {})",
            BUILD.hash,
            if BUILD.accounting() { "on" } else { "off" },
            sys::compat::ABI
        );
        assert_eq!(name, want);
    }

    #[test]
    fn a_zone_of_another_build_is_refused_naming_both() {
        let other = BuildId {
            hash: BUILD.hash ^ 0x1234_5678_9abc,
            ..BUILD
        };
        let mut hdr = header();
        hdr.build = other;
        hdr.magic = (MAGIC_PREFIX << 32) | ((other.hash ^ (other.hash >> 32)) & 0xffff_ffff);
        let mp = pool_on(&mut hdr);
        // SAFETY: `pool_data` points to a whole header.
        let e = unsafe { attach(&mp) }.err().unwrap();
        match &e {
            GlueError::OtherBuild { found, ours, .. } => {
                assert_eq!(found, &build_name(&other));
                assert_eq!(ours, &build_name(&BUILD));
            }
            e => panic!("{e}"),
        }
        assert_eq!(e.errno(), -libc::EPROTO);
        // Not of this family: another handler's data, whatever follows.
        hdr.family = 0;
        let mp = pool_on(&mut hdr);
        // SAFETY: as above.
        let e = unsafe { attach(&mp) }.err().unwrap();
        assert!(matches!(e, GlueError::NotOurPool { .. }), "{e}");
        hdr.family = ZONE_FAMILY;
        hdr.magic = 0x5a5a_5a5a_5a5a_5a5a;
        let mp = pool_on(&mut hdr);
        // SAFETY: as above.
        let e = unsafe { attach(&mp) }.err().unwrap();
        assert!(matches!(e, GlueError::NotOurPool { .. }), "{e}");
    }

    /// A zone as `create` lays it out (`init_at`), in heap memory, with a
    /// core of `cache_size` (0: direct), newest first or not.
    struct HeapZone {
        base: NonNull<u8>,
        layout: std::alloc::Layout,
    }

    impl HeapZone {
        fn new(cache_size: usize, newest: bool) -> HeapZone {
            let mut cfg = PoolConfig::new(64);
            cfg.cache_size = Some(cache_size);
            cfg.newest_first = newest;
            cfg.max_lcores = 4;
            let core_layout = cfg.layout().unwrap();
            let layout = std::alloc::Layout::from_size_align(
                HEADER_BYTES + core_layout.bytes(),
                core_layout.align().max(HEADER_BYTES),
            )
            .unwrap();
            // SAFETY: a non-zero size; `init_at` gets the whole allocation,
            // aligned as it asks.
            unsafe {
                let base = NonNull::new(std::alloc::alloc(layout)).unwrap();
                init_at(base.as_ptr(), &core_layout, 0);
                HeapZone { base, layout }
            }
        }

        fn word(&self) -> &AtomicU64 {
            // SAFETY: the header's first word, live as long as `self`.
            unsafe { &*self.base.as_ptr().cast::<AtomicU64>() }
        }

        fn pool(&self) -> sys::rte_mempool {
            let mut mp = sys::rte_mempool::default();
            mp.__bindgen_anon_1.pool_data = self.base.as_ptr().cast::<c_void>();
            mp
        }
    }

    impl Drop for HeapZone {
        fn drop(&mut self) {
            // SAFETY: allocated in `new` with this layout.
            unsafe { std::alloc::dealloc(self.base.as_ptr(), self.layout) };
        }
    }

    /// The first word tells the fast path the pool's mode, as the core
    /// has it; a word whose mode bit disagrees with the core is refused by
    /// the checked attach.
    #[test]
    fn the_first_word_names_the_mode() {
        for (cache_size, direct) in [(0, true), (32, false)] {
            let zone = HeapZone::new(cache_size, false);
            let mp = zone.pool();
            // SAFETY: `pool_data` points to a whole zone.
            let fast = unsafe { attach_fast(&mp) }.expect("a zone of this build");
            assert_eq!((fast.direct, fast.core.is_direct()), (direct, direct));
            // SAFETY: as above.
            assert!(unsafe { attach_newest(&mp) }.is_none());
            // SAFETY: as above.
            let checked = unsafe { attach(&mp) }.unwrap();
            assert_eq!(checked.direct, direct);
            zone.word().fetch_xor(1, Ordering::Relaxed);
            // SAFETY: as above.
            let fast = unsafe { attach_fast(&mp) }.expect("still this build's word");
            assert_eq!(fast.direct, !direct);
            // SAFETY: as above.
            let e = unsafe { attach(&mp) }
                .err()
                .expect("mode bit against the core");
            assert!(matches!(e, GlueError::NotOurPool { .. }), "{e}");
            zone.word().fetch_xor(4, Ordering::Relaxed);
            // SAFETY: as above.
            assert!(unsafe { attach_fast(&mp) }.is_none(), "another hash");
        }
    }

    /// A direct newest-first pool's word is neither of the fast paths' two:
    /// only `attach_newest` and the checked attach take it, and a word that
    /// says newest first for a core that is not (or the other way round) is
    /// refused. A newest-first pool with the handler cache on keeps the
    /// cached word and its fast paths.
    #[test]
    fn a_direct_newest_first_pool_has_a_word_of_its_own() {
        let zone = HeapZone::new(0, true);
        let mp = zone.pool();
        assert_eq!(zone.word().load(Ordering::Relaxed), ZONE_MAGIC_NEWEST);
        // SAFETY: `pool_data` points to a whole zone.
        unsafe {
            assert!(attach_fast(&mp).is_none());
            let z = attach_newest(&mp).expect("the newest word");
            assert!(z.direct && z.core.newest_first() && z.core.is_direct());
            let z = attach(&mp).unwrap();
            assert!(z.direct && z.core.newest_first());
        }
        // The newest bit on a core that is FIFO, and off on one that is not.
        let fifo = HeapZone::new(0, false);
        fifo.word().fetch_or(2, Ordering::Relaxed);
        zone.word().fetch_and(!2, Ordering::Relaxed);
        for z in [&fifo, &zone] {
            let mp = z.pool();
            // SAFETY: as above.
            let e = unsafe { attach(&mp) }
                .err()
                .expect("route bits against the core");
            assert!(matches!(e, GlueError::NotOurPool { .. }), "{e}");
        }
        let cached = HeapZone::new(32, true);
        let mp = cached.pool();
        assert_eq!(cached.word().load(Ordering::Relaxed), ZONE_MAGIC);
        // SAFETY: as above.
        assert!(unsafe { attach_fast(&mp) }.is_some_and(|z| z.core.newest_first()));
    }

    #[test]
    fn trailing_failures_end_when_the_mark_moves() {
        let h = header();
        let at = |enq: u64, deq: u64, lcore: u64, word: u64| [enq, deq, lcore, word];
        assert_eq!(h.trailing_failures(at(0, 0, 0, 0)), 0);
        for _ in 0..3 {
            h.count_get_failure(at(10, 5, 1, 7));
        }
        assert_eq!(h.trailing_failures(at(10, 5, 1, 7)), 3);
        // A put or a get since (through the ring, or through this lcore's
        // cache), or another lcore asking: the run is over.
        assert_eq!(h.trailing_failures(at(11, 5, 1, 7)), 0);
        assert_eq!(h.trailing_failures(at(10, 6, 1, 7)), 0);
        assert_eq!(h.trailing_failures(at(10, 5, 1, 8)), 0);
        assert_eq!(h.trailing_failures(at(10, 5, 2, 7)), 0);
        h.count_get_failure(at(10, 5, 1, 8));
        assert_eq!(h.trailing_failures(at(10, 5, 1, 8)), 1);
        // A success that changes no mark (a cache hit without accounting)
        // clears it explicitly.
        h.clear_trailing_failures();
        assert_eq!(h.trailing_failures(at(10, 5, 1, 8)), 0);
        h.count_get_failure(at(10, 5, 1, 8));
        assert_eq!(h.trailing_failures(at(10, 5, 1, 8)), 1);
        assert_eq!(h.get_failures.load(Ordering::Relaxed), 5);
    }
}
