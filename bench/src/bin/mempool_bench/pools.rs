//! The benchmark's mbuf pools, created the way a DPDK application sets
//! per-pool handler options (`rte_mempool_create_empty` +
//! `rte_mempool_set_ops_byname(mp, name, &cfg)`), and `ptr_ring`'s own
//! counters read through the loaded plugin.
//!
//! Every timed run gets a pool of its own, created just before it and freed
//! just after it, so that one pool at a time exists: DPDK's heap hands each
//! run's pool the same memory (the pool header with DPDK's per-lcore caches
//! first), whichever handler it serves. Pools that live side by side lie at
//! different places, and with DPDK's cache serving every get and put (the
//! `control` rows: the same code on both sides) the place alone put a ratio
//! at 0.94x in one run (`bench/NOTES.md`).

use std::collections::HashMap;
use std::ffi::{c_int, c_void, CStr, CString};
use std::ptr::{null_mut, NonNull};

use bench::pool_config::{PtrRingPoolConfig, PTR_RING_NEWEST};
use bench::record::Side;
use dpdk_sys as sys;

/// `struct ptr_ring_stats` of `rte_mempool_ptr_ring.h`.
#[repr(C)]
#[derive(Default)]
struct PtrRingStats {
    size: u64,
    populated: u64,
    in_ring: u64,
    in_caches: u64,
    inflight: i64,
    hold: u64,
    release: u64,
    iova_chunks: u64,
    dma_maps: u64,
    dma_unmaps: u64,
    rejected_foreign: u64,
    rejected_double_free: u64,
    validation: u32,
    state: u32,
}

type StatsFn = unsafe extern "C" fn(*const sys::rte_mempool, *mut PtrRingStats) -> c_int;

/// Creates the pools, and remembers which (handler, caches) cannot have one.
pub struct Pools {
    size: u32,
    /// Pools that could not be set up, and why (not tried again).
    refused: HashMap<(String, Side), String>,
    stats: Option<StatsFn>,
}

/// One pool, freed on drop.
pub struct Pool {
    mp: NonNull<sys::rte_mempool>,
}

impl Pool {
    pub fn as_ptr(&self) -> *mut sys::rte_mempool {
        self.mp.as_ptr()
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        let mp = self.mp.as_ptr();
        // SAFETY: our pool; no thread uses it any more (the run is over), so
        // every lcore's DPDK cache may be flushed from here; what a failed
        // run lost is referenced by nobody.
        unsafe {
            for lcore in 0..sys::RTE_MAX_LCORE {
                let cache = sys::rte_mempool_default_cache(mp, lcore);
                if !cache.is_null() {
                    sys::rte_mempool_cache_flush(cache, mp);
                }
            }
            sys::rte_mempool_free(mp);
        }
    }
}

impl Pools {
    /// `plugin` is the `-d` path of the `ptr_ring` handler (its
    /// `ptr_ring_stats` export measures how often the handler is called).
    pub fn new(size: u32, plugin: Option<&str>) -> Pools {
        Pools {
            size,
            refused: HashMap::new(),
            stats: plugin.and_then(stats_fn),
        }
    }

    /// A new pool of `handler` with the caches of `side`.
    pub fn create(&mut self, handler: &str, side: Side) -> Result<Pool, String> {
        let key = (handler.to_string(), side);
        if let Some(why) = self.refused.get(&key) {
            return Err(why.clone());
        }
        create(handler, side, self.size)
            .map(|mp| Pool { mp })
            .inspect_err(|e| {
                self.refused.insert(key, e.clone());
            })
    }

    /// Objects `ptr_ring` has handed out from `mp` so far (its `hold`
    /// counter), when the pool is a `ptr_ring` pool and the plugin's export
    /// was found.
    pub fn handed_out(&self, mp: *mut sys::rte_mempool) -> Option<u64> {
        let f = self.stats?;
        let mut s = PtrRingStats::default();
        // SAFETY: `mp` is a live pool; `s` matches the C struct; the function
        // returns -EINVAL for pools of other handlers and writes nothing then.
        (unsafe { f(mp, &mut s) } == 0).then_some(s.hold)
    }
}

/// `ptr_ring_stats` from the already loaded plugin (`RTLD_NOLOAD`: no second
/// copy is loaded).
fn stats_fn(path: &str) -> Option<StatsFn> {
    let c = CString::new(path).ok()?;
    // SAFETY: valid C string; RTLD_NOLOAD only looks the library up.
    let h = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    if h.is_null() {
        return None;
    }
    // SAFETY: a valid handle and symbol name.
    let sym = unsafe { libc::dlsym(h, c"ptr_ring_stats".as_ptr()) };
    // SAFETY: the symbol is `int ptr_ring_stats(const struct rte_mempool *,
    // struct ptr_ring_stats *)` (rte_mempool_ptr_ring.h).
    (!sym.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, StatsFn>(sym) })
}

/// Whether this process's mempool ops table has an entry named `name`
/// (registered by a driver of EAL's plugin directory, a `-d` plugin or the
/// binary itself).
pub fn registered(name: &str) -> bool {
    // SAFETY: DPDK's process-local table, written only while drivers
    // register (before rte_eal_init returns); `num_ops` entries are filled,
    // each name NUL-terminated.
    unsafe {
        let t: &sys::rte_mempool_ops_table = &*std::ptr::addr_of!(sys::rte_mempool_ops_table);
        let n = (t.num_ops as usize).min(t.ops.len());
        t.ops[..n]
            .iter()
            .any(|o| CStr::from_ptr(o.name.as_ptr()).to_bytes() == name.as_bytes())
    }
}

/// The ops name a pool really uses.
pub fn ops_name(mp: *mut sys::rte_mempool) -> String {
    // SAFETY: a live pool; its ops index names a registered ops entry.
    unsafe {
        CStr::from_ptr((*sys::rte_mempool_get_ops((*mp).ops_index)).name.as_ptr())
            .to_string_lossy()
            .into_owned()
    }
}

/// The symbolic name of an errno value DPDK returns.
fn errno_name(e: c_int) -> String {
    match e {
        libc::EINVAL => "EINVAL".into(),
        libc::ENOMEM => "ENOMEM".into(),
        libc::ENOSPC => "ENOSPC".into(),
        libc::ENOTSUP => "ENOTSUP".into(),
        libc::EEXIST => "EEXIST".into(),
        libc::ENOENT => "ENOENT: no such ops".into(),
        e => format!("errno {e}"),
    }
}

/// An mbuf pool of `n` mbufs served by `handler` with the caches of `side`,
/// proven to use that handler.
fn create(handler: &str, side: Side, n: u32) -> Result<NonNull<sys::rte_mempool>, String> {
    let newest = handler == PTR_RING_NEWEST;
    let handler = if newest { "ptr_ring" } else { handler };
    let short: String = handler.chars().take(12).collect();
    let name = CString::new(format!(
        "bp_{short}_{}_{}",
        side.dpdk_cache, side.handler_cache
    ))
    .map_err(|e| e.to_string())?;
    let ops = CString::new(handler).map_err(|e| e.to_string())?;
    let priv_size = std::mem::size_of::<sys::rte_pktmbuf_pool_private>() as u32;
    let data_room = sys::RTE_MBUF_DEFAULT_BUF_SIZE;
    let elt = std::mem::size_of::<sys::rte_mbuf>() as u32 + data_room;
    let fail = |what: &str| {
        format!(
            "{what} for pool {name:?} ({handler}, {side}): rte_errno {}",
            sys::errno()
        )
    };
    // SAFETY: valid name; DPDK returns null with rte_errno on failure.
    let mp = unsafe {
        sys::rte_mempool_create_empty(
            name.as_ptr(),
            n,
            elt,
            side.dpdk_cache,
            priv_size,
            sys::SOCKET_ID_ANY,
            0,
        )
    };
    let mp = NonNull::new(mp).ok_or_else(|| fail("rte_mempool_create_empty"))?;
    let cfg = PtrRingPoolConfig::new(side.handler_cache, newest);
    let cfg_ptr = if handler == "ptr_ring" {
        (&cfg as *const PtrRingPoolConfig)
            .cast_mut()
            .cast::<c_void>()
    } else {
        null_mut()
    };
    let mut pool_priv = sys::rte_pktmbuf_pool_private {
        mbuf_data_room_size: data_room as u16,
        mbuf_priv_size: 0,
        flags: 0,
    };
    // SAFETY: a fresh empty pool; `cfg` lives until populate below (the
    // handler reads it there); the callbacks are DPDK's own.
    let r = unsafe {
        let mut r = sys::rte_mempool_set_ops_byname(mp.as_ptr(), ops.as_ptr(), cfg_ptr);
        if r == 0 {
            sys::rte_pktmbuf_pool_init(
                mp.as_ptr(),
                (&mut pool_priv as *mut sys::rte_pktmbuf_pool_private).cast(),
            );
            r = sys::rte_mempool_populate_default(mp.as_ptr());
            if r >= 0 {
                sys::rte_mempool_obj_iter(mp.as_ptr(), Some(sys::rte_pktmbuf_init), null_mut());
            }
        }
        r
    };
    if r < 0 {
        // SAFETY: our pool, nothing handed out.
        unsafe { sys::rte_mempool_free(mp.as_ptr()) };
        let hint = if handler == "ptr_ring" {
            "; for ptr_ring pass -d <abs path>/librte_mempool_ptr_ring.so in the EAL arguments"
        } else {
            ""
        };
        return Err(format!(
            "cannot set up a pool of {n} mbufs with mempool ops {handler:?} ({side}): {r} ({}){hint}",
            errno_name(-r)
        ));
    }
    let used = ops_name(mp.as_ptr());
    if used != handler {
        // SAFETY: our pool, nothing handed out.
        unsafe { sys::rte_mempool_free(mp.as_ptr()) };
        return Err(format!("pool {name:?} uses ops {used:?}, not {handler:?}"));
    }
    Ok(mp)
}
