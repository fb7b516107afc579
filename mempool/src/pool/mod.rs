//! [`PoolCore`]: the pool in one block of shared memory, tying together the
//! ring, the per-lcore caches, inflight accounting, the IOVA table, DMA
//! bookkeeping, validation and the shutdown state machine.
//!
//! # Life of an object
//! ```text
//! register_chunk ──▶ (out, with DPDK's populate) ──put──▶ cache / ring
//!        cache ◀──refill (burst)── ring ◀──flush (bulk)── cache
//!   get: own cache (fast) ─▶ refill from ring ─▶ application
//!   put: own cache (fast) ─▶ flush top to ring when full
//!   no slot: ring directly, shared counters
//! ```
//!
//! # Caller identity
//! Every get/put names its caller's lcore id as DPDK gives it
//! (`rte_lcore_id()`). An id below `max_lcores` selects that lcore's cache;
//! any other id (`LCORE_ID_ANY = u32::MAX` on non-EAL threads, or an id
//! beyond the array) has no slot: it bypasses the caches and uses the
//! ring directly, with shared atomic counters (the "shared" paths:
//! `get_shared`, `put_shared`, ...; on a pool with the handler cache off
//! its path is an lcore's, which needs no slot there). No array is ever
//! indexed with an id that was not checked against `max_lcores`.
//!
//! # Guarantees
//! * Get and put are all-or-nothing toward the caller: a failed get hands
//!   out nothing and loses nothing (objects may have moved from the ring
//!   into the caller's own cache). A put never fails for an object that was
//!   taken from the pool (the ring holds every object).
//! * **Idle objects in other caches.** With no concurrent dequeuers, a get
//!   of `k` objects by lcore `L` fails only if `ring + cache[L] < k` (by a
//!   caller without a slot: only if `ring < k`). At most
//!   `Σ_{L' ≠ L} cache[L']` objects are idle out of its reach: at most
//!   `(lcores that used the pool − 1) × cache_size`, and with the default
//!   sizing never more than two thirds of the pool. `flush_lcore` /
//!   `flush_all_quiescent` give them back to the ring.
//! * `populated == in_ring + in_caches + inflight` whenever no operation is
//!   in progress (see [`crate::inflight`]).
//!
//! # Files
//!
//! * this one: the pool's header and the accessors of its configuration;
//! * `block.rs`: placing the pool in its block ([`PoolCore::init`],
//!   [`PoolCore::attach`]) and reaching each part of it;
//! * `get.rs` / `put.rs`: every way of getting / putting objects, each
//!   with a route table at its top: the fast paths a caller inlines
//!   ([`PoolCore::try_get_cached`] and the others), the checked entry
//!   ([`PoolCore::get`] / [`PoolCore::put`]) and its slow paths,
//!   validation mode, and (`put.rs`) the cache flushes;
//! * `accounting.rs`: counts, inflight and [`PoolStats`];
//! * `chunks.rs`: chunk registration, IOVA look-ups and DMA mapping;
//! * `drain.rs`: the shutdown driver ([`PoolCore::begin_drain`],
//!   [`PoolCore::poll`] and the others);
//! * `heap_pool.rs`: [`HeapPool`], a pool on the Rust heap;
//! * `identity.rs`: [`BuildId`], the build a pool was made by;
//! * `test_hooks.rs` (feature `test-hooks`): entry points for the tests
//!   of the crates above, never in a shipped build.

mod accounting;
mod block;
mod chunks;
mod drain;
mod get;
mod heap_pool;
mod identity;
mod put;
#[cfg(any(test, feature = "test-hooks"))]
mod test_hooks;

pub use accounting::{ActivityMark, PoolStats};
pub use block::DirectSlot;
pub use heap_pool::HeapPool;
pub use identity::BuildId;

use core::cell::UnsafeCell;

use crossbeam_utils::CachePadded;

use crate::chunk_table::ChunkTable;
use crate::config::PoolLayout;
use crate::dma_table::DmaTable;
use crate::inflight::SharedCounters;
use crate::state::Shutdown;
use crate::sync::AtomicU64;
use crate::validation::Validator;

/// Names the block's format: changed with the header's layout, so that a
/// process with a build of another format refuses the pool (`NotAPool`) on
/// the checked path instead of misreading it. Every build of this format
/// keeps `magic` and `build` where they are, so that a process of another
/// build of it reads the creator's [`BuildId`] and names it
/// (`OtherBuild`).
const POOL_MAGIC: u64 = 0x7072_5f70_6f6f_6c33; // "pr_pool3"

/// Read-only after `init`: everything the fast path needs, on one line.
#[repr(C)]
struct Header {
    /// Release-stored last in `init`; pairs with the Acquire load in `attach`.
    magic: AtomicU64,
    /// The build that made the pool ([`BuildId::CORE`] of the creator),
    /// written before the magic; `attach` compares it, the fast paths never
    /// read it.
    build: BuildId,
    max_lcores: usize,
    /// `max_lcores` without validation, 0 with it: the one bound the inlined
    /// fast paths check (`try_get_cached`), so validation mode costs them no
    /// extra branch.
    fast_lcores: usize,
    caches_offset: usize,
    lcore_stride: usize,
    /// The handler cache is off (`cache_size == 0`): the inlined fast
    /// paths of an EAL lcore go straight to the ring.
    direct: bool,
    validate: bool,
    /// Validation mode or newest-first gets: the fast paths for callers
    /// without a slot refuse, and every such call takes the checked entry
    /// (those for lcores refuse through `fast_lcores` 0, except a
    /// newest-first pool's cache fast paths, which touch the cache alone).
    checked: bool,
    /// [`PoolConfig::newest_first`](crate::PoolConfig::newest_first).
    newest_first: bool,
    layout: PoolLayout,
}

/// The pool: its block, header first. Holds no pointers: every part is
/// found at an offset from the block's base, so every process mapping the
/// block (at any address) can use it.
///
/// A dynamically sized type whose tail is the rest of the block: a
/// `&PoolCore` covers the whole block, so the ring, the caches, the chunk
/// records, the device slots and the bitmap are all reached through
/// pointers derived from it (never from a reference to one of the header's
/// parts, which would cover only that part).
///
/// # Examples
/// A pool in memory the caller provides (a DPDK memzone in the handler;
/// here the Rust heap, as [`HeapPool`] does it):
/// ```
/// use core::ptr::NonNull;
/// use std::alloc::{alloc_zeroed, dealloc, Layout};
///
/// use mempool::{PoolConfig, PoolCore};
///
/// let layout = PoolConfig::new(1024).layout()?;
/// let alloc = Layout::from_size_align(layout.bytes(), layout.align()).unwrap();
/// // SAFETY: the size is not zero.
/// let mem = NonNull::new(unsafe { alloc_zeroed(alloc) }).unwrap();
/// // SAFETY: `mem` holds `layout.bytes()` bytes aligned to `layout.align()`,
/// // used for nothing else and freed only after the pool's last use; the
/// // configuration has no single-sided flag.
/// let pool = unsafe { PoolCore::init(mem, &layout) };
/// assert_eq!(pool.objects(), 1024);
///
/// // Another process that maps the block finds the pool by its magic.
/// // SAFETY: as above; `init` ran on this memory.
/// let same = unsafe { PoolCore::attach(mem) }?;
/// assert_eq!(same.cache_size(), pool.cache_size());
///
/// // SAFETY: allocated above with `alloc`; the pool is not used again.
/// unsafe { dealloc(mem.as_ptr(), alloc) };
/// # Ok::<(), mempool::PoolError>(())
/// ```
#[repr(C)]
pub struct PoolCore {
    hdr: CachePadded<Header>,
    shared: SharedCounters,
    table_hdr: CachePadded<ChunkTable>,
    dma_hdr: CachePadded<DmaTable>,
    shutdown: CachePadded<Shutdown>,
    validator_hdr: Validator,
    /// Everything after the header: ring, caches, tables. `UnsafeCell`
    /// because it is written through shared references.
    block: [UnsafeCell<u8>],
}

/// Bytes of the pool header (where the ring and the rest of the block
/// begin, at the offsets of the layout). The last header field is padded
/// to whole lines, so the tail starts right after it.
pub const HEADER_BYTES: usize =
    core::mem::offset_of!(PoolCore, validator_hdr) + core::mem::size_of::<Validator>();

/// Alignment of the pool header (and of the block).
pub(crate) const HEADER_ALIGN: usize = core::mem::align_of::<CachePadded<Header>>();

const _: () = assert!(HEADER_BYTES.is_multiple_of(HEADER_ALIGN));

/// Offset of the creator's [`BuildId`] in a pool's block: the same in
/// every build of this format (the word after the magic).
pub const BUILD_ID_OFFSET: usize = core::mem::offset_of!(Header, build);

#[cfg(not(loom))]
const _: () = assert!(BUILD_ID_OFFSET == 8);

/// Offset of the ring in every pool's block, right after the header: a
/// constant, so that the fast paths reach the ring with no load of an
/// offset first (one dependent load fewer between a callback's entry and
/// the ring's lock).
pub(crate) const RING_OFFSET: usize = HEADER_BYTES.next_multiple_of(crate::ptr_ring::ALIGN);

// SAFETY: shared mutable state is atomic, or written under the chunk table's
// lock (records, published by a Release store), or owned by one lcore
// (cache slots: the `put`/`get` safety contract). Nothing is thread-affine.
unsafe impl Sync for PoolCore {}
// SAFETY: as above; the pool holds no pointers.
unsafe impl Send for PoolCore {}

impl PoolCore {
    /// The layout the pool was created with.
    pub fn layout(&self) -> &PoolLayout {
        &self.hdr.layout
    }

    /// Objects the pool was sized for.
    pub fn objects(&self) -> usize {
        self.hdr.layout.config.objects
    }

    /// Per-lcore cache size.
    pub fn cache_size(&self) -> usize {
        self.hdr.layout.cache_size
    }

    /// Lcore ids `0..max_lcores` have a cache.
    pub fn max_lcores(&self) -> u32 {
        self.hdr.max_lcores as u32
    }

    /// Whether validation mode is on.
    pub fn validating(&self) -> bool {
        self.hdr.validate
    }

    /// Whether gets hand an lcore the objects it put last first
    /// ([`PoolConfig::newest_first`](crate::PoolConfig::newest_first)).
    pub fn newest_first(&self) -> bool {
        self.hdr.newest_first
    }
}
