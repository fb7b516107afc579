//! Locating DPDK (pkg-config) and libclang (for bindgen).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;

use crate::tracked_var;

/// Oldest DPDK release whose ABI these bindings are written against.
const MIN_VERSION: &str = "22.11";
const PKG_NAME: &str = "libdpdk";
/// Driver libraries whose API `csrc/wrapper.h` includes but which a shared
/// `pkg-config --libs libdpdk` leaves out (drivers are plugins there):
/// `rte_bus_vdev.h` (`rte_vdev_add_custom_scan`).
const DRIVER_LIBS: &[&str] = &["rte_bus_vdev"];
const INSTALL_HINT: &str = "Install it: apt-get install dpdk libdpdk-dev libclang-dev pkg-config";

/// What pkg-config says about the installed DPDK.
pub struct Dpdk {
    pub version: String,
    /// The full `pkg-config --cflags libdpdk`, one argument per element. It
    /// carries `-include rte_config.h` and `-march=...`, which the headers need.
    pub cflags: Vec<String>,
    pub include_paths: Vec<PathBuf>,
    pub link_paths: Vec<PathBuf>,
    pub libs: Vec<String>,
}

/// Probes `libdpdk` >= [`MIN_VERSION`] with pkg-config.
pub fn dpdk() -> Result<Dpdk, String> {
    track_pkg_config_env();
    let lib = pkg_config::Config::new()
        .atleast_version(MIN_VERSION)
        .statik(false)
        .cargo_metadata(false)
        .env_metadata(false)
        .probe(PKG_NAME)
        .map_err(|err| {
            format!(
                "dpdk-sys: DPDK >= {MIN_VERSION} not found by pkg-config ({PKG_NAME}). {INSTALL_HINT} \
                 (pkg-config said: {})",
                pkg_config_reason(&err)
            )
        })?;
    let cflags = raw_cflags()?;
    Ok(Dpdk {
        version: lib.version,
        cflags,
        include_paths: lib.include_paths,
        link_paths: lib.link_paths,
        libs: lib.libs,
    })
}

/// Checks that bindgen will be able to load libclang, so that a missing
/// libclang is reported like a missing DPDK and not as a bindgen panic.
pub fn libclang() -> Result<(), String> {
    tracked_var("LIBCLANG_PATH");
    clang_sys::load().map_err(|err| {
        format!(
            "dpdk-sys: libclang not found (bindgen needs it to read the DPDK headers). {INSTALL_HINT} \
             (clang-sys said: {})",
            first_line(&err)
        )
    })
}

impl Dpdk {
    /// Links the system DPDK shared libraries, never a static copy: a second
    /// EAL or mempool library would carry its own mempool ops table.
    pub fn emit_link(&self) {
        for path in &self.link_paths {
            println!("cargo:rustc-link-search=native={}", path.display());
        }
        for lib in &self.libs {
            println!("cargo:rustc-link-lib=dylib={lib}");
        }
        for lib in DRIVER_LIBS
            .iter()
            .filter(|l| !self.libs.iter().any(|x| x == *l))
        {
            println!("cargo:rustc-link-lib=dylib={lib}");
        }
    }

    /// `links = "dpdk"` metadata, seen by dependents' build scripts as
    /// `DEP_DPDK_VERSION`, `DEP_DPDK_INCLUDE` (a `:`-separated path list) and
    /// `DEP_DPDK_CFLAGS` (the full pkg-config cflags, space-separated).
    pub fn emit_metadata(&self) {
        println!("cargo:version={}", self.version);
        let include =
            std::env::join_paths(&self.include_paths).expect("include paths contain no ':'");
        println!("cargo:include={}", include.to_string_lossy());
        println!("cargo:cflags={}", self.cflags.join(" "));
    }
}

/// The pkg-config crate exposes only `-I` and `-D` of the cflags; the other
/// flags (`-include rte_config.h`, `-march=corei7`) come from the tool itself.
fn raw_cflags() -> Result<Vec<String>, String> {
    let tool = tracked_var("PKG_CONFIG").unwrap_or_else(|| OsString::from("pkg-config"));
    let output = Command::new(&tool)
        .args(["--cflags", PKG_NAME])
        .output()
        .map_err(|err| {
            format!(
                "dpdk-sys: cannot run {}: {err}. {INSTALL_HINT}",
                tool.to_string_lossy()
            )
        })?;
    if !output.status.success() {
        return Err(format!(
            "dpdk-sys: `{} --cflags {PKG_NAME}` failed: {}",
            tool.to_string_lossy(),
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let text = String::from_utf8(output.stdout)
        .map_err(|_| "dpdk-sys: pkg-config printed non-UTF-8 cflags".to_string())?;
    Ok(text.split_whitespace().map(str::to_owned).collect())
}

/// Registers every variable the pkg-config crate may read, including its
/// per-target and HOST_/TARGET_ spellings.
fn track_pkg_config_env() {
    let target = std::env::var("TARGET").unwrap_or_default();
    let target_underscored = target.replace('-', "_");
    for base in [
        "PKG_CONFIG",
        "PKG_CONFIG_PATH",
        "PKG_CONFIG_LIBDIR",
        "PKG_CONFIG_SYSROOT_DIR",
        "PKG_CONFIG_ALLOW_CROSS",
        "PKG_CONFIG_ALL_STATIC",
        "PKG_CONFIG_ALL_DYNAMIC",
    ] {
        tracked_var(base);
        tracked_var(&format!("{base}_{target}"));
        tracked_var(&format!("{base}_{target_underscored}"));
        tracked_var(&format!("HOST_{base}"));
        tracked_var(&format!("TARGET_{base}"));
    }
    for suffix in ["NO_PKG_CONFIG", "STATIC", "DYNAMIC"] {
        tracked_var(&format!("{}_{suffix}", PKG_NAME.to_uppercase()));
    }
}

/// The useful part of a pkg-config failure: its stderr ("Package libdpdk was
/// not found ..."), not the long command line the crate puts first.
fn pkg_config_reason(err: &pkg_config::Error) -> String {
    match err {
        pkg_config::Error::Failure { output, .. }
        | pkg_config::Error::ProbeFailure { output, .. } => {
            first_line(&String::from_utf8_lossy(&output.stderr)).to_owned()
        }
        other => first_line(&other.to_string()).to_owned(),
    }
}

fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("")
}
