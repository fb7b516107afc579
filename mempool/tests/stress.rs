//! Two-thread stress: alloc on one lcore and free on another (handover
//! through a channel), and same-thread recycling on an lcore racing the
//! non-EAL ring path. Every object is out at most once at any time (owner
//! flags), and at the end conservation and exactly-once hold.
#![cfg(not(loom))]

mod common;

use core::ffi::c_void;
use core::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use common::*;
use mempool::{HeapPool, PoolConfig, PoolError};

const OBJECTS: usize = 4096;
const TIME: Duration = Duration::from_millis(1500);

struct Shared {
    pool: HeapPool,
    /// 1 while an object is out with a test thread.
    out: Vec<AtomicU8>,
    moved: AtomicU64,
}

impl Shared {
    fn new(cache: usize, validate: bool) -> Arc<Shared> {
        Shared::with(PoolConfig {
            cache_size: Some(cache),
            validate,
            ..PoolConfig::new(OBJECTS)
        })
    }

    /// A pool of `cfg` (its object count `OBJECTS`), lcores 0 and 1 with
    /// a slot.
    fn with(cfg: PoolConfig) -> Arc<Shared> {
        let pool = populated_pool(
            PoolConfig {
                max_lcores: 2,
                ..cfg
            },
            0,
        );
        Arc::new(Shared {
            pool,
            out: (0..OBJECTS).map(|_| AtomicU8::new(0)).collect(),
            moved: AtomicU64::new(0),
        })
    }

    fn took(&self, objs: &[*mut c_void]) {
        for &p in objs {
            assert_eq!(
                self.out[idx(p)].swap(1, Ordering::AcqRel),
                0,
                "object {} handed out twice",
                idx(p)
            );
        }
        self.moved.fetch_add(objs.len() as u64, Ordering::Relaxed);
    }

    fn giving_back(&self, objs: &[*mut c_void]) {
        for &p in objs {
            assert_eq!(
                self.out[idx(p)].swap(0, Ordering::AcqRel),
                1,
                "object {} returned but not out",
                idx(p)
            );
        }
    }

    /// Gets `k` objects on `lcore`, retrying while the pool is exhausted.
    fn get(&self, lcore: u32, k: usize, stop: &AtomicBool) -> Option<Vec<*mut c_void>> {
        let mut o = vec![null_mut(); k];
        loop {
            // SAFETY: each test thread uses its own lcore id.
            match unsafe { self.pool.get(lcore, &mut o) } {
                Ok(()) => {
                    self.took(&o);
                    return Some(o);
                }
                Err(PoolError::Exhausted { .. }) => {
                    if stop.load(Ordering::Relaxed) {
                        return None;
                    }
                    std::thread::yield_now();
                }
                Err(e) => panic!("{e}"),
            }
        }
    }

    fn put(&self, lcore: u32, o: &[*mut c_void]) {
        self.giving_back(o);
        // SAFETY: each test thread uses its own lcore id.
        unsafe { self.pool.put(lcore, o) }.unwrap();
    }
}

fn bulk(x: &mut u64) -> usize {
    1 + (next_random(x) % 48) as usize // some above the cache size
}

fn alloc_here_free_there(cache: usize, validate: bool) {
    alloc_here_free_there_in(Shared::new(cache, validate));
}

fn alloc_here_free_there_in(sh: Arc<Shared>) {
    let (cache, validate) = (sh.pool.cache_size(), sh.pool.validating());
    let stop = Arc::new(AtomicBool::new(false));
    struct Send(Vec<*mut c_void>);
    // SAFETY: the pointers are plain addresses, never dereferenced.
    unsafe impl std::marker::Send for Send {}
    let (tx2, rx2) = mpsc::sync_channel::<Send>(64);
    let producer = {
        let (sh, stop) = (Arc::clone(&sh), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut x = 0x1234_5678_9abc_def1u64;
            let t0 = Instant::now();
            while t0.elapsed() < TIME {
                let Some(o) = sh.get(0, bulk(&mut x), &stop) else {
                    break;
                };
                tx2.send(Send(o)).unwrap();
            }
            stop.store(true, Ordering::Relaxed);
        })
    };
    let consumer = {
        let sh = Arc::clone(&sh);
        std::thread::spawn(move || {
            for Send(o) in rx2 {
                sh.put(1, &o);
            }
        })
    };
    producer.join().unwrap();
    consumer.join().unwrap();
    assert!(
        sh.moved.load(Ordering::Relaxed) > 10_000,
        "stress moved too little"
    );
    assert_eq!(sh.pool.inflight(), 0);
    assert_conserved(&sh.pool);
    assert_exactly_once(&sh.pool);
    eprintln!(
        "handover cache={cache} validate={validate}: {} objects",
        sh.moved.load(Ordering::Relaxed)
    );
}

#[test]
fn alloc_on_one_lcore_free_on_the_other() {
    alloc_here_free_there(32, false);
}

#[test]
fn alloc_on_one_lcore_free_on_the_other_validated() {
    alloc_here_free_there(32, true);
}

#[test]
fn alloc_on_one_lcore_free_on_the_other_no_cache() {
    alloc_here_free_there(0, false);
}

/// Newest-first gets (`PoolConfig::newest_first`): the getting lcore never
/// put, so its gets stay oldest first, beside the putting lcore's puts that
/// name it.
#[test]
fn alloc_on_one_lcore_free_on_the_other_newest_first() {
    for cache in [0, 32] {
        alloc_here_free_there_in(Shared::with(PoolConfig {
            cache_size: Some(cache),
            newest_first: true,
            ..PoolConfig::new(OBJECTS)
        }));
    }
}

#[test]
fn same_thread_recycling_on_an_lcore_and_the_ring_path() {
    recycling(Shared::new(64, false), &[0, u32::MAX]);
}

/// Two lcores and a thread without a slot each recycling on a newest-first
/// pool: takes back from the producer end (both locks) racing FIFO gets,
/// puts naming their lcore and plain ones.
#[test]
fn recycling_on_two_lcores_and_the_ring_path_newest_first() {
    for cache in [0, 32] {
        let sh = Shared::with(PoolConfig {
            cache_size: Some(cache),
            newest_first: true,
            ..PoolConfig::new(OBJECTS)
        });
        recycling(sh, &[0, 1, u32::MAX]);
    }
}

fn recycling(sh: Arc<Shared>, lcores: &[u32]) {
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = lcores
        .iter()
        .copied()
        .map(|lcore| {
            let (sh, stop) = (Arc::clone(&sh), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ u64::from(lcore);
                let mut held: Vec<Vec<*mut c_void>> = Vec::new();
                let t0 = Instant::now();
                while t0.elapsed() < TIME {
                    // Hold up to a few bulks so the threads compete for objects.
                    if held.len() < 8 && x & 1 == 0 {
                        if let Some(o) = sh.get(lcore, bulk(&mut x), &stop) {
                            held.push(o);
                        }
                    } else if let Some(o) = held.pop() {
                        sh.put(lcore, &o);
                    }
                    bulk(&mut x);
                }
                for o in held {
                    sh.put(lcore, &o);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    assert!(sh.moved.load(Ordering::Relaxed) > 10_000);
    assert_eq!(sh.pool.inflight(), 0);
    assert_conserved(&sh.pool);
    assert_exactly_once(&sh.pool);
    eprintln!(
        "recycling on {lcores:?}, cache {}, newest first {}: {} objects",
        sh.pool.cache_size(),
        sh.pool.newest_first(),
        sh.moved.load(Ordering::Relaxed)
    );
}
