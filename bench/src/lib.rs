//! Shared helpers of the benchmarks (see `bench/README.md`).
//!
//! * [`stats`]: medians, spread, paired ratios with bootstrap intervals;
//! * [`record`]: the CSV lines `mempool_bench` and `bench/run.sh` write and
//!   `bench_report` reads;
//! * [`matrix`]: the rows of `mempool_bench` and each side's caches;
//! * [`floor`]: `floor_lifo`, the single-thread reference handler;
//! * [`line`](mod@line): the round trip of a cache line between two CPUs;
//! * [`targets`]: the targets (ratio of `ptr_ring` to `ring_mp_mc`).

pub mod floor;
pub mod line;
pub mod matrix;
pub mod pool_config;
pub mod record;
pub mod stats;
pub mod targets;
