// SPDX-License-Identifier: GPL-2.0

//! Listener mode: rsiw is the MPA *initiator*. The hostile peer accepts one
//! TCP connection (from an rdma_cm client on rsiw, e.g. `rping -c`), reads
//! and checks its MPA Request (RFC 5044 / RFC 6581: revision 2, the
//! Request key, IRD/ORD data, PD_Length), then bends its MPA Reply and
//! reports what rsiw did: closed (FIN) or reset the connection, or kept it
//! open, and after how long.
//!
//!   hostile-peer --listen IP:PORT --scenario init_NAME [--timeout SECS]

use std::io::ErrorKind;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::thread::sleep;
use std::time::{Duration, Instant};

use rsiw_wire::connect::{FrameKind, IrdOrd, REP_KEY, REVISION_2};
use rsiw_wire::error::ProtocolError;
use rsiw_wire::mpa::MpaMode;
use rsiw_wire::rdmap::Opcode;

use crate::frames::{self, ReqSpec};
use crate::peer::{end_str, End, MpaOutcome, Peer};
use crate::scenarios::{sc, Outcome};

/// rsiw's MPA timeout (rust/cm.rs `MPA_TIMEOUT_MS`).
const RSIW_MPA_TIMEOUT: Duration = Duration::from_secs(10);

pub struct LCtx {
    /// How long to wait for an answer.
    pub t: Duration,
}

/// The checked MPA Request of the initiator.
pub struct Req {
    pub markers: bool,
    pub crc: bool,
    pub io: IrdOrd,
    pub pd_len: u16,
}

/// An initiator-side scenario.
pub type InitScenario = crate::scenarios::Scenario<fn(&LCtx, Peer, &Req) -> Outcome>;

pub const ALL: &[InitScenario] = &[
    sc!(
        init_no_reply,
        "[initiator] no MPA Reply at all: expect rsiw to give up (MPA timeout) and close"
    ),
    sc!(
        init_reply_bad_key,
        "[initiator] a Reply with a wrong key: expect the LLP TERMINATE invalid MPA Request or Reply (as siw sends), then close"
    ),
    sc!(
        init_reply_reject,
        "[initiator] a Reply with R=1 and private data: expect close (application: REJECTED)"
    ),
    sc!(
        init_reply_bad_revision,
        "[initiator] a Reply with revision 3: expect the LLP TERMINATE invalid MPA Request or Reply, then close"
    ),
    sc!(
        init_reply_truncated,
        "[initiator] 10 octets of a Reply, then FIN: expect close"
    ),
    sc!(
        init_reply_pd_too_long,
        "[initiator] a Reply with PD_Length 513: expect the LLP TERMINATE invalid MPA Request or Reply, then close"
    ),
    sc!(
        init_reply_ord_above_ird,
        "[initiator] a Reply whose ORD is 4 above the IRD rsiw offered: RFC 6581, rsiw raises its IRD (resources allow): expect that many zero length Read Requests at once answered, no TERMINATE"
    ),
    sc!(
        init_params_changed,
        "[initiator] mpa_markers and mpa_crc_required set between rsiw's Request (M=0 C=0) and our Reply (M=0 C=0): expect the connection to go on without markers or CRC (a zero length Read Request answered)"
    ),
    sc!(
        init_reply_ord_beyond_max,
        "[initiator] a Reply whose ORD (16383) no IRD of rsiw can serve: RFC 6581, expect the LLP TERMINATE insufficient IRD, then close"
    ),
    sc!(
        init_reply_wrong_rtr,
        "[initiator] (rsiw: mpa_peer_to_peer=1) a peer-to-peer Reply choosing the Read RTR where rsiw offered the Write RTR only: RFC 6581, expect the LLP TERMINATE no matching RTR, then close"
    ),
    sc!(
        init_garbage_after_reply,
        "[initiator] a valid Reply, then 4 KiB of random octets: expect TERMINATE (LLP) and close, or close"
    ),
];

pub fn find(name: &str) -> Option<&'static InitScenario> {
    ALL.iter().find(|s| s.name == name)
}

/// Accepts one connection on `addr` (waiting up to `accept_t`), checks the
/// MPA Request and runs the scenario.
pub fn run(addr: SocketAddr, s: &InitScenario, ctx: &LCtx, accept_t: Duration) -> Outcome {
    let l = TcpListener::bind(addr).map_err(|e| format!("bind {addr}: {e}"))?;
    println!("# listening on {addr}");
    let sock = accept(&l, accept_t)?;
    drop(l);
    let from = sock.peer_addr().map_err(|e| e.to_string())?;
    let mut p = Peer::from_stream(sock);
    let req = read_request(&mut p, ctx.t)?;
    println!(
        "# {from}: MPA Request rev 2 M={} C={} IRD {} ORD {} P2P={} PD_Length {}",
        req.markers as u8,
        req.crc as u8,
        req.io.ird,
        req.io.ord,
        req.io.peer_to_peer as u8,
        req.pd_len
    );
    (s.run)(ctx, p, &req)
}

fn accept(l: &TcpListener, t: Duration) -> Result<TcpStream, String> {
    l.set_nonblocking(true).map_err(|e| e.to_string())?;
    let deadline = Instant::now() + t;
    loop {
        match l.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false).map_err(|e| e.to_string())?;
                return Ok(s);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {
                if Instant::now() >= deadline {
                    return Err(format!("no connection within {} s", t.as_secs()));
                }
                sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(format!("accept: {e}")),
        }
    }
}

/// Reads the initiator's Request and checks it: the key and the header
/// (the wire core's parser), revision 2 with IRD/ORD data (rsiw's default
/// `mpa_rev=2`), PD_Length covering them.
fn read_request(p: &mut Peer, t: Duration) -> Result<Req, String> {
    match p.read_rr(FrameKind::Request, t)? {
        MpaOutcome::Reply {
            hdr,
            ird_ord,
            pdata,
        } => {
            if hdr.revision != REVISION_2 {
                return Err(format!("Request revision {}, not 2", hdr.revision));
            }
            if hdr.reject {
                return Err("Request with the R bit set".into());
            }
            let Some(io) = ird_ord.filter(|_| hdr.enhanced) else {
                return Err(format!(
                    "revision 2 Request without IRD/ORD data (PD_Length {})",
                    hdr.pd_len
                ));
            };
            if usize::from(hdr.pd_len) != 4 + pdata.len() {
                return Err(format!(
                    "PD_Length {} but {} octets of private data after IRD/ORD",
                    hdr.pd_len,
                    pdata.len()
                ));
            }
            Ok(Req {
                markers: hdr.markers,
                crc: hdr.crc,
                io,
                pd_len: hdr.pd_len,
            })
        }
        o => Err(format!("bad MPA Request: {o}")),
    }
}

/// A Reply matching the Request (same C; no markers wanted; IRD/ORD
/// mirrored; no peer-to-peer RTR), as `ReqSpec` bytes with the Reply key.
fn reply_spec(req: &Req) -> ReqSpec {
    ReqSpec {
        key: REP_KEY,
        markers: false,
        crc: req.crc,
        ird_ord: Some(IrdOrd {
            ird: req.io.ord.min(16),
            ord: req.io.ird.min(16),
            ..IrdOrd::default()
        }),
        ..ReqSpec::default()
    }
}

/// Waits for rsiw to end the connection after our misbehaviour (at `t0`).
/// Nothing may arrive: no FPDU before a valid Reply.
fn expect_close(p: &mut Peer, t0: Instant, t: Duration) -> Outcome {
    let closed = p.wait_close(t);
    let dt = t0.elapsed();
    if p.rx_bytes > 0 {
        return Err(format!(
            "{} octets received after our bad Reply; connection {}",
            p.rx_bytes,
            end_str(&p.end)
        ));
    }
    if !closed {
        return Err(format!(
            "connection {} after {:.1} s",
            end_str(&p.end),
            dt.as_secs_f32()
        ));
    }
    Ok(format!(
        "{} after {:.1} s",
        end_str(&p.end),
        dt.as_secs_f32()
    ))
}

fn send_bad_reply(ctx: &LCtx, mut p: Peer, b: &[u8]) -> Outcome {
    p.send_raw(b)?;
    expect_close(&mut p, Instant::now(), ctx.t)
}

/// A Reply rsiw cannot parse: RFC 5044's LLP TERMINATE invalid MPA
/// Request or Reply (2/0/4), without markers (none were agreed), then
/// the close.
fn send_invalid_reply(ctx: &LCtx, mut p: Peer, req: &Req, b: &[u8]) -> Outcome {
    p.send_raw(b)?;
    fpdus_after_reply(&mut p, req, false, req.crc);
    expect_setup_terminate(ctx, &mut p, 0x04)
}

fn init_no_reply(ctx: &LCtx, mut p: Peer, _req: &Req) -> Outcome {
    let t0 = Instant::now();
    // rsiw gives up after its MPA timeout; allow that plus our timeout.
    let d = expect_close(&mut p, t0, RSIW_MPA_TIMEOUT + ctx.t)?;
    if t0.elapsed() + Duration::from_secs(1) < RSIW_MPA_TIMEOUT {
        return Err(format!("gave up before its MPA timeout: {d}"));
    }
    Ok(d)
}

fn init_reply_bad_key(ctx: &LCtx, p: Peer, req: &Req) -> Outcome {
    let b = frames::mpa_request(&ReqSpec {
        key: *b"MPA ID Rep Frume",
        ..reply_spec(req)
    });
    send_invalid_reply(ctx, p, req, &b)
}

fn init_reply_reject(ctx: &LCtx, p: Peer, req: &Req) -> Outcome {
    let mut b = frames::mpa_request(&ReqSpec {
        pdata: b"hostile-peer: rejected".to_vec(),
        ..reply_spec(req)
    });
    b[16] |= rsiw_wire::connect::FLAG_REJECT;
    send_bad_reply(ctx, p, &b)
}

fn init_reply_bad_revision(ctx: &LCtx, p: Peer, req: &Req) -> Outcome {
    let b = frames::mpa_request(&ReqSpec {
        revision: 3,
        ..reply_spec(req)
    });
    send_invalid_reply(ctx, p, req, &b)
}

fn init_reply_truncated(ctx: &LCtx, mut p: Peer, req: &Req) -> Outcome {
    let b = frames::mpa_request(&reply_spec(req));
    p.send_raw(&b[..10])?;
    sleep(Duration::from_millis(200));
    p.sock.shutdown(Shutdown::Write).ok();
    expect_close(&mut p, Instant::now(), ctx.t)
}

fn init_reply_pd_too_long(ctx: &LCtx, p: Peer, req: &Req) -> Outcome {
    // 4 octets IRD/ORD + 509 of private data: PD_Length 513, all sent.
    let b = frames::mpa_request(&ReqSpec {
        pdata: vec![0x42; 509],
        ..reply_spec(req)
    });
    send_invalid_reply(ctx, p, req, &b)
}

fn init_garbage_after_reply(ctx: &LCtx, mut p: Peer, req: &Req) -> Outcome {
    p.send_raw(&frames::mpa_request(&reply_spec(req)))?;
    // RFC 5044 7.1.1: rsiw's M asks for markers on what we send; ours
    // (M=0) on what it sends. Both use CRC if either asked for it.
    p.start_fpdus(
        MpaMode {
            markers: req.markers,
            crc: req.crc,
        },
        MpaMode {
            markers: false,
            crc: req.crc,
        },
    );
    // rping's first Send (its rping_rdma_info) shows the connection works.
    p.observe(ctx.t, |p| !p.segs().is_empty());
    let first = match p.segs().first() {
        Some(s) => s.hdr.opcode.name().to_string(),
        None if p.end == End::Open => "nothing".into(),
        None => return Err(format!("before the garbage: {}", p.summary())),
    };
    let n0 = p.segs().len();
    let t0 = Instant::now();
    // rsiw may close while we write: a send error is fine.
    let _ = p.send_raw(&frames::garbage(0x1417_c0de, 4096));
    if !p.wait_close(ctx.t) {
        return Err(format!(
            "not closed within {} s after the garbage: {}",
            ctx.t.as_secs(),
            p.summary()
        ));
    }
    let dt = t0.elapsed();
    let after: Vec<_> = p.segs()[n0..].to_vec();
    let terms = after
        .iter()
        .filter(|s| s.hdr.opcode == Opcode::Terminate)
        .count();
    if let Some(s) = after.iter().find(|s| s.hdr.opcode == Opcode::Terminate) {
        let t = s.term().expect("terminate");
        if ProtocolError::from_term_code(t.code).is_none() && (t.code.layer, t.code.code) != (2, 3)
        {
            return Err(format!("TERMINATE with unregistered code: {}", p.summary()));
        }
        if terms > 1 {
            return Err(format!("{terms} TERMINATEs: {}", p.summary()));
        }
        if after.last().map(|s| s.hdr.opcode) != Some(Opcode::Terminate) {
            return Err(format!("FPDUs after the TERMINATE: {}", p.summary()));
        }
    }
    Ok(format!(
        "first FPDU {first}; after the garbage ({:.1} s): {}",
        dt.as_secs_f32(),
        p.summary()
    ))
}

/// Sets the FPDU modes of a connection whose Reply we sent (`reply_m`: the
/// M of our Reply).
fn fpdus_after_reply(p: &mut Peer, req: &Req, reply_m: bool, crc: bool) {
    // RFC 5044 7.1.1: rsiw's M asks for markers on what we send, ours on
    // what it sends.
    p.start_fpdus(
        MpaMode {
            markers: req.markers,
            crc,
        },
        MpaMode {
            markers: reply_m,
            crc,
        },
    );
}

/// Sends `n` zero length Read Requests at once and waits for their Read
/// Responses; Err on a TERMINATE or a missing answer.
fn reads_answered(ctx: &LCtx, p: &mut Peer, n: u32) -> Outcome {
    let rr = rsiw_wire::rdmap::ReadRequest {
        sink_stag: 0x0000_2000,
        sink_to: 0,
        size: 0,
        src_stag: 0x00ab_cd00,
        src_to: 0,
    };
    let mut f = Vec::new();
    for m in 1..=n {
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
        answered(p) >= n as usize || p.first_term().is_some()
    });
    if let Some(t) = p.first_term().and_then(|s| s.term()) {
        return Err(format!(
            "TERMINATE {} after {} of {n} Read Responses: {}",
            crate::peer::code_str(t.code),
            answered(p),
            p.summary()
        ));
    }
    if answered(p) < n as usize {
        return Err(format!(
            "{} of {n} Read Requests answered: {}",
            answered(p),
            p.summary()
        ));
    }
    Ok(format!("{n} zero length Read Requests answered"))
}

/// RFC 6581: a Reply's ORD above the initiator's IRD: the initiator
/// raises its IRD if resources allow (else the insufficient IRD
/// TERMINATE). rsiw took the Reply silently, kept its IRD and failed the
/// Read past it.
fn init_reply_ord_above_ird(ctx: &LCtx, mut p: Peer, req: &Req) -> Outcome {
    let ord = req.io.ird + 4;
    let mut spec = reply_spec(req);
    spec.ird_ord = Some(IrdOrd {
        ird: req.io.ord,
        ord,
        ..IrdOrd::default()
    });
    p.send_raw(&frames::mpa_request(&spec))?;
    fpdus_after_reply(&mut p, req, false, req.crc);
    let r = reads_answered(ctx, &mut p, u32::from(ord));
    let d = format!("Request IRD {}, Reply ORD {ord}", req.io.ird);
    r.map(|x| format!("{d}: {x}"))
        .map_err(|x| format!("{d}: {x}"))
}

/// Where rsiw's module parameters are (the guest test runs us as root).
const PARAMS: &str = "/sys/module/rsiw/parameters";

fn param(name: &str) -> Result<String, String> {
    std::fs::read_to_string(format!("{PARAMS}/{name}"))
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("{PARAMS}/{name}: {e}"))
}

fn set_param(name: &str, v: &str) -> Result<(), String> {
    std::fs::write(format!("{PARAMS}/{name}"), v).map_err(|e| format!("{PARAMS}/{name}: {e}"))
}

/// The initiator must use the C and M its Request carried: module
/// parameters changed while the Request is out must not change what the
/// connection does (rsiw read them again when the Reply arrived and then
/// expected markers and CRC neither side had asked for).
fn init_params_changed(ctx: &LCtx, mut p: Peer, req: &Req) -> Outcome {
    if req.markers || req.crc {
        return Err(format!(
            "Request M={} C={}: needs rsiw's defaults (no markers, no CRC)",
            req.markers as u8, req.crc as u8
        ));
    }
    let old = (param("mpa_markers")?, param("mpa_crc_required")?);
    set_param("mpa_markers", "1")?;
    set_param("mpa_crc_required", "1")?;
    let sent = p.send_raw(&frames::mpa_request(&reply_spec(req)));
    fpdus_after_reply(&mut p, req, false, false);
    // rsiw handles the Reply in its CM work: its first FPDU (rping's
    // Send) says it did; then the parameters go back.
    if sent.is_ok() {
        p.observe(ctx.t, |p| !p.segs().is_empty());
    }
    let restored = set_param("mpa_markers", &old.0).and(set_param("mpa_crc_required", &old.1));
    sent?;
    restored?;
    // The check is on what rsiw takes: our FPDUs without markers or CRC.
    reads_answered(ctx, &mut p, 1).map(|x| format!("parameters set to 1 and back: {x}"))
}

/// Waits for rsiw's TERMINATE after our Reply and checks it: the first and
/// only FPDU, LLP layer (2), EType MPA (0), `code`, no header copies
/// (independent decoder), then the close.
fn expect_setup_terminate(ctx: &LCtx, p: &mut Peer, code: u8) -> Outcome {
    p.observe(ctx.t, |p| p.first_term().is_some());
    let closed = p.wait_close(ctx.t);
    let Some(s) = p.first_term().cloned() else {
        return Err(format!("no TERMINATE: {}", p.summary()));
    };
    let mut ulpdu = s.raw.clone();
    ulpdu.extend_from_slice(&s.payload);
    let d = crate::termcheck::decode(&ulpdu).map_err(|e| format!("TERMINATE: {e}"))?;
    if (d.layer, d.etype, d.code) != (2, 0, code) {
        return Err(format!(
            "TERMINATE layer {} etype {} code {:#04x}, expected 2/0/{code:#04x}: {}",
            d.layer,
            d.etype,
            d.code,
            p.summary()
        ));
    }
    if d.m || d.d || d.r {
        return Err(format!(
            "setup TERMINATE with header copies: {}",
            p.summary()
        ));
    }
    if p.segs().len() != 1 {
        return Err(format!("FPDUs besides the TERMINATE: {}", p.summary()));
    }
    if !closed {
        return Err(format!(
            "connection {} after the TERMINATE",
            end_str(&p.end)
        ));
    }
    Ok(p.summary())
}

/// RFC 6581: an initiator that cannot raise its IRD to the Reply's ORD
/// sends the LLP TERMINATE insufficient IRD (2/0/6) and closes.
fn init_reply_ord_beyond_max(ctx: &LCtx, mut p: Peer, req: &Req) -> Outcome {
    let mut spec = reply_spec(req);
    spec.ird_ord = Some(IrdOrd {
        ird: req.io.ord,
        ord: rsiw_wire::connect::IRD_ORD_MAX,
        ..IrdOrd::default()
    });
    p.send_raw(&frames::mpa_request(&spec))?;
    fpdus_after_reply(&mut p, req, false, req.crc);
    expect_setup_terminate(ctx, &mut p, 0x06)
}

/// RFC 6581: a Reply choosing an RTR the initiator did not offer gets the
/// LLP TERMINATE no matching RTR (2/0/7) and the close.
fn init_reply_wrong_rtr(ctx: &LCtx, mut p: Peer, req: &Req) -> Outcome {
    if !req.io.peer_to_peer || !req.io.write_rtr || req.io.read_rtr {
        return Err(format!(
            "Request IRD/ORD {:?}: needs peer-to-peer with the Write RTR only (rsiw: mpa_peer_to_peer=1)",
            req.io
        ));
    }
    let mut spec = reply_spec(req);
    spec.ird_ord = Some(IrdOrd {
        peer_to_peer: true,
        read_rtr: true,
        ..spec.ird_ord.unwrap_or_default()
    });
    p.send_raw(&frames::mpa_request(&spec))?;
    fpdus_after_reply(&mut p, req, false, req.crc);
    expect_setup_terminate(ctx, &mut p, 0x07)
}
