//! Per-pool configuration through DPDK's `pool_config` argument:
//! `rte_mempool_set_ops_byname(mp, "ptr_ring", &cfg)` with a
//! `struct ptr_ring_pool_config` (include/rte_mempool_ptr_ring.h). Each field
//! left at -1 keeps the process-wide default (the `PTR_RING_*` environment
//! variables, see [`crate::settings`]); a NULL `pool_config` keeps them all.
//!
//! DPDK stores the pointer in `mp->pool_config` and the handler reads it
//! once, in `ops->alloc` (during the first populate), so the struct must live
//! until the pool is populated.

use dpdk_sys as sys;
use mempool::PoolConfig;

use crate::error::GlueError;

/// Version of `struct ptr_ring_pool_config` this build understands
/// (`PTR_RING_POOL_CONFIG_VERSION` in the C header).
pub const VERSION: u32 = 1;

/// `struct ptr_ring_pool_config` of the C header, version 1.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfigArg {
    /// [`VERSION`]; any other value is refused.
    pub version: u32,
    /// The handler's per-lcore cache: -1 the default, 0 off, `N` objects
    /// (at most `min(512, objects / 1.5)`).
    pub cache_size: i32,
    /// Validation mode: -1 the default, 0 off, 1 on.
    pub validate: i32,
    /// The order gets hand objects out in: -1 or 0 the default,
    /// [`ORDER_OLDEST_FIRST`], [`ORDER_NEWEST_FIRST`]
    /// ([`PoolConfig::newest_first`]). 0 is a default too: the field was
    /// `reserved` (always 0) before it had a meaning.
    pub order: i32,
}

/// `order`: every get takes the ring's oldest objects (`PTR_RING_ORDER_OLDEST_FIRST`).
pub const ORDER_OLDEST_FIRST: i32 = 1;
/// `order`: an lcore gets back the objects it put last first
/// (`PTR_RING_ORDER_NEWEST_FIRST`).
pub const ORDER_NEWEST_FIRST: i32 = 2;

// The C header declares the same four 32-bit fields (the last one was
// `reserved`, always 0, before it was `order`: 0 still means the default).
const _: () = assert!(core::mem::size_of::<PoolConfigArg>() == 16);

impl PoolConfigArg {
    /// Every field at its default.
    pub const DEFAULT: PoolConfigArg = PoolConfigArg {
        version: VERSION,
        cache_size: -1,
        validate: -1,
        order: -1,
    };

    /// Applies the fields that are set to `cfg` (whose object count is the
    /// pool's), refusing unknown versions and out-of-range values.
    pub fn apply(&self, cfg: &mut PoolConfig) -> Result<(), GlueError> {
        let bad = |why: String| Err(GlueError::BadPoolConfig { why });
        if self.version != VERSION {
            return bad(format!(
                "version {} (this build understands {VERSION})",
                self.version
            ));
        }
        match self.cache_size {
            -1 => {}
            c if c >= 0 => {
                let max = PoolConfig::max_cache_size(cfg.objects);
                if c as usize > max {
                    return bad(format!(
                        "cache_size {c} above {max}, the most a pool of {} objects allows",
                        cfg.objects
                    ));
                }
                cfg.cache_size = Some(c as usize);
            }
            c => return bad(format!("cache_size {c} (-1 default, 0 off, or a size)")),
        }
        match self.validate {
            -1 => {}
            0 | 1 => cfg.validate = self.validate == 1,
            v => return bad(format!("validate {v} (-1 default, 0 off, 1 on)")),
        }
        match self.order {
            -1 | 0 => {}
            ORDER_OLDEST_FIRST => cfg.newest_first = false,
            ORDER_NEWEST_FIRST => cfg.newest_first = true,
            o => {
                return bad(format!(
                    "order {o} (-1 or 0 default, {ORDER_OLDEST_FIRST} oldest first, \
                     {ORDER_NEWEST_FIRST} newest first)"
                ))
            }
        }
        Ok(())
    }
}

/// Applies `mp->pool_config`, if any, to `cfg`.
///
/// # Safety
/// `mp` is a valid mempool whose `pool_config` is NULL or points to a
/// `struct ptr_ring_pool_config` that is still alive (DPDK's contract for
/// `rte_mempool_set_ops_byname`).
pub unsafe fn apply_from(
    mp: *const sys::rte_mempool,
    cfg: &mut PoolConfig,
) -> Result<(), GlueError> {
    // SAFETY: `mp` is valid (caller).
    let arg = unsafe { (*mp).pool_config }.cast::<PoolConfigArg>();
    if arg.is_null() {
        return Ok(());
    }
    // SAFETY: non-null and pointing to a live config struct (caller); read
    // unaligned, since C gives no alignment promise for a `void *`.
    unsafe { arg.read_unaligned() }.apply(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> PoolConfig {
        let mut c = PoolConfig::new(8191);
        c.cache_size = Some(0);
        c
    }

    #[test]
    fn defaults_change_nothing() {
        let mut c = cfg();
        PoolConfigArg::DEFAULT.apply(&mut c).unwrap();
        assert_eq!(c, cfg());
    }

    #[test]
    fn fields_override() {
        let mut c = cfg();
        let a = PoolConfigArg {
            cache_size: 128,
            validate: 1,
            ..PoolConfigArg::DEFAULT
        };
        a.apply(&mut c).unwrap();
        assert_eq!(c.cache_size, Some(128));
        assert!(c.validate);
        assert!(!c.newest_first);
        for (order, newest) in [(ORDER_NEWEST_FIRST, true), (0, true), (-1, true)] {
            PoolConfigArg {
                order,
                ..PoolConfigArg::DEFAULT
            }
            .apply(&mut c)
            .unwrap();
            assert_eq!(c.newest_first, newest, "order {order}");
        }
        PoolConfigArg {
            order: ORDER_OLDEST_FIRST,
            ..PoolConfigArg::DEFAULT
        }
        .apply(&mut c)
        .unwrap();
        assert!(!c.newest_first);
    }

    #[test]
    fn bad_values_are_refused() {
        for a in [
            PoolConfigArg {
                version: 2,
                ..PoolConfigArg::DEFAULT
            },
            PoolConfigArg {
                order: 3,
                ..PoolConfigArg::DEFAULT
            },
            PoolConfigArg {
                order: -2,
                ..PoolConfigArg::DEFAULT
            },
            PoolConfigArg {
                cache_size: -2,
                ..PoolConfigArg::DEFAULT
            },
            PoolConfigArg {
                cache_size: 513,
                ..PoolConfigArg::DEFAULT
            },
            PoolConfigArg {
                validate: 2,
                ..PoolConfigArg::DEFAULT
            },
        ] {
            let mut c = cfg();
            let e = a.apply(&mut c).unwrap_err();
            assert_eq!(e.errno(), -libc::EINVAL, "{a:?}: {e}");
            assert_eq!(c, cfg(), "a refused config changes nothing");
        }
    }
}
