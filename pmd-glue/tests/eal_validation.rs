//! Validation mode (`PTR_RING_VALIDATE=1`) with EAL: foreign pointers and
//! double frees that reach the handler are rejected, counted and never
//! inserted; valid objects of the same bulk still go in; the pool keeps
//! working and its counters stay conserved.
//!
//! The handler reads `PTR_RING_VALIDATE` once, when it loads (its load-time
//! constructor runs before `main`), so setting the variable inside the test
//! is too late: the test re-runs its own binary with the variable set.

mod common;

use std::ffi::c_void;

use common::*;
use dpdk_sys as sys;
use rte_mempool_ptr_ring::api::MbufPool;
use rte_mempool_ptr_ring::settings;

const N: u32 = 512;
const TEST: &str = "eal_validation";

fn put(mp: *mut sys::rte_mempool, p: *mut c_void) {
    // SAFETY: with DPDK's cache off this is one enqueue into the handler,
    // which (validating) checks the pointer before touching anything.
    unsafe { sys::rte_mempool_put(mp, p) };
}

fn get(mp: *mut sys::rte_mempool) -> *mut c_void {
    let mut o: *mut c_void = core::ptr::null_mut();
    // SAFETY: a live pool, a valid out pointer.
    let r = unsafe { sys::rte_mempool_get(mp, &mut o) };
    assert_eq!(r, 0, "rte_mempool_get: {r}");
    o
}

fn run() {
    assert!(
        settings::get().validate,
        "PTR_RING_VALIDATE=1 was read at load"
    );
    init_eal(&eal_args(TEST, "0"));
    // DPDK cache 0: every put reaches the handler.
    let pool = MbufPool::create("val_pool", N, 0, sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16, -1)
        .expect("create val_pool");
    let mp = pool.as_ptr();
    let s0 = conserved(&pool, "fresh");
    assert!(s0.validate, "pool created in validation mode");
    assert_eq!(s0.rejected.foreign + s0.rejected.double_free, 0);
    assert_eq!(pool.available(), N);

    // 1. Foreign pointers: a heap object, a stack object, an address inside
    //    the pool that is not an object start.
    let heap = Box::new([0u8; 256]);
    let mut stack = [0u64; 32];
    let inside = {
        let o = get(mp);
        // SAFETY: 64 bytes into a 2 KB mbuf object: still inside the pool.
        let p = unsafe { o.cast::<u8>().add(64) }.cast::<c_void>();
        (o, p)
    };
    assert_eq!(pool.available(), N - 1);
    let before = pool.stats().unwrap();
    put(mp, (&*heap as *const [u8; 256]).cast_mut().cast());
    put(mp, stack.as_mut_ptr().cast());
    put(mp, inside.1);
    let s = conserved(&pool, "after 3 foreign puts");
    assert_eq!(
        s.rejected.foreign,
        before.rejected.foreign + 3,
        "3 foreign pointers counted"
    );
    assert_eq!(s.rejected.double_free, 0);
    assert_eq!(pool.available(), N - 1, "nothing foreign inserted");
    assert_eq!(s.in_ring + s.in_caches, before.in_ring + before.in_caches);
    put(mp, inside.0);
    assert_eq!(pool.available(), N, "the real object goes back");

    // 2. A bulk mixing foreign pointers and one valid object through the
    //    ops directly: the valid one goes in, the two others are counted.
    let valid = get(mp);
    let before = pool.stats().unwrap();
    let mixed: [*mut c_void; 3] = [
        stack.as_mut_ptr().cast(),
        valid,
        (&*heap as *const [u8; 256]).cast_mut().cast(),
    ];
    // SAFETY: three pointers; the handler validates each.
    let r = unsafe { sys::rte_mempool_ops_enqueue_bulk(mp, mixed.as_ptr(), 3) };
    assert!(r < 0, "a bulk with rejected objects reports an error ({r})");
    let s = conserved(&pool, "after mixed bulk");
    assert_eq!(
        s.rejected.foreign,
        before.rejected.foreign + 2,
        "2 foreign in the bulk counted"
    );
    assert_eq!(
        pool.available(),
        N,
        "the valid object of the bulk was accepted"
    );

    // 3. Double free: an object put twice; the second put is rejected.
    let o = get(mp);
    assert_eq!(pool.available(), N - 1);
    put(mp, o);
    assert_eq!(pool.available(), N);
    let before = pool.stats().unwrap();
    put(mp, o);
    let s = conserved(&pool, "after double free");
    assert_eq!(
        s.rejected.double_free,
        before.rejected.double_free + 1,
        "double free counted"
    );
    assert_eq!(pool.available(), N, "double free not inserted");
    // Same through the ops with a bulk of one object twice.
    let o = get(mp);
    let twice = [o, o];
    // SAFETY: two pointers; the handler validates each.
    let r = unsafe { sys::rte_mempool_ops_enqueue_bulk(mp, twice.as_ptr(), 2) };
    assert!(
        r < 0,
        "a bulk holding one object twice reports an error ({r})"
    );
    let s = conserved(&pool, "after double free in one bulk");
    assert_eq!(s.rejected.double_free, before.rejected.double_free + 2);
    assert_eq!(pool.available(), N);

    // 4. The pool still works: N distinct objects, then nothing; all back.
    let all: Vec<*mut c_void> = (0..N).map(|_| get(mp)).collect();
    let distinct: std::collections::HashSet<usize> = all.iter().map(|&p| p as usize).collect();
    assert_eq!(
        distinct.len(),
        N as usize,
        "no object handed out twice after the rejected puts"
    );
    let mut extra: *mut c_void = core::ptr::null_mut();
    assert!(
        // SAFETY: valid pool and out pointer.
        unsafe { sys::rte_mempool_get(mp, &mut extra) } < 0,
        "N+1 get fails"
    );
    let s = conserved(&pool, "exhausted");
    assert_eq!(s.inflight, N as i64);
    // SAFETY: returning what we got.
    unsafe { sys::rte_mempool_put_bulk(mp, all.as_ptr(), N) };
    assert_eq!(pool.available(), N);
    let s = conserved(&pool, "all back");
    assert_eq!(s.inflight, 0);
    assert_eq!(s.rejected.foreign, 5);
    assert_eq!(s.rejected.double_free, 2);
    let ((), log) = capture_log(|| drop(pool));
    assert!(
        log.contains("PTR_RING: pool val_pool freed: every object returned"),
        "log:\n{log}"
    );
    drop(heap);
    eprintln!("test: {TEST} OK");
}

#[test]
fn validation_rejects_foreign_pointers_and_double_frees() {
    if std::env::var("PTR_RING_VALIDATE").as_deref() == Ok("1") {
        run();
    } else {
        let mut child = rerun_self(
            test_name_of(&validation_rejects_foreign_pointers_and_double_frees),
            &[("PTR_RING_VALIDATE", "1")],
            false,
        );
        let st = wait_timeout(&mut child, 60, "validation child");
        assert!(st.success(), "validation child failed: {st}");
    }
}
