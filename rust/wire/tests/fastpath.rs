// SPDX-License-Identifier: GPL-2.0

//! The deframer's one-pass path for whole FPDUs against its octet-wise
//! path: random FPDU streams, some octets corrupted, fed whole (one-pass
//! path where it applies) and one octet at a time (octet-wise path only),
//! must give the same sink calls, the same error and the same state.

use proptest::prelude::*;
use rsiw_wire::error::ProtocolError;
use rsiw_wire::mpa::MpaMode;
use rsiw_wire::rdmap::{Opcode, SegmentHeader};
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
