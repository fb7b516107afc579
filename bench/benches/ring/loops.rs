//! The timed loops: one thread putting and getting, and a producer and a
//! consumer thread on two CPUs.

use std::ffi::c_void;
use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use crate::contenders::Contender;
use crate::{CONSUMER_CPU, MAX_BULK, PRODUCER_CPU};

/// Pins the calling thread to `cpu` (ignored, with a note, if that fails:
/// the numbers are then less stable, not wrong).
pub(crate) fn pin(cpu: usize) {
    // SAFETY: `cpu_set_t` is plain data, valid zeroed; CPU_SET indexes within
    // it (cpu < CPU_SETSIZE) and sched_setaffinity only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = core::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            eprintln!(
                "ring bench: cannot pin to CPU {cpu}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

/// Objects `1..=MAX_BULK` as pointers.
fn objects() -> [*mut c_void; MAX_BULK] {
    core::array::from_fn(|i| (i + 1) as *mut c_void)
}

/// One thread: `iters` times, enqueue `bulk` objects and dequeue them again.
#[inline(never)]
pub(crate) fn run_1t<R: Contender>(r: &R, bulk: usize, iters: u64) -> Duration {
    let objs = objects();
    let mut out = [core::ptr::null_mut(); MAX_BULK];
    let objs = black_box(&objs[..bulk]);
    let start = Instant::now();
    for _ in 0..iters {
        r.put(objs);
        r.get(&mut out[..bulk]);
        black_box(&out);
    }
    start.elapsed()
}

/// Result of one two-thread run.
pub(crate) struct PairRun {
    pub(crate) elapsed: Duration,
    /// Failed enqueue tries (ring full).
    pub(crate) put_fails: u64,
    /// Failed dequeue tries (ring empty).
    pub(crate) get_fails: u64,
    /// Involuntary context switches of the two threads during the run: a
    /// run with any was disturbed by another process (its partner then spins
    /// for a whole time slice).
    pub(crate) preempted: u64,
}

/// Involuntary context switches of the calling thread so far.
pub(crate) fn involuntary_switches() -> u64 {
    // SAFETY: `rusage` is plain data, valid zeroed; getrusage writes it.
    unsafe {
        let mut ru: libc::rusage = core::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_THREAD, &mut ru) != 0 {
            return 0;
        }
        ru.ru_nivcsw as u64
    }
}

/// Two threads: a producer on [`PRODUCER_CPU`] enqueues objects `1..=total`
/// in bulks of `bulk`, a consumer on [`CONSUMER_CPU`] dequeues them in bulks
/// of `bulk` and checks their sum. Time from the producer's start to the
/// consumer's last dequeue. `total` is a multiple of `bulk`.
pub(crate) fn run_2t<R: Contender>(r: &R, bulk: usize, total: u64) -> PairRun {
    assert_eq!(total % bulk as u64, 0);
    let start = Barrier::new(2);
    let (t0, put_fails, pre, (t1, get_fails, sum, cpre)) = std::thread::scope(|s| {
        let consumer = s.spawn(|| {
            pin(CONSUMER_CPU);
            let mut out = [core::ptr::null_mut(); MAX_BULK];
            let out = &mut out[..bulk];
            let mut sum = 0u64;
            let mut fails = 0u64;
            let mut got = 0u64;
            start.wait();
            let nivcsw = involuntary_switches();
            while got < total {
                fails += r.get(out);
                for &o in out.iter() {
                    sum = sum.wrapping_add(o as u64);
                }
                got += bulk as u64;
            }
            let t1 = Instant::now();
            (t1, fails, sum, involuntary_switches() - nivcsw)
        });
        pin(PRODUCER_CPU);
        let mut objs = [core::ptr::null_mut(); MAX_BULK];
        let objs = &mut objs[..bulk];
        let mut next = 1u64;
        let mut fails = 0u64;
        start.wait();
        let t0 = Instant::now();
        let nivcsw = involuntary_switches();
        while next <= total {
            for o in objs.iter_mut() {
                *o = next as *mut c_void;
                next += 1;
            }
            fails += r.put(objs);
        }
        let pre = involuntary_switches() - nivcsw;
        (t0, fails, pre, consumer.join().expect("consumer thread"))
    });
    assert_eq!(sum, total * (total + 1) / 2, "objects lost or duplicated");
    PairRun {
        elapsed: t1.saturating_duration_since(t0),
        put_fails,
        get_fails,
        preempted: pre + cpre,
    }
}
