//! EAL for the `rte_ring` contenders.

use std::ffi::{c_char, CString};

use dpdk_sys as sys;

#[path = "../../../scripts/eal_mem.rs"]
mod eal_mem_file;

/// The EAL arguments: `RING_EAL_ARGS`, or the memory mode of
/// `build/eal-mem.env` plus a minimal single-lcore set-up.
fn eal_args() -> Vec<String> {
    if let Ok(a) = std::env::var("RING_EAL_ARGS") {
        let mut v = vec!["ring-bench".to_string()];
        v.extend(a.split_whitespace().map(String::from));
        return v;
    }
    let mut v = vec!["ring-bench".to_string()];
    v.extend(eal_mem_file::eal_mem().args);
    v.extend(
        [
            "--no-pci",
            "--no-telemetry",
            "-l",
            "0",
            "--log-level=lib.eal:error",
        ]
        .map(String::from),
    );
    v
}

/// Initialises EAL once; `false` (with a message) when it cannot.
pub(crate) fn init_eal() -> bool {
    let args = eal_args();
    // EAL may keep pointers into argv: leak the strings.
    let mut ptrs: Vec<*mut c_char> = args
        .iter()
        .map(|a| {
            CString::new(a.as_str())
                .expect("EAL arg without NUL")
                .into_raw()
        })
        .collect();
    ptrs.push(core::ptr::null_mut());
    let argv = Box::leak(ptrs.into_boxed_slice());
    // SAFETY: argc/argv describe NUL-terminated strings that live for the
    // process; EAL is initialised at most once (only here).
    let r = unsafe { sys::rte_eal_init(args.len() as i32, argv.as_mut_ptr()) };
    if r < 0 {
        eprintln!(
            "ring bench: rte_eal_init({args:?}) failed (rte_errno {}): rte_ring contenders skipped",
            sys::errno()
        );
        return false;
    }
    eprintln!("ring bench: EAL up with {args:?}");
    true
}
