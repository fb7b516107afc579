//! The round trip of one cache line between two threads on two CPUs: what
//! a two-lcore workload pays each time a line one side wrote moves to the
//! other (a ring's index or lock, a slot, an mbuf's header). On this
//! project's 2-vCPU VMs it has been seen anywhere from about 60 to about
//! 400 ns, with the host's placement of the vCPUs, and the two-lcore rows
//! move with it. `mempool_bench` measures it between its two lcores
//! beside each two-lcore row; the `line_trip` binary between two CPUs,
//! beside the runs of testpmd's cross-lcore pipeline (`bench/run.sh`).

use std::hint::spin_loop;
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

/// Round trips per batch, and batches: the figure is the median batch's
/// mean, so one batch the host interrupted does not move it. About 10 ms
/// at 400 ns.
pub const PER_BATCH: u64 = 2000;
pub const BATCHES: u64 = 11;

/// The line the two sides pass between them: the asking side writes an
/// odd value, the answering side the next even one.
#[derive(Default)]
pub struct Ball {
    line: CachePadded<AtomicU64>,
}

impl Ball {
    /// The answering side: answers every odd value until the last of
    /// [`Ball::ask`]'s batches.
    pub fn answer(&self) {
        let last = 2 * PER_BATCH * BATCHES;
        let mut want = 1;
        while want < last {
            // Acquire pairs with `ask`'s Release store of `want`.
            while self.line.load(Ordering::Acquire) != want {
                spin_loop();
            }
            // Release pairs with `ask`'s Acquire wait for `want + 1`.
            self.line.store(want + 1, Ordering::Release);
            want += 2;
        }
    }

    /// The asking side, while another CPU runs [`Ball::answer`] on the
    /// same ball: the median over [`BATCHES`] batches of a batch's mean
    /// round trip, in the units of `clock` (TSC cycles, nanoseconds).
    pub fn ask(&self, clock: impl Fn() -> u64) -> f64 {
        let mut batches = Vec::with_capacity(BATCHES as usize);
        let mut v = 1;
        for _ in 0..BATCHES {
            let start = clock();
            for _ in 0..PER_BATCH {
                // Release pairs with `answer`'s Acquire wait.
                self.line.store(v, Ordering::Release);
                // Acquire pairs with `answer`'s Release store.
                while self.line.load(Ordering::Acquire) != v + 1 {
                    spin_loop();
                }
                v += 2;
            }
            batches.push(clock().wrapping_sub(start) as f64 / PER_BATCH as f64);
        }
        batches.sort_by(f64::total_cmp);
        batches[batches.len() / 2]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two threads (wherever the OS puts them) finish every batch, and the
    /// figure is a positive time, below the test's whole run.
    #[test]
    fn a_round_trip_between_two_threads() {
        let ball = Ball::default();
        let t0 = std::time::Instant::now();
        let ns = std::thread::scope(|s| {
            s.spawn(|| ball.answer());
            ball.ask(|| t0.elapsed().as_nanos() as u64)
        });
        assert!(ns > 0.0, "{ns}");
        assert!(ns * (PER_BATCH * BATCHES) as f64 <= t0.elapsed().as_nanos() as f64);
    }
}
