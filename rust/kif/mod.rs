// SPDX-License-Identifier: GPL-2.0

//! Kernel interface layer: the only part of rsiw with `unsafe`.
//!
//! Each submodule wraps one kernel facility in a safe type. The driver above
//! only sees these types, never `kernel::bindings`.

pub mod ib;
pub mod net;
pub mod udata;

/// `EOPNOTSUPP`, which the 6.12 `kernel` crate does not name.
pub fn eopnotsupp() -> kernel::error::Error {
    kernel::error::Error::from_errno(-(kernel::bindings::EOPNOTSUPP as i32))
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
        pub(crate) fn rsiw_mpa_crc_required() -> bool;
        pub(crate) fn rsiw_mpa_markers_wanted() -> bool;
    }
}

/// Module parameters (declared in the C glue, read here).
pub mod params {
    /// Whether MPA CRC32C is required of every peer (`mpa_crc_required=`).
    pub fn mpa_crc_required() -> bool {
        // SAFETY: the glue function only does a READ_ONCE of a module global.
        unsafe { super::glue::rsiw_mpa_crc_required() }
    }

    /// Whether rsiw asks peers for MPA markers (`mpa_markers=`).
    pub fn mpa_markers_wanted() -> bool {
        // SAFETY: the glue function only does a READ_ONCE of a module global.
        unsafe { super::glue::rsiw_mpa_markers_wanted() }
    }
}
