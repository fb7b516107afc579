//! What the pool holds and what is out: counts, inflight, statistics.

use super::PoolCore;
use crate::inflight::{self, InflightSnapshot, ACCOUNTING};
use crate::lcore_cache::LcoreCache;
use crate::shutdown::{PoolState, ShutdownStats};
use crate::validation::RejectStats;

/// Everything a pool can tell about itself, read on demand. Exact when no
/// operation is in progress; otherwise each field is a recent value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Objects the pool was sized for.
    pub objects: usize,
    /// Objects registered (populated).
    pub populated: usize,
    /// Objects in the ring.
    pub in_ring: usize,
    /// Objects in all lcore caches.
    pub in_caches: usize,
    /// Objects out with the application (`populated + hold − release`;
    /// derived from the other counts in a build without `accounting`).
    pub inflight: i64,
    /// Σ hold (objects handed out, ever). Wrapping: per-lcore hold counts
    /// are 32-bit, so compare differences modulo 2^32 only.
    pub hold: u64,
    /// Σ release (objects taken back, ever; wrapping).
    pub release: u64,
    /// Chunk records.
    pub chunks: usize,
    /// Devices attached (not removed).
    pub devices: usize,
    /// Successful DMA map calls, ever.
    pub dma_maps: u64,
    /// DMA unmap calls, ever.
    pub dma_unmaps: u64,
    /// Life-cycle state.
    pub state: PoolState,
    /// Validation rejections by kind.
    pub rejected: RejectStats,
    /// Shutdown counters.
    pub shutdown: ShutdownStats,
    /// Per-lcore cache size.
    pub cache_size: usize,
    /// Lcore ids with a cache.
    pub max_lcores: u32,
    /// Validation mode.
    pub validate: bool,
    /// Whether this build counts hold/release.
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

    /// Objects in lcore `lcore`'s cache (0 for an id without one).
    pub fn cache_len(&self, lcore: u32) -> usize {
        self.cache(lcore).map_or(0, LcoreCache::len)
    }

    /// Objects registered with [`register_chunk`](PoolCore::register_chunk).
    pub fn populated(&self) -> usize {
        self.table().registered()
    }

    /// The hold/release counters, read in release-safe order.
    pub fn inflight_snapshot(&self) -> InflightSnapshot {
        let lcores = self.caches().map(|c| c.counters());
        let any = core::iter::once((inflight::Hold::Whole(&self.any.hold), &*self.any.release));
        inflight::snapshot(lcores.chain(any), || self.populated())
    }

    /// Objects out with the application: `populated + Σhold − Σrelease`
    /// (never below the true count while it is read, see
    /// [`crate::inflight`]). Negative means more came back than went out.
    /// Without the `accounting` feature: `populated − available`, exact only
    /// when quiescent.
    pub fn inflight(&self) -> i64 {
        if ACCOUNTING {
            self.inflight_snapshot().inflight()
        } else {
            self.populated() as i64 - self.available() as i64
        }
    }

    /// Everything at once.
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
