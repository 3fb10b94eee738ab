//! Fuzzing entry points (host only, not part of the kernel tree).
//!
//! [`rx_one`] is the body of the `rx` cargo-fuzz target; the corpus is
//! replayed by `tests/fuzz_corpus.rs` on stable. It panics only when an
//! invariant of the core is violated.

use crate::connect::{FrameKind, MpaRr, RrParser};
use crate::crc::{crc32c_raw, Crc32c, SoftCrc32c};
use crate::error::{ProtocolError, TermCode};
use crate::markers::Marker;
use crate::mpa::MpaMode;
use crate::rdmap::SegmentHeader;
use crate::rx::{CrcVerdict, Deframer, FpduInfo, RxConfig, RxSink};
use crate::term::{parse_term_copy, TermHdr};
use crate::tx::{encode_fpdu, FpduPlan};

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
    off: u32,
    stream: &[u8],
    cuts: &[u8],
) -> (Option<ProtocolError>, u32, u64) {
    let mut d = Deframer::new(RxConfig::new(mode), SoftCrc32c::new(), off);
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

/// One fuzz iteration: `data[0]` selects markers/CRC, `data[1..5]` the
/// stream offset, `data[5]` the chunking; the rest is the stream. Also
/// exercises the connection, terminate and TX encoders on the same bytes.
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

    // Chunking must not change the outcome.
    let whole = deframe(mode, off, stream, &[]);
    let cuts = [cut, cut.rotate_left(3), cut ^ 0x5a, 0];
    let chunked = deframe(mode, off, stream, &cuts);
    let ones = deframe(mode, off, stream, &[0]);
    assert_eq!(whole, chunked, "chunking changed the outcome");
    assert_eq!(whole, ones, "1-octet feed changed the outcome");

    // Parsers on raw input must not panic.
    let _ = SegmentHeader::parse(stream);
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
    let (err, _, events) = deframe(mode, off, wire, &cuts);
    assert_eq!(err, None, "own FPDU rejected");
    assert_eq!(events, 1);
    crc.reset();
}
