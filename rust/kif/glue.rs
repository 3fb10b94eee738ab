// SPDX-License-Identifier: GPL-2.0

//! The functions of the C glue (`rust/kif/rsiw_glue.c`): out-of-line
//! copies of static inline kernel helpers, and the module parameters.
//! Only kif calls them.

use kernel::bindings;

// The structs are only passed by pointer; bindgen's zero-sized stand-ins
// for debug-only members (lockdep maps, trackers) trip this lint, as in
// the `bindings` crate itself.
#[allow(improper_ctypes)]
extern "C" {
    pub(in crate::kif) fn rsiw_netif_up(ndev: *const bindings::net_device) -> bool;
    pub(in crate::kif) fn rsiw_dev_put(ndev: *mut bindings::net_device);
    pub(in crate::kif) fn rsiw_ib_device_try_get(ibdev: *mut bindings::ib_device) -> bool;
    pub(in crate::kif) fn rsiw_netdev_notifier_dev(
        info: *mut kernel::ffi::c_void,
    ) -> *mut bindings::net_device;
    pub(in crate::kif) fn rsiw_ib_mark_name_assigned_by_user(ibdev: *mut bindings::ib_device);
    pub(in crate::kif) fn rsiw_netdev_net_get(
        ndev: *mut bindings::net_device,
    ) -> *mut bindings::net;
    pub(in crate::kif) fn rsiw_net_put(net: *mut bindings::net);
    pub(in crate::kif) fn rsiw_sock_create_in(
        net: *mut bindings::net,
        family: kernel::ffi::c_int,
        res: *mut *mut bindings::socket,
    ) -> kernel::ffi::c_int;
    pub(in crate::kif) fn rsiw_ib_device_set_home_net(
        ibdev: *mut bindings::ib_device,
        ndev: *mut bindings::net_device,
    );
    #[cfg(CONFIG_PREEMPT_RT)]
    pub(in crate::kif) fn rsiw_spin_lock_irqsave(
        lock: *mut bindings::spinlock_t,
    ) -> kernel::ffi::c_ulong;
    #[cfg(CONFIG_PREEMPT_RT)]
    pub(in crate::kif) fn rsiw_spin_unlock_irqrestore(
        lock: *mut bindings::spinlock_t,
        flags: kernel::ffi::c_ulong,
    );
    pub(in crate::kif) fn rsiw_bundle_udata(
        attrs: *mut bindings::uverbs_attr_bundle,
    ) -> *mut bindings::ib_udata;
    pub(in crate::kif) fn rsiw_udata_ucontext(
        udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_ucontext;
    pub(in crate::kif) fn rsiw_xa_init_alloc1(xa: *mut bindings::xarray);
    pub(in crate::kif) fn rsiw_xa_alloc_cyclic(
        xa: *mut bindings::xarray,
        id: *mut u32,
        entry: *mut kernel::ffi::c_void,
        max: u32,
        next: *mut u32,
    ) -> kernel::ffi::c_int;
    pub(in crate::kif) fn rsiw_xa_lock(xa: *mut bindings::xarray) -> usize;
    pub(in crate::kif) fn rsiw_xa_unlock(xa: *mut bindings::xarray, flags: usize);
    pub(in crate::kif) fn rsiw_ib_alloc_device(size: usize) -> *mut bindings::ib_device;
    pub(in crate::kif) fn rsiw_umem_get(
        dev: *mut bindings::ib_device,
        addr: u64,
        size: usize,
        access: kernel::ffi::c_int,
    ) -> *mut bindings::ib_umem;
    pub(in crate::kif) fn rsiw_umem_page_addrs(
        umem: *mut bindings::ib_umem,
        addrs: *mut *mut kernel::ffi::c_void,
        max: usize,
    ) -> usize;
    pub(in crate::kif) fn rsiw_rdma_iw_cm_id(
        id: *mut bindings::rdma_cm_id,
    ) -> *mut bindings::iw_cm_id;
    pub(in crate::kif) fn rsiw_res_driver_begin(
        msg: *mut bindings::sk_buff,
    ) -> *mut bindings::nlattr;
    pub(in crate::kif) fn rsiw_res_driver_end(
        msg: *mut bindings::sk_buff,
        nest: *mut bindings::nlattr,
        ok: bool,
    );
    pub(in crate::kif) fn rsiw_attrs_init(
        names: *const *const kernel::ffi::c_char,
        n: kernel::ffi::c_uint,
        show: unsafe extern "C" fn(
            *mut bindings::ib_device,
            kernel::ffi::c_uint,
            *mut u32,
        ) -> kernel::ffi::c_int,
        store: unsafe extern "C" fn(
            *mut bindings::ib_device,
            kernel::ffi::c_uint,
            u32,
        ) -> kernel::ffi::c_int,
    ) -> *const bindings::attribute_group;
    pub(in crate::kif) fn rsiw_counters_alloc(n: u32) -> *mut u64;
    pub(in crate::kif) fn rsiw_counters_free(c: *mut u64);
    #[cfg(not(all(CONFIG_X86_64, CONFIG_SMP)))]
    pub(in crate::kif) fn rsiw_counters_add(c: *mut u64, i: u32, v: u64);
    pub(in crate::kif) fn rsiw_counters_sum(c: *mut u64, i: u32) -> u64;
    pub(in crate::kif) fn rsiw_sk_attach(
        s: *mut bindings::socket,
        ctx: *mut kernel::ffi::c_void,
        cb: unsafe extern "C" fn(*mut kernel::ffi::c_void, *mut bindings::sock, i32, i32),
        release: unsafe extern "C" fn(*mut kernel::ffi::c_void),
    ) -> i32;
    pub(in crate::kif) fn rsiw_sk_detach(s: *mut bindings::socket);
    pub(in crate::kif) fn rsiw_sk_accept_fixup(
        l: *mut bindings::socket,
        c: *mut bindings::socket,
    ) -> i32;
    pub(in crate::kif) fn rsiw_sk_read(
        sk: *mut bindings::sock,
        limit: usize,
        ctx: *mut kernel::ffi::c_void,
    ) -> i32;
    pub(in crate::kif) fn rsiw_sk_peek(
        sk: *mut bindings::sock,
        skip: usize,
        ctx: *mut kernel::ffi::c_void,
    ) -> i32;
    pub(in crate::kif) fn rsiw_sk_lock(s: *mut bindings::socket) -> *mut bindings::sock;
    pub(in crate::kif) fn rsiw_sk_unlock(s: *mut bindings::socket);
    pub(in crate::kif) fn rsiw_sk_state(s: *mut bindings::socket) -> i32;
    pub(in crate::kif) fn rsiw_sock_sk(s: *mut bindings::socket) -> *mut bindings::sock;
    pub(in crate::kif) fn rsiw_sock_send_locked(
        s: *mut bindings::socket,
        vec: *mut bindings::kvec,
        n: usize,
        len: usize,
        more: bool,
    ) -> i32;
    pub(in crate::kif) fn rsiw_warn_peer(
        dev: *const bindings::ib_device,
        args: *const kernel::ffi::c_void,
    );
    pub(in crate::kif) fn rsiw_sock_recv(
        s: *mut bindings::socket,
        buf: *mut kernel::ffi::c_void,
        len: usize,
    ) -> i32;
    pub(in crate::kif) fn rsiw_alloc_wq() -> *mut bindings::workqueue_struct;
    pub(in crate::kif) fn rsiw_alloc_drop_wq() -> *mut bindings::workqueue_struct;
    pub(in crate::kif) fn rsiw_next_cpu() -> kernel::ffi::c_int;
    pub(in crate::kif) fn rsiw_drop_after_gp(
        wq: *mut bindings::workqueue_struct,
        obj: *mut kernel::ffi::c_void,
        drop: unsafe extern "C" fn(*mut kernel::ffi::c_void),
    );
    pub(in crate::kif) fn rsiw_drain_drops(wq: *mut bindings::workqueue_struct);
    pub(in crate::kif) fn rsiw_sock_mss(s: *mut bindings::socket) -> u32;
    pub(in crate::kif) fn rsiw_sock_unacked(s: *mut bindings::socket) -> bool;
    pub(in crate::kif) fn rsiw_sock_advmss(s: *mut bindings::socket) -> u32;
    pub(in crate::kif) fn rsiw_sock_reserve_rcv_window(s: *mut bindings::socket, win: u32) -> i32;
    pub(in crate::kif) fn rsiw_sock_set_v6only(s: *mut bindings::socket) -> i32;
    pub(in crate::kif) fn rsiw_may_sleep() -> bool;
    pub(in crate::kif) fn rsiw_post_may_sleep() -> bool;
    pub(in crate::kif) fn rsiw_dwork_new(
        f: unsafe extern "C" fn(*mut kernel::ffi::c_void),
        ctx: *mut kernel::ffi::c_void,
    ) -> *mut kernel::ffi::c_void;
    pub(in crate::kif) fn rsiw_dwork_schedule(
        wq: *mut bindings::workqueue_struct,
        d: *mut kernel::ffi::c_void,
        ms: u32,
    ) -> bool;
    pub(in crate::kif) fn rsiw_dwork_cancel(d: *mut kernel::ffi::c_void) -> bool;
    pub(in crate::kif) fn rsiw_dwork_free(d: *mut kernel::ffi::c_void);
    pub(in crate::kif) fn rsiw_dwork_expire_all(wq: *mut bindings::workqueue_struct);
    pub(in crate::kif) fn rsiw_dwork_ctx(d: *mut kernel::ffi::c_void)
        -> *const kernel::ffi::c_void;
    pub(in crate::kif) fn rsiw_umem_release_async(
        wq: *mut bindings::workqueue_struct,
        umem: *mut bindings::ib_umem,
    ) -> i32;
    pub(in crate::kif) fn rsiw_mpa_crc_required() -> bool;
    pub(in crate::kif) fn rsiw_mpa_peer_to_peer() -> bool;
    pub(in crate::kif) fn rsiw_mpa_rev() -> u8;
    pub(in crate::kif) fn rsiw_mpa_markers_wanted() -> bool;
    pub(in crate::kif) fn rsiw_mpa_large_fpdu() -> bool;
    pub(in crate::kif) fn rsiw_mpa_responder_waits() -> bool;
    pub(in crate::kif) fn rsiw_mpa_max_fpdu() -> u32;
    pub(in crate::kif) fn rsiw_cm_accept_timeout() -> u32;
    pub(in crate::kif) fn rsiw_siw_link_type() -> bool;
}
