//! The lockless observers, exact in the sense each documents and callable
//! from any thread at any time, in every mode.

use super::PtrRing;
use crate::sync::{spin_hint, Ordering};

impl PtrRing {
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
            // Acquire pairs with the Release store in `publish_head`.
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

    /// Objects ever enqueued and dequeued, `(enqueued, dequeued)`, each
    /// wrapping at `usize::MAX`: every successful enqueue or dequeue
    /// advances one of them, so two equal readings mean that none happened
    /// in between (the counters are read one after the other, not as one
    /// snapshot). A newest-first dequeue moves `seq` back and counts its
    /// objects on a total of its own, added to both.
    ///
    /// # Examples
    /// ```
    /// use core::ffi::c_void;
    /// use mempool::HeapRing;
    ///
    /// let ring = HeapRing::with_capacity(4)?;
    /// let obj = core::ptr::NonNull::<u64>::dangling().as_ptr().cast::<c_void>();
    /// ring.enqueue_bulk(&[obj, obj])?;
    /// let mut out = [core::ptr::null_mut(); 1];
    /// ring.dequeue_bulk(&mut out)?;
    /// assert_eq!(ring.totals(), (2, 1));
    /// # Ok::<(), mempool::RingError>(())
    /// ```
    #[inline]
    pub fn totals(&self) -> (usize, usize) {
        // Relaxed: each counter's own value is all the caller compares;
        // no other memory is read on the strength of it.
        let back = self.hdr.producer.taken_back.load(Ordering::Relaxed);
        (
            self.hdr
                .producer
                .seq
                .load(Ordering::Relaxed)
                .wrapping_add(back),
            self.hdr
                .consumer
                .head
                .load(Ordering::Relaxed)
                .wrapping_add(back),
        )
    }

    /// [`totals`](PtrRing::totals) read for an inflight count, `(enqueued,
    /// dequeued)`: `seq` first, then `head`, both Acquire. An object's
    /// dequeue happens-before its enqueue (whoever took it handed it back),
    /// so a reading that counts an enqueue also counts the dequeue before
    /// it: `populated + dequeued - enqueued` is never below the objects out
    /// at the instant `head` was read. An enqueue counts here from its
    /// `seq` store, before its fills: the caller that releases memory on
    /// the count waits for those ([`fills_done`](PtrRing::fills_done),
    /// `wait_producers`). A producer's repair moves `seq` back over what a
    /// dead holder never filled, which then counts as out again.
    ///
    /// Both totals include the objects ever taken back by newest-first
    /// dequeues (`newest.rs`), one reading added to both, so that the
    /// difference, and with it the inflight count, is `seq - head` as
    /// above, while each total still counts every object handed out and
    /// taken back (a take-back moves `seq` back, not `head`). A reading
    /// taken while a take-back moves `seq` and its count may have one of
    /// the two totals off by that take-back's size, never the difference.
    #[inline]
    pub(crate) fn totals_for_inflight(&self) -> (usize, usize) {
        // Acquire pairs with the Release `seq` store in `publish_seq`
        // (`produce_one`, `produce_small`): every `head` store that
        // happens-before that enqueue is visible to the load below.
        let enqueued = self.hdr.producer.seq.load(Ordering::Acquire);
        // Acquire pairs with the Release store in `publish_head`.
        let dequeued = self.hdr.consumer.head.load(Ordering::Acquire);
        // Relaxed: a count added to both totals; no other memory is read
        // on the strength of it.
        let back = self.hdr.producer.taken_back.load(Ordering::Relaxed);
        (enqueued.wrapping_add(back), dequeued.wrapping_add(back))
    }

    /// Whether the enqueues counted so far have made their fills: the slot
    /// before `seq` holds an object, or the ring holds nothing. Fills happen
    /// in sequence order, each enqueue after the one before it, so the last
    /// claimed slot full means every claimed slot is. Lockless; exact for a
    /// ring no enqueue or dequeue starts on while it runs (a pool whose
    /// objects are all home: nothing can start but a caller's bug).
    pub(crate) fn fills_done(&self) -> bool {
        // Acquire pairs with the Release `seq` store in `publish_seq`.
        let p = self.hdr.producer.seq.load(Ordering::Acquire);
        // Acquire pairs with the Release store in `publish_head`.
        let h = self.hdr.consumer.head.load(Ordering::Acquire);
        // Nothing claimed and not yet taken (wrapping distance 0, or a
        // `head` read after later enqueues and dequeues: beyond the slots).
        let n = p.wrapping_sub(h);
        if n == 0 || n > self.slots() {
            return true;
        }
        // Acquire pairs with the Release fill of that slot: the fills
        // before it in sequence order are visible too.
        self.slot(p.wrapping_sub(1)).load(Ordering::Acquire) != 0
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
    ///
    /// # Examples
    /// ```
    /// use core::ffi::c_void;
    /// use mempool::HeapRing;
    ///
    /// let ring = HeapRing::with_capacity(8)?;
    /// assert!(ring.is_empty() && ring.len() == 0);
    /// let obj = &1u64 as *const u64 as *mut c_void;
    /// ring.enqueue_bulk(&[obj, obj])?; // the ring takes any non-null address
    /// assert_eq!(ring.len(), 2);
    /// assert!(!ring.is_empty());
    /// # Ok::<(), mempool::RingError>(())
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        loop {
            // Acquire pairs with the Release `seq` store in `enqueue_bulk`
            // / `enqueue_one`: every `head` store that happens-before that
            // enqueue (e.g. the dequeue that took the object it puts back)
            // is visible to the `head` load below.
            let p = self.hdr.producer.seq.load(Ordering::Acquire);
            // Acquire pairs with the Release store of `head` in `publish_head`:
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
