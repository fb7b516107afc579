//! DPDK-free core of the `ptr_ring` mempool handler.
//!
//! Everything here lives in memory the caller provides (a DPDK memzone shared
//! by primary and secondary processes): no Rust heap, no process-local
//! pointers inside the structures. `pmd-glue` only translates DPDK's
//! `rte_mempool_ops` calls onto these types.
//!
//! The general idea: a pool's objects sit in a ring whose slots are the
//! signal ([`ptr_ring`]). A slot holds null when free and an object's
//! address when full, so producers and consumers share no head/tail index:
//! each side keeps its own. Optional per-lcore caches, hold/release
//! accounting, an IOVA table and a shutdown state machine sit around it;
//! `DESIGN.md` at the repository root draws the layers.
//!
//! * [`ptr_ring`]: the batched, slot-signalled ring that replaces `rte_ring`.
//! * [`config`]: [`PoolConfig`] and [`PoolLayout`]; `layout`: the pure
//!   layout function that places every part of the pool's one block.
//! * [`pool`]: [`PoolCore`], the pool in that block (and [`HeapPool`]).
//! * [`lcore_cache`]: the per-lcore caches in front of the ring.
//! * [`inflight`]: hold/release accounting.
//! * [`iova`]: address newtypes and the chunks a pool is populated from;
//!   `chunk_table`: the shared IOVA table that records them.
//! * [`dma_table`]: once-per-device DMA mapping bookkeeping.
//! * [`state`]: the shutdown state machine, Active → Draining → Released.
//! * [`validation`]: the optional foreign-pointer / double-free checks.
//! * [`owner`]: owner ids of the shared locks and the liveness check that
//!   lets a waiter take a dead process's lock over.
//! * [`error`]: [`PoolError`], each variant with the values that failed.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, clippy::undocumented_unsafe_blocks)]

pub(crate) mod chunk_table;
pub mod config;
#[cfg(any(loom, feature = "crash-points"))]
pub mod crash;
pub mod dma_table;
pub mod error;
pub(crate) mod heap_block;
pub mod inflight;
pub mod iova;
mod layout;
pub mod lcore_cache;
pub mod owner;
pub mod pool;
pub mod ptr_ring;
pub mod state;
pub(crate) mod sync;
pub mod validation;

pub use config::{PoolConfig, PoolLayout};
pub use dma_table::{DeviceId, DeviceState, DeviceStats, DmaMapper, NoDma};
pub use error::PoolError;
pub use inflight::{HoldRelease, InflightSnapshot, ACCOUNTING};
pub use iova::{
    ChunkId, ChunkInfo, ChunkSpec, Iova, IovaRange, ObjIndex, VirtAddr, VirtRange, BAD_IOVA,
};
pub use lcore_cache::INLINE_MAX as CACHE_INLINE_MAX;
pub use pool::{ActivityMark, DirectSlot, HeapPool, PoolCore, PoolStats};
pub use ptr_ring::{HeapRing, PtrRing, RingError, RingLayout, SMALL_BULK_MAX};
pub use state::{PollOutcome, PoolState, ShutdownStats};
pub use validation::{RejectKind, RejectStats};
