//! Pool configuration: sizes, bounds and the cache sizing rule, and
//! [`PoolLayout`], where [`PoolConfig::layout`] (in `layout.rs`) places
//! every part of the pool's block.
//!
//! # Cache sizing rule
//! * Default: `min(128, ⌊objects / (1.5 × max_lcores)⌋)`: page_pool's 128 at
//!   most, and all caches together hold at most two thirds of the pool, so
//!   at least a third is always in the ring for whoever asks. It may be 0
//!   (small pool, many lcores): every operation then uses the ring.
//! * Explicit: `cache_size <= ⌊objects / 1.5⌋` (DPDK's own rule for its
//!   mempool cache) and `cache_size <= 512` (`RTE_MEMPOOL_CACHE_MAX_SIZE`).

use crate::error::PoolError;
use crate::ptr_ring::RingLayout;
use crate::state::{DEFAULT_RETRY_PERIOD_NS, DEFAULT_WARN_PERIOD_NS};

/// DPDK's `RTE_MAX_LCORE` in Debian's build: the default cache array size.
pub const DEFAULT_MAX_LCORES: u32 = 128;
/// Largest `max_lcores` accepted.
pub const MAX_LCORES: u32 = 1024;
/// Largest default cache (page_pool's alloc cache size).
pub const DEFAULT_CACHE_CAP: usize = 128;
/// Largest cache accepted (DPDK's `RTE_MEMPOOL_CACHE_MAX_SIZE`).
pub const MAX_CACHE_SIZE: usize = 512;
/// Default bound on chunk records.
pub const DEFAULT_MAX_CHUNKS: usize = 256;
/// Largest `max_chunks` accepted.
pub const MAX_CHUNKS: usize = 1 << 16;
/// Default bound on DMA devices.
pub const DEFAULT_MAX_DEVICES: usize = 8;
/// Largest `max_devices` accepted.
pub const MAX_DEVICES: usize = 64;

/// What the caller asks for. [`PoolConfig::new`] gives the defaults.
///
/// # Examples
/// ```
/// use mempool::PoolConfig;
///
/// // DPDK's recommended size of 2^k - 1 objects, four lcores with a cache.
/// let cfg = PoolConfig { max_lcores: 4, ..PoolConfig::new(8191) };
/// // The default cache: min(128, 8191 / (1.5 × 4)).
/// assert_eq!(cfg.resolved_cache_size()?, 128);
///
/// // Every part of the pool's one block, placed before any memory exists:
/// // reserve `bytes()` aligned to `align()`, then `PoolCore::init` (or let
/// // `HeapPool::new` do both).
/// let layout = cfg.layout()?;
/// assert!(layout.ring().capacity() >= 8191);
/// assert_eq!(layout.bytes() % layout.align(), 0);
///
/// // An explicit cache above DPDK's bound (512) is refused.
/// let too_big = PoolConfig { cache_size: Some(1024), ..cfg };
/// assert!(too_big.layout().is_err());
/// # Ok::<(), mempool::PoolError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfig {
    /// Objects the pool holds (DPDK's `mp->size`); the ring holds them all.
    pub objects: usize,
    /// Lcore ids `0..max_lcores` get a cache; any other id (including
    /// `LCORE_ID_ANY = u32::MAX`) uses the ring directly.
    pub max_lcores: u32,
    /// Objects per lcore cache; `None` for the default rule (module doc).
    pub cache_size: Option<usize>,
    /// Bound on chunk records of the IOVA table.
    pub max_chunks: usize,
    /// Bound on devices the pool can be DMA-mapped for.
    pub max_devices: usize,
    /// Validation mode (rejects foreign pointers and double frees).
    pub validate: bool,
    /// Suggested delay between polls while draining (ns).
    pub retry_period_ns: u64,
    /// Delay between "stalled shutdown" warnings (ns).
    pub warn_period_ns: u64,
    /// Single-producer ring (DPDK's `RTE_MEMPOOL_F_SP_PUT`, which maps to the
    /// ring's `RING_F_SP_ENQ`): puts into the ring take no lock. Default
    /// `false`.
    ///
    /// Contract (not checked): at most one thread at a time puts objects
    /// into the ring, and each such put happens-before the next. That covers
    /// every path that enqueues: puts by callers without a cache, cache
    /// flushes when a cache overflows or closes, `flush_lcore` /
    /// `flush_all_quiescent`. In practice: one lcore puts, with no other
    /// thread putting, or every lcore has a cache of 0 and only one of them
    /// puts. Breaking it loses objects.
    ///
    /// The flag takes effect only through the `unsafe` `PoolCore::init` (or
    /// `HeapPool::new_unchecked`), whose caller promises the contract:
    /// `HeapPool::new` refuses it, and [`PoolLayout::ring`] leaves it out.
    pub single_producer: bool,
    /// Single-consumer ring (DPDK's `RTE_MEMPOOL_F_SC_GET`, which maps to the
    /// ring's `RING_F_SC_DEQ`): gets from the ring take no lock. Default
    /// `false`.
    ///
    /// Contract (not checked): at most one thread at a time takes objects
    /// from the ring, and each such get happens-before the next. That covers
    /// gets by callers without a cache, cache refills and oversized gets
    /// through a cache. Breaking it hands the same object out twice.
    ///
    /// Takes effect only through `unsafe` code, as `single_producer`.
    pub single_consumer: bool,
    /// Gets hand out the newest objects first, to the lcore that put them
    /// ([`PtrRing::dequeue_newest_bulk`](crate::PtrRing::dequeue_newest_bulk)).
    /// Default `false`: every get takes the ring's oldest objects, so all
    /// of a pool's objects go round.
    ///
    /// On: a get (a refill, an oversized bulk, a get with the handler
    /// cache off) by the lcore whose put was the ring's last takes the
    /// objects back from the ring's producer end, as a stack pops, so
    /// that an lcore recycling its own objects works on the few it has
    /// just freed, still in its CPU's caches, where a pool larger than
    /// those caches would otherwise go round whole. Gets by other lcores
    /// (an lcore handing objects to another) and by callers without a
    /// slot stay oldest first. A get that takes the newest holds both of
    /// the ring's locks. With the handler cache off, every get and put of
    /// such a pool leaves the inlined fast paths (they go to the ring,
    /// FIFO); with it on, the cache's fast paths stay, and the refills and
    /// flushes choose the order. A single-producer pool
    /// ([`single_producer`](PoolConfig::single_producer)) ignores it: its
    /// producer takes no lock for a get to take objects back under, so
    /// every get stays oldest first, the fast paths stay, and
    /// [`PoolCore::newest_first`](crate::PoolCore::newest_first) says
    /// `false`.
    pub newest_first: bool,
}

impl PoolConfig {
    /// Defaults for a pool of `objects` objects.
    pub const fn new(objects: usize) -> PoolConfig {
        PoolConfig {
            objects,
            max_lcores: DEFAULT_MAX_LCORES,
            cache_size: None,
            max_chunks: DEFAULT_MAX_CHUNKS,
            max_devices: DEFAULT_MAX_DEVICES,
            validate: false,
            retry_period_ns: DEFAULT_RETRY_PERIOD_NS,
            warn_period_ns: DEFAULT_WARN_PERIOD_NS,
            single_producer: false,
            single_consumer: false,
            newest_first: false,
        }
    }

    /// The default cache size: `min(128, ⌊objects / (1.5 × max_lcores)⌋)`.
    pub const fn default_cache_size(objects: usize, max_lcores: u32) -> usize {
        if max_lcores == 0 {
            return 0;
        }
        let c = objects.saturating_mul(2) / (3 * max_lcores as usize);
        if c < DEFAULT_CACHE_CAP {
            c
        } else {
            DEFAULT_CACHE_CAP
        }
    }

    /// The largest explicit cache size: `min(512, ⌊objects / 1.5⌋)`.
    pub const fn max_cache_size(objects: usize) -> usize {
        let c = objects.saturating_mul(2) / 3;
        if c < MAX_CACHE_SIZE {
            c
        } else {
            MAX_CACHE_SIZE
        }
    }

    /// The cache size this configuration resolves to.
    pub fn resolved_cache_size(&self) -> Result<usize, PoolError> {
        match self.cache_size {
            None => Ok(Self::default_cache_size(self.objects, self.max_lcores)),
            Some(c) => {
                let max = Self::max_cache_size(self.objects);
                if c > max {
                    Err(PoolError::BadConfig {
                        what: "cache_size",
                        value: c,
                        min: 0,
                        max,
                    })
                } else {
                    Ok(c)
                }
            }
        }
    }
}

/// Where everything lies in the pool's block. Pure data: compute it with
/// [`PoolConfig::layout`], reserve [`bytes`](PoolLayout::bytes) aligned to
/// [`align`](PoolLayout::align), then `PoolCore::init`.
///
/// The fields are private: a layout only comes from
/// [`PoolConfig::layout`], which checks every bound, so the offsets and
/// sizes always agree and code that initialises a pool from a layout can
/// trust them.
///
/// ```compile_fail
/// let mut l = mempool::PoolConfig::new(4).layout().unwrap();
/// l.bytes = 64; // private field
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolLayout {
    pub(crate) config: PoolConfig,
    pub(crate) cache_size: usize,
    pub(crate) ring: RingLayout,
    pub(crate) ring_offset: usize,
    pub(crate) caches_offset: usize,
    pub(crate) lcore_stride: usize,
    pub(crate) chunks_offset: usize,
    pub(crate) order_offset: usize,
    pub(crate) devices_offset: usize,
    pub(crate) bitmap_offset: usize,
    pub(crate) bitmap_words: usize,
    pub(crate) bytes: usize,
    pub(crate) align: usize,
}

impl PoolLayout {
    /// The configuration it was computed from.
    pub fn config(&self) -> &PoolConfig {
        &self.config
    }
    /// Resolved per-lcore cache size.
    pub fn cache_size(&self) -> usize {
        self.cache_size
    }
    /// The ring's layout: capacity `objects`, and always
    /// multi-producer/multi-consumer, whatever the configuration's
    /// `single_producer` / `single_consumer`.
    ///
    /// Safe code reaches this layout (`PoolConfig::layout`,
    /// `PoolCore::layout`) and may build a ring from it with the safe
    /// [`HeapRing::new`](crate::HeapRing::new), so it must not carry the
    /// single-sided modes, whose contract only `unsafe` code can promise.
    /// The pool's own ring gets them from `PoolCore::init`.
    ///
    /// # Examples
    /// ```
    /// use mempool::{HeapRing, PoolConfig};
    ///
    /// let cfg = PoolConfig {
    ///     single_producer: true,
    ///     single_consumer: true,
    ///     ..PoolConfig::new(100)
    /// };
    /// let layout = cfg.layout()?;
    /// assert!(!layout.ring().single_producer() && !layout.ring().single_consumer());
    /// let ring = HeapRing::new(*layout.ring());
    /// assert_eq!(ring.mode_name(), "MP/MC");
    /// # Ok::<(), mempool::PoolError>(())
    /// ```
    pub fn ring(&self) -> &RingLayout {
        &self.ring
    }
    /// Offset of the ring.
    pub fn ring_offset(&self) -> usize {
        self.ring_offset
    }
    /// Offset of lcore 0's cache.
    pub fn caches_offset(&self) -> usize {
        self.caches_offset
    }
    /// Bytes per lcore cache.
    pub fn lcore_stride(&self) -> usize {
        self.lcore_stride
    }
    /// Offset of the chunk records.
    pub fn chunks_offset(&self) -> usize {
        self.chunks_offset
    }
    /// Offset of the chunk order array.
    pub fn order_offset(&self) -> usize {
        self.order_offset
    }
    /// Offset of the device slots.
    pub fn devices_offset(&self) -> usize {
        self.devices_offset
    }
    /// Offset of the validation bitmap.
    pub fn bitmap_offset(&self) -> usize {
        self.bitmap_offset
    }
    /// Words of the validation bitmap (0 when off).
    pub fn bitmap_words(&self) -> usize {
        self.bitmap_words
    }
    /// Total bytes of the block.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
    /// Alignment of the block.
    pub fn align(&self) -> usize {
        self.align
    }
}
