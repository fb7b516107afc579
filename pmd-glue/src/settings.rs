//! Run-time settings, read once from the environment when the handler loads
//! (no rebuild needed):
//!
//! * `PTR_RING_VALIDATE=1`: validation mode for pools created afterwards
//!   (foreign pointers and double frees rejected and counted, never inserted).
//! * `PTR_RING_CACHE_SIZE=N`: per-lcore cache size of the handler for every
//!   pool (default 0: off; at most `min(512, pool size / 1.5)`). A pool's
//!   `struct ptr_ring_pool_config` overrides both (see `crate::pool_config`).

use std::sync::OnceLock;

/// The settings in force.
#[derive(Debug, Clone, Copy, Default)]
pub struct Settings {
    /// Validation mode for new pools.
    pub validate: bool,
    /// Explicit per-lcore cache size.
    pub cache_size: Option<usize>,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();

fn from_env() -> Settings {
    let validate = matches!(
        std::env::var("PTR_RING_VALIDATE").as_deref(),
        Ok("1") | Ok("yes") | Ok("true") | Ok("on")
    );
    let cache_size = std::env::var("PTR_RING_CACHE_SIZE")
        .ok()
        .and_then(|v| v.trim().parse().ok());
    Settings {
        validate,
        cache_size,
    }
}

/// Settings, read from the environment on first use.
pub fn get() -> Settings {
    *SETTINGS.get_or_init(from_env)
}
