//! The loops over a run of contiguous slots (see `PtrRing::runs`) and over
//! the caller's bulk: null scan, fill, copy-out, clear.

use core::ffi::c_void;

use crate::sync::{AtomicUsize, Ordering};

/// Whether any of `objs` is null: one OR over the bulk, no branch per
/// object (two vector operations per two pointers with SSE4.1's 64-bit
/// compare, the handler's x86-64-v2 baseline; four per eight pointers with
/// AVX2 where the CPU has it, for bulks of at least 16).
#[inline(always)]
pub(super) fn any_null(objs: &[*mut c_void]) -> bool {
    #[cfg(ring_asm)]
    if objs.len() >= 16 && std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { any_null_avx2(objs) };
    }
    any_null_scalar(objs)
}

#[inline(always)]
fn any_null_scalar(objs: &[*mut c_void]) -> bool {
    // Eight at a time, so that the vector loop carries four independent
    // accumulators per iteration.
    let mut c = objs.chunks_exact(8);
    let mut z = false;
    for ch in &mut c {
        z |= ch.iter().fold(false, |z, o| z | o.is_null());
    }
    z | any_null_below_8(c.remainder())
}

/// [`any_null`] of fewer than eight pointers: four, two and one as the
/// length's bits say, with no loop. Left to itself, the compiler vectorises
/// the remainder with a loop whose setup alone cost a bulk of 4 about 30
/// instructions.
#[inline(always)]
fn any_null_below_8(objs: &[*mut c_void]) -> bool {
    debug_assert!(objs.len() < 8);
    let n = objs.len();
    let p = objs.as_ptr();
    let null = |i: usize| {
        // SAFETY: every caller below passes `i < n`, inside `objs`.
        unsafe { p.add(i).read() }.is_null()
    };
    let mut z = false;
    let mut i = 0;
    if n & 4 != 0 {
        z |= null(0) | null(1) | null(2) | null(3);
        i = 4;
    }
    if n & 2 != 0 {
        z |= null(i) | null(i + 1);
        i += 2;
    }
    if n & 1 != 0 {
        z |= null(i);
    }
    z
}

/// [`any_null`] with 256-bit compares: eight pointers per two compares
/// (each reading memory directly) and two ORs. In `asm!`, inline in the
/// caller with no call: a `target_feature` function could not be inlined
/// into the x86-64-v2 code around it, and the compiler, tuned for that
/// baseline, splits unaligned 256-bit loads in two. Reads only the caller's
/// slice (no shared memory).
///
/// # Safety
/// The CPU supports AVX2.
#[cfg(ring_asm)]
#[inline(always)]
unsafe fn any_null_avx2(objs: &[*mut c_void]) -> bool {
    let octets = objs.len() / 8;
    let found: u8;
    // SAFETY: octet `k` covers pointers `8k..8k + 8`, inside `objs` for
    // `k < octets`; unaligned reads of the caller's own pointer words.
    // Registers: the block writes `ymm0`-`ymm3`, and `vzeroupper` zeroes
    // the upper halves of `ymm0`-`ymm15`, so it declares all sixteen
    // clobbered, as `clobber_abi("C")` does (a clobbered `xmmN` is the whole
    // `xmmN`/`ymmN`/`zmmN` to the compiler): code around it compiled for AVX
    // (`-C target-cpu=native`, a caller with
    // `#[target_feature(enable = "avx2")]` that inlines the ring) keeps
    // nothing in them across the block. It touches no other vector or mask
    // register (`zmm16`-`zmm31`, `k0`-`k7`), and it leaves the general
    // registers to the compiler: `clobber_abi` would also clobber every
    // caller-saved one, which cost 18 moves per bulk to keep the ring's
    // live values in callee-saved registers. `vzeroupper` leaves no dirty
    // upper state behind for the SSE code that follows.
    unsafe {
        core::arch::asm!(
            "vpxor ymm0, ymm0, ymm0",
            "vpxor ymm1, ymm1, ymm1",
            "test {n}, {n}",
            "jz 3f",
            "2:",
            "vpcmpeqq ymm2, ymm0, [{p}]",
            "vpcmpeqq ymm3, ymm0, [{p} + 32]",
            "vpor ymm1, ymm1, ymm2",
            "vpor ymm1, ymm1, ymm3",
            "add {p}, 64",
            "dec {n}",
            "jnz 2b",
            "3:",
            "vptest ymm1, ymm1",
            "setnz {f}",
            "vzeroupper",
            p = inout(reg) objs.as_ptr() => _,
            n = inout(reg) octets => _,
            f = out(reg_byte) found,
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
            out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
            out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
            options(nostack, readonly),
        );
    }
    // The remainder's test only where there is one: its bit tests cost a
    // bulk of 32 ten instructions for nothing.
    found != 0 || (!objs.len().is_multiple_of(8) && any_null_below_8(&objs[octets * 8..]))
}

/// Whether slot stores go two slots at a time (`fill_run`, `clear_run`):
/// then the two halves of one 16-byte store may become visible to another
/// CPU in either order, and a side that learns from the last slot of its
/// range that the whole range is ready must also check that slot's partner
/// ([`paired_with_previous`]). Plain 8-byte stores everywhere under loom and
/// Miri, and off x86-64.
pub(super) const PAIRED_STORES: bool = cfg!(ring_asm);

/// Whether `slot` is the upper half of a 16-byte pair that `fill_run` or
/// `clear_run` may write with one store (its partner is the slot before
/// it). Pairs never straddle runs: the first slot of the slot array is
/// 16-byte aligned, so it is never an upper half.
#[inline(always)]
pub(super) fn paired_with_previous(slot: &AtomicUsize) -> bool {
    PAIRED_STORES && (slot as *const AtomicUsize as usize) & 15 == 8
}

/// Fills the slots of `run` with `objs` (same length), in sequence order.
/// Each store is Release and pairs with the Acquire loads in
/// `dequeue_bulk`, `dequeue_burst` and `is_empty`: an object's contents and
/// every earlier fill are visible to whoever sees its pointer.
#[cfg(not(ring_asm))]
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

/// The walk over a run of slots that [`fill_run`] and [`clear_run`] share,
/// as one `asm!` block: the run's start in `{d}` and its length in `{n}`
/// (both consumed), a scratch register `{t}`. In sequence order (or last
/// first, where `setup` moves `{d}` to the run's end and each snippet steps
/// down before it stores): `setup` once (for a run that is not empty), a
/// lone first slot (`one`) when `{d}` is off a 16-byte boundary, eight
/// slots per loop turn (`eight`, four aligned 16-byte pairs), then four,
/// two and one slot as the rest's bits say (`four`, `two`, `one`): the
/// first slot is alone exactly when it is not aligned, so every pair store
/// after it is. Each snippet moves the pointers past what it wrote. All of
/// the bookkeeping is in the block, on the count's bits: no loop for the
/// last 0-7 slots, no split computed outside.
#[cfg(ring_asm)]
macro_rules! slot_run_asm {
    (
        setup: [$($setup:literal),*],
        one: [$($one:literal),*],
        two: [$($two:literal),*],
        four: [$($four:literal),*],
        eight: [$($eight:literal),*],
        $($operands:tt)*
    ) => {
        core::arch::asm!(
            "test {n}, {n}",
            "jz 9f",
            $($setup,)*
            "test {d:l}, 8",
            "jz 2f",
            $($one,)*
            "dec {n}",
            "2:",
            "mov {t}, {n}",
            "shr {t}, 3",
            "jz 4f",
            "3:",
            $($eight,)*
            "dec {t}",
            "jnz 3b",
            "4:",
            "test {n:l}, 4",
            "jz 5f",
            $($four,)*
            "5:",
            "test {n:l}, 2",
            "jz 6f",
            $($two,)*
            "6:",
            "test {n:l}, 1",
            "jz 9f",
            $($one,)*
            "9:",
            $($operands)*
        )
    };
}

/// Fills the slots of `run` with `objs` (same length), in sequence order,
/// the aligned pairs with one 16-byte store each (half the stores of
/// slot-by-slot; a ring's fills and clears are store-bound in big bulks).
///
/// Why this is sound: the stores are made in `asm!`, which Rust treats as
/// unknown code that may access the slots the way the abstract machine
/// allows: here as two 8-byte atomic Release stores per pair, in
/// unspecified order between the two halves, and one for a lone first or
/// last slot (an aligned 8-byte `mov`, atomic). x86-64 gives that: stores
/// become visible in program order (TSO), so they are Release; an aligned
/// 16-byte `movdqa` is one atomic access on every CPU with AVX (Intel's
/// and AMD's manuals), and older CPUs split it into its two aligned
/// quadwords, each atomic. The one thing weaker than slot-by-slot is thus
/// the order *within* a pair: readers that rely on the sequence order check
/// the partner of their last slot too ([`paired_with_previous`]), so the
/// ring needs no more than the quadword atomicity. The asm block is also a
/// compiler barrier (it may touch any memory), so nothing moves across it.
#[cfg(ring_asm)]
#[inline(always)]
pub(super) fn fill_run(run: &[AtomicUsize], objs: &[*mut c_void]) {
    debug_assert_eq!(run.len(), objs.len());
    let n = run.len().min(objs.len());
    // SAFETY: the block writes slots `0..n` of `run` and reads pointers
    // `0..n` of `objs`, each exactly once, in sequence order, in the shape
    // of [`slot_run_asm`]; every pair store is 16-byte aligned. The stores
    // are atomic Release stores per slot (see above); the loads read the
    // caller's own slice.
    unsafe {
        slot_run_asm!(
            setup: [],
            one: ["mov {t}, [{s}]", "mov [{d}], {t}", "add {s}, 8", "add {d}, 8"],
            two: [
                "movdqu {x0}, [{s}]",
                "movdqa [{d}], {x0}",
                "add {s}, 16",
                "add {d}, 16"
            ],
            four: [
                "movdqu {x0}, [{s}]",
                "movdqu {x1}, [{s} + 16]",
                "movdqa [{d}], {x0}",
                "movdqa [{d} + 16], {x1}",
                "add {s}, 32",
                "add {d}, 32"
            ],
            eight: [
                "movdqu {x0}, [{s}]",
                "movdqu {x1}, [{s} + 16]",
                "movdqu {x2}, [{s} + 32]",
                "movdqu {x3}, [{s} + 48]",
                "movdqa [{d}], {x0}",
                "movdqa [{d} + 16], {x1}",
                "movdqa [{d} + 32], {x2}",
                "movdqa [{d} + 48], {x3}",
                "add {s}, 64",
                "add {d}, 64"
            ],
            s = inout(reg) objs.as_ptr() => _,
            d = inout(reg) run.as_ptr() => _,
            n = inout(reg) n => _,
            t = out(reg) _,
            x0 = out(xmm_reg) _,
            x1 = out(xmm_reg) _,
            x2 = out(xmm_reg) _,
            x3 = out(xmm_reg) _,
            options(nostack),
        );
    }
}

/// Runs of at least this many slots are copied out by a `memcpy` call,
/// shorter ones inline. Left to itself the compiler makes either of the
/// inline loop, depending on where the ring is inlined: the inline loop
/// costs 6 instructions more per bulk of 32 (callgrind).
#[cfg(not(loom))]
const COPY_CALL_MIN: usize = 16;

/// Copies the (filled) slots of `run` into `out` (same length): a `memcpy`
/// from [`COPY_CALL_MIN`] slots, else four at a time, with plain
/// (non-atomic) reads that the compiler may widen to vector loads. That is race-free: every write to these slots
/// happens-before the caller's Acquire loads of the bulk's last slot and,
/// for a paired fill, its partner (`PtrRing::reads_through`: the fills, in
/// sequence order; older
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
    if n >= COPY_CALL_MIN {
        // SAFETY: `n` slots of both slices, which do not overlap; the
        // reads are race-free (see above).
        unsafe { core::ptr::copy_nonoverlapping(src, dst, n) };
        return;
    }
    // Eight, four, two and one slot as the length's bits say, with no loop
    // (a loop of four at a time and one of one cost a bulk of 4 about 30
    // instructions, most of them the loops' setup).
    let mut i = 0;
    for chunk in [8, 4, 2, 1] {
        if n & chunk != 0 {
            // SAFETY: the chunks taken so far and this one add up to at most
            // `n` (`n < 16`: its bits), inside both slices, which do not
            // overlap (`out` is the caller's exclusive buffer); the reads are
            // race-free (see above) and read through `UnsafeCell`s, as the
            // shared reference to atomics allows.
            unsafe { core::ptr::copy_nonoverlapping(src.add(i), dst.add(i), chunk) };
            i += chunk;
        }
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

/// Bulks of at least this many objects (eight slot lines) take their slot
/// lines for writing before they touch them: see [`prefetch_runs_for_write`].
pub(super) const PREFETCH_FOR_WRITE_MIN: usize = 64;

/// Asks for every cache line of the runs `(a, b)` in exclusive state
/// (`prefetchw`) when the bulk moves [`PREFETCH_FOR_WRITE_MIN`] objects or
/// more: ahead of a consumer's copy-out that its clear will follow, and of
/// a producer's fills.
///
/// A consumer reads each slot line and then clears it. When another CPU
/// wrote the line last (its producer filled it, or a previous consumer
/// cleared it), the read brings the line in shared state and the clear must
/// then upgrade it: two coherence transactions per line, where one read
/// for ownership serves both. `rte_ring`'s consumer only reads; this is the
/// cost of slot signalling that two lcores sharing a ring pay on every
/// line. A producer's fills land on lines a consumer cleared last: asked
/// for all at once, ahead of the stores, their transfers can overlap.
/// With DPDK's cache, whose refills and flushes are bulks of hundreds of
/// objects, that is most of the handler's time. Below the threshold the
/// loop's cost outweighs what it saves on one lcore, where the lines are
/// already this CPU's (above it, on one lcore, the loop still costs a few
/// percent: bench/NOTES.md).
///
/// A hint with no architectural effect: nothing under loom or Miri, nothing
/// off x86-64 or on a CPU without `prefetchw` (CPUID `PRFCHW`).
#[inline(always)]
pub(super) fn prefetch_runs_for_write((a, b): (&[AtomicUsize], &[AtomicUsize])) {
    if a.len() + b.len() >= PREFETCH_FOR_WRITE_MIN {
        prefetch_for_write(a);
        prefetch_for_write(b);
    }
}

/// `prefetchw` of every cache line of `run` (see [`prefetch_runs_for_write`]).
#[inline(always)]
fn prefetch_for_write(run: &[AtomicUsize]) {
    // (Without the asm there is nothing to do with the run.)
    #[cfg(not(ring_asm))]
    let _ = run;
    #[cfg(ring_asm)]
    if !run.is_empty() && has_prefetchw() {
        let first = run.as_ptr() as usize & !63;
        let last = (run.as_ptr() as usize + (run.len() - 1) * 8) & !63;
        let mut line = first;
        loop {
            // SAFETY: a prefetch only moves a line between caches: it never
            // faults, reads or writes nothing the program sees, and here
            // only names lines of the slot array.
            unsafe {
                core::arch::asm!(
                    "prefetchw [{l}]",
                    l = in(reg) line,
                    options(nostack, readonly, preserves_flags)
                );
            }
            if line == last {
                break;
            }
            line += 64;
        }
    }
}

/// Whether the CPU has `prefetchw` (CPUID 0x8000_0001, ECX bit 8), asked
/// once per process.
#[cfg(ring_asm)]
#[inline(always)]
fn has_prefetchw() -> bool {
    use core::sync::atomic::AtomicU8;
    // 0: not asked yet, 1: no, 2: yes.
    static PREFETCHW: AtomicU8 = AtomicU8::new(0);
    // Relaxed: the flag is all there is to see, and every thread computes
    // the same value.
    match PREFETCHW.load(Ordering::Relaxed) {
        0 => {
            use core::arch::x86_64::__cpuid;
            // Leaf 0x8000_0000 gives the highest extended leaf.
            #[allow(unused_unsafe)]
            // SAFETY: CPUID exists on every x86-64 CPU.
            let yes = unsafe {
                __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).ecx & (1 << 8) != 0
            };
            PREFETCHW.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
            yes
        }
        v => v == 2,
    }
}

/// Clears the slots of `run` in sequence order. Release pairs with the
/// Acquire slot loads of the producer's room check (which relies on the
/// order, see `PtrRing::enqueue_bulk`) and of `is_empty` (whoever sees a
/// null also sees the `head` store that precedes it in `PtrRing::publish_head`).
#[cfg(not(ring_asm))]
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

/// Clears the slots of `run` in sequence order, the aligned pairs with one
/// 16-byte store each, sound for the reasons given at the vector
/// `fill_run`: per slot an atomic Release store of 0, the order within a
/// pair unspecified (the producer's room check looks at the partner of its
/// last slot). Release pairs as in the slot-by-slot version.
#[cfg(ring_asm)]
#[inline(always)]
pub(super) fn clear_run(run: &[AtomicUsize]) {
    // SAFETY: the block writes 0 to slots `0..run.len()` of `run`, each
    // exactly once, in sequence order, in the shape of [`slot_run_asm`];
    // atomic Release stores of 0 per slot (see above).
    unsafe {
        slot_run_asm!(
            setup: ["xorps {z}, {z}"],
            one: ["mov qword ptr [{d}], 0", "add {d}, 8"],
            two: ["movaps [{d}], {z}", "add {d}, 16"],
            four: ["movaps [{d}], {z}", "movaps [{d} + 16], {z}", "add {d}, 32"],
            eight: [
                "movaps [{d}], {z}",
                "movaps [{d} + 16], {z}",
                "movaps [{d} + 32], {z}",
                "movaps [{d} + 48], {z}",
                "add {d}, 64"
            ],
            d = inout(reg) run.as_ptr() => _,
            n = inout(reg) run.len() => _,
            t = out(reg) _,
            z = out(xmm_reg) _,
            options(nostack),
        );
    }
}

/// Clears the slots of `run` last first, as a newest-first dequeue takes
/// them back (`PtrRing::dequeue_newest`): whoever holds the ring after a
/// holder that died part-way finds a full prefix and free slots above it.
/// Release, as [`clear_run`]'s stores.
#[cfg(not(ring_asm))]
#[inline(always)]
pub(super) fn clear_run_from_top(run: &[AtomicUsize]) {
    for d in run.iter().rev() {
        // Release: see above, last slot first.
        d.store(0, Ordering::Release);
    }
}

/// Clears the slots of `run` last first, the aligned pairs with one 16-byte
/// store each: [`clear_run`]'s walk from the run's end down. A pair's two
/// halves may land in either order, but a process dies between
/// instructions, never inside one, so a holder that dies part-way still
/// leaves a full prefix and free slots above it; while it lives it holds
/// both sides, and no reader orders anything by these slots.
#[cfg(ring_asm)]
#[inline(always)]
pub(super) fn clear_run_from_top(run: &[AtomicUsize]) {
    // SAFETY: `setup` moves `{d}` to the run's end; each snippet then steps
    // `{d}` down before it stores, so the block writes 0 to slots
    // `0..run.len()` of `run`, each exactly once, last first, in the shape
    // of [`slot_run_asm`] (its alignment test now on the end: a lone last
    // slot when the end is off a 16-byte boundary, so every pair store
    // after it is aligned). Atomic Release stores of 0 per slot, as in
    // `clear_run`.
    unsafe {
        slot_run_asm!(
            setup: ["xorps {z}, {z}", "lea {d}, [{d} + {n} * 8]"],
            one: ["sub {d}, 8", "mov qword ptr [{d}], 0"],
            two: ["sub {d}, 16", "movaps [{d}], {z}"],
            four: ["sub {d}, 32", "movaps [{d} + 16], {z}", "movaps [{d}], {z}"],
            eight: [
                "sub {d}, 64",
                "movaps [{d} + 48], {z}",
                "movaps [{d} + 32], {z}",
                "movaps [{d} + 16], {z}",
                "movaps [{d}], {z}"
            ],
            d = inout(reg) run.as_ptr() => _,
            n = inout(reg) run.len() => _,
            t = out(reg) _,
            z = out(xmm_reg) _,
            options(nostack),
        );
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

    /// The AVX2 null scan leaves alone the vector values of code compiled
    /// for AVX around it, which keeps them in whole `ymm` registers:
    /// `vzeroupper` zeroes the upper halves of all sixteen, so the block
    /// must declare them all (declaring `xmm0`-`xmm3` only, the compiler
    /// kept these twelve values in `ymm4`-`ymm15` and lost their upper
    /// halves).
    #[cfg(ring_asm)]
    #[test]
    fn avx2_null_scan_keeps_the_callers_vector_registers() {
        if !std::is_x86_feature_detected!("avx2") {
            // Straight to stderr, past the test harness's capture.
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIP: this CPU has no AVX2");
            return;
        }
        let objs: [*mut c_void; 40] = core::array::from_fn(|i| (8 * i + 8) as *mut c_void);
        // SAFETY: the CPU has AVX2 (checked above).
        let (values, null) = unsafe { scan_between_vector_values(&objs) };
        assert!(!null);
        for (i, v) in values.iter().enumerate() {
            let i = i as i64;
            assert_eq!(
                *v,
                [4 * i + 1, 4 * i + 2, 4 * i + 3, 4 * i + 4],
                "value {i}"
            );
        }
    }

    /// Twelve 256-bit values in registers across [`any_null_avx2`] (empty
    /// `asm!` blocks pin them there before and after it), then read back.
    /// A whole number of octets, so that no scalar tail competes for the
    /// registers.
    ///
    /// # Safety
    /// The CPU supports AVX2.
    #[cfg(ring_asm)]
    #[target_feature(enable = "avx2")]
    unsafe fn scan_between_vector_values(objs: &[*mut c_void; 40]) -> ([[i64; 4]; 12], bool) {
        use core::arch::x86_64::{__m256i, _mm256_set_epi64x, _mm256_storeu_si256};
        let v: [__m256i; 12] = core::array::from_fn(|i| {
            let i = i as i64;
            _mm256_set_epi64x(4 * i + 4, 4 * i + 3, 4 * i + 2, 4 * i + 1)
        });
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h, mut i, mut j, mut k, mut l] =
            v;
        // One block for all twelve, so that each is in a register at once.
        macro_rules! pin {
            () => {
                // SAFETY: an empty block that only claims to change the
                // twelve values.
                unsafe {
                    core::arch::asm!(
                        "/* {0} {1} {2} {3} {4} {5} {6} {7} {8} {9} {10} {11} */",
                        inout(ymm_reg) a, inout(ymm_reg) b, inout(ymm_reg) c,
                        inout(ymm_reg) d, inout(ymm_reg) e, inout(ymm_reg) f,
                        inout(ymm_reg) g, inout(ymm_reg) h, inout(ymm_reg) i,
                        inout(ymm_reg) j, inout(ymm_reg) k, inout(ymm_reg) l,
                        options(nomem, nostack),
                    )
                }
            };
        }
        pin!();
        // SAFETY: the caller's guarantee.
        let null = unsafe { any_null_avx2(objs) };
        pin!();
        let mut out = [[0i64; 4]; 12];
        for (o, x) in out.iter_mut().zip([a, b, c, d, e, f, g, h, i, j, k, l]) {
            // SAFETY: `o` is 32 writable bytes; unaligned store.
            unsafe { _mm256_storeu_si256(o.as_mut_ptr().cast(), x) };
        }
        (out, null)
    }

    /// Fills and clears (either way round) of every length from every
    /// start, on both sides of a 16-byte boundary (the paired stores' edge
    /// cases): exactly the run's slots change, each to its own object, in
    /// a slot array that starts 16-byte aligned as a ring's does.
    #[test]
    fn fill_and_clear_touch_exactly_their_run() {
        #[repr(align(64))]
        struct Slots([AtomicUsize; 48]);
        const GUARD: usize = 0xdead;
        for start in 0..4 {
            for n in 0..40 {
                let slots = Slots(core::array::from_fn(|_| AtomicUsize::new(GUARD)));
                let run = &slots.0[start..start + n];
                let objs: Vec<*mut c_void> =
                    (0..n).map(|i| (0x1000 + 8 * i) as *mut c_void).collect();
                fill_run(run, &objs);
                for (i, s) in slots.0.iter().enumerate() {
                    let want = if (start..start + n).contains(&i) {
                        0x1000 + 8 * (i - start)
                    } else {
                        GUARD
                    };
                    assert_eq!(
                        s.load(Ordering::Relaxed),
                        want,
                        "fill {start}+{n}, slot {i}"
                    );
                }
                let cleared = |how: &str| {
                    for (i, s) in slots.0.iter().enumerate() {
                        let want = if (start..start + n).contains(&i) {
                            0
                        } else {
                            GUARD
                        };
                        assert_eq!(
                            s.load(Ordering::Relaxed),
                            want,
                            "{how} {start}+{n}, slot {i}"
                        );
                    }
                };
                clear_run(run);
                cleared("clear");
                fill_run(run, &objs);
                clear_run_from_top(run);
                cleared("clear from the top");
            }
        }
    }
}
