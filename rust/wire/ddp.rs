// SPDX-License-Identifier: GPL-2.0

//! DDP (RFC 5041): the 16 bit control field shared with RDMAP, tagged
//! (STag, TO) and untagged (QN, MSN, MO) buffer model headers, and the
//! receiver side placement checks producing the DDP error codes.
//!
//! Control field bit layout (first two ULPDU octets, as in siw `iwarp.h`):
//! octet 0 = `T(0x80) | L(0x40) | reserved(0x3c) | DV(0x03)`,
//! octet 1 = `RV(0xc0) | reserved(0x30) | RDMAP opcode(0x0f)`.

use crate::wire::error::DdpError;
use crate::wire::{be32, be64, put};

/// DDP version spoken (DV).
pub const DDP_VERSION: u8 = 1;
/// RDMAP version spoken (RV).
pub const RDMAP_VERSION: u8 = 1;
/// Tagged header length: control (2) + STag (4) + TO (8).
pub const TAGGED_HDR_LEN: usize = 14;
/// Untagged header length: control (2) + ULP field (4) + QN, MSN, MO.
pub const UNTAGGED_HDR_LEN: usize = 18;

/// The DDP/RDMAP control field, kept in its wire form (the two octets as
/// received or to be sent): its fields are read where they are needed, so
/// that a header is parsed and encoded without packing or unpacking them.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Control([u8; 2]);

impl Control {
    /// A control field with the current versions and zero reserved bits.
    pub const fn new(tagged: bool, last: bool, opcode: u8) -> Self {
        let mut b0 = DDP_VERSION & 0x03;
        if tagged {
            b0 |= 0x80;
        }
        if last {
            b0 |= 0x40;
        }
        Self([b0, (RDMAP_VERSION << 6) | (opcode & 0x0f)])
    }

    /// The control field of the two octets `b`.
    pub const fn decode(b: [u8; 2]) -> Self {
        Self(b)
    }

    /// The two control octets.
    pub const fn encode(self) -> [u8; 2] {
        self.0
    }

    /// T: tagged buffer model.
    pub const fn tagged(self) -> bool {
        self.0[0] & 0x80 != 0
    }

    /// L: last segment of the DDP message.
    pub const fn last(self) -> bool {
        self.0[0] & 0x40 != 0
    }

    /// DDP reserved bits (4 bits, zero on transmit).
    pub const fn ddp_rsvd(self) -> u8 {
        (self.0[0] >> 2) & 0x0f
    }

    /// DV: DDP version (2 bits).
    pub const fn ddp_version(self) -> u8 {
        self.0[0] & 0x03
    }

    /// RV: RDMAP version (2 bits).
    pub const fn rdmap_version(self) -> u8 {
        self.0[1] >> 6
    }

    /// RDMAP reserved bits (2 bits, zero on transmit).
    pub const fn rdmap_rsvd(self) -> u8 {
        (self.0[1] >> 4) & 0x03
    }

    /// RDMAP opcode (4 bits, raw).
    pub const fn opcode(self) -> u8 {
        self.0[1] & 0x0f
    }

    /// This control field with L set to `last`.
    pub const fn with_last(self, last: bool) -> Self {
        let b0 = if last {
            self.0[0] | 0x40
        } else {
            self.0[0] & !0x40
        };
        Self([b0, self.0[1]])
    }

    /// This control field with DV `version` (its 2 low bits).
    pub const fn with_ddp_version(self, version: u8) -> Self {
        Self([(self.0[0] & !0x03) | (version & 0x03), self.0[1]])
    }

    /// This control field with RV `version` (its 2 low bits).
    pub const fn with_rdmap_version(self, version: u8) -> Self {
        Self([self.0[0], (self.0[1] & 0x3f) | ((version & 0x03) << 6)])
    }

    /// This control field with the raw opcode `opcode` (its 4 low bits).
    pub const fn with_opcode(self, opcode: u8) -> Self {
        Self([self.0[0], (self.0[1] & 0xf0) | (opcode & 0x0f)])
    }

    /// Length of the DDP header selected by the T bit.
    pub const fn ddp_hdr_len(self) -> usize {
        if self.tagged() {
            TAGGED_HDR_LEN
        } else {
            UNTAGGED_HDR_LEN
        }
    }
}

impl core::fmt::Debug for Control {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Control")
            .field("tagged", &self.tagged())
            .field("last", &self.last())
            .field("ddp_rsvd", &self.ddp_rsvd())
            .field("ddp_version", &self.ddp_version())
            .field("rdmap_version", &self.rdmap_version())
            .field("rdmap_rsvd", &self.rdmap_rsvd())
            .field("opcode", &self.opcode())
            .finish()
    }
}

/// Tagged buffer model fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TaggedHdr {
    /// Steering tag of the sink buffer.
    pub stag: u32,
    /// Tagged offset of the first payload octet.
    pub to: u64,
}

/// Untagged buffer model fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UntaggedHdr {
    /// The 32 bits reserved for the ULP (RDMAP: Invalidate STag of Send
    /// with Invalidate, zero otherwise).
    pub ulp: u32,
    /// Queue number.
    pub qn: u32,
    /// Message sequence number.
    pub msn: u32,
    /// Message offset of the first payload octet.
    pub mo: u32,
}

/// A DDP header of either model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DdpHdr {
    /// Tagged buffer model.
    Tagged(TaggedHdr),
    /// Untagged buffer model.
    Untagged(UntaggedHdr),
}

impl DdpHdr {
    /// Decodes the model specific fields following the control field
    /// (`buf` starts at the control field). `None` when `buf` is short.
    pub fn decode(ctrl: Control, buf: &[u8]) -> Option<Self> {
        if ctrl.tagged() {
            Some(Self::Tagged(TaggedHdr {
                stag: be32(buf, 2)?,
                to: be64(buf, 6)?,
            }))
        } else {
            Some(Self::Untagged(UntaggedHdr {
                ulp: be32(buf, 2)?,
                qn: be32(buf, 6)?,
                msn: be32(buf, 10)?,
                mo: be32(buf, 14)?,
            }))
        }
    }

    /// Encodes the model specific fields into `out` after the control field
    /// (`out` starts at the control field); returns the header length.
    pub fn encode(&self, out: &mut [u8]) -> Option<usize> {
        match *self {
            Self::Tagged(t) => {
                put(out, 2, &t.stag.to_be_bytes())?;
                put(out, 6, &t.to.to_be_bytes())?;
                Some(TAGGED_HDR_LEN)
            }
            Self::Untagged(u) => {
                put(out, 2, &u.ulp.to_be_bytes())?;
                put(out, 6, &u.qn.to_be_bytes())?;
                put(out, 10, &u.msn.to_be_bytes())?;
                put(out, 14, &u.mo.to_be_bytes())?;
                Some(UNTAGGED_HDR_LEN)
            }
        }
    }
}

/// What the receiver knows about the STag named by a tagged segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaggedTarget {
    /// The STag is valid (registered and not invalidated).
    pub valid: bool,
    /// The STag is associated with this DDP stream (PD/QP match).
    pub associated: bool,
    /// First valid tagged offset of the buffer.
    pub base: u64,
    /// Length of the buffer.
    pub len: u64,
}

/// Tagged placement checks (RFC 5041 section 7.2): `target` is `None` when
/// the STag is unknown. Check order: STag, association, TO wrap, bounds.
pub fn check_tagged(
    hdr: &TaggedHdr,
    seg_payload_len: u32,
    target: Option<&TaggedTarget>,
) -> Result<(), DdpError> {
    let t = match target {
        Some(t) if t.valid => t,
        _ => return Err(DdpError::TaggedInvalidStag),
    };
    if !t.associated {
        return Err(DdpError::TaggedStagNotAssociated);
    }
    let end = hdr
        .to
        .checked_add(u64::from(seg_payload_len))
        .ok_or(DdpError::TaggedToWrap)?;
    let buf_end = t.base.saturating_add(t.len);
    if hdr.to < t.base || end > buf_end {
        return Err(DdpError::TaggedBaseBounds);
    }
    Ok(())
}

/// What the receiver knows about the untagged queue state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UntaggedTarget {
    /// Number of queues of the stream (RDMAP: 3).
    pub num_queues: u32,
    /// The MSN the next new message on this queue must carry.
    pub expected_msn: u32,
    /// Number of MSNs starting at `expected_msn` the receiver accepts.
    pub msn_window: u32,
    /// Length of the posted buffer for this MSN, `None` when no buffer.
    pub buf_len: Option<u32>,
    /// The MO the segment must carry (in-order stream), if known.
    pub expected_mo: Option<u32>,
}

/// Untagged placement checks (RFC 5041 section 7.2). Check order: QN, MSN
/// range, buffer, MO, length.
pub fn check_untagged(
    hdr: &UntaggedHdr,
    seg_payload_len: u32,
    q: &UntaggedTarget,
) -> Result<(), DdpError> {
    if hdr.qn >= q.num_queues {
        return Err(DdpError::UntaggedInvalidQn);
    }
    if hdr.msn.wrapping_sub(q.expected_msn) >= q.msn_window {
        return Err(DdpError::UntaggedMsnRange);
    }
    let buf_len = q.buf_len.ok_or(DdpError::UntaggedMsnNoBuffer)?;
    if let Some(mo) = q.expected_mo {
        if mo != hdr.mo {
            return Err(DdpError::UntaggedInvalidMo);
        }
    }
    let end = u64::from(hdr.mo) + u64::from(seg_payload_len);
    if end > u64::from(buf_len) {
        return Err(DdpError::UntaggedTooLong);
    }
    Ok(())
}
