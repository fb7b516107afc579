//! Registration: the handler's ops table entry, its registration in
//! DPDK's table (once per process, whichever copy of the library loads
//! first) and look-ups by name.

use std::sync::atomic::{AtomicI32, Ordering};

use dpdk_sys as sys;

use crate::cname;
use crate::error::GlueError;

/// Name under which the handler registers.
pub const OPS_NAME: &str = "ptr_ring";

/// Our index in this process's `rte_mempool_ops_table`, or -1.
pub static OPS_INDEX: AtomicI32 = AtomicI32::new(-1);

/// The handler's ops table entry.
pub fn ops_table() -> sys::rte_mempool_ops {
    // SAFETY: all-zero is a valid rte_mempool_ops (null callbacks, empty name).
    let mut ops: sys::rte_mempool_ops = unsafe { core::mem::zeroed() };
    for (d, s) in ops.name.iter_mut().zip(OPS_NAME.bytes()) {
        *d = s as core::ffi::c_char;
    }
    ops.alloc = Some(super::alloc);
    ops.free = Some(super::free);
    ops.enqueue = Some(super::enqueue);
    ops.dequeue = Some(super::dequeue);
    ops.get_count = Some(super::get_count);
    ops.populate = Some(super::populate);
    ops
}

/// What [`register`] found in the ops table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registration {
    /// Registered now, at this index.
    Added(i32),
    /// Already registered by this copy of the handler.
    Present(i32),
    /// Registered by another copy of the handler (the same library loaded
    /// twice, e.g. from EAL's plugin directory and with `-d`): this copy's
    /// callbacks are not in the table and it must stay idle.
    OtherCopy(i32),
}

/// Registers the ops unless `ptr_ring` is in the table already: a second
/// registration of a name would take another slot, and DPDK looks names up
/// first come first served.
pub fn register() -> Result<Registration, GlueError> {
    if let Some(i) = lookup_index() {
        // SAFETY: `i` is below num_ops (lookup_index); entries there are set.
        let theirs =
            unsafe { (*core::ptr::addr_of!(sys::rte_mempool_ops_table)).ops[i as usize].enqueue };
        let ours = ops_table().enqueue;
        if theirs.map(|f| f as usize) != ours.map(|f| f as usize) {
            return Ok(Registration::OtherCopy(i));
        }
        // Relaxed: read by telemetry only.
        OPS_INDEX.store(i, Ordering::Relaxed);
        return Ok(Registration::Present(i));
    }
    let ops = ops_table();
    // SAFETY: a valid ops struct; DPDK copies it into its table.
    let idx = unsafe { sys::rte_mempool_register_ops(&ops) };
    if idx < 0 {
        return Err(GlueError::NotRegistered {
            name: OPS_NAME.into(),
            errno: idx,
        });
    }
    // Relaxed: read by telemetry only.
    OPS_INDEX.store(idx, Ordering::Relaxed);
    Ok(Registration::Added(idx))
}

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
