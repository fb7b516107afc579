//! Names the configuration in which the ring uses its x86-64 `asm!` paths
//! (paired slot stores, AVX2 null scan, prefetches): `cfg(ring_asm)`, set on
//! x86-64 except under loom and Miri, whose models run the portable
//! slot-by-slot atomics instead. One name instead of the predicate spelled
//! out at every use.

fn main() {
    println!("cargo:rustc-check-cfg=cfg(ring_asm)");
    println!("cargo:rerun-if-changed=build.rs");
    let is = |key: &str| std::env::var_os(key).is_some();
    let x86_64 = std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "x86_64");
    if x86_64 && !is("CARGO_CFG_LOOM") && !is("CARGO_CFG_MIRI") {
        println!("cargo:rustc-cfg=ring_asm");
    }
}
