//! bindgen over `csrc/wrapper.h`.

use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::find::Dpdk;
use crate::tracked_var;

/// Base name (without `.c`) of the C file bindgen writes with one wrapper per
/// `static inline` function; [`crate::compile`] compiles it.
pub const STATIC_WRAPPERS: &str = "static_wrappers";

/// Packed protocol headers that contain over-aligned members, which Rust
/// cannot express (`#[repr(packed)]` holding a `#[repr(align)]` type).
const OPAQUE_TYPES: &[&str] = &[
    "rte_arp_hdr",
    "rte_arp_ipv4",
    "rte_l2tpv2_combined_msg_hdr",
    "rte_gtp_psc_generic_hdr",
    "rte_gtp_psc_type0_hdr",
    "rte_gtp_psc_type1_hdr",
];

/// Thread-locals (`RTE_DEFINE_PER_LCORE`): Rust cannot name a C `__thread`
/// variable, so they are read through `csrc/shim.c` instead.
const BLOCKED_ITEMS: &[&str] = &["per_lcore_.*"];

/// The string macros of the DPDK headers that [`crate::dpdk_release`] reads, as
/// bindgen saw them.
#[derive(Debug, Default)]
pub struct Seen {
    /// `RTE_EAL_PMD_PATH` (`rte_build_config.h`): EAL's plugin directory,
    /// `<libdir>/dpdk/pmds-<ABI>.<minor>`; empty in static builds.
    pub pmd_path: Option<String>,
}

/// Records the string macros named in [`Seen`] while bindgen parses.
#[derive(Debug)]
struct SeeMacros(Arc<Mutex<Seen>>);

impl bindgen::callbacks::ParseCallbacks for SeeMacros {
    fn str_macro(&self, name: &str, value: &[u8]) {
        if name == "RTE_EAL_PMD_PATH" {
            let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
            seen.pmd_path = Some(String::from_utf8_lossy(value).into_owned());
        }
    }
}

pub fn generate(dpdk: &Dpdk, csrc: &Path, out_dir: &Path) -> Result<Seen, String> {
    // bindgen itself reads these; cargo must rerun when they change.
    tracked_var("BINDGEN_EXTRA_CLANG_ARGS");
    tracked_var("CLANG_PATH");

    let seen = Arc::new(Mutex::new(Seen::default()));
    let header = csrc.join("wrapper.h");
    let mut builder = bindgen::Builder::default()
        .header(header.to_string_lossy())
        .clang_args(&dpdk.cflags)
        .rust_target(bindgen::RustTarget::stable(77, 0).map_err(|err| err.to_string())?)
        .allowlist_function("_?rte_.*")
        .allowlist_type("_?rte_.*|RTE_.*|eth_.*")
        .allowlist_var("_?rte_.*|RTE_.*|RING_F_.*|SOCKET_ID_ANY|LCORE_ID_ANY")
        .prepend_enum_name(false)
        .derive_default(true)
        .wrap_unsafe_ops(true)
        .merge_extern_blocks(true)
        .wrap_static_fns(true)
        .wrap_static_fns_path(out_dir.join(STATIC_WRAPPERS))
        .formatter(bindgen::Formatter::Prettyplease)
        .parse_callbacks(Box::new(
            bindgen::CargoCallbacks::new().rerun_on_header_files(false),
        ))
        .parse_callbacks(Box::new(SeeMacros(Arc::clone(&seen))));
    for item in BLOCKED_ITEMS {
        builder = builder.blocklist_item(item);
    }
    for ty in OPAQUE_TYPES {
        builder = builder.opaque_type(ty);
    }
    let bindings = builder
        .generate()
        .map_err(|err| format!("dpdk-sys: bindgen could not read the DPDK headers: {err}"))?;
    bindings
        .write_to_file(out_dir.join("bindings.rs"))
        .map_err(|err| format!("dpdk-sys: cannot write bindings.rs: {err}"))?;
    drop(bindings);
    let seen = Arc::try_unwrap(seen).map_err(|_| "dpdk-sys: bindgen kept its callbacks")?;
    Ok(seen.into_inner().unwrap_or_else(|e| e.into_inner()))
}
