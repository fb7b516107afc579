//! Raw FFI bindings to the system DPDK (>= 22.11, found with pkg-config).
//!
//! * [`bindings`] (re-exported at the crate root): bindgen's view of the DPDK
//!   headers listed in `csrc/wrapper.h`. DPDK's `static inline` API
//!   (`rte_mempool_get_bulk`, `rte_pktmbuf_alloc`, `rte_eth_rx_burst`, ...) is
//!   callable through C wrappers that bindgen generates and the build compiles.
//! * [`lcore_id`], [`socket_id`], [`errno`], [`set_errno`]: accessors for the
//!   per-lcore (thread-local) variables that bindgen cannot bind.
//! * [`compat`]: what differs between the DPDK releases the crate supports
//!   (22.11, 24.11, 25.11): the ABI, the plugin directory, telemetry values,
//!   `rte_mbuf` fields in anonymous unions. Other crates use it instead of
//!   testing the release themselves.
//!
//! The crate links the DPDK shared libraries dynamically, never a static copy.
//! Its build script exports `DEP_DPDK_CFLAGS` (the full `pkg-config --cflags
//! libdpdk`, space-separated), `DEP_DPDK_INCLUDE` (`:`-separated),
//! `DEP_DPDK_VERSION`, `DEP_DPDK_ABI` and `DEP_DPDK_PLUGIN_DIR` (see
//! [`compat`]) to the build scripts of crates that depend on it and
//! compile C of their own; such C needs `-DALLOW_EXPERIMENTAL_API` to call
//! DPDK's experimental functions without deprecation warnings.

pub mod compat;
pub mod mempool_list;
mod shim;

pub use bindings::*;
pub use shim::{errno, lcore_id, lcore_id_shim, set_errno, socket_id};

/// Everything bindgen generated from `csrc/wrapper.h`.
#[allow(
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    dead_code,
    improper_ctypes,
    // bindgen's bitfield accessors on newer headers (24.11 on); the lint
    // itself is younger than the crate's oldest supported rustc.
    unknown_lints,
    unnecessary_transmutes,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::pedantic,
    clippy::undocumented_unsafe_blocks,
    // DPDK's doxygen comments, as bindgen copies them: `[in]`, `[out]`
    // parameter markers and bare URLs are not rustdoc links.
    rustdoc::broken_intra_doc_links,
    rustdoc::bare_urls,
    rustdoc::invalid_html_tags
)]
pub mod bindings {
    include!(concat!(env!("OUT_DIR"), "/bindings.rs"));
}
