// SPDX-License-Identifier: GPL-2.0

//! FPDU emission for the transmit engine: frames the current job's next
//! batch of DDP segments (ULPDU_Length, headers, markers, PAD and CRC
//! written into the scratch area, payload sent straight from where it
//! lies) and hands it to TCP in one send call; a batch TCP took only part
//! of is rebuilt identically and resumed.

use kernel::prelude::*;

use super::{Job, Src, TxState, SCRATCH};
use crate::base::stats::{Counter, Stats};
use crate::mem::access::mem_slice;
use crate::qp::orq::TERM_MAX;
use crate::qp::Conn;
use crate::wire::{
    crc::{crc_to_wire, Crc32c},
    markers::MARKER_PAYLOAD_SPAN,
    mpa::{MpaMode, LARGE_FPDU_PAYLOAD},
    tx::{frame_plain_head, Segment, TxBatch, TxPiece, PLAIN_TAIL_MAX},
};

/// Largest number of octets handed to TCP in one send call.
pub const BATCH_BUDGET: u32 = 64 * 1024;
/// The same towards a peer that takes large FPDUs: two full FPDUs of
/// [`LARGE_FPDU_PAYLOAD`] with their headers, PAD and CRC.
const LARGE_BATCH_BUDGET: u32 = 2 * (LARGE_FPDU_PAYLOAD + 64);
/// Largest number of kvec pieces of one send call (the socket's limit).
pub const MAX_PIECES: usize = 32;
/// Payload cap per FPDU with markers, so that one FPDU's pieces always fit
/// one send call (each marker may split the payload).
const MARKER_FPDU_PAYLOAD: u32 = 8 * MARKER_PAYLOAD_SPAN;
/// Header buffer size (the largest DDP/RDMAP header or TERMINATE ULPDU).
const HDR_MAX: usize = TERM_MAX;

/// One kvec piece of a batch under construction.
#[derive(Clone, Copy)]
enum Piece<'a> {
    /// Scratch octets `start..end`.
    Scratch(usize, usize),
    /// Payload octets.
    Data(&'a [u8]),
}

/// Collects the pieces of one send call.
struct Pieces<'a> {
    p: [Piece<'a>; MAX_PIECES],
    n: usize,
    /// Scratch octets used.
    s: usize,
}

impl<'a> Pieces<'a> {
    fn push(&mut self, piece: Piece<'a>) -> Result {
        // Merge adjacent scratch ranges into one kvec.
        if let (Piece::Scratch(a, b), Some(Piece::Scratch(_, end))) =
            (piece, self.n.checked_sub(1).and_then(|i| self.p.get_mut(i)))
        {
            if *end == a {
                *end = b;
                return Ok(());
            }
        }
        let slot = self.p.get_mut(self.n).ok_or(ENOSPC)?;
        *slot = piece;
        self.n += 1;
        Ok(())
    }

    /// Appends `bytes` to the scratch area and as a piece.
    fn scratch(&mut self, scratch: &mut [u8], bytes: &[u8]) -> Result {
        let end = self.s.checked_add(bytes.len()).ok_or(ENOSPC)?;
        scratch
            .get_mut(self.s..end)
            .ok_or(ENOSPC)?
            .copy_from_slice(bytes);
        let start = self.s;
        self.s = end;
        self.push(Piece::Scratch(start, end))
    }
}

/// A slice of the payload of `job` at message offset `off`, at most `max`
/// octets.
fn payload_slice(job: &Job, off: u32, max: u32) -> Result<&[u8]> {
    match &job.src {
        Src::None => Err(EINVAL),
        Src::Inline(data) => {
            let start = off as usize;
            let end = start.checked_add(max as usize).ok_or(EINVAL)?;
            data.get(start..end).ok_or(EINVAL)
        }
        Src::Sgl { mems, n } => {
            let mut base = 0u32;
            for (s, m) in job.sqe.sge.iter().zip(mems.iter()).take(*n) {
                let end = base.checked_add(s.length).ok_or(EINVAL)?;
                if off < end && s.length > 0 {
                    let in_sge = off.checked_sub(base).ok_or(EINVAL)?;
                    let want = max.min(end - off);
                    let mem = m.as_ref().ok_or(EINVAL)?;
                    let addr = s.addr.checked_add(u64::from(in_sge)).ok_or(EINVAL)?;
                    return mem_slice(mem, addr, want);
                }
                base = end;
            }
            Err(EINVAL)
        }
    }
}

/// The header of segment `seg` of `job`, encoded into `out`.
fn segment_header(job: &Job, seg: &Segment, out: &mut [u8]) -> Option<usize> {
    if let Some(t) = &job.term {
        let n = usize::from(t.len);
        out.get_mut(..n)?.copy_from_slice(t.buf.get(..n)?);
        return Some(n);
    }
    job.hdr.encode_segment(seg.last, seg.offset, out)
}

/// Payload pieces [`send_single`] handles (more go the general way).
const SINGLE_PIECES: usize = 4;

/// Sends segment `sg` (the last one) of `job` as one FPDU without markers:
/// ULPDU_Length and header, the payload where it lies, PAD and CRC.
/// Returns the octets TCP took and the FPDU's length, or `None` when the
/// payload has more than [`SINGLE_PIECES`] pieces (nothing was sent).
fn send_single(
    conn: &Conn,
    job: &Job,
    sg: &crate::wire::tx::Segment,
    crc: bool,
    more: bool,
) -> Result<Option<(usize, usize)>> {
    // The header is encoded where it is sent from, after the room of the
    // ULPDU_Length field.
    let mut head = [0u8; 2 + HDR_MAX];
    let hn = segment_header(job, sg, head.get_mut(2..).unwrap_or(&mut [])).ok_or(EINVAL)?;
    let mut data: [&[u8]; SINGLE_PIECES] = [&[]; SINGLE_PIECES];
    let mut nd = 0;
    let mut done = 0u32;
    while done < sg.len {
        let Some(slot) = data.get_mut(nd) else {
            return Ok(None);
        };
        let o = sg.offset.checked_add(done).ok_or(EINVAL)?;
        let d = payload_slice(job, o, sg.len - done)?;
        if d.is_empty() {
            return Err(EFAULT);
        }
        *slot = d;
        nd += 1;
        done += d.len() as u32;
    }
    let data = data.get(..nd).unwrap_or(&[]);
    let mut tail = [0u8; PLAIN_TAIL_MAX];
    let mut c = crate::kif::crc::KernelCrc32c::new();
    let (hl, tl) = frame_plain_head(hn, data, crc.then_some(&mut c), &mut head, &mut tail)
        .map_err(|_| EINVAL)?;
    let mut v: [&[u8]; SINGLE_PIECES + 2] = [&[]; SINGLE_PIECES + 2];
    let pieces = Iterator::chain(
        Iterator::chain(
            core::iter::once(head.get(..hl).unwrap_or(&[])),
            data.iter().copied(),
        ),
        core::iter::once(tail.get(..tl).unwrap_or(&[])),
    );
    for (slot, p) in v.iter_mut().zip(pieces) {
        *slot = p;
    }
    let total = hl + sg.len as usize + tl;
    let n = conn.sock.send(v.get(..nd + 2).unwrap_or(&[]), more)?;
    Ok(Some((n, total)))
}

/// The largest payload of one FPDU of a segment with a header of `hdr_len`
/// octets on `conn`.
fn max_payload(conn: &Conn, mode: MpaMode, hdr_len: usize) -> u32 {
    let max = if conn.large_fpdu {
        LARGE_FPDU_PAYLOAD
    } else {
        conn.mulpdu
            .min(crate::wire::mpa::MAX_ULPDU_LEN)
            .saturating_sub(hdr_len as u32)
            .max(1)
    };
    if mode.markers {
        max.min(MARKER_FPDU_PAYLOAD)
    } else {
        max
    }
}

/// What [`send_batch`] did with the current batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Sent {
    /// The job's last octet went to TCP.
    Done,
    /// The batch went to TCP; the job has more to send.
    More,
    /// TCP took only part of the batch, or none of it: its send buffer is
    /// full. The next run rebuilds the batch and goes on after what TCP
    /// took.
    TcpFull,
}

/// Builds the current batch of the job (from its committed position),
/// sends what TCP has not taken yet, and commits when all of it went out.
/// An error is a failure of the connection, not a full send buffer.
pub(super) fn send_batch(tx: &mut TxState, stats: &Stats, queued: bool) -> Result<Sent> {
    let TxState {
        off,
        job: job_slot,
        sent,
        mode,
        corked,
        conn,
        ..
    } = tx;
    let Some(conn) = conn.as_deref() else {
        return Err(crate::kif::compat::error::enotconn());
    };
    let Some(job) = job_slot.as_ref() else {
        return Ok(Sent::Done);
    };
    let mode = *mode;
    let hdr_len = if let Some(t) = &job.term {
        usize::from(t.len)
    } else {
        job.hdr.len()
    };
    let max_payload = max_payload(conn, mode, hdr_len);
    // The common case, a message (or its rest) that fits one FPDU without
    // markers: framed around the payload directly, without the planner.
    if !mode.markers && *sent == 0 && job.term.is_none() {
        let mut s2 = job.seg;
        if let Some(sg) = s2.next_segment(max_payload).filter(|s| s.last) {
            let single = match send_single(conn, job, &sg, mode.crc, queued) {
                Err(e) if e == EAGAIN => return Ok(Sent::TcpFull),
                r => r?,
            };
            if let Some((n, total)) = single {
                stats.inc(Counter::TxTcpSends);
                *corked = queued;
                if n < total {
                    // The general path rebuilds the same octets and goes
                    // on after the `n` TCP took.
                    *sent = n;
                    stats.inc(Counter::TxTcpFull);
                    return Ok(Sent::TcpFull);
                }
                stats.inc(Counter::TxFpdus);
                stats.add(Counter::TxPayload, u64::from(sg.len));
                *off = off.wrapping_add(total as u32);
                if let Some(j) = job_slot.as_mut() {
                    j.seg = s2;
                }
                return Ok(Sent::Done);
            }
        }
    }
    send_planned(tx, stats, queued, hdr_len, max_payload)
}

/// The general way of [`send_batch`]: the planner, for messages of several
/// FPDUs, markers, TERMINATEs and resumed partial sends. `hdr_len` and
/// `max_payload` are the job's, as `send_batch` found them.
#[inline(never)]
fn send_planned(
    tx: &mut TxState,
    stats: &Stats,
    queued: bool,
    hdr_len: usize,
    max_payload: u32,
) -> Result<Sent> {
    let TxState {
        off,
        job: job_slot,
        sent,
        mode,
        scratch,
        corked,
        conn,
        ..
    } = tx;
    let (Some(conn), Some(job)) = (conn.as_deref(), job_slot.as_ref()) else {
        return Err(EINVAL);
    };
    let mode = *mode;
    let budget = if conn.large_fpdu {
        LARGE_BATCH_BUDGET
    } else {
        BATCH_BUDGET
    };
    let mut batch = TxBatch::new(mode, *off, budget);
    // Payload pieces per FPDU: page-sized at most, so a chunk of one SGE
    // adds at most two more than its length in pages.
    let sges = match &job.src {
        Src::Sgl { n, .. } => (*n).max(1),
        Src::Inline(_) | Src::None => 1,
    };
    let mut seg = job.seg;
    let mut pieces = Pieces {
        p: [Piece::Scratch(0, 0); MAX_PIECES],
        n: 0,
        s: 0,
    };
    let mut hdr = [0u8; HDR_MAX];
    let mut crc = crate::kif::crc::KernelCrc32c::new();
    let (mut fpdus, mut payload) = (0u64, 0u64);
    loop {
        let (mut b2, mut s2) = (batch, seg);
        // A large FPDU that the budget left would cut short starts the
        // next call instead.
        let next = if conn.large_fpdu {
            b2.next_whole_segment(&mut s2, hdr_len, max_payload)
        } else {
            b2.next_segment(&mut s2, hdr_len, max_payload)
        };
        let Some((sg, plan)) = next else {
            break;
        };
        // Worst case pieces and scratch of this FPDU.
        let need_p = 4 + 2 * plan.markers() as usize + (sg.len as usize >> 12) + 2 * sges;
        let need_s = 2 + hdr_len + 3 + 4 + 4 * plan.markers() as usize;
        if pieces.n + need_p > MAX_PIECES || pieces.s + need_s > SCRATCH {
            break;
        }
        let hn = segment_header(job, &sg, &mut hdr).ok_or(EINVAL)?;
        if hn != hdr_len {
            return Err(EINVAL);
        }
        crc.reset();
        let mut crc_bytes = None;
        for piece in plan.pieces() {
            match piece {
                TxPiece::Inline(i) => {
                    let start = pieces.s;
                    pieces.scratch(scratch, i.bytes())?;
                    if mode.crc && i.crc {
                        crc.update(scratch.get(start..pieces.s).unwrap_or(&[]));
                    }
                }
                TxPiece::Header { start, end } => {
                    let b = hdr.get(start as usize..end as usize).ok_or(EINVAL)?;
                    pieces.scratch(scratch, b)?;
                    if mode.crc {
                        crc.update(b);
                    }
                }
                TxPiece::Payload { offset, len } => {
                    let mut done = 0u32;
                    while done < len {
                        let o = sg
                            .offset
                            .checked_add(offset)
                            .and_then(|x| x.checked_add(done))
                            .ok_or(EINVAL)?;
                        let d = payload_slice(job, o, len - done)?;
                        if d.is_empty() {
                            return Err(EFAULT);
                        }
                        if mode.crc {
                            crc.update(d);
                        }
                        pieces.push(Piece::Data(d))?;
                        done += d.len() as u32;
                    }
                }
                TxPiece::Crc { start, end } => {
                    let v = *crc_bytes.get_or_insert_with(|| {
                        if mode.crc {
                            crc_to_wire(crc.finalize())
                        } else {
                            [0; 4]
                        }
                    });
                    let b = v.get(usize::from(start)..usize::from(end)).ok_or(EINVAL)?;
                    pieces.scratch(scratch, b)?;
                }
            }
        }
        batch = b2;
        seg = s2;
        fpdus += 1;
        payload += u64::from(sg.len);
    }
    if pieces.n == 0 {
        // Nothing fits (cannot happen with the caps above).
        return Err(EINVAL);
    }
    let total: usize = pieces
        .p
        .iter()
        .take(pieces.n)
        .map(|p| match p {
            Piece::Scratch(a, b) => b - a,
            Piece::Data(d) => d.len(),
        })
        .sum();
    // Materialise the kvecs, skipping what TCP took already.
    let mut v: [&[u8]; MAX_PIECES] = [&[]; MAX_PIECES];
    let mut nv = 0;
    let mut skip = *sent;
    for p in pieces.p.iter().take(pieces.n) {
        let b: &[u8] = match *p {
            Piece::Scratch(a, e) => scratch.get(a..e).ok_or(EINVAL)?,
            Piece::Data(d) => d,
        };
        if skip >= b.len() {
            skip -= b.len();
            continue;
        }
        let b = b.get(skip..).unwrap_or(&[]);
        skip = 0;
        if let Some(slot) = v.get_mut(nv) {
            *slot = b;
            nv += 1;
        }
    }
    // More segments of the message follow right away: let TCP coalesce.
    let more = {
        let mut c = seg;
        c.next_segment(0).is_some()
    };
    let n = match conn.sock.send(v.get(..nv).unwrap_or(&[]), more || queued) {
        Ok(n) => n,
        Err(e) if e == EAGAIN => {
            stats.inc(Counter::TxTcpFull);
            return Ok(Sent::TcpFull);
        }
        Err(e) => return Err(e),
    };
    stats.inc(Counter::TxTcpSends);
    // A send without MSG_MORE pushes everything TCP held back before.
    *corked = queued || (more && *corked);
    *sent += n;
    if *sent < total {
        stats.inc(Counter::TxTcpFull);
        return Ok(Sent::TcpFull);
    }
    stats.add(Counter::TxFpdus, fpdus);
    stats.add(Counter::TxPayload, payload);
    *sent = 0;
    *off = batch.stream_offset();
    if let Some(j) = job_slot.as_mut() {
        j.seg = seg;
    }
    Ok(if more { Sent::More } else { Sent::Done })
}
