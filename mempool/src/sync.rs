//! Atomics shim: std atomics normally, loom's under `--cfg loom` so the ring
//! and cache protocols can be model-checked with the very code that ships.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Called in every spin loop. Under loom it yields so the model explores the
/// other threads instead of spinning forever.
#[inline(always)]
pub(crate) fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}

/// Test-and-test-and-set spinlock that lives in shared memory: one `u32`, no
/// process-local state, valid when zero-initialised.
#[repr(C)]
pub(crate) struct SpinLock {
    locked: AtomicU32,
}

impl SpinLock {
    pub(crate) fn new() -> Self {
        SpinLock {
            locked: AtomicU32::new(0),
        }
    }

    #[inline(always)]
    pub(crate) fn lock(&self) -> SpinGuard<'_> {
        // Acquire pairs with the Release store in `SpinGuard::drop`: the
        // previous holder's writes are visible inside our critical section.
        while self
            .locked
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            // Wait for the holder with loads, not RMWs. Inline, with no
            // call: the get/put callbacks that inline the ring stay leaf
            // functions, which need no stack frame.
            // Relaxed: only a hint to retry; the CAS does the synchronising.
            while self.locked.load(Ordering::Relaxed) != 0 {
                spin_hint();
            }
        }
        SpinGuard { lock: self }
    }
}

pub(crate) struct SpinGuard<'a> {
    lock: &'a SpinLock,
}

impl Drop for SpinGuard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        // Release pairs with the Acquire CAS in `SpinLock::lock`.
        self.lock.locked.store(0, Ordering::Release);
    }
}
