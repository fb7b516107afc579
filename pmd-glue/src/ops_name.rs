//! The handler's name in DPDK's mempool ops table, its index there, and
//! the look-ups by name: what the zone, the ops-table handshake, telemetry
//! and the logs ask about a pool's handler. A leaf: it needs nothing of the
//! callbacks (their table entry and its registration are `ops/register.rs`).

use std::sync::atomic::AtomicI32;

use dpdk_sys as sys;

use crate::cname;

/// Name under which the handler registers.
pub const OPS_NAME: &str = "ptr_ring";

/// Our index in this process's `rte_mempool_ops_table`, or -1.
pub static OPS_INDEX: AtomicI32 = AtomicI32::new(-1);

/// Index of `ptr_ring` in this process's ops table, if registered.
pub fn lookup_index() -> Option<i32> {
    // SAFETY: reading DPDK's process-local ops table; entries below
    // `num_ops` are initialised (registration and renumbering happen in
    // constructors and in EAL's bus scan, before any pool exists).
    unsafe {
        let table = &*core::ptr::addr_of!(sys::rte_mempool_ops_table);
        (0..table.num_ops as usize)
            .find(|&i| cname::cstr_field(&table.ops[i].name) == OPS_NAME)
            .map(|i| i as i32)
    }
}

/// Name of the ops a pool uses in this process.
///
/// # Safety
/// `mp` is a live mempool.
pub unsafe fn ops_name_of(mp: *const sys::rte_mempool) -> String {
    // SAFETY: `mp` is live (caller's contract); reading DPDK's ops table at
    // the pool's index, bounds-checked.
    unsafe {
        let table = &*core::ptr::addr_of!(sys::rte_mempool_ops_table);
        let i = (*mp).ops_index;
        if i < 0 || i as u32 >= table.num_ops {
            return String::new();
        }
        cname::cstr_field(&table.ops[i as usize].name)
    }
}
