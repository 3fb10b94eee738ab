// SPDX-License-Identifier: GPL-2.0

//! One-shot timeouts on rsiw's workqueue: a C `delayed_work`, which the
//! 6.12 `kernel` crate has not. A pending timeout holds a reference to its
//! target, so the target lives until the timeout ran or was cancelled.
//! Module unload runs the timeouts still pending at once (see
//! [`WqOwner`](super::workqueue::WqOwner)): none may fire after the queue
//! is gone.
//!
//! Newer kernels have `kernel::workqueue::DelayedWork`, a `delayed_work`
//! embedded in the target and queued with `Queue::enqueue_delayed`; the
//! target's `WorkItem::run` is the callback ([`Expire::expired`] here).
//! rsiw's [`Timeout`] also cancels (giving back the reference of the
//! pending run) and is listed for module unload, which is why its
//! `delayed_work` lives in the C glue.
//!
//! No supported kernel makes it unnecessary yet: `DelayedWork` (since
//! 6.17) cannot be cancelled up to 7.3.

use core::{marker::PhantomData, ptr::NonNull};
use kernel::{prelude::*, sync::Arc};

use crate::kif::glue;

/// What a timeout calls.
pub trait Expire: Send + Sync + Sized + 'static {
    /// The timeout fired.
    fn expired(this: Arc<Self>);
}

/// A one-shot timeout for a `T` (the owner keeps the `Timeout` inside `T`).
///
/// # Invariants
///
/// `d` is a work item from `rsiw_dwork_new` that calls `fire::<T>` with
/// an `Arc<T>` pointer as context, owned by this value until it drops;
/// while the item is pending, that pointer owns a reference.
pub struct Timeout<T: Expire> {
    d: NonNull<kernel::ffi::c_void>,
    _p: PhantomData<T>,
}

// A `Timeout` holds no `T`, only a reference to one, so it may move even
// where `T` may not (a `Mutex` guard hands out `&mut` only to `Unpin` data
// in 7.3).
impl<T: Expire> Unpin for Timeout<T> {}

// SAFETY: the delayed work may be scheduled and cancelled from any thread.
unsafe impl<T: Expire> Send for Timeout<T> {}
// SAFETY: as above.
unsafe impl<T: Expire> Sync for Timeout<T> {}

/// The callback: takes back the reference `arm` gave away.
///
/// # Safety
///
/// `ctx` is the `Arc<T>` pointer `arm` leaked for this run.
unsafe extern "C" fn fire<T: Expire>(ctx: *mut kernel::ffi::c_void) {
    // SAFETY: per the contract; `arm` stored `Arc::into_raw` in the work's
    // context before queueing, and each run consumes one such reference.
    T::expired(unsafe { Arc::from_raw(ctx.cast::<T>()) });
}

impl<T: Expire> Timeout<T> {
    /// Arms a timeout for `target` after `ms` milliseconds. The work item is
    /// created for this target only: a `Timeout` arms once.
    pub fn arm(target: &Arc<T>, ms: u32) -> Result<Self> {
        let ctx = Arc::into_raw(target.clone())
            .cast_mut()
            .cast::<kernel::ffi::c_void>();
        // SAFETY: allocates a work item calling `fire::<T>(ctx)`.
        let d = NonNull::new(unsafe { glue::rsiw_dwork_new(fire::<T>, ctx) });
        let Some(d) = d else {
            // SAFETY: not handed to any work item.
            drop(unsafe { Arc::from_raw(ctx.cast::<T>()) });
            return Err(ENOMEM);
        };
        // SAFETY: `d` is a fresh work item; the workqueue outlives every
        // timeout (`WqOwner` runs the pending ones before destroying it).
        unsafe { glue::rsiw_dwork_schedule(super::workqueue::raw(), d.as_ptr(), ms) };
        // INVARIANT: a fresh item for `fire::<T>`, pending with the
        // reference `ctx` owns.
        Ok(Self { d, _p: PhantomData })
    }

    /// Cancels the timeout if it has not fired; gives back its reference.
    pub fn cancel(&self) {
        // SAFETY: `d` is our work item. A successful cancel removed the
        // pending run, so the reference `arm` leaked for it (the item's
        // context) is ours to drop.
        unsafe {
            if glue::rsiw_dwork_cancel(self.d.as_ptr()) {
                let ctx = glue::rsiw_dwork_ctx(self.d.as_ptr()).cast::<T>();
                drop(Arc::<T>::from_raw(ctx));
            }
        }
    }
}

impl<T: Expire> Drop for Timeout<T> {
    fn drop(&mut self) {
        self.cancel();
        // SAFETY: ours; cancelled (and waited for) before freeing.
        unsafe { glue::rsiw_dwork_free(self.d.as_ptr()) };
    }
}
