// SPDX-License-Identifier: GPL-2.0

//! The deframer's one-pass path for whole FPDUs against its octet-wise
//! path: random FPDU streams, some octets corrupted, fed whole (one-pass
//! path where it applies) and one octet at a time (octet-wise path only),
//! must give the same sink calls, the same error and the same state. The
//! same for a sink that takes whole segments ([`RxSink::on_segment`]),
//! fed whole, against the octet-wise path of a sink that does not.

use proptest::prelude::*;
use rsiw_wire::error::ProtocolError;
use rsiw_wire::mpa::MpaMode;
use rsiw_wire::rdmap::{Extensions, HeaderView, Opcode, SegmentHeader};
use rsiw_wire::rx::{CrcVerdict, Deframer, FpduInfo, RxConfig, RxSink};
use rsiw_wire::tx::encode_fpdu;
use rsiw_wire::HostCrc32c;

#[derive(Debug, Clone, PartialEq)]
enum Ev {
    Start(u32, u32, u16, u8),
    Header(SegmentHeader, Vec<u8>, u16),
    Payload(Vec<u8>),
    End(SegmentHeader, CrcVerdict),
}

/// Records every call; payload octets of one segment are merged (the
/// octet-wise path delivers them in pieces). Fails the header, start or
/// end call numbered `fail_at`, to check sink errors too.
struct Rec {
    ev: Vec<Ev>,
    calls: usize,
    fail_at: usize,
}

impl Rec {
    fn call(&mut self) -> Result<(), ProtocolError> {
        self.calls += 1;
        if self.calls == self.fail_at {
            return Err(rsiw_wire::error::RdmapError::CatastrophicStream.into());
        }
        Ok(())
    }
}

impl RxSink for Rec {
    fn on_fpdu_start(&mut self, i: &FpduInfo) -> Result<(), ProtocolError> {
        self.ev
            .push(Ev::Start(i.fpdu_off, i.hdr_off, i.ulpdu_len, i.pad));
        self.call()
    }
    fn on_header(&mut self, h: &SegmentHeader, raw: &[u8], pl: u16) -> Result<(), ProtocolError> {
        self.ev.push(Ev::Header(*h, raw.to_vec(), pl));
        self.call()
    }
    fn on_payload(&mut self, _off: u32, d: &[u8]) -> Result<(), ProtocolError> {
        // Not failed on purpose: the octet-wise path delivers the payload
        // in pieces, so what arrived before a failure differs by design.
        if let Some(Ev::Payload(p)) = self.ev.last_mut() {
            p.extend_from_slice(d);
        } else {
            self.ev.push(Ev::Payload(d.to_vec()));
        }
        Ok(())
    }
    fn on_fpdu_end(&mut self, h: &SegmentHeader, v: CrcVerdict) -> Result<(), ProtocolError> {
        self.ev.push(Ev::End(*h, v));
        self.call()
    }
}

/// [`Rec`] that also takes whole segments, but not Sends with
/// Invalidate (which then take the separate calls): records the calls
/// they stand for, and fails where [`Rec`] would fail one of them.
struct SegRec(Rec);

impl RxSink for SegRec {
    fn on_fpdu_start(&mut self, i: &FpduInfo) -> Result<(), ProtocolError> {
        self.0.on_fpdu_start(i)
    }
    fn on_header(&mut self, h: &SegmentHeader, raw: &[u8], pl: u16) -> Result<(), ProtocolError> {
        self.0.on_header(h, raw, pl)
    }
    fn on_payload(&mut self, off: u32, d: &[u8]) -> Result<(), ProtocolError> {
        self.0.on_payload(off, d)
    }
    fn on_fpdu_end(&mut self, h: &SegmentHeader, v: CrcVerdict) -> Result<(), ProtocolError> {
        self.0.on_fpdu_end(h, v)
    }
    fn on_segment(
        &mut self,
        i: &FpduInfo,
        view: &HeaderView<'_>,
        payload: &[u8],
        v: CrcVerdict,
    ) -> Result<bool, ProtocolError> {
        if view.opcode() == Opcode::SendInvalidate {
            return Ok(false);
        }
        let h = view.header()?;
        self.0.on_fpdu_start(i)?;
        self.0.on_header(&h, view.raw(), payload.len() as u16)?;
        if !payload.is_empty() {
            self.0.on_payload(0, payload)?;
        }
        self.0.on_fpdu_end(&h, v)?;
        Ok(true)
    }
}

fn run(
    stream: &[u8],
    crc: bool,
    chunk: usize,
    fail_at: usize,
) -> (Vec<Ev>, Option<ProtocolError>, u64, Option<Vec<u8>>, u32) {
    let mode = MpaMode {
        markers: false,
        crc,
    };
    let cfg = RxConfig {
        max_ulpdu: 4000,
        ..RxConfig::new(mode)
    };
    let mut d = Deframer::new(cfg, HostCrc32c::new(), 7);
    let mut r = Rec {
        ev: Vec::new(),
        calls: 0,
        fail_at,
    };
    let mut err = None;
    for c in stream.chunks(chunk) {
        if let Err(e) = d.push(c, &mut r) {
            err = Some(e);
            break;
        }
    }
    let rej = d.rejected_header().map(|h| h.to_vec());
    let off = if err.is_none() { d.stream_offset() } else { 0 };
    (r.ev, err, d.fpdus(), rej, off)
}

proptest! {
    #[test]
    fn one_pass_equals_octet_wise(
        msgs in proptest::collection::vec((0u8..3, any::<u32>(), 0usize..300), 1..6),
        flips in proptest::collection::vec((any::<u16>(), any::<u8>()), 0..3),
        crc in any::<bool>(),
        fail_at in 0usize..12,
    ) {
        let mode = MpaMode { markers: false, crc };
        let mut stream = Vec::new();
        for (i, &(kind, x, len)) in msgs.iter().enumerate() {
            let h = match kind {
                0 => SegmentHeader::write(x, u64::from(x) << 3, true),
                1 => SegmentHeader::send(Opcode::Send, 0, i as u32 + 1, 0, true),
                _ => SegmentHeader::send(Opcode::SendInvalidate, x, i as u32 + 1, 0, i % 2 == 0),
            };
            let (hb, hn) = h.to_bytes();
            let payload: Vec<u8> = (0..len).map(|k| (k as u8) ^ (x as u8)).collect();
            let mut out = vec![0u8; len + 64];
            let n = encode_fpdu(mode, 0, &hb[..hn], &payload, &mut HostCrc32c::new(), &mut out).unwrap();
            stream.extend_from_slice(&out[..n]);
        }
        for (at, v) in flips {
            let i = usize::from(at) % stream.len();
            stream[i] ^= v;
        }
        let whole = run(&stream, crc, stream.len(), fail_at);
        let octets = run(&stream, crc, 1, fail_at);
        prop_assert_eq!(whole, octets);
    }
}

/// What feeding `stream` to a deframer whose CRC was checked before
/// (`crc`: negotiated) gives, in chunks of `chunk` octets, with a sink
/// that takes whole segments (`whole`) or not: the calls, the error, and
/// (without an error) the FPDUs and the stream offset.
fn run_prechecked(
    stream: &[u8],
    crc: bool,
    chunk: usize,
    fail_at: usize,
    whole: bool,
) -> (Vec<Ev>, Option<ProtocolError>, u64, u32) {
    let mode = MpaMode {
        markers: false,
        crc,
    };
    let cfg = RxConfig {
        max_ulpdu: 4000,
        crc_prechecked: true,
        ..RxConfig::new(mode)
    };
    let mut d = Deframer::new(cfg, HostCrc32c::new(), 7);
    let rec = Rec {
        ev: Vec::new(),
        calls: 0,
        fail_at,
    };
    let mut seg = SegRec(rec);
    let mut err = None;
    for c in stream.chunks(chunk) {
        let pushed = if whole {
            d.push(c, &mut seg)
        } else {
            d.push(c, &mut seg.0)
        };
        if let Err(e) = pushed {
            err = Some(e);
            break;
        }
    }
    let (fpdus, off) = if err.is_none() {
        (d.fpdus(), d.stream_offset())
    } else {
        // After an error in a whole segment the deframer is as after a
        // header the sink rejected: its FPDU is not counted.
        (0, 0)
    };
    (seg.0.ev, err, fpdus, off)
}

proptest! {
    // Under Miri (the unsafe-free wire core's check for undefined
    // behaviour) 2 cases: the octet-wise run is the cost, and the paths
    // are those of `one_pass_equals_octet_wise`.
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 2 } else { 256 }, ..ProptestConfig::default() })]
    #[test]
    fn whole_segments_equal_separate_calls(
        msgs in proptest::collection::vec((0u8..3, any::<u32>(), 0usize..300), 1..6),
        flips in proptest::collection::vec((any::<u16>(), any::<u8>()), 0..3),
        crc in any::<bool>(),
        fail_at in 0usize..12,
    ) {
        let mode = MpaMode { markers: false, crc };
        let mut stream = Vec::new();
        for (i, &(kind, x, len)) in msgs.iter().enumerate() {
            let h = match kind {
                0 => SegmentHeader::write(x, u64::from(x) << 3, i % 3 != 1),
                1 => SegmentHeader::send(Opcode::Send, 0, i as u32 + 1, 0, true),
                _ => SegmentHeader::send(Opcode::SendInvalidate, x, i as u32 + 1, 0, i % 2 == 0),
            };
            let (hb, hn) = h.to_bytes();
            let payload: Vec<u8> = (0..len).map(|k| (k as u8) ^ (x as u8)).collect();
            let mut out = vec![0u8; len + 64];
            let n = encode_fpdu(mode, 0, &hb[..hn], &payload, &mut HostCrc32c::new(), &mut out).unwrap();
            stream.extend_from_slice(&out[..n]);
        }
        for (at, v) in flips {
            let i = usize::from(at) % stream.len();
            stream[i] ^= v;
        }
        let whole = run_prechecked(&stream, crc, stream.len(), fail_at, true);
        let octets = run_prechecked(&stream, crc, 1, fail_at, false);
        // (the octet-wise run's counts after an error are not compared)
        let octets = if octets.1.is_some() { (octets.0, octets.1, 0, 0) } else { octets };
        prop_assert_eq!(whole, octets);
    }
}

/// A sink's error in a whole segment leaves the deframer failed with it,
/// the segment's header available for the TERMINATE.
#[test]
fn whole_segment_error_keeps_the_header() {
    let mode = MpaMode {
        markers: false,
        crc: false,
    };
    let h = SegmentHeader::write(0x1234, 0x40, true);
    let (hb, hn) = h.to_bytes();
    let mut out = vec![0u8; 128];
    let n = encode_fpdu(
        mode,
        0,
        &hb[..hn],
        &[7; 16],
        &mut HostCrc32c::new(),
        &mut out,
    )
    .unwrap();
    let mut d = Deframer::new(RxConfig::new(mode), HostCrc32c::new(), 0);
    // Fails its second call, the header.
    let mut sink = SegRec(Rec {
        ev: Vec::new(),
        calls: 0,
        fail_at: 2,
    });
    let err = d.push(&out[..n], &mut sink).unwrap_err();
    assert_eq!(d.error(), Some(err));
    assert_eq!(d.rejected_header(), Some(&hb[..hn]));
    assert_eq!(d.fpdus(), 0);
    assert!(d.push(&out[..n], &mut sink).is_err());
}

proptest! {
    /// A header view checks what a parse checks, with the same errors,
    /// and its fields and whole header are the parse's.
    #[test]
    fn header_view_equals_parse(
        kind in 0u8..4,
        x in any::<u32>(),
        flips in proptest::collection::vec((0usize..46, any::<u8>()), 0..3),
        cut in 0usize..50,
        ext in any::<bool>(),
    ) {
        let h = match kind {
            0 => SegmentHeader::write(x, u64::from(x) << 7, x % 2 == 0),
            1 => SegmentHeader::send(Opcode::SendSeInvalidate, x, x ^ 5, x >> 3, x % 3 == 0),
            2 => SegmentHeader::read_request(x, rsiw_wire::rdmap::ReadRequest {
                sink_stag: x,
                sink_to: 1,
                size: x >> 1,
                src_stag: !x,
                src_to: 2,
            }),
            _ => SegmentHeader::read_response(x, u64::from(x), true),
        };
        let (mut b, n) = h.to_bytes();
        for (at, v) in flips {
            b[at % n] ^= v;
        }
        let buf = &b[..cut.min(b.len())];
        let ext = if ext { Extensions::RFC7306 } else { Extensions::NONE };
        let parsed = SegmentHeader::parse_ext(buf, ext);
        let view = HeaderView::check_ext(buf, ext);
        prop_assert_eq!(view.map(|v| v.header()), view.map(|_| parsed));
        match (view, parsed) {
            (Ok(v), Ok(p)) => {
                prop_assert_eq!(v.opcode(), p.opcode);
                prop_assert_eq!(v.ctrl(), p.ctrl);
                prop_assert_eq!(v.tagged(), p.tagged_hdr());
                prop_assert_eq!(v.untagged(), p.untagged_hdr());
                prop_assert_eq!(v.raw(), &buf[..p.len()]);
            }
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            (a, b) => prop_assert!(false, "view {:?} against parse {:?}", a, b),
        }
    }
}
