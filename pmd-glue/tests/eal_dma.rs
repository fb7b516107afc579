//! DMA mapping the DPDK way, with EAL:
//!
//! * a pool on external memory (`rte_extmem_register`, 4 KB pages, IOVAs of
//!   our choosing) is mapped in whole, aligned pages, each page once per
//!   device however many chunk records touch it, with the page's IOVA from
//!   EAL's memseg; a second attach maps nothing; a second device gets its
//!   own mappings; detaching unmaps each page exactly once (a counting
//!   mapper checks every call);
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

use common::*;
use dpdk_sys as sys;
use mempool::DeviceId;
use rte_mempool_ptr_ring::api::MbufPool;
use rte_mempool_ptr_ring::port::{self, DevDma};
use rte_mempool_ptr_ring::{zone, GlueError};

const PAGE: usize = 4096;
const EXT_LEN: usize = 2 << 20;
/// IOVA of the first external page: deliberately not the VA.
const EXT_IOVA: u64 = 0x7_0000_0000;

#[derive(Default)]
struct Counting {
    /// (device, page va) -> (iova, len) of live mappings.
    live: BTreeMap<(u64, usize), (u64, usize)>,
    maps: usize,
    unmaps: usize,
}

impl DevDma for Counting {
    fn map(&mut self, device: DeviceId, va: usize, iova: u64, len: usize) -> Result<(), i32> {
        assert_eq!(va % PAGE, 0, "map of {va:#x}: not page aligned");
        assert_eq!(len, PAGE, "map of {va:#x}: not one page ({len})");
        let prev = self.live.insert((device.0, va), (iova, len));
        assert!(prev.is_none(), "page {va:#x} mapped twice for {device}");
        self.maps += 1;
        Ok(())
    }
    fn unmap(&mut self, device: DeviceId, va: usize, iova: u64, len: usize) -> Result<(), i32> {
        let m = self.live.remove(&(device.0, va));
        assert_eq!(
            m,
            Some((iova, len)),
            "unmap of {va:#x} for {device}: not what was mapped"
        );
        self.unmaps += 1;
        Ok(())
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

fn external_pool() -> (*mut sys::rte_mempool, *mut c_void) {
    let addr = map_anon(EXT_LEN);
    let mut iovas: Vec<u64> = (0..EXT_LEN / PAGE)
        .map(|i| EXT_IOVA + (i * PAGE) as u64)
        .collect();
    // SAFETY: our mapping, its page IOVAs.
    let rc = unsafe {
        sys::rte_extmem_register(addr, EXT_LEN, iovas.as_mut_ptr(), iovas.len() as u32, PAGE)
    };
    assert_eq!(rc, 0, "rte_extmem_register: {}", strerror(sys::errno()));
    let mp = empty_pool("dma_ext", 300);
    // Two chunks split inside a page: the records on either side share it.
    let split = 200 * 1024 + 1000;
    let mut n = 0;
    for (off, len) in [(0, split), (split, EXT_LEN - split)] {
        // SAFETY: registered memory, IOVA-contiguous as registered above.
        let r = unsafe {
            sys::rte_mempool_populate_iova(
                mp,
                addr.cast::<core::ffi::c_char>().add(off),
                EXT_IOVA + off as u64,
                len,
                None,
                core::ptr::null_mut(),
            )
        };
        assert!(r > 0, "populate on external memory: {r}");
        n += r;
    }
    assert_eq!(n, 300, "populate on external memory");
    (mp, addr)
}

fn external_memory() -> (*mut sys::rte_mempool, *mut c_void) {
    let (mp, addr) = external_pool();
    let pages = pages_of(mp);
    // SAFETY: a live pool.
    let chunks = unsafe { zone::attach(mp) }.expect("ours").core.chunks();
    let mut c = Counting::default();
    let (a, b) = (port::device_id("test_dev_a"), port::device_id("test_dev_b"));
    // SAFETY: a live ptr_ring pool.
    let r = unsafe { port::attach_device(mp, a, &mut c) }.expect("attach a");
    eprintln!(
        "test: external pool: {chunks} records over {} pages: attach {r:?}",
        pages.len()
    );
    assert_eq!(r.records, chunks);
    assert!(chunks >= 2, "records sharing a page");
    assert_eq!(r.eal_records, 0, "external memory is not EAL's");
    assert_eq!(r.pages_mapped, pages.len(), "each touched page once");
    assert_eq!(c.maps, pages.len());
    for (&(_, va), &(iova, _)) in &c.live {
        assert!(pages.contains(&va));
        assert_eq!(
            iova,
            EXT_IOVA + (va - addr as usize) as u64,
            "page {va:#x}: the IOVA registered for it"
        );
    }
    // SAFETY: as above.
    let again = unsafe { port::attach_device(mp, a, &mut c) }.expect("attach a again");
    assert_eq!(
        (again.records, again.pages_mapped, c.maps),
        (0, 0, pages.len())
    );
    // SAFETY: as above.
    let rb = unsafe { port::attach_device(mp, b, &mut c) }.expect("attach b");
    assert_eq!(
        rb.pages_mapped,
        pages.len(),
        "a second device maps for itself"
    );
    // SAFETY: as above.
    let d = unsafe { port::detach_device(mp, a, &mut c) }.expect("detach a");
    assert_eq!(d.pages_unmapped, pages.len(), "each page unmapped once");
    assert!(
        c.live.keys().all(|&(dev, _)| dev == b.0),
        "b's mappings stay"
    );
    // SAFETY: as above.
    let d2 = unsafe { port::detach_device(mp, a, &mut c) }.expect("detach a again");
    assert_eq!((d2.records, d2.pages_unmapped), (0, 0));
    // SAFETY: as above.
    unsafe { port::detach_device(mp, b, &mut c) }.expect("detach b");
    assert!(c.live.is_empty());
    assert_eq!(c.unmaps, c.maps);
    (mp, addr)
}

fn eal_memory() {
    let pool = MbufPool::create("dma_eal", 512, 0, 2048, -1).expect("pool");
    let chunks = pool.stats().expect("stats").chunks;
    let mut c = Counting::default();
    // SAFETY: a live ptr_ring pool.
    let r = unsafe { port::attach_device(pool.as_ptr(), port::device_id("test_dev_a"), &mut c) }
        .expect("attach");
    assert_eq!(
        (r.records, r.eal_records, r.pages_mapped, c.maps),
        (chunks, chunks, 0, 0),
        "EAL memory is mapped by EAL: recorded, never mapped again"
    );
}

fn unregistered_memory() {
    let mp = empty_pool("dma_anon", 64);
    // SAFETY: a live pool.
    assert!(unsafe { sys::rte_mempool_populate_anon(mp) } > 0);
    let mut c = Counting::default();
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
    assert_eq!(c.maps, 0);
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

#[test]
fn eal_dma() {
    let mut args = eal_args("eal_dma", "0");
    args.extend(["--vdev", "net_null0", "--vdev", "net_null1"].map(String::from));
    init_eal(&args);
    let (mp, addr) = external_memory();
    eal_memory();
    unregistered_memory();
    vdev(mp);
    replug(mp);
    // SAFETY: the pool, then its memory, each freed once.
    unsafe {
        sys::rte_mempool_free(mp);
        assert_eq!(sys::rte_extmem_unregister(addr, EXT_LEN), 0);
        libc::munmap(addr, EXT_LEN);
    }
    eprintln!("test: eal_dma OK");
}
