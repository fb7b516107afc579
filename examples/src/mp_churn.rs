//! A DPDK secondary process that gets and puts bulks of mbufs of its
//! primary's pool for ever, to be killed: `scripts/test-kill.sh` SIGKILLs it
//! at random moments and checks that the primary carries on. Built with the
//! `crash-points` feature, `--crash SITE` arms one of the ring's crash
//! points (`mempool::crash`) after `--after-ms`: the next bulk that reaches
//! it parks the process there, holding the ring side's lock, until it is
//! killed.
//!
//! ```text
//! mp_churn [EAL args] -- --pool NAME [--bulk N] [--crash fill:K|head|clear:K|takeback:K] [--after-ms MS]
//! ```
//!
//! Prints `mp_churn: running` once its first bulk went round; exits non-zero
//! only when the pool is missing or not on ptr_ring.

use std::ffi::CString;
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use dpdk_sys as sys;
use rte_mempool_ptr_ring::{api, ops};

struct Args {
    pool: String,
    bulk: usize,
    crash: Option<String>,
    after: Duration,
}

fn parse(app: &[String]) -> Result<Args, String> {
    let mut a = Args {
        pool: String::new(),
        bulk: 32,
        crash: None,
        after: Duration::from_millis(200),
    };
    let mut it = app.iter();
    while let Some(k) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{k} needs a value"));
        match k.as_str() {
            "--pool" => a.pool = val()?,
            "--bulk" => a.bulk = val()?.parse().map_err(|e| format!("--bulk: {e}"))?,
            "--crash" => a.crash = Some(val()?),
            "--after-ms" => {
                a.after =
                    Duration::from_millis(val()?.parse().map_err(|e| format!("--after-ms: {e}"))?)
            }
            _ => return Err(format!("unknown option {k}")),
        }
    }
    if a.pool.is_empty() || a.bulk == 0 || a.bulk > 512 {
        return Err("--pool is required, --bulk 1..=512".into());
    }
    Ok(a)
}

/// The crash site `spec` names, armed; an error without the feature.
#[cfg(feature = "crash-points")]
fn arm(spec: &str) -> Result<(), String> {
    use mempool::crash::{arm, CrashSite};
    arm(CrashSite::parse(spec).map_err(|e| format!("--crash {e}"))?);
    Ok(())
}

#[cfg(not(feature = "crash-points"))]
fn arm(spec: &str) -> Result<(), String> {
    Err(format!(
        "--crash {spec}: built without the crash-points feature"
    ))
}

fn run(a: &Args) -> Result<(), String> {
    let name = CString::new(a.pool.as_str()).map_err(|e| e.to_string())?;
    // SAFETY: a valid name.
    let mp = unsafe { sys::rte_mempool_lookup(name.as_ptr()) };
    if mp.is_null() {
        return Err(format!("pool {} not found", a.pool));
    }
    // SAFETY: a live pool (just looked up).
    let handler = unsafe { ops::ops_name_of(mp) };
    if handler != ops::OPS_NAME {
        return Err(format!("pool {} runs on {handler:?}", a.pool));
    }
    let mut objs = vec![core::ptr::null_mut::<core::ffi::c_void>(); a.bulk];
    let n = a.bulk as u32;
    let start = Instant::now();
    let mut armed = a.crash.is_none();
    let mut rounds = 0u64;
    loop {
        // SAFETY: a live pool, room for `n` pointers.
        if unsafe { sys::rte_mempool_get_bulk(mp, objs.as_mut_ptr(), n) } != 0 {
            std::thread::yield_now();
            continue;
        }
        // SAFETY: the objects just taken, each put back once.
        unsafe { sys::rte_mempool_put_bulk(mp, objs.as_ptr(), n) };
        rounds += 1;
        if rounds == 1 {
            println!("mp_churn: running: bulks of {} on {}", a.bulk, a.pool);
            let _ = std::io::stdout().flush();
        }
        if !armed && start.elapsed() >= a.after {
            let spec = a.crash.as_deref().unwrap_or_default();
            arm(spec)?;
            armed = true;
            println!("mp_churn: armed {spec} after {rounds} rounds");
            let _ = std::io::stdout().flush();
        }
    }
}

const USAGE: &str = "\
usage: mp_churn [EAL args] -- --pool NAME [--bulk N] [--crash SITE] [--after-ms MS]

A secondary that gets and puts bulks of N (32) mbufs of the primary's pool
NAME until killed. --crash fill:K|head|clear:K|takeback:K (crash-points
builds; takeback: a newest-first pool's get, after K clears) parks it inside
the ring's critical section --after-ms (200) after start.";

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    // EAL's arguments, then ours after "--".
    let (eal, app) = argv.split_at(argv.iter().position(|a| a == "--").unwrap_or(argv.len()));
    let app = app.get(1..).unwrap_or_default();
    if argv.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    let Ok(args) = parse(app).map_err(|e| eprintln!("mp_churn: {e}")) else {
        return ExitCode::from(2);
    };
    let started = api::eal_init(eal)
        .and_then(|_| api::ensure_registered())
        .map_err(|e| e.to_string());
    let r = started.and_then(|_| run(&args));
    // SAFETY: last EAL call of the process (harmless after a failed init).
    unsafe { sys::rte_eal_cleanup() };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mp_churn: FAIL: {e}");
            ExitCode::FAILURE
        }
    }
}
