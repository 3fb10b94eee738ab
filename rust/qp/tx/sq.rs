// SPDX-License-Identifier: GPL-2.0

//! The send queue's work requests as transmit jobs: the next send queue
//! element is taken in order (read fence honoured); a Send or Write
//! becomes the message to transmit, an RDMA Read goes to
//! [`read`](super::read), local operations (invalidate, fast registration)
//! complete at once, and a work request that cannot be carried out
//! completes in error and terminates the connection.
//!
//! As in siw, a work request's slot goes back to the producer as soon as
//! the transmit side took its copy (libsiw rings the doorbell only when
//! the slot before its new work is free).

use kernel::sync::Arc;

use super::job::{Job, Kind, Src};
use super::state::TxState;
use super::{queue_terminate, Next};
use crate::kif::{
    rdma::handle::QpEvent,
    siw::{self, Sqe, Status, WqeFlags, MAX_INLINE, MAX_SGE},
};
use crate::mem::access::{self, invalidate_wait, resolve, StagCache};
use crate::mem::MemKind;
use crate::qp::reads::WrRef;
use crate::qp::Qp;
use crate::wire::{
    error::RdmapError,
    rdmap::{Opcode, SegmentHeader, QN_SEND},
};

/// Takes the next send queue element.
pub(super) fn next_job(qp: &Arc<Qp>, tx: &mut TxState) -> Next {
    // The slot after the last one this function took is the next one
    // unless a flush moved on (then `claim` fails and we look again).
    let idx = match tx.take_sq_next() {
        Some(i) => i,
        None => qp.inner.lock().sq_get(),
    };
    let flags = qp.sq.flags(idx);
    if !flags.contains(WqeFlags::VALID) || (flags.contains(WqeFlags::READ_FENCE) && fenced(qp)) {
        tx.set_sq_next(idx);
        return Next::Idle;
    }
    // Copied into the job's slot, where a Send or Write is sent from.
    let sqe = &mut tx.slot().job.sqe;
    qp.sq.read_into(idx, flags, sqe);
    match sqe.opcode.get() {
        Ok(siw::Opcode::Send | siw::Opcode::SendRemoteInv | siw::Opcode::Write) => {
            send_or_write(qp, tx, idx)
        }
        Ok(op @ (siw::Opcode::Read | siw::Opcode::ReadLocalInv)) => {
            let sqe = *sqe;
            super::read::request_job(qp, tx, idx, sqe, op)
        }
        Ok(op @ (siw::Opcode::FetchAdd | siw::Opcode::CmpSwap)) => {
            let sqe = *sqe;
            super::atomic::request_job(qp, tx, idx, sqe, op)
        }
        Ok(siw::Opcode::InvalStag) => {
            let ok = invalidate(qp, sqe);
            complete_local(qp, idx, sqe, ok);
            Next::Again
        }
        Ok(siw::Opcode::RegMr) => {
            let ok = reg_mr(qp, sqe);
            complete_local(qp, idx, sqe, ok);
            Next::Again
        }
        Ok(siw::Opcode::SendWithImm | siw::Opcode::Receive | siw::Opcode::ReadResponse)
        | Err(_) => {
            local_error(qp, idx, sqe, Status::LocQpOpErr);
            Next::Again
        }
    }
}

/// Whether a read-fenced work request must wait: RDMA Reads are still
/// outstanding. The Read Response that empties the outbound Read queue
/// resumes it.
fn fenced(qp: &Qp) -> bool {
    qp.outbound_reads.lock().fence_waits()
}

/// A Send or Write (its element in the job's slot): checks its payload,
/// numbers a Send, takes its send queue slot `idx` and makes it the
/// message to transmit (the active work request).
fn send_or_write(qp: &Arc<Qp>, tx: &mut TxState, idx: u32) -> Next {
    let mut slot = tx.slot();
    let (src, total) = match source(qp, slot.job, slot.stags) {
        Ok(payload) => payload,
        Err(status) => {
            slot.job.release();
            local_error(qp, idx, &slot.job.sqe, status);
            return Next::Again;
        }
    };
    let sqe = &slot.job.sqe;
    let hdr = if sqe.opcode == siw::Opcode::Write {
        SegmentHeader::write(sqe.rkey, sqe.raddr, true)
    } else {
        let opc = match (
            sqe.opcode == siw::Opcode::SendRemoteInv,
            sqe.flags.contains(WqeFlags::SOLICITED),
        ) {
            (false, false) => Opcode::Send,
            (false, true) => Opcode::SendSe,
            (true, false) => Opcode::SendInvalidate,
            (true, true) => Opcode::SendSeInvalidate,
        };
        SegmentHeader::send(opc, sqe.rkey, slot.next_msn(QN_SEND), 0, true)
    };
    if !claim(qp, idx, Some(WrRef::of(&slot.job.sqe))) {
        slot.job.release();
        return Next::Again;
    }
    match crate::qp::imm::of_sqe(&slot.job.sqe, qp.kernel) {
        None => slot.job.set(Kind::Wr, hdr, total, src),
        Some(data) => super::imm::set_write(&mut slot, data, hdr, total, src),
    }
    tx.set_sq_next(idx.wrapping_add(1));
    tx.begin_job();
    Next::Ready
}

/// The payload of the Send or Write in `job`'s element: its inline data
/// or its checked SGL, put in place in `job`, and its length; else the
/// completion status of the failure (`job` may then hold some of the
/// SGL's references, see [`Job::release`]).
fn source(
    qp: &Qp,
    job: &mut Job,
    cache: &mut StagCache,
) -> core::result::Result<(Src, u32), Status> {
    if !job.sqe.flags.contains(WqeFlags::INLINE) {
        return resolve_sgl(qp, job, 0, cache);
    }
    let len = job.sqe.sge[0].length;
    if len as usize > MAX_INLINE {
        return Err(Status::LocLenErr);
    }
    job.inline = job.sqe.inline_data();
    Ok((Src::Inline, len))
}

/// Resolves and checks the local SGL of the work request in `job`
/// (`need`: access rights needed on the memory) into `job`'s memory
/// references. Returns the source and the total length.
fn resolve_sgl(
    qp: &Qp,
    job: &mut Job,
    need: u32,
    cache: &mut StagCache,
) -> core::result::Result<(Src, u32), Status> {
    let num_sge = usize::from(job.sqe.num_sge);
    if num_sge > MAX_SGE || num_sge > qp.caps.sq_max_sge.max(1) as usize {
        return Err(Status::LocQpOpErr);
    }
    // From here on `release` drops what was resolved, also on an error.
    job.src = Src::Sgl(num_sge);
    let mut total = 0u32;
    let sges = job.sqe.sge.iter().zip(job.mems.iter_mut());
    for (sge, slot) in sges.take(num_sge) {
        total = total.checked_add(sge.length).ok_or(Status::LocLenErr)?;
        if sge.length == 0 {
            continue;
        }
        let len = u64::from(sge.length);
        let mem = resolve(&qp.mem_xa, cache, sge.lkey, qp.pd_id, sge.addr, len, need)
            .map_err(Status::from)?;
        *slot = Some(mem);
    }
    Ok((Src::Sgl(num_sge), total))
}

/// Local Invalidate of the STag in `rkey`; `false` when it names no
/// memory of the QP's PD that may be invalidated. It completes only once
/// no transfer is inside the memory (a Write being placed into it, a Read
/// Response being sent from it, on any QP): the consumer may reuse the
/// memory as soon as it sees the completion.
fn invalidate(qp: &Qp, sqe: &Sqe) -> bool {
    invalidate_wait(&qp.mem_xa, qp.pd_id, sqe.rkey).is_ok()
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
    if mem.pd_id != qp.pd_id || mem.is_valid() {
        return false;
    }
    if !matches!(mem.kind, MemKind::Pbl(_)) {
        return false;
    }
    // Invalid, so nobody enters; a transfer of the last registration may
    // still be inside (the invalidation that ended it could not wait).
    mem.wait_idle();
    // IOVA and length as the consumer set them before posting (as siw,
    // which reloads them from the ib_mr here): the page offset is the one
    // `ib_map_mr_sg` mapped, the upper bits may differ.
    mem.va.set(sqe.sge[1].addr);
    mem.len.set(u64::from(sqe.sge[1].length));
    mem.access.store(
        sqe.access as u32 & access::IWARP_MASK,
        core::sync::atomic::Ordering::Release,
    );
    mem.gate.open((sqe.rkey & 0xff) as u8).is_ok()
}

/// Takes the work request in send queue slot `idx` (as siw, the slot goes
/// back to the producer as soon as the transmit side has its copy, which
/// libsiw's doorbell logic relies on); `active` becomes the work request
/// in transmission. `false` when the slot was flushed meanwhile.
fn claim(qp: &Qp, idx: u32, active: Option<WrRef>) -> bool {
    if !qp.inner.lock().take_sq_slot(idx, active) {
        return false;
    }
    qp.sq.give_back(idx);
    true
}

/// Takes slot `idx` and completes its work request at once.
fn complete_now(qp: &Qp, idx: u32, sqe: &Sqe, status: Status) {
    if claim(qp, idx, None) {
        let _ = qp.complete_wr(WrRef::of(sqe), 0, status);
    }
}

/// Completes the local operation in slot `idx`: at once when it
/// succeeded (`ok`), else as a local error.
fn complete_local(qp: &Qp, idx: u32, sqe: &Sqe, ok: bool) {
    if ok {
        complete_now(qp, idx, sqe, Status::Success);
    } else {
        local_error(qp, idx, sqe, Status::LocQpOpErr);
    }
}

/// A local error on the work request in slot `idx`: complete it with
/// `status`, report a fatal event and terminate the connection.
#[cold]
pub(super) fn local_error(qp: &Qp, idx: u32, sqe: &Sqe, status: Status) {
    crate::qp_warn!(
        qp.handle,
        "QP {}: work request (opcode {}, {} SGEs) failed: status {}\n",
        qp.id(),
        sqe.opcode.octet(),
        sqe.num_sge,
        u16::from(status)
    );
    complete_now(qp, idx, sqe, status);
    qp.handle.event(QpEvent::Fatal);
    queue_terminate(qp, RdmapError::LocalCatastrophic.into(), None, 0);
}
