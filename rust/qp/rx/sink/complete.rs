// SPDX-License-Identifier: GPL-2.0

//! The end of a DDP segment: what it completes. The last segment of a
//! Send completes its receive queue element (invalidating the STag of a
//! Send with Invalidate), the last of a Read Response the outbound Read queue
//! head; a Read Request goes to the inbound Read queue for the transmit side
//! to answer; a TERMINATE ends the stream.

use kernel::prelude::*;

use super::{Seg, Sink};
use crate::kif::siw::{Opcode, Status};
use crate::mem::access::invalidate_now;
use crate::qp::reads::{Inbound, InboundRead};
use crate::wire::{
    error::{ProtocolError, RdmapError},
    rdmap::{SegmentHeader, QN_READ_REQUEST, QN_SEND},
};

impl Sink<'_> {
    /// Completes what the segment carrying `hdr` finished.
    pub(super) fn end_segment(&mut self, hdr: &SegmentHeader) -> Result<(), ProtocolError> {
        match core::mem::replace(&mut self.state.seg, Seg::None) {
            Seg::Send { len, .. } => {
                if let Some(msg) = self.state.send.get_mut() {
                    msg.advance(len);
                }
                if hdr.ctrl.last() {
                    self.finish_send()?;
                }
                Ok(())
            }
            Seg::ReadResp { len, .. } => {
                let done = {
                    let mut outbound = self.qp.outbound_reads.lock();
                    match outbound.head_mut() {
                        Some(head) => {
                            head.placed = head.placed.saturating_add(len);
                            hdr.ctrl.last()
                        }
                        None => false,
                    }
                };
                if done {
                    self.finish_read()?;
                }
                Ok(())
            }
            Seg::ReadReq { request, msn } => self.queue_inbound(Inbound::Read(request), msn),
            Seg::Term => {
                self.act.terminated = true;
                Ok(())
            }
            Seg::Imm { value, solicited } => self.finish_immediate(value, solicited),
            Seg::AtomicReq { request, msn } => self.queue_inbound(Inbound::Atomic(request), msn),
            Seg::AtomicResp { orig } => self.finish_atomic(orig),
            Seg::Write { .. } | Seg::None => Ok(()),
        }
    }

    /// A request of queue 1 (a Read Request or an Atomic Request, which
    /// share IRD) with MSN `msn` is complete: into the inbound Read queue,
    /// for the transmit side to answer in order; past IRD the stream
    /// fails.
    fn queue_inbound(&mut self, request: Inbound, msn: u32) -> Result<(), ProtocolError> {
        self.state.msns.advance(QN_READ_REQUEST);
        let read = InboundRead { request, msn };
        if !self.qp.inbound_reads.lock().push(read, &self.qp.lockfree) {
            crate::qp_warn!(self.qp.handle, "QP {}: IRD exceeded\n", self.qp.id());
            return Err(RdmapError::CatastrophicStream.into());
        }
        self.act.wake_tx = true;
        Ok(())
    }

    /// Completes the Send in progress.
    pub(super) fn finish_send(&mut self) -> Result<(), ProtocolError> {
        // Completed in place; the slot is emptied at the end.
        let state = &mut *self.state;
        let Some(msg) = state.send.get_mut() else {
            return Ok(());
        };
        state.msns.advance(QN_SEND);
        let result = match msg.finish(self.qp) {
            Err(err) => {
                // Completed after the TERMINATE is queued (see
                // `Actions::run`).
                self.act.failed = Some((*msg.rqe(), msg.placed(), Status::RemInvReqErr));
                Err(err.into())
            }
            Ok(inval) => {
                let _ = self
                    .qp
                    .complete_rqe(msg.rqe(), msg.placed(), inval, Status::Success);
                Ok(())
            }
        };
        state.send.end();
        result
    }

    /// Completes the outbound Read queue head (its Read Response is
    /// complete).
    fn finish_read(&mut self) -> Result<(), ProtocolError> {
        let (read, stalled) = self.qp.outbound_reads.lock().pop_wake();
        // Wake the transmit work only if it waits for this ORD slot (or
        // the fence): most Reads complete with nothing queued behind.
        self.act.wake_tx |= stalled;
        let Some(read) = read else { return Ok(()) };
        let mut status = Status::Success;
        if read.opcode == Opcode::ReadLocalInv {
            if invalidate_now(&self.qp.mem_xa, self.qp.pd_id, read.sink.lkey).is_err() {
                status = Status::GeneralErr;
            }
        }
        let _ = self.qp.complete_wr(read.wr(), read.placed, status);
        if status != Status::Success {
            return Err(RdmapError::LocalCatastrophic.into());
        }
        Ok(())
    }
}
