//! The loops over a run of contiguous slots (see `PtrRing::runs`) and over
//! the caller's bulk: null scan, fill, copy-out, clear.

use core::ffi::c_void;

use crate::sync::{AtomicUsize, Ordering};

/// Whether any of `objs` is null: one OR over the bulk, no branch per
/// object (two vector operations per two pointers with SSE4.1's 64-bit
/// compare, the handler's x86-64-v2 baseline).
#[inline(always)]
pub(super) fn any_null(objs: &[*mut c_void]) -> bool {
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
pub(super) fn fill_run(run: &[AtomicUsize], objs: &[*mut c_void]) {
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
pub(super) fn copy_run(run: &[AtomicUsize], out: &mut [*mut c_void]) {
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
pub(super) fn copy_run(run: &[AtomicUsize], out: &mut [*mut c_void]) {
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
pub(super) fn clear_run(run: &[AtomicUsize]) {
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
}
