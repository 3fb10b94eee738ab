// SPDX-License-Identifier: GPL-2.0

//! The receive engine: runs in the socket's `data_ready` upcall (softirq),
//! feeds the byte stream to the wire core's deframer and places DDP
//! segments: tagged ones into registered memory, untagged ones into the
//! next receive queue element; completes messages and answers errors with
//! a TERMINATE.
//!
//! Everything that must not happen under the receive lock (CQ pushes for
//! failed receives, events, TERMINATE queueing, waking the transmit work)
//! is collected in [`Actions`] and done after the lock is dropped. Work that
//! needs process context (closing the connection) goes to the transmit
//! work item.

use core::sync::atomic::Ordering;
use kernel::{
    prelude::*,
    sync::{Arc, ArcBorrow},
};

use super::orq::IrqEntry;
use super::tx::queue_terminate;
use super::{Qp, QpState};
use crate::base::stats::Counter;
use crate::kif::siw::{op, wc, wqe};
use crate::kif::{
    crc::KernelCrc32c,
    rdma::handle::QpEvent,
    siw::{Rqe, Sge, MAX_SGE},
    sock::{SockEvents, SockRx, TcpState},
};
use crate::mem::access::{
    self, check_mem, lookup_inval, lookup_stag, mem_write, MemFault, StagCache,
};
use crate::mem::Mem;
use crate::wire::{
    error::{DdpError, LlpError, ProtocolError, RdmapError},
    mpa::MpaMode,
    rdmap::{Body, Opcode, ReadRequest, SegmentHeader, MAX_HDR_LEN, QN_READ_REQUEST, QN_SEND},
    rx::{CrcVerdict, Deframer, FpduInfo, MpaOnlySink, RxConfig, RxSink},
};

const NO_MEM: Option<Arc<Mem>> = None;

/// The Send message being received into a receive queue element, while
/// `active`. It stays in place between messages: starting one writes only
/// what that message uses (the RQE's SGEs in use, their memory), not a
/// whole new element, and ending one drops only those memory references.
struct RecvMsg {
    active: bool,
    rqe: Rqe,
    mems: [Option<Arc<Mem>>; MAX_SGE],
    n: usize,
    /// Room of the RQE (sum of its SGE lengths).
    total: u32,
    /// Octets placed (the next MO).
    processed: u32,
    /// Invalidate STag of Send with Invalidate (first segment).
    inval: u32,
    opcode: Opcode,
    /// Completion status if the message failed locally.
    status: u16,
}

impl RecvMsg {
    const fn new() -> Self {
        const NO_SGE: Sge = Sge {
            addr: 0,
            length: 0,
            lkey: 0,
        };
        Self {
            active: false,
            rqe: Rqe {
                id: 0,
                flags: 0,
                num_sge: 0,
                sge: [NO_SGE; MAX_SGE],
            },
            mems: [NO_MEM; MAX_SGE],
            n: 0,
            total: 0,
            processed: 0,
            inval: 0,
            opcode: Opcode::Send,
            status: wc::SUCCESS,
        }
    }

    /// The message in progress, if any.
    fn get_mut(&mut self) -> Option<&mut Self> {
        self.active.then_some(self)
    }

    /// Ends the message in progress: its RQE, octets placed and status.
    fn end(&mut self) -> Option<(Rqe, u32, u16)> {
        if !self.active {
            return None;
        }
        self.active = false;
        for m in self.mems.iter_mut().take(self.n) {
            *m = None;
        }
        Some((self.rqe, self.processed, self.status))
    }
}

/// What the payload of the current segment goes to.
enum Seg {
    /// Nothing (no payload expected, or discarded).
    None,
    /// The Send in progress, at message offset `mo`.
    Send { mo: u32, len: u32 },
    /// An RDMA Write to `mem` at tagged offset `to`.
    Write { mem: Arc<Mem>, to: u64 },
    /// An RDMA Read Response to the ORQ head's sink.
    ReadResp {
        mem: Option<Arc<Mem>>,
        to: u64,
        len: u32,
    },
    /// An RDMA Read Request (queued when its FPDU is complete).
    ReadReq { rr: ReadRequest, msn: u32 },
    /// A TERMINATE from the peer.
    Term,
}

/// Per-connection receive state besides the deframer.
struct RxCtx {
    /// The MSN the next message must carry, per untagged queue.
    msn: [u32; 3],
    send: RecvMsg,
    seg: Seg,
    /// Wire form of the current segment's header (for a TERMINATE).
    raw: [u8; MAX_HDR_LEN],
    raw_len: usize,
    /// ULPDU_Length of the current FPDU.
    ulpdu_len: u16,
    /// Peer-to-peer responder: the first FPDU is the initiator's RTR.
    await_rtr: bool,
    /// The last STag looked up for placement.
    stags: StagCache,
}

impl RxCtx {
    const fn new() -> Self {
        Self {
            msn: [1; 3],
            send: RecvMsg::new(),
            seg: Seg::None,
            raw: [0; MAX_HDR_LEN],
            raw_len: 0,
            ulpdu_len: 0,
            await_rtr: false,
            stags: StagCache::new(),
        }
    }
}

/// Receive state of a QP.
pub struct RxState {
    d: Option<Deframer<KernelCrc32c>>,
    /// With CRC: the MPA-only deframer that checks each FPDU's CRC before
    /// `d` sees any octet of it (see [`receive`]).
    v: Option<Deframer<KernelCrc32c>>,
    c: RxCtx,
    /// Next slot of the QP's own receive queue to take. The receive side
    /// is its only consumer besides the flush, so it is kept under this
    /// lock rather than the QP's: a Send takes its RQE without another
    /// lock (as siw does).
    pub rq_get: u32,
}

impl Default for RxState {
    fn default() -> Self {
        Self::new()
    }
}

impl RxState {
    /// Idle state (no connection).
    pub fn new() -> Self {
        Self {
            d: None,
            v: None,
            c: RxCtx::new(),
            rq_get: 0,
        }
    }
}

/// What to do once the receive lock is dropped.
#[derive(Default)]
struct Actions {
    /// The transmit work has something to do (Read Request queued, ORD
    /// slot freed, TERMINATE queued).
    wake_tx: bool,
    /// A TERMINATE was received.
    terminated: bool,
    /// A protocol error: TERMINATE to send (error, header, its length,
    /// ULPDU_Length).
    error: Option<(ProtocolError, [u8; MAX_HDR_LEN], usize, u16)>,
    /// A receive that failed locally, to complete with its status.
    failed: Option<(Rqe, u32, u16)>,
    /// The peer-to-peer RTR (the first FPDU) arrived.
    rtr: bool,
    /// The first FPDU arrived on a QP whose transmit side waits for it.
    release_tx: bool,
    /// A `data_ready` upcall (counted after the data is placed).
    upcall: bool,
    /// FPDUs and payload octets received (for the counters).
    fpdus: u64,
    payload: u64,
}

/// The deframer's consumer for one `push`.
struct Sink<'a> {
    qp: &'a Qp,
    c: &'a mut RxCtx,
    rq_get: &'a mut u32,
    act: &'a mut Actions,
}

fn tagged_fault(f: MemFault, to: u64, len: u32) -> ProtocolError {
    match f {
        MemFault::Stag => DdpError::TaggedInvalidStag.into(),
        MemFault::Pd => DdpError::TaggedStagNotAssociated.into(),
        MemFault::Access => RdmapError::AccessRights.into(),
        MemFault::Bounds => {
            if to.checked_add(u64::from(len)).is_none() {
                DdpError::TaggedToWrap.into()
            } else {
                DdpError::TaggedBaseBounds.into()
            }
        }
    }
}

impl Sink<'_> {
    /// Takes the next receive queue element (own RQ or SRQ) into the
    /// Send message's slot.
    fn take_rqe(&mut self) -> bool {
        let dst = &mut self.c.send.rqe;
        if let Some(srq) = &self.qp.srq {
            return srq.take_into(dst);
        }
        match &self.qp.rq {
            Some(rq) => rq.take_into(self.rq_get, dst),
            None => false,
        }
    }

    fn send_header(&mut self, hdr: &SegmentHeader, plen: u32) -> Result<(), ProtocolError> {
        let u = hdr.untagged_hdr().ok_or(RdmapError::UnexpectedOpcode)?;
        if u.msn != self.c.msn[QN_SEND as usize] {
            return Err(DdpError::UntaggedMsnRange.into());
        }
        if self.c.await_rtr && plen == 0 && u.mo == 0 && hdr.ctrl.last && !self.c.send.active {
            // The peer-to-peer Send RTR (RFC 6581): part of the
            // connection setup, it takes its MSN but no receive.
            let q = &mut self.c.msn[QN_SEND as usize];
            *q = q.wrapping_add(1);
            self.c.seg = Seg::None;
            self.c.await_rtr = false;
            self.act.rtr = true;
            return Ok(());
        }
        if !self.c.send.active {
            if u.mo != 0 {
                return Err(DdpError::UntaggedInvalidMo.into());
            }
            if !self.take_rqe() {
                return Err(DdpError::UntaggedMsnNoBuffer.into());
            }
            let m = &mut self.c.send;
            m.active = true;
            m.total = 0;
            m.processed = 0;
            m.inval = u.ulp;
            m.opcode = hdr.opcode;
            m.status = wc::SUCCESS;
            let max = (self.qp.caps.rq_max_sge as usize).clamp(1, MAX_SGE);
            let RecvMsg {
                rqe,
                mems,
                n: m_n,
                total,
                ..
            } = &mut *m;
            let n = usize::from(rqe.num_sge);
            let mut bad = n > max;
            *m_n = n.min(MAX_SGE);
            for (s, slot) in rqe.sge.iter().zip(mems.iter_mut()).take(*m_n) {
                match total.checked_add(s.length) {
                    Some(t) => *total = t,
                    None => bad = true,
                }
                if s.length == 0 || bad {
                    continue;
                }
                match lookup_stag(&self.qp.mem_xa, s.lkey, &mut self.c.stags) {
                    Some(mem) => {
                        if check_mem(
                            &mem,
                            self.qp.pd_id,
                            s.addr,
                            u64::from(s.length),
                            access::LOCAL_WRITE,
                        )
                        .is_err()
                        {
                            bad = true;
                        }
                        *slot = Some(mem);
                    }
                    None => bad = true,
                }
            }
            if bad {
                m.status = wc::LOC_PROT_ERR;
                return Err(DdpError::LocalCatastrophic.into());
            }
        }
        let m = self.c.send.get_mut().ok_or(DdpError::LocalCatastrophic)?;
        if u.mo != m.processed {
            return Err(DdpError::UntaggedInvalidMo.into());
        }
        let end = m.processed.checked_add(plen);
        if end.map_or(true, |e| e > m.total) {
            m.status = wc::LOC_LEN_ERR;
            return Err(DdpError::UntaggedTooLong.into());
        }
        self.c.seg = Seg::Send {
            mo: u.mo,
            len: plen,
        };
        Ok(())
    }

    fn write_header(&mut self, hdr: &SegmentHeader, plen: u32) -> Result<(), ProtocolError> {
        let t = hdr.tagged_hdr().ok_or(RdmapError::UnexpectedOpcode)?;
        if plen == 0 && hdr.ctrl.last {
            // A zero length Write places nothing; its STag is not checked
            // (as siw; the peer-to-peer RTR is one, with STag 1).
            self.c.seg = Seg::None;
            return Ok(());
        }
        // The QP's access flags are not enforced (as in siw): see
        // `tx::read_response_job`.
        let mem = lookup_stag(&self.qp.mem_xa, t.stag, &mut self.c.stags)
            .ok_or(DdpError::TaggedInvalidStag)?;
        check_mem(
            &mem,
            self.qp.pd_id,
            t.to,
            u64::from(plen),
            access::REMOTE_WRITE,
        )
        .map_err(|f| tagged_fault(f, t.to, plen))?;
        self.c.seg = Seg::Write { mem, to: t.to };
        Ok(())
    }

    fn read_resp_header(&mut self, hdr: &SegmentHeader, plen: u32) -> Result<(), ProtocolError> {
        let t = hdr.tagged_hdr().ok_or(RdmapError::UnexpectedOpcode)?;
        let mut orq = self.qp.orq.lock();
        let e = orq.head_mut().ok_or(RdmapError::UnexpectedOpcode)?;
        if t.stag != e.sink.lkey {
            return Err(DdpError::TaggedInvalidStag.into());
        }
        if t.to != e.sink.addr.wrapping_add(u64::from(e.placed)) {
            return Err(DdpError::TaggedBaseBounds.into());
        }
        let end = e
            .placed
            .checked_add(plen)
            .ok_or(DdpError::TaggedBaseBounds)?;
        if end > e.sink.length || (hdr.ctrl.last && end != e.sink.length) {
            return Err(DdpError::TaggedBaseBounds.into());
        }
        self.c.seg = Seg::ReadResp {
            mem: e.mem.clone(),
            to: t.to,
            len: plen,
        };
        Ok(())
    }

    fn read_req_header(&mut self, hdr: &SegmentHeader, plen: u32) -> Result<(), ProtocolError> {
        let u = hdr.untagged_hdr().ok_or(RdmapError::UnexpectedOpcode)?;
        if u.msn != self.c.msn[QN_READ_REQUEST as usize] {
            return Err(DdpError::UntaggedMsnRange.into());
        }
        // RFC 5040 4.4: a Read Request is one segment of exactly its
        // header (the 28 octet "buffer" of QN 1): a first segment at
        // another MO is an invalid MO; payload, or L=0 (more segments to
        // come), makes the message longer than that buffer.
        if u.mo != 0 {
            return Err(DdpError::UntaggedInvalidMo.into());
        }
        if plen != 0 || !hdr.ctrl.last {
            return Err(DdpError::UntaggedTooLong.into());
        }
        let Body::ReadRequest(rr) = hdr.body else {
            return Err(RdmapError::UnexpectedOpcode.into());
        };
        self.c.seg = Seg::ReadReq { rr, msn: u.msn };
        Ok(())
    }

    /// Completes the Send in progress.
    fn finish_send(&mut self) -> Result<(), ProtocolError> {
        // Completed in place; the slot is emptied at the end.
        let c = &mut *self.c;
        let Some(m) = c.send.get_mut() else {
            return Ok(());
        };
        let q = &mut c.msn[QN_SEND as usize];
        *q = q.wrapping_add(1);
        if matches!(m.opcode, Opcode::SendSe | Opcode::SendSeInvalidate) {
            m.rqe.flags |= wqe::SOLICITED;
        }
        let mut inval = None;
        let mut err = None;
        if m.opcode.has_invalidate() {
            // Index and key: a stale STag (an earlier registration
            // cycle's key) must not invalidate the current registration.
            match lookup_inval(&self.qp.mem_xa, self.qp.pd_id, m.inval) {
                Ok(mem) => {
                    mem.valid.store(false, Ordering::Release);
                    inval = Some(m.inval);
                }
                Err(MemFault::Pd) => err = Some(RdmapError::ProtectionCannotInvalidate),
                Err(_) => err = Some(RdmapError::OperationCannotInvalidate),
            }
        }
        let status = if err.is_some() {
            wc::REM_INV_REQ_ERR
        } else {
            wc::SUCCESS
        };
        let r = match err {
            Some(e) => {
                // Completed after the TERMINATE is queued (see `after`).
                self.act.failed = Some((m.rqe, m.processed, status));
                Err(e.into())
            }
            None => {
                let _ = self.qp.complete_rqe(&m.rqe, m.processed, inval, status);
                Ok(())
            }
        };
        c.send.end();
        r
    }

    /// Completes the ORQ head (its Read Response is complete).
    fn finish_read(&mut self) -> Result<(), ProtocolError> {
        let (e, stalled) = self.qp.orq.lock().pop_wake();
        // Wake the transmit work only if it waits for this ORD slot (or
        // the fence): most Reads complete with nothing queued behind.
        self.act.wake_tx |= stalled;
        let Some(e) = e else { return Ok(()) };
        let mut status = wc::SUCCESS;
        if e.opcode == op::READ_LOCAL_INV {
            match lookup_inval(&self.qp.mem_xa, self.qp.pd_id, e.sink.lkey) {
                Ok(mem) => mem.valid.store(false, Ordering::Release),
                Err(_) => status = wc::GENERAL_ERR,
            }
        }
        let _ = self.qp.complete_wr(e.wr(), e.placed, status);
        if status != wc::SUCCESS {
            return Err(RdmapError::LocalCatastrophic.into());
        }
        Ok(())
    }
}

/// Logs a TERMINATE received (the stream ends with it).
#[cold]
fn report_terminate(qp: &Qp, hdr: &SegmentHeader) {
    if let Body::Terminate(t) = hdr.body {
        pr_warn!(
            "rsiw: QP {}: TERMINATE received: layer {} etype {} code {:#x} (siw layout: layer {} etype {})\n",
            qp.id(),
            t.code.layer,
            t.code.etype,
            t.code.code,
            t.code.etype,
            t.code.layer
        );
    }
}

impl RxSink for Sink<'_> {
    fn on_fpdu_start(&mut self, info: &FpduInfo) -> Result<(), ProtocolError> {
        self.c.ulpdu_len = info.ulpdu_len;
        self.c.raw_len = 0;
        self.c.seg = Seg::None;
        Ok(())
    }

    fn on_header(
        &mut self,
        hdr: &SegmentHeader,
        raw: &[u8],
        payload_len: u16,
    ) -> Result<(), ProtocolError> {
        let n = raw.len().min(MAX_HDR_LEN);
        if let (Some(d), Some(s)) = (self.c.raw.get_mut(..n), raw.get(..n)) {
            d.copy_from_slice(s);
            self.c.raw_len = n;
        }
        let plen = u32::from(payload_len);
        match hdr.opcode {
            Opcode::Send | Opcode::SendSe | Opcode::SendInvalidate | Opcode::SendSeInvalidate => {
                self.send_header(hdr, plen)
            }
            Opcode::Write => self.write_header(hdr, plen),
            Opcode::ReadResponse => self.read_resp_header(hdr, plen),
            Opcode::ReadRequest => self.read_req_header(hdr, plen),
            Opcode::Terminate => {
                self.c.seg = Seg::Term;
                report_terminate(self.qp, hdr);
                Ok(())
            }
        }
    }

    fn on_payload(&mut self, offset: u32, data: &[u8]) -> Result<(), ProtocolError> {
        self.act.payload += data.len() as u64;
        match &self.c.seg {
            Seg::Send { mo, .. } => {
                let Some(m) = self.c.send.get_mut() else {
                    return Ok(());
                };
                let mut o = mo.checked_add(offset).ok_or(DdpError::UntaggedTooLong)?;
                let mut rest = data;
                let mut base = 0u32;
                for (s, mem) in m.rqe.sge.iter().zip(m.mems.iter()).take(m.n) {
                    if rest.is_empty() {
                        break;
                    }
                    let end = base.saturating_add(s.length);
                    if o >= base && o < end {
                        let k = ((end - o) as usize).min(rest.len());
                        let (now, later) = rest.split_at(k);
                        let addr = s.addr.wrapping_add(u64::from(o - base));
                        let ok = mem.as_ref().map(|mm| mem_write(mm, addr, now).is_ok());
                        if ok != Some(true) {
                            m.status = wc::LOC_PROT_ERR;
                            return Err(DdpError::LocalCatastrophic.into());
                        }
                        rest = later;
                        o += k as u32;
                    }
                    base = end;
                }
                if !rest.is_empty() {
                    m.status = wc::LOC_LEN_ERR;
                    return Err(DdpError::UntaggedTooLong.into());
                }
                Ok(())
            }
            Seg::Write { mem, to } => {
                let a = to.wrapping_add(u64::from(offset));
                mem_write(mem, a, data).map_err(|_| DdpError::LocalCatastrophic.into())
            }
            Seg::ReadResp { mem, to, .. } => match mem {
                Some(mem) => mem_write(mem, to.wrapping_add(u64::from(offset)), data)
                    .map_err(|_| DdpError::LocalCatastrophic.into()),
                None if data.is_empty() => Ok(()),
                None => Err(DdpError::TaggedBaseBounds.into()),
            },
            Seg::ReadReq { .. } | Seg::Term | Seg::None => Ok(()),
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
        let r = self.end_segment(hdr);
        self.act.fpdus += 1;
        if r.is_ok() {
            // Keep the header for the TERMINATE of an error found here.
            self.c.raw_len = 0;
        }
        r
    }
}

impl Sink<'_> {
    /// Completes what the segment carrying `hdr` finished.
    fn end_segment(&mut self, hdr: &SegmentHeader) -> Result<(), ProtocolError> {
        match core::mem::replace(&mut self.c.seg, Seg::None) {
            Seg::Send { len, .. } => {
                if let Some(m) = self.c.send.get_mut() {
                    m.processed = m.processed.saturating_add(len);
                }
                if hdr.ctrl.last {
                    self.finish_send()?;
                }
                Ok(())
            }
            Seg::ReadResp { len, .. } => {
                let done = {
                    let mut orq = self.qp.orq.lock();
                    match orq.head_mut() {
                        Some(e) => {
                            e.placed = e.placed.saturating_add(len);
                            hdr.ctrl.last
                        }
                        None => false,
                    }
                };
                if done {
                    self.finish_read()?;
                }
                Ok(())
            }
            Seg::ReadReq { rr, msn } => {
                let q = &mut self.c.msn[QN_READ_REQUEST as usize];
                *q = q.wrapping_add(1);
                if !self.qp.irq.lock().push(IrqEntry { rr, msn }) {
                    pr_warn!("rsiw: QP {}: IRD exceeded\n", self.qp.id());
                    return Err(RdmapError::CatastrophicStream.into());
                }
                self.qp.irq_hint.store(true, Ordering::Release);
                self.act.wake_tx = true;
                Ok(())
            }
            Seg::Term => {
                self.act.terminated = true;
                Ok(())
            }
            Seg::Write { .. } | Seg::None => Ok(()),
        }
    }
}

/// Feeds received octets to the QP's deframer; everything to do
/// afterwards is added to `act`.
fn feed(qp: &Qp, bytes: &[u8], act: &mut Actions) {
    if act.terminated || act.error.is_some() || qp.state() != QpState::Rts {
        // Discard: the stream is dead.
        return;
    }
    // Before anything is placed or completed: an application that sees
    // this data and rings its doorbell at once is answering, not
    // streaming (see `Qp::post_send`).
    if !qp.rx_seen.load(Ordering::Relaxed) {
        qp.rx_seen.store(true, Ordering::Release);
    }
    let mut g = qp.rx.lock();
    let RxState { d, c, rq_get, .. } = &mut *g;
    let Some(d) = d.as_mut() else { return };
    // After a TERMINATE (RFC 5040 5.3) the deframer delivers nothing
    // more: no placement, no completion, no TERMINATE in answer.
    if d.error().is_some() || d.terminated() {
        return;
    }
    let mut sink = Sink { qp, c, rq_get, act };
    if let Err(e) = d.push(bytes, &mut sink) {
        rx_failed(d, sink.c, sink.act, e);
    } else if sink.c.await_rtr && d.fpdus() > 0 {
        sink.c.await_rtr = false;
        sink.act.rtr = true;
    }
    if d.fpdus() > 0 && qp.tx_held.load(Ordering::Relaxed) {
        act.release_tx = true;
    }
}

/// Takes the octets queued on the QP's socket into the QP.
///
/// Without CRC they go to the deframer as they are. With CRC the receiver
/// verifies first (RFC 5044 section 7.1: an FPDU is passed to DDP only
/// after its CRC was checked, so that a header corrupted on the way places
/// nothing): the MPA-only deframer checks the octets it has not seen yet
/// without consuming them, then the deframer takes the octets of the
/// complete FPDUs that passed. The rest of an incomplete FPDU stays queued
/// in the socket until the next upcall, so nothing is copied aside.
fn receive(qp: &Qp, rx: &mut SockRx<'_>, act: &mut Actions) {
    let limit = verify(qp, rx);
    let _ = rx.pull_at_most(limit, &mut |b| {
        feed(qp, b, act);
        Ok(())
    });
    if limit != usize::MAX {
        verify_failed(qp, act);
    }
}

/// The first pass of [`receive`]: how many queued octets the deframer
/// may take (all without CRC).
fn verify(qp: &Qp, rx: &mut SockRx<'_>) -> usize {
    if !qp.rx_verify.load(Ordering::Acquire) {
        return usize::MAX;
    }
    let mut g = qp.rx.lock();
    let RxState { d, v, .. } = &mut *g;
    let (Some(d), Some(v)) = (d.as_ref(), v.as_mut()) else {
        return usize::MAX;
    };
    if v.error().is_none() {
        // The octets of an incomplete FPDU seen in an earlier upcall are
        // still queued, after those of the verified FPDUs the deframer
        // took then.
        let skip = v.stream_offset().wrapping_sub(d.stream_offset());
        let _ = rx.peek(skip as usize, &mut |b| {
            v.push(b, &mut MpaOnlySink).map_err(|_| EINVAL)
        });
    }
    v.verified_offset().wrapping_sub(d.stream_offset()) as usize
}

/// After the second pass of [`receive`]: the stream fails with the first
/// pass's error once the deframer took every FPDU before the failed one.
fn verify_failed(qp: &Qp, act: &mut Actions) {
    let mut g = qp.rx.lock();
    let RxState { d, v, c, .. } = &mut *g;
    let (Some(d), Some(v)) = (d.as_ref(), v.as_ref()) else {
        return;
    };
    let Some(e) = v.error() else { return };
    if d.error().is_some() || d.terminated() || act.error.is_some() || qp.state() != QpState::Rts {
        return;
    }
    if d.stream_offset() == v.verified_offset() {
        // Nothing of the failed FPDU was parsed: no header to copy.
        c.raw_len = 0;
        c.ulpdu_len = 0;
        rx_failed(d, c, act, e);
    }
}

/// The stream failed with `e`: collects the TERMINATE to send and the
/// receive to complete.
#[cold]
fn rx_failed(d: &Deframer<KernelCrc32c>, c: &mut RxCtx, act: &mut Actions, e: ProtocolError) {
    // A Send that failed locally completes with its own status (any other
    // one in progress is flushed when the QP goes to error).
    if c.send.active && c.send.status != wc::SUCCESS {
        act.failed = c.send.end();
    }
    let (mut raw, mut raw_len) = (c.raw, c.raw_len);
    if raw_len == 0 {
        // A header that failed its own checks (invalid QN, say) never
        // reached the sink; the TERMINATE still carries its copy.
        if let Some(h) = d.rejected_header() {
            let n = h.len().min(MAX_HDR_LEN);
            if let (Some(dst), Some(src)) = (raw.get_mut(..n), h.get(..n)) {
                dst.copy_from_slice(src);
                raw_len = n;
            }
        }
    }
    act.error = Some((e, raw, raw_len, c.ulpdu_len));
}

/// Does what `feed` collected, without the receive lock.
fn after(this: ArcBorrow<'_, Qp>, act: &mut Actions) {
    let qp: &Qp = &this;
    if act.upcall {
        qp.stats.inc(Counter::RxUpcalls);
    }
    qp.stats.add(Counter::RxFpdus, act.fpdus);
    qp.stats.add(Counter::RxPayload, act.payload);
    let mut wake = act.wake_tx;
    if act.release_tx && qp.tx_held.swap(false, Ordering::AcqRel) {
        wake = true;
    }
    if act.rtr {
        if let Some(conn) = qp.conn() {
            if conn.await_rtr.swap(false, Ordering::AcqRel) {
                conn.cep.clone().rtr_received();
            }
        }
    }
    if let Some((e, raw, n, ulpdu)) = act.error.take() {
        qp.stats.inc(
            if matches!(e, ProtocolError::Llp(LlpError::CrcMismatch { .. })) {
                Counter::RxCrcErrors
            } else {
                Counter::RxProtocolErrors
            },
        );
        pr_warn!("rsiw: QP {}: protocol error {:?}\n", qp.id(), e);
        qp.handle.event(QpEvent::Fatal);
        let hdr = if n > 0 { raw.get(..n) } else { None };
        if queue_terminate(qp, e, hdr, ulpdu) {
            wake = true;
        } else {
            on_llp_close(&this.into());
        }
    }
    // A receive that failed completes only now: an application that
    // disconnects as soon as it sees the error finds the TERMINATE queued.
    if let Some((rqe, bytes, status)) = act.failed.take() {
        let _ = qp.complete_rqe(&rqe, bytes, None, status);
    }
    if act.terminated {
        qp.stats.inc(Counter::TerminatesReceived);
        qp.handle.event(QpEvent::Fatal);
        qp.set_error();
        on_llp_close(&this.into());
    }
    if wake {
        Arc::<Qp>::from(this).schedule_tx_elsewhere();
    }
}

impl SockEvents for Qp {
    fn data_ready(this: ArcBorrow<'_, Self>, rx: &mut SockRx<'_>) {
        if !this.rx_ready.load(Ordering::Acquire) {
            // Not started: `start` picks the data up.
            return;
        }
        let qp: &Qp = &this;
        let mut act = Actions {
            upcall: true,
            ..Actions::default()
        };
        receive(qp, rx, &mut act);
        after(this, &mut act);
    }

    fn state_change(this: ArcBorrow<'_, Self>, state: TcpState) {
        if matches!(state, TcpState::Closed | TcpState::CloseWait) {
            let qp: Arc<Qp> = this.into();
            on_llp_close(&qp);
        }
    }

    fn write_space(this: ArcBorrow<'_, Self>) {
        let qp: Arc<Qp> = this.into();
        qp.schedule_tx();
    }
}

/// The TCP connection closed or the stream died (any context): the QP
/// goes to error at once; closing the connection (CM events, socket
/// release) is done by the transmit work in process context, see
/// [`llp_closed`].
pub fn on_llp_close(qp: &Arc<Qp>) {
    // The CM reports the fatal event of an unexpected close (Cep::close).
    qp.llp_closed.store(true, Ordering::Release);
    qp.schedule_tx();
}

/// Process context end of [`on_llp_close`]: reports the close to the
/// connection manager, which moves the QP to error and drops the
/// connection.
pub fn llp_closed(qp: &Arc<Qp>) {
    match qp.conn() {
        Some(c) => c.cep.clone().close(true),
        None => qp.set_error(),
    }
}

/// Completes the receive in progress with a flush error (the QP is going
/// to error). Called by [`Qp::flush_rq`].
pub fn flush_active(qp: &Qp) {
    let m = {
        let mut g = qp.rx.lock();
        g.c.seg = Seg::None;
        g.c.send.end()
    };
    if let Some((rqe, _, status)) = m {
        let status = if status != wc::SUCCESS {
            status
        } else {
            wc::WR_FLUSH_ERR
        };
        let _ = qp.complete_rqe(&rqe, 0, None, status);
    }
}

/// Starts receiving on a QP that just entered RTS (called by the CM after
/// the socket's upcalls were handed to the QP): sets up the transmit and
/// receive state of the connection and processes data that arrived before.
pub fn start(qp: &Arc<Qp>) -> Result {
    let conn = qp.conn().ok_or(EINVAL)?;
    qp.tx_held.store(conn.hold_tx, Ordering::Release);
    super::tx::start(qp, &conn)?;
    let mode = MpaMode {
        markers: conn.rx_markers,
        crc: conn.crc,
    };
    let cfg = RxConfig {
        max_ulpdu: conn.rx_max_ulpdu,
        ..RxConfig::new(mode)
    };
    let (vcfg, dcfg) = cfg.verify_first();
    {
        let mut g = qp.rx.lock();
        g.v = mode
            .crc
            .then(|| Deframer::new(vcfg, KernelCrc32c::new(), 0));
        g.d = Some(Deframer::new(
            if mode.crc { dcfg } else { cfg },
            KernelCrc32c::new(),
            0,
        ));
        g.c = RxCtx::new();
        g.c.await_rtr = conn.await_rtr.load(Ordering::Acquire);
    }
    qp.rx_verify.store(mode.crc, Ordering::Release);
    qp.rx_ready.store(true, Ordering::Release);
    let mut act = Actions::default();
    let r = conn.sock.with_rx(|rx| receive(qp, rx, &mut act));
    after(qp.as_arc_borrow(), &mut act);
    // A peer that closes right after the MPA exchange may do so while the
    // socket has no callbacks (between the endpoint's and the QP's) or
    // before `tx::start` cleared the close flag: no event reports such
    // a close any more, the socket state does.
    if matches!(conn.sock.state(), TcpState::Closed | TcpState::CloseWait) {
        on_llp_close(qp);
    }
    r
}
