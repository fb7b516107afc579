//! Names at the border with C: the NUL-terminated names and strings DPDK
//! hands over, and the room DPDK gives a mempool name. A leaf: it uses
//! nothing of the crate, so every module may use it (the public paths are
//! the re-exports in [`zone`](crate::zone)).

use core::ffi::c_char;

use dpdk_sys as sys;

/// Longest mempool name DPDK accepts, `RTE_MEMPOOL_NAMESIZE - 1` (25):
/// the room in `rte_mempool::name`, into which `rte_mempool_create_empty`
/// copies the name, refusing longer ones (bindgen cannot carry the macro,
/// a `sizeof` expression).
pub fn dpdk_max_pool_name() -> usize {
    sys::rte_mempool::default().name.len() - 1
}

/// Reads a NUL-terminated fixed-size C name field.
pub fn cstr_field(field: &[c_char]) -> String {
    let bytes: Vec<u8> = field
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Reads a NUL-terminated C string (empty for null).
///
/// # Safety
/// `p` is null or points to a NUL-terminated string.
pub unsafe fn cstr_ptr(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: non-null and NUL-terminated (caller's contract).
    unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned()
}
