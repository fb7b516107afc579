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
//! * The consumer advances `head` (next valid entry) and only once
//!   `head - tail >= batch` does it clear `[tail, head)`, in reverse order, so
//!   that the line a waiting producer polls (at `tail`) is written last.
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

use core::ffi::c_void;
use core::ptr::NonNull;

use crossbeam_utils::CachePadded;

use crate::sync::{spin_hint, AtomicU64, AtomicUsize, Ordering, SpinLock};

/// Batch of consumer invalidation for rings of at least [`BATCH_MIN_CAPACITY`]
/// objects: two 64-byte cache lines of pointers, as in the kernel.
pub const DEFAULT_BATCH: usize = 16;
/// Below this capacity the ring clears every consumed slot at once (batch 1),
/// so that small rings do not pay for the lag.
pub const BATCH_MIN_CAPACITY: usize = 64;
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

/// Size and shape of a ring, computed before any memory exists so the caller
/// can reserve it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingLayout {
    /// Objects the ring is guaranteed to hold.
    pub capacity: usize,
    /// Consumer invalidation batch.
    pub batch: usize,
    /// Number of slots (power of two, `>= capacity + batch - 1`).
    pub slots: usize,
    /// Bytes of memory the ring needs.
    pub bytes: usize,
    /// Alignment the memory must have.
    pub align: usize,
}

impl RingLayout {
    /// Layout for a ring that must hold `capacity` objects, with the default
    /// batch (16, or 1 below [`BATCH_MIN_CAPACITY`]).
    pub const fn for_capacity(capacity: usize) -> Option<RingLayout> {
        let batch = if capacity >= BATCH_MIN_CAPACITY {
            DEFAULT_BATCH
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
        let bytes = core::mem::size_of::<PtrRing>() + slots * core::mem::size_of::<AtomicUsize>();
        Some(RingLayout {
            capacity,
            batch,
            slots,
            bytes,
            align: core::mem::align_of::<PtrRing>(),
        })
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
    lock: SpinLock,
    /// Next slot to fill. Written under `lock`; read locklessly by `len`.
    seq: AtomicUsize,
}

#[repr(C)]
struct Consumer {
    lock: SpinLock,
    /// Next valid entry. Written under `lock`; read locklessly by `is_empty`
    /// and `len`.
    head: AtomicUsize,
    /// Next entry to invalidate; `tail <= head`, `head - tail < batch` between
    /// operations. Only touched under `lock`.
    tail: AtomicUsize,
}

#[repr(C)]
struct Config {
    magic: AtomicU64,
    capacity: usize,
    batch: usize,
    mask: usize,
}

/// The ring header; `slots` slot words follow it in the same memory.
/// Holds no pointers, so every process that maps the memory can use it.
#[repr(C)]
pub struct PtrRing {
    producer: CachePadded<Producer>,
    consumer: CachePadded<Consumer>,
    config: CachePadded<Config>,
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
    /// * `mem` is valid for writes of `layout.bytes` bytes, aligned to
    ///   `layout.align`, and not used for anything else while the ring lives;
    /// * `layout` comes from [`RingLayout`]'s constructors;
    /// * the memory outlives `'a`.
    pub unsafe fn init<'a>(mem: NonNull<u8>, layout: &RingLayout) -> &'a PtrRing {
        let hdr = mem.as_ptr().cast::<PtrRing>();
        // SAFETY: the caller guarantees `mem` is writable, aligned and large
        // enough for the header and `layout.slots` slot words after it.
        unsafe {
            hdr.write(PtrRing {
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
                }),
            });
            let slots = hdr.add(1).cast::<AtomicUsize>();
            for i in 0..layout.slots {
                slots.add(i).write(AtomicUsize::new(0));
            }
            let ring = &*hdr;
            // Release pairs with the Acquire load in `attach`: a process that
            // sees the magic sees an initialised ring.
            ring.config.magic.store(RING_MAGIC, Ordering::Release);
            ring
        }
    }

    /// Returns the ring already initialised in `mem` (by this or another
    /// process).
    ///
    /// # Safety
    /// `mem` points to memory that [`PtrRing::init`] initialised (or at least
    /// to `size_of::<PtrRing>()` readable bytes, checked by magic) and that
    /// outlives `'a`.
    pub unsafe fn attach<'a>(mem: NonNull<u8>) -> Result<&'a PtrRing, RingError> {
        // SAFETY: the caller guarantees the header bytes are readable and live.
        let ring = unsafe { &*mem.as_ptr().cast::<PtrRing>() };
        // Acquire pairs with the Release store at the end of `init`.
        if ring.config.magic.load(Ordering::Acquire) != RING_MAGIC {
            return Err(RingError::NotARing {
                addr: mem.as_ptr() as usize,
            });
        }
        Ok(ring)
    }

    /// Objects the ring is guaranteed to hold.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.config.capacity
    }

    /// Consumer invalidation batch.
    #[inline]
    pub fn batch(&self) -> usize {
        self.config.batch
    }

    /// Number of slots.
    #[inline]
    pub fn slots(&self) -> usize {
        self.config.mask + 1
    }

    #[inline(always)]
    fn slot(&self, seq: usize) -> &AtomicUsize {
        // SAFETY: `init` wrote `mask + 1` slot words right after the header,
        // and `seq & mask` is below that.
        unsafe {
            &*(self as *const PtrRing)
                .add(1)
                .cast::<AtomicUsize>()
                .add(seq & self.config.mask)
        }
    }

    /// Enqueues all of `objs`, or none of them.
    ///
    /// Fails with [`RingError::NoSpace`] when any slot needed is still full
    /// (occupied or consumed but not yet invalidated), with
    /// [`RingError::NullObject`] for a null pointer and
    /// [`RingError::BulkTooLarge`] above capacity. An empty slice succeeds.
    #[inline]
    pub fn enqueue_bulk(&self, objs: &[*mut c_void]) -> Result<(), RingError> {
        let n = objs.len();
        if n == 0 {
            return Ok(());
        }
        if n > self.config.capacity {
            return Err(RingError::BulkTooLarge {
                requested: n,
                capacity: self.config.capacity,
            });
        }
        let _guard = self.producer.lock.lock();
        // Relaxed: `seq` is only written under the producer lock we hold.
        let p = self.producer.seq.load(Ordering::Relaxed);
        for (i, obj) in objs.iter().enumerate() {
            if obj.is_null() {
                return Err(RingError::NullObject { index: i });
            }
            // Relaxed: a full slot turns free only by the consumer's
            // invalidation store, and we take no data from it; coherence of
            // this one slot orders our fill below after that store.
            if self.slot(p.wrapping_add(i)).load(Ordering::Relaxed) != 0 {
                return Err(RingError::NoSpace { requested: n });
            }
        }
        // Published before the fills, so a consumer can never be seen ahead
        // of `seq` (keeps `len` non-negative); the Release fills below order
        // it.
        self.producer
            .seq
            .store(p.wrapping_add(n), Ordering::Relaxed);
        for (i, &obj) in objs.iter().enumerate() {
            // Release pairs with the Acquire loads in `dequeue_bulk`,
            // `dequeue_burst` and `is_empty`: the object's contents and every
            // earlier fill are visible to whoever sees this pointer.
            self.slot(p.wrapping_add(i))
                .store(obj as usize, Ordering::Release);
        }
        Ok(())
    }

    /// Dequeues exactly `out.len()` objects into `out`, or none.
    ///
    /// Fails with [`RingError::NotEnough`] (ring and `out` unchanged) when
    /// fewer are in the ring, with [`RingError::BulkTooLarge`] above capacity.
    /// An empty slice succeeds.
    #[inline]
    pub fn dequeue_bulk(&self, out: &mut [*mut c_void]) -> Result<(), RingError> {
        let n = out.len();
        if n == 0 {
            return Ok(());
        }
        if n > self.config.capacity {
            return Err(RingError::BulkTooLarge {
                requested: n,
                capacity: self.config.capacity,
            });
        }
        let _guard = self.consumer.lock.lock();
        // Relaxed: `head` is only written under the consumer lock we hold.
        let h = self.consumer.head.load(Ordering::Relaxed);
        // Acquire pairs with the Release fill in `enqueue_bulk`. Slots are
        // filled in sequence order (one producer at a time, in order), so the
        // last one being full means all `n` are, and their fills happen-before
        // this load. `n <= capacity` keeps `h + n - 1` clear of the previous
        // lap's consumed-but-not-invalidated slots (`head - tail < batch`).
        let last = self.slot(h.wrapping_add(n - 1)).load(Ordering::Acquire);
        if last == 0 {
            return Err(RingError::NotEnough { requested: n });
        }
        for (i, o) in out[..n - 1].iter_mut().enumerate() {
            // Relaxed: made visible by the Acquire load of the last slot.
            let v = self.slot(h.wrapping_add(i)).load(Ordering::Relaxed);
            debug_assert_ne!(v, 0, "hole in a filled ptr_ring run");
            *o = v as *mut c_void;
        }
        out[n - 1] = last as *mut c_void;
        self.consume(h, h.wrapping_add(n));
        Ok(())
    }

    /// Dequeues up to `out.len()` objects into the front of `out` and returns
    /// how many (0 when empty).
    #[inline]
    pub fn dequeue_burst(&self, out: &mut [*mut c_void]) -> usize {
        let max = out.len().min(self.config.capacity);
        if max == 0 {
            return 0;
        }
        let _guard = self.consumer.lock.lock();
        // Relaxed: `head` is only written under the consumer lock we hold.
        let h = self.consumer.head.load(Ordering::Relaxed);
        let mut got = 0;
        while got < max {
            // Acquire pairs with the Release fill in `enqueue_bulk`.
            let v = self.slot(h.wrapping_add(got)).load(Ordering::Acquire);
            if v == 0 {
                break;
            }
            out[got] = v as *mut c_void;
            got += 1;
        }
        if got > 0 {
            self.consume(h, h.wrapping_add(got));
        }
        got
    }

    /// Publishes the new head, then invalidates a batch when due.
    /// Caller holds the consumer lock and has read slots `[old_head, new_head)`.
    #[inline(always)]
    fn consume(&self, _old_head: usize, new_head: usize) {
        // Release pairs with the Acquire head load in `len`/`is_empty`. It is
        // stored before any slot is cleared: see `is_empty`.
        self.consumer.head.store(new_head, Ordering::Release);
        // Relaxed: `tail` is only touched under the consumer lock.
        let tail = self.consumer.tail.load(Ordering::Relaxed);
        if new_head.wrapping_sub(tail) >= self.config.batch {
            self.invalidate(tail, new_head);
        }
    }

    /// Clears `[tail, head)` in reverse order, so the slot at `tail` (the one
    /// a producer waiting for room polls) is written last.
    #[inline(always)]
    fn invalidate(&self, tail: usize, head: usize) {
        let mut s = head;
        while s != tail {
            s = s.wrapping_sub(1);
            // Release pairs with the Acquire slot load in `is_empty`: whoever
            // sees this null also sees the `head` store in `consume` that
            // precedes it. Producers need nothing from it (see enqueue_bulk).
            self.slot(s).store(0, Ordering::Release);
        }
        self.consumer.tail.store(head, Ordering::Relaxed);
    }

    /// `true` only if the ring held no object at some instant during the
    /// call. Lockless.
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
    /// there is no ABA. Model-checked in `tests/loom_ptr_ring.rs`.
    pub fn is_empty(&self) -> bool {
        loop {
            // Acquire pairs with the Release store in `consume`.
            let h = self.consumer.head.load(Ordering::Acquire);
            // Acquire pairs with the Release fill in `enqueue_bulk` and with
            // the Release clear in `invalidate`.
            if self.slot(h).load(Ordering::Acquire) != 0 {
                return false;
            }
            // Relaxed: ordered after the Acquire slot load above; if that
            // load saw a clear, the head store before the clear is visible.
            if self.consumer.head.load(Ordering::Relaxed) == h {
                return true;
            }
            spin_hint();
        }
    }

    /// Number of objects in the ring. Exact when no operation is in progress;
    /// under concurrency a value the ring held at some instant between the
    /// two loads, never above the slot count.
    #[inline]
    pub fn len(&self) -> usize {
        // Acquire pairs with the Release store of `head` in `consume`; that
        // store follows (through the Release fill it consumed) the producer's
        // `seq` store, so `seq` read next is never behind `h`.
        let h = self.consumer.head.load(Ordering::Acquire);
        let p = self.producer.seq.load(Ordering::Relaxed);
        let n = p.wrapping_sub(h);
        debug_assert!(n <= self.slots(), "ptr_ring len {n} above slot count");
        n.min(self.slots())
    }
}

/// A ring on the Rust heap, for tests, benchmarks and users outside DPDK.
pub struct HeapRing {
    mem: NonNull<u8>,
    layout: std::alloc::Layout,
}

// SAFETY: the ring it owns is `Sync`; the allocation is not thread-affine.
unsafe impl Send for HeapRing {}
// SAFETY: as above, all access goes through `&PtrRing`.
unsafe impl Sync for HeapRing {}

impl HeapRing {
    /// A heap ring with the given layout.
    pub fn new(layout: RingLayout) -> HeapRing {
        let alloc = std::alloc::Layout::from_size_align(layout.bytes, layout.align)
            .expect("RingLayout gives a valid allocation layout");
        // SAFETY: `alloc` has non-zero size (the header alone is non-empty).
        let raw = unsafe { std::alloc::alloc_zeroed(alloc) };
        let Some(mem) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(alloc);
        };
        // SAFETY: freshly allocated with the layout's size and alignment, owned
        // by the returned value until `drop`.
        unsafe { PtrRing::init(mem, &layout) };
        HeapRing { mem, layout: alloc }
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
    fn deref(&self) -> &PtrRing {
        // SAFETY: initialised in `new`, freed only in `drop`.
        unsafe { &*self.mem.as_ptr().cast::<PtrRing>() }
    }
}

impl Drop for HeapRing {
    fn drop(&mut self) {
        #[cfg(loom)]
        {
            // Loom's atomics own model state: drop them in place.
            let slots = self.slots();
            let hdr = self.mem.as_ptr().cast::<PtrRing>();
            // SAFETY: initialised in `new`; nothing uses them after this.
            unsafe {
                let s = hdr.add(1).cast::<AtomicUsize>();
                for i in 0..slots {
                    core::ptr::drop_in_place(s.add(i));
                }
                core::ptr::drop_in_place(hdr);
            }
        }
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.mem.as_ptr(), self.layout) };
    }
}
