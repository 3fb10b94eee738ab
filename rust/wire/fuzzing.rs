// SPDX-License-Identifier: GPL-2.0

//! Fuzzing entry points (host only, not part of the kernel tree).
//!
//! One body per cargo-fuzz target: [`rx_one`] (`rx`: arbitrary bytes into
//! the receive deframer and the parsers), [`connect_one`] (`connect`: the
//! MPA Request/Reply parser under arbitrary chunking and the encoder round
//! trip) and [`tx_one`] (`tx`: the transmit packer with arbitrary modes,
//! offsets, budgets and MULPDUs, its output deframed and checked octet by
//! octet). Each corpus (`fuzz/corpus/<target>/`) is replayed by
//! `tests/fuzz_corpus.rs` on stable. A body panics only when an invariant
//! of the core is violated.

use crate::connect::{encode_rr, FrameKind, IrdOrd, MpaRr, RrParser, RR_HDR_LEN};
use crate::crc::{crc32c_raw, Crc32c, SoftCrc32c};
use crate::error::{ProtocolError, TermCode};
use crate::markers::Marker;
use crate::mpa::MpaMode;
use crate::rdmap::{Extensions, SegmentHeader};
use crate::rfc7306::{AtomicRequest, AtomicResponse};
use crate::rx::{CrcVerdict, Deframer, FpduInfo, RxConfig, RxSink};
use crate::term::{parse_term_copy, TermHdr};
use crate::tx::{encode_fpdu, encode_planned, FpduPlan, Segmenter, TxBatch};

/// A sink that checks the callback contract and digests every event.
#[derive(Debug, Default)]
struct CheckSink {
    digest: u32,
    payload_len: u32,
    next_off: u32,
    in_seg: bool,
    events: u64,
    ulpdu_len: u16,
}

impl CheckSink {
    fn mix(&mut self, tag: u8, data: &[u8]) {
        self.digest = crc32c_raw(self.digest, &[tag]);
        self.digest = crc32c_raw(self.digest, data);
    }
}

impl RxSink for CheckSink {
    fn on_fpdu_start(&mut self, info: &FpduInfo) -> Result<(), ProtocolError> {
        assert!(!self.in_seg, "FPDU started inside a segment");
        self.ulpdu_len = info.ulpdu_len;
        self.mix(1, &info.ulpdu_len.to_be_bytes());
        Ok(())
    }
    fn on_header(
        &mut self,
        hdr: &SegmentHeader,
        raw: &[u8],
        payload_len: u16,
    ) -> Result<(), ProtocolError> {
        assert_eq!(raw.len(), hdr.len());
        let (b, n) = hdr.to_bytes();
        assert_eq!(b.get(..n), Some(raw), "header re-encode differs");
        self.in_seg = true;
        self.payload_len = u32::from(payload_len);
        self.next_off = 0;
        self.mix(2, raw);
        self.events += 1;
        Ok(())
    }
    fn on_payload(&mut self, offset: u32, data: &[u8]) -> Result<(), ProtocolError> {
        assert!(self.in_seg);
        assert_eq!(offset, self.next_off, "payload not contiguous");
        assert!(!data.is_empty());
        self.next_off += data.len() as u32;
        assert!(self.next_off <= self.payload_len);
        // No tag: the digest must not depend on how payload was sliced.
        self.digest = crc32c_raw(self.digest, data);
        Ok(())
    }
    fn on_fpdu_end(&mut self, h: &SegmentHeader, verdict: CrcVerdict) -> Result<(), ProtocolError> {
        assert!(self.in_seg);
        assert_eq!(self.next_off, self.payload_len, "payload incomplete");
        assert_eq!(
            h.len() + self.payload_len as usize,
            usize::from(self.ulpdu_len)
        );
        self.in_seg = false;
        let v = match verdict {
            CrcVerdict::Ok => 0u8,
            CrcVerdict::NotChecked => 1,
            CrcVerdict::Mismatch { .. } => 2,
        };
        self.mix(4, &[v]);
        Ok(())
    }
    fn on_marker(&mut self, off: u32, m: Marker) {
        self.mix(5, &off.to_be_bytes());
        self.mix(6, &m.fpduptr.to_be_bytes());
    }
}

fn deframe(
    mode: MpaMode,
    ext: Extensions,
    off: u32,
    stream: &[u8],
    cuts: &[u8],
) -> (Option<ProtocolError>, u32, u64) {
    let cfg = RxConfig {
        ext,
        ..RxConfig::new(mode)
    };
    let mut d = Deframer::new(cfg, SoftCrc32c::new(), off);
    let mut sink = CheckSink::default();
    let mut rest = stream;
    let mut i = 0usize;
    let mut err = None;
    while !rest.is_empty() {
        let c = if cuts.is_empty() {
            rest.len()
        } else {
            let v = usize::from(*cuts.get(i % cuts.len()).unwrap_or(&0));
            i += 1;
            (v % 67) + 1
        };
        let (a, b) = rest.split_at(c.min(rest.len()));
        if let Err(e) = d.push(a, &mut sink) {
            err = Some(e);
            assert_eq!(d.push(b"x", &mut sink), Err(e), "error not sticky");
            break;
        }
        rest = b;
    }
    (err, sink.digest, sink.events)
}

/// One fuzz iteration: `data[0]` selects markers/CRC and the RFC 7306
/// extensions, `data[1..5]` the stream offset, `data[5]` the chunking;
/// the rest is the stream. Also exercises the connection, terminate and
/// TX encoders and the RFC 7306 bodies on the same bytes.
pub fn rx_one(data: &[u8]) {
    let (Some(&flags), Some(off_b), Some(&cut)) = (data.first(), data.get(1..5), data.get(5))
    else {
        return;
    };
    let mut off = u32::from_be_bytes([off_b[0], off_b[1], off_b[2], off_b[3]]);
    if flags & 0x80 != 0 {
        off = off.wrapping_sub(u32::from(flags & 0x3f) * 16);
    }
    let stream = data.get(6..).unwrap_or(&[]);
    let mode = MpaMode {
        markers: flags & 1 != 0,
        crc: flags & 2 != 0,
    };
    let ext = Extensions {
        rfc7306: flags & 4 != 0,
    };

    // Chunking must not change the outcome.
    let whole = deframe(mode, ext, off, stream, &[]);
    let cuts = [cut, cut.rotate_left(3), cut ^ 0x5a, 0];
    let chunked = deframe(mode, ext, off, stream, &cuts);
    let ones = deframe(mode, ext, off, stream, &[0]);
    assert_eq!(whole, chunked, "chunking changed the outcome");
    assert_eq!(whole, ones, "1-octet feed changed the outcome");

    // Parsers on raw input must not panic.
    let _ = SegmentHeader::parse(stream);
    if let Ok(h) = SegmentHeader::parse_ext(stream, Extensions::RFC7306) {
        let (b, n) = h.to_bytes();
        assert_eq!(b.get(..n), stream.get(..n), "header re-encode differs");
    }
    if let Some(r) = AtomicRequest::decode(stream) {
        let _ = r.apply(u64::from(off));
        let _ = r.check(u64::from(off));
        let mut b = [0u8; crate::rfc7306::ATOMIC_REQUEST_BODY_LEN];
        assert_eq!(r.encode(&mut b), Some(()));
        assert_eq!(b.get(..), stream.get(..b.len()), "atomic body re-encode");
    }
    if let Some(r) = AtomicResponse::decode(stream) {
        let _ = r.check(Some(off));
    }
    let _ = MpaRr::decode(stream, 512);
    let mut p = RrParser::new(None, 512);
    for ch in stream.chunks(usize::from(cut % 23) + 1) {
        match p.push(ch) {
            Ok((_, true)) => {
                let f = p.frame();
                assert!(f.is_some());
                break;
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    let mut p2 = RrParser::new(Some(FrameKind::Reply), 64);
    let _ = p2.push(stream);
    if let Some(w) = stream.get(..4) {
        let w = [w[0], w[1], w[2], w[3]];
        for t in [TermHdr::decode(w), TermHdr::decode_siw_le(w)] {
            let _ = parse_term_copy(&t, stream.get(4..).unwrap_or(&[]));
            if let Some(e) = t.error() {
                assert_eq!(e.term_code(), t.code);
            }
            let back = TermHdr::decode(t.encode());
            assert_eq!(back, t);
        }
        let _ = ProtocolError::from_term_code(TermCode {
            layer: w[0],
            etype: w[1],
            code: w[2],
        });
    }

    // TX -> RX round trip with the stream as a Send payload.
    let pl = stream.get(..stream.len().min(2000)).unwrap_or(&[]);
    let hdr = SegmentHeader::send(crate::rdmap::Opcode::Send, 0, 1, 0, true);
    let (hb, hn) = hdr.to_bytes();
    let h = hb.get(..hn).unwrap_or(&[]);
    let mut buf = [0u8; 4096];
    let mut crc = SoftCrc32c::new();
    let n = encode_fpdu(mode, off, h, pl, &mut crc, &mut buf).expect("encode");
    let plan = FpduPlan::new(mode, off, hn, pl.len() as u32).expect("plan");
    assert_eq!(n as u32, plan.wire_len());
    let wire = buf.get(..n).unwrap_or(&[]);
    let (err, _, events) = deframe(mode, ext, off, wire, &cuts);
    assert_eq!(err, None, "own FPDU rejected");
    assert_eq!(events, 1);
    crc.reset();

    // TX -> RX round trip of an Atomic Request made of the stream's
    // octets: accepted with the extensions, an unknown opcode without.
    if let Some(r) = AtomicRequest::decode(stream) {
        let r = AtomicRequest {
            rsvd: r.rsvd & 0x0fff_ffff,
            ..r
        };
        let hdr = SegmentHeader::atomic_request(off, r);
        let (hb, hn) = hdr.to_bytes();
        let n = encode_fpdu(
            mode,
            off,
            hb.get(..hn).unwrap_or(&[]),
            &[],
            &mut crc,
            &mut buf,
        )
        .expect("encode");
        let wire = buf.get(..n).unwrap_or(&[]);
        let (err, _, events) = deframe(mode, ext, off, wire, &cuts);
        if ext.rfc7306 {
            assert_eq!((err, events), (None, 1), "own atomic request rejected");
        } else {
            assert_eq!(
                err,
                Some(crate::error::RdmapError::UnexpectedOpcode.into()),
                "the gate let an atomic request through"
            );
        }
    }
}

/// One `connect` iteration: `data[0]` picks the expected frame kind and
/// the private data limit, `data[1]` the chunking; the rest is the stream
/// after the TCP connection came up. Feeding it whole, in chunks or octet
/// by octet must give the same verdict and frame; a complete frame must
/// re-encode to the octets it was parsed from.
pub fn connect_one(data: &[u8]) {
    let (Some(&sel), Some(&cut)) = (data.first(), data.get(1)) else {
        return;
    };
    let expect = match sel & 3 {
        0 => None,
        1 => Some(FrameKind::Request),
        _ => Some(FrameKind::Reply),
    };
    let max_pd = [0usize, 16, 255, 512][usize::from(sel >> 2) & 3];
    let stream = data.get(2..).unwrap_or(&[]);

    let run = |step: usize| {
        let mut p = RrParser::new(expect, max_pd);
        let mut used_total = 0usize;
        let mut rest = stream;
        let mut i = 0usize;
        loop {
            let n = if step == 0 {
                rest.len()
            } else {
                (step + i % 7).min(rest.len())
            };
            i += 1;
            let (a, b) = rest.split_at(n);
            match p.push(a) {
                Ok((used, done)) => {
                    assert!(used <= a.len());
                    used_total += used;
                    if done {
                        return (Ok(used_total), p);
                    }
                    assert_eq!(used, a.len(), "octets left over before completion");
                    assert!(p.wanted() > 0);
                }
                Err(e) => return (Err(e), p),
            }
            if b.is_empty() {
                return (Ok(usize::MAX), p);
            }
            rest = b;
        }
    };
    let (whole, pw) = run(0);
    let step = usize::from(cut % 29) + 1;
    let (chunked, pc) = run(step);
    let (ones, _) = run(1);
    assert_eq!(whole, chunked, "chunking changed the verdict");
    assert_eq!(whole, ones, "1-octet feed changed the verdict");
    if let Ok(n) = whole {
        if n == usize::MAX {
            assert!(pw.frame().is_none());
            return;
        }
        let f = pw.frame().expect("complete frame");
        let g = pc.frame().expect("complete frame");
        assert_eq!(f.hdr, g.hdr);
        assert_eq!(f.ird_ord, g.ird_ord);
        assert_eq!(f.pdata, g.pdata);
        assert_eq!(n, RR_HDR_LEN + usize::from(f.hdr.pd_len));
        assert!(usize::from(f.hdr.pd_len) <= max_pd);
        if let Some(k) = expect {
            assert_eq!(f.hdr.kind, k);
        }
        // Re-encode: the same octets (encode_rr recomputes the enhanced
        // flag and PD_Length from what it is given).
        let mut out = [0u8; RR_HDR_LEN + 512];
        let ird_ord: Option<IrdOrd> = f.ird_ord;
        if f.hdr.enhanced == ird_ord.is_some() {
            let m = encode_rr(f.hdr, ird_ord, f.pdata, &mut out).expect("re-encode");
            assert_eq!(out.get(..m), stream.get(..n), "re-encode differs");
        }
        // And the decoder agrees with the parser on the header.
        assert_eq!(MpaRr::decode(stream, max_pd), Ok(f.hdr));
    }
}

/// Largest message [`tx_one`] builds.
const TX_MAX_MSG: usize = 8192;
/// Room for its FPDUs (payloads of at least 16 octets, small budgets).
const TX_MAX_WIRE: usize = 4 * TX_MAX_MSG + 4096;

fn tx_pattern(seed: u8, off: u32) -> u8 {
    (off.wrapping_mul(31) as u8) ^ seed
}

/// Rebuilds a message from the deframer's callbacks and checks every
/// segment against what was sent.
struct TxCheck {
    tagged: bool,
    seed: u8,
    stag: u32,
    to: u64,
    msn: u32,
    max_ulpdu: u32,
    total: u32,
    /// Message offset of the segment in progress.
    seg_off: u32,
    /// Payload octets of the message seen so far (in order).
    seen: u32,
    segs: u32,
    last_seen: bool,
}

impl RxSink for TxCheck {
    fn on_fpdu_start(&mut self, info: &FpduInfo) -> Result<(), ProtocolError> {
        assert!(
            u32::from(info.ulpdu_len) <= self.max_ulpdu,
            "FPDU beyond MULPDU"
        );
        Ok(())
    }
    fn on_header(
        &mut self,
        hdr: &SegmentHeader,
        _raw: &[u8],
        payload_len: u16,
    ) -> Result<(), ProtocolError> {
        assert!(!self.last_seen, "segment after the last one");
        let off = if self.tagged {
            let t = hdr.tagged_hdr().expect("tagged");
            assert_eq!(t.stag, self.stag);
            let d = t.to.wrapping_sub(self.to);
            u32::try_from(d).expect("TO in range")
        } else {
            let u = hdr.untagged_hdr().expect("untagged");
            assert_eq!(u.msn, self.msn);
            u.mo
        };
        assert_eq!(off, self.seen, "segments out of order");
        assert!(payload_len > 0 || self.total == 0);
        self.seg_off = off;
        self.segs += 1;
        self.last_seen = hdr.ctrl.last();
        Ok(())
    }
    fn on_payload(&mut self, offset: u32, data: &[u8]) -> Result<(), ProtocolError> {
        for (i, b) in data.iter().enumerate() {
            let o = self.seg_off + offset + i as u32;
            assert_eq!(*b, tx_pattern(self.seed, o), "payload octet {o} differs");
        }
        self.seen += data.len() as u32;
        Ok(())
    }
    fn on_fpdu_end(&mut self, _h: &SegmentHeader, v: CrcVerdict) -> Result<(), ProtocolError> {
        assert!(matches!(v, CrcVerdict::Ok | CrcVerdict::NotChecked));
        Ok(())
    }
    fn on_marker(&mut self, _off: u32, _m: Marker) {}
}

/// One `tx` iteration: `data` chooses the mode, the stream offset, the
/// send budget, MULPDU, the message kind and length. The message is cut
/// and packed the way the transmit engine does (batches of at most the
/// budget, FPDUs of at most MULPDU), encoded, cut at arbitrary points and
/// deframed with MULPDU enforced; every octet, TO/MO, MSN and the L flag
/// must come out as sent.
pub fn tx_one(data: &[u8]) {
    let Some(b) = data.get(..12) else {
        return;
    };
    let mode = MpaMode {
        markers: b[0] & 1 != 0,
        crc: b[0] & 2 != 0,
    };
    let tagged = b[0] & 4 != 0;
    let off = u32::from_be_bytes([b[1], b[2], b[3], b[4]]);
    let budget = 64 + u32::from(u16::from_be_bytes([b[5], b[6]]));
    let msg_len = (u32::from(u16::from_be_bytes([b[7], b[8]])) as usize % (TX_MAX_MSG + 1)) as u32;
    let seed = b[9];
    let hdr_len = if tagged { 14usize } else { 18 };
    // MULPDU: at least the header and 16 octets of payload.
    let mulpdu = (hdr_len as u32 + 16).max(u32::from(u16::from_be_bytes([b[10], b[11]])));
    let cuts = data.get(12..).unwrap_or(&[]);
    let (stag, to, msn) = (
        0x1234_5600 | u32::from(seed),
        0xffff_ffff_ffff_f000u64 | u64::from(seed),
        7,
    );

    let mut wire = [0u8; TX_MAX_WIRE];
    let mut w = 0usize;
    let mut payload = [0u8; TX_MAX_MSG];
    for (i, p) in payload.iter_mut().enumerate().take(msg_len as usize) {
        *p = tx_pattern(seed, i as u32);
    }
    let mut crc = SoftCrc32c::new();
    let mut seg = Segmenter::new(msg_len);
    let mut stream_off = off;
    let mut batches = 0u32;
    loop {
        let mut batch = TxBatch::new(mode, stream_off, budget);
        let mut n = 0;
        let start = w;
        while let Some((sg, plan)) = batch.next_segment(&mut seg, hdr_len, mulpdu - hdr_len as u32)
        {
            assert!(u32::from(plan.ulpdu_len()) <= mulpdu, "ULPDU beyond MULPDU");
            assert_eq!(plan.start_offset(), stream_off);
            let h = if tagged {
                SegmentHeader::write(stag, to.wrapping_add(u64::from(sg.offset)), sg.last)
            } else {
                SegmentHeader::send(crate::rdmap::Opcode::Send, 0, msn, sg.offset, sg.last)
            };
            let (hb, hn) = h.to_bytes();
            assert_eq!(hn, hdr_len);
            let pl = payload
                .get(sg.offset as usize..(sg.offset + sg.len) as usize)
                .expect("segment inside the message");
            let room = wire.get_mut(w..).unwrap_or(&mut []);
            let m = encode_planned(&plan, hb.get(..hn).unwrap_or(&[]), pl, &mut crc, room)
                .expect("room for the FPDU");
            assert_eq!(m as u32, plan.wire_len());
            w += m;
            stream_off = plan.end_offset();
            n += 1;
        }
        assert!((w - start) as u32 <= budget, "batch beyond its budget");
        assert!(n > 0, "a batch with room for an FPDU stayed empty");
        assert_eq!(batch.stream_offset(), stream_off);
        batches += 1;
        let mut probe = seg;
        if probe.next_segment(1).is_none() {
            break;
        }
        assert!(batches < 10_000);
    }

    let cfg = RxConfig {
        max_ulpdu: u16::try_from(mulpdu).unwrap_or(u16::MAX),
        ..RxConfig::new(mode)
    };
    let mut d = Deframer::new(cfg, SoftCrc32c::new(), off);
    let mut sink = TxCheck {
        tagged,
        seed,
        stag,
        to,
        msn,
        max_ulpdu: mulpdu,
        total: msg_len,
        seg_off: 0,
        seen: 0,
        segs: 0,
        last_seen: false,
    };
    let mut rest = wire.get(..w).unwrap_or(&[]);
    let mut i = 0usize;
    while !rest.is_empty() {
        let c = match cuts.get(i % cuts.len().max(1)) {
            Some(&v) if !cuts.is_empty() => usize::from(v) * 7 + 1,
            _ => rest.len(),
        };
        i += 1;
        let (a, r) = rest.split_at(c.min(rest.len()));
        d.push(a, &mut sink).expect("own FPDUs rejected");
        rest = r;
    }
    assert!(sink.last_seen, "last segment missing");
    assert_eq!(sink.seen, msg_len);
    assert!(sink.segs >= batches);
}
