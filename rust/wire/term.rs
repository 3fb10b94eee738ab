// SPDX-License-Identifier: GPL-2.0

//! The RDMAP TERMINATE message (RFC 5040 section 4.8): its control word
//! (Layer in the high nibble of the first octet, EType in the low nibble,
//! Error Code in the second octet, then the HdrCt bits M, D, R as the three
//! most significant bits of the third octet, 13 reserved bits), and the
//! copied parts of the offending segment: DDP Segment Length (2 octets)
//! followed by the terminated DDP header and, for R, the RDMAP header.
//!
//! Compatibility note: upstream siw declares the control word as C
//! bitfields; on little endian hosts that puts Layer in the *low* nibble
//! of octet 0 and M/D/R in bits 0/1/2 of octet 2. [`TermHdr::decode_siw_le`]
//! and [`TermHdr::encode_siw_le`] speak that layout; the RFC layout is the
//! default. siw always sends the DDP Segment Length field when any of
//! M/D/R is set, and so does [`build_terminate`].

use crate::wire::ddp::{Control, TAGGED_HDR_LEN, UNTAGGED_HDR_LEN};
use crate::wire::error::{HdrCt, ProtocolError, TermCode};
use crate::wire::rdmap::{Opcode, SegmentHeader, READ_REQUEST_BODY_LEN};
use crate::wire::{be16, put};

/// The TERMINATE control word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TermHdr {
    /// Layer, EType and Error Code.
    pub code: TermCode,
    /// Header copy controls.
    pub hdrct: HdrCt,
    /// The 13 reserved bits.
    pub rsvd: u16,
}

impl TermHdr {
    /// Control word reporting `e`.
    pub const fn from_error(e: ProtocolError) -> Self {
        Self {
            code: e.term_code(),
            hdrct: e.hdr_ct(),
            rsvd: 0,
        }
    }

    /// The error the control word reports, if it is in the registry.
    pub fn error(&self) -> Option<ProtocolError> {
        ProtocolError::from_term_code(self.code)
    }

    /// Encodes in RFC 5040 layout.
    pub const fn encode(&self) -> [u8; 4] {
        let mut b2 = ((self.rsvd >> 8) & 0x1f) as u8;
        if self.hdrct.m {
            b2 |= 0x80;
        }
        if self.hdrct.d {
            b2 |= 0x40;
        }
        if self.hdrct.r {
            b2 |= 0x20;
        }
        [
            ((self.code.layer & 0x0f) << 4) | (self.code.etype & 0x0f),
            self.code.code,
            b2,
            (self.rsvd & 0xff) as u8,
        ]
    }

    /// Decodes the RFC 5040 layout.
    pub const fn decode(b: [u8; 4]) -> Self {
        Self {
            code: TermCode {
                layer: b[0] >> 4,
                etype: b[0] & 0x0f,
                code: b[1],
            },
            hdrct: HdrCt {
                m: b[2] & 0x80 != 0,
                d: b[2] & 0x40 != 0,
                r: b[2] & 0x20 != 0,
            },
            rsvd: (((b[2] & 0x1f) as u16) << 8) | b[3] as u16,
        }
    }

    /// Encodes the layout upstream siw produces on little endian hosts.
    pub const fn encode_siw_le(&self) -> [u8; 4] {
        let mut b2 = ((self.rsvd & 0x1f) as u8) << 3;
        if self.hdrct.m {
            b2 |= 0x01;
        }
        if self.hdrct.d {
            b2 |= 0x02;
        }
        if self.hdrct.r {
            b2 |= 0x04;
        }
        [
            ((self.code.etype & 0x0f) << 4) | (self.code.layer & 0x0f),
            self.code.code,
            b2,
            (self.rsvd >> 5) as u8,
        ]
    }

    /// Decodes the layout upstream siw produces on little endian hosts.
    pub const fn decode_siw_le(b: [u8; 4]) -> Self {
        Self {
            code: TermCode {
                layer: b[0] & 0x0f,
                etype: b[0] >> 4,
                code: b[1],
            },
            hdrct: HdrCt {
                m: b[2] & 0x01 != 0,
                d: b[2] & 0x02 != 0,
                r: b[2] & 0x04 != 0,
            },
            rsvd: ((b[2] >> 3) as u16) | ((b[3] as u16) << 5),
        }
    }
}

/// The copied parts of a received TERMINATE message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TermCopy<'a> {
    /// DDP Segment Length (meaningful when M is set).
    pub ddp_seg_len: u16,
    /// The terminated DDP header (starting at its control field).
    pub ddp_hdr: &'a [u8],
    /// The terminated RDMAP header (Read Request body), possibly empty.
    pub rdmap_hdr: &'a [u8],
}

/// Why a TERMINATE's copied headers could not be parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TermParseError {
    /// Fewer octets than the HdrCt bits announce.
    Truncated,
}

/// Parses the octets following the 22 octet Terminate header (`payload`)
/// according to `hdr.hdrct`. Returns `None` inside `Ok` when M, D and R are
/// all clear.
pub fn parse_term_copy<'a>(
    hdr: &TermHdr,
    payload: &'a [u8],
) -> Result<Option<TermCopy<'a>>, TermParseError> {
    let h = hdr.hdrct;
    if !(h.m || h.d || h.r) {
        return Ok(None);
    }
    let ddp_seg_len = be16(payload, 0).ok_or(TermParseError::Truncated)?;
    if !(h.d || h.r) {
        return Ok(Some(TermCopy {
            ddp_seg_len,
            ddp_hdr: &[],
            rdmap_hdr: &[],
        }));
    }
    let c0 = *payload.get(2).ok_or(TermParseError::Truncated)?;
    let c1 = *payload.get(3).ok_or(TermParseError::Truncated)?;
    let ctrl = Control::decode([c0, c1]);
    let dl = if ctrl.tagged() {
        TAGGED_HDR_LEN
    } else {
        UNTAGGED_HDR_LEN
    };
    let ddp_hdr = payload.get(2..2 + dl).ok_or(TermParseError::Truncated)?;
    let rl = if h.r && !ctrl.tagged() && ctrl.opcode() == Opcode::ReadRequest as u8 {
        READ_REQUEST_BODY_LEN
    } else {
        0
    };
    let rdmap_hdr = payload
        .get(2 + dl..2 + dl + rl)
        .ok_or(TermParseError::Truncated)?;
    Ok(Some(TermCopy {
        ddp_seg_len,
        ddp_hdr,
        rdmap_hdr,
    }))
}

/// Builds the ULPDU (DDP/RDMAP header + copied headers) of a TERMINATE
/// reporting `err` into `out`; returns its length.
///
/// `offending` is the DDP/RDMAP header of the segment that caused the error
/// (starting at its control field; may be longer); `ddp_seg_len` goes into
/// the DDP Segment Length field. The parts copied follow `err.hdr_ct()`,
/// except that R is cleared unless the offending segment is a Read
/// Request (only then does the 28 octet RDMAP header follow); if
/// `offending` is `None` or too short, nothing is copied and M/D/R are
/// cleared. `msn` is the Terminate queue MSN (siw sends 1).
pub fn build_terminate(
    err: ProtocolError,
    msn: u32,
    offending: Option<&[u8]>,
    ddp_seg_len: u16,
    out: &mut [u8],
) -> Option<usize> {
    let mut th = TermHdr::from_error(err);
    let mut copy: &[u8] = &[];
    if th.hdrct.d || th.hdrct.r {
        let picked = offending.and_then(|o| {
            let c0 = *o.first()?;
            let c1 = *o.get(1)?;
            let ctrl = Control::decode([c0, c1]);
            let mut n = ctrl.ddp_hdr_len();
            let rr = !ctrl.tagged() && ctrl.opcode() == Opcode::ReadRequest as u8;
            if th.hdrct.r && rr {
                n += READ_REQUEST_BODY_LEN;
            }
            Some((o.get(..n)?, rr))
        });
        match picked {
            Some((p, rr)) => {
                copy = p;
                // RFC 5040 4.8: R says the 28 octet Read Request header
                // follows; any other segment has no RDMAP header to copy.
                if !rr {
                    th.hdrct.r = false;
                }
            }
            None => th.hdrct = HdrCt::default(),
        }
    }
    let seg = SegmentHeader::terminate(msn, th);
    let mut n = seg.encode(out)?;
    if th.hdrct.m || th.hdrct.d || th.hdrct.r {
        put(out, n, &ddp_seg_len.to_be_bytes())?;
        n += 2;
        put(out, n, copy)?;
        n += copy.len();
    }
    Some(n)
}
