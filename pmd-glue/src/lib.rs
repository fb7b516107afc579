//! The `ptr_ring` DPDK mempool handler.
//!
//! Built as `librte_mempool_ptr_ring.so`, it registers the mempool ops
//! `ptr_ring` when loaded, so any DPDK 22.11 application uses it with
//! `-d librte_mempool_ptr_ring.so --mbuf-pool-ops-name ptr_ring`. The logic
//! lives in the DPDK-free [`mempool`] crate; this crate only translates.
//!
//! * [`ops`]: the `rte_mempool_ops` callbacks and registration;
//! * [`zone`]: the per-pool memzone holding the handler's state;
//! * [`log`], [`telemetry`]: the `mempool.ptr_ring` log type and
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
pub mod pool_config;
pub mod port;
pub mod settings;
pub mod telemetry;
pub mod zone;

use std::sync::Once;

pub use error::GlueError;
use log::Level;

static INIT: Once = Once::new();

/// Registers log type, telemetry commands and the ops, once per process.
/// Runs from the load-time constructor; [`api::ensure_registered`] calls it
/// too, for programs that link the crate.
pub fn init() {
    INIT.call_once(|| {
        log::register();
        let s = settings::get();
        match ops::register() {
            Ok(idx) => {
                telemetry::register();
                log!(
                    Level::Info,
                    "mempool ops \"{}\" registered at index {idx} (validation {}, cache {})",
                    ops::OPS_NAME,
                    if s.validate { "on" } else { "off" },
                    s.cache_size
                        .map_or("default".to_string(), |c| c.to_string())
                );
            }
            Err(e) => log!(
                Level::Err,
                "cannot register mempool ops \"{}\": {e} (DPDK's table holds 16 handlers; \
                 every loaded mempool driver takes one)",
                ops::OPS_NAME
            ),
        }
    });
}

extern "C" fn constructor() {
    // A panic must not unwind into the dynamic loader.
    let _ = std::panic::catch_unwind(init);
}

/// Load-time registration, like `RTE_MEMPOOL_REGISTER_OPS`.
#[used]
#[link_section = ".init_array"]
static CONSTRUCTOR: extern "C" fn() = constructor;
