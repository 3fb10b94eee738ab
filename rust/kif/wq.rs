// SPDX-License-Identifier: GPL-2.0

//! rsiw's own workqueue. Work that runs driver code (transmit, connection
//! management) goes here rather than to a system queue, so that module
//! unload can drain it: [`WqOwner`] destroys the queue, waiting for every
//! item, before the module's code goes away.

use core::{
    ptr::{self, NonNull},
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{bindings, prelude::*, workqueue::Queue};

use super::glue;

static WQ: AtomicPtr<bindings::workqueue_struct> = AtomicPtr::new(ptr::null_mut());

/// Owns the workqueue for the module's life.
pub struct WqOwner(NonNull<bindings::workqueue_struct>);

// SAFETY: a workqueue may be used and destroyed from any thread.
unsafe impl Send for WqOwner {}
// SAFETY: as above.
unsafe impl Sync for WqOwner {}

impl WqOwner {
    /// Allocates and publishes the workqueue.
    pub fn new() -> Result<Self> {
        // SAFETY: plain allocation.
        let p = NonNull::new(unsafe { glue::rsiw_alloc_wq() }).ok_or(ENOMEM)?;
        WQ.store(p.as_ptr(), Ordering::Release);
        Ok(Self(p))
    }
}

impl Drop for WqOwner {
    fn drop(&mut self) {
        // SAFETY: our queue; `destroy_workqueue` drains it first. Nothing
        // enqueues after this: all devices are gone when the module state
        // drops.
        unsafe { bindings::destroy_workqueue(self.0.as_ptr()) };
        WQ.store(ptr::null_mut(), Ordering::Release);
    }
}

/// The raw rsiw workqueue (for C glue that queues its own work).
pub(crate) fn raw() -> *mut bindings::workqueue_struct {
    WQ.load(Ordering::Acquire)
}

/// The rsiw workqueue.
pub fn queue() -> &'static Queue {
    let p = WQ.load(Ordering::Acquire);
    // SAFETY: published by `WqOwner::new` before any device exists and
    // unpublished only after every device (and so every enqueuer) is gone;
    // all work is drained before the queue is destroyed.
    unsafe { Queue::from_raw(p) }
}
