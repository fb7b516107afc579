//! `dpdk_sys::compat` agrees with the DPDK that the tests run against: the
//! ABI read from the headers is the one of the libraries loaded, and of the
//! plugin directory; the mbuf accessors read the fields DPDK's inline
//! functions read.

use std::ffi::CStr;

use dpdk_sys::compat;

#[test]
fn abi_is_the_releases_by_dpdks_policy() {
    let (year, month, _) = compat::RELEASE;
    assert_eq!(compat::ABI, compat::abi_of_release(year, month));
    // The LTS releases this tree supports, and the releases between them.
    assert_eq!(compat::abi_of_release(22, 11), 23);
    assert_eq!(compat::abi_of_release(24, 11), 25);
    assert_eq!(compat::abi_of_release(25, 3), 25);
    assert_eq!(compat::abi_of_release(25, 7), 25);
    assert_eq!(compat::abi_of_release(25, 11), 26);
}

#[test]
fn plugin_dir_is_named_after_the_abi() {
    if compat::PLUGIN_DIR.is_empty() {
        return; // a DPDK built without a plugin directory: nothing to name
    }
    let leaf = compat::PLUGIN_DIR.rsplit('/').next().unwrap();
    assert!(
        leaf.starts_with(&format!("pmds-{}.", compat::ABI)),
        "{} for ABI {}",
        compat::PLUGIN_DIR,
        compat::ABI
    );
}

#[test]
fn loaded_eal_library_has_the_abi() {
    // SAFETY: all-zero is a valid Dl_info; dladdr accepts any address and
    // fills a NUL-terminated path that lives as long as the library.
    let path = unsafe {
        let mut info: libc::Dl_info = core::mem::zeroed();
        let f = dpdk_sys::rte_eal_init as *const core::ffi::c_void;
        assert_ne!(libc::dladdr(f, &mut info), 0, "dladdr(rte_eal_init)");
        CStr::from_ptr(info.dli_fname)
            .to_string_lossy()
            .into_owned()
    };
    assert!(
        path.ends_with(&format!("librte_eal.so.{}", compat::ABI)),
        "{path} for ABI {}",
        compat::ABI
    );
}
