// SPDX-License-Identifier: GPL-2.0

//! RDMA Read as transmit jobs: an outbound Read's Read Request (the work
//! request moves to the outbound Read queue, within ORD, before its request
//! is sent; it completes when the Read Response arrives) and the Read
//! Response that answers an inbound Read Request from the inbound Read queue
//! (its source memory checked first; a bad request is answered with a
//! TERMINATE).

use kernel::sync::Arc;

use super::job::{Job, Kind, Src};
use super::sq::local_error;
use super::state::TxState;
use super::{queue_terminate, Next};
use crate::kif::{
    rdma::handle::QpEvent,
    siw::{Opcode, Sge, Sqe, Status},
};
use crate::mem::access::{self, resolve, MemFault, MemRef, StagCache};
use crate::qp::reads::OutboundRead;
use crate::qp::Qp;
use crate::wire::{
    error::RdmapError,
    rdmap::{ReadRequest, SegmentHeader, QN_READ_REQUEST},
};

/// An RDMA Read from send queue slot `idx`: ORD check, sink check, into
/// the outbound Read queue, slot back; its Read Request becomes the message
/// to transmit.
/// `opcode` is the element's opcode, [`Opcode::Read`] or
/// [`Opcode::ReadLocalInv`].
#[inline(never)]
pub(super) fn request_job(
    qp: &Arc<Qp>,
    tx: &mut TxState,
    idx: u32,
    sqe: Sqe,
    opcode: Opcode,
) -> Next {
    if sqe.num_sge > 1 || (opcode == Opcode::ReadLocalInv && !qp.kernel) {
        local_error(qp, idx, &sqe, Status::LocQpOpErr);
        return Next::Again;
    }
    let sink = if sqe.num_sge == 1 {
        sqe.sge[0]
    } else {
        Sge::default()
    };
    let mem = match sink_memory(qp, &sink, tx.slot().stags) {
        Ok(mem) => mem,
        Err(status) => {
            local_error(qp, idx, &sqe, status);
            return Next::Again;
        }
    };
    let read = OutboundRead {
        id: sqe.id,
        flags: sqe.flags,
        opcode,
        sink,
        mem,
        placed: 0,
        req_id: 0,
    };
    if let Some(next) = queue_outbound(qp, tx, idx, &sqe, read) {
        return next;
    }
    qp.sq.give_back(idx);
    let request = ReadRequest {
        sink_stag: sink.lkey,
        sink_to: sink.addr,
        size: sink.length,
        src_stag: sqe.rkey,
        src_to: sqe.raddr,
    };
    let mut slot = tx.slot();
    let hdr = SegmentHeader::read_request(slot.next_msn(QN_READ_REQUEST), request);
    slot.job.set(Kind::ReadReq, hdr, 0, Src::None);
    tx.begin_job();
    Next::Ready
}

/// The memory a Read's response is placed into, checked for local write
/// (none for a zero length Read); else the completion status.
pub(super) fn sink_memory(
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

/// Moves `read` (an RDMA Read or an Atomic Request, whose queue and ORD
/// it shares) from send queue slot `idx`, holding `sqe`, into the
/// outbound Read queue. `None` when it is there; else what the send queue
/// does next (with ORD 0 the request completes with a local QP error).
pub(super) fn queue_outbound(
    qp: &Qp,
    tx: &mut TxState,
    idx: u32,
    sqe: &Sqe,
    read: OutboundRead,
) -> Option<Next> {
    match into_outbound_reads(qp, tx, idx, read) {
        Queued::Yes => None,
        Queued::Flushed => Some(Next::Again),
        Queued::OrdFull => Some(Next::Idle),
        Queued::NoOrd => {
            local_error(qp, idx, sqe, Status::LocQpOpErr);
            Some(Next::Again)
        }
    }
}

/// Moves `read` from send queue slot `idx` into the outbound Read queue
/// and takes the slot, atomically with respect to flushes.
fn into_outbound_reads(qp: &Qp, tx: &mut TxState, idx: u32, read: OutboundRead) -> Queued {
    let mut inner = qp.inner.lock();
    if inner.sq_get() != idx {
        return Queued::Flushed;
    }
    let mut outbound = qp.outbound_reads.lock();
    if outbound.capacity() == 0 {
        return Queued::NoOrd;
    }
    if !outbound.push(read) {
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
pub(super) fn response_job(qp: &Qp, tx: &mut TxState, request: ReadRequest, msn: u32) -> Next {
    let slot = tx.slot();
    match source_memory(qp, &request, slot.job, slot.stags) {
        Ok(src) => {
            let hdr = SegmentHeader::read_response(request.sink_stag, request.sink_to, true);
            slot.job.set(Kind::ReadResp, hdr, request.size, src);
            tx.begin_job();
            Next::Ready
        }
        Err(err) => {
            bad_request(qp, request, msn, err);
            Next::Again
        }
    }
}

/// The source of a Read Response: the requested memory, checked for
/// remote read, put in place in `job` as the one SGE of a work request.
/// Like siw, the QP's access flags are not enforced here: rdma_cm leaves
/// them 0 on the active side of an iWARP connection; the memory's own
/// rights are what counts.
fn source_memory(
    qp: &Qp,
    request: &ReadRequest,
    job: &mut Job,
    cache: &mut StagCache,
) -> core::result::Result<Src, RdmapError> {
    if request.size == 0 {
        return Ok(Src::None);
    }
    let len = u64::from(request.size);
    let need = access::REMOTE_READ;
    let mem = resolve(
        &qp.mem_xa,
        cache,
        request.src_stag,
        qp.pd_id,
        request.src_to,
        len,
        need,
    )
    .map_err(MemFault::read_error)?;
    job.sqe.sge[0] = Sge {
        addr: request.src_to,
        length: request.size,
        lkey: request.src_stag,
    };
    job.mems[0] = Some(mem);
    Ok(Src::Sgl(1))
}

/// A Read Request that cannot be answered: it leaves the inbound Read queue,
/// the consumer gets an access error event and the peer a TERMINATE with the
/// request's header.
fn bad_request(qp: &Qp, request: ReadRequest, msn: u32, err: RdmapError) {
    crate::qp_warn!(
        qp.handle,
        "QP {}: bad Read Request (src {:#x} to {:#x} len {}): {:?}\n",
        qp.id(),
        request.src_stag,
        request.src_to,
        request.size,
        err
    );
    qp.handle.event(QpEvent::AccessError);
    let (header, len) = SegmentHeader::read_request(msn, request).to_bytes();
    queue_terminate(qp, err.into(), header.get(..len), len as u16);
}
