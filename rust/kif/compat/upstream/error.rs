// SPDX-License-Identifier: GPL-2.0

//! Error codes that the 6.12 `kernel::error::code` does not name (see
//! `../error.rs`): the kernel's constants, under rsiw's function names.

use kernel::error::{code, Error};

/// `EADDRNOTAVAIL`: the address cannot be assigned.
pub fn eaddrnotavail() -> Error {
    code::EADDRNOTAVAIL
}

/// `EOPNOTSUPP`: operation not supported.
pub fn eopnotsupp() -> Error {
    code::EOPNOTSUPP
}

/// `ENOTCONN`: the transport endpoint is not connected.
pub fn enotconn() -> Error {
    code::ENOTCONN
}

/// `ECONNRESET`: connection reset by peer.
pub fn econnreset() -> Error {
    code::ECONNRESET
}

/// `ECONNREFUSED`: connection refused.
pub fn econnrefused() -> Error {
    code::ECONNREFUSED
}

/// `ECONNABORTED`: connection aborted.
pub fn econnaborted() -> Error {
    code::ECONNABORTED
}

/// `ETIMEDOUT`: connection timed out.
pub fn etimedout() -> Error {
    code::ETIMEDOUT
}

/// `EPROTO`: protocol error.
pub fn eproto() -> Error {
    code::EPROTO
}
