//! A safe Rust API for DPDK programs written in Rust: initialise EAL, create
//! an mbuf pool served by this handler, get and put mbufs, read its counters,
//! shut it down with its ports.
//!
//! Ownership rules the compiler checks: an [`Mbuf`] borrows its
//! [`MbufPool`], so it cannot outlive it, and [`MbufPool::shutdown`] consumes
//! the pool, so nothing can free it (or use it) a second time. Mbufs that
//! must outlive the handle (e.g. queued in a device or the application
//! across a deferred shutdown) leave the borrow through [`Mbuf::into_raw`],
//! and are then the application's to free with `rte_pktmbuf_free`.

use core::marker::PhantomData;
use core::ptr::{null_mut, NonNull};
use std::ffi::CString;
use std::mem::ManuallyDrop;
use std::time::Duration;

use dpdk_sys as sys;
use mempool::PoolStats;

use crate::error::GlueError;
use crate::port::ShutdownOutcome;
use crate::{ops_name, port, zone};

/// Initialises EAL with `args` (the program name first, as in `argv`).
/// Returns the number of arguments EAL consumed.
pub fn eal_init<S: AsRef<str>>(args: &[S]) -> Result<usize, GlueError> {
    let owned: Vec<CString> = args
        .iter()
        .map(|a| {
            CString::new(a.as_ref()).map_err(|_| GlueError::BadArg {
                arg: a.as_ref().into(),
            })
        })
        .collect::<Result<_, _>>()?;
    let mut ptrs: Vec<*mut core::ffi::c_char> =
        owned.iter().map(|c| c.as_ptr().cast_mut()).collect();
    // SAFETY: argc/argv valid for the call; EAL keeps no pointer into argv
    // strings past init except for the copy it makes.
    let r = unsafe { sys::rte_eal_init(ptrs.len() as i32, ptrs.as_mut_ptr()) };
    std::mem::forget(owned); // EAL may keep pointers into argv.
    if r < 0 {
        return Err(GlueError::Dpdk {
            call: "rte_eal_init",
            errno: -sys::errno(),
        });
    }
    Ok(r as usize)
}

/// Makes sure the ptr_ring ops are registered in this process (programs that
/// link this crate instead of loading the .so with `-d`).
pub fn ensure_registered() -> Result<i32, GlueError> {
    crate::init();
    ops_name::lookup_index().ok_or(GlueError::NotRegistered {
        name: ops_name::OPS_NAME.into(),
        errno: -libc::ENOENT,
    })
}

/// The handler's counters of a pool known only by pointer (e.g. after
/// [`MbufPool::shutdown`] deferred its release).
///
/// # Safety
/// `mp` is a live mempool (a deferred release frees it once the last buffer
/// is back: read it only while the caller still holds one).
pub unsafe fn stats_of(mp: *const sys::rte_mempool) -> Result<PoolStats, GlueError> {
    // SAFETY: a live mempool (caller's contract); `ours` checks it is ours.
    let z = unsafe { zone::ours(mp) }?;
    Ok(z.core.stats())
}

/// The mempool flags that make one side of the handler's ring lockless:
/// `RTE_MEMPOOL_F_SP_PUT` (one putter at a time) and `RTE_MEMPOOL_F_SC_GET`
/// (one getter at a time).
pub const SINGLE_SIDED: u32 = sys::RTE_MEMPOOL_F_SP_PUT | sys::RTE_MEMPOOL_F_SC_GET;

/// An mbuf pool (`rte_pktmbuf_pool_create_by_ops`) served by ptr_ring.
/// Freed on drop (`rte_mempool_free`), or by [`MbufPool::shutdown`].
///
/// A program's whole life with one pool: EAL, the pool, mbufs out and back,
/// the counters, the shutdown (here with no port, so it frees the pool at
/// once):
///
/// ```no_run
/// use std::time::Duration;
/// use rte_mempool_ptr_ring::api::{self, MbufPool};
/// use rte_mempool_ptr_ring::port::ShutdownOutcome;
///
/// # fn main() -> Result<(), rte_mempool_ptr_ring::GlueError> {
/// api::eal_init(&["app", "--no-huge", "-m", "256", "--no-pci"])?;
/// let pool = MbufPool::create("rx_pool", 8191, 256, 2048, -1)?;
/// {
///     let m = pool.alloc().expect("a free mbuf");
///     assert_eq!(pool.stats()?.inflight, 1);
///     drop(m); // back to the pool
/// }
/// match pool.shutdown(&[], Duration::from_millis(100))? {
///     ShutdownOutcome::Freed { .. } => println!("freed"),
///     ShutdownOutcome::Deferred { inflight } => println!("{inflight} mbufs still out"),
/// }
/// # Ok(())
/// # }
/// ```
///
/// An mbuf borrows its pool: the pool cannot be dropped or shut down while
/// one is alive.
///
/// ```compile_fail
/// # use rte_mempool_ptr_ring::api::MbufPool;
/// fn f(pool: MbufPool) {
///     let m = pool.alloc();
///     drop(pool); // error: `pool` is borrowed by `m`
///     drop(m);
/// }
/// ```
///
/// Shutdown consumes the pool: it cannot be freed a second time.
///
/// ```compile_fail
/// # use rte_mempool_ptr_ring::api::MbufPool;
/// fn f(pool: MbufPool) {
///     let _ = pool.shutdown(&[], std::time::Duration::ZERO);
///     drop(pool); // error: use of moved value
/// }
/// ```
///
/// ```compile_fail
/// # use rte_mempool_ptr_ring::api::MbufPool;
/// fn f(pool: MbufPool) {
///     let m = pool.alloc();
///     let _ = pool.shutdown(&[], std::time::Duration::ZERO); // error: borrowed
///     drop(m);
/// }
/// ```
///
/// The same code with the mbuf given back first compiles:
///
/// ```no_run
/// # use rte_mempool_ptr_ring::api::MbufPool;
/// fn f(pool: MbufPool) {
///     let m = pool.alloc();
///     drop(m);
///     let _ = pool.shutdown(&[], std::time::Duration::ZERO);
/// }
/// ```
pub struct MbufPool {
    mp: NonNull<sys::rte_mempool>,
}

// SAFETY: a mempool is meant to be shared between threads; every operation
// we expose is thread-safe in DPDK for the pools safe code can make (no
// single-sided flag: `create_with_flags` refuses them), and the caller of
// `create_with_flags_unchecked` promised to keep a single-sided one to one
// thread a side.
unsafe impl Send for MbufPool {}
// SAFETY: as above.
unsafe impl Sync for MbufPool {}

/// What [`MbufPool::create_with_flags`] (and its `unsafe` twin) builds: `n`
/// mbufs of data room `data_room`, DPDK cache `cache_size`, on `socket`
/// (`-1`: any), with mempool `flags` (`rte_mempool_create_empty`'s).
/// [`new`](PoolParams::new) gives socket `-1` and no flags.
///
/// ```
/// use rte_mempool_ptr_ring::api::PoolParams;
///
/// let p = PoolParams {
///     socket: 0,
///     ..PoolParams::new("tx_pool", 4095, 0, 2048)
/// };
/// assert_eq!((p.n, p.socket, p.flags), (4095, 0, 0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolParams<'a> {
    /// The pool's name (a memzone name: unique in the process group).
    pub name: &'a str,
    /// The number of mbufs.
    pub n: u32,
    /// DPDK's per-lcore cache size (0: none).
    pub cache_size: u32,
    /// Each mbuf's data room, headroom included.
    pub data_room: u16,
    /// The NUMA socket, `-1` for any.
    pub socket: i32,
    /// Mempool flags (`RTE_MEMPOOL_F_*`).
    pub flags: u32,
}

impl<'a> PoolParams<'a> {
    /// `n` mbufs of `data_room` with DPDK cache `cache_size`, on any socket,
    /// no flags.
    pub fn new(name: &'a str, n: u32, cache_size: u32, data_room: u16) -> Self {
        PoolParams {
            name,
            n,
            cache_size,
            data_room,
            socket: -1,
            flags: 0,
        }
    }
}

/// Registers the ops and makes the C strings a pool creation passes to
/// DPDK: the pool's name and the ops name.
fn creation_names(name: &str) -> Result<(CString, CString), GlueError> {
    ensure_registered()?;
    let cname = CString::new(name).map_err(|_| GlueError::BadArg { arg: name.into() })?;
    let ops_name = CString::new(ops_name::OPS_NAME).expect("literal");
    Ok((cname, ops_name))
}

impl MbufPool {
    /// Creates a pool of `n` mbufs with DPDK cache `cache_size` and data room
    /// `data_room` on `socket` (`-1`: any).
    ///
    /// ```no_run
    /// # use rte_mempool_ptr_ring::api::{self, MbufPool};
    /// # fn main() -> Result<(), rte_mempool_ptr_ring::GlueError> {
    /// api::eal_init(&["app", "--no-huge", "-m", "256"])?;
    /// let pool = MbufPool::create("rx_pool", 8191, 256, 2048, -1)?;
    /// assert_eq!(pool.size(), 8191);
    /// # Ok(())
    /// # }
    /// ```
    pub fn create(
        name: &str,
        n: u32,
        cache_size: u32,
        data_room: u16,
        socket: i32,
    ) -> Result<MbufPool, GlueError> {
        let (cname, ops_name) = creation_names(name)?;
        // SAFETY: valid strings; DPDK returns null with rte_errno on failure.
        let mp = unsafe {
            sys::rte_pktmbuf_pool_create_by_ops(
                cname.as_ptr(),
                n,
                cache_size,
                0,
                data_room,
                socket,
                ops_name.as_ptr(),
            )
        };
        NonNull::new(mp)
            .map(|mp| MbufPool { mp })
            .ok_or(GlueError::Dpdk {
                call: "rte_pktmbuf_pool_create_by_ops",
                errno: -sys::errno(),
            })
    }

    /// [`create`](MbufPool::create) with mempool flags
    /// ([`PoolParams::flags`]), built the way
    /// `rte_pktmbuf_pool_create_by_ops` does, which takes no flags.
    ///
    /// # Errors
    /// [`GlueError::SingleSided`] for `RTE_MEMPOOL_F_SP_PUT` or
    /// `RTE_MEMPOOL_F_SC_GET`, before anything is created: such a pool
    /// relies on one thread at a time getting (or putting), which safe code
    /// sharing this `Sync` handle cannot promise.
    /// [`create_with_flags_unchecked`](MbufPool::create_with_flags_unchecked)
    /// takes the flags, as `unsafe`.
    ///
    /// ```no_run
    /// # use dpdk_sys as sys;
    /// # use rte_mempool_ptr_ring::api::{self, MbufPool, PoolParams};
    /// # fn main() -> Result<(), rte_mempool_ptr_ring::GlueError> {
    /// api::eal_init(&["app", "--no-huge", "-m", "256"])?;
    /// let pool = MbufPool::create_with_flags(&PoolParams {
    ///     flags: sys::RTE_MEMPOOL_F_NO_IOVA_CONTIG,
    ///     ..PoolParams::new("rx_pool", 8191, 256, 2048)
    /// })?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// The refusal needs no EAL:
    ///
    /// ```
    /// # use rte_mempool_ptr_ring::api::{MbufPool, PoolParams, SINGLE_SIDED};
    /// # use rte_mempool_ptr_ring::GlueError;
    /// let sp_sc = PoolParams {
    ///     flags: SINGLE_SIDED,
    ///     ..PoolParams::new("sp_sc", 1023, 0, 2048)
    /// };
    /// let e = MbufPool::create_with_flags(&sp_sc).err();
    /// assert!(matches!(e, Some(GlueError::SingleSided { flags: SINGLE_SIDED })));
    /// ```
    pub fn create_with_flags(params: &PoolParams<'_>) -> Result<MbufPool, GlueError> {
        if params.flags & SINGLE_SIDED != 0 {
            return Err(GlueError::SingleSided {
                flags: params.flags,
            });
        }
        // SAFETY: neither single-sided flag, so there is no contract to keep.
        unsafe { Self::create_with_flags_unchecked(params) }
    }

    /// [`create_with_flags`](MbufPool::create_with_flags) that also takes
    /// `RTE_MEMPOOL_F_SP_PUT` and `RTE_MEMPOOL_F_SC_GET`, e.g. both for a
    /// pool that one thread at a time puts to and one thread at a time gets
    /// from: the handler's ring then takes no lock on that side, as
    /// DPDK's `ring_sp_sc` does.
    ///
    /// ```no_run
    /// # use rte_mempool_ptr_ring::api::{self, MbufPool, PoolParams, SINGLE_SIDED};
    /// # fn main() -> Result<(), rte_mempool_ptr_ring::GlueError> {
    /// api::eal_init(&["app", "--no-huge", "-m", "256"])?;
    /// let params = PoolParams {
    ///     flags: SINGLE_SIDED,
    ///     ..PoolParams::new("sp_sc", 1023, 0, 2048)
    /// };
    /// // SAFETY: this thread is the pool's only getter and only putter,
    /// // and it is dropped after the last of them.
    /// let pool = unsafe { MbufPool::create_with_flags_unchecked(&params) }?;
    /// let m = pool.alloc();
    /// drop(m);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Safety
    /// * With `RTE_MEMPOOL_F_SC_GET`, no two gets from the pool run at
    ///   once, and each happens-before the next (the same thread, or a
    ///   hand-over through a join, a mutex or a channel). A get is anything
    ///   that takes objects from the pool: [`alloc`](MbufPool::alloc),
    ///   [`alloc_bulk`](MbufPool::alloc_bulk), `rte_mempool_get*` or
    ///   `rte_pktmbuf_alloc*` on [`as_ptr`](MbufPool::as_ptr), a device's
    ///   receive refill; with DPDK's per-lcore cache too, since which of
    ///   them miss the cache and reach the handler cannot be told.
    /// * With `RTE_MEMPOOL_F_SP_PUT`, the same for puts: dropping an
    ///   [`Mbuf`], `rte_mempool_put*` or `rte_pktmbuf_free*`, a device's
    ///   transmit completion, a cache flush.
    /// * Dropping the pool, or [`shutdown`](MbufPool::shutdown), happens
    ///   after every get and put.
    ///
    /// Breaking the contract is undefined behaviour, not just a wrong
    /// count. Two gets at once both read the ring at the same position and
    /// take the same objects: one mbuf goes to two owners, who write two
    /// packets into one buffer and free it twice; and the dequeue's bulk
    /// copy reads the slots with plain loads, which race with the other
    /// getter's clearing stores (a data race). Two puts at once fill the
    /// same slots: one of the two objects is overwritten and never comes
    /// back (the pool shrinks for good, and the handler reports it missing
    /// at free), a later put may be refused although the ring has room,
    /// and a getter's plain copy of a slot races with the second put's
    /// store to it. Nothing detects it as it happens.
    pub unsafe fn create_with_flags_unchecked(
        params: &PoolParams<'_>,
    ) -> Result<MbufPool, GlueError> {
        let PoolParams {
            name,
            n,
            cache_size,
            data_room,
            socket,
            flags,
        } = *params;
        let (cname, ops_name) = creation_names(name)?;
        let elt = core::mem::size_of::<sys::rte_mbuf>() as u32 + u32::from(data_room);
        let priv_size = core::mem::size_of::<sys::rte_pktmbuf_pool_private>() as u32;
        let dpdk_err = |call: &'static str, rc: i32| GlueError::Dpdk {
            call,
            errno: if rc < 0 { rc } else { -sys::errno() },
        };
        // SAFETY: valid name; DPDK returns null with rte_errno on failure.
        let mp = unsafe {
            sys::rte_mempool_create_empty(
                cname.as_ptr(),
                n,
                elt,
                cache_size,
                priv_size,
                socket,
                flags,
            )
        };
        // From here on, dropping `pool` frees the half-built pool.
        let pool = MbufPool {
            mp: NonNull::new(mp).ok_or_else(|| dpdk_err("rte_mempool_create_empty", 0))?,
        };
        // SAFETY: a live, empty pool; our registered ops name.
        let rc = unsafe { sys::rte_mempool_set_ops_byname(mp, ops_name.as_ptr(), null_mut()) };
        if rc != 0 {
            return Err(dpdk_err("rte_mempool_set_ops_byname", rc));
        }
        let mut pool_priv = sys::rte_pktmbuf_pool_private {
            mbuf_data_room_size: data_room,
            mbuf_priv_size: 0,
            flags: 0,
        };
        // SAFETY: a live pool with room for the private area; DPDK copies
        // the struct.
        unsafe { sys::rte_pktmbuf_pool_init(mp, core::ptr::addr_of_mut!(pool_priv).cast()) };
        // SAFETY: a live pool; allocates its memory and calls our populate.
        let rc = unsafe { sys::rte_mempool_populate_default(mp) };
        if rc < 0 {
            return Err(dpdk_err("rte_mempool_populate_default", rc));
        }
        // SAFETY: a populated pktmbuf pool; DPDK's mbuf constructor.
        unsafe { sys::rte_mempool_obj_iter(mp, Some(sys::rte_pktmbuf_init), null_mut()) };
        Ok(pool)
    }

    /// The raw mempool.
    pub fn as_ptr(&self) -> *mut sys::rte_mempool {
        self.mp.as_ptr()
    }

    /// One mbuf, or `None` when the pool is exhausted.
    ///
    /// ```no_run
    /// # use rte_mempool_ptr_ring::api::{self, MbufPool};
    /// # fn main() -> Result<(), rte_mempool_ptr_ring::GlueError> {
    /// # api::eal_init(&["app", "--no-huge", "-m", "256"])?;
    /// let pool = MbufPool::create("one", 63, 0, 2048, -1)?;
    /// let m = pool.alloc().expect("a free mbuf");
    /// assert_eq!(pool.available(), 62);
    /// drop(m);
    /// assert_eq!(pool.available(), 63);
    /// # Ok(())
    /// # }
    /// ```
    pub fn alloc(&self) -> Option<Mbuf<'_>> {
        // SAFETY: a live pool.
        NonNull::new(unsafe { sys::rte_pktmbuf_alloc(self.mp.as_ptr()) }).map(|m| Mbuf {
            m,
            _pool: PhantomData,
        })
    }

    /// `n` mbufs, all or none.
    ///
    /// ```no_run
    /// # use rte_mempool_ptr_ring::api::{self, MbufPool};
    /// # fn main() -> Result<(), rte_mempool_ptr_ring::GlueError> {
    /// # api::eal_init(&["app", "--no-huge", "-m", "256"])?;
    /// let pool = MbufPool::create("bulk", 63, 0, 2048, -1)?;
    /// let burst = pool.alloc_bulk(32).expect("32 free mbufs");
    /// assert!(pool.alloc_bulk(32).is_none(), "only 31 left: none taken");
    /// drop(burst);
    /// # Ok(())
    /// # }
    /// ```
    pub fn alloc_bulk(&self, n: usize) -> Option<Vec<Mbuf<'_>>> {
        let mut raw: Vec<*mut sys::rte_mbuf> = vec![core::ptr::null_mut(); n];
        // SAFETY: a live pool and room for `n` pointers.
        let r =
            unsafe { sys::rte_pktmbuf_alloc_bulk(self.mp.as_ptr(), raw.as_mut_ptr(), n as u32) };
        (r == 0).then(|| {
            raw.into_iter()
                .map(|m| Mbuf {
                    m: NonNull::new(m).expect("alloc_bulk fills every slot"),
                    _pool: PhantomData,
                })
                .collect()
        })
    }

    /// Objects available (handler + DPDK caches), `rte_mempool_avail_count`.
    pub fn available(&self) -> u32 {
        // SAFETY: a live pool.
        unsafe { sys::rte_mempool_avail_count(self.mp.as_ptr()) }
    }

    /// Objects the pool holds.
    pub fn size(&self) -> u32 {
        // SAFETY: a live pool.
        unsafe { (*self.mp.as_ptr()).size }
    }

    /// The handler's counters.
    ///
    /// ```no_run
    /// # use rte_mempool_ptr_ring::api::{self, MbufPool};
    /// # fn main() -> Result<(), rte_mempool_ptr_ring::GlueError> {
    /// # api::eal_init(&["app", "--no-huge", "-m", "256"])?;
    /// let pool = MbufPool::create("counted", 1023, 0, 2048, -1)?;
    /// let _m = pool.alloc();
    /// let s = pool.stats()?;
    /// println!("{} out, {} in the ring, state {:?}", s.inflight, s.in_ring, s.state);
    /// # Ok(())
    /// # }
    /// ```
    pub fn stats(&self) -> Result<PoolStats, GlueError> {
        // SAFETY: a live pool.
        let z = unsafe { zone::ours(self.mp.as_ptr()) }?;
        Ok(z.core.stats())
    }

    /// Stops and closes `ports`, then frees the pool once every buffer is
    /// back, waiting at most `wait` before deferring the release to an EAL
    /// alarm ([`port::shutdown_ports`]). Consumes the pool: whatever the
    /// outcome, it is the shutdown's to free, never `Drop`'s. Buffers still
    /// out (taken with [`Mbuf::into_raw`]) may be freed afterwards, from any
    /// thread; the last one back lets the alarm free the pool.
    ///
    /// On an error the shutdown may have begun (ports stopped, pool
    /// draining): the pool is then left allocated rather than risk a free
    /// while buffers are out.
    ///
    /// `port::shutdown_ports` needs every lcore out of gets and puts on the
    /// pool during the call: taking the pool by value proves it for safe
    /// code (no `&MbufPool` and no [`Mbuf`] is left to use it); code that
    /// shares [`as_ptr`](MbufPool::as_ptr) with other lcores must stop them
    /// first, as for `rte_mempool_free`.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use rte_mempool_ptr_ring::api::{self, MbufPool};
    /// # use rte_mempool_ptr_ring::port::ShutdownOutcome;
    /// # fn main() -> Result<(), rte_mempool_ptr_ring::GlueError> {
    /// # api::eal_init(&["app", "--no-huge", "-m", "256", "--vdev", "net_null0"])?;
    /// let pool = MbufPool::create("rx_pool", 8191, 0, 2048, -1)?;
    /// // ... port 0's queues set up on `pool.as_ptr()`, forwarding ...
    /// let queued = pool.alloc().expect("mbuf").into_raw(); // still out
    /// let mp = pool.as_ptr();
    /// let outcome = pool.shutdown(&[0], Duration::from_millis(200))?;
    /// assert!(matches!(outcome, ShutdownOutcome::Deferred { inflight: 1 }));
    /// // SAFETY: the pool lives while `queued` is out.
    /// println!("{:?}", unsafe { api::stats_of(mp) }?.state);
    /// // SAFETY: the application's mbuf; the last one back: the EAL alarm
    /// // frees the pool.
    /// unsafe { dpdk_sys::rte_pktmbuf_free(queued) };
    /// # Ok(())
    /// # }
    /// ```
    pub fn shutdown(self, ports: &[u16], wait: Duration) -> Result<ShutdownOutcome, GlueError> {
        let this = ManuallyDrop::new(self);
        // SAFETY: a live ptr_ring pool we own and give up here: `this` is
        // never dropped, so the pool is freed only by the shutdown (at once
        // or by its deferred release). No `Mbuf` borrows it (we own it by
        // value), and quiescence is the documented contract above.
        unsafe { port::shutdown_ports(ports, this.mp.as_ptr(), wait) }
    }
}

impl Drop for MbufPool {
    fn drop(&mut self) {
        // SAFETY: we own the pool and no `Mbuf` borrows it any more; mbufs
        // turned into raw pointers are the application's (the handler
        // reports the ones that never came back).
        unsafe { sys::rte_mempool_free(self.mp.as_ptr()) };
    }
}

/// One mbuf of an [`MbufPool`], returned to its pool on drop; it cannot
/// outlive the pool.
pub struct Mbuf<'pool> {
    m: NonNull<sys::rte_mbuf>,
    _pool: PhantomData<&'pool MbufPool>,
}

// SAFETY: an mbuf may be freed from any thread.
unsafe impl Send for Mbuf<'_> {}

impl Mbuf<'_> {
    /// The raw mbuf.
    pub fn as_ptr(&self) -> *mut sys::rte_mbuf {
        self.m.as_ptr()
    }

    /// Gives up ownership without freeing: the mbuf no longer borrows its
    /// pool, and is the application's to free (`rte_pktmbuf_free`), e.g.
    /// after a [`shutdown`](MbufPool::shutdown) deferred the release.
    pub fn into_raw(self) -> *mut sys::rte_mbuf {
        let p = self.m.as_ptr();
        core::mem::forget(self);
        p
    }
}

impl Drop for Mbuf<'_> {
    fn drop(&mut self) {
        // SAFETY: we own the mbuf.
        unsafe { sys::rte_pktmbuf_free(self.m.as_ptr()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The safe constructor refuses each single-sided flag, alone or with
    /// others, before it reaches DPDK (no EAL runs in this test).
    #[test]
    fn create_with_flags_refuses_single_sided_pools() {
        for flags in [
            sys::RTE_MEMPOOL_F_SC_GET,
            sys::RTE_MEMPOOL_F_SP_PUT,
            SINGLE_SIDED,
            sys::RTE_MEMPOOL_F_SC_GET | sys::RTE_MEMPOOL_F_NO_IOVA_CONTIG,
        ] {
            let params = PoolParams {
                flags,
                ..PoolParams::new("single_sided", 63, 0, 2048)
            };
            let e = MbufPool::create_with_flags(&params).err();
            assert!(
                matches!(e, Some(GlueError::SingleSided { flags: f }) if f == flags),
                "flags {flags:#x}: {e:?}"
            );
            assert_eq!(e.map(|e| e.errno()), Some(-libc::EINVAL));
        }
    }
}
