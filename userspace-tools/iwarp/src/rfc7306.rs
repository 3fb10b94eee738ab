// SPDX-License-Identifier: GPL-2.0

//! An independent decoder of the RFC 7306 messages (Immediate Data,
//! Immediate Data with SE, Atomic Request, Atomic Response), written from
//! the RFC text alone: it uses nothing of `rsiw-wire`, so that `iwarp
//! decode` can cross-check the wire core's parse of these messages.
//!
//! A DDP segment of these messages (RFC 7306 Appendix A, RFC 5041 section
//! 4 and RFC 5040 section 4) is, in network byte order:
//!
//! ```text
//! octet 0      T(bit 0) L(bit 1) reserved(bits 2-5) DV(bits 6-7)
//! octet 1      RV(bits 0-1) reserved(bits 2-3) RDMA opcode(bits 4-7)
//! octets 2-5   Invalidate STag (zero when sent, ignored: section 4.1)
//! octets 6-9   Queue Number
//! octets 10-13 Message Sequence Number
//! octets 14-17 Message Offset
//! octets 18-   the RDMAP header of the message:
//!   Immediate Data (opcode 1000b, 1001b with SE; QN 0): 8 octets
//!   Atomic Request (1010b; QN 1): reserved 28 bits + AOpCode 4 bits,
//!     Request Identifier 32, Remote STag 32, Remote Tagged Offset 64,
//!     Add or Swap Data 64, Add or Swap Mask 64, Compare Data 64,
//!     Compare Mask 64 (52 octets, Figure 4)
//!   Atomic Response (1011b; QN 3): Original Request Identifier 32,
//!     Original Remote Data Value 64 (12 octets, Figure 6)
//! ```
//!
//! No ULP payload follows any of them (Figure 3).

use std::fmt::Write as _;

/// What one RFC 7306 segment carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    /// Immediate Data (`se`: with Solicited Event).
    Immediate {
        /// Immediate Data with Solicited Event.
        se: bool,
        /// The 8 octets.
        data: [u8; 8],
    },
    /// Atomic Request.
    AtomicRequest {
        /// The 28 reserved bits.
        reserved: u32,
        /// AOpCode (0 FetchAdd, 2 CmpSwap; 1 reserved).
        aopcode: u8,
        /// Request Identifier.
        request_id: u32,
        /// Remote STag.
        remote_stag: u32,
        /// Remote Tagged Offset.
        remote_to: u64,
        /// Add or Swap Data.
        add_or_swap: u64,
        /// Add or Swap Mask.
        add_or_swap_mask: u64,
        /// Compare Data.
        compare: u64,
        /// Compare Mask.
        compare_mask: u64,
    },
    /// Atomic Response.
    AtomicResponse {
        /// Original Request Identifier.
        request_id: u32,
        /// Original Remote Data Value.
        original: u64,
    },
}

/// A decoded RFC 7306 segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// L: last segment of the message.
    pub last: bool,
    /// DDP version (DV).
    pub dv: u8,
    /// RDMA version (RV).
    pub rv: u8,
    /// Invalidate STag field.
    pub inval_stag: u32,
    /// Queue Number.
    pub qn: u32,
    /// Message Sequence Number.
    pub msn: u32,
    /// Message Offset.
    pub mo: u32,
    /// The message's RDMAP header.
    pub body: Body,
    /// Octets after the RDMAP header (none allowed).
    pub extra: usize,
}

/// Why octets are not an RFC 7306 segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotDecoded {
    /// The RDMA opcode is not one of RFC 7306 (0x8 to 0xB).
    OtherOpcode(u8),
    /// The T bit is set: RFC 7306 messages are untagged.
    Tagged,
    /// Fewer octets than the headers need.
    Short {
        /// Octets needed.
        need: usize,
        /// Octets there.
        have: usize,
    },
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    (u64::from(u32_at(b, at)) << 32) | u64::from(u32_at(b, at + 4))
}

/// The RDMAP header length and queue number RFC 7306 gives an opcode
/// (Figure 2, sections 5.2.1, 5.2.2, 6.2).
fn shape(opcode: u8) -> Option<(usize, u32)> {
    match opcode {
        0x8 | 0x9 => Some((8, 0)),
        0xA => Some((52, 1)),
        0xB => Some((12, 3)),
        _ => None,
    }
}

/// Decodes a segment (`b` starts at the DDP control field and ends with
/// the ULPDU).
pub fn decode(b: &[u8]) -> Result<Segment, NotDecoded> {
    if b.len() < 2 {
        return Err(NotDecoded::Short {
            need: 2,
            have: b.len(),
        });
    }
    let opcode = b[1] & 0x0f;
    let (body_len, _) = shape(opcode).ok_or(NotDecoded::OtherOpcode(opcode))?;
    if b[0] & 0x80 != 0 {
        return Err(NotDecoded::Tagged);
    }
    let need = 18 + body_len;
    if b.len() < need {
        return Err(NotDecoded::Short {
            need,
            have: b.len(),
        });
    }
    let r = &b[18..];
    let body = match opcode {
        0x8 | 0x9 => {
            let mut data = [0u8; 8];
            data.copy_from_slice(&r[..8]);
            Body::Immediate {
                se: opcode == 0x9,
                data,
            }
        }
        0xA => {
            let w = u32_at(r, 0);
            Body::AtomicRequest {
                reserved: w >> 4,
                aopcode: (w & 0xf) as u8,
                request_id: u32_at(r, 4),
                remote_stag: u32_at(r, 8),
                remote_to: u64_at(r, 12),
                add_or_swap: u64_at(r, 20),
                add_or_swap_mask: u64_at(r, 28),
                compare: u64_at(r, 36),
                compare_mask: u64_at(r, 44),
            }
        }
        _ => Body::AtomicResponse {
            request_id: u32_at(r, 0),
            original: u64_at(r, 4),
        },
    };
    Ok(Segment {
        last: b[0] & 0x40 != 0,
        dv: b[0] & 0x03,
        rv: b[1] >> 6,
        inval_stag: u32_at(b, 2),
        qn: u32_at(b, 6),
        msn: u32_at(b, 10),
        mo: u32_at(b, 14),
        body,
        extra: b.len() - need,
    })
}

impl Segment {
    /// The RFC 7306 opcode of the segment.
    pub fn opcode(&self) -> u8 {
        match self.body {
            Body::Immediate { se: false, .. } => 0x8,
            Body::Immediate { se: true, .. } => 0x9,
            Body::AtomicRequest { .. } => 0xA,
            Body::AtomicResponse { .. } => 0xB,
        }
    }

    /// What the RFC's rules say is wrong with the segment (empty when
    /// nothing): versions (RFC 5040/5041: 1), the queue of its opcode
    /// (Figure 2), one segment at MO 0 with nothing after its header
    /// (sections 4.2, 5.2.1, 5.2.2, 6.3), a defined AOpCode (Figure 5)
    /// and an 8-octet aligned tagged offset (sections 5.1, 8.2: strictly
    /// the ULP buffer address must be aligned, which equals the offset
    /// for address based STags).
    pub fn problems(&self) -> Vec<String> {
        let mut p = Vec::new();
        if self.dv != 1 {
            p.push(format!("DDP version {}", self.dv));
        }
        if self.rv != 1 {
            p.push(format!("RDMA version {}", self.rv));
        }
        let (_, qn) = shape(self.opcode()).unwrap_or((0, 0));
        if self.qn != qn {
            p.push(format!("QN {} (the RFC says {qn})", self.qn));
        }
        if self.mo != 0 {
            p.push(format!("MO {} (one segment: 0)", self.mo));
        }
        if !self.last {
            p.push("L clear (one segment)".into());
        }
        if self.extra != 0 {
            p.push(format!("{} octets after the header", self.extra));
        }
        if let Body::AtomicRequest {
            aopcode, remote_to, ..
        } = self.body
        {
            if aopcode != 0 && aopcode != 2 {
                p.push(format!("AOpCode {aopcode} undefined"));
            }
            if remote_to % 8 != 0 {
                p.push(format!("tagged offset {remote_to:#x} not 8-octet aligned"));
            }
        }
        p
    }

    /// One line of text: the fields and, if any, the problems.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "RFC7306 qn={} msn={} mo={} L={}",
            self.qn,
            self.msn,
            self.mo,
            u8::from(self.last)
        );
        match self.body {
            Body::Immediate { se, data } => {
                let name = if se {
                    "ImmediateDataSE"
                } else {
                    "ImmediateData"
                };
                let _ = write!(s, " {name} data=");
                for x in data {
                    let _ = write!(s, "{x:02x}");
                }
            }
            Body::AtomicRequest {
                aopcode,
                request_id,
                remote_stag,
                remote_to,
                add_or_swap,
                add_or_swap_mask,
                compare,
                compare_mask,
                ..
            } => {
                let op = match aopcode {
                    0 => "FetchAdd",
                    2 => "CmpSwap",
                    _ => "undefined",
                };
                let _ = write!(
                    s,
                    " AtomicRequest aopcode={aopcode} ({op}) req_id={request_id:#010x} \
                     stag={remote_stag:#010x} to={remote_to:#018x} data={add_or_swap:#018x} \
                     mask={add_or_swap_mask:#018x} compare={compare:#018x} \
                     compare_mask={compare_mask:#018x}"
                );
            }
            Body::AtomicResponse {
                request_id,
                original,
            } => {
                let _ = write!(
                    s,
                    " AtomicResponse req_id={request_id:#010x} original={original:#018x}"
                );
            }
        }
        let p = self.problems();
        if !p.is_empty() {
            let _ = write!(s, " PROBLEMS: {}", p.join("; "));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    //! The golden vectors, written out octet by octet from RFC 7306
    //! Figures 1, 2, 4, 6, 7 and Appendix A (the same octets as
    //! `rust/wire/tests/rfc7306.rs`, typed in again, not shared).
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

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

    #[test]
    fn immediate_data() {
        let s = decode(&hex(IMM)).unwrap();
        assert_eq!(
            s,
            Segment {
                last: true,
                dv: 1,
                rv: 1,
                inval_stag: 0,
                qn: 0,
                msn: 5,
                mo: 0,
                body: Body::Immediate {
                    se: false,
                    data: [1, 2, 3, 4, 5, 6, 7, 8]
                },
                extra: 0,
            }
        );
        assert!(s.problems().is_empty());
        let s = decode(&hex(IMM_SE)).unwrap();
        assert_eq!(s.opcode(), 0x9);
        assert_eq!(s.msn, 1);
        assert_eq!(
            s.body,
            Body::Immediate {
                se: true,
                data: [0xde, 0xad, 0xbe, 0xef, 0xca, 0xfe, 0xf0, 0x0d]
            }
        );
    }

    #[test]
    fn atomic_requests() {
        let s = decode(&hex(FETCH_ADD)).unwrap();
        assert_eq!((s.qn, s.msn, s.mo, s.last), (1, 2, 0, true));
        assert_eq!(
            s.body,
            Body::AtomicRequest {
                reserved: 0,
                aopcode: 0,
                request_id: 0x1122_3344,
                remote_stag: 0x00ab_cdef,
                remote_to: 0x7f00_1234_5678,
                add_or_swap: 1,
                add_or_swap_mask: 0,
                compare: 0,
                compare_mask: u64::MAX,
            }
        );
        assert!(s.problems().is_empty(), "{:?}", s.problems());
        let s = decode(&hex(CMP_SWAP)).unwrap();
        assert_eq!(s.msn, 3);
        assert_eq!(
            s.body,
            Body::AtomicRequest {
                reserved: 0,
                aopcode: 2,
                request_id: 0xfeed_face,
                remote_stag: 0x1234_5678,
                remote_to: 0x1000,
                add_or_swap: 0xaaaa_aaaa_5555_5555,
                add_or_swap_mask: 0xffff_ffff_0000_0000,
                compare: 0x0123_4567_89ab_cdef,
                compare_mask: 0x0000_0000_ffff_ffff,
            }
        );
        assert!(s.describe().contains("CmpSwap"));
    }

    #[test]
    fn atomic_response() {
        let s = decode(&hex(RESP)).unwrap();
        assert_eq!((s.qn, s.msn), (3, 1));
        assert_eq!(
            s.body,
            Body::AtomicResponse {
                request_id: 0x1122_3344,
                original: 41
            }
        );
        assert!(s.problems().is_empty());
    }

    #[test]
    fn problems_found() {
        // Atomic Request on QN 3, MO 4, L clear, AOpCode 1, TO 0x1004,
        // one octet too many.
        let mut b = hex(CMP_SWAP);
        b[0] = 0x01;
        b[9] = 3;
        b[17] = 4;
        b[21] = 1;
        b[18 + 19] = 0x04;
        b.push(0);
        let s = decode(&b).unwrap();
        let p = s.problems().join("|");
        for w in [
            "QN 3",
            "MO 4",
            "L clear",
            "AOpCode 1",
            "not 8-octet aligned",
            "1 octets",
        ] {
            assert!(p.contains(w), "{w} missing from {p}");
        }
    }

    #[test]
    fn not_rfc7306() {
        assert_eq!(decode(&hex("4143")), Err(NotDecoded::OtherOpcode(3)));
        assert_eq!(decode(&hex("c14a")), Err(NotDecoded::Tagged));
        let b = hex(RESP);
        assert_eq!(
            decode(&b[..29]),
            Err(NotDecoded::Short { need: 30, have: 29 })
        );
        assert_eq!(decode(&[0x41]), Err(NotDecoded::Short { need: 2, have: 1 }));
    }
}
