// SPDX-License-Identifier: GPL-2.0

//! Negative tests: one per error code of the registry, produced by the
//! deframer, the header parser, the placement checks, the connection
//! parser, or a sink rejecting a header (kernel side checks).

use rsiw_wire::connect::*;
use rsiw_wire::ddp::*;
use rsiw_wire::error::*;
use rsiw_wire::mpa::MpaMode;
use rsiw_wire::rdmap::{Opcode, SegmentHeader};
use rsiw_wire::rx::{CrcVerdict, Deframer, RxConfig, RxSink};
use rsiw_wire::term::{build_terminate, TermHdr};
use rsiw_wire::tx::encode_fpdu;
use rsiw_wire::HostCrc32c;

struct Sink {
    reject: Option<ProtocolError>,
    verdicts: Vec<CrcVerdict>,
    raw: Vec<u8>,
}

impl Sink {
    fn new(reject: Option<ProtocolError>) -> Self {
        Self {
            reject,
            verdicts: vec![],
            raw: vec![],
        }
    }
}

impl RxSink for Sink {
    fn on_header(&mut self, _h: &SegmentHeader, raw: &[u8], _pl: u16) -> Result<(), ProtocolError> {
        self.raw = raw.to_vec();
        match self.reject {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
    fn on_payload(&mut self, _o: u32, _d: &[u8]) -> Result<(), ProtocolError> {
        Ok(())
    }
    fn on_fpdu_end(&mut self, _h: &SegmentHeader, v: CrcVerdict) -> Result<(), ProtocolError> {
        self.verdicts.push(v);
        Ok(())
    }
}

const MODE: MpaMode = MpaMode {
    markers: true,
    crc: true,
};

fn fpdu(mode: MpaMode, off: u32, ulpdu: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; 70000];
    let n = encode_fpdu(mode, off, ulpdu, &[], &mut HostCrc32c::new(), &mut out).unwrap();
    out.truncate(n);
    out
}

fn ulpdu(h: SegmentHeader, payload: &[u8]) -> Vec<u8> {
    let (b, n) = h.to_bytes();
    let mut v = b[..n].to_vec();
    v.extend_from_slice(payload);
    v
}

fn run(cfg: RxConfig, stream: &[u8], sink: &mut Sink) -> Result<(), ProtocolError> {
    let mut d = Deframer::new(cfg, HostCrc32c::new(), 0);
    // Feed in 3-octet chunks to exercise resumption on the error paths.
    for c in stream.chunks(3) {
        d.push(c, sink)?;
    }
    Ok(())
}

fn rx_err(stream: &[u8]) -> ProtocolError {
    run(RxConfig::new(MODE), stream, &mut Sink::new(None)).unwrap_err()
}

fn send() -> SegmentHeader {
    SegmentHeader::send(Opcode::Send, 0, 1, 0, true)
}

#[test]
fn llp_crc_mismatch() {
    let mut s = fpdu(MODE, 0, &ulpdu(send(), b"hello"));
    let n = s.len();
    s[n - 1] ^= 0x01;
    let mut sink = Sink::new(None);
    let e = run(RxConfig::new(MODE), &s, &mut sink).unwrap_err();
    assert!(matches!(
        e,
        ProtocolError::Llp(LlpError::CrcMismatch { .. })
    ));
    assert_eq!(
        e.term_code(),
        TermCode {
            layer: 2,
            etype: 0,
            code: 2
        }
    );
    assert!(matches!(sink.verdicts[..], [CrcVerdict::Mismatch { .. }]));
    // Without CRC negotiated the same stream is fine.
    let no_crc = RxConfig::new(MpaMode {
        markers: true,
        crc: false,
    });
    let mut sink = Sink::new(None);
    run(no_crc, &s, &mut sink).unwrap();
    assert_eq!(sink.verdicts, vec![CrcVerdict::NotChecked]);
}

#[test]
fn llp_marker_mismatch() {
    // Leading marker must be 0.
    let mut s = fpdu(MODE, 0, &ulpdu(send(), b"hello"));
    s[3] = 7;
    let e = rx_err(&s);
    assert_eq!(
        e,
        ProtocolError::Llp(LlpError::Framing(FramingFault::MarkerMismatch {
            expected: 0,
            received: 7
        }))
    );
    assert_eq!(e.term_code().code, 0x03);
    // Mid FPDU marker pointing elsewhere.
    let big = ulpdu(send(), &[0xaa; 600]);
    let mut s = fpdu(MODE, 0, &big);
    assert_eq!(&s[512..516], &[0, 0, 1, 0xfc]);
    s[515] = 0xf8;
    assert!(matches!(
        rx_err(&s),
        ProtocolError::Llp(LlpError::Framing(FramingFault::MarkerMismatch {
            expected: 508,
            ..
        }))
    ));
    // Strict reserved bits.
    let mut s = fpdu(MODE, 0, &big);
    s[512] = 1;
    let strict = RxConfig {
        strict_marker_rsvd: true,
        ..RxConfig::new(MODE)
    };
    assert_eq!(
        run(strict, &s, &mut Sink::new(None)).unwrap_err(),
        ProtocolError::Llp(LlpError::Framing(FramingFault::MarkerReserved))
    );
}

#[test]
fn llp_ulpdu_length_too_small() {
    // ULPDU_Length 4 cannot hold any DDP header.
    let s = fpdu(MODE, 0, &[0x41, 0x43, 0, 0]);
    assert_eq!(
        rx_err(&s),
        LlpError::Framing(FramingFault::UlpduTooShort { len: 4 }).into()
    );
    // 16 octets pass the minimum but are short of an untagged header (18).
    let mut u = ulpdu(send(), b"");
    u.truncate(16);
    let s = fpdu(MODE, 0, &u);
    assert_eq!(
        rx_err(&s),
        LlpError::Framing(FramingFault::UlpduTooShort { len: 16 }).into()
    );
    // Read Request needs 46.
    let rr = SegmentHeader::read_request(
        1,
        rsiw_wire::rdmap::ReadRequest {
            sink_stag: 1,
            sink_to: 2,
            size: 3,
            src_stag: 4,
            src_to: 5,
        },
    );
    let mut u = ulpdu(rr, b"");
    u.truncate(30);
    assert_eq!(
        rx_err(&fpdu(MODE, 0, &u)),
        LlpError::Framing(FramingFault::UlpduTooShort { len: 30 }).into()
    );
}

#[test]
fn llp_ulpdu_length_too_large() {
    let s = fpdu(MODE, 0, &ulpdu(send(), &[0; 1000]));
    let cfg = RxConfig {
        max_ulpdu: 512,
        ..RxConfig::new(MODE)
    };
    let e = run(cfg, &s, &mut Sink::new(None)).unwrap_err();
    assert_eq!(
        e,
        LlpError::Framing(FramingFault::UlpduTooLong {
            len: 1018,
            max: 512
        })
        .into()
    );
}

#[test]
fn llp_errors_stay_sticky() {
    let mut s = fpdu(MODE, 0, &ulpdu(send(), b"x"));
    s[3] = 1;
    let mut d = Deframer::new(RxConfig::new(MODE), HostCrc32c::new(), 0);
    let mut sink = Sink::new(None);
    let e = d.push(&s, &mut sink).unwrap_err();
    assert_eq!(d.push(&[0; 8], &mut sink), Err(e));
    assert_eq!(d.error(), Some(e));
}

#[test]
fn ddp_invalid_version_tagged_and_untagged() {
    let mut h = SegmentHeader::write(1, 2, true);
    h.ctrl = h.ctrl.with_ddp_version(2);
    assert_eq!(
        rx_err(&fpdu(MODE, 0, &ulpdu(h, b""))),
        DdpError::TaggedInvalidVersion.into()
    );
    let mut h = send();
    h.ctrl = h.ctrl.with_ddp_version(0);
    let e = rx_err(&fpdu(MODE, 0, &ulpdu(h, b"")));
    assert_eq!(e, DdpError::UntaggedInvalidVersion.into());
    assert_eq!(
        e.term_code(),
        TermCode {
            layer: 1,
            etype: 2,
            code: 6
        }
    );
    // Version errors do not copy the (unknown layout) header.
    assert_eq!(e.hdr_ct(), HdrCt::default());
}

#[test]
fn rdmap_invalid_version() {
    let mut h = send();
    h.ctrl = h.ctrl.with_rdmap_version(2);
    let e = rx_err(&fpdu(MODE, 0, &ulpdu(h, b"")));
    assert_eq!(e, RdmapError::InvalidVersion.into());
    assert_eq!(
        e.term_code(),
        TermCode {
            layer: 0,
            etype: 2,
            code: 5
        }
    );
}

#[test]
fn rdmap_unexpected_opcode() {
    let mut h = send();
    h.ctrl = h.ctrl.with_opcode(9);
    assert_eq!(
        rx_err(&fpdu(MODE, 0, &ulpdu(h, b""))),
        RdmapError::UnexpectedOpcode.into()
    );
    // Send carried in a tagged segment.
    let mut h = SegmentHeader::write(1, 2, true);
    h.ctrl = h.ctrl.with_opcode(Opcode::Send as u8);
    assert_eq!(
        rx_err(&fpdu(MODE, 0, &ulpdu(h, b""))),
        RdmapError::UnexpectedOpcode.into()
    );
}

#[test]
fn ddp_untagged_invalid_qn_from_wire() {
    let mut h = send();
    if let DdpHdr::Untagged(ref mut u) = h.ddp {
        u.qn = 1; // Send on the Read Request queue
    }
    assert_eq!(
        rx_err(&fpdu(MODE, 0, &ulpdu(h, b""))),
        DdpError::UntaggedInvalidQn.into()
    );
}

#[test]
fn rejected_header_is_kept_for_the_terminate() {
    let mut h = send();
    if let DdpHdr::Untagged(ref mut u) = h.ddp {
        u.qn = 5;
    }
    let (raw, n) = h.to_bytes();
    let stream = fpdu(MODE, 0, &ulpdu(h, b"abcd"));
    let mut d = Deframer::new(RxConfig::new(MODE), HostCrc32c::new(), 0);
    let mut sink = Sink::new(None);
    assert!(d.rejected_header().is_none());
    let e = d.push(&stream, &mut sink).unwrap_err();
    assert_eq!(e, DdpError::UntaggedInvalidQn.into());
    assert_eq!(d.rejected_header(), Some(&raw[..n]));
    // A header that passed its checks is not "rejected".
    let mut d = Deframer::new(RxConfig::new(MODE), HostCrc32c::new(), 0);
    let good = fpdu(MODE, 0, &ulpdu(send(), b"abcd"));
    d.push(&good[..2 + 18], &mut Sink::new(None)).unwrap();
    assert!(d.rejected_header().is_none());
}

#[test]
fn ddp_tagged_checks() {
    let h = TaggedHdr {
        stag: 7,
        to: 0x1000,
    };
    let ok = TaggedTarget {
        valid: true,
        associated: true,
        base: 0x1000,
        len: 0x100,
    };
    assert_eq!(check_tagged(&h, 0x100, Some(&ok)), Ok(()));
    assert_eq!(check_tagged(&h, 1, None), Err(DdpError::TaggedInvalidStag));
    assert_eq!(
        check_tagged(&h, 1, Some(&TaggedTarget { valid: false, ..ok })),
        Err(DdpError::TaggedInvalidStag)
    );
    assert_eq!(
        check_tagged(
            &h,
            1,
            Some(&TaggedTarget {
                associated: false,
                ..ok
            })
        ),
        Err(DdpError::TaggedStagNotAssociated)
    );
    assert_eq!(
        check_tagged(&h, 0x101, Some(&ok)),
        Err(DdpError::TaggedBaseBounds)
    );
    assert_eq!(
        check_tagged(&TaggedHdr { stag: 7, to: 0xfff }, 1, Some(&ok)),
        Err(DdpError::TaggedBaseBounds)
    );
    let wrap = TaggedHdr {
        stag: 7,
        to: u64::MAX - 1,
    };
    let all = TaggedTarget {
        base: 0,
        len: u64::MAX,
        ..ok
    };
    assert_eq!(
        check_tagged(&wrap, 4, Some(&all)),
        Err(DdpError::TaggedToWrap)
    );
    let codes: Vec<u8> = [
        DdpError::TaggedInvalidStag,
        DdpError::TaggedBaseBounds,
        DdpError::TaggedStagNotAssociated,
        DdpError::TaggedToWrap,
        DdpError::TaggedInvalidVersion,
    ]
    .iter()
    .map(|e| e.term_code().code)
    .collect();
    assert_eq!(codes, vec![0, 1, 2, 3, 4]);
}

#[test]
fn ddp_untagged_checks() {
    let h = UntaggedHdr {
        ulp: 0,
        qn: 0,
        msn: 5,
        mo: 0,
    };
    let q = UntaggedTarget {
        num_queues: 3,
        expected_msn: 5,
        msn_window: 4,
        buf_len: Some(100),
        expected_mo: Some(0),
    };
    assert_eq!(check_untagged(&h, 100, &q), Ok(()));
    assert_eq!(
        check_untagged(&UntaggedHdr { qn: 3, ..h }, 1, &q),
        Err(DdpError::UntaggedInvalidQn)
    );
    assert_eq!(
        check_untagged(&UntaggedHdr { msn: 9, ..h }, 1, &q),
        Err(DdpError::UntaggedMsnRange)
    );
    assert_eq!(
        check_untagged(&UntaggedHdr { msn: 4, ..h }, 1, &q),
        Err(DdpError::UntaggedMsnRange)
    );
    assert_eq!(
        check_untagged(&h, 1, &UntaggedTarget { buf_len: None, ..q }),
        Err(DdpError::UntaggedMsnNoBuffer)
    );
    assert_eq!(
        check_untagged(&UntaggedHdr { mo: 8, ..h }, 1, &q),
        Err(DdpError::UntaggedInvalidMo)
    );
    assert_eq!(check_untagged(&h, 101, &q), Err(DdpError::UntaggedTooLong));
    assert_eq!(
        check_untagged(
            &UntaggedHdr { mo: u32::MAX, ..h },
            2,
            &UntaggedTarget {
                expected_mo: None,
                ..q
            }
        ),
        Err(DdpError::UntaggedTooLong)
    );
}

#[test]
fn sink_rejections_for_every_code() {
    // The kernel's checks run in on_header; every error stops the deframer
    // and maps to its TERMINATE triple and copied headers.
    let all: Vec<ProtocolError> = RdmapError::ALL
        .iter()
        .map(|&e| e.into())
        .chain(DdpError::ALL.iter().map(|&e| e.into()))
        .chain([
            LlpError::ConnectionLost.into(),
            LlpError::LocalCatastrophic.into(),
            LlpError::InsufficientIrd.into(),
            LlpError::NoMatchingRtr.into(),
        ])
        .collect();
    let s = fpdu(MODE, 0, &ulpdu(send(), b"payload"));
    for e in all {
        let mut sink = Sink::new(Some(e));
        assert_eq!(run(RxConfig::new(MODE), &s, &mut sink), Err(e));
        let mut out = [0u8; 128];
        let n = build_terminate(e, 1, Some(&sink.raw), 7, &mut out).unwrap();
        let th = TermHdr::decode(out[18..22].try_into().unwrap());
        assert_eq!(th.code, e.term_code());
        // (the offending segment is a Send: R never, it has no Read
        // Request header to copy)
        assert_eq!(
            th.hdrct,
            HdrCt {
                r: false,
                ..e.hdr_ct()
            }
        );
        let copied = if e.hdr_ct().d { 2 + 18 } else { 0 };
        assert_eq!(n, 22 + copied, "{e:?}");
    }
}

#[test]
fn terminate_copies_read_request_for_protection_errors() {
    let rr = SegmentHeader::read_request(
        4,
        rsiw_wire::rdmap::ReadRequest {
            sink_stag: 1,
            sink_to: 2,
            size: 3,
            src_stag: 4,
            src_to: 5,
        },
    );
    let (b, n) = rr.to_bytes();
    let mut out = [0u8; 128];
    let len = build_terminate(
        RdmapError::InvalidStag.into(),
        1,
        Some(&b[..n]),
        0,
        &mut out,
    )
    .unwrap();
    assert_eq!(len, 22 + 2 + 46);
    assert_eq!(&out[24..70], &b[..46]);
    assert_eq!(out[20] & 0xe0, 0xe0);
    // The same error for a Write or a Send: no Read Request header, so R
    // is clear and only the DDP header is copied.
    for h in [
        SegmentHeader::write(0x1100, 0x2000, true),
        SegmentHeader::send(Opcode::SendInvalidate, 0x1200, 2, 0, true),
    ] {
        let (b, n) = h.to_bytes();
        let len = build_terminate(
            RdmapError::AccessRights.into(),
            1,
            Some(&b[..n]),
            (n + 64) as u16,
            &mut out,
        )
        .unwrap();
        assert_eq!(len, 22 + 2 + n, "{h:?}");
        assert_eq!(out[20] & 0xe0, 0xc0, "M and D, not R: {h:?}");
        assert_eq!(&out[24..24 + n], &b[..n]);
    }
    // Missing offending header: nothing copied, M/D/R cleared.
    let len = build_terminate(RdmapError::InvalidStag.into(), 1, None, 0, &mut out).unwrap();
    assert_eq!(len, 22);
    assert_eq!(out[20], 0);
}

fn rr_bytes(kind: FrameKind, rev: u8, flags: u8, pd: u16) -> Vec<u8> {
    let mut v = match kind {
        FrameKind::Request => REQ_KEY.to_vec(),
        FrameKind::Reply => REP_KEY.to_vec(),
    };
    v.push(flags);
    v.push(rev);
    v.extend_from_slice(&pd.to_be_bytes());
    v
}

#[test]
fn mpa_bad_key() {
    let mut b = rr_bytes(FrameKind::Request, 1, 0x40, 0);
    b[4] = b'X';
    assert_eq!(MpaRr::decode(&b, 512), Err(ConnectError::BadKey));
    let e: ProtocolError = LlpError::from(ConnectError::BadKey).into();
    assert_eq!(
        e.term_code(),
        TermCode {
            layer: 2,
            etype: 0,
            code: 4
        }
    );
    let mut p = RrParser::new(None, 512);
    assert_eq!(p.push(&b), Err(ConnectError::BadKey));
}

#[test]
fn mpa_bad_revision() {
    for rev in [0u8, 3, 0xff] {
        let b = rr_bytes(FrameKind::Reply, rev, 0x40, 0);
        assert_eq!(MpaRr::decode(&b, 512), Err(ConnectError::BadRevision(rev)));
    }
}

#[test]
fn mpa_pd_too_long() {
    let b = rr_bytes(FrameKind::Request, 1, 0, 513);
    assert_eq!(MpaRr::decode(&b, 512), Err(ConnectError::PdTooLong(513)));
    let b = rr_bytes(FrameKind::Request, 1, 0, 300);
    assert_eq!(MpaRr::decode(&b, 256), Err(ConnectError::PdTooLong(300)));
    assert!(MpaRr::decode(&rr_bytes(FrameKind::Request, 1, 0, 512), 512).is_ok());
    let h = MpaRr::new(FrameKind::Request, 1, 0);
    assert_eq!(
        encode_rr(h, None, &[0; 513], &mut [0u8; 1024]),
        Err(ConnectError::PdTooLong(513))
    );
}

#[test]
fn mpa_missing_ird_ord_and_wrong_kind() {
    let b = rr_bytes(FrameKind::Request, 2, FLAG_ENHANCED, 2);
    assert_eq!(MpaRr::decode(&b, 512), Err(ConnectError::MissingIrdOrd));
    let b = rr_bytes(FrameKind::Request, 1, 0, 0);
    let mut p = RrParser::new(Some(FrameKind::Reply), 512);
    assert_eq!(p.push(&b), Err(ConnectError::UnexpectedKind));
}

#[test]
fn mpa_parser_leaves_following_octets() {
    let mut b = rr_bytes(FrameKind::Reply, 1, 0xc0, 2);
    b.extend_from_slice(b"pdFPDU");
    let mut p = RrParser::new(Some(FrameKind::Reply), 512);
    assert_eq!(p.push(&b), Ok((22, true)));
    assert_eq!(p.frame().unwrap().pdata, b"pd");
}

#[test]
fn rtr_negotiation() {
    let req = IrdOrd {
        peer_to_peer: true,
        read_rtr: true,
        ..IrdOrd::default()
    };
    assert_eq!(req.choose_rtr(true, true), Ok(RtrType::Read));
    assert_eq!(req.choose_rtr(true, false), Err(LlpError::NoMatchingRtr));
    let both = IrdOrd {
        write_rtr: true,
        ..req
    };
    assert_eq!(both.choose_rtr(true, true), Ok(RtrType::Write));
    let none = IrdOrd {
        peer_to_peer: true,
        ..IrdOrd::default()
    };
    assert_eq!(none.choose_rtr(false, false), Ok(RtrType::Send));
    // RFC 6581: only the Read RTR is itself an RDMA Read Request, which
    // the responder's IRD (and the initiator's ORD) must cover.
    assert_eq!(RtrType::Read.read_credits(), 1);
    assert_eq!(RtrType::Write.read_credits(), 0);
    assert_eq!(RtrType::Send.read_credits(), 0);
    let rep = IrdOrd {
        ird: 2,
        ord: 2,
        ..IrdOrd::default()
    };
    assert_eq!(rep.check_ird(4), Err(LlpError::InsufficientIrd));
    assert_eq!(rep.check_ird(2), Ok(()));
    assert_eq!(
        ProtocolError::from(LlpError::NoMatchingRtr)
            .term_code()
            .code,
        7
    );
    assert_eq!(
        ProtocolError::from(LlpError::InsufficientIrd)
            .term_code()
            .code,
        6
    );
    assert_eq!(
        ProtocolError::from(LlpError::ConnectionLost)
            .term_code()
            .code,
        1
    );
}

#[test]
fn tx_plan_errors() {
    use rsiw_wire::tx::{FpduPlan, TxError};
    assert_eq!(
        FpduPlan::new(MODE, 0, 18, 65518),
        Err(TxError::UlpduTooLong)
    );
    assert!(FpduPlan::new(MpaMode::default(), 0, 18, 65517).is_ok());
    // With markers the last marker of a maximal FPDU would be more than
    // 65535 octets after its header.
    assert_eq!(
        FpduPlan::new(MODE, 0, 18, 65517),
        Err(TxError::MarkerPtrOverflow)
    );
    let mut small = [0u8; 8];
    assert_eq!(
        encode_fpdu(MODE, 0, &[0; 18], &[], &mut HostCrc32c::new(), &mut small),
        Err(TxError::BufferTooSmall)
    );
}

#[test]
fn mpa_parser_wanted_counts_down() {
    let mut b = rr_bytes(FrameKind::Request, 1, 0x40, 3);
    b.extend_from_slice(b"abcFPDU");
    let mut p = RrParser::new(None, 512);
    assert_eq!(p.wanted(), 20);
    assert_eq!(p.push(&b[..7]), Ok((7, false)));
    assert_eq!(p.wanted(), 13);
    assert_eq!(p.push(&b[7..20]), Ok((13, false)));
    assert_eq!(p.wanted(), 3);
    // Reading exactly `wanted()` octets never consumes past the frame.
    let w = p.wanted();
    assert_eq!(p.push(&b[20..20 + w]), Ok((3, true)));
    assert_eq!(p.wanted(), 0);
    assert_eq!(p.frame().unwrap().pdata, b"abc");
}

/// RFC 5040 5.3: nothing after a TERMINATE is delivered: not the Send that
/// follows it in the same push, nor a malformed FPDU (which would draw a
/// TERMINATE of our own), nor anything pushed later. With
/// `stop_at_terminate` off (a test tool) everything is delivered.
#[test]
fn nothing_delivered_after_a_terminate() {
    let mode = MpaMode {
        markers: false,
        crc: true,
    };
    let t = TermHdr::from_error(RdmapError::CatastrophicGlobal.into());
    let mut s = fpdu(mode, 0, &ulpdu(SegmentHeader::terminate(1, t), &[]));
    let after = s.len() as u32;
    let send_fpdu = fpdu(mode, after, &ulpdu(send(), &[7; 16]));
    s.extend_from_slice(&send_fpdu);
    let mut bad = ulpdu(send(), &[0; 8]);
    bad[0] &= !0x03; // DDP version 0
    let off = s.len() as u32;
    s.extend_from_slice(&fpdu(mode, off, &bad));
    for chunk in [s.len(), 1, 5] {
        let mut d = Deframer::new(RxConfig::new(mode), HostCrc32c::new(), 0);
        let mut sink = Sink::new(None);
        for c in s.chunks(chunk) {
            d.push(c, &mut sink).unwrap();
        }
        assert!(d.terminated());
        assert_eq!(d.fpdus(), 1, "chunk {chunk}");
        assert_eq!(sink.verdicts, vec![CrcVerdict::Ok]);
        // Later octets too.
        d.push(&send_fpdu, &mut sink).unwrap();
        assert_eq!(d.fpdus(), 1);
    }
    let cfg = RxConfig {
        stop_at_terminate: false,
        ..RxConfig::new(mode)
    };
    let mut d = Deframer::new(cfg, HostCrc32c::new(), 0);
    let mut sink = Sink::new(None);
    let e = d.push(&s, &mut sink).unwrap_err();
    assert_eq!(e, ProtocolError::Ddp(DdpError::UntaggedInvalidVersion));
    assert!(!d.terminated());
    assert_eq!(sink.verdicts.len(), 2);
}

/// A TERMINATE whose CRC is wrong is a CRC error, not a TERMINATE.
#[test]
fn terminate_with_bad_crc_is_a_crc_error() {
    let mode = MpaMode {
        markers: false,
        crc: true,
    };
    let t = TermHdr::from_error(RdmapError::CatastrophicGlobal.into());
    let mut s = fpdu(mode, 0, &ulpdu(SegmentHeader::terminate(1, t), &[]));
    let n = s.len();
    s[n - 1] ^= 1;
    let mut d = Deframer::new(RxConfig::new(mode), HostCrc32c::new(), 0);
    let e = d.push(&s, &mut Sink::new(None)).unwrap_err();
    assert!(matches!(
        e,
        ProtocolError::Llp(LlpError::CrcMismatch { .. })
    ));
    assert!(!d.terminated());
}

/// RFC 5044 5: the receiver treats the two low bits of FPDUPTR as zero
/// (a leading marker 0..3 and a mid-FPDU 508..511 are both right).
#[test]
fn marker_fpduptr_low_bits_are_ignored() {
    let mode = MpaMode {
        markers: true,
        crc: false,
    };
    let big = ulpdu(send(), &[0xaa; 600]);
    let mut s = fpdu(mode, 0, &big);
    assert_eq!(&s[..4], &[0, 0, 0, 0]);
    assert_eq!(&s[512..516], &[0, 0, 1, 0xfc]);
    s[3] = 3;
    s[515] = 0xff;
    let mut sink = Sink::new(None);
    run(RxConfig::new(mode), &s, &mut sink).unwrap();
    assert_eq!(sink.verdicts, vec![CrcVerdict::NotChecked]);
    // A third bit is a mismatch.
    s[515] = 0xf8 | 3;
    assert!(matches!(
        run(RxConfig::new(mode), &s, &mut Sink::new(None)).unwrap_err(),
        ProtocolError::Llp(LlpError::Framing(FramingFault::MarkerMismatch {
            expected: 508,
            received: 0x1fb
        }))
    ));
}

/// PD_Length is at most 512; an enhanced (RFC 6581) frame spends 4 of
/// them on IRD/ORD, a revision 1 frame gives all 512 to the consumer.
#[test]
fn private_data_limits_per_revision() {
    assert_eq!(max_user_pdata(false), 512);
    assert_eq!(max_user_pdata(true), 508);
    let mut out = [0u8; 600];
    let pd = [7u8; 513];
    let rev1 = MpaRr::new(FrameKind::Request, REVISION_1, 0);
    assert_eq!(encode_rr(rev1, None, &pd[..512], &mut out), Ok(532));
    assert!(encode_rr(rev1, None, &pd, &mut out).is_err());
    let rev2 = MpaRr::new(FrameKind::Request, REVISION_2, 0);
    let io = Some(IrdOrd::default());
    assert_eq!(encode_rr(rev2, io, &pd[..508], &mut out), Ok(532));
    assert!(encode_rr(rev2, io, &pd[..509], &mut out).is_err());
}
