//! Which DPDK release the bindings were generated from, as the rest of the
//! workspace needs to know it: the ABI (sonames, plugin directories) and
//! EAL's plugin directory. Read from what bindgen saw in the headers
//! (`RTE_EAL_PMD_PATH`), with the soname of the `librte_eal.so` that
//! pkg-config points at as the fallback for builds without a plugin path.

use std::path::Path;

use crate::bindings::Seen;
use crate::find::Dpdk;

pub struct Release {
    /// Major ABI version: 23 for 22.11, 25 for 24.11, 26 for 25.11.
    pub abi: u32,
    /// EAL's plugin directory (`RTE_EAL_PMD_PATH`), empty when EAL has none.
    pub plugin_dir: String,
}

pub fn of(dpdk: &Dpdk, seen: &Seen) -> Result<Release, String> {
    let plugin_dir = seen.pmd_path.clone().unwrap_or_default();
    let abi = abi_of_plugin_dir(&plugin_dir)
        .or_else(|| abi_of_eal_soname(dpdk))
        .ok_or_else(|| {
            format!(
                "dpdk-sys: cannot tell the ABI of DPDK {}: RTE_EAL_PMD_PATH is {:?} and no \
                 librte_eal.so.<ABI> lies in {:?}",
                dpdk.version, plugin_dir, dpdk.link_paths
            )
        })?;
    Ok(Release { abi, plugin_dir })
}

impl Release {
    /// `cargo:abi` / `cargo:plugin_dir` for dependents' build scripts
    /// (`DEP_DPDK_ABI`, `DEP_DPDK_PLUGIN_DIR`), and the same as compile-time
    /// environment of this crate (`dpdk_sys::compat`).
    pub fn emit(&self) {
        println!("cargo:abi={}", self.abi);
        println!("cargo:plugin_dir={}", self.plugin_dir);
        println!("cargo:rustc-env=DPDK_SYS_ABI={}", self.abi);
        println!("cargo:rustc-env=DPDK_SYS_PLUGIN_DIR={}", self.plugin_dir);
    }
}

/// `.../pmds-26.0` -> 26.
fn abi_of_plugin_dir(dir: &str) -> Option<u32> {
    let leaf = Path::new(dir).file_name()?.to_str()?;
    leaf.strip_prefix("pmds-")?.split('.').next()?.parse().ok()
}

/// `librte_eal.so` -> `librte_eal.so.26` (the development link) -> 26.
fn abi_of_eal_soname(dpdk: &Dpdk) -> Option<u32> {
    dpdk.link_paths.iter().find_map(|dir| {
        let target = std::fs::read_link(dir.join("librte_eal.so")).ok()?;
        let name = target.file_name()?.to_str()?.to_owned();
        name.strip_prefix("librte_eal.so.")?
            .split('.')
            .next()?
            .parse()
            .ok()
    })
}
