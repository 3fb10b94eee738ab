// SPDX-License-Identifier: GPL-2.0

//! The RDMA core's entry points into a [`Driver`]: [`Adapter<T>`] has one
//! `extern "C"` function per operation of `struct ib_device_ops`, which
//! turns the core's objects into the driver's and calls the driver's
//! method, and builds the operations table of `T` ([`Adapter::OPS`]).
//!
//! Every entry point is called by the RDMA core only, for a device that
//! [`Device::register`](super::Device::register) set up with this table,
//! with live objects of that device: that is the safety contract of each
//! (`# Safety` below says what else it relies on).

use core::{
    marker::PhantomData,
    mem::{size_of, MaybeUninit},
    ptr,
};
use kernel::bindings;

use super::{
    mmap,
    object::{CqSlot, Obj, QpSlot, SrqSlot},
    Driver,
};

mod counter;
mod cq;
mod device;
mod iwcm;
mod mr;
mod qp;
mod srq;

/// The entry points of driver `T`.
pub(super) struct Adapter<T: Driver>(PhantomData<T>);

/// `Some(f)` when the driver implements the operation (`has`).
macro_rules! op {
    ($has:expr, $f:expr) => {
        if $has {
            Some($f)
        } else {
            None
        }
    };
}

impl<T: Driver> Adapter<T> {
    /// Optional operations come in groups the core uses together: a
    /// driver implements all of a group or none (checked when `T`'s table
    /// is built, at compile time).
    const fn check_groups() {
        assert!(T::HAS_ALLOC_UCONTEXT == T::HAS_DEALLOC_UCONTEXT);
        assert!(!T::HAS_DISASSOCIATE_UCONTEXT || T::HAS_ALLOC_UCONTEXT);
        assert!(
            T::HAS_CREATE_SRQ == T::HAS_DESTROY_SRQ
                && T::HAS_CREATE_SRQ == T::HAS_QUERY_SRQ
                && T::HAS_CREATE_SRQ == T::HAS_MODIFY_SRQ
        );
        assert!(
            T::HAS_ALLOC_MR == T::HAS_MAP_MR_BEGIN
                && T::HAS_ALLOC_MR == T::HAS_MAP_MR_PAGE
                && T::HAS_ALLOC_MR == T::HAS_MAP_MR_END
        );
        let iw = T::HAS_IW_CONNECT;
        assert!(
            iw == T::HAS_IW_ACCEPT
                && iw == T::HAS_IW_REJECT
                && iw == T::HAS_IW_CREATE_LISTEN
                && iw == T::HAS_IW_DESTROY_LISTEN
                && iw == T::HAS_IW_GET_QP
        );
        let counters = T::HAS_COUNTER_BIND_QP;
        assert!(
            counters == T::HAS_COUNTER_UNBIND_QP
                && counters == T::HAS_COUNTER_DEALLOC
                && counters == T::HAS_COUNTER_READ
                && (!counters || (T::HAS_READ_STATS && T::COUNTER_STATS > 0))
        );
    }

    /// The operations table of driver `T`: an entry for each operation
    /// it implements (`#[vtable]`'s `HAS_*` constants), and the sizes of
    /// the objects the core allocates for it. A constant, so built once,
    /// at compile time (every device of `T` refers to the same table in
    /// read-only data, which `ib_set_device_ops` copies into the device).
    ///
    /// Two fields are left empty, as they are only known at run time and
    /// [`Device::register`](super::Device::register) sets them in the
    /// device's copy: `owner`, the module given to the
    /// [`LinkRegistration`](super::link::LinkRegistration), and
    /// `device_group`, the sysfs group of the driver's attributes that the
    /// C glue builds ([`Adapter::attr_group`]).
    ///
    /// Object sizes: the core allocates each user context, PD, QP, CQ and
    /// SRQ with `kzalloc(size_ib_*)` (`rdma_zalloc_drv_obj`), a block that
    /// kmalloc aligns to at least the largest power of two dividing its
    /// size; the size of an `Obj<B, D>` is a multiple of its alignment, so
    /// the block is aligned for the `Obj` it holds.
    pub(super) const OPS: bindings::ib_device_ops = {
        Self::check_groups();
        let iw = T::HAS_IW_CONNECT;
        let counters = T::HAS_COUNTER_BIND_QP;
        let user = T::HAS_ALLOC_UCONTEXT;
        let stats = T::HAS_READ_STATS;
        bindings::ib_device_ops {
            owner: ptr::null_mut(),
            device_group: ptr::null(),
            driver_id: T::DRIVER_ID.raw(),
            uverbs_abi_ver: T::UVERBS_ABI_VER,
            dealloc_driver: Some(Self::dealloc_driver),
            query_device: Some(Self::query_device),
            query_port: Some(Self::query_port),
            get_port_immutable: Some(Self::get_port_immutable),
            query_gid: op!(T::HAS_QUERY_GID, Self::query_gid),
            alloc_ucontext: op!(user, Self::alloc_ucontext),
            dealloc_ucontext: op!(user, Self::dealloc_ucontext),
            disassociate_ucontext: op!(T::HAS_DISASSOCIATE_UCONTEXT, Self::disassociate_ucontext),
            mmap: op!(user, mmap::mmap),
            mmap_free: op!(user, mmap::mmap_free),
            alloc_pd: Some(Self::alloc_pd),
            dealloc_pd: Some(Self::dealloc_pd),
            create_cq: Some(Self::create_cq),
            destroy_cq: Some(Self::destroy_cq),
            poll_cq: Some(Self::poll_cq),
            req_notify_cq: Some(Self::req_notify_cq),
            create_qp: Some(Self::create_qp),
            modify_qp: Some(Self::modify_qp),
            query_qp: op!(T::HAS_QUERY_QP, Self::query_qp),
            destroy_qp: Some(Self::destroy_qp),
            fill_res_qp_entry: op!(T::HAS_FILL_RES_QP, Self::fill_res_qp_entry),
            post_send: Some(Self::post_send),
            post_recv: Some(Self::post_recv),
            create_srq: op!(T::HAS_CREATE_SRQ, Self::create_srq),
            modify_srq: op!(T::HAS_CREATE_SRQ, Self::modify_srq),
            query_srq: op!(T::HAS_CREATE_SRQ, Self::query_srq),
            destroy_srq: op!(T::HAS_CREATE_SRQ, Self::destroy_srq),
            post_srq_recv: op!(T::HAS_POST_SRQ_RECV, Self::post_srq_recv),
            reg_user_mr: Some(Self::reg_user_mr),
            get_dma_mr: Some(Self::get_dma_mr),
            alloc_mr: op!(T::HAS_ALLOC_MR, Self::alloc_mr),
            map_mr_sg: op!(T::HAS_ALLOC_MR, Self::map_mr_sg),
            rereg_user_mr: op!(T::HAS_REREG_USER_MR, Self::rereg_user_mr),
            dereg_mr: Some(Self::dereg_mr),
            iw_connect: op!(iw, Self::iw_connect),
            iw_accept: op!(iw, Self::iw_accept),
            iw_reject: op!(iw, Self::iw_reject),
            iw_create_listen: op!(iw, Self::iw_create_listen),
            iw_destroy_listen: op!(iw, Self::iw_destroy_listen),
            iw_get_qp: op!(iw, Self::iw_get_qp),
            iw_add_ref: op!(iw, Self::iw_add_ref),
            iw_rem_ref: op!(iw, Self::iw_rem_ref),
            fill_res_cm_id_entry: op!(T::HAS_FILL_RES_CM_ID, Self::fill_res_cm_id_entry),
            alloc_hw_port_stats: op!(stats, Self::alloc_hw_port_stats),
            get_hw_stats: op!(stats, Self::get_hw_stats),
            counter_bind_qp: op!(counters, Self::counter_bind_qp),
            counter_unbind_qp: op!(counters, Self::counter_unbind_qp),
            counter_dealloc: op!(counters, Self::counter_dealloc),
            counter_alloc_stats: op!(counters, Self::counter_alloc_stats),
            counter_update_stats: op!(counters, Self::counter_update_stats),
            // (7.3's core calls it for every counter it allocates)
            #[cfg(not(kif_kernel = "6.12"))]
            counter_init: op!(counters, Self::counter_init),
            size_ib_ucontext: size_of::<Obj<bindings::ib_ucontext, T::Ucontext>>(),
            size_ib_pd: size_of::<Obj<bindings::ib_pd, T::Pd>>(),
            size_ib_qp: size_of::<Obj<bindings::ib_qp, QpSlot<T>>>(),
            size_ib_cq: size_of::<Obj<bindings::ib_cq, CqSlot<T>>>(),
            size_ib_srq: size_of::<Obj<bindings::ib_srq, SrqSlot<T>>>(),
            // (7.3's core allocates counters by the driver's size, 6.12's
            // by its own; the field the kernels differ in, see
            // kif/compat/mod.rs)
            #[cfg(not(kif_kernel = "6.12"))]
            size_rdma_counter: if counters {
                size_of::<bindings::rdma_counter>()
            } else {
                0
            },
            // SAFETY: the other fields are operations `T` does not have,
            // whose `None` is all zero, and plain integers and flags, for
            // which zero is the core's default (as in a table of C with
            // designated initialisers).
            ..unsafe { MaybeUninit::<bindings::ib_device_ops>::zeroed().assume_init() }
        }
    };
}
