//! `floor_lifo`: a reference handler, not a product. The cheapest handler
//! DPDK's ops interface can call: an unsynchronised LIFO stack of object
//! pointers, safe for ONE thread only (no lock, no atomics, no per-lcore
//! anything). Whatever a real handler costs above it is the handler's own
//! work; the ops dispatch, `rte_mempool_get_bulk`/`put_bulk` and the
//! benchmark loop cost the same for both. `mempool_bench` registers it in its
//! own process (`--handlers ...,floor_lifo`) and runs it only on one lcore,
//! with DPDK's cache off (on the handler-cache rows too: there it is the
//! fastest cache a handler could keep behind the ops table).
//!
//! DPDK's ops table has `RTE_MEMPOOL_MAX_OPS_IDX` (16) slots and every
//! mempool driver EAL loads takes one: Debian's plugin directory holds 14
//! handlers in 22.11 and 15 from 24.11 on, and `ptr_ring` takes the next. So
//! the reference registers after `rte_eal_init` (every driver and `-d`
//! plugin has its slot by then) and only where a slot is still free
//! ([`register_if_room`]); otherwise the benchmark leaves its rows out.

use core::ffi::{c_int, c_uint, c_void};
use core::ptr::null_mut;

use dpdk_sys as sys;

/// Name of the reference handler's ops.
pub const NAME: &str = "floor_lifo";

/// Start of the stack's memory: the count, then `mp->size` slots.
#[repr(C)]
struct Stack {
    len: usize,
    cap: usize,
}

/// The slots after the header.
///
/// # Safety
/// `s` points to a `Stack` allocated by `alloc`.
unsafe fn slots(s: *mut Stack) -> *mut *mut c_void {
    // SAFETY: `alloc` placed `cap` slots right after the header.
    unsafe { s.add(1).cast() }
}

unsafe extern "C" fn alloc(mp: *mut sys::rte_mempool) -> c_int {
    // SAFETY: DPDK passes a valid mempool being created.
    let (cap, socket) = unsafe { ((*mp).size as usize, (*mp).socket_id) };
    let bytes = core::mem::size_of::<Stack>() + cap * core::mem::size_of::<*mut c_void>();
    // SAFETY: plain allocation; null on failure.
    let s = unsafe { sys::rte_zmalloc_socket(c"floor_lifo".as_ptr(), bytes, 64, socket) }
        .cast::<Stack>();
    if s.is_null() {
        return -libc::ENOMEM;
    }
    // SAFETY: a fresh allocation of `bytes` bytes; the pool owns it now.
    unsafe {
        s.write(Stack { len: 0, cap });
        (*mp).__bindgen_anon_1.pool_data = s.cast();
    }
    0
}

unsafe extern "C" fn free(mp: *mut sys::rte_mempool) {
    // SAFETY: DPDK calls free once, with the pool `alloc` set up.
    unsafe {
        sys::rte_free((*mp).__bindgen_anon_1.pool_data);
        (*mp).__bindgen_anon_1.pool_data = null_mut();
    }
}

unsafe extern "C" fn enqueue(
    mp: *mut sys::rte_mempool,
    objs: *const *mut c_void,
    n: c_uint,
) -> c_int {
    let n = n as usize;
    // SAFETY: the pool's stack (single thread by contract); `n` valid
    // pointers in `objs`; room checked against `cap`.
    unsafe {
        let s = (*mp).__bindgen_anon_1.pool_data.cast::<Stack>();
        let len = (*s).len;
        if len + n > (*s).cap {
            return -libc::ENOBUFS;
        }
        let dst = slots(s).add(len);
        if n == 1 {
            *dst = *objs;
        } else {
            core::ptr::copy_nonoverlapping(objs, dst, n);
        }
        (*s).len = len + n;
    }
    0
}

unsafe extern "C" fn dequeue(
    mp: *mut sys::rte_mempool,
    objs: *mut *mut c_void,
    n: c_uint,
) -> c_int {
    let n = n as usize;
    // SAFETY: as in `enqueue`; `n` slots of room in `objs`.
    unsafe {
        let s = (*mp).__bindgen_anon_1.pool_data.cast::<Stack>();
        let len = (*s).len;
        if len < n {
            return -libc::ENOBUFS;
        }
        let src = slots(s).add(len - n);
        if n == 1 {
            *objs = *src;
        } else {
            core::ptr::copy_nonoverlapping(src, objs, n);
        }
        (*s).len = len - n;
    }
    0
}

unsafe extern "C" fn get_count(mp: *const sys::rte_mempool) -> c_uint {
    // SAFETY: the pool's stack.
    unsafe { (*(*mp).__bindgen_anon_1.pool_data.cast::<Stack>()).len as c_uint }
}

/// How [`register_if_room`] went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registration {
    /// Registered at this index of the ops table.
    Registered(i32),
    /// Not registered: the table already held `used` of its `max` entries.
    NoRoom {
        /// Entries in this process's ops table.
        used: u32,
        /// `RTE_MEMPOOL_MAX_OPS_IDX`.
        max: u32,
    },
}

impl Registration {
    /// The value of the `floor_lifo=` field of `mempool_bench`'s parameter
    /// line: `registered`, or `no-room-USED-of-MAX`.
    pub fn field(&self) -> String {
        match self {
            Registration::Registered(_) => "registered".into(),
            Registration::NoRoom { used, max } => format!("no-room-{used}-of-{max}"),
        }
    }
}

/// Registers the reference handler in this process's ops table when a slot
/// is free. Call it once, after `rte_eal_init` (every mempool driver of
/// EAL's plugin directory and every `-d` plugin has registered by then).
pub fn register_if_room() -> Result<Registration, String> {
    let max = sys::RTE_MEMPOOL_MAX_OPS_IDX;
    // SAFETY: DPDK's process-local table; nothing else registers ops in
    // this process once rte_eal_init has returned (a plain u32 read).
    let used = unsafe {
        core::ptr::read_volatile(core::ptr::addr_of!(sys::rte_mempool_ops_table.num_ops))
    };
    if used >= max {
        return Ok(Registration::NoRoom { used, max });
    }
    // SAFETY: all-zero is a valid rte_mempool_ops (null callbacks, empty name).
    let mut ops: sys::rte_mempool_ops = unsafe { core::mem::zeroed() };
    for (d, s) in ops.name.iter_mut().zip(NAME.bytes()) {
        *d = s as core::ffi::c_char;
    }
    ops.alloc = Some(alloc);
    ops.free = Some(free);
    ops.enqueue = Some(enqueue);
    ops.dequeue = Some(dequeue);
    ops.get_count = Some(get_count);
    // SAFETY: a valid ops struct; DPDK copies it into its table.
    let idx = unsafe { sys::rte_mempool_register_ops(&ops) };
    if idx == -libc::ENOSPC {
        return Ok(Registration::NoRoom { used: max, max });
    }
    if idx < 0 {
        return Err(format!("rte_mempool_register_ops({NAME}): {idx}"));
    }
    Ok(Registration::Registered(idx))
}
