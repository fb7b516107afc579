//! The one error type of the pool core, each variant carrying the value that
//! failed. The core has no errno: `pmd-glue` maps these errors to the
//! negative errno DPDK expects (`pmd_glue::error::pool_errno`).

use crate::dma_table::DeviceId;
use crate::iova::{ChunkId, VirtAddr, VirtRange};
use crate::pool::BuildId;
use crate::ptr_ring::RingError;
use crate::state::PoolState;
use crate::validation::RejectKind;

/// Errors of pool set-up, object traffic, chunk registration, DMA mapping and
/// shutdown. A failing get or put leaves every object where it was (see each
/// variant for the exceptions, which are named).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PoolError {
    /// A get found fewer objects in the ring plus the caller's own cache than
    /// it asked for. Nothing was handed out; objects may have moved from the
    /// ring into the caller's cache.
    #[error("pool exhausted: {requested} objects requested, {available} in ring and own cache")]
    Exhausted {
        /// Objects the caller asked for.
        requested: usize,
        /// Objects in the ring plus the caller's cache when it failed.
        available: usize,
    },
    /// The ring refused objects although it is sized for every object of the
    /// pool: more objects were put than were ever taken (a double free with
    /// validation off). The objects of this call were not inserted.
    #[error("ring refused {requested} objects: more returned than taken (double free?)")]
    Overfull {
        /// Objects the failing bulk held.
        requested: usize,
    },
    /// A null object pointer (null is the ring's free-slot marker).
    #[error("null object pointer at index {index} of the bulk")]
    NullObject {
        /// Position in the caller's slice.
        index: usize,
    },
    /// Validation rejected objects of a put. The others of the same bulk were
    /// accepted.
    #[error("{rejected} of {requested} objects rejected ({kind} first, at {first})")]
    Rejected {
        /// Objects in the bulk.
        requested: usize,
        /// Objects rejected (not inserted).
        rejected: usize,
        /// Reason for the first rejected object.
        kind: RejectKind,
        /// Address of the first rejected object.
        first: VirtAddr,
    },
    /// A get in a state where the pool hands out nothing (draining,
    /// released).
    #[error("pool is {state}: no objects are handed out")]
    NotActive {
        /// State the pool was in.
        state: PoolState,
    },
    /// A configuration value out of range.
    #[error("bad pool configuration: {what} = {value} (allowed {min}..={max})")]
    BadConfig {
        /// Which field.
        what: &'static str,
        /// The value given.
        value: usize,
        /// Smallest accepted value.
        min: usize,
        /// Largest accepted value.
        max: usize,
    },
    /// The ring for this many objects cannot be laid out.
    #[error(transparent)]
    Ring(#[from] RingError),
    /// The memory handed to `attach` holds no initialised pool.
    #[error("memory at {addr:#x} holds no initialised pool")]
    NotAPool {
        /// Address of the memory.
        addr: usize,
    },
    /// The memory handed to `attach` holds a pool of this format made by
    /// another build (other layouts, features, target or compiler): it is
    /// not read.
    #[error(
        "memory at {addr:#x} holds a pool made by another build of the pool core \
         (build {found}; this process: build {ours}): every process sharing a pool must run \
         the same build"
    )]
    OtherBuild {
        /// Address of the memory.
        addr: usize,
        /// The build that made the pool.
        found: BuildId,
        /// This process's build.
        ours: BuildId,
    },
    /// A chunk record would exceed the table's `max_chunks`.
    #[error("chunk table full ({max_chunks} chunks): cannot record {va}")]
    ChunkTableFull {
        /// The table's bound.
        max_chunks: usize,
        /// The chunk that did not fit.
        va: VirtRange,
    },
    /// A chunk overlaps a recorded one.
    #[error("chunk {va} overlaps recorded chunk {existing:?} at {existing_va}")]
    ChunkOverlap {
        /// The chunk offered.
        va: VirtRange,
        /// The chunk it overlaps.
        existing: ChunkId,
        /// Range of that chunk.
        existing_va: VirtRange,
    },
    /// Two chunks offered in one registration overlap each other.
    #[error("chunk {va} overlaps chunk {other} offered with it")]
    ChunksOverlap {
        /// The later chunk of the two.
        va: VirtRange,
        /// The earlier one.
        other: VirtRange,
    },
    /// A chunk whose object run does not fit its range (or is empty, or has a
    /// zero stride).
    #[error("bad chunk {va}: {count} objects from {first} every {stride} bytes do not fit")]
    BadChunk {
        /// The chunk offered.
        va: VirtRange,
        /// First object.
        first: VirtAddr,
        /// Distance between objects.
        stride: usize,
        /// Objects in the run.
        count: usize,
    },
    /// Registering the chunk would make more objects than the pool was sized for.
    #[error("chunk of {count} objects would populate {would_be} of {objects} objects")]
    TooManyObjects {
        /// Objects in the chunk offered.
        count: usize,
        /// Populated count it would reach.
        would_be: usize,
        /// The pool's `objects`.
        objects: usize,
    },
    /// The device table is full.
    #[error("device table full ({max_devices} devices): cannot attach {device}")]
    DeviceTableFull {
        /// The table's bound.
        max_devices: usize,
        /// The device that did not fit.
        device: DeviceId,
    },
    /// The device is not attached.
    #[error("{device} is not attached to this pool")]
    UnknownDevice {
        /// The device.
        device: DeviceId,
    },
    /// The DMA mapper failed to map a chunk. Chunks before it stay mapped and
    /// recorded; a later sync retries from this one.
    #[error("mapping {chunk:?} for {device} failed: errno {errno}")]
    DmaMap {
        /// The device.
        device: DeviceId,
        /// The chunk.
        chunk: ChunkId,
        /// The mapper's (negative) errno.
        errno: i32,
    },
    /// The DMA mapper failed to unmap a chunk. The mapping is considered gone
    /// (never retried, so never unmapped twice).
    #[error("unmapping {chunk:?} for {device} failed: errno {errno}")]
    DmaUnmap {
        /// The device.
        device: DeviceId,
        /// The chunk.
        chunk: ChunkId,
        /// The mapper's (negative) errno.
        errno: i32,
    },
    /// The chunks cannot be forgotten: objects of them are still in the
    /// pool, or a device still maps them.
    #[error(
        "cannot forget the pool's chunks: {available} objects are still in the ring or caches \
         and {inflight} of {populated} are out (every object must have been taken back), with \
         {devices} devices attached"
    )]
    ChunksInUse {
        /// Objects in the ring and caches.
        available: usize,
        /// Objects out.
        inflight: i64,
        /// Objects registered.
        populated: usize,
        /// Devices attached for DMA.
        devices: usize,
    },
    /// The operation is not allowed in the pool's state.
    #[error("{op} not allowed: pool is {state}")]
    WrongState {
        /// What was attempted.
        op: &'static str,
        /// State the pool was in.
        state: PoolState,
    },
}
