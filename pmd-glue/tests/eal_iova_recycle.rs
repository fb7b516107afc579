//! IOVAs and objects through recycling. At the first allocation every
//! object's IOVA in the handler's IOVA table (written at populate) agrees
//! with DPDK's own: the object header's (`rte_mempool_virt2iova`), EAL's
//! memory map (`rte_mem_virt2iova`) and the mbuf's `buf_iova`, with
//! `buf_iova == table_iova(obj) + (buf_addr - obj)`.
//!
//! Then the pool is recycled (alloc/free in bulks of 32 through a window of
//! outstanding mbufs that grows and shrinks, so objects come back in
//! changing order and DPDK's cache overflows and runs dry), checking what
//! the handler's get and put paths could break: no object is handed out
//! while it is already out, the DMA counters do not move (the pool's memory
//! is mapped once, for a `net_null` port, by `attach_port`, never on the
//! fast path), and at the end every object comes back exactly once with
//! its table entry, header IOVA and `buf_iova` as at first. Nothing on the
//! fast path writes the table or the mbufs' addresses, so that last sweep
//! runs once, not at every allocation. Run with DPDK's cache off and with a
//! DPDK cache of 256.

mod common;

use std::collections::HashMap;
use std::time::Instant;

use dpdk_sys as sys;
use mempool::Iova;
use rte_mempool_ptr_ring::api::MbufPool;
use rte_mempool_ptr_ring::{port, zone};

const MBUFS: u32 = 4096;
const BULK: usize = 32;
/// Mbufs kept out between allocation and free swing between these two
/// targets every `SWING` iterations: objects return in an order different
/// from the one they left in, and DPDK's cache (256) overflows and runs dry,
/// so the handler sees the traffic too.
const WINDOW: [usize; 2] = [2048, 64];
const SWING: usize = 128;
/// Alloc + free operations per pool (each mbuf is recycled about
/// OPS / 2 / MBUFS times: a few hundred, which swings the window through
/// both targets many times).
const OPS: usize = 2_000_000;
/// Iterations between the checks of the DMA counters.
const CHECK_EVERY: usize = 1024;

/// What an object looked like at its first allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rec {
    /// Position in the first allocation (the index of its `out` flag).
    index: usize,
    /// IOVA of the object start in the handler's IOVA table.
    table_iova: u64,
    /// `mbuf->buf_addr`.
    buf_addr: usize,
    /// `mbuf->buf_iova`.
    buf_iova: u64,
}

fn table_iova(pool: &MbufPool, obj: *const sys::rte_mbuf) -> Option<u64> {
    // SAFETY: a live pool created with the ptr_ring ops.
    let z = unsafe { zone::attach(pool.as_ptr()) }.expect("ptr_ring zone");
    z.core.iova_of(obj).map(|i: Iova| i.0)
}

/// Reads an mbuf's buffer address and IOVA.
fn buf_of(m: *const sys::rte_mbuf) -> (usize, u64) {
    // SAFETY: an mbuf of the pool, allocated by us.
    unsafe { ((*m).buf_addr as usize, (*m).buf_iova) }
}

/// Every object of the pool, allocated in bulks (then one by one for the
/// tail); asserts the pool gives exactly its size.
fn alloc_all(pool: &MbufPool) -> Vec<*mut sys::rte_mbuf> {
    let size = pool.size() as usize;
    let mut all: Vec<*mut sys::rte_mbuf> = Vec::with_capacity(size);
    let mut bulk = [core::ptr::null_mut::<sys::rte_mbuf>(); BULK];
    while size - all.len() >= BULK {
        // SAFETY: a live pool; room for BULK pointers.
        let r =
            unsafe { sys::rte_pktmbuf_alloc_bulk(pool.as_ptr(), bulk.as_mut_ptr(), BULK as u32) };
        if r != 0 {
            break;
        }
        all.extend_from_slice(&bulk);
    }
    loop {
        // SAFETY: a live pool.
        let m = unsafe { sys::rte_pktmbuf_alloc(pool.as_ptr()) };
        if m.is_null() {
            break;
        }
        all.push(m);
    }
    assert_eq!(
        all.len(),
        size,
        "every mbuf of the pool can be allocated at once"
    );
    all
}

fn free_all(v: &mut Vec<*mut sys::rte_mbuf>) {
    if !v.is_empty() {
        // SAFETY: mbufs we allocated, each freed once.
        unsafe { sys::rte_pktmbuf_free_bulk(v.as_mut_ptr(), v.len() as u32) };
    }
    v.clear();
}

/// The full check of one object against its first record.
fn check_obj(pool: &MbufPool, recs: &HashMap<usize, Rec>, m: *mut sys::rte_mbuf, phase: &str) {
    let rec = recs.get(&(m as usize)).unwrap_or_else(|| {
        panic!("[{phase}] {m:p} is not one of the objects seen at first allocation")
    });
    let t = table_iova(pool, m)
        .unwrap_or_else(|| panic!("[{phase}] {m:p}: no IOVA in the table any more"));
    assert_eq!(
        t, rec.table_iova,
        "[{phase}] {m:p}: IOVA table entry changed"
    );
    // SAFETY: a live object of the pool.
    let hdr = unsafe { sys::rte_mempool_virt2iova(m.cast()) };
    assert_eq!(
        hdr, rec.table_iova,
        "[{phase}] {m:p}: object header IOVA differs from the IOVA table"
    );
    let (addr, iova) = buf_of(m);
    assert_eq!(addr, rec.buf_addr, "[{phase}] {m:p}: buf_addr changed");
    assert_eq!(iova, rec.buf_iova, "[{phase}] {m:p}: buf_iova changed");
    assert_eq!(
        iova,
        t + (addr - m as usize) as u64,
        "[{phase}] {m:p}: buf_iova != table IOVA + (buf_addr - obj)"
    );
}

fn recycle(name: &str, cache: u32, iova_va: bool) {
    let pool = MbufPool::create(
        name,
        MBUFS,
        cache,
        sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16,
        -1,
    )
    .expect("pool");
    let mp = pool.as_ptr();

    // Attach a device once: the pool is in EAL memory, which EAL maps for
    // VFIO devices itself, so every record is handled without a call.
    // SAFETY: `mp` is the live ptr_ring pool created above.
    let mapped = unsafe { port::attach_port(mp, 0) }.expect("attach_port");
    let s0 = common::conserved(&pool, &format!("{name} created"));
    eprintln!(
        "test: [{name}] DPDK cache {cache}, handler cache {}, {} chunks, attach {mapped:?}: dma_maps {} dma_unmaps {}",
        s0.cache_size, s0.chunks, s0.dma_maps, s0.dma_unmaps
    );
    assert!(s0.chunks > 0, "[{name}] chunks recorded");
    assert_eq!(
        s0.dma_maps, s0.chunks as u64,
        "[{name}] every chunk handled once for the one device"
    );
    assert_eq!(
        (mapped.eal_records, mapped.pages_mapped),
        (s0.chunks, 0),
        "[{name}] EAL memory: recorded as mapped by EAL, no rte_dev_dma_map call"
    );

    // First allocation: record every object.
    let mut all = alloc_all(&pool);
    let mut recs: HashMap<usize, Rec> = HashMap::with_capacity(all.len());
    let mut buf_off: Option<usize> = None;
    for (index, &m) in all.iter().enumerate() {
        let t = table_iova(&pool, m)
            .unwrap_or_else(|| panic!("[{name}] {m:p}: object has no IOVA in the table"));
        // SAFETY: a live object of the pool.
        let hdr = unsafe { sys::rte_mempool_virt2iova(m.cast()) };
        assert_eq!(
            hdr, t,
            "[{name}] {m:p}: object header IOVA differs from the IOVA table"
        );
        // SAFETY: plain lookup in EAL's memory map.
        let mem = unsafe { sys::rte_mem_virt2iova(m.cast()) };
        assert_eq!(
            mem, t,
            "[{name}] {m:p}: rte_mem_virt2iova differs from the IOVA table"
        );
        if iova_va {
            assert_eq!(
                t, m as u64,
                "[{name}] {m:p}: IOVA-as-VA mode but IOVA != VA"
            );
        }
        let (addr, iova) = buf_of(m);
        let off = addr - m as usize;
        assert_eq!(
            *buf_off.get_or_insert(off),
            off,
            "[{name}] buffer offset in the object is the same for all"
        );
        assert_eq!(
            iova,
            t + off as u64,
            "[{name}] {m:p}: buf_iova != table IOVA + (buf_addr - obj)"
        );
        // The buffer's own IOVA through the table (the buffer lies in the same chunk).
        assert_eq!(
            table_iova(&pool, addr as *const sys::rte_mbuf),
            Some(iova),
            "[{name}] table IOVA of buf_addr"
        );
        assert!(recs
            .insert(
                m as usize,
                Rec {
                    index,
                    table_iova: t,
                    buf_addr: addr,
                    buf_iova: iova
                }
            )
            .is_none());
    }
    eprintln!(
        "test: [{name}] recorded {} objects (buffer at object + {} B), e.g. {:p} -> iova {:#x}",
        recs.len(),
        buf_off.unwrap_or(0),
        all[0],
        recs[&(all[0] as usize)].table_iova
    );
    free_all(&mut all);

    // Recycle.
    let t0 = Instant::now();
    let mut window: std::collections::VecDeque<*mut sys::rte_mbuf> =
        std::collections::VecDeque::with_capacity(WINDOW[0] + 2 * BULK);
    let mut bulk = [core::ptr::null_mut::<sys::rte_mbuf>(); BULK];
    let mut out = Vec::with_capacity(2 * BULK);
    // Whether each object is out with us now.
    let mut out_now = vec![false; recs.len()];
    let iterations = OPS / (2 * BULK);
    let mut ops = 0usize;
    for it in 0..iterations {
        // SAFETY: a live pool; room for BULK pointers.
        let r = unsafe { sys::rte_pktmbuf_alloc_bulk(mp, bulk.as_mut_ptr(), BULK as u32) };
        assert_eq!(
            r,
            0,
            "[{name}] alloc_bulk at iteration {it} ({} out)",
            window.len()
        );
        for &m in &bulk {
            let rec = recs
                .get(&(m as usize))
                .unwrap_or_else(|| panic!("[{name}] unknown object {m:p}"));
            assert!(
                !std::mem::replace(&mut out_now[rec.index], true),
                "[{name}] iteration {it}: {m:p} handed out while it is already out"
            );
        }
        window.extend(bulk.iter().copied());
        // Free a varying amount: about two bulks above the target, less than
        // one below, so the window swings between the two targets.
        let target = WINDOW[(it / SWING) % 2];
        let n = if window.len() > target {
            2 * BULK - (it % 3) * 8
        } else {
            (it % 3) * 8
        }
        .min(window.len());
        out.extend(window.drain(..n));
        ops += BULK + out.len();
        for &m in &out {
            out_now[recs[&(m as usize)].index] = false;
        }
        free_all(&mut out);

        if it % CHECK_EVERY == CHECK_EVERY - 1 {
            let s = pool.stats().expect("stats");
            assert_eq!(
                (s.dma_maps, s.dma_unmaps, s.chunks),
                (s0.dma_maps, s0.dma_unmaps, s0.chunks),
                "[{name}] DMA counters moved while recycling"
            );
        }
    }
    let mut rest: Vec<_> = window.drain(..).collect();
    ops += rest.len();
    free_all(&mut rest);
    let secs = t0.elapsed().as_secs_f64();
    eprintln!(
        "test: [{name}] {ops} alloc/free operations ({iterations} bulks of {BULK}) in {secs:.2} s ({:.0} M ops/s), each mbuf recycled ~{} times",
        ops as f64 / secs / 1e6,
        ops / 2 / MBUFS as usize
    );

    // Final sweep: the same objects come back, every one unchanged.
    let mut all = alloc_all(&pool);
    assert_eq!(all.len(), recs.len());
    for &m in &all {
        check_obj(&pool, &recs, m, &format!("{name} final"));
    }
    let mut seen: Vec<usize> = all.iter().map(|&m| m as usize).collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), recs.len(), "[{name}] every object once");
    free_all(&mut all);
    common::dpdk_cache_flush(mp, 0);
    let s1 = common::conserved(&pool, &format!("{name} end"));
    assert_eq!(s1.inflight, 0, "[{name}] nothing out at the end");
    assert_eq!(
        (s1.dma_maps, s1.dma_unmaps, s1.chunks),
        (s0.dma_maps, s0.dma_unmaps, s0.chunks),
        "[{name}] DMA counters after {ops} recycles"
    );
    eprintln!(
        "test: [{name}] PASS: {} objects, none out twice, each back once; IOVAs and buf_iova as at first; dma_maps {} (= chunks) dma_unmaps {} unchanged",
        recs.len(),
        s1.dma_maps,
        s1.dma_unmaps
    );
    drop(pool);
}

#[test]
fn iovas_and_objects_come_back_unchanged_through_recycling() {
    let mut args = common::eal_args("eal_iova_recycle", "0");
    args.extend(["--vdev", "net_null0"].map(String::from));
    common::init_eal(&args);
    // SAFETY: plain query after EAL init.
    let mode = unsafe { sys::rte_eal_iova_mode() };
    let iova_va = mode == sys::RTE_IOVA_VA;
    eprintln!(
        "test: IOVA mode {} ({})",
        if iova_va {
            "VA"
        } else if mode == sys::RTE_IOVA_PA {
            "PA"
        } else {
            "DC"
        },
        common::eal_mem().mode
    );
    for (name, cache) in [("iova_c0", 0), ("iova_c256", 256)] {
        recycle(name, cache, iova_va);
    }
}
