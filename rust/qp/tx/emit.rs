// SPDX-License-Identifier: GPL-2.0

//! FPDU emission for the transmit engine: frames the current job's next
//! batch of DDP segments (ULPDU_Length, headers, markers, PAD and CRC
//! written into the scratch area, payload sent straight from where it
//! lies) and hands it to TCP in one send call. Which FPDUs go into the
//! batch and what a partial send means are the wire core's
//! ([`crate::wire::txstream`]): a batch TCP took only part of is planned
//! again identically and resumed after the octets TCP took.

use kernel::prelude::*;

use super::job::{Entered, Job};
use super::state::{Emission, TxState, SCRATCH};
use crate::base::stats::{Counter, Stats};
use crate::kif::crc::KernelCrc32c;
use crate::kif::sock::SendLock;
use crate::mem::access::MemFault;
use crate::qp::reads::TERM_MAX;
use crate::wire::{
    crc::{crc_to_wire, Crc32c},
    rdmap::MAX_HDR_LEN,
    tx::{frame_plain_head, FpduPlan, Segment, TxPiece, PLAIN_TAIL_MAX},
    txstream::{skip_taken, BatchPlanner, CallCaps, Taken},
};

/// Largest number of kvec pieces of one send call (the socket's limit).
const MAX_PIECES: usize = 32;
/// Header buffer size (the largest DDP/RDMAP header or TERMINATE ULPDU).
const HDR_MAX: usize = TERM_MAX;
/// What one send call carries besides its budget: payload comes in
/// pieces of at most a page (see `mem_slice`).
const CAPS: CallCaps = CallCaps {
    pieces: MAX_PIECES,
    scratch: SCRATCH,
    payload_shift: 12,
};

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
    /// The memory the payload comes from was invalidated or deregistered
    /// since the job was checked: nothing of this batch was read or sent.
    MemoryGone(MemFault),
}

/// Builds the current batch of the job (from its committed position),
/// sends what TCP has not taken yet, and commits when all of it went out.
/// An error is a failure of the connection, not a full send buffer.
///
/// The batch is built and sent with the socket locked and the job's
/// memory entered (see [`crate::mem::access`]): the payload is read (for
/// the CRC, and by TCP's copy) only inside the registration the job was
/// checked against, and the memory is left before the socket's receive
/// backlog runs (which may invalidate it: a Send with Invalidate cannot
/// wait for a transfer of its own connection).
pub(super) fn send_batch(tx: &mut TxState, stats: &Stats, queued: bool) -> Result<Sent> {
    let Some(mut emission) = tx.emission()? else {
        return Ok(Sent::Done);
    };
    let sock = emission.conn.sock.lock_send();
    let mut entered = Entered::new();
    if let Err(fault) = emission.job.enter(&mut entered) {
        return Ok(Sent::MemoryGone(fault));
    }
    let out = Out {
        sock: &sock,
        entered: &entered,
    };
    let hdr_len = emission.job.hdr_len();
    // The common case, a message (or its rest) that fits one FPDU without
    // markers: framed around the payload directly, without the planner.
    if !emission.limits.mode.markers && emission.job.term.is_none() {
        let max = emission.max_payload(&CAPS, hdr_len, emission.job.src.buffers());
        if let Some(segment) = emission.pos.rest_in_one(max) {
            if let Some(sent) = send_rest_in_one(&mut emission, &out, &segment, stats, queued)? {
                return Ok(sent);
            }
        }
    }
    send_planned(&mut emission, &out, stats, queued, hdr_len)
}

/// Where one send call's octets go and come from: the locked socket and
/// the job's entered memory.
struct Out<'a, 'b> {
    sock: &'a SendLock<'b>,
    entered: &'a Entered<'b>,
}

/// Sends `segment`, the rest of the job, as one FPDU without markers
/// and accounts it. `None` when the payload has too many pieces for that
/// (nothing was sent).
fn send_rest_in_one(
    emission: &mut Emission<'_>,
    out: &Out<'_, '_>,
    segment: &Segment,
    stats: &Stats,
    queued: bool,
) -> Result<Option<Sent>> {
    let single = match send_single(out, emission.job, segment, emission.limits.mode.crc, queued) {
        Err(err) if err == EAGAIN => return Ok(Some(Sent::TcpFull)),
        result => result?,
    };
    let Some((sent_len, total)) = single else {
        return Ok(None);
    };
    stats.inc(Counter::TxTcpSends);
    emission.sent(queued, false);
    if emission.pos.account_one(sent_len, total) == Taken::Part {
        // The planned way rebuilds the same octets and goes on after the
        // `sent_len` octets TCP took.
        stats.inc(Counter::TxTcpFull);
        return Ok(Some(Sent::TcpFull));
    }
    emission.count(stats, 1, u64::from(segment.len));
    Ok(Some(Sent::Done))
}

/// Payload pieces [`send_single`] handles (more go the planned way).
const SINGLE_PIECES: usize = 4;

/// Sends `segment` (the last one) of `job` as one FPDU without markers:
/// ULPDU_Length and header, the payload where it lies, PAD and CRC.
/// Returns the octets TCP took and the FPDU's length, or `None` when the
/// payload has more than [`SINGLE_PIECES`] pieces (nothing was sent).
fn send_single(
    out: &Out<'_, '_>,
    job: &Job,
    segment: &Segment,
    crc: bool,
    more: bool,
) -> Result<Option<(usize, usize)>> {
    // The header is encoded where it is sent from, after the room of the
    // ULPDU_Length field (a Send's or Write's header: never a TERMINATE).
    let mut head = [0u8; 2 + MAX_HDR_LEN];
    let header_len = job
        .header(segment, head.get_mut(2..).unwrap_or(&mut []))
        .ok_or(EINVAL)?;
    // The send call's pieces: the head, the payload where it lies, the
    // tail (PAD and CRC). The payload goes into its slots at once.
    let mut kvecs: [&[u8]; SINGLE_PIECES + 2] = [&[]; SINGLE_PIECES + 2];
    let mut data_pieces = 0;
    let mut done = 0u32;
    while done < segment.len {
        if data_pieces == SINGLE_PIECES {
            return Ok(None);
        }
        let msg_offset = segment.offset.checked_add(done).ok_or(EINVAL)?;
        let chunk = job.payload(out.entered, msg_offset, segment.len - done)?;
        if chunk.is_empty() {
            return Err(EFAULT);
        }
        data_pieces += 1;
        if let Some(slot) = kvecs.get_mut(data_pieces) {
            *slot = chunk;
        }
        done += chunk.len() as u32;
    }
    let mut tail = [0u8; PLAIN_TAIL_MAX];
    let mut crc32c = KernelCrc32c::new();
    let (head_len, tail_len) = frame_plain_head(
        header_len,
        kvecs.get(1..1 + data_pieces).unwrap_or(&[]),
        crc.then_some(&mut crc32c),
        &mut head,
        &mut tail,
    )
    .map_err(|_| EINVAL)?;
    if let Some(slot) = kvecs.first_mut() {
        *slot = head.get(..head_len).unwrap_or(&[]);
    }
    if let Some(slot) = kvecs.get_mut(1 + data_pieces) {
        *slot = tail.get(..tail_len).unwrap_or(&[]);
    }
    let total = head_len + segment.len as usize + tail_len;
    let sent_len = out
        .sock
        .send(kvecs.get(..data_pieces + 2).unwrap_or(&[]), more)?;
    Ok(Some((sent_len, total)))
}

/// The general way of [`send_batch`]: the planner, for messages of several
/// FPDUs, markers, TERMINATEs and resumed partial sends. `hdr_len` is the
/// job's.
#[inline(never)]
fn send_planned(
    emission: &mut Emission<'_>,
    out: &Out<'_, '_>,
    stats: &Stats,
    queued: bool,
    hdr_len: usize,
) -> Result<Sent> {
    let job = emission.job;
    let crc = emission.limits.mode.crc;
    let mut planner = emission
        .pos
        .planner(emission.limits, hdr_len, job.src.buffers(), CAPS);
    let mut batch = Batch::new(emission.scratch, out.entered);
    batch.plan(&mut planner, job, hdr_len, crc)?;
    if batch.pieces_used == 0 {
        // Nothing fits (cannot happen with the caps above).
        return Err(EINVAL);
    }
    let mut kvecs: [&[u8]; MAX_PIECES] = [&[]; MAX_PIECES];
    let (kvec_count, total) = batch.kvecs(&mut kvecs)?;
    // More segments of the message follow right away: let TCP coalesce.
    let more = !planner.end().message_done();
    let rest = skip_taken(
        kvecs.get_mut(..kvec_count).unwrap_or(&mut []),
        emission.pos.taken(),
    );
    let sent_len = match out.sock.send(rest, more || queued) {
        Ok(sent_len) => sent_len,
        Err(err) if err == EAGAIN => {
            stats.inc(Counter::TxTcpFull);
            return Ok(Sent::TcpFull);
        }
        Err(err) => return Err(err),
    };
    stats.inc(Counter::TxTcpSends);
    emission.sent(queued, more);
    Ok(account(emission, stats, sent_len, total, &planner))
}

/// Accounts the `sent_len` octets TCP took of a batch of `total` octets planned
/// by `planner`.
fn account(
    emission: &mut Emission<'_>,
    stats: &Stats,
    sent_len: usize,
    total: usize,
    planner: &BatchPlanner,
) -> Sent {
    let taken = emission.pos.account(sent_len, total, planner.end());
    if taken == Taken::Part {
        stats.inc(Counter::TxTcpFull);
        return Sent::TcpFull;
    }
    emission.count(stats, planner.fpdus(), planner.payload());
    if taken == Taken::Message {
        Sent::Done
    } else {
        Sent::More
    }
}

/// One kvec piece of a batch under construction.
#[derive(Clone, Copy)]
enum Piece<'a> {
    /// Scratch octets `start..end`.
    Scratch(usize, usize),
    /// Payload octets.
    Data(&'a [u8]),
}

/// The pieces of one send call under construction, with the scratch area
/// the fields between the payload pieces are written into.
struct Batch<'a, 's> {
    /// The pieces, `pieces_used` of them valid.
    pieces: [Piece<'a>; MAX_PIECES],
    /// Pieces used.
    pieces_used: usize,
    /// Scratch octets used.
    scratch_used: usize,
    scratch: &'s mut [u8; SCRATCH],
    /// The job's memory, entered for this batch.
    entered: &'s Entered<'s>,
}

impl<'a, 's> Batch<'a, 's> {
    fn new(scratch: &'s mut [u8; SCRATCH], entered: &'s Entered<'s>) -> Self {
        Self {
            pieces: [Piece::Scratch(0, 0); MAX_PIECES],
            pieces_used: 0,
            scratch_used: 0,
            scratch,
            entered,
        }
    }

    fn push(&mut self, piece: Piece<'a>) -> Result {
        // Merge adjacent scratch ranges into one kvec.
        if let (Piece::Scratch(start, end), Some(Piece::Scratch(_, last_end))) = (
            piece,
            self.pieces_used
                .checked_sub(1)
                .and_then(|i| self.pieces.get_mut(i)),
        ) {
            if *last_end == start {
                *last_end = end;
                return Ok(());
            }
        }
        let slot = self.pieces.get_mut(self.pieces_used).ok_or(ENOSPC)?;
        *slot = piece;
        self.pieces_used += 1;
        Ok(())
    }

    /// Appends `bytes` to the scratch area and as a piece.
    fn put(&mut self, bytes: &[u8]) -> Result {
        let start = self.scratch_used;
        let end = start.checked_add(bytes.len()).ok_or(ENOSPC)?;
        self.scratch
            .get_mut(start..end)
            .ok_or(ENOSPC)?
            .copy_from_slice(bytes);
        self.scratch_used = end;
        self.push(Piece::Scratch(start, end))
    }

    /// Frames the FPDUs `planner` plans for `job` (headers of `hdr_len`
    /// octets, with a CRC when `crc`) into the batch.
    fn plan(
        &mut self,
        planner: &mut BatchPlanner,
        job: &'a Job,
        hdr_len: usize,
        crc: bool,
    ) -> Result {
        let mut hdr = [0u8; HDR_MAX];
        let mut crc32c = KernelCrc32c::new();
        while let Some((segment, plan)) = planner.next_fpdu(self.pieces_used, self.scratch_used) {
            let header_len = job.header(&segment, &mut hdr).ok_or(EINVAL)?;
            if header_len != hdr_len {
                return Err(EINVAL);
            }
            crc32c.reset();
            self.frame(job, &segment, &plan, &hdr, crc.then_some(&mut crc32c))?;
        }
        Ok(())
    }

    /// Frames one FPDU of `segment` of `job` laid out by `plan`, with
    /// header `hdr`; the CRC is computed into `crc` when there is one.
    fn frame(
        &mut self,
        job: &'a Job,
        segment: &Segment,
        plan: &FpduPlan,
        hdr: &[u8],
        mut crc: Option<&mut KernelCrc32c>,
    ) -> Result {
        let mut crc_bytes = None;
        for piece in plan.pieces() {
            match piece {
                TxPiece::Inline(inline) => {
                    self.put(inline.bytes())?;
                    if let Some(crc32c) = crc.as_deref_mut().filter(|_| inline.crc) {
                        crc32c.update(inline.bytes());
                    }
                }
                TxPiece::Header { start, end } => {
                    let bytes = hdr.get(start as usize..end as usize).ok_or(EINVAL)?;
                    self.put(bytes)?;
                    if let Some(crc32c) = crc.as_deref_mut() {
                        crc32c.update(bytes);
                    }
                }
                TxPiece::Payload { offset, len } => {
                    let msg_offset = segment.offset.checked_add(offset).ok_or(EINVAL)?;
                    self.payload(job, msg_offset, len, crc.as_deref_mut())?;
                }
                TxPiece::Crc { start, end } => {
                    let crc_wire = *crc_bytes.get_or_insert_with(|| match crc.as_deref() {
                        Some(crc32c) => crc_to_wire(crc32c.finalize()),
                        None => [0; 4],
                    });
                    let bytes = crc_wire
                        .get(usize::from(start)..usize::from(end))
                        .ok_or(EINVAL)?;
                    self.put(bytes)?;
                }
            }
        }
        Ok(())
    }

    /// Appends `len` payload octets of `job` from message offset `off`,
    /// where they lie, one piece per contiguous run.
    fn payload(
        &mut self,
        job: &'a Job,
        off: u32,
        len: u32,
        mut crc: Option<&mut KernelCrc32c>,
    ) -> Result {
        let mut done = 0u32;
        while done < len {
            let msg_offset = off.checked_add(done).ok_or(EINVAL)?;
            let chunk = job.payload(self.entered, msg_offset, len - done)?;
            if chunk.is_empty() {
                return Err(EFAULT);
            }
            if let Some(crc32c) = crc.as_deref_mut() {
                crc32c.update(chunk);
            }
            self.push(Piece::Data(chunk))?;
            done += chunk.len() as u32;
        }
        Ok(())
    }

    /// The batch as kvecs in `v`: their number and the batch's length.
    fn kvecs<'v>(&'v self, slots: &mut [&'v [u8]; MAX_PIECES]) -> Result<(usize, usize)> {
        let mut total = 0;
        for (slot, piece) in slots
            .iter_mut()
            .zip(self.pieces.iter().take(self.pieces_used))
        {
            let bytes: &[u8] = match *piece {
                Piece::Scratch(start, end) => self.scratch.get(start..end).ok_or(EINVAL)?,
                Piece::Data(data) => data,
            };
            total += bytes.len();
            *slot = bytes;
        }
        Ok((self.pieces_used, total))
    }
}
