// SPDX-License-Identifier: GPL-2.0

//! Entry points of queue pairs.

use core::ptr::{self, NonNull};
use kernel::{bindings, error::from_result, prelude::*};

use super::Adapter;
use crate::kif::{
    net::NetDevRef,
    rdma::{
        handle::QpHandle,
        object::{cq_of, pd_of, slot, slot_ptr, srq_of, user_ctx, CmRefs, QpSlot},
        qp::{state_from_raw, CreateQp, QpInit, QpModify},
        restrack::ResDetails,
        udata::Udata,
        wr::{RecvWrs, SendWrs},
        Device, Driver, NETDEV_PORT,
    },
};

impl QpInit {
    /// The attributes of a `create_qp` call.
    fn from_raw(a: &bindings::ib_qp_init_attr) -> Self {
        let all = bindings::ib_sig_type_IB_SIGNAL_ALL_WR;
        Self {
            max_send_wr: a.cap.max_send_wr,
            max_recv_wr: a.cap.max_recv_wr,
            max_send_sge: a.cap.max_send_sge,
            max_recv_sge: a.cap.max_recv_sge,
            max_inline: a.cap.max_inline_data,
            rc: a.qp_type == bindings::ib_qp_type_IB_QPT_RC,
            sig_all: a.sq_sig_type == all,
            bad_sig_type: a.sq_sig_type != all
                && a.sq_sig_type != bindings::ib_sig_type_IB_SIGNAL_REQ_WR,
            create_flags: a.create_flags,
        }
    }
}

impl<T: Driver> Adapter<T> {
    /// `create_qp`.
    ///
    /// # Safety
    ///
    /// See the module; `qp` is a fresh QP the core allocated with the
    /// table's size, with `device` and `pd` set; `attr` and `udata` are
    /// this call's.
    pub(super) unsafe extern "C" fn create_qp(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: live arguments of this call.
            let (dev, a, pd) = unsafe {
                (
                    Device::<T>::from_raw((*qp).device),
                    &*attr,
                    pd_of::<T>((*qp).pd),
                )
            };
            let qp_ptr = NonNull::new(qp).ok_or(EINVAL)?;
            // SAFETY: the QP lives until its destroy entry point, which
            // revokes the handle first.
            let handle = unsafe { QpHandle::new(qp_ptr) }?;
            // SAFETY: the CQs and SRQ named by the consumer are live objects
            // of this device (the core resolved them); `udata` is this call's.
            let args = unsafe {
                CreateQp::<T> {
                    handle: handle.clone(),
                    pd,
                    send_cq: cq_of::<T>(a.send_cq),
                    recv_cq: cq_of::<T>(a.recv_cq),
                    srq: srq_of::<T>(a.srq),
                    init: QpInit::from_raw(a),
                    user: user_ctx(udata),
                    udata: Udata::from_raw(udata)?,
                }
            };
            let cm = CmRefs::new()?;
            let (drv, qpn) = T::create_qp(dev, args)?;
            // SAFETY: the core allocated `qp` with `kzalloc(size_ib_qp)`
            // (or `kzalloc_node`), the size of an `Obj<ib_qp, QpSlot<T>>`
            // (`Adapter::OPS`), and kmalloc aligns that block for it (to at
            // least the largest power of two dividing the size, a multiple
            // of the `Obj`'s alignment); the slot is written once.
            unsafe {
                (*qp).qp_num = qpn;
                slot_ptr::<_, QpSlot<T>>(qp).write(QpSlot { drv, handle, cm });
            }
            Ok(0)
        })
    }

    /// `modify_qp`.
    ///
    /// # Safety
    ///
    /// See the module; `attr` is this call's.
    pub(super) unsafe extern "C" fn modify_qp(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        mask: kernel::ffi::c_int,
        _udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: live arguments of this call.
            let (s, a) = unsafe { (slot::<_, QpSlot<T>>(qp), &*attr) };
            let mask = mask as u32;
            // IB_QP_ATTR_STANDARD_BITS: every attribute up to IB_QP_RATE_LIMIT.
            let standard = (bindings::ib_qp_attr_mask_IB_QP_RATE_LIMIT << 1) - 1;
            let m = QpModify {
                state: if mask & bindings::ib_qp_attr_mask_IB_QP_STATE != 0 {
                    Some(state_from_raw(a.qp_state).ok_or(EINVAL)?)
                } else {
                    None
                },
                access: (mask & bindings::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS != 0)
                    .then_some(a.qp_access_flags as u32),
                nonstandard: mask & !standard != 0,
            };
            T::modify_qp(&s.drv, &m)?;
            Ok(0)
        })
    }

    /// `query_qp`.
    ///
    /// # Safety
    ///
    /// See the module; `attr` and `init` are null or valid for writes.
    pub(super) unsafe extern "C" fn query_qp(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        _mask: kernel::ffi::c_int,
        init: *mut bindings::ib_qp_init_attr,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            if attr.is_null() || init.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: a live QP; the net device reference is ours to drop.
            let nd = unsafe {
                NetDevRef::from_held(bindings::ib_device_get_netdev((*qp).device, NETDEV_PORT))
            }
            .ok_or(ENODEV)?;
            // SAFETY: a live QP whose slot `create_qp` wrote.
            let s = unsafe { slot::<_, QpSlot<T>>(qp) };
            let q = T::query_qp(&s.drv, &nd.dev());
            // SAFETY: valid output buffers (checked non-null above).
            let (a, i, ib) = unsafe { (&mut *attr, &mut *init, &*qp) };
            q.write_to(a);
            i.qp_type = ib.qp_type;
            i.send_cq = ib.send_cq;
            i.recv_cq = ib.recv_cq;
            i.srq = ib.srq;
            i.cap = a.cap;
            Ok(0)
        })
    }

    /// `fill_res_qp_entry`.
    ///
    /// # Safety
    ///
    /// See the module; `msg` is the message of this dump call. The core
    /// drains its resource-tracking users before `destroy_qp`, so the QP's
    /// slot is written and still there.
    pub(super) unsafe extern "C" fn fill_res_qp_entry(
        msg: *mut bindings::sk_buff,
        qp: *mut bindings::ib_qp,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: a live QP whose slot `create_qp` wrote.
            let s = unsafe { slot::<_, QpSlot<T>>(qp) };
            // SAFETY: the message of this call.
            unsafe { ResDetails::fill(msg, |d| T::fill_res_qp(&s.drv, d)) }?;
            Ok(0)
        })
    }

    /// `destroy_qp`.
    ///
    /// # Safety
    ///
    /// See the module; called once for a QP `create_qp` set up.
    pub(super) unsafe extern "C" fn destroy_qp(
        qp: *mut bindings::ib_qp,
        _udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        // SAFETY: a live QP of one of `T`'s devices whose slot `create_qp`
        // wrote.
        let (dev, s) = unsafe { (Device::from_raw((*qp).device), slot::<_, QpSlot<T>>(qp)) };
        let cm = s.cm.clone();
        // The slot keeps its own reference to the driver state while the CM
        // may still call `modify_qp`.
        T::destroy_qp(dev, s.drv.clone());
        // The connection is gone or going: the CM drops its references when
        // it gets the CLOSE (or a failed CONNECT_REPLY), or when its id is
        // destroyed. Until then it may still use this `ib_qp`.
        cm.wait_zero();
        // SAFETY: the slot was written by `create_qp` and is read out once;
        // nobody uses the QP any more (its owner destroys it, the CM let go).
        let s = unsafe { ptr::read(slot_ptr::<_, QpSlot<T>>(qp)) };
        s.handle.0.revoke();
        0
    }

    /// `post_send`.
    ///
    /// # Safety
    ///
    /// See the module; `wr` is a valid list and `bad` null or valid for
    /// writes.
    pub(super) unsafe extern "C" fn post_send(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_send_wr,
        bad: *mut *const bindings::ib_send_wr,
    ) -> kernel::ffi::c_int {
        // SAFETY: a live QP of driver `T` whose slot `create_qp` wrote;
        // `wr` per the contract.
        let (s, mut wrs) = unsafe { (slot::<_, QpSlot<T>>(qp), SendWrs::<T>::new(wr)) };
        match T::post_send(&s.drv, &mut wrs) {
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

    /// `post_recv`.
    ///
    /// # Safety
    ///
    /// As for `post_send`.
    pub(super) unsafe extern "C" fn post_recv(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_recv_wr,
        bad: *mut *const bindings::ib_recv_wr,
    ) -> kernel::ffi::c_int {
        // SAFETY: a live QP of driver `T` whose slot `create_qp` wrote;
        // `wr` is a valid list (the contract).
        let (s, mut wrs) = unsafe { (slot::<_, QpSlot<T>>(qp), RecvWrs::new(wr)) };
        match T::post_recv(&s.drv, &mut wrs) {
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
