// SPDX-License-Identifier: GPL-2.0

//! Entry points of completion queues.

use core::ptr::{self, NonNull};
use kernel::{bindings, error::from_result, prelude::*};

use super::Adapter;
use crate::kif::{
    glue,
    rdma::{
        cq::CreateCq,
        handle::CqHandle,
        object::{slot, slot_ptr, user_ctx, CqSlot},
        udata::Udata,
        Device, Driver,
    },
};

impl<T: Driver> Adapter<T> {
    /// `create_cq`.
    ///
    /// # Safety
    ///
    /// See the module; `cq` is a fresh CQ the core allocated with the
    /// table's size; `attr` and `attrs` are this call's.
    pub(super) unsafe extern "C" fn create_cq(
        cq: *mut bindings::ib_cq,
        attr: *const bindings::ib_cq_init_attr,
        attrs: *mut bindings::uverbs_attr_bundle,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: live arguments of this call.
            let (dev, attr, udata) = unsafe {
                (
                    Device::<T>::from_raw((*cq).device),
                    &*attr,
                    glue::rsiw_bundle_udata(attrs),
                )
            };
            let cq_ptr = NonNull::new(cq).ok_or(EINVAL)?;
            // SAFETY: the CQ lives until its destroy entry point, which
            // revokes the handle first.
            let handle = unsafe { CqHandle::new(cq_ptr) }?;
            let args = CreateCq {
                handle: handle.clone(),
                cqe: attr.cqe,
                flags: attr.flags,
                // SAFETY: `udata` is this call's.
                user: unsafe { user_ctx(udata) },
                // SAFETY: `udata` is null or this call's udata, valid for
                // the call, which `args` does not outlive.
                udata: unsafe { Udata::from_raw(udata)? },
            };
            let drv = T::create_cq(dev, args)?;
            // SAFETY: the core allocated `cq` with `kzalloc(size_ib_cq)`,
            // the size of an `Obj<ib_cq, CqSlot<T>>` (`Adapter::OPS`), and
            // kmalloc aligns that block for it (to at least the largest
            // power of two dividing the size, a multiple of the `Obj`'s
            // alignment); the slot is written once. `cqe` is the size the
            // consumer sees.
            unsafe {
                (*cq).cqe = attr.cqe.next_power_of_two() as i32;
                slot_ptr::<_, CqSlot<T>>(cq).write(CqSlot { drv, handle });
            }
            Ok(0)
        })
    }

    /// `destroy_cq`.
    ///
    /// # Safety
    ///
    /// See the module; called once for a CQ `create_cq` set up.
    pub(super) unsafe extern "C" fn destroy_cq(
        cq: *mut bindings::ib_cq,
        _udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        // SAFETY: the slot was written by `create_cq` and is read out once.
        let s = unsafe { ptr::read(slot_ptr::<_, CqSlot<T>>(cq)) };
        s.handle.0.revoke();
        // SAFETY: a live CQ of one of `T`'s devices.
        T::destroy_cq(unsafe { Device::from_raw((*cq).device) }, s.drv);
        0
    }

    /// `poll_cq`.
    ///
    /// # Safety
    ///
    /// See the module; `wc` has room for `n` work completions.
    pub(super) unsafe extern "C" fn poll_cq(
        cq: *mut bindings::ib_cq,
        n: kernel::ffi::c_int,
        wc: *mut bindings::ib_wc,
    ) -> kernel::ffi::c_int {
        let max = usize::try_from(n).unwrap_or(0);
        let mut got = 0usize;
        // SAFETY: a live CQ whose slot `create_cq` wrote.
        let s = unsafe { slot::<_, CqSlot<T>>(cq) };
        T::poll_cq(&s.drv, max, &mut |c| {
            if got < max {
                // SAFETY: `wc` has room for `n` entries and `got < n`.
                c.write_to(unsafe { &mut *wc.add(got) });
                got += 1;
            }
        });
        got as i32
    }

    /// `req_notify_cq`.
    ///
    /// # Safety
    ///
    /// See the module.
    pub(super) unsafe extern "C" fn req_notify_cq(
        cq: *mut bindings::ib_cq,
        flags: bindings::ib_cq_notify_flags,
    ) -> kernel::ffi::c_int {
        // SAFETY: a live CQ whose slot `create_cq` wrote.
        let s = unsafe { slot::<_, CqSlot<T>>(cq) };
        let solicited = flags & bindings::ib_cq_notify_flags_IB_CQ_SOLICITED_MASK
            == bindings::ib_cq_notify_flags_IB_CQ_SOLICITED;
        let missed = flags & bindings::ib_cq_notify_flags_IB_CQ_REPORT_MISSED_EVENTS != 0;
        T::req_notify_cq(&s.drv, solicited, missed).min(i32::MAX as u32) as i32
    }
}
