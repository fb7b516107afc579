//! One numbering of the mempool ops table in every process.
//!
//! DPDK stores a pool's handler as `mp->ops_index`, an index into each
//! process's own `rte_mempool_ops_table`, which every process fills in the
//! order its drivers load. So the handler registers late and aligns tables:
//!
//! * it registers in a vdev bus custom-scan callback, which EAL runs in
//!   `rte_bus_scan()`: after every `-d` plugin and every driver of EAL's
//!   plugin directory has registered its ops, once the process type is known
//!   and the multi-process channel is up, and before any pool is attached.
//!   ptr_ring thus comes after every other handler and moves none of them:
//!   processes that do not load it agree with those that do on every other
//!   pool. (A process that registered it earlier, e.g. a program that links
//!   the crate and calls `ensure_registered` before `rte_eal_init`, moves it
//!   to the end there: no pool exists or is attached yet.)
//! * a primary answers the IPC request [`ACTION`] with its table's names in
//!   index order;
//! * a secondary asks, then reorders its own table to the primary's order
//!   (no pool is attached yet). A handler the primary has and this process
//!   lacks gets a stub entry under its name whose callbacks refuse with an
//!   error naming it; handlers only this process has follow the primary's.
//!
//! With `--in-memory` or `--no-shconf` there is no multi-process channel and
//! nothing to align. A primary without the handler cannot answer: a serving
//! primary also leaves the file [`MARKER`] in its runtime directory (its pid
//! and its index of ptr_ring), so a secondary that finds none (or one older
//! than the primary's `mp_socket`, left by an earlier primary) does not ask,
//! and keeps its own numbering (ptr_ring still last, so only ptr_ring's own
//! index can differ).
//!
//! A secondary that finds the marker and then gets no answer in
//! [`REPLY_TIMEOUT_MS`], or a malformed one, or one of another format
//! version, cannot know the primary's numbering: the primary's ptr_ring
//! pools could reach another handler here. It says so at ERR and refuses
//! every ptr_ring pool instead: ptr_ring's entry becomes a stub that fails
//! every call (`-EPROTO`), moved at bus scan to the primary's index of
//! ptr_ring from the marker, and the C and Rust entry points refuse every
//! pool too ([`refusal`]). The fast path pays nothing for it: no callback
//! of ours is left in the table.
//!
//! One file per concern: `table` (the locked table and its renumberings),
//! `primary` and `secondary` (the two sides of the handshake), `stubs`
//! (entries for handlers this process lacks); here, the bus-scan hook that
//! runs them and the wire format they share.

mod primary;
mod secondary;
mod stubs;
mod table;

use core::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use dpdk_sys as sys;

use primary::serve;
use secondary::align_with_primary;
use table::{move_ours_last, Table};

use crate::log::Level;
use crate::{ffi, log, ops_name};

/// Name of the IPC action a primary serves its ops table under.
pub const ACTION: &CStr = c"ptr_ring_ops_table";
/// File a serving primary writes in its runtime directory.
pub const MARKER: &str = "ptr_ring_ops_table";
/// How long a secondary waits for the primary's answer.
pub const REPLY_TIMEOUT_MS: u64 = 1000;
/// Format of request and reply: `[VERSION, ...]`.
const VERSION: u8 = 1;
/// Reply header: version, the primary's `num_ops`, index of the first name.
const REPLY_HEADER: usize = 3;
const MAX_OPS: usize = sys::RTE_MEMPOOL_MAX_OPS_IDX as usize;
const PARAM_LEN: usize = sys::RTE_MP_MAX_PARAM_LEN as usize;

/// Why this secondary refuses every ptr_ring pool (its handshake with a
/// serving primary failed); unset everywhere else.
static REFUSAL: OnceLock<String> = OnceLock::new();

/// The handshake failure that makes this process refuse every ptr_ring
/// pool, if there was one.
pub fn refusal() -> Option<&'static str> {
    REFUSAL.get().map(String::as_str)
}

/// Set when the scan hook has run: `rte_dev_probe` (hotplug) rescans the
/// bus after init, and the table must not move once pools exist.
static SCAN_HOOK_RAN: AtomicBool = AtomicBool::new(false);

/// Whether EAL has scanned the buses in this process: it picks the IOVA mode
/// right after `rte_bus_scan()`, and the mode is `RTE_IOVA_DC` until then.
pub fn eal_scanned() -> bool {
    // SAFETY: reads a field of EAL's process-local configuration.
    unsafe { sys::rte_eal_iova_mode() != sys::RTE_IOVA_DC }
}

/// Adds the vdev custom-scan hook; false when the bus refused it.
pub fn install_scan_hook() -> bool {
    // SAFETY: a valid callback and no argument; the vdev bus keeps them in
    // its list until the process exits.
    unsafe { sys::rte_vdev_add_custom_scan(Some(on_vdev_scan), core::ptr::null_mut()) == 0 }
}

unsafe extern "C" fn on_vdev_scan(_arg: *mut c_void) {
    ffi::guard_void("the bus-scan hook", at_scan);
}

/// The scan hook: register, then align the table with the other processes.
fn at_scan() {
    if SCAN_HOOK_RAN.swap(true, Ordering::AcqRel) {
        log!(
            Level::Debug,
            "bus rescan (device hotplug): ops table left as it is"
        );
        return;
    }
    if !crate::register_ops() {
        return;
    }
    // SAFETY: plain query; the process type is known at bus scan.
    match unsafe { sys::rte_eal_process_type() } {
        sys::RTE_PROC_PRIMARY => {
            move_ours_last();
            serve();
        }
        sys::RTE_PROC_SECONDARY => {
            // Last as in a primary, should the primary not serve its table.
            move_ours_last();
            align_with_primary(true);
        }
        _ => {}
    }
    update_index();
}

/// After a registration that came after the bus scan (the handler loaded or
/// first called after `rte_eal_init`): pools may exist, so nothing moves; a
/// primary serves its table, a secondary compares its own with the primary's.
pub fn after_late_registration() {
    // SAFETY: plain query.
    match unsafe { sys::rte_eal_process_type() } {
        sys::RTE_PROC_PRIMARY => serve(),
        sys::RTE_PROC_SECONDARY => align_with_primary(false),
        _ => {}
    }
}

fn update_index() {
    if let Some(i) = ops_name::lookup_index() {
        // Relaxed: a plain value for telemetry and logs.
        ops_name::OPS_INDEX.store(i, Ordering::Relaxed);
    }
}

/// `<runtime dir>/<MARKER>`.
fn marker_path() -> std::path::PathBuf {
    // SAFETY: EAL's runtime directory, a NUL-terminated string it owns
    // (empty before argument parsing).
    let dir = unsafe { CStr::from_ptr(sys::rte_eal_get_runtime_dir()) };
    std::path::Path::new(&*dir.to_string_lossy()).join(MARKER)
}

/// An empty message of the handshake's IPC action, format [`VERSION`].
fn message() -> sys::rte_mp_msg {
    let mut m = sys::rte_mp_msg::default();
    for (d, s) in m.name.iter_mut().zip(ACTION.to_bytes()) {
        *d = *s as c_char;
    }
    m.param[0] = VERSION;
    m
}

/// File name of the shared object (or program) that holds `addr`, for log
/// lines; `?` when unknown.
pub fn object_of(addr: usize) -> String {
    // SAFETY: all-zero is a valid Dl_info.
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    // SAFETY: dladdr accepts any address; `info` is a valid out pointer; the
    // name it gives is NUL-terminated and lives as long as the object.
    unsafe {
        if libc::dladdr(addr as *const c_void, &mut info) == 0 || info.dli_fname.is_null() {
            return String::from("?");
        }
        CStr::from_ptr(info.dli_fname)
            .to_string_lossy()
            .into_owned()
    }
}

/// Every entry of this process's ops table, in index order, as
/// `name (library)`: what a user reads to choose a driver to drop when the
/// table is full.
pub fn ops_table_entries() -> Vec<String> {
    let mut t = Table::lock();
    t.ops()
        .iter()
        .map(|o| {
            let lib = o
                .enqueue
                .map_or(String::from("?"), |f| object_of(f as usize));
            let lib = lib.rsplit('/').next().unwrap_or(&lib).to_owned();
            format!("{} ({lib})", crate::cname::cstr_field(&o.name))
        })
        .collect()
}

/// File name of the object whose callbacks sit at `index` of the ops table.
pub fn ops_origin(index: i32) -> String {
    let mut t = Table::lock();
    let enqueue = usize::try_from(index)
        .ok()
        .and_then(|i| t.ops().get(i))
        .and_then(|o| o.enqueue);
    drop(t);
    enqueue.map_or(String::from("?"), |f| object_of(f as usize))
}
