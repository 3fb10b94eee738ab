// SPDX-License-Identifier: GPL-2.0

//! RFC 7306 (RDMA Protocol Extensions): the Atomic Request and Atomic
//! Response headers, the Atomic Operations they carry (masked FetchAdd and
//! masked CmpSwap, RFC 7306 section 5.1) and the receiver's checks of the
//! four new messages. The opcodes, queue numbers and the Immediate Data
//! body are in [`crate::wire::rdmap`].
//!
//! From the RFC (section 4.1 Figure 2, sections 5.2, 6.3 and 10):
//!
//! | opcode | message | QN | header after the 18 octet DDP header |
//! | --- | --- | --- | --- |
//! | 0x8 | Immediate Data | 0 | 8 octets of Immediate Data |
//! | 0x9 | Immediate Data with SE | 0 | 8 octets of Immediate Data |
//! | 0xA | Atomic Request | 1 | 52 octets (Figure 4) |
//! | 0xB | Atomic Response | 3 | 12 octets (Figure 6) |
//!
//! None of them carries ULP payload (Figure 3), each is one message that
//! consumes one untagged buffer of its queue, so each is a single segment
//! with MO 0 and exactly its header. Atomic Requests share QN 1, and with
//! it the MSN sequence and the IRD/ORD credits, with RDMA Read Requests
//! (section 5.2). Fields are big endian on the wire.
//!
//! RFC 7306 adds no TERMINATE codes (its IANA section registers opcodes,
//! Atomic Operation subcodes and queue numbers only): its errors use the
//! RFC 5040 ones, see [`AtomicRequest::check`].
//!
//! Section 4 of the RFC calls the Atomic Response header "32 bytes long as
//! specified in Figure 5"; Figure 6, the field descriptions and the
//! segment of Appendix A.2 give 4 + 8 = 12 octets, which is what this
//! module speaks. (RFC erratum EID 4443, reported against the RFC, could
//! not be read here to confirm it; three parts of the RFC against one
//! sentence settle it.)

use crate::wire::error::{DdpError, ProtocolError, RdmapError};
use crate::wire::{be32, be64, put};

/// Length of the Immediate Data of Immediate Data messages (section 6.2).
pub const IMMEDIATE_DATA_LEN: usize = 8;
/// The Immediate Data of a 32-bit verbs immediate value `imm` (host
/// order; the IB verbs' `imm_data` is 32 bits): the 64-bit big endian
/// number `imm`, four zero octets first. RFC 7306 leaves the 8 octets'
/// meaning to the ULP; this is rsiw's mapping.
pub const fn immediate_from_u32(imm: u32) -> [u8; IMMEDIATE_DATA_LEN] {
    (imm as u64).to_be_bytes()
}

/// The 32-bit verbs immediate value of received Immediate Data `data`:
/// the low 32 bits of the big endian number (the inverse of
/// [`immediate_from_u32`]; the upper four octets, which a verbs consumer
/// cannot see, are dropped).
pub const fn immediate_to_u32(data: [u8; IMMEDIATE_DATA_LEN]) -> u32 {
    u64::from_be_bytes(data) as u32
}

/// Length of the Atomic Request header (Figure 4).
pub const ATOMIC_REQUEST_BODY_LEN: usize = 52;
/// Length of the Atomic Response header (Figure 6).
pub const ATOMIC_RESPONSE_BODY_LEN: usize = 12;
/// The alignment an atomic target's ULP buffer address must have.
pub const ATOMIC_ALIGN: u64 = 8;

/// Atomic Operation Codes (AOpCode, RFC 7306 Figure 5 and section 10.1;
/// 0x1 is reserved).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum AtomicOp {
    /// Masked FetchAdd (section 5.1.1).
    FetchAdd = 0x0,
    /// Masked CmpSwap (section 5.1.2).
    CmpSwap = 0x2,
}

impl AtomicOp {
    /// Decodes an AOpCode (`None` for reserved and unassigned codes).
    pub const fn from_u8(v: u8) -> Option<Self> {
        match v {
            0x0 => Some(Self::FetchAdd),
            0x2 => Some(Self::CmpSwap),
            _ => None,
        }
    }

    /// Short name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::FetchAdd => "FetchAdd",
            Self::CmpSwap => "CmpSwap",
        }
    }
}

/// The Atomic Request header (RFC 7306 section 5.2.1, Figure 4), following
/// the untagged DDP header of an Atomic Request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AtomicRequest {
    /// The 28 reserved bits above the AOpCode (zero on transmit, ignored
    /// on receive; kept for a lossless round trip).
    pub rsvd: u32,
    /// AOpCode, raw (4 bits), see [`AtomicOp`].
    pub aopcode: u8,
    /// Request Identifier, chosen by the requester, reflected in the
    /// response.
    pub req_id: u32,
    /// Remote STag of the target buffer.
    pub stag: u32,
    /// Remote Tagged Offset of the 64-bit target.
    pub to: u64,
    /// Add Data (FetchAdd) or Swap Data (CmpSwap).
    pub add_swap: u64,
    /// Add Mask (FetchAdd) or Swap Mask (CmpSwap).
    pub add_swap_mask: u64,
    /// Compare Data (CmpSwap; zero on transmit for FetchAdd).
    pub compare: u64,
    /// Compare Mask (CmpSwap; all ones on transmit for FetchAdd).
    pub compare_mask: u64,
}

impl AtomicRequest {
    /// A masked FetchAdd of `add` at (`stag`, `to`) with field boundaries
    /// `add_mask` (0: one 64-bit addition). Compare Data 0 and Compare
    /// Mask all ones, as section 5.2.1 says to send them.
    pub const fn fetch_add(req_id: u32, stag: u32, to: u64, add: u64, add_mask: u64) -> Self {
        Self {
            rsvd: 0,
            aopcode: AtomicOp::FetchAdd as u8,
            req_id,
            stag,
            to,
            add_swap: add,
            add_swap_mask: add_mask,
            compare: 0,
            compare_mask: u64::MAX,
        }
    }

    /// A masked CmpSwap at (`stag`, `to`): where the target equals
    /// `compare` in the bits of `compare_mask`, the bits of `swap_mask`
    /// are replaced by those of `swap`.
    pub const fn cmp_swap(
        req_id: u32,
        stag: u32,
        to: u64,
        swap: u64,
        swap_mask: u64,
        compare: u64,
        compare_mask: u64,
    ) -> Self {
        Self {
            rsvd: 0,
            aopcode: AtomicOp::CmpSwap as u8,
            req_id,
            stag,
            to,
            add_swap: swap,
            add_swap_mask: swap_mask,
            compare,
            compare_mask,
        }
    }

    /// The operation, `None` for an AOpCode RFC 7306 does not define.
    pub const fn op(&self) -> Option<AtomicOp> {
        AtomicOp::from_u8(self.aopcode)
    }

    /// Decodes the 52 octet header (`None` when `b` is shorter).
    pub fn decode(b: &[u8]) -> Option<Self> {
        let w0 = be32(b, 0)?;
        Some(Self {
            rsvd: w0 >> 4,
            aopcode: (w0 & 0x0f) as u8,
            req_id: be32(b, 4)?,
            stag: be32(b, 8)?,
            to: be64(b, 12)?,
            add_swap: be64(b, 20)?,
            add_swap_mask: be64(b, 28)?,
            compare: be64(b, 36)?,
            compare_mask: be64(b, 44)?,
        })
    }

    /// Encodes the 52 octet header (`None` when `out` is too small).
    pub fn encode(&self, out: &mut [u8]) -> Option<()> {
        let w0 = (self.rsvd << 4) | u32::from(self.aopcode & 0x0f);
        put(out, 0, &w0.to_be_bytes())?;
        put(out, 4, &self.req_id.to_be_bytes())?;
        put(out, 8, &self.stag.to_be_bytes())?;
        put(out, 12, &self.to.to_be_bytes())?;
        put(out, 20, &self.add_swap.to_be_bytes())?;
        put(out, 28, &self.add_swap_mask.to_be_bytes())?;
        put(out, 36, &self.compare.to_be_bytes())?;
        put(out, 44, &self.compare_mask.to_be_bytes())
    }

    /// The responder's RDMAP checks of a delivered request (RFC 7306
    /// section 8.2), given the ULP buffer address `target` its tagged
    /// offset resolved to (the STag and bounds checks are the caller's,
    /// as for RDMA Reads):
    ///
    /// - an AOpCode the RFC does not define: "unexpected OpCode" (section
    ///   5.2.1 rule 4 asks for an error without naming it; section 1.1
    ///   expects an unsupported atomic to draw a Remote Operation Error
    ///   or Unexpected OpCode);
    /// - a target not 64-bit aligned: Remote Operation Error
    ///   "catastrophic error, localized to RDMAP stream" (section 8.2).
    pub fn check(&self, target: u64) -> Result<AtomicOp, RdmapError> {
        let op = self.op().ok_or(RdmapError::UnexpectedOpcode)?;
        if target % ATOMIC_ALIGN != 0 {
            return Err(RdmapError::CatastrophicStream);
        }
        Ok(op)
    }

    /// The value the target holds after the operation, given the value
    /// `orig` it held before (what the response returns). `None` for an
    /// undefined AOpCode.
    pub fn apply(&self, orig: u64) -> Option<u64> {
        Some(match self.op()? {
            AtomicOp::FetchAdd => masked_add(orig, self.add_swap, self.add_swap_mask),
            AtomicOp::CmpSwap => {
                if (self.compare ^ orig) & self.compare_mask == 0 {
                    (orig & !self.add_swap_mask) | (self.add_swap & self.add_swap_mask)
                } else {
                    orig
                }
            }
        })
    }
}

/// The masked addition of FetchAdd (RFC 7306 section 5.1.1): `a + b` in
/// independent fields, a set bit of `mask` marking the most significant
/// bit of a field, whose carry out is discarded. Mask 0 is one 64-bit
/// addition (modulo 2^64). Without the field tops the sums cannot carry
/// across a boundary; each top bit is then the sum of its two bits and
/// the carry into it.
pub const fn masked_add(a: u64, b: u64, mask: u64) -> u64 {
    ((a & !mask).wrapping_add(b & !mask)) ^ ((a ^ b) & mask)
}

/// The Atomic Response header (RFC 7306 section 5.2.2, Figure 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AtomicResponse {
    /// Original Request Identifier (the request's Request Identifier).
    pub req_id: u32,
    /// Original Remote Data Value: the target's value before the
    /// operation.
    pub orig: u64,
}

impl AtomicResponse {
    /// Decodes the 12 octet header (`None` when `b` is shorter).
    pub fn decode(b: &[u8]) -> Option<Self> {
        Some(Self {
            req_id: be32(b, 0)?,
            orig: be64(b, 4)?,
        })
    }

    /// Encodes the 12 octet header (`None` when `out` is too small).
    pub fn encode(&self, out: &mut [u8]) -> Option<()> {
        put(out, 0, &self.req_id.to_be_bytes())?;
        put(out, 4, &self.orig.to_be_bytes())
    }

    /// The requester's check of a response against the Request
    /// Identifier of the oldest outstanding Atomic Request (responses
    /// come in request order, section 5.2.2 rule 8; QN 3's MSN counts
    /// them). With none outstanding no QN 3 buffer waits for it:
    /// "invalid MSN, no buffer available"; another identifier is an
    /// invalid response (section 5.2.2 rule 7, no code named there):
    /// "unspecified operation error".
    pub fn check(&self, outstanding: Option<u32>) -> Result<(), ProtocolError> {
        match outstanding {
            None => Err(DdpError::UntaggedMsnNoBuffer.into()),
            Some(id) if id != self.req_id => Err(RdmapError::OperationUnspecified.into()),
            Some(_) => Ok(()),
        }
    }
}

/// The oldest outstanding request of a requester's queue 1, whose
/// response is due next: the responder answers Read Requests and Atomic
/// Requests in the order they came (they share queue 1, RFC 7306 section
/// 5.2), so a requester keeps one queue of both and matches each
/// response against its head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outstanding {
    /// An RDMA Read: a Read Response is due.
    Read,
    /// An atomic with this Request Identifier: an Atomic Response is due.
    Atomic(u32),
}

impl AtomicResponse {
    /// [`AtomicResponse::check`] against the requester's head of queue 1
    /// (`None`: nothing outstanding): while a Read's Read Response is due
    /// an Atomic Response comes out of order: "unexpected OpCode".
    pub fn check_head(&self, head: Option<Outstanding>) -> Result<(), ProtocolError> {
        match head {
            Some(Outstanding::Read) => Err(RdmapError::UnexpectedOpcode.into()),
            Some(Outstanding::Atomic(id)) => self.check(Some(id)),
            None => self.check(None),
        }
    }
}

/// The requester's check of a Read Response segment against its head of
/// queue 1 (see [`Outstanding`]): none outstanding, or an atomic's Atomic
/// Response due, makes it "unexpected OpCode".
pub fn check_read_response_head(head: Option<Outstanding>) -> Result<(), RdmapError> {
    match head {
        Some(Outstanding::Read) => Ok(()),
        Some(Outstanding::Atomic(_)) | None => Err(RdmapError::UnexpectedOpcode),
    }
}

/// Checks the one segment of an RFC 7306 message (Immediate Data, Atomic
/// Request or Atomic Response): exactly its header, MO 0, L set (each
/// consumes one untagged buffer, carries no ULP payload, and Immediate
/// Data exactly 8 octets, sections 4.2, 5.2 and 6.3). As for RDMA Read
/// Requests: another MO is an invalid MO; payload, or L clear (more
/// segments to come), makes the message longer than its buffer. A
/// segment shorter than its header was a framing error already.
pub fn check_segment(mo: u32, payload_len: u32, last: bool) -> Result<(), DdpError> {
    if mo != 0 {
        return Err(DdpError::UntaggedInvalidMo);
    }
    if payload_len != 0 || !last {
        return Err(DdpError::UntaggedTooLong);
    }
    Ok(())
}
