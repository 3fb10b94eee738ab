// SPDX-License-Identifier: GPL-2.0

//! Driver details of the RDMA core's resource tracking: what a driver
//! adds to an object's entry in the netlink dump that `rdma resource show
//! qp -dd` prints (`rdma_nl_put_driver_*`).

use core::{marker::PhantomData, ptr::NonNull};
use kernel::{bindings, error::to_result, prelude::*, str::CStr};

/// The netlink message of one resource entry under construction.
///
/// # Invariants
///
/// `skb` is the message the RDMA core is filling for the current call of
/// a `fill_res_*_entry` operation; it stays valid for `'a`.
pub struct ResDetails<'a> {
    skb: NonNull<bindings::sk_buff>,
    _call: PhantomData<&'a mut bindings::sk_buff>,
}

impl ResDetails<'_> {
    /// The details being added to `skb`.
    ///
    /// # Safety
    ///
    /// `skb` is the message of a `fill_res_*_entry` call in progress, not
    /// used otherwise while the value lives.
    pub(in crate::kif) unsafe fn from_raw(skb: NonNull<bindings::sk_buff>) -> Self {
        // INVARIANT: per the contract.
        Self {
            skb,
            _call: PhantomData,
        }
    }

    /// Adds the attribute `name` with the value `v`. Fails (`EMSGSIZE`)
    /// when the message is full; the core then sends it and asks again.
    pub fn u32(&mut self, name: &CStr, v: u32) -> Result {
        // SAFETY: `skb` is valid (the type's invariant); `name` is a C
        // string the call only reads.
        to_result(unsafe {
            bindings::rdma_nl_put_driver_u32(self.skb.as_ptr(), name.as_char_ptr(), v)
        })
    }

    /// As [`Self::u32`], for a 64-bit value.
    pub fn u64(&mut self, name: &CStr, v: u64) -> Result {
        // SAFETY: as in `u32`.
        to_result(unsafe {
            bindings::rdma_nl_put_driver_u64(self.skb.as_ptr(), name.as_char_ptr(), v)
        })
    }

    /// As [`Self::u32`], for a string.
    pub fn str(&mut self, name: &CStr, v: &CStr) -> Result {
        // SAFETY: as in `u32`; `v` is a C string the call only reads.
        to_result(unsafe {
            bindings::rdma_nl_put_driver_string(
                self.skb.as_ptr(),
                name.as_char_ptr(),
                v.as_char_ptr(),
            )
        })
    }
}
