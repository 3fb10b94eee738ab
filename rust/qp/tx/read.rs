// SPDX-License-Identifier: GPL-2.0

//! RDMA Read as transmit jobs: an outbound Read's Read Request (the work
//! request moves to the outbound Read queue, within ORD, before its request
//! is sent; it completes when the Read Response arrives) and the Read
//! Response that answers an inbound Read Request from the inbound Read queue
//! (its source memory checked first; a bad request is answered with a
//! TERMINATE).

use kernel::sync::Arc;

use super::job::{empty_sqe, Job, Kind, Src};
use super::sq::local_error;
use super::state::TxState;
use super::{queue_terminate, Next};
use crate::kif::{
    rdma::handle::QpEvent,
    siw::{Opcode, Sge, Sqe, Status},
};
use crate::mem::access::{self, resolve, MemFault, MemRef, StagCache};
use crate::qp::reads::{InboundRead, OutboundRead};
use crate::qp::Qp;
use crate::wire::{
    error::RdmapError,
    rdmap::{ReadRequest, SegmentHeader, QN_READ_REQUEST},
};

/// An RDMA Read from send queue slot `idx`: ORD check, sink check, into
/// the outbound Read queue, slot back; its Read Request becomes the message
/// to transmit.
/// `op` is the element's opcode, [`Opcode::Read`] or
/// [`Opcode::ReadLocalInv`].
#[inline(never)]
pub(super) fn request_job(qp: &Arc<Qp>, tx: &mut TxState, idx: u32, sqe: Sqe, op: Opcode) -> Next {
    if sqe.num_sge > 1 || (op == Opcode::ReadLocalInv && !qp.kernel) {
        local_error(qp, idx, &sqe, Status::LocQpOpErr);
        return Next::Again;
    }
    let sink = if sqe.num_sge == 1 {
        sqe.sge[0]
    } else {
        Sge::default()
    };
    let mem = match sink_memory(qp, &sink, tx.stags()) {
        Ok(m) => m,
        Err(status) => {
            local_error(qp, idx, &sqe, status);
            return Next::Again;
        }
    };
    let e = OutboundRead {
        id: sqe.id,
        flags: sqe.flags,
        opcode: op,
        sink,
        mem,
        placed: 0,
    };
    match into_outbound_reads(qp, tx, idx, e) {
        Queued::Yes => {}
        Queued::Flushed => return Next::Again,
        Queued::OrdFull => return Next::Idle,
        Queued::NoOrd => {
            local_error(qp, idx, &sqe, Status::LocQpOpErr);
            return Next::Again;
        }
    }
    qp.sq.give_back(idx);
    let rr = ReadRequest {
        sink_stag: sink.lkey,
        sink_to: sink.addr,
        size: sink.length,
        src_stag: sqe.rkey,
        src_to: sqe.raddr,
    };
    let hdr = SegmentHeader::read_request(tx.next_msn(QN_READ_REQUEST), rr);
    tx.set_job(Job::message(Kind::ReadReq, sqe, hdr, 0, Src::None));
    Next::Ready
}

/// The memory a Read's response is placed into, checked for local write
/// (none for a zero length Read); else the completion status.
fn sink_memory(
    qp: &Qp,
    sink: &Sge,
    cache: &mut StagCache,
) -> core::result::Result<Option<MemRef>, Status> {
    if sink.length == 0 {
        return Ok(None);
    }
    let len = u64::from(sink.length);
    let need = access::LOCAL_WRITE;
    resolve(&qp.mem_xa, cache, sink.lkey, qp.pd_id, sink.addr, len, need)
        .map(Some)
        .map_err(Status::from)
}

/// Where [`into_outbound_reads`] put an RDMA Read.
enum Queued {
    /// Into the outbound Read queue, its slot taken.
    Yes,
    /// Nowhere: its slot was flushed meanwhile.
    Flushed,
    /// Nowhere yet: ORD is reached; the next Read Response resumes the
    /// send queue.
    OrdFull,
    /// Nowhere: the connection allows no outbound Read (ORD 0).
    NoOrd,
}

/// Moves the Read `e` from send queue slot `idx` into the outbound Read queue
/// and takes the slot, atomically with respect to flushes.
fn into_outbound_reads(qp: &Qp, tx: &mut TxState, idx: u32, e: OutboundRead) -> Queued {
    let mut inner = qp.inner.lock();
    if inner.sq_get() != idx {
        return Queued::Flushed;
    }
    let mut outbound = qp.outbound_reads.lock();
    if outbound.capacity() == 0 {
        return Queued::NoOrd;
    }
    if !outbound.push(e) {
        tx.set_sq_next(idx);
        return Queued::OrdFull;
    }
    inner.take_sq_slot(idx, None);
    tx.set_sq_next(idx.wrapping_add(1));
    Queued::Yes
}

/// Answers an inbound Read Request: checks the source memory and makes
/// the Read Response the message to transmit, or answers a bad request
/// with a TERMINATE.
#[inline(never)]
pub(super) fn response_job(qp: &Qp, tx: &mut TxState, e: InboundRead) -> Next {
    let rr = e.rr;
    match source_memory(qp, &rr, tx.stags()) {
        Ok((sqe, src)) => {
            let hdr = SegmentHeader::read_response(rr.sink_stag, rr.sink_to, true);
            tx.set_job(Job::message(Kind::ReadResp, sqe, hdr, rr.size, src));
            Next::Ready
        }
        Err(err) => {
            bad_request(qp, &e, err);
            Next::Again
        }
    }
}

/// The source of a Read Response: the requested memory, checked for
/// remote read, as the one SGE of a work request. Like siw, the QP's
/// access flags are not enforced here: rdma_cm leaves them 0 on the
/// active side of an iWARP connection; the memory's own rights are what
/// counts.
fn source_memory(
    qp: &Qp,
    rr: &ReadRequest,
    cache: &mut StagCache,
) -> core::result::Result<(Sqe, Src), RdmapError> {
    let mut sqe = empty_sqe();
    if rr.size == 0 {
        return Ok((sqe, Src::None));
    }
    let len = u64::from(rr.size);
    let need = access::REMOTE_READ;
    let mem = resolve(
        &qp.mem_xa,
        cache,
        rr.src_stag,
        qp.pd_id,
        rr.src_to,
        len,
        need,
    )
    .map_err(MemFault::read_error)?;
    sqe.sge[0] = Sge {
        addr: rr.src_to,
        length: rr.size,
        lkey: rr.src_stag,
    };
    Ok((sqe, Src::one(mem)))
}

/// A Read Request that cannot be answered: it leaves the inbound Read queue,
/// the consumer gets an access error event and the peer a TERMINATE with the
/// request's header.
fn bad_request(qp: &Qp, e: &InboundRead, err: RdmapError) {
    let rr = e.rr;
    crate::qp_warn!(
        qp.handle,
        "QP {}: bad Read Request (src {:#x} to {:#x} len {}): {:?}\n",
        qp.id(),
        rr.src_stag,
        rr.src_to,
        rr.size,
        err
    );
    qp.inbound_reads.lock().end_response();
    qp.handle.event(QpEvent::AccessError);
    let (h, n) = SegmentHeader::read_request(e.msn, rr).to_bytes();
    queue_terminate(qp, err.into(), h.get(..n), n as u16);
}
