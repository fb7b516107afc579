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
//!   `include/rte_mempool_ptr_ring.h`.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, clippy::undocumented_unsafe_blocks)]

pub mod api;
pub mod capi;
pub mod error;
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
                "cannot register mempool ops \"{}\": {e} (DPDK's table holds 16 handlers; \
                 every loaded mempool driver takes one)",
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
    let _ = std::panic::catch_unwind(|| LOAD.call_once(load));
}

/// Load-time registration, like `RTE_MEMPOOL_REGISTER_OPS`.
#[used]
#[link_section = ".init_array"]
static CONSTRUCTOR: extern "C" fn() = constructor;
