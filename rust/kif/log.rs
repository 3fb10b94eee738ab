// SPDX-License-Identifier: GPL-2.0

//! Warnings a peer can trigger (protocol errors, TERMINATEs received, bad
//! Read Requests, a bad MPA Reply): they name the device as the RDMA
//! core's `ibdev_*` helpers do (`rsiw rsiw0: QP 5: ...`) and are
//! rate-limited, so that no peer can fill the kernel log (ten lines
//! every five seconds for the module, then a count of what was
//! suppressed). Use the macros `qp_warn!` and `peer_warn!`.

use core::fmt;

use super::glue;
use super::rdma::handle::QpHandle;

/// Logs `args` about the device of `qp` (see the module documentation).
pub fn qp_warn(qp: &QpHandle, args: fmt::Arguments<'_>) {
    let dev = qp.live().map_or(core::ptr::null(), |p| {
        // SAFETY: the QP is alive while its handle is not revoked; its
        // `device` is set by the RDMA core before the driver sees it.
        unsafe { (*p.as_ptr()).device.cast_const() }
    });
    // SAFETY: `dev` is null or a live device (it outlives its QPs);
    // `args` lives until the call returns, and `%pA` reads it as the
    // `fmt::Arguments` it is.
    unsafe { glue::rsiw_warn_peer(dev, core::ptr::from_ref(&args).cast()) };
}

/// Logs `args` where no device is at hand (the MPA exchange).
pub fn peer_warn(args: fmt::Arguments<'_>) {
    // SAFETY: as in `qp_warn`, with no device.
    unsafe { glue::rsiw_warn_peer(core::ptr::null(), core::ptr::from_ref(&args).cast()) };
}

/// A rate-limited warning about a QP's device: `qp_warn!(qp.handle,
/// "QP {}: ...\n", ...)`.
#[macro_export]
macro_rules! qp_warn {
    ($qp:expr, $($arg:tt)+) => {
        $crate::kif::log::qp_warn(&$qp, ::core::format_args!($($arg)+))
    };
}

/// A rate-limited warning without a device: `peer_warn!("...\n", ...)`.
#[macro_export]
macro_rules! peer_warn {
    ($($arg:tt)+) => {
        $crate::kif::log::peer_warn(::core::format_args!($($arg)+))
    };
}
