// SPDX-License-Identifier: GPL-2.0

//! `iwarp decode`: per connection and direction, detect the MPA
//! Request/Reply, derive the marker/CRC mode, then deframe and print one
//! line per MPA frame, FPDU, marker, DDP/RDMAP header and CRC verdict.
//!
//! Deframing and header parsing are `rsiw-wire`'s (with the RFC 7306
//! extensions accepted). The RFC 7306 messages are decoded a second time
//! by [`crate::rfc7306`], written from the RFC apart from `rsiw-wire`:
//! its reading is printed, and a `MISMATCH` when the two disagree.

use std::path::Path;

use rsiw_wire::connect::{FrameKind, MpaRr, RrParser, MAX_PD_LEN, REP_KEY, REQ_KEY};
use rsiw_wire::ddp::DdpHdr;
use rsiw_wire::error::ProtocolError;
use rsiw_wire::markers::Marker;
use rsiw_wire::mpa::MpaMode;
use rsiw_wire::rdmap::{Body, Extensions, SegmentHeader};
use rsiw_wire::rx::{CrcVerdict, Deframer, FpduInfo, RxConfig, RxSink};
use rsiw_wire::term::parse_term_copy;
use rsiw_wire::HostCrc32c;

use crate::capture::{read_capture, reassemble, Stream};

struct Printer<'a> {
    label: &'a str,
    term: Option<(rsiw_wire::term::TermHdr, Vec<u8>)>,
}

impl Printer<'_> {
    fn line(&self, s: &str) {
        println!("{}{}", self.label, s);
    }
}

fn b(x: bool) -> u8 {
    u8::from(x)
}

impl RxSink for Printer<'_> {
    fn on_fpdu_start(&mut self, i: &FpduInfo) -> Result<(), ProtocolError> {
        self.line(&format!(
            "FPDU off={} ulpdu_len={} pad={}",
            i.hdr_off, i.ulpdu_len, i.pad
        ));
        Ok(())
    }

    fn on_header(&mut self, h: &SegmentHeader, raw: &[u8], pl: u16) -> Result<(), ProtocolError> {
        let c = h.ctrl;
        let ddp = match h.ddp {
            DdpHdr::Tagged(t) => format!(
                "DDP T=1 L={} DV={} stag={:#010x} to={:#018x}",
                b(c.last()),
                c.ddp_version(),
                t.stag,
                t.to
            ),
            DdpHdr::Untagged(u) => format!(
                "DDP T=0 L={} DV={} qn={} msn={} mo={}",
                b(c.last()),
                c.ddp_version(),
                u.qn,
                u.msn,
                u.mo
            ),
        };
        let mut r = format!(
            "{ddp} RDMAP RV={} op={} payload_len={}",
            c.rdmap_version(),
            h.opcode.name(),
            pl
        );
        if let (true, DdpHdr::Untagged(u)) = (h.opcode.has_invalidate(), h.ddp) {
            r += &format!(" inval_stag={:#010x}", u.ulp);
        }
        match h.body {
            Body::ReadRequest(rr) => {
                r += &format!(
                    " sink_stag={:#010x} sink_to={:#018x} size={} src_stag={:#010x} src_to={:#018x}",
                    rr.sink_stag, rr.sink_to, rr.size, rr.src_stag, rr.src_to
                );
            }
            Body::Terminate(t) => {
                let name = t.error().map_or("unknown error", |e| e.name());
                r += &format!(
                    " layer={} etype={} code={:#04x} M={} D={} R={} ({})",
                    t.code.layer,
                    t.code.etype,
                    t.code.code,
                    b(t.hdrct.m),
                    b(t.hdrct.d),
                    b(t.hdrct.r),
                    name
                );
                self.term = Some((t, Vec::new()));
            }
            Body::Immediate(_) | Body::AtomicRequest(_) | Body::AtomicResponse(_) => {
                match crate::rfc7306::decode(raw) {
                    Ok(mut seg) => {
                        seg.extra = usize::from(pl);
                        r += &format!(" | {}", seg.describe());
                        if !agree(h, &seg) {
                            r += &format!(" MISMATCH rsiw-wire={:?}", h.body);
                        }
                    }
                    Err(e) => r += &format!(" | RFC7306 MISMATCH independent decoder: {e:?}"),
                }
            }
            Body::None => {}
        }
        self.line(&r);
        Ok(())
    }

    fn on_payload(&mut self, _off: u32, data: &[u8]) -> Result<(), ProtocolError> {
        if let Some((_, v)) = self.term.as_mut() {
            if v.len() < 1024 {
                v.extend_from_slice(data);
            }
        }
        Ok(())
    }

    fn on_fpdu_end(&mut self, _h: &SegmentHeader, v: CrcVerdict) -> Result<(), ProtocolError> {
        if let Some((t, p)) = self.term.take() {
            match parse_term_copy(&t, &p) {
                Ok(Some(c)) => self.line(&format!(
                    "TERM-COPY ddp_seg_len={} ddp_hdr={} rdmap_hdr={}",
                    c.ddp_seg_len,
                    crate::to_hex(c.ddp_hdr),
                    crate::to_hex(c.rdmap_hdr)
                )),
                Ok(None) => {}
                Err(e) => self.line(&format!("TERM-COPY error {e:?}")),
            }
        }
        let s = match v {
            CrcVerdict::Ok => "CRC ok".to_string(),
            CrcVerdict::NotChecked => "CRC not-checked".to_string(),
            CrcVerdict::Mismatch { computed, received } => {
                format!("CRC BAD computed={computed:#010x} received={received:#010x}")
            }
        };
        self.line(&s);
        Ok(())
    }

    fn on_marker(&mut self, off: u32, m: Marker) {
        self.line(&format!("MARKER off={off} fpduptr={}", m.fpduptr));
    }
}

/// Whether `rsiw-wire`'s header and the independent decoder's segment
/// say the same of the same octets.
fn agree(h: &SegmentHeader, s: &crate::rfc7306::Segment) -> bool {
    use crate::rfc7306::Body as B;
    let DdpHdr::Untagged(u) = h.ddp else {
        return false;
    };
    let ddp = h.opcode as u8 == s.opcode()
        && h.ctrl.last() == s.last
        && h.ctrl.ddp_version() == s.dv
        && h.ctrl.rdmap_version() == s.rv
        && (u.ulp, u.qn, u.msn, u.mo) == (s.inval_stag, s.qn, s.msn, s.mo);
    let body = match (h.body, s.body) {
        (Body::Immediate(a), B::Immediate { data, .. }) => a == data,
        (
            Body::AtomicRequest(a),
            B::AtomicRequest {
                reserved,
                aopcode,
                request_id,
                remote_stag,
                remote_to,
                add_or_swap,
                add_or_swap_mask,
                compare,
                compare_mask,
            },
        ) => {
            (a.rsvd, a.aopcode, a.req_id, a.stag, a.to)
                == (reserved, aopcode, request_id, remote_stag, remote_to)
                && (a.add_swap, a.add_swap_mask, a.compare, a.compare_mask)
                    == (add_or_swap, add_or_swap_mask, compare, compare_mask)
        }
        (
            Body::AtomicResponse(a),
            B::AtomicResponse {
                request_id,
                original,
            },
        ) => (a.req_id, a.orig) == (request_id, original),
        _ => false,
    };
    ddp && body
}

fn mpa_line(h: &MpaRr, f: &rsiw_wire::connect::RrFrame<'_>) -> String {
    let kind = match h.kind {
        FrameKind::Request => "MPA Request",
        FrameKind::Reply => "MPA Reply",
    };
    let mut s = format!(
        "{kind} rev={} M={} C={} R={} E={} pd_len={}",
        h.revision,
        b(h.markers),
        b(h.crc),
        b(h.reject),
        b(h.enhanced),
        h.pd_len
    );
    if let Some(io) = f.ird_ord {
        s += &format!(
            " ird={} ord={} p2p={} zero_rtr={} write_rtr={} read_rtr={}",
            io.ird,
            io.ord,
            b(io.peer_to_peer),
            b(io.zero_length_rtr),
            b(io.write_rtr),
            b(io.read_rtr)
        );
    }
    s + &format!(" pdata={}", f.pdata.len())
}

/// Parses an MPA Request/Reply at the start of `data`, printing it.
/// Returns the header and the octets it used.
fn take_rr(label: &str, data: &[u8]) -> Option<(MpaRr, usize)> {
    let key = data.get(..16)?;
    if key != REQ_KEY && key != REP_KEY {
        return None;
    }
    let mut p = RrParser::new(None, MAX_PD_LEN);
    match p.push(data) {
        Ok((used, true)) => {
            let f = p.frame()?;
            println!("{label}{}", mpa_line(&f.hdr, &f));
            Some((f.hdr, used))
        }
        Ok((_, false)) => {
            println!("{label}MPA frame truncated");
            None
        }
        Err(e) => {
            let pe: ProtocolError = rsiw_wire::error::LlpError::InvalidRequestReply(e).into();
            let t = pe.term_code();
            println!(
                "{label}ERROR {} ({e:?}) layer={} etype={} code={:#04x}",
                pe.name(),
                t.layer,
                t.etype,
                t.code
            );
            None
        }
    }
}

fn deframe(label: &str, data: &[u8], mode: MpaMode, off: u32) {
    println!(
        "{label}MPA mode markers={} crc={} stream_offset={off}",
        b(mode.markers),
        b(mode.crc)
    );
    let cfg = RxConfig {
        ext: Extensions::RFC7306,
        ..RxConfig::new(mode)
    };
    let mut d = Deframer::new(cfg, HostCrc32c::new(), off);
    let mut p = Printer { label, term: None };
    if let Err(e) = d.push(data, &mut p) {
        let t = e.term_code();
        println!(
            "{label}ERROR {} ({e:?}) layer={} etype={} code={:#04x} at stream_offset={}",
            e.name(),
            t.layer,
            t.etype,
            t.code,
            d.stream_offset()
        );
        return;
    }
    if !d.at_fpdu_boundary() {
        println!(
            "{label}INCOMPLETE FPDU at end of data (stream_offset={})",
            d.stream_offset()
        );
    }
    println!("{label}END fpdus={}", d.fpdus());
}

/// Entry point of `iwarp decode`.
pub fn run(file: &Path, hex: bool, default: MpaMode, off: u32) -> Result<(), String> {
    let bytes = std::fs::read(file).map_err(|e| format!("{}: {e}", file.display()))?;
    if hex {
        let text = String::from_utf8_lossy(&bytes);
        let data = crate::parse_hex(&text)?;
        let label = "";
        let (mode, start, off) = match take_rr(label, &data) {
            Some((h, used)) => {
                if h.reject {
                    return Ok(());
                }
                (
                    MpaMode {
                        markers: h.markers || default.markers,
                        crc: h.crc || default.crc,
                    },
                    used,
                    0,
                )
            }
            None => (default, 0, off),
        };
        deframe(label, &data[start..], mode, off);
        return Ok(());
    }
    let segs = read_capture(&bytes)?;
    let streams = reassemble(&segs);
    let mut done = vec![false; streams.len()];
    for i in 0..streams.len() {
        if done[i] {
            continue;
        }
        done[i] = true;
        let rev = streams
            .iter()
            .position(|s| s.flow == streams[i].flow.reversed());
        if let Some(j) = rev {
            done[j] = true;
        }
        decode_conn(&streams[i], rev.map(|j| &streams[j]), default);
    }
    Ok(())
}

fn decode_conn(a: &Stream, b_: Option<&Stream>, default: MpaMode) {
    let dirs: Vec<&Stream> = std::iter::once(a).chain(b_).collect();
    let labels: Vec<String> = dirs.iter().map(|s| format!("[{}] ", s.flow)).collect();
    println!("CONN {}", a.flow);
    let frames: Vec<Option<(MpaRr, usize)>> = dirs
        .iter()
        .zip(&labels)
        .map(|(s, l)| take_rr(l, &s.data))
        .collect();
    let req = frames
        .iter()
        .flatten()
        .find(|f| f.0.kind == FrameKind::Request)
        .map(|f| f.0);
    let rep = frames
        .iter()
        .flatten()
        .find(|f| f.0.kind == FrameKind::Reply)
        .map(|f| f.0);
    if rep.is_some_and(|r| r.reject) {
        println!("{}connection rejected", labels[0]);
        return;
    }
    for (k, s) in dirs.iter().enumerate() {
        let own = frames[k].map(|f| f.0);
        // CRC: used in both directions if either side asked for it.
        // Markers: the receiver of a direction states its requirement in
        // the frame it sent (the peer's frame).
        let mode = match (req, rep) {
            (Some(q), Some(p)) => {
                let peer = if own.map(|o| o.kind) == Some(FrameKind::Request) {
                    p
                } else {
                    q
                };
                MpaMode {
                    markers: peer.markers,
                    crc: q.crc || p.crc,
                }
            }
            (Some(x), None) | (None, Some(x)) => MpaMode {
                markers: x.markers || default.markers,
                crc: x.crc || default.crc,
            },
            (None, None) => default,
        };
        let start = frames[k].map_or(0, |f| f.1);
        if start < s.data.len() || frames[k].is_none() {
            deframe(&labels[k], &s.data[start..], mode, 0);
        }
        if s.gap {
            println!("{}GAP in TCP stream: decoding stopped", labels[k]);
        }
    }
}
