// SPDX-License-Identifier: GPL-2.0

//! Error codes the 6.12 `kernel::error::code` does not name. Newer kernels
//! declare more of them there as constants (`EOPNOTSUPP`, ...); outside
//! the `kernel` crate an [`Error`] cannot be built in a constant, so these
//! are functions.
//!
//! Unnecessary from 7.3 on (its `kernel::error::code` has all of them;
//! 6.12's none): there `mod.rs` picks `upstream/error.rs`.

use kernel::{bindings, error::Error};

/// `EOPNOTSUPP`: operation not supported.
pub fn eopnotsupp() -> Error {
    Error::from_errno(-(bindings::EOPNOTSUPP as i32))
}

/// `ENOTCONN`: the transport endpoint is not connected.
pub fn enotconn() -> Error {
    Error::from_errno(-(bindings::ENOTCONN as i32))
}

/// `ECONNRESET`: connection reset by peer.
pub fn econnreset() -> Error {
    Error::from_errno(-(bindings::ECONNRESET as i32))
}

/// `ECONNREFUSED`: connection refused.
pub fn econnrefused() -> Error {
    Error::from_errno(-(bindings::ECONNREFUSED as i32))
}

/// `ECONNABORTED`: connection aborted.
pub fn econnaborted() -> Error {
    Error::from_errno(-(bindings::ECONNABORTED as i32))
}

/// `ETIMEDOUT`: connection timed out.
pub fn etimedout() -> Error {
    Error::from_errno(-(bindings::ETIMEDOUT as i32))
}

/// `EPROTO`: protocol error.
pub fn eproto() -> Error {
    Error::from_errno(-(bindings::EPROTO as i32))
}

/// `EADDRNOTAVAIL`: address not available (for a connect: the 4-tuple is
/// in use).
pub fn eaddrnotavail() -> Error {
    Error::from_errno(-(bindings::EADDRNOTAVAIL as i32))
}
