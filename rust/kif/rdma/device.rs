// SPDX-License-Identifier: GPL-2.0

//! RDMA devices: [`Device`], the RDMA core's `ib_device` followed by the
//! driver's data; its registration ([`Device::register`]); and
//! [`RegisteredDevice`], a registered device held through an [`ARef`].

use core::{any::TypeId, marker::PhantomData, mem::size_of, ops::Deref, ptr::NonNull};
use kernel::{bindings, error::to_result, prelude::*, str::CStr, types::Opaque, ThisModule};

use super::{adapter::Adapter, registry::Registry, Driver};
use crate::kif::{
    compat::moved::{self, ARef, AlwaysRefCounted},
    glue,
    net::{NetDev, NetDevRef, NetNs},
};

/// The port a device's net device is bound to.
pub const NETDEV_PORT: u32 = 1;

/// An RDMA device of driver `T`: the RDMA core's `struct ib_device`, the
/// driver's type and the driver's data ([`Driver::Data`], which the
/// device dereferences to).
///
/// The verbs get a `&Device<T>`. The RDMA core's reference count of a
/// device (`ib_device_try_get`, `ib_device_put`) is zero while the core
/// sets the device up (it calls `query_device`, `query_port` and
/// `query_gid` then) and again once unregistration began, so not every
/// borrowed `Device` can take a reference (`AlwaysRefCounted` promises
/// that); a [`RegisteredDevice`], which derefs to its `Device`, can.
///
/// # Invariants
///
/// `ib` was allocated by `_ib_alloc_device` with the size of `Self`,
/// `driver` is `TypeId::of::<T>()` and `data` is initialised, from
/// [`Device::register`] until the core calls `dealloc_driver`, after which
/// no `&Device` exists any more.
#[repr(C)]
pub struct Device<T: Driver> {
    ib: Opaque<bindings::ib_device>,
    driver: TypeId,
    data: T::Data,
}

// SAFETY: a `Device<T>` is never owned by value (the RDMA core allocates
// and frees it), but it is given up on any thread: a reference (an
// `ARef<RegisteredDevice<T>>`) is dropped with `ib_device_put`, which any
// thread may call, and the RDMA core calls `dealloc_driver`, which drops
// the data, from whichever thread unregisters the device. That is sound as
// `T::Data: Send`; the `ib_device` holds no thread-bound state (its locks
// and lists are the RDMA core's, for any thread), and `driver` is a plain
// `TypeId`.
unsafe impl<T: Driver> Send for Device<T> {}
// SAFETY: what a `&Device<T>` reaches from any thread: the driver's data,
// which is `T::Data: Sync`; `driver`, read only; and the `ib_device`, only
// through the RDMA core's functions (`ib_dispatch_event`,
// `ib_device_try_get`, `ib_device_put`, `ib_unregister_device_queued`),
// which synchronise themselves, and through reads of fields that are
// written only before registration.
unsafe impl<T: Driver> Sync for Device<T> {}

impl<T: Driver> Deref for Device<T> {
    type Target = T::Data;

    fn deref(&self) -> &T::Data {
        &self.data
    }
}

/// Asynchronous port events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortEvent {
    /// The port became active.
    Active,
    /// The port went down.
    Error,
    /// The port address changed.
    AddressChange,
}

/// What [`Device::register`] needs besides the driver's data.
pub struct DeviceSetup<'a> {
    /// The net device, bound to [`NETDEV_PORT`].
    pub ndev: &'a NetDev<'a>,
    /// The device name (`rdma link add NAME`).
    pub name: &'a CStr,
    /// Node GUID (network byte order value).
    pub node_guid: u64,
    /// Node description.
    pub node_desc: &'a [u8],
    /// Completion vectors.
    pub num_comp_vectors: u32,
}

impl<T: Driver> Device<T> {
    /// The device of `ib`.
    ///
    /// # Safety
    ///
    /// `ib` is the `ib_device` of a `Device<T>` whose data is initialised
    /// and stays so for `'a`.
    pub(super) unsafe fn from_raw<'a>(ib: *mut bindings::ib_device) -> &'a Self {
        // SAFETY: per the contract; `ib` is the first field of the
        // `repr(C)` `Device<T>`.
        unsafe { &*ib.cast::<Self>() }
    }

    /// Drops the data of the device `ib` (in its `dealloc_driver`).
    ///
    /// # Safety
    ///
    /// `ib` is the `ib_device` of a `Device<T>` whose data is initialised;
    /// no `&Device<T>` of it exists any more and none is made afterwards.
    pub(super) unsafe fn drop_data(ib: *mut bindings::ib_device) {
        let dev = ib.cast::<Self>();
        // SAFETY: per the contract; `data` is dropped once.
        unsafe { core::ptr::drop_in_place(core::ptr::addr_of_mut!((*dev).data)) };
    }

    /// Allocates, sets up and registers a device of driver `T` with
    /// `data`. The device lives until the RDMA core unregisters it
    /// (`rdma link delete`, [`RegisteredDevice::unregister_queued`], module
    /// unload).
    ///
    /// Needs the module's live [`LinkRegistration`](super::link::LinkRegistration)
    /// (`ENODEV` without one), whose driver is `T` (`EINVAL` otherwise):
    /// the device belongs to the module given to it.
    pub fn register(setup: DeviceSetup<'_>, data: impl PinInit<T::Data, Error>) -> Result {
        let reg = Registry::get().ok_or(ENODEV)?;
        if !reg.is_of::<T>() {
            return Err(EINVAL);
        }
        let new = NewDevice::<T>::alloc(data)?;
        new.set_up(&setup, reg.module())?;
        reg.add(new.ib)?;
        new.register(setup.name, reg)
    }

    /// Delivers an asynchronous event of port `port` to the device's
    /// clients.
    pub fn port_event(&self, port: u32, ev: PortEvent) {
        let event = match ev {
            PortEvent::Active => bindings::ib_event_type_IB_EVENT_PORT_ACTIVE,
            PortEvent::Error => bindings::ib_event_type_IB_EVENT_PORT_ERR,
            PortEvent::AddressChange => bindings::ib_event_type_IB_EVENT_LID_CHANGE,
        };
        let ev = bindings::ib_event {
            device: self.ib.get(),
            element: bindings::ib_event__bindgen_ty_1 { port_num: port },
            event,
        };
        // SAFETY: the device is set up (type invariant); the event is
        // copied by the callee.
        unsafe { bindings::ib_dispatch_event(&ev) };
    }

    /// A reference on the network namespace of the device's net device
    /// (where its connections' sockets belong, whoever asks for them);
    /// `ENODEV` once the net device or its namespace is going.
    pub fn netns(&self) -> Result<NetNs> {
        // SAFETY: the device is set up (type invariant); the net device
        // returned, if any, carries a reference that is ours.
        let nd = unsafe {
            NetDevRef::from_held(bindings::ib_device_get_netdev(self.ib.get(), NETDEV_PORT))
        };
        nd.ok_or(ENODEV)?.dev().netns()
    }

    /// The device of driver `T` on `ndev`, if there is one (devices of
    /// other drivers with the same driver id, such as those of another
    /// module, are ignored).
    pub fn get_by_netdev(ndev: &NetDev<'_>) -> Option<ARef<RegisteredDevice<T>>> {
        // SAFETY: `ndev` is a live net device; the device returned, if
        // any, carries a reference that is ours from here on.
        let ib = unsafe { bindings::ib_device_get_by_netdev(ndev.as_ptr(), T::DRIVER_ID.raw()) };
        // SAFETY: a registered device with our reference, or null.
        NonNull::new(ib).and_then(|ib| unsafe { RegisteredDevice::from_held(ib) })
    }

    /// Whether any device of `T`'s driver id sits on `ndev`, whichever
    /// driver made it.
    pub fn any_on_netdev(ndev: &NetDev<'_>) -> bool {
        // SAFETY: `ndev` is a live net device (a borrowed `NetDev`); the
        // device returned, if any, carries a reference that is ours.
        let ib = unsafe { bindings::ib_device_get_by_netdev(ndev.as_ptr(), T::DRIVER_ID.raw()) };
        if ib.is_null() {
            return false;
        }
        // SAFETY: we own the reference taken above.
        unsafe { bindings::ib_device_put(ib) };
        true
    }
}

/// A device being set up: allocated, its data initialised, not yet
/// registered. Dropping it drops the data and frees the device.
///
/// # Invariants
///
/// `ib` is the `ib_device` of an exclusively owned `Device<T>` with
/// initialised `driver` and `data`, never registered.
struct NewDevice<T: Driver> {
    ib: NonNull<bindings::ib_device>,
    _p: PhantomData<T>,
}

impl<T: Driver> NewDevice<T> {
    /// Allocates a device and initialises its data with `data`.
    fn alloc(data: impl PinInit<T::Data, Error>) -> Result<Self> {
        // SAFETY: a plain allocation (`ib_alloc_device`), which the core
        // makes with `kzalloc(size)` and whose head it initialises as an
        // `ib_device`. Size: `size_of::<Device<T>>()`, at least that of an
        // `ib_device` (its first field, `repr(C)`). Alignment: kmalloc
        // aligns a block to at least the largest power of two dividing its
        // size, and a Rust type's size is a multiple of its alignment, so
        // the block is aligned for `Device<T>`, whichever `T::Data` is.
        let ib = unsafe { glue::rsiw_ib_alloc_device(size_of::<Device<T>>()) };
        let ib = NonNull::new(ib).ok_or(ENOMEM)?;
        let dev = ib.as_ptr().cast::<Device<T>>();
        // SAFETY: `dev` is a fresh, exclusively owned allocation of the
        // right size that does not move until freed; `data` is initialised
        // in place once.
        let r = unsafe {
            core::ptr::addr_of_mut!((*dev).driver).write(TypeId::of::<T>());
            moved::pinned_init(data, core::ptr::addr_of_mut!((*dev).data))
        };
        if let Err(e) = r {
            // SAFETY: never registered; the data is not initialised.
            unsafe { bindings::ib_dealloc_device(ib.as_ptr()) };
            return Err(e);
        }
        // INVARIANT: allocated, `driver` and `data` written just above.
        Ok(Self {
            ib,
            _p: PhantomData,
        })
    }

    /// Sets the device's identity, its operations, its owner `module` and
    /// its net device.
    fn set_up(&self, setup: &DeviceSetup<'_>, module: &'static ThisModule) -> Result {
        // `T`'s table, built once at compile time and shared by its devices.
        let ops: &'static bindings::ib_device_ops = &Adapter::<T>::OPS;
        let ib = self.ib.as_ptr();
        // SAFETY: the device is exclusively ours until registration (type
        // invariant); every field set here is plain data the core reads at
        // registration.
        unsafe {
            (*ib).node_type = T::NODE_TYPE.raw();
            (*ib).node_guid = setup.node_guid;
            (*ib).phys_port_cnt = T::PHYS_PORT_CNT;
            (*ib).num_comp_vectors = setup.num_comp_vectors as i32;
            if T::USER_POST_SEND {
                (*ib).uverbs_cmd_mask |=
                    1u64 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND;
            }
            let desc = &mut (*ib).node_desc;
            for (d, s) in desc.iter_mut().zip(setup.node_desc.iter()).take(63) {
                *d = *s;
            }
            for (d, s) in (*ib).iw_ifname.iter_mut().zip(setup.ndev.name().iter()) {
                *d = *s;
            }
            if T::IW_NO_PORT_MAP {
                (*ib).iw_driver_flags = bindings::iw_flags_IW_F_NO_PORT_MAP;
            }
            bindings::ib_set_device_ops(ib, ops);
            // What the table cannot hold, known only at run time: the
            // module (the registration's) and the sysfs group the C glue
            // builds (see `Adapter::OPS`). Set after `ib_set_device_ops`,
            // which copies the table into the device: the copy is what the
            // core reads.
            (*ib).ops.owner = module.as_ptr();
            (*ib).ops.device_group = Adapter::<T>::attr_group();
            // In exclusive netns mode, the namespace of the net device.
            glue::rsiw_ib_device_set_home_net(ib, setup.ndev.as_ptr());
            to_result(bindings::ib_device_set_netdev(
                ib,
                setup.ndev.as_ptr(),
                NETDEV_PORT,
            ))
        }
    }

    /// Registers the device under `name`; from then on the RDMA core owns
    /// it. A failed registration takes it out of `reg` again and frees it.
    fn register(self, name: &CStr, reg: &Registry) -> Result {
        let ib = self.ib.as_ptr();
        // SAFETY: the device is fully set up; the name is NUL terminated.
        let r = unsafe {
            glue::rsiw_ib_mark_name_assigned_by_user(ib);
            to_result(bindings::ib_register_device(
                ib,
                name.as_char_ptr(),
                core::ptr::null_mut(),
            ))
        };
        if let Err(e) = r {
            // A failed registration does not call `dealloc_driver`. Out of
            // the registry before `self` drops the data and frees the
            // device: module unload looks at the devices in it.
            reg.remove(self.ib);
            return Err(e);
        }
        // The core calls `dealloc_driver` when it unregisters the device,
        // which drops the data and then frees the device.
        core::mem::forget(self);
        Ok(())
    }
}

impl<T: Driver> Drop for NewDevice<T> {
    fn drop(&mut self) {
        let dev = self.ib.as_ptr().cast::<Device<T>>();
        // SAFETY: the type invariant: never registered, so no one else
        // sees the device; the data is initialised and dropped once.
        unsafe {
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*dev).data));
            bindings::ib_dealloc_device(self.ib.as_ptr());
        }
    }
}

/// A registered device of driver `T`, reached only through an [`ARef`],
/// which holds a reference of the RDMA core's count (`ib_device_try_get`,
/// `ib_device_put`).
///
/// # Invariants
///
/// A `&RegisteredDevice<T>` exists only while an `ARef` of it does: the
/// device's count is nonzero, so its data is initialised and taking one
/// more reference succeeds.
#[repr(transparent)]
pub struct RegisteredDevice<T: Driver>(Device<T>);

// SAFETY: `inc_ref` takes a reference of the RDMA core's count, which is
// nonzero (type invariant), and `dec_ref` drops one; while the count is
// nonzero the core keeps the device and calls no `dealloc_driver`.
unsafe impl<T: Driver> AlwaysRefCounted for RegisteredDevice<T> {
    fn inc_ref(&self) {
        // SAFETY: the device is live. The count is nonzero (type
        // invariant), so the reference is taken: `try_get` only fails on a
        // zero count.
        let got = unsafe { glue::rsiw_ib_device_try_get(self.0.ib.get()) };
        debug_assert!(got);
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: the caller gives back a reference it owns; the
        // `ib_device` is at the start of `Self` (`repr(transparent)` over
        // the `repr(C)` `Device<T>`).
        unsafe { bindings::ib_device_put(obj.as_ptr().cast()) };
    }
}

impl<T: Driver> RegisteredDevice<T> {
    /// Takes over the reference the caller holds on `ib`, if `ib` is one
    /// of this module's devices of driver `T` (else drops it).
    ///
    /// # Safety
    ///
    /// `ib` is a registered device on which the caller owns a reference.
    unsafe fn from_held(ib: NonNull<bindings::ib_device>) -> Option<ARef<Self>> {
        let p = ib.as_ptr();
        // SAFETY: the reference keeps the device and its `ops` stable;
        // `owner` is the module that made the device (`set_up`).
        let owner = unsafe { (*p).ops.owner };
        // The module is the live registration's: while this module has
        // devices, it has one.
        let module = Registry::get().map(|reg| reg.module().as_ptr());
        let ours = module == Some(owner) && {
            // SAFETY: every device this module made is a `Device<U>` of a
            // driver `U`, all of which start with the `ib_device` and the
            // `TypeId` (`repr(C)`), so `driver` is at the same offset in
            // all.
            let driver = unsafe { (*p.cast::<Device<T>>()).driver };
            driver == TypeId::of::<T>()
        };
        if !ours {
            // SAFETY: we own the reference.
            unsafe { bindings::ib_device_put(p) };
            return None;
        }
        // SAFETY: a registered `Device<T>`, whose reference we hand over.
        // INVARIANT: the `ARef` owns that reference.
        Some(unsafe { ARef::from_raw(ib.cast()) })
    }

    /// Starts unregistering the device in the background (its net device
    /// is going away; the RDMA core must not block the notifier).
    pub fn unregister_queued(&self) {
        // SAFETY: the device is registered, has `dealloc_driver` and its
        // count is nonzero (type invariant).
        unsafe { bindings::ib_unregister_device_queued(self.0.ib.get()) };
    }
}

impl<T: Driver> Deref for RegisteredDevice<T> {
    type Target = Device<T>;

    fn deref(&self) -> &Device<T> {
        &self.0
    }
}
