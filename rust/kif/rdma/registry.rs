// SPDX-License-Identifier: GPL-2.0

//! The registry of a module's RDMA devices: module unload unregisters the
//! devices the user did not delete and waits until the RDMA core released
//! all of them. It also keeps what the module's registration gave: the
//! module (the owner of every device) and the driver whose devices it
//! registers.

use core::{
    any::TypeId,
    ptr::{self, NonNull},
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{
    bindings, new_condvar, new_mutex,
    prelude::*,
    sync::{CondVar, Mutex},
    ThisModule,
};

use crate::kif::{compat::moved, glue};

/// A device in the [`Registry`].
#[derive(Clone, Copy, PartialEq, Eq)]
struct DevPtr(NonNull<bindings::ib_device>);

// SAFETY: `DevPtr` is moved between threads inside the registry's mutex.
// It is a plain address: no thread owns what it points to, nothing is
// dereferenced through it except the RDMA core's own calls
// (`ib_device_try_get`, `ib_unregister_device_and_put`), which may be made
// from any thread, on a device the registry's invariant keeps allocated.
unsafe impl Send for DevPtr {}

/// The registry of this module's devices, so that unload can unregister
/// the ones the user did not delete.
///
/// A module has one live registry at a time (its link registration's):
/// the RDMA core's callbacks get no pointer of the registration, so they
/// find it in a static of the module.
///
/// # Invariants
///
/// A device is in `devs` from before its registration until its
/// `dealloc_driver` (or its failed registration): while it is there, its
/// `ib_device` is allocated. Every device in it is a `Device<D>` of the
/// driver `D` whose `TypeId` is `driver`, owned by `module`.
#[pin_data(PinnedDrop)]
pub(super) struct Registry {
    module: &'static ThisModule,
    driver: TypeId,
    #[pin]
    devs: Mutex<KVec<DevPtr>>,
    #[pin]
    emptied: CondVar,
}

/// The live registry; set while the link type is registered.
static REGISTRY: AtomicPtr<Registry> = AtomicPtr::new(ptr::null_mut());

impl Registry {
    /// Creates the registry of the devices of driver `D` that `module`
    /// registers, and publishes it for the device callbacks; `EBUSY` if the
    /// module has a live registry already.
    pub(super) fn new<D: 'static>(module: &'static ThisModule) -> Result<Pin<KBox<Self>>> {
        let reg = KBox::pin_init(
            pin_init!(Self {
                module,
                driver: TypeId::of::<D>(),
                devs <- new_mutex!(KVec::new()),
                emptied <- new_condvar!(),
            }),
            GFP_KERNEL,
        )?;
        REGISTRY
            .compare_exchange(
                ptr::null_mut(),
                ptr::from_ref(&*reg).cast_mut(),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .map_err(|_| EBUSY)?;
        Ok(reg)
    }

    pub(super) fn get() -> Option<&'static Self> {
        let p = REGISTRY.load(Ordering::Acquire);
        // SAFETY: a non-null pointer is the pinned registry, which
        // `unregister_all` unpublishes only after every device is gone, and
        // no device callback or link callback runs after that (a registry
        // that drops without `unregister_all`, its registration having
        // failed, has no device, and the notifier's callbacks, run only
        // while `register_netdevice_notifier` replays events, are over).
        unsafe { p.as_ref() }
    }

    /// The module that owns the devices (the owner in their operations
    /// table).
    pub(super) fn module(&self) -> &'static ThisModule {
        self.module
    }

    /// Whether the registry takes devices of driver `D`.
    pub(super) fn is_of<D: 'static>(&self) -> bool {
        self.driver == TypeId::of::<D>()
    }

    /// Adds a device about to be registered.
    pub(super) fn add(&self, ib: NonNull<bindings::ib_device>) -> Result {
        self.devs.lock().push(DevPtr(ib), GFP_KERNEL)?;
        Ok(())
    }

    /// Removes a device that is about to be freed.
    pub(super) fn remove(&self, ib: NonNull<bindings::ib_device>) {
        let d = DevPtr(ib);
        let mut devs = self.devs.lock();
        if let Some(i) = devs.iter().position(|x| *x == d) {
            let last = devs.len() - 1;
            devs.as_mut_slice().swap(i, last);
            moved::vec_truncate(&mut *devs, last);
        }
        if devs.is_empty() {
            self.emptied.notify_all();
        }
    }

    /// Unregisters every device left and waits until the RDMA core released
    /// all of them (also those another path is unregistering right now).
    pub(super) fn unregister_all(&self) {
        loop {
            let next = {
                let devs = self.devs.lock();
                devs.iter().copied().find(|d| {
                    // SAFETY: a registered device stays allocated while it is
                    // in the registry (removed in `dealloc_driver`, under this
                    // lock); try_get fails once unregistration began.
                    unsafe { glue::rsiw_ib_device_try_get(d.0.as_ptr()) }
                })
            };
            match next {
                // SAFETY: we own the reference taken by try_get above.
                Some(d) => unsafe { bindings::ib_unregister_device_and_put(d.0.as_ptr()) },
                None => break,
            }
        }
        let mut devs = self.devs.lock();
        while !devs.is_empty() {
            self.emptied.wait(&mut devs);
        }
        drop(devs);
        self.unpublish();
    }

    /// Takes the registry out of `REGISTRY` if it is there.
    fn unpublish(&self) {
        // A failure means another registry is published (or none): leave it.
        let _ = REGISTRY.compare_exchange(
            ptr::from_ref(self).cast_mut(),
            ptr::null_mut(),
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }
}

#[pinned_drop]
impl PinnedDrop for Registry {
    fn drop(self: Pin<&mut Self>) {
        // A registration that failed after publishing its registry drops it
        // without `unregister_all`: no pointer to it may stay behind.
        self.unpublish();
    }
}
