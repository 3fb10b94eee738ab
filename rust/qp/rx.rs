// SPDX-License-Identifier: GPL-2.0

//! The receive engine: runs in the socket's `data_ready` upcall (softirq),
//! feeds the byte stream to the wire core's deframer, whose placement sink
//! puts DDP segments into memory: tagged ones into registered memory,
//! untagged ones into the next receive queue element; it completes
//! messages and answers errors with a TERMINATE.
//!
//! This file holds the socket upcalls, the start of receiving on a new
//! connection, the close and the flush, and the two passes over the
//! socket's receive queue that verify-first receiving with CRC takes
//! ([`receive`]). The submodules: [`state`] (the state behind the `rx`
//! lock), [`sink`] (placement, and what a segment completes), [`msg`] (the
//! Send in progress) and [`actions`] (what is done after the lock).
//!
//! Everything that must not happen under the receive lock (CQ pushes for
//! failed receives, events, TERMINATE queueing, waking the transmit work)
//! is collected in [`Actions`] and done after the lock is dropped. Work that
//! needs process context (closing the connection) goes to the transmit
//! work item.

use kernel::{
    prelude::*,
    sync::{Arc, ArcBorrow},
};

use super::{lockfree::Receiving, Qp, QpState};
use crate::kif::siw::Status;
use crate::kif::sock::{SockEvents, SockRx, TcpState};
use crate::wire::{mpa::MpaMode, rx::RxConfig};
use actions::Actions;

mod actions;
mod msg;
mod sink;
mod state;

pub(crate) use state::RxState;

/// Feeds received octets to the QP's deframer; everything to do
/// afterwards is added to `act`.
fn feed(qp: &Qp, bytes: &[u8], act: &mut Actions) {
    if act.stream_failed() || qp.state() != QpState::Rts {
        // Discard: the stream is dead.
        return;
    }
    // Before anything is placed or completed: an application that sees
    // this data and rings its doorbell at once is answering, not
    // streaming (see `Qp::post_send`).
    qp.lockfree.note_received();
    qp.rx.lock().push(qp, bytes, act);
}

/// Takes the octets queued on the QP's socket into the QP.
///
/// Without CRC they go to the deframer as they are. With CRC the receiver
/// verifies first (RFC 5044 section 7.1: an FPDU is passed to DDP only
/// after its CRC was checked, so that a header corrupted on the way places
/// nothing): the MPA-only deframer checks the octets it has not seen yet
/// without consuming them, then the deframer takes the octets of the
/// complete FPDUs that passed. The rest of an incomplete FPDU stays queued
/// in the socket until the next upcall, so nothing is copied aside.
fn receive(qp: &Qp, rx: &mut SockRx<'_>, how: Receiving, act: &mut Actions) {
    let limit = if how == Receiving::VerifyFirst {
        qp.rx.lock().verify(rx)
    } else {
        usize::MAX
    };
    let _ = rx.pull_at_most(limit, &mut |chunk| {
        feed(qp, chunk, act);
        Ok(())
    });
    if limit != usize::MAX {
        qp.rx.lock().verify_failed(qp, act);
    }
}

impl SockEvents for Qp {
    fn data_ready(this: ArcBorrow<'_, Self>, rx: &mut SockRx<'_>) {
        let Some(how) = this.lockfree.receiving() else {
            // Not started: `start` picks the data up.
            return;
        };
        let qp: &Qp = &this;
        let mut act = Actions::upcall();
        receive(qp, rx, how, &mut act);
        act.run(this);
    }

    fn state_change(this: ArcBorrow<'_, Self>, state: TcpState) {
        if matches!(state, TcpState::Closed | TcpState::CloseWait) {
            let qp: Arc<Qp> = this.into();
            on_llp_close(&qp);
        }
    }

    fn write_space(this: ArcBorrow<'_, Self>) {
        let qp: Arc<Qp> = this.into();
        qp.schedule_tx();
    }
}

/// The TCP connection closed or the stream died (any context): the QP
/// goes to error at once; closing the connection (CM events, socket
/// release) is done by the transmit work in process context, see
/// [`llp_closed`].
fn on_llp_close(qp: &Arc<Qp>) {
    // The CM reports the fatal event of an unexpected close (Cep::close).
    qp.lockfree.note_llp_closed();
    qp.schedule_tx();
}

/// Process context end of [`on_llp_close`]: reports the close to the
/// connection manager, which moves the QP to error and drops the
/// connection.
pub(super) fn llp_closed(qp: &Arc<Qp>) {
    match qp.conn() {
        Some(conn) => conn.cep.clone().close(true),
        None => qp.set_error(),
    }
}

/// Completes the receive in progress with a flush error (the QP is going
/// to error). Called by [`Qp::flush_rq`].
pub(super) fn flush_active(qp: &Qp) {
    let active = qp.rx.lock().flush_active();
    if let Some((rqe, _, status)) = active {
        let status = if status != Status::Success {
            status
        } else {
            Status::WrFlushErr
        };
        let _ = qp.complete_rqe(&rqe, 0, None, status);
    }
}

/// Starts receiving on a QP that just entered RTS (called by the CM after
/// the socket's upcalls were handed to the QP): sets up the transmit and
/// receive state of the connection and processes data that arrived before.
pub(crate) fn start(qp: &Arc<Qp>) -> Result {
    let conn = qp.conn().ok_or(EINVAL)?;
    qp.lockfree.hold_tx(conn.hold != super::TxHold::None);
    super::tx::start(qp, &conn)?;
    let mode = MpaMode {
        markers: conn.rx_markers,
        crc: conn.crc,
    };
    let cfg = RxConfig {
        max_ulpdu: conn.rx_max_ulpdu,
        ext: crate::qp::imm::rx_extensions(qp.kernel),
        ..RxConfig::new(mode)
    };
    qp.rx.lock().start(cfg, &conn.await_rtr);
    qp.lockfree.start_receiving(mode.crc);
    let how = if mode.crc {
        Receiving::VerifyFirst
    } else {
        Receiving::Plain
    };
    let mut act = Actions::default();
    let result = conn.sock.with_rx(|rx| receive(qp, rx, how, &mut act));
    act.run(qp.as_arc_borrow());
    // A peer that closes right after the MPA exchange may do so while the
    // socket has no callbacks (between the endpoint's and the QP's) or
    // before `tx::start` cleared the close flag: no event reports such
    // a close any more, the socket state does.
    if matches!(conn.sock.state(), TcpState::Closed | TcpState::CloseWait) {
        on_llp_close(qp);
    }
    result
}
