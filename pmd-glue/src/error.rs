//! Errors of the glue and of the core, each mapped once to the negative
//! errno DPDK expects: [`GlueError::errno`], [`pool_errno`], [`ring_errno`].
//! (The DPDK-free core has no errno of its own; its errors carry the values
//! that failed, and this is where they become DPDK return values.)

use mempool::{PoolError, RingError};

/// What can go wrong between DPDK and the core.
#[derive(Debug, thiserror::Error)]
pub enum GlueError {
    /// The core refused (exhaustion, bad input, validation, configuration).
    #[error(transparent)]
    Core(#[from] PoolError),
    /// `mp->pool_data` is not a ptr_ring zone: a pool of another handler
    /// reached our callbacks, which in a secondary process means its mempool
    /// ops table is numbered differently from the primary's.
    #[error(
        "pool data at {addr:#x} is not a ptr_ring pool: this process's mempool ops table \
         differs from the creating process's (a secondary that could not take its primary's \
         table order: see the handler's log lines at start-up)"
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
    /// Memzone name would exceed `RTE_MEMZONE_NAMESIZE`: only for a pool
    /// name longer than DPDK itself accepts (see `zone::MAX_POOL_NAME`).
    #[error(
        "memzone name {name:?} is too long (DPDK takes mempool names of up to {} characters)",
        crate::cname::dpdk_max_pool_name()
    )]
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
    /// A validated put into a pool whose memory DPDK freed (a populate
    /// that failed part-way) and that was not populated again: no object
    /// can be the pool's.
    #[error(
        "pool {pool:?} has no memory: DPDK freed its chunks after a failed populate; populate \
         it again before use"
    )]
    NoMemoryChunks {
        /// The pool.
        pool: String,
    },
    /// A pool that is not on DPDK's mempool list: freed, or being freed
    /// (`rte_mempool_free` unlinks a pool first). Nothing was read from it.
    #[error(
        "the pool at {addr:#x} is not on DPDK's mempool list: it is freed or being freed; \
         do not use or free it"
    )]
    PoolGone {
        /// The `rte_mempool` pointer the caller passed.
        addr: usize,
    },
    /// The handler's release is freeing the pool right now: the caller must
    /// not free it too.
    #[error(
        "pool {pool:?}: its release found every buffer back and is freeing it: do not call \
         rte_mempool_free on it"
    )]
    ReleaseInProgress {
        /// The pool.
        pool: String,
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
    /// Single-producer or single-consumer mempool flags asked of a safe
    /// constructor: [`MbufPool`](crate::api::MbufPool) is `Sync`, so safe
    /// code could get (or put) on two threads at once, which such a pool
    /// does not allow.
    #[error(
        "mempool flags {flags:#x} ask for a single-producer or single-consumer pool \
         (RTE_MEMPOOL_F_SP_PUT / RTE_MEMPOOL_F_SC_GET), which the safe API cannot keep to one \
         thread a side: use the unsafe MbufPool::create_with_flags_unchecked and keep its \
         contract"
    )]
    SingleSided {
        /// The flags asked for.
        flags: u32,
    },
    /// The pool's zone was made by another build of the handler (other
    /// layouts, features, DPDK release or compiler): it is not read.
    #[error(
        "pool {pool:?} was made by another build of the ptr_ring handler: build {found} \
         made it, this process runs build {ours}; every process sharing a pool must load the \
         same handler build"
    )]
    OtherBuild {
        /// The pool.
        pool: String,
        /// The build that made it (`zone::build_name`).
        found: String,
        /// This process's build.
        ours: String,
    },
    /// A secondary whose ops-table handshake with a primary that serves its
    /// table failed: it cannot tell which pools are ptr_ring's, and refuses
    /// them all.
    #[error(
        "pool {pool:?} refused: the ops-table handshake with the primary failed ({cause}), so \
         this process cannot tell which pools are ptr_ring's; restart it with the primary's \
         handler build"
    )]
    HandshakeFailed {
        /// The pool.
        pool: String,
        /// Why the handshake failed.
        cause: String,
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
            GlueError::Core(e) => pool_errno(e),
            GlueError::NotOurPool { .. }
            | GlueError::NullPool
            | GlueError::OtherHandler { .. }
            | GlueError::NameTooLong { .. }
            | GlueError::BadPoolConfig { .. }
            | GlueError::SingleSided { .. }
            | GlueError::BadArg { .. }
            | GlueError::NoMemoryChunks { .. } => -libc::EINVAL,
            // A memzone name that is taken (another pool's zone of that
            // name) is not a lack of memory.
            GlueError::NoMemory { errno, .. } if *errno == libc::EEXIST => -libc::EEXIST,
            GlueError::NoMemory { .. } => -libc::ENOMEM,
            GlueError::AlreadyShuttingDown { .. } => -libc::EALREADY,
            GlueError::NotDmaMemory { .. } => -libc::EINVAL,
            GlueError::OtherBuild { .. } | GlueError::HandshakeFailed { .. } => -libc::EPROTO,
            GlueError::NoZone { .. } | GlueError::PoolGone { .. } => -libc::ENOENT,
            GlueError::ReleaseInProgress { .. } => -libc::EBUSY,
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

/// The negative errno for a core error: `-ENOBUFS` for exhaustion and for
/// a pool that hands nothing out, `-ENOSPC` for full tables, the mapper's
/// own code for DMA failures, `-ENODEV` for an unknown device, `-EPROTO` for
/// a pool of another build, `-EINVAL` for bad input and caller bugs.
pub fn pool_errno(e: &PoolError) -> i32 {
    match e {
        PoolError::Exhausted { .. } | PoolError::NotActive { .. } => -libc::ENOBUFS,
        PoolError::Ring(e) => ring_errno(e),
        PoolError::ChunkTableFull { .. } | PoolError::DeviceTableFull { .. } => -libc::ENOSPC,
        PoolError::TooManyObjects { .. } => -libc::ENOSPC,
        PoolError::DmaMap { errno, .. } | PoolError::DmaUnmap { errno, .. } => {
            if *errno < 0 {
                *errno
            } else {
                -libc::EIO
            }
        }
        PoolError::UnknownDevice { .. } => -libc::ENODEV,
        PoolError::ChunksInUse { .. } => -libc::EBUSY,
        PoolError::OtherBuild { .. } => -libc::EPROTO,
        PoolError::Overfull { .. }
        | PoolError::NullObject { .. }
        | PoolError::Rejected { .. }
        | PoolError::BadConfig { .. }
        | PoolError::NotAPool { .. }
        | PoolError::ChunkOverlap { .. }
        | PoolError::ChunksOverlap { .. }
        | PoolError::BadChunk { .. }
        | PoolError::WrongState { .. } => -libc::EINVAL,
    }
}

/// The negative errno for a ring error: `-ENOBUFS` for the all-or-nothing
/// failures, `-EINVAL` for bad arguments.
pub fn ring_errno(e: &RingError) -> i32 {
    match e {
        RingError::NoSpace { .. }
        | RingError::NotEnough { .. }
        | RingError::BulkTooLarge { .. } => -libc::ENOBUFS,
        RingError::NullObject { .. }
        | RingError::BadCapacity { .. }
        | RingError::NotARing { .. } => -libc::EINVAL,
    }
}

#[cfg(test)]
mod tests {
    use mempool::{ChunkId, DeviceId, PoolState, RejectKind, VirtAddr, VirtRange};

    use super::*;

    const DEV: DeviceId = DeviceId(7);

    fn va() -> VirtRange {
        VirtRange::new(VirtAddr(0x3000), 0x100)
    }

    /// One value of every core error, with the errno DPDK gets for it.
    fn every_pool_error() -> Vec<(PoolError, i32)> {
        use PoolError::*;
        let rejected = |kind| Rejected {
            requested: 1,
            rejected: 1,
            kind,
            first: VirtAddr(0x1000),
        };
        vec![
            (
                Exhausted {
                    requested: 101,
                    available: 100,
                },
                -libc::ENOBUFS,
            ),
            (
                ChunksInUse {
                    available: 1,
                    inflight: 0,
                    populated: 1,
                    devices: 0,
                },
                -libc::EBUSY,
            ),
            (
                NotActive {
                    state: PoolState::Draining,
                },
                -libc::ENOBUFS,
            ),
            (Overfull { requested: 2 }, -libc::EINVAL),
            (NullObject { index: 1 }, -libc::EINVAL),
            (rejected(RejectKind::Foreign), -libc::EINVAL),
            (rejected(RejectKind::AfterRelease), -libc::EINVAL),
            (
                BadConfig {
                    what: "objects",
                    value: 0,
                    min: 1,
                    max: 1 << 30,
                },
                -libc::EINVAL,
            ),
            (Ring(RingError::NoSpace { requested: 4 }), -libc::ENOBUFS),
            (Ring(RingError::NullObject { index: 0 }), -libc::EINVAL),
            (NotAPool { addr: 0x1000 }, -libc::EINVAL),
            (
                OtherBuild {
                    addr: 0x1000,
                    found: mempool::pool::BuildId {
                        hash: 1,
                        ..mempool::pool::BuildId::CORE
                    },
                    ours: mempool::pool::BuildId::CORE,
                },
                -libc::EPROTO,
            ),
            (
                ChunkTableFull {
                    max_chunks: 2,
                    va: va(),
                },
                -libc::ENOSPC,
            ),
            (
                ChunkOverlap {
                    va: va(),
                    existing: ChunkId(0),
                    existing_va: va(),
                },
                -libc::EINVAL,
            ),
            (
                ChunksOverlap {
                    va: va(),
                    other: va(),
                },
                -libc::EINVAL,
            ),
            (
                BadChunk {
                    va: va(),
                    first: VirtAddr(0x3000),
                    stride: 0,
                    count: 4,
                },
                -libc::EINVAL,
            ),
            (
                TooManyObjects {
                    count: 4,
                    would_be: 12,
                    objects: 10,
                },
                -libc::ENOSPC,
            ),
            (
                DeviceTableFull {
                    max_devices: 1,
                    device: DEV,
                },
                -libc::ENOSPC,
            ),
            (UnknownDevice { device: DEV }, -libc::ENODEV),
            (
                DmaMap {
                    device: DEV,
                    chunk: ChunkId(2),
                    errno: -libc::ENOMEM,
                },
                -libc::ENOMEM,
            ),
            (
                DmaMap {
                    device: DEV,
                    chunk: ChunkId(2),
                    errno: 5,
                },
                -libc::EIO,
            ),
            (
                DmaUnmap {
                    device: DEV,
                    chunk: ChunkId(2),
                    errno: -libc::ENOTSUP,
                },
                -libc::ENOTSUP,
            ),
            (
                WrongState {
                    op: "dma_attach",
                    state: PoolState::Released,
                },
                -libc::EINVAL,
            ),
        ]
    }

    #[test]
    fn pool_errors_map_to_dpdk_errno() {
        for (e, errno) in every_pool_error() {
            assert_eq!(pool_errno(&e), errno, "{e:?}");
            assert_eq!(GlueError::Core(e).errno(), errno, "{e:?}");
        }
    }

    #[test]
    fn a_taken_zone_name_is_eexist_not_enomem() {
        let e = |errno| GlueError::NoMemory {
            what: "memzone",
            name: "PR_p".into(),
            bytes: 4096,
            errno,
        };
        assert_eq!(e(libc::EEXIST).errno(), -libc::EEXIST);
        assert_eq!(e(libc::ENOMEM).errno(), -libc::ENOMEM);
        assert_eq!(e(libc::ENOSPC).errno(), -libc::ENOMEM);
    }

    #[test]
    fn ring_errors_map_to_dpdk_errno() {
        use RingError::*;
        for (e, errno) in [
            (NoSpace { requested: 5 }, -libc::ENOBUFS),
            (NotEnough { requested: 5 }, -libc::ENOBUFS),
            (
                BulkTooLarge {
                    requested: 5,
                    capacity: 4,
                },
                -libc::ENOBUFS,
            ),
            (NullObject { index: 1 }, -libc::EINVAL),
            (
                BadCapacity {
                    capacity: 0,
                    batch: 1,
                    max: 1 << 30,
                },
                -libc::EINVAL,
            ),
            (NotARing { addr: 0x1000 }, -libc::EINVAL),
        ] {
            assert_eq!(ring_errno(&e), errno, "{e:?}");
            assert_eq!(pool_errno(&PoolError::Ring(e)), errno, "{e:?}");
        }
    }
}
