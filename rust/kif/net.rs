// SPDX-License-Identifier: GPL-2.0

//! Net devices: a borrowed [`NetDev`], a counted reference to one, the
//! network namespace a device lives in ([`NetNs`]), and the net device
//! events RDMA drivers react to ([`NetdevEvent`]).

use core::{marker::PhantomData, ptr::NonNull};
use kernel::bindings;

use super::glue;

/// A net device that is alive for at least `'a`.
///
/// # Invariants
///
/// `ptr` is a registered net device that stays valid for `'a`.
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
        // INVARIANT: per the contract.
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

impl NetDev<'_> {
    /// A reference on the network namespace the device lives in now;
    /// `ENODEV` when that namespace is being dismantled.
    pub fn netns(&self) -> kernel::error::Result<NetNs> {
        // SAFETY: the device is valid (type invariant), so is its
        // namespace while it is registered there; the helper takes a
        // reference only if the namespace's count is not zero yet.
        let net = unsafe { glue::rsiw_netdev_net_get(self.ptr.as_ptr()) };
        // INVARIANT: a non-null result carries a reference that is ours.
        NonNull::new(net)
            .map(NetNs)
            .ok_or(kernel::error::code::ENODEV)
    }
}

/// A counted reference on a network namespace (`struct net`): the
/// namespace stays alive, and its sockets can be made, while it is held.
///
/// # Invariants
///
/// We own one reference (`get_net`) on the namespace.
pub struct NetNs(NonNull<bindings::net>);

// SAFETY: a namespace reference may be dropped on any thread
// (`put_net`); the namespace is only passed by pointer to functions that
// synchronise themselves.
unsafe impl Send for NetNs {}
// SAFETY: `&NetNs` gives out nothing but the pointer, to kif only.
unsafe impl Sync for NetNs {}

impl NetNs {
    pub(in crate::kif) fn as_ptr(&self) -> *mut bindings::net {
        self.0.as_ptr()
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        // SAFETY: we own one reference (type invariant).
        unsafe { glue::rsiw_net_put(self.0.as_ptr()) };
    }
}

/// A net device reference we hold (dropped with `dev_put`).
///
/// # Invariants
///
/// We own one reference on the net device.
pub(in crate::kif) struct NetDevRef(NonNull<bindings::net_device>);

impl NetDevRef {
    /// Takes over a reference the caller holds (as returned by
    /// `ib_device_get_netdev`), or `None` for null.
    ///
    /// # Safety
    ///
    /// A non-null `p` must carry a reference that is now ours to drop.
    pub(in crate::kif) unsafe fn from_held(p: *mut bindings::net_device) -> Option<Self> {
        // INVARIANT: per the contract.
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
    pub(in crate::kif) fn from_raw(ev: kernel::ffi::c_ulong) -> Option<Self> {
        match ev as bindings::netdev_cmd {
            bindings::netdev_cmd_NETDEV_UP => Some(Self::Up),
            bindings::netdev_cmd_NETDEV_DOWN => Some(Self::Down),
            bindings::netdev_cmd_NETDEV_UNREGISTER => Some(Self::Unregister),
            bindings::netdev_cmd_NETDEV_CHANGEADDR => Some(Self::ChangeAddr),
            _ => None,
        }
    }
}
