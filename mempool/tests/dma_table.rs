//! DMA bookkeeping: each chunk is mapped once per device for the pool's life
//! and unmapped once (device removal or final release), with counters that
//! prove it, never per object or per recycle.
#![cfg(not(loom))]

mod common;

use core::ptr::null_mut;

use common::*;
use mempool::{
    ChunkId, DeviceId, DeviceState, HeapPool, PollOutcome, PoolConfig, PoolError, PoolState,
    VirtAddr,
};

const NIC0: DeviceId = DeviceId(0x10);
const NIC1: DeviceId = DeviceId(0x11);

fn chunk(i: usize) -> mempool::ChunkSpec {
    let mut s = chunk_spec(8);
    s.va.start = VirtAddr(BASE + i * 0x10_0000);
    s.first = VirtAddr(BASE + i * 0x10_0000 + HDR);
    s
}

fn chunk_obj(c: usize, i: usize) -> *mut core::ffi::c_void {
    (BASE + c * 0x10_0000 + HDR + i * STRIDE) as *mut core::ffi::c_void
}

/// Puts the objects of chunks `0..n` (DPDK's populate enqueue).
fn put_chunks(pool: &HeapPool, n: usize) {
    for c in 0..n {
        for i in 0..8 {
            pool.put_shared(&[chunk_obj(c, i)]).unwrap();
        }
    }
}

fn pool_with_chunks(n: usize, max_devices: usize) -> HeapPool {
    let pool = HeapPool::new(&PoolConfig {
        max_devices,
        max_lcores: 2,
        ..PoolConfig::new(8 * 16)
    })
    .unwrap();
    for i in 0..n {
        pool.register_chunk(chunk(i)).unwrap();
    }
    pool
}

#[test]
fn each_chunk_mapped_once_per_device() {
    let pool = pool_with_chunks(3, 4);
    let mut m = CountingMapper::default();
    assert_eq!(pool.dma_attach(NIC0, &mut m).unwrap(), 3);
    assert_eq!(pool.dma_attach(NIC1, &mut m).unwrap(), 3);
    // Attaching again maps nothing.
    assert_eq!(pool.dma_attach(NIC0, &mut m).unwrap(), 0);
    // A new chunk gets mapped on sync, for both devices, once.
    pool.register_chunk(chunk(3)).unwrap();
    assert_eq!(pool.dma_sync(&mut m).unwrap(), 2);
    assert_eq!(pool.dma_sync(&mut m).unwrap(), 0);
    assert_eq!(m.total_maps(), 8);
    assert!(m.maps.values().all(|&c| c == 1));
    let s = pool.stats();
    assert_eq!((s.dma_maps, s.dma_unmaps, s.devices), (8, 0, 2));
    let d = pool.device_stats(NIC0).unwrap();
    assert_eq!(
        (d.state, d.mapped, d.maps, d.unmaps),
        (DeviceState::Attached, 4, 4, 0)
    );
}

#[test]
fn recycling_objects_never_maps() {
    let pool = pool_with_chunks(2, 2);
    let mut m = CountingMapper::default();
    pool.dma_attach(NIC0, &mut m).unwrap();
    put_chunks(&pool, 2);
    let calls = m.calls;
    let mut o = [null_mut(); 4];
    for _ in 0..1000 {
        // SAFETY: single thread owns lcore 0.
        unsafe { pool.get(0, &mut o) }.unwrap();
        // SAFETY: as above.
        unsafe { pool.put(0, &o) }.unwrap();
    }
    assert_eq!(m.calls, calls, "gets and puts must not touch the mapper");
}

/// Three chunks mapped for `NIC0` and `NIC1`, then `removed` removed.
fn two_attached_one_removed(removed: DeviceId) -> (HeapPool, CountingMapper) {
    let pool = pool_with_chunks(3, 4);
    let mut m = CountingMapper::default();
    pool.dma_attach(NIC0, &mut m).unwrap();
    pool.dma_attach(NIC1, &mut m).unwrap();
    assert_eq!(pool.dma_remove(removed, &mut m).unwrap(), 3);
    (pool, m)
}

/// Drains `pool` (every object home) and checks the release unmapped
/// `unmapped` chunk mappings.
fn assert_released(pool: &HeapPool, m: &mut CountingMapper, unmapped: usize) {
    let out = pool.begin_drain(0, m).unwrap();
    assert_eq!(
        out,
        PollOutcome::Released {
            waited_ns: 0,
            dma: Ok(unmapped)
        }
    );
}

#[test]
fn removal_unmaps_once_and_only_an_explicit_attach_maps_again() {
    let (pool, mut m) = two_attached_one_removed(NIC0);
    assert_eq!(
        pool.dma_remove(NIC0, &mut m).unwrap(),
        0,
        "second removal is a no-op"
    );
    pool.register_chunk(chunk(3)).unwrap();
    assert_eq!(
        pool.dma_sync(&mut m).unwrap(),
        1,
        "only the attached device"
    );
    assert_eq!(
        pool.dma_remove(DeviceId(99), &mut m).unwrap_err(),
        PoolError::UnknownDevice {
            device: DeviceId(99)
        }
    );
    let d = pool.device_stats(NIC0).unwrap();
    assert_eq!(
        (d.state, d.mapped, d.maps, d.unmaps),
        (DeviceState::Removed, 0, 3, 3)
    );
    // Final release unmaps NIC1's 4 chunks, and NIC0's nothing more.
    put_chunks(&pool, 4);
    assert_released(&pool, &mut m, 4);
    assert!(m.unmaps.values().all(|&c| c == 1));
    assert_eq!(m.total_maps(), m.total_unmaps());
    assert!(m.live.values().all(|&l| l == 0), "everything unmapped");
    let s = pool.stats();
    assert_eq!((s.dma_maps, s.dma_unmaps, s.devices), (7, 7, 0));
}

#[test]
fn a_device_plugged_again_is_mapped_afresh_and_unmapped_once_more() {
    let pool = pool_with_chunks(3, 4);
    let mut m = CountingMapper::default();
    assert_eq!(pool.dma_attach(NIC0, &mut m).unwrap(), 3);
    assert_eq!(pool.dma_remove(NIC0, &mut m).unwrap(), 3);
    // The same id attached again: every chunk mapped again, from the first.
    assert_eq!(pool.dma_attach(NIC0, &mut m).unwrap(), 3);
    let d = pool.device_stats(NIC0).unwrap();
    assert_eq!(
        (d.state, d.mapped, d.maps, d.unmaps),
        (DeviceState::Attached, 3, 6, 3)
    );
    assert!(
        m.live.values().all(|&l| l == 1),
        "each chunk mapped once now"
    );
    put_chunks(&pool, 4);
    let out = pool.begin_drain(0, &mut m).unwrap();
    assert!(
        matches!(out, PollOutcome::Released { dma: Ok(3), .. }),
        "{out:?}"
    );
    assert!(m.live.values().all(|&l| l == 0), "everything unmapped");
    assert_eq!(m.total_maps(), m.total_unmaps());
}

#[test]
fn failed_map_keeps_the_mapped_prefix_and_retries_the_rest() {
    let pool = pool_with_chunks(4, 2);
    let mut m = CountingMapper {
        fail_map: Some(((NIC0.0, 2), -libc::ENOMEM)),
        ..Default::default()
    };
    let e = pool.dma_attach(NIC0, &mut m).unwrap_err();
    assert_eq!(
        e,
        PoolError::DmaMap {
            device: NIC0,
            chunk: ChunkId(2),
            errno: -libc::ENOMEM
        }
    );
    assert_eq!(pool.device_stats(NIC0).unwrap().mapped, 2);
    m.fail_map = None;
    assert_eq!(
        pool.dma_sync(&mut m).unwrap(),
        2,
        "retry maps chunks 2 and 3 only"
    );
    assert!(m.maps.values().all(|&c| c == 1));
    assert_eq!(pool.dma_remove(NIC0, &mut m).unwrap(), 4);
}

#[test]
fn device_table_bound() {
    let pool = pool_with_chunks(1, 2);
    let mut m = CountingMapper::default();
    pool.dma_attach(DeviceId(1), &mut m).unwrap();
    pool.dma_attach(DeviceId(2), &mut m).unwrap();
    assert_eq!(
        pool.dma_attach(DeviceId(3), &mut m).unwrap_err(),
        PoolError::DeviceTableFull {
            max_devices: 2,
            device: DeviceId(3)
        }
    );
    // NoDma refuses to map.
    let pool = pool_with_chunks(1, 2);
    assert!(matches!(
        pool.dma_attach(DeviceId(1), &mut mempool::NoDma),
        Err(PoolError::DmaMap { errno, .. }) if errno == -libc::ENOTSUP
    ));
}

#[test]
fn release_all_of_an_active_pool_unmaps_each_device_once() {
    // An owner that frees the memory of a pool still active, with objects
    // out (no drained shutdown): every attached device is unmapped once.
    let (pool, mut m) = two_attached_one_removed(NIC1);
    assert_eq!(pool.state(), PoolState::Active);
    assert_eq!(pool.dma_release_all(&mut m).unwrap(), 3, "NIC0's only");
    assert_eq!(pool.dma_release_all(&mut m).unwrap(), 0, "a second call");
    assert_eq!(
        pool.device_stats(NIC0).map(|d| (d.state, d.mapped)),
        Some((DeviceState::Removed, 0))
    );
    assert!(m.unmaps.values().all(|&c| c == 1));
    assert!(m.live.values().all(|&l| l == 0), "everything unmapped");
    // A later drained release finds nothing left to unmap.
    put_chunks(&pool, 3);
    assert_released(&pool, &mut m, 0);
    assert_eq!(m.total_maps(), m.total_unmaps());
}
