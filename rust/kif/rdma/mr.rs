// SPDX-License-Identifier: GPL-2.0

//! Memory registration arguments (`reg_user_mr`, `rereg_user_mr`).

use super::{udata::Udata, umem::Pinner, Driver};

/// Arguments of `reg_user_mr`.
pub struct RegUserMr<'a, T: Driver> {
    /// The protection domain.
    pub pd: &'a T::Pd,
    /// Pins the memory.
    pub pinner: Pinner<'a>,
    /// User address.
    pub start: u64,
    /// Length.
    pub len: u64,
    /// Address the peer uses (IOVA).
    pub iova: u64,
    /// IB access flags.
    pub access: u32,
    /// The request and response channel.
    pub udata: Udata<'a>,
}

/// Arguments of `rereg_user_mr`: what changes (`IB_MR_REREG_*`) and the
/// new values (the others are the request's, not meaningful).
pub struct ReregUserMr<'a, T: Driver> {
    /// New translation: `start`, `len` and `iova` apply.
    pub trans: bool,
    /// New protection domain: `pd` applies (it is the MR's own otherwise).
    pub new_pd: bool,
    /// New access flags: `access` applies.
    pub new_access: bool,
    /// The protection domain the MR will belong to.
    pub pd: &'a T::Pd,
    /// Pins memory.
    pub pinner: Pinner<'a>,
    /// User address.
    pub start: u64,
    /// Length.
    pub len: u64,
    /// Address the peer uses (IOVA).
    pub iova: u64,
    /// IB access flags.
    pub access: u32,
    /// The request and response channel.
    pub udata: Udata<'a>,
}
