//! One timed run: the lanes (threads) that get and put, and what they count.

use std::ffi::{c_int, c_void};
use std::hint::spin_loop;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use bench::record::Pattern;
use crossbeam_utils::CachePadded;
use dpdk_sys as sys;

/// Loop iterations between two looks at the clock (leader) or at the stop
/// flag (follower): rare enough that `rdtsc` costs < 1% even at bulk 1.
const CHECK_EVERY: u32 = 64;

/// What one lane counted in one run.
#[derive(Default)]
pub struct Lane {
    /// Objects got from the pool.
    pub got: AtomicU64,
    /// Objects put back to the pool.
    pub put: AtomicU64,
    /// TSC cycles from the start signal to the lane's own stop.
    pub cycles: AtomicU64,
    /// Gets that found the pool empty, or polls that found the hand-over
    /// ring empty.
    pub misses: AtomicU64,
    /// The thread's CPU time over the same span, in ns.
    pub cpu_ns: AtomicU64,
}

/// One timed run, shared by the lanes.
pub struct Job {
    pub mp: *mut sys::rte_mempool,
    pub ring: *mut sys::rte_ring,
    pub bulk: u32,
    pub kept: u32,
    pub pattern: Pattern,
    /// Pointers the lanes' tables start past their allocation's start
    /// (`placement::Spot::skew`).
    pub skew: usize,
    /// Run length in TSC cycles (lane 0 watches the clock).
    pub duration: u64,
    /// Worker lanes that are spinning on `go`.
    pub ready: AtomicU32,
    /// Start signal (lane 0 -> lane 1).
    pub go: AtomicBool,
    /// Stop signal (lane 0 -> lane 1).
    pub stop: AtomicBool,
    /// Set by a lane that ran on an unregistered non-EAL thread.
    pub non_eal: AtomicBool,
    pub lanes: [CachePadded<Lane>; 2],
}

// SAFETY: the raw pointers are DPDK objects that are safe to use from any
// thread (MP/MC pool, SP/SC ring used by one producer and one consumer lane).
unsafe impl Sync for Job {}
// SAFETY: as above.
unsafe impl Send for Job {}

/// Reads the TSC.
#[inline(always)]
pub fn tsc() -> u64 {
    // SAFETY: reads the time-stamp counter; no preconditions.
    unsafe { sys::rte_get_tsc_cycles() }
}

/// CPU time of the calling thread, in ns.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-parameter; CLOCK_THREAD_CPUTIME_ID always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The objects a lane holds: `kept / bulk + 1` chunks of `bulk` pointers, a
/// FIFO of chunks (so that every get and put is one contiguous table).
struct Fifo {
    /// `skew` unused pointers, then the chunks.
    slots: Vec<*mut c_void>,
    skew: usize,
    bulk: usize,
    chunks: usize,
    /// Next chunk to fill.
    head: usize,
    /// Oldest chunk held.
    tail: usize,
    /// Chunks held.
    held: usize,
}

impl Fifo {
    fn new(bulk: u32, kept: u32, skew: usize) -> Fifo {
        let bulk = bulk as usize;
        let chunks = kept as usize / bulk + 1;
        Fifo {
            slots: vec![null_mut(); skew + chunks * bulk],
            skew,
            bulk,
            chunks,
            head: 0,
            tail: 0,
            held: 0,
        }
    }

    fn head_ptr(&mut self) -> *mut *mut c_void {
        // SAFETY: head < chunks, so the chunk lies inside `slots`.
        unsafe {
            self.slots
                .as_mut_ptr()
                .add(self.skew + self.head * self.bulk)
        }
    }

    fn tail_ptr(&mut self) -> *mut *mut c_void {
        // SAFETY: tail < chunks.
        unsafe {
            self.slots
                .as_mut_ptr()
                .add(self.skew + self.tail * self.bulk)
        }
    }

    /// The chunk at head was filled.
    fn push(&mut self) {
        self.head = (self.head + 1) % self.chunks;
        self.held += 1;
    }

    /// The oldest chunk, when more than `kept` objects are held.
    fn full(&self) -> bool {
        self.held == self.chunks
    }

    fn pop(&mut self) {
        self.tail = (self.tail + 1) % self.chunks;
        self.held -= 1;
    }
}

/// Runs `step` until the run ends; returns (successful steps, failed steps).
#[inline(always)]
fn drive(job: &Job, leader: bool, deadline: u64, mut step: impl FnMut() -> bool) -> (u64, u64) {
    let (mut ok, mut missed) = (0u64, 0u64);
    loop {
        for _ in 0..CHECK_EVERY {
            if step() {
                ok += 1;
            } else {
                missed += 1;
            }
        }
        if leader {
            if tsc() >= deadline {
                // The follower only needs to see the flag eventually; its
                // counts are read after it was joined, which synchronises.
                job.stop.store(true, Ordering::Relaxed);
                break;
            }
        } else if job.stop.load(Ordering::Relaxed) {
            break;
        }
    }
    (ok, missed)
}

/// One lane of a run: lane 0 leads (main lcore, or the non-EAL thread),
/// lane 1 follows (worker lcore).
pub fn run_lane(job: &Job, lane: usize) {
    let leader = lane == 0;
    if sys::lcore_id() == sys::LCORE_ID_ANY {
        job.non_eal.store(true, Ordering::Relaxed);
    }
    let (mp, ring, n) = (job.mp, job.ring, job.bulk);
    // Burst fills to exactly `kept`; the others hold `kept` plus the newest bulk.
    let kept = match job.pattern {
        Pattern::Burst => job.kept.max(n) - n,
        _ => job.kept,
    };
    let mut fifo = Fifo::new(n, kept, job.skew);
    let mut table = vec![null_mut::<c_void>(); job.skew + n as usize];
    let table = &mut table[job.skew..];
    if !leader {
        job.ready.fetch_add(1, Ordering::Release);
        // Pairs with the Release store of `go` in `measure`.
        while !job.go.load(Ordering::Acquire) {
            spin_loop();
        }
    }
    let cpu_start = thread_cpu_ns();
    let start = tsc();
    let deadline = start + job.duration;
    let mut puts = 0u64;
    let (ok, missed) = match (job.pattern, leader) {
        (Pattern::Recycle | Pattern::FreeOne, _) | (Pattern::Handoff, true) => {
            let handoff = job.pattern == Pattern::Handoff;
            let one_by_one = job.pattern == Pattern::FreeOne;
            drive(job, leader, deadline, || {
                // SAFETY: `mp` is a live pool; the head chunk has room for `n`
                // pointers and is this lane's own.
                if unsafe { sys::rte_mempool_get_bulk(mp, fifo.head_ptr(), n) } != 0 {
                    return false;
                }
                fifo.push();
                if fifo.full() {
                    let oldest = fifo.tail_ptr();
                    if handoff {
                        // SAFETY: `ring` is live and this lane is its only
                        // producer; the consumer drains it until told to stop.
                        while unsafe { sys::rte_ring_enqueue_bulk(ring, oldest, n, null_mut()) }
                            == 0
                        {
                            spin_loop();
                        }
                    } else if one_by_one {
                        for i in 0..n as usize {
                            // SAFETY: object `i < n` of the oldest chunk,
                            // which came from `mp`.
                            unsafe { sys::rte_mempool_put_bulk(mp, oldest.add(i), 1) };
                        }
                        puts += 1;
                    } else {
                        // SAFETY: the `n` objects of the oldest chunk came from `mp`.
                        unsafe { sys::rte_mempool_put_bulk(mp, oldest, n) };
                        puts += 1;
                    }
                    fifo.pop();
                }
                true
            })
        }
        (Pattern::Burst, _) => {
            let mut filling = true;
            drive(job, leader, deadline, || {
                if filling {
                    // SAFETY: as in the recycle loop.
                    if unsafe { sys::rte_mempool_get_bulk(mp, fifo.head_ptr(), n) } != 0 {
                        return false;
                    }
                    fifo.push();
                    filling = !fifo.full();
                } else {
                    let oldest = fifo.tail_ptr();
                    // SAFETY: the `n` objects of the oldest chunk came from `mp`.
                    unsafe { sys::rte_mempool_put_bulk(mp, oldest, n) };
                    puts += 1;
                    fifo.pop();
                    filling = fifo.held == 0;
                }
                true
            })
        }
        (Pattern::Handoff, false) => drive(job, leader, deadline, || {
            // SAFETY: `ring` is live and this lane is its only consumer;
            // `table` has room for `n` pointers.
            let got =
                unsafe { sys::rte_ring_dequeue_bulk(ring, table.as_mut_ptr(), n, null_mut()) } == n;
            if got {
                // SAFETY: the objects came from `mp` through the ring.
                unsafe { sys::rte_mempool_put_bulk(mp, table.as_mut_ptr(), n) };
                puts += 1;
            }
            got
        }),
    };
    let end = tsc();
    let cpu_end = thread_cpu_ns();
    // Untimed: give back what the lane still holds.
    while fifo.held > 0 {
        let oldest = fifo.tail_ptr();
        // SAFETY: the held chunks came from `mp`.
        unsafe { sys::rte_mempool_put_bulk(mp, oldest, n) };
        fifo.pop();
    }
    let l = &job.lanes[lane];
    l.cpu_ns.store(cpu_end - cpu_start, Ordering::Relaxed);
    let got = if job.pattern == Pattern::Handoff && !leader {
        0
    } else {
        ok
    };
    l.got.store(got * u64::from(n), Ordering::Relaxed);
    l.put.store(puts * u64::from(n), Ordering::Relaxed);
    l.misses.store(missed, Ordering::Relaxed);
    l.cycles.store(end - start, Ordering::Relaxed);
}

/// Entry point of the worker lcore (`rte_eal_remote_launch`).
pub unsafe extern "C" fn worker_entry(arg: *mut c_void) -> c_int {
    // SAFETY: `measure` passes a pointer to a Job that outlives the launch
    // (it waits with rte_eal_wait_lcore before the Job goes away); the Job is
    // only accessed through shared references and atomics.
    let job = unsafe { &*arg.cast::<Job>() };
    run_lane(job, 1);
    0
}
