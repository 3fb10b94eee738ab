// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues as the verbs see them: attributes and creation
//! arguments.

use super::{handle::SrqHandle, mmap::UserCtx, udata::Udata, Driver};

/// SRQ attributes.
#[derive(Clone, Copy, Debug)]
pub struct SrqAttr {
    /// Work requests.
    pub max_wr: u32,
    /// SGEs per work request.
    pub max_sge: u32,
    /// Limit for the limit event (0: disarmed).
    pub limit: u32,
}

/// Arguments of `create_srq`.
pub struct CreateSrq<'a, T: Driver> {
    /// The core SRQ, for the limit event.
    pub handle: SrqHandle,
    /// The protection domain.
    pub pd: &'a T::Pd,
    /// Attributes.
    pub attr: SrqAttr,
    /// The SRQ is of the basic type.
    pub basic: bool,
    /// The user context (user SRQs).
    pub user: Option<UserCtx<'a>>,
    /// The response channel.
    pub udata: Udata<'a>,
}
