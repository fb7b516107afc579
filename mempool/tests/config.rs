//! The pure layout function: bounds, the cache sizing rule, and a block whose
//! parts never overlap.
#![cfg(not(loom))]

use mempool::config::{DEFAULT_CACHE_CAP, MAX_CACHE_SIZE};
use mempool::{PoolConfig, PoolError};

#[test]
fn default_cache_rule() {
    // min(128, objects / (1.5 * max_lcores))
    assert_eq!(PoolConfig::default_cache_size(8192, 128), 42);
    assert_eq!(PoolConfig::default_cache_size(8192, 4), DEFAULT_CACHE_CAP);
    assert_eq!(
        PoolConfig::default_cache_size(1 << 20, 128),
        DEFAULT_CACHE_CAP
    );
    assert_eq!(PoolConfig::default_cache_size(100, 128), 0);
    assert_eq!(PoolConfig::default_cache_size(100, 0), 0);
    for objects in [1usize, 7, 100, 1000, 8191, 65535, 1 << 20] {
        for lcores in [1u32, 2, 8, 64, 128, 1024] {
            let c = PoolConfig::default_cache_size(objects, lcores);
            // All caches together never exceed two thirds of the pool.
            assert!(
                c * lcores as usize * 3 <= objects * 2,
                "{objects} {lcores} {c}"
            );
            assert!(c <= DEFAULT_CACHE_CAP);
        }
    }
}

#[test]
fn explicit_cache_size_follows_dpdk_rule() {
    let mut c = PoolConfig::new(300);
    c.cache_size = Some(200); // 300 / 1.5
    assert_eq!(c.layout().unwrap().cache_size(), 200);
    c.cache_size = Some(201);
    assert_eq!(
        c.layout().unwrap_err(),
        PoolError::BadConfig {
            what: "cache_size",
            value: 201,
            min: 0,
            max: 200
        }
    );
    let mut big = PoolConfig::new(100_000);
    big.cache_size = Some(MAX_CACHE_SIZE + 1);
    assert!(matches!(
        big.layout(),
        Err(PoolError::BadConfig {
            what: "cache_size",
            ..
        })
    ));
    big.cache_size = Some(MAX_CACHE_SIZE);
    assert!(big.layout().is_ok());
}

#[test]
fn bad_values_are_rejected_with_the_value() {
    let e = PoolConfig::new(0).layout().unwrap_err();
    assert!(
        matches!(
            e,
            PoolError::BadConfig {
                what: "objects",
                value: 0,
                ..
            }
        ),
        "{e}"
    );
    let mut c = PoolConfig::new(10);
    c.max_chunks = 0;
    assert!(matches!(
        c.layout(),
        Err(PoolError::BadConfig {
            what: "max_chunks",
            ..
        })
    ));
    let mut c = PoolConfig::new(10);
    c.max_lcores = 5000;
    assert!(matches!(
        c.layout(),
        Err(PoolError::BadConfig {
            what: "max_lcores",
            value: 5000,
            ..
        })
    ));
}

#[test]
fn parts_are_ordered_aligned_and_disjoint() {
    for validate in [false, true] {
        for objects in [1usize, 63, 64, 1000, 8191] {
            let cfg = PoolConfig {
                validate,
                ..PoolConfig::new(objects)
            };
            let l = cfg.layout().unwrap();
            assert!(l.align() >= 128 && l.align().is_power_of_two());
            assert_eq!(l.bytes() % l.align(), 0);
            assert!(
                l.ring().capacity() >= objects,
                "ring must hold every object"
            );
            assert_eq!(l.ring_offset() % l.ring().align(), 0);
            assert!(l.ring_offset() >= mempool::pool::HEADER_BYTES);
            assert!(l.caches_offset() >= l.ring_offset() + l.ring().bytes());
            assert_eq!(l.caches_offset() % 128, 0);
            assert_eq!(l.lcore_stride() % 128, 0);
            assert!(l.lcore_stride() >= 128 + l.cache_size() * 8);
            assert!(
                l.chunks_offset() >= l.caches_offset() + l.lcore_stride() * cfg.max_lcores as usize
            );
            assert!(l.order_offset() > l.chunks_offset());
            assert!(l.devices_offset() > l.order_offset());
            assert!(l.bitmap_offset() >= l.devices_offset());
            assert_eq!(
                l.bitmap_words(),
                if validate { objects.div_ceil(64) } else { 0 }
            );
            assert!(l.bytes() >= l.bitmap_offset() + l.bitmap_words() * 8);
        }
    }
}
