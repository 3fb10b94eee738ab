// SPDX-License-Identifier: GPL-2.0

//! Driver details of the RDMA core's resource tracking: what a driver
//! adds to an object's entry in the netlink dump that `rdma resource show
//! qp -dd` (or `cm_id -dd`) prints (`rdma_nl_put_driver_*`).

use core::{marker::PhantomData, ptr::NonNull};
use kernel::{bindings, error::to_result, prelude::*, str::CStr};

use crate::kif::glue;

/// The netlink message of one resource entry under construction.
///
/// # Invariants
///
/// `skb` is the message the RDMA core is filling for the current call of
/// a `fill_res_*_entry` operation; it stays valid for `'a`.
pub struct ResDetails<'a> {
    skb: NonNull<bindings::sk_buff>,
    /// An attribute went in.
    added: bool,
    _call: PhantomData<&'a mut bindings::sk_buff>,
}

impl ResDetails<'_> {
    /// Runs `f` on the driver details of the entry `msg` holds: the
    /// `RDMA_NLDEV_ATTR_DRIVER` nest, where `rdma resource show -dd` looks
    /// for them. The nest goes again if `f` fails or adds nothing.
    ///
    /// # Safety
    ///
    /// `msg` is the message of a `fill_res_*_entry` call in progress, not
    /// used otherwise until this returns.
    pub(in crate::kif) unsafe fn fill(
        msg: *mut bindings::sk_buff,
        f: impl FnOnce(&mut ResDetails<'_>) -> Result,
    ) -> Result {
        let skb = NonNull::new(msg).ok_or(EINVAL)?;
        // SAFETY: the message of this call (the contract).
        let nest = unsafe { glue::rsiw_res_driver_begin(skb.as_ptr()) };
        if nest.is_null() {
            return Err(Error::from_errno(
                -(bindings::EMSGSIZE as kernel::ffi::c_int),
            ));
        }
        // INVARIANT: the message of this call, used only through `d` until
        // the nest ends.
        let mut d = ResDetails {
            skb,
            added: false,
            _call: PhantomData,
        };
        let r = f(&mut d);
        let keep = r.is_ok() && d.added;
        // SAFETY: `nest` was opened in `msg` above.
        unsafe { glue::rsiw_res_driver_end(skb.as_ptr(), nest, keep) };
        r
    }

    /// Notes the outcome of adding an attribute.
    fn put(&mut self, r: kernel::ffi::c_int) -> Result {
        to_result(r)?;
        self.added = true;
        Ok(())
    }

    /// Adds the attribute `name` with the value `v`. Fails (`EMSGSIZE`)
    /// when the message is full; the core then sends it and asks again.
    pub fn u32(&mut self, name: &CStr, v: u32) -> Result {
        // SAFETY: `skb` is valid (the type's invariant); `name` is a C
        // string the call only reads.
        let r =
            unsafe { bindings::rdma_nl_put_driver_u32(self.skb.as_ptr(), name.as_char_ptr(), v) };
        self.put(r)
    }

    /// As [`Self::u32`], for a 64-bit value.
    pub fn u64(&mut self, name: &CStr, v: u64) -> Result {
        // SAFETY: `skb` is valid (the type's invariant); `name` is a C
        // string the call only reads.
        let r =
            unsafe { bindings::rdma_nl_put_driver_u64(self.skb.as_ptr(), name.as_char_ptr(), v) };
        self.put(r)
    }

    /// As [`Self::u32`], for a string.
    pub fn str(&mut self, name: &CStr, v: &CStr) -> Result {
        // SAFETY: `skb` is valid (the type's invariant); `name` and `v` are
        // C strings the call only reads.
        let r = unsafe {
            bindings::rdma_nl_put_driver_string(
                self.skb.as_ptr(),
                name.as_char_ptr(),
                v.as_char_ptr(),
            )
        };
        self.put(r)
    }
}
