//! What the pool holds and what is out: counts, inflight, statistics.

use super::PoolCore;
use crate::inflight::{self, InflightSnapshot, ACCOUNTING};
use crate::lcore_cache::LcoreCache;
use crate::state::{PoolState, ShutdownStats};
use crate::validation::RejectStats;

/// [`PoolCore::activity_mark`]: the ring's `(enqueued, dequeued)` totals,
/// the lcore id and that lcore's `len | hold` word.
pub type ActivityMark = [u64; 4];

/// Everything a pool can tell about itself, read on demand by
/// [`PoolCore::stats`].
///
/// The configuration fields are fixed when the pool is made and always
/// exact. The others are read one after another, not as one snapshot:
/// exact when no operation is in progress; otherwise each is a recent
/// value (*may be stale*), and they need not add up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Objects the pool was sized for. Fixed.
    pub objects: usize,
    /// Objects registered (populated). May be stale.
    pub populated: usize,
    /// Objects in the ring. May be stale.
    pub in_ring: usize,
    /// Objects in all lcore caches. May be stale.
    pub in_caches: usize,
    /// Objects out with the application (`populated + hold − release`;
    /// derived from the other counts in a build without `accounting`). May
    /// be stale, never below the true count (see [`PoolCore::inflight`]).
    pub inflight: i64,
    /// Σ hold (objects handed out, ever). Wrapping: per-lcore hold counts
    /// are 32-bit, so compare differences modulo 2^32 only. May be stale.
    pub hold: u64,
    /// Σ release (objects taken back, ever; wrapping). May be stale.
    pub release: u64,
    /// Chunk records. May be stale.
    pub chunks: usize,
    /// Devices attached (not removed). May be stale.
    pub devices: usize,
    /// Successful DMA map calls, ever. May be stale.
    pub dma_maps: u64,
    /// DMA unmap calls, ever. May be stale.
    pub dma_unmaps: u64,
    /// Life-cycle state. May be stale.
    pub state: PoolState,
    /// Validation rejections by kind. May be stale.
    pub rejected: RejectStats,
    /// Shutdown counters. May be stale.
    pub shutdown: ShutdownStats,
    /// Per-lcore cache size. Fixed.
    pub cache_size: usize,
    /// Lcore ids with a cache. Fixed.
    pub max_lcores: u32,
    /// Validation mode. Fixed.
    pub validate: bool,
    /// Whether this build counts hold/release. Fixed.
    pub accounting: bool,
}

impl PoolCore {
    /// Objects in the ring and all caches (DPDK's `get_count`). Exact when
    /// quiescent.
    pub fn available(&self) -> usize {
        self.ring().len() + self.in_caches()
    }

    /// Objects in all lcore caches.
    pub fn in_caches(&self) -> usize {
        self.caches().map(LcoreCache::len).sum()
    }

    /// A value that changes whenever the ring moves or lcore `lcore`'s line
    /// changes: the ring's `(enqueued, dequeued)` totals, the lcore id, and
    /// its cache's `len | hold` word (0 for an id without one). Two equal
    /// marks taken by one thread mean that no get or put moved an object
    /// through the ring or through that lcore's cache in between, so that
    /// failed gets of that thread were consecutive. [`MARK_SEES_CACHE`]
    /// says whether cache traffic shows: without `accounting` a get and a
    /// put of the same size leave the word unchanged.
    ///
    /// [`MARK_SEES_CACHE`]: PoolCore::MARK_SEES_CACHE
    pub fn activity_mark(&self, lcore: u32) -> ActivityMark {
        let (enqueued, dequeued) = self.ring().totals();
        let word = self.cache(lcore).map_or(0, LcoreCache::word);
        [enqueued as u64, dequeued as u64, u64::from(lcore), word]
    }

    /// Whether [`activity_mark`](PoolCore::activity_mark) changes with
    /// every get and put of an lcore's cache (with `accounting`); when not,
    /// a caller that counts consecutive failures must reset its count on
    /// every cache hit itself.
    pub const MARK_SEES_CACHE: bool = ACCOUNTING;

    /// Objects in lcore `lcore`'s cache (0 for an id without one).
    pub fn cache_len(&self, lcore: u32) -> usize {
        self.cache(lcore).map_or(0, LcoreCache::len)
    }

    /// Objects registered with [`register_chunk`](PoolCore::register_chunk).
    pub fn populated(&self) -> usize {
        self.table().registered()
    }

    /// The hold/release counts, read in release-safe order: for a pool
    /// with the handler cache, its counters; for a direct pool (no handler
    /// cache), every object it hands out or takes back goes through the
    /// ring, whose totals are then the counts (`hold` the objects ever
    /// dequeued, `release` those ever enqueued, see
    /// `PtrRing::totals_for_inflight`), and none of its paths writes a
    /// counter.
    pub fn inflight_snapshot(&self) -> InflightSnapshot {
        if self.hdr.direct {
            let (enqueued, dequeued) = self.ring().totals_for_inflight();
            return InflightSnapshot {
                populated: self.populated(),
                hold: dequeued as u64,
                release: enqueued as u64,
            };
        }
        let lcores = self.caches().map(|c| c.counters());
        let shared = core::iter::once((
            inflight::Hold::Whole(&self.shared.hold),
            &*self.shared.release,
        ));
        inflight::snapshot(lcores.chain(shared), || self.populated())
    }

    /// Objects out with the application: `populated + Σhold − Σrelease`
    /// (never below the true count while it is read, see
    /// [`crate::inflight`]). Negative means more came back than went out.
    /// Without the `accounting` feature: `populated − available`, exact only
    /// when quiescent.
    ///
    /// # Examples
    /// ```
    /// use core::ffi::c_void;
    /// use mempool::{ChunkSpec, HeapPool, PoolConfig, VirtAddr, VirtRange};
    ///
    /// let mem = vec![[0u64; 8]; 64];
    /// let base = VirtAddr::of(mem.as_ptr());
    /// let objs: Vec<*mut c_void> = mem.iter().map(|o| o.as_ptr() as *mut c_void).collect();
    /// let pool = HeapPool::new(&PoolConfig::new(64))?;
    /// let spec = ChunkSpec { va: VirtRange::new(base, 64 * 64), iova: None, first: base, stride: 64, count: 64 };
    ///
    /// // Registered objects are out (with the populating code) until put.
    /// pool.register_chunk(spec)?;
    /// assert_eq!(pool.inflight(), 64);
    /// pool.put_shared(&objs)?;
    /// assert_eq!(pool.inflight(), 0);
    ///
    /// let mut three = [core::ptr::null_mut(); 3];
    /// pool.get_shared(&mut three)?;
    /// assert_eq!(pool.inflight(), 3);
    /// // Quiescent: every object is in the ring, in a cache or out.
    /// let s = pool.stats();
    /// assert_eq!(s.populated as i64, (s.in_ring + s.in_caches) as i64 + s.inflight);
    /// pool.put_shared(&three)?;
    /// assert_eq!(pool.inflight(), 0);
    /// # Ok::<(), mempool::PoolError>(())
    /// ```
    pub fn inflight(&self) -> i64 {
        if ACCOUNTING {
            self.inflight_snapshot().inflight()
        } else {
            self.populated() as i64 - self.available() as i64
        }
    }

    /// Everything in one [`PoolStats`], read field by field (not one
    /// snapshot: see the type).
    pub fn stats(&self) -> PoolStats {
        let snap = self.inflight_snapshot();
        let in_ring = self.ring().len();
        let in_caches = self.in_caches();
        let (dma_maps, dma_unmaps) = self.dma().totals();
        PoolStats {
            objects: self.objects(),
            populated: snap.populated,
            in_ring,
            in_caches,
            inflight: if ACCOUNTING {
                snap.inflight()
            } else {
                snap.populated as i64 - (in_ring + in_caches) as i64
            },
            hold: snap.hold,
            release: snap.release,
            chunks: self.table().len(),
            devices: self.dma().attached(),
            dma_maps,
            dma_unmaps,
            state: self.state(),
            rejected: self.validator().stats(),
            shutdown: self.shutdown.stats(),
            cache_size: self.cache_size(),
            max_lcores: self.max_lcores(),
            validate: self.validating(),
            accounting: ACCOUNTING,
        }
    }
}
