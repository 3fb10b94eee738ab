// SPDX-License-Identifier: GPL-2.0

//! RFC 7306 atomics as transmit jobs, for kernel QPs (see
//! [`crate::qp::atomic`]): an outbound atomic's Atomic Request (the work
//! request moves to the outbound Read queue, sharing ORD and queue 1's
//! MSNs with the RDMA Reads, before its request is sent; it completes
//! when its Atomic Response arrives), and the Atomic Response that
//! answers an inbound Atomic Request from the inbound Read queue, in
//! order with the Read Responses (IRD counts both): the target checked
//! and the operation carried out on it right before its response is
//! built; a bad request is answered with a TERMINATE.

use kernel::sync::Arc;

use super::job::{Kind, Src};
use super::read::{queue_outbound, sink_memory};
use super::sq::local_error;
use super::state::TxState;
use super::{queue_terminate, Next};
use crate::kif::{
    rdma::handle::QpEvent,
    siw::{Opcode, Sqe, Status},
};
use crate::mem::access::{self, resolve, MemFault};
use crate::qp::atomic::{of_sqe, ATOMIC_LEN};
use crate::qp::reads::OutboundRead;
use crate::qp::Qp;
use crate::wire::{
    error::RdmapError,
    rdmap::{SegmentHeader, QN_ATOMIC_RESPONSE, QN_READ_REQUEST},
    rfc7306::{AtomicRequest, AtomicResponse},
};

/// An atomic from send queue slot `idx` (of a kernel QP; `opcode` is
/// [`Opcode::FetchAdd`] or [`Opcode::CmpSwap`]): ORD check, sink check
/// (8 octets, local write), into the outbound Read queue, slot back; its
/// Atomic Request, whose Request Identifier is its queue 1 MSN, becomes
/// the message to transmit.
#[inline(never)]
pub(super) fn request_job(
    qp: &Arc<Qp>,
    tx: &mut TxState,
    idx: u32,
    sqe: Sqe,
    opcode: Opcode,
) -> Next {
    let sink = sqe.sge[0];
    if !qp.kernel || sqe.num_sge != 1 || sink.length != ATOMIC_LEN {
        local_error(qp, idx, &sqe, Status::LocQpOpErr);
        return Next::Again;
    }
    let mem = match sink_memory(qp, &sink, tx.slot().stags) {
        Ok(mem) => mem,
        Err(status) => {
            local_error(qp, idx, &sqe, status);
            return Next::Again;
        }
    };
    // The MSN is taken only once the request is queued (below): peek it.
    let msn = tx.slot().peek_msn(QN_READ_REQUEST);
    let atomic = OutboundRead {
        id: sqe.id,
        flags: sqe.flags,
        opcode,
        sink,
        mem,
        placed: 0,
        req_id: msn,
    };
    if let Some(next) = queue_outbound(qp, tx, idx, &sqe, atomic) {
        return next;
    }
    qp.sq.give_back(idx);
    let mut slot = tx.slot();
    let msn = slot.next_msn(QN_READ_REQUEST);
    let hdr = SegmentHeader::atomic_request(msn, of_sqe(&sqe, msn));
    slot.job.set(Kind::ReadReq, hdr, 0, Src::None);
    tx.begin_job();
    Next::Ready
}

/// Answers an inbound Atomic Request `req` (MSN `msn`): checks the target
/// (remote atomic access, bounds, 8-aligned), carries out the operation
/// on it and makes the Atomic Response the message to transmit, or
/// answers a bad request with a TERMINATE.
#[inline(never)]
pub(super) fn response_job(qp: &Qp, tx: &mut TxState, req: AtomicRequest, msn: u32) -> Next {
    let mut slot = tx.slot();
    match perform(qp, &req, slot.stags) {
        Ok(orig) => {
            let resp = AtomicResponse {
                req_id: req.req_id,
                orig,
            };
            let hdr = SegmentHeader::atomic_response(slot.next_msn(QN_ATOMIC_RESPONSE), resp);
            slot.job.set(Kind::ReadResp, hdr, 0, Src::None);
            tx.begin_job();
            Next::Ready
        }
        Err(err) => {
            bad_request(qp, &req, msn, err);
            Next::Again
        }
    }
}

/// Checks the target of `req` and carries out the operation on it (see
/// [`crate::mem::access::MemRef::atomic`]): the target's value before.
/// Like Read Requests, the memory's own rights count (remote atomic),
/// not the QP's access flags.
fn perform(
    qp: &Qp,
    req: &AtomicRequest,
    cache: &mut access::StagCache,
) -> core::result::Result<u64, RdmapError> {
    // The request itself first (its AOpCode, an aligned target), then
    // the target's STag, rights and bounds.
    req.check(req.to)?;
    let need = access::REMOTE_ATOMIC;
    let len = u64::from(ATOMIC_LEN);
    let mem = resolve(&qp.mem_xa, cache, req.stag, qp.pd_id, req.to, len, need)
        .map_err(MemFault::read_error)?;
    mem.atomic(req.to, |v| req.apply(v).unwrap_or(v))
        .map_err(|fault| match fault {
            // The word's kernel address is misaligned although its
            // tagged offset is not (a user region mapped off by a few
            // octets): the misaligned target's error.
            MemFault::Copy => RdmapError::CatastrophicStream,
            other => other.read_error(),
        })
}

/// An Atomic Request that cannot be carried out: it leaves the inbound
/// Read queue, the consumer gets an access error event and the peer a
/// TERMINATE with the request's header; the QP goes to error.
fn bad_request(qp: &Qp, req: &AtomicRequest, msn: u32, err: RdmapError) {
    crate::qp_warn!(
        qp.handle,
        "QP {}: bad Atomic Request (opcode {} stag {:#x} to {:#x}): {:?}\n",
        qp.id(),
        req.aopcode,
        req.stag,
        req.to,
        err
    );
    qp.handle.event(QpEvent::AccessError);
    let (header, len) = SegmentHeader::atomic_request(msn, *req).to_bytes();
    queue_terminate(qp, err.into(), header.get(..len), len as u16);
}
