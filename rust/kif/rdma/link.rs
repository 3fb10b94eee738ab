// SPDX-License-Identifier: GPL-2.0

//! An RDMA link type (`rdma link add NAME type KIND netdev DEV`) and the
//! net device notifier that tells a driver's devices about their net
//! devices, registered together by a [`LinkRegistration`], which also
//! unregisters the driver's devices when it goes.
//!
//! A registration may also serve a second link type that another module
//! registers as its own ([`SharedKind`], [`LinkRegistration::share`]): the
//! RDMA core keeps one holder per link type and warns when a second
//! registers, so the second type is registered only while that module is
//! not loaded, and that module is refused while it is.

use core::ptr::NonNull;
use kernel::{bindings, error::from_result, prelude::*, str::CStr, types::Opaque, ThisModule};

use super::{registry::Registry, Device, Driver, RegisteredDevice};
use crate::kif::{
    glue,
    modules::{self, ModuleGate},
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
    module: &'static ThisModule,
    shared: Option<Pin<KBox<SharedLink>>>,
}

/// A link type that another module, its owner, registers as its own, and
/// that a [`LinkRegistration`] serves too when the owner is not loaded
/// ([`LinkRegistration::share`]).
#[derive(Clone, Copy)]
pub struct SharedKind {
    /// The link type's name (`KIND` in `rdma link add NAME type KIND netdev
    /// DEV`).
    pub kind: &'static CStr,
    /// The name of the module that registers `kind` as its own.
    pub owner: &'static CStr,
    /// `kind` described for the message that refuses `owner`, e.g. `RDMA
    /// link type 'siw'`.
    pub what: &'static CStr,
}

/// The second link type of a [`LinkRegistration`] and the gate that keeps
/// its owner module out while it is registered.
///
/// # Invariants
///
/// `link` is registered with the RDMA core until the value drops; `gate`
/// is registered from before that until after.
#[pin_data(PinnedDrop)]
struct SharedLink {
    #[pin]
    gate: ModuleGate,
    #[pin]
    link: Opaque<bindings::rdma_link_ops>,
}

#[pinned_drop]
impl PinnedDrop for SharedLink {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: registered in `LinkRegistration::share` (the invariant)
        // and still pinned here; `gate` drops after this, unregistering
        // the gate once the link type is gone.
        unsafe { bindings::rdma_link_unregister(self.link.get()) };
    }
}

// SAFETY: as for `LinkRegistration`: the link ops are touched only by
// their (un)registration under the RDMA core's lock, and the gate is
// `Send`.
unsafe impl Send for SharedLink {}
// SAFETY: no method takes `&self`; a shared reference reads nothing.
unsafe impl Sync for SharedLink {}

// SAFETY: what a `LinkRegistration` owns is not tied to a thread: the C
// structures are touched only by their (un)registration calls, which take
// the RDMA core's and the notifier chain's locks and may run on any thread,
// the registry is `Send` (a mutex and a condition variable), and so are
// the module reference and the second link type (`SharedLink`). Dropping
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
    /// core holds the module while a user has one of them open, unless the
    /// driver has [`Driver::disassociate_ucontext`]). `EBUSY`
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
                // SAFETY: `LinkRegistration`'s drop unregisters it before
                // it is freed (its invariant); `notifier_cb` reads nothing
                // of the registration (it finds devices by net device).
                notifier <- unsafe {
                    crate::kif::notifier::register(
                        Some(notifier_cb::<T>),
                        bindings::register_netdevice_notifier,
                    )
                },
                registry,
                module,
                shared: None,
            }? Error),
            GFP_KERNEL,
        )?;
        // SAFETY: the link ops are pinned in `this` and unregistered in
        // `drop` before they are freed; `kind` is static.
        unsafe { bindings::rdma_link_register(this.link.get()) };
        Ok(this)
    }

    /// Registers `shared.kind` as a second link type, served as
    /// [`LinkDriver::KIND`] is, after a [`ModuleGate`] that refuses to load
    /// `shared.owner` while it is registered. `EBUSY`, with an error
    /// message and nothing registered, if `shared.owner` is loaded (or
    /// being loaded or unloaded) or this registration has a second type
    /// already.
    ///
    /// Only a load of the owner that runs at the same time as this call can
    /// slip through: one that passed the module notifiers just before the
    /// gate was registered and is not in sysfs yet (see
    /// [`modules::is_loaded`]); the RDMA core would then warn about the
    /// owner's registration.
    pub fn share(self: Pin<&mut Self>, shared: SharedKind) -> Result {
        // SAFETY: only the unpinned `shared` field is written; nothing is
        // moved out of the pinned value.
        let this = unsafe { self.get_unchecked_mut() };
        if this.shared.is_some() {
            return Err(EBUSY);
        }
        // SAFETY: the primary link ops were initialized in `register` and
        // are not written after: reading the callback is a plain read.
        let newlink = unsafe { (*this.link.get()).newlink };
        let module = this.module;
        let link = KBox::pin_init(
            try_pin_init!(SharedLink {
                gate <- ModuleGate::new(shared.owner, shared.what),
                link <- register_shared(module, shared, newlink),
            }? Error),
            GFP_KERNEL,
        )?;
        this.shared = Some(link);
        Ok(())
    }
}

/// Initializes link ops for `shared.kind` calling `newlink` in place and
/// registers them, unless `shared.owner` is loaded: then `EBUSY` with
/// nothing registered. Part of a [`SharedLink`], after its gate.
fn register_shared(
    module: &'static ThisModule,
    shared: SharedKind,
    newlink: Option<
        unsafe extern "C" fn(
            *const kernel::ffi::c_char,
            *mut bindings::net_device,
        ) -> kernel::ffi::c_int,
    >,
) -> impl PinInit<Opaque<bindings::rdma_link_ops>, Error> {
    let init = move |slot: *mut Opaque<bindings::rdma_link_ops>| {
        if modules::is_loaded(module, shared.owner) {
            pr_err!(
                "link type '{}' not registered: module {}, which registers it, is loaded\n",
                shared.kind,
                shared.owner
            );
            return Err(EBUSY);
        }
        let p = crate::kif::compat::moved::opaque_raw_get(slot);
        // SAFETY: `slot` is valid for writes and pinned (the contract of a
        // `PinInit`); `Opaque` is transparent over the link ops.
        unsafe {
            p.write(bindings::rdma_link_ops {
                type_: shared.kind.as_char_ptr(),
                newlink,
                ..Default::default()
            })
        };
        // SAFETY: `p` is initialized and pinned in a `SharedLink`, which
        // unregisters it before it is freed (its invariant); the type name
        // is static. No other module holds the type: its owner is not
        // loaded and is refused from now on by the gate registered before.
        unsafe { bindings::rdma_link_register(p) };
        Ok(())
    };
    // SAFETY: on `Ok` the slot is initialized (written above); on `Err` it
    // was not written and nothing was registered.
    unsafe { crate::kif::compat::moved::pin_init_from_closure(init) }
}

#[pinned_drop]
impl PinnedDrop for LinkRegistration {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: only the unpinned `shared` field is taken; nothing else
        // moves.
        let this = unsafe { self.get_unchecked_mut() };
        // The second link type first (then its gate), so that no device is
        // created through it after `unregister_all` below.
        drop(this.shared.take());
        // SAFETY: both were registered in `new` and are still pinned here.
        unsafe {
            bindings::rdma_link_unregister(this.link.get());
            bindings::unregister_netdevice_notifier(this.notifier.get());
        }
        this.registry.unregister_all();
    }
}
