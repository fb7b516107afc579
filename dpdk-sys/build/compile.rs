//! Compiling the C side: bindgen's `static inline` wrappers, the per-lcore
//! shim and the layout table, all with the full DPDK cflags.

use std::path::Path;

use crate::bindings::STATIC_WRAPPERS;
use crate::find::Dpdk;

/// Builds `libdpdk_sys_c.a` and tells cargo to link it (before the DPDK
/// shared libraries, which [`Dpdk::emit_link`] adds afterwards).
pub fn c_sources(dpdk: &Dpdk, csrc: &Path, out_dir: &Path) {
    let mut build = cc::Build::new();
    build
        .file(csrc.join("shim.c"))
        .file(csrc.join("layout.c"))
        .file(out_dir.join(STATIC_WRAPPERS).with_extension("c"))
        .include(csrc)
        // The wrappers call experimental functions too (rte_flow_dynf_*, ...).
        .define("ALLOW_EXPERIMENTAL_API", None)
        .warnings(true)
        // bindgen spells `const void *const p` as `const const void *const p`
        // (rte_is_aligned); harmless, but gcc warns.
        .flag_if_supported("-Wno-duplicate-decl-specifier")
        // DPDK's per-lcore variables live in librte_eal, which every DPDK
        // program loads at start-up, so they sit in static TLS: read them
        // with a thread-pointer offset instead of a __tls_get_addr call on
        // every rte_lcore_id() (the handler's get/put path).
        .flag("-ftls-model=initial-exec");
    for flag in &dpdk.cflags {
        build.flag(flag);
    }
    build.compile("dpdk_sys_c");
}
