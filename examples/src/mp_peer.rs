//! A DPDK secondary process built differently from its primary: it links the
//! ptr_ring handler (no `-d`) and registers a mempool handler of its own,
//! `mp_peer_extra`, before EAL init, so its mempool ops table is numbered
//! unlike the primary's (dpdk-testpmd loading the handler with `-d`). It
//! looks up a pool the primary created, gets and puts mbufs, and checks that
//! the pool runs on the expected handler and that every mbuf came back.
//! Where DPDK's 16-entry ops table has no slot to spare (Debian's 24.11 and
//! 25.11 plugin directories fill 15, ptr_ring the last), `--no-extra` leaves
//! `mp_peer_extra` out: the numbering then differs by the drivers' load order
//! alone (e.g. a `-d` driver loaded before the plugin directory).
//!
//! With `--primary` it is instead a primary process that registers
//! `mp_peer_extra` after EAL init as a working handler (a renamed copy of
//! ring_mp_mc's ops; in a full table it takes over the slot of the last
//! driver that is neither ring_mp_mc nor ptr_ring, which this process then
//! lacks), creates the mbuf pool `--pool` on it, prints
//! `mp_peer: ready` and waits for a line on stdin: secondaries without that
//! handler must refuse the pool by name instead of calling another handler.
//!
//! ```text
//! mp_peer [EAL args] -- --pool NAME [--gets N] [--expect-ops NAME] [--no-extra]
//! mp_peer [EAL args] -- --primary --pool NAME
//! ```
//!
//! Exits non-zero when the pool is missing, runs on another handler than
//! `--expect-ops`, cannot hand out `--gets` mbufs, or has fewer objects
//! available at the end than at the start.

use core::ffi::{c_int, c_uint, c_void};
use std::ffi::CString;
use std::io::{BufRead, Write};
use std::process::ExitCode;

use dpdk_sys as sys;
use rte_mempool_ptr_ring::{api, ops, zone};

/// Name of the handler this program registers itself.
const EXTRA_OPS: &str = "mp_peer_extra";

unsafe extern "C" fn extra_alloc(_mp: *mut sys::rte_mempool) -> c_int {
    -libc::ENOTSUP
}

unsafe extern "C" fn extra_enqueue(
    _mp: *mut sys::rte_mempool,
    _objs: *const *mut c_void,
    _n: c_uint,
) -> c_int {
    -libc::ENOTSUP
}

unsafe extern "C" fn extra_dequeue(
    _mp: *mut sys::rte_mempool,
    _objs: *mut *mut c_void,
    _n: c_uint,
) -> c_int {
    -libc::ENOTSUP
}

unsafe extern "C" fn extra_get_count(_mp: *const sys::rte_mempool) -> c_uint {
    0
}

/// Registers `mp_peer_extra`, a handler that serves no pool: it only takes a
/// slot of the ops table.
fn register_extra() -> i32 {
    // SAFETY: all-zero is a valid rte_mempool_ops.
    let mut o: sys::rte_mempool_ops = unsafe { core::mem::zeroed() };
    for (d, s) in o.name.iter_mut().zip(EXTRA_OPS.bytes()) {
        *d = s as core::ffi::c_char;
    }
    o.alloc = Some(extra_alloc);
    o.enqueue = Some(extra_enqueue);
    o.dequeue = Some(extra_dequeue);
    o.get_count = Some(extra_get_count);
    // SAFETY: a valid ops struct; DPDK copies it.
    unsafe { sys::rte_mempool_register_ops(&o) }
}

/// Registers `mp_peer_extra` as a renamed copy of the ring_mp_mc entry: a
/// working handler no other program has.
fn register_extra_working() -> Result<i32, String> {
    // SAFETY: the process-local ops table; entries below num_ops are set
    // and are plain data (name and callback pointers).
    let ring = unsafe {
        let t = &*core::ptr::addr_of!(sys::rte_mempool_ops_table);
        (0..t.num_ops as usize)
            .map(|i| t.ops[i])
            .find(|o| zone::cstr_field(&o.name) == "ring_mp_mc")
    };
    let mut o = ring.ok_or("no ring_mp_mc handler to copy")?;
    o.name = [0; sys::RTE_MEMPOOL_OPS_NAMESIZE as usize];
    for (d, s) in o.name.iter_mut().zip(EXTRA_OPS.bytes()) {
        *d = s as core::ffi::c_char;
    }
    // SAFETY: a valid ops struct (ring_mp_mc's callbacks); DPDK copies it.
    let i = unsafe { sys::rte_mempool_register_ops(&o) };
    if i == -libc::ENOSPC {
        return take_over_slot(o);
    }
    if i < 0 {
        return Err(format!("rte_mempool_register_ops: {i}"));
    }
    Ok(i)
}

/// A full ops table: `o` replaces the last entry that is neither ring_mp_mc
/// (the copy's callbacks) nor ptr_ring, before any pool uses it.
fn take_over_slot(o: sys::rte_mempool_ops) -> Result<i32, String> {
    // SAFETY: the process-local ops table, before any pool exists; entries
    // below num_ops are set and are plain data.
    unsafe {
        let t = &mut *core::ptr::addr_of_mut!(sys::rte_mempool_ops_table);
        let i = (0..t.num_ops as usize)
            .rev()
            .find(|&i| {
                !matches!(
                    zone::cstr_field(&t.ops[i].name).as_str(),
                    "ring_mp_mc" | "ptr_ring"
                )
            })
            .ok_or("ops table full and no slot to take over")?;
        println!(
            "mp_peer: ops table full: {EXTRA_OPS} takes over slot {i} of {}",
            zone::cstr_field(&t.ops[i].name)
        );
        t.ops[i] = o;
        Ok(i as i32)
    }
}

/// `--primary`: a pool on `mp_peer_extra`, kept until stdin gives a line.
fn serve(a: &Args) -> Result<(), String> {
    let idx = register_extra_working()?;
    let name = CString::new(a.pool.as_str()).map_err(|e| e.to_string())?;
    let ops = CString::new(EXTRA_OPS).expect("literal");
    // SAFETY: valid strings; DPDK returns null with rte_errno on failure.
    let mp = unsafe {
        sys::rte_pktmbuf_pool_create_by_ops(
            name.as_ptr(),
            511,
            0,
            0,
            sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16,
            -1,
            ops.as_ptr(),
        )
    };
    if mp.is_null() {
        return Err(format!(
            "cannot create pool {}: rte_errno {}",
            a.pool,
            sys::errno()
        ));
    }
    println!(
        "mp_peer: ready: pool {} on {EXTRA_OPS} at index {idx}; ops table {}",
        a.pool,
        ops_table().join(",")
    );
    let _ = std::io::stdout().flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    // SAFETY: nothing uses the pool any more.
    unsafe { sys::rte_mempool_free(mp) };
    Ok(())
}

fn ops_table() -> Vec<String> {
    // SAFETY: the process-local ops table; entries below num_ops are set.
    unsafe {
        let t = &*core::ptr::addr_of!(sys::rte_mempool_ops_table);
        (0..t.num_ops as usize)
            .map(|i| zone::cstr_field(&t.ops[i].name))
            .collect()
    }
}

struct Args {
    primary: bool,
    pool: String,
    gets: usize,
    expect_ops: Option<String>,
    no_extra: bool,
}

fn parse(app: &[String]) -> Result<Args, String> {
    let mut a = Args {
        primary: false,
        pool: String::new(),
        gets: 256,
        expect_ops: None,
        no_extra: false,
    };
    let mut it = app.iter();
    while let Some(k) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{k} needs a value"));
        match k.as_str() {
            "--pool" => a.pool = val()?,
            "--gets" => a.gets = val()?.parse().map_err(|e| format!("--gets: {e}"))?,
            "--expect-ops" => a.expect_ops = Some(val()?),
            "--primary" => a.primary = true,
            "--no-extra" => a.no_extra = true,
            _ => return Err(format!("unknown option {k}")),
        }
    }
    if a.pool.is_empty() {
        return Err("--pool is required".into());
    }
    Ok(a)
}

fn run(a: &Args) -> Result<(), String> {
    let name = CString::new(a.pool.as_str()).map_err(|e| e.to_string())?;
    // SAFETY: a valid name.
    let mp = unsafe { sys::rte_mempool_lookup(name.as_ptr()) };
    if mp.is_null() {
        return Err(format!("pool {} not found", a.pool));
    }
    // SAFETY: a live pool (just looked up).
    let (index, handler) = unsafe { ((*mp).ops_index, ops::ops_name_of(mp)) };
    println!(
        "mp_peer: pool {} ops_index {index} ops_name {handler}",
        a.pool
    );
    if let Some(want) = &a.expect_ops {
        if &handler != want {
            return Err(format!(
                "pool {} runs on {handler:?} here, expected {want:?}",
                a.pool
            ));
        }
    }
    // SAFETY: a live pool.
    let avail = || unsafe { sys::rte_mempool_avail_count(mp) } as usize;
    let before = avail();
    let mut held: Vec<*mut sys::rte_mbuf> = Vec::with_capacity(a.gets);
    let mut result = Ok(());
    while held.len() < a.gets {
        let n = (a.gets - held.len()).min(32);
        let mut burst = [core::ptr::null_mut::<sys::rte_mbuf>(); 32];
        // SAFETY: a live pool, room for `n` pointers.
        if unsafe { sys::rte_pktmbuf_alloc_bulk(mp, burst.as_mut_ptr(), n as u32) } != 0 {
            result = Err(format!(
                "alloc of {n} failed after {} mbufs (avail {})",
                held.len(),
                avail()
            ));
            break;
        }
        for &m in &burst[..n] {
            // SAFETY: our mbuf; its data room is shared memory mapped here.
            unsafe {
                sys::compat::mbuf_mtod(m).write_bytes(0x5a, 64);
            }
        }
        held.extend_from_slice(&burst[..n]);
    }
    let got = held.len();
    let during = avail();
    for m in held {
        // SAFETY: each mbuf is ours, freed once.
        unsafe { sys::rte_pktmbuf_free(m) };
    }
    let after = avail();
    println!("mp_peer: avail {before} before, {during} holding {got}, {after} after");
    result?;
    if after != before {
        return Err(format!(
            "{} mbufs missing at the end (avail {after}, was {before})",
            before.saturating_sub(after)
        ));
    }
    println!("mp_peer: OK: {got} mbufs got and put, every one back");
    Ok(())
}

const USAGE: &str = "\
usage: mp_peer [EAL args] -- --pool NAME [--gets N] [--expect-ops NAME] [--no-extra]
       mp_peer [EAL args] -- --primary --pool NAME

A secondary numbered unlike its primary (it registers the handler
mp_peer_extra first, unless --no-extra) gets and puts --gets mbufs (256) of
the primary's pool NAME and checks it runs on --expect-ops; with --primary,
creates pool NAME on mp_peer_extra and waits for a line on stdin.";

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    if argv.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let split = argv.iter().position(|a| a == "--").unwrap_or(argv.len());
    let (eal, app) = (&argv[..split], argv.get(split + 1..).unwrap_or(&[]));
    let args = match parse(app) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mp_peer: {e}");
            return ExitCode::from(2);
        }
    };
    let extra = if args.primary || args.no_extra {
        -1
    } else {
        register_extra()
    };
    if let Err(e) = api::eal_init(eal) {
        eprintln!("mp_peer: {e}");
        return ExitCode::FAILURE;
    }
    let idx = match api::ensure_registered() {
        Ok(i) => i,
        Err(e) => {
            eprintln!("mp_peer: {e}");
            return ExitCode::FAILURE;
        }
    };
    let r = if args.primary {
        serve(&args)
    } else {
        if args.no_extra {
            println!("mp_peer: {EXTRA_OPS} left out (--no-extra)");
        } else {
            println!("mp_peer: {EXTRA_OPS} registered at {extra} before EAL init");
        }
        println!(
            "mp_peer: ptr_ring at {idx}; ops table {}",
            ops_table().join(",")
        );
        run(&args)
    };
    // SAFETY: last EAL call of the process.
    unsafe { sys::rte_eal_cleanup() };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mp_peer: FAIL: {e}");
            ExitCode::FAILURE
        }
    }
}
