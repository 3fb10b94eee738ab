// SPDX-License-Identifier: GPL-2.0

//! rsiw's own workqueues. Work that runs driver code (transmit, connection
//! management) goes here rather than to a system queue, so that module
//! unload can drain it: [`WqOwner`] destroys the queue, waiting for every
//! item, before the module's code goes away. A second queue runs the drops
//! of objects that RCU readers may still see ([`drop_after_gp`]).
//!
//! The 6.12 `kernel::workqueue` can queue work on a [`Queue`] but not
//! allocate one, nor queue on a given CPU or after a grace period
//! (`queue_rcu_work`); this module adds those for rsiw's queues, and uses
//! `Queue` and its work item traits for the rest.
//!
//! No supported kernel makes it unnecessary yet: up to 7.3
//! `kernel::workqueue` allocates no queue and queues neither on a given
//! CPU nor after a grace period.

use core::{
    ptr::{self, NonNull},
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{bindings, prelude::*, sync::Arc, workqueue::Queue};

use crate::kif::glue;

static WQ: AtomicPtr<bindings::workqueue_struct> = AtomicPtr::new(ptr::null_mut());
static DROP_WQ: AtomicPtr<bindings::workqueue_struct> = AtomicPtr::new(ptr::null_mut());

/// Owns the workqueues for the module's life.
///
/// # Invariants
///
/// The first queue is rsiw's work queue, published in `WQ`, the second its
/// drop queue, published in `DROP_WQ`; both are allocated and published
/// until the owner drops.
pub struct WqOwner(
    NonNull<bindings::workqueue_struct>,
    NonNull<bindings::workqueue_struct>,
);

// SAFETY: a workqueue may be used and destroyed from any thread.
unsafe impl Send for WqOwner {}
// SAFETY: as above.
unsafe impl Sync for WqOwner {}

impl WqOwner {
    /// Allocates and publishes the workqueue.
    pub fn new() -> Result<Self> {
        // SAFETY: plain allocation.
        let p = NonNull::new(unsafe { glue::rsiw_alloc_wq() }).ok_or(ENOMEM)?;
        // SAFETY: plain allocation.
        let d = match NonNull::new(unsafe { glue::rsiw_alloc_drop_wq() }) {
            Some(d) => d,
            None => {
                // SAFETY: just allocated, never used.
                unsafe { bindings::destroy_workqueue(p.as_ptr()) };
                return Err(ENOMEM);
            }
        };
        WQ.store(p.as_ptr(), Ordering::Release);
        DROP_WQ.store(d.as_ptr(), Ordering::Release);
        // INVARIANT: both allocated and published just above.
        Ok(Self(p, d))
    }
}

impl Drop for WqOwner {
    fn drop(&mut self) {
        // All devices are gone when the module state drops, but a
        // connection endpoint may still wait for its peer's MPA frame, held
        // by its timeout (and holding its socket's upcalls): its timeout
        // runs now, not after the queue and the module's code are gone.
        // SAFETY: our live queue, not called from it; process context.
        unsafe { glue::rsiw_dwork_expire_all(self.0.as_ptr()) };
        // What those runs queued (a connection endpoint's work, which
        // fails its exchange) runs now too, before the drop queue goes.
        // SAFETY: our live queue, not called from it.
        unsafe { bindings::drain_workqueue(self.0.as_ptr()) };
        // Nothing enqueues after this. Drops still waiting for their grace
        // period run first.
        // SAFETY: our live drop queue, not called from it.
        unsafe { glue::rsiw_drain_drops(self.1.as_ptr()) };
        // SAFETY: our queue, now empty; nothing queues on it any more.
        unsafe { bindings::destroy_workqueue(self.1.as_ptr()) };
        // SAFETY: our queue; `destroy_workqueue` drains it first.
        unsafe { bindings::destroy_workqueue(self.0.as_ptr()) };
        DROP_WQ.store(ptr::null_mut(), Ordering::Release);
        WQ.store(ptr::null_mut(), Ordering::Release);
    }
}

/// The drop function [`drop_after_gp`] hands to the glue.
///
/// # Safety
///
/// `p` is a pointer from `Arc::<T>::into_raw`, passed once.
unsafe extern "C" fn drop_arc<T: Send + Sync>(p: *mut kernel::ffi::c_void) {
    // SAFETY: per the contract, we own this reference.
    drop(unsafe { Arc::from_raw(p.cast::<T>()) });
}

/// Drops `a` from the drop workqueue (process context) after an RCU grace
/// period: RCU readers that found the object before it was unpublished
/// may still take a reference until then. Process context.
pub(in crate::kif) fn drop_after_gp<T: Send + Sync>(a: Arc<T>) {
    let raw = Arc::into_raw(a).cast_mut().cast::<kernel::ffi::c_void>();
    // SAFETY: the drop queue lives as long as any device (see `queue`);
    // `raw` is an owned reference that `drop_arc::<T>` releases once.
    unsafe { glue::rsiw_drop_after_gp(DROP_WQ.load(Ordering::Acquire), raw, drop_arc::<T>) };
}

/// Waits until every drop queued by [`drop_after_gp`] has run (before a
/// device whose objects they may reference goes away). Process context,
/// not from the drop workqueue.
pub(in crate::kif) fn drain_drops() {
    // SAFETY: the drop queue is live while any device exists.
    unsafe { glue::rsiw_drain_drops(DROP_WQ.load(Ordering::Acquire)) };
}

/// The raw rsiw workqueue (for C glue that queues its own work).
pub(in crate::kif) fn raw() -> *mut bindings::workqueue_struct {
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

/// Queues `w` on the rsiw workqueue to run on the next online CPU after
/// the current one (no-op if already queued), so that it runs next to
/// what the current CPU is doing rather than preempting it.
pub fn enqueue_on_next_cpu<W, const ID: u64>(w: W) -> W::EnqueueOutput
where
    W: kernel::workqueue::RawWorkItem<ID> + Send + 'static,
{
    let q = WQ.load(Ordering::Acquire);
    // SAFETY: reads the CPU number and the online mask only.
    let cpu = unsafe { glue::rsiw_next_cpu() };
    // SAFETY: as `Queue::enqueue`: `W` is `Send` and static; the pointer
    // `__enqueue` passes is valid during the closure and, once queued,
    // until the work function runs. The queue is live (see `queue`).
    unsafe { w.__enqueue(move |work| bindings::queue_work_on(cpu, q, work)) }
}
