//! The `ptr_ring` DPDK mempool handler.
//!
//! Built as `librte_mempool_ptr_ring.so`, it registers the mempool ops
//! `ptr_ring` when loaded, so any DPDK application (22.11, 24.11, 25.11) uses it with
//! `-d librte_mempool_ptr_ring.so --mbuf-pool-ops-name ptr_ring`. The logic
//! lives in the DPDK-free [`mempool`] crate; this crate only translates.
//!
//! * [`ops`]: the `rte_mempool_ops` callbacks and registration;
//! * [`ops_sync`]: registration at EAL's bus scan and one ops-table
//!   numbering in primary and secondary processes;
//! * [`zone`]: the per-pool memzone holding the handler's state;
//! * [`log`](mod@log), [`telemetry`]: the `pmd.mempool.ptr_ring` log type and
//!   `/ptr_ring/...` telemetry commands;
//! * [`settings`]: environment switches read at load (process-wide
//!   defaults), [`pool_config`]: per-pool overrides;
//! * [`port`]: safe port shutdown, deferred release, device events, DMA mapper;
//! * [`api`], [`capi`]: safe Rust API and the C API of
//!   `include/rte_mempool_ptr_ring.h`;
//! * `owner`: this process's owner id for the pools' shared locks, and the
//!   log line of a takeover from a dead process;
//! * `ffi`: the panic guard every function called from C runs in; `cname`:
//!   reading C names (re-exported by [`zone`]).
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, clippy::undocumented_unsafe_blocks)]

pub mod api;
pub mod capi;
pub(crate) mod cname;
pub mod error;
pub(crate) mod ffi;
pub(crate) mod lock_owner;
pub mod log;
pub mod ops;
pub mod ops_name;
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

/// An error line when `running` ("DPDK 25.11.4") has another ABI than the
/// DPDK the handler was built against. Releases of one ABI (24.11, 25.03 and
/// 25.07 share 25; patch releases always do) are binary compatible, as DPDK
/// promises its drivers, and are accepted.
fn version_mismatch(running: &str) -> Option<String> {
    let (year, month, minor) = dpdk_sys::compat::RELEASE;
    let mut nums = running
        .trim_start_matches(|c: char| !c.is_ascii_digit())
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().ok());
    if let (Some(Some(run_year)), Some(Some(run_month))) = (nums.next(), nums.next()) {
        if dpdk_sys::compat::abi_of_release(run_year, run_month) == dpdk_sys::compat::ABI {
            return None;
        }
    }
    Some(format!(
        "built against DPDK {year}.{month:02}.{minor} (ABI {}), but this process runs {running:?} \
         of another ABI: mempool ops \"{}\" not registered; rebuild the handler against this \
         DPDK (make build)",
        dpdk_sys::compat::ABI,
        ops::OPS_NAME
    ))
}

/// Registers the ops (if no copy of the handler did), then the telemetry
/// commands; logs what happened. True when this copy's ops are in the table.
pub(crate) fn register_ops() -> bool {
    // The owner id every lock of a shared pool holds (once EAL made its
    // runtime directory: at the bus scan at the latest).
    lock_owner::install();
    let s = settings::get();
    match ops::register() {
        Ok(ops::Registration::Added(idx)) => {
            TELEMETRY.call_once(telemetry::register);
            log!(
                Level::Info,
                "mempool ops \"{}\" registered at index {idx} (validation {}, cache {}, {})",
                ops::OPS_NAME,
                if s.validate { "on" } else { "off" },
                s.cache_size
                    .map_or("default".to_string(), |c| c.to_string()),
                if s.newest_first {
                    "newest first"
                } else {
                    "oldest first"
                }
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
            let entries = ops_sync::ops_table_entries();
            log!(
                Level::Err,
                "cannot register mempool ops \"{}\": {e}: DPDK's ops table holds {} mempool \
                 handlers and holds {} now, one per loaded mempool driver: {}. Drop a -d option \
                 or move a mempool driver this application does not use out of EAL's plugin \
                 directory ({})",
                ops::OPS_NAME,
                dpdk_sys::RTE_MEMPOOL_MAX_OPS_IDX,
                entries.len(),
                entries.join(", "),
                if dpdk_sys::compat::PLUGIN_DIR.is_empty() {
                    "none"
                } else {
                    dpdk_sys::compat::PLUGIN_DIR
                }
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
        let (year, month, _) = dpdk_sys::compat::RELEASE;
        let v = format!("DPDK {year}.{month:02}.3");
        assert_eq!(version_mismatch(&v), None);
    }

    #[test]
    fn releases_of_the_same_abi_are_accepted_others_refused() {
        let (year, month, _) = dpdk_sys::compat::RELEASE;
        // The releases after an LTS share its ABI; the LTS a year earlier
        // and the next one do not.
        let lts = if month == 11 { year } else { year - 1 };
        for same in [
            format!("{lts}.11.9"),
            format!("{}.03.0", lts + 1),
            format!("{}.07.2", lts + 1),
        ] {
            assert_eq!(version_mismatch(&format!("DPDK {same}")), None, "{same}");
        }
        for other in [format!("{}.11.0", lts - 1), format!("{}.11.0", lts + 1)] {
            assert!(
                version_mismatch(&format!("DPDK {other}")).is_some(),
                "{other}"
            );
        }
    }

    #[test]
    fn another_release_names_both_and_the_fix() {
        let m = version_mismatch("DPDK 99.02.0").expect("a mismatch");
        assert!(
            m.contains("DPDK 99.02.0")
                && m.contains(&format!("ABI {}", dpdk_sys::compat::ABI))
                && m.contains("rebuild the handler"),
            "{m}"
        );
        assert!(version_mismatch("").is_some());
    }
}
