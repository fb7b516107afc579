//! Get and put in validation mode: every returned object is checked
//! against the chunk table (foreign pointers) and the home bitmap (double
//! frees) before it goes back.

use core::ffi::c_void;

use super::PoolCore;
use crate::error::PoolError;
use crate::iova::VirtAddr;
use crate::validation::RejectKind;

/// Objects checked per inner put in validation mode (a stack buffer).
const VALIDATE_BATCH: usize = 32;

impl PoolCore {
    #[inline(never)]
    pub(super) unsafe fn put_validated(
        &self,
        lcore: u32,
        objs: &[*mut c_void],
    ) -> Result<(), PoolError> {
        if !self.shutdown.state().takes_puts() {
            return Err(self.after_release(objs));
        }
        let mut buf = [core::ptr::null_mut::<c_void>(); VALIDATE_BATCH];
        let mut k = 0;
        let mut rejected = 0;
        let mut first = None;
        for &o in objs {
            let verdict = match self.owns(o) {
                None => Err(RejectKind::Foreign),
                Some(idx) if self.validator().mark_home(idx) => Ok(()),
                Some(_) => Err(RejectKind::DoubleFree),
            };
            match verdict {
                Ok(()) => {
                    buf[k] = o;
                    k += 1;
                    if k == VALIDATE_BATCH {
                        // Keep the newest accepted object back: while one
                        // object of this call is still out, the pool cannot
                        // reach inflight 0 and be released under the rest
                        // of the loop (which still reads the validator).
                        // SAFETY: forwarded caller contract.
                        if let Err(e) = unsafe { self.put_checked_batch(lcore, &buf[..k - 1]) } {
                            // The held-back object was marked home but goes
                            // nowhere: out again, like the batch.
                            self.mark_out_all(&buf[k - 1..k]);
                            return Err(e);
                        }
                        buf[0] = buf[k - 1];
                        k = 1;
                    }
                }
                Err(kind) => {
                    self.validator().count(kind, 1);
                    rejected += 1;
                    first.get_or_insert((kind, o));
                }
            }
        }
        // The last touch of the pool: once these are back a concurrent
        // deferred release may free it (see `Shutdown`). Nothing is put when
        // every object was rejected.
        if k > 0 {
            // SAFETY: forwarded caller contract.
            unsafe { self.put_checked_batch(lcore, &buf[..k]) }?;
        }
        match first {
            None => Ok(()),
            Some((kind, o)) => Err(PoolError::Rejected {
                requested: objs.len(),
                rejected,
                kind,
                first: VirtAddr::of(o),
            }),
        }
    }

    /// Inserts objects validation accepted; marks them out again if the
    /// insertion fails.
    unsafe fn put_checked_batch(&self, lcore: u32, batch: &[*mut c_void]) -> Result<(), PoolError> {
        // SAFETY: forwarded caller contract.
        let r = unsafe { self.put_unvalidated(lcore, batch) };
        if r.is_err() {
            self.mark_out_all(batch);
        }
        r
    }

    /// Marks accepted objects out again (their insertion failed).
    fn mark_out_all(&self, objs: &[*mut c_void]) {
        for &o in objs {
            if let Some(idx) = self.owns(o) {
                self.validator().mark_out(idx);
            }
        }
    }

    #[inline(never)]
    pub(super) unsafe fn get_validated(
        &self,
        lcore: u32,
        out: &mut [*mut c_void],
    ) -> Result<(), PoolError> {
        // SAFETY: forwarded caller contract.
        unsafe { self.get_unvalidated(lcore, out) }?;
        for &o in out.iter() {
            if let Some(idx) = self.owns(o) {
                self.validator().mark_out(idx);
            }
        }
        Ok(())
    }
}
