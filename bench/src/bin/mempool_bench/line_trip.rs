//! The round trip of one cache line between the main lcore and the worker
//! lcore: what a two-lcore row pays each time a line one lcore wrote moves
//! to the other (a ring's index or lock, a slot). On this project's 2-vCPU
//! VMs it has been seen anywhere from about 60 to about 400 ns, with the
//! host's placement of the vCPUs, and the two-lcore rows' ratios move with
//! it; `mempool_bench` measures it just before and just after each such
//! row's rounds and writes it beside the row (`line2`).

use std::ffi::{c_int, c_void};
use std::hint::spin_loop;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;
use dpdk_sys as sys;

use crate::lane::tsc;

/// Round trips per batch, and batches: the figure is the median batch's
/// mean, so one batch the host interrupted does not move it. About 10 ms
/// at 400 ns.
const PER_BATCH: u64 = 2000;
const BATCHES: u64 = 11;

/// The line the two lcores pass between them: the main lcore writes an odd
/// value, the worker answers with the next even one.
struct Ball {
    line: CachePadded<AtomicU64>,
}

/// The worker's side: answers every odd value until the last.
///
/// # Safety
/// `arg` points to a [`Ball`] that outlives the launch.
unsafe extern "C" fn pong(arg: *mut c_void) -> c_int {
    // SAFETY: `round_trip_ns` waits for this lcore before the Ball goes
    // away; the Ball is only used through its atomic.
    let ball = unsafe { &*arg.cast::<Ball>() };
    let last = 2 * PER_BATCH * BATCHES;
    let mut want = 1;
    while want < last {
        // Acquire pairs with the main lcore's Release store of `want`.
        while ball.line.load(Ordering::Acquire) != want {
            spin_loop();
        }
        // Release pairs with the main lcore's Acquire wait for `want + 1`.
        ball.line.store(want + 1, Ordering::Release);
        want += 2;
    }
    0
}

/// Nanoseconds one cache line takes from the main lcore to `worker` and
/// back: the median over the batches of a batch's mean. The worker lcore
/// must be idle (EAL's WAIT state); it is again on return.
pub fn round_trip_ns(worker: u32, tsc_hz: f64) -> Result<f64, String> {
    let ball = Ball {
        line: CachePadded::new(AtomicU64::new(0)),
    };
    // SAFETY: `ball` outlives the launch (the wait below comes before it
    // goes away); the worker lcore is idle.
    let r = unsafe {
        sys::rte_eal_remote_launch(Some(pong), (&ball as *const Ball).cast_mut().cast(), worker)
    };
    if r != 0 {
        return Err(format!("rte_eal_remote_launch (line round trip): {r}"));
    }
    let mut batches = Vec::with_capacity(BATCHES as usize);
    let mut v = 1;
    for _ in 0..BATCHES {
        let start = tsc();
        for _ in 0..PER_BATCH {
            // Release pairs with the worker's Acquire wait.
            ball.line.store(v, Ordering::Release);
            // Acquire pairs with the worker's Release answer.
            while ball.line.load(Ordering::Acquire) != v + 1 {
                spin_loop();
            }
            v += 2;
        }
        batches.push((tsc() - start) as f64 / PER_BATCH as f64);
    }
    // SAFETY: the worker was launched above.
    let r = unsafe { sys::rte_eal_wait_lcore(worker) };
    if r != 0 {
        return Err(format!("worker lcore returned {r} (line round trip)"));
    }
    batches.sort_by(f64::total_cmp);
    Ok(batches[batches.len() / 2] / tsc_hz * 1e9)
}
