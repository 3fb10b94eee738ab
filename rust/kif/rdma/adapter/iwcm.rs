// SPDX-License-Identifier: GPL-2.0

//! Entry points of the iWARP connection manager, and the driver details
//! of a CM id in the core's resource dump (`rdma resource show cm_id`).

use core::ptr::{self, NonNull};
use kernel::{bindings, error::from_result, prelude::*};

use super::Adapter;
use crate::kif::glue;
use crate::kif::rdma::{
    iwcm::{take_provider, take_request_key, CmId, CmIdKey, ConnParam},
    object::{slot, QpSlot},
    restrack::ResDetails,
    Device, Driver,
};

impl<T: Driver> Adapter<T> {
    /// `iw_connect`.
    ///
    /// # Safety
    ///
    /// Called by the iWARP CM with a live id of a `T` device and parameters.
    pub(super) unsafe extern "C" fn iw_connect(
        id: *mut bindings::iw_cm_id,
        p: *mut bindings::iw_cm_conn_param,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: live arguments of this call.
            let (dev, id, p) = unsafe {
                (
                    Device::<T>::from_raw((*id).device),
                    CmId::get(id)?,
                    ConnParam::from_raw(p)?,
                )
            };
            T::iw_connect(dev, id, p).map(|()| 0)
        })
    }

    /// `iw_accept`.
    ///
    /// # Safety
    ///
    /// Called by the iWARP CM with the id it made for a connect request,
    /// whose provider data is the key of that request.
    pub(super) unsafe extern "C" fn iw_accept(
        id: *mut bindings::iw_cm_id,
        p: *mut bindings::iw_cm_conn_param,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: per the contract.
            let key = unsafe { take_request_key(id) }.ok_or(EINVAL)?;
            // SAFETY: live arguments of this call.
            let (dev, id, p) = unsafe {
                (
                    Device::<T>::from_raw((*id).device),
                    CmId::get(id)?,
                    ConnParam::from_raw(p)?,
                )
            };
            T::iw_accept(dev, key, id, p).map(|()| 0)
        })
    }

    /// `iw_reject`.
    ///
    /// # Safety
    ///
    /// As for `iw_accept`; `pdata` holds `len` octets.
    pub(super) unsafe extern "C" fn iw_reject(
        id: *mut bindings::iw_cm_id,
        pdata: *const kernel::ffi::c_void,
        len: u8,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: per the contract.
            let key = unsafe { take_request_key(id) }.ok_or(EINVAL)?;
            // SAFETY: a live id of a `T` device (the contract).
            let dev = unsafe { Device::<T>::from_raw((*id).device) };
            let pd: &[u8] = if pdata.is_null() {
                &[]
            } else {
                // SAFETY: per the contract.
                unsafe { core::slice::from_raw_parts(pdata.cast::<u8>(), len as usize) }
            };
            T::iw_reject(dev, key, pd).map(|()| 0)
        })
    }

    /// `iw_create_listen`.
    ///
    /// # Safety
    ///
    /// Called by the iWARP CM with a live id of a `T` device.
    pub(super) unsafe extern "C" fn iw_create_listen(
        id: *mut bindings::iw_cm_id,
        backlog: kernel::ffi::c_int,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: live id.
            let (dev, cid) = unsafe { (Device::<T>::from_raw((*id).device), CmId::get(id)?) };
            let l = T::iw_create_listen(dev, cid.clone(), backlog)?;
            cid.set_provider(l);
            Ok(0)
        })
    }

    /// `iw_destroy_listen`.
    ///
    /// # Safety
    ///
    /// Called by the iWARP CM once for an id `iw_create_listen` set up.
    pub(super) unsafe extern "C" fn iw_destroy_listen(
        id: *mut bindings::iw_cm_id,
    ) -> kernel::ffi::c_int {
        // SAFETY: per the contract, the provider data is our listener.
        if let Some(l) = unsafe { take_provider::<T::Listener>(id) } {
            T::iw_destroy_listen(l);
        }
        0
    }

    /// `iw_get_qp`.
    ///
    /// # Safety
    ///
    /// Called by the iWARP CM with a live device of `T`.
    pub(super) unsafe extern "C" fn iw_get_qp(
        ib: *mut bindings::ib_device,
        qpn: kernel::ffi::c_int,
    ) -> *mut bindings::ib_qp {
        // SAFETY: live device.
        let dev = unsafe { Device::<T>::from_raw(ib) };
        // Not a QP whose destroy has begun (the handle is revoked there).
        T::iw_get_qp(dev, qpn as u32)
            .and_then(|h| h.live())
            .map_or(ptr::null_mut(), NonNull::as_ptr)
    }

    /// `iw_add_ref`: the CM keeps a QP of a connection.
    ///
    /// # Safety
    ///
    /// Called by the iWARP CM with a live QP of a `T` device (its owner has
    /// not destroyed it).
    pub(super) unsafe extern "C" fn iw_add_ref(qp: *mut bindings::ib_qp) {
        // SAFETY: per the contract, `create_qp` wrote the slot.
        unsafe { slot::<_, QpSlot<T>>(qp) }.cm.get();
    }

    /// `iw_rem_ref`: the CM lets go of a QP.
    ///
    /// # Safety
    ///
    /// Called by the iWARP CM for a QP it holds a reference on, which keeps
    /// `destroy_qp` from returning and the slot alive during the call.
    pub(super) unsafe extern "C" fn iw_rem_ref(qp: *mut bindings::ib_qp) {
        // SAFETY: per the contract, the slot is alive until the count drops.
        // The clone keeps the counter alive after that: the wake-up may let
        // `destroy_qp` free the QP while `put` is still returning.
        let cm = unsafe { slot::<_, QpSlot<T>>(qp) }.cm.clone();
        cm.put();
    }

    /// `fill_res_cm_id_entry`: the driver details of an rdma_cm id.
    ///
    /// # Safety
    ///
    /// Called by the RDMA core's resource dump with the message of this
    /// call and an rdma_cm id on a `T` device, which the dump holds (the
    /// id's `device` is set and live).
    pub(super) unsafe extern "C" fn fill_res_cm_id_entry(
        msg: *mut bindings::sk_buff,
        id: *mut bindings::rdma_cm_id,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: a live rdma_cm id (the contract); rdma_cm is there, as
            // the id is one of its own.
            let iw = unsafe { glue::rsiw_rdma_iw_cm_id(id) };
            if iw.is_null() {
                return Ok(0);
            }
            // The iWARP CM id serves as a key only: it is not read (the
            // driver may have let go of it, its provider data may be gone).
            let key = CmIdKey::of(iw);
            // SAFETY: the id is on a live `T` device (the contract).
            let dev = unsafe { Device::<T>::from_raw((*id).device) };
            // SAFETY: the message of this call.
            unsafe { ResDetails::fill(msg, |d| T::fill_res_cm_id(dev, key, d)) }?;
            Ok(0)
        })
    }
}
