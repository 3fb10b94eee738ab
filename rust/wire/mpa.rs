// SPDX-License-Identifier: GPL-2.0

//! MPA FPDU framing arithmetic (RFC 5044 section 4): an FPDU is
//! ULPDU_Length (u16 BE, counts only the ULPDU) + ULPDU + PAD (0..3 zero
//! octets aligning ULPDU_Length + ULPDU to 4) + CRC32C (4 octets, zero when
//! CRC is not negotiated), with markers inserted when negotiated.
//! Also the MULPDU computation from the EMSS (RFC 5044 section 7.1).

use crate::wire::markers;

/// Size of the ULPDU_Length field.
pub const MPA_HDR_LEN: u32 = 2;
/// Size of the CRC field.
pub const MPA_CRC_LEN: u32 = 4;
/// Maximum ULPDU_Length.
pub const MAX_ULPDU_LEN: u32 = u16::MAX as u32;

/// Payload cap of one FPDU towards a peer that takes FPDUs larger than a
/// TCP segment ([`crate::wire::connect::RES_LARGE_FPDU`]): a power of two,
/// so that messages of power-of-two sizes split into equal FPDUs, and
/// with any DDP/RDMAP header well below [`MAX_ULPDU_LEN`].
pub const LARGE_FPDU_PAYLOAD: u32 = 32 * 1024;

/// Negotiated MPA options of one direction of a connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MpaMode {
    /// Markers are inserted every 512 octets.
    pub markers: bool,
    /// The CRC field carries a CRC32C (otherwise it is sent as zero and
    /// ignored on receive).
    pub crc: bool,
}

impl MpaMode {
    /// All four marker/CRC combinations.
    pub const ALL: [MpaMode; 4] = [
        MpaMode {
            markers: false,
            crc: false,
        },
        MpaMode {
            markers: false,
            crc: true,
        },
        MpaMode {
            markers: true,
            crc: false,
        },
        MpaMode {
            markers: true,
            crc: true,
        },
    ];
}

/// PAD octets after a ULPDU of `ulpdu_len` octets.
pub const fn pad_len(ulpdu_len: u32) -> u32 {
    (4 - ((MPA_HDR_LEN + ulpdu_len) % 4)) % 4
}

/// FPDU octets without markers: ULPDU_Length + ULPDU + PAD + CRC.
pub const fn content_len(ulpdu_len: u32) -> u32 {
    MPA_HDR_LEN + ulpdu_len + pad_len(ulpdu_len) + MPA_CRC_LEN
}

/// Octets an FPDU occupies on the wire when it starts at `stream_off`.
pub const fn fpdu_wire_len(mode: MpaMode, stream_off: u32, ulpdu_len: u32) -> u32 {
    let c = content_len(ulpdu_len);
    if mode.markers {
        c + markers::MARKER_LEN * markers::markers_in_fpdu(stream_off, c)
    } else {
        c
    }
}

/// At most how many wire octets one FPDU takes in `mode`: a ULPDU of
/// [`MAX_ULPDU_LEN`] octets with its PAD and CRC, and the most markers an
/// FPDU of that length can hold wherever it starts (an upper bound: the
/// longest FPDUs with markers cannot be sent at all, their last marker's
/// FPDUPTR would not fit 16 bits). A receiver that must
/// have a whole FPDU queued before it takes any of it (with CRC, to check
/// the CRC first) has to be able to queue this much.
pub const fn max_fpdu_wire_len(mode: MpaMode) -> u32 {
    let mut most = 0;
    let mut off = 0;
    // The marker grid repeats every MARKER_INTERVAL octets.
    while off < markers::MARKER_INTERVAL {
        let w = fpdu_wire_len(mode, off, MAX_ULPDU_LEN);
        if w > most {
            most = w;
        }
        off += 1;
    }
    most
}

/// MULPDU for an EMSS (RFC 5044 section 7.1), the largest ULPDU an FPDU
/// may carry so that it fits one TCP segment wherever it starts:
/// `EMSS - (6 + 4 * ceil(EMSS / 512) + EMSS mod 4)` with markers,
/// `EMSS - (6 + EMSS mod 4)` without. Saturates at 0 and at 65535.
pub const fn mulpdu(emss: u32, markers: bool) -> u32 {
    let mut overhead = MPA_HDR_LEN + MPA_CRC_LEN + emss % 4;
    if markers {
        overhead += markers::MARKER_LEN * emss.div_ceil(markers::MARKER_INTERVAL);
    }
    let m = emss.saturating_sub(overhead);
    if m > MAX_ULPDU_LEN {
        MAX_ULPDU_LEN
    } else {
        m
    }
}

/// The largest ULPDU_Length whose FPDU, starting at `stream_off`, takes at
/// most `budget` wire octets (`None` when not even an empty ULPDU fits).
/// This is the exact, position dependent MULPDU used to pack FPDUs.
pub fn max_ulpdu_for_budget(mode: MpaMode, stream_off: u32, budget: u32) -> Option<u32> {
    if fpdu_wire_len(mode, stream_off, 0) > budget {
        return None;
    }
    let (mut lo, mut hi) = (0u32, MAX_ULPDU_LEN);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fpdu_wire_len(mode, stream_off, mid) <= budget {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(lo)
}
