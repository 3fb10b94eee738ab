// SPDX-License-Identifier: GPL-2.0

//! Receiving RFC 7306 atomics (see [`crate::qp::atomic`]), kernel QPs
//! only (see `rx::start`). Each message is one segment of exactly its
//! header (MO 0, L set, no payload).
//!
//! - An Atomic Request is the next message of queue 1, in order with the
//!   Read Requests: once its segment ended (CRC checked) it goes to the
//!   inbound Read queue, counted against IRD, and the transmit side
//!   carries it out and answers it in order (`tx::atomic`).
//! - An Atomic Response is the next message of queue 3 and answers the
//!   outbound Read queue head, which must be an atomic with its Request
//!   Identifier (responses come in request order); when the segment ended
//!   the original value is placed into the atomic's 8-octet sink and the
//!   work request completes.

use super::{Seg, Sink};
use crate::kif::siw::Status;
use crate::qp::atomic::ATOMIC_LEN;
use crate::wire::{
    error::{ProtocolError, RdmapError},
    rdmap::{Body, SegmentHeader, QN_ATOMIC_RESPONSE, QN_READ_REQUEST},
    rfc7306::check_segment,
};

impl Sink<'_> {
    /// An Atomic Request segment: checks its queue order and that it is
    /// one whole message.
    pub(super) fn atomic_req_header(
        &mut self,
        hdr: &SegmentHeader,
        plen: u32,
    ) -> Result<(), ProtocolError> {
        let untagged = hdr.untagged_hdr().ok_or(RdmapError::UnexpectedOpcode)?;
        self.state.msns.check(QN_READ_REQUEST, untagged.msn)?;
        check_segment(untagged.mo, plen, hdr.ctrl.last())?;
        let Body::AtomicRequest(request) = hdr.body else {
            return Err(RdmapError::UnexpectedOpcode.into());
        };
        self.state.seg = Seg::AtomicReq {
            request,
            msn: untagged.msn,
        };
        Ok(())
    }

    /// An Atomic Response segment: checks its queue order, that it is one
    /// whole message and that it answers the outbound Read queue head.
    /// With nothing outstanding: "invalid MSN, no buffer available"; a
    /// Read Response due, or another Request Identifier: an unexpected
    /// response.
    pub(super) fn atomic_resp_header(
        &mut self,
        hdr: &SegmentHeader,
        plen: u32,
    ) -> Result<(), ProtocolError> {
        let untagged = hdr.untagged_hdr().ok_or(RdmapError::UnexpectedOpcode)?;
        self.state.msns.check(QN_ATOMIC_RESPONSE, untagged.msn)?;
        check_segment(untagged.mo, plen, hdr.ctrl.last())?;
        let Body::AtomicResponse(resp) = hdr.body else {
            return Err(RdmapError::UnexpectedOpcode.into());
        };
        resp.check_head(self.qp.outbound_reads.lock().head_kind())?;
        self.state.seg = Seg::AtomicResp { orig: resp.orig };
        Ok(())
    }

    /// The Atomic Response segment ended: places the original value
    /// `orig` into the head atomic's sink (host byte order) and completes
    /// it; the transmit work resumes if it waited for the ORD slot.
    pub(super) fn finish_atomic(&mut self, orig: u64) -> Result<(), ProtocolError> {
        self.state.msns.advance(QN_ATOMIC_RESPONSE);
        let (atomic, stalled) = self.qp.outbound_reads.lock().pop_wake();
        self.act.wake_tx |= stalled;
        let Some(atomic) = atomic else { return Ok(()) };
        let placed = atomic
            .mem
            .as_ref()
            .is_some_and(|mem| mem.write(atomic.sink.addr, &orig.to_ne_bytes()).is_ok());
        let status = if placed {
            Status::Success
        } else {
            Status::LocProtErr
        };
        let _ = self.qp.complete_wr(atomic.wr(), ATOMIC_LEN, status);
        if !placed {
            return Err(RdmapError::LocalCatastrophic.into());
        }
        Ok(())
    }
}
