//! A process that dies holding the DMA table's lock (the `PR-DMA` memzone
//! every process of a DPDK instance shares) hangs no other process: the
//! next user takes the lock over within about a millisecond of spinning,
//! reports it, and the table works on. A live holder is waited for.
//!
//! Three processes: this test's (no EAL) runs a primary, which makes the
//! table and runs a secondary; the secondary takes the table lock and exits
//! without letting it go. The primary then reads the table
//! (`port::mapped_runs`, which takes the lock) on a thread it gives five
//! seconds. Needs hugepages (a secondary shares the primary's memory): with
//! `--no-huge` it says `test: SKIP`.

mod common;

use std::sync::mpsc;
use std::time::Duration;

use common::*;
use rte_mempool_ptr_ring::port;

/// Selects the process: `primary` or `secondary`.
const ROLE_ENV: &str = "EAL_DMA_TAKEOVER_ROLE";
/// Their EAL file prefix.
const PREFIX_ENV: &str = "EAL_DMA_TAKEOVER_PREFIX";

/// Runs `f` on a thread; `None` when it has not returned within `secs`.
fn within<R: Send + 'static>(secs: u64, f: impl FnOnce() -> R + Send + 'static) -> Option<R> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs)).ok()
}

fn primary(prefix: &str) {
    init_eal(&role_args("dma_takeover_primary", "primary", prefix));
    let lock = port::dma_table_lock_for_tests().expect("the DMA table");
    assert_eq!(lock.holder(), 0, "a fresh table's lock is free");

    // A live holder (this process, from another thread) is waited for.
    let held = lock.lock("DMA domain table lock");
    assert!(
        within(1, port::mapped_runs).is_none(),
        "the table was read while a live process held its lock"
    );
    drop(held);

    let mut child = rerun_self(
        test_name_of(&a_process_dead_inside_the_dma_table_lock_hangs_no_other),
        &[(ROLE_ENV, "secondary"), (PREFIX_ENV, prefix)],
        false,
    );
    let st = wait_timeout(&mut child, 60, "secondary");
    assert!(st.success(), "secondary failed: {st}");
    let dead = lock.holder();
    assert_ne!(dead, 0, "the secondary left the lock held");

    let before = mempool::owner::takeovers();
    let runs = within(5, port::mapped_runs)
        .expect("the table's lock, held by a dead process, was not taken over in 5 s");
    assert_eq!(runs, vec![], "nothing was mapped");
    assert_eq!(lock.holder(), 0, "the taker let the lock go");
    assert_eq!(
        mempool::owner::takeovers(),
        before + 1,
        "one takeover, counted"
    );
    eprintln!("test: primary: the lock of dead owner {dead} was taken over");
}

fn secondary(prefix: &str) {
    init_eal(&role_args("dma_takeover_secondary", "secondary", prefix));
    let lock = port::dma_table_lock_for_tests().expect("the primary's DMA table");
    let guard = lock.lock("DMA domain table lock");
    eprintln!("test: secondary: holds the DMA table lock, exits");
    // Dies holding it: no unlock, no EAL cleanup.
    std::mem::forget(guard);
    // SAFETY: ends the process at once.
    unsafe { libc::_exit(0) };
}

#[test]
fn a_process_dead_inside_the_dma_table_lock_hangs_no_other() {
    if let Ok(prefix) = std::env::var(PREFIX_ENV) {
        match std::env::var(ROLE_ENV).as_deref() {
            Ok("primary") => return primary(&prefix),
            Ok("secondary") => return secondary(&prefix),
            other => panic!("unknown role {other:?}"),
        }
    }
    if skip_without_hugepages("eal_dma_table_takeover") {
        return;
    }
    run_primary_child(
        test_name_of(&a_process_dead_inside_the_dma_table_lock_hangs_no_other),
        ROLE_ENV,
        PREFIX_ENV,
        "ptrring_dmatk",
        120,
    );
}
