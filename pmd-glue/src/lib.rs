//! The `ptr_ring` DPDK mempool handler.
//!
//! Built as `librte_mempool_ptr_ring.so`, it registers the mempool ops
//! `ptr_ring` when loaded, so any DPDK 22.11 application uses it with
//! `-d librte_mempool_ptr_ring.so --mbuf-pool-ops-name ptr_ring`. The logic
//! lives in the DPDK-free [`mempool`] crate; this crate only translates.
//!
//! * [`ops`]: the `rte_mempool_ops` callbacks and registration;
//! * [`ops_sync`]: registration at EAL's bus scan and one ops-table
//!   numbering in primary and secondary processes;
//! * [`zone`]: the per-pool memzone holding the handler's state;
//! * [`log`], [`telemetry`]: the `pmd.mempool.ptr_ring` log type and
//!   `/ptr_ring/...` telemetry commands;
//! * [`settings`]: environment switches read at load (process-wide
//!   defaults), [`pool_config`]: per-pool overrides;
//! * [`port`]: safe port shutdown, deferred release, device events, DMA mapper;
//! * [`api`], [`capi`]: safe Rust API and the C API of
//!   `include/rte_mempool_ptr_ring.h`;
//! * `ffi`: the panic guard every function called from C runs in.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, clippy::undocumented_unsafe_blocks)]

pub mod api;
pub mod capi;
pub mod error;
pub(crate) mod ffi;
pub mod log;
pub mod ops;
pub mod ops_sync;
pub mod pool_config;
pub mod port;
pub mod settings;
pub mod telemetry;
pub mod zone;

use std::sync::Once;

pub use error::GlueError;
use log::Level;

static LOAD: Once = Once::new();
static TELEMETRY: Once = Once::new();

/// At load (constructor): the log type, then registration deferred to EAL's
/// bus scan ([`ops_sync`]), or at once when EAL has scanned already or the
/// vdev bus refuses the hook.
fn load() {
    log::register();
    if let Some(msg) = version_mismatch(&running_dpdk_version()) {
        log!(Level::Err, "{msg}");
        return;
    }
    if ops_sync::eal_scanned() {
        register_late();
    } else if ops_sync::install_scan_hook() {
        log!(
            Level::Debug,
            "mempool ops \"{}\" will register at EAL's bus scan, after every other handler",
            ops::OPS_NAME
        );
    } else {
        log!(
            Level::Warning,
            "cannot add a vdev bus scan hook: registering now (other handlers' indices may \
             then differ from processes without ptr_ring)"
        );
        register_ops();
    }
}

extern "C" {
    // Exported by librte_eal (the header's inline wrappers aside): the
    // version of the DPDK running, not the one we were built against.
    #[link_name = "rte_version"]
    fn rte_version_running() -> *const core::ffi::c_char;
}

/// Version string of the DPDK this process runs ("DPDK 22.11.11").
fn running_dpdk_version() -> String {
    // SAFETY: returns a pointer to a static NUL-terminated string (or null).
    let p = unsafe { rte_version_running() };
    if p.is_null() {
        return String::new();
    }
    // SAFETY: non-null, NUL-terminated, static.
    unsafe { core::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned()
}

/// An error line when `running` ("DPDK 22.11.11") is not the DPDK release
/// (year.month) the handler was built against; patch releases are ABI
/// compatible and accepted.
fn version_mismatch(running: &str) -> Option<String> {
    let built = (dpdk_sys::RTE_VER_YEAR, dpdk_sys::RTE_VER_MONTH);
    let mut nums = running
        .trim_start_matches(|c: char| !c.is_ascii_digit())
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().ok());
    let run = (nums.next().flatten(), nums.next().flatten());
    if run == (Some(built.0), Some(built.1)) {
        return None;
    }
    Some(format!(
        "built against DPDK {}.{:02}.{}, but this process runs {running:?}: mempool ops \"{}\" \
         not registered; rebuild the handler against this DPDK (make build)",
        built.0,
        built.1,
        dpdk_sys::RTE_VER_MINOR,
        ops::OPS_NAME
    ))
}

/// Registers the ops (if no copy of the handler did), then the telemetry
/// commands; logs what happened. True when this copy's ops are in the table.
pub(crate) fn register_ops() -> bool {
    let s = settings::get();
    match ops::register() {
        Ok(ops::Registration::Added(idx)) => {
            TELEMETRY.call_once(telemetry::register);
            log!(
                Level::Info,
                "mempool ops \"{}\" registered at index {idx} (validation {}, cache {})",
                ops::OPS_NAME,
                if s.validate { "on" } else { "off" },
                s.cache_size
                    .map_or("default".to_string(), |c| c.to_string())
            );
            true
        }
        Ok(ops::Registration::Present(_)) => true,
        Ok(ops::Registration::OtherCopy(idx)) => {
            log!(
                Level::Notice,
                "mempool ops \"{}\" already registered at index {idx} by another copy of the \
                 handler ({}); this copy ({}) stays unused",
                ops::OPS_NAME,
                ops_sync::ops_origin(idx),
                ops_sync::object_of(init as *const () as usize)
            );
            false
        }
        Err(e) => {
            log!(
                Level::Err,
                "cannot register mempool ops \"{}\": {e}: DPDK's ops table holds 16 mempool \
                 handlers and every loaded mempool driver takes one; remove a -d option or an \
                 installed mempool driver (Debian's DPDK loads 14 from its plugin directory)",
                ops::OPS_NAME
            );
            false
        }
    }
}

/// Registration after EAL's bus scan: pools may exist, nothing is renumbered.
fn register_late() {
    if register_ops() {
        ops_sync::after_late_registration();
    }
}

/// Registers log type, telemetry commands and the ops, for programs that
/// link the crate ([`api::ensure_registered`] calls it). Before
/// `rte_eal_init` the ops register at once and EAL's bus scan then moves
/// them after every other handler (primary) or to the primary's numbering
/// (secondary); after it they register at the end of the table.
pub fn init() {
    LOAD.call_once(load);
    if ops::lookup_index().is_none() {
        if ops_sync::eal_scanned() {
            register_late();
        } else {
            register_ops();
        }
    }
}

extern "C" fn constructor() {
    // A panic must not unwind into the dynamic loader.
    ffi::guard_void("the load constructor", || LOAD.call_once(load));
}

/// Load-time registration, like `RTE_MEMPOOL_REGISTER_OPS`.
#[used]
#[link_section = ".init_array"]
static CONSTRUCTOR: extern "C" fn() = constructor;

#[cfg(test)]
mod version_tests {
    use super::version_mismatch;

    #[test]
    fn same_release_any_patch_level_is_accepted() {
        let v = format!(
            "DPDK {}.{:02}.3",
            dpdk_sys::RTE_VER_YEAR,
            dpdk_sys::RTE_VER_MONTH
        );
        assert_eq!(version_mismatch(&v), None);
    }

    #[test]
    fn another_release_names_both_and_the_fix() {
        let m = version_mismatch("DPDK 99.02.0").expect("a mismatch");
        assert!(
            m.contains("DPDK 99.02.0") && m.contains("rebuild the handler"),
            "{m}"
        );
        assert!(version_mismatch("").is_some());
    }
}
