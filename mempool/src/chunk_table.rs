//! The IOVA table: the memory chunks a pool is populated from, each
//! recorded once with its virtual range, IOVA and the run of objects laid in
//! it.
//!
//! Lookups (`find`, and through it the pool's `iova_of` / `owns`) are
//! lockless binary searches, O(log chunks). Records are append-only and never
//! change once published (until every chunk is forgotten, see
//! [`Chunks::forget_all`]); only the sorted order array is rewritten on
//! insertion, under a sequence counter that readers re-check.
//!
//! The table lives in the pool's shared block: a [`ChunkTable`] header, then
//! `max_chunks` [`ChunkEntry`] records and `max_chunks` order slots, located
//! by offsets relative to the header (no pointers).

use core::cell::UnsafeCell;

use crate::error::PoolError;
use crate::iova::{ChunkId, ChunkInfo, ChunkSpec, Iova, ObjIndex, VirtAddr, VirtRange};
use crate::sync::{spin_hint, AtomicU32, AtomicUsize, Ordering, SpinLock};

/// One chunk record in shared memory. Written once, before the table's
/// `count` publishes it, and never again: plain fields.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct ChunkEntry {
    va_start: usize,
    va_len: usize,
    iova: u64,
    first: usize,
    stride: usize,
    count: usize,
    first_index: usize,
}

impl ChunkEntry {
    /// The record of `spec`, whose objects take indices from `first_index`.
    fn of(spec: &ChunkSpec, first_index: usize) -> ChunkEntry {
        ChunkEntry {
            va_start: spec.va.start.0,
            va_len: spec.va.len,
            iova: Iova::to_raw(spec.iova),
            first: spec.first.0,
            stride: spec.stride,
            count: spec.count,
            first_index,
        }
    }

    fn info(&self, id: u32) -> ChunkInfo {
        ChunkInfo {
            id: ChunkId(id),
            va: VirtRange::new(VirtAddr(self.va_start), self.va_len),
            iova: Iova::from_raw(self.iova),
            first: VirtAddr(self.first),
            stride: self.stride,
            count: self.count,
            first_index: ObjIndex(self.first_index),
        }
    }
}

/// Bytes the records and order slots of a table of `max_chunks` take.
pub(crate) const fn entries_bytes(max_chunks: usize) -> usize {
    max_chunks * core::mem::size_of::<ChunkEntry>()
}

/// Bytes of the order array.
pub(crate) const fn order_bytes(max_chunks: usize) -> usize {
    max_chunks * core::mem::size_of::<AtomicU32>()
}

/// Alignment the records need.
pub(crate) const ENTRY_ALIGN: usize = core::mem::align_of::<ChunkEntry>();

/// The table header, inside the pool header. Arrays are found at
/// header-relative offsets.
#[repr(C)]
pub(crate) struct ChunkTable {
    /// Serialises registrations (slow path, control plane).
    lock: SpinLock,
    /// Even when the order array is stable, odd while it is rewritten.
    seq: AtomicU32,
    /// Published records. Release-stored after a record is written; pairs
    /// with the Acquire loads in `find` and `get`.
    count: AtomicUsize,
    /// Valid entries of the order array (`== count` between registrations).
    sorted: AtomicUsize,
    /// Objects registered so far: the pool's `populated` count and the next
    /// [`ObjIndex`]. Release-stored under `lock`; pairs with the Acquire load
    /// in `registered`.
    registered: AtomicUsize,
    max_chunks: usize,
    /// Offset of the `ChunkEntry` array from this header.
    entries_rel: usize,
    /// Offset of the `AtomicU32` order array (record ids sorted by `va_start`).
    order_rel: usize,
    /// Records are written through `&self`: keeps the header `!Freeze` (see
    /// `LcoreCache`), whatever the atomics are made of.
    _records_are_mutable: UnsafeCell<()>,
}

impl ChunkTable {
    /// A table whose arrays lie `entries_rel` / `order_rel` bytes after the
    /// header's final address.
    pub(crate) fn new(max_chunks: usize, entries_rel: usize, order_rel: usize) -> ChunkTable {
        ChunkTable {
            lock: SpinLock::new(),
            seq: AtomicU32::new(0),
            count: AtomicUsize::new(0),
            sorted: AtomicUsize::new(0),
            registered: AtomicUsize::new(0),
            max_chunks,
            entries_rel,
            order_rel,
            _records_are_mutable: UnsafeCell::new(()),
        }
    }
}

/// The chunk table as its methods use it: the header, and a pointer to it
/// whose provenance covers the pool's whole block. The records and the
/// order array lie after the pool header, outside what a `&ChunkTable`
/// covers, so they are reached from `at`, never from the reference.
#[derive(Clone, Copy)]
pub(crate) struct Chunks<'a> {
    hdr: &'a ChunkTable,
    at: *const u8,
}

impl core::ops::Deref for Chunks<'_> {
    type Target = ChunkTable;
    #[inline(always)]
    fn deref(&self) -> &ChunkTable {
        self.hdr
    }
}

impl<'a> Chunks<'a> {
    /// The table whose header is at `at`.
    ///
    /// # Safety
    /// `at` points to an initialised table header inside the pool's block,
    /// with provenance over the whole block, valid for `'a`.
    #[inline(always)]
    pub(crate) unsafe fn new(at: *const ChunkTable) -> Chunks<'a> {
        Chunks {
            // SAFETY: the caller's guarantee.
            hdr: unsafe { &*at },
            at: at.cast(),
        }
    }

    /// Holds registrations off (the table lock) while the final release
    /// decides, so a registration is either counted or refused.
    pub(crate) fn hold_registrations(&self) -> crate::sync::SpinGuard<'a> {
        self.lock_table()
    }

    /// The table lock; taken over from a dead holder, the table is repaired
    /// first ([`repair_order`](Self::repair_order)).
    fn lock_table(&self) -> crate::sync::SpinGuard<'a> {
        let hdr = self.hdr;
        let this = *self;
        match hdr
            .lock
            .lock_repairing(crate::owner::LockKind::ChunkTable, move || {
                this.repair_order()
            }) {
            Ok(g) => g,
            // `repair_order` never poisons, and nothing else shares the lock.
            Err(_) => unreachable!("the chunk table lock was poisoned"),
        }
    }

    /// After a registration died inside [`publish`](Self::publish) (the
    /// caller took the lock over): its record is published or not
    /// (`count`), but the order array may be half shifted, `sorted` behind
    /// `count`, `seq` odd (every lockless lookup spinning) or `registered`
    /// behind the record. Rebuilds the order array from the published
    /// records, brackets it with `seq` as `publish` does, and sets
    /// `sorted` and `registered` from the records.
    fn repair_order(&self) -> crate::owner::Repair {
        // Relaxed: written only under the lock we hold.
        let n = self.count.load(Ordering::Relaxed);
        let s = self.seq.load(Ordering::Relaxed);
        let sorted = self.sorted.load(Ordering::Relaxed);
        let registered = n.checked_sub(1).map_or(0, |last| {
            let e = self.entry(last);
            e.first_index + e.count
        });
        if s & 1 == 0 && sorted == n && self.registered.load(Ordering::Relaxed) == registered {
            return crate::owner::Repair::Nothing;
        }
        let odd = s | 1;
        // Relaxed: as in `publish`; the order stores below are Release.
        self.seq.store(odd, Ordering::Relaxed);
        let mut ids: Vec<u32> = (0..n as u32).collect();
        ids.sort_by_key(|&i| self.entry(i as usize).va_start);
        for (pos, &id) in ids.iter().enumerate() {
            // Release: as the order stores in `publish`.
            self.order(pos).store(id, Ordering::Release);
        }
        // Release: as in `publish`.
        self.sorted.store(n, Ordering::Release);
        self.registered.store(registered, Ordering::Release);
        // Release pairs with the Acquire opening load in `find`.
        self.seq.store(odd.wrapping_add(1), Ordering::Release);
        crate::owner::Repair::ChunkTable { records: n }
    }

    /// Writes the order slots (atomics must be created with `new` for loom).
    ///
    /// # Safety
    /// The header is at its final address in memory laid out by the pool.
    pub(crate) unsafe fn init_arrays(&self) {
        for i in 0..self.max_chunks {
            // SAFETY: the pool's layout reserved `max_chunks` order slots at
            // `order_rel`; nothing reads them before init returns.
            unsafe { self.order_ptr(i).cast_mut().write(AtomicU32::new(0)) };
        }
    }

    /// Drops the order slots in place (loom's atomics hold model state).
    ///
    /// # Safety
    /// Nothing uses the table afterwards.
    #[cfg(loom)]
    pub(crate) unsafe fn drop_arrays(&self) {
        for i in 0..self.max_chunks {
            // SAFETY: written in `init_arrays`, unused from here on.
            unsafe { core::ptr::drop_in_place(self.order_ptr(i).cast_mut()) };
        }
    }

    #[inline(always)]
    fn entry_ptr(&self, i: usize) -> *mut ChunkEntry {
        debug_assert!(i < self.max_chunks);
        // SAFETY: the layout reserved `max_chunks` records at `entries_rel`.
        unsafe {
            self.at
                .cast_mut()
                .add(self.entries_rel)
                .cast::<ChunkEntry>()
                .add(i)
        }
    }

    #[inline(always)]
    fn order_ptr(&self, i: usize) -> *const AtomicU32 {
        debug_assert!(i < self.max_chunks);
        // SAFETY: the layout reserved `max_chunks` order slots at `order_rel`.
        unsafe { self.at.add(self.order_rel).cast::<AtomicU32>().add(i) }
    }

    #[inline(always)]
    fn order(&self, i: usize) -> &AtomicU32 {
        // SAFETY: written in `init_arrays`, lives as long as the table.
        unsafe { &*self.order_ptr(i) }
    }

    /// The record `i`, which the caller knows is published.
    #[inline(always)]
    fn entry(&self, i: usize) -> ChunkEntry {
        // SAFETY: `i < count` as loaded with Acquire by the caller (or under
        // the lock): the record was fully written before `count` was
        // Release-stored and is never written again.
        unsafe { self.entry_ptr(i).read() }
    }

    /// Objects registered so far (the pool's populated count).
    #[inline]
    pub(crate) fn registered(&self) -> usize {
        // Acquire pairs with the Release store in `insert`.
        self.registered.load(Ordering::Acquire)
    }

    /// Published records.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        // Acquire pairs with the Release store in `insert`: records below the
        // value read are fully visible.
        self.count.load(Ordering::Acquire)
    }

    /// Bound on records.
    pub(crate) fn max_chunks(&self) -> usize {
        self.max_chunks
    }

    /// The record `id`, if published.
    pub(crate) fn get(&self, id: ChunkId) -> Option<ChunkInfo> {
        let i = id.0 as usize;
        (i < self.len()).then(|| self.entry(i).info(id.0))
    }

    /// Records a chunk. `max_objects` bounds the populated count.
    pub(crate) fn insert(
        &self,
        spec: &ChunkSpec,
        max_objects: usize,
        state_ok: impl FnOnce() -> Result<(), PoolError>,
    ) -> Result<ChunkInfo, PoolError> {
        let id = self.insert_all(core::slice::from_ref(spec), max_objects, state_ok)?;
        Ok(self.entry(id as usize).info(id))
    }

    /// Records `specs` all or nothing: every check (shape, state, table
    /// room, the populated bound, overlap with recorded chunks and with each
    /// other) passes before the first record is written. Returns the first
    /// new record's id; the records are that id and the ones after it, in
    /// the order of `specs`.
    pub(crate) fn insert_all(
        &self,
        specs: &[ChunkSpec],
        max_objects: usize,
        state_ok: impl FnOnce() -> Result<(), PoolError>,
    ) -> Result<u32, PoolError> {
        specs.iter().try_for_each(ChunkSpec::check_shape)?;
        let _guard = self.lock_table();
        // Under the lock the final release holds while it reads inflight:
        // either the release counts these objects, or this call sees it.
        state_ok()?;
        // Relaxed: `count` and `registered` are only written under the lock we hold.
        let n = self.count.load(Ordering::Relaxed);
        // The first spec past the table's room, if any.
        if let Some(spec) = specs.get(self.max_chunks.saturating_sub(n)) {
            return Err(PoolError::ChunkTableFull {
                max_chunks: self.max_chunks,
                va: spec.va,
            });
        }
        let reg = self.registered.load(Ordering::Relaxed);
        let count = specs
            .iter()
            .fold(0usize, |sum, s| sum.saturating_add(s.count));
        let would_be = reg.saturating_add(count);
        if would_be > max_objects {
            return Err(PoolError::TooManyObjects {
                count,
                would_be,
                objects: max_objects,
            });
        }
        for (j, spec) in specs.iter().enumerate() {
            for i in 0..n {
                let e = self.entry(i).info(i as u32);
                if e.va.overlaps(&spec.va) {
                    return Err(PoolError::ChunkOverlap {
                        va: spec.va,
                        existing: e.id,
                        existing_va: e.va,
                    });
                }
            }
            if let Some(other) = specs[..j].iter().find(|o| o.va.overlaps(&spec.va)) {
                return Err(PoolError::ChunksOverlap {
                    va: spec.va,
                    other: other.va,
                });
            }
        }
        let mut first_index = reg;
        for (k, spec) in specs.iter().enumerate() {
            self.publish(n + k, spec, first_index);
            first_index += spec.count;
        }
        Ok(n as u32)
    }

    /// Writes record `n` and publishes it: `count`, `registered`, then its
    /// place in the order array. The caller holds the lock, has checked the
    /// record, and `n` is the current `count`.
    fn publish(&self, n: usize, spec: &ChunkSpec, first_index: usize) {
        let rec = ChunkEntry::of(spec, first_index);
        // SAFETY: slot `n < max_chunks` is unpublished (readers only look
        // below `count`), and the caller holds the lock, so nobody else
        // writes it.
        unsafe { self.entry_ptr(n).write(rec) };
        // Release pairs with the Acquire loads in `len`/`find`: the record is
        // visible to whoever sees the new count.
        self.count.store(n + 1, Ordering::Release);
        // Release pairs with the Acquire load in `registered`.
        self.registered
            .store(first_index + spec.count, Ordering::Release);

        // Insert id `n` into the order array, sorted by va_start.
        // Relaxed: `seq` is only written under the lock.
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        // Relaxed loads: order slots are only written under the lock.
        let mut pos = n;
        while pos > 0 {
            let prev = self.order(pos - 1).load(Ordering::Relaxed);
            if self.entry(prev as usize).va_start < rec.va_start {
                break;
            }
            // Release pairs with the Acquire order loads in `find`: a reader
            // that sees this shifted value also sees the odd `seq` above,
            // so its closing `seq` check fails and it retries.
            self.order(pos).store(prev, Ordering::Release);
            pos -= 1;
        }
        // Release: as above.
        self.order(pos).store(n as u32, Ordering::Release);
        self.sorted.store(n + 1, Ordering::Release);
        // Release pairs with the Acquire opening load in `find`: a reader
        // starting at this even value sees the whole rewritten order array.
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// Forgets every record: the memory they describe was taken away
    /// (DPDK frees every chunk of a pool whose populate failed part-way).
    /// The next registration starts again at record 0 and object index 0,
    /// rewriting the records in place.
    ///
    /// # Safety
    /// No other thread uses the table during the call (no look-up, no
    /// registration), and nothing uses a record or object index found
    /// before it.
    pub(crate) unsafe fn forget_all(&self) {
        let _guard = self.lock_table();
        // Relaxed: `seq` is only written under the lock; odd while the
        // table changes, as in `publish`.
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        // Release: pairs with the Acquire loads in `len`, `registered` and
        // `find`, as the stores in `publish`.
        self.sorted.store(0, Ordering::Release);
        self.count.store(0, Ordering::Release);
        self.registered.store(0, Ordering::Release);
        // Release pairs with the Acquire opening load in `find`.
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// The chunk whose range contains `a`. Lockless, O(log chunks).
    pub(crate) fn find(&self, a: VirtAddr) -> Option<ChunkInfo> {
        'retry: loop {
            // Acquire pairs with the closing Release store of `seq` in `insert`.
            let s1 = self.seq.load(Ordering::Acquire);
            if s1 & 1 == 1 {
                spin_hint();
                continue;
            }
            let published = self.len();
            // Acquire pairs with the Release store in `insert`.
            let m = self.sorted.load(Ordering::Acquire).min(published);
            // Binary search for the last record with va_start <= a.
            let (mut lo, mut hi) = (0usize, m);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                // Acquire pairs with the Release order stores in `insert`
                // (see there), and keeps the closing `seq` load below after it.
                let id = self.order(mid).load(Ordering::Acquire) as usize;
                if id >= published {
                    // A value from a registration we have not synchronised
                    // with: the order array moved under us.
                    spin_hint();
                    continue 'retry;
                }
                if self.entry(id).va_start <= a.0 {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            let found = if lo == 0 {
                None
            } else {
                // Acquire: as above.
                let id = self.order(lo - 1).load(Ordering::Acquire) as usize;
                if id >= published {
                    spin_hint();
                    continue 'retry;
                }
                let info = self.entry(id).info(id as u32);
                info.va.contains(a).then_some(info)
            };
            // Relaxed: the Acquire order loads above keep this load after them.
            if self.seq.load(Ordering::Relaxed) == s1 {
                return found;
            }
            spin_hint();
        }
    }
}

/// The chunk table's takeover: a registration emulated dead inside
/// `publish` (its id in the lock word, the table as it left it).
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::owner::{self, TEST_DEAD as DEAD};
    use crate::{HeapPool, PoolConfig};

    fn spec(i: usize) -> ChunkSpec {
        let base = 0x10_0000 + i * 0x1000;
        ChunkSpec {
            va: VirtRange::new(VirtAddr(base), 0x1000),
            iova: Some(Iova(0x9000_0000 + base as u64)),
            first: VirtAddr(base),
            stride: 0x100,
            count: 16,
        }
    }

    #[test]
    fn a_registration_dead_inside_publish_leaves_the_table_repaired() {
        owner::set_test_liveness();
        let pool = HeapPool::new(&PoolConfig::new(64)).expect("pool");
        let t = pool.table();
        // Registered in descending addresses, so each insert shifts the order.
        for i in [3, 1] {
            t.insert(&spec(i), 64, || Ok(())).expect("insert");
        }
        // A registration of chunk 2 took the lock, wrote and published its
        // record, made `seq` odd and died before it sorted the record in.
        assert!(t.lock.try_take(DEAD));
        let n = t.count.load(Ordering::Relaxed);
        let rec = ChunkEntry::of(&spec(2), 32);
        // SAFETY: slot `n` is unpublished and this thread holds the lock
        // (in the dead holder's name).
        unsafe { t.entry_ptr(n).write(rec) };
        t.count.store(n + 1, Ordering::Release);
        let s = t.seq.load(Ordering::Relaxed);
        t.seq.store(s + 1, Ordering::Relaxed);
        // The next registration takes the lock over and repairs the table.
        t.insert(&spec(0), 64, || Ok(()))
            .expect("insert after the takeover");
        assert_eq!(t.seq.load(Ordering::Relaxed) & 1, 0, "seq even again");
        assert_eq!(t.registered(), 64);
        for i in 0..4 {
            let a = VirtAddr(0x10_0000 + i * 0x1000 + 8);
            let c = t.find(a).unwrap_or_else(|| panic!("chunk {i} not found"));
            assert_eq!(c.va.start.0, 0x10_0000 + i * 0x1000);
        }
        assert!(t.find(VirtAddr(0x10_0000 + 4 * 0x1000)).is_none());
    }
}
