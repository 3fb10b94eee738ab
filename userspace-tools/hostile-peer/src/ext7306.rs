// SPDX-License-Identifier: GPL-2.0

//! RFC 7306 scenarios (issue #38): malformed Immediate Data and Atomic
//! messages. The "[kernel 7306]" ones go to the kernel consumer
//! `tests/kmod/rsiw_frmr_test.ko`, whose QP decodes RFC 7306 (rsiw
//! decodes it for kernel QPs only) and posts no receive; the other one
//! goes to the user-space server, whose QP does not decode it.
//!
//! The module's MR grants remote read and write, not remote atomic
//! (unless it is loaded with `atomic=1`, which the hostile runs do not
//! do): an Atomic Request at an aligned address of it draws the access
//! rights violation, at a misaligned one the Remote Operation Error RFC
//! 7306 section 8.2 names (the request is checked before its target).

use rsiw_wire::error::{DdpError, ProtocolError, RdmapError, TermCode};
use rsiw_wire::rdmap::SegmentHeader;
use rsiw_wire::rfc7306::{immediate_from_u32, AtomicRequest, AtomicResponse};

use crate::frames::{self, ReqSpec};
use crate::scenarios::{establish, expect_term, one_fpdu_term, Ctx, Outcome};
use crate::stall::frmr_registered;

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

/// Sends a FetchAdd of 1 at the module's MR (its address plus `off`, its
/// STag plus `key_delta`) and expects the TERMINATE `want`.
fn atomic_at(ctx: &Ctx, off: u64, key_delta: u32, want: TermCode) -> Outcome {
    // Once the module registered the MR: else its STag is not valid yet.
    let (mut p, mr) = frmr_registered(ctx)?;
    let (addr, stag) = (mr.addr, mr.stag.wrapping_add(key_delta));
    let req = AtomicRequest::fetch_add(1, stag, addr + off, 1, 0);
    let h = frames::hdr_bytes(&SegmentHeader::atomic_request(1, req));
    p.send_fpdu(&h, &[])?;
    let len = h.len() as u16;
    expect_term(ctx, &mut p, want, Some((&[&h], len)))
}

/// A FetchAdd at a misaligned address of the module's MR: RDMAP Remote
/// Operation Error, catastrophic (RFC 7306 section 8.2).
pub fn atomic_kernel_misaligned(ctx: &Ctx) -> Outcome {
    atomic_at(ctx, 4, 0, code(RdmapError::CatastrophicStream))
}

/// A FetchAdd at an aligned address of the module's MR, which grants no
/// remote atomic access (remote read and write only): access rights
/// violation.
pub fn atomic_kernel_no_access(ctx: &Ctx) -> Outcome {
    atomic_at(ctx, 8, 0, code(RdmapError::AccessRights))
}

/// A FetchAdd naming the module's MR with another key: invalid STag.
pub fn atomic_kernel_bad_stag(ctx: &Ctx) -> Outcome {
    atomic_at(ctx, 8, 1, code(RdmapError::InvalidStag))
}

/// An Atomic Response that answers no request: no QN 3 buffer waits for
/// it.
pub fn atomic_kernel_response_unasked(ctx: &Ctx) -> Outcome {
    let resp = AtomicResponse { req_id: 7, orig: 0 };
    let h = frames::hdr_bytes(&SegmentHeader::atomic_response(1, resp));
    kernel_term(ctx, h, &[], code(DdpError::UntaggedMsnNoBuffer))
}

/// Immediate Data to a user-space QP, which speaks RFC 5040 only.
pub fn imm_user_qp(ctx: &Ctx) -> Outcome {
    one_fpdu_term(ctx, imm_hdr(), &[], code(RdmapError::UnexpectedOpcode))
}
