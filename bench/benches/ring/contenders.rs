//! The rings under test: one [`Contender`] per ring and mode, the set of
//! them that every benchmark runs ([`Contenders`]), and the one retry loop
//! they all spin in.

use std::ffi::{c_void, CString};
use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossbeam_queue::ArrayQueue;
use dpdk_sys as sys;
use mempool::{HeapRing, RingLayout};

use crate::loops::{run_1t, run_2t, PairRun};
use crate::{RING_OBJS, RING_POW2};

/// Whether a failed try is followed by a `pause` (`spin_loop`); see
/// `RING_PAUSE` in the module documentation.
pub(crate) static PAUSE: AtomicBool = AtomicBool::new(true);

/// Called after every failed try, by every contender alike.
#[inline(always)]
fn backoff() {
    if PAUSE.load(Ordering::Relaxed) {
        spin_loop();
    }
}

/// Calls `attempt` until it succeeds, backing off after each failure;
/// returns the number of failures. The one retry loop of every contender.
#[inline(always)]
fn retry(mut attempt: impl FnMut() -> bool) -> u64 {
    let mut fails = 0;
    while !attempt() {
        fails += 1;
        backoff();
    }
    fails
}

/// A ring under test. Every method moves all of its objects before
/// returning, spinning while the ring cannot take or give them, and returns
/// how many tries failed.
pub(crate) trait Contender: Sync {
    /// Enqueues all of `objs`.
    fn put(&self, objs: &[*mut c_void]) -> u64;
    /// Dequeues exactly `out.len()` objects into `out`.
    fn get(&self, out: &mut [*mut c_void]) -> u64;
}

/// This crate's ptr_ring (heap-backed), all-or-nothing bulks; the ring's
/// mode (MP/MC or SP/SC) is set when it is built.
pub(crate) struct Ours(pub(crate) HeapRing);

impl Contender for Ours {
    #[inline(always)]
    fn put(&self, objs: &[*mut c_void]) -> u64 {
        retry(|| self.0.enqueue_bulk(objs).is_ok())
    }
    #[inline(always)]
    fn get(&self, out: &mut [*mut c_void]) -> u64 {
        retry(|| self.0.dequeue_bulk(out).is_ok())
    }
}

/// A DPDK ring created by `rte_ring_create`, never freed (EAL lives for the
/// whole process).
struct RteRing(*mut sys::rte_ring);

// SAFETY: rte_ring is a shared-memory structure built for concurrent use from
// any thread (the SP/SC one by one producer and one consumer thread, which is
// how the benchmarks use it); the pointer stays valid for the process.
unsafe impl Sync for RteRing {}
// SAFETY: as above.
unsafe impl Send for RteRing {}

impl RteRing {
    fn create(name: &str, flags: u32) -> Option<RteRing> {
        let cname = CString::new(name).expect("ring name without NUL");
        // SAFETY: EAL is initialised (the caller checked); `cname` is a valid
        // C string for the call; DPDK copies the name.
        let r = unsafe {
            sys::rte_ring_create(cname.as_ptr(), RING_POW2 as u32, sys::SOCKET_ID_ANY, flags)
        };
        if r.is_null() {
            eprintln!(
                "ring bench: rte_ring_create({name}) failed: rte_errno {}",
                sys::errno()
            );
            None
        } else {
            Some(RteRing(r))
        }
    }
}

/// `rte_ring` with `RING_F_SP_ENQ | RING_F_SC_DEQ`, driven by the `sp`/`sc` calls.
struct RteSpSc(RteRing);
/// `rte_ring` with flags 0, driven by the `mp`/`mc` calls.
struct RteMpMc(RteRing);

impl Contender for RteSpSc {
    #[inline(always)]
    fn put(&self, objs: &[*mut c_void]) -> u64 {
        let n = objs.len() as u32;
        // SAFETY: a live ring; `objs` holds `n` readable pointers; one
        // producer thread at a time (the SP contract).
        retry(|| unsafe {
            sys::rte_ring_sp_enqueue_bulk(self.0 .0, objs.as_ptr(), n, core::ptr::null_mut()) == n
        })
    }
    #[inline(always)]
    fn get(&self, out: &mut [*mut c_void]) -> u64 {
        let n = out.len() as u32;
        // SAFETY: a live ring; `out` has room for `n` pointers; one consumer
        // thread at a time (the SC contract).
        retry(|| unsafe {
            sys::rte_ring_sc_dequeue_bulk(self.0 .0, out.as_mut_ptr(), n, core::ptr::null_mut())
                == n
        })
    }
}

impl Contender for RteMpMc {
    #[inline(always)]
    fn put(&self, objs: &[*mut c_void]) -> u64 {
        let n = objs.len() as u32;
        // SAFETY: a live ring; `objs` holds `n` readable pointers.
        retry(|| unsafe {
            sys::rte_ring_mp_enqueue_bulk(self.0 .0, objs.as_ptr(), n, core::ptr::null_mut()) == n
        })
    }
    #[inline(always)]
    fn get(&self, out: &mut [*mut c_void]) -> u64 {
        let n = out.len() as u32;
        // SAFETY: a live ring; `out` has room for `n` pointers.
        retry(|| unsafe {
            sys::rte_ring_mc_dequeue_bulk(self.0 .0, out.as_mut_ptr(), n, core::ptr::null_mut())
                == n
        })
    }
}

/// crossbeam's bounded MPMC queue; a bulk is a loop of single pushes/pops.
/// Holds the objects as `usize` (raw pointers are not `Send`).
struct Crossbeam(ArrayQueue<usize>);

impl Contender for Crossbeam {
    #[inline(always)]
    fn put(&self, objs: &[*mut c_void]) -> u64 {
        objs.iter()
            .map(|&o| {
                let mut v = o as usize;
                retry(|| match self.0.push(v) {
                    Ok(()) => true,
                    Err(back) => {
                        v = back;
                        false
                    }
                })
            })
            .sum()
    }
    #[inline(always)]
    fn get(&self, out: &mut [*mut c_void]) -> u64 {
        out.iter_mut()
            .map(|o| {
                retry(|| match self.0.pop() {
                    Some(v) => {
                        *o = v as *mut c_void;
                        true
                    }
                    None => false,
                })
            })
            .sum()
    }
}

/// The rings of one run.
pub(crate) struct Contenders {
    /// MP/MC mode (producer and consumer locks), the default.
    pub(crate) ours: Ours,
    /// SP/SC mode (no locks): DPDK's `RING_F_SP_ENQ | RING_F_SC_DEQ`.
    pub(crate) ours_spsc: Ours,
    sp_sc: Option<RteSpSc>,
    mp_mc: Option<RteMpMc>,
    crossbeam: Crossbeam,
}

impl Contenders {
    pub(crate) fn new(eal: bool) -> Contenders {
        let layout = RingLayout::for_capacity(RING_OBJS).expect("ptr_ring of 1000");
        let ours = Ours(HeapRing::new(layout));
        // SAFETY: the SP/SC contenders run one producer and one consumer
        // thread at most (the two-thread cases: one of each).
        let spsc = unsafe { layout.with_single_producer(true).with_single_consumer(true) };
        let ours_spsc = Ours(HeapRing::new(spsc));
        assert!(ours.0.capacity() >= RING_OBJS);
        assert!(!ours.0.is_single_producer() && !ours.0.is_single_consumer());
        assert!(ours_spsc.0.is_single_producer() && ours_spsc.0.is_single_consumer());
        Contenders {
            ours,
            ours_spsc,
            sp_sc: eal
                .then(|| RteRing::create("bench_sp_sc", sys::RING_F_SP_ENQ | sys::RING_F_SC_DEQ))
                .flatten()
                .map(RteSpSc),
            mp_mc: eal
                .then(|| RteRing::create("bench_mp_mc", 0))
                .flatten()
                .map(RteMpMc),
            crossbeam: Crossbeam(ArrayQueue::new(RING_POW2)),
        }
    }

    /// Calls `f` with every contender present, in a fixed order (the two
    /// ptr_ring modes first: the rounds pass compares against them).
    pub(crate) fn each<'a>(&'a self, f: &mut dyn FnMut(&'static str, &'a dyn Runner)) {
        f("ptr_ring", &self.ours);
        f("ptr_ring_spsc", &self.ours_spsc);
        if let Some(r) = &self.sp_sc {
            f("rte_sp_sc", r);
        }
        if let Some(r) = &self.mp_mc {
            f("rte_mp_mc", r);
        }
        f("array_queue", &self.crossbeam);
    }
}

/// Object-safe entry points into the monomorphic loops (the dynamic call is
/// once per measurement, never per operation).
pub(crate) trait Runner: Sync {
    fn one_thread(&self, bulk: usize, iters: u64) -> Duration;
    fn two_threads(&self, bulk: usize, total: u64) -> PairRun;
}

impl<R: Contender> Runner for R {
    fn one_thread(&self, bulk: usize, iters: u64) -> Duration {
        run_1t(self, bulk, iters)
    }
    fn two_threads(&self, bulk: usize, total: u64) -> PairRun {
        run_2t(self, bulk, total)
    }
}
