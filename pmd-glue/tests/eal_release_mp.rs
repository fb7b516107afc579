//! Exactly one party frees a pool, with a second process (needs hugepages:
//! shared memory; each case skips itself without them):
//!
//! * a secondary that frees the pool while the primary's alarm is due (its
//!   free held in the window by the destroy-event hook) leaves the
//!   primary's alarm nothing to touch;
//! * a secondary that claimed the release of the primary's pool and was
//!   killed: the primary's shutdown takes the release over.
//!
//! One binary, three roles: each test re-runs itself as primary and
//! secondary (`PTR_RING_TEST_REL_ROLE`), on a private file prefix removed at
//! the end.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::release_hook::{init_with_hook, lookup, wait_gone, STRETCH_MS};
use common::*;
use dpdk_sys as sys;
use rte_mempool_ptr_ring::api::MbufPool;
use rte_mempool_ptr_ring::port::{self, ShutdownOutcome};

const DATA_ROOM: u16 = sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16;
/// The role (primary, secondary) of a child, and its file prefix.
const ROLE_ENV: &str = "PTR_RING_TEST_REL_ROLE";
const PREFIX_ENV: &str = "PTR_RING_TEST_REL_PREFIX";
/// The pool the processes share.
const SHARED: &str = "rel_shared";

// ------------------------------------------------- a secondary frees the pool

#[test]
fn secondary_free() {
    match std::env::var(ROLE_ENV).as_deref() {
        Ok("primary") => return shared_primary(),
        Ok("secondary") => return shared_secondary(),
        _ => {}
    }
    if skip_without_hugepages("eal_release_mp/secondary_free") {
        return;
    }
    let prefix = format!("ptrring_rel_{}", std::process::id());
    let mut guard = Children {
        prefix: prefix.clone(),
        all: Vec::new(),
    };
    remove_prefix_files(&prefix);
    let (mut pri_in, pri_out) = guard.spawn("primary", &prefix);
    wait_line(&pri_out, "REL_CREATED");
    let (mut sec_in, sec_out) = guard.spawn("secondary", &prefix);
    wait_line(&sec_out, "REL_ATTACHED");
    // The primary shuts down (its alarm due in 1 s) and returns the mbuf;
    // at once the secondary frees the pool, its free held 1.5 s inside the
    // window: the alarm fires there.
    say(&mut pri_in, "shutdown");
    wait_line(&pri_out, "REL_ARMED");
    say(&mut sec_in, "free");
    wait_line(&sec_out, "REL_FREED");
    say(&mut pri_in, "check");
    wait_line(&pri_out, "REL_OK");
    for (i, c) in guard.all.iter_mut().enumerate() {
        let st = wait_timeout(c, 30, "child");
        assert!(st.success(), "child {i} failed: {st}");
    }
    eprintln!("test: a secondary's free during the primary's alarm is left to it");
}

/// The children of [`secondary_free`], killed and their files removed at
/// the end.
struct Children {
    prefix: String,
    all: Vec<Child>,
}

impl Children {
    fn spawn(&mut self, role: &str, prefix: &str) -> (ChildStdin, mpsc::Receiver<String>) {
        self.spawn_test("secondary_free", role, prefix)
    }

    /// Runs test `test` of this binary as a child in `role`.
    fn spawn_test(
        &mut self,
        test: &str,
        role: &str,
        prefix: &str,
    ) -> (ChildStdin, mpsc::Receiver<String>) {
        // Without address randomisation: DPDK's rte_mempool_free calls the
        // memory chunks' free callbacks, function pointers the primary
        // stored in shared memory, so a secondary can free the primary's
        // pool only where both map librte_mempool at the same address.
        let exe = std::env::current_exe().expect("current_exe");
        let mut c = std::process::Command::new("setarch")
            .arg(std::env::consts::ARCH)
            .arg("-R")
            .arg(exe)
            .args([test, "--exact", "--nocapture", "--test-threads=1"])
            .env(ROLE_ENV, role)
            .env(PREFIX_ENV, prefix)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn setarch -R");
        let stdin = c.stdin.take().expect("piped");
        let stdout = c.stdout.take().expect("piped");
        self.all.push(c);
        let (tx, rx) = mpsc::channel();
        let role = role.to_string();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                eprintln!("[{role}] {line}");
                let _ = tx.send(line);
            }
        });
        (stdin, rx)
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.all {
            let _ = c.kill();
            let _ = c.wait();
        }
        remove_prefix_files(&self.prefix);
    }
}

fn wait_line(rx: &mpsc::Receiver<String>, what: &str) {
    loop {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(l) if l.contains(what) => return,
            Ok(_) => continue,
            Err(e) => panic!("no {what} from the child: {e}"),
        }
    }
}

fn say(to: &mut ChildStdin, what: &str) {
    writeln!(to, "{what}")
        .and_then(|()| to.flush())
        .expect("to child");
}

/// The next line on stdin, which must be `what`.
fn expect_stdin(what: &str) {
    let mut l = String::new();
    std::io::stdin().read_line(&mut l).expect("stdin");
    assert_eq!(l.trim(), what);
}

fn shared_primary() {
    let prefix = std::env::var(PREFIX_ENV).expect("prefix");
    init_with_hook(&role_args("rel_primary", "primary", &prefix));
    let pool = MbufPool::create(SHARED, 256, 0, DATA_ROOM, -1).expect("pool");
    let m = pool.alloc().expect("alloc").into_raw();
    println!("REL_CREATED");
    expect_stdin("shutdown");
    let out = pool
        .shutdown(&[], Duration::from_millis(20))
        .expect("shutdown");
    assert_eq!(out, ShutdownOutcome::Deferred { inflight: 1 });
    let t = Instant::now();
    // SAFETY: our mbuf; its pool is alive.
    unsafe { sys::rte_pktmbuf_free(m) };
    println!("REL_ARMED");
    let ((), log) = capture_log(|| {
        expect_stdin("check");
        // Past the alarm's first run, and a second one.
        std::thread::sleep(Duration::from_millis(2500).saturating_sub(t.elapsed()));
    });
    assert!(
        log.contains("its pool is no longer on DPDK's mempool list"),
        "the primary's alarm saw the pool unlisted:\n{log}"
    );
    assert!(
        !log.contains("freeing it"),
        "the primary's alarm freed the pool as well:\n{log}"
    );
    assert_eq!(port::deferred_releases_pending(), 0);
    assert!(lookup(SHARED).is_null(), "the secondary freed it");
    println!("REL_OK");
}

fn shared_secondary() {
    let prefix = std::env::var(PREFIX_ENV).expect("prefix");
    init_with_hook(&role_args("rel_secondary", "secondary", &prefix));
    let mp = lookup(SHARED);
    assert!(!mp.is_null(), "the primary's pool");
    println!("REL_ATTACHED");
    expect_stdin("free");
    STRETCH_MS.store(1500, Ordering::SeqCst);
    // SAFETY: a live pool, freed once, by this process.
    unsafe { sys::rte_mempool_free(mp) };
    println!("REL_FREED");
}

// ------------------------------------------- a claimant that died

#[test]
fn dead_claimant_taken_over() {
    match std::env::var(ROLE_ENV).as_deref() {
        Ok("primary") => return claimant_primary(),
        Ok("secondary") => return claimant_secondary(),
        _ => {}
    }
    if skip_without_hugepages("eal_release_mp/dead_claimant_taken_over") {
        return;
    }
    let prefix = format!("ptrring_dead_{}", std::process::id());
    let mut guard = Children {
        prefix: prefix.clone(),
        all: Vec::new(),
    };
    remove_prefix_files(&prefix);
    let (mut pri_in, pri_out) = guard.spawn_test("dead_claimant_taken_over", "primary", &prefix);
    wait_line(&pri_out, "REL_CREATED");
    let (_sec_in, sec_out) = guard.spawn_test("dead_claimant_taken_over", "secondary", &prefix);
    wait_line(&sec_out, "REL_CLAIMED");
    // The secondary dies holding the release of the primary's pool.
    let sec = guard.all.last_mut().expect("secondary");
    sec.kill().expect("SIGKILL the secondary");
    let _ = sec.wait();
    say(&mut pri_in, "shutdown");
    wait_line(&pri_out, "REL_OK");
    let st = wait_timeout(&mut guard.all[0], 30, "primary");
    assert!(st.success(), "primary failed: {st}");
    eprintln!("test: a release claimed by a process that died is taken over");
}

fn claimant_primary() {
    let prefix = std::env::var(PREFIX_ENV).expect("prefix");
    init_with_hook(&role_args("dead_primary", "primary", &prefix));
    let pool = MbufPool::create(SHARED, 256, 0, DATA_ROOM, -1).expect("pool");
    let mp = pool.as_ptr();
    let m = pool.alloc().expect("alloc").into_raw();
    println!("REL_CREATED");
    expect_stdin("shutdown");
    std::mem::forget(pool);
    // SAFETY: a live pool (one mbuf out); no lcore uses it.
    let (r, log) = capture_log(|| unsafe { port::shutdown_ports(&[], mp, Duration::ZERO) });
    assert_eq!(
        r.expect("taken over"),
        ShutdownOutcome::Deferred { inflight: 1 }
    );
    assert!(
        log.contains("which has exited without finishing it: taking it over"),
        "{log}"
    );
    // SAFETY: our mbuf; the pool is alive.
    unsafe { sys::rte_pktmbuf_free(m) };
    wait_gone(SHARED, Duration::from_secs(3));
    println!("REL_OK");
}

fn claimant_secondary() {
    let prefix = std::env::var(PREFIX_ENV).expect("prefix");
    init_with_hook(&role_args("dead_secondary", "secondary", &prefix));
    let mp = lookup(SHARED);
    assert!(!mp.is_null(), "the primary's pool");
    // SAFETY: a live pool (the primary holds an mbuf); no lcore uses it.
    let r = unsafe { port::shutdown_ports(&[], mp, Duration::ZERO) };
    assert_eq!(
        r.expect("claimed"),
        ShutdownOutcome::Deferred { inflight: 1 }
    );
    println!("REL_CLAIMED");
    // Killed here by the parent.
    std::thread::sleep(Duration::from_secs(30));
}
