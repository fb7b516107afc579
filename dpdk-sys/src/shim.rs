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
///
/// On x86-64 Linux this is DPDK's own code inlined: one initial-exec TLS
/// load of EAL's `per_lcore__lcore_id` (the GOT slot holding its offset from
/// the thread pointer, then `%fs:offset`), no call. The get/put path of a
/// mempool handler runs it on every call, where a call through the PLT into
/// the C shim cost a measurable share. Elsewhere it calls the C shim, which
/// is compiled with the same TLS model.
#[inline(always)]
pub fn lcore_id() -> u32 {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        let id: u32;
        // SAFETY: reads the calling thread's own copy of EAL's
        // `RTE_DEFINE_PER_LCORE(unsigned int, _lcore_id)`. The symbol lives in
        // librte_eal's static TLS block (librte_eal is a DT_NEEDED library of
        // every DPDK application, so it is loaded at start-up); the linker turns
        // the GOTTPOFF reference into a GOT slot that the dynamic loader fills
        // with the symbol's offset from the thread pointer (`%fs`), exactly as
        // for the C shim built with -ftls-model=initial-exec. Reads memory
        // only, touches no stack and no flags.
        unsafe {
            core::arch::asm!(
                "mov {off}, qword ptr [rip + per_lcore__lcore_id@GOTTPOFF]",
                "mov {id:e}, dword ptr fs:[{off}]",
                off = out(reg) _,
                id = lateout(reg) id,
                options(nostack, readonly, preserves_flags),
            );
        }
        id
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        lcore_id_shim()
    }
}

/// `rte_lcore_id()` through the C shim (a real call into C code that uses
/// DPDK's inline function); the reference [`lcore_id`] is tested against.
#[inline]
pub fn lcore_id_shim() -> u32 {
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
