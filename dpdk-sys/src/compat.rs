//! Where DPDK releases differ, given to the rest of the workspace in one
//! spelling. The crate builds against 22.11 and later LTS releases (24.11,
//! 25.11 tested); everything here is decided by the headers the bindings were
//! generated from, so that no other crate needs a `cfg` for a release.
//!
//! * [`ABI`], [`PLUGIN_DIR`], [`abi_of_release`]: DPDK's ABI major version
//!   (the `.so.<ABI>` of its libraries and drivers) and EAL's plugin
//!   directory, read from the headers by the build script.
//! * [`tel_add_dict_uint`], [`tel_add_dict_int`]: telemetry dict values;
//!   23.03 renamed the unsigned call and widened the signed one to 64 bits
//!   (25.11 removed the old name).
//! * [`mbuf_data_off`], [`mbuf_mtod`] and friends: `rte_mbuf` fields that 24.07 moved into
//!   anonymous unions, whose bindgen path differs between releases.
//! * [`dev_vfio_group`]: whether a device's DMA mappings go to DPDK's
//!   default VFIO container (`rte_bus.h` and `rte_vfio.h`, which the
//!   bindings do not carry).

use core::ffi::{c_char, c_int};

use crate::bindings::{
    rte_device, rte_mbuf, rte_tel_data, RTE_VER_MINOR, RTE_VER_MONTH, RTE_VER_YEAR,
};

mod ffi {
    use super::{c_char, c_int, rte_device, rte_mbuf, rte_tel_data};
    extern "C" {
        pub fn dpdk_sys_tel_add_dict_uint(
            d: *mut rte_tel_data,
            name: *const c_char,
            val: u64,
        ) -> c_int;
        pub fn dpdk_sys_tel_add_dict_int(
            d: *mut rte_tel_data,
            name: *const c_char,
            val: i64,
        ) -> c_int;
        pub fn dpdk_sys_mbuf_data_off(m: *const rte_mbuf) -> u16;
        pub fn dpdk_sys_mbuf_pkt_len(m: *const rte_mbuf) -> u32;
        pub fn dpdk_sys_mbuf_data_len(m: *const rte_mbuf) -> u16;
        pub fn dpdk_sys_mbuf_port(m: *const rte_mbuf) -> u16;
        pub fn dpdk_sys_dev_vfio_group(dev: *const rte_device) -> c_int;
    }
}

/// The release the bindings come from: (year, month, minor), e.g. (25, 11, 4).
pub const RELEASE: (u32, u32, u32) = (RTE_VER_YEAR, RTE_VER_MONTH, RTE_VER_MINOR);

/// DPDK's ABI major version for these bindings: 23 for 22.11, 25 for 24.11,
/// 26 for 25.11. Libraries and drivers of that release are
/// `librte_*.so.<ABI>`; releases of one ABI are binary compatible.
pub const ABI: u32 = parse_u32(env!("DPDK_SYS_ABI"));

/// EAL's plugin directory (`RTE_EAL_PMD_PATH`, `<libdir>/dpdk/pmds-<ABI>.0`
/// on Debian), where EAL loads drivers from at start-up; empty for a DPDK
/// built without one.
pub const PLUGIN_DIR: &str = env!("DPDK_SYS_PLUGIN_DIR");

/// The ABI major version of DPDK release `year.month`, by DPDK's ABI policy:
/// each `.11` LTS release starts a new major ABI (22.11: 23, 23.11: 24, ...)
/// that the releases of the following year keep (25.03 and 25.07 have 25, as
/// 24.11 has).
pub const fn abi_of_release(year: u32, month: u32) -> u32 {
    if month >= 11 {
        year + 1
    } else {
        year
    }
}

const fn parse_u32(s: &str) -> u32 {
    let b = s.as_bytes();
    let mut i = 0;
    let mut v = 0u32;
    assert!(!b.is_empty(), "DPDK_SYS_ABI is empty");
    while i < b.len() {
        assert!(b[i].is_ascii_digit(), "DPDK_SYS_ABI is not a number");
        v = v * 10 + (b[i] - b'0') as u32;
        i += 1;
    }
    v
}

/// Adds the unsigned value `name: val` to the telemetry dict `d`
/// (`rte_tel_data_add_dict_uint`, `_u64` before 23.03). 0 or a negative errno.
///
/// # Safety
/// `d` is a reply buffer DPDK handed a telemetry callback, started as a dict;
/// `name` is a NUL-terminated string.
pub unsafe fn tel_add_dict_uint(d: *mut rte_tel_data, name: *const c_char, val: u64) -> c_int {
    // SAFETY: the caller's contract is the C function's.
    unsafe { ffi::dpdk_sys_tel_add_dict_uint(d, name, val) }
}

/// Adds the signed value `name: val` to the telemetry dict `d`
/// (`rte_tel_data_add_dict_int`). Before 23.03 telemetry carries 32-bit
/// signed values only, and `val` is saturated to that range.
///
/// # Safety
/// As [`tel_add_dict_uint`].
pub unsafe fn tel_add_dict_int(d: *mut rte_tel_data, name: *const c_char, val: i64) -> c_int {
    // SAFETY: the caller's contract is the C function's.
    unsafe { ffi::dpdk_sys_tel_add_dict_int(d, name, val) }
}

/// `m->data_off`: where the data starts, from `buf_addr`.
///
/// # Safety
/// `m` points to an initialised `rte_mbuf`.
pub unsafe fn mbuf_data_off(m: *const rte_mbuf) -> u16 {
    // SAFETY: the caller's contract; the C side reads one field.
    unsafe { ffi::dpdk_sys_mbuf_data_off(m) }
}

/// `rte_pktmbuf_mtod(m, uint8_t *)`: the start of the data,
/// `buf_addr + data_off`.
///
/// # Safety
/// As [`mbuf_data_off`].
pub unsafe fn mbuf_mtod(m: *const rte_mbuf) -> *mut u8 {
    // SAFETY: the caller's contract; `buf_addr + data_off` stays inside the
    // mbuf's buffer (DPDK keeps data_off <= buf_len).
    unsafe {
        (*m).buf_addr
            .cast::<u8>()
            .add(usize::from(mbuf_data_off(m)))
    }
}

/// `m->pkt_len`: the packet's length over all its segments.
///
/// # Safety
/// As [`mbuf_data_off`].
pub unsafe fn mbuf_pkt_len(m: *const rte_mbuf) -> u32 {
    // SAFETY: the caller's contract; the C side reads one field.
    unsafe { ffi::dpdk_sys_mbuf_pkt_len(m) }
}

/// `m->data_len`: the data length of this segment.
///
/// # Safety
/// As [`mbuf_data_off`].
pub unsafe fn mbuf_data_len(m: *const rte_mbuf) -> u16 {
    // SAFETY: the caller's contract; the C side reads one field.
    unsafe { ffi::dpdk_sys_mbuf_data_len(m) }
}

/// `m->port`: the input port.
///
/// # Safety
/// As [`mbuf_data_off`].
pub unsafe fn mbuf_port(m: *const rte_mbuf) -> u16 {
    // SAFETY: the caller's contract; the C side reads one field.
    unsafe { ffi::dpdk_sys_mbuf_port(m) }
}

/// The IOMMU group of `dev` when it is a PCI device bound to `vfio-pci`,
/// else `None`. Such a device's `rte_dev_dma_map` (a driver without a
/// mapping of its own) goes to DPDK's default VFIO container, which every
/// such device shares: a range mapped there is mapped for all of them.
///
/// # Safety
/// `dev` is null or a live `rte_device`.
pub unsafe fn dev_vfio_group(dev: *const rte_device) -> Option<u32> {
    // SAFETY: the caller's contract; the C side reads the device's bus and
    // name, and sysfs.
    let g = unsafe { ffi::dpdk_sys_dev_vfio_group(dev) };
    (g > 0).then_some(g as u32)
}
