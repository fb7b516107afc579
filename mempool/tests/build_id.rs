//! The build identity in the pool header: a pool made by another build (one
//! whose `BuildId` hash differs: other layouts, features, target or
//! compiler) is refused on attach with an error naming both builds, and
//! this build's own pools are accepted.
#![cfg(not(loom))]

use core::ptr::NonNull;
use std::alloc::{alloc_zeroed, dealloc, Layout};

use mempool::pool::{BuildId, BUILD_ID_OFFSET};
use mempool::{PoolConfig, PoolCore, PoolError};

/// A pool initialised in fresh heap memory; freed on drop.
struct Block {
    mem: NonNull<u8>,
    alloc: Layout,
}

impl Block {
    fn new() -> Block {
        let layout = PoolConfig::new(64).layout().unwrap();
        let alloc = Layout::from_size_align(layout.bytes(), layout.align()).unwrap();
        // SAFETY: the size is not zero.
        let mem = NonNull::new(unsafe { alloc_zeroed(alloc) }).unwrap();
        // SAFETY: `mem` holds `layout.bytes()` bytes aligned to
        // `layout.align()`, used for nothing else and freed only in drop;
        // no single-sided flag. The reference is not kept.
        unsafe { PoolCore::init(mem, &layout) };
        Block { mem, alloc }
    }

    /// Rewrites the creator's identity, as another build would have
    /// stored it.
    fn forge(&self, id: BuildId) {
        // SAFETY: inside the block (the header's second word), aligned as
        // `BuildId` (8); no reference to the pool is alive.
        unsafe {
            self.mem
                .as_ptr()
                .add(BUILD_ID_OFFSET)
                .cast::<BuildId>()
                .write(id)
        };
    }

    fn attach(&self) -> Result<&PoolCore, PoolError> {
        // SAFETY: `init` ran on this memory, which lives as long as `self`.
        unsafe { PoolCore::attach(self.mem) }
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout; no reference remains.
        unsafe { dealloc(self.mem.as_ptr(), self.alloc) };
    }
}

#[test]
fn a_pool_of_this_build_is_accepted() {
    let b = Block::new();
    let pool = b.attach().unwrap();
    assert_eq!(pool.objects(), 64);
}

#[test]
fn a_pool_of_another_build_is_refused_naming_both() {
    let b = Block::new();
    // The same build with the accounting feature flipped: another hash.
    let other = BuildId {
        hash: BuildId::CORE.hash ^ 0x5a5a,
        features: BuildId::CORE.features ^ BuildId::ACCOUNTING,
        release: 0,
    };
    b.forge(other);
    let e = b.attach().err().unwrap();
    assert_eq!(
        e,
        PoolError::OtherBuild {
            addr: b.mem.as_ptr() as usize,
            found: other,
            ours: BuildId::CORE,
        }
    );
    let msg = e.to_string();
    assert!(msg.contains(&format!("{:016x}", other.hash)), "{msg}");
    assert!(
        msg.contains(&format!("{:016x}", BuildId::CORE.hash)),
        "{msg}"
    );
    let (theirs, ours) = if BuildId::CORE.accounting() {
        ("accounting off", "accounting on")
    } else {
        ("accounting on", "accounting off")
    };
    assert!(msg.contains(theirs) && msg.contains(ours), "{msg}");
    // Only the hash decides: the descriptive words alone do not refuse.
    b.forge(BuildId {
        features: other.features,
        ..BuildId::CORE
    });
    assert!(b.attach().is_ok());
}
