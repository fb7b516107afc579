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
//! primary also leaves the file [`MARKER`] in its runtime directory, so a
//! secondary that finds none (or one older than the primary's `mp_socket`,
//! left by an earlier primary) does not ask, and keeps its own numbering
//! (ptr_ring still last, so only ptr_ring's own index can differ); one that
//! asks in vain waits [`REPLY_TIMEOUT_MS`] once.

use core::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use dpdk_sys as sys;

use crate::log::Level;
use crate::{ffi, log, ops, zone};

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
    if let Some(i) = ops::lookup_index() {
        // Relaxed: a plain value for telemetry and logs.
        ops::OPS_INDEX.store(i, Ordering::Relaxed);
    }
}

/// The process's ops table, locked; entries below `num_ops` are set.
struct Table {
    t: *mut sys::rte_mempool_ops_table,
}

impl Table {
    fn lock() -> Table {
        // DPDK's process-local table; its spinlock guards changes.
        let t = core::ptr::addr_of_mut!(sys::rte_mempool_ops_table);
        // SAFETY: `t` is valid; the lock is released in drop.
        unsafe { sys::rte_spinlock_lock(core::ptr::addr_of_mut!((*t).sl)) };
        Table { t }
    }

    fn ops(&mut self) -> &mut [sys::rte_mempool_ops] {
        // SAFETY: we hold the table's lock; entries below num_ops are set and
        // num_ops never exceeds the array.
        unsafe {
            let n = ((*self.t).num_ops as usize).min(MAX_OPS);
            &mut (&mut (*self.t).ops)[..n]
        }
    }

    fn names(&mut self) -> Vec<String> {
        self.ops()
            .iter()
            .map(|o| zone::cstr_field(&o.name))
            .collect()
    }

    /// Replaces the whole table by `new` (at most [`MAX_OPS`] entries).
    fn set(&mut self, new: &[sys::rte_mempool_ops]) {
        // SAFETY: we hold the lock; `new` fits the array.
        unsafe {
            let all = &mut (*self.t).ops;
            all[..new.len()].copy_from_slice(new);
            for o in &mut all[new.len()..] {
                *o = core::mem::zeroed();
            }
            (*self.t).num_ops = new.len() as u32;
        }
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        // SAFETY: locked in `lock`.
        unsafe { sys::rte_spinlock_unlock(core::ptr::addr_of_mut!((*self.t).sl)) };
    }
}

/// ptr_ring goes after every other handler, as if it had not been loaded
/// (at bus scan: no pool exists or is attached yet).
fn move_ours_last() {
    let mut t = Table::lock();
    let names = t.names();
    let Some(i) = names.iter().position(|n| n == ops::OPS_NAME) else {
        return;
    };
    let last = names.len() - 1;
    if i != last {
        t.ops()[i..].rotate_left(1);
        drop(t);
        log!(
            Level::Info,
            "mempool ops \"{}\" moved from index {i} to {last}, after every other handler: \
             their indices are those of processes without it",
            ops::OPS_NAME
        );
    }
}

/// Primary: answer secondaries' requests for the table.
fn serve() {
    // SAFETY: a static name and a valid callback.
    if unsafe { sys::rte_mp_action_register(ACTION.as_ptr(), Some(on_request)) } == 0 {
        let marker = marker_path();
        match std::fs::write(&marker, format!("{}\n", std::process::id())) {
            Ok(()) => log!(
                Level::Debug,
                "serving the ops table to secondary processes (IPC action {}, {})",
                ACTION.to_string_lossy(),
                marker.display()
            ),
            Err(e) => log!(
                Level::Err,
                "cannot write {}: {e}; secondaries will not ask for the ops table and keep \
                 their own numbering",
                marker.display()
            ),
        }
        return;
    }
    match sys::errno() {
        libc::ENOTSUP => log!(
            Level::Debug,
            "no multi-process channel (--in-memory or --no-shconf): no ops-table handshake"
        ),
        libc::EEXIST => {}
        e => log!(
            Level::Warning,
            "cannot register IPC action {}: rte_errno {e}; secondaries will keep their own \
             ops-table numbering",
            ACTION.to_string_lossy()
        ),
    }
}

/// Primary side of the handshake (EAL's IPC thread): the names from the
/// asked index on, as many as fit.
unsafe extern "C" fn on_request(msg: *const sys::rte_mp_msg, peer: *const c_void) -> c_int {
    ffi::guard("the ops-table request", || {
        // SAFETY: EAL passes the received message.
        let req = unsafe { &*msg };
        let start = if req.len_param >= 2 {
            req.param[1] as usize
        } else {
            0
        };
        let names = Table::lock().names();
        let mut reply = encode_reply(&names, start);
        // SAFETY: a valid message; `peer` is the requester's address as EAL
        // gave it.
        unsafe { sys::rte_mp_reply(&mut reply, peer.cast::<c_char>()) }
    })
}

fn encode_reply(names: &[String], start: usize) -> sys::rte_mp_msg {
    let mut m = sys::rte_mp_msg::default();
    for (d, s) in m.name.iter_mut().zip(ACTION.to_bytes()) {
        *d = *s as c_char;
    }
    let start = start.min(names.len());
    m.param[0] = VERSION;
    m.param[1] = names.len() as u8;
    m.param[2] = start as u8;
    let mut len = REPLY_HEADER;
    for n in &names[start..] {
        if len + n.len() + 1 > PARAM_LEN {
            break;
        }
        m.param[len..len + n.len()].copy_from_slice(n.as_bytes());
        len += n.len() + 1; // NUL left by default()
    }
    m.len_param = len as c_int;
    m
}

/// Why the primary's table could not be read.
enum AskError {
    /// No multi-process channel in this process.
    NoChannel,
    /// No answer in time: the primary does not load the handler (or an
    /// older one without the handshake).
    NoAnswer,
    /// Something else; the message says what.
    Other(String),
}

/// Secondary side: the primary's table, asked page by page (names are up to
/// 31 bytes, a message carries 256).
fn ask_primary() -> Result<Vec<String>, AskError> {
    let mut names: Vec<String> = Vec::new();
    loop {
        let mut req = sys::rte_mp_msg::default();
        for (d, s) in req.name.iter_mut().zip(ACTION.to_bytes()) {
            *d = *s as c_char;
        }
        req.param[0] = VERSION;
        req.param[1] = names.len() as u8;
        req.len_param = 2;
        let mut reply = sys::rte_mp_reply {
            nb_sent: 0,
            nb_received: 0,
            msgs: core::ptr::null_mut(),
        };
        let ts = sys::timespec {
            tv_sec: (REPLY_TIMEOUT_MS / 1000) as _,
            tv_nsec: ((REPLY_TIMEOUT_MS % 1000) * 1_000_000) as _,
        };
        // SAFETY: valid request, reply and timeout; EAL mallocs reply.msgs.
        let rc = unsafe { sys::rte_mp_request_sync(&mut req, &mut reply, &ts) };
        let err = sys::errno();
        let page = if reply.msgs.is_null() || reply.nb_received < 1 {
            None
        } else {
            // SAFETY: EAL filled `nb_received` messages.
            Some(unsafe { *reply.msgs })
        };
        // SAFETY: malloc'ed by EAL (or null); ours to free.
        unsafe { libc::free(reply.msgs.cast()) };
        let page = match (rc, page) {
            (_, Some(p)) => p,
            (r, None) if r < 0 && err == libc::ENOTSUP => return Err(AskError::NoChannel),
            _ => return Err(AskError::NoAnswer),
        };
        let len = (page.len_param.max(0) as usize).min(PARAM_LEN);
        if len < REPLY_HEADER || page.param[0] != VERSION {
            return Err(AskError::Other(format!(
                "the primary answers in another format (version {})",
                page.param[0]
            )));
        }
        let total = (page.param[1] as usize).min(MAX_OPS);
        if page.param[2] as usize != names.len() {
            return Err(AskError::Other("the primary answered another page".into()));
        }
        let before = names.len();
        names.extend(
            page.param[REPLY_HEADER..len]
                .split(|&b| b == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned()),
        );
        names.truncate(total);
        if names.len() >= total {
            return Ok(names);
        }
        if names.len() == before {
            return Err(AskError::Other("the primary's answer holds no name".into()));
        }
    }
}

/// `<runtime dir>/<MARKER>`.
fn marker_path() -> std::path::PathBuf {
    // SAFETY: EAL's runtime directory, a NUL-terminated string it owns
    // (empty before argument parsing).
    let dir = unsafe { CStr::from_ptr(sys::rte_eal_get_runtime_dir()) };
    std::path::Path::new(&*dir.to_string_lossy()).join(MARKER)
}

/// Whether the primary serves its table: its marker exists and is not older
/// than its `mp_socket` (both are made at each primary's start, the socket
/// first).
fn primary_serves() -> Result<(), String> {
    let marker = marker_path();
    let socket = marker.with_file_name("mp_socket");
    let mtime = |p: &std::path::Path| std::fs::metadata(p).and_then(|m| m.modified());
    match (mtime(&marker), mtime(&socket)) {
        (Err(_), _) => Err(format!("no {}", marker.display())),
        (Ok(m), Ok(s)) if m < s => Err(format!(
            "{} is older than the primary's mp_socket (left by an earlier primary)",
            marker.display()
        )),
        _ => Ok(()),
    }
}

/// Secondary: read the primary's table and, when `reorder` (at bus scan,
/// before any pool is attached), renumber this process's table like it;
/// otherwise only report where they differ.
fn align_with_primary(reorder: bool) {
    if let Err(why) = primary_serves() {
        log!(
            Level::Notice,
            "the primary process does not serve its ops table ({why}): it does not load the \
             ptr_ring handler; this process keeps its own ops-table numbering, with ptr_ring \
             after every other handler. Pools created here on ptr_ring cannot be used by the \
             primary"
        );
        return;
    }
    let t0 = Instant::now();
    let primary = match ask_primary() {
        Ok(p) => p,
        Err(AskError::NoChannel) => {
            log!(
                Level::Debug,
                "no multi-process channel: no ops-table handshake"
            );
            return;
        }
        Err(AskError::NoAnswer) => {
            log!(
                Level::Warning,
                "the primary process did not answer {} in {REPLY_TIMEOUT_MS} ms: it does not \
                 load the ptr_ring handler (or one without this handshake); this process keeps \
                 its own ops-table numbering, with ptr_ring after every other handler. Pools \
                 created here on ptr_ring cannot be used by the primary",
                ACTION.to_string_lossy()
            );
            return;
        }
        Err(AskError::Other(why)) => {
            log!(
                Level::Err,
                "ops-table handshake with the primary failed: {why}; this process keeps its \
                 own numbering"
            );
            return;
        }
    };
    if !reorder {
        let mine = Table::lock().names();
        let differ: Vec<String> = (0..mine.len().min(primary.len()))
            .filter(|&i| mine[i] != primary[i])
            .map(|i| format!("{i}: {} here, {} in the primary", mine[i], primary[i]))
            .collect();
        if differ.is_empty() {
            log!(Level::Info, "ops table numbered as in the primary");
        } else {
            log!(
                Level::Err,
                "ptr_ring registered after rte_eal_init, too late to renumber the ops table; \
                 it differs from the primary's at {}: pools of those handlers must not be used \
                 here (load the handler with -d, or call ensure_registered before rte_eal_init)",
                differ.join("; ")
            );
        }
        return;
    }
    let (stubs, extra, dropped) = reorder_like(&primary);
    let us = t0.elapsed().as_micros();
    log!(
        Level::Notice,
        "ops table synchronised with the primary in {us} us: {} handlers in the primary's \
         order{}{}",
        primary.len(),
        if stubs.is_empty() {
            String::new()
        } else {
            format!(
                "; not loaded here (their pools refuse every call): {}",
                stubs.join(", ")
            )
        },
        if extra.is_empty() {
            String::new()
        } else {
            format!("; only here, after the primary's: {}", extra.join(", "))
        }
    );
    if !dropped.is_empty() {
        log!(
            Level::Err,
            "ops table full: handlers {} are not available in this process",
            dropped.join(", ")
        );
    }
}

/// Where entry `i` of the renumbered table comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Slot {
    /// This process's entry at that index.
    Mine(usize),
    /// A stub under the primary's name.
    Stub(String),
}

/// The renumbering of a table named `mine` like `primary`: the primary's
/// order first (a stub for each name missing here), then the entries only
/// this process has, in their order, as far as [`MAX_OPS`] allows; and the
/// names of those that no longer fit.
fn plan(primary: &[String], mine: &[String]) -> (Vec<Slot>, Vec<String>) {
    let mut used = vec![false; mine.len()];
    let mut slots: Vec<Slot> = primary
        .iter()
        .take(MAX_OPS)
        .map(|name| match mine.iter().position(|n| n == name) {
            Some(j) => {
                used[j] = true;
                Slot::Mine(j)
            }
            None => Slot::Stub(name.clone()),
        })
        .collect();
    let mut dropped = Vec::new();
    for j in (0..mine.len()).filter(|&j| !used[j]) {
        if slots.len() < MAX_OPS {
            slots.push(Slot::Mine(j));
        } else {
            dropped.push(mine[j].clone());
        }
    }
    (slots, dropped)
}

/// Renumbers this process's table like `primary`; returns the names given a
/// stub entry, the names only this process has (kept after the primary's),
/// and those that no longer fit.
fn reorder_like(primary: &[String]) -> (Vec<String>, Vec<String>, Vec<String>) {
    let mut t = Table::lock();
    let cur: Vec<sys::rte_mempool_ops> = t.ops().to_vec();
    let names: Vec<String> = cur.iter().map(|o| zone::cstr_field(&o.name)).collect();
    let (slots, dropped) = plan(primary, &names);
    let (mut stubs, mut extra) = (Vec::new(), Vec::new());
    let new: Vec<sys::rte_mempool_ops> = slots
        .iter()
        .enumerate()
        .map(|(i, slot)| match slot {
            Slot::Mine(j) => {
                if i >= primary.len() {
                    extra.push(names[*j].clone());
                }
                cur[*j]
            }
            Slot::Stub(name) => {
                stubs.push(name.clone());
                stub_ops(name)
            }
        })
        .collect();
    t.set(&new);
    (stubs, extra, dropped)
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

// ------------------------------------------------------------ stub entries

/// One error line per stub index, then debug lines.
static STUB_REPORTED: [AtomicBool; MAX_OPS] = [const { AtomicBool::new(false) }; MAX_OPS];

/// The entry for a handler the primary has and this process lacks: its
/// name, and callbacks that refuse.
fn stub_ops(name: &str) -> sys::rte_mempool_ops {
    // SAFETY: all-zero is a valid rte_mempool_ops (null callbacks, empty name).
    let mut o: sys::rte_mempool_ops = unsafe { core::mem::zeroed() };
    for (d, s) in o.name.iter_mut().zip(name.bytes()) {
        *d = s as c_char;
    }
    o.alloc = Some(stub_alloc);
    o.free = Some(stub_free);
    o.enqueue = Some(stub_enqueue);
    o.dequeue = Some(stub_dequeue);
    o.get_count = Some(stub_get_count);
    o
}

/// Logs that `mp`'s handler is missing here; returns `-ENOTSUP`.
fn refuse(mp: *const sys::rte_mempool, what: &str) -> c_int {
    ffi::guard_void("a stub ops callback", || {
        // SAFETY: DPDK passes a live mempool whose ops index chose this stub.
        let (pool, i) = unsafe { (zone::cstr_field(&(*mp).name), (*mp).ops_index) };
        let handler = Table::lock()
            .names()
            .get(i as usize)
            .cloned()
            .unwrap_or_default();
        let first = usize::try_from(i)
            .ok()
            .and_then(|i| STUB_REPORTED.get(i))
            .is_some_and(|r| !r.swap(true, Ordering::Relaxed));
        log!(
            if first { Level::Err } else { Level::Debug },
            "{what} on pool {pool}: its mempool handler \"{handler}\" (index {i} in the \
             primary) is not loaded in this process; load the primary's -d plugins here too"
        );
    });
    -libc::ENOTSUP
}

unsafe extern "C" fn stub_alloc(mp: *mut sys::rte_mempool) -> c_int {
    refuse(mp, "alloc")
}

unsafe extern "C" fn stub_free(mp: *mut sys::rte_mempool) {
    refuse(mp, "free");
}

unsafe extern "C" fn stub_enqueue(
    mp: *mut sys::rte_mempool,
    _objs: *const *mut c_void,
    _n: c_uint,
) -> c_int {
    refuse(mp, "enqueue")
}

unsafe extern "C" fn stub_dequeue(
    mp: *mut sys::rte_mempool,
    _objs: *mut *mut c_void,
    _n: c_uint,
) -> c_int {
    refuse(mp, "dequeue")
}

unsafe extern "C" fn stub_get_count(mp: *const sys::rte_mempool) -> c_uint {
    refuse(mp, "get_count");
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn plan_takes_the_primary_order_then_own_extras() {
        // testpmd links dpaa; mp_peer registers an extra handler first.
        let primary = names("dpaa octeontx ring_mp_mc stack ptr_ring");
        let mine = names("extra octeontx ring_mp_mc dpaa stack ptr_ring");
        let (slots, dropped) = plan(&primary, &mine);
        use Slot::Mine;
        assert_eq!(
            slots,
            [Mine(3), Mine(1), Mine(2), Mine(4), Mine(5), Mine(0)]
        );
        assert!(dropped.is_empty());
    }

    #[test]
    fn plan_stubs_what_this_process_lacks() {
        let primary = names("dpaa ring_mp_mc bucket ptr_ring");
        let mine = names("ring_mp_mc ptr_ring");
        let (slots, _) = plan(&primary, &mine);
        assert_eq!(
            slots,
            [
                Slot::Stub("dpaa".into()),
                Slot::Mine(0),
                Slot::Stub("bucket".into()),
                Slot::Mine(1)
            ]
        );
    }

    #[test]
    fn plan_drops_own_extras_that_do_not_fit() {
        let primary: Vec<String> = (0..MAX_OPS).map(|i| format!("p{i}")).collect();
        let mine = names("p0 mine_only");
        let (slots, dropped) = plan(&primary, &mine);
        assert_eq!(slots.len(), MAX_OPS);
        assert_eq!(slots[0], Slot::Mine(0));
        assert_eq!(dropped, ["mine_only"]);
    }

    #[test]
    fn plan_of_an_aligned_table_is_the_identity() {
        let t = names("a b c ptr_ring");
        let (slots, dropped) = plan(&t, &t);
        assert_eq!(slots, (0..4).map(Slot::Mine).collect::<Vec<_>>());
        assert!(dropped.is_empty());
    }

    #[test]
    fn reply_pages_hold_whole_names() {
        let names: Vec<String> = (0..16)
            .map(|i| format!("{i:02}_{}", "x".repeat(28)))
            .collect();
        let m = encode_reply(&names, 0);
        assert_eq!(m.param[..3], [VERSION, 16, 0]);
        let got: Vec<&[u8]> = m.param[REPLY_HEADER..m.len_param as usize]
            .split(|&b| b == 0)
            .filter(|s| !s.is_empty())
            .collect();
        assert_eq!(got.len(), (PARAM_LEN - REPLY_HEADER) / 32);
        assert_eq!(got[0], names[0].as_bytes());
        let m = encode_reply(&names, 15);
        assert_eq!(m.param[2], 15);
        assert_eq!(m.len_param as usize, REPLY_HEADER + 32);
    }
}
