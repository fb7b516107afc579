//! The handler's rte_log type, `pmd.mempool.ptr_ring` (the name DPDK's build
//! gives mempool drivers), controlled like any DPDK log type:
//! `--log-level=pmd.mempool.ptr_ring:debug`. Default level NOTICE: errors,
//! warnings and notices only; per-pool lines are INFO or DEBUG.

use std::ffi::CString;
use std::sync::atomic::{AtomicI32, Ordering};

use dpdk_sys as sys;

/// Log type name, as `--log-level` takes it.
pub const LOG_TYPE_NAME: &str = "pmd.mempool.ptr_ring";

/// Registered log type; `RTE_LOGTYPE_USER1` until registration ran.
static LOG_TYPE: AtomicI32 = AtomicI32::new(sys::RTE_LOGTYPE_USER1 as i32);

/// DPDK log levels we use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Level {
    /// `RTE_LOG_ERR`
    Err = sys::RTE_LOG_ERR,
    /// `RTE_LOG_WARNING`
    Warning = sys::RTE_LOG_WARNING,
    /// `RTE_LOG_NOTICE`
    Notice = sys::RTE_LOG_NOTICE,
    /// `RTE_LOG_INFO`
    Info = sys::RTE_LOG_INFO,
    /// `RTE_LOG_DEBUG`
    Debug = sys::RTE_LOG_DEBUG,
}

/// Registers the log type (default level NOTICE, overridden by `--log-level`).
pub fn register() {
    let name = CString::new(LOG_TYPE_NAME).expect("no NUL in a literal");
    // SAFETY: `name` is a valid NUL-terminated string; DPDK copies it.
    let t =
        unsafe { sys::rte_log_register_type_and_pick_level(name.as_ptr(), sys::RTE_LOG_NOTICE) };
    if t >= 0 {
        // Relaxed: a plain value; readers tolerate the USER1 fallback.
        LOG_TYPE.store(t, Ordering::Relaxed);
    }
}

/// Whether a message at `level` would be printed.
pub fn enabled(level: Level) -> bool {
    // SAFETY: plain query of the log configuration.
    unsafe { sys::rte_log_can_log(LOG_TYPE.load(Ordering::Relaxed) as u32, level as u32) }
}

/// Prefix of every line the handler logs.
pub const PREFIX: &str = "PTR_RING: ";
/// What follows [`PREFIX`] on every error line, and only there: one
/// pattern (`PTR_RING: ERROR: `) finds every error the handler reports.
pub const ERROR_TAG: &str = "ERROR: ";

/// Writes one line through `rte_log` (which adds nothing: we add the prefix,
/// [`ERROR_TAG`] at `Level::Err`, and the newline).
pub fn write(level: Level, msg: &str) {
    if !enabled(level) {
        return;
    }
    let tag = if level == Level::Err { ERROR_TAG } else { "" };
    let line = format!("{PREFIX}{tag}{msg}\n").replace('\0', "\\0");
    let Ok(c) = CString::new(line) else { return };
    // SAFETY: "%s" with one valid C string argument.
    unsafe {
        sys::rte_log(
            level as u32,
            LOG_TYPE.load(Ordering::Relaxed) as u32,
            c"%s".as_ptr(),
            c.as_ptr(),
        );
    }
}

/// `log!(Level::Info, "fmt", args...)`
#[macro_export]
macro_rules! log {
    ($lvl:expr, $($arg:tt)*) => {
        if $crate::log::enabled($lvl) {
            $crate::log::write($lvl, &format!($($arg)*));
        }
    };
}
