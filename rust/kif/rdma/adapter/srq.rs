// SPDX-License-Identifier: GPL-2.0

//! Entry points of shared receive queues.

use core::ptr::{self, NonNull};
use kernel::{bindings, error::from_result, prelude::*};

use super::Adapter;
use crate::kif::rdma::{
    handle::SrqHandle,
    object::{pd_of, slot, slot_ptr, user_ctx, SrqSlot},
    srq::{CreateSrq, SrqAttr},
    udata::Udata,
    wr::RecvWrs,
    Device, Driver,
};

impl<T: Driver> Adapter<T> {
    /// `create_srq`.
    ///
    /// # Safety
    ///
    /// See the module; `srq` is a fresh SRQ the core allocated with the
    /// table's size, with `device` and `pd` set; `init` and `udata` are
    /// this call's.
    pub(super) unsafe extern "C" fn create_srq(
        srq: *mut bindings::ib_srq,
        init: *mut bindings::ib_srq_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: live arguments of this call.
            let (dev, a, pd) = unsafe {
                (
                    Device::<T>::from_raw((*srq).device),
                    &mut *init,
                    pd_of::<T>((*srq).pd),
                )
            };
            let srq_ptr = NonNull::new(srq).ok_or(EINVAL)?;
            // SAFETY: the SRQ lives until its destroy entry point, which
            // revokes the handle first.
            let handle = unsafe { SrqHandle::new(srq_ptr) }?;
            // SAFETY: `udata` is this call's.
            let args = unsafe {
                CreateSrq::<T> {
                    handle: handle.clone(),
                    pd,
                    attr: SrqAttr {
                        max_wr: a.attr.max_wr,
                        max_sge: a.attr.max_sge,
                        limit: a.attr.srq_limit,
                    },
                    basic: a.srq_type == bindings::ib_srq_type_IB_SRQT_BASIC,
                    user: user_ctx(udata),
                    udata: Udata::from_raw(udata)?,
                }
            };
            let drv = T::create_srq(dev, args)?;
            a.attr.max_wr = T::query_srq(&drv).max_wr;
            // SAFETY: the core allocated `srq` with `kzalloc(size_ib_srq)`,
            // the size of an `Obj<ib_srq, SrqSlot<T>>` (`Adapter::OPS`), and
            // kmalloc aligns that block for it (to at least the largest
            // power of two dividing the size, a multiple of the `Obj`'s
            // alignment); the slot is written once.
            unsafe { slot_ptr::<_, SrqSlot<T>>(srq).write(SrqSlot { drv, handle }) };
            Ok(0)
        })
    }

    /// `modify_srq`.
    ///
    /// # Safety
    ///
    /// See the module; `attr` is this call's.
    pub(super) unsafe extern "C" fn modify_srq(
        srq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
        mask: bindings::ib_srq_attr_mask,
        _udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: live arguments of this call.
            let (s, a) = unsafe { (slot::<_, SrqSlot<T>>(srq), &*attr) };
            let max_wr = (mask & bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR != 0).then_some(a.max_wr);
            let limit =
                (mask & bindings::ib_srq_attr_mask_IB_SRQ_LIMIT != 0).then_some(a.srq_limit);
            T::modify_srq(&s.drv, max_wr, limit)?;
            Ok(0)
        })
    }

    /// `query_srq`.
    ///
    /// # Safety
    ///
    /// See the module; `attr` is valid for writes.
    pub(super) unsafe extern "C" fn query_srq(
        srq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
    ) -> kernel::ffi::c_int {
        // SAFETY: live arguments of this call.
        let (s, a) = unsafe { (slot::<_, SrqSlot<T>>(srq), &mut *attr) };
        let q = T::query_srq(&s.drv);
        a.max_wr = q.max_wr;
        a.max_sge = q.max_sge;
        a.srq_limit = q.limit;
        0
    }

    /// `destroy_srq`.
    ///
    /// # Safety
    ///
    /// See the module; called once for an SRQ `create_srq` set up.
    pub(super) unsafe extern "C" fn destroy_srq(
        srq: *mut bindings::ib_srq,
        _udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        // SAFETY: the slot was written by `create_srq` and is read out once.
        let s = unsafe { ptr::read(slot_ptr::<_, SrqSlot<T>>(srq)) };
        s.handle.0.revoke();
        // SAFETY: a live SRQ of one of `T`'s devices.
        T::destroy_srq(unsafe { Device::from_raw((*srq).device) }, s.drv);
        0
    }

    /// `post_srq_recv`.
    ///
    /// # Safety
    ///
    /// See the module; `wr` is a valid list and `bad` null or valid for
    /// writes.
    pub(super) unsafe extern "C" fn post_srq_recv(
        srq: *mut bindings::ib_srq,
        wr: *const bindings::ib_recv_wr,
        bad: *mut *const bindings::ib_recv_wr,
    ) -> kernel::ffi::c_int {
        // SAFETY: a live SRQ whose slot `create_srq` wrote; `wr` per the
        // contract.
        let (s, mut wrs) = unsafe { (slot::<_, SrqSlot<T>>(srq), RecvWrs::new(wr)) };
        match T::post_srq_recv(&s.drv, &mut wrs) {
            Ok(()) => 0,
            Err(e) => {
                if !bad.is_null() {
                    // SAFETY: `bad` is the consumer's output pointer.
                    unsafe { *bad = wrs.current() };
                }
                e.to_errno()
            }
        }
    }
}
