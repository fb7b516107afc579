//! The IOVA table: newtypes, chunk records, ownership and IOVA lookups,
//! bounds and overlap errors, and lookups racing registration.
#![cfg(not(loom))]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mempool::{
    ChunkId, ChunkSpec, HeapPool, Iova, ObjIndex, PoolConfig, PoolError, VirtAddr, VirtRange,
    BAD_IOVA,
};

fn spec(
    start: usize,
    len: usize,
    iova: Option<u64>,
    hdr: usize,
    stride: usize,
    count: usize,
) -> ChunkSpec {
    ChunkSpec {
        va: VirtRange::new(VirtAddr(start), len),
        iova: iova.map(Iova),
        first: VirtAddr(start + hdr),
        stride,
        count,
    }
}

fn pool(objects: usize, max_chunks: usize) -> HeapPool {
    HeapPool::new(&PoolConfig {
        max_chunks,
        ..PoolConfig::new(objects)
    })
    .unwrap()
}

#[test]
fn newtypes() {
    assert_eq!(Iova::from_raw(BAD_IOVA), None);
    assert_eq!(Iova::from_raw(0x1000), Some(Iova(0x1000)));
    assert_eq!(Iova::to_raw(None), u64::MAX);
    let r = VirtRange::new(VirtAddr(100), 50);
    assert!(r.contains(VirtAddr(100)) && r.contains(VirtAddr(149)));
    assert!(!r.contains(VirtAddr(150)) && !r.contains(VirtAddr(99)));
    assert!(r.overlaps(&VirtRange::new(VirtAddr(149), 1)));
    assert!(!r.overlaps(&VirtRange::new(VirtAddr(150), 10)));
    assert_eq!(VirtAddr(110).offset_from(VirtAddr(100)), Some(10));
    assert_eq!(VirtAddr(90).offset_from(VirtAddr(100)), None);
}

#[test]
fn chunks_registered_out_of_order_are_found() {
    let p = pool(1000, 16);
    // Three chunks, registered high, low, middle; one without an IOVA.
    let hi = p
        .register_chunk(spec(0x30_0000, 0x1000, Some(0xC000_0000), 64, 128, 10))
        .unwrap();
    let lo = p
        .register_chunk(spec(0x10_0000, 0x1000, Some(0xA000_0000), 64, 128, 20))
        .unwrap();
    let mid = p
        .register_chunk(spec(0x20_0000, 0x1000, None, 0, 256, 5))
        .unwrap();
    assert_eq!((hi.id, lo.id, mid.id), (ChunkId(0), ChunkId(1), ChunkId(2)));
    // Dense object indices in registration order.
    assert_eq!(hi.first_index, ObjIndex(0));
    assert_eq!(lo.first_index, ObjIndex(10));
    assert_eq!(mid.first_index, ObjIndex(30));
    assert_eq!(p.populated(), 35);
    assert_eq!(p.chunks(), 3);

    let o =
        |base: usize, hdr: usize, stride: usize, i: usize| (base + hdr + i * stride) as *const u8;
    assert_eq!(p.owns(o(0x10_0000, 64, 128, 0)), Some(ObjIndex(10)));
    assert_eq!(p.owns(o(0x10_0000, 64, 128, 19)), Some(ObjIndex(29)));
    assert_eq!(p.owns(o(0x10_0000, 64, 128, 20)), None, "past the run");
    assert_eq!(p.owns(o(0x30_0000, 64, 128, 9)), Some(ObjIndex(9)));
    assert_eq!(p.owns(o(0x20_0000, 0, 256, 4)), Some(ObjIndex(34)));
    assert_eq!(
        p.owns((0x10_0000 + 64 + 1) as *const u8),
        None,
        "not on a boundary"
    );
    assert_eq!(
        p.owns(0x10_0000 as *const u8),
        None,
        "the header is not an object"
    );
    assert_eq!(p.owns(0x5 as *const u8), None);
    assert_eq!(p.owns(0x40_0000 as *const u8), None);
    assert_eq!(p.owns(core::ptr::null::<u8>()), None);

    assert_eq!(p.iova_of(0x10_0010 as *const u8), Some(Iova(0xA000_0010)));
    assert_eq!(p.iova_of(0x30_0fff as *const u8), Some(Iova(0xc000_0fff)));
    assert_eq!(
        p.iova_of(0x30_1000 as *const u8),
        None,
        "one past the chunk"
    );
    assert_eq!(
        p.iova_of(0x20_0000 as *const u8),
        None,
        "chunk without IOVA"
    );
    assert_eq!(
        p.chunk_of(0x20_0100 as *const u8).map(|c| c.id),
        Some(ChunkId(2))
    );
    assert_eq!(p.chunk(ChunkId(1)), Some(lo));
    assert_eq!(p.chunk(ChunkId(3)), None);
    assert_eq!(lo.iova_range().unwrap().len, 0x1000);
}

#[test]
fn table_bound_overlap_and_bad_runs_are_errors() {
    let p = pool(100, 2);
    p.register_chunk(spec(0x1000, 0x100, None, 0, 16, 4))
        .unwrap();
    let e = p
        .register_chunk(spec(0x10f0, 0x100, None, 0x10, 16, 4))
        .unwrap_err();
    assert!(
        matches!(
            e,
            PoolError::ChunkOverlap {
                existing: ChunkId(0),
                ..
            }
        ),
        "{e}"
    );
    p.register_chunk(spec(0x2000, 0x100, None, 0, 16, 4))
        .unwrap();
    let e = p
        .register_chunk(spec(0x3000, 0x100, None, 0, 16, 4))
        .unwrap_err();
    assert_eq!(
        e,
        PoolError::ChunkTableFull {
            max_chunks: 2,
            va: VirtRange::new(VirtAddr(0x3000), 0x100)
        }
    );
    assert_eq!(p.populated(), 8, "failed registrations populate nothing");

    let p = pool(100, 8);
    // Last object would start past the end.
    let e = p
        .register_chunk(spec(0x1000, 0x100, None, 0, 16, 17))
        .unwrap_err();
    assert!(matches!(e, PoolError::BadChunk { count: 17, .. }), "{e}");
    assert!(p
        .register_chunk(spec(0x1000, 0x100, None, 0, 0, 1))
        .is_err());
    assert!(p
        .register_chunk(spec(0x1000, 0x100, None, 0, 16, 0))
        .is_err());
    assert!(p
        .register_chunk(spec(usize::MAX - 10, 0x100, None, 0, 16, 1))
        .is_err());
    // More objects than the pool was sized for.
    p.register_chunk(spec(0x1000, 0x1000, None, 0, 16, 90))
        .unwrap();
    let e = p
        .register_chunk(spec(0x9000, 0x1000, None, 0, 16, 11))
        .unwrap_err();
    assert_eq!(
        e,
        PoolError::TooManyObjects {
            count: 11,
            would_be: 101,
            objects: 100
        }
    );
    p.register_chunk(spec(0x9000, 0x1000, None, 0, 16, 10))
        .unwrap();
    assert_eq!(p.populated(), 100);
}

#[test]
fn a_refused_set_of_chunks_records_none_of_them() {
    let p = pool(100, 4);
    let first = p
        .register_chunk(spec(0x1000, 0x100, None, 0, 16, 4))
        .unwrap();
    let a = spec(0x2000, 0x100, None, 0, 16, 4);
    let b = spec(0x3000, 0x100, None, 0, 16, 4);
    let nothing_new = |p: &HeapPool| {
        assert_eq!(p.chunks(), 1);
        assert_eq!(p.populated(), 4);
        assert_eq!(p.owns(0x2000 as *const u8), None, "a's first object");
        assert_eq!(p.chunk_of(0x2000 as *const u8), None);
    };

    // The second spec overlaps the recorded chunk.
    let late = spec(0x10f0, 0x100, None, 0x10, 16, 4);
    assert_eq!(
        p.register_chunks(&[a, late]),
        Err(PoolError::ChunkOverlap {
            va: late.va,
            existing: first.id,
            existing_va: first.va
        })
    );
    nothing_new(&p);

    // The two specs overlap each other.
    let e = p
        .register_chunks(&[a, spec(0x20f0, 0x100, None, 0x10, 16, 4)])
        .unwrap_err();
    assert_eq!(
        e,
        PoolError::ChunksOverlap {
            va: VirtRange::new(VirtAddr(0x20f0), 0x100),
            other: a.va
        }
    );
    nothing_new(&p);

    // Four records where three fit: the fourth is named.
    let d = spec(0x5000, 0x100, None, 0, 16, 4);
    let e = p
        .register_chunks(&[a, b, spec(0x4000, 0x100, None, 0, 16, 4), d])
        .unwrap_err();
    assert_eq!(
        e,
        PoolError::ChunkTableFull {
            max_chunks: 4,
            va: d.va
        }
    );
    nothing_new(&p);

    // Together over the pool's size, each alone within it.
    let e = p
        .register_chunks(&[
            spec(0x2000, 0x1000, None, 0, 16, 50),
            spec(0x3000, 0x1000, None, 0, 16, 47),
        ])
        .unwrap_err();
    assert_eq!(
        e,
        PoolError::TooManyObjects {
            count: 97,
            would_be: 101,
            objects: 100
        }
    );
    nothing_new(&p);

    // A bad run after a good one.
    let e = p
        .register_chunks(&[a, spec(0x3000, 0x100, None, 0, 16, 17)])
        .unwrap_err();
    assert!(matches!(e, PoolError::BadChunk { count: 17, .. }), "{e}");
    nothing_new(&p);

    // Nothing is a valid set; then both, with consecutive ids and indexes.
    assert_eq!(p.register_chunks(&[]).unwrap(), vec![]);
    nothing_new(&p);
    let got = p.register_chunks(&[b, a]).unwrap();
    assert_eq!(
        got.iter().map(|c| c.id).collect::<Vec<_>>(),
        [ChunkId(1), ChunkId(2)]
    );
    assert_eq!(got[0].va, b.va);
    assert_eq!(p.chunks(), 3);
    assert_eq!(p.populated(), 12);
    assert_eq!(p.chunk(first.id), Some(first));
    assert_eq!(p.owns(0x3000 as *const u8), Some(ObjIndex(4)));
    assert_eq!(p.owns(0x2010 as *const u8), Some(ObjIndex(9)));
    assert_eq!(
        p.chunk_of(0x2080 as *const u8).map(|c| c.id),
        Some(ChunkId(2))
    );
}

#[test]
fn many_chunks_binary_search() {
    let n = 512;
    let p = pool(n * 4, n);
    // Register in a scrambled order.
    for k in 0..n {
        let i = (k * 197) % n;
        p.register_chunk(spec(
            0x100_0000 + i * 0x1000,
            0x1000,
            Some(i as u64 * 0x1_0000),
            0x40,
            0x100,
            4,
        ))
        .unwrap();
    }
    for i in 0..n {
        let base = 0x100_0000 + i * 0x1000;
        let c = p.chunk_of(base as *const u8).unwrap();
        assert_eq!(c.va.start, VirtAddr(base));
        assert_eq!(
            p.iova_of((base + 0x123) as *const u8),
            Some(Iova(i as u64 * 0x1_0000 + 0x123))
        );
        let idx = p.owns((base + 0x40 + 3 * 0x100) as *const u8).unwrap();
        assert_eq!(idx.0, c.first_index.0 + 3);
    }
}

#[test]
fn lookups_race_registration() {
    let n = 200;
    let p = Arc::new(pool(n * 2, n));
    p.register_chunk(spec(0x5000_0000, 0x1000, Some(0x9000_0000), 0, 0x800, 2))
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicBool::new(false));
    let reader = {
        let (p, stop, started) = (Arc::clone(&p), Arc::clone(&stop), Arc::clone(&started));
        std::thread::spawn(move || {
            let mut lookups = 0u64;
            while !stop.load(Ordering::Relaxed) {
                started.store(true, Ordering::Relaxed);
                // The first chunk stays findable while others are inserted
                // before and after it in address order.
                assert_eq!(p.owns(0x5000_0800 as *const u8).map(|i| i.0), Some(1));
                assert_eq!(p.iova_of(0x5000_0010 as *const u8), Some(Iova(0x9000_0010)));
                lookups += 1;
            }
            lookups
        })
    };
    while !started.load(Ordering::Relaxed) {
        std::thread::yield_now();
    }
    for k in 1..n {
        std::thread::yield_now();
        let i = if k % 2 == 0 {
            0x5000_0000 + k * 0x1000
        } else {
            0x5000_0000 - k * 0x1000
        };
        p.register_chunk(spec(i, 0x1000, None, 0, 0x800, 2))
            .unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
    assert_eq!(p.chunks(), n);
}

/// `iova_of` never wraps: a record whose IOVA plus an offset inside it
/// overflows reports no IOVA instead of a wrapped address.
#[test]
fn iova_of_never_wraps() {
    let info = mempool::ChunkInfo {
        id: mempool::ChunkId(0),
        va: VirtRange::new(VirtAddr(0x1000), 0x1000),
        iova: Some(Iova(u64::MAX - 0x10)),
        first: VirtAddr(0x1000),
        stride: 64,
        count: 64,
        first_index: mempool::ObjIndex(0),
    };
    assert_eq!(info.iova_of(VirtAddr(0x1008)), Some(Iova(u64::MAX - 0x8)));
    assert_eq!(info.iova_of(VirtAddr(0x1020)), None);
}
