//! The DMA mappings that every process sees: per mapping domain (an IOMMU
//! container that devices share, or one device), the ranges mapped there and
//! how many chunk mappings use each, in one small memzone ([`ZONE`]) under an
//! owner-tracked lock ([`SharedLock`]): a process that dies holding it (inside
//! a mapping call, say) is taken over by the next user after about a
//! millisecond, never waited for forever.
//!
//! A range is mapped once per domain, however many devices of the domain
//! and chunk records use it, and unmapped, exactly as mapped, with its last
//! use. The table is shared, not per process, because the domain is: a
//! secondary process uses the primary's VFIO container, so a mapping made
//! by one process is visible to, and may be undone by, another. One zone
//! for all pools, not one per pool, because a container is too: two pools
//! whose chunks share a page (or use one container's entry limit) must see
//! each other's mappings.
//!
//! What a dead holder can leave is a state the table's operations accept:
//! a slot becomes used (its `refs` or `uses` turns from 0 to 1) by its last
//! store, after its other fields, so a half-written slot is still free. A
//! range is recorded only after its map call succeeded and unrecorded before
//! its unmap call, so a holder dead between the two leaves, at worst, a range
//! mapped in the domain that the table does not know of: a later map of those
//! pages fails (VFIO's `EEXIST`) and says so, and the mapping goes with the
//! container. A use counted for a map the holder did not finish keeps its
//! ranges mapped until the domain goes.

use core::sync::atomic::{compiler_fence, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use dpdk_sys as sys;
use mempool::owner::{SharedGuard, SharedLock};
use mempool::DeviceId;

/// The memzone of the table. Not `PR_<pool>`'s form: no pool's zone can
/// take the name.
pub const ZONE: &str = "PR-DMA";

/// Ranges the table holds, over all domains (DPDK's VFIO layer holds 256
/// user maps per container).
pub const MAX_RUNS: usize = 1024;

/// Devices with mappings, over all pools.
const MAX_DEVICES: usize = 128;

/// Set once the creator has initialised the table.
const READY: u64 = 0x7072_5f64_6d61_0001;

/// Where a device's DMA mappings live: what one mapping call makes visible
/// to other devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Domain {
    /// An IOMMU container shared by devices (0: DPDK's default VFIO
    /// container): a range mapped for one device is mapped for all of them,
    /// and mapping it again fails (`EEXIST`).
    Container(u32),
    /// The device alone.
    Device(DeviceId),
}

impl Domain {
    fn encode(self) -> (u32, u64) {
        match self {
            Domain::Container(c) => (1, u64::from(c)),
            Domain::Device(d) => (2, d.0),
        }
    }
    fn decode(kind: u32, key: u64) -> Domain {
        if kind == 1 {
            Domain::Container(key as u32)
        } else {
            Domain::Device(DeviceId(key))
        }
    }
}

/// One range mapped in a domain; free while `refs` is 0.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct RunSlot {
    /// Chunk mappings (device, record) that use the range.
    refs: u32,
    kind: u32,
    domain: u64,
    va: u64,
    iova: u64,
    len: u64,
    /// Page size of the memory, for the counts of pages.
    page_sz: u64,
}

/// The domain a device's mappings were made in, while it has any (so that
/// its unmaps find them even when the device can no longer be asked).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct DeviceSlot {
    /// Chunk mappings of the device; free while 0.
    uses: u32,
    kind: u32,
    device: u64,
    domain: u64,
}

/// The table's contents, written only under [`Table::lock`].
#[repr(C)]
struct Data {
    runs: [RunSlot; MAX_RUNS],
    devices: [DeviceSlot; MAX_DEVICES],
}

#[repr(C)]
struct Table {
    /// [`READY`] once `data` is initialised (Release store by the creator,
    /// Acquire load by every other user).
    ready: AtomicU64,
    /// Free while zero; the holder's owner id while held.
    lock: SharedLock,
    data: core::cell::UnsafeCell<Data>,
}

/// A range mapped in a domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// The domain.
    pub domain: Domain,
    /// First byte (page aligned).
    pub va: usize,
    /// Its IOVA.
    pub iova: u64,
    /// Bytes (whole pages).
    pub len: usize,
    /// Page size of the memory.
    pub page_sz: usize,
    /// Chunk mappings that use it.
    pub refs: u32,
}

impl Run {
    /// The first byte after the range.
    pub fn end(&self) -> usize {
        self.va + self.len
    }
}

/// The table, found (or, with `make`, made) once per process; `None` when
/// no process has made it (nothing was ever mapped).
fn table(make: bool) -> Result<Option<&'static Table>, i32> {
    static TABLE: OnceLock<usize> = OnceLock::new();
    if let Some(&t) = TABLE.get() {
        // SAFETY: a ready table in a memzone that is never freed.
        return Ok(Some(unsafe { &*(t as *const Table) }));
    }
    let Some(t) = find_or_make(make)? else {
        return Ok(None);
    };
    // SAFETY: as above; a racing thread found the same zone.
    let t = unsafe { &*(*TABLE.get_or_init(|| t as *const Table as usize) as *const Table) };
    Ok(Some(t))
}

fn find_or_make(make: bool) -> Result<Option<&'static Table>, i32> {
    let name = std::ffi::CString::new(ZONE).map_err(|_| -libc::EINVAL)?;
    // SAFETY: a valid name; a lookup only.
    let mut mz = unsafe { sys::rte_memzone_lookup(name.as_ptr()) };
    if mz.is_null() {
        if !make {
            return Ok(None);
        }
        mz = reserve(&name)?;
    }
    // SAFETY: the zone reserved for the table, by this process or another.
    let t = unsafe { &*(*mz).__bindgen_anon_1.addr.cast::<Table>() };
    let deadline = Instant::now() + Duration::from_secs(1);
    // Acquire pairs with the creator's Release store of `ready`.
    while t.ready.load(Ordering::Acquire) != READY {
        if Instant::now() > deadline {
            // Its creator died before it was ready.
            return Err(-libc::EAGAIN);
        }
        std::thread::yield_now();
    }
    Ok(Some(t))
}

/// Reserves the zone and initialises the table, or finds the zone that a
/// racing process reserved first.
fn reserve(name: &std::ffi::CStr) -> Result<*const sys::rte_memzone, i32> {
    let bytes = core::mem::size_of::<Table>();
    // SAFETY: a valid name; null with rte_errno set on failure.
    let mz = unsafe { sys::rte_memzone_reserve(name.as_ptr(), bytes, sys::SOCKET_ID_ANY, 0) };
    if mz.is_null() {
        let e = sys::errno();
        // SAFETY: as above.
        let mz = unsafe { sys::rte_memzone_lookup(name.as_ptr()) };
        return if mz.is_null() {
            Err(-(if e == 0 { libc::ENOMEM } else { e.abs() }))
        } else {
            Ok(mz)
        };
    }
    // SAFETY: a fresh zone of `bytes` bytes (cache-line aligned), ours
    // alone until `ready` is set.
    let t = unsafe {
        let t = (*mz).__bindgen_anon_1.addr.cast::<Table>();
        core::ptr::write_bytes(t.cast::<u8>(), 0, bytes);
        &*t
    };
    // Release pairs with the Acquire load in `find_or_make` in every other
    // user: the zeroed table is visible before `ready`.
    t.ready.store(READY, Ordering::Release);
    Ok(mz)
}

/// The table, locked: every process's mapping calls on a domain are
/// serialised here (control path; held across the mapping calls, which a
/// racing user must not overtake).
pub(super) struct Locked {
    table: &'static Table,
    _guard: SharedGuard<'static>,
}

/// The table lock's name in a takeover report.
const LOCK_NAME: &str = "DMA domain table lock";

/// The table, made first if no process has.
fn made_table() -> Result<&'static Table, i32> {
    table(true)?.ok_or(-libc::ENOMEM)
}

/// Locks the table (making it first if no process has).
pub(super) fn lock() -> Result<Locked, i32> {
    Ok(lock_table(made_table()?))
}

/// Locks the table if a process has made it: `None` means that nothing
/// was ever mapped.
pub(super) fn lock_if_made() -> Result<Option<Locked>, i32> {
    Ok(table(false)?.map(lock_table))
}

fn lock_table(table: &'static Table) -> Locked {
    // The lock's Acquire pairs with the previous holder's Release unlock
    // (in any process): its writes are visible while we hold it.
    Locked {
        table,
        _guard: table.lock.lock(LOCK_NAME),
    }
}

/// The table's lock (the table made if no process has), for tests that
/// emulate a holder, live or dead (`SharedLock::set_holder_for_tests`).
#[doc(hidden)]
pub fn dma_table_lock_for_tests() -> Result<&'static SharedLock, i32> {
    Ok(&made_table()?.lock)
}

impl Locked {
    fn data(&mut self) -> &mut Data {
        // SAFETY: the lock is held: no other thread or process reads or
        // writes `data` until it is dropped.
        unsafe { &mut *self.table.data.get() }
    }

    /// The domain `device`'s mappings are in, if it has any.
    pub(super) fn device_domain(&mut self, device: DeviceId) -> Option<Domain> {
        self.data()
            .devices
            .iter()
            .find(|s| s.uses > 0 && s.device == device.0)
            .map(|s| Domain::decode(s.kind, s.domain))
    }

    /// Counts one more chunk mapping of `device` in `domain` (the first
    /// records the domain).
    pub(super) fn add_device_use(&mut self, device: DeviceId, domain: Domain) -> Result<(), i32> {
        let (kind, key) = domain.encode();
        let d = self.data();
        if let Some(s) = d
            .devices
            .iter_mut()
            .find(|s| s.uses > 0 && s.device == device.0)
        {
            s.uses += 1;
            return Ok(());
        }
        let s = d
            .devices
            .iter_mut()
            .find(|s| s.uses == 0)
            .ok_or(-libc::ENOSPC)?;
        // The slot turns used by its last store (module documentation).
        *s = DeviceSlot {
            uses: 0,
            kind,
            device: device.0,
            domain: key,
        };
        compiler_fence(Ordering::Release);
        s.uses = 1;
        Ok(())
    }

    /// Counts one chunk mapping of `device` less.
    pub(super) fn drop_device_use(&mut self, device: DeviceId) {
        if let Some(s) = self
            .data()
            .devices
            .iter_mut()
            .find(|s| s.uses > 0 && s.device == device.0)
        {
            s.uses -= 1;
        }
    }

    fn run_of(s: &RunSlot) -> Run {
        Run {
            domain: Domain::decode(s.kind, s.domain),
            va: s.va as usize,
            iova: s.iova,
            len: s.len as usize,
            page_sz: s.page_sz as usize,
            refs: s.refs,
        }
    }

    fn matches(s: &RunSlot, domain: Domain) -> bool {
        s.refs > 0 && (s.kind, s.domain) == domain.encode()
    }

    /// The index of the range of `domain` that contains `va`.
    pub(super) fn covering(&mut self, domain: Domain, va: usize) -> Option<(usize, Run)> {
        self.data()
            .runs
            .iter()
            .enumerate()
            .filter(|(_, s)| Self::matches(s, domain))
            .map(|(i, s)| (i, Self::run_of(s)))
            .find(|(_, r)| r.va <= va && va < r.end())
    }

    /// Indices of the ranges of `domain` that overlap `[start, end)`.
    pub(super) fn overlapping(&mut self, domain: Domain, start: usize, end: usize) -> Vec<usize> {
        self.data()
            .runs
            .iter()
            .enumerate()
            .filter(|(_, s)| Self::matches(s, domain))
            .filter(|(_, s)| (s.va as usize) < end && start < (s.va + s.len) as usize)
            .map(|(i, _)| i)
            .collect()
    }

    /// Free range slots.
    pub(super) fn free_slots(&mut self) -> usize {
        self.data().runs.iter().filter(|s| s.refs == 0).count()
    }

    /// Records a range just mapped in `domain`, used once. The caller
    /// checked [`free_slots`](Self::free_slots) first.
    pub(super) fn insert(
        &mut self,
        domain: Domain,
        run: (usize, u64, usize),
        page_sz: usize,
    ) -> usize {
        let (va, iova, len) = run;
        let (kind, key) = domain.encode();
        let (i, s) = self
            .data()
            .runs
            .iter_mut()
            .enumerate()
            .find(|(_, s)| s.refs == 0)
            .expect("a free slot, checked by the caller");
        // The slot turns used by its last store (module documentation).
        *s = RunSlot {
            refs: 0,
            kind,
            domain: key,
            va: va as u64,
            iova,
            len: len as u64,
            page_sz: page_sz as u64,
        };
        compiler_fence(Ordering::Release);
        s.refs = 1;
        i
    }

    /// One more use of range `i`.
    pub(super) fn take(&mut self, i: usize) {
        self.data().runs[i].refs += 1;
    }

    /// One use of range `i` less; the range, freed from the table, when
    /// that was its last use (the caller unmaps it).
    pub(super) fn drop_ref(&mut self, i: usize) -> Option<Run> {
        let s = &mut self.data().runs[i];
        s.refs = s.refs.saturating_sub(1);
        (s.refs == 0).then(|| Self::run_of(s))
    }

    /// Every range mapped now.
    pub(super) fn runs(&mut self) -> Vec<Run> {
        self.data()
            .runs
            .iter()
            .filter(|s| s.refs > 0)
            .map(Self::run_of)
            .collect()
    }
}

/// Every range mapped now, in any process (tests and telemetry).
pub fn mapped_runs() -> Vec<Run> {
    match lock_if_made() {
        Ok(Some(mut t)) => t.runs(),
        _ => Vec::new(),
    }
}
