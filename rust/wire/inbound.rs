// SPDX-License-Identifier: GPL-2.0

//! The receiver's bookkeeping of the messages a stream carries, above the
//! deframer ([`crate::wire::rx`]): the MSN each untagged queue expects next
//! (RFC 5041 section 5), the untagged message being received into one
//! posted buffer (its MO and room), the segment rules of RDMA Read
//! Requests and Read Responses (RFC 5040 section 4), scattering a
//! segment's payload over the pieces of its buffer, and the copy of the
//! current segment's header that a TERMINATE about it carries.
//!
//! Placement itself (memory, work requests, completions) is the driver's;
//! this is the arithmetic and the errors it draws.

use crate::wire::ddp::TaggedHdr;
use crate::wire::error::DdpError;
use crate::wire::rdmap::{Extensions, MAX_HDR_LEN, NUM_QUEUES, NUM_QUEUES_RFC7306};

/// The MSN the next message of each untagged queue must carry (each
/// starts at 1, RFC 5041 section 5.1). The receiver takes a queue's
/// messages in order, so only that MSN is accepted. RFC 5040 has queues
/// 0 to 2; RFC 7306 adds QN 3 (Atomic Responses) and puts its Immediate
/// Data on QN 0 and its Atomic Requests on QN 1, in the sequences of
/// Sends and Read Requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpectedMsns {
    msn: [u32; NUM_QUEUES_RFC7306 as usize],
    queues: u32,
}

impl Default for ExpectedMsns {
    fn default() -> Self {
        Self::new()
    }
}

impl ExpectedMsns {
    /// A new RFC 5040 stream (queues 0 to 2): every queue expects MSN 1.
    pub const fn new() -> Self {
        Self::with(Extensions::NONE)
    }

    /// A new stream with the queues of the extensions `ext`: every queue
    /// expects MSN 1.
    pub const fn with(ext: Extensions) -> Self {
        Self {
            msn: [1; NUM_QUEUES_RFC7306 as usize],
            queues: if ext.rfc7306 {
                NUM_QUEUES_RFC7306
            } else {
                NUM_QUEUES
            },
        }
    }

    fn slot(&self, qn: u32) -> Option<usize> {
        (qn < self.queues).then_some(qn as usize)
    }

    /// The MSN queue `qn` expects next (`None` for an unknown queue).
    pub fn expected(&self, qn: u32) -> Option<u32> {
        self.msn.get(self.slot(qn)?).copied()
    }

    /// Checks that a segment of queue `qn` carries the MSN that queue
    /// expects: "MSN range" if not, "invalid QN" for an unknown queue.
    #[inline]
    pub fn check(&self, qn: u32, msn: u32) -> Result<(), DdpError> {
        match self.expected(qn) {
            Some(expected) if expected == msn => Ok(()),
            Some(_) => Err(DdpError::UntaggedMsnRange),
            None => Err(DdpError::UntaggedInvalidQn),
        }
    }

    /// A message of queue `qn` is done (or consumed without a buffer):
    /// the queue expects the next MSN (modulo 2^32).
    #[inline]
    pub fn advance(&mut self, qn: u32) {
        if let Some(expected) = self.slot(qn).and_then(|i| self.msn.get_mut(i)) {
            *expected = expected.wrapping_add(1);
        }
    }
}

/// An untagged message being received into one posted buffer, in order:
/// each segment continues at the MO where the one before ended, and the
/// message may not outgrow the buffer. Idle between messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UntaggedMsg {
    active: bool,
    /// Octets the buffer takes.
    room: u32,
    /// Octets placed so far: the MO the next segment must carry.
    placed: u32,
}

impl UntaggedMsg {
    /// No message in progress.
    pub const fn idle() -> Self {
        Self {
            active: false,
            room: 0,
            placed: 0,
        }
    }

    /// A message is in progress.
    pub const fn is_active(&self) -> bool {
        self.active
    }

    /// Octets placed so far (the next MO).
    pub const fn placed(&self) -> u32 {
        self.placed
    }

    /// Checks the MO of a segment: the one where the message in progress
    /// left off, or 0 for the first segment of a new message. "Invalid
    /// MO" otherwise.
    #[inline]
    pub fn check_mo(&self, mo: u32) -> Result<(), DdpError> {
        let next = if self.active { self.placed } else { 0 };
        if mo != next {
            return Err(DdpError::UntaggedInvalidMo);
        }
        Ok(())
    }

    /// Checks that `len` more octets fit into the buffer of the message
    /// in progress: "message too long" if not (or with none in progress).
    #[inline]
    pub fn check_room(&self, len: u32) -> Result<(), DdpError> {
        match self.placed.checked_add(len) {
            Some(end) if self.active && end <= self.room => Ok(()),
            _ => Err(DdpError::UntaggedTooLong),
        }
    }

    /// Starts a message in a buffer of `room` octets.
    pub fn begin(&mut self, room: u32) {
        *self = Self {
            active: true,
            room,
            placed: 0,
        };
    }

    /// `len` more octets were placed.
    #[inline]
    pub fn advance(&mut self, len: u32) {
        self.placed = self.placed.saturating_add(len);
    }

    /// Ends the message in progress: the octets it placed, `None` if
    /// there was none.
    pub fn end(&mut self) -> Option<u32> {
        if !self.active {
            return None;
        }
        self.active = false;
        Some(self.placed)
    }
}

/// Checks the one segment of an RDMA Read Request (RFC 5040 section 4.4):
/// a message of exactly its header (the 28 octet "buffer" of QN 1). A
/// segment at another MO is an invalid MO; payload, or L=0 (more
/// segments to come), makes the message longer than that buffer.
pub fn check_read_request(mo: u32, payload_len: u32, last: bool) -> Result<(), DdpError> {
    if mo != 0 {
        return Err(DdpError::UntaggedInvalidMo);
    }
    if payload_len != 0 || !last {
        return Err(DdpError::UntaggedTooLong);
    }
    Ok(())
}

/// The sink buffer of an outstanding RDMA Read, which its Read Response
/// fills in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadSink {
    /// The STag the Read Request named as its sink.
    pub stag: u32,
    /// The sink's first tagged offset.
    pub to: u64,
    /// The length the Read asked for.
    pub len: u32,
}

impl ReadSink {
    /// Checks a Read Response segment with header `hdr`, `payload_len`
    /// payload octets and L bit `last`, after `placed` octets of the
    /// response arrived: it must name the sink's STag ("invalid STag"),
    /// continue at the next tagged offset, stay within the sink and, when
    /// last, fill it exactly ("base or bounds" otherwise).
    #[inline]
    pub fn check_response(
        &self,
        placed: u32,
        hdr: &TaggedHdr,
        payload_len: u32,
        last: bool,
    ) -> Result<(), DdpError> {
        if hdr.stag != self.stag {
            return Err(DdpError::TaggedInvalidStag);
        }
        if hdr.to != self.to.wrapping_add(u64::from(placed)) {
            return Err(DdpError::TaggedBaseBounds);
        }
        let end = placed
            .checked_add(payload_len)
            .ok_or(DdpError::TaggedBaseBounds)?;
        if end > self.len || (last && end != self.len) {
            return Err(DdpError::TaggedBaseBounds);
        }
        Ok(())
    }
}

/// Why a segment's payload could not be scattered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScatterError<E> {
    /// The buffer ends before the payload does.
    TooLong,
    /// Writing a part failed.
    Put(E),
}

/// Scatters `data`, the payload octets at message offset `mo`, over a
/// buffer made of consecutive pieces (a receive work request's SGEs).
/// `pieces` yields each piece's length and what `put` needs to write into
/// it; `put(piece, offset, octets)` writes one part at `offset` within its
/// piece. Pieces of length 0 take nothing. Fails with
/// [`ScatterError::TooLong`] when the pieces end before the data does
/// (after writing what fits) and with the first error of `put`.
#[inline]
pub fn scatter<T, E>(
    pieces: impl IntoIterator<Item = (u32, T)>,
    mo: u32,
    data: &[u8],
    mut put: impl FnMut(T, u32, &[u8]) -> Result<(), E>,
) -> Result<(), ScatterError<E>> {
    let mut at = mo;
    let mut rest = data;
    let mut base = 0u32;
    for (len, piece) in pieces {
        if rest.is_empty() {
            break;
        }
        let end = base.saturating_add(len);
        if at >= base && at < end {
            // `at < end`, so `at + take <= end` does not overflow.
            let take = ((end - at) as usize).min(rest.len());
            let (now, later) = rest.split_at(take);
            put(piece, at - base, now).map_err(ScatterError::Put)?;
            rest = later;
            at += take as u32;
        }
        base = end;
    }
    if !rest.is_empty() {
        return Err(ScatterError::TooLong);
    }
    Ok(())
}

/// The wire form of the current segment's header and its FPDU's
/// ULPDU_Length: what a TERMINATE reporting an error in that segment
/// carries (RFC 5040 section 4.8). Empty until a header is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeaderCopy {
    raw: [u8; MAX_HDR_LEN],
    len: usize,
    ulpdu_len: u16,
}

impl Default for HeaderCopy {
    fn default() -> Self {
        Self::new()
    }
}

impl HeaderCopy {
    /// No header, ULPDU_Length 0.
    pub const fn new() -> Self {
        Self {
            raw: [0; MAX_HDR_LEN],
            len: 0,
            ulpdu_len: 0,
        }
    }

    /// A new FPDU with `ulpdu_len` begins: no header of it yet.
    #[inline]
    pub fn start_fpdu(&mut self, ulpdu_len: u16) {
        self.ulpdu_len = ulpdu_len;
        self.len = 0;
    }

    /// Keeps the header `raw` (its first [`MAX_HDR_LEN`] octets).
    #[inline]
    pub fn keep(&mut self, raw: &[u8]) {
        let len = raw.len().min(MAX_HDR_LEN);
        if let (Some(dst), Some(src)) = (self.raw.get_mut(..len), raw.get(..len)) {
            dst.copy_from_slice(src);
            self.len = len;
        }
    }

    /// Forgets the header (its segment is done); the ULPDU_Length stays.
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Forgets the header and the ULPDU_Length (nothing of the FPDU was
    /// parsed).
    pub fn reset(&mut self) {
        self.len = 0;
        self.ulpdu_len = 0;
    }

    /// This copy, or, if it holds no header, one holding `rejected` (a
    /// header that failed the deframer's own checks and so never reached
    /// the sink).
    pub fn or_rejected(&self, rejected: Option<&[u8]>) -> Self {
        let mut copy = *self;
        if copy.len == 0 {
            if let Some(header) = rejected {
                copy.keep(header);
            }
        }
        copy
    }

    /// The header kept, `None` if there is none.
    pub fn header(&self) -> Option<&[u8]> {
        if self.len > 0 {
            self.raw.get(..self.len)
        } else {
            None
        }
    }

    /// The ULPDU_Length of the header's FPDU.
    pub const fn ulpdu_len(&self) -> u16 {
        self.ulpdu_len
    }
}
