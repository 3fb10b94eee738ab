// SPDX-License-Identifier: GPL-2.0

//! A second TERMINATE decoder, written from RFC 5040 section 4.8 (and the
//! DDP header layouts of RFC 5041 sections 4.2 and 4.3) without the wire
//! core: the scenarios' checks otherwise use rsiw-wire's own `hdr_ct()`
//! and `parse_term_copy`, so a misreading shared by rsiw and its test
//! would not show.
//!
//! The TERMINATE's RDMAP payload (after its 18 octet untagged DDP header):
//!
//! ```text
//!  octet 0: Layer (high nibble) | EType (low nibble)
//!  octet 1: Error Code
//!  octet 2: M (0x80) | D (0x40) | R (0x20) | reserved
//!  octet 3: reserved
//!  then, when any of M, D, R is set, the DDP Segment Length (2 octets,
//!  valid when M is set), the terminated DDP header when D is set (14
//!  octets if its T bit says tagged, else 18) and, when R is set, the
//!  terminated RDMAP header: the 28 octets of a Read Request.
//! ```

/// What the decoder found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    pub layer: u8,
    pub etype: u8,
    pub code: u8,
    pub m: bool,
    pub d: bool,
    pub r: bool,
    pub seg_len: Option<u16>,
    pub ddp_hdr: Vec<u8>,
    pub rdmap_hdr: Vec<u8>,
}

/// Untagged DDP header length (control, ULP field, QN, MSN, MO).
const UNTAGGED: usize = 18;
/// Tagged DDP header length (control, STag, TO).
const TAGGED: usize = 14;
/// RDMAP Read Request header length (sink STag, sink TO, size, source
/// STag, source TO).
const READ_REQ: usize = 28;
/// RDMAP opcode of a Read Request.
const OP_READ_REQUEST: u8 = 0x1;

/// Decodes the TERMINATE segment whose whole ULPDU (DDP header first) is
/// `ulpdu`; Err says what is inconsistent: R without the Read Request
/// header, copies shorter or longer than the bits say.
pub fn decode(ulpdu: &[u8]) -> Result<Decoded, String> {
    if ulpdu.len() < UNTAGGED + 4 {
        return Err(format!("TERMINATE of {} octets", ulpdu.len()));
    }
    let c = &ulpdu[UNTAGGED..UNTAGGED + 4];
    let mut d = Decoded {
        layer: c[0] >> 4,
        etype: c[0] & 0x0f,
        code: c[1],
        m: c[2] & 0x80 != 0,
        d: c[2] & 0x40 != 0,
        r: c[2] & 0x20 != 0,
        seg_len: None,
        ddp_hdr: Vec::new(),
        rdmap_hdr: Vec::new(),
    };
    let mut rest = &ulpdu[UNTAGGED + 4..];
    if !(d.m || d.d || d.r) {
        if !rest.is_empty() {
            return Err(format!(
                "M=D=R=0 but {} octets follow the control word",
                rest.len()
            ));
        }
        return Ok(d);
    }
    if rest.len() < 2 {
        return Err("HdrCt set but no DDP Segment Length field".into());
    }
    let sl = u16::from_be_bytes([rest[0], rest[1]]);
    if d.m {
        d.seg_len = Some(sl);
    }
    rest = &rest[2..];
    if d.d {
        let Some(&ctl) = rest.first() else {
            return Err("D set but no DDP header copied".into());
        };
        let n = if ctl & 0x80 != 0 { TAGGED } else { UNTAGGED };
        if rest.len() < n {
            return Err(format!(
                "D set, {} DDP header needs {n} octets, {} copied",
                if n == TAGGED { "tagged" } else { "untagged" },
                rest.len()
            ));
        }
        d.ddp_hdr = rest[..n].to_vec();
        rest = &rest[n..];
    }
    if d.r {
        if !d.d {
            return Err("R set without D (no DDP header to say what follows)".into());
        }
        let op = d.ddp_hdr[1] & 0x0f;
        if d.ddp_hdr[0] & 0x80 != 0 || op != OP_READ_REQUEST {
            return Err(format!(
                "R set but the copied DDP header is not a Read Request's (T={}, opcode {op:#x})",
                d.ddp_hdr[0] >> 7
            ));
        }
        if rest.len() < READ_REQ {
            return Err(format!(
                "R set but {} octets of the 28 octet Read Request header",
                rest.len()
            ));
        }
        d.rdmap_hdr = rest[..READ_REQ].to_vec();
        rest = &rest[READ_REQ..];
    } else if d.d
        && d.ddp_hdr[0] & 0x80 == 0
        && d.ddp_hdr[1] & 0x0f == OP_READ_REQUEST
        && rest.len() >= READ_REQ
    {
        return Err("a Read Request header follows the DDP header copy but R is clear".into());
    }
    if !rest.is_empty() {
        return Err(format!(
            "{} octets after the copies HdrCt announces",
            rest.len()
        ));
    }
    Ok(d)
}

/// Checks a decoded TERMINATE against the segment that caused it: the
/// DDP Segment Length (M) and the copies (D, R) are the offending
/// segment's. `hdrs` holds the candidate headers as sent (DDP header
/// first, the Read Request's 28 octets after an untagged header).
pub fn check_copy(d: &Decoded, hdrs: &[&[u8]], seg_len: u16) -> Result<(), String> {
    if let Some(l) = d.seg_len {
        if l != seg_len {
            return Err(format!("DDP Segment Length {l}, the segment had {seg_len}"));
        }
    }
    if d.d {
        let mut copied = d.ddp_hdr.clone();
        copied.extend_from_slice(&d.rdmap_hdr);
        if !hdrs.iter().any(|h| h.starts_with(&copied)) {
            return Err("copied headers are not the offending segment's".into());
        }
        // A Read Request's header copied without R (the 28 octets left
        // out) is allowed only when R is clear; with R, the whole header.
        if d.r && !hdrs.iter().any(|h| h.len() == copied.len()) {
            return Err("R set but the copy is not the whole Read Request header".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TERMINATE ULPDU by hand: untagged DDP header on QN 2 (opcode 7),
    /// then `rest`.
    fn term(rest: &[u8]) -> Vec<u8> {
        // DDP: T=0 L=1 DV=1 | RDMAP: RV=1 opcode 7; ULP 0; QN 2; MSN 1; MO 0
        let mut v = vec![0x41, 0x47, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0];
        v.extend_from_slice(rest);
        v
    }

    fn read_request_hdr() -> Vec<u8> {
        // DDP untagged, L=1, DV=1 | RV=1 opcode 1; QN 1, MSN 1, MO 0
        let mut v = vec![0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0];
        v.extend((1..=28).map(|i| i as u8));
        v
    }

    #[test]
    fn llp_error_without_copies() {
        // Layer 2 (LLP), EType 0, code 2 (CRC), no HdrCt.
        let d = decode(&term(&[0x20, 0x02, 0, 0])).unwrap();
        assert_eq!((d.layer, d.etype, d.code), (2, 0, 2));
        assert!(!d.m && !d.d && !d.r);
        assert!(decode(&term(&[0x20, 0x02, 0, 0, 0, 0])).is_err());
    }

    #[test]
    fn read_request_copy_with_r() {
        let h = read_request_hdr();
        let mut rest = vec![0x01, 0x02, 0xe0, 0];
        rest.extend_from_slice(&(h.len() as u16).to_be_bytes());
        rest.extend_from_slice(&h);
        let d = decode(&term(&rest)).unwrap();
        assert_eq!((d.layer, d.etype, d.code), (0, 1, 2));
        assert!(d.m && d.d && d.r);
        assert_eq!(d.rdmap_hdr, h[18..].to_vec());
        check_copy(&d, &[&h], h.len() as u16).unwrap();
        assert!(check_copy(&d, &[&h], 99).is_err());
        // R clear while the 28 octets follow.
        let mut bad = rest.clone();
        bad[2] = 0xc0;
        assert!(decode(&term(&bad)).is_err());
        // R set, 27 octets.
        let short = &rest[..rest.len() - 1];
        assert!(decode(&term(short)).is_err());
    }

    #[test]
    fn r_needs_a_read_request() {
        // R set over a copied Send header.
        let send = [0x41, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0];
        let mut rest = vec![0x01, 0x00, 0xe0, 0, 0, 34];
        rest.extend_from_slice(&send);
        rest.extend_from_slice(&[0; 28]);
        assert!(decode(&term(&rest)).is_err());
    }

    #[test]
    fn tagged_copy() {
        // Write header: T=1 L=1 DV=1 | RV=1 opcode 0; STag; TO.
        let w = [0xc1, 0x40, 0, 0, 0x11, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let mut rest = vec![0x11, 0x01, 0xc0, 0, 0, 78];
        rest.extend_from_slice(&w);
        let d = decode(&term(&rest)).unwrap();
        assert_eq!(d.ddp_hdr, w.to_vec());
        check_copy(&d, &[&w], 78).unwrap();
        let other = [0xc1, 0x40, 0, 0, 0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        assert!(check_copy(&d, &[&other], 78).is_err());
    }
}
