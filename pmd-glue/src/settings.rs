//! Run-time settings, read once from the environment when the handler loads
//! (no rebuild needed):
//!
//! * `PTR_RING_VALIDATE=1`: validation mode for pools created afterwards
//!   (foreign pointers and double frees rejected and counted, never inserted).
//!   On: `1`, `on`, `yes`, `true`; off: `0`, `off`, `no`, `false` or empty
//!   (any case). Anything else is reported and leaves validation off.
//! * `PTR_RING_CACHE_SIZE=N`: per-lcore cache size of the handler for every
//!   pool (default 0: off; at most `min(512, pool size / 1.5)`). A pool's
//!   `struct ptr_ring_pool_config` overrides both (see `crate::pool_config`).
//!   Not a number: reported, the default is used. Above
//!   `mempool::config::MAX_CACHE_SIZE`: reported and clamped; a size too big
//!   for one pool is reported and clamped when that pool is created.
//!
//! * `PTR_RING_ORDER=newest-first`: gets hand an lcore the objects it put
//!   last first (`mempool::PoolConfig::newest_first`) in every pool created
//!   afterwards; `oldest-first` (the default) keeps every get oldest first.
//!   Also `newest` / `lifo` and `oldest` / `fifo`, any case. Anything else
//!   is reported and leaves the default. A pool's `struct
//!   ptr_ring_pool_config` overrides it.
//!
//! Every value that is not used as given is logged as a warning naming the
//! value and what is used instead.

use std::sync::OnceLock;

use mempool::config::MAX_CACHE_SIZE;

use crate::log;
use crate::log::Level;

// The DPDK-free core keeps DPDK's bound on a cache as a number of its own;
// a DPDK release that changes it fails this build instead of diverging.
const _: () = assert!(MAX_CACHE_SIZE == dpdk_sys::RTE_MEMPOOL_CACHE_MAX_SIZE as usize);

/// The settings in force.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settings {
    /// Validation mode for new pools.
    pub validate: bool,
    /// Explicit per-lcore cache size.
    pub cache_size: Option<usize>,
    /// Newest-first gets for new pools.
    pub newest_first: bool,
}

static SETTINGS: OnceLock<Settings> = OnceLock::new();

/// `PTR_RING_VALIDATE`: the value to use, and a warning when `raw` was not
/// understood.
pub fn parse_validate(raw: Option<&str>) -> (bool, Option<String>) {
    let Some(raw) = raw else {
        return (false, None);
    };
    match raw.trim().to_ascii_lowercase().as_str() {
        "1" | "on" | "yes" | "true" => (true, None),
        "" | "0" | "off" | "no" | "false" => (false, None),
        _ => (
            false,
            Some(format!(
                "PTR_RING_VALIDATE={raw:?} is not one of 1/on/yes/true or 0/off/no/false: \
                 validation stays off"
            )),
        ),
    }
}

/// `PTR_RING_CACHE_SIZE`: the value to use, and a warning when `raw` was not
/// a number or was clamped.
pub fn parse_cache_size(raw: Option<&str>) -> (Option<usize>, Option<String>) {
    let Some(raw) = raw else {
        return (None, None);
    };
    match raw.trim().parse::<usize>() {
        Ok(n) if n > MAX_CACHE_SIZE => (
            Some(MAX_CACHE_SIZE),
            Some(format!(
                "PTR_RING_CACHE_SIZE={raw:?} exceeds the largest per-lcore cache \
                 ({MAX_CACHE_SIZE}): using {MAX_CACHE_SIZE}"
            )),
        ),
        Ok(n) => (Some(n), None),
        Err(_) => (
            None,
            Some(format!(
                "PTR_RING_CACHE_SIZE={raw:?} is not a non-negative number: using the default \
                 cache size"
            )),
        ),
    }
}

/// `PTR_RING_ORDER`: whether new pools get newest first, and a warning
/// when `raw` was not understood.
pub fn parse_order(raw: Option<&str>) -> (bool, Option<String>) {
    let Some(raw) = raw else {
        return (false, None);
    };
    match raw.trim().to_ascii_lowercase().as_str() {
        "newest-first" | "newest_first" | "newest" | "lifo" => (true, None),
        "" | "oldest-first" | "oldest_first" | "oldest" | "fifo" => (false, None),
        _ => (
            false,
            Some(format!(
                "PTR_RING_ORDER={raw:?} is not newest-first (newest, lifo) or oldest-first \
                 (oldest, fifo): gets stay oldest first"
            )),
        ),
    }
}

/// Parses every setting from `get(name)`; returns them and the warnings.
pub fn parse(get: impl Fn(&str) -> Option<String>) -> (Settings, Vec<String>) {
    let v = get("PTR_RING_VALIDATE");
    let c = get("PTR_RING_CACHE_SIZE");
    let o = get("PTR_RING_ORDER");
    let (validate, w1) = parse_validate(v.as_deref());
    let (cache_size, w2) = parse_cache_size(c.as_deref());
    let (newest_first, w3) = parse_order(o.as_deref());
    (
        Settings {
            validate,
            cache_size,
            newest_first,
        },
        w1.into_iter().chain(w2).chain(w3).collect(),
    )
}

fn from_env() -> Settings {
    let (s, warnings) = parse(|k| std::env::var_os(k).map(|v| v.to_string_lossy().into_owned()));
    for w in warnings {
        log!(Level::Warning, "{w}");
    }
    s
}

/// Settings, read from the environment on first use.
pub fn get() -> Settings {
    *SETTINGS.get_or_init(from_env)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_values() {
        for on in ["1", "on", "yes", "true", "TRUE", " On "] {
            assert_eq!(parse_validate(Some(on)), (true, None), "{on:?}");
        }
        for off in ["0", "off", "no", "false", "", "FALSE"] {
            assert_eq!(parse_validate(Some(off)), (false, None), "{off:?}");
        }
        assert_eq!(parse_validate(None), (false, None));
        for bad in ["abc", "-1", "2", "enable"] {
            let (v, w) = parse_validate(Some(bad));
            assert!(!v, "{bad:?} leaves validation off");
            let w = w.unwrap_or_else(|| panic!("{bad:?} must warn"));
            assert!(w.contains(&format!("{bad:?}")), "names the value: {w}");
            assert!(w.contains("validation stays off"), "says what is used: {w}");
        }
    }

    #[test]
    fn order_values() {
        for newest in ["newest-first", "NEWEST", " lifo ", "newest_first"] {
            assert_eq!(parse_order(Some(newest)), (true, None), "{newest:?}");
        }
        for oldest in ["oldest-first", "fifo", "Oldest", ""] {
            assert_eq!(parse_order(Some(oldest)), (false, None), "{oldest:?}");
        }
        assert_eq!(parse_order(None), (false, None));
        let (v, w) = parse_order(Some("stack"));
        assert!(!v);
        let w = w.expect("an unknown order warns");
        assert!(w.contains("\"stack\"") && w.contains("oldest first"), "{w}");
        let (s, warnings) = parse(|k| (k == "PTR_RING_ORDER").then(|| "newest".to_string()));
        assert!(s.newest_first && warnings.is_empty());
    }

    #[test]
    fn cache_size_values() {
        assert_eq!(parse_cache_size(None), (None, None));
        assert_eq!(parse_cache_size(Some("0")), (Some(0), None));
        assert_eq!(parse_cache_size(Some(" 64 ")), (Some(64), None));
        assert_eq!(
            parse_cache_size(Some(&MAX_CACHE_SIZE.to_string())),
            (Some(MAX_CACHE_SIZE), None)
        );
        for bad in ["abc", "-1", "TRUE", "1.5", ""] {
            let (v, w) = parse_cache_size(Some(bad));
            assert_eq!(v, None, "{bad:?}: default cache size");
            let w = w.unwrap_or_else(|| panic!("{bad:?} must warn"));
            assert!(w.contains(&format!("{bad:?}")), "names the value: {w}");
            assert!(w.contains("using the default"), "says what is used: {w}");
        }
        let (v, w) = parse_cache_size(Some("100000"));
        assert_eq!(v, Some(MAX_CACHE_SIZE));
        let w = w.expect("clamping warns");
        assert!(
            w.contains("\"100000\"") && w.contains(&format!("using {MAX_CACHE_SIZE}")),
            "{w}"
        );
    }

    #[test]
    fn parse_collects_every_warning() {
        let (s, w) = parse(|k| match k {
            "PTR_RING_VALIDATE" => Some("abc".into()),
            "PTR_RING_CACHE_SIZE" => Some("-1".into()),
            _ => None,
        });
        assert_eq!(s, Settings::default());
        assert_eq!(w.len(), 2, "{w:?}");
    }
}
