//! Errors of the glue, each mapped once to the negative errno DPDK expects.

use mempool::PoolError;

/// What can go wrong between DPDK and the core.
#[derive(Debug, thiserror::Error)]
pub enum GlueError {
    /// The core refused (exhaustion, bad input, validation, configuration).
    #[error(transparent)]
    Core(#[from] PoolError),
    /// `mp->pool_data` is not a ptr_ring zone: in a secondary process this
    /// means its mempool ops table is numbered differently from the primary's.
    #[error(
        "pool data at {addr:#x} is not a ptr_ring pool: this process's mempool ops table \
         differs from the creating process's; load the same -d plugins in the same order \
         in every process"
    )]
    NotOurPool {
        /// `mp->pool_data`.
        addr: usize,
    },
    /// A null mempool pointer where a pool is required.
    #[error("null mempool")]
    NullPool,
    /// A pool whose ops, in this process, are another handler's.
    #[error(
        "pool {pool:?} uses mempool ops {ops:?} in this process, not ptr_ring (if another \
         process created it on ptr_ring, the processes' ops tables differ: load the same -d \
         plugins in the same order in every process)"
    )]
    OtherHandler {
        /// The pool.
        pool: String,
        /// The ops name its `ops_index` gives in this process.
        ops: String,
    },
    /// Memzone name would exceed `RTE_MEMZONE_NAMESIZE`.
    #[error("memzone name {name:?} is too long (pool names up to 28 characters)")]
    NameTooLong {
        /// The name we would have used.
        name: String,
    },
    /// DPDK could not give us memory.
    #[error("cannot reserve {bytes} bytes of {what} {name:?} (rte_errno {errno})")]
    NoMemory {
        /// Kind of memory.
        what: &'static str,
        /// Its name.
        name: String,
        /// Size asked for.
        bytes: usize,
        /// `rte_errno` after the failure.
        errno: i32,
    },
    /// No memzone for a pool we should own.
    #[error("memzone {name:?} not found")]
    NoZone {
        /// Its name.
        name: String,
    },
    /// The ops name is not registered in this process.
    #[error("mempool ops {name:?} not registered (rte_errno {errno})")]
    NotRegistered {
        /// Ops name.
        name: String,
        /// `rte_errno`/return value.
        errno: i32,
    },
    /// A DPDK call failed.
    #[error("{call} failed: {errno}")]
    Dpdk {
        /// Function name.
        call: &'static str,
        /// Negative errno or rte_errno.
        errno: i32,
    },
    /// `pool_config` of `rte_mempool_set_ops_byname` refused.
    #[error("bad struct ptr_ring_pool_config: {why}")]
    BadPoolConfig {
        /// What is wrong with it.
        why: String,
    },
    /// A second shutdown of a pool whose shutdown already began (maybe in
    /// another process): the first one owns the release.
    #[error(
        "pool {pool:?} is already shutting down (state {state}); its release belongs to the \
         first shutdown call: do not call shutdown or rte_mempool_free again"
    )]
    AlreadyShuttingDown {
        /// The pool.
        pool: String,
        /// Its state.
        state: mempool::PoolState,
    },
    /// Memory that cannot be DMA-mapped with `rte_dev_dma_map`.
    #[error(
        "pool {pool:?}: memory at {addr:#x} is neither EAL memory nor registered with \
         rte_extmem_register: register it (rte_extmem_register) before populating the pool"
    )]
    NotDmaMemory {
        /// The pool.
        pool: String,
        /// An address in the chunk.
        addr: usize,
    },
    /// EAL arguments could not be passed (interior NUL).
    #[error("bad EAL argument {arg:?}")]
    BadArg {
        /// The argument.
        arg: String,
    },
}

impl GlueError {
    /// Negative errno for DPDK.
    pub fn errno(&self) -> i32 {
        match self {
            GlueError::Core(e) => e.errno(),
            GlueError::NotOurPool { .. }
            | GlueError::NullPool
            | GlueError::OtherHandler { .. }
            | GlueError::NameTooLong { .. }
            | GlueError::BadPoolConfig { .. }
            | GlueError::BadArg { .. } => -libc::EINVAL,
            GlueError::NoMemory { .. } => -libc::ENOMEM,
            GlueError::AlreadyShuttingDown { .. } => -libc::EALREADY,
            GlueError::NotDmaMemory { .. } => -libc::EINVAL,
            GlueError::NoZone { .. } => -libc::ENOENT,
            GlueError::NotRegistered { errno, .. } | GlueError::Dpdk { errno, .. } => {
                if *errno < 0 {
                    *errno
                } else {
                    -libc::EINVAL
                }
            }
        }
    }
}
