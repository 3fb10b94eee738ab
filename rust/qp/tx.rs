// SPDX-License-Identifier: GPL-2.0

//! The transmit engine: turns send queue elements and inbound RDMA Read
//! Requests into FPDUs on the QP's connection, packing many FPDUs into one
//! call into TCP. Runs from the QP's work item (process context).
//!
//! Order of work in [`run`]: a pending TERMINATE first, then queued Read
//! Responses (IRQ), then the send queue in order. A message is cut into
//! DDP segments of at most MULPDU octets by the wire core's [`TxBatch`];
//! up to [`BATCH_BUDGET`](emit::BATCH_BUDGET) octets (or
//! [`MAX_PIECES`](emit::MAX_PIECES) kvec pieces) of FPDUs
//! go into one [`crate::kif::sock::Socket::send`]. Payload is sent straight
//! from the pinned pages; ULPDU_Length, headers, markers, PAD and CRC are
//! written into a small scratch area. When TCP takes only part of a batch,
//! the batch is rebuilt identically on the next run (it is a pure function
//! of the committed position) and the octets already taken are skipped.
//!
//! Send queue slots: as in siw, a work request's slot goes back to the
//! producer as soon as the transmit side took its copy (libsiw rings the
//! doorbell only when the slot before its new work is free). A Send or
//! Write is then the "active" work request (kept in the
//! [`Orq`](super::orq::Orq) so that a flush from any context can complete
//! it) and completes when its last octet went to TCP; an RDMA Read moves
//! to the ORQ before its Read Request is sent and completes when the Read
//! Response arrives. Local operations (invalidate, fast registration)
//! complete at once.

use core::sync::atomic::Ordering;
use kernel::{
    prelude::*,
    sync::{
        lock::{mutex::MutexBackend, Guard},
        Arc,
    },
};

use self::emit::Sent;
use super::orq::{Fifo, IrqEntry, OrqEntry, TermMsg, WrRef, TERM_MAX};
use super::{Conn, Qp, QpState};
use crate::base::limits;
use crate::base::stats::Counter;
use crate::kif::siw::{op, wc, wqe};
use crate::kif::{
    rdma::handle::QpEvent,
    siw::{Sge, Sqe, MAX_INLINE, MAX_SGE},
};
use crate::mem::access::{self, check_mem, lookup_inval, lookup_stag, MemFault, StagCache};
use crate::mem::{Mem, MemKind};
use crate::wire::{
    error::{ProtocolError, RdmapError},
    mpa::MpaMode,
    rdmap::{Opcode, ReadRequest, SegmentHeader, QN_READ_REQUEST, QN_SEND},
    term::build_terminate,
    tx::Segmenter,
};

pub mod emit;

/// Largest message whose doorbell may hand the transmission to a worker
/// on another CPU (see `Qp::post_send`).
const HANDOFF_MAX: u32 = 16 * 1024;
/// Scratch octets for ULPDU_Length, headers, markers, PAD and CRC fields.
const SCRATCH: usize = 2048;

// ---------------------------------------------------------------------------
// Transmit state.
// ---------------------------------------------------------------------------

/// Where a message's payload comes from.
enum Src {
    /// No payload.
    None,
    /// The inline data of the work request.
    Inline([u8; MAX_INLINE]),
    /// Registered memory: the first `n` SGEs of `Job::sqe` with their
    /// resolved memory objects.
    Sgl {
        mems: [Option<Arc<Mem>>; MAX_SGE],
        n: usize,
    },
}

/// What a job is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Send or Write (the active work request, see [`Orq`](super::orq::Orq)).
    Wr,
    /// RDMA Read Request (already in the ORQ).
    ReadReq,
    /// RDMA Read Response.
    ReadResp,
    /// TERMINATE.
    Term,
    /// The peer-to-peer RTR: a zero length Write, no completion.
    Rtr,
}

/// The message being transmitted.
struct Job {
    kind: Kind,
    /// The work request (Sends/Writes/Reads).
    sqe: Sqe,
    /// Header of the first segment (later segments adjust MO/TO and L).
    hdr: SegmentHeader,
    /// Message length.
    total: u32,
    /// Committed segmentation progress.
    seg: Segmenter,
    src: Src,
    /// TERMINATE ULPDU (with `Kind::Term`).
    term: Option<TermMsg>,
}

/// Transmit state of a QP (the work request in progress).
pub struct TxState {
    /// MPA stream offset of the next FPDU (from 0 at MPA full operation).
    off: u32,
    /// Last MSN sent per untagged queue (the first message carries 1).
    msn: [u32; 3],
    job: Option<Job>,
    /// Octets of the current batch TCP has taken already.
    sent: usize,
    mode: MpaMode,
    /// Set by [`start`]: nothing is sent before the stream is set up.
    started: bool,
    /// The peer-to-peer RTR is still to be sent (before any work request).
    rtr: bool,
    /// The send queue slot after the last work request taken: when it is
    /// valid, another message follows right away.
    sq_next: Option<u32>,
    /// The last TCP send ended a message with `MSG_MORE` because another
    /// one followed (small messages share TCP segments): TCP holds the
    /// tail until the next send or [`Socket::push`](crate::kif::sock::Socket::push).
    corked: bool,
    /// The connection sent on (from [`start`] until [`Qp::drop_conn`]),
    /// kept here so that the transmit function need not take the QP's
    /// connection lock per message.
    pub(crate) conn: Option<Arc<Conn>>,
    /// The last STag looked up for transmission.
    stags: StagCache,
    scratch: [u8; SCRATCH],
}

impl Default for TxState {
    fn default() -> Self {
        Self::new()
    }
}

impl TxState {
    /// Idle state.
    pub fn new() -> Self {
        Self {
            off: 0,
            msn: [0; 3],
            job: None,
            sent: 0,
            mode: MpaMode::default(),
            started: false,
            rtr: false,
            sq_next: None,
            corked: false,
            conn: None,
            stags: StagCache::new(),
            scratch: [0; SCRATCH],
        }
    }

    fn reset(&mut self, mode: MpaMode, rtr: bool, conn: Arc<Conn>) {
        self.conn = Some(conn);
        self.rtr = rtr;
        self.off = 0;
        self.msn = [0; 3];
        self.job = None;
        self.sent = 0;
        self.mode = mode;
        self.started = true;
        self.sq_next = None;
        self.corked = false;
    }
}

/// Prepares transmission on a connection that just entered RTS: sizes the
/// ORQ and IRQ from the negotiated ORD/IRD and resets the stream state.
pub fn start(qp: &Arc<Qp>, conn: &Arc<Conn>) -> Result {
    let (ird, ord) = {
        let inner = qp.inner.lock();
        (inner.ird, inner.ord)
    };
    pr_debug!("rsiw: QP {}: IRD {} ORD {}\n", qp.id(), ird, ord);
    let ird = ird.min(limits::MAX_IRD) as usize;
    let ord = ord.min(limits::MAX_ORD) as usize;
    let o = Fifo::with_capacity(ord)?;
    let r = Fifo::with_capacity(ird)?;
    let mode = MpaMode {
        markers: conn.tx_markers,
        crc: conn.crc,
    };
    qp.tx.lock().reset(mode, conn.send_rtr, conn.clone());
    let old_o = {
        let mut orq = qp.orq.lock();
        let old = core::mem::replace(&mut orq.q, o);
        orq.stalled = false;
        old
    };
    qp.inner.lock().active = None;
    let old_r = {
        let mut irq = qp.irq.lock();
        let old = core::mem::replace(&mut irq.q, r);
        irq.active = false;
        irq.term = None;
        old
    };
    qp.llp_closed.store(false, Ordering::Release);
    qp.irq_hint.store(false, Ordering::Release);
    drop(old_o);
    drop(old_r);
    Ok(())
}

/// Work was posted to `qp`'s send queue: start transmitting.
pub fn kick(qp: &Arc<Qp>) {
    qp.schedule_tx();
}

/// Completes every outstanding RDMA Read with a flush error (the QP is
/// going to error). Called by [`Qp::flush_sq`].
pub fn flush_orq(qp: &Qp) {
    flush_active_wr(qp);
    loop {
        let e = qp.orq.lock().pop();
        let Some(e) = e else { break };
        if qp.complete_wr(e.wr(), 0, wc::WR_FLUSH_ERR).is_err() {
            break;
        }
    }
}

/// Completes the Send or Write in transmission (if nobody did yet) with a
/// flush error.
#[cold]
fn flush_active_wr(qp: &Qp) {
    let wr = qp.inner.lock().active.take();
    if let Some(wr) = wr {
        let _ = qp.complete_wr(wr, 0, wc::WR_FLUSH_ERR);
    }
}

/// Completes the Send or Write whose last octet went to TCP (unless it
/// was flushed meanwhile).
fn complete_active_wr(qp: &Qp, bytes: u32, status: u16) {
    let wr = qp.inner.lock().active.take();
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
pub fn queue_terminate(
    qp: &Qp,
    err: ProtocolError,
    offending: Option<&[u8]>,
    ddp_seg_len: u16,
) -> bool {
    {
        let mut inner = qp.inner.lock();
        match inner.state {
            QpState::Rts | QpState::Closing => qp.put_state(&mut inner, QpState::Terminate),
            _ => return false,
        }
    }
    let mut t = TermMsg {
        buf: [0; TERM_MAX],
        len: 0,
    };
    // siw sends MSN 1 on the Terminate queue (one TERMINATE per stream).
    let Some(n) = build_terminate(err, 1, offending, ddp_seg_len, &mut t.buf) else {
        return false;
    };
    t.len = n as u8;
    let mut irq = qp.irq.lock();
    if irq.term.is_some() {
        return false;
    }
    irq.term = Some(t);
    qp.irq_hint.store(true, Ordering::Release);
    true
}

/// What the job picker found (it puts a job it found into
/// `TxState::job` itself, so the job is built in place).
enum Next {
    /// A message to transmit is in `TxState::job`.
    Ready,
    /// A local operation or a failed work request was handled: look again.
    Again,
    /// Nothing can be sent now (empty, ORD full, fence).
    Idle,
}

/// The transmit work: sends what the QP has to send.
pub fn run(qp: &Arc<Qp>) {
    run_answer(qp, false)
}

/// [`run`] from a doorbell; `answer`: something was received since the
/// last one, so the application is answering, not streaming, and whether
/// the socket has unacknowledged data (what decides the next doorbell's
/// hand-off, see `Qp::post_send`) is not asked for the first message.
pub fn run_answer(qp: &Arc<Qp>, mut answer: bool) {
    // The close of the connection is taken up under the transmit lock: a
    // message whose last octet already went to TCP is completed first.
    // Otherwise a peer that receives a Send and disconnects at once could
    // make the close flush the work request while its transmission is
    // still finishing (it then completed as WR_FLUSH_ERR though delivered).
    let mut tx = qp.tx.lock();
    if qp.llp_closed.load(Ordering::Relaxed) && qp.llp_closed.swap(false, Ordering::AcqRel) {
        // The close drops the connection, which runs this function again.
        drop(tx);
        super::rx::llp_closed(qp);
        return;
    }
    if tx.conn.is_none() || !tx.started {
        // The CM enters RTS before `start`; it schedules us afterwards.
        return;
    }
    // Bound the work done per run so one QP cannot hog the workqueue.
    let mut rounds = 0u32;
    loop {
        let mut state = qp.state();
        if matches!(state, QpState::Error | QpState::Closing) && term_pending(qp, &tx) {
            // The application closed or errored the QP right after the
            // error that queued a TERMINATE: it still goes out first.
            state = QpState::Terminate;
        }
        if !matches!(state, QpState::Rts | QpState::Terminate) {
            if tx.job.take().is_some() {
                flush_active_wr(qp);
            }
            uncork(&mut tx);
            return;
        }
        if state == QpState::Terminate
            && tx.sent == 0
            && tx.job.as_ref().map(|j| j.kind) != Some(Kind::Term)
        {
            // Abandon the message at an FPDU boundary; its work request
            // is flushed when the QP goes to error.
            tx.job = None;
        }
        if tx.job.is_none() {
            match next_job(qp, &mut tx, state) {
                Next::Ready => {}
                Next::Again => continue,
                Next::Idle => {
                    uncork(&mut tx);
                    return;
                }
            }
        }
        // Another work request is waiting: the end of this message need
        // not be pushed on its own (the sender of many small messages
        // fills TCP segments instead of sending one per message).
        let queued = state == QpState::Rts
            && tx.job.as_ref().is_some_and(|j| j.kind == Kind::Wr)
            && tx.sq_next.is_some_and(|i| qp.sq.flags(i) & wqe::VALID != 0);
        if tx.sent == 0 {
            if let Some(c) = &tx.conn {
                // Only small messages stream to a worker: a large one keeps
                // the sender's own CPU busy in its system call, where the
                // other CPU may be busy too (a peer polling its CQ). An
                // answer does not stream.
                let small = tx.job.as_ref().is_some_and(|j| j.total < HANDOFF_MAX);
                let streaming = !core::mem::take(&mut answer) && small && c.sock.has_unacked();
                qp.tx_streaming.store(streaming, Ordering::Relaxed);
            }
        }
        match emit::send_batch(&mut tx, &qp.stats, queued) {
            Ok(Sent::Done) => {
                // Dropped in place: a job is a few hundred octets.
                let Some((kind, total)) = tx.job.as_ref().map(|j| (j.kind, j.total)) else {
                    continue;
                };
                tx.job = None;
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
                uncork(&mut tx);
                return;
            }
            Err(e) => {
                send_failed(qp, tx, e);
                return;
            }
        }
        rounds += 1;
        if rounds >= 64 {
            drop(tx);
            qp.schedule_tx();
            return;
        }
    }
}

/// TCP refused the message (not for want of room): it fails, the QP goes
/// to error and the connection is closed.
#[cold]
fn send_failed(qp: &Arc<Qp>, mut tx: Guard<'_, TxState, MutexBackend>, e: Error) {
    if let Some(job) = tx.job.take() {
        if job.kind == Kind::Wr {
            complete_active_wr(qp, 0, wc::GENERAL_ERR);
        }
    }
    pr_warn!("rsiw: QP {}: send failed: {:?}\n", qp.id(), e);
    drop(tx);
    qp.set_error();
    qp.drop_conn();
}

/// Pushes what TCP holds back after a message sent with `MSG_MORE` (the
/// transmit function stops without sending the message that was to follow).
fn uncork(tx: &mut TxState) {
    if core::mem::take(&mut tx.corked) {
        if let Some(c) = &tx.conn {
            c.sock.push();
        }
    }
}

/// Whether a TERMINATE is queued or being sent.
#[inline(never)]
fn term_pending(qp: &Qp, tx: &TxState) -> bool {
    tx.job.as_ref().is_some_and(|j| j.kind == Kind::Term) || qp.irq.lock().term.is_some()
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
            complete_active_wr(qp, total, wc::SUCCESS);
            false
        }
        Kind::ReadReq | Kind::Rtr => false,
        Kind::ReadResp => {
            qp.irq.lock().active = false;
            false
        }
        Kind::Term => true,
    }
}

/// Takes the work request in send queue slot `idx` (as siw, the slot goes
/// back to the producer as soon as the transmit side has its copy, which
/// libsiw's doorbell logic relies on); `active` becomes the work request
/// in transmission. `false` when the slot was flushed meanwhile.
fn claim(qp: &Qp, idx: u32, active: Option<WrRef>) -> bool {
    {
        let mut inner = qp.inner.lock();
        if inner.sq_get != idx {
            return false;
        }
        if active.is_some() {
            inner.active = active;
        }
        inner.sq_get = idx.wrapping_add(1);
    }
    qp.sq.give_back(idx);
    true
}

/// Takes slot `idx` and completes its work request at once.
fn complete_now(qp: &Qp, idx: u32, sqe: &Sqe, status: u16) {
    if claim(qp, idx, None) {
        let _ = qp.complete_wr(WrRef::of(sqe), 0, status);
    }
}

/// A local error on the work request in slot `idx`: complete it with
/// `status`, report a fatal event and terminate the connection.
#[cold]
fn local_error(qp: &Qp, idx: u32, sqe: &Sqe, status: u16) {
    pr_warn!(
        "rsiw: QP {}: work request (opcode {}, {} SGEs) failed: status {}\n",
        qp.id(),
        sqe.opcode,
        sqe.num_sge,
        status
    );
    complete_now(qp, idx, sqe, status);
    qp.handle.event(QpEvent::Fatal);
    queue_terminate(qp, RdmapError::LocalCatastrophic.into(), None, 0);
}

fn fault_status(f: MemFault) -> u16 {
    match f {
        MemFault::Bounds => wc::LOC_LEN_ERR,
        MemFault::Access => wc::LOC_ACCESS_ERR,
        MemFault::Stag | MemFault::Pd => wc::LOC_PROT_ERR,
    }
}

/// Resolves and checks the local SGL of a work request (`need`: access
/// rights needed on the memory). Returns the source and the total length.
fn resolve_sgl(
    qp: &Qp,
    sqe: &Sqe,
    need: u32,
    cache: &mut StagCache,
) -> core::result::Result<(Src, u32), u16> {
    let n = usize::from(sqe.num_sge);
    if n > MAX_SGE || n > qp.caps.sq_max_sge.max(1) as usize {
        return Err(wc::LOC_QP_OP_ERR);
    }
    const NONE: Option<Arc<Mem>> = None;
    let mut mems = [NONE; MAX_SGE];
    let mut total = 0u32;
    for (k, s) in sqe.sge.iter().take(n).enumerate() {
        total = total.checked_add(s.length).ok_or(wc::LOC_LEN_ERR)?;
        if s.length == 0 {
            continue;
        }
        let mem = lookup_stag(&qp.mem_xa, s.lkey, cache).ok_or(wc::LOC_PROT_ERR)?;
        check_mem(&mem, qp.pd_id, s.addr, u64::from(s.length), need).map_err(fault_status)?;
        if let Some(slot) = mems.get_mut(k) {
            *slot = Some(mem);
        }
    }
    Ok((Src::Sgl { mems, n }, total))
}

/// Finds the next message to send.
fn next_job(qp: &Arc<Qp>, tx: &mut TxState, state: QpState) -> Next {
    // One look at the IRQ for a TERMINATE and, in RTS, a Read Request
    // (only when something was queued since the last look).
    let (term, rr) =
        if qp.irq_hint.load(Ordering::Acquire) && qp.irq_hint.swap(false, Ordering::AcqRel) {
            let mut irq = qp.irq.lock();
            let r = match irq.term.take() {
                Some(t) => (Some(t), None),
                None if state == QpState::Rts && !tx.rtr => {
                    let e = irq.q.pop();
                    if e.is_some() {
                        irq.active = true;
                    }
                    (None, e)
                }
                None => (None, None),
            };
            if irq.term.is_some() || !irq.q.is_empty() {
                qp.irq_hint.store(true, Ordering::Release);
            }
            r
        } else {
            (None, None)
        };
    if let Some(t) = term {
        return {
            tx.job = Some(Job {
                kind: Kind::Term,
                sqe: empty_sqe(),
                hdr: SegmentHeader::send(Opcode::Send, 0, 0, 0, true),
                total: 0,
                seg: Segmenter::new(0),
                src: Src::None,
                term: Some(t),
            });
            Next::Ready
        };
    }
    if state != QpState::Rts || qp.tx_held.load(Ordering::Acquire) {
        return Next::Idle;
    }
    if core::mem::take(&mut tx.rtr) {
        // siw uses STag 1 ("some HW may treat STag 0 special"); a zero
        // length Write's STag is not checked by the receiver.
        return {
            tx.job = Some(Job {
                kind: Kind::Rtr,
                sqe: empty_sqe(),
                hdr: SegmentHeader::write(1, 0, true),
                total: 0,
                seg: Segmenter::new(0),
                src: Src::None,
                term: None,
            });
            Next::Ready
        };
    }
    if let Some(e) = rr {
        return read_response_job(qp, tx, e);
    }
    sq_job(qp, tx)
}

fn empty_sqe() -> Sqe {
    Sqe {
        id: 0,
        flags: 0,
        num_sge: 0,
        opcode: 0,
        rkey: 0,
        raddr: 0,
        sge: [Sge::default(); MAX_SGE],
        access: 0,
    }
}

/// Answers an inbound Read Request: checks the source memory.
#[inline(never)]
fn read_response_job(qp: &Qp, tx: &mut TxState, e: IrqEntry) -> Next {
    let rr = e.rr;
    // Like siw, the QP's access flags are not enforced here: rdma_cm
    // leaves them 0 on the active side of an iWARP connection; the
    // memory's own rights are what counts.
    let mut src = Src::None;
    let mut sqe = empty_sqe();
    let check = if rr.size == 0 {
        Ok(())
    } else {
        match lookup_stag(&qp.mem_xa, rr.src_stag, &mut tx.stags) {
            None => Err(RdmapError::InvalidStag),
            Some(mem) => {
                match check_mem(
                    &mem,
                    qp.pd_id,
                    rr.src_to,
                    u64::from(rr.size),
                    access::REMOTE_READ,
                ) {
                    Ok(()) => {
                        const NONE: Option<Arc<Mem>> = None;
                        let mut mems = [NONE; MAX_SGE];
                        mems[0] = Some(mem);
                        sqe.sge[0] = Sge {
                            addr: rr.src_to,
                            length: rr.size,
                            lkey: rr.src_stag,
                        };
                        src = Src::Sgl { mems, n: 1 };
                        Ok(())
                    }
                    Err(MemFault::Stag) => Err(RdmapError::InvalidStag),
                    Err(MemFault::Pd) => Err(RdmapError::StagNotAssociated),
                    Err(MemFault::Access) => Err(RdmapError::AccessRights),
                    Err(MemFault::Bounds) => {
                        // RFC 5040 4.8: a source TO + size past 2^64 is
                        // TO wrap, not base/bounds.
                        if rr.src_to.checked_add(u64::from(rr.size)).is_none() {
                            Err(RdmapError::ToWrap)
                        } else {
                            Err(RdmapError::BaseBounds)
                        }
                    }
                }
            }
        }
    };
    if let Err(err) = check {
        pr_warn!(
            "rsiw: QP {}: bad Read Request (src {:#x} to {:#x} len {}): {:?}\n",
            qp.id(),
            rr.src_stag,
            rr.src_to,
            rr.size,
            err
        );
        qp.irq.lock().active = false;
        qp.handle.event(QpEvent::AccessError);
        let (h, n) = SegmentHeader::read_request(e.msn, rr).to_bytes();
        queue_terminate(qp, err.into(), h.get(..n), n as u16);
        return Next::Again;
    }
    {
        tx.job = Some(Job {
            kind: Kind::ReadResp,
            sqe,
            hdr: SegmentHeader::read_response(rr.sink_stag, rr.sink_to, true),
            total: rr.size,
            seg: Segmenter::new(rr.size),
            src,
            term: None,
        });
        Next::Ready
    }
}

/// Takes the next send queue element.
fn sq_job(qp: &Arc<Qp>, tx: &mut TxState) -> Next {
    // The slot after the last one this function took is the next one
    // unless a flush moved on (then `claim` fails and we look again).
    let idx = match tx.sq_next.take() {
        Some(i) => i,
        None => qp.inner.lock().sq_get,
    };
    let flags = qp.sq.flags(idx);
    if flags & wqe::VALID == 0 {
        tx.sq_next = Some(idx);
        return Next::Idle;
    }
    let mut sqe = qp.sq.read(idx);
    sqe.flags = flags;
    if flags & wqe::READ_FENCE != 0 {
        let mut orq = qp.orq.lock();
        if !orq.is_empty() {
            // Resumed by the Read Response that empties the ORQ.
            orq.stalled = true;
            tx.sq_next = Some(idx);
            return Next::Idle;
        }
    }
    match sqe.opcode {
        op::SEND | op::SEND_REMOTE_INV | op::WRITE => {
            let (src, total) = if flags & wqe::INLINE != 0 {
                let len = sqe.sge[0].length;
                if len as usize > MAX_INLINE {
                    local_error(qp, idx, &sqe, wc::LOC_LEN_ERR);
                    return Next::Again;
                }
                (Src::Inline(sqe.inline_data()), len)
            } else {
                match resolve_sgl(qp, &sqe, 0, &mut tx.stags) {
                    Ok(x) => x,
                    Err(st) => {
                        local_error(qp, idx, &sqe, st);
                        return Next::Again;
                    }
                }
            };
            let hdr = if sqe.opcode == op::WRITE {
                SegmentHeader::write(sqe.rkey, sqe.raddr, true)
            } else {
                let se = flags & wqe::SOLICITED != 0;
                let opc = match (sqe.opcode == op::SEND_REMOTE_INV, se) {
                    (false, false) => Opcode::Send,
                    (false, true) => Opcode::SendSe,
                    (true, false) => Opcode::SendInvalidate,
                    (true, true) => Opcode::SendSeInvalidate,
                };
                tx.msn[QN_SEND as usize] = tx.msn[QN_SEND as usize].wrapping_add(1);
                SegmentHeader::send(opc, sqe.rkey, tx.msn[QN_SEND as usize], 0, true)
            };
            if !claim(qp, idx, Some(WrRef::of(&sqe))) {
                return Next::Again;
            }
            tx.sq_next = Some(idx.wrapping_add(1));
            {
                tx.job = Some(Job {
                    kind: Kind::Wr,
                    sqe,
                    hdr,
                    total,
                    seg: Segmenter::new(total),
                    src,
                    term: None,
                });
                Next::Ready
            }
        }
        op::READ | op::READ_LOCAL_INV => read_request_job(qp, tx, idx, sqe),
        op::INVAL_STAG => {
            let ok = match lookup_inval(&qp.mem_xa, qp.pd_id, sqe.rkey) {
                Ok(mem) => {
                    mem.valid.store(false, Ordering::Release);
                    true
                }
                Err(_) => false,
            };
            if ok {
                complete_now(qp, idx, &sqe, wc::SUCCESS);
            } else {
                local_error(qp, idx, &sqe, wc::LOC_QP_OP_ERR);
            }
            Next::Again
        }
        op::REG_MR => {
            if reg_mr(qp, &sqe) {
                complete_now(qp, idx, &sqe, wc::SUCCESS);
            } else {
                local_error(qp, idx, &sqe, wc::LOC_QP_OP_ERR);
            }
            Next::Again
        }
        _ => {
            local_error(qp, idx, &sqe, wc::LOC_QP_OP_ERR);
            Next::Again
        }
    }
}

/// Fast registration: `raddr` is the STag index of the MR, `rkey` the new
/// STag, `access` the rights.
#[inline(never)]
fn reg_mr(qp: &Qp, sqe: &Sqe) -> bool {
    if !qp.kernel {
        return false;
    }
    let Ok(index) = u32::try_from(sqe.raddr) else {
        return false;
    };
    if index != sqe.rkey >> 8 {
        return false;
    }
    let Some(mem) = qp.mem_xa.get(index) else {
        return false;
    };
    if mem.pd_id != qp.pd_id || mem.valid.load(Ordering::Acquire) {
        return false;
    }
    if !matches!(mem.kind, MemKind::Pbl(_)) {
        return false;
    }
    mem.key.store(sqe.rkey & 0xff, Ordering::Release);
    // IOVA and length as the consumer set them before posting (as siw,
    // which reloads them from the ib_mr here): the page offset is the one
    // `ib_map_mr_sg` mapped, the upper bits may differ.
    mem.va.set(sqe.sge[1].addr);
    mem.len.set(u64::from(sqe.sge[1].length));
    mem.access
        .store(sqe.access as u32 & access::IWARP_MASK, Ordering::Release);
    mem.valid.store(true, Ordering::Release);
    true
}

/// An RDMA Read: ORD check, sink check, into the ORQ, slot back.
#[inline(never)]
fn read_request_job(qp: &Arc<Qp>, tx: &mut TxState, idx: u32, sqe: Sqe) -> Next {
    if sqe.num_sge > 1 || (sqe.opcode == op::READ_LOCAL_INV && !qp.kernel) {
        local_error(qp, idx, &sqe, wc::LOC_QP_OP_ERR);
        return Next::Again;
    }
    let sink = if sqe.num_sge == 1 {
        sqe.sge[0]
    } else {
        Sge::default()
    };
    let mut mem = None;
    if sink.length > 0 {
        let m = match lookup_stag(&qp.mem_xa, sink.lkey, &mut tx.stags) {
            Some(m) => m,
            None => {
                local_error(qp, idx, &sqe, wc::LOC_PROT_ERR);
                return Next::Again;
            }
        };
        if let Err(f) = check_mem(
            &m,
            qp.pd_id,
            sink.addr,
            u64::from(sink.length),
            access::LOCAL_WRITE,
        ) {
            local_error(qp, idx, &sqe, fault_status(f));
            return Next::Again;
        }
        mem = Some(m);
    }
    let e = OrqEntry {
        id: sqe.id,
        flags: sqe.flags,
        opcode: sqe.opcode,
        sink,
        mem,
        placed: 0,
    };
    // Into the ORQ and the slot back, atomically with respect to flushes.
    let no_ord = {
        let mut inner = qp.inner.lock();
        if inner.sq_get != idx {
            return Next::Again;
        }
        let mut orq = qp.orq.lock();
        if orq.q.capacity() == 0 {
            true
        } else if orq.q.push(e).is_err() {
            // ORD reached: resumed by the next Read Response.
            orq.stalled = true;
            tx.sq_next = Some(idx);
            return Next::Idle;
        } else {
            inner.sq_get = idx.wrapping_add(1);
            tx.sq_next = Some(idx.wrapping_add(1));
            false
        }
    };
    if no_ord {
        local_error(qp, idx, &sqe, wc::LOC_QP_OP_ERR);
        return Next::Again;
    }
    qp.sq.give_back(idx);
    tx.msn[QN_READ_REQUEST as usize] = tx.msn[QN_READ_REQUEST as usize].wrapping_add(1);
    let rr = ReadRequest {
        sink_stag: sink.lkey,
        sink_to: sink.addr,
        size: sink.length,
        src_stag: sqe.rkey,
        src_to: sqe.raddr,
    };
    {
        tx.job = Some(Job {
            kind: Kind::ReadReq,
            sqe,
            hdr: SegmentHeader::read_request(tx.msn[QN_READ_REQUEST as usize], rr),
            total: 0,
            seg: Segmenter::new(0),
            src: Src::None,
            term: None,
        });
        Next::Ready
    }
}
