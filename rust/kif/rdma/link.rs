// SPDX-License-Identifier: GPL-2.0

//! An RDMA link type (`rdma link add NAME type KIND netdev DEV`) and the
//! net device notifier that tells a driver's devices about their net
//! devices, registered together by a [`LinkRegistration`], which also
//! unregisters the driver's devices when it goes.

use core::ptr::NonNull;
use kernel::{bindings, error::from_result, prelude::*, str::CStr, types::Opaque, ThisModule};

use super::{registry::Registry, Device, Driver, RegisteredDevice};
use crate::kif::{
    glue,
    net::{NetDev, NetdevEvent},
};

/// What the driver does for its link type and for net device events.
pub trait LinkDriver: 'static {
    /// The verbs driver whose devices this link type creates.
    type Driver: Driver;
    /// The link type's name, `KIND` in `rdma link add NAME type KIND netdev
    /// DEV` (the RDMA core loads a module by its alias `rdma-link-KIND` when
    /// no driver has registered `KIND`).
    const KIND: &'static CStr;
    /// `rdma link add NAME type KIND netdev DEV`: create and register a
    /// device named `NAME` on `ndev` ([`Device::register`]).
    fn newlink(name: &CStr, ndev: &NetDev<'_>) -> Result;
    /// A net device event for a net device that carries a device of
    /// [`LinkDriver::Driver`].
    fn netdev_event(dev: &RegisteredDevice<Self::Driver>, ndev: &NetDev<'_>, event: NetdevEvent);
}

/// The registered link type and net device notifier.
///
/// Dropping it unregisters both and then every device of the driver,
/// waiting until the RDMA core has released each of them.
///
/// A module has at most one at a time (the RDMA core's callbacks find it
/// in a static of the module), and registers devices only of its
/// [`LinkDriver::Driver`], through [`Device::register`].
///
/// # Invariants
///
/// `link` and `notifier` are registered with the RDMA core and the net
/// device notifier chain until the value drops; `registry` is the live
/// registry of the driver's devices.
#[pin_data(PinnedDrop)]
pub struct LinkRegistration {
    #[pin]
    link: Opaque<bindings::rdma_link_ops>,
    #[pin]
    notifier: Opaque<bindings::notifier_block>,
    registry: Pin<KBox<Registry>>,
}

// SAFETY: what a `LinkRegistration` owns is not tied to a thread: the C
// structures are touched only by their (un)registration calls, which take
// the RDMA core's and the notifier chain's locks and may run on any thread,
// and the registry is `Send` (a mutex and a condition variable). Dropping
// it, the one thing an owner does with it, may happen on any thread that
// may sleep.
unsafe impl Send for LinkRegistration {}
// SAFETY: `LinkRegistration` has no method taking `&self`, and its fields
// are private: a shared reference reads and writes nothing, so sharing one
// between threads cannot race.
unsafe impl Sync for LinkRegistration {}

/// RDMA core entry point `newlink_cb`.
///
/// # Safety
///
/// Called by the RDMA core only, with live objects of a device registered
/// by `register_device`.
unsafe extern "C" fn newlink_cb<T: LinkDriver>(
    name: *const kernel::ffi::c_char,
    ndev: *mut bindings::net_device,
) -> kernel::ffi::c_int {
    from_result(|| {
        let ndev = NonNull::new(ndev).ok_or(EINVAL)?;
        // SAFETY: the RDMA netlink code holds a reference on `ndev` and passes
        // a NUL-terminated name for the duration of this call.
        let (name, ndev) = unsafe { (CStr::from_char_ptr(name), NetDev::from_raw(ndev)) };
        T::newlink(name, &ndev)?;
        Ok(0)
    })
}

/// RDMA core entry point `notifier_cb`.
///
/// # Safety
///
/// Called by the RDMA core only, with live objects of a device registered
/// by `register_device`.
unsafe extern "C" fn notifier_cb<T: LinkDriver>(
    _nb: *mut bindings::notifier_block,
    event: kernel::ffi::c_ulong,
    info: *mut kernel::ffi::c_void,
) -> kernel::ffi::c_int {
    let Some(event) = NetdevEvent::from_raw(event) else {
        return bindings::NOTIFY_OK as kernel::ffi::c_int;
    };
    // SAFETY: netdev notifiers get a `netdev_notifier_info`; the helper
    // returns its device, which RTNL keeps alive during the call.
    let ndev = unsafe { glue::rsiw_netdev_notifier_dev(info) };
    let Some(ndev) = NonNull::new(ndev) else {
        return bindings::NOTIFY_OK as kernel::ffi::c_int;
    };
    // SAFETY: see above; the device outlives this callback.
    let ndev = unsafe { NetDev::from_raw(ndev) };
    if let Some(dev) = Device::<T::Driver>::get_by_netdev(&ndev) {
        T::netdev_event(&dev, &ndev, event);
    }
    bindings::NOTIFY_OK as kernel::ffi::c_int
}

impl LinkRegistration {
    /// Registers the RDMA link type [`LinkDriver::KIND`] and the net device
    /// notifier, both served by `T`, for `module`, which owns the devices
    /// that `T` then registers (their operations table names it: the RDMA
    /// core holds the module while a user has one of them open). `EBUSY`
    /// if `module` has a live `LinkRegistration` already.
    pub fn register<T: LinkDriver>(module: &'static ThisModule) -> Result<Pin<KBox<Self>>> {
        let kind = T::KIND;
        let registry = Registry::new::<T::Driver>(module)?;
        let this = KBox::pin_init(
            try_pin_init!(Self {
                link <- Opaque::ffi_init(|p: *mut bindings::rdma_link_ops| {
                    // SAFETY: `p` is valid for writes of a `rdma_link_ops`.
                    unsafe {
                        p.write(bindings::rdma_link_ops {
                            type_: kind.as_char_ptr(),
                            newlink: Some(newlink_cb::<T>),
                            ..Default::default()
                        })
                    }
                }),
                // Registered as it is initialized, in place: when it fails,
                // `this` is never made and `drop` does not unregister what
                // was not registered.
                notifier <- register_notifier::<T>(),
                registry,
            }? Error),
            GFP_KERNEL,
        )?;
        // SAFETY: the link ops are pinned in `this` and unregistered in
        // `drop` before they are freed; `kind` is static.
        unsafe { bindings::rdma_link_register(this.link.get()) };
        Ok(this)
    }
}

/// Initializes a notifier block calling `notifier_cb::<T>` in place and
/// registers it on the net device notifier chain; fails, with nothing
/// registered, if the registration does.
fn register_notifier<T: LinkDriver>() -> impl PinInit<Opaque<bindings::notifier_block>, Error> {
    let init = move |slot: *mut Opaque<bindings::notifier_block>| {
        let p = crate::kif::compat::moved::opaque_raw_get(slot);
        // SAFETY: `slot` is valid for writes and pinned (the contract of a
        // `PinInit`); `Opaque` is transparent over the notifier block.
        unsafe {
            p.write(bindings::notifier_block {
                notifier_call: Some(notifier_cb::<T>),
                ..Default::default()
            })
        };
        // SAFETY: `p` is initialized and pinned; the owner unregisters it
        // before it is freed (`LinkRegistration`'s invariant).
        kernel::error::to_result(unsafe { bindings::register_netdevice_notifier(p) })
    };
    // SAFETY: on `Ok` the slot is initialized (written above); on `Err` it
    // holds a plain C structure that needs no drop and was not registered.
    unsafe { crate::kif::compat::moved::pin_init_from_closure(init) }
}

#[pinned_drop]
impl PinnedDrop for LinkRegistration {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: both were registered in `new` and are still pinned here.
        unsafe {
            bindings::rdma_link_unregister(self.link.get());
            bindings::unregister_netdevice_notifier(self.notifier.get());
        }
        self.registry.unregister_all();
    }
}
