// SPDX-License-Identifier: GPL-2.0

//! Entry points of memory regions. The driver allocates MRs: each is an
//! `MrObj` in a `KBox`, with the core's `ib_mr` at its head.

use core::ptr::{self, NonNull};
use kernel::{bindings, error::from_result, prelude::*};

use super::Adapter;
use crate::kif::{
    compat::error::eopnotsupp,
    rdma::{
        mr::{RegUserMr, ReregUserMr},
        object::{mr_of, pd_of, MrObj},
        udata::Udata,
        umem::Pinner,
        Device, Driver,
    },
};

impl<T: Driver> Adapter<T> {
    /// Boxes an MR for the core.
    fn new_mr(r: Result<(T::Mr, u32)>) -> *mut bindings::ib_mr {
        let (drv, key) = match r {
            Ok(v) => v,
            Err(e) => return e.to_ptr(),
        };
        let obj = MrObj::<T> {
            // SAFETY: all-zero is a valid `ib_mr`; the core fills in the rest.
            ib: unsafe { core::mem::zeroed() },
            drv,
        };
        match KBox::new(obj, GFP_KERNEL) {
            Ok(b) => {
                let p = KBox::into_raw(b);
                // SAFETY: `p` is a valid, exclusively owned `MrObj`, which
                // `KBox` allocated with its layout (so aligned for it).
                unsafe {
                    (*p).ib.lkey = key;
                    (*p).ib.rkey = key;
                    ptr::addr_of_mut!((*p).ib)
                }
            }
            Err(e) => Error::from(e).to_ptr(),
        }
    }

    /// `reg_user_mr`. From 7.3 on the core also passes a DMA handle
    /// (`dmah`, steering tags of PCIe TPH), which a software device has no
    /// use for: a registration with one fails with `EOPNOTSUPP`, as siw's.
    ///
    /// # Safety
    ///
    /// Called by the RDMA core with a live PD of a `T` device.
    pub(super) unsafe extern "C" fn reg_user_mr(
        pd: *mut bindings::ib_pd,
        start: u64,
        len: u64,
        iova: u64,
        access: kernel::ffi::c_int,
        // (the parameter the kernels differ in: see kif/compat/mod.rs)
        #[cfg(not(kif_kernel = "6.12"))] dmah: *mut bindings::ib_dmah,
        udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        let r = (|| {
            #[cfg(not(kif_kernel = "6.12"))]
            if !dmah.is_null() {
                return Err(eopnotsupp());
            }
            // SAFETY: live PD; `udata` is this call's.
            let (dev, p, udata) = unsafe {
                (
                    Device::<T>::from_raw((*pd).device),
                    pd_of::<T>(pd),
                    Udata::from_raw(udata)?,
                )
            };
            // SAFETY: the PD's device is the device of this call.
            let pinner = unsafe { Pinner::from_raw(NonNull::new((*pd).device).ok_or(EINVAL)?) };
            let args = RegUserMr::<T> {
                pd: p,
                pinner,
                start,
                len,
                iova,
                access: access as u32,
                udata,
            };
            T::reg_user_mr(dev, args)
        })();
        Self::new_mr(r)
    }

    /// `get_dma_mr`.
    ///
    /// # Safety
    ///
    /// Called by the RDMA core with a live PD of a `T` device.
    pub(super) unsafe extern "C" fn get_dma_mr(
        pd: *mut bindings::ib_pd,
        access: kernel::ffi::c_int,
    ) -> *mut bindings::ib_mr {
        // SAFETY: live PD.
        let (dev, p) = unsafe { (Device::<T>::from_raw((*pd).device), pd_of::<T>(pd)) };
        Self::new_mr(T::get_dma_mr(dev, p, access as u32))
    }

    /// `alloc_mr`.
    ///
    /// # Safety
    ///
    /// Called by the RDMA core with a live PD of a `T` device.
    pub(super) unsafe extern "C" fn alloc_mr(
        pd: *mut bindings::ib_pd,
        mr_type: bindings::ib_mr_type,
        max_sg: u32,
    ) -> *mut bindings::ib_mr {
        if mr_type != bindings::ib_mr_type_IB_MR_TYPE_MEM_REG {
            return eopnotsupp().to_ptr();
        }
        // SAFETY: live PD.
        let (dev, p) = unsafe { (Device::<T>::from_raw((*pd).device), pd_of::<T>(pd)) };
        Self::new_mr(T::alloc_mr(dev, p, max_sg))
    }

    /// `set_page` callback of `ib_sg_to_pages`.
    ///
    /// # Safety
    ///
    /// Called by `ib_sg_to_pages` with the MR `map_mr_sg` passed.
    unsafe extern "C" fn set_page(mr: *mut bindings::ib_mr, addr: u64) -> kernel::ffi::c_int {
        // SAFETY: the MR is an `MrObj<T>` (see `map_mr_sg`).
        let m = unsafe { mr_of::<T>(mr) };
        from_result(|| T::map_mr_page(m, addr).map(|()| 0))
    }

    /// `map_mr_sg`.
    ///
    /// # Safety
    ///
    /// Called by kernel consumers through the core with an MR of this device
    /// and a valid scatterlist.
    pub(super) unsafe extern "C" fn map_mr_sg(
        mr: *mut bindings::ib_mr,
        sg: *mut bindings::scatterlist,
        n: kernel::ffi::c_int,
        off: *mut kernel::ffi::c_uint,
    ) -> kernel::ffi::c_int {
        // SAFETY: every MR of this device is an `MrObj<T>`.
        let m = unsafe { mr_of::<T>(mr) };
        if let Err(e) = T::map_mr_begin(m) {
            return e.to_errno();
        }
        // SAFETY: per the contract; `set_page` only touches the driver state.
        let r = unsafe { bindings::ib_sg_to_pages(mr, sg, n, off, Some(Self::set_page)) };
        if r > 0 {
            // SAFETY: `ib_sg_to_pages` set iova, length and page size.
            let (iova, length, ps) = unsafe { ((*mr).iova, (*mr).length, (*mr).page_size) };
            T::map_mr_end(m, iova, length, ps);
        }
        r
    }

    /// `rereg_user_mr`.
    ///
    /// # Safety
    ///
    /// Called by the RDMA core with a live user MR of a `T` device, whose
    /// uobject it holds for writing, and a live PD (the new or the MR's own).
    pub(super) unsafe extern "C" fn rereg_user_mr(
        mr: *mut bindings::ib_mr,
        flags: kernel::ffi::c_int,
        start: u64,
        len: u64,
        iova: u64,
        access: kernel::ffi::c_int,
        pd: *mut bindings::ib_pd,
        udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        let f = flags as u32;
        let r = (|| {
            // SAFETY: per the contract; every MR of this device is an
            // `MrObj<T>`, every PD a `T::Pd` object; `udata` is this call's.
            let (dev, old, p, udata, dev_ptr) = unsafe {
                (
                    Device::<T>::from_raw((*mr).device),
                    mr_of::<T>(mr),
                    pd_of::<T>(pd),
                    Udata::from_raw(udata)?,
                    (*pd).device,
                )
            };
            let args = ReregUserMr::<T> {
                trans: f & bindings::ib_mr_rereg_flags_IB_MR_REREG_TRANS != 0,
                new_pd: f & bindings::ib_mr_rereg_flags_IB_MR_REREG_PD != 0,
                new_access: f & bindings::ib_mr_rereg_flags_IB_MR_REREG_ACCESS != 0,
                pd: p,
                // SAFETY: the PD's device is the device of this call.
                pinner: unsafe { Pinner::from_raw(NonNull::new(dev_ptr).ok_or(EINVAL)?) },
                start,
                len,
                iova,
                access: access as u32,
                udata,
            };
            T::rereg_user_mr(dev, old, args)
        })();
        match r {
            Ok(None) => core::ptr::null_mut(),
            Ok(Some(v)) => Self::new_mr(Ok(v)),
            Err(e) => e.to_ptr(),
        }
    }

    /// `dereg_mr`.
    ///
    /// # Safety
    ///
    /// Called by the RDMA core once for an MR this driver made.
    pub(super) unsafe extern "C" fn dereg_mr(
        mr: *mut bindings::ib_mr,
        _udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        // SAFETY: the MR came from `KBox::into_raw` in `new_mr`.
        let b = unsafe { KBox::from_raw(mr.cast::<MrObj<T>>()) };
        // SAFETY: `device` of a registered MR is its live device.
        let dev = unsafe { Device::<T>::from_raw(b.ib.device) };
        let MrObj { drv, .. } = KBox::into_inner(b);
        from_result(|| T::dereg_mr(dev, drv).map(|()| 0))
    }
}
