// SPDX-License-Identifier: GPL-2.0

//! Entry points of the device itself: its release, device and port
//! queries, user contexts, protection domains and counters.

use core::ptr;
use kernel::{
    bindings,
    error::{from_result, to_result},
    prelude::*,
};

use super::Adapter;
use crate::kif::{
    compat::workqueue::drain_drops,
    glue,
    net::NetDevRef,
    rdma::{
        driver::MAX_ATTRS, object::slot_ptr, registry::Registry, stats::MAX_STATS, udata::Udata,
        Device, Driver,
    },
};

/// How long (jiffies) the core reuses counter values it read (as rxe).
const STATS_LIFESPAN: kernel::ffi::c_ulong = 10;

impl<T: Driver> Adapter<T> {
    /// Whether `port` is one of `T`'s port numbers.
    fn port_ok(port: u32) -> bool {
        (1..=T::PHYS_PORT_CNT).contains(&port)
    }

    /// `dealloc_driver`: the core is done with the device.
    ///
    /// # Safety
    ///
    /// See the module: called once, after the device is unregistered and
    /// no other operation can run any more.
    pub(super) unsafe extern "C" fn dealloc_driver(ib: *mut bindings::ib_device) {
        // Objects released after an RCU grace period (memory objects) may
        // still reference the device (a umem's release unmaps with it):
        // let them go first.
        drain_drops();
        // SAFETY: per the contract no `&Device<T>` exists any more and
        // nothing uses the device after this; the core frees it afterwards.
        unsafe { Device::<T>::drop_data(ib) };
        if let Some(reg) = Registry::get() {
            // INVARIANT (of `Registry`): the device leaves it before the
            // core frees it.
            // SAFETY: `ib` is not null: the core passes its device.
            reg.remove(unsafe { ptr::NonNull::new_unchecked(ib) });
        }
    }

    /// `query_device`.
    ///
    /// # Safety
    ///
    /// See the module; `attr` is valid for writes, `udata` null or valid.
    pub(super) unsafe extern "C" fn query_device(
        ib: *mut bindings::ib_device,
        attr: *mut bindings::ib_device_attr,
        udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        // SAFETY: the core passes a live udata or null.
        if let Some(u) = unsafe { udata.as_ref() } {
            if u.inlen != 0 || u.outlen != 0 {
                return EINVAL.to_errno();
            }
        }
        // SAFETY: `ib` is one of `T`'s devices (module contract).
        let caps = T::query_device(unsafe { Device::from_raw(ib) });
        // SAFETY: `attr` is a valid, exclusively borrowed output buffer.
        caps.write_to(unsafe { &mut *attr });
        0
    }

    /// Fills `attr` for port `port` of `ib`.
    ///
    /// # Safety
    ///
    /// `ib` is one of `T`'s devices; `attr` is valid for writes.
    unsafe fn fill_port(
        ib: *mut bindings::ib_device,
        port: u32,
        attr: *mut bindings::ib_port_attr,
    ) -> Result {
        if !Self::port_ok(port) {
            return Err(EINVAL);
        }
        // SAFETY: `attr` is valid for writes and exclusively ours for the
        // call (the contract); both callers pass an initialised structure
        // (`__ib_query_port`'s zeroed one, `get_port_immutable`'s local).
        let a = unsafe { &mut *attr };
        // SAFETY: all-zero is a valid `ib_port_attr`: integers and C enums
        // with a zero value, no references.
        *a = unsafe { core::mem::zeroed() };
        // SAFETY: `ib` is live; the outputs point into `a`.
        to_result(unsafe {
            bindings::ib_get_eth_speed(ib, port, &mut a.active_speed, &mut a.active_width)
        })?;
        // SAFETY: returns a referenced net device or null; the reference is
        // ours.
        let nd = unsafe { NetDevRef::from_held(bindings::ib_device_get_netdev(ib, port)) };
        let nd = nd.ok_or(ENODEV)?;
        // SAFETY: `ib` is one of `T`'s devices.
        let p = T::query_port(unsafe { Device::from_raw(ib) }, port, &nd.dev());
        p.write_to(a);
        Ok(())
    }

    /// `query_port`.
    ///
    /// # Safety
    ///
    /// See the module; `attr` is valid for writes.
    pub(super) unsafe extern "C" fn query_port(
        ib: *mut bindings::ib_device,
        port: u32,
        attr: *mut bindings::ib_port_attr,
    ) -> kernel::ffi::c_int {
        // SAFETY: per the contract.
        from_result(|| unsafe { Self::fill_port(ib, port, attr) }.map(|()| 0))
    }

    /// `get_port_immutable`.
    ///
    /// # Safety
    ///
    /// See the module; `imm` is valid for writes.
    pub(super) unsafe extern "C" fn get_port_immutable(
        ib: *mut bindings::ib_device,
        port: u32,
        imm: *mut bindings::ib_port_immutable,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: all-zero is a valid `ib_port_attr`.
            let mut attr: bindings::ib_port_attr = unsafe { core::mem::zeroed() };
            // SAFETY: per the contract; `attr` is a local.
            unsafe { Self::fill_port(ib, port, &mut attr)? };
            // SAFETY: `imm` is a valid output buffer.
            let imm = unsafe { &mut *imm };
            imm.gid_tbl_len = attr.gid_tbl_len;
            imm.core_cap_flags = T::NODE_TYPE.port_core_caps();
            Ok(0)
        })
    }

    /// `query_gid`.
    ///
    /// # Safety
    ///
    /// See the module; `gid` is valid for writes.
    pub(super) unsafe extern "C" fn query_gid(
        ib: *mut bindings::ib_device,
        port: u32,
        idx: kernel::ffi::c_int,
        gid: *mut bindings::ib_gid,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            let idx = u32::try_from(idx).map_err(|_| EINVAL)?;
            if !Self::port_ok(port) {
                return Err(EINVAL);
            }
            // SAFETY: `ib` is one of `T`'s devices.
            let raw = T::query_gid(unsafe { Device::from_raw(ib) }, port, idx)?;
            // SAFETY: `gid` is a valid output buffer.
            unsafe { (*gid).raw = raw };
            Ok(0)
        })
    }

    /// `alloc_ucontext`.
    ///
    /// # Safety
    ///
    /// See the module; the core allocated `uctx` with the table's size and
    /// `udata` is this call's.
    pub(super) unsafe extern "C" fn alloc_ucontext(
        uctx: *mut bindings::ib_ucontext,
        udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: a live ucontext of one of `T`'s devices and the udata
            // of this call.
            let (dev, mut resp) =
                unsafe { (Device::from_raw((*uctx).device), Udata::from_raw(udata)?) };
            let drv = T::alloc_ucontext(dev, &mut resp)?;
            // SAFETY: the core allocated `uctx` with
            // `kzalloc(size_ib_ucontext)`, the size of an
            // `Obj<ib_ucontext, T::Ucontext>` (`Adapter::OPS`), and kmalloc
            // aligns that block for it (to at least the largest power of
            // two dividing the size, a multiple of the `Obj`'s alignment);
            // the slot is written once here.
            unsafe { slot_ptr::<_, T::Ucontext>(uctx).write(drv) };
            Ok(0)
        })
    }

    /// `dealloc_ucontext`.
    ///
    /// # Safety
    ///
    /// See the module; called once for a context `alloc_ucontext` set up.
    pub(super) unsafe extern "C" fn dealloc_ucontext(uctx: *mut bindings::ib_ucontext) {
        // SAFETY: the slot was written by `alloc_ucontext` and is read out
        // once; the core frees the memory afterwards.
        unsafe {
            let drv = ptr::read(slot_ptr::<_, T::Ucontext>(uctx));
            T::dealloc_ucontext(Device::from_raw((*uctx).device), drv);
        }
    }

    /// `disassociate_ucontext`: the device goes while the context's
    /// process lives; `dealloc_ucontext` follows.
    ///
    /// # Safety
    ///
    /// See the module; called once for a context `alloc_ucontext` set up,
    /// before its `dealloc_ucontext`.
    pub(super) unsafe extern "C" fn disassociate_ucontext(uctx: *mut bindings::ib_ucontext) {
        // SAFETY: the slot was written by `alloc_ucontext` and is read out
        // only by `dealloc_ucontext`, which comes after this call: a shared
        // reference for the call is valid.
        unsafe {
            let drv = &*slot_ptr::<_, T::Ucontext>(uctx);
            T::disassociate_ucontext(Device::from_raw((*uctx).device), drv);
        }
    }

    /// `alloc_pd`.
    ///
    /// # Safety
    ///
    /// See the module; the core allocated `pd` with the table's size.
    pub(super) unsafe extern "C" fn alloc_pd(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: a live PD of one of `T`'s devices.
            let drv = T::alloc_pd(unsafe { Device::from_raw((*pd).device) })?;
            // SAFETY: the core allocated `pd` with `kzalloc(size_ib_pd)`,
            // the size of an `Obj<ib_pd, T::Pd>` (`Adapter::OPS`), and
            // kmalloc aligns that block for it (to at least the largest
            // power of two dividing the size, a multiple of the `Obj`'s
            // alignment); the slot is written once here.
            unsafe { slot_ptr::<_, T::Pd>(pd).write(drv) };
            Ok(0)
        })
    }

    /// `dealloc_pd`.
    ///
    /// # Safety
    ///
    /// See the module; called once for a PD `alloc_pd` set up.
    pub(super) unsafe extern "C" fn dealloc_pd(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> kernel::ffi::c_int {
        // SAFETY: the slot was written by `alloc_pd` and is read out once.
        unsafe {
            let drv = ptr::read(slot_ptr::<_, T::Pd>(pd));
            T::dealloc_pd(Device::from_raw((*pd).device), drv);
        }
        0
    }

    /// `alloc_hw_port_stats`.
    ///
    /// # Safety
    ///
    /// See the module.
    pub(super) unsafe extern "C" fn alloc_hw_port_stats(
        _ib: *mut bindings::ib_device,
        port: u32,
    ) -> *mut bindings::rdma_hw_stats {
        if !Self::port_ok(port) || T::STATS.is_empty() {
            return ptr::null_mut();
        }
        // SAFETY: `T::STATS` is static and its first `len()` descriptors
        // name static strings (its type invariant); the core copies nothing
        // and keeps the pointer.
        unsafe {
            bindings::rdma_alloc_hw_stats_struct(
                T::STATS.as_ptr(),
                T::STATS.len() as kernel::ffi::c_int,
                STATS_LIFESPAN,
            )
        }
    }

    /// `get_hw_stats`.
    ///
    /// # Safety
    ///
    /// See the module; `stats` is null or the structure from
    /// `alloc_hw_port_stats` (under its mutex).
    pub(super) unsafe extern "C" fn get_hw_stats(
        ib: *mut bindings::ib_device,
        stats: *mut bindings::rdma_hw_stats,
        port: u32,
        _index: kernel::ffi::c_int,
    ) -> kernel::ffi::c_int {
        if stats.is_null() || !Self::port_ok(port) {
            return EINVAL.to_errno();
        }
        // SAFETY: `stats` is the live structure the core allocated for us
        // through `rdma_alloc_hw_stats_struct`, with `num_counters` values.
        let st = unsafe { &mut *stats };
        let n = T::STATS
            .len()
            .min(usize::try_from(st.num_counters).unwrap_or(0));
        let mut buf = [0u64; MAX_STATS];
        // SAFETY: `ib` is one of `T`'s devices.
        T::read_stats(unsafe { Device::from_raw(ib) }, port, &mut buf[..n]);
        // SAFETY: the flexible array holds `num_counters` >= `n` values.
        unsafe { st.value.as_mut_slice(n) }.copy_from_slice(&buf[..n]);
        n as kernel::ffi::c_int
    }
}

impl<T: Driver> Adapter<T> {
    /// The sysfs group of `T`'s driver attributes ([`Driver::ATTRS`]),
    /// or null without any. The C glue keeps the names and these entry
    /// points; every device of `T` shares the group.
    ///
    /// A run-time value, so not part of [`Adapter::OPS`]: the group is a
    /// static of the C glue, filled in on first use from `T::ATTRS` and
    /// these entry points (a generic Rust item cannot own a static per
    /// driver type, which the group and its attributes would need to be).
    /// The module has one such group, its registered driver's
    /// ([`Device::register`] takes devices of that driver only).
    pub(in crate::kif::rdma) fn attr_group() -> *const bindings::attribute_group {
        let n = T::ATTRS.len();
        if !T::HAS_ATTR_SHOW || n == 0 || n > MAX_ATTRS {
            return ptr::null();
        }
        let mut names = [ptr::null::<kernel::ffi::c_char>(); MAX_ATTRS];
        for (p, name) in names.iter_mut().zip(T::ATTRS) {
            *p = name.as_char_ptr();
        }
        // SAFETY: `names` holds `n` static C strings (the glue keeps the
        // pointers, not the array); the entry points are `T`'s and follow
        // the glue's contract (below).
        unsafe {
            glue::rsiw_attrs_init(names.as_ptr(), n as u32, Self::attr_show, Self::attr_store)
        }
    }

    /// Reads driver attribute `idx`.
    ///
    /// # Safety
    ///
    /// Called by the C glue from sysfs with a registered device of `T`
    /// and `val` valid for writes.
    unsafe extern "C" fn attr_show(
        ib: *mut bindings::ib_device,
        idx: kernel::ffi::c_uint,
        val: *mut u32,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: a registered device of `T` (the contract).
            let v = T::attr_show(unsafe { Device::from_raw(ib) }, idx as usize)?;
            // SAFETY: `val` is valid for writes (the contract).
            unsafe { val.write(v) };
            Ok(0)
        })
    }

    /// Writes driver attribute `idx`.
    ///
    /// # Safety
    ///
    /// Called by the C glue from sysfs with a registered device of `T`.
    unsafe extern "C" fn attr_store(
        ib: *mut bindings::ib_device,
        idx: kernel::ffi::c_uint,
        val: u32,
    ) -> kernel::ffi::c_int {
        from_result(|| {
            // SAFETY: a registered device of `T` (the contract).
            T::attr_store(unsafe { Device::from_raw(ib) }, idx as usize, val)?;
            Ok(0)
        })
    }
}
