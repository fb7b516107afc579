//! Multi-process: a primary creates a ptr_ring mbuf pool in shared memory, a
//! secondary process (same binary, same handler, same ops index) looks it up,
//! gets and puts mbufs, runs it dry and gives everything back; the primary
//! then sees every object home and the secondary's gets in the shared
//! counters. Needs hugepages (with --no-huge EAL has no shared memory):
//! skipped otherwise, saying so (`common::skip`: counted as skipped, not
//! as passed).
//!
//! With `dpdk-proc-info` (a DPDK secondary that loads the handler with `-d`)
//! it also checks the ops-index hazard: with other mempool plugins loaded
//! first, proc-info numbers its ops table unlike the primary (when the
//! handler registered at load, this put ptr_ring at the index of the
//! primary's ring_mp_mc pool); the ops-table handshake at EAL's bus scan
//! renumbers proc-info like the primary, so the pool stays on ring_mp_mc.
//!
//! One binary, three roles: the test re-runs itself as primary and secondary
//! (`PTR_RING_MP_ROLE`), with a private `--file-prefix` removed at the end.

mod common;

use std::ffi::{c_void, CString};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use dpdk_sys as sys;
use rte_mempool_ptr_ring::api::MbufPool;
use rte_mempool_ptr_ring::capi::{ptr_ring_ops_index, ptr_ring_stats, PtrRingStats};
use rte_mempool_ptr_ring::ops;

const TEST: &str = "eal_multiprocess";
const POOL: &str = "pr_shared";
const FOREIGN: &str = "pr_foreign";
const SIZE: u32 = 2047;
const SECONDARY_GETS: u32 = 100;

fn ops_table_names() -> Vec<String> {
    // SAFETY: the process-local ops table; entries below num_ops are set.
    unsafe {
        let t = &*core::ptr::addr_of!(sys::rte_mempool_ops_table);
        (0..t.num_ops as usize)
            .map(|i| rte_mempool_ptr_ring::zone::cstr_field(&t.ops[i].name))
            .collect()
    }
}

fn raw_stats(mp: *const sys::rte_mempool, phase: &str) -> PtrRingStats {
    let mut st = PtrRingStats::default();
    // SAFETY: a live pool; a valid out pointer.
    let r = unsafe { ptr_ring_stats(mp, &mut st) };
    assert_eq!(r, 0, "[{phase}] ptr_ring_stats");
    eprintln!("test: [{phase}] {st:?}");
    assert_eq!(st.populated, st.size, "[{phase}] populated");
    assert_eq!(
        st.populated as i64,
        (st.in_ring + st.in_caches) as i64 + st.inflight,
        "[{phase}] conservation"
    );
    st
}

// ------------------------------------------------------------------ primary

fn primary(prefix: &str) {
    // One net_null port: dpdk-proc-info refuses to run without a port.
    let mut args = role_args("mp_primary", "primary", prefix);
    args.extend(["--vdev".to_string(), "net_null0".to_string()]);
    init_eal(&args);
    assert_eq!(
        // SAFETY: plain query.
        unsafe { sys::rte_eal_process_type() },
        sys::RTE_PROC_PRIMARY
    );
    let pool = MbufPool::create(POOL, SIZE, 32, sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16, -1)
        .expect("create pr_shared");
    // A pool on DPDK's own ring handler, for the ops-index hazard check.
    let fname = CString::new(FOREIGN).unwrap();
    // SAFETY: valid strings.
    let foreign = unsafe {
        sys::rte_pktmbuf_pool_create_by_ops(
            fname.as_ptr(),
            511,
            0,
            0,
            sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16,
            -1,
            c"ring_mp_mc".as_ptr(),
        )
    };
    assert!(!foreign.is_null(), "create {FOREIGN} on ring_mp_mc");
    let st = conserved(&pool, "primary created");
    assert_eq!(st.hold, 0, "primary took nothing");
    println!("\nMP_READY ops={}", ops_table_names().join(","));
    std::io::stdout().flush().unwrap();

    let mut line = String::new();
    std::io::stdin().read_line(&mut line).expect("read stdin");
    assert_eq!(line.trim(), "done", "parent said done");

    // The secondary has run: its gets are in the shared counters; every
    // object is home (in the handler or in DPDK's lcore-0 cache, which is
    // shared memory too).
    assert_eq!(
        pool.available(),
        SIZE,
        "primary: every object back after the secondary"
    );
    let st = conserved(&pool, "primary after secondary");
    assert!(
        st.hold >= SIZE as u64, // it ran the pool dry; the primary took nothing
        "primary: shared counters show the secondary's gets (hold {})",
        st.hold
    );
    let mp = pool.as_ptr();
    assert_eq!(st.inflight, dpdk_cache_len(mp, 0) as i64);
    dpdk_cache_flush(mp, 0);
    let st = conserved(&pool, "primary flushed");
    assert_eq!(st.inflight, 0);
    let ((), log) = capture_log(|| drop(pool));
    assert!(
        log.contains(&format!(
            "PTR_RING: pool {POOL} freed: every object returned"
        )),
        "log:\n{log}"
    );
    // SAFETY: nothing uses it any more.
    unsafe { sys::rte_mempool_free(foreign) };
    // SAFETY: last EAL call of the process.
    unsafe { sys::rte_eal_cleanup() };
    eprintln!("test: primary OK");
}

// ---------------------------------------------------------------- secondary

fn secondary(prefix: &str) {
    init_eal(&role_args("mp_secondary", "secondary", prefix));
    assert_eq!(
        // SAFETY: plain query.
        unsafe { sys::rte_eal_process_type() },
        sys::RTE_PROC_SECONDARY
    );
    let name = CString::new(POOL).unwrap();
    // SAFETY: a valid name.
    let mp = unsafe { sys::rte_mempool_lookup(name.as_ptr()) };
    assert!(!mp.is_null(), "secondary: {POOL} not found");
    // SAFETY: a live pool.
    let idx = unsafe { (*mp).ops_index };
    assert_eq!(
        idx,
        ptr_ring_ops_index(),
        "same ops index in both processes"
    );
    // SAFETY: `mp` is a live mempool (from the walk / lookup above).
    assert_eq!(unsafe { ops::ops_name_of(mp) }, "ptr_ring");
    // SAFETY: a live pool.
    let avail = || unsafe { sys::rte_mempool_avail_count(mp) };
    assert_eq!(avail(), SIZE, "secondary: all available at start");
    raw_stats(mp, "secondary start");

    let mut held: Vec<*mut sys::rte_mbuf> = Vec::new();
    for i in 0..SECONDARY_GETS {
        // SAFETY: a live pool.
        let m = unsafe { sys::rte_pktmbuf_alloc(mp) };
        assert!(!m.is_null(), "secondary: alloc {i}");
        // SAFETY: our mbuf; its data room is shared memory mapped here.
        unsafe {
            sys::compat::mbuf_mtod(m).write_bytes(0xa5, 64);
        }
        held.push(m);
    }
    assert_eq!(avail(), SIZE - SECONDARY_GETS);
    let st = raw_stats(mp, "secondary holding 100");
    assert_eq!(st.inflight, (SECONDARY_GETS + dpdk_cache_len(mp, 0)) as i64);
    // Run it dry.
    loop {
        // SAFETY: a live pool.
        let m = unsafe { sys::rte_pktmbuf_alloc(mp) };
        if m.is_null() {
            break;
        }
        held.push(m);
        assert!(
            held.len() <= SIZE as usize,
            "more mbufs than the pool holds"
        );
    }
    assert_eq!(
        held.len(),
        SIZE as usize,
        "secondary: every mbuf obtainable"
    );
    assert_eq!(avail(), 0);
    let st = raw_stats(mp, "secondary exhausted");
    assert_eq!(st.inflight, SIZE as i64);
    let mut objs: Vec<*mut c_void> = held.iter().map(|&m| m.cast()).collect();
    // Singly (through DPDK's lcore-0 cache) and in one bulk.
    for _ in 0..10 {
        // SAFETY: an mbuf we own.
        unsafe { sys::rte_pktmbuf_free(objs.pop().unwrap().cast()) };
    }
    // SAFETY: mbufs we own, all of this pool.
    unsafe { sys::rte_mempool_put_bulk(mp, objs.as_ptr(), objs.len() as u32) };
    assert_eq!(avail(), SIZE, "secondary: all back");
    raw_stats(mp, "secondary end");
    // SAFETY: last EAL call of the process.
    unsafe { sys::rte_eal_cleanup() };
    eprintln!("test: secondary OK");
}

// ------------------------------------------------------------------- parent

struct Cleanup {
    prefix: String,
    children: Vec<Child>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        remove_prefix_files(&self.prefix);
    }
}

/// The handler's .so: `PTR_RING_LIB` when set, else the one `make build`
/// puts in the target directory's `release` (this test itself is built
/// with `make test`'s release-test profile, which builds no .so).
fn plugin_path() -> Option<PathBuf> {
    let p = match std::env::var_os("PTR_RING_LIB") {
        Some(lib) => PathBuf::from(lib),
        None => {
            // <target>/<profile>/deps/<this test>
            let exe = std::env::current_exe().ok()?;
            let target = exe.parent()?.parent()?.parent()?;
            target.join("release").join("librte_mempool_ptr_ring.so")
        }
    };
    p.exists().then_some(p)
}

fn pmd_dir() -> Option<PathBuf> {
    // EAL's own plugin directory: <libdir>/dpdk/pmds-<ABI>.
    let out = Command::new("pkg-config")
        .args(["--variable=libdir", "libdpdk"])
        .output()
        .ok()?;
    let libdir = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    std::fs::read_dir(libdir.join("dpdk"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("pmds-"))
        })
}

fn proc_info(prefix: &str, plugins: &[PathBuf], pool: &str) -> (bool, String) {
    let mut cmd = Command::new("dpdk-proc-info");
    cmd.args([
        "--file-prefix",
        prefix,
        "--no-pci",
        "--no-telemetry",
        "--log-level=pmd.mempool.ptr_ring:debug",
    ]);
    for p in plugins {
        cmd.arg("-d").arg(p);
    }
    cmd.args(["--", &format!("--show-mempool={pool}")]);
    let out = cmd.output().expect("run dpdk-proc-info");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Mempool driver plugins and how many ops each registers, to shift
/// ptr_ring to a chosen index in dpdk-proc-info's ops table.
const SHIFTERS: &[(&str, usize)] = &[
    ("librte_mempool_ring.so", 6),
    ("librte_mempool_stack.so", 2),
    ("librte_mempool_cnxk.so", 2),
    ("librte_mempool_bucket.so", 1),
    ("librte_mempool_octeontx.so", 1),
    ("librte_mempool_dpaa.so", 1),
    ("librte_mempool_dpaa2.so", 1),
];

fn hazard(prefix: &str, lib: &Path, primary_ops: &[String]) {
    let Some(k) = primary_ops.iter().position(|n| n == "ring_mp_mc") else {
        skip(
            &format!("{TEST}/ops-index hazard"),
            "no ring_mp_mc in the primary's table",
        );
        return;
    };
    let Some(dir) = pmd_dir() else {
        skip(
            &format!("{TEST}/ops-index hazard"),
            "DPDK plugin directory not found",
        );
        return;
    };
    let mut left = k;
    let mut plugins = Vec::new();
    for &(f, n) in SHIFTERS {
        if n <= left && dir.join(f).exists() {
            plugins.push(dir.join(f));
            left -= n;
        }
    }
    if left != 0 {
        skip(
            &format!("{TEST}/ops-index hazard"),
            &format!("cannot place ptr_ring at index {k}"),
        );
        return;
    }
    plugins.push(lib.to_path_buf());
    let (ok, out) = proc_info(prefix, &plugins, FOREIGN);
    eprintln!("test: dpdk-proc-info with {plugins:?}:\n{out}");
    assert!(ok, "dpdk-proc-info (hazard) exit status");
    assert!(
        out.contains("PTR_RING: ops table synchronised with the primary"),
        "dpdk-proc-info took the primary's ops-table numbering"
    );
    assert!(
        out.contains(&format!("ops_index {k} ops_name ring_mp_mc")),
        "{FOREIGN} (ring_mp_mc at index {k} in the primary) stays on ring_mp_mc in dpdk-proc-info, \
         whose own numbering differs"
    );
    eprintln!("test: ops-index hazard avoided: {FOREIGN} stays on ring_mp_mc at index {k}");
}

fn parent() {
    let mem = eal_mem();
    if !mem.hugepages() {
        skip(
            TEST,
            &format!(
                "EAL mode is {} (no hugepages): multi-process needs shared hugepage memory",
                mem.mode
            ),
        );
        return;
    }
    let prefix = format!("ptrring_mp_{}", std::process::id());
    let mut guard = Cleanup {
        prefix: prefix.clone(),
        children: Vec::new(),
    };
    remove_prefix_files(&prefix);
    let envs = [
        ("PTR_RING_MP_ROLE", "primary"),
        ("PTR_RING_MP_PREFIX", prefix.as_str()),
    ];
    let mut pri = rerun_self(
        test_name_of(&a_secondary_shares_the_primarys_pool_and_ops_index),
        &envs,
        true,
    );
    let stdout = pri.stdout.take().unwrap();
    let mut stdin = pri.stdin.take().unwrap();
    guard.children.push(pri);
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            eprintln!("[primary] {line}");
            let _ = tx.send(line);
        }
    });
    let ready = loop {
        match rx.recv_timeout(Duration::from_secs(60)) {
            // The harness may print "test NAME ... " on the same line.
            Ok(l) if l.contains("MP_READY ") => break l,
            Ok(_) => continue,
            Err(e) => panic!("primary never got ready: {e}"),
        }
    };
    let primary_ops: Vec<String> = ready
        .split_once("ops=")
        .map(|(_, s)| s.split(',').map(String::from).collect())
        .unwrap_or_default();

    let envs = [
        ("PTR_RING_MP_ROLE", "secondary"),
        ("PTR_RING_MP_PREFIX", prefix.as_str()),
    ];
    let mut sec = rerun_self(
        test_name_of(&a_secondary_shares_the_primarys_pool_and_ops_index),
        &envs,
        false,
    );
    let st = wait_timeout(&mut sec, 60, "secondary");
    assert!(st.success(), "secondary failed: {st}");

    let have_proc_info = Command::new("dpdk-proc-info")
        .arg("--help")
        .output()
        .is_ok();
    match (plugin_path(), have_proc_info) {
        (Some(lib), true) => {
            // A DPDK secondary loading the handler with -d: same index, it
            // reads the pool through our get_count.
            let (ok, out) = proc_info(&prefix, std::slice::from_ref(&lib), POOL);
            eprintln!("test: dpdk-proc-info -d {}:\n{out}", lib.display());
            assert!(ok, "dpdk-proc-info exit status");
            assert!(
                out.contains("ops_name ptr_ring"),
                "proc-info sees {POOL} on ptr_ring"
            );
            assert!(
                out.contains(&format!("avail ({SIZE})")),
                "proc-info counts {SIZE} available"
            );
            hazard(&prefix, &lib, &primary_ops);
        }
        _ => skip(
            &format!("{TEST}/dpdk-proc-info"),
            "no dpdk-proc-info or no librte_mempool_ptr_ring.so (nor the ops-index hazard, \
             which runs in dpdk-proc-info)",
        ),
    }

    writeln!(stdin, "done").unwrap();
    drop(stdin);
    let mut pri = guard.children.pop().unwrap();
    let st = wait_timeout(&mut pri, 60, "primary");
    assert!(st.success(), "primary failed: {st}");
    drop(guard);
    assert!(
        !Path::new("/var/run/dpdk").join(&prefix).exists(),
        "runtime dir removed"
    );
    eprintln!("test: {TEST} OK");
}

#[test]
fn a_secondary_shares_the_primarys_pool_and_ops_index() {
    let prefix = std::env::var("PTR_RING_MP_PREFIX").unwrap_or_default();
    match std::env::var("PTR_RING_MP_ROLE").as_deref() {
        Ok("primary") => primary(&prefix),
        Ok("secondary") => secondary(&prefix),
        _ => parent(),
    }
}
