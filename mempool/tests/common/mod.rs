//! Helpers shared by the pool tests: synthetic object addresses (the pool
//! never dereferences objects), population the way DPDK does it, and the
//! conservation check.
#![allow(dead_code)]

use core::ffi::c_void;
use std::collections::HashSet;

use mempool::{ChunkSpec, HeapPool, Iova, PoolConfig, VirtAddr, VirtRange};

/// Base of the synthetic object area.
pub const BASE: usize = 0x7f00_0000_0000;
/// Object header bytes before the first object (DPDK's objhdr).
pub const HDR: usize = 64;
/// Distance between objects.
pub const STRIDE: usize = 192;
/// IOVA of `BASE`.
pub const IOVA_BASE: u64 = 0x1_0000_0000;

/// Advances the tests' pseudo-random state (xorshift64) and returns it:
/// repeatable sequences for the randomised tests, no crate needed.
pub fn next_random(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// The chunk holding objects `0..n` at `BASE`.
pub fn chunk_spec(n: usize) -> ChunkSpec {
    ChunkSpec {
        va: VirtRange::new(VirtAddr(BASE), n * STRIDE),
        iova: Some(Iova(IOVA_BASE)),
        first: VirtAddr(BASE + HDR),
        stride: STRIDE,
        count: n,
    }
}

/// Object `i` of the pool made by [`populated_pool`].
pub fn obj(i: usize) -> *mut c_void {
    (BASE + HDR + i * STRIDE) as *mut c_void
}

/// Index of an object from [`obj`].
pub fn idx(p: *mut c_void) -> usize {
    (p as usize - BASE - HDR) / STRIDE
}

/// A pool of `cfg.objects` objects in one chunk, populated like DPDK does:
/// the chunk is registered, then each object is put once by `lcore`.
/// Checks conservation after registration and after every put.
pub fn populated_pool(cfg: PoolConfig, lcore: u32) -> HeapPool {
    assert!(
        !cfg.single_producer && !cfg.single_consumer,
        "single-sided pools: populated_pool_unchecked"
    );
    // SAFETY: no single-sided flag, no contract.
    unsafe { populated_pool_unchecked(cfg, lcore) }
}

/// [`populated_pool`] that also takes the single-producer/consumer flags.
///
/// # Safety
/// The caller keeps their contract (`PoolCore::init`) for every use of the
/// pool; the populating puts here run on the calling thread.
pub unsafe fn populated_pool_unchecked(cfg: PoolConfig, lcore: u32) -> HeapPool {
    // SAFETY: forwarded contract.
    let pool = unsafe { HeapPool::new_unchecked(&cfg) }.expect("config is valid");
    let n = cfg.objects;
    pool.register_chunk(chunk_spec(n)).expect("chunk fits");
    assert_conserved(&pool);
    assert_eq!(
        pool.inflight(),
        n as i64,
        "registered objects are out until put"
    );
    for i in 0..n {
        // SAFETY: single-threaded test, the only user of `lcore`.
        unsafe { pool.put(lcore, &[obj(i)]) }.expect("populate put");
        assert_conserved(&pool);
    }
    assert_eq!(pool.inflight(), 0);
    assert_eq!(pool.available(), n);
    pool
}

/// `populated == in_ring + in_caches + inflight`.
#[track_caller]
pub fn assert_conserved(pool: &HeapPool) {
    let s = pool.stats();
    assert_eq!(
        s.populated as i64,
        (s.in_ring + s.in_caches) as i64 + s.inflight,
        "conservation broken: {s:?}"
    );
    assert!(s.inflight >= 0, "negative inflight: {s:?}");
}

/// Takes every object out of a quiescent pool (flushing all caches first)
/// and checks each appears exactly once. Puts them back.
pub fn assert_exactly_once(pool: &HeapPool) {
    // SAFETY: the callers only use this with every thread joined.
    unsafe { pool.flush_all_quiescent() }.unwrap();
    let n = pool.populated();
    assert_eq!(pool.available(), n, "objects missing after flush");
    let mut all = vec![core::ptr::null_mut(); n];
    pool.get_shared(&mut all).expect("all objects in the ring");
    let set: HashSet<usize> = all.iter().map(|&p| idx(p)).collect();
    assert_eq!(set.len(), n, "duplicates");
    assert!(set.iter().all(|&i| i < n), "foreign object came out");
    pool.put_shared(&all).unwrap();
    assert_conserved(pool);
}

/// A DMA mapper that counts, per (device, chunk), maps and unmaps, and
/// fails on request. Panics on an unmap without a live map.
#[derive(Default)]
pub struct CountingMapper {
    pub live: std::collections::HashMap<(u64, u32), u32>,
    pub maps: std::collections::HashMap<(u64, u32), u32>,
    pub unmaps: std::collections::HashMap<(u64, u32), u32>,
    pub calls: usize,
    /// Fail the map of this (device, chunk) with this errno.
    pub fail_map: Option<((u64, u32), i32)>,
}

impl CountingMapper {
    pub fn total_maps(&self) -> u32 {
        self.maps.values().sum()
    }
    pub fn total_unmaps(&self) -> u32 {
        self.unmaps.values().sum()
    }
}

impl mempool::DmaMapper for CountingMapper {
    fn map(&mut self, device: mempool::DeviceId, chunk: &mempool::ChunkInfo) -> Result<(), i32> {
        self.calls += 1;
        let key = (device.0, chunk.id.0);
        if let Some((k, errno)) = self.fail_map {
            if k == key {
                return Err(errno);
            }
        }
        let live = self.live.entry(key).or_default();
        assert_eq!(*live, 0, "chunk {key:?} mapped twice");
        *live += 1;
        *self.maps.entry(key).or_default() += 1;
        Ok(())
    }
    fn unmap(&mut self, device: mempool::DeviceId, chunk: &mempool::ChunkInfo) -> Result<(), i32> {
        self.calls += 1;
        let key = (device.0, chunk.id.0);
        let live = self.live.entry(key).or_default();
        assert_eq!(*live, 1, "chunk {key:?} unmapped without a map");
        *live -= 1;
        *self.unmaps.entry(key).or_default() += 1;
        Ok(())
    }
}
