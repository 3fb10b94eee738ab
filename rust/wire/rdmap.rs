// SPDX-License-Identifier: GPL-2.0

//! RDMAP (RFC 5040): opcodes, the complete DDP/RDMAP header of a segment
//! (encode and parse with the version/opcode/QN checks), and the RDMA Read
//! Request body. The RFC 7306 extensions (Immediate Data, Atomic Request
//! and Response, bodies in [`crate::wire::rfc7306`]) are opcodes 8 to 11,
//! accepted on receive only when [`Extensions::rfc7306`] is on.
//!
//! Header lengths (without ULPDU_Length; siw `iwarp_pktinfo` minus 2):
//! Write and Read Response 14, Sends 18, Read Request 18 + 28 = 46,
//! Terminate 18 + 4 = 22 (copied headers follow as payload); RFC 7306:
//! Immediate Data 18 + 8 = 26, Atomic Request 18 + 52 = 70, Atomic
//! Response 18 + 12 = 30.

use crate::wire::ddp::{Control, DdpHdr, TaggedHdr, UntaggedHdr, TAGGED_HDR_LEN, UNTAGGED_HDR_LEN};
use crate::wire::ddp::{DDP_VERSION, RDMAP_VERSION};
use crate::wire::error::{DdpError, FramingFault, LlpError, ProtocolError, RdmapError};
use crate::wire::rfc7306::{
    AtomicRequest, AtomicResponse, ATOMIC_REQUEST_BODY_LEN, ATOMIC_RESPONSE_BODY_LEN,
    IMMEDIATE_DATA_LEN,
};
use crate::wire::term::TermHdr;
use crate::wire::{be32, be64, put};

/// Untagged queue of Send messages.
pub const QN_SEND: u32 = 0;
/// Untagged queue of RDMA Read Request messages.
pub const QN_READ_REQUEST: u32 = 1;
/// Untagged queue of Terminate messages.
pub const QN_TERMINATE: u32 = 2;
/// Untagged queue of Atomic Response messages (RFC 7306 section 5.2.2;
/// Atomic Requests travel on [`QN_READ_REQUEST`], section 5.2).
pub const QN_ATOMIC_RESPONSE: u32 = 3;
/// Number of untagged queues used by RDMAP (RFC 5040).
pub const NUM_QUEUES: u32 = 3;
/// Number of untagged queues with the RFC 7306 extensions (QN 3 added,
/// RFC 7306 section 10.2).
pub const NUM_QUEUES_RFC7306: u32 = 4;
/// Length of the RDMA Read Request body.
pub const READ_REQUEST_BODY_LEN: usize = 28;
/// Length of the Terminate control word.
pub const TERMINATE_BODY_LEN: usize = 4;
/// Largest DDP/RDMAP header (RFC 7306 Atomic Request).
pub const MAX_HDR_LEN: usize = UNTAGGED_HDR_LEN + ATOMIC_REQUEST_BODY_LEN;

/// The RDMAP extensions a receiver accepts. Without any (the default),
/// their opcodes draw "unexpected OpCode" as in plain RFC 5040.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Extensions {
    /// RFC 7306: Immediate Data (with SE), Atomic Request and Response.
    pub rfc7306: bool,
}

impl Extensions {
    /// Plain RFC 5040.
    pub const NONE: Self = Self { rfc7306: false };
    /// RFC 5040 with the RFC 7306 extensions.
    pub const RFC7306: Self = Self { rfc7306: true };
}
/// Smallest DDP/RDMAP header (tagged).
pub const MIN_HDR_LEN: usize = TAGGED_HDR_LEN;

/// RDMAP opcodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Opcode {
    /// RDMA Write (tagged).
    Write = 0,
    /// RDMA Read Request (untagged, QN 1).
    ReadRequest = 1,
    /// RDMA Read Response (tagged).
    ReadResponse = 2,
    /// Send (untagged, QN 0).
    Send = 3,
    /// Send with Invalidate.
    SendInvalidate = 4,
    /// Send with Solicited Event.
    SendSe = 5,
    /// Send with Solicited Event and Invalidate.
    SendSeInvalidate = 6,
    /// Terminate (untagged, QN 2).
    Terminate = 7,
    /// Immediate Data (RFC 7306, untagged, QN 0, 8 octets of data).
    ImmediateData = 8,
    /// Immediate Data with Solicited Event (RFC 7306, untagged, QN 0).
    ImmediateDataSe = 9,
    /// Atomic Request (RFC 7306, untagged, QN 1 as Read Requests).
    AtomicRequest = 10,
    /// Atomic Response (RFC 7306, untagged, QN 3).
    AtomicResponse = 11,
}

impl Opcode {
    /// Decodes a raw RFC 5040 opcode (`None` for the RFC 7306 ones too,
    /// see [`Opcode::from_u8_ext`]).
    pub const fn from_u8(v: u8) -> Option<Self> {
        Self::from_u8_ext(v, Extensions::NONE)
    }

    /// Decodes a raw opcode, the RFC 7306 ones (0x8 to 0xB, RFC 7306
    /// section 10) only with `ext.rfc7306`.
    pub const fn from_u8_ext(v: u8, ext: Extensions) -> Option<Self> {
        Some(match v {
            0 => Self::Write,
            1 => Self::ReadRequest,
            2 => Self::ReadResponse,
            3 => Self::Send,
            4 => Self::SendInvalidate,
            5 => Self::SendSe,
            6 => Self::SendSeInvalidate,
            7 => Self::Terminate,
            8 if ext.rfc7306 => Self::ImmediateData,
            9 if ext.rfc7306 => Self::ImmediateDataSe,
            10 if ext.rfc7306 => Self::AtomicRequest,
            11 if ext.rfc7306 => Self::AtomicResponse,
            _ => return None,
        })
    }

    /// Whether the opcode is one of RFC 7306.
    pub const fn is_rfc7306(self) -> bool {
        matches!(
            self,
            Self::ImmediateData
                | Self::ImmediateDataSe
                | Self::AtomicRequest
                | Self::AtomicResponse
        )
    }

    /// Whether the opcode uses the tagged buffer model.
    pub const fn is_tagged(self) -> bool {
        matches!(self, Self::Write | Self::ReadResponse)
    }

    /// The untagged queue the opcode travels on (`None` when tagged).
    pub const fn queue(self) -> Option<u32> {
        match self {
            Self::Write | Self::ReadResponse => None,
            Self::ReadRequest | Self::AtomicRequest => Some(QN_READ_REQUEST),
            Self::Terminate => Some(QN_TERMINATE),
            Self::AtomicResponse => Some(QN_ATOMIC_RESPONSE),
            Self::Send
            | Self::SendInvalidate
            | Self::SendSe
            | Self::SendSeInvalidate
            | Self::ImmediateData
            | Self::ImmediateDataSe => Some(QN_SEND),
        }
    }

    /// DDP/RDMAP header length (without ULPDU_Length).
    pub const fn hdr_len(self) -> usize {
        match self {
            Self::Write | Self::ReadResponse => TAGGED_HDR_LEN,
            Self::ReadRequest => UNTAGGED_HDR_LEN + READ_REQUEST_BODY_LEN,
            Self::Terminate => UNTAGGED_HDR_LEN + TERMINATE_BODY_LEN,
            Self::ImmediateData | Self::ImmediateDataSe => UNTAGGED_HDR_LEN + IMMEDIATE_DATA_LEN,
            Self::AtomicRequest => UNTAGGED_HDR_LEN + ATOMIC_REQUEST_BODY_LEN,
            Self::AtomicResponse => UNTAGGED_HDR_LEN + ATOMIC_RESPONSE_BODY_LEN,
            Self::Send | Self::SendInvalidate | Self::SendSe | Self::SendSeInvalidate => {
                UNTAGGED_HDR_LEN
            }
        }
    }

    /// Whether the untagged ULP field carries an Invalidate STag.
    pub const fn has_invalidate(self) -> bool {
        matches!(self, Self::SendInvalidate | Self::SendSeInvalidate)
    }

    /// Short name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Write => "RDMA_WRITE",
            Self::ReadRequest => "RDMA_READ_REQ",
            Self::ReadResponse => "RDMA_READ_RESP",
            Self::Send => "SEND",
            Self::SendInvalidate => "SEND_INV",
            Self::SendSe => "SEND_SE",
            Self::SendSeInvalidate => "SEND_SE_INV",
            Self::Terminate => "TERMINATE",
            Self::ImmediateData => "IMMEDIATE_DATA",
            Self::ImmediateDataSe => "IMMEDIATE_DATA_SE",
            Self::AtomicRequest => "ATOMIC_REQ",
            Self::AtomicResponse => "ATOMIC_RESP",
        }
    }
}

/// RDMA Read Request body (RFC 5040 section 4.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReadRequest {
    /// Data sink STag (requester's buffer).
    pub sink_stag: u32,
    /// Data sink tagged offset.
    pub sink_to: u64,
    /// RDMA Read message size.
    pub size: u32,
    /// Data source STag (responder's buffer).
    pub src_stag: u32,
    /// Data source tagged offset.
    pub src_to: u64,
}

impl ReadRequest {
    /// Decodes the 28 octet body.
    pub fn decode(b: &[u8]) -> Option<Self> {
        Some(Self {
            sink_stag: be32(b, 0)?,
            sink_to: be64(b, 4)?,
            size: be32(b, 12)?,
            src_stag: be32(b, 16)?,
            src_to: be64(b, 20)?,
        })
    }

    /// Encodes the 28 octet body.
    pub fn encode(&self, out: &mut [u8]) -> Option<()> {
        put(out, 0, &self.sink_stag.to_be_bytes())?;
        put(out, 4, &self.sink_to.to_be_bytes())?;
        put(out, 12, &self.size.to_be_bytes())?;
        put(out, 16, &self.src_stag.to_be_bytes())?;
        put(out, 20, &self.src_to.to_be_bytes())
    }
}

/// Opcode specific RDMAP header part following the DDP header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Body {
    /// No further header.
    None,
    /// RDMA Read Request body.
    ReadRequest(ReadRequest),
    /// Terminate control word.
    Terminate(TermHdr),
    /// The 8 octets of Immediate Data (RFC 7306 section 6.2), as sent.
    Immediate([u8; IMMEDIATE_DATA_LEN]),
    /// Atomic Request header (RFC 7306 section 5.2.1).
    AtomicRequest(AtomicRequest),
    /// Atomic Response header (RFC 7306 section 5.2.2).
    AtomicResponse(AtomicResponse),
}

/// The complete DDP/RDMAP header of one DDP segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SegmentHeader {
    /// Control field.
    pub ctrl: Control,
    /// Decoded opcode (consistent with `ctrl.opcode()`).
    pub opcode: Opcode,
    /// DDP header.
    pub ddp: DdpHdr,
    /// Opcode specific body.
    pub body: Body,
}

/// Validates the two control octets: DDP version, RDMAP version, opcode
/// and T bit/opcode agreement. Returns the opcode. Plain RFC 5040: the
/// same as [`check_control_ext`] with [`Extensions::NONE`].
#[inline]
pub fn check_control(ctrl: Control) -> Result<Opcode, ProtocolError> {
    check_control_ext(ctrl, Extensions::NONE)
}

/// [`check_control`] accepting the opcodes of the extensions `ext`.
#[inline]
pub fn check_control_ext(ctrl: Control, ext: Extensions) -> Result<Opcode, ProtocolError> {
    if ctrl.ddp_version() != DDP_VERSION {
        return Err(if ctrl.tagged() {
            DdpError::TaggedInvalidVersion
        } else {
            DdpError::UntaggedInvalidVersion
        }
        .into());
    }
    if ctrl.rdmap_version() != RDMAP_VERSION {
        return Err(RdmapError::InvalidVersion.into());
    }
    let op = Opcode::from_u8_ext(ctrl.opcode(), ext).ok_or(RdmapError::UnexpectedOpcode)?;
    if op.is_tagged() != ctrl.tagged() {
        return Err(RdmapError::UnexpectedOpcode.into());
    }
    Ok(op)
}

/// A DDP/RDMAP header in its wire form, checked as
/// [`SegmentHeader::parse_ext`] checks it (versions, opcode, T bit, the
/// untagged QN, the length of the opcode's header): its fields are
/// decoded where they are read. The receive path hands a whole segment to
/// its sink this way ([`crate::wire::rx::RxSink::on_segment`]), so that
/// the common cases read the few fields they need and no whole
/// [`SegmentHeader`] is laid out for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderView<'a> {
    /// The header's octets, exactly `opcode.hdr_len()` of them.
    raw: &'a [u8],
    opcode: Opcode,
}

impl<'a> HeaderView<'a> {
    /// Checks the header at the start of `buf` (the control field first),
    /// accepting the opcodes of the extensions `ext`: the errors of
    /// [`SegmentHeader::parse_ext`], in its order.
    #[inline]
    pub fn check_ext(buf: &'a [u8], ext: Extensions) -> Result<Self, ProtocolError> {
        let short = || {
            ProtocolError::Llp(LlpError::Framing(FramingFault::UlpduTooShort {
                len: u16::try_from(buf.len()).unwrap_or(u16::MAX),
            }))
        };
        let (Some(&c0), Some(&c1)) = (buf.first(), buf.get(1)) else {
            return Err(short());
        };
        let opcode = check_control_ext(Control::decode([c0, c1]), ext)?;
        let raw = buf.get(..opcode.hdr_len()).ok_or_else(short)?;
        // An untagged opcode names its queue (a tagged one none).
        if let Some(qn) = opcode.queue() {
            if be32(raw, 6) != Some(qn) {
                return Err(DdpError::UntaggedInvalidQn.into());
            }
        }
        Ok(Self { raw, opcode })
    }

    /// The opcode.
    pub const fn opcode(&self) -> Opcode {
        self.opcode
    }

    /// The header's octets (for the header copy of a TERMINATE).
    pub const fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// The control field.
    pub fn ctrl(&self) -> Control {
        match self.raw {
            [c0, c1, ..] => Control::decode([*c0, *c1]),
            _ => Control::decode([0, 0]),
        }
    }

    /// The tagged fields, if tagged.
    pub fn tagged(&self) -> Option<TaggedHdr> {
        if self.opcode.is_tagged() {
            Some(TaggedHdr {
                stag: be32(self.raw, 2)?,
                to: be64(self.raw, 6)?,
            })
        } else {
            None
        }
    }

    /// The untagged fields, if untagged.
    pub fn untagged(&self) -> Option<UntaggedHdr> {
        if self.opcode.is_tagged() {
            return None;
        }
        Some(UntaggedHdr {
            ulp: be32(self.raw, 2)?,
            qn: be32(self.raw, 6)?,
            msn: be32(self.raw, 10)?,
            mo: be32(self.raw, 14)?,
        })
    }

    /// The whole header, as [`SegmentHeader::parse_ext`] gives it (which
    /// is this view's, decoded; the checks were made).
    #[inline(always)]
    pub fn header(&self) -> Result<SegmentHeader, ProtocolError> {
        let short = || {
            ProtocolError::Llp(LlpError::Framing(FramingFault::UlpduTooShort {
                len: u16::try_from(self.raw.len()).unwrap_or(u16::MAX),
            }))
        };
        let (ctrl, opcode, h) = (self.ctrl(), self.opcode, self.raw);
        let ddp = DdpHdr::decode(ctrl, h).ok_or_else(short)?;
        let rest = h.get(ctrl.ddp_hdr_len()..).ok_or_else(short)?;
        let body = match opcode {
            Opcode::ReadRequest => Body::ReadRequest(ReadRequest::decode(rest).ok_or_else(short)?),
            Opcode::Terminate => {
                let w: [u8; 4] = rest
                    .get(..4)
                    .and_then(|b| b.try_into().ok())
                    .ok_or_else(short)?;
                Body::Terminate(TermHdr::decode(w))
            }
            Opcode::ImmediateData | Opcode::ImmediateDataSe => {
                let d: [u8; IMMEDIATE_DATA_LEN] = rest
                    .get(..IMMEDIATE_DATA_LEN)
                    .and_then(|b| b.try_into().ok())
                    .ok_or_else(short)?;
                Body::Immediate(d)
            }
            Opcode::AtomicRequest => {
                Body::AtomicRequest(AtomicRequest::decode(rest).ok_or_else(short)?)
            }
            Opcode::AtomicResponse => {
                Body::AtomicResponse(AtomicResponse::decode(rest).ok_or_else(short)?)
            }
            Opcode::Write
            | Opcode::ReadResponse
            | Opcode::Send
            | Opcode::SendInvalidate
            | Opcode::SendSe
            | Opcode::SendSeInvalidate => Body::None,
        };
        Ok(SegmentHeader {
            ctrl,
            opcode,
            ddp,
            body,
        })
    }
}

impl SegmentHeader {
    /// RDMA Write segment header.
    pub const fn write(stag: u32, to: u64, last: bool) -> Self {
        Self::tagged(Opcode::Write, stag, to, last)
    }

    /// RDMA Read Response segment header.
    pub const fn read_response(stag: u32, to: u64, last: bool) -> Self {
        Self::tagged(Opcode::ReadResponse, stag, to, last)
    }

    const fn tagged(op: Opcode, stag: u32, to: u64, last: bool) -> Self {
        Self {
            ctrl: Control::new(true, last, op as u8),
            opcode: op,
            ddp: DdpHdr::Tagged(TaggedHdr { stag, to }),
            body: Body::None,
        }
    }

    /// Send family segment header (`op` must be a Send opcode;
    /// `inval_stag` is used for the Invalidate variants).
    pub const fn send(op: Opcode, inval_stag: u32, msn: u32, mo: u32, last: bool) -> Self {
        let ulp = if op.has_invalidate() { inval_stag } else { 0 };
        Self {
            ctrl: Control::new(false, last, op as u8),
            opcode: op,
            ddp: DdpHdr::Untagged(UntaggedHdr {
                ulp,
                qn: QN_SEND,
                msn,
                mo,
            }),
            body: Body::None,
        }
    }

    /// RDMA Read Request header (single segment message, MO 0).
    pub const fn read_request(msn: u32, rr: ReadRequest) -> Self {
        Self {
            ctrl: Control::new(false, true, Opcode::ReadRequest as u8),
            opcode: Opcode::ReadRequest,
            ddp: DdpHdr::Untagged(UntaggedHdr {
                ulp: 0,
                qn: QN_READ_REQUEST,
                msn,
                mo: 0,
            }),
            body: Body::ReadRequest(rr),
        }
    }

    /// Terminate header (single segment message, MO 0).
    pub const fn terminate(msn: u32, t: TermHdr) -> Self {
        Self {
            ctrl: Control::new(false, true, Opcode::Terminate as u8),
            opcode: Opcode::Terminate,
            ddp: DdpHdr::Untagged(UntaggedHdr {
                ulp: 0,
                qn: QN_TERMINATE,
                msn,
                mo: 0,
            }),
            body: Body::Terminate(t),
        }
    }

    /// Untagged single segment header (MO 0, L set) of `op` on its queue.
    const fn single(op: Opcode, msn: u32, body: Body) -> Self {
        let qn = match op.queue() {
            Some(q) => q,
            None => 0,
        };
        Self {
            ctrl: Control::new(false, true, op as u8),
            opcode: op,
            ddp: DdpHdr::Untagged(UntaggedHdr {
                ulp: 0,
                qn,
                msn,
                mo: 0,
            }),
            body,
        }
    }

    /// Immediate Data header (RFC 7306 section 6; `solicited` selects
    /// Immediate Data with SE): QN 0, the Send queue's `msn`, MO 0, one
    /// segment, the Invalidate STag field zero.
    pub const fn immediate(solicited: bool, msn: u32, data: [u8; IMMEDIATE_DATA_LEN]) -> Self {
        let op = if solicited {
            Opcode::ImmediateDataSe
        } else {
            Opcode::ImmediateData
        };
        Self::single(op, msn, Body::Immediate(data))
    }

    /// Atomic Request header (RFC 7306 section 5.2.1): QN 1 (shared with
    /// RDMA Read Requests, so `msn` counts both), MO 0, one segment.
    pub const fn atomic_request(msn: u32, req: AtomicRequest) -> Self {
        Self::single(Opcode::AtomicRequest, msn, Body::AtomicRequest(req))
    }

    /// Atomic Response header (RFC 7306 section 5.2.2): QN 3, MO 0, one
    /// segment.
    pub const fn atomic_response(msn: u32, resp: AtomicResponse) -> Self {
        Self::single(Opcode::AtomicResponse, msn, Body::AtomicResponse(resp))
    }

    /// Header length in octets.
    pub const fn len(&self) -> usize {
        self.opcode.hdr_len()
    }

    /// Headers are never empty; provided for API completeness.
    pub const fn is_empty(&self) -> bool {
        false
    }

    /// The tagged fields, if tagged.
    pub const fn tagged_hdr(&self) -> Option<TaggedHdr> {
        match self.ddp {
            DdpHdr::Tagged(t) => Some(t),
            DdpHdr::Untagged(_) => None,
        }
    }

    /// The untagged fields, if untagged.
    pub const fn untagged_hdr(&self) -> Option<UntaggedHdr> {
        match self.ddp {
            DdpHdr::Untagged(u) => Some(u),
            DdpHdr::Tagged(_) => None,
        }
    }

    /// Encodes the header into `out`; returns its length (`None` when
    /// `out` is too small).
    pub fn encode(&self, out: &mut [u8]) -> Option<usize> {
        self.encode_parts(self.ctrl, &self.ddp, out)
    }

    /// Encodes the header of the segment at message offset `offset` of the
    /// message whose first segment this header is: L bit `last`, and the
    /// tagged offset advanced by `offset` (tagged) or MO `offset`
    /// (untagged). The same as encoding an adjusted copy, without copying
    /// the whole header (the transmit path does this per FPDU).
    pub fn encode_segment(&self, last: bool, offset: u32, out: &mut [u8]) -> Option<usize> {
        let ctrl = self.ctrl.with_last(last);
        let ddp = match self.ddp {
            DdpHdr::Tagged(t) => DdpHdr::Tagged(TaggedHdr {
                to: t.to.wrapping_add(u64::from(offset)),
                ..t
            }),
            DdpHdr::Untagged(u) => DdpHdr::Untagged(UntaggedHdr { mo: offset, ..u }),
        };
        self.encode_parts(ctrl, &ddp, out)
    }

    fn encode_parts(&self, ctrl: Control, ddp: &DdpHdr, out: &mut [u8]) -> Option<usize> {
        put(out, 0, &ctrl.encode())?;
        let n = ddp.encode(out)?;
        match self.body {
            Body::None => Some(n),
            Body::ReadRequest(rr) => {
                rr.encode(out.get_mut(n..)?)?;
                Some(n + READ_REQUEST_BODY_LEN)
            }
            Body::Terminate(t) => {
                put(out, n, &t.encode())?;
                Some(n + TERMINATE_BODY_LEN)
            }
            Body::Immediate(d) => {
                put(out, n, &d)?;
                Some(n + IMMEDIATE_DATA_LEN)
            }
            Body::AtomicRequest(r) => {
                r.encode(out.get_mut(n..)?)?;
                Some(n + ATOMIC_REQUEST_BODY_LEN)
            }
            Body::AtomicResponse(r) => {
                r.encode(out.get_mut(n..)?)?;
                Some(n + ATOMIC_RESPONSE_BODY_LEN)
            }
        }
    }

    /// Encodes into a fixed buffer; returns the buffer and the length.
    pub fn to_bytes(&self) -> ([u8; MAX_HDR_LEN], usize) {
        let mut b = [0u8; MAX_HDR_LEN];
        let n = self.encode(&mut b).unwrap_or(0);
        (b, n)
    }

    /// Parses and validates a header at the start of a ULPDU (`buf` starts
    /// at the control field). Checks DDP/RDMAP versions, opcode, T bit and
    /// the untagged QN of the opcode. A `buf` shorter than the opcode's
    /// header is a framing error. Plain RFC 5040: [`SegmentHeader::parse_ext`]
    /// with [`Extensions::NONE`].
    #[inline(always)]
    pub fn parse(buf: &[u8]) -> Result<Self, ProtocolError> {
        Self::parse_ext(buf, Extensions::NONE)
    }

    /// [`SegmentHeader::parse`] accepting the opcodes of the extensions
    /// `ext` (their bodies are decoded, not validated: see
    /// [`crate::wire::rfc7306`] for the receiver's checks).
    #[inline(always)]
    pub fn parse_ext(buf: &[u8], ext: Extensions) -> Result<Self, ProtocolError> {
        HeaderView::check_ext(buf, ext)?.header()
    }
}
