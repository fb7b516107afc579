//! The pure layout function, [`PoolConfig::layout`]: every byte of the
//! pool's single shared block is placed here, before any memory exists, so
//! the glue can reserve it (`rte_zmalloc`, a memzone) and every process
//! finds each part at the same offset. It reads the header's size and
//! alignment from [`pool`](crate::pool), whose header holds a
//! [`PoolLayout`]: the configuration types (`config.rs`) depend on neither.
//!
//! # Block layout
//! ```text
//! 0               PoolCore header (config + magic, shared counters, chunk
//!                 table header, DMA header, shutdown state, validation
//!                 counters; each group on its own cache lines)
//! ring_offset     (a constant: right after the header, aligned)
//!                 PtrRing header + slots, capacity = objects (its read-only
//!                 config carries the single-producer/consumer flags)
//! caches_offset   max_lcores × lcore cache (padded header + cache_size slots)
//! chunks_offset   max_chunks × chunk record
//! order_offset    max_chunks × u32 (record ids sorted by address)
//! devices_offset  max_devices × device slot
//! bitmap_offset   ⌈objects / 64⌉ × u64 home bitmap (validation only)
//! ```

use crate::chunk_table;
use crate::config::{PoolConfig, PoolLayout, MAX_CHUNKS, MAX_DEVICES, MAX_LCORES};
use crate::dma_table;
use crate::error::PoolError;
use crate::lcore_cache;
use crate::pool::{HEADER_ALIGN, RING_OFFSET};
use crate::ptr_ring::{RingLayout, MAX_CAPACITY};
use crate::validation;

impl PoolConfig {
    /// Places every part of the pool in one block.
    pub fn layout(&self) -> Result<PoolLayout, PoolError> {
        let check = |what, value: usize, min, max| {
            if value < min || value > max {
                Err(PoolError::BadConfig {
                    what,
                    value,
                    min,
                    max,
                })
            } else {
                Ok(())
            }
        };
        check("objects", self.objects, 1, MAX_CAPACITY)?;
        check(
            "max_lcores",
            self.max_lcores as usize,
            0,
            MAX_LCORES as usize,
        )?;
        check("max_chunks", self.max_chunks, 1, MAX_CHUNKS)?;
        check("max_devices", self.max_devices, 0, MAX_DEVICES)?;
        let cache_size = self.resolved_cache_size()?;
        // Never above `MAX_CACHE_SIZE`, which every lcore's area holds
        // (`lcore_cache::stride`), except in a Miri build's smaller areas.
        check("cache_size", cache_size, 0, lcore_cache::AREA_SLOTS)?;
        // Capacity = objects: putting back every object always succeeds.
        // MP/MC whatever the flags: this function is safe, so the layout it
        // returns must not carry modes whose contract nobody promised (see
        // `PoolLayout::ring`). `PoolCore::init`, whose caller does promise
        // it, applies the flags.
        let ring = RingLayout::for_capacity(self.objects).ok_or(PoolError::BadConfig {
            what: "objects",
            value: self.objects,
            min: 1,
            max: MAX_CAPACITY,
        })?;

        // A constant: the fast paths reach the ring without loading it.
        let ring_offset = RING_OFFSET;
        let lcore_stride = lcore_cache::stride(cache_size);
        let caches_offset = (ring_offset + ring.bytes()).next_multiple_of(lcore_cache::CACHE_ALIGN);
        let chunks_offset = (caches_offset + lcore_stride * self.max_lcores as usize)
            .next_multiple_of(chunk_table::ENTRY_ALIGN);
        let order_offset =
            (chunks_offset + chunk_table::entries_bytes(self.max_chunks)).next_multiple_of(8);
        let devices_offset = (order_offset + chunk_table::order_bytes(self.max_chunks))
            .next_multiple_of(dma_table::SLOT_ALIGN);
        let bitmap_offset =
            (devices_offset + dma_table::slots_bytes(self.max_devices)).next_multiple_of(8);
        let bitmap_words = validation::bitmap_words(self.objects, self.validate);
        let align = HEADER_ALIGN.max(ring.align()).max(lcore_cache::CACHE_ALIGN);
        let bytes = (bitmap_offset + bitmap_words * 8).next_multiple_of(align);
        Ok(PoolLayout {
            config: *self,
            cache_size,
            ring,
            ring_offset,
            caches_offset,
            lcore_stride,
            chunks_offset,
            order_offset,
            devices_offset,
            bitmap_offset,
            bitmap_words,
            bytes,
            align,
        })
    }
}
