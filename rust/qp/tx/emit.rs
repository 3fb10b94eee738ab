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
    let Some(mut e) = tx.emission()? else {
        return Ok(Sent::Done);
    };
    let sock = e.conn.sock.lock_send();
    let entered = match e.job.src.enter() {
        Ok(entered) => entered,
        Err(fault) => return Ok(Sent::MemoryGone(fault)),
    };
    let out = Out {
        sock: &sock,
        entered: &entered,
    };
    let hdr_len = e.job.hdr_len();
    // The common case, a message (or its rest) that fits one FPDU without
    // markers: framed around the payload directly, without the planner.
    if !e.limits.mode.markers && e.job.term.is_none() {
        let max = CAPS.max_payload(e.limits, hdr_len, e.job.src.buffers());
        if let Some(sg) = e.pos.rest_in_one(max) {
            if let Some(sent) = send_rest_in_one(&mut e, &out, &sg, stats, queued)? {
                return Ok(sent);
            }
        }
    }
    send_planned(&mut e, &out, stats, queued, hdr_len)
}

/// Where one send call's octets go and come from: the locked socket and
/// the job's entered memory.
struct Out<'a, 'b> {
    sock: &'a SendLock<'b>,
    entered: &'a Entered<'b>,
}

/// Sends segment `sg`, the rest of the job, as one FPDU without markers
/// and accounts it. `None` when the payload has too many pieces for that
/// (nothing was sent).
fn send_rest_in_one(
    e: &mut Emission<'_>,
    out: &Out<'_, '_>,
    sg: &Segment,
    stats: &Stats,
    queued: bool,
) -> Result<Option<Sent>> {
    let single = match send_single(out, e.job, sg, e.limits.mode.crc, queued) {
        Err(err) if err == EAGAIN => return Ok(Some(Sent::TcpFull)),
        r => r?,
    };
    let Some((n, total)) = single else {
        return Ok(None);
    };
    stats.inc(Counter::TxTcpSends);
    e.sent(queued, false);
    if e.pos.account_one(n, total) == Taken::Part {
        // The planned way rebuilds the same octets and goes on after the
        // `n` TCP took.
        stats.inc(Counter::TxTcpFull);
        return Ok(Some(Sent::TcpFull));
    }
    e.count(stats, 1, u64::from(sg.len));
    Ok(Some(Sent::Done))
}

/// Payload pieces [`send_single`] handles (more go the planned way).
const SINGLE_PIECES: usize = 4;

/// Sends segment `sg` (the last one) of `job` as one FPDU without markers:
/// ULPDU_Length and header, the payload where it lies, PAD and CRC.
/// Returns the octets TCP took and the FPDU's length, or `None` when the
/// payload has more than [`SINGLE_PIECES`] pieces (nothing was sent).
fn send_single(
    out: &Out<'_, '_>,
    job: &Job,
    sg: &Segment,
    crc: bool,
    more: bool,
) -> Result<Option<(usize, usize)>> {
    // The header is encoded where it is sent from, after the room of the
    // ULPDU_Length field.
    let mut head = [0u8; 2 + HDR_MAX];
    let hn = job
        .header(sg, head.get_mut(2..).unwrap_or(&mut []))
        .ok_or(EINVAL)?;
    let mut data: [&[u8]; SINGLE_PIECES] = [&[]; SINGLE_PIECES];
    let mut nd = 0;
    let mut done = 0u32;
    while done < sg.len {
        let Some(slot) = data.get_mut(nd) else {
            return Ok(None);
        };
        let o = sg.offset.checked_add(done).ok_or(EINVAL)?;
        let d = job.payload(out.entered, o, sg.len - done)?;
        if d.is_empty() {
            return Err(EFAULT);
        }
        *slot = d;
        nd += 1;
        done += d.len() as u32;
    }
    let data = data.get(..nd).unwrap_or(&[]);
    let mut tail = [0u8; PLAIN_TAIL_MAX];
    let mut c = KernelCrc32c::new();
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
    let n = out.sock.send(v.get(..nd + 2).unwrap_or(&[]), more)?;
    Ok(Some((n, total)))
}

/// The general way of [`send_batch`]: the planner, for messages of several
/// FPDUs, markers, TERMINATEs and resumed partial sends. `hdr_len` is the
/// job's.
#[inline(never)]
fn send_planned(
    e: &mut Emission<'_>,
    out: &Out<'_, '_>,
    stats: &Stats,
    queued: bool,
    hdr_len: usize,
) -> Result<Sent> {
    let job = e.job;
    let crc = e.limits.mode.crc;
    let mut planner = e.pos.planner(e.limits, hdr_len, job.src.buffers(), CAPS);
    let mut batch = Batch::new(e.scratch, out.entered);
    batch.plan(&mut planner, job, hdr_len, crc)?;
    if batch.n == 0 {
        // Nothing fits (cannot happen with the caps above).
        return Err(EINVAL);
    }
    let mut v: [&[u8]; MAX_PIECES] = [&[]; MAX_PIECES];
    let (nv, total) = batch.kvecs(&mut v)?;
    // More segments of the message follow right away: let TCP coalesce.
    let more = !planner.end().message_done();
    let rest = skip_taken(v.get_mut(..nv).unwrap_or(&mut []), e.pos.taken());
    let n = match out.sock.send(rest, more || queued) {
        Ok(n) => n,
        Err(err) if err == EAGAIN => {
            stats.inc(Counter::TxTcpFull);
            return Ok(Sent::TcpFull);
        }
        Err(err) => return Err(err),
    };
    stats.inc(Counter::TxTcpSends);
    e.sent(queued, more);
    Ok(account(e, stats, n, total, &planner))
}

/// Accounts the `n` octets TCP took of a batch of `total` octets planned
/// by `planner`.
fn account(
    e: &mut Emission<'_>,
    stats: &Stats,
    n: usize,
    total: usize,
    planner: &BatchPlanner,
) -> Sent {
    let taken = e.pos.account(n, total, planner.end());
    if taken == Taken::Part {
        stats.inc(Counter::TxTcpFull);
        return Sent::TcpFull;
    }
    e.count(stats, planner.fpdus(), planner.payload());
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
    p: [Piece<'a>; MAX_PIECES],
    n: usize,
    /// Scratch octets used.
    s: usize,
    scratch: &'s mut [u8; SCRATCH],
    /// The job's memory, entered for this batch.
    entered: &'s Entered<'s>,
}

impl<'a, 's> Batch<'a, 's> {
    fn new(scratch: &'s mut [u8; SCRATCH], entered: &'s Entered<'s>) -> Self {
        Self {
            p: [Piece::Scratch(0, 0); MAX_PIECES],
            n: 0,
            s: 0,
            scratch,
            entered,
        }
    }

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
    fn put(&mut self, bytes: &[u8]) -> Result {
        let start = self.s;
        let end = start.checked_add(bytes.len()).ok_or(ENOSPC)?;
        self.scratch
            .get_mut(start..end)
            .ok_or(ENOSPC)?
            .copy_from_slice(bytes);
        self.s = end;
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
        let mut c = KernelCrc32c::new();
        while let Some((sg, plan)) = planner.next_fpdu(self.n, self.s) {
            let hn = job.header(&sg, &mut hdr).ok_or(EINVAL)?;
            if hn != hdr_len {
                return Err(EINVAL);
            }
            c.reset();
            self.frame(job, &sg, &plan, &hdr, crc.then_some(&mut c))?;
        }
        Ok(())
    }

    /// Frames one FPDU of segment `sg` of `job` laid out by `plan`, with
    /// header `hdr`; the CRC is computed into `crc` when there is one.
    fn frame(
        &mut self,
        job: &'a Job,
        sg: &Segment,
        plan: &FpduPlan,
        hdr: &[u8],
        mut crc: Option<&mut KernelCrc32c>,
    ) -> Result {
        let mut crc_bytes = None;
        for piece in plan.pieces() {
            match piece {
                TxPiece::Inline(i) => {
                    self.put(i.bytes())?;
                    if let Some(c) = crc.as_deref_mut().filter(|_| i.crc) {
                        c.update(i.bytes());
                    }
                }
                TxPiece::Header { start, end } => {
                    let b = hdr.get(start as usize..end as usize).ok_or(EINVAL)?;
                    self.put(b)?;
                    if let Some(c) = crc.as_deref_mut() {
                        c.update(b);
                    }
                }
                TxPiece::Payload { offset, len } => {
                    let o = sg.offset.checked_add(offset).ok_or(EINVAL)?;
                    self.payload(job, o, len, crc.as_deref_mut())?;
                }
                TxPiece::Crc { start, end } => {
                    let v = *crc_bytes.get_or_insert_with(|| match crc.as_deref() {
                        Some(c) => crc_to_wire(c.finalize()),
                        None => [0; 4],
                    });
                    let b = v.get(usize::from(start)..usize::from(end)).ok_or(EINVAL)?;
                    self.put(b)?;
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
            let o = off.checked_add(done).ok_or(EINVAL)?;
            let d = job.payload(self.entered, o, len - done)?;
            if d.is_empty() {
                return Err(EFAULT);
            }
            if let Some(c) = crc.as_deref_mut() {
                c.update(d);
            }
            self.push(Piece::Data(d))?;
            done += d.len() as u32;
        }
        Ok(())
    }

    /// The batch as kvecs in `v`: their number and the batch's length.
    fn kvecs<'v>(&'v self, v: &mut [&'v [u8]; MAX_PIECES]) -> Result<(usize, usize)> {
        let mut total = 0;
        for (slot, p) in v.iter_mut().zip(self.p.iter().take(self.n)) {
            let b: &[u8] = match *p {
                Piece::Scratch(a, e) => self.scratch.get(a..e).ok_or(EINVAL)?,
                Piece::Data(d) => d,
            };
            total += b.len();
            *slot = b;
        }
        Ok((self.n, total))
    }
}
