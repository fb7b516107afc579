//! Link flags of the handler's shared object.
fn main() {
    // A symbol missing from the DPDK libraries we link is a build error, not a
    // dlopen failure inside somebody's application.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,defs");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,librte_mempool_ptr_ring.so");
    println!("cargo:rerun-if-changed=build.rs");
}
