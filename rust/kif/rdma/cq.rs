// SPDX-License-Identifier: GPL-2.0

//! What a driver gets to create a completion queue.

use super::{handle::CqHandle, mmap::UserCtx, udata::Udata};

/// Arguments of `create_cq`.
pub struct CreateCq<'a> {
    /// The core CQ, for notifications.
    pub handle: CqHandle,
    /// Requested number of entries.
    pub cqe: u32,
    /// Creation flags (none supported).
    pub flags: u32,
    /// The user context to map the ring into (user CQs).
    pub user: Option<UserCtx<'a>>,
    /// The response channel.
    pub udata: Udata<'a>,
}
