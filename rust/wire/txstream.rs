// SPDX-License-Identifier: GPL-2.0

//! A transmit stream across send calls: how large a connection's FPDUs
//! and send calls are ([`TxLimits`]), which FPDUs of a message the next
//! send call carries under that call's limits ([`BatchPlanner`]), and
//! what the octets a send call took mean for the stream ([`TxPos`],
//! [`Taken`]).
//!
//! A transport may take only part of a batch (a full TCP send buffer).
//! The position then stays where the batch started and records how much
//! of it was taken: the next call plans the batch again from the same
//! position, which gives the same octets (planning is a pure function of
//! the position, the limits and the caps), and [`skip_taken`] drops what
//! went out already. Only when the whole batch was taken does the
//! position move on, and [`Taken::Message`] says that the message's last
//! octet went out (its work request may complete).

use crate::wire::markers::MARKER_PAYLOAD_SPAN;
use crate::wire::mpa::{MpaMode, LARGE_FPDU_PAYLOAD, MAX_ULPDU_LEN};
use crate::wire::tx::{FpduPlan, Segment, Segmenter, TxBatch};

/// Largest number of octets handed to the transport in one send call.
pub const BATCH_BUDGET: u32 = 64 * 1024;
/// The same towards a peer that takes large FPDUs: two full FPDUs of
/// [`LARGE_FPDU_PAYLOAD`] with their headers, PAD and CRC.
pub const LARGE_BATCH_BUDGET: u32 = 2 * (LARGE_FPDU_PAYLOAD + 64);
/// Payload cap per FPDU with markers (each marker may split the payload);
/// the planner lowers it further where a message's buffers need it.
pub const MARKER_FPDU_PAYLOAD: u32 = 8 * MARKER_PAYLOAD_SPAN;

/// What sizes the FPDUs and send calls of one direction of a connection,
/// as negotiated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxLimits {
    /// Markers and CRC of the FPDUs sent.
    pub mode: MpaMode,
    /// Largest ULPDU of one FPDU (from the connection's EMSS).
    pub mulpdu: u32,
    /// `Some(cap)`: the peer takes FPDUs larger than a TCP segment. FPDUs
    /// carry up to `cap` payload octets (e.g. [`LARGE_FPDU_PAYLOAD`])
    /// whatever `mulpdu` says, and a send call never cuts one short.
    pub large_fpdu: Option<u32>,
}

impl TxLimits {
    /// The largest payload of one FPDU of a segment with a header of
    /// `hdr_len` octets (at least one octet).
    pub fn max_payload(&self, hdr_len: usize) -> u32 {
        let max = if let Some(cap) = self.large_fpdu {
            cap.min(MAX_ULPDU_LEN.saturating_sub(hdr_len as u32)).max(1)
        } else {
            self.mulpdu
                .min(MAX_ULPDU_LEN)
                .saturating_sub(hdr_len as u32)
                .max(1)
        };
        if self.mode.markers {
            max.min(MARKER_FPDU_PAYLOAD)
        } else {
            max
        }
    }

    /// Octets of one send call at most ([`LARGE_BATCH_BUDGET`] holds an
    /// FPDU of any payload cap).
    pub fn budget(&self) -> u32 {
        match self.large_fpdu {
            Some(_) => LARGE_BATCH_BUDGET,
            None => BATCH_BUDGET,
        }
    }
}

/// What one send call can carry besides its budget in octets: the
/// sender hands the transport a list of pieces (I/O vectors), some of
/// them octets it writes itself into a scratch area (ULPDU_Length,
/// headers, markers, PAD, CRC), the others payload where it lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallCaps {
    /// Pieces of one send call.
    pub pieces: usize,
    /// Scratch octets of one send call.
    pub scratch: usize,
    /// Payload is handed over in pieces of at most `1 << payload_shift`
    /// octets (a page), each buffer of the message possibly starting
    /// and ending within one.
    pub payload_shift: u32,
}

impl CallCaps {
    /// Pieces an FPDU of `payload` octets from `sges` buffers with
    /// `markers` markers may take at most: ULPDU_Length with the header,
    /// PAD with the CRC, a marker with the piece it splits, and the
    /// payload's pieces.
    fn fpdu_pieces(&self, payload: u32, markers: u32, sges: usize) -> usize {
        4 + 2 * markers as usize + (payload as usize >> self.payload_shift) + 2 * sges
    }

    /// The largest payload of one FPDU in a call with these caps, for a
    /// connection's `limits`, a header of `hdr_len` octets and payload
    /// from `sges` buffers: [`TxLimits::max_payload`], lowered where the
    /// FPDU's worst case would not fit an empty call. The planner and a
    /// sender that frames a message's rest directly
    /// ([`TxPos::rest_in_one`]) must both use this figure: a batch TCP
    /// took only part of is rebuilt by the planner, octet for octet.
    pub fn max_payload(&self, limits: &TxLimits, hdr_len: usize, sges: usize) -> u32 {
        self.payload_alone(
            limits.max_payload(hdr_len),
            hdr_len,
            sges.max(1),
            limits.mode.markers,
        )
    }

    /// The largest payload, at most `max`, of an FPDU whose worst case
    /// fits an empty call whatever the stream offset: a batch always
    /// starts, however many buffers the message has and however the
    /// markers fall.
    fn payload_alone(&self, max: u32, hdr_len: usize, sges: usize, markers: bool) -> u32 {
        let mut payload = max.max(1);
        loop {
            let marker_count = if markers {
                worst_markers(hdr_len, payload)
            } else {
                0
            };
            let fits = self.fpdu_pieces(payload, marker_count, sges) <= self.pieces
                && fpdu_scratch(hdr_len, marker_count) <= self.scratch;
            if fits || payload == 1 {
                return payload;
            }
            payload = payload.saturating_sub(MARKER_PAYLOAD_SPAN).max(1);
        }
    }
}

/// The most markers an FPDU with a `hdr_len` octet header and `payload`
/// octets of payload can hold, at the worst stream offset (a marker right
/// where it starts).
fn worst_markers(hdr_len: usize, payload: u32) -> u32 {
    // As `markers::markers_in_fpdu` with no octets before the first one.
    let content = 2 + hdr_len as u32 + payload + 3 + 4;
    1 + (content - 1) / MARKER_PAYLOAD_SPAN
}

/// Scratch octets an FPDU with a `hdr_len` octet header and `markers`
/// markers may take at most: ULPDU_Length, header, PAD, CRC, markers.
fn fpdu_scratch(hdr_len: usize, markers: u32) -> usize {
    2 + hdr_len + 3 + 4 + 4 * markers as usize
}

/// The committed position of a transmit stream: the MPA stream offset of
/// the next batch, how far the message in transmission is segmented, and
/// how many octets of the batch in flight the transport took already.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxPos {
    /// MPA stream offset of the next batch's first FPDU.
    off: u32,
    /// The message's segmentation up to the batch in flight.
    seg: Segmenter,
    /// Octets of the batch in flight the transport took.
    sent: usize,
}

impl Default for TxPos {
    fn default() -> Self {
        Self::new(0)
    }
}

impl TxPos {
    /// A stream whose next FPDU starts at `stream_off`, no message yet.
    pub const fn new(stream_off: u32) -> Self {
        Self {
            off: stream_off,
            seg: Segmenter::new(0),
            sent: 0,
        }
    }

    /// Starts a message of `total` octets. The octets of a batch already
    /// taken stay counted (a message is started between batches).
    pub fn begin(&mut self, total: u32) {
        self.seg = Segmenter::new(total);
    }

    /// MPA stream offset of the next batch.
    pub fn stream_offset(&self) -> u32 {
        self.off
    }

    /// The message's segmentation up to the batch in flight.
    pub fn segmenter(&self) -> Segmenter {
        self.seg
    }

    /// Octets of the batch in flight the transport took already.
    pub fn taken(&self) -> usize {
        self.sent
    }

    /// Whether the stream is at a batch boundary (no batch partly taken):
    /// a message may be abandoned here without breaking the framing.
    pub fn between_batches(&self) -> bool {
        self.sent == 0
    }

    /// The segment carrying the whole rest of the message in one FPDU of
    /// at most `max_payload` payload octets, when it fits and the stream
    /// is between batches: a sender may frame it directly and account it
    /// with [`account_one`](Self::account_one).
    pub fn rest_in_one(&self, max_payload: u32) -> Option<Segment> {
        if self.sent != 0 {
            return None;
        }
        let mut seg = self.seg;
        seg.next_segment(max_payload).filter(|segment| segment.last)
    }

    /// Accounts a send call that carried the FPDU of
    /// [`rest_in_one`](Self::rest_in_one), `wire_len` octets without
    /// markers, of which the transport took `took` octets.
    pub fn account_one(&mut self, took: usize, wire_len: usize) -> Taken {
        let end = BatchEnd {
            off: self.off.wrapping_add(wire_len as u32),
            seg: {
                let mut rest = self.seg;
                rest.next_segment(u32::MAX);
                rest
            },
        };
        self.account(took, wire_len, end)
    }

    /// A planner of the next batch from this position: FPDUs of a header
    /// of `hdr_len` octets and payload from `sges` buffers, sized by
    /// `limits`, within `caps`.
    pub fn planner(
        &self,
        limits: &TxLimits,
        hdr_len: usize,
        sges: usize,
        caps: CallCaps,
    ) -> BatchPlanner {
        BatchPlanner {
            batch: TxBatch::new(limits.mode, self.off, limits.budget()),
            seg: self.seg,
            hdr_len,
            max_payload: caps.max_payload(limits, hdr_len, sges),
            whole: limits.large_fpdu.is_some(),
            sges: sges.max(1),
            caps,
            fpdus: 0,
            payload: 0,
        }
    }

    /// Accounts a send call that carried the (rest of the) batch of
    /// `batch_len` octets ending at `end`, of which the transport took
    /// `took` octets: the position moves to `end` once all of it was taken.
    pub fn account(&mut self, took: usize, batch_len: usize, end: BatchEnd) -> Taken {
        self.sent = self.sent.saturating_add(took);
        if self.sent < batch_len {
            return Taken::Part;
        }
        self.sent = 0;
        self.off = end.off;
        self.seg = end.seg;
        if end.message_done() {
            Taken::Message
        } else {
            Taken::Batch
        }
    }
}

/// What the octets of a send call taken by the transport mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Taken {
    /// Part of the batch (maybe none of it): the rest goes in the next
    /// call, after the same batch was planned again.
    Part,
    /// The whole batch; the message has more to send.
    Batch,
    /// The whole batch, which ended the message: its last octet went out.
    Message,
}

/// Where the stream and the message are once a batch was taken whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchEnd {
    off: u32,
    seg: Segmenter,
}

impl BatchEnd {
    /// Whether the batch ends the message.
    pub fn message_done(&self) -> bool {
        self.seg.is_finished()
    }

    /// MPA stream offset after the batch.
    pub fn stream_offset(&self) -> u32 {
        self.off
    }
}

/// Plans the FPDUs of one send call from a [`TxPos`]: as many segments of
/// the message as fit the budget, and whose worst case of pieces and
/// scratch octets fits what the call has left.
#[derive(Clone, Copy, Debug)]
pub struct BatchPlanner {
    batch: TxBatch,
    seg: Segmenter,
    hdr_len: usize,
    max_payload: u32,
    whole: bool,
    sges: usize,
    caps: CallCaps,
    fpdus: u64,
    payload: u64,
}

impl BatchPlanner {
    /// The next FPDU of the batch, when the budget has room for it and
    /// its worst case fits the call with `pieces` pieces and `scratch`
    /// scratch octets used so far. `None` ends the batch (the caller
    /// stops asking).
    pub fn next_fpdu(&mut self, pieces: usize, scratch: usize) -> Option<(Segment, FpduPlan)> {
        let (mut batch, mut seg) = (self.batch, self.seg);
        // A large FPDU that the budget left would cut short starts the
        // next call instead.
        let (segment, plan) = if self.whole {
            batch.next_whole_segment(&mut seg, self.hdr_len, self.max_payload)
        } else {
            batch.next_segment(&mut seg, self.hdr_len, self.max_payload)
        }?;
        let need_pieces = self
            .caps
            .fpdu_pieces(segment.len, plan.markers(), self.sges);
        let need_scratch = fpdu_scratch(self.hdr_len, plan.markers());
        if pieces.saturating_add(need_pieces) > self.caps.pieces
            || scratch.saturating_add(need_scratch) > self.caps.scratch
        {
            return None;
        }
        self.batch = batch;
        self.seg = seg;
        self.fpdus += 1;
        self.payload += u64::from(segment.len);
        Some((segment, plan))
    }

    /// Where the batch planned so far leaves the stream and the message.
    pub fn end(&self) -> BatchEnd {
        BatchEnd {
            off: self.batch.stream_offset(),
            seg: self.seg,
        }
    }

    /// FPDUs planned so far.
    pub fn fpdus(&self) -> u64 {
        self.fpdus
    }

    /// Payload octets planned so far.
    pub fn payload(&self) -> u64 {
        self.payload
    }
}

/// The pieces of a batch without its first `taken` octets (those the
/// transport took in an earlier call): drops the pieces taken whole and
/// shortens the first piece taken in part. Returns the pieces left.
pub fn skip_taken<'a, 'p>(pieces: &'p mut [&'a [u8]], taken: usize) -> &'p [&'a [u8]] {
    let mut skip = taken;
    let mut first = 0;
    for p in pieces.iter_mut() {
        if skip < p.len() {
            *p = p.get(skip..).unwrap_or(&[]);
            break;
        }
        skip -= p.len();
        first += 1;
    }
    pieces.get(first..).unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPS: CallCaps = CallCaps {
        pieces: 32,
        scratch: 2048,
        payload_shift: 12,
    };

    fn limits(markers: bool, mulpdu: u32, large_fpdu: bool) -> TxLimits {
        TxLimits {
            mode: MpaMode { markers, crc: true },
            mulpdu,
            large_fpdu: large_fpdu.then_some(LARGE_FPDU_PAYLOAD),
        }
    }

    #[test]
    fn max_payload_follows_mulpdu_large_fpdus_and_markers() {
        assert_eq!(limits(false, 1448, false).max_payload(18), 1430);
        assert_eq!(limits(false, 10, false).max_payload(18), 1);
        assert_eq!(limits(false, 100_000, false).max_payload(14), 65521);
        assert_eq!(
            limits(false, 1448, true).max_payload(18),
            LARGE_FPDU_PAYLOAD
        );
        assert_eq!(
            limits(true, 1448, true).max_payload(18),
            MARKER_FPDU_PAYLOAD
        );
        assert_eq!(limits(true, 1448, false).max_payload(18), 1430);
        assert_eq!(limits(false, 1448, false).budget(), BATCH_BUDGET);
        assert_eq!(limits(false, 1448, true).budget(), LARGE_BATCH_BUDGET);
        // A device's own cap on large FPDUs (`mpa_max_fpdu`).
        let capped = |cap| TxLimits {
            large_fpdu: Some(cap),
            ..limits(false, 1448, true)
        };
        assert_eq!(capped(4096).max_payload(18), 4096);
        assert_eq!(capped(65_535).max_payload(28), 65_507);
        // the largest FPDU (ULPDU of 65535 octets, CRC) fits a call
        assert!(capped(65_535).budget() >= 2 + 65_535 + 4);
    }

    #[test]
    fn skip_taken_drops_and_shortens() {
        let (a, b, c) = ([1u8, 2, 3], [4u8, 5], [6u8]);
        let all = [&a[..], &b[..], &c[..]];
        let mut p = all;
        assert_eq!(skip_taken(&mut p, 0), &all[..]);
        let mut p = all;
        assert_eq!(skip_taken(&mut p, 2), &[&a[2..], &b[..], &c[..]][..]);
        let mut p = all;
        assert_eq!(skip_taken(&mut p, 3), &[&b[..], &c[..]][..]);
        let mut p = all;
        assert_eq!(skip_taken(&mut p, 4), &[&b[1..], &c[..]][..]);
        let mut p = all;
        assert!(skip_taken(&mut p, 6).is_empty());
        let mut p = all;
        assert!(skip_taken(&mut p, 7).is_empty());
    }

    #[test]
    fn partial_sends_keep_the_position_until_the_batch_is_taken() {
        let l = limits(false, 1000, false);
        let mut pos = TxPos::new(100);
        pos.begin(5000);
        let mut p = pos.planner(&l, 18, 1, CAPS);
        let mut wire = 0;
        while let Some((_, plan)) = p.next_fpdu(0, 0) {
            wire += plan.wire_len() as usize;
        }
        assert_eq!(p.fpdus(), 6);
        assert_eq!(p.payload(), 5000);
        let end = p.end();
        assert!(end.message_done());
        assert_eq!(end.stream_offset(), 100 + wire as u32);
        assert_eq!(pos.account(10, wire, end), Taken::Part);
        assert_eq!((pos.stream_offset(), pos.taken()), (100, 10));
        assert!(!pos.between_batches());
        assert_eq!(pos.account(wire - 11, wire, end), Taken::Part);
        assert_eq!(pos.account(1, wire, end), Taken::Message);
        assert_eq!((pos.stream_offset(), pos.taken()), (100 + wire as u32, 0));
        assert!(pos.between_batches());
    }

    #[test]
    fn caps_end_the_batch_and_the_rest_follows() {
        let l = limits(false, 1000, false);
        let mut pos = TxPos::new(0);
        pos.begin(5000);
        let mut p = pos.planner(&l, 18, 1, CAPS);
        // Room for two FPDUs' worst case of pieces.
        let per = CAPS.fpdu_pieces(982, 0, 1);
        assert!(p.next_fpdu(CAPS.pieces - 2 * per, 0).is_some());
        assert!(p.next_fpdu(CAPS.pieces - per, 0).is_some());
        assert!(p.next_fpdu(CAPS.pieces - per + 1, 0).is_none());
        let end = p.end();
        assert!(!end.message_done());
        assert_eq!(pos.account(2 * 1008, 2 * 1008, end), Taken::Batch);
        assert_eq!(pos.segmenter().remaining(), 5000 - 2 * 982);
        // Scratch: not even one FPDU fits.
        let mut p = pos.planner(&l, 18, 1, CAPS);
        assert!(p
            .next_fpdu(0, CAPS.scratch - fpdu_scratch(18, 0) + 1)
            .is_none());
        assert_eq!(p.fpdus(), 0);
    }

    #[test]
    fn rest_in_one_and_its_accounting() {
        let l = limits(false, 1000, false);
        let mut pos = TxPos::new(7);
        pos.begin(100);
        let sg = pos.rest_in_one(l.max_payload(18)).expect("fits");
        assert_eq!((sg.offset, sg.len, sg.last), (0, 100, true));
        // 2 + 18 + 100 + 0 PAD + 4.
        assert_eq!(pos.account_one(50, 124), Taken::Part);
        assert_eq!(pos.rest_in_one(1000), None);
        // The rest goes the planned way: the same FPDU.
        let mut p = pos.planner(&l, 18, 1, CAPS);
        let (s2, plan) = p.next_fpdu(0, 0).expect("one FPDU");
        assert_eq!((s2, plan.wire_len()), (sg, 124));
        assert_eq!(pos.account(74, 124, p.end()), Taken::Message);
        assert_eq!(pos.stream_offset(), 131);
        assert!(pos.segmenter().is_finished());
        // A message longer than one FPDU goes the planned way.
        pos.begin(5000);
        assert_eq!(pos.rest_in_one(982), None);
        assert!(pos.rest_in_one(5000).is_some());
    }
}
