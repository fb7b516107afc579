//! The loom runner shared by the `loom_*` tests: a preemption bound unless
//! `LOOM_MAX_PREEMPTIONS` sets one, the number of executions explored on
//! stderr (`--nocapture`), and a failure when loom explored only one.
//!
//! Every model spawns at least one thread beside its main one, so a single
//! execution means that loom never switched threads at a point where it
//! mattered, not that the interleavings were checked. It happens: a checker
//! thread that only loads after the spawn was never preempted before its
//! loads until the main thread yielded once (`thread::yield_now()`; see
//! bench/NOTES.md, "The handler's own cache at bulk 1").
#![allow(dead_code)]

use std::panic::Location;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Runs `f` under loom, named `name` in the report, with preemption bound
/// `bound` where `LOOM_MAX_PREEMPTIONS` sets none (`None`: unbounded).
/// Panics when loom explored a single execution.
pub fn run(name: &str, bound: Option<usize>, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = bound;
    }
    let bound = b.preemption_bound;
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let t0 = std::time::Instant::now();
    b.check(move || {
        // Relaxed: a count read after `check` returns, on this thread.
        counter.fetch_add(1, Ordering::Relaxed);
        f()
    });
    // Relaxed: as above.
    let runs = runs.load(Ordering::Relaxed);
    eprintln!(
        "{name}: {runs} executions, preemption bound {bound:?}, {:.2?}",
        t0.elapsed()
    );
    assert!(
        runs > 1,
        "{name}: loom explored a single execution, so no interleaving was checked \
         (a thread that only loads after a spawn needs the spawner to yield first)"
    );
}

/// [`run`] with the preemption bound of the ring models (3), named by the
/// caller's source location.
#[track_caller]
pub fn model(f: impl Fn() + Sync + Send + 'static) {
    run(&format!("model at {}", Location::caller()), Some(3), f);
}
