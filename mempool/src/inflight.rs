//! Inflight accounting, after page_pool's hold/release counters.
//!
//! * Each lcore has a `hold` counter (objects it handed out) and a `release`
//!   counter (objects it took back), on its own cache line, written only by
//!   that lcore with a plain load + store: no shared atomic, no RMW on the
//!   fast path. `hold` is the high half of the word whose low half is the
//!   cache length, so a get updates both with the store it needs anyway
//!   (32-bit, wrapping: inflight is computed modulo 2^32, exact since a pool
//!   has fewer than 2^31 objects); a put pays one plain add on `release`.
//! * Callers without a slot (no lcore id below `max_lcores`) share one
//!   `hold` and one `release` counter, each on its own cache line. `hold`
//!   is written only while the ring's consumer side is held (the count is
//!   taken inside the dequeue), `release` only while the producer side is
//!   held (inside the enqueue), so a plain load and store do for both: no
//!   locked RMW. A put's count may then be visible before its unlock, so
//!   the final release waits for the producer side before the pool may be
//!   freed (see `PoolCore::poll`).
//! * A direct pool (no handler cache) keeps none of these: every object it
//!   hands out or takes back goes through the ring, so the ring's totals
//!   are its counts (`hold` = objects ever dequeued, `release` = ever
//!   enqueued, `PtrRing::totals_for_inflight`), and its fast paths write
//!   nothing but the ring. The ring's `seq` moves before the fills, so its
//!   final release also waits for the last fill (`PtrRing::fills_done`).
//! * `populated` is the number of objects registered with the pool (the IOVA
//!   table counts them). Registration happens **before** DPDK enqueues the
//!   objects, so a registered object not yet put is, correctly, "out".
//! * `inflight = populated + Σhold − Σrelease`, computed on demand with
//!   wrapping arithmetic modulo 2^32: the per-lcore hold counts are 32-bit
//!   (the high half of the packed word), the release counters and the
//!   shared counters are `u64`, and only the low 32 bits of the sums are
//!   used (see [`InflightSnapshot::inflight`]).
//!
//! Invariant, exact when no operation is in progress:
//! `populated == in_ring + in_caches + inflight`.
//!
//! # Reading under concurrency
//! `snapshot` reads every `release` counter first, then every `hold`, then
//! `populated`, all with Acquire; writers store with Release **after** the
//! object has been placed (put) or taken (get). An object's hold happens
//! before its release (the application hands the object over), so a snapshot
//! never counts a release without its hold: the computed inflight is never
//! below the number of objects out for the whole duration of the snapshot.
//! That is what lets the shutdown state machine release the pool at zero.
//!
//! Building without the default `accounting` feature removes every counter
//! update (benchmark baseline); inflight is then derived as
//! `populated − in_ring − in_caches`, exact only when quiescent.

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicU64, Ordering};

/// Whether this build keeps hold/release counters (feature `accounting`).
pub const ACCOUNTING: bool = cfg!(feature = "accounting");

/// Adds `n` to a counter only its owner writes (an lcore's own counter, or
/// a shared counter while the ring side that serialises its writers is
/// held: the consumer side for `hold`, the producer side for `release`): Relaxed
/// load + Release store (two plain `mov`s on x86), never a locked RMW.
/// Nothing without the `accounting` feature.
///
/// The Release store pairs with the Acquire loads in [`snapshot`]; it is
/// issued after the object was placed in, or taken from, the cache or the
/// ring.
#[inline(always)]
pub(crate) fn owner_add(counter: &AtomicU64, n: usize) {
    #[cfg(feature = "accounting")]
    {
        // Relaxed: only the owner writes this counter.
        let v = counter.load(Ordering::Relaxed);
        counter.store(v.wrapping_add(n as u64), Ordering::Release);
    }
    #[cfg(not(feature = "accounting"))]
    let _ = (counter, n);
}

/// Where a hold count lives: a whole counter, or the high 32 bits of an
/// lcore's packed `len | hold` word.
#[derive(Clone, Copy)]
pub(crate) enum Hold<'a> {
    /// A whole `u64` counter (the shared non-EAL one).
    Whole(&'a AtomicU64),
    /// The high half of a packed word (an lcore cache's).
    HighHalf(&'a AtomicU64),
}

impl Hold<'_> {
    #[inline]
    fn load(self) -> u64 {
        match self {
            // Acquire pairs with the Release store in `owner_add`.
            Hold::Whole(c) => c.load(Ordering::Acquire),
            // Acquire pairs with the Release store in `LcoreCache::store`.
            Hold::HighHalf(w) => w.load(Ordering::Acquire) >> 32,
        }
    }
}

/// The counters of callers without a slot, each on its own cache lines.
#[repr(C)]
pub(crate) struct SharedCounters {
    /// Objects handed out to callers without a slot. Written only under
    /// the ring's consumer side (plain load and store).
    pub(crate) hold: CachePadded<AtomicU64>,
    /// Objects taken back from callers without a slot. Written only under
    /// the ring's producer side (plain load and store).
    pub(crate) release: CachePadded<AtomicU64>,
}

impl SharedCounters {
    pub(crate) fn new() -> SharedCounters {
        SharedCounters {
            hold: CachePadded::new(AtomicU64::new(0)),
            release: CachePadded::new(AtomicU64::new(0)),
        }
    }
}

/// An on-demand reading of the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InflightSnapshot {
    /// Objects registered with the pool.
    pub populated: usize,
    /// Σ hold over all lcores and the shared counter (wrapping; per-lcore
    /// hold counts are 32-bit, so only differences modulo 2^32 mean anything).
    pub hold: u64,
    /// Σ release over all lcores and the shared counter (wrapping).
    pub release: u64,
}

impl InflightSnapshot {
    /// `populated + hold − release` modulo 2^32, read as signed: negative
    /// means more objects came back than went out (a double free got
    /// through). Per-lcore hold counts are 32-bit and wrap, so only the low
    /// 32 bits of the sums are meaningful; the result is exact because a
    /// pool never has 2^31 objects (`MAX_CAPACITY` is 2^30).
    #[inline]
    pub fn inflight(&self) -> i64 {
        (self.populated as u64)
            .wrapping_add(self.hold)
            .wrapping_sub(self.release) as u32 as i32 as i64
    }
}

/// Σhold and Σrelease as they relate, for log lines. The raw `u64` sums do
/// not: per-lcore hold counts are 32-bit and wrap, the release counters do
/// not, so the sums drift apart by multiples of 2^32. Modulo 2^32 they
/// agree, and `hold − release`, read as signed, is `inflight − populated`.
///
/// ```
/// # use mempool::HoldRelease;
/// // One lcore's 32-bit hold count wrapped once; the releases did not.
/// let c = HoldRelease::new(1234, (1 << 32) + 1234);
/// assert_eq!((c.hold(), c.release(), c.net()), (1234, 1234, 0));
/// assert_eq!(
///     c.to_string(),
///     "hold - release = 0 (hold 1234, release 1234: counter sums mod 2^32)"
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoldRelease {
    hold: u64,
    release: u64,
}

impl HoldRelease {
    /// From the raw sums (`PoolStats::hold`/`release`,
    /// `InflightSnapshot::hold`/`release`).
    pub fn new(hold: u64, release: u64) -> HoldRelease {
        HoldRelease { hold, release }
    }

    /// Σhold modulo 2^32.
    pub fn hold(&self) -> u32 {
        self.hold as u32
    }

    /// Σrelease modulo 2^32.
    pub fn release(&self) -> u32 {
        self.release as u32
    }

    /// `hold − release` modulo 2^32, read as signed: objects handed out
    /// minus objects taken back, the populated ones (taken back at fill)
    /// included, so `populated + net` is the inflight count.
    pub fn net(&self) -> i64 {
        self.hold.wrapping_sub(self.release) as u32 as i32 as i64
    }
}

impl core::fmt::Display for HoldRelease {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "hold - release = {} (hold {}, release {}: counter sums mod 2^32)",
            self.net(),
            self.hold(),
            self.release()
        )
    }
}

/// Reads the counters in the order that makes the result safe to release on
/// (see the module doc): all `release`s, then all `hold`s, then `populated`.
///
/// `counters` yields `(hold, release)` pairs and is walked twice.
pub(crate) fn snapshot<'a, I>(counters: I, populated: impl FnOnce() -> usize) -> InflightSnapshot
where
    I: Iterator<Item = (Hold<'a>, &'a AtomicU64)> + Clone,
{
    let release = counters
        .clone()
        // Acquire pairs with the Release stores in `owner_add`.
        .fold(0u64, |a, (_, r)| a.wrapping_add(r.load(Ordering::Acquire)));
    let hold = counters
        // Acquire: as above.
        .fold(0u64, |a, (h, _)| a.wrapping_add(h.load()));
    InflightSnapshot {
        populated: populated(),
        hold,
        release,
    }
}
