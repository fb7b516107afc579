//! Small, complete uses of the core that `make test` also runs under Miri
//! (`cargo +nightly miri test -p mempool --test miri_core`): every access
//! to the pool's block (ring slots, caches, chunk records, device slots,
//! the validation bitmap) must be derived from a pointer whose provenance
//! covers it, under the default (Stacked Borrows) aliasing model. Sizes are
//! tiny so the interpreter finishes in seconds.
#![cfg(not(loom))]

use core::ffi::c_void;
use core::ptr::null_mut;

use mempool::{
    ChunkSpec, DeviceId, HeapPool, HeapRing, Iova, NoDma, PollOutcome, PoolConfig, PoolCore,
    PoolError, RingLayout, VirtAddr, VirtRange,
};

/// Object memory: the pool never dereferences objects, but real memory
/// keeps the addresses honest under Miri's provenance checks.
struct Objects {
    mem: Vec<u64>,
}

const STRIDE: usize = 64;

impl Objects {
    fn new(n: usize) -> Objects {
        Objects {
            mem: vec![0; n * STRIDE / 8],
        }
    }
    fn obj(&mut self, i: usize) -> *mut c_void {
        self.mem.as_mut_ptr().wrapping_add(i * STRIDE / 8).cast()
    }
    fn spec(&mut self, n: usize) -> ChunkSpec {
        let base = self.mem.as_mut_ptr() as usize;
        ChunkSpec {
            va: VirtRange::new(VirtAddr(base), n * STRIDE),
            iova: Some(Iova(0x1000)),
            first: VirtAddr(base),
            stride: STRIDE,
            count: n,
        }
    }
}

fn small(n: usize, validate: bool) -> PoolConfig {
    PoolConfig {
        max_lcores: 2,
        cache_size: Some(2.min(n * 2 / 3)),
        max_chunks: 2,
        max_devices: 1,
        validate,
        ..PoolConfig::new(n)
    }
}

fn populate(pool: &PoolCore, objs: &mut Objects, n: usize) {
    pool.register_chunk(objs.spec(n)).unwrap();
    for i in 0..n {
        pool.put_shared(&[objs.obj(i)]).unwrap();
    }
}

#[test]
fn pool_round_trip_of_one_object() {
    let mut objs = Objects::new(4);
    let pool = HeapPool::new(&small(4, false)).unwrap();
    populate(&pool, &mut objs, 4);
    let mut o = [null_mut()];
    // SAFETY: single thread, the only user of lcore 0.
    unsafe { pool.get(0, &mut o) }.unwrap();
    // SAFETY: as above.
    unsafe { pool.put(0, &o) }.unwrap();
    // SAFETY: as above: the inlined fast paths.
    unsafe {
        assert!(pool.try_get_cached(0, &mut o));
        assert!(pool.try_put_cached(0, &o));
    }
    assert_eq!(pool.inflight(), 0);
    assert_eq!(pool.available(), 4);
}

#[test]
fn pool_cache_off_direct_paths() {
    let mut objs = Objects::new(4);
    let cfg = PoolConfig {
        cache_size: Some(0),
        ..small(4, false)
    };
    let pool = HeapPool::new(&cfg).unwrap();
    populate(&pool, &mut objs, 4);
    assert!(pool.is_direct());
    let mut one = [null_mut()];
    let mut two = [null_mut(); 2];
    // SAFETY: single thread, the only user of lcore 1: one object and a
    // bulk straight through the ring, past a wrap and its invalidations.
    unsafe {
        for _ in 0..3 {
            assert!(pool.try_get_direct(1, &mut one));
            assert!(pool.try_get_direct(1, &mut two));
            assert!(pool.try_put_direct(1, &two));
            assert!(pool.try_put_direct(1, &one));
        }
    }
    assert_eq!(pool.inflight(), 0);
    assert_eq!(pool.available(), 4);
}

#[test]
fn pool_every_path_and_table() {
    let mut objs = Objects::new(8);
    let pool = HeapPool::new(&small(8, true)).unwrap();
    populate(&pool, &mut objs, 8);
    let mut four = [null_mut(); 4];
    // Refill, oversized get, flush, ring path.
    // SAFETY: single thread, the only user of lcore 0.
    unsafe { pool.get(0, &mut four) }.unwrap();
    assert_eq!(pool.is_home(four[0]), Some(false));
    // SAFETY: as above.
    unsafe { pool.put(0, &four) }.unwrap();
    pool.get_shared(&mut four).unwrap();
    pool.put_shared(&four).unwrap();
    // A double free is refused through the bitmap.
    let e = pool.put_shared(&[four[0]]).unwrap_err();
    assert!(matches!(e, PoolError::Rejected { .. }), "{e}");
    assert!(pool.owns(objs.obj(3)).is_some());
    assert_eq!(
        pool.iova_of(objs.obj(1)),
        Some(Iova(0x1000 + STRIDE as u64))
    );
    // Device slots.
    struct Count(usize);
    impl mempool::DmaMapper for Count {
        fn map(&mut self, _: DeviceId, _: &mempool::ChunkInfo) -> Result<(), i32> {
            self.0 += 1;
            Ok(())
        }
        fn unmap(&mut self, _: DeviceId, _: &mempool::ChunkInfo) -> Result<(), i32> {
            self.0 -= 1;
            Ok(())
        }
    }
    let mut m = Count(0);
    assert_eq!(pool.dma_attach(DeviceId(7), &mut m).unwrap(), 1);
    // SAFETY: single thread: every lcore is quiescent.
    let out = unsafe { pool.drain_quiescent(0, &mut m) }.unwrap();
    assert!(matches!(out, PollOutcome::Released { .. }), "{out:?}");
    assert_eq!(m.0, 0, "unmapped at release");
    assert_eq!(pool.stats().rejected.double_free, 1);
}

#[test]
fn attach_reads_the_same_block() {
    let mut objs = Objects::new(2);
    let pool = HeapPool::new(&small(2, false)).unwrap();
    populate(&pool, &mut objs, 2);
    // SAFETY: the live pool's block.
    let other = unsafe { PoolCore::attach(pool.as_ptr()) }.unwrap();
    let mut o = [null_mut(); 2];
    other.get_shared(&mut o).unwrap();
    pool.put_shared(&o).unwrap();
    assert_eq!(other.available(), 2);
    let out = pool.begin_drain(0, &mut NoDma).unwrap();
    assert!(matches!(out, PollOutcome::Released { .. }), "{out:?}");
}

#[test]
fn ring_wraps_and_invalidates() {
    let r = HeapRing::new(RingLayout::with_batch(3, 2).unwrap());
    let mut objs = Objects::new(8);
    for i in 0..6 {
        r.enqueue_bulk(&[objs.obj(i), objs.obj(i + 1)]).unwrap();
        let mut out = [null_mut(); 2];
        r.dequeue_bulk(&mut out).unwrap();
        assert_eq!(out, [objs.obj(i), objs.obj(i + 1)]);
        assert!(r.is_empty());
        assert_eq!(r.len(), 0);
    }
    let mut out = [null_mut(); 3];
    r.enqueue_bulk(&[objs.obj(1)]).unwrap();
    assert_eq!(r.dequeue_burst(&mut out), 1);
}

/// Newest-first dequeues: the take-back's copy-out (plain reads) and its
/// clears beside the FIFO path's, across the wrap, on a pool of each kind.
#[test]
fn newest_first_takes_back_across_the_wrap() {
    let r = HeapRing::new(RingLayout::with_batch(3, 2).unwrap());
    let mut objs = Objects::new(8);
    for i in 0..6 {
        r.enqueue_bulk_as(1, &[objs.obj(i), objs.obj(i + 1)])
            .unwrap();
        let mut one = [null_mut(); 1];
        r.dequeue_newest_bulk(&mut one).unwrap();
        assert_eq!(one, [objs.obj(i + 1)]);
        r.dequeue_bulk(&mut one).unwrap();
        assert_eq!(one, [objs.obj(i)]);
        assert!(r.is_empty());
    }
    for cache in [0, 2] {
        let pool = HeapPool::new(&PoolConfig {
            cache_size: Some(cache),
            newest_first: true,
            ..small(8, false)
        })
        .unwrap();
        let mut objs = Objects::new(8);
        populate(&pool, &mut objs, 8);
        let mut o = [null_mut(); 3];
        // SAFETY: one thread uses lcore 0.
        unsafe {
            // Oldest first (the populating puts named nobody), then lcore
            // 0's own objects back.
            for _ in 0..3 {
                pool.get(0, &mut o).unwrap();
                pool.put(0, &o).unwrap();
            }
            pool.flush_lcore(0).unwrap();
        }
        assert_eq!(pool.inflight(), 0);
    }
}
