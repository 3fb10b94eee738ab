// SPDX-License-Identifier: GPL-2.0

//! MPA connection setup (RFC 5044 section 7, RFC 6581): the MPA Request and
//! Reply frames (16 octet key, flags M/C/R, revision, PD_Length, private
//! data up to 512 octets), the RFC 6581 enhanced connection data (IRD/ORD
//! words with the peer-to-peer and RTR control flags) carried in the first
//! four private data octets of a revision 2 frame, and an incremental
//! parser that buffers the header and private data in a fixed array.
//!
//! Flag octet (first octet of the 16 bit word after the key, siw `iwarp.h`):
//! `M 0x80 | C 0x40 | R 0x20 | enhanced 0x10 | res 0x0f`. Of the reserved
//! bits, siw uses 0x08 (`MPA_RR_FLAG_GSO_EXP`) to say that its receiver
//! takes FPDUs larger than the TCP segment ([`RES_LARGE_FPDU`]); the raw
//! bits are kept in [`MpaRr::res`]. The second octet is the revision.

use crate::wire::be16;
use crate::wire::error::LlpError;

/// Key of an MPA Request frame.
pub const REQ_KEY: [u8; 16] = *b"MPA ID Req Frame";
/// Key of an MPA Reply frame.
pub const REP_KEY: [u8; 16] = *b"MPA ID Rep Frame";
/// Length of the fixed Request/Reply header.
pub const RR_HDR_LEN: usize = 20;
/// Maximum PD_Length (RFC 5044).
pub const MAX_PD_LEN: usize = 512;
/// Length of the RFC 6581 IRD/ORD data.
pub const IRD_ORD_LEN: usize = 4;

/// Largest private data of the consumer one Request/Reply can carry:
/// PD_Length is at most 512 (RFC 5044), of which an enhanced frame (RFC
/// 6581, revision 2 with IRD/ORD data) spends 4 on the IRD/ORD data; a
/// revision 1 frame, or a revision 2 frame without them, carries 512.
pub const fn max_user_pdata(enhanced: bool) -> usize {
    if enhanced {
        MAX_PD_LEN - IRD_ORD_LEN
    } else {
        MAX_PD_LEN
    }
}
/// Largest IRD/ORD value (14 bits).
pub const IRD_ORD_MAX: u16 = 0x3fff;

/// Marker flag.
pub const FLAG_MARKERS: u8 = 0x80;
/// CRC flag.
pub const FLAG_CRC: u8 = 0x40;
/// Reject flag.
pub const FLAG_REJECT: u8 = 0x20;
/// Enhanced connection data present (set with revision 2).
pub const FLAG_ENHANCED: u8 = 0x10;

/// Reserved flag bit (in [`MpaRr::res`]) that siw's `iwarp.h` names
/// `MPA_RR_FLAG_GSO_EXP`: the sender of the frame takes FPDUs of any
/// length up to the ULPDU_Length limit, not only FPDUs that fit one TCP
/// segment. A peer that does not know it ignores it (RFC 5044: reserved
/// bits are ignored on receipt); upstream siw's responder echoes the
/// Request's bits in its Reply, and its receiver takes any FPDU length.
pub const RES_LARGE_FPDU: u8 = 0x08;

/// MPA revision 1 (RFC 5044).
pub const REVISION_1: u8 = 1;
/// MPA revision 2 (RFC 6581).
pub const REVISION_2: u8 = 2;

/// Why an MPA Request/Reply is invalid (reported as LLP code 0x04).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConnectError {
    /// The key is neither the Request nor the Reply key.
    BadKey,
    /// A Request where a Reply was expected or vice versa.
    UnexpectedKind,
    /// Unsupported revision.
    BadRevision(u8),
    /// PD_Length larger than allowed.
    PdTooLong(u16),
    /// Revision 2 enhanced frame without room for IRD/ORD.
    MissingIrdOrd,
    /// Unspecified (decoded from a TERMINATE).
    Unspecified,
}

impl From<ConnectError> for LlpError {
    fn from(e: ConnectError) -> Self {
        LlpError::InvalidRequestReply(e)
    }
}

/// Request or Reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// "MPA ID Req Frame".
    Request,
    /// "MPA ID Rep Frame".
    Reply,
}

/// The fixed 20 octet MPA Request/Reply header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MpaRr {
    /// Request or Reply.
    pub kind: FrameKind,
    /// M: markers requested (Request) / required (Reply).
    pub markers: bool,
    /// C: CRC requested / used.
    pub crc: bool,
    /// R: connection rejected (Reply only).
    pub reject: bool,
    /// Enhanced connection data (RFC 6581) present.
    pub enhanced: bool,
    /// The remaining 4 flag bits, raw.
    pub res: u8,
    /// Revision.
    pub revision: u8,
    /// Private data length (including IRD/ORD data when enhanced).
    pub pd_len: u16,
}

impl MpaRr {
    /// A header with all flags clear.
    pub const fn new(kind: FrameKind, revision: u8, pd_len: u16) -> Self {
        Self {
            kind,
            markers: false,
            crc: false,
            reject: false,
            enhanced: revision == REVISION_2,
            res: 0,
            revision,
            pd_len,
        }
    }

    /// Whether the frame's sender takes FPDUs larger than a TCP segment
    /// ([`RES_LARGE_FPDU`]).
    pub const fn large_fpdu(&self) -> bool {
        self.res & RES_LARGE_FPDU != 0
    }

    /// Whether the private data starts with IRD/ORD data.
    pub const fn has_ird_ord(&self) -> bool {
        self.revision == REVISION_2 && self.enhanced
    }

    /// Encodes the header.
    pub const fn encode(&self) -> [u8; RR_HDR_LEN] {
        let key = match self.kind {
            FrameKind::Request => REQ_KEY,
            FrameKind::Reply => REP_KEY,
        };
        let mut f = self.res & 0x0f;
        if self.markers {
            f |= FLAG_MARKERS;
        }
        if self.crc {
            f |= FLAG_CRC;
        }
        if self.reject {
            f |= FLAG_REJECT;
        }
        if self.enhanced {
            f |= FLAG_ENHANCED;
        }
        let pd = self.pd_len.to_be_bytes();
        let mut out = [0u8; RR_HDR_LEN];
        let mut i = 0;
        while i < 16 {
            out[i] = key[i];
            i += 1;
        }
        out[16] = f;
        out[17] = self.revision;
        out[18] = pd[0];
        out[19] = pd[1];
        out
    }

    /// Decodes and validates a header (`buf` holds at least 20 octets).
    /// Accepts revisions 1 and 2, PD_Length up to `max_pd` (at most 512).
    pub fn decode(buf: &[u8], max_pd: usize) -> Result<Self, ConnectError> {
        let key = buf.get(..16).ok_or(ConnectError::BadKey)?;
        let kind = if key == REQ_KEY {
            FrameKind::Request
        } else if key == REP_KEY {
            FrameKind::Reply
        } else {
            return Err(ConnectError::BadKey);
        };
        let f = *buf.get(16).ok_or(ConnectError::BadKey)?;
        let revision = *buf.get(17).ok_or(ConnectError::BadKey)?;
        let pd_len = be16(buf, 18).ok_or(ConnectError::BadKey)?;
        if revision != REVISION_1 && revision != REVISION_2 {
            return Err(ConnectError::BadRevision(revision));
        }
        if usize::from(pd_len) > max_pd.min(MAX_PD_LEN) {
            return Err(ConnectError::PdTooLong(pd_len));
        }
        let h = Self {
            kind,
            markers: f & FLAG_MARKERS != 0,
            crc: f & FLAG_CRC != 0,
            reject: f & FLAG_REJECT != 0,
            enhanced: f & FLAG_ENHANCED != 0,
            res: f & 0x0f,
            revision,
            pd_len,
        };
        if h.has_ird_ord() && usize::from(pd_len) < IRD_ORD_LEN {
            return Err(ConnectError::MissingIrdOrd);
        }
        Ok(h)
    }
}

/// RTR message type of a peer-to-peer setup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RtrType {
    /// Send (neither the Write nor the Read flag set).
    Send,
    /// Zero length RDMA Write.
    Write,
    /// Zero length RDMA Read.
    Read,
}

impl RtrType {
    /// RDMA Read credits the RTR message itself takes: 1 for the Read
    /// RTR, a zero length RDMA Read Request (RFC 6581), which the
    /// responder must answer with a Read Response. So the responder's IRD
    /// and the initiator's ORD must be at least this, whatever the
    /// consumers asked for: with an IRD of 0 the RTR would exceed it, and
    /// the responder's answer would be a catastrophic TERMINATE.
    pub const fn read_credits(self) -> u32 {
        match self {
            RtrType::Read => 1,
            RtrType::Send | RtrType::Write => 0,
        }
    }
}

/// RFC 6581 enhanced connection data: two 16 bit words,
/// `A(0x8000) | B(0x4000) | IRD(14)` and `C(0x8000) | D(0x4000) | ORD(14)`
/// with A = peer-to-peer model, B = zero length RTR, C = RDMA Write RTR,
/// D = RDMA Read RTR (siw `MPA_V2_PEER_TO_PEER`, `MPA_V2_ZERO_LENGTH_RTR`,
/// `MPA_V2_RDMA_WRITE_RTR`, `MPA_V2_RDMA_READ_RTR`; cxgb4 uses the same
/// bits). In a Request C/D list the RTR types the initiator can send, in a
/// Reply the responder keeps exactly the one it chose.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IrdOrd {
    /// A: peer-to-peer connection model (an RTR message follows).
    pub peer_to_peer: bool,
    /// B: the RTR message has zero length.
    pub zero_length_rtr: bool,
    /// Inbound RDMA Read queue depth (14 bits).
    pub ird: u16,
    /// C: RDMA Write RTR.
    pub write_rtr: bool,
    /// D: RDMA Read RTR.
    pub read_rtr: bool,
    /// Outbound RDMA Read queue depth (14 bits).
    pub ord: u16,
}

impl IrdOrd {
    /// Encodes the 4 octets (IRD/ORD are truncated to 14 bits).
    pub const fn encode(&self) -> [u8; IRD_ORD_LEN] {
        let mut i = self.ird & IRD_ORD_MAX;
        if self.peer_to_peer {
            i |= 0x8000;
        }
        if self.zero_length_rtr {
            i |= 0x4000;
        }
        let mut o = self.ord & IRD_ORD_MAX;
        if self.write_rtr {
            o |= 0x8000;
        }
        if self.read_rtr {
            o |= 0x4000;
        }
        let a = i.to_be_bytes();
        let b = o.to_be_bytes();
        [a[0], a[1], b[0], b[1]]
    }

    /// Decodes the 4 octets.
    pub const fn decode(b: [u8; IRD_ORD_LEN]) -> Self {
        let i = u16::from_be_bytes([b[0], b[1]]);
        let o = u16::from_be_bytes([b[2], b[3]]);
        Self {
            peer_to_peer: i & 0x8000 != 0,
            zero_length_rtr: i & 0x4000 != 0,
            ird: i & IRD_ORD_MAX,
            write_rtr: o & 0x8000 != 0,
            read_rtr: o & 0x4000 != 0,
            ord: o & IRD_ORD_MAX,
        }
    }

    /// Responder side RTR choice for this (Request) data: Write if both
    /// sides can, else Read if both can, else Send when the initiator
    /// offered neither; otherwise [`LlpError::NoMatchingRtr`].
    pub fn choose_rtr(&self, local_write: bool, local_read: bool) -> Result<RtrType, LlpError> {
        if self.write_rtr && local_write {
            Ok(RtrType::Write)
        } else if self.read_rtr && local_read {
            Ok(RtrType::Read)
        } else if !self.write_rtr && !self.read_rtr {
            Ok(RtrType::Send)
        } else {
            Err(LlpError::NoMatchingRtr)
        }
    }

    /// IRD/ORD check of a Reply against the initiator's ORD: the responder
    /// must not offer less inbound read depth than the initiator will use.
    pub fn check_ird(&self, initiator_ord: u16) -> Result<(), LlpError> {
        if self.ird < initiator_ord {
            Err(LlpError::InsufficientIrd)
        } else {
            Ok(())
        }
    }
}

/// A complete Request/Reply frame: header plus private data (and IRD/ORD).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RrFrame<'a> {
    /// The header.
    pub hdr: MpaRr,
    /// IRD/ORD data when `hdr.has_ird_ord()`.
    pub ird_ord: Option<IrdOrd>,
    /// Private data after the IRD/ORD data.
    pub pdata: &'a [u8],
}

/// Encodes a complete frame into `out`; returns its length. `hdr.pd_len`
/// is computed from `ird_ord` and `pdata`.
pub fn encode_rr(
    mut hdr: MpaRr,
    ird_ord: Option<IrdOrd>,
    pdata: &[u8],
    out: &mut [u8],
) -> Result<usize, ConnectError> {
    hdr.enhanced = ird_ord.is_some();
    let extra = if ird_ord.is_some() { IRD_ORD_LEN } else { 0 };
    let pd = pdata.len() + extra;
    if pd > MAX_PD_LEN {
        return Err(ConnectError::PdTooLong(
            u16::try_from(pd).unwrap_or(u16::MAX),
        ));
    }
    hdr.pd_len = pd as u16;
    let total = RR_HDR_LEN + pd;
    let o = out
        .get_mut(..total)
        .ok_or(ConnectError::PdTooLong(hdr.pd_len))?;
    let (h, rest) = o.split_at_mut(RR_HDR_LEN);
    h.copy_from_slice(&hdr.encode());
    let (io, pdo) = rest.split_at_mut(extra);
    if let Some(x) = ird_ord {
        io.copy_from_slice(&x.encode());
    }
    pdo.copy_from_slice(pdata);
    Ok(total)
}

/// Incremental Request/Reply parser with a fixed internal buffer.
#[derive(Clone, Debug)]
pub struct RrParser {
    buf: [u8; RR_HDR_LEN + MAX_PD_LEN],
    have: usize,
    hdr: Option<MpaRr>,
    expect: Option<FrameKind>,
    max_pd: usize,
}

impl RrParser {
    /// A parser expecting `expect` (or either kind when `None`) and
    /// accepting private data up to `max_pd` octets (capped at 512).
    pub const fn new(expect: Option<FrameKind>, max_pd: usize) -> Self {
        Self {
            buf: [0; RR_HDR_LEN + MAX_PD_LEN],
            have: 0,
            hdr: None,
            expect,
            max_pd: if max_pd < MAX_PD_LEN {
                max_pd
            } else {
                MAX_PD_LEN
            },
        }
    }

    fn total(&self) -> usize {
        RR_HDR_LEN + self.hdr.map_or(0, |h| usize::from(h.pd_len))
    }

    /// Feeds stream octets. Returns how many octets of `data` were used
    /// (the rest belongs to the stream after the frame) and whether the
    /// frame is complete.
    pub fn push(&mut self, data: &[u8]) -> Result<(usize, bool), ConnectError> {
        let mut used = 0;
        loop {
            if self.hdr.is_some() && self.have >= self.total() {
                return Ok((used, true));
            }
            let want = if self.hdr.is_none() {
                RR_HDR_LEN
            } else {
                self.total()
            };
            let n = want.saturating_sub(self.have).min(data.len() - used);
            if n == 0 {
                return Ok((used, false));
            }
            let src = data.get(used..used + n).ok_or(ConnectError::Unspecified)?;
            self.buf
                .get_mut(self.have..self.have + n)
                .ok_or(ConnectError::Unspecified)?
                .copy_from_slice(src);
            self.have += n;
            used += n;
            if self.hdr.is_none() && self.have == RR_HDR_LEN {
                let h = MpaRr::decode(self.buf.get(..RR_HDR_LEN).unwrap_or(&[]), self.max_pd)?;
                if let Some(k) = self.expect {
                    if k != h.kind {
                        return Err(ConnectError::UnexpectedKind);
                    }
                }
                self.hdr = Some(h);
            }
        }
    }

    /// How many more stream octets the frame needs (header first, then the
    /// private data), so a reader can avoid taking octets past the frame.
    pub fn wanted(&self) -> usize {
        let want = if self.hdr.is_none() {
            RR_HDR_LEN
        } else {
            self.total()
        };
        want.saturating_sub(self.have)
    }

    /// The complete frame, once [`RrParser::push`] reported completion.
    pub fn frame(&self) -> Option<RrFrame<'_>> {
        let hdr = self.hdr?;
        if self.have < self.total() {
            return None;
        }
        let pd = self.buf.get(RR_HDR_LEN..self.total())?;
        if hdr.has_ird_ord() {
            let io: [u8; IRD_ORD_LEN] = pd.get(..IRD_ORD_LEN)?.try_into().ok()?;
            Some(RrFrame {
                hdr,
                ird_ord: Some(IrdOrd::decode(io)),
                pdata: pd.get(IRD_ORD_LEN..)?,
            })
        } else {
            Some(RrFrame {
                hdr,
                ird_ord: None,
                pdata: pd,
            })
        }
    }
}
