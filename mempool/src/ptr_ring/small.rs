//! The loops of a small bulk (2 to [`SMALL_BULK_MAX`] objects) and of a
//! short clear (fewer than 16 slots), with no loop and no alignment test:
//! reads that may overlap, stores that never do.
//!
//! Reads (the null scan, the copy-out) go as two windows of four (or two)
//! pointers, the first at the start and the second ending at the end, which
//! overlap when the bulk is not a multiple of the window: reading a pointer
//! twice costs nothing and spares the tests on the length's bits. Stores to
//! slots (fills, clears) must reach each slot exactly once: a consumer that
//! takes slot by slot (`consume_one`, `dequeue_burst`) may take and clear a
//! slot as soon as its fill shows, and a producer may refill a slot as soon
//! as its clear shows, so a second store of the same value could land after
//! either. They go one 8-byte Release store per slot, in sequence order, in
//! chunks of 8, 4, 2 and 1 as the length's bits say: stronger than the
//! paired stores of `fill_run` / `clear_run` (no pair whose halves show in
//! either order), so the readers' partner checks hold as they are.

use core::ffi::c_void;

use super::SMALL_BULK_MAX;
use crate::sync::{AtomicUsize, Ordering};

/// Whether any of `objs` (2 to [`SMALL_BULK_MAX`] pointers) is null: the
/// first four and the last four (two and two below four), one OR.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse4.1")))]
#[inline(always)]
pub(super) fn any_null_small(objs: &[*mut c_void]) -> bool {
    let n = objs.len();
    debug_assert!((2..=SMALL_BULK_MAX).contains(&n) && n <= 8);
    let p = objs.as_ptr();
    let null = |i: usize| {
        // SAFETY: every caller below passes `i < n`, inside `objs`.
        unsafe { p.add(i).read() }.is_null()
    };
    if n >= 4 {
        (null(0) | null(1) | null(2) | null(3))
            | (null(n - 4) | null(n - 3) | null(n - 2) | null(n - 1))
    } else {
        null(0) | null(1) | null(n - 2) | null(n - 1)
    }
}

/// [`any_null_small`] with SSE4.1's 64-bit compare (the handler's
/// x86-64-v2 baseline): the same windows as two-pointer vectors, compared
/// with zero, ORed, one test. Left to itself the compiler mixed scalar and
/// vector compares with a branch each, about 20 instructions for a bulk
/// of 4.
#[cfg(all(target_arch = "x86_64", target_feature = "sse4.1"))]
#[inline(always)]
pub(super) fn any_null_small(objs: &[*mut c_void]) -> bool {
    use core::arch::x86_64::{
        __m128i, _mm_cmpeq_epi64, _mm_loadu_si128, _mm_or_si128, _mm_setzero_si128, _mm_testz_si128,
    };
    let n = objs.len();
    debug_assert!((2..=SMALL_BULK_MAX).contains(&n) && n <= 8);
    let p = objs.as_ptr();
    // SAFETY: SSE4.1 is enabled at compile time (the `cfg` above); every
    // caller below passes `i + 2 <= n`, so the unaligned 16-byte load reads
    // two pointers inside `objs`.
    let pair = |i: usize| unsafe { _mm_loadu_si128(p.add(i).cast::<__m128i>()) };
    // SAFETY: as above, register operations only.
    unsafe {
        let zero = _mm_setzero_si128();
        let nulls = |v: __m128i| _mm_cmpeq_epi64(v, zero);
        let any = if n >= 4 {
            _mm_or_si128(
                _mm_or_si128(nulls(pair(0)), nulls(pair(2))),
                _mm_or_si128(nulls(pair(n - 4)), nulls(pair(n - 2))),
            )
        } else {
            _mm_or_si128(nulls(pair(0)), nulls(pair(n - 2)))
        };
        _mm_testz_si128(any, any) == 0
    }
}

/// Copies the (filled) slots of `run` into `out` (same length, 2 to
/// [`SMALL_BULK_MAX`]): two windows of four (of two below four), the second
/// ending at the end. Plain reads, race-free for the reasons `copy_run`
/// gives (every fill of the range happens-before the caller's Acquire
/// loads of its last slot and that slot's partner; nobody writes the range
/// before the caller clears it); `out` is the caller's own buffer, so
/// writing an element of it twice is harmless.
#[cfg(not(loom))]
#[inline(always)]
pub(super) fn copy_small(run: &[AtomicUsize], out: &mut [*mut c_void]) {
    debug_assert_eq!(run.len(), out.len());
    let n = run.len().min(out.len());
    debug_assert!((2..=SMALL_BULK_MAX).contains(&n) && n <= 8);
    // `AtomicUsize` has the size, alignment and bit validity of `usize`,
    // hence of a pointer-sized integer read as a pointer.
    let src = run.as_ptr().cast::<*mut c_void>();
    let dst = out.as_mut_ptr();
    // SAFETY: `W <= n`, so both windows, `[0, W)` and `[n - W, n)`, are
    // inside both slices, which do not overlap (`out` is the caller's
    // exclusive buffer); the reads are race-free (see above) and read
    // through `UnsafeCell`s, as the shared reference to atomics allows.
    // The window is a constant in each branch: a run-time size would make
    // the copies `memcpy` calls.
    unsafe {
        if n >= 4 {
            copy_windows::<4>(src, dst, n);
        } else {
            copy_windows::<2>(src, dst, n);
        }
    }
}

/// Copies `[0, W)` and then `[n - W, n)` from `src` to `dst`.
///
/// # Safety
/// `W <= n`; `src` valid for reads and `dst` for writes of `n` pointers,
/// not overlapping.
#[cfg(not(loom))]
#[inline(always)]
unsafe fn copy_windows<const W: usize>(src: *const *mut c_void, dst: *mut *mut c_void, n: usize) {
    // SAFETY: both windows lie inside the `n` pointers (caller's contract).
    unsafe {
        core::ptr::copy_nonoverlapping(src, dst, W);
        core::ptr::copy_nonoverlapping(src.add(n - W), dst.add(n - W), W);
    }
}

/// Under loom every slot access is a modelled atomic load, one per slot.
/// Relaxed: the caller's Acquire load of the bulk's last slot made every
/// fill visible.
#[cfg(loom)]
#[inline(always)]
pub(super) fn copy_small(run: &[AtomicUsize], out: &mut [*mut c_void]) {
    debug_assert_eq!(run.len(), out.len());
    for (s, d) in run.iter().zip(out) {
        // Relaxed: see above.
        *d = s.load(Ordering::Relaxed) as *mut c_void;
    }
}

/// Fills the slots of `run` with `objs` (same length, fewer than 16), one
/// Release store per slot in sequence order: they pair with the Acquire
/// loads in `dequeue_bulk`, `consume_one`, `dequeue_burst` and `is_empty`,
/// as `fill_run`'s do.
#[inline(always)]
pub(super) fn fill_small(run: &[AtomicUsize], objs: &[*mut c_void]) {
    debug_assert_eq!(run.len(), objs.len());
    let n = run.len().min(objs.len());
    debug_assert!(n < 16);
    let (mut d, mut s) = (run.as_ptr(), objs.as_ptr());
    for chunk in CHUNKS {
        if n & chunk != 0 {
            for k in 0..chunk {
                // SAFETY: the chunks taken so far and this one add up to
                // at most `n` (`n < 16`: its bits), inside both slices.
                let (slot, o) = unsafe { (&*d.add(k), s.add(k).read()) };
                // Release: see above, in sequence order.
                slot.store(o as usize, Ordering::Release);
            }
            // SAFETY: as above, at most one past the end of each slice.
            unsafe { (d, s) = (d.add(chunk), s.add(chunk)) };
        }
    }
}

/// Clears the slots of `run` (fewer than 16), one Release store of 0 per
/// slot in sequence order: they pair with the Acquire loads of the
/// producer's room check and of `is_empty`, as `clear_run`'s do.
#[inline(always)]
pub(super) fn clear_small(run: &[AtomicUsize]) {
    let n = run.len();
    debug_assert!(n < 16);
    let mut d = run.as_ptr();
    for chunk in CHUNKS {
        if n & chunk != 0 {
            for k in 0..chunk {
                // SAFETY: the chunks taken so far and this one add up to
                // at most `n` (`n < 16`: its bits), inside `run`.
                let slot = unsafe { &*d.add(k) };
                // Release: see above, in sequence order.
                slot.store(0, Ordering::Release);
            }
            // SAFETY: as above, at most one past the end of `run`.
            d = unsafe { d.add(chunk) };
        }
    }
}

/// The chunks of `fill_small` and `clear_small`, in sequence order: 8, 4,
/// 2 and 1 slots as the length's bits say, so that fewer than 16 slots
/// take no loop for the compiler to unroll with a remainder, and a pointer
/// per side moves by whole chunks (each store at a constant offset).
const CHUNKS: [usize; 4] = [8, 4, 2, 1];

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn ptrs(n: usize) -> Vec<*mut c_void> {
        (1..=n).map(|i| (i * 8) as *mut c_void).collect()
    }

    fn slots(n: usize) -> Vec<AtomicUsize> {
        (0..n).map(|_| AtomicUsize::new(0)).collect()
    }

    #[test]
    fn null_scan_covers_every_position_of_every_small_length() {
        for n in 2..=SMALL_BULK_MAX {
            let objs = ptrs(n);
            assert!(!any_null_small(&objs), "no null among {n}");
            for k in 0..n {
                let mut with = objs.clone();
                with[k] = core::ptr::null_mut();
                assert!(any_null_small(&with), "null at {k} of {n}");
            }
        }
    }

    #[test]
    fn fill_copy_and_clear_touch_exactly_the_run() {
        for n in 2..=SMALL_BULK_MAX {
            // A guard slot on each side of the run.
            let s = slots(n + 2);
            let objs = ptrs(n);
            fill_small(&s[1..=n], &objs);
            let words: Vec<usize> = s.iter().map(|w| w.load(Ordering::Relaxed)).collect();
            let mut want = vec![0];
            want.extend(objs.iter().map(|&o| o as usize));
            want.push(0);
            assert_eq!(words, want, "fill of {n}");

            // Guards in `out` too: the windows write inside `out` only.
            let mut out = vec![core::ptr::null_mut(); n + 2];
            copy_small(&s[1..=n], &mut out[1..=n]);
            assert_eq!(&out[1..=n], &objs[..], "copy of {n}");
            assert!(out[0].is_null() && out[n + 1].is_null(), "copy of {n}");

            s[0].store(7, Ordering::Relaxed);
            s[n + 1].store(9, Ordering::Relaxed);
            clear_small(&s[1..=n]);
            let words: Vec<usize> = s.iter().map(|w| w.load(Ordering::Relaxed)).collect();
            let mut want = vec![7];
            want.extend(core::iter::repeat_n(0, n));
            want.push(9);
            assert_eq!(words, want, "clear of {n}");
        }
    }

    #[test]
    fn short_clears_reach_fifteen_slots() {
        let s = slots(16);
        for w in &s {
            w.store(5, Ordering::Relaxed);
        }
        clear_small(&s[..15]);
        assert!(s[..15].iter().all(|w| w.load(Ordering::Relaxed) == 0));
        assert_eq!(s[15].load(Ordering::Relaxed), 5);
    }
}
