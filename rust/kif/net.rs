// SPDX-License-Identifier: GPL-2.0

//! Net devices as seen by rsiw: a borrowed [`NetDev`], the `rsiw` RDMA link
//! type (`rdma link add NAME type rsiw netdev DEV`) and the net device
//! notifier, all owned by one [`LinkRegistration`].

use core::{marker::PhantomData, ptr::NonNull};
use kernel::{bindings, error::from_result, prelude::*, str::CStr, types::Opaque};

use super::{glue, rdma as ib};

/// A net device that is alive for at least `'a`.
pub struct NetDev<'a> {
    ptr: NonNull<bindings::net_device>,
    _p: PhantomData<&'a bindings::net_device>,
}

impl<'a> NetDev<'a> {
    /// Wraps a raw net device pointer.
    ///
    /// # Safety
    ///
    /// `ptr` must point to a registered net device that stays valid for `'a`.
    pub(in crate::kif) unsafe fn from_raw(ptr: NonNull<bindings::net_device>) -> Self {
        Self {
            ptr,
            _p: PhantomData,
        }
    }

    pub(in crate::kif) fn as_ptr(&self) -> *mut bindings::net_device {
        self.ptr.as_ptr()
    }

    fn raw(&self) -> &bindings::net_device {
        // SAFETY: the type invariant keeps the device valid for `'a`; the
        // fields read through this reference are only read, never cached.
        unsafe { self.ptr.as_ref() }
    }

    /// Current MTU in octets.
    pub fn mtu(&self) -> u32 {
        // SAFETY: `mtu` is a plain integer the stack updates with WRITE_ONCE;
        // a volatile read of it is the READ_ONCE the kernel does.
        unsafe { core::ptr::read_volatile(&self.raw().mtu) }
    }

    /// Largest MTU the device accepts.
    pub fn max_mtu(&self) -> u32 {
        self.raw().max_mtu
    }

    /// Interface index.
    pub fn ifindex(&self) -> i32 {
        self.raw().ifindex
    }

    /// ARP hardware type (`ARPHRD_*`).
    pub fn hw_type(&self) -> u16 {
        self.raw().type_
    }

    /// Whether the device is administratively up with its carrier on.
    pub fn is_up(&self) -> bool {
        // SAFETY: the device is valid (type invariant); the helper only tests
        // state bits.
        unsafe { glue::rsiw_netif_up(self.ptr.as_ptr()) }
    }

    /// The first six octets of the hardware address, or `None` when the
    /// device has none.
    pub fn mac(&self) -> Option<[u8; 6]> {
        let raw = self.raw();
        if raw.addr_len < 6 || raw.dev_addr.is_null() {
            return None;
        }
        let mut mac = [0u8; 6];
        // SAFETY: `dev_addr` points to at least `addr_len` (>= 6) octets
        // owned by the live device.
        let src = unsafe { core::slice::from_raw_parts(raw.dev_addr, 6) };
        mac.copy_from_slice(src);
        Some(mac)
    }

    /// The interface name (`IFNAMSIZ` octets, NUL padded).
    pub fn name(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        for (o, c) in out.iter_mut().zip(self.raw().name.iter()) {
            *o = *c;
        }
        out
    }
}

/// A net device reference we hold (dropped with `dev_put`).
pub(in crate::kif) struct NetDevRef(NonNull<bindings::net_device>);

impl NetDevRef {
    /// Takes over a reference the caller holds (as returned by
    /// `ib_device_get_netdev`), or `None` for null.
    ///
    /// # Safety
    ///
    /// A non-null `p` must carry a reference that is now ours to drop.
    pub(in crate::kif) unsafe fn from_held(p: *mut bindings::net_device) -> Option<Self> {
        NonNull::new(p).map(Self)
    }

    /// The device, borrowed for as long as the reference lives.
    pub(in crate::kif) fn dev(&self) -> NetDev<'_> {
        // SAFETY: our reference keeps the device alive while `self` lives.
        unsafe { NetDev::from_raw(self.0) }
    }
}

impl Drop for NetDevRef {
    fn drop(&mut self) {
        // SAFETY: we own one reference (type invariant).
        unsafe { glue::rsiw_dev_put(self.0.as_ptr()) };
    }
}

/// A net device event rsiw reacts to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetdevEvent {
    /// The device went up.
    Up,
    /// The device went down.
    Down,
    /// The device is being unregistered.
    Unregister,
    /// The hardware address changed.
    ChangeAddr,
}

impl NetdevEvent {
    fn from_raw(ev: kernel::ffi::c_ulong) -> Option<Self> {
        match ev as bindings::netdev_cmd {
            bindings::netdev_cmd_NETDEV_UP => Some(Self::Up),
            bindings::netdev_cmd_NETDEV_DOWN => Some(Self::Down),
            bindings::netdev_cmd_NETDEV_UNREGISTER => Some(Self::Unregister),
            bindings::netdev_cmd_NETDEV_CHANGEADDR => Some(Self::ChangeAddr),
            _ => None,
        }
    }
}

/// What the driver does for the link type and for net device events.
pub trait LinkDriver: 'static {
    /// The verbs driver whose devices this link type creates.
    type Driver: ib::Driver;
    /// `rdma link add NAME type rsiw netdev DEV`: create and register a device.
    fn newlink(name: &CStr, ndev: &NetDev<'_>) -> Result;
    /// A net device event for a net device that carries an rsiw device.
    fn netdev_event(dev: &ib::DeviceRef<Self::Driver>, ndev: &NetDev<'_>, event: NetdevEvent);
}

/// The registered link type and net device notifier.
///
/// Dropping it unregisters both and then every rsiw device, waiting until
/// the RDMA core has released each of them.
#[pin_data(PinnedDrop)]
pub struct LinkRegistration {
    #[pin]
    link: Opaque<bindings::rdma_link_ops>,
    #[pin]
    notifier: Opaque<bindings::notifier_block>,
    registry: Pin<KBox<ib::Registry>>,
}

// SAFETY: the C structures are only touched by their registration calls,
// which do their own locking.
unsafe impl Send for LinkRegistration {}
// SAFETY: as above; `&LinkRegistration` exposes nothing.
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
        return bindings::NOTIFY_OK as _;
    };
    // SAFETY: netdev notifiers get a `netdev_notifier_info`; the helper
    // returns its device, which RTNL keeps alive during the call.
    let ndev = unsafe { glue::rsiw_netdev_notifier_dev(info) };
    let Some(ndev) = NonNull::new(ndev) else {
        return bindings::NOTIFY_OK as _;
    };
    // SAFETY: see above; the device outlives this callback.
    let ndev = unsafe { NetDev::from_raw(ndev) };
    if let Some(dev) = ib::DeviceRef::<T::Driver>::get_by_netdev(&ndev) {
        T::netdev_event(&dev, &ndev, event);
    }
    bindings::NOTIFY_OK as _
}

impl LinkRegistration {
    /// Registers the RDMA link type `kind` (a static string) and the net
    /// device notifier, both served by `T`.
    pub fn new<T: LinkDriver>(kind: &'static CStr) -> Result<Pin<KBox<Self>>> {
        let registry = ib::Registry::new()?;
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
                notifier <- Opaque::ffi_init(|p: *mut bindings::notifier_block| {
                    // SAFETY: `p` is valid for writes of a `notifier_block`.
                    unsafe {
                        p.write(bindings::notifier_block {
                            notifier_call: Some(notifier_cb::<T>),
                            ..Default::default()
                        })
                    }
                }),
                registry,
            }? Error),
            GFP_KERNEL,
        )?;
        // SAFETY: the notifier block is pinned in `this` and unregistered in
        // `drop` before it is freed.
        kernel::error::to_result(unsafe {
            bindings::register_netdevice_notifier(this.notifier.get())
        })?;
        // SAFETY: as above for the link ops; `kind` is static.
        unsafe { bindings::rdma_link_register(this.link.get()) };
        Ok(this)
    }
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
