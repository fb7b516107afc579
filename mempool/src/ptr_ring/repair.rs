//! Taking a ring side over from a process that died holding its lock.
//!
//! The side's lock names its holder ([`crate::owner`]); a waiter that finds
//! the holder dead takes the lock and, before its own operation, runs the
//! repair below under it. The slots are the signal, so what a dead holder
//! left is readable from them:
//!
//! * **Producer**: an enqueue publishes `seq` past its whole bulk, then
//!   fills the slots in sequence order. A producer that died has filled a
//!   prefix of its claim; consumers take exactly those (they stop at the
//!   first free slot). The taker moves `seq` back to the first unfilled
//!   slot of the claim, so the next fill continues the run without a hole.
//! * **Consumer**: a dequeue copies its objects out, publishes `head`, then
//!   clears consumed slots in sequence order. Dead before `head`: nothing
//!   changed, its objects are still in their slots. Dead after: the objects
//!   it took are gone with it, and some consumed slots may still be full;
//!   the taker clears those (never a slot a producer has refilled since)
//!   and sets `tail = head`.
//!
//! Nothing that was in the ring is lost; the objects the dead process had
//! taken out, or had not yet put in, are gone with it, as with any handler.

use core::ptr::NonNull;

use super::{PtrRing, RingError, RingHeader};
use crate::owner::{self, LockKind, Repair};
use crate::sync::{
    spin_hint, Check, Ordering, Poisoned, SpinGuard, SpinLock, POISONED, SPINS_PER_CHECK,
};

/// A ring side, as the cold path takes it (`u32` in a register).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
enum Side {
    Producer = 0,
    Consumer = 1,
}

/// [`ring_lock_cold`]'s answers.
const COLD_WAIT: u32 = 0;
const COLD_HELD: u32 = 1;
const COLD_POISONED: u32 = 2;

/// The cold path of a ring side's lock: [`SpinLock::check_holder`] with
/// the side's repair. Returns `COLD_WAIT` (keep spinning), `COLD_HELD`
/// (the caller now holds the lock, repaired) or `COLD_POISONED`.
///
/// # Safety
/// `tagged` is [`PtrRing::tagged`] of a live ring.
#[cold]
#[inline(never)]
pub(super) unsafe extern "C" fn ring_lock_cold(tagged: *const u8) -> u32 {
    let side = tagged as usize & 1;
    let mem = tagged.wrapping_sub(side).cast_mut();
    // SAFETY: the caller's guarantee: `mem` is a live, initialised ring
    // (with the provenance of a reference to all of it), whose slot count
    // its read-only configuration holds.
    let ring = unsafe {
        let hdr = mem.cast::<RingHeader>();
        let cfg = core::ptr::addr_of!((*hdr).config).cast::<super::Config>();
        PtrRing::from_raw(NonNull::new_unchecked(mem), (*cfg).mask + 1)
    };
    let me = owner::process_owner();
    let check = if side == Side::Producer as usize {
        ring.hdr.producer.lock.check_holder(
            me,
            LockKind::RingProducer,
            &mut Some(|| ring.repair_producer()),
        )
    } else {
        ring.hdr.consumer.lock.check_holder(
            me,
            LockKind::RingConsumer,
            &mut Some(|| ring.repair_consumer()),
        )
    };
    match check {
        Check::Wait => COLD_WAIT,
        Check::Held => COLD_HELD,
        Check::Poisoned => COLD_POISONED,
    }
}

/// Whether sequence number `a` is before `b` (indices wrap at `usize::MAX`;
/// every pair compared here is less than a lap of the slot array apart).
#[inline]
fn before(a: usize, b: usize) -> bool {
    (b.wrapping_sub(a) as isize) > 0
}

impl PtrRing {
    /// Takes the producer lock, taking it over (and repairing the producer
    /// side) from a dead holder. `Err` when an earlier repair failed: the
    /// side refuses every enqueue.
    #[inline(always)]
    pub(super) fn producer_lock(&self) -> Result<SpinGuard<'_>, Poisoned> {
        self.side_lock(&self.hdr.producer.lock, Side::Producer)
    }

    /// The consumer side's [`producer_lock`](PtrRing::producer_lock).
    #[inline(always)]
    pub(super) fn consumer_lock(&self) -> Result<SpinGuard<'_>, Poisoned> {
        self.side_lock(&self.hdr.consumer.lock, Side::Consumer)
    }

    /// One CAS when free; else spins with loads, inline, as a plain
    /// test-and-test-and-set lock does, and every `SPINS_PER_CHECK` spins
    /// (at once on a poisoned word) asks the cold path whether the holder
    /// died. The callers that inline the ring stay leaf functions with no
    /// stack frame: on x86-64 the cold path is reached through a call that
    /// preserves every register (`cold_check`), so nothing here is live
    /// across an ordinary call.
    #[inline(always)]
    fn side_lock<'a>(&'a self, lock: &'a SpinLock, side: Side) -> Result<SpinGuard<'a>, Poisoned> {
        let me = owner::process_owner();
        // The uncontended CAS first, on its own: what the contended loop
        // below needs in registers is then computed only on its way in.
        if lock.try_take(me) {
            return Ok(lock.guard());
        }
        loop {
            let mut spins = 0u32;
            loop {
                let held = lock.holder();
                if held == 0 {
                    break;
                }
                spins += 1;
                if spins == SPINS_PER_CHECK || held == POISONED {
                    spins = 0;
                    match self.cold_check(side) {
                        COLD_WAIT => {}
                        COLD_HELD => return Ok(lock.guard()),
                        _ => return Err(Poisoned),
                    }
                }
                spin_hint();
            }
            if lock.try_take(me) {
                return Ok(lock.guard());
            }
        }
    }

    /// [`ring_lock_cold`] for this ring's `side`, through the
    /// register-preserving trampoline.
    #[cfg(ring_asm)]
    #[inline(always)]
    fn cold_check(&self, side: Side) -> u32 {
        let r: u32;
        // SAFETY: the block passes the one argument in `rdi` (the ring's
        // address tagged with the side, see `tagged`), saving and
        // restoring `rdi`; the trampoline calls `ring_lock_cold` with it
        // and preserves every other register but `eax` (its result) and
        // the flags. Everything is pushed below the
        // red zone (the block moves the stack pointer past it first, and
        // the trampoline realigns), so it writes nothing the compiler may
        // keep there, which is what `nostack` promises, and the
        // surrounding code needs no frame of its own; the stack pointer is
        // back where it was at the end.
        unsafe {
            core::arch::asm!(
                "lea rsp, [rsp - 128]",
                "push rdi",
                "mov rdi, {ring}",
                "call ptr_ring_lock_cold_trampoline",
                "pop rdi",
                "lea rsp, [rsp + 128]",
                ring = in(reg) self.tagged(side),
                lateout("eax") r,
                options(nostack),
            );
        }
        r
    }

    /// [`ring_lock_cold`] for this ring's `side`, by an ordinary call.
    #[cfg(not(ring_asm))]
    #[inline(always)]
    fn cold_check(&self, side: Side) -> u32 {
        // SAFETY: `tagged` is this live ring's address, tagged.
        unsafe { ring_lock_cold(self.tagged(side)) }
    }

    /// This ring's address with `side` in its lowest bit (rings are
    /// aligned to `ALIGN`), keeping the reference's provenance: one
    /// register for the cold path.
    #[inline(always)]
    fn tagged(&self, side: Side) -> *const u8 {
        (self as *const PtrRing)
            .cast::<u8>()
            .wrapping_add(side as usize)
    }

    /// Times a producer and a consumer took their side's lock over from a
    /// dead holder, in any process: `(producer, consumer)`.
    pub fn takeovers(&self) -> (u32, u32) {
        // Relaxed: statistics.
        (
            self.hdr.producer.takeovers.load(Ordering::Relaxed),
            self.hdr.consumer.takeovers.load(Ordering::Relaxed),
        )
    }

    /// Whether a failed repair left a side refusing every operation:
    /// `(producer, consumer)`.
    pub fn poisoned(&self) -> (bool, bool) {
        (
            self.hdr.producer.lock.is_poisoned(),
            self.hdr.consumer.lock.is_poisoned(),
        )
    }

    /// Moves `seq` back over the slots a dead producer claimed but never
    /// filled. Producer lock held (just taken over).
    ///
    /// Below `seq`, every slot from `head` up to the dead claim's first
    /// unfilled one is full, and the unfilled ones are free; below `head`
    /// slots may be free (consumed and cleared) or full (consumed, not yet
    /// cleared). So scanning down from `seq`, the first full slot `i`, or
    /// the first free one at or below `head`, gives the answer
    /// `max(i + 1, head)`. `head` only grows during the scan (live
    /// consumers, which stop at the first free slot and so never pass the
    /// hole); it is re-read after each slot: a free slot below the dead
    /// claim's first unfilled one was cleared by a consumer that had
    /// published a `head` past it first (Release head store, then Release
    /// clear; our Acquire slot load reads that clear).
    pub(super) fn repair_producer(&self) -> Repair {
        self.hdr.producer.takeovers.fetch_add(1, Ordering::Relaxed);
        // Relaxed: written only under the lock we now hold; the dead
        // holder's stores are complete and visible (see `take_over`).
        let seq = self.hdr.producer.seq.load(Ordering::Relaxed);
        let slots = self.slots();
        let mut below = 0usize;
        loop {
            // Acquire pairs with the Release fills and clears: see above.
            let full = self
                .slot(seq.wrapping_sub(below + 1))
                .load(Ordering::Acquire)
                != 0;
            // Acquire pairs with the Release head store in `publish_head`.
            let held = seq.wrapping_sub(self.hdr.consumer.head.load(Ordering::Acquire));
            if held > slots {
                return Repair::Impossible("producer index behind the consumer head");
            }
            if full || held <= below {
                let back = below.min(held);
                // Release pairs with the Acquire `seq` load in `len`.
                self.hdr
                    .producer
                    .seq
                    .store(seq.wrapping_sub(back), Ordering::Release);
                return Repair::Producer { unfilled: back };
            }
            below += 1;
        }
    }

    /// Clears the consumed slots a dead consumer left full and sets `tail =
    /// head`. Consumer lock held (just taken over).
    ///
    /// A slot of a position `j` in `[head - slots, head)` holds either
    /// nothing, the consumed object of `j` (not yet cleared: clear it), or
    /// the object of `j + slots` that a producer put after the slot was
    /// cleared. The last is told apart by `seq`: a producer publishes `seq`
    /// past `j + slots` before it fills, so a fill our Acquire slot load
    /// reads comes with such a `seq` on the next load. Slots are cleared in
    /// sequence order, as `invalidate` does, so a producer still learns
    /// from one slot that a whole bulk is free.
    pub(super) fn repair_consumer(&self) -> Repair {
        self.hdr.consumer.takeovers.fetch_add(1, Ordering::Relaxed);
        // Relaxed: written only under the lock we now hold.
        let head = self.hdr.consumer.head.load(Ordering::Relaxed);
        let slots = self.slots();
        let mut cleared = 0;
        for back in (1..=slots).rev() {
            let j = head.wrapping_sub(back);
            let s = self.slot(j);
            // Acquire pairs with the Release fills (see above).
            if s.load(Ordering::Acquire) == 0 {
                continue;
            }
            // Acquire pairs with the Release `seq` store in `enqueue_bulk`
            // / `produce_one`, made before the fill.
            let seq = self.hdr.producer.seq.load(Ordering::Acquire);
            if before(j.wrapping_add(slots), seq) {
                continue;
            }
            // Release pairs with the Acquire room checks of producers.
            s.store(0, Ordering::Release);
            cleared += 1;
        }
        // Relaxed: only the consumer side reads `tail`.
        self.hdr.consumer.tail.store(head, Ordering::Relaxed);
        Repair::Consumer { cleared }
    }

    /// The error an enqueue of `n` reports on a poisoned producer side.
    #[cold]
    pub(super) fn refused_enqueue(&self, n: usize) -> RingError {
        RingError::NoSpace { requested: n }
    }

    /// The error a dequeue of `n` reports on a poisoned consumer side.
    #[cold]
    pub(super) fn refused_dequeue(&self, n: usize) -> RingError {
        RingError::NotEnough { requested: n }
    }
}

#[cfg(any(loom, feature = "crash-points"))]
type Obj = *mut core::ffi::c_void;

#[cfg(any(loom, feature = "crash-points"))]
impl PtrRing {
    /// Crash point after a producer published `seq = p + objs.len()`: if
    /// armed to die after `k` fills, fills the first `k` slots in order, as
    /// `fill_run` does, and dies (true). Test builds only.
    pub(super) fn crash_filling(&self, p: usize, objs: &[Obj]) -> bool {
        let Some(k) = crate::crash::fills_before_death() else {
            return false;
        };
        for (i, &o) in objs.iter().take(k).enumerate() {
            // Release, as in `fill_run`.
            self.slot(p.wrapping_add(i))
                .store(o as usize, Ordering::Release);
        }
        crate::crash::die()
    }

    /// Crash point after a consumer published `head` and before it clears
    /// `[tail, head)`: if armed to die after `k` clears, clears the first
    /// `k` in order and dies (true). Test builds only.
    pub(super) fn crash_clearing(&self, tail: usize, head: usize) -> bool {
        let Some(k) = crate::crash::clears_before_death() else {
            return false;
        };
        for i in 0..head.wrapping_sub(tail).min(k) {
            // Release, as in `clear_run`.
            self.slot(tail.wrapping_add(i)).store(0, Ordering::Release);
        }
        crate::crash::die()
    }

    /// Crash point in a newest-first dequeue of `[first, first + n)`, after
    /// its copy-out: if armed to die after `k` clears, clears the last `k`
    /// slots (all `n`, and leaves `seq`, for `k >= n`), last first, and
    /// dies (true). Slot by slot: every state `clear_run_from_top`'s pairs
    /// can leave, and those between a pair's halves too. Test builds only.
    pub(super) fn crash_taking_back(&self, first: usize, n: usize) -> bool {
        let Some(k) = crate::crash::take_back_clears_before_death() else {
            return false;
        };
        for i in (n - k.min(n)..n).rev() {
            // Release, as in `clear_run_from_top`.
            self.slot(first.wrapping_add(i)).store(0, Ordering::Release);
        }
        crate::crash::die()
    }
}

/// The takeover on the real machine's path (on x86-64 through the
/// register-preserving trampoline): a dead holder is emulated by writing
/// its id into the lock word and leaving the side as it would have died.
#[cfg(all(test, not(loom)))]
mod tests {
    use core::ffi::c_void;
    use std::sync::atomic::AtomicUsize as StdCounter;

    use super::*;
    use crate::owner::{Takeover, TEST_DEAD as DEAD};
    use crate::{HeapRing, RingLayout};

    /// An id the tests' liveness check calls alive.
    const ALIVE: u32 = 0xdead_0002;

    static REPORTED: StdCounter = StdCounter::new(0);

    fn setup() {
        owner::set_test_liveness();
        owner::set_report(|t: &Takeover| {
            assert_eq!(t.dead, DEAD);
            REPORTED.fetch_add(1, Ordering::Relaxed);
        });
    }

    fn obj(i: usize) -> *mut c_void {
        i as *mut c_void
    }

    fn drain(r: &PtrRing) -> Vec<usize> {
        let mut out = vec![core::ptr::null_mut(); r.capacity()];
        let n = r.dequeue_burst(&mut out);
        out[..n].iter().map(|&p| p as usize).collect()
    }

    #[test]
    fn a_dead_producers_claim_is_given_back_and_its_fills_kept() {
        setup();
        let r = HeapRing::new(RingLayout::with_batch(8, 1).unwrap());
        r.enqueue_bulk(&[obj(1), obj(2)]).unwrap();
        // A producer claimed three slots, filled one, and died.
        let p = r.hdr.producer.seq.load(Ordering::Relaxed);
        assert!(r.hdr.producer.lock.try_take(DEAD));
        r.hdr.producer.seq.store(p + 3, Ordering::Relaxed);
        r.slot(p).store(3, Ordering::Relaxed);
        let before = REPORTED.load(Ordering::Relaxed);
        r.enqueue_bulk(&[obj(9)]).unwrap();
        assert_eq!(drain(&r), [1, 2, 3, 9]);
        assert_eq!(r.len(), 0);
        assert_eq!(r.takeovers(), (1, 0));
        assert!(REPORTED.load(Ordering::Relaxed) > before);
        // Whole again: a full bulk in and out.
        let all: Vec<_> = (10..18).map(obj).collect();
        r.enqueue_bulk(&all).unwrap();
        assert_eq!(drain(&r), (10..18).collect::<Vec<_>>());
    }

    #[test]
    fn a_dead_consumers_uncleared_slots_are_cleared() {
        setup();
        let r = HeapRing::new(RingLayout::with_batch(4, 2).unwrap());
        r.enqueue_bulk(&[obj(1), obj(2), obj(3)]).unwrap();
        // A consumer took 1 and 2 (head published), cleared the first slot
        // of the two due, and died.
        assert!(r.hdr.consumer.lock.try_take(DEAD));
        r.hdr.consumer.head.store(2, Ordering::Relaxed);
        r.slot(0).store(0, Ordering::Relaxed);
        assert_eq!(drain(&r), [3]);
        assert_eq!(r.takeovers(), (0, 1));
        // The slot it left full was cleared: the whole capacity fits.
        let all: Vec<_> = (10..14).map(obj).collect();
        r.enqueue_bulk(&all).unwrap();
        assert_eq!(drain(&r), (10..14).collect::<Vec<_>>());
        assert_eq!(r.len(), 0);
    }

    #[test]
    fn a_poisoned_side_refuses_and_the_other_works() {
        setup();
        let r = HeapRing::new(RingLayout::with_batch(4, 1).unwrap());
        r.enqueue_bulk(&[obj(1), obj(2)]).unwrap();
        r.hdr
            .consumer
            .lock
            .owner_word()
            .store(POISONED, Ordering::Relaxed);
        let mut out = [core::ptr::null_mut(); 1];
        assert_eq!(
            r.dequeue_bulk(&mut out),
            Err(RingError::NotEnough { requested: 1 })
        );
        assert_eq!(r.dequeue_burst(&mut out), 0);
        r.enqueue_bulk(&[obj(3)]).unwrap();
        assert_eq!(r.poisoned(), (false, true));
    }

    #[test]
    fn a_live_holder_is_waited_for() {
        setup();
        let r = std::sync::Arc::new(HeapRing::new(RingLayout::with_batch(4, 1).unwrap()));
        assert!(r.hdr.producer.lock.try_take(ALIVE));
        let t = {
            let r = r.clone();
            std::thread::spawn(move || r.enqueue_bulk(&[obj(1)]))
        };
        // Many liveness checks' worth of spinning: still waiting.
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!t.is_finished());
        assert_eq!(r.takeovers(), (0, 0));
        // The holder unlocks: the waiter gets in.
        r.hdr.producer.lock.owner_word().store(0, Ordering::Release);
        t.join().unwrap().unwrap();
        assert_eq!(drain(&r), [1]);
    }
}
