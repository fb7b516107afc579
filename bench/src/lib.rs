//! Shared helpers of the benchmarks (see `bench/README.md`).
//!
//! * [`stats`]: median and spread of a set of samples;
//! * [`record`]: the CSV lines `mempool_bench` and `bench/run.sh` write and
//!   `bench_report` reads;
//! * [`floor`]: `floor_lifo`, the single-thread ruler handler of issue 7;
//! * [`targets`]: the targets of issue 7 (ratio of `ptr_ring` to `ring_mp_mc`).

pub mod floor;
pub mod record;
pub mod stats;
pub mod targets;
