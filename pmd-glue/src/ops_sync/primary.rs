//! The primary's side of the ops-table handshake: it serves its table's
//! names, in index order, to the secondaries that ask ([`serve`]).

use core::ffi::{c_char, c_int, c_void};

use dpdk_sys as sys;

use super::table::Table;
use super::{marker_path, message, ACTION, PARAM_LEN, REPLY_HEADER};
use crate::log::Level;
use crate::{ffi, log};

/// Primary: answer secondaries' requests for the table.
pub(super) fn serve() {
    // SAFETY: a static name and a valid callback.
    if unsafe { sys::rte_mp_action_register(ACTION.as_ptr(), Some(on_request)) } == 0 {
        let marker = marker_path();
        // Our index too: a secondary whose handshake fails puts its
        // refusing entry there (`secondary::refuse_pools`).
        let index = crate::ops_name::lookup_index().unwrap_or(-1);
        #[cfg(feature = "test-hooks")]
        if let Ok(mode) = std::env::var(TEST_REPLY) {
            log!(Level::Warning, "test hook: {TEST_REPLY}={mode}");
        }
        match std::fs::write(&marker, format!("{} {index}\n", std::process::id())) {
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
        let reply = encode_reply(&names, start);
        #[cfg(feature = "test-hooks")]
        let Some(reply) = test_reply(reply) else {
            return 0;
        };
        let mut reply = reply;
        // SAFETY: a valid message; `peer` is the requester's address as EAL
        // gave it.
        unsafe { sys::rte_mp_reply(&mut reply, peer.cast::<c_char>()) }
    })
}

/// The reply to a request for the names from index `start` on: header
/// (version, the table's length, `start`), then as many whole names as fit,
/// each NUL-terminated.
fn encode_reply(names: &[String], start: usize) -> sys::rte_mp_msg {
    let mut m = message();
    let start = start.min(names.len());
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

/// Test hook (feature `test-hooks`, built only by the multi-process
/// checks): the variable that makes the primary answer the handshake
/// wrongly.
#[cfg(feature = "test-hooks")]
const TEST_REPLY: &str = "PTR_RING_TEST_HANDSHAKE_REPLY";

/// The reply as [`TEST_REPLY`] asks: `malformed` (shorter than its
/// header), `version` (another format version), `silent` (none: the
/// secondary times out, `None`); anything else leaves it as it is.
#[cfg(feature = "test-hooks")]
fn test_reply(mut m: sys::rte_mp_msg) -> Option<sys::rte_mp_msg> {
    match std::env::var(TEST_REPLY).as_deref() {
        Ok("malformed") => m.len_param = REPLY_HEADER as c_int - 1,
        Ok("version") => m.param[0] = super::VERSION.wrapping_add(1),
        Ok("silent") => return None,
        _ => {}
    }
    Some(m)
}

#[cfg(test)]
mod tests {
    use super::super::VERSION;
    use super::*;

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
