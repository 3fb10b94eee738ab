// SPDX-License-Identifier: GPL-2.0

//! The placement sink: the deframer's consumer, which checks each DDP
//! segment's header against the QP (MSNs, MOs, STags, the outbound Read queue
//! head) and places its payload: tagged segments into the registered memory
//! the STag names or the Read's sink, untagged ones into the receive queue
//! element of the Send in progress. What a segment completes is in
//! [`complete`].

use kernel::prelude::*;

use super::actions::Actions;
use super::msg::{RecvCompletion, RecvMsg};
use crate::mem::access::{self, resolve, MemFault, MemRef, StagCache};
use crate::qp::Qp;
use crate::wire::{
    error::{DdpError, ProtocolError, RdmapError},
    inbound::{check_read_request, ExpectedMsns, HeaderCopy, ReadSink},
    rdmap::{
        Body, Extensions, HeaderView, Opcode, ReadRequest, SegmentHeader, QN_READ_REQUEST, QN_SEND,
    },
    rfc7306::{check_read_response_head, AtomicRequest},
    rx::{CrcVerdict, FpduInfo, RxSink},
};

mod atomic;
mod complete;
mod imm;

/// What the payload of the current segment goes to.
enum Seg {
    /// Nothing (no payload expected, or discarded).
    None,
    /// The Send in progress, at message offset `mo`.
    Send { mo: u32, len: u32 },
    /// An RDMA Write to `mem` at tagged offset `to`.
    Write { mem: MemRef, to: u64 },
    /// An RDMA Read Response to the outbound Read queue head's sink.
    ReadResp {
        mem: Option<MemRef>,
        to: u64,
        len: u32,
    },
    /// An RDMA Read Request (queued when its FPDU is complete).
    ReadReq { request: ReadRequest, msn: u32 },
    /// A TERMINATE from the peer.
    Term,
    /// Immediate Data (with SE): consumes a receive when it ends.
    Imm { value: u32, solicited: bool },
    /// An Atomic Request (queued when its FPDU is complete).
    AtomicReq { request: AtomicRequest, msn: u32 },
    /// An Atomic Response: the original value for the outbound Read
    /// queue head's sink.
    AtomicResp { orig: u64 },
}

/// Per-connection receive state besides the deframers: what the sink
/// keeps between segments.
pub(super) struct SinkState {
    /// The MSN the next message must carry, per untagged queue.
    msns: ExpectedMsns,
    send: RecvMsg,
    seg: Seg,
    /// The current segment's header (for a TERMINATE).
    hdr: HeaderCopy,
    /// Peer-to-peer responder: the first FPDU is the initiator's RTR
    /// (only the first: cleared at its end, whatever it was).
    await_rtr: bool,
    /// The last STag looked up for placement.
    stags: StagCache,
}

impl SinkState {
    /// The state of a new connection with the RDMAP extensions `ext`
    /// (RFC 7306 adds queue 3); `await_rtr`: see
    /// [`SinkState::await_rtr`].
    pub(super) const fn new(await_rtr: bool, ext: Extensions) -> Self {
        Self {
            msns: ExpectedMsns::with(ext),
            send: RecvMsg::new(),
            seg: Seg::None,
            hdr: HeaderCopy::new(),
            await_rtr,
            stags: StagCache::new(),
        }
    }

    /// The sink for one `push` on `qp`, taking receive queue elements at
    /// `rq_get` and collecting what to do after the lock in `act`.
    pub(super) fn sink<'a>(
        &'a mut self,
        qp: &'a Qp,
        rq_get: &'a mut u32,
        act: &'a mut Actions,
    ) -> Sink<'a> {
        Sink {
            qp,
            state: self,
            rq_get,
            act,
        }
    }

    /// A peer-to-peer responder received its first FPDU, which was not
    /// the Send RTR the sink recognises: that FPDU is the RTR. Returns
    /// whether it still waited for it (once).
    pub(super) fn take_await_rtr(&mut self) -> bool {
        core::mem::replace(&mut self.await_rtr, false)
    }

    /// The stream failed with `err`: collects the TERMINATE to send (with
    /// the header of the segment at fault, or else `rejected`, one that
    /// failed the deframer's own checks) and the receive to complete.
    #[cold]
    pub(super) fn fail(&mut self, rejected: Option<&[u8]>, act: &mut Actions, err: ProtocolError) {
        // A Send that failed locally completes with its own status (any
        // other one in progress is flushed when the QP goes to error).
        if self.send.failed() {
            act.failed = self.send.end();
        }
        act.error = Some((err, self.hdr.or_rejected(rejected)));
    }

    /// The stream failed in an FPDU of which nothing was parsed: there is
    /// no header to report.
    pub(super) fn forget_header(&mut self) {
        self.hdr.reset();
    }

    /// Ends the receive in progress (the QP is going to error).
    pub(super) fn flush_active(&mut self) -> Option<RecvCompletion> {
        self.seg = Seg::None;
        self.send.end()
    }
}

/// The deframer's consumer for one `push`.
pub(super) struct Sink<'a> {
    qp: &'a Qp,
    state: &'a mut SinkState,
    rq_get: &'a mut u32,
    act: &'a mut Actions,
}

/// Logs a TERMINATE received (the stream ends with it).
#[cold]
fn report_terminate(qp: &Qp, hdr: &SegmentHeader) {
    if let Body::Terminate(term) = hdr.body {
        qp.note_terminate(true, term.code);
        crate::qp_warn!(
            qp.handle,
            "QP {}: TERMINATE received: layer {} etype {} code {:#x} (siw layout: layer {} etype {})\n",
            qp.id(),
            term.code.layer,
            term.code.etype,
            term.code.code,
            term.code.etype,
            term.code.layer
        );
    }
}

impl Sink<'_> {
    /// Takes the next receive queue element (own RQ or SRQ) into the
    /// Send message's slot.
    fn take_rqe(&mut self) -> bool {
        let dst = self.state.send.rqe_slot();
        if let Some(srq) = &self.qp.srq {
            return srq.take_into(dst);
        }
        match &self.qp.rq {
            Some(rq) => rq.take_into(self.rq_get, dst),
            None => false,
        }
    }

    /// A Send segment: the next message of queue 0 in order, the first
    /// segment of a message taking a receive queue element.
    fn send_header(&mut self, hdr: &SegmentHeader, plen: u32) -> Result<(), ProtocolError> {
        let untagged = hdr.untagged_hdr().ok_or(RdmapError::UnexpectedOpcode)?;
        self.state.msns.check(QN_SEND, untagged.msn)?;
        if self.state.await_rtr
            && plen == 0
            && untagged.mo == 0
            && hdr.ctrl.last()
            && !self.state.send.is_active()
        {
            // The peer-to-peer Send RTR (RFC 6581): part of the
            // connection setup, it takes its MSN but no receive.
            self.state.msns.advance(QN_SEND);
            self.state.seg = Seg::None;
            self.state.await_rtr = false;
            self.act.rtr = true;
            return Ok(());
        }
        if !self.state.send.is_active() {
            self.state.send.check_mo(untagged.mo)?;
            if !self.take_rqe() {
                return Err(DdpError::UntaggedMsnNoBuffer.into());
            }
            self.state
                .send
                .begin(self.qp, hdr.opcode, untagged.ulp, &mut self.state.stags)?;
        }
        let msg = &mut self.state.send;
        msg.check_mo(untagged.mo)?;
        msg.check_room(plen)?;
        self.state.seg = Seg::Send {
            mo: untagged.mo,
            len: plen,
        };
        Ok(())
    }

    /// An RDMA Write segment: into the registered memory its STag names.
    fn write_header(&mut self, hdr: &SegmentHeader, plen: u32) -> Result<(), ProtocolError> {
        let tagged = hdr.tagged_hdr().ok_or(RdmapError::UnexpectedOpcode)?;
        if plen == 0 && hdr.ctrl.last() {
            // A zero length Write places nothing; its STag is not checked
            // (as siw; the peer-to-peer RTR is one, with STag 1).
            self.state.seg = Seg::None;
            return Ok(());
        }
        // The QP's access flags are not enforced (as in siw): see
        // `tx::read::response_job`. Each chunk of the payload enters the
        // registration checked here again (`on_payload`).
        let (table, stags) = (&self.qp.mem_xa, &mut self.state.stags);
        let need = access::REMOTE_WRITE;
        let mem = resolve(
            table,
            stags,
            tagged.stag,
            self.qp.pd_id,
            tagged.to,
            plen.into(),
            need,
        )
        .map_err(MemFault::tagged_error)?;
        self.state.seg = Seg::Write { mem, to: tagged.to };
        Ok(())
    }

    /// A whole RDMA Write segment (ULPDU_Length `ulpdu_len`, STag `stag`,
    /// tagged offset `to`, `raw` its header's wire form) and its
    /// `payload`, placed at once ([`access::place`]: one look at the
    /// registration, no reference kept): what [`Sink::write_header`] and
    /// the placement of its payload do, in one step.
    #[inline(never)]
    fn write_segment(
        &mut self,
        ulpdu_len: u16,
        stag: u32,
        to: u64,
        raw: &[u8],
        payload: &[u8],
    ) -> Result<bool, ProtocolError> {
        self.state.hdr.start_fpdu(ulpdu_len);
        let (table, stags) = (&self.qp.mem_xa, &mut self.state.stags);
        let placed = access::place(
            table,
            stags,
            stag,
            self.qp.pd_id,
            to,
            payload.len() as u64,
            payload,
            access::REMOTE_WRITE,
        );
        if let Err(fault) = placed {
            self.state.hdr.keep(raw);
            return Err(fault.tagged_error());
        }
        self.act.payload += payload.len() as u64;
        self.act.fpdus += 1;
        Ok(true)
    }

    /// A whole Send segment (ULPDU_Length `ulpdu_len`, header `view`) and
    /// its `payload`: a whole message at once (see
    /// [`Sink::whole_send`]), else the steps of the separate calls
    /// ([`Sink::send_header`], the placement, the end of the segment) in
    /// one, with the same effect.
    #[inline(never)]
    fn send_segment(
        &mut self,
        ulpdu_len: u16,
        view: &HeaderView<'_>,
        payload: &[u8],
        verdict: CrcVerdict,
    ) -> Result<bool, ProtocolError> {
        self.state.hdr.start_fpdu(ulpdu_len);
        let result = match self.whole_send(view, payload) {
            Some(result) => result,
            None => view.header().and_then(|hdr| {
                self.send_header(&hdr, payload.len() as u32)
                    .and_then(|()| self.on_payload(0, payload))
                    .and_then(|()| self.on_fpdu_end(&hdr, verdict))
            }),
        };
        match result {
            Ok(()) => Ok(true),
            Err(err) => {
                // What the TERMINATE reports, as `on_header` keeps it.
                self.state.hdr.keep(view.raw());
                Err(err)
            }
        }
    }

    /// A Send message in one segment (MO 0, L set; none in progress)
    /// with `payload`: takes a receive queue element, places the payload
    /// and completes the element. An element of one SGE is filled at once
    /// ([`access::place`]: its memory is looked at once and no reference
    /// kept); any other, or one that fails there, takes the steps of
    /// [`Sink::send_header`] and the placement, with their errors. `None`
    /// when the segment is not such a message (nothing was done).
    fn whole_send(
        &mut self,
        view: &HeaderView<'_>,
        payload: &[u8],
    ) -> Option<Result<(), ProtocolError>> {
        let untagged = view.untagged()?;
        if untagged.mo != 0 || !view.ctrl().last() || self.state.send.is_active() {
            return None;
        }
        Some(self.whole_send_message(view.opcode(), untagged.msn, untagged.ulp, payload))
    }

    /// [`Sink::whole_send`] of a message of `opcode` with MSN `msn` and
    /// Invalidate STag `inval`.
    fn whole_send_message(
        &mut self,
        opcode: Opcode,
        msn: u32,
        inval: u32,
        payload: &[u8],
    ) -> Result<(), ProtocolError> {
        self.state.msns.check(QN_SEND, msn)?;
        if !self.take_rqe() {
            return Err(DdpError::UntaggedMsnNoBuffer.into());
        }
        let plen = payload.len() as u32;
        let placed = self.state.send.single_sge().is_some_and(|sge| {
            let (table, stags) = (&self.qp.mem_xa, &mut self.state.stags);
            access::place(
                table,
                stags,
                sge.lkey,
                self.qp.recv_pd_id(),
                sge.addr,
                u64::from(sge.length),
                payload,
                access::LOCAL_WRITE,
            )
            .is_ok()
        });
        if placed {
            self.state.send.begin_placed(opcode, inval, plen);
        } else {
            let msg = &mut self.state.send;
            msg.begin(self.qp, opcode, inval, &mut self.state.stags)?;
            msg.check_room(plen)?;
            msg.place(0, payload)?;
            msg.advance(plen);
        }
        self.act.payload += u64::from(plen);
        self.act.fpdus += 1;
        self.finish_send()
    }

    /// A Read Response segment: into the sink of the outbound Read queue
    /// head, in order.
    fn read_resp_header(&mut self, hdr: &SegmentHeader, plen: u32) -> Result<(), ProtocolError> {
        let tagged = hdr.tagged_hdr().ok_or(RdmapError::UnexpectedOpcode)?;
        let mut outbound = self.qp.outbound_reads.lock();
        // Responses come in request order: not while an Atomic Response
        // is due.
        check_read_response_head(outbound.head_kind())?;
        let head = outbound.head_mut().ok_or(RdmapError::UnexpectedOpcode)?;
        let sink = ReadSink {
            stag: head.sink.lkey,
            to: head.sink.addr,
            len: head.sink.length,
        };
        sink.check_response(head.placed, &tagged, plen, hdr.ctrl.last())?;
        self.state.seg = Seg::ReadResp {
            mem: head.mem.clone(),
            to: tagged.to,
            len: plen,
        };
        Ok(())
    }

    /// A Read Request: the next message of queue 1, for the inbound Read
    /// queue.
    fn read_req_header(&mut self, hdr: &SegmentHeader, plen: u32) -> Result<(), ProtocolError> {
        let untagged = hdr.untagged_hdr().ok_or(RdmapError::UnexpectedOpcode)?;
        self.state.msns.check(QN_READ_REQUEST, untagged.msn)?;
        check_read_request(untagged.mo, plen, hdr.ctrl.last())?;
        let Body::ReadRequest(request) = hdr.body else {
            return Err(RdmapError::UnexpectedOpcode.into());
        };
        self.state.seg = Seg::ReadReq {
            request,
            msn: untagged.msn,
        };
        Ok(())
    }
}

impl RxSink for Sink<'_> {
    /// The common cases of a whole segment: an RDMA Write's FPDU with
    /// payload, placed at once (see [`Sink::write_segment`]), and a Send
    /// (see [`Sink::send_segment`]). Every other segment, and a
    /// peer-to-peer responder's first FPDU, takes the separate calls.
    #[inline(always)]
    fn on_segment(
        &mut self,
        info: &FpduInfo,
        hdr: &HeaderView<'_>,
        payload: &[u8],
        verdict: CrcVerdict,
    ) -> Result<bool, ProtocolError> {
        if self.state.await_rtr {
            return Ok(false);
        }
        match hdr.opcode() {
            Opcode::Write if !payload.is_empty() => match hdr.tagged() {
                Some(tagged) => {
                    self.write_segment(info.ulpdu_len, tagged.stag, tagged.to, hdr.raw(), payload)
                }
                None => Ok(false),
            },
            Opcode::Send | Opcode::SendSe | Opcode::SendInvalidate | Opcode::SendSeInvalidate => {
                self.send_segment(info.ulpdu_len, hdr, payload, verdict)
            }
            _ => Ok(false),
        }
    }

    fn on_fpdu_start(&mut self, info: &FpduInfo) -> Result<(), ProtocolError> {
        self.state.hdr.start_fpdu(info.ulpdu_len);
        self.state.seg = Seg::None;
        Ok(())
    }

    fn on_header(
        &mut self,
        hdr: &SegmentHeader,
        raw: &[u8],
        payload_len: u16,
    ) -> Result<(), ProtocolError> {
        self.state.hdr.keep(raw);
        let plen = u32::from(payload_len);
        match hdr.opcode {
            Opcode::Send | Opcode::SendSe | Opcode::SendInvalidate | Opcode::SendSeInvalidate => {
                self.send_header(hdr, plen)
            }
            Opcode::Write => self.write_header(hdr, plen),
            Opcode::ReadResponse => self.read_resp_header(hdr, plen),
            Opcode::ReadRequest => self.read_req_header(hdr, plen),
            Opcode::Terminate => {
                self.state.seg = Seg::Term;
                report_terminate(self.qp, hdr);
                Ok(())
            }
            // RFC 7306, parsed for kernel QPs only (`rx::start`).
            Opcode::ImmediateData | Opcode::ImmediateDataSe => self.immediate_header(hdr, plen),
            Opcode::AtomicRequest => self.atomic_req_header(hdr, plen),
            Opcode::AtomicResponse => self.atomic_resp_header(hdr, plen),
        }
    }

    fn on_payload(&mut self, offset: u32, data: &[u8]) -> Result<(), ProtocolError> {
        self.act.payload += data.len() as u64;
        match &self.state.seg {
            Seg::Send { mo, .. } => {
                let Some(msg) = self.state.send.get_mut() else {
                    return Ok(());
                };
                let msg_offset = mo.checked_add(offset).ok_or(DdpError::UntaggedTooLong)?;
                msg.place(msg_offset, data)
            }
            // A chunk of a tagged segment is placed only inside the
            // registration its header was checked against: once that was
            // invalidated or deregistered, the segment draws the invalid
            // STag TERMINATE and nothing more of it is placed.
            Seg::Write { mem, to } => {
                let addr = to.wrapping_add(u64::from(offset));
                mem.write(addr, data).map_err(MemFault::tagged_error)
            }
            Seg::ReadResp { mem, to, .. } => match mem {
                Some(mem) => mem
                    .write(to.wrapping_add(u64::from(offset)), data)
                    .map_err(MemFault::tagged_error),
                None if data.is_empty() => Ok(()),
                None => Err(DdpError::TaggedBaseBounds.into()),
            },
            Seg::ReadReq { .. }
            | Seg::Term
            | Seg::Imm { .. }
            | Seg::AtomicReq { .. }
            | Seg::AtomicResp { .. }
            | Seg::None => Ok(()),
        }
    }

    fn on_fpdu_end(
        &mut self,
        hdr: &SegmentHeader,
        verdict: CrcVerdict,
    ) -> Result<(), ProtocolError> {
        if let CrcVerdict::Mismatch { .. } = verdict {
            // The deframer fails with the CRC error right after this.
            return Ok(());
        }
        if core::mem::take(&mut self.state.await_rtr) {
            // The first FPDU of a peer-to-peer initiator is its RTR,
            // whatever it is (a zero length Write or Read Request; a Send
            // RTR was taken by `send_header`): a later zero length Send is
            // a message.
            self.act.rtr = true;
        }
        let result = self.end_segment(hdr);
        self.act.fpdus += 1;
        if result.is_ok() {
            // Keep the header for the TERMINATE of an error found here.
            self.state.hdr.clear();
        }
        result
    }
}
