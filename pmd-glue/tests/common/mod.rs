//! Shared helpers of the EAL integration tests (`tests/eal_*.rs`).
//!
//! EAL initialises once per process, so every test file holds one `#[test]`
//! that runs its steps in order. Tests that need a different process
//! environment (validation mode is read from the environment when the
//! handler loads, before `main`; multi-process runs) re-run their own test
//! binary as a child with [`rerun_self`].
#![allow(dead_code)]

use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use dpdk_sys as sys;
use mempool::PoolStats;
use rte_mempool_ptr_ring::api::{self, MbufPool};

/// What `scripts/setup.sh` chose for this machine (`build/eal-mem.env`, or
/// the file named by `PTR_RING_EAL_ENV`), read by the one implementation
/// that the example and the ring benchmark share.
#[path = "../../../scripts/eal_mem.rs"]
mod eal_mem_file;
pub mod release_hook;
pub use eal_mem_file::eal_mem;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// EAL arguments of a single-process test: the machine's memory arguments,
/// no PCI, lcores `lcores`, the handler's debug log, no telemetry socket
/// (several test processes may run at once).
pub fn eal_args(prog: &str, lcores: &str) -> Vec<String> {
    let mut v = vec![prog.to_string()];
    v.extend(eal_mem().args);
    v.extend(
        [
            "--no-pci",
            "--no-telemetry",
            "-l",
            lcores,
            "--log-level=pmd.mempool.ptr_ring:debug",
            "--log-level=lib.eal:notice",
        ]
        .map(String::from),
    );
    v
}

/// Registers the handler (the rlib, no `-d`) and initialises EAL.
pub fn init_eal(args: &[String]) {
    let idx = api::ensure_registered().expect("ptr_ring ops registered in-process");
    eprintln!("test: ptr_ring ops at index {idx}; EAL args {args:?}");
    api::eal_init(args).expect("rte_eal_init");
}

/// Objects in DPDK's own per-lcore cache of `mp` for `lcore` (0 without one).
pub fn dpdk_cache_len(mp: *mut sys::rte_mempool, lcore: u32) -> u32 {
    // SAFETY: a live pool; the result is null or that lcore's cache.
    let c = unsafe { sys::rte_mempool_default_cache(mp, lcore) };
    if c.is_null() {
        0
    } else {
        // SAFETY: a live cache.
        unsafe { (*c).len }
    }
}

/// Flushes DPDK's cache of `lcore` back to the handler.
pub fn dpdk_cache_flush(mp: *mut sys::rte_mempool, lcore: u32) {
    // SAFETY: a live pool; flushing a null cache is a no-op.
    unsafe {
        let c = sys::rte_mempool_default_cache(mp, lcore);
        if !c.is_null() {
            sys::rte_mempool_cache_flush(c, mp);
        }
    }
}

/// Checks `populated == in_ring + in_caches + inflight` and
/// `populated == size`, and returns the stats.
pub fn conserved(pool: &MbufPool, phase: &str) -> PoolStats {
    let s = pool.stats().expect("stats of a ptr_ring pool");
    check_stats(&s, pool.size() as usize, phase);
    s
}

/// The conservation checks on a stats snapshot.
pub fn check_stats(s: &PoolStats, size: usize, phase: &str) {
    eprintln!(
        "test: [{phase}] populated {} in_ring {} in_caches {} inflight {} hold {} release {} rejected {:?}",
        s.populated, s.in_ring, s.in_caches, s.inflight, s.hold, s.release, s.rejected
    );
    assert_eq!(s.populated, size, "[{phase}] every object populated");
    assert_eq!(
        s.populated as i64,
        (s.in_ring + s.in_caches) as i64 + s.inflight,
        "[{phase}] conservation: populated == in_ring + in_caches + inflight ({s:?})"
    );
}

/// `rte_errno` as text.
pub fn strerror(e: i32) -> String {
    // SAFETY: rte_strerror returns a static string.
    unsafe { CStr::from_ptr(sys::rte_strerror(e.abs())) }
        .to_string_lossy()
        .into_owned()
}

/// The name of the test function `f`, for [`rerun_self`]: taken from the
/// function itself, so a renamed test cannot leave its children filtering
/// on an old name (a filter that matches nothing runs no test and passes).
pub fn test_name_of<F: Fn()>(f: &F) -> &'static str {
    let path = std::any::type_name_of_val(f);
    path.rsplit("::").next().unwrap_or(path)
}

/// Runs this test binary again as a child running only `test_name`, with
/// `envs` added; stdin and stdout are piped when `pipe_io`.
pub fn rerun_self(test_name: &str, envs: &[(&str, &str)], pipe_io: bool) -> Child {
    let exe = std::env::current_exe().expect("current_exe");
    let mut cmd = Command::new(exe);
    cmd.args([test_name, "--exact", "--nocapture", "--test-threads=1"]);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    if pipe_io {
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
    }
    cmd.spawn().expect("spawn test child")
}

/// Runs this test binary again as the primary of a multi-process test:
/// test `test_name` with `role_env=primary` and `prefix_env` set to a fresh
/// EAL file prefix (`<base>_<pid>`, its files removed before and after);
/// panics unless it succeeds within `secs` seconds.
pub fn run_primary_child(test_name: &str, role_env: &str, prefix_env: &str, base: &str, secs: u64) {
    let prefix = format!("{base}_{}", std::process::id());
    remove_prefix_files(&prefix);
    let mut child = rerun_self(
        test_name,
        &[(role_env, "primary"), (prefix_env, prefix.as_str())],
        false,
    );
    let st = wait_timeout(&mut child, secs, "primary");
    remove_prefix_files(&prefix);
    assert!(st.success(), "primary failed: {st}");
}

/// Waits for `child` at most `secs` seconds; kills it on timeout.
pub fn wait_timeout(child: &mut Child, secs: u64, what: &str) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            return st;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: no exit within {secs} s, killed");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Runs `f` with DPDK's log going to a temporary file as well as being
/// echoed to stderr afterwards; returns what was logged.
pub fn capture_log<R>(f: impl FnOnce() -> R) -> (R, String) {
    use std::io::{Read, Seek};
    let file = tempfile_rw();
    let fd = {
        use std::os::fd::AsRawFd;
        file.as_raw_fd()
    };
    // SAFETY: a fresh duplicate of our fd, opened for writing; DPDK writes
    // log lines to it until we put the default stream back.
    let stream = unsafe { libc::fdopen(libc::dup(fd), c"w".as_ptr()) };
    assert!(!stream.is_null(), "fdopen");
    // SAFETY: a valid FILE (libc's and bindgen's FILE are the same struct).
    unsafe { sys::rte_openlog_stream(stream.cast()) };
    let r = f();
    // SAFETY: restore the default stream (stderr), then close ours.
    unsafe {
        sys::rte_openlog_stream(core::ptr::null_mut());
        libc::fclose(stream);
    }
    let mut file = file;
    file.rewind().expect("rewind");
    let mut text = String::new();
    file.read_to_string(&mut text).expect("read log");
    eprint!("{text}");
    (r, text)
}

fn tempfile_rw() -> std::fs::File {
    let path = std::env::temp_dir().join(format!(
        "ptr_ring_test_log.{}.{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .expect("temp log file");
    let _ = std::fs::remove_file(&path);
    f
}

/// A fresh private anonymous read-write mapping of `len` bytes (panics when
/// mmap fails); the caller unmaps it.
pub fn map_anon(len: usize) -> *mut core::ffi::c_void {
    // SAFETY: a new anonymous private mapping, no address hint; checked below.
    let addr = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(addr, libc::MAP_FAILED, "mmap {len} bytes");
    addr
}

/// Removes what EAL leaves behind for a file prefix: its runtime directory
/// and its hugepage files.
pub fn remove_prefix_files(prefix: &str) {
    let _ = std::fs::remove_dir_all(Path::new("/var/run/dpdk").join(prefix));
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    for m in mounts
        .lines()
        .filter(|l| l.split_whitespace().nth(2) == Some("hugetlbfs"))
    {
        let Some(dir) = m.split_whitespace().nth(1) else {
            continue;
        };
        if let Ok(rd) = std::fs::read_dir(dir) {
            for e in rd.flatten() {
                if e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{prefix}map_"))
                {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }
}

/// EAL arguments of one process of a multi-process test: `proc_type`
/// (primary or secondary) on the private file prefix `prefix`, lcore 0.
pub fn role_args(prog: &str, proc_type: &str, prefix: &str) -> Vec<String> {
    [
        prog,
        &format!("--proc-type={proc_type}"),
        "--file-prefix",
        prefix,
        "--no-pci",
        "--no-telemetry",
        "-l",
        "0",
        "--log-level=pmd.mempool.ptr_ring:debug",
        "--log-level=lib.eal:notice",
    ]
    .map(String::from)
    .to_vec()
}

/// Says that `check` (a test, or `test/part` for a part of one) did not
/// run, and why: `test: SKIP <check>: <why>`, written to stderr past the
/// test harness's capture (so `cargo test` shows it), and appended to the
/// file `PTR_RING_SKIP_LOG` names, if any, from which `make test-dpdk`
/// counts the skips (`scripts/test-dpdk.sh`, `TEST_DPDK_CARGO_SKIPS`). The
/// harness reports a test that returns after this as passed: this line is
/// what tells the two apart.
pub fn skip(check: &str, why: &str) {
    use std::io::Write;
    let line = format!("test: SKIP {check}: {why}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(path) = std::env::var_os("PTR_RING_SKIP_LOG") {
        let logged = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = logged {
            panic!("skip log {}: {e}", Path::new(&path).display());
        }
    }
}

/// True, after saying so with [`skip`] for `check`, when EAL runs without
/// hugepages: with --no-huge EAL has no shared memory, so no second process
/// can share a pool.
pub fn skip_without_hugepages(check: &str) -> bool {
    let mem = eal_mem();
    if mem.hugepages() {
        return false;
    }
    skip(
        check,
        &format!("EAL mode is {} (no hugepages): no shared memory", mem.mode),
    );
    true
}
