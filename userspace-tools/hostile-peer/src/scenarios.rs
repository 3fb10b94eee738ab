// SPDX-License-Identifier: GPL-2.0

//! The scenarios: each bends one thing and checks the target's answer
//! against RFC 5044 (MPA), RFC 6581, RFC 5041 (DDP) and RFC 5040 (RDMAP),
//! with the TERMINATE codes of the wire core's `ProtocolError` mapping.
//!
//! The target is an rdma_cm server on rsiw speaking rping's server
//! protocol (`rping -s -P`, or the canary server
//! `tests/guest/rsiw_canary.c`): its first posted receive takes one 16
//! octet `rping_rdma_info` Send, after which it issues an RDMA Read Request
//! to us (that gives us a valid STag). The canary server also posts a
//! second 16 octet receive and, once we answered its Read, sends us a
//! table of STags to attack ([`StagTable`]); the scenarios using it say
//! "[STag table]" in their description and fail against rping.

use std::net::{Shutdown, SocketAddr};
use std::thread::sleep;
use std::time::Duration;

use rsiw_wire::connect::{IrdOrd, REP_KEY};
use rsiw_wire::error::{DdpError, FramingFault, LlpError, ProtocolError, RdmapError, TermCode};
use rsiw_wire::markers::MARKER_INTERVAL;
use rsiw_wire::mpa::MpaMode;
use rsiw_wire::rdmap::{Opcode, ReadRequest};
use rsiw_wire::term::{parse_term_copy, TermHdr};

use crate::ext7306::{
    atomic_kernel_bad_stag, atomic_kernel_misaligned, atomic_kernel_no_access,
    atomic_kernel_response_unasked, imm_kernel_mo, imm_kernel_no_receive, imm_kernel_too_long,
    imm_kernel_wrong_qn, imm_user_qp,
};
use crate::frames::{self, ReqSpec};
use crate::peer::{code_str, end_str, End, MpaOutcome, Peer};
use crate::stall::{
    frmr_read_stalled_dereg, frmr_write_split_inval, read_stalled_dereg, write_split_dereg,
};
use crate::termcheck;

pub struct Ctx {
    pub target: SocketAddr,
    /// How long to wait for an answer.
    pub t: Duration,
}

/// Ok(details) when the outcome is what the RFCs prescribe, Err(got).
pub type Outcome = Result<String, String>;

/// A named scenario; `F` is its entry point (listener side: `fn(&Ctx)`,
/// initiator side: see `listen::InitScenario`).
pub struct Scenario<F = fn(&Ctx) -> Outcome> {
    pub name: &'static str,
    pub what: &'static str,
    pub run: F,
}

macro_rules! sc {
    ($n:ident, $w:expr) => {
        $crate::scenarios::Scenario {
            name: stringify!($n),
            what: $w,
            run: $n,
        }
    };
}
pub(crate) use sc;

pub const ALL: &[Scenario] = &[
    sc!(
        baseline_send,
        "valid MPA + rping Send: expect an RDMA Read Request (sanity of the tool)"
    ),
    sc!(
        mpa_rev1,
        "valid revision 1 Request (no IRD/ORD): expect a revision 1 Reply and a working Send"
    ),
    sc!(
        mpa_p2p_rtr,
        "revision 2 Request with peer-to-peer and Write RTR: expect P2P and Write RTR in the Reply, a working Send after our zero length Write"
    ),
    sc!(
        mpa_p2p_send_rtr,
        "[STag table] revision 2 Request, peer-to-peer with only the zero length Send RTR offered: expect the Send RTR in the Reply (no Write, no Read), the RTR taking no receive (two more Sends fit the two posted receives)"
    ),
    sc!(
        mpa_p2p_responder_holds,
        "[STag table] the canary server posts its Send right after rdma_accept() (-E); revision 2 Request with peer-to-peer and Write RTR: RFC 5044 7.1.2 and RFC 6581, expect no FPDU from the responder for 2 s while we hold back our RTR, then its Send only after the RTR"
    ),
    sc!(
        mpa_p2p_read_rtr_ird_0,
        "revision 2 Request, peer-to-peer with only the Read RTR offered and IRD 0, ORD 0, to a server accepting with responder resources 0 (-r 0): RFC 6581, expect the Read RTR in the Reply with IRD >= 1, and our zero length Read Request RTR answered with a Read Response, no TERMINATE"
    ),
    sc!(
        mpa_bad_key,
        "Request with a wrong key: expect close or reject, listener still accepts"
    ),
    sc!(
        mpa_bad_revision,
        "Request revision 3: expect close or reject, listener still accepts"
    ),
    sc!(
        mpa_reply_key,
        "a Reply frame instead of a Request: expect close or reject"
    ),
    sc!(mpa_pd_too_long, "PD_Length 513: expect close or reject"),
    sc!(
        mpa_enhanced_short,
        "revision 2 enhanced flag with PD_Length 2 (< IRD/ORD): expect close or reject"
    ),
    sc!(
        mpa_truncated,
        "10 octets of a Request, then FIN: expect close, no Reply"
    ),
    sc!(
        mpa_no_request,
        "no Request at all: no answer; after our close the listener still accepts"
    ),
    sc!(
        mpa_close_after_reply,
        "50 valid Requests, each connection closed as soon as its Reply is in: the listener still accepts"
    ),
    sc!(
        mpa_markers,
        "Request M=1: Reply, and the responder's FPDUs carry markers"
    ),
    sc!(
        mpa_crc_bad_frame,
        "Request C=1, Reply C=1, then a bad CRC: expect TERMINATE LLP/MPA CRC error"
    ),
    sc!(
        responder_waits_first_fpdu,
        "[STag table] the canary server sends first (-e): RFC 5044 7.1.2, expect no FPDU from the responder for 2 s, then its Send only after our first FPDU (rsiw: mpa_responder_waits=1, which rsiw_hostile.sh sets for it)"
    ),
    sc!(
        responder_grace,
        "[STag table] the canary server sends first (-e), rsiw's default (mpa_responder_waits=0): expect no FPDU from the responder for 30 ms after the Reply (it holds its first FPDUs for 50 ms: upstream siw's initiator fails a connection whose first FPDU came with the Reply), then its Send though we sent nothing"
    ),
    sc!(
        crc_bad_write_not_placed,
        "[STag table] Request C=1, then an RDMA Write of 64 octets to the invalidatable MR with a bad CRC (a header corrupted on the way): expect TERMINATE LLP/MPA CRC error and not one octet placed"
    ),
    sc!(
        crc_bad_write_not_placed_markers,
        "[STag table] as crc_bad_write_not_placed with markers both ways (Request M=1 C=1)"
    ),
    sc!(
        ulpdu_beyond_mulpdu,
        "a 9000 octet Send (> MULPDU, > MSS) into the 16 octet receive: MPA takes any ULPDU_Length, expect TERMINATE DDP untagged message too long (not an LLP framing error)"
    ),
    sc!(
        ulpdu_too_short,
        "ULPDU_Length 10 (< Send header): expect TERMINATE LLP/MPA framing error"
    ),
    sc!(
        ddp_bad_version,
        "Send with DDP version 0: expect TERMINATE DDP untagged invalid version"
    ),
    sc!(
        rdmap_bad_version,
        "Send with RDMAP version 0: expect TERMINATE RDMAP invalid version"
    ),
    sc!(
        rdmap_unknown_opcode,
        "untagged opcode 0xf: expect TERMINATE RDMAP unexpected OpCode"
    ),
    sc!(
        ddp_invalid_qn,
        "Send on QN 5: expect TERMINATE DDP invalid QN"
    ),
    sc!(
        ddp_msn_range,
        "Send with MSN 1000: expect TERMINATE DDP MSN range"
    ),
    sc!(
        send_no_recv,
        "8 Sends for one posted receive: expect TERMINATE DDP MSN no buffer"
    ),
    sc!(
        write_invalid_stag,
        "RDMA Write to an invalid STag: expect TERMINATE DDP tagged invalid STag"
    ),
    sc!(
        write_to_wrap,
        "RDMA Write to a valid STag with TO wrap: expect TERMINATE DDP tagged TO wrap"
    ),
    sc!(
        write_base_bounds,
        "RDMA Write past the end of a valid STag's buffer: expect TERMINATE DDP tagged base/bounds"
    ),
    sc!(
        read_req_invalid_stag,
        "Read Request for an invalid source STag: expect TERMINATE RDMAP invalid STag"
    ),
    sc!(
        read_req_to_wrap,
        "[STag table] Read Request from the read-only MR at source TO 2^64 - 8, 64 octets: expect TERMINATE RDMAP TO wrap"
    ),
    sc!(
        read_req_with_payload,
        "a zero length Read Request with 16 octets of payload: expect TERMINATE DDP untagged message too long"
    ),
    sc!(
        read_req_not_last,
        "a Read Request with L=0: expect TERMINATE DDP untagged message too long"
    ),
    sc!(
        unsolicited_read_response,
        "Read Response with no Read outstanding: expect TERMINATE RDMAP unexpected OpCode"
    ),
    sc!(
        send_too_long,
        "a 32 octet Send into the posted 16 octet receive: expect TERMINATE DDP untagged message too long"
    ),
    sc!(
        send_invalid_mo,
        "a Send of two segments, the second at MO 4096 (beyond the 16 octet receive): expect TERMINATE DDP untagged invalid MO"
    ),
    sc!(
        read_req_beyond_ird,
        "ORD 1 in the Request, then the Reply's IRD + 16 zero length Read Requests at once: expect TERMINATE RDMAP catastrophic error, localized to RDMAP stream"
    ),
    sc!(
        mpa_ird_raised,
        "Request IRD 16 ORD 8 to a server accepting with responder resources 1: expect a Reply IRD >= 8 (RFC 6581, as siw), then 8 zero length Read Requests at once all answered"
    ),
    sc!(
        marker_mismatch,
        "Request M=1 (needs a Reply M=1, rsiw: mpa_markers=1), a marker whose FPDUPTR is 8 off: expect TERMINATE LLP/MPA framing error"
    ),
    sc!(
        marker_fpduptr_low_bits,
        "Request M=1 (needs a Reply M=1, rsiw: mpa_markers=1), a marker whose FPDUPTR has its two low bits set, then the rping Send: RFC 5044 says treat them as zero, expect the Read Request, no TERMINATE"
    ),
    sc!(
        write_readonly,
        "[STag table] RDMA Write to the read-only MR: expect TERMINATE RDMAP access rights violation"
    ),
    sc!(
        write_other_pd,
        "[STag table] RDMA Write to the MR of another PD: expect TERMINATE DDP tagged STag not associated with DDP stream"
    ),
    sc!(
        write_invalidated,
        "[STag table] Send with Invalidate of the invalidatable MR, then an RDMA Write to it: expect TERMINATE DDP tagged invalid STag"
    ),
    sc!(
        send_inv_foreign,
        "[STag table] Send with Invalidate of the other PD's MR: expect TERMINATE RDMAP STag cannot be invalidated (protection)"
    ),
    sc!(
        send_inv_stale_key,
        "[STag table] Send with Invalidate naming the invalidatable MR's index with another key (a stale STag): expect TERMINATE RDMAP STag cannot be invalidated (operation)"
    ),
    sc!(
        after_terminate,
        "[STag table] a TERMINATE, then in the same TCP write a Write to the invalidatable MR, a Send and a malformed FPDU: expect nothing placed or completed, no TERMINATE back, the connection closed"
    ),
    sc!(
        ulpdu_shorter_than_header,
        "ULPDU_Length 0, 1, 2, 13 (< tagged header) and 17 (< Send header), one connection each: expect TERMINATE LLP/MPA framing error every time"
    ),
    sc!(
        read_resp_too_long,
        "[sink MR 64 octets] Read Response of 32 octets to the server's 16 octet Read (inside the sink MR): expect TERMINATE DDP tagged base/bounds, no octet placed past the 16"
    ),
    sc!(
        read_resp_wrong_stag,
        "Read Response to another sink STag than the Read Request named: expect TERMINATE DDP tagged invalid STag"
    ),
    sc!(
        read_resp_wrong_to,
        "Read Response to the right sink STag at TO + 8: expect TERMINATE DDP tagged base/bounds"
    ),
    sc!(
        read_resp_after_flush,
        "a malformed FPDU while the server's Read is outstanding, then (after rsiw's TERMINATE) the Read Response: expect one TERMINATE, the flushed Read's sink untouched"
    ),
    sc!(
        peer_terminate,
        "we send a TERMINATE: expect the connection closed, no TERMINATE back"
    ),
    sc!(
        half_fpdu_rst,
        "half an FPDU, then RST: listener still accepts"
    ),
    sc!(
        silence_after_mpa,
        "silence after MPA: nothing unsolicited; listener still accepts after close"
    ),
    sc!(
        garbage_after_mpa,
        "4 KiB of random octets after MPA: expect the connection closed"
    ),
    sc!(
        write_split_dereg,
        "[STag table] an RDMA Write segment cut in two: after its first half the canary deregisters the MR (SIGUSR1): expect TERMINATE DDP invalid STag for the rest and not one octet of it placed"
    ),
    sc!(
        read_stalled_dereg,
        "[STag table] an RDMA Read of the canary's 512 KiB stall MR that we leave unread (TCP's window closes); the canary deregisters the MR and overwrites it: expect only octets from before, then TERMINATE RDMAP invalid STag or a close"
    ),
    sc!(
        frmr_write_split_inval,
        "[kernel FRMR] write_split_dereg against tests/kmod/rsiw_frmr_test.ko: a fast registration MR that the kernel consumer invalidates (Local Invalidate) after the first half, then reuses: expect TERMINATE DDP invalid STag for the rest and the module's buffer unchanged"
    ),
    sc!(
        frmr_read_stalled_dereg,
        "[kernel FRMR] read_stalled_dereg against tests/kmod/rsiw_frmr_test.ko: a Read of its 512 KiB fast registration MR left unread; the module deregisters the MR (ib_dereg_mr) and overwrites the pages: expect only octets from before, then TERMINATE RDMAP invalid STag or a close"
    ),
    sc!(
        imm_user_qp,
        "RFC 7306 Immediate Data to a user-space QP (RFC 5040 only, libsiw): expect TERMINATE RDMAP unexpected OpCode"
    ),
    sc!(
        imm_kernel_no_receive,
        "[kernel 7306] well formed Immediate Data to tests/kmod/rsiw_frmr_test.ko's kernel QP, which posts no receive: decoded, expect TERMINATE DDP no buffer (MSN)"
    ),
    sc!(
        imm_kernel_too_long,
        "[kernel 7306] Immediate Data with 4 octets of payload (the message is exactly 8): expect TERMINATE DDP message too long"
    ),
    sc!(
        imm_kernel_wrong_qn,
        "[kernel 7306] Immediate Data on queue 1 instead of 0: expect TERMINATE DDP invalid QN"
    ),
    sc!(
        imm_kernel_mo,
        "[kernel 7306] Immediate Data with MO 8: expect TERMINATE DDP invalid MO"
    ),
    sc!(
        atomic_kernel_misaligned,
        "[kernel 7306] an Atomic Request (FetchAdd) at a misaligned address of the module's MR: expect TERMINATE RDMAP remote operation error, catastrophic (RFC 7306 8.2)"
    ),
    sc!(
        atomic_kernel_no_access,
        "[kernel 7306] an Atomic Request (FetchAdd) at an aligned address of the module's MR, which grants remote read and write but not remote atomic: expect TERMINATE RDMAP access rights violation"
    ),
    sc!(
        atomic_kernel_bad_stag,
        "[kernel 7306] an Atomic Request (FetchAdd) naming the module's MR with another key: expect TERMINATE RDMAP invalid STag"
    ),
    sc!(
        atomic_kernel_response_unasked,
        "[kernel 7306] an Atomic Response to no request (no QN 3 buffer waits): expect TERMINATE DDP no buffer (MSN)"
    ),
    sc!(
        mpa_p2p_zero_send_after_rtr,
        "[STag table] peer-to-peer with the Write RTR, then a zero length Send in the same segment: only the first FPDU is the RTR, so the Send takes a receive (a Send after the table draws TERMINATE DDP no buffer)"
    ),
];

pub fn find(name: &str) -> Option<&'static Scenario> {
    ALL.iter().find(|s| s.name == name)
}

fn tc(e: impl Into<ProtocolError>) -> TermCode {
    e.into().term_code()
}

/// Connects, sends `req`, requires an accepting Reply and enters full
/// operation (our TX markers per the Reply's M, our RX markers per ours).
pub(crate) fn establish(ctx: &Ctx, req: &ReqSpec) -> Result<Peer, String> {
    establish_io(ctx, req).map(|(p, _)| p)
}

/// [`establish`], also returning the Reply's IRD/ORD data.
fn establish_io(ctx: &Ctx, req: &ReqSpec) -> Result<(Peer, Option<IrdOrd>), String> {
    establish_all(ctx, req).map(|(p, io, _)| (p, io))
}

/// [`establish`], also returning the Reply's private data (after the
/// IRD/ORD data).
pub(crate) fn establish_pdata(ctx: &Ctx, req: &ReqSpec) -> Result<(Peer, Vec<u8>), String> {
    establish_all(ctx, req).map(|(p, _, pd)| (p, pd))
}

fn establish_all(ctx: &Ctx, req: &ReqSpec) -> Result<(Peer, Option<IrdOrd>, Vec<u8>), String> {
    let mut p = match req.rcvbuf {
        Some(b) => Peer::connect_small_window(ctx.target, b)?,
        None => Peer::connect(ctx.target)?,
    };
    match p.mpa(req, ctx.t)? {
        MpaOutcome::Reply {
            hdr,
            ird_ord,
            pdata,
        } if !hdr.reject => {
            let crc = hdr.crc || req.crc;
            p.start_fpdus(
                MpaMode {
                    markers: hdr.markers,
                    crc,
                },
                MpaMode {
                    markers: req.markers,
                    crc,
                },
            );
            Ok((p, ird_ord, pdata))
        }
        o => Err(format!("MPA exchange failed: {o}")),
    }
}

pub(crate) fn good(ctx: &Ctx) -> Result<Peer, String> {
    establish(ctx, &ReqSpec::default())
}

/// A fresh, valid connection gets an accepting Reply.
pub(crate) fn listener_alive(ctx: &Ctx) -> Result<(), String> {
    sleep(Duration::from_millis(300));
    let p = good(ctx).map_err(|e| format!("listener no longer serves: {e}"))?;
    drop(p);
    sleep(Duration::from_millis(300));
    Ok(())
}

fn rping_send(p: &mut Peer) -> Vec<u8> {
    p.next_send(&frames::rping_info(0x10000, 0x00ab_cd00, 16))
}

/// The offending segment as we sent it: its DDP/RDMAP header (or the
/// headers it may be one of) and its DDP Segment Length (= ULPDU_Length).
pub(crate) type Sent<'a> = Option<(&'a [&'a [u8]], u16)>;

/// Waits for the first TERMINATE and checks it (RFC 5040 section 4.8): the
/// code, the HdrCt bits of the wire core's mapping, the DDP Segment Length
/// and the copied headers, exactly one TERMINATE, then the close.
pub(crate) fn expect_term(ctx: &Ctx, p: &mut Peer, want: TermCode, sent: Sent<'_>) -> Outcome {
    p.observe(ctx.t, |p| p.first_term().is_some());
    let Some(s) = p.first_term().cloned() else {
        return Err(format!("no TERMINATE: {}", p.summary()));
    };
    let closed = p.wait_close(ctx.t);
    let t = s.term().expect("terminate body");
    let mut bad = Vec::new();
    if t.code != want {
        let mut got = format!("TERMINATE {}", code_str(t.code));
        let w: [u8; 4] = s.raw[18..22].try_into().expect("4 octets");
        if TermHdr::decode_siw_le(w).code == want {
            got += " (the expected code in siw's little endian layout)";
        }
        bad.push(got);
    } else if let Some(e) = ProtocolError::from_term_code(want) {
        let mut hc = e.hdr_ct();
        // R only when the offending segment is a Read Request (its 28
        // octet RDMAP header is what R copies, RFC 5040 4.8).
        if let Some((hdrs, _)) = sent {
            let rr = |h: &&[u8]| h.len() > 1 && h[0] & 0x80 == 0 && h[1] & 0x0f == 0x1;
            if !hdrs.iter().any(rr) {
                hc.r = false;
            }
        }
        let h = t.hdrct;
        if (h.m, h.d, h.r) != (hc.m, hc.d, hc.r) {
            bad.push(format!(
                "HdrCt M{}D{}R{}, expected M{}D{}R{}",
                h.m as u8, h.d as u8, h.r as u8, hc.m as u8, hc.d as u8, hc.r as u8
            ));
        } else if let Some((hdrs, seg_len)) = sent {
            match parse_term_copy(&t, &s.payload) {
                Err(_) => bad.push(format!(
                    "TERMINATE too short for its HdrCt ({} octets copied)",
                    s.payload.len()
                )),
                Ok(None) => {}
                Ok(Some(c)) => {
                    if h.m && c.ddp_seg_len != seg_len {
                        bad.push(format!(
                            "DDP Segment Length {} in TERMINATE, segment had {seg_len}",
                            c.ddp_seg_len
                        ));
                    }
                    let mut copied = c.ddp_hdr.to_vec();
                    copied.extend_from_slice(c.rdmap_hdr);
                    if h.d && !hdrs.iter().any(|hdr| hdr.starts_with(&copied)) {
                        bad.push(format!(
                            "copied header {} is not the offending one {}",
                            hex(&copied),
                            hex(hdrs.first().copied().unwrap_or_default())
                        ));
                    }
                }
            }
        }
    }
    // The same TERMINATE through a decoder that is not rsiw-wire's
    // (RFC 5040 4.8, termcheck.rs): code, HdrCt consistent with what is
    // copied, the copies those of the offending segment.
    let mut ulpdu = s.raw.clone();
    ulpdu.extend_from_slice(&s.payload);
    match termcheck::decode(&ulpdu) {
        Err(e) => bad.push(format!("independent decoder: {e}")),
        Ok(d) => {
            if (d.layer, d.etype, d.code) != (want.layer, want.etype, want.code) {
                bad.push(format!(
                    "independent decoder: layer {} etype {} code {:#04x}",
                    d.layer, d.etype, d.code
                ));
            }
            if let Some((hdrs, seg_len)) = sent {
                if let Err(e) = termcheck::check_copy(&d, hdrs, seg_len) {
                    bad.push(format!("independent decoder: {e}"));
                }
            }
        }
    }
    if let Some(e) = p.rx_error {
        bad.push(format!("the target's FPDUs do not decode ({})", e.name()));
    }
    let n = p.segs().iter().filter(|s| s.term().is_some()).count();
    if n > 1 {
        bad.push(format!("{n} TERMINATEs for one error"));
    }
    if !closed {
        bad.push(format!(
            "connection {} {} s after the TERMINATE",
            end_str(&p.end),
            ctx.t.as_secs()
        ));
    }
    if bad.is_empty() {
        Ok(p.summary())
    } else {
        Err(format!("{} [{}]", bad.join("; "), p.summary()))
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Sends one FPDU right after MPA and expects a TERMINATE.
pub(crate) fn one_fpdu_term(ctx: &Ctx, hdr: Vec<u8>, payload: &[u8], want: TermCode) -> Outcome {
    let mut p = good(ctx)?;
    p.send_fpdu(&hdr, payload)?;
    let len = (hdr.len() + payload.len()) as u16;
    expect_term(ctx, &mut p, want, Some((&[&hdr], len)))
}

/// An invalid Request: the responder must close (or reject), never accept
/// nor leave the connection hanging; the listener keeps serving.
fn expect_refused(ctx: &Ctx, req: &ReqSpec) -> Outcome {
    let mut p = Peer::connect(ctx.target)?;
    let o = p.mpa(req, ctx.t)?;
    let d = match &o {
        MpaOutcome::Nothing(e) if e.closed() => format!("closed without Reply ({})", end_str(e)),
        MpaOutcome::Reply { hdr, .. } if hdr.reject => {
            if !p.wait_close(ctx.t) {
                return Err(format!("{o}, but connection {}", end_str(&p.end)));
            }
            format!("{o}, then closed")
        }
        MpaOutcome::Nothing(End::Open) => {
            return Err(format!(
                "no Reply and connection still open after {} s",
                ctx.t.as_secs()
            ))
        }
        _ => return Err(o.to_string()),
    };
    drop(p);
    listener_alive(ctx)?;
    Ok(d)
}

fn baseline_send(ctx: &Ctx) -> Outcome {
    let mut p = good(ctx)?;
    let f = rping_send(&mut p);
    p.send_raw(&f)?;
    p.observe(ctx.t, |p| {
        p.segs().iter().any(|s| s.read_request().is_some())
    });
    match p.segs().iter().find_map(|s| s.read_request()) {
        Some(rr) if rr.src_stag == 0x00ab_cd00 && rr.size == 16 && rr.src_to == 0x10000 => {
            Ok(format!("Read Request sink STag {:#x}", rr.sink_stag))
        }
        Some(rr) => Err(format!("unexpected Read Request {rr:?}")),
        None => Err(p.summary()),
    }
}

/// Connects to the target offering the peer-to-peer model (`offer`,
/// which sets `peer_to_peer`) and runs the MPA exchange: the Reply must
/// accept, with IRD/ORD, in the peer-to-peer model and passing `ok`
/// (`want` says what, for the error). Returns the peer, ready for FPDUs
/// without markers or CRC, and the Reply's IRD/ORD.
fn p2p_connect(
    ctx: &Ctx,
    offer: IrdOrd,
    want: &str,
    ok: impl Fn(&IrdOrd) -> bool,
) -> Result<(Peer, IrdOrd), String> {
    let req = ReqSpec {
        ird_ord: Some(offer),
        ..ReqSpec::default()
    };
    let mut p = Peer::connect(ctx.target)?;
    let io = match p.mpa(&req, ctx.t)? {
        MpaOutcome::Reply {
            hdr,
            ird_ord: Some(io),
            ..
        } if !hdr.reject => io,
        o => return Err(format!("expected an accepting Reply with IRD/ORD, got {o}")),
    };
    if !(io.peer_to_peer && ok(&io)) {
        return Err(format!("Reply IRD/ORD {io:?}: expected {want}"));
    }
    p.start_fpdus(MpaMode::default(), MpaMode::default());
    Ok((p, io))
}

fn mpa_p2p_rtr(ctx: &Ctx) -> Outcome {
    let (mut p, _) = p2p_connect(
        ctx,
        IrdOrd {
            ird: 16,
            ord: 16,
            write_rtr: true,
            read_rtr: true,
            peer_to_peer: true,
            ..IrdOrd::default()
        },
        "P2P with the Write RTR",
        |io| io.write_rtr && !io.read_rtr,
    )?;
    // The RTR: a zero length Write to STag 1 (as siw sends it), then the
    // rping Send.
    let mut f = p.fpdu(&frames::write_hdr(1, 0), &[]);
    f.extend(rping_send(&mut p));
    p.send_raw(&f)?;
    p.observe(ctx.t, |p| {
        p.segs().iter().any(|s| s.read_request().is_some())
    });
    match p.segs().iter().find_map(|s| s.read_request()) {
        Some(_) => Ok("Reply P2P + Write RTR; Read Request after the RTR and Send".into()),
        None => Err(p.summary()),
    }
}

/// RFC 6581: the responder picks an RTR type the initiator offered; with
/// neither Write (C) nor Read (D) offered that is a (zero length) Send.
/// The RTR is consumed by MPA's connection setup, not by the consumer: it
/// takes MSN 1 of the Send queue but no receive, so the rping Send (MSN 2)
/// and one more Send (MSN 3, after the table) both find the server's two
/// receives.
fn mpa_p2p_send_rtr(ctx: &Ctx) -> Outcome {
    let (mut p, _) = p2p_connect(
        ctx,
        IrdOrd {
            ird: 16,
            ord: 16,
            zero_length_rtr: true,
            peer_to_peer: true,
            ..IrdOrd::default()
        },
        "P2P with the Send RTR (neither C nor D)",
        |io| !io.write_rtr && !io.read_rtr,
    )?;
    let mut f = p.next_send(&[]);
    f.extend(rping_send(&mut p));
    p.send_raw(&f)?;
    p.observe(ctx.t, |p| {
        p.segs()
            .iter()
            .any(|s| s.read_request().is_some() || s.term().is_some())
    });
    let Some(rr) = p.segs().iter().find_map(|s| s.read_request()) else {
        return Err(format!(
            "no Read Request after the RTR and Send: {}",
            p.summary()
        ));
    };
    let h = frames::read_response_hdr(rr.sink_stag, rr.sink_to);
    p.send_fpdu(&h, &frames::garbage(0x5eed, rr.size as usize))?;
    p.observe(ctx.t, |p| table_of(p).is_some() || p.first_term().is_some());
    if table_of(&p).is_none() {
        return Err(format!("no STag table: {}", p.summary()));
    }
    // The server's second receive is free only if the RTR took none.
    let f = p.next_send(&[0x33; 16]);
    p.send_raw(&f)?;
    p.observe(Duration::from_millis(1500), |p| p.first_term().is_some());
    if let Some(t) = p.first_term().and_then(|s| s.term()) {
        return Err(format!(
            "TERMINATE {} for the Send after the table (the RTR took a receive?): {}",
            code_str(t.code),
            p.summary()
        ));
    }
    Ok("Reply P2P + Send RTR; the RTR took no receive".into())
}

/// RFC 5044 section 7.1.2: a responder receives and validates an FPDU
/// before it sends any; in the peer-to-peer model of RFC 6581 that FPDU
/// is the initiator's RTR. The canary server (`-E`) posts its Send as soon
/// as `rdma_accept()` returned: the responder's QP is in RTS then, while
/// ESTABLISHED waits for the RTR. The Send must wait for the RTR too.
fn mpa_p2p_responder_holds(ctx: &Ctx) -> Outcome {
    let (mut p, _) = p2p_connect(
        ctx,
        IrdOrd {
            ird: 16,
            ord: 16,
            zero_length_rtr: true,
            write_rtr: true,
            peer_to_peer: true,
            ..IrdOrd::default()
        },
        "P2P with the Write RTR",
        |io| io.write_rtr,
    )?;
    // The RTR: a zero length Write to STag 1, as siw sends it.
    let rtr = p.fpdu(&frames::write_hdr(1, 0), &[]);
    quiet_until(ctx, &mut p, &rtr, "our RTR")
}

/// RFC 5044 section 7.1.2: the responder `p` (whose server posts a Send
/// at once) must send nothing for 2 s, and its Send only after we sent
/// `first`, our first FPDU (`what`, for the messages).
fn quiet_until(ctx: &Ctx, p: &mut Peer, first: &[u8], what: &str) -> Outcome {
    let quiet = Duration::from_secs(2).min(ctx.t);
    p.observe(quiet, |p| !p.segs().is_empty() || p.end.closed());
    if !p.segs().is_empty() {
        return Err(format!("the responder sent before {what}: {}", p.summary()));
    }
    p.send_raw(first)?;
    p.observe(ctx.t, |p| table_of(p).is_some() || p.first_term().is_some());
    match table_of(p) {
        Some(_) => Ok(format!(
            "nothing for {} ms before {what}, then its Send: {}",
            quiet.as_millis(),
            p.summary()
        )),
        None => Err(format!(
            "no Send from the responder after {what}: {}",
            p.summary()
        )),
    }
}

/// RFC 6581: the Read RTR is a zero length RDMA Read Request, which the
/// responder answers with a Read Response; a responder that picks it
/// needs an IRD of at least 1 (cxgb4 and irdma raise it), whatever its
/// consumer asked for, or the RTR itself exceeds the IRD and draws a
/// catastrophic TERMINATE. We offer only the Read RTR, with IRD and ORD 0,
/// and the canary server (`-r 0`) accepts with responder resources 0.
fn mpa_p2p_read_rtr_ird_0(ctx: &Ctx) -> Outcome {
    let (mut p, io) = p2p_connect(
        ctx,
        IrdOrd {
            ird: 0,
            ord: 0,
            peer_to_peer: true,
            zero_length_rtr: true,
            read_rtr: true,
            ..IrdOrd::default()
        },
        "P2P with the Read RTR, the only one offered",
        |io| io.read_rtr && !io.write_rtr,
    )?;
    let ird = io.ird;
    let mut bad = Vec::new();
    if ird == 0 {
        bad.push("Reply IRD 0 with the Read RTR".to_string());
    }
    let rtr = ReadRequest {
        sink_stag: 0x0000_1300,
        sink_to: 0,
        size: 0,
        src_stag: 0,
        src_to: 0,
    };
    p.send_fpdu(&frames::read_request_hdr(1, rtr), &[])?;
    let answered = |p: &Peer| {
        p.segs()
            .iter()
            .any(|s| s.hdr.opcode == Opcode::ReadResponse && s.payload.is_empty())
    };
    p.observe(ctx.t, |p| answered(p) || p.first_term().is_some());
    // A TERMINATE may follow the answer: look a little longer.
    p.observe(Duration::from_millis(500), |p| p.first_term().is_some());
    if let Some(t) = p.first_term().and_then(|s| s.term()) {
        bad.push(format!("TERMINATE {} for the Read RTR", code_str(t.code)));
    } else if !answered(&p) {
        bad.push("no zero length Read Response to the Read RTR".into());
    }
    if bad.is_empty() {
        Ok(format!(
            "Reply IRD {ird} with the Read RTR; the RTR answered: {}",
            p.summary()
        ))
    } else {
        Err(format!("{}: {}", bad.join("; "), p.summary()))
    }
}

/// RFC 6581: only the initiator's first FPDU is its RTR. A zero length
/// Send right behind a Write RTR (in the same TCP segment) is a message:
/// it takes the canary's first receive, the rping Send the second, and a
/// further Send after the table finds no receive (TERMINATE DDP "no
/// buffer"). A responder that takes the zero length Send as a second RTR
/// has a receive left for that Send.
fn mpa_p2p_zero_send_after_rtr(ctx: &Ctx) -> Outcome {
    let (mut p, _) = p2p_connect(
        ctx,
        IrdOrd {
            ird: 16,
            ord: 16,
            write_rtr: true,
            peer_to_peer: true,
            ..IrdOrd::default()
        },
        "P2P with the Write RTR",
        |io| io.write_rtr,
    )?;
    // The Write RTR, a zero length Send (MSN 1) and the rping Send (MSN 2)
    // in one segment.
    let mut f = p.fpdu(&frames::write_hdr(1, 0), &[]);
    f.extend(p.next_send(&[]));
    f.extend(rping_send(&mut p));
    p.send_raw(&f)?;
    p.observe(ctx.t, |p| {
        p.segs()
            .iter()
            .any(|s| s.read_request().is_some() || s.term().is_some())
    });
    let Some(rr) = p.segs().iter().find_map(|s| s.read_request()) else {
        return Err(format!(
            "no Read Request after the rping Send: {}",
            p.summary()
        ));
    };
    let h = frames::read_response_hdr(rr.sink_stag, rr.sink_to);
    p.send_fpdu(&h, &frames::garbage(0x5eed, rr.size as usize))?;
    p.observe(ctx.t, |p| table_of(p).is_some() || p.first_term().is_some());
    if table_of(&p).is_none() {
        return Err(format!("no STag table: {}", p.summary()));
    }
    // Both receives are taken (the zero length Send and the rping Send):
    // one more Send must find none.
    let h = frames::send_hdr(p.send_msn);
    let f = p.next_send(&[0x33; 16]);
    p.send_raw(&f)?;
    expect_term(
        ctx,
        &mut p,
        tc(DdpError::UntaggedMsnNoBuffer),
        Some((&[&h], 18 + 16)),
    )
    .map(|_| "the zero length Send after the Write RTR took a receive".into())
    .map_err(|e| format!("{e} (was the zero length Send taken as a second RTR?)"))
}

fn mpa_rev1(ctx: &Ctx) -> Outcome {
    let req = ReqSpec {
        revision: 1,
        ird_ord: None,
        ..ReqSpec::default()
    };
    let mut p = Peer::connect(ctx.target)?;
    let (m, crc) = match p.mpa(&req, ctx.t)? {
        MpaOutcome::Reply { hdr, .. } if !hdr.reject && hdr.revision == 1 && !hdr.enhanced => {
            (hdr.markers, hdr.crc)
        }
        o => return Err(format!("expected an accepting revision 1 Reply, got {o}")),
    };
    p.start_fpdus(
        MpaMode { markers: m, crc },
        MpaMode {
            markers: false,
            crc,
        },
    );
    let f = rping_send(&mut p);
    p.send_raw(&f)?;
    p.observe(ctx.t, |p| {
        p.segs().iter().any(|s| s.read_request().is_some())
    });
    if p.segs().iter().any(|s| s.read_request().is_some()) {
        Ok("revision 1 Reply, Read Request received".into())
    } else {
        Err(p.summary())
    }
}

fn mpa_enhanced_short(ctx: &Ctx) -> Outcome {
    // Enhanced (IRD/ORD) flag with only 2 octets of private data.
    let mut b = frames::mpa_request(&ReqSpec {
        ird_ord: None,
        pdata: vec![0, 0x10],
        ..ReqSpec::default()
    });
    b[16] |= 0x10;
    let mut p = Peer::connect(ctx.target)?;
    p.send_raw(&b)?;
    let o = p.read_reply(ctx.t)?;
    match &o {
        MpaOutcome::Nothing(e) if e.closed() => {}
        MpaOutcome::Reply { hdr, .. } if hdr.reject => {}
        MpaOutcome::Nothing(End::Open) => {
            return Err(format!(
                "no Reply and connection still open after {} s",
                ctx.t.as_secs()
            ))
        }
        _ => return Err(o.to_string()),
    }
    drop(p);
    listener_alive(ctx)?;
    Ok(o.to_string())
}

fn mpa_bad_key(ctx: &Ctx) -> Outcome {
    expect_refused(
        ctx,
        &ReqSpec {
            key: *b"MPA ID Bad Frame",
            ..ReqSpec::default()
        },
    )
}

fn mpa_bad_revision(ctx: &Ctx) -> Outcome {
    expect_refused(
        ctx,
        &ReqSpec {
            revision: 3,
            ..ReqSpec::default()
        },
    )
}

fn mpa_reply_key(ctx: &Ctx) -> Outcome {
    expect_refused(
        ctx,
        &ReqSpec {
            key: REP_KEY,
            ..ReqSpec::default()
        },
    )
}

fn mpa_pd_too_long(ctx: &Ctx) -> Outcome {
    expect_refused(
        ctx,
        &ReqSpec {
            pdata: vec![0x42; 509],
            ..ReqSpec::default()
        },
    )
}

fn mpa_truncated(ctx: &Ctx) -> Outcome {
    let mut p = Peer::connect(ctx.target)?;
    let req = frames::mpa_request(&ReqSpec::default());
    p.send_raw(&req[..10])?;
    sleep(Duration::from_millis(200));
    p.sock.shutdown(Shutdown::Write).ok();
    let o = p.read_reply(ctx.t)?;
    match o {
        MpaOutcome::Nothing(ref e) if e.closed() => {}
        o => return Err(o.to_string()),
    }
    drop(p);
    listener_alive(ctx)?;
    Ok("closed without Reply".into())
}

fn mpa_no_request(ctx: &Ctx) -> Outcome {
    let mut p = Peer::connect(ctx.target)?;
    let o = p.read_reply(ctx.t)?;
    let d = match o {
        MpaOutcome::Nothing(End::Open) => format!("silent for {} s", ctx.t.as_secs()),
        MpaOutcome::Nothing(ref e) if e.closed() => {
            format!("target timed out first: {}", end_str(e))
        }
        o => return Err(format!("unprompted {o}")),
    };
    drop(p);
    listener_alive(ctx)?;
    Ok(d)
}

/// The close arrives while the consumer's accept is still running: the
/// CM must see ESTABLISHED before DISCONNECT and CLOSE (a CLOSE on an id
/// still waiting in CONN_RECV is a BUG() in the kernel's iWARP CM; rsiw
/// raced there, once in a CI run).
fn mpa_close_after_reply(ctx: &Ctx) -> Outcome {
    const ROUNDS: usize = 50;
    for i in 0..ROUNDS {
        let p = good(ctx).map_err(|e| format!("round {i}: {e}"))?;
        drop(p);
    }
    listener_alive(ctx)?;
    Ok(format!("{ROUNDS} connections accepted and closed"))
}

fn mpa_markers(ctx: &Ctx) -> Outcome {
    let req = ReqSpec {
        markers: true,
        ..ReqSpec::default()
    };
    let mut p = Peer::connect(ctx.target)?;
    let (rm, crc) = match p.mpa(&req, ctx.t)? {
        MpaOutcome::Reply { hdr, .. } if hdr.reject => {
            return Ok("markers refused with a reject Reply".into())
        }
        MpaOutcome::Reply { hdr, .. } => (hdr.markers, hdr.crc),
        o => return Err(o.to_string()),
    };
    // RFC 5044: M in our Request = markers on our receive path;
    // M in the Reply = markers on the responder's receive path.
    p.start_fpdus(MpaMode { markers: rm, crc }, MpaMode { markers: true, crc });
    let f = rping_send(&mut p);
    p.send_raw(&f)?;
    p.observe(ctx.t, |p| {
        p.segs()
            .iter()
            .any(|s| s.read_request().is_some() || s.term().is_some())
    });
    if p.segs().iter().any(|s| s.read_request().is_some()) {
        return Ok(format!(
            "Reply M={}, Read Request received with markers",
            rm as u8
        ));
    }
    p.wait_close(ctx.t);
    let mut got = format!("Reply M={}; {}", rm as u8, p.summary());
    if p.rx_error.is_some() {
        got += " (responder's FPDUs lack valid markers)";
    }
    Err(got)
}

fn mpa_crc_bad_frame(ctx: &Ctx) -> Outcome {
    let req = ReqSpec {
        crc: true,
        ..ReqSpec::default()
    };
    let mut p = Peer::connect(ctx.target)?;
    let m = match p.mpa(&req, ctx.t)? {
        MpaOutcome::Reply { hdr, .. } if !hdr.reject && hdr.crc => hdr.markers,
        o => return Err(format!("expected a Reply with C=1, got {o}")),
    };
    p.start_fpdus(
        MpaMode {
            markers: m,
            crc: true,
        },
        MpaMode {
            markers: false,
            crc: true,
        },
    );
    let mut f = rping_send(&mut p);
    frames::corrupt_crc(&mut f);
    p.send_raw(&f)?;
    expect_term(
        ctx,
        &mut p,
        tc(LlpError::CrcMismatch {
            computed: 0,
            received: 0,
        }),
        None,
    )
}

/// RFC 5044 section 7.1.2: in Responder mode MPA must receive and validate
/// at least one FPDU before it sends any. The canary server (`-e`) posts
/// its Send as soon as the connection is up; rsiw must hold it until our
/// first FPDU arrived, then send it.
fn responder_waits_first_fpdu(ctx: &Ctx) -> Outcome {
    let mut p = good(ctx)?;
    let f = rping_send(&mut p);
    quiet_until(ctx, &mut p, &f, "our first FPDU")
}

/// rsiw's client-server default: a responder whose server speaks first
/// holds that Send for a grace after the Reply (until the connection's
/// first check of the peer's silence, 50 ms), then sends it though the
/// initiator sent nothing; with no grace, a Send posted at accept follows
/// the Reply at once and upstream siw's initiator, finding it with the
/// Reply, fails the connection.
fn responder_grace(ctx: &Ctx) -> Outcome {
    let mut p = good(ctx)?;
    let grace = Duration::from_millis(30);
    p.observe(grace, |p| !p.segs().is_empty() || p.end.closed());
    if !p.segs().is_empty() {
        return Err(format!(
            "the responder sent within {} ms of its Reply: {}",
            grace.as_millis(),
            p.summary()
        ));
    }
    p.observe(ctx.t, |p| table_of(p).is_some() || p.first_term().is_some());
    match table_of(&p) {
        Some(_) => Ok(format!(
            "nothing for {} ms after the Reply, then its Send without ours: {}",
            grace.as_millis(),
            p.summary()
        )),
        None => Err(format!(
            "the responder held its Send for good (we sent nothing): {}",
            p.summary()
        )),
    }
}

/// RFC 5044 section 7.1: with CRC, the receiver checks an FPDU's CRC
/// before its ULPDU reaches DDP. A Write to the invalidatable MR, which is
/// never written legitimately, with a bad CRC stands for a header
/// corrupted on the way: the answer is the LLP CRC TERMINATE, and the
/// canary server must find every octet of the MR as it was.
fn crc_bad_write_not_placed(ctx: &Ctx) -> Outcome {
    crc_bad_write(ctx, false)
}

fn crc_bad_write_not_placed_markers(ctx: &Ctx) -> Outcome {
    crc_bad_write(ctx, true)
}

fn crc_bad_write(ctx: &Ctx, markers: bool) -> Outcome {
    let req = ReqSpec {
        crc: true,
        markers,
        ..ReqSpec::default()
    };
    let (mut p, t) = with_table_as(ctx, &req)?;
    let wh = frames::write_hdr(t.inval.stag, t.inval.addr);
    let mut f = p.fpdu(&wh, &[0x66; 64]);
    frames::corrupt_crc(&mut f);
    p.send_raw(&f)?;
    expect_term(
        ctx,
        &mut p,
        tc(LlpError::CrcMismatch {
            computed: 0,
            received: 0,
        }),
        None,
    )
}

/// RFC 5044: an MPA receiver takes any ULPDU_Length up to 65535 and must
/// not depend on FPDU alignment with TCP segments (upstream siw takes
/// any); MULPDU limits what the target sends. So a 9000 octet Send
/// reaches DDP, which finds it too long for the 16 octet receive.
fn ulpdu_beyond_mulpdu(ctx: &Ctx) -> Outcome {
    let h = frames::send_hdr(1);
    let payload = vec![0x33u8; 9000 - h.len()];
    one_fpdu_term(ctx, h, &payload, tc(DdpError::UntaggedTooLong))
}

fn ulpdu_too_short(ctx: &Ctx) -> Outcome {
    let mut p = good(ctx)?;
    // ULPDU_Length 10 covering the first 10 octets of a Send header (no
    // PAD needed), zero CRC.
    let h = frames::send_hdr(1);
    let mut f = vec![0, 10];
    f.extend_from_slice(&h[..10]);
    f.extend_from_slice(&[0; 4]);
    p.send_raw(&f)?;
    expect_term(
        ctx,
        &mut p,
        tc(LlpError::Framing(
            rsiw_wire::error::FramingFault::UlpduTooShort { len: 10 },
        )),
        None,
    )
}

fn ddp_bad_version(ctx: &Ctx) -> Outcome {
    let mut h = frames::send_hdr(1);
    frames::set_ddp_version(&mut h, 0);
    one_fpdu_term(ctx, h, &[0; 16], tc(DdpError::UntaggedInvalidVersion))
}

fn rdmap_bad_version(ctx: &Ctx) -> Outcome {
    let mut h = frames::send_hdr(1);
    frames::set_rdmap_version(&mut h, 0);
    one_fpdu_term(ctx, h, &[0; 16], tc(RdmapError::InvalidVersion))
}

fn rdmap_unknown_opcode(ctx: &Ctx) -> Outcome {
    let mut h = frames::send_hdr(1);
    frames::set_opcode(&mut h, 0xf);
    one_fpdu_term(ctx, h, &[0; 16], tc(RdmapError::UnexpectedOpcode))
}

fn ddp_invalid_qn(ctx: &Ctx) -> Outcome {
    let mut h = frames::send_hdr(1);
    frames::set_qn(&mut h, 5);
    one_fpdu_term(ctx, h, &[0; 16], tc(DdpError::UntaggedInvalidQn))
}

fn ddp_msn_range(ctx: &Ctx) -> Outcome {
    one_fpdu_term(
        ctx,
        frames::send_hdr(1000),
        &frames::rping_info(0x10000, 0x00ab_cd00, 16),
        tc(DdpError::UntaggedMsnRange),
    )
}

fn send_no_recv(ctx: &Ctx) -> Outcome {
    // rping keeps one receive posted and posts the next one from user
    // space as soon as a Send completes, so a second Send may just find
    // a buffer; of a burst of 8 in one write one of MSN 2..8 must not.
    let mut p = good(ctx)?;
    let mut f = Vec::new();
    for _ in 0..8 {
        f.extend(rping_send(&mut p));
    }
    p.send_raw(&f)?;
    let hdrs: Vec<Vec<u8>> = (2..=8).map(frames::send_hdr).collect();
    let cands: Vec<&[u8]> = hdrs.iter().map(|h| h.as_slice()).collect();
    expect_term(
        ctx,
        &mut p,
        tc(DdpError::UntaggedMsnNoBuffer),
        Some((&cands, (hdrs[0].len() + 16) as u16)),
    )
}

fn write_invalid_stag(ctx: &Ctx) -> Outcome {
    one_fpdu_term(
        ctx,
        frames::write_hdr(0xdead_be00, 0),
        &[0x55; 64],
        tc(DdpError::TaggedInvalidStag),
    )
}

/// A connection on which rping issued its Read Request (a valid STag).
fn with_valid_stag(ctx: &Ctx) -> Result<(Peer, ReadRequest), String> {
    with_valid_stag_as(ctx, &ReqSpec::default())
}

/// [`with_valid_stag`] on a connection set up with `req`.
fn with_valid_stag_as(ctx: &Ctx, req: &ReqSpec) -> Result<(Peer, ReadRequest), String> {
    let mut p = establish(ctx, req)?;
    let f = rping_send(&mut p);
    p.send_raw(&f)?;
    p.observe(ctx.t, |p| {
        p.segs().iter().any(|s| s.read_request().is_some())
    });
    match p.segs().iter().find_map(|s| s.read_request()) {
        Some(rr) => Ok((p, rr)),
        None => Err(format!(
            "no Read Request to learn a valid STag: {}",
            p.summary()
        )),
    }
}

fn write_base_bounds(ctx: &Ctx) -> Outcome {
    let (mut p, rr) = with_valid_stag(ctx)?;
    let h = frames::write_hdr(rr.sink_stag, rr.sink_to.wrapping_add(1 << 20));
    p.send_fpdu(&h, &[0x66; 64])?;
    expect_term(
        ctx,
        &mut p,
        tc(DdpError::TaggedBaseBounds),
        Some((&[&h], 14 + 64)),
    )
}

fn write_to_wrap(ctx: &Ctx) -> Outcome {
    let mut p = good(ctx)?;
    let f = rping_send(&mut p);
    p.send_raw(&f)?;
    p.observe(ctx.t, |p| {
        p.segs().iter().any(|s| s.read_request().is_some())
    });
    let Some(rr) = p.segs().iter().find_map(|s| s.read_request()) else {
        return Err(format!(
            "no Read Request to learn a valid STag: {}",
            p.summary()
        ));
    };
    let h = frames::write_hdr(rr.sink_stag, u64::MAX - 7);
    p.send_fpdu(&h, &[0x66; 64])?;
    expect_term(
        ctx,
        &mut p,
        tc(DdpError::TaggedToWrap),
        Some((&[&h], 14 + 64)),
    )
}

fn read_req_invalid_stag(ctx: &Ctx) -> Outcome {
    let rr = ReadRequest {
        sink_stag: 0x0000_1100,
        sink_to: 0,
        size: 64,
        src_stag: 0xdead_be00,
        src_to: 0,
    };
    one_fpdu_term(
        ctx,
        frames::read_request_hdr(1, rr),
        &[],
        tc(RdmapError::InvalidStag),
    )
}

/// RFC 5040 4.8 / 6.3: a Data Source TO + size past 2^64 is Remote
/// Protection Error, TO wrap (0/1/4), not base/bounds.
fn read_req_to_wrap(ctx: &Ctx) -> Outcome {
    let (mut p, t) = with_table(ctx)?;
    let rr = ReadRequest {
        sink_stag: 0x0000_1600,
        sink_to: 0,
        size: 64,
        src_stag: t.ro.stag,
        src_to: u64::MAX - 7,
    };
    let h = frames::read_request_hdr(1, rr);
    p.send_fpdu(&h, &[])?;
    expect_term(
        ctx,
        &mut p,
        tc(RdmapError::ToWrap),
        Some((&[&h], h.len() as u16)),
    )
}

/// A Read Request is exactly its 28 octet body (the "buffer" of QN 1,
/// RFC 5040 4.4): payload makes the message too long for it (DDP 2/5).
fn read_req_with_payload(ctx: &Ctx) -> Outcome {
    let rr = ReadRequest {
        sink_stag: 0x0000_1700,
        sink_to: 0,
        size: 0,
        src_stag: 0x00ab_cd00,
        src_to: 0,
    };
    one_fpdu_term(
        ctx,
        frames::read_request_hdr(1, rr),
        &[0x42; 16],
        tc(DdpError::UntaggedTooLong),
    )
}

/// A Read Request with L=0 announces more of the message than its one
/// segment: too long for the QN 1 buffer (DDP 2/5), not an invalid MO.
fn read_req_not_last(ctx: &Ctx) -> Outcome {
    let rr = ReadRequest {
        sink_stag: 0x0000_1800,
        sink_to: 0,
        size: 0,
        src_stag: 0x00ab_cd00,
        src_to: 0,
    };
    let mut h = frames::read_request_hdr(1, rr);
    frames::set_last(&mut h, false);
    one_fpdu_term(ctx, h, &[], tc(DdpError::UntaggedTooLong))
}

fn unsolicited_read_response(ctx: &Ctx) -> Outcome {
    one_fpdu_term(
        ctx,
        frames::read_response_hdr(0x0000_1200, 0),
        &[0x77; 16],
        tc(RdmapError::UnexpectedOpcode),
    )
}

fn peer_terminate(ctx: &Ctx) -> Outcome {
    let mut p = good(ctx)?;
    let t = TermHdr::from_error(RdmapError::CatastrophicGlobal.into());
    p.send_fpdu(&frames::terminate_hdr(t), &[])?;
    let closed = p.wait_close(ctx.t);
    if p.first_term().is_some() {
        return Err(format!(
            "answered a TERMINATE with a TERMINATE: {}",
            p.summary()
        ));
    }
    if !closed {
        return Err(format!(
            "not closed within {} s: {}",
            ctx.t.as_secs(),
            p.summary()
        ));
    }
    Ok(p.summary())
}

fn half_fpdu_rst(ctx: &Ctx) -> Outcome {
    let mut p = good(ctx)?;
    let f = p.next_send(&[0x44; 200]);
    p.send_raw(&f[..f.len() / 2])?;
    sleep(Duration::from_millis(300));
    p.reset();
    listener_alive(ctx)?;
    Ok("listener still accepts".into())
}

fn silence_after_mpa(ctx: &Ctx) -> Outcome {
    let mut p = good(ctx)?;
    p.observe(ctx.t, |_| false);
    if p.rx_bytes > 0 || p.end != End::Open {
        return Err(format!("unprompted: {}", p.summary()));
    }
    drop(p);
    listener_alive(ctx)?;
    Ok(format!(
        "silent for {} s, listener still accepts",
        ctx.t.as_secs()
    ))
}

fn garbage_after_mpa(ctx: &Ctx) -> Outcome {
    let mut p = good(ctx)?;
    let g = frames::garbage(0x7e57_c0de, 4096);
    // The target may close while we write: a send error is fine.
    let _ = p.send_raw(&g);
    if !p.wait_close(ctx.t) {
        return Err(format!(
            "not closed within {} s: {}",
            ctx.t.as_secs(),
            p.summary()
        ));
    }
    let d = p.summary();
    if let Some(s) = p.first_term() {
        let t = s.term().expect("terminate");
        if ProtocolError::from_term_code(t.code).is_none() {
            return Err(format!("TERMINATE with unregistered code: {}", p.summary()));
        }
    }
    drop(p);
    listener_alive(ctx)?;
    Ok(d)
}

fn send_too_long(ctx: &Ctx) -> Outcome {
    // The server's first receive holds exactly one rping_rdma_info.
    one_fpdu_term(
        ctx,
        frames::send_hdr(1),
        &[0x22; 32],
        tc(DdpError::UntaggedTooLong),
    )
}

fn send_invalid_mo(ctx: &Ctx) -> Outcome {
    // RFC 5041: the MO of a segment must lie within the message the
    // receive buffer holds; 4096 is beyond the 16 octet receive (and not
    // where the first segment ended, which siw and rsiw check first: the
    // same error).
    let mut p = good(ctx)?;
    let h1 = frames::send_seg_hdr(1, 0, false);
    let h2 = frames::send_seg_hdr(1, 4096, true);
    let mut f = p.fpdu(&h1, &[0x33; 8]);
    f.extend(p.fpdu(&h2, &[0x44; 8]));
    p.send_raw(&f)?;
    expect_term(
        ctx,
        &mut p,
        tc(DdpError::UntaggedInvalidMo),
        Some((&[&h2], (h2.len() + 8) as u16)),
    )
}

/// RFC 5040: a Data Source serves at most IRD outstanding inbound RDMA
/// Read Requests (RFC 6581: the Reply's IRD answers our ORD); more are
/// the requester's error, fatal to the stream. The code expected is the
/// one siw and rsiw send, RDMAP Remote Operation Error, catastrophic error
/// localized to the RDMAP stream (0/2/7), with the Read Request's DDP
/// header; a DDP reading (QN 1 holds IRD "buffers": untagged "no buffer
/// available", or "MSN range" as cxgb4 answers) is not accepted here.
/// Requests up to the IRD must not be refused, so the copied header is
/// one of MSN IRD + 1 or later (later when the responder answered some
/// before it parsed the rest of the burst).
fn read_req_beyond_ird(ctx: &Ctx) -> Outcome {
    let req = ReqSpec {
        ird_ord: Some(IrdOrd {
            ird: 1,
            ord: 1,
            ..IrdOrd::default()
        }),
        ..ReqSpec::default()
    };
    let (mut p, io) = establish_io(ctx, &req)?;
    let Some(io) = io else {
        return Err("revision 2 Reply without IRD/ORD data".into());
    };
    let ird = u32::from(io.ird);
    let n = ird + 16;
    // Zero length: no source STag to check (RFC 5040).
    let rr = ReadRequest {
        sink_stag: 0x0000_1300,
        sink_to: 0,
        size: 0,
        src_stag: 0x00ab_cd00,
        src_to: 0,
    };
    let hdrs: Vec<Vec<u8>> = (1..=n).map(|m| frames::read_request_hdr(m, rr)).collect();
    let mut f = Vec::new();
    for h in &hdrs {
        f.extend(p.fpdu(h, &[]));
    }
    p.send_raw(&f)?;
    let cands: Vec<&[u8]> = hdrs[ird as usize..].iter().map(|h| h.as_slice()).collect();
    let r = expect_term(
        ctx,
        &mut p,
        tc(RdmapError::CatastrophicStream),
        Some((&cands, hdrs[0].len() as u16)),
    );
    let answered = p
        .segs()
        .iter()
        .take_while(|s| s.term().is_none())
        .filter(|s| s.hdr.opcode == Opcode::ReadResponse)
        .count();
    let d = format!(
        "Reply IRD {ird}, {n} Read Requests sent, {answered} answered before the TERMINATE"
    );
    r.map(|x| format!("{d}; {x}"))
        .map_err(|x| format!("{x} ({d})"))
}

/// RFC 6581: the responder's IRD must cover the initiator's ORD (an irdma
/// initiator refuses a Reply with IRD < ORD); siw's accept raises the
/// consumer's IRD to it where resources allow, and caps its ORD at the
/// initiator's IRD. The canary server (and rping) accept with responder
/// resources 1.
fn mpa_ird_raised(ctx: &Ctx) -> Outcome {
    const ORD: u16 = 8;
    let req = ReqSpec {
        ird_ord: Some(IrdOrd {
            ird: 16,
            ord: ORD,
            ..IrdOrd::default()
        }),
        ..ReqSpec::default()
    };
    let (mut p, io) = establish_io(ctx, &req)?;
    let Some(io) = io else {
        return Err("revision 2 Reply without IRD/ORD data".into());
    };
    if io.ird < ORD || io.ord > 16 {
        return Err(format!(
            "Reply IRD {} ORD {} to our IRD 16 ORD {ORD}: expected IRD >= {ORD}, ORD <= 16",
            io.ird, io.ord
        ));
    }
    let rr = ReadRequest {
        sink_stag: 0x0000_1900,
        sink_to: 0,
        size: 0,
        src_stag: 0x00ab_cd00,
        src_to: 0,
    };
    let mut f = Vec::new();
    for m in 1..=u32::from(ORD) {
        f.extend(p.fpdu(&frames::read_request_hdr(m, rr), &[]));
    }
    p.send_raw(&f)?;
    let answered = |p: &Peer| {
        p.segs()
            .iter()
            .filter(|s| s.hdr.opcode == Opcode::ReadResponse)
            .count()
    };
    p.observe(ctx.t, |p| {
        answered(p) >= usize::from(ORD) || p.first_term().is_some()
    });
    let d = format!("Reply IRD {} ORD {}", io.ird, io.ord);
    if let Some(t) = p.first_term().and_then(|s| s.term()) {
        return Err(format!("{d}; TERMINATE {}", code_str(t.code)));
    }
    if answered(&p) < usize::from(ORD) {
        return Err(format!(
            "{d}; {} of {ORD} Read Requests answered: {}",
            answered(&p),
            p.summary()
        ));
    }
    Ok(format!("{d}; {ORD} Read Requests answered"))
}

fn marker_mismatch(ctx: &Ctx) -> Outcome {
    let req = ReqSpec {
        markers: true,
        ..ReqSpec::default()
    };
    let mut p = Peer::connect(ctx.target)?;
    let (rm, crc) = match p.mpa(&req, ctx.t)? {
        MpaOutcome::Reply { hdr, .. } if !hdr.reject => (hdr.markers, hdr.crc),
        o => return Err(format!("expected an accepting Reply, got {o}")),
    };
    if !rm {
        return Err(
            "Reply M=0: the target takes no markers on what it receives, so there is none to bend (rsiw: mpa_markers=1)"
                .into(),
        );
    }
    p.start_fpdus(
        MpaMode { markers: true, crc },
        MpaMode { markers: true, crc },
    );
    // Zero length Writes (they place nothing; their STag is not checked,
    // as for the peer-to-peer RTR) past the marker at stream offset 512,
    // whose FPDUPTR is then bent. The deframer meets the marker before
    // the CRC of the FPDU around it.
    let mut s = Vec::new();
    while s.len() < 600 {
        let h = frames::write_hdr(0x0000_1400, 0);
        s.extend(p.fpdu(&h, &[]));
    }
    let at = MARKER_INTERVAL as usize;
    let old = u16::from_be_bytes([s[at + 2], s[at + 3]]);
    let new = old.wrapping_add(8);
    s[at + 2..at + 4].copy_from_slice(&new.to_be_bytes());
    p.send_raw(&s)?;
    let d = format!("marker at stream offset {at}: FPDUPTR {old} sent as {new}");
    expect_term(
        ctx,
        &mut p,
        tc(LlpError::Framing(FramingFault::MarkerMismatch {
            expected: old,
            received: new,
        })),
        None,
    )
    .map(|x| format!("{d}; {x}"))
    .map_err(|x| format!("{x} ({d})"))
}

/// RFC 5044 section 5: FPDUs are 4 octet aligned, so the two low bits of
/// FPDUPTR are zero on the wire and the receiver MUST treat them as zero.
/// The marker at stream offset 512 gets them set; the stream must go on.
fn marker_fpduptr_low_bits(ctx: &Ctx) -> Outcome {
    let req = ReqSpec {
        markers: true,
        ..ReqSpec::default()
    };
    let mut p = Peer::connect(ctx.target)?;
    let (rm, crc) = match p.mpa(&req, ctx.t)? {
        MpaOutcome::Reply { hdr, .. } if !hdr.reject => (hdr.markers, hdr.crc),
        o => return Err(format!("expected an accepting Reply, got {o}")),
    };
    if !rm || crc {
        return Err(format!(
            "Reply M={} C={}: needs markers on what the target receives and no CRC (rsiw: mpa_markers=1)",
            rm as u8, crc as u8
        ));
    }
    p.start_fpdus(
        MpaMode { markers: true, crc },
        MpaMode { markers: true, crc },
    );
    let mut s = Vec::new();
    while s.len() < 600 {
        let h = frames::write_hdr(0x0000_1400, 0);
        s.extend(p.fpdu(&h, &[]));
    }
    let at = MARKER_INTERVAL as usize;
    let old = u16::from_be_bytes([s[at + 2], s[at + 3]]);
    let new = old | 3;
    s[at + 2..at + 4].copy_from_slice(&new.to_be_bytes());
    s.extend(rping_send(&mut p));
    p.send_raw(&s)?;
    p.observe(ctx.t, |p| {
        p.segs()
            .iter()
            .any(|s| s.read_request().is_some() || s.term().is_some())
    });
    let d = format!("marker at stream offset {at}: FPDUPTR {old} sent as {new}");
    if let Some(t) = p.first_term().and_then(|s| s.term()) {
        return Err(format!("{d}: TERMINATE {}", code_str(t.code)));
    }
    if p.segs().iter().any(|s| s.read_request().is_some()) {
        Ok(format!("{d}; Read Request received"))
    } else {
        Err(format!("{d}; {}", p.summary()))
    }
}

// The canary server's STag table: the payload of the one Send the canary
// server (tests/guest/rsiw_canary.c) sends after its RDMA Read completed.
// Big endian, 56 octets:
//
//   offset  size  field
//    0      4     magic 0x43414e59 ("CANY")
//    4      4     table length in octets (56)
//    8      8     (a) read-only MR: address     (remote read only,
//   16      4         STag                       QP's PD)
//   20      4         length
//   24      8     (b) other-PD MR: address      (local + remote write,
//   32      4         STag                       a second PD)
//   36      4         length
//   40      8     (c) invalidatable MR: address (local + remote write,
//   48      4         STag                       QP's PD; we may
//   52      4         length                     invalidate it)
//
// Every one of them lies in a canary-guarded region the server checks
// after the connection; none is ever legitimately written.

/// Magic of the canary server's STag table.
pub const TABLE_MAGIC: u32 = 0x4341_4e59;
/// Length of the canary server's STag table.
pub const TABLE_LEN: usize = 72;
/// Length of the table before the stall MR (entry d) was added.
const TABLE_LEN_ABC: usize = 56;

/// One MR of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableMr {
    pub addr: u64,
    pub stag: u32,
    pub len: u32,
}

/// The canary server's STag table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StagTable {
    /// (a) remote read only, the QP's PD.
    pub ro: TableMr,
    /// (b) remote write, a second PD.
    pub other_pd: TableMr,
    /// (c) remote write, the QP's PD, may be invalidated by us.
    pub inval: TableMr,
    /// (d) remote read and write, the QP's PD, deregistered by the canary
    /// on SIGUSR1 (the [`crate::stall`] scenarios).
    pub stall: Option<TableMr>,
}

impl StagTable {
    pub fn parse(b: &[u8]) -> Option<Self> {
        let be32 = |o: usize| -> Option<u32> {
            Some(u32::from_be_bytes(b.get(o..o + 4)?.try_into().ok()?))
        };
        let mr = |o: usize| -> Option<TableMr> {
            Some(TableMr {
                addr: u64::from_be_bytes(b.get(o..o + 8)?.try_into().ok()?),
                stag: be32(o + 8)?,
                len: be32(o + 12)?,
            })
        };
        let len = b.len();
        if (len != TABLE_LEN && len != TABLE_LEN_ABC)
            || be32(0)? != TABLE_MAGIC
            || be32(4)? as usize != len
        {
            return None;
        }
        Some(Self {
            ro: mr(8)?,
            other_pd: mr(24)?,
            inval: mr(40)?,
            stall: if len == TABLE_LEN { mr(56) } else { None },
        })
    }
}

fn table_of(p: &Peer) -> Option<StagTable> {
    p.segs()
        .iter()
        .filter(|s| matches!(s.hdr.opcode, Opcode::Send | Opcode::SendSe))
        .find_map(|s| StagTable::parse(&s.payload))
}

/// A connection to the canary server on which we answered its RDMA Read
/// and got its STag table.
pub(crate) fn with_table(ctx: &Ctx) -> Result<(Peer, StagTable), String> {
    with_table_as(ctx, &ReqSpec::default())
}

/// [`with_table`] on a connection set up with `req`.
pub(crate) fn with_table_as(ctx: &Ctx, req: &ReqSpec) -> Result<(Peer, StagTable), String> {
    let (mut p, rr) = with_valid_stag_as(ctx, req)?;
    let h = frames::read_response_hdr(rr.sink_stag, rr.sink_to);
    p.send_fpdu(&h, &frames::garbage(0x5eed, rr.size as usize))?;
    p.observe(ctx.t, |p| table_of(p).is_some() || p.first_term().is_some());
    match table_of(&p) {
        Some(t) => Ok((p, t)),
        None => Err(format!(
            "no STag table after the Read Response (the canary server sends one, rping does not): {}",
            p.summary()
        )),
    }
}

/// An RDMA Write of 64 octets to the start of `mr`, expecting `want`.
fn write_to(ctx: &Ctx, p: &mut Peer, mr: TableMr, want: TermCode) -> Outcome {
    let h = frames::write_hdr(mr.stag, mr.addr);
    p.send_fpdu(&h, &[0x66; 64])?;
    expect_term(ctx, p, want, Some((&[&h], 14 + 64)))
}

/// RFC 5040: the Data Sink's STag must allow remote write; DDP (RFC 5041)
/// knows no access rights, so this is RDMAP's Remote Protection Error,
/// access rights violation (siw answers DDP invalid STag instead).
fn write_readonly(ctx: &Ctx) -> Outcome {
    let (mut p, t) = with_table(ctx)?;
    write_to(ctx, &mut p, t.ro, tc(RdmapError::AccessRights))
}

fn write_other_pd(ctx: &Ctx) -> Outcome {
    let (mut p, t) = with_table(ctx)?;
    write_to(
        ctx,
        &mut p,
        t.other_pd,
        tc(DdpError::TaggedStagNotAssociated),
    )
}

fn write_invalidated(ctx: &Ctx) -> Outcome {
    let (mut p, t) = with_table(ctx)?;
    // The Send takes the server's second receive; the Write follows in
    // the same TCP write (placement is in stream order).
    let sh = frames::send_inv_hdr(p.send_msn, t.inval.stag);
    p.send_msn += 1;
    let mut f = p.fpdu(&sh, &[0x11; 16]);
    let wh = frames::write_hdr(t.inval.stag, t.inval.addr);
    f.extend(p.fpdu(&wh, &[0x66; 64]));
    p.send_raw(&f)?;
    expect_term(
        ctx,
        &mut p,
        tc(DdpError::TaggedInvalidStag),
        Some((&[&wh], 14 + 64)),
    )
}

/// RFC 5040: the STag of a Send with Invalidate must be associated with
/// the stream (its PD); one of another PD cannot be invalidated: Remote
/// Protection Error, STag cannot be invalidated (0/1/9, as siw and rsiw
/// answer; 0/2/9 is for an STag that cannot be invalidated for another
/// reason, e.g. an unknown one).
fn send_inv_foreign(ctx: &Ctx) -> Outcome {
    let (mut p, t) = with_table(ctx)?;
    let sh = frames::send_inv_hdr(p.send_msn, t.other_pd.stag);
    p.send_msn += 1;
    p.send_fpdu(&sh, &[0x11; 16])?;
    expect_term(
        ctx,
        &mut p,
        tc(RdmapError::ProtectionCannotInvalidate),
        Some((&[&sh], (sh.len() + 16) as u16)),
    )
}

/// A stale STag: the index of the invalidatable MR with another key (as
/// after a re-registration). RFC 5040 6.10: an STag the Data Sink cannot
/// invalidate is a Remote Operation Error, STag cannot be invalidated
/// (0/2/9, rsiw's answer to an unknown STag too); the current
/// registration must stay valid. Before the fix rsiw compared the index
/// only, invalidated the current MR and completed the Send.
fn send_inv_stale_key(ctx: &Ctx) -> Outcome {
    let (mut p, t) = with_table(ctx)?;
    let stale = t.inval.stag ^ 0x5a;
    let sh = frames::send_inv_hdr(p.send_msn, stale);
    p.send_msn += 1;
    p.send_fpdu(&sh, &[0x11; 16])?;
    expect_term(
        ctx,
        &mut p,
        tc(RdmapError::OperationCannotInvalidate),
        Some((&[&sh], (sh.len() + 16) as u16)),
    )
    .map(|x| format!("STag {:#x} sent as {stale:#x}; {x}", t.inval.stag))
}

/// RFC 5040 5.3 / 6.10: after a TERMINATE the stream is dead: nothing
/// that follows it is placed, completed or answered. The Write would land
/// in the invalidatable MR (the canary server checks it was never
/// written), the Send would complete the second receive, the FPDU with
/// DDP version 0 would draw a TERMINATE.
fn after_terminate(ctx: &Ctx) -> Outcome {
    let (mut p, t) = with_table(ctx)?;
    let th = frames::terminate_hdr(TermHdr::from_error(RdmapError::CatastrophicGlobal.into()));
    let mut f = p.fpdu(&th, &[]);
    let wh = frames::write_hdr(t.inval.stag, t.inval.addr);
    f.extend(p.fpdu(&wh, &[0x66; 64]));
    f.extend(p.next_send(&[0x22; 16]));
    let mut bad = frames::send_hdr(p.send_msn);
    frames::set_ddp_version(&mut bad, 0);
    f.extend(p.fpdu(&bad, &[0; 16]));
    p.send_raw(&f)?;
    let closed = p.wait_close(ctx.t);
    if let Some(s) = p.first_term() {
        let code = s.term().map(|t| code_str(t.code)).unwrap_or_default();
        return Err(format!(
            "answered a TERMINATE with a TERMINATE ({code}): {}",
            p.summary()
        ));
    }
    if !closed {
        return Err(format!(
            "not closed within {} s: {}",
            ctx.t.as_secs(),
            p.summary()
        ));
    }
    Ok(format!("closed, no TERMINATE back: {}", p.summary()))
}

/// The 2026 siw bug class (FPDU length underflow): ULPDU_Length shorter
/// than the DDP header of the segment. The FPDU holds what its length
/// says (the first L octets of the header), its PAD and a zero CRC; the
/// header's remainder follows as if it were the next FPDU. RFC 5044: such
/// an FPDU cannot be delivered; the answer is the LLP framing error.
fn ulpdu_shorter_than_header(ctx: &Ctx) -> Outcome {
    let mut done = Vec::new();
    for (len, h) in [
        (0usize, frames::send_hdr(1)),
        (1, frames::send_hdr(1)),
        (2, frames::send_hdr(1)),
        (13, frames::write_hdr(0x0000_1500, 0)),
        (17, frames::send_hdr(1)),
    ] {
        let mut p = good(ctx)?;
        let mut f = (len as u16).to_be_bytes().to_vec();
        f.extend_from_slice(&h[..len]);
        f.resize(f.len() + (4 - (2 + len) % 4) % 4, 0);
        f.extend_from_slice(&[0; 4]);
        // (what a reader trusting the header would go on to read)
        f.extend_from_slice(&h[len..]);
        f.extend_from_slice(&[0x5a; 64]);
        p.send_raw(&f)?;
        expect_term(
            ctx,
            &mut p,
            tc(LlpError::Framing(FramingFault::UlpduTooShort {
                len: len as u16,
            })),
            None,
        )
        .map_err(|e| format!("ULPDU_Length {len}: {e}"))?;
        done.push(len.to_string());
    }
    Ok(format!(
        "ULPDU_Length {}: LLP framing TERMINATE each",
        done.join(", ")
    ))
}

/// The server's Read (its Read Request to us) on a fresh connection.
fn with_read(ctx: &Ctx) -> Result<(Peer, ReadRequest), String> {
    with_valid_stag(ctx)
}

/// 2026 siw bug class: a Read Response longer than the Read asked for.
/// The canary server registers 64 octets of sink and reads 16 into its
/// start: octets 16..32 lie inside the sink MR, and the server checks they
/// stay untouched. RFC 5040 4.4: the Read Response must not exceed the
/// Read Request's size: DDP tagged base/bounds.
fn read_resp_too_long(ctx: &Ctx) -> Outcome {
    let (mut p, rr) = with_read(ctx)?;
    let n = rr.size as usize * 2;
    let h = frames::read_response_hdr(rr.sink_stag, rr.sink_to);
    p.send_fpdu(&h, &vec![0x77; n])?;
    expect_term(
        ctx,
        &mut p,
        tc(DdpError::TaggedBaseBounds),
        Some((&[&h], (h.len() + n) as u16)),
    )
    .map(|x| format!("Read of {} octets answered with {n}; {x}", rr.size))
}

/// A Read Response naming another sink STag (another index, same key).
fn read_resp_wrong_stag(ctx: &Ctx) -> Outcome {
    let (mut p, rr) = with_read(ctx)?;
    let h = frames::read_response_hdr(rr.sink_stag ^ 0x0001_0000, rr.sink_to);
    p.send_fpdu(&h, &vec![0x77; rr.size as usize])?;
    expect_term(
        ctx,
        &mut p,
        tc(DdpError::TaggedInvalidStag),
        Some((&[&h], (h.len() + rr.size as usize) as u16)),
    )
}

/// A Read Response to the right sink STag at another TO.
fn read_resp_wrong_to(ctx: &Ctx) -> Outcome {
    let (mut p, rr) = with_read(ctx)?;
    let h = frames::read_response_hdr(rr.sink_stag, rr.sink_to.wrapping_add(8));
    p.send_fpdu(&h, &vec![0x77; rr.size as usize])?;
    expect_term(
        ctx,
        &mut p,
        tc(DdpError::TaggedBaseBounds),
        Some((&[&h], (h.len() + rr.size as usize) as u16)),
    )
}

/// 2026 siw bug class: a Read Response to a Read that was flushed. A Send
/// with DDP version 0 kills the stream while the server's Read is
/// outstanding (the Read is flushed); once rsiw's TERMINATE is in, we
/// send the Read Response. The canary server (`-f`) checks that the sink
/// of a flushed Read was never written.
fn read_resp_after_flush(ctx: &Ctx) -> Outcome {
    let (mut p, rr) = with_read(ctx)?;
    let mut bad = frames::send_hdr(p.send_msn);
    frames::set_ddp_version(&mut bad, 0);
    p.send_fpdu(&bad, &[0; 16])?;
    p.observe(ctx.t, |p| p.first_term().is_some());
    if p.first_term().is_none() {
        return Err(format!("no TERMINATE for DDP version 0: {}", p.summary()));
    }
    let h = frames::read_response_hdr(rr.sink_stag, rr.sink_to);
    // The target may have closed already: a send error is fine.
    let _ = p.send_fpdu(&h, &vec![0x77; rr.size as usize]);
    let closed = p.wait_close(ctx.t);
    let n = p.segs().iter().filter(|s| s.term().is_some()).count();
    if n != 1 {
        return Err(format!("{n} TERMINATEs: {}", p.summary()));
    }
    if !closed {
        return Err(format!(
            "not closed within {} s: {}",
            ctx.t.as_secs(),
            p.summary()
        ));
    }
    Ok(format!("one TERMINATE, closed: {}", p.summary()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stag_table_parses() {
        let mut b = Vec::new();
        b.extend_from_slice(&TABLE_MAGIC.to_be_bytes());
        b.extend_from_slice(&(TABLE_LEN as u32).to_be_bytes());
        for i in 1..=4u32 {
            b.extend_from_slice(&(0x7f00_0000_1000u64 * u64::from(i)).to_be_bytes());
            b.extend_from_slice(&(0x100 * i + 7).to_be_bytes());
            b.extend_from_slice(&256u32.to_be_bytes());
        }
        let t = StagTable::parse(&b).unwrap();
        assert_eq!(t.ro.stag, 0x107);
        assert_eq!(t.other_pd.addr, 0x7f00_0000_1000 * 2);
        assert_eq!(t.inval.len, 256);
        assert_eq!(t.stall.map(|m| m.stag), Some(0x407));
        assert_eq!(t.inval.stag, 0x307);
        assert!(StagTable::parse(&b[..TABLE_LEN - 1]).is_none());
        b[0] = 0;
        assert!(StagTable::parse(&b).is_none());
        // An rping_rdma_info is no table.
        assert!(StagTable::parse(&frames::rping_info(1, 2, 3)).is_none());
    }

    #[test]
    fn names_are_unique() {
        for (i, a) in ALL.iter().enumerate() {
            assert!(ALL[i + 1..].iter().all(|b| b.name != a.name), "{}", a.name);
        }
    }
}
