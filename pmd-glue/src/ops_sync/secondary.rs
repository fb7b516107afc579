//! The secondary's side of the ops-table handshake: ask the primary for its
//! table's names ([`ask_primary`]), then renumber this process's table like
//! it, or, too late for that, report where the two differ
//! ([`align_with_primary`]); when a primary that serves its table does not
//! answer as it should, refuse every ptr_ring pool ([`refuse_pools`]).

use std::time::Instant;

use dpdk_sys as sys;

use super::stubs::stub_ops;
use super::table::{reorder_like, replace_ours, Table};
use super::VERSION;
use super::{marker_path, message, ACTION, MAX_OPS, PARAM_LEN, REPLY_HEADER, REPLY_TIMEOUT_MS};
use crate::log::Level;
use crate::{log, ops_name};

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
        let page = request_page(names.len())?;
        let before = names.len();
        let total = read_page(&page, &mut names)?;
        if names.len() >= total {
            if !names.iter().any(|n| n == ops_name::OPS_NAME) {
                return Err(AskError::Other(format!(
                    "malformed reply: the primary's table ({}) holds no {}",
                    names.join(", "),
                    ops_name::OPS_NAME
                )));
            }
            return Ok(names);
        }
        if names.len() == before {
            return Err(AskError::Other("the primary's answer holds no name".into()));
        }
    }
}

/// Asks the primary for the names from index `start` on; its reply.
fn request_page(start: usize) -> Result<sys::rte_mp_msg, AskError> {
    let mut req = message();
    req.param[1] = start as u8;
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
    match (rc, page) {
        (_, Some(p)) => Ok(p),
        (r, None) if r < 0 && err == libc::ENOTSUP => Err(AskError::NoChannel),
        _ => Err(AskError::NoAnswer),
    }
}

/// Appends the names of a reply to `names` (which must hold every name
/// before the reply's first, see `encode_reply`), trimmed to the primary's
/// table length; returns that length.
fn read_page(page: &sys::rte_mp_msg, names: &mut Vec<String>) -> Result<usize, AskError> {
    let len = (page.len_param.max(0) as usize).min(PARAM_LEN);
    if len < REPLY_HEADER {
        return Err(AskError::Other(format!(
            "malformed reply: {len} bytes, shorter than its {REPLY_HEADER}-byte header"
        )));
    }
    if page.param[0] != VERSION {
        return Err(AskError::Other(format!(
            "the primary answers in format version {}, this process in {VERSION} (another \
             build of the handler)",
            page.param[0]
        )));
    }
    let total = (page.param[1] as usize).min(MAX_OPS);
    if page.param[2] as usize != names.len() {
        return Err(AskError::Other("the primary answered another page".into()));
    }
    names.extend(
        page.param[REPLY_HEADER..len]
            .split(|&b| b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned()),
    );
    names.truncate(total);
    Ok(total)
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
pub(super) fn align_with_primary(reorder: bool) {
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
            return log!(
                Level::Debug,
                "no multi-process channel: no ops-table handshake"
            )
        }
        Err(AskError::NoAnswer) => {
            let why = format!(
                "no answer to {} in {REPLY_TIMEOUT_MS} ms",
                ACTION.to_string_lossy()
            );
            return refuse_pools(why, reorder);
        }
        Err(AskError::Other(why)) => return refuse_pools(why, reorder),
    };
    if reorder {
        renumber_like(&primary, t0);
    } else {
        compare_with(&primary);
    }
}

/// The primary serves its table (its marker says so), but the handshake
/// failed for `cause`: this process cannot know the primary's numbering,
/// and a pool of the primary's on ptr_ring could reach another handler
/// here. So ptr_ring's entry becomes a stub that refuses every call, at
/// the primary's index of ptr_ring (from its marker) when `reorder` allows
/// moving it, and every other entry point refuses ptr_ring's pools
/// ([`super::refusal`]).
fn refuse_pools(cause: String, reorder: bool) {
    let primary_index = if reorder { marker_index() } else { None };
    let _ = super::REFUSAL.set(cause.clone());
    let at = replace_ours(stub_ops(ops_name::OPS_NAME), primary_index);
    log!(
        Level::Err,
        "ops-table handshake with the primary failed: {cause}, although the primary serves \
         its table ({}): this process cannot know the primary's ops-table numbering, so \
         ptr_ring refuses every pool here (its entry{} refuses every call) rather than let \
         another handler take the primary's ptr_ring pools; run the primary's handler build \
         in this process and restart it",
        marker_path().display(),
        match (at, primary_index) {
            (Some(i), Some(p)) if i == p => format!(", at the primary's index {i},"),
            (Some(i), _) => format!(", at index {i},"),
            (None, _) => String::new(),
        }
    );
}

/// The primary's index of ptr_ring, from its marker (`<pid> <index>`).
fn marker_index() -> Option<usize> {
    let text = std::fs::read_to_string(marker_path()).ok()?;
    let index = text.split_whitespace().nth(1)?.parse::<usize>().ok()?;
    (index < MAX_OPS).then_some(index)
}

/// Too late to renumber (pools may exist): reports the indices at which
/// this process's table differs from the primary's.
fn compare_with(primary: &[String]) {
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
}

/// Renumbers this process's table like `primary` (asked since `t0`) and
/// says what it did.
fn renumber_like(primary: &[String], t0: Instant) {
    let (stubs, extra, dropped) = reorder_like(primary);
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
