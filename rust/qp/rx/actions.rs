// SPDX-License-Identifier: GPL-2.0

//! What the receive side does once its lock is dropped: the counters, the
//! RTR report to the CM, the TERMINATE to queue for a protocol error (or
//! the close when none can go out), the completion of a receive that
//! failed, the end of the stream after a TERMINATE received, and waking
//! the transmit work.

use core::sync::atomic::Ordering;
use kernel::sync::{Arc, ArcBorrow};

use super::msg::RecvCompletion;
use super::on_llp_close;
use crate::base::stats::Counter;
use crate::kif::rdma::handle::QpEvent;
use crate::qp::{tx::queue_terminate, Qp};
use crate::wire::{
    error::{LlpError, ProtocolError},
    inbound::HeaderCopy,
};

/// What to do once the receive lock is dropped, collected while it is
/// held.
#[derive(Default)]
pub(super) struct Actions {
    /// The transmit work has something to do (Read Request queued, ORD
    /// slot freed, TERMINATE queued).
    pub(super) wake_tx: bool,
    /// A TERMINATE was received.
    pub(super) terminated: bool,
    /// A protocol error: the TERMINATE to send (the error, the header at
    /// fault).
    pub(super) error: Option<(ProtocolError, HeaderCopy)>,
    /// A receive that failed locally, to complete with its status.
    pub(super) failed: Option<RecvCompletion>,
    /// The peer-to-peer RTR (the first FPDU) arrived.
    pub(super) rtr: bool,
    /// The first FPDU arrived on a QP whose transmit side waits for it.
    pub(super) release_tx: bool,
    /// A `data_ready` upcall (counted after the data is placed).
    pub(super) upcall: bool,
    /// FPDUs received (for the counters).
    pub(super) fpdus: u64,
    /// Payload octets received (for the counters).
    pub(super) payload: u64,
}

impl Actions {
    /// The actions of a `data_ready` upcall.
    pub(super) fn upcall() -> Self {
        Self {
            upcall: true,
            ..Self::default()
        }
    }

    /// The stream is dead: what is still queued is discarded.
    pub(super) fn stream_failed(&self) -> bool {
        self.terminated || self.error.is_some()
    }

    /// Does what was collected, without the receive lock.
    pub(super) fn run(&mut self, this: ArcBorrow<'_, Qp>) {
        let qp: &Qp = &this;
        if self.upcall {
            qp.stats.inc(Counter::RxUpcalls);
        }
        qp.stats.add(Counter::RxFpdus, self.fpdus);
        qp.stats.add(Counter::RxPayload, self.payload);
        let mut wake = self.wake_tx;
        if self.release_tx && qp.lockfree.release_tx() {
            wake = true;
        }
        if self.rtr {
            if let Some(conn) = qp.conn() {
                if conn.await_rtr.swap(false, Ordering::AcqRel) {
                    conn.cep.clone().rtr_received();
                }
            }
        }
        if let Some((err, hdr)) = self.error.take() {
            wake |= report_error(this, err, &hdr);
        }
        // A receive that failed completes only now: an application that
        // disconnects as soon as it sees the error finds the TERMINATE
        // queued.
        if let Some((rqe, bytes, status)) = self.failed.take() {
            let _ = qp.complete_rqe(&rqe, bytes, None, status);
        }
        if self.terminated {
            qp.stats.inc(Counter::TerminatesReceived);
            qp.handle.event(QpEvent::Fatal);
            qp.set_error();
            on_llp_close(&this.into());
        }
        if wake {
            Arc::<Qp>::from(this).schedule_tx_elsewhere();
        }
    }
}

/// A protocol error ended the stream: counts and logs it, reports the
/// fatal event and queues the TERMINATE about `hdr`, or closes the
/// connection when none can be queued. Returns whether the transmit work
/// has the TERMINATE to send.
#[cold]
fn report_error(this: ArcBorrow<'_, Qp>, err: ProtocolError, hdr: &HeaderCopy) -> bool {
    let qp: &Qp = &this;
    qp.stats.inc(
        if matches!(err, ProtocolError::Llp(LlpError::CrcMismatch { .. })) {
            Counter::RxCrcErrors
        } else {
            Counter::RxProtocolErrors
        },
    );
    crate::qp_warn!(qp.handle, "QP {}: protocol error {:?}\n", qp.id(), err);
    qp.handle.event(QpEvent::Fatal);
    if queue_terminate(qp, err, hdr.header(), hdr.ulpdu_len()) {
        true
    } else {
        on_llp_close(&this.into());
        false
    }
}
