//! C API, declared in `include/rte_mempool_ptr_ring.h`.

use core::ffi::{c_int, c_uint};
use std::time::Duration;

use dpdk_sys as sys;
use mempool::{HoldRelease, PoolStats};

use crate::port::{self, ShutdownOutcome};
use crate::{ffi, ops_name, zone};

/// Counters of one pool (mirrors `struct ptr_ring_stats` in the C header).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct PtrRingStats {
    /// Objects the pool was created for.
    pub size: u64,
    /// Objects laid out by populate.
    pub populated: u64,
    /// Objects in the ring.
    pub in_ring: u64,
    /// Objects in the handler's per-lcore caches.
    pub in_caches: u64,
    /// Objects out with the application (and DPDK's own caches).
    pub inflight: i64,
    /// Objects handed out, modulo 2^32 (the per-lcore counters are 32-bit):
    /// only `hold - release` modulo 2^32 means anything over a pool's life.
    pub hold: u64,
    /// Objects taken back (including the initial fill), modulo 2^32.
    pub release: u64,
    /// IOVA-table records.
    pub iova_chunks: u64,
    /// DMA map calls made.
    pub dma_maps: u64,
    /// DMA unmap calls made.
    pub dma_unmaps: u64,
    /// Foreign pointers rejected (validation mode).
    pub rejected_foreign: u64,
    /// Double frees rejected (validation mode).
    pub rejected_double_free: u64,
    /// 1 when validation mode is on.
    pub validation: u32,
    /// [`mempool::PoolState`] as `PTR_RING_STATE_*` of the C header (see
    /// [`STATE_VALUES`]): 0 active, 1 draining, 3 released. 2 is reserved
    /// (no state has it).
    pub state: u32,
}

impl PtrRingStats {
    /// The record of a pool of `size` objects whose counters are `s`.
    fn new(size: u64, s: &PoolStats) -> PtrRingStats {
        let counts = HoldRelease::new(s.hold, s.release);
        PtrRingStats {
            size,
            populated: s.populated as u64,
            in_ring: s.in_ring as u64,
            in_caches: s.in_caches as u64,
            inflight: s.inflight,
            hold: counts.hold().into(),
            release: counts.release().into(),
            iova_chunks: s.chunks as u64,
            dma_maps: s.dma_maps,
            dma_unmaps: s.dma_unmaps,
            rejected_foreign: s.rejected.foreign,
            rejected_double_free: s.rejected.double_free,
            validation: s.validate as u32,
            state: s.state as u32,
        }
    }
}

/// Fills `out` with the counters of `mp`. Returns 0, or -EINVAL when `mp`
/// does not use the ptr_ring handler.
///
/// # Safety
/// `mp` is a valid mempool (or null), `out` valid for writes (or null).
#[no_mangle]
pub unsafe extern "C" fn ptr_ring_stats(
    mp: *const sys::rte_mempool,
    out: *mut PtrRingStats,
) -> c_int {
    ffi::guard("ptr_ring_stats", || {
        if out.is_null() {
            return -libc::EINVAL;
        }
        // SAFETY: `mp` is null or live (caller's contract).
        let r = unsafe { zone::ours(mp) }.map(|z| {
            // SAFETY: `mp` is a live pool (checked by `ours`), `out` valid
            // for writes (caller's contract).
            unsafe { out.write(PtrRingStats::new((*mp).size.into(), &z.core.stats())) };
            0
        });
        ffi::c_result(r)
    })
}

/// Moves the handler cache of `lcore` back to the ring; returns the number of
/// objects moved or a negative errno. `lcore` must be quiescent: not running
/// any get or put on this pool during the call.
///
/// # Safety
/// `mp` is a valid mempool; `lcore` is quiescent.
#[no_mangle]
pub unsafe extern "C" fn ptr_ring_flush_lcore_cache(
    mp: *const sys::rte_mempool,
    lcore: c_uint,
) -> c_int {
    ffi::guard("ptr_ring_flush_lcore_cache", || {
        // SAFETY: `mp` is null or live (caller's contract).
        let r = unsafe { zone::ours(mp) }.and_then(|z| {
            // SAFETY: the caller guarantees `lcore` is quiescent.
            let n = unsafe { z.core.flush_lcore(lcore) }?;
            Ok(n as c_int)
        });
        ffi::c_result(r)
    })
}

/// Index of the ptr_ring ops in this process's ops table, or -1.
#[no_mangle]
pub extern "C" fn ptr_ring_ops_index() -> c_int {
    ffi::guard("ptr_ring_ops_index", || {
        ops_name::lookup_index().unwrap_or(-1)
    })
}

/// Makes `mp` reachable by the device of `port`, once per pool life and
/// device (two ports of one device share it): chunks in EAL memory are
/// mapped by EAL already; chunks in memory registered with
/// `rte_extmem_register` are mapped with `rte_dev_dma_map`, one call per
/// run of VA- and IOVA-contiguous pages, once per mapping domain (devices of
/// the default VFIO container share one).
/// Returns the chunk records handled now (0 when the device has nothing to
/// map), -EINVAL for memory that is neither, or -errno.
///
/// # Safety
/// `mp` is a live mempool of ours (or null).
#[no_mangle]
pub unsafe extern "C" fn ptr_ring_attach_port(mp: *mut sys::rte_mempool, port: u16) -> c_int {
    ffi::guard("ptr_ring_attach_port", || {
        // SAFETY: `mp` is null or live (caller's contract); `attach_port`
        // checks it is ours first.
        let r = unsafe { port::attach_port(mp, port) };
        ffi::c_result(r.map(|a| a.records as c_int))
    })
}

/// Stops and closes `nb_ports` ports, drains `mp` and frees it when every
/// buffer is back within `wait_ms`. Returns 0 when freed, 1 when the release
/// is deferred (an EAL alarm frees the pool once the last buffer is back;
/// `*inflight` gets the count), -EALREADY when the pool's shutdown already
/// began, or -errno. See `port::shutdown_ports` for the quiescence the
/// caller guarantees.
///
/// # Safety
/// `ports` holds `nb_ports` ids; `mp` is a live pool of ours; no lcore is in
/// a get/put on `mp` during the call; `inflight` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn ptr_ring_port_shutdown(
    ports: *const u16,
    nb_ports: u16,
    mp: *mut sys::rte_mempool,
    wait_ms: u32,
    inflight: *mut i64,
) -> c_int {
    // SAFETY: forwarded caller contract, no caches.
    unsafe {
        ptr_ring_port_shutdown_caches(ports, nb_ports, core::ptr::null(), 0, mp, wait_ms, inflight)
    }
}

/// [`ptr_ring_port_shutdown`] that also hands back the objects of
/// `nb_caches` user-owned caches (`rte_mempool_cache_create`) used with
/// `mp`; without that their objects stay out and the release waits for the
/// application to flush them (`rte_mempool_cache_flush`).
///
/// # Safety
/// As [`ptr_ring_port_shutdown`]; `caches` holds `nb_caches` caches (or
/// nulls) that no other thread uses during the call.
#[no_mangle]
pub unsafe extern "C" fn ptr_ring_port_shutdown_caches(
    ports: *const u16,
    nb_ports: u16,
    caches: *const *mut sys::rte_mempool_cache,
    nb_caches: u32,
    mp: *mut sys::rte_mempool,
    wait_ms: u32,
    inflight: *mut i64,
) -> c_int {
    ffi::guard("ptr_ring_port_shutdown", || {
        // SAFETY: the arrays hold as many entries as said (caller's contract).
        let args = unsafe {
            (
                c_slice(ports, nb_ports.into()),
                c_slice(caches, nb_caches as usize),
            )
        };
        let (Some(ports), Some(caches)) = args else {
            return -libc::EINVAL;
        };
        let wait = Duration::from_millis(wait_ms.into());
        // SAFETY: caller's contract (quiescence, live pool); the shutdown
        // checks the pool is ours before it touches anything.
        let r = unsafe { port::shutdown_ports_with_caches(ports, caches, mp, wait) };
        // SAFETY: `inflight` is null or writable (caller's contract).
        ffi::c_result(r.map(|o| unsafe { shutdown_code(o, inflight) }))
    })
}

/// Takes the free of `mp` back from its deferred release
/// ([`port::cancel_release`]): 0, or -ENOENT (not listed: freed or being
/// freed) or -EBUSY (the release is freeing it).
///
/// # Safety
/// None beyond the C types: `mp` is only compared with DPDK's listed pools
/// until it is found among them.
#[no_mangle]
pub unsafe extern "C" fn ptr_ring_release_cancel(mp: *mut sys::rte_mempool) -> c_int {
    ffi::guard("ptr_ring_release_cancel", || {
        ffi::c_result(port::cancel_release(mp).map(|()| 0))
    })
}

/// Ends this process's deferred releases ([`port::cleanup`]); the number
/// abandoned.
#[no_mangle]
pub extern "C" fn ptr_ring_cleanup() -> c_int {
    ffi::guard("ptr_ring_cleanup", || {
        c_int::try_from(port::cleanup()).unwrap_or(c_int::MAX)
    })
}

/// `n` elements at `p` as a slice: empty when `n` is 0, `None` for a null
/// `p` with elements.
///
/// # Safety
/// `p` is null or points to `n` initialised elements that outlive `'a`.
unsafe fn c_slice<'a, T>(p: *const T, n: usize) -> Option<&'a [T]> {
    if n == 0 {
        Some(&[])
    } else if p.is_null() {
        None
    } else {
        // SAFETY: caller's contract.
        Some(unsafe { core::slice::from_raw_parts(p, n) })
    }
}

/// The C return value of a shutdown: 0 freed, 1 deferred (the count then
/// written to `inflight` when not null).
///
/// # Safety
/// `inflight` is null or valid for writes.
unsafe fn shutdown_code(outcome: ShutdownOutcome, inflight: *mut i64) -> c_int {
    match outcome {
        ShutdownOutcome::Freed { .. } => 0,
        ShutdownOutcome::Deferred { inflight: n } => {
            if !inflight.is_null() {
                // SAFETY: caller's contract.
                unsafe { inflight.write(n) };
            }
            1
        }
    }
}

/// `PTR_RING_STATE_*` of the C header, by name: `ptr_ring_stats.state` is
/// `PoolState as u32`, so each must be the matching variant's value (checked
/// below at compile time, and against the header's text by a test).
pub const STATE_VALUES: [(&str, mempool::PoolState); 3] = [
    ("PTR_RING_STATE_ACTIVE", mempool::PoolState::Active),
    ("PTR_RING_STATE_DRAINING", mempool::PoolState::Draining),
    ("PTR_RING_STATE_RELEASED", mempool::PoolState::Released),
];

const _: () = {
    assert!(mempool::PoolState::Active as u32 == 0);
    assert!(mempool::PoolState::Draining as u32 == 1);
    assert!(mempool::PoolState::Released as u32 == 3);
};

#[cfg(test)]
mod tests {
    use mempool::{HeapPool, PoolConfig};

    use super::{PtrRingStats, STATE_VALUES};

    /// Hold and release come modulo 2^32, as the per-lcore counters wrap:
    /// a raw sum over lcores would mix wrapped and unwrapped counts.
    #[test]
    fn hold_and_release_are_reported_modulo_2_32() {
        let pool = HeapPool::new(&PoolConfig::new(8)).unwrap();
        let mut s = pool.stats();
        s.hold = (3 << 32) + 7;
        s.release = (1 << 32) + 5;
        let r = PtrRingStats::new(8, &s);
        assert_eq!((r.hold, r.release), (7, 5));
    }

    /// The doc comment of `PtrRingStats::state` gives the header's values.
    #[test]
    fn state_doc_gives_the_header_values() {
        let want: Vec<String> = STATE_VALUES
            .iter()
            .map(|(name, state)| {
                let word = name.trim_start_matches("PTR_RING_STATE_").to_lowercase();
                format!("{} {word}", *state as u32)
            })
            .collect();
        let want = format!("[`STATE_VALUES`]): {}.", want.join(", "));
        assert!(
            include_str!("capi.rs").contains(&want),
            "the doc of PtrRingStats::state should read {want:?}"
        );
    }

    /// The header's `#define PTR_RING_STATE_*` values are the core's, and
    /// it defines no other state.
    #[test]
    fn header_state_values_match_the_core() {
        let h = include_str!("../include/rte_mempool_ptr_ring.h");
        let defined: Vec<&str> = h
            .lines()
            .filter(|l| l.starts_with("#define PTR_RING_STATE_"))
            .filter_map(|l| l.split_whitespace().nth(1))
            .collect();
        let named: Vec<&str> = STATE_VALUES.iter().map(|(name, _)| *name).collect();
        assert_eq!(defined, named, "the header's states");
        for (name, state) in STATE_VALUES {
            let line = h
                .lines()
                .find(|l| l.starts_with("#define") && l.split_whitespace().nth(1) == Some(name))
                .unwrap_or_else(|| panic!("{name} not defined in the header"));
            let v: u32 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
            assert_eq!(v, state as u32, "{name}");
        }
    }
}
