// SPDX-License-Identifier: GPL-2.0

//! End-to-end tests of the `iwarp` tool: `frame` golden output and
//! `decode` over synthetic pcap captures (Ethernet/IPv4, Linux cooked
//! capture/IPv6) with out-of-order and retransmitted TCP segments.

use std::io::Write;
use std::process::{Command, Stdio};

use rsiw_wire::connect::{encode_rr, FrameKind, IrdOrd, MpaRr};
use rsiw_wire::mpa::MpaMode;
use rsiw_wire::rdmap::{Opcode, ReadRequest, SegmentHeader};
use rsiw_wire::rfc7306::{AtomicRequest, AtomicResponse};
use rsiw_wire::tx::encode_fpdu;
use rsiw_wire::HostCrc32c;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iwarp"))
}

fn frame_cli(args: &[&str], input: &str) -> String {
    let mut c = bin()
        .arg("frame")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let o = c.wait_with_output().unwrap();
    assert!(o.status.success());
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

#[test]
fn frame_golden() {
    assert_eq!(
        frame_cli(&[], "11 22\n33"),
        "0003112233000000".to_string() + "00000000"
    );
    assert_eq!(frame_cli(&["--crc"], "112233"), "000311223300000075daf82c");
    assert_eq!(
        frame_cli(&["--markers", "--crc"], "deadbeef"),
        "000000000004deadbeef00009dd28182"
    );
    assert_eq!(
        frame_cli(
            &["--markers", "--crc", "--stream-offset", "510"],
            "deadbeef"
        ),
        "000400000002deadbeef00003a7c78a1"
    );
    assert_eq!(
        frame_cli(
            &["--markers", "--crc", "--stream-offset", "4294967294"],
            "deadbeef"
        ),
        "000400000002deadbeef00003a7c78a1"
    );
    assert_eq!(
        frame_cli(&["--markers", "--crc", "--stream-offset", "512"], "aabb"),
        "000000000002aabbd8d3c2d6"
    );
}

#[test]
fn frame_rejects_bad_hex() {
    let mut c = bin()
        .arg("frame")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(b"abc").unwrap();
    assert!(!c.wait_with_output().unwrap().status.success());
}

struct Pcap {
    frames: Vec<Vec<u8>>,
    linktype: u32,
}

impl Pcap {
    fn new(linktype: u32) -> Self {
        Self {
            frames: Vec::new(),
            linktype,
        }
    }

    /// Classic little endian pcap.
    fn pcap(&self) -> Vec<u8> {
        let mut buf = Vec::new();
        buf.extend_from_slice(&0xa1b2c3d4u32.to_le_bytes());
        buf.extend_from_slice(&2u16.to_le_bytes());
        buf.extend_from_slice(&4u16.to_le_bytes());
        buf.extend_from_slice(&[0; 8]);
        buf.extend_from_slice(&65535u32.to_le_bytes());
        buf.extend_from_slice(&self.linktype.to_le_bytes());
        for f in &self.frames {
            buf.extend_from_slice(&[0; 8]);
            buf.extend_from_slice(&(f.len() as u32).to_le_bytes());
            buf.extend_from_slice(&(f.len() as u32).to_le_bytes());
            buf.extend_from_slice(f);
        }
        buf
    }

    /// Big endian pcapng (SHB, IDB, EPBs).
    fn pcapng(&self) -> Vec<u8> {
        let mut b = Vec::new();
        let u32be = |b: &mut Vec<u8>, v: u32| b.extend_from_slice(&v.to_be_bytes());
        u32be(&mut b, 0x0a0d0d0a);
        u32be(&mut b, 28);
        u32be(&mut b, 0x1a2b3c4d);
        b.extend_from_slice(&[0, 1, 0, 0]);
        b.extend_from_slice(&[0xff; 8]);
        u32be(&mut b, 28);
        u32be(&mut b, 1);
        u32be(&mut b, 20);
        b.extend_from_slice(&(self.linktype as u16).to_be_bytes());
        b.extend_from_slice(&[0, 0]);
        u32be(&mut b, 65535);
        u32be(&mut b, 20);
        for f in &self.frames {
            let padded = f.len().div_ceil(4) * 4;
            let len = 32 + padded as u32;
            u32be(&mut b, 6);
            u32be(&mut b, len);
            u32be(&mut b, 0);
            u32be(&mut b, 0);
            u32be(&mut b, 0);
            u32be(&mut b, f.len() as u32);
            u32be(&mut b, f.len() as u32);
            b.extend_from_slice(f);
            b.resize(b.len() + padded - f.len(), 0);
            u32be(&mut b, len);
        }
        b
    }

    fn tcp(&mut self, v6: bool, from_client: bool, seq: u32, syn: bool, payload: &[u8]) {
        let (sp, dp) = if from_client {
            (40000u16, 5000u16)
        } else {
            (5000, 40000)
        };
        let mut tcp = Vec::new();
        tcp.extend_from_slice(&sp.to_be_bytes());
        tcp.extend_from_slice(&dp.to_be_bytes());
        tcp.extend_from_slice(&seq.to_be_bytes());
        tcp.extend_from_slice(&0u32.to_be_bytes());
        tcp.push(5 << 4);
        tcp.push(if syn { 0x02 } else { 0x18 });
        tcp.extend_from_slice(&[0xff, 0xff, 0, 0, 0, 0]);
        tcp.extend_from_slice(payload);
        let (a, b) = if from_client { (1u8, 2u8) } else { (2, 1) };
        let mut ip = Vec::new();
        if v6 {
            ip.extend_from_slice(&[0x60, 0, 0, 0]);
            ip.extend_from_slice(&(tcp.len() as u16).to_be_bytes());
            ip.extend_from_slice(&[6, 64]);
            let mut s = [0u8; 16];
            s[0] = 0xfd;
            s[15] = a;
            let mut d = s;
            d[15] = b;
            ip.extend_from_slice(&s);
            ip.extend_from_slice(&d);
        } else {
            ip.extend_from_slice(&[0x45, 0]);
            ip.extend_from_slice(&((20 + tcp.len()) as u16).to_be_bytes());
            ip.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, a, 10, 0, 0, b]);
        }
        ip.extend_from_slice(&tcp);
        let et: u16 = if v6 { 0x86dd } else { 0x0800 };
        let mut frame = Vec::new();
        if self.linktype == 1 {
            frame.extend_from_slice(&[2, 0, 0, 0, 0, b, 2, 0, 0, 0, 0, a]);
            // One VLAN tag for good measure.
            frame.extend_from_slice(&0x8100u16.to_be_bytes());
            frame.extend_from_slice(&[0, 5]);
            frame.extend_from_slice(&et.to_be_bytes());
        } else {
            // Linux cooked capture v1.
            frame.extend_from_slice(&[0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, a, 0, 0]);
            frame.extend_from_slice(&et.to_be_bytes());
        }
        frame.extend_from_slice(&ip);
        self.frames.push(frame);
    }
}

fn fpdus(mode: MpaMode, hdrs: &[(SegmentHeader, usize)]) -> Vec<u8> {
    let mut s = Vec::new();
    let mut off = 0u32;
    for (h, pl) in hdrs {
        let (b, n) = h.to_bytes();
        let payload: Vec<u8> = (0..*pl).map(|i| i as u8).collect();
        let mut out = vec![0u8; 70000];
        let w = encode_fpdu(
            mode,
            off,
            &b[..n],
            &payload,
            &mut HostCrc32c::new(),
            &mut out,
        )
        .unwrap();
        s.extend_from_slice(&out[..w]);
        off = off.wrapping_add(w as u32);
    }
    s
}

/// Client asks for CRC (rev 2, IRD/ORD); server requires markers on the
/// stream it receives. Returns (client stream, server stream).
fn conversation() -> (Vec<u8>, Vec<u8>) {
    let mut req = MpaRr::new(FrameKind::Request, 2, 0);
    req.crc = true;
    let io = IrdOrd {
        ird: 8,
        ord: 8,
        peer_to_peer: true,
        read_rtr: true,
        ..IrdOrd::default()
    };
    let mut out = [0u8; 600];
    let n = encode_rr(req, Some(io), b"hello", &mut out).unwrap();
    let mut c = out[..n].to_vec();
    let mut rep = MpaRr::new(FrameKind::Reply, 2, 0);
    rep.markers = true;
    rep.crc = true;
    let n = encode_rr(
        rep,
        Some(IrdOrd {
            ird: 8,
            ord: 8,
            read_rtr: true,
            ..io
        }),
        b"",
        &mut out,
    )
    .unwrap();
    let mut s = out[..n].to_vec();
    let rr = ReadRequest {
        sink_stag: 0x10,
        sink_to: 0x1000,
        size: 700,
        src_stag: 0x20,
        src_to: 0,
    };
    c.extend(fpdus(
        MpaMode {
            markers: true,
            crc: true,
        },
        &[
            (SegmentHeader::read_request(0, rr), 0),
            (SegmentHeader::send(Opcode::Send, 0, 1, 0, true), 1000),
            (SegmentHeader::write(0x30, 0x4000, true), 64),
        ],
    ));
    s.extend(fpdus(
        MpaMode {
            markers: false,
            crc: true,
        },
        &[
            (SegmentHeader::read_response(0x10, 0x1000, false), 500),
            (SegmentHeader::read_response(0x10, 0x1000 + 500, true), 200),
        ],
    ));
    (c, s)
}

fn write_capture(linktype: u32, v6: bool, corrupt: bool) -> std::path::PathBuf {
    write_capture_fmt(linktype, v6, corrupt, false)
}

fn write_capture_fmt(linktype: u32, v6: bool, corrupt: bool, ng: bool) -> std::path::PathBuf {
    let (mut c, s) = conversation();
    if corrupt {
        let n = c.len();
        c[n - 10] ^= 0xff;
    }
    let mut p = Pcap::new(linktype);
    p.tcp(v6, true, 1000, true, &[]);
    p.tcp(v6, false, 7000, true, &[]);
    let cut = |d: &[u8], at: usize| d.len().min(at);
    // Client data in 3 segments: send the 2nd before the 1st, retransmit 1st.
    let a = cut(&c, 30);
    let b = cut(&c, 700);
    p.tcp(v6, true, 1001 + a as u32, false, &c[a..b]);
    p.tcp(v6, true, 1001, false, &c[..a]);
    p.tcp(v6, false, 7001, false, &s);
    p.tcp(v6, true, 1001, false, &c[..a]);
    p.tcp(v6, true, 1001 + b as u32, false, &c[b..]);
    let path = std::env::temp_dir().join(format!(
        "iwarp-test-{}-{linktype}-{v6}-{corrupt}-{ng}.pcap",
        std::process::id()
    ));
    std::fs::write(&path, if ng { p.pcapng() } else { p.pcap() }).unwrap();
    path
}

fn decode(args: &[&str], path: &std::path::Path) -> String {
    let o = bin().arg("decode").args(args).arg(path).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn decode_ethernet_ipv4_pcap() {
    let path = write_capture(1, false, false);
    let out = decode(&[], &path);
    println!("{out}");
    assert!(out.contains("CONN 10.0.0.1:40000 -> 10.0.0.2:5000"));
    assert!(out.contains("MPA Request rev=2 M=0 C=1 R=0 E=1 pd_len=9 ird=8 ord=8 p2p=1"));
    assert!(out.contains("MPA Reply rev=2 M=1 C=1"));
    assert!(out.contains("[10.0.0.1:40000 -> 10.0.0.2:5000] MPA mode markers=1 crc=1"));
    assert!(out.contains("[10.0.0.2:5000 -> 10.0.0.1:40000] MPA mode markers=0 crc=1"));
    assert!(out.contains("MARKER off=0 fpduptr=0"));
    assert!(out.contains("MARKER off=512 fpduptr="));
    assert!(out.contains("op=RDMA_READ_REQ payload_len=0 sink_stag=0x00000010"));
    assert!(out.contains("op=SEND payload_len=1000"));
    assert!(out.contains("op=RDMA_WRITE payload_len=64"));
    assert!(out.contains("op=RDMA_READ_RESP payload_len=500"));
    assert_eq!(out.matches("CRC ok").count(), 5);
    assert!(!out.contains("ERROR"));
    assert!(!out.contains("GAP"));
    std::fs::remove_file(path).ok();
}

#[test]
fn decode_cooked_ipv6_pcap_with_bad_crc() {
    let path = write_capture(113, true, true);
    let out = decode(&[], &path);
    println!("{out}");
    assert!(out.contains("CONN [fd00::1]:40000 -> [fd00::2]:5000"));
    assert!(out.contains("CRC BAD"));
    assert!(out.contains("ERROR MPA: received CRC does not match"));
    assert!(out.contains("layer=2 etype=0 code=0x02"));
    std::fs::remove_file(path).ok();
}

#[test]
fn decode_hex_payload() {
    let s = fpdus(
        MpaMode {
            markers: false,
            crc: false,
        },
        &[(
            SegmentHeader::send(Opcode::SendInvalidate, 0xabcd, 3, 0, true),
            5,
        )],
    );
    let hex: String = s.iter().map(|b| format!("{b:02x} ")).collect();
    let path = std::env::temp_dir().join(format!("iwarp-test-{}.hex", std::process::id()));
    std::fs::write(&path, hex).unwrap();
    let out = decode(&["--hex"], &path);
    println!("{out}");
    assert!(out.contains("FPDU off=0 ulpdu_len=23 pad=3"));
    assert!(out.contains("DDP T=0 L=1 DV=1 qn=0 msn=3 mo=0 RDMAP RV=1 op=SEND_INV"));
    assert!(out.contains("op=SEND_INV payload_len=5 inval_stag=0x0000abcd"));
    assert!(out.contains("CRC not-checked"));
    // Wrong mode flags produce a typed error.
    let out = decode(&["--hex", "--markers"], &path);
    assert!(out.contains("ERROR"));
    std::fs::remove_file(path).ok();
}

/// RFC 7306 messages framed by `rsiw-wire` are decoded by both decoders
/// of `iwarp decode`, which agree on every field.
#[test]
fn decode_rfc7306_messages() {
    let s = fpdus(
        MpaMode {
            markers: true,
            crc: true,
        },
        &[
            (SegmentHeader::immediate(false, 1, *b"rsiw7306"), 0),
            (SegmentHeader::immediate(true, 2, [0xff; 8]), 0),
            (
                SegmentHeader::atomic_request(
                    1,
                    AtomicRequest::fetch_add(7, 0x0102_0304, 0x1000, 5, 0),
                ),
                0,
            ),
            (
                SegmentHeader::atomic_request(
                    2,
                    AtomicRequest::cmp_swap(8, 0x0102_0304, 0x1008, 9, !0, 3, !0),
                ),
                0,
            ),
            (
                SegmentHeader::atomic_response(
                    1,
                    AtomicResponse {
                        req_id: 7,
                        orig: 0x1234,
                    },
                ),
                0,
            ),
        ],
    );
    let hex: String = s.iter().map(|b| format!("{b:02x} ")).collect();
    let path = std::env::temp_dir().join(format!("iwarp-7306-{}.hex", std::process::id()));
    std::fs::write(&path, hex).unwrap();
    let out = decode(&["--hex", "--markers", "--crc"], &path);
    println!("{out}");
    assert!(!out.contains("MISMATCH"), "{out}");
    assert!(!out.contains("PROBLEMS"), "{out}");
    assert!(!out.contains("ERROR"), "{out}");
    assert!(out.contains("op=IMMEDIATE_DATA payload_len=0 | RFC7306 qn=0 msn=1 mo=0 L=1 ImmediateData data=7273697737333036"));
    assert!(out.contains("op=IMMEDIATE_DATA_SE"));
    assert!(out.contains("AtomicRequest aopcode=0 (FetchAdd) req_id=0x00000007"));
    assert!(out.contains("AtomicRequest aopcode=2 (CmpSwap) req_id=0x00000008"));
    assert!(out.contains("AtomicResponse req_id=0x00000007 original=0x0000000000001234"));
    assert!(out.contains("END fpdus=5"));
    std::fs::remove_file(path).ok();
}

#[test]
fn decode_pcapng() {
    let path = write_capture_fmt(1, false, false, true);
    let out = decode(&[], &path);
    assert!(out.contains("MPA Request rev=2"));
    assert_eq!(out.matches("CRC ok").count(), 5);
    assert!(!out.contains("ERROR"));
    std::fs::remove_file(path).ok();
}

/// A real capture: rping between two upstream siw devices (veth pair in a
/// guest, rev 2 MPA, no CRC). Every frame must decode: the MPA exchange,
/// Send, Read Request/Response and Write segments, no errors.
#[test]
fn decode_upstream_siw_capture() {
    let pcap = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/siw-rping.pcapng"
    );
    let o = bin().args(["decode", pcap]).output().unwrap();
    assert!(o.status.success());
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(out.matches("MPA Request rev=2").count(), 1);
    assert_eq!(out.matches("MPA Reply rev=2").count(), 1);
    for op in [
        "op=SEND",
        "op=RDMA_READ_REQ",
        "op=RDMA_READ_RESP",
        "op=RDMA_WRITE",
    ] {
        assert!(out.contains(op), "no {op} in the capture");
    }
    let lower = out.to_lowercase();
    for bad in ["error", "mismatch", "malformed", "invalid"] {
        assert!(!lower.contains(bad), "decode reported {bad}:\n{out}");
    }
}
