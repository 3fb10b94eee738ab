// SPDX-License-Identifier: GPL-2.0

//! MPA markers (RFC 5044 section 5): a 4 octet marker (16 reserved zero
//! bits, 16 bit FPDUPTR) every 512 octets of the MPA stream, counted from
//! the first octet sent in MPA full operation mode (stream offset 0 carries
//! a marker). Stream offsets are `u32` and wrap like TCP sequence numbers;
//! 2^32 is a multiple of 512 so the marker grid survives the wrap.
//!
//! FPDUPTR is the number of octets from the FPDU's ULPDU_Length field back
//! to the marker. A marker that falls exactly between two FPDUs belongs to
//! the following FPDU, is covered by its CRC and carries FPDUPTR 0. A marker
//! falls "between" FPDUs only before the ULPDU_Length field: a marker that
//! would follow the last CRC octet belongs to the next FPDU.

/// Distance between markers in stream octets.
pub const MARKER_INTERVAL: u32 = 512;
/// Size of a marker in octets.
pub const MARKER_LEN: u32 = 4;
/// ULPDU octets between two markers inside one FPDU.
pub const MARKER_PAYLOAD_SPAN: u32 = MARKER_INTERVAL - MARKER_LEN;

/// Octets from `stream_off` to the next marker position (0 when a marker
/// starts at `stream_off`).
pub const fn octets_to_next_marker(stream_off: u32) -> u32 {
    (MARKER_INTERVAL - (stream_off % MARKER_INTERVAL)) % MARKER_INTERVAL
}

/// Whether a marker starts at `stream_off`.
pub const fn is_marker_position(stream_off: u32) -> bool {
    // MARKER_INTERVAL is a power of two.
    stream_off & (MARKER_INTERVAL - 1) == 0
}

/// Number of markers inserted into an FPDU with `content_len` octets of
/// ULPDU_Length + ULPDU + PAD + CRC starting at `stream_off`.
pub const fn markers_in_fpdu(stream_off: u32, content_len: u32) -> u32 {
    let d = octets_to_next_marker(stream_off);
    if content_len > d {
        1 + (content_len - d - 1) / MARKER_PAYLOAD_SPAN
    } else {
        0
    }
}

/// Encodes a marker.
pub const fn encode_marker(fpduptr: u16) -> [u8; 4] {
    let p = fpduptr.to_be_bytes();
    [0, 0, p[0], p[1]]
}

/// A decoded marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Marker {
    /// The 16 reserved bits (zero on transmit, ignored on receive).
    pub reserved: u16,
    /// Octets back from the marker to the FPDU's ULPDU_Length field.
    pub fpduptr: u16,
}

/// Decodes a marker.
pub const fn decode_marker(b: [u8; 4]) -> Marker {
    Marker {
        reserved: u16::from_be_bytes([b[0], b[1]]),
        fpduptr: u16::from_be_bytes([b[2], b[3]]),
    }
}

/// FPDUPTR for a marker at `marker_off` in an FPDU whose ULPDU_Length
/// field starts at `hdr_off` (`None` when the marker precedes the header,
/// which yields 0, or when the distance does not fit 16 bits).
pub const fn fpduptr(marker_off: u32, hdr_off: u32) -> Option<u16> {
    let d = marker_off.wrapping_sub(hdr_off);
    if d == 0u32.wrapping_sub(MARKER_LEN) {
        // Leading marker immediately before the header.
        Some(0)
    } else if d > u16::MAX as u32 {
        None
    } else {
        Some(d as u16)
    }
}

/// Iterator over the stream offsets of the markers of one FPDU.
#[derive(Clone, Debug)]
pub struct MarkerPositions {
    next: u32,
    left: u32,
}

impl MarkerPositions {
    /// Markers of the FPDU of `content_len` octets (without markers)
    /// starting at `stream_off`.
    pub const fn new(stream_off: u32, content_len: u32) -> Self {
        Self {
            next: stream_off.wrapping_add(octets_to_next_marker(stream_off)),
            left: markers_in_fpdu(stream_off, content_len),
        }
    }
}

impl Iterator for MarkerPositions {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let p = self.next;
        self.next = self.next.wrapping_add(MARKER_INTERVAL);
        Some(p)
    }
}
