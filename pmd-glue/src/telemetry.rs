//! Telemetry commands, read with `dpdk-telemetry.py`:
//! `/ptr_ring/pools` lists the pools served by this handler,
//! `/ptr_ring/stats,<pool>` gives one pool's counters.

use core::ffi::{c_char, c_int, c_void, CStr};
use std::ffi::CString;

use dpdk_sys as sys;

use crate::{ops, zone};

/// Pools in this process whose ops are `ptr_ring`.
pub fn pools() -> Vec<String> {
    unsafe extern "C" fn visit(mp: *mut sys::rte_mempool, arg: *mut c_void) {
        // SAFETY: `arg` is the Vec passed below, alive for the walk.
        let names = unsafe { &mut *arg.cast::<Vec<String>>() };
        // SAFETY: `mp` is a live mempool (from the walk / lookup above).
        if unsafe { ops::ops_name_of(mp) } == ops::OPS_NAME {
            // SAFETY: the walk gives valid mempools.
            names.push(zone::cstr_field(unsafe { &(*mp).name }));
        }
    }
    let mut names: Vec<String> = Vec::new();
    // SAFETY: `visit` only reads the pool; `names` outlives the walk.
    unsafe { sys::rte_mempool_walk(Some(visit), (&mut names as *mut Vec<String>).cast()) };
    names
}

unsafe extern "C" fn cmd_pools(
    _cmd: *const c_char,
    _params: *const c_char,
    d: *mut sys::rte_tel_data,
) -> c_int {
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
}

unsafe extern "C" fn cmd_stats(
    _cmd: *const c_char,
    params: *const c_char,
    d: *mut sys::rte_tel_data,
) -> c_int {
    if params.is_null() {
        return -libc::EINVAL;
    }
    // SAFETY: DPDK passes a NUL-terminated parameter string.
    let name = unsafe { CStr::from_ptr(params) };
    // SAFETY: valid name; lookup returns null when absent.
    let mp = unsafe { sys::rte_mempool_lookup(name.as_ptr()) };
    // SAFETY: `mp` is checked non-null first; callers pass live pools.
    if mp.is_null() || unsafe { ops::ops_name_of(mp) } != ops::OPS_NAME {
        return -libc::EINVAL;
    }
    // SAFETY: a live mempool of ours.
    let Ok(z) = (unsafe { zone::attach(mp) }) else {
        return -libc::EINVAL;
    };
    let s = z.core.stats();
    let u = |k: &str, v: u64| {
        let k = CString::new(k).expect("literal key");
        // SAFETY: `d` is the reply dict, `k` a valid string.
        unsafe { sys::rte_tel_data_add_dict_u64(d, k.as_ptr(), v) };
    };
    let st = |k: &str, v: &str| {
        let k = CString::new(k).expect("literal key");
        let v = CString::new(v).unwrap_or_default();
        // SAFETY: as above.
        unsafe { sys::rte_tel_data_add_dict_string(d, k.as_ptr(), v.as_ptr()) };
    };
    // SAFETY: `d` is the reply buffer.
    unsafe { sys::rte_tel_data_start_dict(d) };
    // SAFETY: live mempool.
    u("size", unsafe { (*mp).size } as u64);
    // SAFETY: live mempool.
    u("available", unsafe { sys::rte_mempool_avail_count(mp) }
        as u64);
    u("populated", s.populated as u64);
    u("in_ring", s.in_ring as u64);
    u("in_handler_caches", s.in_caches as u64);
    u("inflight", s.inflight.max(0) as u64);
    u("hold", s.hold);
    u("release", s.release);
    u("handler_cache_size", s.cache_size as u64);
    st("ring_mode", z.core.ring().mode_name());
    u("iova_chunks", s.chunks as u64);
    u("dma_devices", s.devices as u64);
    u("dma_maps", s.dma_maps);
    u("dma_unmaps", s.dma_unmaps);
    st("state", &s.state.to_string());
    u("validation", s.validate as u64);
    u("rejected_foreign", s.rejected.foreign);
    u("rejected_double_free", s.rejected.double_free);
    u(
        "get_failures",
        z.header
            .get_failures
            .load(std::sync::atomic::Ordering::Relaxed),
    );
    0
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
