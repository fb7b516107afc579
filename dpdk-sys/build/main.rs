//! Build script of `dpdk-sys`, in three steps:
//!
//! 1. [`find`]: ask pkg-config for `libdpdk` >= 22.11 (and check libclang is
//!    loadable), failing with one message that names the packages to install;
//! 2. [`bindings`]: run bindgen over `csrc/wrapper.h` with the full DPDK cflags,
//!    writing `$OUT_DIR/bindings.rs` and C wrappers for `static inline` functions;
//! 3. [`compile`]: compile those wrappers, the per-lcore shim and the layout
//!    table with the same cflags, then link the system DPDK dynamically;
//! 4. [`release`]: tell dependents (and `dpdk_sys::compat`) the release's ABI
//!    and plugin directory.

mod bindings;
mod compile;
mod dpdk_release;
mod find;

use std::env;
use std::path::PathBuf;

fn main() {
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let csrc = manifest_dir.join("csrc");
    let dpdk = find::dpdk().unwrap_or_else(|msg| fail(&msg));
    find::libclang().unwrap_or_else(|msg| fail(&msg));

    let seen = bindings::generate(&dpdk, &csrc, &out_dir).unwrap_or_else(|msg| fail(&msg));
    let release = dpdk_release::of(&dpdk, &seen).unwrap_or_else(|msg| fail(&msg));
    compile::c_sources(&dpdk, &csrc, &out_dir);
    dpdk.emit_link();
    dpdk.emit_metadata();
    release.emit();
    emit_tracked_vars();
    println!("cargo:rerun-if-changed=build");
    println!("cargo:rerun-if-changed=csrc");
}

thread_local! {
    /// Variables read so far; see [`tracked_var`].
    static TRACKED_VARS: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Reads an environment variable and remembers to tell cargo to rerun when it
/// changes. The `rerun-if-env-changed` lines are printed only on success (a
/// failed build script always reruns), so that a failure shows just its message.
pub fn tracked_var(name: &str) -> Option<std::ffi::OsString> {
    TRACKED_VARS.with(|vars| vars.borrow_mut().push(name.to_owned()));
    env::var_os(name)
}

fn emit_tracked_vars() {
    TRACKED_VARS.with(|vars| {
        for name in vars.borrow().iter() {
            println!("cargo:rerun-if-env-changed={name}");
        }
    });
}

/// Stops the build with one readable line instead of a panic backtrace. The
/// warning puts it at the top of cargo's output, stderr at the bottom.
fn fail(msg: &str) -> ! {
    println!("cargo:warning={msg}");
    eprintln!("{msg}");
    std::process::exit(1);
}
