//! Populate wherever DPDK's own `ring_mp_mc` does, with IOVA as physical
//! addresses (`--iova-mode=pa`): anonymous memory (`rte_mempool_populate_anon`)
//! then comes in about one IOVA-contiguous chunk per 4 KB page, so a pool of
//! 4095 objects of 2 KB needs thousands of IOVA-table records. The handler
//! must populate every object, as `ring_mp_mc` does, and record exactly the
//! objects DPDK laid out. The worst case is made, not hoped for: with freshly
//! freed memory the kernel often hands out physically contiguous runs (a
//! hundred chunks instead of thousands), so the test first leaves thousands
//! of single, non-adjacent free pages for the pools to fault in
//! ([`Fragmenter`]), and both pools stay allocated until both are checked.
//!
//! Needs physical addresses (root, `/proc/self/pagemap`): when EAL cannot
//! give IOVA-as-PA the test says `test: SKIP eal_populate: ...` (`skip`).

mod common;

use std::ffi::CString;

use common::*;
use dpdk_sys as sys;
use rte_mempool_ptr_ring::{api, zone};

const OBJECTS: u32 = 4095;
const ELT: u32 = 2048;

/// Pages this test holds, every other one of a region it faulted in: the
/// pages in between were handed back one by one and cannot merge with their
/// neighbours, so the next page faults (the pools' anonymous memory) get
/// single pages that are not physically adjacent, whatever the machine's
/// free memory looked like before.
struct Fragmenter {
    base: *mut libc::c_void,
    len: usize,
}

impl Fragmenter {
    fn new(pages: usize) -> Fragmenter {
        // SAFETY: a plain query.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let len = pages * page;
        let base = map_anon(len);
        for i in 0..pages {
            // SAFETY: inside the mapping; faults the page in.
            unsafe { base.cast::<u8>().add(i * page).write_volatile(1) };
        }
        for i in (1..pages).step_by(2) {
            // SAFETY: one page inside the mapping, which only this test uses.
            let rc = unsafe {
                libc::madvise(
                    base.cast::<u8>().add(i * page).cast(),
                    page,
                    libc::MADV_DONTNEED,
                )
            };
            assert_eq!(rc, 0, "madvise(MADV_DONTNEED)");
        }
        Fragmenter { base, len }
    }
}

impl Drop for Fragmenter {
    fn drop(&mut self) {
        // SAFETY: the mapping made in new, unmapped once.
        unsafe { libc::munmap(self.base, self.len) };
    }
}

/// Populates a pool of `ops` with anonymous memory; returns (objects
/// populated, memory chunks, the pool). The caller frees the pool, after
/// the other handler's has been populated: memory freed and faulted in again
/// at once tends to come back physically contiguous, which would spare the
/// second pool the worst case.
fn populate_anon(name: &str, ops: &str) -> (i32, usize, *mut sys::rte_mempool) {
    let cname = CString::new(name).expect("name");
    let cops = CString::new(ops).expect("ops");
    // SAFETY: valid strings; null on failure.
    let mp = unsafe { sys::rte_mempool_create_empty(cname.as_ptr(), OBJECTS, ELT, 0, 0, -1, 0) };
    assert!(!mp.is_null(), "{name}: create_empty");
    // SAFETY: a live empty pool, a registered ops name.
    let rc = unsafe { sys::rte_mempool_set_ops_byname(mp, cops.as_ptr(), core::ptr::null_mut()) };
    assert_eq!(rc, 0, "{name}: set_ops_byname({ops})");
    // SAFETY: a live pool; DPDK maps anonymous memory and populates it.
    let n = unsafe { sys::rte_mempool_populate_anon(mp) };
    // SAFETY: a live pool.
    let (populated, chunks) = unsafe { ((*mp).populated_size, (*mp).nb_mem_chunks) };
    let records = if ops == "ptr_ring" && n > 0 {
        // SAFETY: a live ptr_ring pool.
        let z = unsafe { zone::attach(mp) }.expect("our pool");
        let s = z.core.stats();
        assert_eq!(
            s.populated, populated as usize,
            "{name}: the IOVA table records exactly the objects DPDK laid out"
        );
        s.chunks
    } else {
        0
    };
    eprintln!(
        "test: [{name}] {ops}: populate_anon -> {n} ({populated} objects in {chunks} chunks, \
         {records} IOVA records), rte_errno {}",
        sys::errno()
    );
    (n, chunks as usize, mp)
}

#[test]
fn populates_wherever_ring_mp_mc_does_with_iova_as_pa() {
    // Transparent huge pages would make anonymous memory physically
    // contiguous by 2 MB (a few chunks): the worst case needs 4 KB pages.
    // SAFETY: a plain process attribute.
    unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    let mut args = eal_args("eal_populate", "0");
    args.push("--iova-mode=pa".into());
    let idx = api::ensure_registered().expect("ptr_ring ops registered in-process");
    eprintln!("test: ptr_ring ops at index {idx}; EAL args {args:?}");
    if let Err(e) = api::eal_init(&args) {
        skip(
            "eal_populate",
            &format!("EAL cannot run with --iova-mode=pa here: {e}"),
        );
        return;
    }
    // SAFETY: plain query after init.
    if unsafe { sys::rte_eal_iova_mode() } != sys::RTE_IOVA_PA {
        skip("eal_populate", "EAL did not select IOVA as PA");
        return;
    }
    // 8192 single free pages, twice what the two pools fault in.
    let fragmenter = Fragmenter::new(16384);
    let (base, base_chunks, ring_pool) = populate_anon("pop_ring", "ring_mp_mc");
    assert_eq!(base, OBJECTS as i32, "ring_mp_mc populates every object");
    let (ours, chunks, our_pool) = populate_anon("pop_ptr_ring", "ptr_ring");
    // SAFETY: live pools, each freed once, nothing uses them any more.
    unsafe {
        sys::rte_mempool_free(ring_pool);
        sys::rte_mempool_free(our_pool);
    }
    drop(fragmenter);
    assert_eq!(
        ours, OBJECTS as i32,
        "ptr_ring must populate wherever ring_mp_mc does (ring_mp_mc: {base} objects in \
         {base_chunks} chunks)"
    );
    assert!(
        chunks > 1000,
        "4 KB pages give about one chunk per object here ({chunks} chunks): the worst case \
         the test is about"
    );
    eprintln!("test: eal_populate OK");
}
