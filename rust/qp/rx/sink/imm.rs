// SPDX-License-Identifier: GPL-2.0

//! Receiving Immediate Data (RFC 7306 section 6, see
//! [`crate::qp::imm`]): a message of queue 0, in order with the Sends,
//! of exactly its 8 octets in one segment. It consumes the next receive
//! queue element, which completes as `IB_WC_RECV_RDMA_WITH_IMM` with no
//! octets placed, solicited for Immediate Data with SE. The element is
//! taken when the segment ends (its CRC checked), so that a segment that
//! fails before leaves it posted.
//!
//! Only kernel QPs decode the RFC 7306 opcodes (see `rx::start`); the
//! Atomic messages are received in [`super::atomic`].

use super::{Seg, Sink};
use crate::kif::siw::WqeFlags;
use crate::qp::imm::value_of;
use crate::wire::{
    error::{DdpError, ProtocolError, RdmapError},
    rdmap::{Body, SegmentHeader, QN_SEND},
    rfc7306::check_segment,
};

impl Sink<'_> {
    /// An Immediate Data (with SE) segment: checks its queue order and
    /// that it is one whole message.
    pub(super) fn immediate_header(
        &mut self,
        hdr: &SegmentHeader,
        plen: u32,
    ) -> Result<(), ProtocolError> {
        let untagged = hdr.untagged_hdr().ok_or(RdmapError::UnexpectedOpcode)?;
        self.state.msns.check(QN_SEND, untagged.msn)?;
        if self.state.send.is_active() {
            // A Send's segments are still due at this MSN.
            return Err(DdpError::UntaggedInvalidMo.into());
        }
        check_segment(untagged.mo, plen, hdr.ctrl.last())?;
        let Body::Immediate(data) = hdr.body else {
            return Err(RdmapError::UnexpectedOpcode.into());
        };
        self.state.seg = Seg::Imm {
            value: value_of(data),
            solicited: hdr.opcode == crate::wire::rdmap::Opcode::ImmediateDataSe,
        };
        Ok(())
    }

    /// The Immediate Data segment ended: consumes and completes the next
    /// receive.
    pub(super) fn finish_immediate(
        &mut self,
        value: u32,
        solicited: bool,
    ) -> Result<(), ProtocolError> {
        if !self.take_rqe() {
            return Err(DdpError::UntaggedMsnNoBuffer.into());
        }
        self.state.msns.advance(QN_SEND);
        let mut rqe = *self.state.send.rqe_slot();
        if solicited {
            rqe.flags |= WqeFlags::SOLICITED;
        }
        let _ = self.qp.complete_rqe_imm(&rqe, value);
        Ok(())
    }
}
