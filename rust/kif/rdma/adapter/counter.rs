// SPDX-License-Identifier: GPL-2.0

//! Entry points of per-QP counters (`rdma statistic qp`): the RDMA core
//! allocates a `struct rdma_counter`, binds QPs to it (by hand or by its
//! auto mode) and reads it; the driver counts, by the counter's id.

use core::ptr;
use kernel::{bindings, error::from_result, prelude::*};

use super::Adapter;
use crate::kif::rdma::{
    object::{slot, QpSlot},
    stats::MAX_STATS,
    Device, Driver,
};

/// How long the core may reuse values it read (jiffies), as for the port.
const STATS_LIFESPAN: kernel::ffi::c_ulong = 10;

impl<T: Driver> Adapter<T> {
    /// How many statistics a counter has.
    fn counter_stats() -> usize {
        T::COUNTER_STATS.min(T::STATS.len())
    }

    /// `counter_init` (7.3; the field the kernels differ in, see
    /// kif/compat/mod.rs): the core's counter needs nothing of the
    /// driver's, whose binding state lives in the QP.
    ///
    /// # Safety
    ///
    /// See the module.
    #[cfg(not(kif_kernel = "6.12"))]
    pub(super) unsafe extern "C" fn counter_init(_counter: *mut bindings::rdma_counter) {}

    /// `counter_bind_qp`: binds `qp` (the core holds the counter's lock)
    /// and records the binding in `qp->counter`, as the core expects of
    /// the driver.
    ///
    /// # Safety
    ///
    /// See the module; `counter` is live and not yet bound to `qp`.
    pub(super) unsafe extern "C" fn counter_bind_qp(
        counter: *mut bindings::rdma_counter,
        qp: *mut bindings::ib_qp,
        // (the parameter the kernels differ in, see kif/compat/mod.rs: the
        // port, always 1 here)
        #[cfg(not(kif_kernel = "6.12"))] _port: u32,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: a live QP whose slot `create_qp` wrote, of one of
            // `T`'s devices; the counter is live (the contract).
            let (s, dev, id) = unsafe {
                (
                    slot::<_, QpSlot<T>>(qp),
                    Device::<T>::from_raw((*qp).device),
                    (*counter).id,
                )
            };
            let id = T::counter_bind_qp(dev, id, &s.drv)?;
            // SAFETY: the core holds the counter's lock and expects the
            // driver to set the id of a new counter and `qp->counter`.
            unsafe {
                (*counter).id = id;
                (*qp).counter = counter;
            }
            Ok(0)
        })
    }

    /// `counter_unbind_qp`.
    ///
    /// # Safety
    ///
    /// See the module; `qp` is live (the core unbinds before
    /// `destroy_qp`).
    pub(super) unsafe extern "C" fn counter_unbind_qp(
        qp: *mut bindings::ib_qp,
        // (as in `counter_bind_qp`)
        #[cfg(not(kif_kernel = "6.12"))] _port: u32,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: a live QP (the contract) of one of `T`'s devices,
            // whose slot `create_qp` wrote; `qp->counter` is the counter
            // `counter_bind_qp` stored, live while bound.
            let (s, dev, counter) = unsafe {
                (
                    slot::<_, QpSlot<T>>(qp),
                    Device::<T>::from_raw((*qp).device),
                    (*qp).counter,
                )
            };
            if counter.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: checked non-null above; live while bound.
            let id = unsafe { (*counter).id };
            T::counter_unbind_qp(dev, id, &s.drv)?;
            // SAFETY: the core holds the counter's lock.
            unsafe { (*qp).counter = ptr::null_mut() };
            Ok(0)
        })
    }

    /// `counter_dealloc`.
    ///
    /// # Safety
    ///
    /// See the module; `counter` is live and no QP is bound to it.
    pub(super) unsafe extern "C" fn counter_dealloc(
        counter: *mut bindings::rdma_counter,
    ) -> kernel::ffi::c_int {
        // SAFETY: a live counter of one of `T`'s devices.
        let (dev, id) = unsafe { (Device::<T>::from_raw((*counter).device), (*counter).id) };
        if id != 0 {
            T::counter_dealloc(dev, id);
        }
        0
    }

    /// `counter_alloc_stats`: the first [`Driver::COUNTER_STATS`] of the
    /// port's statistics.
    ///
    /// # Safety
    ///
    /// See the module.
    pub(super) unsafe extern "C" fn counter_alloc_stats(
        _counter: *mut bindings::rdma_counter,
    ) -> *mut bindings::rdma_hw_stats {
        let n = Self::counter_stats();
        if n == 0 {
            return ptr::null_mut();
        }
        // SAFETY: `T::STATS` is static and its first `len()` >= `n`
        // descriptors name static strings (its type invariant).
        unsafe {
            bindings::rdma_alloc_hw_stats_struct(
                T::STATS.as_ptr(),
                n as kernel::ffi::c_int,
                STATS_LIFESPAN,
            )
        }
    }

    /// `counter_update_stats`.
    ///
    /// # Safety
    ///
    /// See the module; `counter` is live with the statistics
    /// `counter_alloc_stats` made (the core holds the counter's lock).
    pub(super) unsafe extern "C" fn counter_update_stats(
        counter: *mut bindings::rdma_counter,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: a live counter of one of `T`'s devices.
            let (dev, id, stats) = unsafe {
                (
                    Device::<T>::from_raw((*counter).device),
                    (*counter).id,
                    (*counter).stats,
                )
            };
            if stats.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: the structure `counter_alloc_stats` allocated, under
            // the counter's lock.
            let st = unsafe { &mut *stats };
            let n = Self::counter_stats().min(usize::try_from(st.num_counters).unwrap_or(0));
            let mut buf = [0u64; MAX_STATS];
            if id != 0 {
                T::counter_read(dev, id, &mut buf[..n])?;
            }
            // SAFETY: the flexible array holds `num_counters` >= `n` values.
            unsafe { st.value.as_mut_slice(n) }.copy_from_slice(&buf[..n]);
            Ok(0)
        })
    }
}
