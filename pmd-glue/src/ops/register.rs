//! Registration: the handler's ops table entry and its registration in
//! DPDK's table (once per process, whichever copy of the library loads
//! first). The name and the look-ups by name are `ops_name.rs`'.

use std::sync::atomic::Ordering;

use dpdk_sys as sys;

use crate::error::GlueError;
use crate::ops_name::{lookup_index, OPS_INDEX, OPS_NAME};

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
