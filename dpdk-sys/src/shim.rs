//! Per-lcore (thread-local) DPDK variables, read through `csrc/shim.c`.

mod ffi {
    extern "C" {
        pub fn rust_rte_lcore_id() -> u32;
        pub fn rust_rte_socket_id() -> core::ffi::c_uint;
        pub fn rust_rte_errno() -> core::ffi::c_int;
        pub fn rust_rte_errno_set(value: core::ffi::c_int);
    }
}

/// `rte_lcore_id()` of the calling thread: `LCORE_ID_ANY` (`u32::MAX`) on a
/// thread that EAL did not create and that was not registered.
#[inline]
pub fn lcore_id() -> u32 {
    // SAFETY: reads the calling thread's own thread-local; no preconditions.
    unsafe { ffi::rust_rte_lcore_id() }
}

/// `rte_socket_id()`: the NUMA socket of the calling thread.
#[inline]
pub fn socket_id() -> u32 {
    // SAFETY: reads the calling thread's own thread-local; no preconditions.
    unsafe { ffi::rust_rte_socket_id() }
}

/// `rte_errno` of the calling thread (a positive errno value, or 0).
#[inline]
pub fn errno() -> i32 {
    // SAFETY: reads the calling thread's own thread-local; no preconditions.
    unsafe { ffi::rust_rte_errno() }
}

/// Sets `rte_errno` of the calling thread.
#[inline]
pub fn set_errno(value: i32) {
    // SAFETY: writes the calling thread's own thread-local; no preconditions.
    unsafe { ffi::rust_rte_errno_set(value) }
}
