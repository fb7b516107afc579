//! Link flags of the handler's shared object.
fn main() {
    // A symbol missing from the DPDK libraries we link is a build error, not a
    // dlopen failure inside somebody's application.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,defs");
    // DPDK-style soname: DPDK 22.11's ABI is 23 (its drivers are
    // librte_*.so.23.0 with soname librte_*.so.23); `make install` installs
    // the versioned name and the .so.23 and .so links.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librte_mempool_ptr_ring.so.23");
    println!("cargo:rerun-if-changed=build.rs");
}
