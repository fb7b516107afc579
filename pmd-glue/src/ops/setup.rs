//! Pool creation: the configuration a pool gets (`alloc`) and the IOVA
//! table records of each chunk DPDK hands it (`populate`).

use core::ffi::{c_int, c_uint, c_void};

use dpdk_sys as sys;
use mempool::{ChunkSpec, Iova, PoolConfig, VirtAddr, VirtRange};

use crate::error::GlueError;
use crate::ffi::pool_name;
use crate::log::Level;
use crate::{log, pool_config, settings, zone};

/// Page size the mempool library uses to keep objects within pages (0: no
/// bound), or DPDK's error when it cannot tell (a bad socket id).
pub(super) fn page_size(mp: *mut sys::rte_mempool) -> Result<usize, GlueError> {
    let mut pg: usize = 0;
    // SAFETY: valid mempool, valid out pointer.
    let rc = unsafe { sys::rte_mempool_get_page_size(mp, &mut pg) };
    if rc < 0 {
        return Err(GlueError::Dpdk {
            call: "rte_mempool_get_page_size",
            errno: rc,
        });
    }
    Ok(pg)
}

pub(super) fn elt_total(mp: *const sys::rte_mempool) -> usize {
    // SAFETY: DPDK passes a valid mempool.
    unsafe { ((*mp).header_size + (*mp).elt_size + (*mp).trailer_size) as usize }
}

/// The pool configuration for `mp`: object count from DPDK, the rest from the
/// settings read at load, and an IOVA table large enough for any way DPDK
/// may hand out the memory (see [`max_chunks_for`]).
pub(super) fn config_for(mp: *mut sys::rte_mempool) -> PoolConfig {
    let s = settings::get();
    // SAFETY: DPDK passes a valid mempool.
    let objects = unsafe { (*mp).size } as usize;
    let mut cfg = PoolConfig::new(objects);
    cfg.max_lcores = sys::RTE_MAX_LCORE;
    cfg.validate = s.validate;
    cfg.newest_first = s.newest_first;
    // DPDK's single-producer / single-consumer pool flags (what makes
    // ring_mp_mc pools ring_sp_sc ones, e.g. `rte_mempool_create(...,
    // MEMPOOL_F_SP_PUT | MEMPOOL_F_SC_GET)`): the application promises one
    // putting / getting thread at a time, so the ring side takes no lock.
    // SAFETY: DPDK passes a valid mempool.
    let flags = unsafe { (*mp).flags };
    cfg.single_producer = flags & sys::RTE_MEMPOOL_F_SP_PUT != 0;
    cfg.single_consumer = flags & sys::RTE_MEMPOOL_F_SC_GET != 0;
    // The handler's own per-lcore cache is off unless asked for
    // (PTR_RING_CACHE_SIZE here, or per pool through `pool_config`): with
    // DPDK's cache above us a second one only adds copies and idle objects,
    // and without it the application chose no cache, expecting what
    // ring_mp_mc gives: a pool of n serves n gets, whichever lcore freed
    // the objects (a cache would keep some idle on other lcores).
    let cache = s.cache_size.unwrap_or(0);
    let max_cache = PoolConfig::max_cache_size(objects);
    if cache > max_cache {
        log!(
            Level::Warning,
            "PTR_RING_CACHE_SIZE={cache} is too large for pool {} ({objects} objects: at most \
             {max_cache}): using {max_cache}",
            pool_name(mp)
        );
    }
    cfg.cache_size = Some(cache.min(max_cache));
    // An unknown page size sizes the table by objects alone; populate then
    // refuses the chunk with DPDK's error before recording anything.
    cfg.max_chunks = max_chunks_for(objects, page_size(mp).unwrap_or(0), elt_total(mp));
    cfg
}

/// IOVA-table records a pool of `objects` objects of `total` bytes may need.
///
/// Each record is a run of at least one object, so `objects` records always
/// suffice, whatever the memory: DPDK may populate one page at a time (IOVA
/// as PA on anonymous memory gives one chunk per 4 KB page, split again
/// where an object would straddle a page). `ring_mp_mc` has no such table,
/// so anything smaller could refuse memory that DPDK's own handler accepts.
/// At least the page-count estimate plus slack, and at most the core's
/// `MAX_CHUNKS`: a pool that DPDK lays out in more runs than that (over
/// 65536 objects one per page, e.g. IOVA as PA without hugepages) is
/// refused at populate with `ChunkTableFull`, where `ring_mp_mc` would
/// take it.
pub fn max_chunks_for(objects: usize, page_size: usize, total: usize) -> usize {
    let total = total.max(1);
    let per_page_runs = if page_size == 0 || total > page_size {
        0
    } else {
        objects.div_ceil(page_size / total)
    };
    objects
        .max(per_page_runs + 256)
        .clamp(1, mempool::config::MAX_CHUNKS)
}

/// Creates the zone of pool `mp` (`ops->alloc`): the configuration from
/// DPDK, the settings and the application's `pool_config`, then one
/// INFO line saying what the pool got.
///
/// # Safety
/// `mp` is the valid mempool DPDK passes to `alloc`, whose `pool_config`
/// is what the application passed to `rte_mempool_set_ops_byname`.
pub(super) unsafe fn create(mp: *mut sys::rte_mempool) -> Result<(), GlueError> {
    let mut cfg = config_for(mp);
    // SAFETY: the caller's contract.
    unsafe { pool_config::apply_from(mp, &mut cfg) }?;
    // SAFETY: as above.
    let z = unsafe { zone::create(mp, &cfg, (*mp).ops_index) }?;
    if cfg.newest_first && !z.core.newest_first() {
        log!(
            Level::Notice,
            "pool {}: newest-first gets asked for, but the pool is single-producer \
             (RTE_MEMPOOL_F_SP_PUT): its ring's producer takes no lock to take objects \
             back under, so its gets stay oldest first",
            pool_name(mp)
        );
    }
    log!(
        Level::Info,
        "pool {}: {} objects, per-lcore cache {}, ring {} slots (batch {}, {}), validation {}, \
         gets {}",
        pool_name(mp),
        cfg.objects,
        z.core.cache_size(),
        z.core.ring().slots(),
        z.core.ring().batch(),
        z.core.ring().mode_name(),
        if cfg.validate { "on" } else { "off" },
        if z.core.newest_first() {
            "newest first"
        } else {
            "oldest first"
        }
    );
    Ok(())
}

/// Records the object runs of a chunk (`ops->populate`'s arguments) in the
/// IOVA table, all or nothing: when one run is refused, none is recorded
/// and the pool's populated count is unchanged. Returns how many objects the
/// runs hold, and how many runs.
/// Forgets the chunks of `mp` when DPDK has freed them all: a populate
/// that failed part-way (`rte_mempool_populate_default`, `_anon`, `_virt`)
/// takes every object back, frees every chunk and resets the pool
/// (`nb_mem_chunks` 0) without telling the handler, so that the records,
/// the populated count (inflight would never reach 0 again) and
/// validation would outlive the memory. Called where DPDK's word is final:
/// at the next populate, and at shutdown. Ok(0) when nothing was stale.
///
/// # Safety
/// `mp` is a live pool of ours that nobody else uses during the call (as
/// during populate, or under the shutdown's quiescence contract).
pub(crate) unsafe fn forget_freed_chunks(
    mp: *mut sys::rte_mempool,
    z: &zone::Zone<'_>,
) -> Result<usize, GlueError> {
    if !chunks_freed(mp, z) {
        return Ok(0);
    }
    // SAFETY: nobody else uses the pool (caller's contract), and DPDK has
    // freed the objects and their memory.
    let n = unsafe { z.core.forget_chunks() }?;
    log!(
        Level::Notice,
        "pool {}: DPDK freed every memory chunk (a populate failed part-way): {n} objects \
         forgotten, the pool can be populated again",
        pool_name(mp)
    );
    Ok(n)
}

/// Whether DPDK freed every chunk of `mp` that the handler still records:
/// no chunk and no object on DPDK's side (during a populate, DPDK counts
/// each object before it enqueues it, so the populate's own puts never see
/// this), records on ours.
pub(crate) fn chunks_freed(mp: *const sys::rte_mempool, z: &zone::Zone<'_>) -> bool {
    // SAFETY: DPDK's own mempool, live while its handler is called.
    let (chunks, populated) = unsafe { ((*mp).nb_mem_chunks, (*mp).populated_size) };
    chunks == 0 && populated == 0 && z.core.chunks() > 0
}

pub(super) fn record_chunk(
    mp: *mut sys::rte_mempool,
    z: &zone::Zone<'_>,
    max_objs: usize,
    vaddr: *mut c_void,
    iova: sys::rte_iova_t,
    len: usize,
) -> Result<(usize, usize), GlueError> {
    // The helper fails on the same call before laying out anything: refuse
    // the chunk first, so that nothing is recorded for it.
    let pg = page_size(mp)?;
    let runs = object_runs(mp, pg, max_objs, vaddr as usize, len);
    let total = elt_total(mp);
    // SAFETY: valid mempool.
    let header = unsafe { (*mp).header_size } as usize;
    let specs: Vec<ChunkSpec> = runs
        .iter()
        .map(|r| {
            let start = r.first - header;
            ChunkSpec {
                va: VirtRange::new(VirtAddr(start), (r.count - 1) * r.stride + total),
                iova: Iova::from_raw(iova).map(|i| Iova(i.0 + (start - vaddr as usize) as u64)),
                first: VirtAddr(r.first),
                stride: r.stride,
                count: r.count,
            }
        })
        .collect();
    z.core.register_chunks(&specs).map_err(GlueError::Core)?;
    Ok((runs.iter().map(|r| r.count).sum(), runs.len()))
}

/// A run of evenly spaced objects in a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Run {
    first: usize,
    stride: usize,
    count: usize,
}

/// Where `rte_mempool_op_populate_helper` (flags 0) puts objects in a chunk,
/// as runs of evenly spaced objects. Objects never straddle a page when the
/// pool needs IOVA-contiguous objects, so a page boundary can change the
/// spacing: with objects smaller than half a page each page starts a run;
/// with one object per page (4 KB pages, no hugepages) the whole chunk is
/// one run whose stride is the page size.
fn object_runs(
    mp: *mut sys::rte_mempool,
    pg: usize,
    max_objs: usize,
    va: usize,
    len: usize,
) -> Vec<Run> {
    let total = elt_total(mp);
    // SAFETY: valid mempool.
    let header = unsafe { (*mp).header_size } as usize;
    let mut runs: Vec<Run> = Vec::new();
    let mut off = 0usize;
    for _ in 0..max_objs {
        let start = va + off;
        if pg != 0 && total <= pg && start / pg != (start + total - 1) / pg {
            off += start.next_multiple_of(pg) - start;
        }
        if off + total > len {
            break;
        }
        let obj = va + off + header;
        match runs.last_mut() {
            Some(r) if r.count == 1 => {
                r.stride = obj - r.first;
                r.count = 2;
            }
            Some(r) if r.first + r.count * r.stride == obj => r.count += 1,
            _ => runs.push(Run {
                first: obj,
                stride: total,
                count: 1,
            }),
        }
        off += total;
    }
    runs
}

/// Records the object runs of a chunk in the IOVA table and maps the chunk
/// for the devices attached to the pool, then lets DPDK's helper lay out
/// (and enqueue) the objects. Never writes object memory.
pub(super) unsafe fn populate(
    mp: *mut sys::rte_mempool,
    max_objs: c_uint,
    vaddr: *mut c_void,
    iova: sys::rte_iova_t,
    len: usize,
    obj_cb: sys::rte_mempool_populate_obj_cb_t,
    obj_cb_arg: *mut c_void,
) -> c_int {
    // SAFETY: DPDK passes its own mempool.
    let recorded = unsafe { zone::attach(mp) }.and_then(|z| {
        // SAFETY: DPDK populates a pool nobody uses yet.
        unsafe { forget_freed_chunks(mp, &z) }?;
        let recorded = record_chunk(mp, &z, max_objs as usize, vaddr, iova, len)?;
        crate::port::map_new_chunks(mp, &z);
        Ok(recorded)
    });
    let (expected, runs) = match recorded {
        Ok(r) => r,
        Err(e) => return super::report(mp, "populate", &e),
    };
    // SAFETY: forwarding DPDK's own arguments to DPDK's helper.
    let n = unsafe {
        sys::rte_mempool_op_populate_helper(mp, 0, max_objs, vaddr, iova, len, obj_cb, obj_cb_arg)
    };
    if n >= 0 && n as usize != expected {
        log!(
            Level::Err,
            "populate on pool {}: DPDK laid out {n} objects, IOVA table expected {expected}",
            pool_name(mp)
        );
    }
    log!(
        Level::Debug,
        "pool {}: chunk va {:#x} iova {iova:#x} len {len}: {n} objects in {runs} runs",
        pool_name(mp),
        vaddr as usize
    );
    n
}
