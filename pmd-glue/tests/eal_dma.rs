//! DMA mapping the DPDK way, with EAL, against a model of DPDK's VFIO rules
//! (`VfioModel`: shared containers, a small entry limit, `EEXIST` for an
//! overlapping map, unmap of exactly a mapped range):
//!
//! * a pool on external memory (`rte_extmem_register`, 4 KB pages, IOVAs of
//!   our choosing) is mapped in whole, aligned, contiguous runs (a few
//!   entries for 155 pages, within the limit), each page once per
//!   container however many chunk records touch it, with the page's IOVA
//!   from EAL's memseg; a second attach maps nothing; a device of another
//!   container gets its own mappings; detaching unmaps each range exactly
//!   once;
//! * two devices of one container: the second maps nothing, and the ranges
//!   stay mapped until the last of them is detached;
//! * `rte_mempool_free` of a pool with devices attached unmaps everything
//!   once; a chunk populated after an attach is mapped for the device;
//! * across processes (a primary and a secondary child, with hugepages):
//!   the secondary's device of the primary's container maps nothing and
//!   keeps the ranges mapped after the primary's device goes;
//! * a pool in EAL memory (memzones) is recorded as mapped by EAL: no call;
//! * a pool on unregistered memory (`rte_mempool_populate_anon`) is refused
//!   with an error that names `rte_extmem_register`;
//! * the real `rte_dev_dma_map` on a `net_null` vdev (the vdev bus returns
//!   0 without mapping anything): handled, and the mappings are removed
//!   when the port is closed (its device goes away);
//! * a device unplugged and plugged again under the same name (the vdev
//!   recreated as `net_null0`) is a new `rte_device`: the record of the old
//!   one is gone with its last port and never handed to `rte_dev_dma_map`.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{c_void, CString};
use std::sync::{Arc, Mutex};

use common::*;
use dpdk_sys as sys;
use mempool::DeviceId;
use rte_mempool_ptr_ring::api::MbufPool;
use rte_mempool_ptr_ring::port::{self, DevDma, Domain};
use rte_mempool_ptr_ring::{zone, GlueError};

const PAGE: usize = 4096;
const EXT_LEN: usize = 2 << 20;
/// IOVA of the first external page: deliberately not the VA.
const EXT_IOVA: u64 = 0x7_0000_0000;

/// Map entries a model container holds (DPDK's VFIO layer keeps 256 user
/// maps, `VFIO_MAX_USER_MEM_MAPS`; a small limit shows a per-page mapper).
const ENTRY_LIMIT: usize = 8;

/// One container's mappings: va -> (iova, len).
#[derive(Default)]
struct Container {
    maps: BTreeMap<usize, (u64, usize)>,
}

/// DPDK's VFIO rules, as `rte_vfio_container_dma_map` / `_unmap` apply them
/// to a container: devices of one container share its mappings (a range
/// mapped for one is mapped for all, an unmap for one unmaps for all); a
/// map that overlaps a mapped range fails with `-EEXIST`; a container holds
/// at most [`ENTRY_LIMIT`] entries (`-ENOMEM` past it); an unmap must name
/// exactly one mapped range (`-EINVAL` otherwise). Devices not put in a
/// shared container each have their own. Rule breaks are recorded, not
/// panicked on (the calls come through `extern "C"` callbacks too).
#[derive(Default)]
struct VfioModel {
    /// Devices of a shared container, by container number.
    shared: BTreeMap<u64, u32>,
    containers: BTreeMap<u64, Container>,
    maps: usize,
    unmaps: usize,
    errors: Vec<String>,
}

impl VfioModel {
    /// The container `device` maps into: its shared one, or its own.
    fn key(&self, device: DeviceId) -> u64 {
        self.shared
            .get(&device.0)
            .map_or(device.0, |&c| u64::from(c) | 1 << 63)
    }
    fn entries(&self) -> usize {
        self.containers.values().map(|c| c.maps.len()).sum()
    }
    /// Pages covered by live entries of `device`'s container, each counted
    /// once per entry covering it.
    fn pages(&self, device: DeviceId) -> Vec<usize> {
        let mut v = Vec::new();
        if let Some(c) = self.containers.get(&self.key(device)) {
            for (&va, &(_, len)) in &c.maps {
                v.extend((va..va + len).step_by(PAGE));
            }
        }
        v
    }
}

impl DevDma for VfioModel {
    fn map(&mut self, device: DeviceId, va: usize, iova: u64, len: usize) -> Result<(), i32> {
        let key = self.key(device);
        let c = self.containers.entry(key).or_default();
        if !va.is_multiple_of(PAGE) || !len.is_multiple_of(PAGE) || len == 0 {
            self.errors
                .push(format!("map {va:#x}+{len:#x}: not whole pages"));
            return Err(-libc::EINVAL);
        }
        let overlaps = c
            .maps
            .range(..va + len)
            .next_back()
            .is_some_and(|(&v, &(_, l))| v + l > va);
        if overlaps {
            self.errors
                .push(format!("map {va:#x}+{len:#x} for {device}: EEXIST"));
            return Err(-libc::EEXIST);
        }
        if c.maps.len() >= ENTRY_LIMIT {
            self.errors
                .push(format!("map {va:#x}+{len:#x} for {device}: entry limit"));
            return Err(-libc::ENOMEM);
        }
        c.maps.insert(va, (iova, len));
        self.maps += 1;
        Ok(())
    }
    fn unmap(&mut self, device: DeviceId, va: usize, iova: u64, len: usize) -> Result<(), i32> {
        let key = self.key(device);
        let c = self.containers.entry(key).or_default();
        if c.maps.get(&va) != Some(&(iova, len)) {
            self.errors.push(format!(
                "unmap {va:#x}+{len:#x} for {device}: not a mapped range"
            ));
            return Err(-libc::EINVAL);
        }
        c.maps.remove(&va);
        self.unmaps += 1;
        Ok(())
    }
}

/// A [`VfioModel`] that the test and `RteDevDma` (through the override,
/// for the calls that populate and `ops->free` make) both reach.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<VfioModel>>);

impl Shared {
    fn with<R>(&self, f: impl FnOnce(&mut VfioModel) -> R) -> R {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
    /// Checks no rule was broken and every mapping made was undone once.
    fn assert_clean(&self, what: &str) {
        self.with(|m| {
            assert!(
                m.errors.is_empty(),
                "{what}: VFIO rules broken: {:?}",
                m.errors
            );
            assert_eq!(m.entries(), 0, "{what}: mappings left");
            assert_eq!(m.unmaps, m.maps, "{what}: unmaps against maps");
        });
    }
}

impl DevDma for Shared {
    fn map(&mut self, device: DeviceId, va: usize, iova: u64, len: usize) -> Result<(), i32> {
        self.with(|m| m.map(device, va, iova, len))
    }
    fn unmap(&mut self, device: DeviceId, va: usize, iova: u64, len: usize) -> Result<(), i32> {
        self.with(|m| m.unmap(device, va, iova, len))
    }
    fn domain(&mut self, device: DeviceId) -> Domain {
        self.with(|m| {
            m.shared
                .get(&device.0)
                .map_or(Domain::Device(device), |&c| Domain::Container(c))
        })
    }
}

fn empty_pool(name: &str, n: u32) -> *mut sys::rte_mempool {
    let c = CString::new(name).expect("name");
    // SAFETY: valid name; null on failure.
    let mp = unsafe { sys::rte_mempool_create_empty(c.as_ptr(), n, 2048, 0, 0, -1, 0) };
    assert!(!mp.is_null(), "{name}: create_empty");
    // SAFETY: a live empty pool; our ops name.
    let rc =
        unsafe { sys::rte_mempool_set_ops_byname(mp, c"ptr_ring".as_ptr(), core::ptr::null_mut()) };
    assert_eq!(rc, 0);
    mp
}

/// Pages (start addresses) the pool's chunk records touch.
fn pages_of(mp: *mut sys::rte_mempool) -> BTreeSet<usize> {
    // SAFETY: a live ptr_ring pool.
    let z = unsafe { zone::attach(mp) }.expect("ours");
    let mut pages = BTreeSet::new();
    for i in 0..z.core.chunks() {
        let c = z.core.chunk(mempool::ChunkId(i as u32)).expect("record");
        let mut p = c.va.start.0 / PAGE * PAGE;
        while p < c.va.end() {
            pages.insert(p);
            p += PAGE;
        }
    }
    pages
}

/// An area of `EXT_LEN` registered with `rte_extmem_register`, its pages
/// IOVA-contiguous from `iova`.
fn ext_area(iova: u64) -> *mut c_void {
    let addr = map_anon(EXT_LEN);
    let mut iovas: Vec<u64> = (0..EXT_LEN / PAGE)
        .map(|i| iova + (i * PAGE) as u64)
        .collect();
    // SAFETY: our mapping, its page IOVAs.
    let rc = unsafe {
        sys::rte_extmem_register(addr, EXT_LEN, iovas.as_mut_ptr(), iovas.len() as u32, PAGE)
    };
    assert_eq!(rc, 0, "rte_extmem_register: {}", strerror(sys::errno()));
    addr
}

/// Populates `mp` with `[off, off + len)` of the area at `addr` (IOVA base
/// `iova`); returns the objects laid out.
fn populate_ext(
    mp: *mut sys::rte_mempool,
    addr: *mut c_void,
    iova: u64,
    off: usize,
    len: usize,
) -> i32 {
    // SAFETY: registered memory, IOVA-contiguous as registered.
    let r = unsafe {
        sys::rte_mempool_populate_iova(
            mp,
            addr.cast::<core::ffi::c_char>().add(off),
            iova + off as u64,
            len,
            None,
            core::ptr::null_mut(),
        )
    };
    assert!(r > 0, "populate on external memory: {r}");
    r
}

/// An empty pool `name` of 300 objects and the `k`th area of external
/// memory for it (with its IOVA base).
fn ext_empty_pool(name: &str, k: u64) -> (*mut sys::rte_mempool, *mut c_void, u64) {
    let iova = EXT_IOVA + k * 0x1000_0000;
    (empty_pool(name, 300), ext_area(iova), iova)
}

/// Frees `mp`, then unregisters and unmaps its area.
fn free_ext(mp: *mut sys::rte_mempool, addr: *mut c_void) {
    // SAFETY: the pool, then its memory, each freed once.
    unsafe {
        sys::rte_mempool_free(mp);
        assert_eq!(sys::rte_extmem_unregister(addr, EXT_LEN), 0);
        libc::munmap(addr, EXT_LEN);
    }
}

fn external_pool() -> (*mut sys::rte_mempool, *mut c_void) {
    let addr = ext_area(EXT_IOVA);
    let mp = empty_pool("dma_ext", 300);
    // Two chunks split inside a page: the records on either side share it.
    let split = 200 * 1024 + 1000;
    let n: i32 = [(0, split), (split, EXT_LEN - split)]
        .iter()
        .map(|&(off, len)| populate_ext(mp, addr, EXT_IOVA, off, len))
        .sum();
    assert_eq!(n, 300, "populate on external memory");
    (mp, addr)
}

/// Two devices with a container each: every touched page mapped once per
/// container, in whole contiguous runs (a few entries, not one per page),
/// at the IOVA registered for it; a second attach maps nothing; detaching
/// one device leaves the other's mappings and unmaps exactly its ranges.
fn external_memory() -> (*mut sys::rte_mempool, *mut c_void) {
    let (mp, addr) = external_pool();
    let pages = pages_of(mp);
    // SAFETY: a live pool.
    let chunks = unsafe { zone::attach(mp) }.expect("ours").core.chunks();
    let vfio = Shared::default();
    let mut c = vfio.clone();
    let (a, b) = (port::device_id("test_dev_a"), port::device_id("test_dev_b"));
    // SAFETY: a live ptr_ring pool.
    let r = unsafe { port::attach_device(mp, a, &mut c) };
    let entries = vfio.with(|m| m.entries());
    eprintln!(
        "test: external pool: {chunks} records over {} pages: attach {r:?}, {entries} entries",
        pages.len()
    );
    let r = r.expect("attach a within the container's entry limit");
    assert_eq!(r.records, chunks);
    assert!(chunks >= 2, "records sharing a page");
    assert_eq!(r.eal_records, 0, "external memory is not EAL's");
    assert_eq!(r.pages_mapped, pages.len(), "each touched page once");
    assert!(
        entries <= chunks,
        "one entry per contiguous run, {entries} for {chunks} records"
    );
    vfio.with(|m| {
        let covered = m.pages(a);
        assert_eq!(
            covered.iter().copied().collect::<BTreeSet<_>>(),
            pages,
            "exactly the touched pages"
        );
        assert_eq!(covered.len(), pages.len(), "no page in two entries");
        for cont in m.containers.values() {
            for (&va, &(iova, _)) in &cont.maps {
                assert_eq!(
                    iova,
                    EXT_IOVA + (va - addr as usize) as u64,
                    "run at {va:#x}: the IOVA registered for it"
                );
            }
        }
    });
    // SAFETY: as above.
    let again = unsafe { port::attach_device(mp, a, &mut c) }.expect("attach a again");
    assert_eq!((again.records, again.pages_mapped), (0, 0));
    assert_eq!(vfio.with(|m| m.entries()), entries);
    // SAFETY: as above.
    let rb = unsafe { port::attach_device(mp, b, &mut c) }.expect("attach b");
    assert_eq!(
        rb.pages_mapped,
        pages.len(),
        "a second container maps for itself"
    );
    // SAFETY: as above.
    let d = unsafe { port::detach_device(mp, a, &mut c) }.expect("detach a");
    assert_eq!(d.pages_unmapped, pages.len(), "each page unmapped once");
    vfio.with(|m| {
        assert!(m.pages(a).is_empty(), "a's container is empty");
        assert_eq!(m.pages(b).len(), pages.len(), "b's mappings stay");
    });
    // SAFETY: as above.
    let d2 = unsafe { port::detach_device(mp, a, &mut c) }.expect("detach a again");
    assert_eq!((d2.records, d2.pages_unmapped), (0, 0));
    // SAFETY: as above.
    unsafe { port::detach_device(mp, b, &mut c) }.expect("detach b");
    vfio.assert_clean("two containers");
    (mp, addr)
}

/// Two devices of one container (DPDK's default VFIO container): the
/// second attach maps nothing (VFIO would say EEXIST) and the ranges stay
/// mapped until the last of them goes.
fn shared_container(mp: *mut sys::rte_mempool) {
    let pages = pages_of(mp).len();
    let vfio = Shared::default();
    let (a, b) = (
        port::device_id("test_vfio_a"),
        port::device_id("test_vfio_b"),
    );
    vfio.with(|m| {
        m.shared.insert(a.0, 0);
        m.shared.insert(b.0, 0);
    });
    let mut c = vfio.clone();
    // SAFETY: a live ptr_ring pool.
    unsafe { port::attach_device(mp, a, &mut c) }.expect("attach a");
    let (entries, maps) = vfio.with(|m| (m.entries(), m.maps));
    // SAFETY: as above.
    let rb = unsafe { port::attach_device(mp, b, &mut c) };
    eprintln!("test: second device of one container: {rb:?}");
    let rb = rb.expect("attach b: the container's mappings serve it");
    assert_eq!(rb.pages_mapped, 0, "nothing mapped again");
    assert_eq!(vfio.with(|m| (m.entries(), m.maps)), (entries, maps));
    // SAFETY: as above.
    let d = unsafe { port::detach_device(mp, a, &mut c) }.expect("detach a");
    assert_eq!(d.pages_unmapped, 0, "b still uses the ranges");
    assert_eq!(vfio.with(|m| m.pages(b).len()), pages, "still mapped for b");
    // SAFETY: as above.
    let d = unsafe { port::detach_device(mp, b, &mut c) }.expect("detach b");
    assert_eq!(d.pages_unmapped, pages, "unmapped with the last device");
    vfio.assert_clean("one container");
    eprintln!("test: one container, two devices: mapped once, unmapped once");
}

/// A pool freed with plain `rte_mempool_free` while devices are attached
/// (no shutdown): `ops->free` unmaps every range once.
fn free_while_attached() {
    let (mp, addr, iova) = ext_empty_pool("dma_free", 1);
    populate_ext(mp, addr, iova, 0, EXT_LEN);
    let vfio = Shared::default();
    let (a, b) = (
        port::device_id("test_free_a"),
        port::device_id("test_free_b"),
    );
    vfio.with(|m| m.shared.insert(a.0, 0));
    let mut c = vfio.clone();
    for d in [a, b] {
        // SAFETY: a live ptr_ring pool.
        unsafe { port::attach_device(mp, d, &mut c) }.expect("attach");
    }
    assert!(vfio.with(|m| m.entries()) > 0);
    port::set_dev_dma_override(Some(Box::new(vfio.clone())));
    free_ext(mp, addr);
    port::set_dev_dma_override(None);
    vfio.assert_clean("rte_mempool_free while attached");
    eprintln!("test: rte_mempool_free of an attached pool unmapped everything once");
}

/// A chunk populated after a device attached is mapped for it by
/// `ops->populate`, and unmapped with the rest.
fn populate_after_attach() {
    let (mp, addr, iova) = ext_empty_pool("dma_late", 2);
    // The first chunk holds part of the objects, the second the rest.
    let first = 256 << 10;
    populate_ext(mp, addr, iova, 0, first);
    let vfio = Shared::default();
    let a = port::device_id("test_late_a");
    let mut c = vfio.clone();
    // SAFETY: a live ptr_ring pool.
    unsafe { port::attach_device(mp, a, &mut c) }.expect("attach");
    port::set_dev_dma_override(Some(Box::new(vfio.clone())));
    populate_ext(mp, addr, iova, first, EXT_LEN - first);
    // SAFETY: a live ptr_ring pool.
    let z = unsafe { zone::attach(mp) }.expect("ours");
    let stats = z.core.device_stats(a).expect("attached");
    assert_eq!(
        stats.mapped as usize,
        z.core.chunks(),
        "the chunk populated after the attach is mapped for the device"
    );
    let pages = pages_of(mp);
    assert_eq!(
        vfio.with(|m| m.pages(a).into_iter().collect::<BTreeSet<_>>()),
        pages,
        "every page of both chunks"
    );
    free_ext(mp, addr);
    port::set_dev_dma_override(None);
    vfio.assert_clean("populated after attach, then freed");
    eprintln!("test: a chunk populated after the attach was mapped for the device");
}

fn eal_memory() {
    let pool = MbufPool::create("dma_eal", 512, 0, 2048, -1).expect("pool");
    let chunks = pool.stats().expect("stats").chunks;
    let vfio = Shared::default();
    let mut c = vfio.clone();
    // SAFETY: a live ptr_ring pool.
    let r = unsafe { port::attach_device(pool.as_ptr(), port::device_id("test_dev_a"), &mut c) }
        .expect("attach");
    assert_eq!(
        (
            r.records,
            r.eal_records,
            r.pages_mapped,
            vfio.with(|m| m.maps)
        ),
        (chunks, chunks, 0, 0),
        "EAL memory is mapped by EAL: recorded, never mapped again"
    );
}

fn unregistered_memory() {
    let mp = empty_pool("dma_anon", 64);
    // SAFETY: a live pool.
    assert!(unsafe { sys::rte_mempool_populate_anon(mp) } > 0);
    let vfio = Shared::default();
    let mut c = vfio.clone();
    // SAFETY: a live ptr_ring pool.
    let (r, log) =
        capture_log(|| unsafe { port::attach_device(mp, port::device_id("test_dev_a"), &mut c) });
    match r {
        Err(e @ GlueError::NotDmaMemory { .. }) => {
            assert!(e.to_string().contains("rte_extmem_register"), "{e}");
            assert_eq!(e.errno(), -libc::EINVAL);
        }
        other => panic!("anonymous memory must be refused: {other:?}\n{log}"),
    }
    assert_eq!(vfio.with(|m| m.maps), 0);
    // SAFETY: a live pool, freed once.
    unsafe { sys::rte_mempool_free(mp) };
}

fn vdev(mp: *mut sys::rte_mempool) {
    let pages = pages_of(mp).len();
    // SAFETY: a live ptr_ring pool; port 0 is net_null0.
    let a = unsafe { port::attach_port(mp, 0) }.expect("attach_port on a vdev");
    eprintln!("test: real rte_dev_dma_map on net_null0: {a:?}");
    assert!(
        a.unsupported || a.pages_mapped == pages,
        "vdev: 0 (nothing to map) or -ENOTSUP handled: {a:?}"
    );
    let dev = port::device_id("net_null0");
    // SAFETY: a live ptr_ring pool.
    let z = unsafe { zone::attach(mp) }.expect("ours");
    if !a.unsupported {
        assert_eq!(
            z.core.device_stats(dev).map(|s| s.state),
            Some(mempool::DeviceState::Attached)
        );
    }
    // Closing the port releases it (RTE_ETH_EVENT_DESTROY): its device's
    // mappings are removed once.
    // SAFETY: a probed, unstarted port.
    let ((), log) = capture_log(|| unsafe {
        assert_eq!(sys::rte_eth_dev_close(0), 0);
    });
    if !a.unsupported {
        let s = z.core.device_stats(dev).expect("device known");
        assert_eq!(s.state, mempool::DeviceState::Removed, "{log}");
        assert!(
            log.contains(&format!("{pages} pages unmapped")),
            "each page unmapped once at release: {log}"
        );
    }
}

fn replug(mp: *mut sys::rte_mempool) {
    // Port 0 was closed by `vdev`: its device's record went with it.
    assert_eq!(
        port::recorded_device("net_null0"),
        None,
        "the record of a device whose last port went is kept"
    );
    // SAFETY: a vdev of this process, its port closed.
    assert_eq!(unsafe { sys::rte_vdev_uninit(c"net_null0".as_ptr()) }, 0);
    // SAFETY: valid name and (empty) arguments.
    let r = unsafe { sys::rte_vdev_init(c"net_null0".as_ptr(), c"".as_ptr()) };
    assert_eq!(r, 0, "net_null0 plugged again");
    let mut port: u16 = u16::MAX;
    // SAFETY: valid name and out pointer.
    let r = unsafe { sys::rte_eth_dev_get_port_by_name(c"net_null0".as_ptr(), &mut port) };
    assert_eq!(r, 0, "the new net_null0 has a port");
    // SAFETY: all-zero is a valid rte_eth_dev_info to be filled.
    let mut info: sys::rte_eth_dev_info = unsafe { core::mem::zeroed() };
    // SAFETY: a valid port, a valid out pointer.
    assert_eq!(unsafe { sys::rte_eth_dev_info_get(port, &mut info) }, 0);
    // SAFETY: a live ptr_ring pool; a probed port.
    unsafe { port::attach_port(mp, port) }.expect("attach the plugged-again device");
    assert_eq!(
        port::recorded_device("net_null0"),
        Some(info.device),
        "the record names the new rte_device"
    );
    // SAFETY: a probed, unstarted port.
    assert_eq!(unsafe { sys::rte_eth_dev_close(port) }, 0);
    assert_eq!(port::recorded_device("net_null0"), None);
    eprintln!("test: a device plugged again is recorded afresh");
}

/// Selects a process of [`across_processes`]: `primary` or `secondary`.
const ROLE_ENV: &str = "EAL_DMA_ROLE";
/// Their EAL file prefix.
const PREFIX_ENV: &str = "EAL_DMA_PREFIX";
/// Their pool.
const SHARED_POOL: &str = "dma_mp";

/// Devices `test_mp_a` (used by the primary) and `test_mp_b` (by the
/// secondary), both in container 0 of a fresh model.
fn mp_devices() -> (Shared, DeviceId, DeviceId) {
    let vfio = Shared::default();
    let (a, b) = (port::device_id("test_mp_a"), port::device_id("test_mp_b"));
    vfio.with(|m| {
        m.shared.insert(a.0, 0);
        m.shared.insert(b.0, 0);
    });
    (vfio, a, b)
}

/// The primary process: maps a pool for `a`, lets a secondary attach `b`
/// of the same container, and checks that the secondary's use keeps the
/// ranges mapped when `a` goes, and that they go, exactly once, with `b`.
fn mp_primary() {
    let prefix = std::env::var(PREFIX_ENV).expect("prefix");
    init_eal(&role_args("dma_primary", "primary", &prefix));
    let (mp, addr, iova) = ext_empty_pool(SHARED_POOL, 3);
    populate_ext(mp, addr, iova, 0, EXT_LEN);
    let pages = pages_of(mp).len();
    let (vfio, a, b) = mp_devices();
    let mut c = vfio.clone();
    // SAFETY: a live ptr_ring pool.
    unsafe { port::attach_device(mp, a, &mut c) }.expect("attach a");
    let entries = vfio.with(|m| m.entries());
    let mut child = rerun_self(
        test_name_of(&dma_mappings_follow_devices_and_chunks),
        &[(ROLE_ENV, "secondary"), (PREFIX_ENV, prefix.as_str())],
        false,
    );
    let st = wait_timeout(&mut child, 60, "secondary");
    assert!(st.success(), "secondary failed: {st}");
    let runs = port::mapped_runs();
    assert!(
        runs.iter()
            .all(|r| r.refs == 2 && r.domain == Domain::Container(0)),
        "the secondary's use of b is counted where this process sees it: {runs:?}"
    );
    // SAFETY: as above.
    let d = unsafe { port::detach_device(mp, a, &mut c) }.expect("detach a");
    assert_eq!(
        d.pages_unmapped, 0,
        "b, attached by the secondary, still uses them"
    );
    assert_eq!(vfio.with(|m| m.entries()), entries, "still mapped for b");
    // SAFETY: as above.
    let d = unsafe { port::detach_device(mp, b, &mut c) }.expect("detach b");
    assert_eq!(d.pages_unmapped, pages, "unmapped with b, once");
    vfio.assert_clean("across processes");
    free_ext(mp, addr);
    assert_eq!(port::mapped_runs(), vec![]);
    eprintln!("test: primary: the secondary's mapping kept the ranges until b went");
}

/// The secondary process: attaches `b`, of the primary's container, to
/// the primary's pool: the ranges the primary mapped serve it, no call.
fn mp_secondary() {
    let prefix = std::env::var(PREFIX_ENV).expect("prefix");
    init_eal(&role_args("dma_secondary", "secondary", &prefix));
    let name = CString::new(SHARED_POOL).expect("name");
    // SAFETY: a valid name.
    let mp = unsafe { sys::rte_mempool_lookup(name.as_ptr()) };
    assert!(!mp.is_null(), "the primary's pool");
    let before = port::mapped_runs();
    assert!(!before.is_empty(), "the primary's ranges, seen from here");
    let (vfio, _, b) = mp_devices();
    let mut c = vfio.clone();
    // SAFETY: a live ptr_ring pool.
    let r = unsafe { port::attach_device(mp, b, &mut c) }.expect("attach b");
    assert_eq!(
        (r.pages_mapped, r.entries_mapped, vfio.with(|m| m.maps)),
        (0, 0, 0),
        "nothing mapped again (VFIO would say EEXIST): {r:?}"
    );
    assert!(port::mapped_runs().iter().all(|r| r.refs == 2));
    eprintln!(
        "test: secondary: b uses the primary's {} ranges",
        before.len()
    );
}

/// Refcounts every process sees: a secondary's device of the primary's
/// container uses the primary's ranges, and keeps them mapped.
fn across_processes() {
    if skip_without_hugepages("eal_dma/across_processes") {
        return;
    }
    run_primary_child(
        test_name_of(&dma_mappings_follow_devices_and_chunks),
        ROLE_ENV,
        PREFIX_ENV,
        "ptrring_dma",
        120,
    );
    eprintln!("test: DMA refcounts shared across processes");
}

#[test]
fn dma_mappings_follow_devices_and_chunks() {
    match std::env::var(ROLE_ENV).as_deref() {
        Ok("primary") => return mp_primary(),
        Ok("secondary") => return mp_secondary(),
        _ => {}
    }
    let mut args = eal_args("eal_dma", "0");
    args.extend(["--vdev", "net_null0", "--vdev", "net_null1"].map(String::from));
    init_eal(&args);
    let (mp, addr) = external_memory();
    shared_container(mp);
    free_while_attached();
    populate_after_attach();
    eal_memory();
    unregistered_memory();
    vdev(mp);
    replug(mp);
    free_ext(mp, addr);
    assert_eq!(port::mapped_runs(), vec![], "every range unmapped");
    across_processes();
    eprintln!("test: eal_dma OK");
}
