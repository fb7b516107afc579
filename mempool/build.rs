//! Names the configuration in which the ring uses its x86-64 `asm!` paths
//! (paired slot stores, AVX2 null scan, prefetches): `cfg(ring_asm)`, set on
//! x86-64 except under loom and Miri, whose models run the portable
//! slot-by-slot atomics instead. One name instead of the predicate spelled
//! out at every use.
//!
//! Also the compiler's version, for the pool's build identity
//! (`pool/identity.rs`): the `repr(Rust)` parts of a pool's header are laid
//! out as the compiler chooses, so builds by two compilers must not share a
//! pool.

fn main() {
    println!("cargo:rustc-check-cfg=cfg(ring_asm)");
    println!("cargo:rerun-if-changed=build.rs");
    let is = |key: &str| std::env::var_os(key).is_some();
    let x86_64 = std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "x86_64");
    if x86_64 && !is("CARGO_CFG_LOOM") && !is("CARGO_CFG_MIRI") {
        println!("cargo:rustc-cfg=ring_asm");
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("-V")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| String::from("unknown"));
    println!("cargo:rustc-env=MEMPOOL_RUSTC_VERSION={version}");
    println!("cargo:rerun-if-env-changed=RUSTC");
}
