//! The rows `mempool_bench` runs and the caches each handler uses in them.
//!
//! "Kept" = each getting lane keeps that many objects out in a FIFO: every
//! step gets `bulk` objects and, once it holds more than `kept`, puts back
//! the oldest `bulk` (like an RX ring that holds its mbufs for a while).
//! With a DPDK cache, such a balanced FIFO never empties or overflows the
//! cache, so the handler is not called; the `burst` rows (fill to `kept`,
//! then drain) are the ones where refills and flushes reach it. Every row
//! records how often the handler was really called.

use crate::record::{Group, MempoolKey, Pattern, Side};

/// The handler the ratios are taken against.
pub const BASELINE: &str = "ring_mp_mc";
/// The handler under test.
pub const OURS: &str = "ptr_ring";
/// DPDK's cache size of the cache rows (its largest common default).
pub const CACHE: u32 = 256;
/// The other software mempool handlers DPDK ships (its `ring`, `stack` and
/// `bucket` mempool drivers), measured on the [`core_row`]s next to
/// `ptr_ring` and `ring_mp_mc`. `ring_mp_sc` and `ring_sp_mc` are left out:
/// no row has exactly one side single-threaded.
pub const PEERS: [&str; 6] = [
    "ring_sp_sc",
    "ring_mt_rts",
    "ring_mt_hts",
    "stack",
    "lf_stack",
    "bucket",
];

fn row(group: Group, pattern: Pattern, lcores: u32, bulk: u32, kept: u32) -> MempoolKey {
    let cache = match group {
        Group::NoCache | Group::BigBulk => 0,
        _ => CACHE,
    };
    MempoolKey {
        group,
        pattern,
        lcores,
        bulk,
        kept,
        cache,
    }
}

/// Every row, in run (and report) order.
pub fn rows() -> Vec<MempoolKey> {
    use Group::*;
    use Pattern::*;
    let mut v = Vec::new();
    // (a) no cache anywhere.
    for kept in [128, 1024] {
        for bulk in [1, 32] {
            v.push(row(NoCache, Recycle, 1, bulk, kept));
        }
    }
    // Small bulks, as an application without a cache that gets and puts a
    // few objects at a time makes them (`mempool_perf_autotest` times bulks
    // of 4 and 8 too).
    for bulk in [4, 8] {
        v.push(row(NoCache, Recycle, 1, bulk, 128));
    }
    // Gets in bursts, puts one object at a time: what testpmd io over
    // `net_null` asks of the handler (its e2e row), without testpmd.
    v.push(row(NoCache, FreeOne, 1, 32, 128));
    for bulk in [1, 32] {
        v.push(row(NoCache, Recycle, 2, bulk, 128));
    }
    v.push(row(NoCache, Handoff, 2, 32, 0));
    // (b) DPDK cache on both, working set larger than the cache.
    for lcores in [1, 2] {
        for kept in [1024, 4096] {
            v.push(row(DpdkCache, Recycle, lcores, 32, kept));
        }
    }
    v.push(row(DpdkCache, Handoff, 2, 32, 1024));
    // The same working sets taken and released in bursts: DPDK's cache
    // refills and flushes through the handler.
    for lcores in [1, 2] {
        for kept in [1024, 4096] {
            v.push(row(DpdkCache, Burst, lcores, 32, kept));
        }
    }
    // (c) ptr_ring's own cache against DPDK's cache of the same size: each
    // get put back at once, and a FIFO of 32 kept objects.
    for lcores in [1, 2] {
        for kept in [0, 32] {
            for bulk in [1, 32] {
                v.push(row(OwnCache, Recycle, lcores, bulk, kept));
            }
        }
    }
    // (d) refill/flush-sized bulks, no cache.
    for bulk in [128, 512] {
        v.push(row(BigBulk, Recycle, 1, bulk, 0));
    }
    v.push(row(BigBulk, Recycle, 2, 512, 0));
    // (e) an unregistered non-EAL thread.
    for bulk in [1, 32] {
        v.push(row(NonEal, Recycle, 1, bulk, 128));
    }
    // (f) controls: the working set fits DPDK's cache.
    for lcores in [1, 2] {
        v.push(row(Control, Recycle, lcores, 32, 128));
    }
    v
}

/// The caches `handler` runs with in `key`. `ptr_ring-newest` is `ptr_ring`
/// with another order of gets: the same caches.
pub fn side(key: &MempoolKey, handler: &str) -> Side {
    let ours = handler == OURS || handler == crate::pool_config::PTR_RING_NEWEST;
    let (dpdk_cache, handler_cache) = match key.group {
        Group::NoCache | Group::BigBulk => (0, 0),
        Group::OwnCache if ours => (0, key.cache as i32),
        // The reference stack is the whole store: a handler-side cache
        // can at best be that fast behind the ops table.
        Group::OwnCache if handler == crate::floor::NAME => (0, 0),
        Group::OwnCache | Group::DpdkCache | Group::NonEal | Group::Control => (key.cache, 0),
    };
    Side {
        dpdk_cache,
        handler_cache,
    }
}

/// Whether `handler` may serve `key`: the [`PEERS`] only on the core rows,
/// and `ring_sp_sc` there only on one lcore (in a hand-over both lcores put
/// objects back: the worker its bulks, the main lcore what it still holds
/// when the run ends); the single-thread `floor_lifo` reference only on one
/// lcore without DPDK's cache: the no-cache rows, and the handler-cache rows,
/// where it stands for the fastest cache a handler could keep behind the
/// ops table (DPDK's cache off, as for `ptr_ring` there).
pub fn handler_fits(handler: &str, key: &MempoolKey) -> bool {
    if handler == crate::floor::NAME {
        return key.lcores == 1
            && matches!(key.group, Group::NoCache | Group::BigBulk | Group::OwnCache);
    }
    if PEERS.contains(&handler) && !core_row(key) {
        return false;
    }
    !handler.ends_with("sp_sc") || key.lcores == 1
}

/// The rows every software handler runs on: no cache anywhere, and DPDK's
/// cache with working sets larger than it (hand-over rows included).
pub fn core_row(key: &MempoolKey) -> bool {
    matches!(key.group, Group::NoCache | Group::DpdkCache)
}

/// The rows whose ratio swings widely between runs on a 2-vCPU VM: two
/// lcores each recycling through the handler. `bench/run.sh` runs them
/// again, in separate runs spaced through the benchmark, and the report
/// gives their spread over the runs. Left out: the controls and the
/// DPDK-cache recycling rows, whose balanced FIFOs never reach the handler
/// (DPDK's cache serves them: they are controls too).
pub fn swinging_row(key: &MempoolKey) -> bool {
    key.lcores == 2
        && key.pattern == Pattern::Recycle
        && !matches!(key.group, Group::Control | Group::DpdkCache)
}

/// Objects a pool needs for `key`: every lane's FIFO, DPDK's caches (up to
/// 1.5x their size each), the hand-over ring, and room to spare.
pub fn pool_size_needed(key: &MempoolKey, handoff_ring: u32) -> u32 {
    let lanes = key.lcores;
    lanes * (key.kept + 2 * key.bulk) + lanes * (key.cache * 3 / 2 + key.bulk) + handoff_ring + 1024
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_is_a_multiple_of_bulk() {
        for k in rows() {
            assert_eq!(k.kept % k.bulk, 0, "{k}");
        }
    }

    #[test]
    fn peers_run_on_the_core_rows_only() {
        let all = rows();
        let core: Vec<&MempoolKey> = all.iter().filter(|k| core_row(k)).collect();
        // nocache 10, dpdkcache 9.
        assert_eq!(core.len(), 19);
        for k in &all {
            assert_eq!(handler_fits("stack", k), core_row(k), "{k}");
            // SP/SC on one lcore only, never across the hand-over.
            assert_eq!(
                handler_fits("ring_sp_sc", k),
                core_row(k) && k.lcores == 1,
                "{k}"
            );
            assert!(handler_fits(OURS, k) && handler_fits(BASELINE, k));
        }
        assert!(core.iter().any(|k| k.pattern == Pattern::Handoff));
    }

    /// The single-thread reference runs on one lcore, with no cache of
    /// DPDK's in front of it, wherever `ptr_ring` has none either: the
    /// no-cache rows and the handler-cache rows (two of each bulk there).
    #[test]
    fn the_reference_runs_where_ptr_ring_has_no_dpdk_cache() {
        let name = crate::floor::NAME;
        let fits: Vec<MempoolKey> = rows()
            .into_iter()
            .filter(|k| handler_fits(name, k))
            .collect();
        for k in &fits {
            assert_eq!(k.lcores, 1, "{k}");
            assert_eq!(
                side(k, name),
                Side {
                    dpdk_cache: 0,
                    handler_cache: 0
                },
                "{k}"
            );
            assert_eq!(side(k, OURS).dpdk_cache, 0, "{k}");
        }
        for k in rows() {
            if k.lcores == 1 && side(&k, OURS).dpdk_cache == 0 {
                assert!(handler_fits(name, &k), "{k}");
            }
        }
        let own = fits.iter().filter(|k| k.group == Group::OwnCache).count();
        assert_eq!(own, 4);
    }

    #[test]
    fn swinging_rows_are_two_lcores_recycling() {
        let s: Vec<MempoolKey> = rows().into_iter().filter(swinging_row).collect();
        assert!(s
            .iter()
            .all(|k| k.lcores == 2 && k.pattern == Pattern::Recycle));
        assert!(s.iter().any(|k| k.group == Group::NoCache && k.bulk == 1));
        assert!(!s.iter().any(|k| k.group == Group::Control));
        assert_eq!(s.len(), 7);
    }

    #[test]
    fn own_cache_rows_give_each_side_its_cache() {
        let k = rows()
            .into_iter()
            .find(|k| k.group == Group::OwnCache)
            .unwrap();
        assert_eq!(side(&k, OURS).dpdk_cache, 0);
        assert_eq!(side(&k, OURS).handler_cache, 256);
        assert_eq!(side(&k, BASELINE).dpdk_cache, 256);
        assert_eq!(side(&k, BASELINE).handler_cache, 0);
        // The newest-first pool is ours too: its own cache, not DPDK's.
        let newest = side(&k, crate::pool_config::PTR_RING_NEWEST);
        assert_eq!((newest.dpdk_cache, newest.handler_cache), (0, 256));
    }
}
