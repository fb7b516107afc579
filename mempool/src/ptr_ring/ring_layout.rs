//! [`RingLayout`]: a ring's size, shape and synchronisation mode, computed
//! before any memory exists.

use super::{ALIGN, BATCH_MIN_CAPACITY, DEFAULT_BATCH, HEADER_BYTES, MAX_CAPACITY};
use crate::sync::AtomicUsize;

/// Size, shape and synchronisation mode of a ring, computed before any memory
/// exists so the caller can reserve it; [`PtrRing::init`](super::PtrRing::init) writes it into the
/// ring's read-only configuration.
///
/// The constructors give a multi-producer/multi-consumer ring;
/// [`with_single_producer`](RingLayout::with_single_producer) and
/// [`with_single_consumer`](RingLayout::with_single_consumer) switch a side to
/// single-thread mode (module documentation, "Modes"):
///
/// ```
/// # use mempool::RingLayout;
/// let spsc = RingLayout::for_capacity(1000).unwrap();
/// // SAFETY: every ring made from this layout is used by one enqueuing and
/// // one dequeuing thread at a time (here: none at all).
/// let spsc = unsafe { spsc.with_single_producer(true).with_single_consumer(true) };
/// assert!(spsc.single_producer() && spsc.single_consumer());
/// ```
///
/// The fields are private: a layout only comes from the validating
/// constructors, so `slots` and `bytes` always agree with each other and
/// with `capacity` and `batch`, and the safe [`HeapRing::new`](super::HeapRing::new) can trust
/// them. A forged layout does not compile:
///
/// ```compile_fail
/// let mut l = mempool::RingLayout::for_capacity(4).unwrap();
/// l.slots = 1 << 10; // private field
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingLayout {
    /// Objects the ring is guaranteed to hold.
    capacity: usize,
    /// Consumer invalidation batch.
    batch: usize,
    /// Number of slots (power of two, `>= capacity + batch - 1`).
    slots: usize,
    /// Bytes of memory the ring needs.
    bytes: usize,
    /// Alignment the memory must have.
    align: usize,
    /// Single-producer mode (DPDK's `RING_F_SP_ENQ`): enqueues take no lock.
    /// Set only through the `unsafe` [`with_single_producer`](RingLayout::with_single_producer),
    /// whose caller guarantees one enqueuer at a time: the safe methods of
    /// a ring built from this layout rely on it.
    single_producer: bool,
    /// Single-consumer mode (DPDK's `RING_F_SC_DEQ`), as above for dequeues.
    single_consumer: bool,
}

impl RingLayout {
    /// Layout for a ring that must hold `capacity` objects, with the default
    /// batch: 1 below [`BATCH_MIN_CAPACITY`]; above, 16, or less when a
    /// smaller batch (at least 2) keeps `capacity + batch - 1` within the
    /// next power of two. A pool of `2^k - 1` objects (DPDK's recommended
    /// sizes) then gets `2^k` slots with batch 2 instead of `2^(k+1)`
    /// slots; an exact power of two keeps batch 16 and twice the slots,
    /// like `rte_ring`. `None` as for [`with_batch`](RingLayout::with_batch).
    ///
    /// # Examples
    /// ```
    /// use mempool::RingLayout;
    ///
    /// let l = RingLayout::for_capacity(1023).unwrap(); // 2^10 - 1 objects
    /// assert_eq!((l.capacity(), l.batch(), l.slots()), (1023, 2, 1024));
    /// let l = RingLayout::for_capacity(1024).unwrap();
    /// assert_eq!((l.batch(), l.slots()), (16, 2048));
    /// assert!(RingLayout::for_capacity(0).is_none());
    /// ```
    pub const fn for_capacity(capacity: usize) -> Option<RingLayout> {
        let batch = if capacity >= BATCH_MIN_CAPACITY {
            // Slack up to the next power of two: a batch of `fit` needs no
            // more slots than that power.
            let fit = capacity.next_power_of_two() - capacity + 1;
            if fit >= 2 && fit < DEFAULT_BATCH {
                fit
            } else {
                DEFAULT_BATCH
            }
        } else {
            1
        };
        Self::with_batch(capacity, batch)
    }

    /// Layout with an explicit invalidation batch (tests use this to exercise
    /// batching on tiny rings).
    ///
    /// `None` for a capacity of 0 or above [`MAX_CAPACITY`], or a batch of 0
    /// or above the capacity. A caller that wants an error maps the `None`
    /// to one.
    ///
    /// # Examples
    /// ```
    /// use mempool::ptr_ring::{RingError, RingLayout, MAX_CAPACITY};
    ///
    /// // `const`: a layout can be a constant.
    /// const SMALL: Option<RingLayout> = RingLayout::with_batch(6, 2);
    /// assert_eq!(SMALL.unwrap().slots(), 8); // 6 + 2 - 1, rounded up
    ///
    /// let (capacity, batch) = (4, 5);
    /// let layout = RingLayout::with_batch(capacity, batch).ok_or(RingError::BadCapacity {
    ///     capacity,
    ///     batch,
    ///     max: MAX_CAPACITY,
    /// });
    /// assert!(matches!(layout, Err(RingError::BadCapacity { .. })));
    /// ```
    pub const fn with_batch(capacity: usize, batch: usize) -> Option<RingLayout> {
        if capacity == 0 || capacity > MAX_CAPACITY || batch == 0 || batch > capacity {
            return None;
        }
        let slots = (capacity + batch - 1).next_power_of_two();
        // Rounded up to the alignment: a `&PtrRing` covers its padded size.
        let align = ALIGN;
        let bytes =
            (HEADER_BYTES + slots * core::mem::size_of::<AtomicUsize>()).next_multiple_of(align);
        Some(RingLayout {
            capacity,
            batch,
            slots,
            bytes,
            align,
            single_producer: false,
            single_consumer: false,
        })
    }

    /// Objects the ring is guaranteed to hold.
    pub const fn capacity(&self) -> usize {
        self.capacity
    }

    /// Consumer invalidation batch.
    pub const fn batch(&self) -> usize {
        self.batch
    }

    /// Number of slots (power of two, `>= capacity + batch - 1`).
    pub const fn slots(&self) -> usize {
        self.slots
    }

    /// Bytes of memory the ring needs.
    pub const fn bytes(&self) -> usize {
        self.bytes
    }

    /// Alignment the memory must have.
    pub const fn align(&self) -> usize {
        self.align
    }

    /// Whether rings of this layout take no producer lock.
    pub const fn single_producer(&self) -> bool {
        self.single_producer
    }

    /// Whether rings of this layout take no consumer lock.
    pub const fn single_consumer(&self) -> bool {
        self.single_consumer
    }

    /// The same layout with single-producer mode on or off (DPDK's
    /// `RING_F_SP_ENQ`). Size and shape do not change.
    ///
    /// # Safety
    /// With `on`, every ring initialised from this layout is enqueued to by
    /// at most one thread at a time, each enqueue happening-before the next
    /// (DPDK's contract for `RING_F_SP_ENQ`). The ring's safe methods cannot
    /// check it; two concurrent enqueuers lose objects and race (undefined
    /// behaviour: a dequeue's bulk copy reads slots with plain loads).
    #[must_use]
    pub const unsafe fn with_single_producer(mut self, on: bool) -> RingLayout {
        self.single_producer = on;
        self
    }

    /// The same layout with single-consumer mode on or off (DPDK's
    /// `RING_F_SC_DEQ`). Size and shape do not change.
    ///
    /// # Safety
    /// With `on`, every ring initialised from this layout is dequeued from by
    /// at most one thread at a time, each dequeue happening-before the next
    /// (DPDK's contract for `RING_F_SC_DEQ`); two concurrent dequeuers hand
    /// the same object out twice and race (undefined behaviour: the bulk
    /// copy reads slots with plain loads).
    #[must_use]
    pub const unsafe fn with_single_consumer(mut self, on: bool) -> RingLayout {
        self.single_consumer = on;
        self
    }
}
