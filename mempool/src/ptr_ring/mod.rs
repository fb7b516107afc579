//! A batched, slot-signalled ring of object pointers, after the Linux kernel's
//! `ptr_ring`, placed in memory the caller provides (a DPDK memzone shared by
//! primary and secondary processes).
//!
//! # Protocol
//!
//! * A slot holding `0` is free, a slot holding an address is full. Producers
//!   and consumers never read each other's index: the slots are the signal.
//! * Indices are monotonically increasing sequence numbers (`usize`, never
//!   reset); a slot is `seq & mask`. The ring size is a power of two.
//! * Producers are serialised by the producer lock, consumers by the consumer
//!   lock, each on its own cache line; the read-only configuration has a third.
//!   A single-producer ring ([`RingLayout::with_single_producer`], DPDK's
//!   `RING_F_SP_ENQ`) takes no producer lock, and a single-consumer one
//!   ([`RingLayout::with_single_consumer`], `RING_F_SC_DEQ`) no consumer
//!   lock: the caller promises one enqueuer (resp. dequeuer) at a time
//!   instead (see [Modes](#modes)). Nothing else differs between the modes:
//!   each side's indices have a single writer either way, and the two sides
//!   only ever communicate through the slots.
//! * The consumer advances `head` (next valid entry) and only once
//!   `head - tail >= batch` does it clear `[tail, head)`, in sequence order,
//!   like the fills: so the last slot of a range being free (full) means the
//!   whole range is, and each side checks one slot per bulk.
//!   Consumed-but-not-cleared slots still look full to producers: the ring has
//!   `batch - 1` more slots than its [`capacity`](RingLayout::capacity) so that
//!   the lag can never make an enqueue within capacity fail.
//! * The consumer publishes `head` **before** it clears slots. That, plus a
//!   re-check of `head` in [`PtrRing::is_empty`], is what makes the lockless
//!   empty check exact where the kernel's is not (see `is_empty`).
//!
//! # Guarantees
//!
//! * Bulk enqueue and dequeue are all-or-nothing.
//! * If the ring holds `len` objects as seen by a producer (every dequeue that
//!   made room happens-before the enqueue) and `len + n <= capacity`, an
//!   enqueue of `n` objects succeeds. A mempool whose ring capacity is its
//!   object count can therefore never fail to take an object back.
//! * `dequeue_bulk(n)` succeeds when `n` objects whose enqueue happens-before it
//!   are in the ring.
//! * [`PtrRing::is_empty`] never reports empty while an object whose enqueue
//!   happens-before the call is in the ring.
//!
//! All of them hold in every mode.
//!
//! # Modes
//!
//! Multi-producer/multi-consumer is the default. The single-producer and
//! single-consumer flags mirror DPDK's `RING_F_SP_ENQ` / `RING_F_SC_DEQ` and
//! carry the same contract, which the ring does not check:
//!
//! * **single producer:** [`PtrRing::enqueue_bulk`] never runs on two threads
//!   (or processes) at once, and each enqueue happens-before the next one
//!   (the same thread, or a hand-over through some synchronisation, e.g. a
//!   joined thread or a mutex);
//! * **single consumer:** the same for [`PtrRing::dequeue_bulk`] and
//!   [`PtrRing::dequeue_burst`] together.
//!
//! Breaking it makes two enqueuers fill the same slots (objects lost) or two
//! dequeuers take the same ones (objects delivered twice). The ring itself
//! stays memory-safe (every shared word is atomic), but its users usually do
//! not. [`PtrRing::is_empty`] and [`PtrRing::len`] are lockless in every mode
//! and may be called from any thread at any time.

use core::ffi::c_void;
use core::ptr::NonNull;

use crossbeam_utils::CachePadded;

use crate::sync::{spin_hint, AtomicU64, AtomicUsize, Ordering, SpinGuard, SpinLock};

/// Batch of consumer invalidation for rings of at least [`BATCH_MIN_CAPACITY`]
/// objects: two 64-byte cache lines of pointers, as in the kernel.
pub const DEFAULT_BATCH: usize = 16;
/// Below this capacity the ring clears every consumed slot at once (batch 1),
/// so that small rings do not pay for the lag.
pub const BATCH_MIN_CAPACITY: usize = 64;
/// Invalidations of at most this many slots after a bulk dequeue run inline
/// in `consume`; longer ones out of line (their unrolled loops would cost
/// every dequeue a stack frame). Single-object dequeues always clear inline.
const SHORT_CLEAR: usize = 2;
/// Largest capacity accepted (slots are indexed by `usize`, sizes are powers of two).
pub const MAX_CAPACITY: usize = 1 << 30;

const RING_MAGIC: u64 = 0x7074_725f_7269_6e67; // "ptr_ring"

/// Errors of ring set-up and bulk operations. Every failing operation leaves
/// the ring unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RingError {
    /// Not enough free slots for the whole bulk.
    #[error("ring full: no room for {requested} objects")]
    NoSpace {
        /// Objects the caller tried to enqueue.
        requested: usize,
    },
    /// Fewer objects in the ring than the bulk asks for.
    #[error("ring holds fewer than {requested} objects")]
    NotEnough {
        /// Objects the caller tried to dequeue.
        requested: usize,
    },
    /// The bulk can never succeed on this ring.
    #[error("bulk of {requested} objects exceeds ring capacity {capacity}")]
    BulkTooLarge {
        /// Objects the caller asked for.
        requested: usize,
        /// The ring's capacity.
        capacity: usize,
    },
    /// A null object pointer: null is the ring's "free slot" marker.
    #[error("null object pointer at index {index} of the bulk")]
    NullObject {
        /// Position in the caller's slice.
        index: usize,
    },
    /// Capacity zero or above [`MAX_CAPACITY`], or a batch that does not fit.
    #[error("unsupported ring capacity {capacity} (batch {batch}); 1..={max} supported")]
    BadCapacity {
        /// Requested capacity.
        capacity: usize,
        /// Requested batch.
        batch: usize,
        /// [`MAX_CAPACITY`].
        max: usize,
    },
    /// The memory handed to [`PtrRing::attach`] holds no initialised ring.
    #[error("memory at {addr:#x} holds no initialised ptr_ring")]
    NotARing {
        /// Address of the memory.
        addr: usize,
    },
}

impl RingError {
    /// The negative errno DPDK expects for this error (`-ENOBUFS` for the
    /// all-or-nothing failures, `-EINVAL` for bad arguments).
    pub fn errno(&self) -> i32 {
        match self {
            RingError::NoSpace { .. }
            | RingError::NotEnough { .. }
            | RingError::BulkTooLarge { .. } => -libc::ENOBUFS,
            RingError::NullObject { .. }
            | RingError::BadCapacity { .. }
            | RingError::NotARing { .. } => -libc::EINVAL,
        }
    }
}

/// Size, shape and synchronisation mode of a ring, computed before any memory
/// exists so the caller can reserve it; [`PtrRing::init`] writes it into the
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
/// with `capacity` and `batch`, and the safe [`HeapRing::new`] can trust
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
    /// like `rte_ring`.
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
    pub const fn with_batch(capacity: usize, batch: usize) -> Option<RingLayout> {
        if capacity == 0 || capacity > MAX_CAPACITY || batch == 0 || batch > capacity {
            return None;
        }
        let slots = (capacity + batch - 1).next_power_of_two();
        // Rounded up to the alignment: a `&PtrRing` covers its padded size.
        let align = core::mem::align_of::<RingHeader>();
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
    /// check it; two concurrent enqueuers lose objects.
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
    /// the same object out twice.
    #[must_use]
    pub const unsafe fn with_single_consumer(mut self, on: bool) -> RingLayout {
        self.single_consumer = on;
        self
    }

    /// Like [`RingLayout::with_batch`], with the failure as an error.
    pub fn try_with_batch(capacity: usize, batch: usize) -> Result<RingLayout, RingError> {
        Self::with_batch(capacity, batch).ok_or(RingError::BadCapacity {
            capacity,
            batch,
            max: MAX_CAPACITY,
        })
    }
}

#[repr(C)]
struct Producer {
    /// Serialises producers; unused in single-producer mode.
    lock: SpinLock,
    /// Next slot to fill. Written only by the producer side (under `lock`,
    /// or by the single producer); read locklessly by `len`.
    seq: AtomicUsize,
}

#[repr(C)]
struct Consumer {
    /// Serialises consumers; unused in single-consumer mode.
    lock: SpinLock,
    /// Next valid entry. Written only by the consumer side (under `lock`, or
    /// by the single consumer); read locklessly by `is_empty` and `len`.
    head: AtomicUsize,
    /// Next entry to invalidate; `tail <= head`, `head - tail < batch` between
    /// operations. Only touched by the consumer side.
    tail: AtomicUsize,
}

#[repr(C)]
struct Config {
    magic: AtomicU64,
    capacity: usize,
    batch: usize,
    mask: usize,
    /// No producer lock: one enqueuer at a time (caller's contract).
    single_producer: bool,
    /// No consumer lock: one dequeuer at a time (caller's contract).
    single_consumer: bool,
}

/// The ring's three cache-line groups, at the start of its memory.
#[repr(C)]
struct RingHeader {
    producer: CachePadded<Producer>,
    consumer: CachePadded<Consumer>,
    config: CachePadded<Config>,
}

/// Bytes from a ring's start to its first slot (the header is a whole
/// number of padded lines, so the slots follow it with no gap).
pub(crate) const HEADER_BYTES: usize = core::mem::size_of::<RingHeader>();

/// The ring: its header, then `slots` slot words, in the caller's memory.
/// Holds no pointers, so every process that maps the memory can use it.
///
/// A dynamically sized type: a `&PtrRing` covers the header *and* the
/// slots, so every slot access is derived from a reference whose
/// provenance spans the whole ring (no pointer reaches past the memory its
/// reference covers). The slice length is the slot count; the code indexes
/// with `seq & mask` from the read-only configuration.
#[repr(C)]
pub struct PtrRing {
    hdr: RingHeader,
    slots: [AtomicUsize],
}

// SAFETY: all shared mutable state is atomic; the header is only ever used by
// reference to memory that outlives it (the caller's contract in `init`).
unsafe impl Sync for PtrRing {}
// SAFETY: as above; the ring holds no thread-affine state.
unsafe impl Send for PtrRing {}

impl PtrRing {
    /// Initialises a ring in `mem` and returns a reference to it.
    ///
    /// # Safety
    /// * `mem` is valid for writes of `layout.bytes()` bytes, aligned to
    ///   `layout.align()`, and not used for anything else while the ring
    ///   lives; its provenance covers all of them;
    /// * the memory outlives `'a`.
    pub unsafe fn init<'a>(mem: NonNull<u8>, layout: &RingLayout) -> &'a PtrRing {
        let hdr = mem.as_ptr().cast::<RingHeader>();
        // SAFETY: the caller guarantees `mem` is writable, aligned and
        // `layout.bytes` long, which `RingLayout`'s constructors (the only
        // way to make one) computed as the header plus `layout.slots` slot
        // words.
        unsafe {
            hdr.write(RingHeader {
                producer: CachePadded::new(Producer {
                    lock: SpinLock::new(),
                    seq: AtomicUsize::new(0),
                }),
                consumer: CachePadded::new(Consumer {
                    lock: SpinLock::new(),
                    head: AtomicUsize::new(0),
                    tail: AtomicUsize::new(0),
                }),
                config: CachePadded::new(Config {
                    magic: AtomicU64::new(0),
                    capacity: layout.capacity,
                    batch: layout.batch,
                    mask: layout.slots - 1,
                    single_producer: layout.single_producer,
                    single_consumer: layout.single_consumer,
                }),
            });
            let slots = mem.as_ptr().add(HEADER_BYTES).cast::<AtomicUsize>();
            for i in 0..layout.slots {
                slots.add(i).write(AtomicUsize::new(0));
            }
            let ring = Self::from_raw(mem, layout.slots);
            // Release pairs with the Acquire load in `attach`: a process that
            // sees the magic sees an initialised ring.
            ring.hdr.config.magic.store(RING_MAGIC, Ordering::Release);
            ring
        }
    }

    /// The ring at `mem` with `slots` slots, as one reference covering
    /// header and slots.
    ///
    /// # Safety
    /// `mem` holds an initialised ring of `slots` slots, valid (with
    /// provenance over all of it) for `'a`.
    #[inline(always)]
    pub(crate) unsafe fn from_raw<'a>(mem: NonNull<u8>, slots: usize) -> &'a PtrRing {
        // The slice length becomes the `slots` field's length: a pointer
        // cast between unsized types keeps the metadata.
        let fat =
            core::ptr::slice_from_raw_parts(mem.as_ptr().cast_const(), slots) as *const PtrRing;
        // SAFETY: the caller's guarantee.
        unsafe { &*fat }
    }

    /// Returns the ring already initialised in `mem` (by this or another
    /// process).
    ///
    /// # Safety
    /// `mem` points to at least the ring header's bytes (checked by magic,
    /// read through the raw pointer before any reference is made), and, if
    /// the magic matches, to a ring [`PtrRing::init`] initialised, all
    /// valid for `'a`.
    pub unsafe fn attach<'a>(mem: NonNull<u8>) -> Result<&'a PtrRing, RingError> {
        let hdr = mem.as_ptr().cast::<RingHeader>();
        // `CachePadded` keeps its value at offset 0 (tested below).
        // SAFETY: in bounds of the header bytes the caller guarantees.
        let cfg = unsafe { core::ptr::addr_of!((*hdr).config) }.cast::<Config>();
        // SAFETY: the caller guarantees the header bytes are readable; only
        // the magic word is read, through a raw place (no reference to the
        // possibly foreign memory yet). Acquire pairs with the Release store
        // at the end of `init`.
        let magic = unsafe { (*core::ptr::addr_of!((*cfg).magic)).load(Ordering::Acquire) };
        if magic != RING_MAGIC {
            return Err(RingError::NotARing {
                addr: mem.as_ptr() as usize,
            });
        }
        // SAFETY: the magic proves an initialised ring; `mask` is read-only.
        let slots = unsafe { (*cfg).mask } + 1;
        // SAFETY: initialised ring of `slots` slots (caller's contract).
        Ok(unsafe { Self::from_raw(mem, slots) })
    }

    /// Objects the ring is guaranteed to hold.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.hdr.config.capacity
    }

    /// Consumer invalidation batch.
    #[inline]
    pub fn batch(&self) -> usize {
        self.hdr.config.batch
    }

    /// Number of slots.
    #[inline]
    pub fn slots(&self) -> usize {
        self.hdr.config.mask + 1
    }

    /// Whether the ring is in single-producer mode (DPDK's `RING_F_SP_ENQ`).
    #[inline]
    pub fn is_single_producer(&self) -> bool {
        self.hdr.config.single_producer
    }

    /// Whether the ring is in single-consumer mode (DPDK's `RING_F_SC_DEQ`).
    #[inline]
    pub fn is_single_consumer(&self) -> bool {
        self.hdr.config.single_consumer
    }

    /// The mode in DPDK's words: `"MP/MC"`, `"SP/MC"`, `"MP/SC"` or `"SP/SC"`.
    pub fn mode_name(&self) -> &'static str {
        match (self.is_single_producer(), self.is_single_consumer()) {
            (false, false) => "MP/MC",
            (true, false) => "SP/MC",
            (false, true) => "MP/SC",
            (true, true) => "SP/SC",
        }
    }

    #[inline(always)]
    fn slot(&self, seq: usize) -> &AtomicUsize {
        // SAFETY: `init` wrote `mask + 1` slot words, the length of
        // `self.slots`, and `seq & mask` is below that.
        unsafe { &*self.slots.as_ptr().add(seq & self.hdr.config.mask) }
    }

    /// The slots of sequence numbers `[seq, seq + n)` as at most two
    /// contiguous runs: up to the end of the slot array, then from its start
    /// (empty unless the range wraps). Every caller has `n <= slots`
    /// (`n <= capacity`, or `batch - 1 + capacity` for an invalidation); the
    /// runs are clamped to the slot array anyway, so that even a corrupt
    /// configuration in shared memory cannot make them reach past it.
    #[inline(always)]
    fn runs(&self, seq: usize, n: usize) -> (&[AtomicUsize], &[AtomicUsize]) {
        let mask = self.hdr.config.mask;
        debug_assert!(n <= mask + 1, "run of {n} slots in a ring of {}", mask + 1);
        let start = seq & mask;
        let first = n.min(mask + 1 - start);
        // Equals `n - first` whenever `n <= mask + 1`.
        let second = (n - first).min(start);
        // SAFETY: `init` wrote `mask + 1` initialised slot words right after
        // the header, which live as long as `self`. The first run is
        // `[start, start + first)` with `start + first <= mask + 1`, the
        // second `[0, second)` with `second <= start`: both inside the slot
        // array and disjoint. Shared slices of atomics alias nothing mutable.
        unsafe {
            let base = self.slots.as_ptr();
            (
                core::slice::from_raw_parts(base.add(start), first),
                core::slice::from_raw_parts(base, second),
            )
        }
    }

    /// Takes the producer lock, unless the ring is single-producer.
    #[inline(always)]
    fn producer_guard(&self) -> Option<SpinGuard<'_>> {
        if self.hdr.config.single_producer {
            None
        } else {
            Some(self.hdr.producer.lock.lock())
        }
    }

    /// Takes the consumer lock, unless the ring is single-consumer.
    #[inline(always)]
    fn consumer_guard(&self) -> Option<SpinGuard<'_>> {
        if self.hdr.config.single_consumer {
            None
        } else {
            Some(self.hdr.consumer.lock.lock())
        }
    }

    /// Enqueues all of `objs`, or none of them.
    ///
    /// Fails with [`RingError::NullObject`] for a null pointer (checked
    /// first), [`RingError::BulkTooLarge`] above capacity and
    /// [`RingError::NoSpace`] when any slot needed is still full (occupied or
    /// consumed but not yet invalidated). An empty slice succeeds.
    ///
    /// In single-producer mode the caller guarantees that no other enqueue
    /// runs at the same time and that the previous one happens-before this
    /// one (module documentation, "Modes").
    #[inline]
    pub fn enqueue_bulk(&self, objs: &[*mut c_void]) -> Result<(), RingError> {
        let n = objs.len();
        if n == 1 {
            return self.enqueue_one(objs[0]);
        }
        if n == 0 {
            return Ok(());
        }
        if n > self.hdr.config.capacity {
            return Err(RingError::BulkTooLarge {
                requested: n,
                capacity: self.hdr.config.capacity,
            });
        }
        // Branch-free null scan (one test for the whole bulk), before the
        // lock; the position only on the error path.
        if any_null(objs) {
            let index = objs.iter().position(|o| o.is_null()).unwrap_or(0);
            return Err(RingError::NullObject { index });
        }
        let _guard = self.producer_guard();
        // Relaxed: `seq` is only written by the producer side, and the
        // previous writer happens-before us (the producer lock we hold, or
        // the single-producer contract).
        let p = self.hdr.producer.seq.load(Ordering::Relaxed);
        // Acquire pairs with the Release clears in `clear_inline` and
        // `clear_run` (through `invalidate`). Clears
        // happen in sequence order (one consumer at a time, each clearing
        // its range first to last, each invalidation happening-before the
        // next), so the last slot of the bulk being free means every slot
        // of it is, and every one of those clears happens-before our fills
        // below. One load for the whole bulk. Slots are only ever filled by
        // the producer side, so a slot read free stays free until we fill
        // it.
        if self.slot(p.wrapping_add(n - 1)).load(Ordering::Acquire) != 0 {
            return Err(RingError::NoSpace { requested: n });
        }
        let (a, b) = self.runs(p, n);
        // Published before the fills, so a consumer can never be seen ahead
        // of `seq` (pairs, through the Release fills below and the
        // consumer's Release `head` store in `consume`, with the Acquire
        // `head` load in `len`). Release (a plain store on x86) pairs with
        // the first Acquire `seq` load in `len`: a reader that sees this
        // `seq` sees every `head` store that happens-before this enqueue,
        // so its `head` is not from an older lap.
        self.hdr
            .producer
            .seq
            .store(p.wrapping_add(n), Ordering::Release);
        // Fills in sequence order (first run, then the wrapped one): the
        // consumer relies on it (see `dequeue_bulk`).
        let (oa, ob) = objs.split_at(a.len());
        fill_run(a, oa);
        if !b.is_empty() {
            fill_run(b, ob);
        }
        Ok(())
    }

    /// `enqueue_bulk` of one object.
    ///
    /// The lock is taken in its own branch rather than through an optional
    /// guard, so that the unlock needs no test.
    #[inline(always)]
    pub(crate) fn enqueue_one(&self, obj: *mut c_void) -> Result<(), RingError> {
        if obj.is_null() {
            return Err(RingError::NullObject { index: 0 });
        }
        if self.hdr.config.single_producer {
            return self.produce_one(obj);
        }
        let _guard = self.hdr.producer.lock.lock();
        self.produce_one(obj)
    }

    /// [`enqueue_one`](PtrRing::enqueue_one) with the producer side already
    /// held (its lock, or the single-producer contract).
    #[inline(always)]
    fn produce_one(&self, obj: *mut c_void) -> Result<(), RingError> {
        // Relaxed: as in `enqueue_bulk`, the previous writer of `seq`
        // happens-before us (producer lock or single-producer contract).
        let p = self.hdr.producer.seq.load(Ordering::Relaxed);
        let s = self.slot(p);
        // Acquire pairs with the Release clears in `clear_inline` and
        // `clear_run` (see `enqueue_bulk`).
        if s.load(Ordering::Acquire) != 0 {
            return Err(RingError::NoSpace { requested: 1 });
        }
        // Before the fill; Release pairs with the first Acquire `seq` load
        // in `len` (see `enqueue_bulk`).
        self.hdr
            .producer
            .seq
            .store(p.wrapping_add(1), Ordering::Release);
        // Release pairs with the Acquire loads in `dequeue_bulk`,
        // `take_one`, `dequeue_burst` and `is_empty`.
        s.store(obj as usize, Ordering::Release);
        Ok(())
    }

    /// Dequeues exactly `out.len()` objects into `out`, or none.
    ///
    /// Fails with [`RingError::NotEnough`] (ring and `out` unchanged) when
    /// fewer are in the ring, with [`RingError::BulkTooLarge`] above capacity.
    /// An empty slice succeeds.
    ///
    /// In single-consumer mode the caller guarantees that no other dequeue
    /// (bulk or burst) runs at the same time and that the previous one
    /// happens-before this one (module documentation, "Modes").
    #[inline]
    pub fn dequeue_bulk(&self, out: &mut [*mut c_void]) -> Result<(), RingError> {
        let n = out.len();
        if n == 0 {
            return Ok(());
        }
        if n > self.hdr.config.capacity {
            return Err(RingError::BulkTooLarge {
                requested: n,
                capacity: self.hdr.config.capacity,
            });
        }
        if n == 1 {
            out[0] = self
                .dequeue_one()
                .ok_or(RingError::NotEnough { requested: 1 })?;
            return Ok(());
        }
        let _guard = self.consumer_guard();
        // Relaxed: `head` is only written by the consumer side, and the
        // previous writer happens-before us (the consumer lock we hold, or
        // the single-consumer contract).
        let h = self.hdr.consumer.head.load(Ordering::Relaxed);
        // Acquire pairs with the Release fill in `enqueue_bulk` /
        // `enqueue_one`. Slots are filled in sequence order (one producer at
        // a time, in order, each enqueue happening-before the next), so the
        // last one being full means all `n` are, and their fills
        // happen-before this load. `n <= capacity` keeps `h + n - 1` clear
        // of the previous lap's consumed-but-not-invalidated slots
        // (`head - tail < batch`, `slots >= capacity + batch - 1`).
        let last = self.slot(h.wrapping_add(n - 1)).load(Ordering::Acquire);
        if last == 0 {
            return Err(RingError::NotEnough { requested: n });
        }
        Self::copy_out(self.runs(h, n), out);
        self.consume(h.wrapping_add(n));
        Ok(())
    }

    /// `dequeue_bulk` of one object: `None` when the ring is empty.
    ///
    /// Locked in its own branch as in [`enqueue_one`](PtrRing::enqueue_one),
    /// and with its invalidation inline (see `consume_one`): a caller that
    /// inlines it stays a leaf function with no stack frame.
    #[inline(always)]
    pub(crate) fn dequeue_one(&self) -> Option<*mut c_void> {
        if self.hdr.config.single_consumer {
            return self.take_one();
        }
        let _guard = self.hdr.consumer.lock.lock();
        self.take_one()
    }

    /// [`dequeue_one`](PtrRing::dequeue_one) with the consumer side already
    /// held (its lock, or the single-consumer contract).
    #[inline(always)]
    fn take_one(&self) -> Option<*mut c_void> {
        // Relaxed: as in `dequeue_bulk`, the previous writer of `head`
        // happens-before us (consumer lock or single-consumer contract).
        let h = self.hdr.consumer.head.load(Ordering::Relaxed);
        // Acquire pairs with the Release fill in `fill_run` / `produce_one`
        // (as in `dequeue_bulk`, for a bulk of one).
        let obj = self.slot(h).load(Ordering::Acquire);
        if obj == 0 {
            return None;
        }
        self.consume_one(h.wrapping_add(1));
        Some(obj as *mut c_void)
    }

    /// [`consume`](PtrRing::consume) after a single object, with the
    /// invalidation, when due, inline (`clear_inline`) rather than out of
    /// line: a call would make every caller save registers around it. The
    /// range is short: before this dequeue `head - tail < batch`, so it is
    /// exactly `batch` slots long.
    #[inline(always)]
    fn consume_one(&self, new_head: usize) {
        // Release pairs with the Acquire head load in `len`/`is_empty`,
        // stored before any slot is cleared (as in `consume`).
        self.hdr.consumer.head.store(new_head, Ordering::Release);
        // Relaxed: `tail` is only touched by the consumer side, whose
        // previous writer happens-before us.
        let tail = self.hdr.consumer.tail.load(Ordering::Relaxed);
        if new_head.wrapping_sub(tail) < self.hdr.config.batch {
            return;
        }
        self.clear_inline(tail, new_head);
    }

    /// Clears `[tail, head)` (at least one slot) in sequence order, as
    /// [`invalidate`](PtrRing::invalidate) does, in a plain inline loop with
    /// no call: short invalidations (single objects, small batches) then
    /// cost their callers no stack frame. Consumer side held.
    #[inline(always)]
    fn clear_inline(&self, tail: usize, head: usize) {
        // Relaxed: only the consumer side reads `tail`, and we hold it.
        self.hdr.consumer.tail.store(head, Ordering::Relaxed);
        // Indexes wrapped with the mask keep the trip count opaque to the
        // optimiser, which would otherwise unroll the loop into more live
        // registers than a leaf caller has.
        let mask = self.hdr.config.mask;
        let end = head & mask;
        let mut i = tail & mask;
        loop {
            // SAFETY: `i <= mask`, and the slot array has `mask + 1` slots.
            let slot = unsafe { &*self.slots.as_ptr().add(i) };
            // Release pairs with the Acquire room checks in `enqueue_bulk` /
            // `produce_one` and the slot loads in `is_empty`.
            slot.store(0, Ordering::Release);
            i = (i + 1) & mask;
            if i == end {
                break;
            }
        }
    }

    /// Copies the (filled) slots of `runs` into `out` (`out.len()` is the
    /// runs' total length).
    #[inline(always)]
    fn copy_out((a, b): (&[AtomicUsize], &[AtomicUsize]), out: &mut [*mut c_void]) {
        let (oa, ob) = out.split_at_mut(a.len());
        copy_run(a, oa);
        if !b.is_empty() {
            copy_run(b, ob);
        }
        debug_assert!(
            out.iter().all(|o| !o.is_null()),
            "hole in a filled ptr_ring run"
        );
    }

    /// Copies filled slots of `run` into `out` up to the first free one;
    /// returns how many.
    #[inline(always)]
    fn take_filled(run: &[AtomicUsize], out: &mut [*mut c_void]) -> usize {
        let mut got = 0;
        for (o, s) in out.iter_mut().zip(run) {
            // Acquire pairs with the Release fill in `enqueue_bulk` /
            // `enqueue_one`: this object's fill happens-before our use.
            let v = s.load(Ordering::Acquire);
            if v == 0 {
                break;
            }
            *o = v as *mut c_void;
            got += 1;
        }
        got
    }

    /// Dequeues up to `out.len()` objects into the front of `out` and returns
    /// how many (0 when empty).
    ///
    /// Same single-consumer contract as [`dequeue_bulk`](PtrRing::dequeue_bulk).
    #[inline]
    pub fn dequeue_burst(&self, out: &mut [*mut c_void]) -> usize {
        let max = out.len().min(self.hdr.config.capacity);
        if max == 0 {
            return 0;
        }
        let _guard = self.consumer_guard();
        // Relaxed: `head` is only written by the consumer side, and the
        // previous writer happens-before us (consumer lock or
        // single-consumer contract).
        let h = self.hdr.consumer.head.load(Ordering::Relaxed);
        let runs = self.runs(h, max);
        // Acquire pairs with the Release fill in `enqueue_bulk` /
        // `enqueue_one`. As in `dequeue_bulk`: `max <= capacity`, so a full
        // last slot means the whole range is filled and visible; then copy
        // it without a test per slot.
        let got = if self.slot(h.wrapping_add(max - 1)).load(Ordering::Acquire) != 0 {
            Self::copy_out(runs, &mut out[..max]);
            max
        } else {
            // Partial: each slot up to the first free one, each checked by
            // its own Acquire load (in `take_filled`). A slot in range is
            // never a stale previous-lap value (same bound as above).
            let (a, b) = runs;
            let (oa, ob) = out[..max].split_at_mut(a.len());
            let got = Self::take_filled(a, oa);
            if got == a.len() {
                got + Self::take_filled(b, ob)
            } else {
                got
            }
        };
        if got > 0 {
            self.consume(h.wrapping_add(got));
        }
        got
    }

    /// Publishes the new head, then invalidates a batch when due.
    /// Called by the consumer side (lock held or single consumer) after
    /// reading every slot in `[old head, new_head)`.
    #[inline(always)]
    fn consume(&self, new_head: usize) {
        // Release pairs with the Acquire head load in `len`/`is_empty`. It is
        // stored before any slot is cleared: see `is_empty`.
        self.hdr.consumer.head.store(new_head, Ordering::Release);
        // Relaxed: `tail` is only touched by the consumer side, whose
        // previous writer happens-before us.
        let tail = self.hdr.consumer.tail.load(Ordering::Relaxed);
        let lag = new_head.wrapping_sub(tail);
        if lag < self.hdr.config.batch {
            return;
        }
        if lag <= SHORT_CLEAR {
            self.clear_inline(tail, new_head);
        } else {
            self.invalidate(tail, new_head);
        }
    }

    /// Clears `[tail, head)` in sequence order (first run, then the wrapped
    /// one), so that clears, like fills, happen in sequence order: a
    /// producer then learns from one slot that a whole bulk is free (see
    /// `enqueue_bulk`). The kernel clears in reverse, so that the line a
    /// producer spinning on a full ring polls is written last; a mempool's
    /// ring holds every object of its pool and is never polled full. The
    /// range is at most `batch - 1 + capacity <= slots` long.
    // Out of line: it runs once per batch, and inlined its loops would
    // cost every dequeue a stack frame.
    #[inline(never)]
    fn invalidate(&self, tail: usize, head: usize) {
        let (a, b) = self.runs(tail, head.wrapping_sub(tail));
        clear_run(a);
        if !b.is_empty() {
            clear_run(b);
        }
        // Relaxed: only the consumer side reads `tail`.
        self.hdr.consumer.tail.store(head, Ordering::Relaxed);
    }

    /// `true` only if the ring held no object at some instant during the
    /// call. Lockless, in every mode.
    ///
    /// Exactness: it never reports empty while an object whose enqueue
    /// happens-before the call is still in the ring (not yet taken by a
    /// dequeue). The kernel's `__ptr_ring_empty` can, because its consumer
    /// clears slots before moving `consumer_head`: a reader holding the old
    /// head then finds a cleared slot while later slots are full. Here the
    /// consumer publishes `head` before clearing, with Release clears, so a
    /// reader that finds a *cleared* slot at its `head` must, re-reading
    /// `head`, find it moved, and retries. A slot that reads empty and whose
    /// `head` has not moved is one whose fill is not visible, so no completed
    /// enqueue is behind it. `head` never repeats (sequence numbers), so
    /// there is no ABA. The argument needs only that one consumer at a time
    /// writes `head` and then clears, which both modes give. Model-checked
    /// in `tests/loom_ptr_ring.rs` (locked and single-producer/consumer).
    pub fn is_empty(&self) -> bool {
        loop {
            // Acquire pairs with the Release store in `consume`.
            let h = self.hdr.consumer.head.load(Ordering::Acquire);
            // Acquire pairs with the Release fill in `enqueue_bulk` and with
            // the Release clear in `invalidate`.
            if self.slot(h).load(Ordering::Acquire) != 0 {
                return false;
            }
            // Relaxed: ordered after the Acquire slot load above; if that
            // load saw a clear, the head store before the clear is visible.
            if self.hdr.consumer.head.load(Ordering::Relaxed) == h {
                return true;
            }
            spin_hint();
        }
    }

    /// Number of objects in the ring. Exact when no operation is in
    /// progress; under concurrency a count the ring really held (an enqueue
    /// in progress counts as done) at an instant during the call, so never
    /// above the slot count. Lockless, in every mode; retries while
    /// producers move `seq` under it.
    ///
    /// Reading `head` then `seq` once is no snapshot: between the two loads
    /// an object can go round the ring many times, and `seq - head` then
    /// counts it on every lap. Here `seq` is read on both sides of `head`:
    /// when both reads agree, no enqueue completed in between, so at the
    /// instant `head` was read the ring held `seq - head` objects.
    #[inline]
    pub fn len(&self) -> usize {
        loop {
            // Acquire pairs with the Release `seq` store in `enqueue_bulk`
            // / `enqueue_one`: every `head` store that happens-before that
            // enqueue (e.g. the dequeue that took the object it puts back)
            // is visible to the `head` load below.
            let p = self.hdr.producer.seq.load(Ordering::Acquire);
            // Acquire pairs with the Release store of `head` in `consume`:
            // the consumer read the fills below `h`, which follow the
            // producer's `seq` stores, so the `seq` read next is not
            // behind `h`.
            let h = self.hdr.consumer.head.load(Ordering::Acquire);
            // Relaxed: ordered after the Acquire `head` load above.
            let p2 = self.hdr.producer.seq.load(Ordering::Relaxed);
            let n = p2.wrapping_sub(h);
            if p == p2 && n <= self.slots() {
                return n;
            }
            spin_hint();
        }
    }
}

/// Whether any of `objs` is null: one OR over the bulk, no branch per
/// object (two vector operations per two pointers with SSE4.1's 64-bit
/// compare, the handler's x86-64-v2 baseline).
#[inline(always)]
fn any_null(objs: &[*mut c_void]) -> bool {
    // Eight at a time, so that the vector loop carries four independent
    // accumulators per iteration.
    let mut c = objs.chunks_exact(8);
    let mut z = false;
    for ch in &mut c {
        z |= ch.iter().fold(false, |z, o| z | o.is_null());
    }
    z | c.remainder().iter().fold(false, |z, o| z | o.is_null())
}

/// Fills the slots of `run` with `objs` (same length), in sequence order,
/// eight at a time. Each store is Release and pairs with the Acquire loads in
/// `dequeue_bulk`, `dequeue_burst` and `is_empty`: an object's contents and
/// every earlier fill are visible to whoever sees its pointer.
#[inline(always)]
fn fill_run(run: &[AtomicUsize], objs: &[*mut c_void]) {
    debug_assert_eq!(run.len(), objs.len());
    let mut d = run.chunks_exact(8);
    let mut s = objs.chunks_exact(8);
    for (d, s) in (&mut d).zip(&mut s) {
        for (d, &s) in d.iter().zip(s) {
            // Release: see above, in sequence order.
            d.store(s as usize, Ordering::Release);
        }
    }
    for (d, &s) in d.remainder().iter().zip(s.remainder()) {
        // Release: as above.
        d.store(s as usize, Ordering::Release);
    }
}

/// Copies the (filled) slots of `run` into `out` (same length), four at a
/// time, with plain (non-atomic) reads that the compiler may widen to
/// vector loads. That is race-free: every write to these slots
/// happens-before the caller's Acquire load of the bulk's last slot (the
/// fills, through the Release fill of that slot, in sequence order; older
/// writes through the locks), and none can follow until the caller, who
/// holds the consumer side, clears them (a producer writes only slots it
/// reads as null). Concurrent atomic *loads* (`is_empty`, `len`) are reads
/// too, so they do not race with these.
#[cfg(not(loom))]
#[inline(always)]
fn copy_run(run: &[AtomicUsize], out: &mut [*mut c_void]) {
    debug_assert_eq!(run.len(), out.len());
    let n = run.len().min(out.len());
    // `AtomicUsize` has the size, alignment and bit validity of `usize`,
    // hence of a pointer-sized integer read as a pointer.
    let src = run.as_ptr().cast::<*mut c_void>();
    let dst = out.as_mut_ptr();
    let mut i = 0;
    while i + 4 <= n {
        // SAFETY: `i + 4 <= n` is inside both slices, which do not overlap
        // (`out` is the caller's exclusive buffer); the reads are race-free
        // (see above) and read through `UnsafeCell`s, as the shared
        // reference to atomics allows.
        unsafe { core::ptr::copy_nonoverlapping(src.add(i), dst.add(i), 4) };
        i += 4;
    }
    while i < n {
        // SAFETY: as above, for one slot.
        unsafe { *dst.add(i) = src.add(i).read() };
        i += 1;
    }
}

/// Under loom every slot access is a modelled atomic load. Relaxed: the
/// caller's Acquire load of the bulk's last slot made every fill visible.
#[cfg(loom)]
#[inline(always)]
fn copy_run(run: &[AtomicUsize], out: &mut [*mut c_void]) {
    debug_assert_eq!(run.len(), out.len());
    for (s, d) in run.iter().zip(out) {
        // Relaxed: see above.
        *d = s.load(Ordering::Relaxed) as *mut c_void;
    }
}

/// Clears the slots of `run` in sequence order, four at a time. Release
/// pairs with the Acquire slot loads of the producer's room check (which
/// relies on the order, see `PtrRing::enqueue_bulk`) and of `is_empty`
/// (whoever sees a null also sees the `head` store that precedes it in
/// `PtrRing::consume`).
#[inline(always)]
fn clear_run(run: &[AtomicUsize]) {
    let mut d = run.chunks_exact(4);
    for d in &mut d {
        // Release: see above, in sequence order.
        d[0].store(0, Ordering::Release);
        d[1].store(0, Ordering::Release);
        d[2].store(0, Ordering::Release);
        d[3].store(0, Ordering::Release);
    }
    for d in d.remainder() {
        // Release: as above.
        d.store(0, Ordering::Release);
    }
}

/// A ring on the Rust heap, for tests, benchmarks and users outside DPDK.
pub struct HeapRing {
    mem: NonNull<u8>,
    slots: usize,
    layout: std::alloc::Layout,
}

// SAFETY: the ring it owns is `Sync`; the allocation is not thread-affine.
unsafe impl Send for HeapRing {}
// SAFETY: as above, all access goes through `&PtrRing`.
unsafe impl Sync for HeapRing {}

impl HeapRing {
    /// A heap ring with the given layout.
    pub fn new(layout: RingLayout) -> HeapRing {
        let alloc = std::alloc::Layout::from_size_align(layout.bytes(), layout.align())
            .expect("RingLayout gives a valid allocation layout");
        // SAFETY: `alloc` has non-zero size (the header alone is non-empty).
        let raw = unsafe { std::alloc::alloc_zeroed(alloc) };
        let Some(mem) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(alloc);
        };
        // SAFETY: freshly allocated with the size and alignment of a layout
        // only `RingLayout`'s constructors can make, owned by the returned
        // value until `drop`.
        unsafe { PtrRing::init(mem, &layout) };
        HeapRing {
            mem,
            slots: layout.slots(),
            layout: alloc,
        }
    }

    /// A heap ring holding `capacity` objects with the default batch.
    pub fn with_capacity(capacity: usize) -> Result<HeapRing, RingError> {
        RingLayout::for_capacity(capacity)
            .map(HeapRing::new)
            .ok_or(RingError::BadCapacity {
                capacity,
                batch: DEFAULT_BATCH,
                max: MAX_CAPACITY,
            })
    }
}

impl core::ops::Deref for HeapRing {
    type Target = PtrRing;
    #[inline(always)]
    fn deref(&self) -> &PtrRing {
        // SAFETY: initialised in `new` with `slots` slots, freed only in
        // `drop`; `mem` comes from the allocator and covers the whole ring.
        unsafe { PtrRing::from_raw(self.mem, self.slots) }
    }
}

/// Drops a ring header's atomics in place (loom's hold model state).
///
/// # Safety
/// `at` holds a ring header that nothing uses afterwards.
#[cfg(loom)]
pub(crate) unsafe fn drop_header_in_place(at: *mut u8) {
    // SAFETY: the caller's guarantee.
    unsafe { core::ptr::drop_in_place(at.cast::<RingHeader>()) };
}

impl Drop for HeapRing {
    fn drop(&mut self) {
        #[cfg(loom)]
        {
            // Loom's atomics own model state: drop them in place.
            let hdr = self.mem.as_ptr().cast::<RingHeader>();
            // SAFETY: initialised in `new`; nothing uses them after this.
            unsafe {
                let s = self.mem.as_ptr().add(HEADER_BYTES).cast::<AtomicUsize>();
                for i in 0..self.slots {
                    core::ptr::drop_in_place(s.add(i));
                }
                core::ptr::drop_in_place(hdr);
            }
        }
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.mem.as_ptr(), self.layout) };
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn any_null_finds_a_null_anywhere_and_only_a_null() {
        let words = [
            1usize,
            2,
            0x7fff_ffff_ffff,
            usize::MAX,
            1 << (usize::BITS - 1),
            (1 << (usize::BITS - 1)) + 1,
        ];
        for n in 0..40usize {
            let objs: Vec<*mut c_void> = (0..n)
                .map(|i| words[i % words.len()] as *mut c_void)
                .collect();
            assert!(!any_null(&objs), "no null among {n}");
            for k in 0..n {
                let mut with = objs.clone();
                with[k] = core::ptr::null_mut();
                assert!(any_null(&with), "null at {k} of {n}");
            }
        }
    }

    /// `attach` (here and in the pool) reads a magic through a raw pointer
    /// that assumes `CachePadded` keeps its value at offset 0.
    #[test]
    fn cache_padded_value_at_offset_zero() {
        let c = CachePadded::new(0u64);
        assert_eq!(
            &*c as *const u64 as usize,
            &c as *const CachePadded<u64> as usize
        );
    }
}
