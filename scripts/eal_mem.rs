//! The EAL memory arguments that `scripts/setup.sh` chose for this machine
//! (`build/eal-mem.env`), for the Rust programs: the twin of
//! `scripts/eal-args.sh`, which the shell scripts source. One source file,
//! included with `#[path = ...] mod eal_mem;` by pmd-glue's EAL tests
//! (`tests/common`), the `port_shutdown` example and the ring benchmark, each
//! of them one directory below the repository root.
#![allow(dead_code)]

use std::path::PathBuf;

/// The memory arguments used when no settings file is found: what
/// `scripts/setup.sh` writes for a machine without hugepages.
pub const DEFAULT_EAL_MEM: &str = "--no-huge -m 1024 --no-shconf";

/// What `scripts/setup.sh` chose for this machine.
#[derive(Debug, Clone)]
pub struct EalMem {
    /// `hugepages` or `nohuge` (`EAL_MODE`), or `default` when no settings
    /// file was found.
    pub mode: String,
    /// The EAL memory arguments (`EAL_MEM`, split at blanks).
    pub args: Vec<String>,
}

impl EalMem {
    /// Whether hugepages (shared memory) are available to EAL.
    pub fn hugepages(&self) -> bool {
        self.mode == "hugepages"
    }
}

/// The settings file: the one named by `PTR_RING_EAL_ENV`, else
/// `build/eal-mem.env` under the current directory (a program run from the
/// repository root), else that of the repository the program was built in.
fn settings_file() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PTR_RING_EAL_ENV") {
        return Some(PathBuf::from(p));
    }
    [
        PathBuf::from("build/eal-mem.env"),
        PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../build/eal-mem.env")),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// Reads the settings (see [`settings_file`]); without them,
/// [`DEFAULT_EAL_MEM`] in mode `default`.
pub fn eal_mem() -> EalMem {
    let text = settings_file().and_then(|p| std::fs::read_to_string(p).ok());
    let value = |key: &str| {
        text.as_deref()?.lines().find_map(|l| {
            l.trim()
                .strip_prefix(key)
                .and_then(|v| v.strip_prefix('='))
                .map(|v| v.trim().trim_matches('"').to_string())
        })
    };
    EalMem {
        mode: value("EAL_MODE").unwrap_or_else(|| "default".to_string()),
        args: mem_args(value("EAL_MEM").as_deref().unwrap_or(DEFAULT_EAL_MEM)),
    }
}

/// `mem` (an `EAL_MEM` value) split at blanks, with `--no-shconf` added to
/// `--no-huge` when neither it nor `--in-memory` is there: without
/// hugepages EAL keeps a shared config in its runtime directory unless told
/// not to, and concurrent runs would then clash.
pub fn mem_args(mem: &str) -> Vec<String> {
    let mut args: Vec<String> = mem.split_whitespace().map(String::from).collect();
    if args.iter().any(|a| a == "--no-huge")
        && !args
            .iter()
            .any(|a| a == "--no-shconf" || a == "--in-memory")
    {
        args.push("--no-shconf".into());
    }
    args
}
