//! Safe port shutdown with inflight tracking, device events, and the DPDK
//! DMA mapper.
//!
//! Like the kernel's page_pool destroy: a pool is never freed while buffers
//! are out. [`shutdown_ports`] stops and closes the ports, drains the pool,
//! waits a bounded time, and otherwise defers the release to an EAL alarm
//! that retries every second (the core's retry period), warns every minute
//! (its warn period) naming the pool and its inflight count, and frees the
//! pool once the last buffer is back.
//!
//! The release belongs to one shutdown: the first call claims the pool
//! (a token stored once in its zone); a second call is refused with
//! `-EALREADY`. The alarm's argument is that token, not the pool: the
//! callback finds the pool in a process-wide table under the release lock
//! ([`release_lock`]) and checks the zone still holds its token, so it can
//! act on no other pool, and reads the pool only while it is on DPDK's
//! mempool list. Exactly one party frees a pool: see `release` for the
//! protocol. `ops->free` (the deferred release itself, or an application
//! calling `rte_mempool_free`) forgets the token and cancels the alarm; an
//! application that wants the free back calls [`cancel_release`] first, and
//! one that exits with releases pending calls [`cleanup`] before
//! `rte_eal_cleanup`. Telemetry and port events take the same lock before
//! using a pool they looked up, so no release frees a pool under them.
//!
//! One file per concern:
//!
//! * `shutdown`: [`shutdown_ports`], its steps, and [`close_dpdk_caches`];
//! * `release`: the release lock, release tokens and the deferred-release
//!   alarm;
//! * `dma`: the [`DmaMapper`](mempool::DmaMapper) over `rte_dev_dma_map`
//!   ([`PoolDmaMapper`]), [`attach_device`], [`detach_device`];
//! * `dma_domains`: the ranges mapped per mapping [`Domain`], shared by
//!   every process;
//! * `devices`: [`attach_port`], and the port events that remove a
//!   device's mappings;
//! * `device_registry`: the devices of attached ports, which `devices`
//!   fills and empties and the DMA mapper reads.

mod device_registry;
mod devices;
mod dma;
mod dma_domains;
mod release;
mod shutdown;

pub use device_registry::{device_id, recorded_device};
pub use devices::{attach_port, register_event_callbacks};
pub use dma::{
    attach_device, detach_device, set_dev_dma_override, DevDma, DmaAttach, DmaDetach,
    PoolDmaMapper, RteDevDma,
};
pub(crate) use dma::{map_new_chunks, unmap_at_free};
pub use dma_domains::{dma_table_lock_for_tests, mapped_runs, Domain, Run};
pub(crate) use release::{cancel_deferred_release, note_free};
pub use release::{
    cancel_release, cleanup, deferred_releases_pending, release_lock, run_deferred_releases_now,
    Pending, ReleaseLock,
};
pub use shutdown::{
    close_dpdk_caches, shutdown_ports, shutdown_ports_with_caches, ShutdownOutcome,
};

/// `CLOCK_MONOTONIC` in ns: one clock for every process sharing the pool.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Where objects a pool still counts as out may be, for the messages that
/// name them.
const WHERE_OBJECTS_ARE: &str = "held by the application, in user-owned mempool caches \
     (rte_mempool_cache_create: flush them with rte_mempool_cache_flush, or pass them to the \
     shutdown), or in DPDK's per-lcore caches of a process that kept using the pool";
/// What a wait with no buffer out but a put's fills not yet shown (the
/// core's `unfilled`) is waiting for.
const UNFINISHED_PUT: &str = "no buffer is out, but a put has not finished storing its buffers \
     in the pool's ring: a single-producer pool (RTE_MEMPOOL_F_SP_PUT) whose putting thread is \
     still in the put, or died in it (its buffers are then lost and the pool is never released)";

/// What a draining pool still waits for, as its deferral and its stall
/// warning both say it: `inflight` buffers out, or (`unfilled`) none out
/// but a put's fills not yet shown.
fn still_out(inflight: i64, unfilled: bool) -> String {
    if unfilled {
        UNFINISHED_PUT.to_string()
    } else {
        format!("{inflight} buffers still out ({WHERE_OBJECTS_ARE})")
    }
}
