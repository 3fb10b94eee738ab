// SPDX-License-Identifier: GPL-2.0

//! RFC 7306 scenarios (issue #38): malformed Immediate Data and Atomic
//! messages. The "[kernel 7306]" ones go to the kernel consumer
//! `tests/kmod/rsiw_frmr_test.ko`, whose QP decodes RFC 7306 (rsiw
//! decodes it for kernel QPs only) and posts no receive; the other one
//! goes to the user-space server, whose QP does not decode it.
//!
//! rsiw implements Immediate Data, not the Atomic Operations: an Atomic
//! Request or Response draws "unexpected OpCode" (RFC 7306 section 1.1
//! expects a Remote Operation Error or an unexpected OpCode for an
//! unsupported atomic), whatever its target.

use rsiw_wire::error::{DdpError, ProtocolError, RdmapError, TermCode};
use rsiw_wire::rdmap::SegmentHeader;
use rsiw_wire::rfc7306::{immediate_from_u32, AtomicRequest, AtomicResponse};

use crate::frames::{self, ReqSpec};
use crate::scenarios::{establish, establish_pdata, expect_term, one_fpdu_term, Ctx, Outcome};

fn code(e: impl Into<ProtocolError>) -> TermCode {
    e.into().term_code()
}

/// An Immediate Data header (MSN 1, the first message of queue 0).
fn imm_hdr() -> Vec<u8> {
    frames::hdr_bytes(&SegmentHeader::immediate(
        false,
        1,
        immediate_from_u32(0x5eed),
    ))
}

/// Sends `hdr` and `payload` as one FPDU to the kernel module and expects
/// the TERMINATE `want`.
fn kernel_term(ctx: &Ctx, hdr: Vec<u8>, payload: &[u8], want: TermCode) -> Outcome {
    let mut p = establish(ctx, &ReqSpec::default())?;
    p.send_fpdu(&hdr, payload)?;
    let len = (hdr.len() + payload.len()) as u16;
    expect_term(ctx, &mut p, want, Some((&[&hdr], len)))
}

/// A well formed Immediate Data to a kernel QP with no receive posted: it
/// is decoded (not an unknown opcode) and finds no buffer.
pub fn imm_kernel_no_receive(ctx: &Ctx) -> Outcome {
    kernel_term(ctx, imm_hdr(), &[], code(DdpError::UntaggedMsnNoBuffer))
}

/// Immediate Data followed by 4 octets of payload: longer than the
/// message (RFC 7306 section 6.3: exactly 8 octets).
pub fn imm_kernel_too_long(ctx: &Ctx) -> Outcome {
    kernel_term(
        ctx,
        imm_hdr(),
        &[1, 2, 3, 4],
        code(DdpError::UntaggedTooLong),
    )
}

/// Immediate Data on queue 1 instead of 0.
pub fn imm_kernel_wrong_qn(ctx: &Ctx) -> Outcome {
    let mut h = imm_hdr();
    frames::set_qn(&mut h, 1);
    kernel_term(ctx, h, &[], code(DdpError::UntaggedInvalidQn))
}

/// Immediate Data with MO 8: not the start of a message.
pub fn imm_kernel_mo(ctx: &Ctx) -> Outcome {
    let mut h = imm_hdr();
    h[14..18].copy_from_slice(&8u32.to_be_bytes());
    kernel_term(ctx, h, &[], code(DdpError::UntaggedInvalidMo))
}

/// A FetchAdd at a misaligned address of the module's MR (remote read
/// and write): atomics are not implemented.
pub fn atomic_kernel_misaligned(ctx: &Ctx) -> Outcome {
    let (mut p, pd) = establish_pdata(ctx, &ReqSpec::default())?;
    let (Some(a), Some(s)) = (pd.get(0..8), pd.get(8..12)) else {
        return Err(format!(
            "the Reply's private data ({} octets) names no MR",
            pd.len()
        ));
    };
    let addr = u64::from_be_bytes(a.try_into().unwrap());
    let stag = u32::from_be_bytes(s.try_into().unwrap());
    let req = AtomicRequest::fetch_add(1, stag, addr + 4, 1, 0);
    let h = frames::hdr_bytes(&SegmentHeader::atomic_request(1, req));
    p.send_fpdu(&h, &[])?;
    let len = h.len() as u16;
    expect_term(
        ctx,
        &mut p,
        code(RdmapError::UnexpectedOpcode),
        Some((&[&h], len)),
    )
}

/// An Atomic Response that answers no request.
pub fn atomic_kernel_response_unasked(ctx: &Ctx) -> Outcome {
    let resp = AtomicResponse { req_id: 7, orig: 0 };
    let h = frames::hdr_bytes(&SegmentHeader::atomic_response(1, resp));
    kernel_term(ctx, h, &[], code(RdmapError::UnexpectedOpcode))
}

/// Immediate Data to a user-space QP, which speaks RFC 5040 only.
pub fn imm_user_qp(ctx: &Ctx) -> Outcome {
    one_fpdu_term(ctx, imm_hdr(), &[], code(RdmapError::UnexpectedOpcode))
}
