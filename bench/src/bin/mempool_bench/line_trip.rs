//! The round trip of one cache line between the main lcore and the worker
//! lcore (`bench::line`), measured just before and just after each
//! two-lcore row's rounds and written beside the row (`line2`).

use std::ffi::{c_int, c_void};

use bench::line::Ball;
use dpdk_sys as sys;

use crate::lane::tsc;

/// The worker's side: answers every odd value until the last.
///
/// # Safety
/// `arg` points to a [`Ball`] that outlives the launch.
unsafe extern "C" fn pong(arg: *mut c_void) -> c_int {
    // SAFETY: `round_trip_ns` waits for this lcore before the Ball goes
    // away; the Ball is only used through its atomic.
    let ball = unsafe { &*arg.cast::<Ball>() };
    ball.answer();
    0
}

/// Nanoseconds one cache line takes from the main lcore to `worker` and
/// back: the median over the batches of a batch's mean. The worker lcore
/// must be idle (EAL's WAIT state); it is again on return.
pub fn round_trip_ns(worker: u32, tsc_hz: f64) -> Result<f64, String> {
    let ball = Ball::default();
    // SAFETY: `ball` outlives the launch (the wait below comes before it
    // goes away); the worker lcore is idle.
    let r = unsafe {
        sys::rte_eal_remote_launch(Some(pong), (&ball as *const Ball).cast_mut().cast(), worker)
    };
    if r != 0 {
        return Err(format!("rte_eal_remote_launch (line round trip): {r}"));
    }
    let cycles = ball.ask(tsc);
    // SAFETY: the worker was launched above.
    let r = unsafe { sys::rte_eal_wait_lcore(worker) };
    if r != 0 {
        return Err(format!("worker lcore returned {r} (line round trip)"));
    }
    Ok(cycles / tsc_hz * 1e9)
}
