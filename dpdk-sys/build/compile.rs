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
        .flag_if_supported("-Wno-duplicate-decl-specifier");
    for flag in &dpdk.cflags {
        build.flag(flag);
    }
    build.compile("dpdk_sys_c");
}
