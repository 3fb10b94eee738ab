// SPDX-License-Identifier: GPL-2.0

//! Frame builders of the hostile peer: MPA Request frames (valid or
//! corrupted), DDP/RDMAP headers with any field bent, whole FPDUs (framed by
//! the wire core's `encode_fpdu`), the rping advertisement payload and a
//! reproducible garbage generator.

use rsiw_wire::connect::{IrdOrd, REQ_KEY};
use rsiw_wire::ddp::Control;
use rsiw_wire::mpa::MpaMode;
use rsiw_wire::rdmap::{Opcode, ReadRequest, SegmentHeader};
use rsiw_wire::term::TermHdr;
use rsiw_wire::tx::encode_fpdu;
use rsiw_wire::HostCrc32c;

/// Everything an MPA Request can carry, including invalid values.
#[derive(Clone, Debug)]
pub struct ReqSpec {
    pub key: [u8; 16],
    pub markers: bool,
    pub crc: bool,
    pub revision: u8,
    /// RFC 6581 IRD/ORD data (revision 2, sets the enhanced flag).
    pub ird_ord: Option<IrdOrd>,
    /// Private data after the IRD/ORD data.
    pub pdata: Vec<u8>,
    /// PD_Length to announce instead of the real one.
    pub pd_len_override: Option<u16>,
    /// Receive buffer of our socket, set before connecting (a small
    /// window; `None`: the system's default).
    pub rcvbuf: Option<i32>,
}

impl Default for ReqSpec {
    /// What a well behaved revision 2 initiator sends (IRD = ORD = 16,
    /// no peer-to-peer RTR).
    fn default() -> Self {
        Self {
            key: REQ_KEY,
            markers: false,
            crc: false,
            revision: 2,
            ird_ord: Some(IrdOrd {
                ird: 16,
                ord: 16,
                ..IrdOrd::default()
            }),
            pdata: Vec::new(),
            pd_len_override: None,
            rcvbuf: None,
        }
    }
}

/// Encodes an MPA Request (header + IRD/ORD + private data) byte by byte,
/// so invalid keys, revisions and lengths are possible.
pub fn mpa_request(s: &ReqSpec) -> Vec<u8> {
    let mut out = Vec::with_capacity(20 + 4 + s.pdata.len());
    out.extend_from_slice(&s.key);
    let mut f = 0u8;
    if s.markers {
        f |= 0x80;
    }
    if s.crc {
        f |= 0x40;
    }
    if s.ird_ord.is_some() {
        f |= 0x10;
    }
    out.push(f);
    out.push(s.revision);
    let real = s.pdata.len() + if s.ird_ord.is_some() { 4 } else { 0 };
    let pd = s.pd_len_override.unwrap_or(real as u16);
    out.extend_from_slice(&pd.to_be_bytes());
    if let Some(io) = s.ird_ord {
        out.extend_from_slice(&io.encode());
    }
    out.extend_from_slice(&s.pdata);
    out
}

/// Encoded DDP/RDMAP header bytes (starting at the control field).
pub fn hdr_bytes(h: &SegmentHeader) -> Vec<u8> {
    let (b, n) = h.to_bytes();
    b[..n].to_vec()
}

/// A Send (single segment, Last set) header.
pub fn send_hdr(msn: u32) -> Vec<u8> {
    hdr_bytes(&SegmentHeader::send(Opcode::Send, 0, msn, 0, true))
}

/// A Send segment header with any MO and Last flag (for multi-segment
/// messages).
pub fn send_seg_hdr(msn: u32, mo: u32, last: bool) -> Vec<u8> {
    hdr_bytes(&SegmentHeader::send(Opcode::Send, 0, msn, mo, last))
}

/// A Send with Invalidate (single segment) header invalidating `stag`.
pub fn send_inv_hdr(msn: u32, stag: u32) -> Vec<u8> {
    hdr_bytes(&SegmentHeader::send(
        Opcode::SendInvalidate,
        stag,
        msn,
        0,
        true,
    ))
}

/// Sets the DDP version (DV) of an encoded header.
pub fn set_ddp_version(h: &mut [u8], dv: u8) {
    let c = Control::decode([h[0], h[1]]).with_ddp_version(dv & 3);
    h[..2].copy_from_slice(&c.encode());
}

/// Sets the RDMAP version (RV) of an encoded header.
pub fn set_rdmap_version(h: &mut [u8], rv: u8) {
    let c = Control::decode([h[0], h[1]]).with_rdmap_version(rv & 3);
    h[..2].copy_from_slice(&c.encode());
}

/// Sets the raw RDMAP opcode of an encoded header.
pub fn set_opcode(h: &mut [u8], op: u8) {
    let c = Control::decode([h[0], h[1]]).with_opcode(op & 0x0f);
    h[..2].copy_from_slice(&c.encode());
}

/// Sets the Last flag (L) of an encoded header.
pub fn set_last(h: &mut [u8], last: bool) {
    let c = Control::decode([h[0], h[1]]).with_last(last);
    h[..2].copy_from_slice(&c.encode());
}

/// Sets the QN of an encoded untagged header.
pub fn set_qn(h: &mut [u8], qn: u32) {
    h[6..10].copy_from_slice(&qn.to_be_bytes());
}

/// An RDMA Write header.
pub fn write_hdr(stag: u32, to: u64) -> Vec<u8> {
    hdr_bytes(&SegmentHeader::write(stag, to, true))
}

/// An RDMA Read Response header.
pub fn read_response_hdr(stag: u32, to: u64) -> Vec<u8> {
    hdr_bytes(&SegmentHeader::read_response(stag, to, true))
}

/// An RDMA Read Request header.
pub fn read_request_hdr(msn: u32, rr: ReadRequest) -> Vec<u8> {
    hdr_bytes(&SegmentHeader::read_request(msn, rr))
}

/// A TERMINATE header (no copied headers).
pub fn terminate_hdr(t: TermHdr) -> Vec<u8> {
    hdr_bytes(&SegmentHeader::terminate(1, t))
}

/// A whole FPDU at stream offset `off`.
pub fn fpdu(mode: MpaMode, off: u32, hdr: &[u8], payload: &[u8]) -> Vec<u8> {
    let ulpdu = hdr.len() + payload.len();
    let mut out = vec![0u8; ulpdu + 2 + 3 + 4 + 4 * (ulpdu / 508 + 3)];
    let n =
        encode_fpdu(mode, off, hdr, payload, &mut HostCrc32c::new(), &mut out).expect("FPDU fits");
    out.truncate(n);
    out
}

/// Flips bits of the CRC field (the last four octets of an FPDU).
pub fn corrupt_crc(f: &mut [u8]) {
    let n = f.len();
    f[n - 1] ^= 0x5a;
}

/// rping's `struct rping_rdma_info` (buf, rkey, size; big endian), the
/// payload of the Sends an rping client sends.
pub fn rping_info(buf: u64, rkey: u32, size: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&buf.to_be_bytes());
    b[8..12].copy_from_slice(&rkey.to_be_bytes());
    b[12..].copy_from_slice(&size.to_be_bytes());
    b
}

/// `n` reproducible pseudo random octets (xorshift64*).
pub fn garbage(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsiw_wire::connect::{FrameKind, RrParser};
    use rsiw_wire::ddp::{DDP_VERSION, RDMAP_VERSION};
    use rsiw_wire::error::{DdpError, ProtocolError, RdmapError};
    use rsiw_wire::rdmap::Body;
    use rsiw_wire::rx::{CrcVerdict, Deframer, RxConfig, RxSink};

    #[derive(Default)]
    struct Sink {
        hdrs: Vec<SegmentHeader>,
        payload: Vec<u8>,
        verdicts: Vec<CrcVerdict>,
    }
    impl RxSink for Sink {
        fn on_header(
            &mut self,
            h: &SegmentHeader,
            _raw: &[u8],
            _l: u16,
        ) -> Result<(), ProtocolError> {
            self.hdrs.push(*h);
            Ok(())
        }
        fn on_payload(&mut self, _o: u32, d: &[u8]) -> Result<(), ProtocolError> {
            self.payload.extend_from_slice(d);
            Ok(())
        }
        fn on_fpdu_end(&mut self, _h: &SegmentHeader, v: CrcVerdict) -> Result<(), ProtocolError> {
            self.verdicts.push(v);
            Ok(())
        }
    }

    fn deframe(mode: MpaMode, bytes: &[u8]) -> (Sink, Result<(), ProtocolError>) {
        let mut d = Deframer::new(RxConfig::new(mode), HostCrc32c::new(), 0);
        let mut s = Sink::default();
        let r = d.push(bytes, &mut s);
        (s, r)
    }

    #[test]
    fn valid_request_parses() {
        let b = mpa_request(&ReqSpec::default());
        assert_eq!(b.len(), 24);
        let mut p = RrParser::new(Some(FrameKind::Request), 512);
        assert_eq!(p.push(&b).unwrap(), (24, true));
        let f = p.frame().unwrap();
        assert_eq!(f.hdr.revision, 2);
        assert_eq!(f.ird_ord.unwrap().ord, 16);
        assert!(f.pdata.is_empty());
    }

    #[test]
    fn bent_requests_are_rejected_by_the_core() {
        let mut s = ReqSpec::default();
        s.key = *b"MPA ID Bad Frame";
        assert!(RrParser::new(None, 512).push(&mpa_request(&s)).is_err());
        let mut s = ReqSpec::default();
        s.revision = 3;
        assert!(RrParser::new(None, 512).push(&mpa_request(&s)).is_err());
        let mut s = ReqSpec::default();
        s.ird_ord = None;
        s.revision = 1;
        s.pdata = vec![7; 513];
        let b = mpa_request(&s);
        assert_eq!(&b[18..20], &[0x02, 0x01]);
        assert!(RrParser::new(None, 512).push(&b).is_err());
    }

    #[test]
    fn request_flags() {
        let s = ReqSpec {
            markers: true,
            crc: true,
            ..ReqSpec::default()
        };
        let b = mpa_request(&s);
        assert_eq!(b[16], 0x80 | 0x40 | 0x10);
        let mut s = ReqSpec::default();
        s.pd_len_override = Some(600);
        assert_eq!(&mpa_request(&s)[18..20], &600u16.to_be_bytes());
    }

    #[test]
    fn send_fpdu_round_trips_all_modes() {
        for mode in MpaMode::ALL {
            let info = rping_info(0x1000, 0xabcd, 16);
            let f = fpdu(mode, 0, &send_hdr(1), &info);
            let (s, r) = deframe(mode, &f);
            r.unwrap();
            assert_eq!(s.hdrs.len(), 1);
            assert_eq!(s.hdrs[0].opcode, Opcode::Send);
            assert_eq!(s.hdrs[0].untagged_hdr().unwrap().msn, 1);
            assert_eq!(s.payload, info);
            let want = if mode.crc {
                CrcVerdict::Ok
            } else {
                CrcVerdict::NotChecked
            };
            assert_eq!(s.verdicts, vec![want]);
        }
    }

    #[test]
    fn corrupted_crc_is_detected() {
        let mode = MpaMode {
            markers: false,
            crc: true,
        };
        let mut f = fpdu(mode, 0, &send_hdr(1), b"hello");
        corrupt_crc(&mut f);
        let (_, r) = deframe(mode, &f);
        assert_eq!(r.unwrap_err().term_code().layer, 2);
        assert_eq!(r.unwrap_err().term_code().code, 2);
    }

    #[test]
    fn bent_headers_map_to_the_expected_errors() {
        let mode = MpaMode::default();
        let mut h = send_hdr(1);
        set_ddp_version(&mut h, 0);
        let (_, r) = deframe(mode, &fpdu(mode, 0, &h, b"x"));
        assert_eq!(r, Err(DdpError::UntaggedInvalidVersion.into()));
        let mut h = send_hdr(1);
        set_rdmap_version(&mut h, 2);
        let (_, r) = deframe(mode, &fpdu(mode, 0, &h, b"x"));
        assert_eq!(r, Err(RdmapError::InvalidVersion.into()));
        let mut h = send_hdr(1);
        set_opcode(&mut h, 0xf);
        let (_, r) = deframe(mode, &fpdu(mode, 0, &h, b"x"));
        assert_eq!(r, Err(RdmapError::UnexpectedOpcode.into()));
        let mut h = send_hdr(1);
        set_qn(&mut h, 5);
        let (_, r) = deframe(mode, &fpdu(mode, 0, &h, b"x"));
        assert_eq!(r, Err(DdpError::UntaggedInvalidQn.into()));
        let c = Control::decode([send_hdr(1)[0], send_hdr(1)[1]]);
        assert_eq!(
            (c.ddp_version(), c.rdmap_version()),
            (DDP_VERSION, RDMAP_VERSION)
        );
    }

    #[test]
    fn tagged_and_terminate_headers() {
        let mode = MpaMode::default();
        let w = write_hdr(0xdead_be00, u64::MAX - 7);
        assert_eq!(w.len(), 14);
        let rr = ReadRequest {
            sink_stag: 1,
            sink_to: 2,
            size: 3,
            src_stag: 4,
            src_to: 5,
        };
        let t = TermHdr::from_error(rsiw_wire::error::LlpError::ConnectionLost.into());
        let mut bytes = fpdu(mode, 0, &w, &[0u8; 64]);
        let off = bytes.len() as u32;
        bytes.extend(fpdu(mode, off, &read_request_hdr(1, rr), &[]));
        let off = bytes.len() as u32;
        bytes.extend(fpdu(mode, off, &read_response_hdr(9, 0), &[1, 2, 3]));
        let off = bytes.len() as u32;
        bytes.extend(fpdu(mode, off, &terminate_hdr(t), &[]));
        let (s, r) = deframe(mode, &bytes);
        r.unwrap();
        assert_eq!(s.hdrs.len(), 4);
        assert_eq!(s.hdrs[0].tagged_hdr().unwrap().to, u64::MAX - 7);
        assert_eq!(s.hdrs[1].body, Body::ReadRequest(rr));
        assert_eq!(s.hdrs[2].opcode, Opcode::ReadResponse);
        assert_eq!(s.hdrs[3].body, Body::Terminate(t));
    }

    #[test]
    fn markers_stream_offsets_chain() {
        let mode = MpaMode {
            markers: true,
            crc: true,
        };
        let mut bytes = Vec::new();
        for i in 0..5u32 {
            let off = bytes.len() as u32;
            bytes.extend(fpdu(mode, off, &send_hdr(i + 1), &garbage(i as u64, 300)));
        }
        let (s, r) = deframe(mode, &bytes);
        r.unwrap();
        assert_eq!(s.hdrs.len(), 5);
    }

    #[test]
    fn segmented_and_invalidating_sends() {
        let mode = MpaMode::default();
        let mut bytes = fpdu(mode, 0, &send_seg_hdr(1, 0, false), &[1; 8]);
        let off = bytes.len() as u32;
        bytes.extend(fpdu(mode, off, &send_seg_hdr(1, 8, true), &[2; 8]));
        let off = bytes.len() as u32;
        bytes.extend(fpdu(mode, off, &send_inv_hdr(2, 0x1234_5600), &[3; 4]));
        let (s, r) = deframe(mode, &bytes);
        r.unwrap();
        assert_eq!(s.hdrs.len(), 3);
        let u = s.hdrs[1].untagged_hdr().unwrap();
        assert_eq!((u.msn, u.mo, s.hdrs[1].ctrl.last()), (1, 8, true));
        assert!(!s.hdrs[0].ctrl.last());
        assert_eq!(s.hdrs[2].opcode, Opcode::SendInvalidate);
        assert_eq!(s.hdrs[2].untagged_hdr().unwrap().ulp, 0x1234_5600);
    }

    #[test]
    fn garbage_is_reproducible() {
        assert_eq!(garbage(7, 100), garbage(7, 100));
        assert_ne!(garbage(7, 100), garbage(8, 100));
        assert_eq!(rping_info(1, 2, 3)[15], 3);
    }
}
