//! Link flags of the handler's shared object.
fn main() {
    // A symbol missing from the DPDK libraries we link is a build error, not a
    // dlopen failure inside somebody's application.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,defs");
    // DPDK-style soname, from the ABI of the DPDK the bindings were made
    // from (dpdk-sys exports it): 22.11's drivers are librte_*.so.23.0 with
    // soname librte_*.so.23, 24.11's .so.25, 25.11's .so.26. `make install`
    // installs the versioned name and the .so.<ABI> and .so links.
    let abi = std::env::var("DEP_DPDK_ABI").expect("dpdk-sys exports DEP_DPDK_ABI");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librte_mempool_ptr_ring.so.{abi}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=DEP_DPDK_ABI");
}
