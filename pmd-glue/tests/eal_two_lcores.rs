//! Two EAL lcores: lcore 1 (rte_eal_remote_launch) allocates mbufs and
//! passes them through an SP/SC rte_ring to lcore 0, which checks a sequence
//! number written into each and frees it: every mbuf is allocated on one
//! lcore and freed on the other. At the end nothing is with the application:
//! available == size, and the handler's counters are conserved with
//! `inflight` exactly what DPDK's two per-lcore caches hold. Run with DPDK's
//! cache off (handler caches on) and on, on an MP/MC pool and on a pool
//! created with `RTE_MEMPOOL_F_SP_PUT | RTE_MEMPOOL_F_SC_GET` (lock-free ring
//! sides).

mod common;

use std::ffi::{c_int, c_void, CString};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::*;
use dpdk_sys as sys;
use rte_mempool_ptr_ring::api::{MbufPool, PoolParams};

const POOL: u32 = 2047;
const TOTAL: u64 = 400_000;
const BURST: usize = 32;
const DEADLINE: Duration = Duration::from_secs(30);
const SP_SC: u32 = sys::RTE_MEMPOOL_F_SP_PUT | sys::RTE_MEMPOOL_F_SC_GET;

struct Shared {
    mp: *mut sys::rte_mempool,
    ring: *mut sys::rte_ring,
    stop: AtomicBool,
    produced: AtomicU64,
    alloc_failures: AtomicU64,
}

fn data_u64(m: *mut sys::rte_mbuf) -> *mut u64 {
    // SAFETY: a live mbuf; its data room starts at buf_addr + data_off and
    // holds 2 KB.
    unsafe { sys::compat::mbuf_mtod(m).cast::<u64>() }
}

/// lcore 1: allocate bursts, stamp them, pass them on.
unsafe extern "C" fn producer(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the Shared owned by the launching test, alive until
    // rte_eal_wait_lcore returns.
    let sh = unsafe { &*arg.cast::<Shared>() };
    if sys::lcore_id() != 1 {
        return -1; // no panic across extern "C"
    }
    let mut seq = 0u64;
    let mut bufs = [core::ptr::null_mut::<sys::rte_mbuf>(); BURST];
    while seq < TOTAL && !sh.stop.load(Ordering::Relaxed) {
        let n = BURST.min((TOTAL - seq) as usize);
        // SAFETY: a live pool, room for n pointers.
        if unsafe { sys::rte_pktmbuf_alloc_bulk(sh.mp, bufs.as_mut_ptr(), n as u32) } != 0 {
            sh.alloc_failures.fetch_add(1, Ordering::Relaxed);
            core::hint::spin_loop();
            continue;
        }
        for (i, &m) in bufs[..n].iter().enumerate() {
            // SAFETY: a freshly allocated mbuf we own.
            unsafe { data_u64(m).write(seq + i as u64) };
        }
        let mut done = 0;
        while done < n && !sh.stop.load(Ordering::Relaxed) {
            // SAFETY: a live ring; pointers to mbufs we own.
            done += unsafe {
                sys::rte_ring_enqueue_burst(
                    sh.ring,
                    bufs[done..n].as_ptr().cast(),
                    (n - done) as u32,
                    core::ptr::null_mut(),
                )
            } as usize;
        }
        if done < n {
            // Stopped: give back what could not be passed on.
            // SAFETY: mbufs we own.
            unsafe { sys::rte_pktmbuf_free_bulk(bufs[done..n].as_mut_ptr(), (n - done) as u32) };
            break;
        }
        seq += n as u64;
        sh.produced.store(seq, Ordering::Relaxed);
    }
    0
}

/// Up to `BURST` mbufs from the hand-over ring (possibly none).
fn take_burst(ring: *mut sys::rte_ring, bufs: &mut [*mut c_void; BURST]) -> &[*mut c_void] {
    // SAFETY: a live ring (the caller's), room for BURST pointers.
    let n = unsafe {
        sys::rte_ring_dequeue_burst(ring, bufs.as_mut_ptr(), BURST as u32, core::ptr::null_mut())
    };
    &bufs[..n as usize]
}

/// One run; `flags` are mempool flags (`RTE_MEMPOOL_F_SP_PUT |
/// RTE_MEMPOOL_F_SC_GET` is legal here: lcore 1 is the only getter, lcore 0
/// the only putter, and the setup and teardown happen while the other is idle).
fn run(cache: u32, flags: u32) {
    let name = format!("two_c{cache}_f{flags}");
    let (pool, log) = capture_log(|| {
        // SAFETY: lcore 1 is the pool's only getter and lcore 0 its only
        // putter; the setup and the teardown run while the other is idle
        // (see above).
        unsafe {
            MbufPool::create_with_flags_unchecked(&PoolParams {
                flags,
                ..PoolParams::new(&name, POOL, cache, sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16)
            })
        }
        .expect("create")
    });
    let mode = if flags == SP_SC { "SP/SC" } else { "MP/MC" };
    assert!(
        log.lines()
            .any(|l| l.contains(&format!("pool {name}:")) && l.contains(mode)),
        "[{name}] the handler's alloc line names ring mode {mode}; log:\n{log}"
    );
    let rname = CString::new(format!("ring_{name}")).unwrap();
    // SAFETY: valid name; one producer, one consumer.
    let ring = unsafe {
        sys::rte_ring_create(
            rname.as_ptr(),
            1024,
            -1,
            sys::RING_F_SP_ENQ | sys::RING_F_SC_DEQ,
        )
    };
    assert!(!ring.is_null(), "rte_ring_create");
    let sh = Shared {
        mp: pool.as_ptr(),
        ring,
        stop: AtomicBool::new(false),
        produced: AtomicU64::new(0),
        alloc_failures: AtomicU64::new(0),
    };
    let t0 = Instant::now();
    // SAFETY: `sh` outlives the launched function (we wait for it below).
    let r = unsafe {
        sys::rte_eal_remote_launch(Some(producer), (&sh as *const Shared).cast_mut().cast(), 1)
    };
    assert_eq!(r, 0, "remote launch on lcore 1");

    // lcore 0: consume, check order, free.
    let mut expect = 0u64;
    let mut bufs = [core::ptr::null_mut::<c_void>(); BURST];
    let mut bad: Option<String> = None;
    while expect < TOTAL {
        if t0.elapsed() > DEADLINE {
            bad = Some(format!("timeout after {expect} of {TOTAL} mbufs"));
            break;
        }
        for &b in take_burst(ring, &mut bufs) {
            let m = b.cast::<sys::rte_mbuf>();
            // SAFETY: an mbuf passed to us by the producer.
            let got = unsafe { data_u64(m).read() };
            if got != expect && bad.is_none() {
                bad = Some(format!("mbuf {expect} carries sequence {got}"));
            }
            // SAFETY: we own it now; freeing on lcore 0.
            unsafe { sys::rte_pktmbuf_free(m) };
            expect += 1;
        }
        if bad.is_some() {
            break;
        }
    }
    sh.stop.store(true, Ordering::Relaxed);
    // Drain whatever the producer passed before it saw `stop`.
    // SAFETY: wait for the producer to return.
    let pr = unsafe { sys::rte_eal_wait_lcore(1) };
    loop {
        let got = take_burst(ring, &mut bufs);
        if got.is_empty() {
            break;
        }
        for &b in got {
            // SAFETY: ours to free.
            unsafe { sys::rte_pktmbuf_free(b.cast()) };
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    eprintln!(
        "test: [{name}] {expect} mbufs lcore 1 -> lcore 0 in {secs:.2} s ({:.1} M/s), {} alloc retries",
        expect as f64 / secs / 1e6,
        sh.alloc_failures.load(Ordering::Relaxed)
    );
    // SAFETY: the ring is empty and unused.
    unsafe { sys::rte_ring_free(ring) };
    assert!(bad.is_none(), "[{name}] {}", bad.unwrap());
    assert_eq!(pr, 0, "producer returned 0");
    assert_eq!(sh.produced.load(Ordering::Relaxed), TOTAL);
    assert_eq!(expect, TOTAL);

    assert_eq!(pool.available(), POOL, "[{name}] every mbuf back");
    let mp = pool.as_ptr();
    let s = conserved(&pool, &format!("{name} end"));
    let (c0, c1) = (dpdk_cache_len(mp, 0), dpdk_cache_len(mp, 1));
    assert_eq!(
        s.inflight,
        (c0 + c1) as i64,
        "[{name}] in flight == DPDK caches ({c0} + {c1})"
    );
    assert!(s.hold >= TOTAL, "[{name}] hold {} counts the gets", s.hold);
    if cache == 0 {
        assert_eq!(s.inflight, 0);
    }
    dpdk_cache_flush(mp, 0);
    dpdk_cache_flush(mp, 1); // lcore 1 is idle now
    let before = conserved(&pool, &format!("{name} DPDK caches flushed"));
    assert_eq!(before.inflight, 0);
    // The handler's cache of lcore 1 (quiescent now) back to the ring.
    // SAFETY: a live ptr_ring pool; lcore 1 runs nothing.
    let moved = unsafe { rte_mempool_ptr_ring::capi::ptr_ring_flush_lcore_cache(mp, 1) };
    assert!(moved >= 0, "ptr_ring_flush_lcore_cache: {moved}");
    let s = conserved(&pool, &format!("{name} lcore-1 handler cache flushed"));
    assert_eq!(
        s.in_ring,
        before.in_ring + moved as usize,
        "flushed objects land in the ring"
    );
    // Everything is now reachable from lcore 0, which frees the pool: the
    // library takes every object back, so hold == release at free.
    let ((), log) = capture_log(|| drop(pool));
    let line = log
        .lines()
        .find(|l| {
            l.contains(&format!(
                "PTR_RING: pool {name} freed: every object returned"
            ))
        })
        .unwrap_or_else(|| panic!("no 'every object returned' line; log:\n{log}"));
    let (hold, release) = (count_after(line, "hold "), count_after(line, "release "));
    // Modulo 2^32: per-lcore hold counts are 32-bit and wrap.
    assert_eq!(
        hold.map(|h| h as u32),
        release.map(|r| r as u32),
        "[{name}] nothing stranded at free: {line}"
    );
    assert!(hold.is_some(), "[{name}] no hold count in: {line}");
}

/// The number right after the first `word` that is followed by one.
fn count_after(line: &str, word: &str) -> Option<u64> {
    line.match_indices(word).find_map(|(i, _)| {
        let rest = &line[i + word.len()..];
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        rest[..digits].parse().ok()
    })
}

#[test]
fn mbufs_freed_on_another_lcore_all_come_back() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        eprintln!("test: SKIP eal_two_lcores: needs 2 CPUs for EAL lcores 0-1, this process may use {cpus}");
        return;
    }
    init_eal(&eal_args("eal_two_lcores", "0-1"));
    // SAFETY: plain query.
    assert_eq!(unsafe { sys::rte_lcore_count() }, 2);
    run(0, 0);
    run(32, 0);
    run(0, SP_SC);
    run(32, SP_SC);
    eprintln!("test: eal_two_lcores OK");
}
