// SPDX-License-Identifier: GPL-2.0

//! RFC 7306 (Immediate Data, Atomic Request/Response): golden vectors
//! written out octet by octet from the RFC's figures (Figure 1 control
//! field, Figure 2 opcodes and queue numbers, Figure 4 Atomic Request,
//! Figure 6 Atomic Response, Figure 7 Immediate Data, Appendix A
//! segments), the gate (without the extension the opcodes are unknown, as
//! before), the receiver's checks and their TERMINATE codes, the atomic
//! operations against the RFC's pseudocode, and property tests (round
//! trips, arbitrary octets never panic). The same octets are typed in
//! again, not shared, by the independent decoder's tests in
//! `userspace-tools/iwarp/src/rfc7306.rs`.

use proptest::prelude::*;
use rsiw_wire::ddp::{DdpHdr, UntaggedHdr};
use rsiw_wire::error::*;
use rsiw_wire::inbound::ExpectedMsns;
use rsiw_wire::mpa::MpaMode;
use rsiw_wire::rdmap::*;
use rsiw_wire::rfc7306::*;
use rsiw_wire::rx::{CrcVerdict, Deframer, RxConfig, RxSink};
use rsiw_wire::term::{build_terminate, parse_term_copy};
use rsiw_wire::tx::encode_fpdu;
use rsiw_wire::HostCrc32c;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

// Octet 0: T=0 L=1 Resrv=0 DV=01 -> 0x41. Octet 1: RV=01 Rsv=00 and the
// opcode 1000b..1011b -> 0x48..0x4b. Then Invalidate STag (0), QN, MSN,
// MO, and the RDMAP header of the message.
const IMM: &str = "4148 00000000 00000000 00000005 00000000 0102030405060708";
const IMM_SE: &str = "4149 00000000 00000000 00000001 00000000 deadbeefcafef00d";
const FETCH_ADD: &str = "414a 00000000 00000001 00000002 00000000 \
    00000000 11223344 00abcdef 00007f0012345678 \
    0000000000000001 0000000000000000 0000000000000000 ffffffffffffffff";
const CMP_SWAP: &str = "414a 00000000 00000001 00000003 00000000 \
    00000002 feedface 12345678 0000000000001000 \
    aaaaaaaa55555555 ffffffff00000000 0123456789abcdef 00000000ffffffff";
const RESP: &str = "414b 00000000 00000003 00000001 00000000 \
    11223344 0000000000000029";

fn golden() -> [(&'static str, SegmentHeader); 5] {
    [
        (
            IMM,
            SegmentHeader::immediate(false, 5, [1, 2, 3, 4, 5, 6, 7, 8]),
        ),
        (
            IMM_SE,
            SegmentHeader::immediate(true, 1, [0xde, 0xad, 0xbe, 0xef, 0xca, 0xfe, 0xf0, 0x0d]),
        ),
        (
            FETCH_ADD,
            SegmentHeader::atomic_request(
                2,
                AtomicRequest::fetch_add(0x1122_3344, 0x00ab_cdef, 0x7f00_1234_5678, 1, 0),
            ),
        ),
        (
            CMP_SWAP,
            SegmentHeader::atomic_request(
                3,
                AtomicRequest::cmp_swap(
                    0xfeed_face,
                    0x1234_5678,
                    0x1000,
                    0xaaaa_aaaa_5555_5555,
                    0xffff_ffff_0000_0000,
                    0x0123_4567_89ab_cdef,
                    0x0000_0000_ffff_ffff,
                ),
            ),
        ),
        (
            RESP,
            SegmentHeader::atomic_response(
                1,
                AtomicResponse {
                    req_id: 0x1122_3344,
                    orig: 41,
                },
            ),
        ),
    ]
}

#[test]
fn opcodes_queues_and_lengths() {
    let t = [
        (8u8, Opcode::ImmediateData, 0u32, 26usize, "IMMEDIATE_DATA"),
        (9, Opcode::ImmediateDataSe, 0, 26, "IMMEDIATE_DATA_SE"),
        (10, Opcode::AtomicRequest, 1, 70, "ATOMIC_REQ"),
        (11, Opcode::AtomicResponse, 3, 30, "ATOMIC_RESP"),
    ];
    for (v, op, qn, len, name) in t {
        assert_eq!(Opcode::from_u8(v), None, "{name} without the extension");
        assert_eq!(Opcode::from_u8_ext(v, Extensions::NONE), None);
        assert_eq!(Opcode::from_u8_ext(v, Extensions::RFC7306), Some(op));
        assert_eq!(op as u8, v);
        assert!(!op.is_tagged() && !op.has_invalidate() && op.is_rfc7306());
        assert_eq!(op.queue(), Some(qn));
        assert_eq!(op.hdr_len(), len);
        assert_eq!(op.name(), name);
    }
    for v in 0..8 {
        let op = Opcode::from_u8(v).unwrap();
        assert_eq!(Opcode::from_u8_ext(v, Extensions::RFC7306), Some(op));
        assert!(!op.is_rfc7306());
    }
    for v in 12..16 {
        assert_eq!(Opcode::from_u8_ext(v, Extensions::RFC7306), None);
    }
    assert_eq!(QN_ATOMIC_RESPONSE, 3);
    assert_eq!(MAX_HDR_LEN, 70);
    assert_eq!(AtomicOp::from_u8(0), Some(AtomicOp::FetchAdd));
    assert_eq!(AtomicOp::from_u8(1), None, "0x1 is reserved");
    assert_eq!(AtomicOp::from_u8(2), Some(AtomicOp::CmpSwap));
    assert!((3..16).all(|v| AtomicOp::from_u8(v).is_none()));
}

#[test]
fn golden_vectors_encode_and_parse() {
    for (h, seg) in golden() {
        let b = hex(h);
        let (enc, n) = seg.to_bytes();
        assert_eq!(&enc[..n], &b[..], "encode {:?}", seg.opcode);
        assert_eq!(n, seg.len());
        assert_eq!(
            SegmentHeader::parse_ext(&b, Extensions::RFC7306),
            Ok(seg),
            "parse {:?}",
            seg.opcode
        );
        // The gate: without the extension these are unknown opcodes.
        assert_eq!(
            SegmentHeader::parse(&b),
            Err(RdmapError::UnexpectedOpcode.into())
        );
    }
    let Body::AtomicRequest(r) = SegmentHeader::parse_ext(&hex(CMP_SWAP), Extensions::RFC7306)
        .unwrap()
        .body
    else {
        panic!("not an atomic request");
    };
    assert_eq!(r.op(), Some(AtomicOp::CmpSwap));
    assert_eq!((r.rsvd, r.req_id, r.to), (0, 0xfeed_face, 0x1000));
}

#[test]
fn reserved_bits_and_invalidate_field_are_kept_not_checked() {
    // Invalidate STag and the 28 reserved bits: zero on transmit, ignored
    // on receive (sections 4.1 and 5.2.1); parsed as sent.
    let mut b = hex(FETCH_ADD);
    b[2..6].copy_from_slice(&[9, 9, 9, 9]);
    b[18..22].copy_from_slice(&[0xab, 0xcd, 0xef, 0x10]);
    let h = SegmentHeader::parse_ext(&b, Extensions::RFC7306).unwrap();
    let Body::AtomicRequest(r) = h.body else {
        panic!()
    };
    assert_eq!((r.rsvd, r.aopcode), (0x0abc_def1, 0));
    assert_eq!(h.untagged_hdr().unwrap().ulp, 0x0909_0909);
    assert_eq!(&h.to_bytes().0[..70], &b[..]);
}

#[test]
fn wrong_queue_tagged_and_short() {
    let ext = Extensions::RFC7306;
    // Atomic Request on QN 3, Response on QN 1, Immediate Data on QN 1.
    for (h, at, qn) in [(FETCH_ADD, 9, 3), (RESP, 9, 1), (IMM, 9, 1)] {
        let mut b = hex(h);
        b[at] = qn;
        assert_eq!(
            SegmentHeader::parse_ext(&b, ext),
            Err(DdpError::UntaggedInvalidQn.into())
        );
    }
    // T bit set: the opcodes are untagged.
    let mut b = hex(RESP);
    b[0] |= 0x80;
    assert_eq!(
        SegmentHeader::parse_ext(&b, ext),
        Err(RdmapError::UnexpectedOpcode.into())
    );
    // Shorter than the header: a framing error.
    for h in [IMM, FETCH_ADD, RESP] {
        let b = hex(h);
        let cut = &b[..b.len() - 1];
        assert!(matches!(
            SegmentHeader::parse_ext(cut, ext),
            Err(ProtocolError::Llp(LlpError::Framing(
                FramingFault::UlpduTooShort { .. }
            )))
        ));
    }
}

#[derive(Default)]
struct Sink(Vec<(SegmentHeader, u16)>);

impl RxSink for Sink {
    fn on_header(&mut self, h: &SegmentHeader, raw: &[u8], pl: u16) -> Result<(), ProtocolError> {
        assert_eq!(raw.len(), h.len());
        self.0.push((*h, pl));
        Ok(())
    }
    fn on_payload(&mut self, _: u32, _: &[u8]) -> Result<(), ProtocolError> {
        Ok(())
    }
    fn on_fpdu_end(&mut self, _: &SegmentHeader, v: CrcVerdict) -> Result<(), ProtocolError> {
        assert_ne!(
            v,
            CrcVerdict::Mismatch {
                computed: 0,
                received: 0
            }
        );
        Ok(())
    }
}

fn stream(mode: MpaMode, off: u32, ulpdus: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut o = off;
    for u in ulpdus {
        let mut buf = vec![0u8; 4096];
        let n = encode_fpdu(mode, o, u, &[], &mut HostCrc32c::new(), &mut buf).unwrap();
        out.extend_from_slice(&buf[..n]);
        o = o.wrapping_add(n as u32);
    }
    out
}

#[test]
fn deframer_gate() {
    let mode = MpaMode {
        markers: true,
        crc: true,
    };
    let ulpdus: Vec<Vec<u8>> = golden().iter().map(|(h, _)| hex(h)).collect();
    let s = stream(mode, 500, &ulpdus);
    // Default configuration: as before RFC 7306, the first one draws the
    // unexpected OpCode TERMINATE (RDMAP, Remote Operation Error, 0x06).
    let mut d = Deframer::new(RxConfig::new(mode), HostCrc32c::new(), 500);
    let mut sink = Sink::default();
    let e = d.push(&s, &mut sink).unwrap_err();
    assert_eq!(e, RdmapError::UnexpectedOpcode.into());
    assert_eq!(
        e.term_code(),
        TermCode {
            layer: 0,
            etype: 2,
            code: 0x06
        }
    );
    assert!(sink.0.is_empty());
    // Enabled: every message arrives, whole or one octet at a time.
    let cfg = RxConfig {
        ext: Extensions::RFC7306,
        ..RxConfig::new(mode)
    };
    for step in [s.len(), 1, 7] {
        let mut d = Deframer::new(cfg, HostCrc32c::new(), 500);
        let mut sink = Sink::default();
        for c in s.chunks(step) {
            d.push(c, &mut sink).unwrap();
        }
        let want: Vec<(SegmentHeader, u16)> = golden().iter().map(|g| (g.1, 0)).collect();
        assert_eq!(sink.0, want);
    }
}

#[test]
fn one_segment_each() {
    assert_eq!(check_segment(0, 0, true), Ok(()));
    assert_eq!(check_segment(8, 0, true), Err(DdpError::UntaggedInvalidMo));
    assert_eq!(check_segment(0, 1, true), Err(DdpError::UntaggedTooLong));
    assert_eq!(check_segment(0, 0, false), Err(DdpError::UntaggedTooLong));
}

#[test]
fn atomic_request_checks_and_terminate() {
    let fa = AtomicRequest::fetch_add(1, 2, 0x1000, 1, 0);
    assert_eq!(fa.check(0x1000), Ok(AtomicOp::FetchAdd));
    // Section 8.2: not 64-bit aligned -> RDMAP Remote Operation Error,
    // "catastrophic error, localized to RDMAP stream"; DDP header copied,
    // RDMAP header not (section 8.1).
    for a in [0x1001, 0x1004, 0x1007] {
        assert_eq!(fa.check(a), Err(RdmapError::CatastrophicStream));
    }
    let e: ProtocolError = RdmapError::CatastrophicStream.into();
    assert_eq!(
        e.term_code(),
        TermCode {
            layer: 0,
            etype: 2,
            code: 0x07
        }
    );
    assert_eq!(
        e.hdr_ct(),
        HdrCt {
            m: true,
            d: true,
            r: false
        }
    );
    let raw = hex(FETCH_ADD);
    let mut out = [0u8; 128];
    let n = build_terminate(e, 1, Some(&raw), 70, &mut out).unwrap();
    assert_eq!(n, 22 + 2 + 18);
    let t = SegmentHeader::parse(&out[..n]).unwrap();
    let Body::Terminate(th) = t.body else {
        panic!()
    };
    let c = parse_term_copy(&th, &out[22..n]).unwrap().unwrap();
    assert_eq!(
        (c.ddp_seg_len, c.ddp_hdr, c.rdmap_hdr),
        (70, &raw[..18], &[][..])
    );
    // An AOpCode RFC 7306 does not define (0x1 reserved, 0x3..): the
    // operation is not supported.
    for op in [1u8, 3, 15] {
        let r = AtomicRequest { aopcode: op, ..fa };
        assert_eq!(r.op(), None);
        assert_eq!(r.check(0x1000), Err(RdmapError::UnexpectedOpcode));
        assert_eq!(r.apply(5), None);
    }
}

#[test]
fn atomic_response_check() {
    let r = AtomicResponse { req_id: 7, orig: 0 };
    assert_eq!(r.check(Some(7)), Ok(()));
    assert_eq!(r.check(None), Err(DdpError::UntaggedMsnNoBuffer.into()));
    assert_eq!(
        r.check(Some(8)),
        Err(RdmapError::OperationUnspecified.into())
    );
}

#[test]
fn responses_in_request_order() {
    // A requester's queue 1 head decides which response is due.
    let r = AtomicResponse { req_id: 7, orig: 0 };
    assert_eq!(r.check_head(Some(Outstanding::Atomic(7))), Ok(()));
    assert_eq!(
        r.check_head(Some(Outstanding::Atomic(8))),
        Err(RdmapError::OperationUnspecified.into())
    );
    assert_eq!(
        r.check_head(Some(Outstanding::Read)),
        Err(RdmapError::UnexpectedOpcode.into())
    );
    assert_eq!(
        r.check_head(None),
        Err(DdpError::UntaggedMsnNoBuffer.into())
    );
    assert_eq!(check_read_response_head(Some(Outstanding::Read)), Ok(()));
    assert_eq!(
        check_read_response_head(Some(Outstanding::Atomic(1))),
        Err(RdmapError::UnexpectedOpcode)
    );
    assert_eq!(
        check_read_response_head(None),
        Err(RdmapError::UnexpectedOpcode)
    );
}

#[test]
fn msn_queues_with_and_without_rfc7306() {
    let plain = ExpectedMsns::new();
    assert_eq!(plain, ExpectedMsns::with(Extensions::NONE));
    assert_eq!(plain.expected(3), None);
    assert_eq!(plain.check(3, 1), Err(DdpError::UntaggedInvalidQn));
    let mut m = ExpectedMsns::with(Extensions::RFC7306);
    for q in 0..4 {
        assert_eq!(m.check(q, 1), Ok(()));
    }
    assert_eq!(m.check(4, 1), Err(DdpError::UntaggedInvalidQn));
    // A Read Request and an Atomic Request share QN 1's sequence.
    m.advance(QN_READ_REQUEST);
    m.advance(QN_READ_REQUEST);
    assert_eq!(m.expected(QN_READ_REQUEST), Some(3));
    m.advance(QN_ATOMIC_RESPONSE);
    assert_eq!(m.expected(QN_ATOMIC_RESPONSE), Some(2));
    assert_eq!(
        m.check(QN_ATOMIC_RESPONSE, 1),
        Err(DdpError::UntaggedMsnRange)
    );
    assert_eq!(m.expected(QN_SEND), Some(1));
    let mut p = plain;
    p.advance(3);
    assert_eq!(p, plain, "no QN 3 without the extension");
}

#[test]
fn immediate_data_of_a_verbs_value() {
    // rsiw's mapping of the verbs' 32-bit imm_data: a big endian 64-bit
    // number, four zero octets first.
    assert_eq!(
        immediate_from_u32(0x1234_5678),
        [0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78]
    );
    assert_eq!(
        immediate_to_u32([0, 0, 0, 0, 0x12, 0x34, 0x56, 0x78]),
        0x1234_5678
    );
    // A peer's upper octets are dropped.
    assert_eq!(immediate_to_u32([0xff; 8]), u32::MAX);
    assert_eq!(immediate_to_u32([1, 2, 3, 4, 0, 0, 0, 9]), 9);
}

/// The masked FetchAdd of RFC 7306 section 5.1.1, bit by bit as the RFC's
/// pseudocode has it.
fn fetch_add_pseudocode(orig: u64, add: u64, mask: u64) -> u64 {
    let mut bit_location = 1u64;
    let mut carry = 0u64;
    let mut v = 0u64;
    for bit in 0..64 {
        if bit != 0 {
            bit_location <<= 1;
        }
        let val1 = (orig & bit_location) >> bit;
        let val2 = (add & bit_location) >> bit;
        let mut sum = carry + val1 + val2;
        carry = (sum & 2) >> 1;
        sum &= 1;
        if sum != 0 {
            v |= bit_location;
        }
        carry = u64::from(carry != 0 && mask & bit_location == 0);
    }
    v
}

#[test]
fn atomic_operations_worked_examples() {
    // Mask 0: a plain 64-bit addition, modulo 2^64.
    let fa = |add, mask| AtomicRequest::fetch_add(0, 0, 0, add, mask);
    assert_eq!(fa(1, 0).apply(41), Some(42));
    assert_eq!(fa(1, 0).apply(u64::MAX), Some(0));
    // Two 32-bit fields (tops at bits 31 and 63): no carry between them.
    let m = (1 << 63) | (1 << 31);
    assert_eq!(fa(1, m).apply(0x0000_0000_ffff_ffff), Some(0));
    assert_eq!(
        fa(0x1_0000_0001, m).apply(0x0000_0001_ffff_ffff),
        Some(2 << 32)
    );
    // CmpSwap: compare under the compare mask, swap under the swap mask.
    let cs = AtomicRequest::cmp_swap(0, 0, 0, 0xaaaa, 0xff00, 0x12_34, 0xff);
    assert_eq!(cs.apply(0x5634), Some(0xaa34), "low octet matches");
    assert_eq!(cs.apply(0x5635), Some(0x5635), "no match: unchanged");
}

fn arb_request() -> impl Strategy<Value = AtomicRequest> {
    (
        (
            0u32..1 << 28,
            0u8..16,
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
        ),
        (any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>()),
    )
        .prop_map(
            |((rsvd, aopcode, req_id, stag, to), (d, dm, c, cm))| AtomicRequest {
                rsvd,
                aopcode,
                req_id,
                stag,
                to,
                add_swap: d,
                add_swap_mask: dm,
                compare: c,
                compare_mask: cm,
            },
        )
}

fn arb_header() -> impl Strategy<Value = SegmentHeader> {
    prop_oneof![
        (any::<bool>(), any::<u32>(), any::<[u8; 8]>())
            .prop_map(|(se, msn, d)| SegmentHeader::immediate(se, msn, d)),
        (any::<u32>(), arb_request()).prop_map(|(msn, r)| SegmentHeader::atomic_request(msn, r)),
        (any::<u32>(), any::<u32>(), any::<u64>()).prop_map(|(msn, req_id, orig)| {
            SegmentHeader::atomic_response(msn, AtomicResponse { req_id, orig })
        }),
    ]
}

proptest! {
    #[test]
    fn immediate_u32_round_trip(v in any::<u32>(), hi in any::<u32>()) {
        prop_assert_eq!(immediate_to_u32(immediate_from_u32(v)), v);
        let mut d = immediate_from_u32(v);
        d[..4].copy_from_slice(&hi.to_be_bytes());
        prop_assert_eq!(immediate_to_u32(d), v);
    }

    #[test]
    fn fetch_add_is_the_rfc_pseudocode(o in any::<u64>(), a in any::<u64>(), m in any::<u64>()) {
        prop_assert_eq!(masked_add(o, a, m), fetch_add_pseudocode(o, a, m));
    }

    /// The verbs' unmasked operations as rsiw sends them: FetchAdd with
    /// add mask 0 is one 64-bit addition, CmpSwap with all-ones masks the
    /// plain compare and swap.
    #[test]
    fn unmasked_verbs_operations(o in any::<u64>(), a in any::<u64>(), c in any::<u64>(), same in any::<bool>()) {
        prop_assert_eq!(AtomicRequest::fetch_add(1, 2, 8, a, 0).apply(o), Some(o.wrapping_add(a)));
        let c = if same { o } else { c };
        let cs = AtomicRequest::cmp_swap(1, 2, 8, a, u64::MAX, c, u64::MAX);
        prop_assert_eq!(cs.apply(o), Some(if o == c { a } else { o }));
    }

    #[test]
    fn cmp_swap_is_the_rfc_pseudocode(r in arb_request(), o in any::<u64>()) {
        let r = AtomicRequest { aopcode: AtomicOp::CmpSwap as u8, ..r };
        let want = if (r.compare ^ o) & r.compare_mask == 0 {
            (o & !r.add_swap_mask) | (r.add_swap & r.add_swap_mask)
        } else {
            o
        };
        prop_assert_eq!(r.apply(o), Some(want));
    }

    #[test]
    fn headers_round_trip(h in arb_header()) {
        let (b, n) = h.to_bytes();
        prop_assert_eq!(n, h.len());
        prop_assert_eq!(SegmentHeader::parse_ext(&b[..n], Extensions::RFC7306), Ok(h));
        prop_assert_eq!(
            SegmentHeader::parse(&b[..n]),
            Err(RdmapError::UnexpectedOpcode.into())
        );
        let u = h.untagged_hdr().unwrap();
        prop_assert_eq!(Some(u.qn), h.opcode.queue());
        prop_assert_eq!((u.mo, u.ulp, h.ctrl.last()), (0, 0, true));
        let untagged = matches!(h.ddp, DdpHdr::Untagged(UntaggedHdr { .. }));
        prop_assert!(untagged);
    }

    #[test]
    fn bodies_round_trip(r in arb_request(), id in any::<u32>(), v in any::<u64>()) {
        let mut b = [0u8; ATOMIC_REQUEST_BODY_LEN];
        r.encode(&mut b).unwrap();
        prop_assert_eq!(AtomicRequest::decode(&b), Some(r));
        prop_assert_eq!(AtomicRequest::decode(&b[..51]), None);
        prop_assert_eq!(r.encode(&mut [0u8; 51]), None);
        let a = AtomicResponse { req_id: id, orig: v };
        let mut b = [0u8; ATOMIC_RESPONSE_BODY_LEN];
        a.encode(&mut b).unwrap();
        prop_assert_eq!(AtomicResponse::decode(&b), Some(a));
        prop_assert_eq!(AtomicResponse::decode(&b[..11]), None);
    }

    #[test]
    fn any_octets_parse_without_panic(
        op in 8u8..12,
        mut b in proptest::collection::vec(any::<u8>(), 0..80),
    ) {
        if b.len() > 1 {
            b[1] = (b[1] & 0xf0) | op;
        }
        for ext in [Extensions::NONE, Extensions::RFC7306] {
            if let Ok(h) = SegmentHeader::parse_ext(&b, ext) {
                prop_assert!(ext.rfc7306);
                prop_assert_eq!(&h.to_bytes().0[..h.len()], &b[..h.len()]);
            }
        }
    }
}
