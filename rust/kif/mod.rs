// SPDX-License-Identifier: GPL-2.0

//! Kernel interface layer: the only part of rsiw with `unsafe`.
//!
//! Each submodule wraps one kernel facility in a safe type. The driver above
//! only sees these types, never `kernel::bindings`.

pub mod crc;
pub mod handle;
pub mod ib;
pub mod iwcm;
pub mod mem;
pub mod net;
pub mod percpu;
pub mod queue;
pub mod sock;
pub mod sync;
pub mod timer;
pub mod udata;
pub mod wq;
pub mod wr;
pub mod xarray;

/// `EOPNOTSUPP`, which the 6.12 `kernel` crate does not name.
pub fn eopnotsupp() -> kernel::error::Error {
    kernel::error::Error::from_errno(-(kernel::bindings::EOPNOTSUPP as i32))
}

/// `ENOTCONN`, which the 6.12 `kernel` crate does not name.
pub fn enotconn() -> kernel::error::Error {
    kernel::error::Error::from_errno(-(kernel::bindings::ENOTCONN as i32))
}

/// `ECONNRESET`, which the 6.12 `kernel` crate does not name.
pub fn econnreset() -> kernel::error::Error {
    kernel::error::Error::from_errno(-(kernel::bindings::ECONNRESET as i32))
}

/// `ECONNREFUSED`, which the 6.12 `kernel` crate does not name.
pub fn econnrefused() -> kernel::error::Error {
    kernel::error::Error::from_errno(-(kernel::bindings::ECONNREFUSED as i32))
}

/// `ETIMEDOUT`, which the 6.12 `kernel` crate does not name.
pub fn etimedout() -> kernel::error::Error {
    kernel::error::Error::from_errno(-(kernel::bindings::ETIMEDOUT as i32))
}

/// `EPROTO`, which the 6.12 `kernel` crate does not name.
pub fn eproto() -> kernel::error::Error {
    kernel::error::Error::from_errno(-(kernel::bindings::EPROTO as i32))
}

/// Sleeps for about `ms` milliseconds (process context only).
pub fn sleep_ms(ms: u32) {
    // SAFETY: plain sleep; callers run in process context.
    unsafe { kernel::bindings::msleep(ms) };
}

/// `ECONNABORTED`, which the 6.12 `kernel` crate does not name.
pub fn econnaborted() -> kernel::error::Error {
    kernel::error::Error::from_errno(-(kernel::bindings::ECONNABORTED as i32))
}

/// A random 32-bit number from the kernel's CRNG.
pub fn random_u32() -> u32 {
    let mut v = 0u32;
    // SAFETY: `v` is valid for writes of 4 octets.
    unsafe { kernel::bindings::get_random_bytes(core::ptr::from_mut(&mut v).cast(), 4) };
    v
}

/// Out-of-line C wrappers for static inline kernel helpers (see
/// `rust/kif/rsiw_glue.c`).
mod glue {
    use kernel::bindings;

    // The structs are only passed by pointer; bindgen's zero-sized stand-ins
    // for debug-only members (lockdep maps, trackers) trip this lint, as in
    // the `bindings` crate itself.
    #[allow(improper_ctypes)]
    extern "C" {
        pub(crate) fn rsiw_netif_up(ndev: *const bindings::net_device) -> bool;
        pub(crate) fn rsiw_dev_put(ndev: *mut bindings::net_device);
        pub(crate) fn rsiw_ib_device_try_get(ibdev: *mut bindings::ib_device) -> bool;
        pub(crate) fn rsiw_netdev_notifier_dev(
            info: *mut kernel::ffi::c_void,
        ) -> *mut bindings::net_device;
        pub(crate) fn rsiw_ib_mark_name_assigned_by_user(ibdev: *mut bindings::ib_device);
        #[cfg(CONFIG_PREEMPT_RT)]
        pub(crate) fn rsiw_spin_lock_irqsave(
            lock: *mut bindings::spinlock_t,
        ) -> kernel::ffi::c_ulong;
        #[cfg(CONFIG_PREEMPT_RT)]
        pub(crate) fn rsiw_spin_unlock_irqrestore(
            lock: *mut bindings::spinlock_t,
            flags: kernel::ffi::c_ulong,
        );
        pub(crate) fn rsiw_bundle_udata(
            attrs: *mut bindings::uverbs_attr_bundle,
        ) -> *mut bindings::ib_udata;
        pub(crate) fn rsiw_udata_ucontext(
            udata: *mut bindings::ib_udata,
        ) -> *mut bindings::ib_ucontext;
        pub(crate) fn rsiw_xa_init_alloc1(xa: *mut bindings::xarray);
        pub(crate) fn rsiw_xa_alloc_cyclic(
            xa: *mut bindings::xarray,
            id: *mut u32,
            entry: *mut kernel::ffi::c_void,
            max: u32,
            next: *mut u32,
        ) -> kernel::ffi::c_int;
        pub(crate) fn rsiw_xa_erase(
            xa: *mut bindings::xarray,
            index: kernel::ffi::c_ulong,
        ) -> *mut kernel::ffi::c_void;
        pub(crate) fn rsiw_xa_lock(xa: *mut bindings::xarray) -> usize;
        pub(crate) fn rsiw_xa_unlock(xa: *mut bindings::xarray, flags: usize);
        pub(crate) fn rsiw_umem_page_addrs(
            umem: *mut bindings::ib_umem,
            addrs: *mut *mut kernel::ffi::c_void,
            max: usize,
        ) -> usize;
        pub(crate) fn rsiw_counters_alloc(n: u32) -> *mut u64;
        pub(crate) fn rsiw_counters_free(c: *mut u64);
        #[cfg(not(all(CONFIG_X86_64, CONFIG_SMP)))]
        pub(crate) fn rsiw_counters_add(c: *mut u64, i: u32, v: u64);
        pub(crate) fn rsiw_counters_sum(c: *mut u64, i: u32) -> u64;
        pub(crate) fn rsiw_sk_attach(
            s: *mut bindings::socket,
            ctx: *mut kernel::ffi::c_void,
            cb: unsafe extern "C" fn(*mut kernel::ffi::c_void, *mut bindings::sock, i32, i32),
            release: unsafe extern "C" fn(*mut kernel::ffi::c_void),
        ) -> i32;
        pub(crate) fn rsiw_sk_detach(s: *mut bindings::socket);
        pub(crate) fn rsiw_sk_accept_fixup(
            l: *mut bindings::socket,
            c: *mut bindings::socket,
        ) -> i32;
        pub(crate) fn rsiw_sk_read(
            sk: *mut bindings::sock,
            limit: usize,
            ctx: *mut kernel::ffi::c_void,
        ) -> i32;
        pub(crate) fn rsiw_sk_peek(
            sk: *mut bindings::sock,
            skip: usize,
            ctx: *mut kernel::ffi::c_void,
        ) -> i32;
        pub(crate) fn rsiw_sk_lock(s: *mut bindings::socket) -> *mut bindings::sock;
        pub(crate) fn rsiw_sk_unlock(s: *mut bindings::socket);
        pub(crate) fn rsiw_sk_state(s: *mut bindings::socket) -> i32;
        pub(crate) fn rsiw_sock_sk(s: *mut bindings::socket) -> *mut bindings::sock;
        pub(crate) fn rsiw_sock_send(
            s: *mut bindings::socket,
            vec: *mut bindings::kvec,
            n: usize,
            len: usize,
            more: bool,
        ) -> i32;
        pub(crate) fn rsiw_sock_recv(
            s: *mut bindings::socket,
            buf: *mut kernel::ffi::c_void,
            len: usize,
        ) -> i32;
        pub(crate) fn rsiw_alloc_wq() -> *mut bindings::workqueue_struct;
        pub(crate) fn rsiw_alloc_drop_wq() -> *mut bindings::workqueue_struct;
        pub(crate) fn rsiw_next_cpu() -> kernel::ffi::c_int;
        pub(crate) fn rsiw_rcu_read_lock();
        pub(crate) fn rsiw_rcu_read_unlock();
        pub(crate) fn rsiw_drop_after_gp(
            wq: *mut bindings::workqueue_struct,
            obj: *mut kernel::ffi::c_void,
            drop: unsafe extern "C" fn(*mut kernel::ffi::c_void),
        );
        pub(crate) fn rsiw_drain_drops(wq: *mut bindings::workqueue_struct);
        pub(crate) fn rsiw_sock_mss(s: *mut bindings::socket) -> u32;
        pub(crate) fn rsiw_sock_unacked(s: *mut bindings::socket) -> bool;
        pub(crate) fn rsiw_sock_advmss(s: *mut bindings::socket) -> u32;
        pub(crate) fn rsiw_sock_set_v6only(s: *mut bindings::socket) -> i32;
        pub(crate) fn rsiw_in_task() -> bool;
        pub(crate) fn rsiw_dwork_new(
            f: unsafe extern "C" fn(*mut kernel::ffi::c_void),
            ctx: *mut kernel::ffi::c_void,
        ) -> *mut kernel::ffi::c_void;
        pub(crate) fn rsiw_dwork_schedule(
            wq: *mut bindings::workqueue_struct,
            d: *mut kernel::ffi::c_void,
            ms: u32,
        ) -> bool;
        pub(crate) fn rsiw_dwork_cancel(d: *mut kernel::ffi::c_void) -> bool;
        pub(crate) fn rsiw_dwork_free(d: *mut kernel::ffi::c_void);
        pub(crate) fn rsiw_dwork_expire_all(wq: *mut bindings::workqueue_struct);
        pub(crate) fn rsiw_dwork_ctx(d: *mut kernel::ffi::c_void) -> *const kernel::ffi::c_void;
        pub(crate) fn rsiw_umem_release_async(
            wq: *mut bindings::workqueue_struct,
            umem: *mut bindings::ib_umem,
        ) -> i32;
        pub(crate) fn rsiw_mpa_crc_required() -> bool;
        pub(crate) fn rsiw_mpa_peer_to_peer() -> bool;
        pub(crate) fn rsiw_mpa_rev() -> u8;
        pub(crate) fn rsiw_mpa_markers_wanted() -> bool;
        pub(crate) fn rsiw_mpa_large_fpdu() -> bool;
        pub(crate) fn rsiw_mpa_responder_waits() -> bool;
    }
}

/// Module parameters (declared in the C glue, read here).
pub mod params {
    /// Whether MPA CRC32C is required of every peer (`mpa_crc_required=`).
    pub fn mpa_crc_required() -> bool {
        // SAFETY: the glue function only does a READ_ONCE of a module global.
        unsafe { super::glue::rsiw_mpa_crc_required() }
    }

    /// Whether rsiw, as initiator, asks for the peer-to-peer model
    /// (`mpa_peer_to_peer=`).
    pub fn mpa_peer_to_peer() -> bool {
        // SAFETY: the glue function only does a READ_ONCE of a module global.
        unsafe { super::glue::rsiw_mpa_peer_to_peer() }
    }

    /// The MPA revision rsiw initiates with, 1 or 2 (`mpa_rev=`).
    pub fn mpa_rev() -> u8 {
        // SAFETY: the glue function only does a READ_ONCE of a module global.
        unsafe { super::glue::rsiw_mpa_rev() }
    }

    /// Whether rsiw asks peers for MPA markers (`mpa_markers=`).
    pub fn mpa_markers_wanted() -> bool {
        // SAFETY: the glue function only does a READ_ONCE of a module global.
        unsafe { super::glue::rsiw_mpa_markers_wanted() }
    }

    /// Whether rsiw offers and uses FPDUs larger than a TCP segment
    /// (`mpa_large_fpdu=`, siw's `MPA_RR_FLAG_GSO_EXP` bit).
    pub fn mpa_large_fpdu() -> bool {
        // SAFETY: the glue function only does a READ_ONCE of a module global.
        unsafe { super::glue::rsiw_mpa_large_fpdu() }
    }

    /// Whether a client-server responder sends nothing before the
    /// initiator's first FPDU arrived (`mpa_responder_waits=`, RFC 5044
    /// section 7.1.2).
    pub fn mpa_responder_waits() -> bool {
        // SAFETY: the glue function only does a READ_ONCE of a module global.
        unsafe { super::glue::rsiw_mpa_responder_waits() }
    }
}
