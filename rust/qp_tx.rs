// SPDX-License-Identifier: GPL-2.0

//! The transmit engine: turns send queue elements and inbound RDMA Read
//! Requests into FPDUs on the QP's connection, packing many FPDUs into one
//! call into TCP. Runs from the QP's work item (process context).

use kernel::sync::Arc;

use crate::qp::Qp;

/// Transmit state of a QP (the work request in progress).
#[derive(Default)]
pub struct TxState {}

impl TxState {
    /// Idle state.
    pub fn new() -> Self {
        Self {}
    }
}

/// Outbound RDMA Reads awaiting their Read Response (at most ORD).
#[derive(Default)]
pub struct Orq {}

impl Orq {
    /// An empty queue.
    pub fn new() -> Self {
        Self {}
    }
}

/// Inbound RDMA Read Requests to answer (at most IRD).
#[derive(Default)]
pub struct Irq {}

impl Irq {
    /// An empty queue.
    pub fn new() -> Self {
        Self {}
    }
}

/// Work was posted to `qp`'s send queue: start transmitting.
pub fn kick(qp: &Arc<Qp>) {
    qp.schedule_tx();
}

/// The transmit work: sends what the QP has to send.
pub fn run(_qp: &Arc<Qp>) {}
