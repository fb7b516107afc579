//! This process's owner id for the pools' shared locks, and what the
//! handler does when it takes a lock over from a dead process: a WARNING
//! naming the pool, the lock, the dead owner and what was repaired.
//!
//! The id and its liveness come from [`mempool::owner::Lease`] in EAL's
//! runtime directory, which every process of one DPDK instance shares
//! (DPDK's multi-process support needs it): see there for why.

use core::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};

use dpdk_sys as sys;
use mempool::owner::{self, Lease, Takeover};

use crate::log::Level;
use crate::{cname, log, ops_name, zone};

static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Draws this process's owner id from EAL's runtime directory, once the
/// directory exists (EAL's argument parsing makes it; before that this
/// does nothing and a later call, at the bus scan, does it). Without one the
/// process's locks hold the anonymous id, which no waiter ever takes over.
pub(crate) fn install() {
    // Relaxed: a once-flag; `Lease::install` is itself idempotent.
    if INSTALLED.load(Ordering::Relaxed) {
        return;
    }
    // SAFETY: EAL's runtime directory, a NUL-terminated string it owns
    // (empty before argument parsing).
    let dir = unsafe { CStr::from_ptr(sys::rte_eal_get_runtime_dir()) };
    let dir = dir.to_string_lossy();
    if dir.is_empty() {
        return;
    }
    match Lease::install(std::path::Path::new(&*dir)) {
        Ok(lease) => {
            owner::set_report(report);
            INSTALLED.store(true, Ordering::Relaxed);
            log!(
                Level::Debug,
                "owner id {} ({}, pid {})",
                lease.id().get(),
                lease.path().display(),
                std::process::id()
            );
        }
        Err(e) => log!(
            Level::Warning,
            "no owner id from {dir}: {e}: a lock this process holds cannot be taken over \
             should it die holding it"
        ),
    }
}

/// The pool whose zone holds address `at`, by name.
fn pool_holding(at: usize) -> Option<String> {
    let mut name = None;
    // Not rte_mempool_walk: it can read a list entry a concurrent free has
    // freed (see `mempool_list::lookup`).
    sys::mempool_list::walk(|mp| {
        // SAFETY: a listed mempool, alive while the walk holds the lock.
        if name.is_some() || unsafe { ops_name::ops_name_of(mp) } != ops_name::OPS_NAME {
            return;
        }
        // SAFETY: as above, on our ops.
        let Ok(z) = (unsafe { zone::ours(mp) }) else {
            return;
        };
        let base = z.header as *const zone::ZoneHeader as usize;
        let end = base + core::mem::size_of::<zone::ZoneHeader>() + z.header.core_bytes as usize;
        if (base..end).contains(&at) {
            // SAFETY: as above; the name is NUL-terminated.
            name = Some(cname::cstr_field(unsafe { &(*mp).name }));
        }
    });
    name
}

/// The takeover hook: one WARNING (an ERROR when the pool is now poisoned).
fn report(t: &Takeover) {
    // A named lock guards a structure outside every pool (the DMA table).
    let subject = match t.lock {
        owner::LockKind::Named(_) => String::new(),
        _ => {
            let pool = pool_holding(t.at).unwrap_or_else(|| format!("at {:#x}", t.at));
            format!("pool {pool}: ")
        }
    };
    let level = if matches!(t.repair, owner::Repair::Impossible(_)) {
        Level::Err
    } else {
        Level::Warning
    };
    let tail = if level == Level::Err {
        ": its gets and puts fail from now on; recreate the pool"
    } else {
        ""
    };
    let pid = owner::pid_of(t.dead).map_or(String::new(), |p| {
        format!(" (pid {p} in its PID namespace)")
    });
    log!(
        level,
        "{subject}process of owner id {}{pid} died holding the {}; {}{tail}",
        t.dead,
        t.lock,
        t.repair
    );
}
