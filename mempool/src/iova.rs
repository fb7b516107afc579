//! Address newtypes (virtual addresses, IOVAs, their ranges, object and
//! chunk indices) and the chunks a pool is populated from, as the caller
//! registers them ([`ChunkSpec`]) and as the table gives them back
//! ([`ChunkInfo`]). The table itself is `crate::chunk_table`.

use core::fmt;

use crate::error::PoolError;

/// DPDK's `RTE_BAD_IOVA`: "this memory has no IOVA".
pub const BAD_IOVA: u64 = u64::MAX;

/// A virtual address in the (shared) address space of the processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct VirtAddr(pub usize);

impl VirtAddr {
    /// The address of a pointer.
    #[inline]
    pub fn of<T>(p: *const T) -> VirtAddr {
        VirtAddr(p as usize)
    }

    /// The address as a raw pointer.
    #[inline]
    pub fn as_ptr<T>(self) -> *mut T {
        self.0 as *mut T
    }

    /// `self + off`, or `None` on overflow.
    #[inline]
    pub fn checked_add(self, off: usize) -> Option<VirtAddr> {
        self.0.checked_add(off).map(VirtAddr)
    }

    /// Bytes from `base` up to `self`, or `None` if `self < base`.
    #[inline]
    pub fn offset_from(self, base: VirtAddr) -> Option<usize> {
        self.0.checked_sub(base.0)
    }
}

impl fmt::Display for VirtAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "va {:#x}", self.0)
    }
}

/// An I/O virtual address: what a device uses to reach memory. Never mixed
/// with a [`VirtAddr`] by accident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct Iova(pub u64);

impl Iova {
    /// `None` for DPDK's [`BAD_IOVA`], the IOVA otherwise.
    #[inline]
    pub fn from_raw(raw: u64) -> Option<Iova> {
        (raw != BAD_IOVA).then_some(Iova(raw))
    }

    /// The raw value, [`BAD_IOVA`] for `None`.
    #[inline]
    pub fn to_raw(iova: Option<Iova>) -> u64 {
        iova.map_or(BAD_IOVA, |i| i.0)
    }
}

impl fmt::Display for Iova {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "iova {:#x}", self.0)
    }
}

/// A range of virtual memory, `[start, start + len)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VirtRange {
    /// First byte.
    pub start: VirtAddr,
    /// Length in bytes.
    pub len: usize,
}

impl VirtRange {
    /// The range `[start, start + len)`.
    pub fn new(start: VirtAddr, len: usize) -> VirtRange {
        VirtRange { start, len }
    }

    /// One past the last byte (saturating).
    #[inline]
    pub fn end(&self) -> usize {
        self.start.0.saturating_add(self.len)
    }

    /// Whether `a` lies in the range.
    #[inline]
    pub fn contains(&self, a: VirtAddr) -> bool {
        a.0 >= self.start.0 && a.0 < self.end()
    }

    /// Whether the two ranges share a byte.
    #[inline]
    pub fn overlaps(&self, o: &VirtRange) -> bool {
        self.start.0 < o.end() && o.start.0 < self.end()
    }
}

impl fmt::Display for VirtRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "va [{:#x}, {:#x})", self.start.0, self.end())
    }
}

/// A range of I/O virtual addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IovaRange {
    /// First IOVA.
    pub start: Iova,
    /// Length in bytes.
    pub len: usize,
}

/// Dense index of an object of the pool, `0..populated`, in registration
/// order. Stable for the pool's life; indexes the validation bitmap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjIndex(pub usize);

/// Index of a chunk record, in registration order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChunkId(pub u32);

/// What the caller registers: one memory chunk (or one page-bounded piece of
/// it) and the evenly spaced run of objects laid in it.
///
/// DPDK's populate helper keeps objects from crossing page boundaries, which
/// breaks the even spacing at page ends; register each evenly spaced run as
/// its own chunk with its own sub-range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkSpec {
    /// The memory.
    pub va: VirtRange,
    /// IOVA of `va.start`, `None` for `RTE_BAD_IOVA`.
    pub iova: Option<Iova>,
    /// Address of the first object (what DPDK enqueues: after the object header).
    pub first: VirtAddr,
    /// Distance between consecutive objects (DPDK's total element size).
    pub stride: usize,
    /// Objects in the run.
    pub count: usize,
}

impl ChunkSpec {
    /// `BadChunk` unless the run is non-empty, evenly spaced and inside `va`.
    pub(crate) fn check_shape(&self) -> Result<(), PoolError> {
        let bad = PoolError::BadChunk {
            va: self.va,
            first: self.first,
            stride: self.stride,
            count: self.count,
        };
        if self.count == 0 || self.stride == 0 || self.va.len == 0 {
            return Err(bad);
        }
        let last = (self.count - 1)
            .checked_mul(self.stride)
            .and_then(|o| self.first.checked_add(o))
            .ok_or(bad)?;
        if self.va.start.0.checked_add(self.va.len).is_none()
            || !self.va.contains(self.first)
            || !self.va.contains(last)
        {
            return Err(bad);
        }
        Ok(())
    }
}

/// A recorded chunk, as the table returns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkInfo {
    /// Its record index.
    pub id: ChunkId,
    /// The memory.
    pub va: VirtRange,
    /// IOVA of `va.start`, if any.
    pub iova: Option<Iova>,
    /// First object.
    pub first: VirtAddr,
    /// Distance between objects.
    pub stride: usize,
    /// Objects in the run.
    pub count: usize,
    /// [`ObjIndex`] of the first object; the run has `first_index..first_index + count`.
    pub first_index: ObjIndex,
}

impl ChunkInfo {
    /// The IOVA range of the chunk, if it has one.
    pub fn iova_range(&self) -> Option<IovaRange> {
        self.iova.map(|start| IovaRange {
            start,
            len: self.va.len,
        })
    }

    /// The IOVA of any address inside the chunk.
    #[inline]
    pub fn iova_of(&self, a: VirtAddr) -> Option<Iova> {
        let off = a.offset_from(self.va.start)?;
        if off >= self.va.len {
            return None;
        }
        // Checked: a record's IOVA plus an offset inside it can only
        // overflow for a bogus registration; report no IOVA then.
        self.iova
            .and_then(|i| i.0.checked_add(off as u64).map(Iova))
    }

    /// The index of `a` if it is exactly one of the chunk's objects.
    #[inline]
    pub fn object_index(&self, a: VirtAddr) -> Option<ObjIndex> {
        let off = a.offset_from(self.first)?;
        let (i, rem) = (off / self.stride, off % self.stride);
        (rem == 0 && i < self.count).then_some(ObjIndex(self.first_index.0 + i))
    }
}
