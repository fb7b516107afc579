//! Which build made a pool: [`BuildId`], a hash of everything two
//! processes must agree on to share a pool's block, stored in its header
//! next to the magic and compared where the magic is ([`PoolCore::attach`]).
//!
//! The magic names the format a person changed by hand; the hash catches
//! what nobody bumped it for: a field moved, a type grown, a feature turned
//! off (`accounting` removes the hold/release counters), another compiler
//! (the `repr(Rust)` parts of the layout are the compiler's choice), another
//! target. It is computed at compile time from `size_of`, `align_of` and
//! `offset_of!` of every type the block stores, so it follows the code.
//! The get/put fast paths never read it: they trust a block that
//! [`PoolCore::attach`] (or, in the glue, the zone's magic, which folds the
//! glue's own hash in) accepted.

use core::fmt;
use core::mem::{align_of, offset_of, size_of};

use super::{Header, PoolCore, HEADER_ALIGN, HEADER_BYTES, POOL_MAGIC, RING_OFFSET};
use crate::chunk_table::{ChunkEntry, ChunkTable};
use crate::config::{PoolConfig, PoolLayout};
use crate::dma_table::{DeviceSlot, DmaTable};
use crate::inflight::SharedCounters;
use crate::ptr_ring::RingLayout;
use crate::state::Shutdown;
use crate::validation::Validator;

/// The build that made a pool (or a glue zone): stored in the block's
/// header, checked on attach. Two builds share a block only if their
/// hashes are equal; `features` and `release` are there to name the
/// builds in the error.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuildId {
    /// FNV-1a over the layout description, the features, the target, the
    /// crate version and the compiler's version (and what an embedding
    /// crate adds with [`BuildId::extend`]).
    pub hash: u64,
    /// Feature bits ([`BuildId::ACCOUNTING`], [`BuildId::LOOM`]).
    pub features: u32,
    /// A word the embedding crate describes (the glue: the DPDK release it
    /// was built against); 0 in the core's own.
    pub release: u32,
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a of `bytes`, continuing from `h`.
const fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        h ^= bytes[i] as u64;
        h = h.wrapping_mul(FNV_PRIME);
        i += 1;
    }
    h
}

/// FNV-1a of `words` (each as 8 little-endian bytes), continuing from `h`.
const fn fnv1a_words(mut h: u64, words: &[usize]) -> u64 {
    let mut i = 0;
    while i < words.len() {
        h = fnv1a(h, &(words[i] as u64).to_le_bytes());
        i += 1;
    }
    h
}

/// The block as this build lays it out: every size, alignment and offset
/// that another build must share to read it.
const LAYOUT: &[usize] = &[
    POOL_MAGIC as usize,
    // The pool header.
    size_of::<Header>(),
    align_of::<Header>(),
    offset_of!(Header, magic),
    offset_of!(Header, build),
    offset_of!(Header, max_lcores),
    offset_of!(Header, fast_lcores),
    offset_of!(Header, caches_offset),
    offset_of!(Header, lcore_stride),
    offset_of!(Header, direct),
    offset_of!(Header, validate),
    offset_of!(Header, checked),
    offset_of!(Header, newest_first),
    offset_of!(Header, layout),
    HEADER_BYTES,
    HEADER_ALIGN,
    RING_OFFSET,
    // The parts after it.
    offset_of!(PoolCore, shared),
    offset_of!(PoolCore, table_hdr),
    offset_of!(PoolCore, dma_hdr),
    offset_of!(PoolCore, shutdown),
    offset_of!(PoolCore, validator_hdr),
    size_of::<SharedCounters>(),
    size_of::<ChunkTable>(),
    size_of::<DmaTable>(),
    size_of::<Shutdown>(),
    size_of::<Validator>(),
    size_of::<ChunkEntry>(),
    align_of::<ChunkEntry>(),
    size_of::<DeviceSlot>(),
    align_of::<DeviceSlot>(),
    crate::lcore_cache::HEADER_BYTES,
    crate::lcore_cache::CACHE_ALIGN,
    // The layout stored in the header (`repr(Rust)`: its offsets are the
    // compiler's, hence the compiler's version below).
    size_of::<PoolLayout>(),
    offset_of!(PoolLayout, config),
    offset_of!(PoolLayout, cache_size),
    offset_of!(PoolLayout, ring),
    offset_of!(PoolLayout, ring_offset),
    offset_of!(PoolLayout, caches_offset),
    offset_of!(PoolLayout, lcore_stride),
    offset_of!(PoolLayout, chunks_offset),
    offset_of!(PoolLayout, order_offset),
    offset_of!(PoolLayout, devices_offset),
    offset_of!(PoolLayout, bitmap_offset),
    offset_of!(PoolLayout, bitmap_words),
    offset_of!(PoolLayout, bytes),
    offset_of!(PoolLayout, align),
    size_of::<PoolConfig>(),
    offset_of!(PoolConfig, objects),
    offset_of!(PoolConfig, max_lcores),
    offset_of!(PoolConfig, cache_size),
    offset_of!(PoolConfig, max_chunks),
    offset_of!(PoolConfig, max_devices),
    offset_of!(PoolConfig, validate),
    offset_of!(PoolConfig, retry_period_ns),
    offset_of!(PoolConfig, warn_period_ns),
    offset_of!(PoolConfig, single_producer),
    offset_of!(PoolConfig, single_consumer),
    offset_of!(PoolConfig, newest_first),
    size_of::<RingLayout>(),
    align_of::<RingLayout>(),
    // The ring: its header and its slots.
    crate::ptr_ring::HEADER_BYTES,
    crate::ptr_ring::ALIGN,
    size_of::<usize>(),
];

/// Feature bits of this build.
const FEATURES: u32 = (if cfg!(feature = "accounting") {
    BuildId::ACCOUNTING
} else {
    0
}) | (if cfg!(loom) { BuildId::LOOM } else { 0 });

/// What else two builds must share: the target and the code's versions.
const fn core_hash() -> u64 {
    let h = fnv1a_words(FNV_OFFSET, LAYOUT);
    let h = fnv1a(h, &FEATURES.to_le_bytes());
    let h = fnv1a(h, std::env::consts::ARCH.as_bytes());
    let h = fnv1a(h, &[cfg!(target_endian = "little") as u8]);
    let h = fnv1a(h, env!("CARGO_PKG_VERSION").as_bytes());
    // From build.rs: `rustc -V`.
    fnv1a(h, env!("MEMPOOL_RUSTC_VERSION").as_bytes())
}

impl BuildId {
    /// Feature bit: hold/release counters (feature `accounting`).
    pub const ACCOUNTING: u32 = 1 << 0;
    /// Feature bit: built for loom's models (`cfg(loom)`).
    pub const LOOM: u32 = 1 << 1;

    /// This build of the core, as [`PoolCore::init`] stores it.
    pub const CORE: BuildId = BuildId {
        hash: core_hash(),
        features: FEATURES,
        release: 0,
    };

    /// This identity with `words` (an embedding crate's own layouts and
    /// versions) hashed in, and `release` as the word that names them.
    pub const fn extend(self, words: &[usize], release: u32) -> BuildId {
        BuildId {
            hash: fnv1a(fnv1a_words(self.hash, words), &release.to_le_bytes()),
            features: self.features,
            release,
        }
    }

    /// Whether the build keeps hold/release counters.
    pub const fn accounting(&self) -> bool {
        self.features & BuildId::ACCOUNTING != 0
    }
}

/// `0123456789abcdef (accounting on)`: the hash, then the features.
impl fmt::Display for BuildId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:016x} (accounting {}{})",
            self.hash,
            if self.accounting() { "on" } else { "off" },
            if self.features & BuildId::LOOM != 0 {
                ", loom"
            } else {
                ""
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_is_the_reference_function() {
        // The FNV-1a test vectors for 64 bits.
        assert_eq!(fnv1a(FNV_OFFSET, b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(FNV_OFFSET, b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn every_word_and_the_release_change_the_hash() {
        let base = BuildId::CORE;
        let a = base.extend(&[1, 2], 7);
        assert_ne!(a.hash, base.hash);
        assert_ne!(a.hash, base.extend(&[2, 1], 7).hash);
        assert_ne!(a.hash, base.extend(&[1, 2], 8).hash);
        assert_eq!(a, base.extend(&[1, 2], 7));
        assert_eq!((a.features, a.release), (base.features, 7));
    }

    #[test]
    fn the_features_are_this_builds() {
        assert_eq!(BuildId::CORE.accounting(), crate::ACCOUNTING);
        let shown = BuildId::CORE.to_string();
        assert!(shown.starts_with(&format!("{:016x} ", BuildId::CORE.hash)));
        let want = if crate::ACCOUNTING {
            "accounting on"
        } else {
            "accounting off"
        };
        assert!(shown.contains(want), "{shown}");
    }
}
