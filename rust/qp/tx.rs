// SPDX-License-Identifier: GPL-2.0

//! The transmit engine's scheduling: who runs the transmit function and
//! what it sends next. It turns send queue elements and inbound RDMA Read
//! Requests into FPDUs on the QP's connection, packing many FPDUs into
//! one call into TCP.
//!
//! The transmit function ([`run`], [`run_answer`]) runs in process
//! context: in the caller's context for a user doorbell (the application
//! waits for an answer; `Qp::post_send` decides) and for a kernel
//! consumer's post from a context that may sleep, otherwise from the QP's
//! work item (kernel posts from atomic context, a streaming application,
//! a full TCP send buffer, the receive side's wake-ups). It takes the
//! next job in this order: a pending TERMINATE, the peer-to-peer RTR,
//! queued Read Responses (the inbound Read queue), then the send queue in
//! order. The jobs
//! are built by [`sq`] (the send queue's work requests) and [`read`] (Read
//! Requests and Read Responses) into the [`TxState`] behind the QP's transmit
//! lock; [`emit`] frames and sends them, with the wire core's
//! [`txstream`](crate::wire::txstream) deciding which FPDUs go into one
//! call and what a partial send means.
//!
//! A Send or Write is the "active" work request while it is sent (kept
//! in the QP so that a flush from any context can complete it) and
//! completes when its last octet went to TCP; an RDMA Read moves to the
//! [`OutboundReads`](super::reads::OutboundReads) before its Read Request is
//! sent and completes when the Read Response arrives. Local operations
//! (invalidate, fast registration) complete at once.

use kernel::{
    prelude::*,
    sync::{
        lock::{mutex::MutexBackend, Guard},
        Arc,
    },
};

use self::emit::Sent;
use self::job::Kind;
use super::reads::{Fifo, Inbound, TermMsg, TERM_MAX};
use super::{Conn, Qp, QpState};
use crate::base::limits;
use crate::base::stats::Counter;
use crate::kif::{
    rdma::handle::QpEvent,
    siw::{Status, WqeFlags},
};
use crate::mem::access::MemFault;
use crate::wire::{
    error::{ProtocolError, RdmapError},
    term::build_terminate,
};

mod atomic;
mod emit;
mod imm;
mod job;
mod read;
mod sq;
mod state;

pub(crate) use state::TxState;

/// Largest message whose doorbell may hand the transmission to a worker
/// on another CPU (see `Qp::post_send`).
const HANDOFF_MAX: u32 = 16 * 1024;
/// Rounds of the transmit function before it yields to the work item, so
/// that one QP cannot hog the workqueue.
const MAX_ROUNDS: u32 = 64;

/// Prepares transmission on a connection that just entered RTS: sizes the
/// Read queues from the negotiated ORD/IRD and resets the stream state.
pub(super) fn start(qp: &Arc<Qp>, conn: &Arc<Conn>) -> Result {
    let (ird, ord) = qp.inner.lock().rd_limits();
    pr_debug!("QP {}: IRD {} ORD {}\n", qp.id(), ird, ord);
    let ird = ird.min(limits::MAX_IRD) as usize;
    let ord = ord.min(limits::MAX_ORD) as usize;
    let outbound = Fifo::with_capacity(ord)?;
    let inbound = Fifo::with_capacity(ird)?;
    qp.tx.lock().start(conn.clone());
    let old_outbound = qp.outbound_reads.lock().restart(outbound);
    // A new connection has no work request in transmission.
    let _ = qp.inner.lock().take_active();
    let old_inbound = qp.inbound_reads.lock().restart(inbound);
    qp.lockfree.new_connection();
    drop(old_outbound);
    drop(old_inbound);
    Ok(())
}

/// A kernel consumer posted work to `qp`'s send queue: start transmitting,
/// in the poster's context if `in_place` (it may sleep, see
/// `Qp::post_send`), otherwise from the work item.
pub(super) fn kick(qp: &Arc<Qp>, in_place: bool) {
    if in_place {
        qp.stats.inc(Counter::TxPostRuns);
        run(qp);
    } else {
        qp.schedule_tx();
    }
}

/// Completes every outstanding RDMA Read with a flush error (the QP is
/// going to error). Called by [`Qp::flush_sq`].
pub(super) fn flush_outbound_reads(qp: &Qp) {
    flush_active_wr(qp);
    loop {
        let read = qp.outbound_reads.lock().pop();
        let Some(read) = read else { break };
        if qp.complete_wr(read.wr(), 0, Status::WrFlushErr).is_err() {
            break;
        }
    }
}

/// Completes the Send or Write in transmission (if nobody did yet) with a
/// flush error.
#[cold]
fn flush_active_wr(qp: &Qp) {
    let wr = qp.inner.lock().take_active();
    if let Some(wr) = wr {
        let _ = qp.complete_wr(wr, 0, Status::WrFlushErr);
    }
}

/// Completes the Send or Write whose last octet went to TCP (unless it
/// was flushed meanwhile).
fn complete_active_wr(qp: &Qp, bytes: u32, status: Status) {
    let wr = qp.inner.lock().take_active();
    if let Some(wr) = wr {
        let _ = qp.complete_wr(wr, bytes, status);
    }
}

/// Queues a TERMINATE reporting `err` for the transmit work and moves the
/// QP to the Terminate state (nothing but the TERMINATE is sent any more).
/// `offending` is the DDP/RDMAP header of the segment in error,
/// `ddp_seg_len` its ULPDU_Length. Returns `false` if one was queued
/// already or the QP is not connected.
#[inline(never)]
pub(super) fn queue_terminate(
    qp: &Qp,
    err: ProtocolError,
    offending: Option<&[u8]>,
    ddp_seg_len: u16,
) -> bool {
    if !qp.enter_terminate() {
        return false;
    }
    let mut term = TermMsg {
        buf: [0; TERM_MAX],
        len: 0,
    };
    // siw sends MSN 1 on the Terminate queue (one TERMINATE per stream).
    let Some(len) = build_terminate(err, 1, offending, ddp_seg_len, &mut term.buf) else {
        return false;
    };
    term.len = len as u8;
    if !qp.inbound_reads.lock().queue_term(term, &qp.lockfree) {
        return false;
    }
    qp.note_terminate(false, err.term_code());
    true
}

/// What the job picker found (it puts a job it found into the
/// [`TxState`] itself, so the job is built in place).
enum Next {
    /// A message to transmit is in the [`TxState`].
    Ready,
    /// A local operation or a failed work request was handled: look again.
    Again,
    /// Nothing can be sent now (empty, ORD full, fence).
    Idle,
}

/// The transmit work: sends what the QP has to send.
pub(super) fn run(qp: &Arc<Qp>) {
    run_answer(qp, false)
}

/// [`run`] from a doorbell; `answer`: something was received since the
/// last one, so the application is answering, not streaming, and whether
/// the socket has unacknowledged data (what decides the next doorbell's
/// hand-off, see `Qp::post_send`) is not asked for the first message.
pub(super) fn run_answer(qp: &Arc<Qp>, answer: bool) {
    // The close of the connection is taken up under the transmit lock: a
    // message whose last octet already went to TCP is completed first.
    // Otherwise a peer that receives a Send and disconnects at once could
    // make the close flush the work request while its transmission is
    // still finishing (it then completed as WR_FLUSH_ERR though delivered).
    let tx = qp.tx.lock();
    if qp.lockfree.take_llp_closed() {
        // The close drops the connection, which runs this function again.
        drop(tx);
        super::rx::llp_closed(qp);
        return;
    }
    if tx.conn().is_none() {
        // The CM enters RTS before `start`; it schedules us afterwards.
        return;
    }
    send_rounds(qp, tx, answer);
}

/// The transmit function's loop: takes jobs and sends their batches until
/// nothing is left, TCP is full, the QP stops sending or the round limit
/// hands the rest to the work item.
fn send_rounds(qp: &Arc<Qp>, mut tx: Guard<'_, TxState, MutexBackend>, mut answer: bool) {
    let mut rounds = 0u32;
    loop {
        let state = sending_state(qp, &tx);
        if !matches!(state, QpState::Rts | QpState::Terminate) {
            if tx.end_job().is_some() {
                flush_active_wr(qp);
            }
            tx.uncork();
            return;
        }
        if state == QpState::Terminate {
            // Abandon the message at an FPDU boundary; its work request
            // is flushed when the QP goes to error.
            tx.abandon_for_terminate();
        }
        if tx.job_kind().is_none() {
            match next_job(qp, &mut tx, state) {
                Next::Ready => {}
                Next::Again => continue,
                Next::Idle => {
                    tx.uncork();
                    return;
                }
            }
        }
        let queued = another_queued(qp, &tx, state);
        note_streaming(qp, &tx, &mut answer);
        match emit::send_batch(&mut tx, &qp.stats, queued) {
            Ok(Sent::Done) => {
                // Dropped in place: a job is a few hundred octets.
                let Some((kind, total)) = tx.end_job() else {
                    continue;
                };
                if let Kind::WriteImm(data) = kind {
                    imm::follow(qp, &mut tx, data);
                    continue;
                }
                if finish_job(qp, kind, total) {
                    // After the TERMINATE: error and close, without the
                    // transmit lock (the CM's endpoint lock is taken
                    // before it on the accept path).
                    drop(tx);
                    qp.set_error();
                    qp.drop_conn();
                    return;
                }
            }
            Ok(Sent::More) => {}
            Ok(Sent::TcpFull) => {
                tx.uncork();
                return;
            }
            Ok(Sent::MemoryGone(fault)) => match memory_gone(qp, tx, fault) {
                // The TERMINATE goes out in the next round.
                Some(guard) => tx = guard,
                None => return,
            },
            Err(err) => {
                send_failed(qp, tx, err);
                return;
            }
        }
        rounds += 1;
        if rounds >= MAX_ROUNDS {
            drop(tx);
            qp.schedule_tx();
            return;
        }
    }
}

/// The QP's state as far as sending goes: Error or Closing count as
/// Terminate while a TERMINATE is still to go out (the application
/// closed or errored the QP right after the error that queued it).
fn sending_state(qp: &Qp, tx: &TxState) -> QpState {
    let state = qp.state();
    if matches!(state, QpState::Error | QpState::Closing) && term_pending(qp, tx) {
        QpState::Terminate
    } else {
        state
    }
}

/// Whether a TERMINATE is queued or being sent.
#[inline(never)]
fn term_pending(qp: &Qp, tx: &TxState) -> bool {
    tx.job_kind() == Some(Kind::Term) || qp.inbound_reads.lock().term_pending()
}

/// Whether another work request waits behind the message in
/// transmission: the end of this message need not be pushed on its own
/// (the sender of many small messages fills TCP segments instead of
/// sending one per message).
fn another_queued(qp: &Qp, tx: &TxState, state: QpState) -> bool {
    if let Some(Kind::WriteImm(_)) = tx.job_kind() {
        // Its Immediate Data follows.
        return state == QpState::Rts;
    }
    state == QpState::Rts
        && tx.job_kind() == Some(Kind::Wr)
        && tx
            .sq_next()
            .is_some_and(|i| qp.sq.flags(i).contains(WqeFlags::VALID))
}

/// At the first batch of a message: notes whether the application
/// streams (its earlier data still unacknowledged), which makes its next
/// doorbell hand off to a worker. Only small messages stream to a worker:
/// a large one keeps the sender's own CPU busy in its system call, where
/// the other CPU may be busy too (a peer polling its CQ). An `answer`
/// does not stream (for its first message only: it is cleared here).
fn note_streaming(qp: &Qp, tx: &TxState, answer: &mut bool) {
    if !tx.between_batches() {
        return;
    }
    let Some(conn) = tx.conn() else {
        return;
    };
    let small = tx.job_total().is_some_and(|total| total < HANDOFF_MAX);
    let streaming = !core::mem::take(answer) && small && conn.sock.has_unacked();
    qp.lockfree.set_streaming(streaming);
}

/// Finds the next message to send: a TERMINATE, the RTR, a Read Response,
/// the send queue.
fn next_job(qp: &Arc<Qp>, tx: &mut TxState, state: QpState) -> Next {
    if qp.lockfree.take_inbound_reads_queued() {
        if let Some(next) = inbound_reads_job(qp, tx, state) {
            return next;
        }
    }
    if state != QpState::Rts || qp.lockfree.tx_held() {
        return Next::Idle;
    }
    if tx.take_rtr() {
        tx.slot().job.set_rtr();
        tx.begin_job();
        return Next::Ready;
    }
    sq::next_job(qp, tx)
}

/// [`next_job`] when something was queued on the inbound Read queue since
/// the last look: a TERMINATE and, in RTS without an RTR to send first, a
/// Read Request to answer (then the inbound Read queue's active response).
/// `None` when there is neither. Not inlined: the common case of the
/// transmit function then keeps no room for them.
#[inline(never)]
fn inbound_reads_job(qp: &Arc<Qp>, tx: &mut TxState, state: QpState) -> Option<Next> {
    let reads = state == QpState::Rts && !tx.rtr_pending();
    let (term, request) = qp.inbound_reads.lock().take_work(reads, &qp.lockfree);
    if let Some(term) = term {
        tx.slot().job.set_terminate(term);
        tx.begin_job();
        return Some(Next::Ready);
    }
    // With a request: in RTS, no RTR to send first.
    let request = request?;
    if qp.lockfree.tx_held() {
        return Some(Next::Idle);
    }
    Some(match request.request {
        Inbound::Read(r) => read::response_job(qp, tx, r, request.msn),
        Inbound::Atomic(a) => atomic::response_job(qp, tx, a, request.msn),
    })
}

/// Handles a job (of `kind`, `total` octets) whose last octet went to
/// TCP; `true` when the QP is done (after a TERMINATE: the caller moves it
/// to error and closes).
fn finish_job(qp: &Arc<Qp>, kind: Kind, total: u32) -> bool {
    qp.stats.inc(if kind == Kind::Term {
        Counter::TerminatesSent
    } else {
        Counter::TxMessages
    });
    match kind {
        Kind::Wr => {
            complete_active_wr(qp, total, Status::Success);
            false
        }
        // A Write with Immediate completes with its Immediate Data.
        Kind::WriteImm(_) | Kind::ReadReq | Kind::Rtr | Kind::ReadResp => false,
        Kind::Term => true,
    }
}

/// The memory of the message in transmission was invalidated or
/// deregistered (`fault`) since it was checked: not one more octet of it
/// may be read. A Read Response stops with the invalid STag TERMINATE; a
/// Send or Write completes with a protection error and terminates the
/// stream, as a local error does. Between batches the TERMINATE follows
/// (the transmit lock is given back for it); in the middle of a batch TCP
/// took part of, the FPDU cannot be finished without the memory, so the
/// connection is closed at once (`None`).
#[cold]
fn memory_gone<'a>(
    qp: &Arc<Qp>,
    mut tx: Guard<'a, TxState, MutexBackend>,
    fault: MemFault,
) -> Option<Guard<'a, TxState, MutexBackend>> {
    let mid_fpdu = !tx.between_batches();
    crate::qp_warn!(
        qp.handle,
        "QP {}: memory of the message in transmission went away ({:?}): stopped\n",
        qp.id(),
        fault
    );
    let err: ProtocolError = match tx.end_job() {
        Some((Kind::ReadResp, _)) => fault.read_error().into(),
        Some((Kind::Wr | Kind::WriteImm(_), _)) => {
            complete_active_wr(qp, 0, Status::from(fault));
            qp.handle.event(QpEvent::Fatal);
            RdmapError::LocalCatastrophic.into()
        }
        _ => RdmapError::LocalCatastrophic.into(),
    };
    if mid_fpdu {
        drop(tx);
        qp.set_error();
        qp.drop_conn();
        return None;
    }
    queue_terminate(qp, err, None, 0);
    Some(tx)
}

/// TCP refused the message (not for want of room): it fails, the QP goes
/// to error and the connection is closed.
#[cold]
fn send_failed(qp: &Arc<Qp>, mut tx: Guard<'_, TxState, MutexBackend>, err: Error) {
    if tx
        .end_job()
        .is_some_and(|(kind, _)| matches!(kind, Kind::Wr | Kind::WriteImm(_)))
    {
        complete_active_wr(qp, 0, Status::GeneralErr);
    }
    crate::qp_warn!(qp.handle, "QP {}: send failed: {:?}\n", qp.id(), err);
    drop(tx);
    qp.set_error();
    qp.drop_conn();
}
