//! A batched, slot-signalled ring of object pointers, after the Linux kernel's
//! `ptr_ring`, placed in memory the caller provides (a DPDK memzone shared by
//! primary and secondary processes).
//!
//! # Protocol
//!
//! * A slot holding `0` is free, a slot holding an address is full. Producers
//!   and consumers never read each other's index: the slots are the signal.
//! * Indices are monotonically increasing sequence numbers (`usize`, never
//!   reset); a slot is `seq & mask`. The ring size is a power of two. The
//!   one exception, a newest-first dequeue, moves `seq` back over the
//!   objects it takes, holding both locks (`newest.rs`).
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
//! dequeuers take the same ones (objects delivered twice), and it is
//! undefined behaviour: the bulk copy-out reads slots with plain loads, which
//! then race with the other side's stores. [`PtrRing::is_empty`] and [`PtrRing::len`] are lockless in every mode
//! and may be called from any thread at any time.
//!
//! Since the ring's safe methods rely on the contract, a single-sided ring
//! is only ever made by `unsafe` code that promises it: the layout's
//! [`RingLayout::with_single_producer`] / [`RingLayout::with_single_consumer`],
//! or `PoolCore::init` for a pool configured with the flags. A layout that
//! safe code can reach (`PoolLayout::ring`) is always MP/MC.
//!
//! # Files
//!
//! * this one: [`RingError`], the ring's memory format (the header, the
//!   slots) and [`PtrRing::init`] / [`PtrRing::attach`];
//! * `ring_layout.rs`: [`RingLayout`], the size, shape and mode of a ring before
//!   its memory exists;
//! * `enqueue.rs`, `dequeue.rs`: the producer and the consumer side;
//! * `newest.rs`: dequeues that take the newest objects back from the
//!   producer's end, and enqueues that name their caller;
//! * `len.rs`: the lockless observers [`PtrRing::is_empty`] and
//!   [`PtrRing::len`];
//! * `repair.rs`: taking a side over from a process that died holding its
//!   lock, and what the taker repairs;
//! * `trampoline.rs`: the register-preserving call into the lock's cold
//!   path (x86-64);
//! * `runs.rs`: the loops over runs of slots (null scan, fill, copy, clear);
//! * `heap_ring.rs`: [`HeapRing`], a ring on the Rust heap.

mod dequeue;
mod enqueue;
mod heap_ring;
mod len;
mod newest;
mod repair;
mod ring_layout;
mod runs;
mod small;
#[cfg(ring_asm)]
mod trampoline;

pub use heap_ring::HeapRing;
pub use ring_layout::RingLayout;

use core::ptr::NonNull;

use crossbeam_utils::CachePadded;

use crate::sync::{AtomicU32, AtomicU64, AtomicUsize, Ordering, SpinLock};

/// Batch of consumer invalidation for rings of at least [`BATCH_MIN_CAPACITY`]
/// objects: two 64-byte cache lines of pointers, as in the kernel.
pub const DEFAULT_BATCH: usize = 16;
/// Below this capacity the ring clears every consumed slot at once (batch 1),
/// so that small rings do not pay for the lag.
pub const BATCH_MIN_CAPACITY: usize = 64;
/// Largest capacity accepted (slots are indexed by `usize`, sizes are powers of two).
pub const MAX_CAPACITY: usize = 1 << 30;
/// Bulks of 2 up to this many objects take the ring's small-bulk path
/// (`produce_small`, `consume_small`): one contiguous run where the range
/// does not wrap (slot by slot, or run by run, where it does), no run split,
/// no `memcpy` or prefetch test, and a get's own run cleared where it is
/// the whole due range.
/// Below a cache line of pointers that setup cost more than the copy
/// itself. Under loom, 2: the models' bulks of 3 and 4 then still take the
/// big path, and their bulks of 2 this one.
#[cfg(not(loom))]
pub const SMALL_BULK_MAX: usize = 8;
/// See above.
#[cfg(loom)]
pub const SMALL_BULK_MAX: usize = 2;

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

#[repr(C)]
struct Producer {
    /// Serialises producers; unused in single-producer mode.
    lock: SpinLock,
    /// Times a producer took `lock` over from a dead holder (in the padding
    /// between `lock` and `seq`: the fast path's offsets do not move).
    takeovers: AtomicU32,
    /// Next slot to fill. Written only by the producer side (under `lock`,
    /// or by the single producer), and moved back by a newest-first
    /// dequeue (`newest.rs`, holding both locks); read locklessly by `len`.
    seq: AtomicUsize,
    /// The id the last [`PtrRing::enqueue_bulk_as`] named ([`NOBODY`]
    /// before the first; the plain enqueues leave it). Written under the
    /// producer side; a hint, read locklessly.
    last_putter: AtomicU32,
    /// Objects ever taken back by newest-first dequeues (wrapping), so
    /// that [`PtrRing::totals`] still only grow. Written under both locks.
    taken_back: AtomicUsize,
}

/// [`PtrRing::last_putter`] when no enqueue named its caller.
pub const NOBODY: u32 = u32::MAX;

#[repr(C)]
struct Consumer {
    /// Serialises consumers; unused in single-consumer mode.
    lock: SpinLock,
    /// Times a consumer took `lock` over from a dead holder (padding, as
    /// the producer's).
    takeovers: AtomicU32,
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

/// Alignment of every ring's memory ([`RingLayout::align`]).
pub(crate) const ALIGN: usize = core::mem::align_of::<RingHeader>();

/// The ring: its header, then `slots` slot words, in the caller's memory.
/// Holds no pointers, so every process that maps the memory can use it.
///
/// A dynamically sized type: a `&PtrRing` covers the header *and* the
/// slots, so every slot access is derived from a reference whose
/// provenance spans the whole ring (no pointer reaches past the memory its
/// reference covers). The slice length is the slot count; the code indexes
/// with `seq & mask` from the read-only configuration.
///
/// # Examples
/// A ring in memory the caller provides (a DPDK memzone in the handler;
/// here the Rust heap, as [`HeapRing`] does it):
/// ```
/// use core::ptr::NonNull;
/// use std::alloc::{alloc_zeroed, dealloc, Layout};
///
/// use mempool::{PtrRing, RingLayout};
///
/// let layout = RingLayout::for_capacity(100).unwrap();
/// let alloc = Layout::from_size_align(layout.bytes(), layout.align()).unwrap();
/// // SAFETY: the size is not zero.
/// let mem = NonNull::new(unsafe { alloc_zeroed(alloc) }).unwrap();
/// // SAFETY: `mem` holds `layout.bytes()` bytes aligned to `layout.align()`,
/// // used for nothing else and freed only after the ring's last use.
/// let ring = unsafe { PtrRing::init(mem, &layout) };
/// let obj = NonNull::<u64>::dangling().as_ptr().cast();
/// ring.enqueue_bulk(&[obj])?;
///
/// // Another process that maps the same memory finds the ring by its magic.
/// // SAFETY: as above; `init` ran on this memory.
/// let same = unsafe { PtrRing::attach(mem) }?;
/// assert_eq!((same.capacity(), same.len()), (100, 1));
///
/// // SAFETY: allocated above with `alloc`; the ring is not used again.
/// unsafe { dealloc(mem.as_ptr(), alloc) };
/// # Ok::<(), mempool::RingError>(())
/// ```
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
                    takeovers: AtomicU32::new(0),
                    seq: AtomicUsize::new(0),
                    last_putter: AtomicU32::new(NOBODY),
                    taken_back: AtomicUsize::new(0),
                }),
                consumer: CachePadded::new(Consumer {
                    lock: SpinLock::new(),
                    takeovers: AtomicU32::new(0),
                    head: AtomicUsize::new(0),
                    tail: AtomicUsize::new(0),
                }),
                config: CachePadded::new(Config {
                    magic: AtomicU64::new(0),
                    capacity: layout.capacity(),
                    batch: layout.batch(),
                    mask: layout.slots() - 1,
                    single_producer: layout.single_producer(),
                    single_consumer: layout.single_consumer(),
                }),
            });
            let slots = mem.as_ptr().add(HEADER_BYTES).cast::<AtomicUsize>();
            for i in 0..layout.slots() {
                slots.add(i).write(AtomicUsize::new(0));
            }
            let ring = Self::from_raw(mem, layout.slots());
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

    /// [`RingError::BulkTooLarge`] for a bulk of `n` above capacity: no
    /// bulk of it could ever succeed.
    #[inline(always)]
    fn fits(&self, n: usize) -> Result<(), RingError> {
        if n > self.hdr.config.capacity {
            return Err(RingError::BulkTooLarge {
                requested: n,
                capacity: self.hdr.config.capacity,
            });
        }
        Ok(())
    }

    #[inline(always)]
    fn slot(&self, seq: usize) -> &AtomicUsize {
        // SAFETY: `init` wrote `mask + 1` slot words, the length of
        // `self.slots`, and `seq & mask` is below that.
        unsafe { &*self.slots.as_ptr().add(seq & self.hdr.config.mask) }
    }

    /// Whether every slot of sequence numbers `[start, start + n)`
    /// (`1 <= n <= slots`) reads full (`full`) or free (`!full`), judged
    /// from the last one: fills and clears each happen in sequence order,
    /// so the last slot of a range speaks for the whole range. A paired
    /// store (`fill_run`, `clear_run`) may show its upper half before its
    /// lower one, so where the last slot is an upper half its partner
    /// (inside the range when `n >= 2`) is read too. Acquire (both loads)
    /// pairs with the Release fills (`fill_run`, `produce_one`) or clears
    /// (`clear_run`, `clear_inline`): whoever acts on the range sees every
    /// write that made it read so.
    #[inline(always)]
    fn reads_through(&self, start: usize, n: usize, full: bool) -> bool {
        self.reads_through_last(self.slot(start.wrapping_add(n - 1)), n, full)
    }

    /// [`reads_through`](PtrRing::reads_through) from the range's last
    /// slot, `last`.
    #[inline(always)]
    fn reads_through_last(&self, last: &AtomicUsize, n: usize, full: bool) -> bool {
        let reads = |s: &AtomicUsize| (s.load(Ordering::Acquire) != 0) == full;
        reads(last)
            && (n < 2 || !runs::paired_with_previous(last) || {
                // SAFETY: an upper half is never the slot array's first slot
                // (`paired_with_previous`), so the slot before it is in the
                // array: the slot of sequence number `start + n - 2`, with no
                // wrap to compute.
                let partner = unsafe { &*(last as *const AtomicUsize).sub(1) };
                reads(partner)
            })
    }

    /// [`reads_through`](PtrRing::reads_through) of a small bulk's range
    /// `[start, start + n)` (`2 <= n <= capacity`), and its slots as one
    /// run where it does not wrap, from one pair of masked indexes: the range does not wrap exactly when its last slot's index
    /// is not below its first's (`n` is below the slot count).
    #[inline(always)]
    fn small_range(&self, start: usize, n: usize, full: bool) -> SmallRange<'_> {
        let mask = self.hdr.config.mask;
        let first = start & mask;
        let last = start.wrapping_add(n - 1) & mask;
        // SAFETY: `last <= mask`, and the slot array has `mask + 1` slots.
        let last_slot = unsafe { &*self.slots.as_ptr().add(last) };
        if !self.reads_through_last(last_slot, n, full) {
            return SmallRange::NotReady;
        }
        if last < first {
            return SmallRange::Wraps;
        }
        // SAFETY: `first..=last` (`n` slots: no wrap) is inside the slot
        // array, all initialised by `init` and living as long as `self`.
        SmallRange::Run(unsafe { core::slice::from_raw_parts(self.slots.as_ptr().add(first), n) })
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
}

/// Drops a ring's atomics in place, slots then header (loom's atomics hold
/// model state).
///
/// # Safety
/// `mem` holds a ring of `slots` slots that nothing uses afterwards.
#[cfg(loom)]
pub(crate) unsafe fn drop_in_place(mem: *mut u8, slots: usize) {
    // SAFETY: the caller's guarantee: `init` wrote the header and `slots`
    // slot words after it.
    unsafe {
        let s = mem.add(HEADER_BYTES).cast::<AtomicUsize>();
        for i in 0..slots {
            core::ptr::drop_in_place(s.add(i));
        }
        core::ptr::drop_in_place(mem.cast::<RingHeader>());
    }
}

/// What [`PtrRing::small_range`] finds.
enum SmallRange<'a> {
    /// The range does not read as asked (not all full, or not all free).
    NotReady,
    /// It does, and these are its slots, in sequence order.
    Run(&'a [AtomicUsize]),
    /// It does, and it wraps past the end of the slot array.
    Wraps,
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

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
