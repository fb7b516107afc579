//! `struct ptr_ring_pool_config` of `rte_mempool_ptr_ring.h`, version 1,
//! mirrored: the benchmarks do not link the handler's crate. Passed as the
//! `pool_config` of `rte_mempool_set_ops_byname(mp, "ptr_ring", &cfg)`.

/// The C struct.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PtrRingPoolConfig {
    /// Always 1.
    pub version: u32,
    /// The handler's own per-lcore cache: -1 the default, 0 off, or a size.
    pub cache_size: i32,
    /// Validation mode: -1 the default, 0 off, 1 on.
    pub validate: i32,
    /// -1 the default order, [`ORDER_NEWEST_FIRST`] newest first.
    pub order: i32,
}

/// `PTR_RING_ORDER_NEWEST_FIRST`.
pub const ORDER_NEWEST_FIRST: i32 = 2;

/// The handler name the benchmarks give `ptr_ring` with newest-first gets
/// on its pool (a handler of its own in their output).
pub const PTR_RING_NEWEST: &str = "ptr_ring-newest";

impl PtrRingPoolConfig {
    /// The handler's cache `cache_size`, validation by default, and
    /// newest-first gets when `newest`.
    pub fn new(cache_size: i32, newest: bool) -> Self {
        PtrRingPoolConfig {
            version: 1,
            cache_size,
            validate: -1,
            order: if newest { ORDER_NEWEST_FIRST } else { -1 },
        }
    }
}
