//! Telemetry commands, read with `dpdk-telemetry.py`:
//! `/ptr_ring/pools` lists the pools served by this handler,
//! `/ptr_ring/stats,<pool>` gives one pool's counters.

use core::ffi::{c_char, c_int, CStr};
use std::ffi::CString;
use std::sync::atomic::Ordering;

use dpdk_sys as sys;
use mempool::HoldRelease;

use crate::{cname, ffi, ops_name, zone};

/// Pools in this process whose ops are `ptr_ring`.
pub fn pools() -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    // Not rte_mempool_walk: it can read a list entry a concurrent free has
    // freed (see `mempool_list::lookup`).
    sys::mempool_list::walk(|mp| {
        // SAFETY: a listed mempool, alive while the walk holds the lock.
        if unsafe { ops_name::ops_name_of(mp) } == ops_name::OPS_NAME {
            // SAFETY: as above; the name is NUL-terminated.
            names.push(cname::cstr_field(unsafe { &(*mp).name }));
        }
    });
    names
}

unsafe extern "C" fn cmd_pools(
    _cmd: *const c_char,
    _params: *const c_char,
    d: *mut sys::rte_tel_data,
) -> c_int {
    ffi::guard("/ptr_ring/pools", || {
        let names = pools();
        // SAFETY: `d` is the reply buffer DPDK hands us.
        unsafe {
            sys::rte_tel_data_start_array(d, sys::RTE_TEL_STRING_VAL);
            for n in names {
                if let Ok(c) = CString::new(n) {
                    sys::rte_tel_data_add_array_string(d, c.as_ptr());
                }
            }
        }
        0
    })
}

/// One value of a `/ptr_ring/stats` reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatValue {
    /// A count.
    U64(u64),
    /// A signed figure (`inflight`).
    I64(i64),
    /// A name.
    Str(String),
}

/// The `/ptr_ring/stats,<name>` reply: `None` when no pool of that name uses
/// this handler.
///
/// The pool is looked up and read under the release lock
/// ([`crate::port::release_lock`]): `ops->free` (an application's
/// `rte_mempool_free`, or a deferred release) takes the same lock before it
/// frees the handler's zone, and DPDK frees the mempool itself only after
/// `ops->free` returns, so a pool found here stays alive until the reply is
/// built.
pub fn pool_stats(name: &CStr) -> Option<Vec<(&'static str, StatValue)>> {
    use StatValue::{Str, I64, U64};
    let lock = crate::port::release_lock();
    let (mp, z) = zone::lookup(name, &lock)?;
    let s = z.core.stats();
    let counts = HoldRelease::new(s.hold, s.release);
    Some(vec![
        // SAFETY: live mempool.
        ("size", U64(unsafe { (*mp).size } as u64)),
        (
            "available",
            // SAFETY: live mempool.
            U64(unsafe { sys::rte_mempool_avail_count(mp) } as u64),
        ),
        ("populated", U64(s.populated as u64)),
        ("in_ring", U64(s.in_ring as u64)),
        ("in_handler_caches", U64(s.in_caches as u64)),
        // Signed: negative means more objects came back than went out (a
        // double free the handler could not refuse).
        ("inflight", I64(s.inflight)),
        // Modulo 2^32, as the per-lcore counters are.
        ("hold", U64(counts.hold().into())),
        ("release", U64(counts.release().into())),
        ("handler_cache_size", U64(s.cache_size as u64)),
        ("ring_mode", Str(z.core.ring().mode_name().to_string())),
        (
            "order",
            Str(if z.core.newest_first() {
                "newest_first"
            } else {
                "oldest_first"
            }
            .to_string()),
        ),
        // Ring locks taken over from a process that died holding them, by
        // any process; and whether a failed repair left a side refusing.
        (
            "lock_takeovers",
            U64({
                let (p, c) = z.core.ring().takeovers();
                u64::from(p) + u64::from(c)
            }),
        ),
        (
            "ring_poisoned",
            U64({
                let (p, c) = z.core.ring().poisoned();
                u64::from(p || c)
            }),
        ),
        ("iova_chunks", U64(s.chunks as u64)),
        ("dma_devices", U64(s.devices as u64)),
        ("dma_maps", U64(s.dma_maps)),
        ("dma_unmaps", U64(s.dma_unmaps)),
        ("state", Str(s.state.to_string())),
        ("validation", U64(s.validate as u64)),
        ("rejected_foreign", U64(s.rejected.foreign)),
        ("rejected_double_free", U64(s.rejected.double_free)),
        // Handler dequeues that found too few objects. Not what the
        // application saw: a DPDK cache refill that fails here is retried
        // by DPDK for the application's smaller request, which may succeed.
        (
            "handler_dequeue_failures",
            // Relaxed: statistics.
            U64(z.header.get_failures.load(Ordering::Relaxed)),
        ),
    ])
}

unsafe extern "C" fn cmd_stats(
    _cmd: *const c_char,
    params: *const c_char,
    d: *mut sys::rte_tel_data,
) -> c_int {
    ffi::guard("/ptr_ring/stats", || {
        if params.is_null() {
            return -libc::EINVAL;
        }
        // SAFETY: DPDK passes a NUL-terminated parameter string.
        let name = unsafe { CStr::from_ptr(params) };
        let Some(values) = pool_stats(name) else {
            return -libc::EINVAL;
        };
        // SAFETY: `d` is the reply buffer DPDK hands us.
        unsafe { sys::rte_tel_data_start_dict(d) };
        for (k, v) in values {
            // SAFETY: as above, started as a dict.
            unsafe { add_to_dict(d, k, v) };
        }
        0
    })
}

/// Adds `key: v` to the reply dict `d`.
///
/// # Safety
/// `d` is a reply buffer DPDK handed us, started as a dict.
unsafe fn add_to_dict(d: *mut sys::rte_tel_data, key: &str, v: StatValue) {
    let k = CString::new(key).expect("literal key");
    // SAFETY: `d` is the reply dict (caller's contract), `k` and the values
    // valid strings.
    unsafe {
        match v {
            StatValue::U64(v) => sys::compat::tel_add_dict_uint(d, k.as_ptr(), v),
            // Saturated to 32 bits where the release has no wider values
            // (22.11); a pool holds fewer than 2^30 objects.
            StatValue::I64(v) => sys::compat::tel_add_dict_int(d, k.as_ptr(), v),
            StatValue::Str(v) => {
                let v = CString::new(v).unwrap_or_default();
                sys::rte_tel_data_add_dict_string(d, k.as_ptr(), v.as_ptr())
            }
        }
    };
}

/// Registers the commands (at load time, like DPDK's own libraries).
pub fn register() {
    // SAFETY: static NUL-terminated strings and valid callbacks.
    unsafe {
        sys::rte_telemetry_register_cmd(
            c"/ptr_ring/pools".as_ptr(),
            Some(cmd_pools),
            c"Returns the mempools served by the ptr_ring handler. Takes no parameters".as_ptr(),
        );
        sys::rte_telemetry_register_cmd(
            c"/ptr_ring/stats".as_ptr(),
            Some(cmd_stats),
            c"Returns ptr_ring handler counters of a mempool. Parameters: pool name".as_ptr(),
        );
    }
}
