// SPDX-License-Identifier: GPL-2.0

//! [`TxState`], the state behind a QP's transmit lock: the connection
//! sent on, the stream's position, the message in transmission and what
//! comes next on the send queue. The transmit engine changes it only
//! through its methods; the FPDU emission borrows the parts it works on
//! at once through an [`Emission`].

use kernel::sync::Arc;

use super::job::{Job, Kind};
use crate::base::stats::{Counter, Stats};
use crate::mem::access::StagCache;
use crate::qp::{details::Traffic, Conn};
use crate::wire::{
    mpa::MpaMode,
    txstream::{CallCaps, TxLimits, TxPos},
};

/// Scratch octets for ULPDU_Length, headers, markers, PAD and CRC fields.
pub(super) const SCRATCH: usize = 2048;

/// Transmit state of a QP (the work request in progress).
pub(crate) struct TxState {
    /// The stream's committed position (see [`TxPos`]).
    pos: TxPos,
    /// Last MSN sent per untagged queue (the first message carries 1).
    msn: [u32; 4],
    /// The message in transmission while `live`, built in place (see
    /// [`TxState::slot`]).
    job: Job,
    live: bool,
    /// FPDU sizes and markers/CRC of the connection, from [`start`](Self::start).
    limits: TxLimits,
    /// The peer-to-peer RTR is still to be sent (before any work request).
    rtr: bool,
    /// The send queue slot after the last work request taken: when it is
    /// valid, another message follows right away.
    sq_next: Option<u32>,
    /// The last TCP send ended a message with `MSG_MORE` because another
    /// one followed (small messages share TCP segments): TCP holds the
    /// tail until the next send or
    /// [`Socket::push`](crate::kif::sock::Socket::push).
    corked: bool,
    /// The connection sent on (from [`start`](Self::start) until
    /// [`Qp::drop_conn`](crate::qp::Qp::drop_conn) takes it: nothing is
    /// sent any more), kept here so that the transmit function need not
    /// take the QP's connection lock per message.
    conn: Option<Arc<Conn>>,
    /// The last STag looked up for transmission.
    stags: StagCache,
    /// What went to TCP (whole batches).
    sent: Traffic,
    /// The last [`CallCaps::max_payload`] asked for, see
    /// [`Emission::max_payload`].
    max_payload: MaxPayload,
    scratch: [u8; SCRATCH],
}

/// [`CallCaps::max_payload`] of the connection's limits for one header
/// length and number of buffers: the same for every message of a kind,
/// and a loop over the worst case of an FPDU to compute, so it is kept
/// for the next message (`hdr_len` 0: nothing kept).
#[derive(Clone, Copy, Default)]
struct MaxPayload {
    hdr_len: usize,
    buffers: usize,
    max: u32,
}

impl Default for TxState {
    fn default() -> Self {
        Self::new()
    }
}

impl TxState {
    /// Idle state: nothing is sent before [`start`](Self::start).
    pub(in crate::qp) fn new() -> Self {
        Self {
            pos: TxPos::new(0),
            msn: [0; 4],
            job: Job::idle(),
            live: false,
            limits: TxLimits::default(),
            rtr: false,
            sq_next: None,
            corked: false,
            conn: None,
            stags: StagCache::new(),
            sent: Traffic::default(),
            max_payload: MaxPayload::default(),
            scratch: [0; SCRATCH],
        }
    }

    /// Starts the stream on `conn` (MPA full operation, stream offset 0),
    /// as negotiated there; forgets any earlier stream.
    pub(super) fn start(&mut self, conn: Arc<Conn>) {
        self.limits = TxLimits {
            mode: MpaMode {
                markers: conn.tx_markers,
                crc: conn.crc,
            },
            mulpdu: conn.mulpdu,
            large_fpdu: conn.large_fpdu,
        };
        self.rtr = conn.send_rtr;
        self.conn = Some(conn);
        self.pos = TxPos::new(0);
        self.msn = [0; 4];
        self.job.release();
        self.live = false;
        self.sq_next = None;
        self.corked = false;
        self.max_payload = MaxPayload::default();
    }

    /// The connection sent on, once started and until taken.
    pub(super) fn conn(&self) -> Option<&Conn> {
        self.conn.as_deref()
    }

    /// The FPDUs and payload octets sent so far.
    pub(in crate::qp) fn sent(&self) -> Traffic {
        self.sent
    }

    /// Takes the connection away (the QP drops it): nothing is sent on it
    /// any more.
    pub(in crate::qp) fn take_conn(&mut self) -> Option<Arc<Conn>> {
        self.conn.take()
    }

    /// Whether no batch is partly taken by TCP: a message may be
    /// abandoned here without breaking the framing.
    pub(super) fn between_batches(&self) -> bool {
        self.pos.between_batches()
    }

    /// What the message in transmission is.
    pub(super) fn job_kind(&self) -> Option<Kind> {
        self.live.then_some(self.job.kind)
    }

    /// Length of the message in transmission.
    pub(super) fn job_total(&self) -> Option<u32> {
        self.live.then_some(self.job.total)
    }

    /// The job's slot with what a job picker needs besides it, while no
    /// message is in transmission; the picker builds the job there and
    /// starts it with [`begin_job`](Self::begin_job), or gives up and
    /// leaves it with [`Job::release`].
    pub(super) fn slot(&mut self) -> Slot<'_> {
        debug_assert!(!self.live);
        Slot {
            job: &mut self.job,
            stags: &mut self.stags,
            msn: &mut self.msn,
        }
    }

    /// Makes the job built in [`slot`](Self::slot) the message in
    /// transmission, from its first octet.
    pub(super) fn begin_job(&mut self) {
        self.pos.begin(self.job.total);
        self.live = true;
    }

    /// Ends the message in transmission (sent, failed or abandoned);
    /// returns what it was and its length.
    pub(super) fn end_job(&mut self) -> Option<(Kind, u32)> {
        if !core::mem::take(&mut self.live) {
            return None;
        }
        self.job.release();
        Some((self.job.kind, self.job.total))
    }

    /// In the Terminate state: abandons the message in transmission unless
    /// it is the TERMINATE or TCP took part of its batch (its work request
    /// is flushed when the QP goes to error).
    pub(super) fn abandon_for_terminate(&mut self) {
        if self.pos.between_batches() && self.job_kind() != Some(Kind::Term) {
            let _ = self.end_job();
        }
    }

    /// Whether the peer-to-peer RTR is still to be sent.
    pub(super) fn rtr_pending(&self) -> bool {
        self.rtr
    }

    /// Queues a zero length RDMA Write, as the RTR is (see
    /// `Qp::wake_silent_peer`).
    pub(in crate::qp) fn request_rtr(&mut self) {
        self.rtr = true;
    }

    /// Takes the pending peer-to-peer RTR.
    pub(super) fn take_rtr(&mut self) -> bool {
        core::mem::take(&mut self.rtr)
    }

    /// The send queue slot after the last work request taken.
    pub(super) fn sq_next(&self) -> Option<u32> {
        self.sq_next
    }

    /// Takes the slot [`sq_next`](Self::sq_next) says.
    pub(super) fn take_sq_next(&mut self) -> Option<u32> {
        self.sq_next.take()
    }

    /// The send queue goes on at slot `idx`.
    pub(super) fn set_sq_next(&mut self, idx: u32) {
        self.sq_next = Some(idx);
    }

    /// Pushes what TCP holds back after a message sent with `MSG_MORE`
    /// (the transmit function stops without sending the message that was
    /// to follow).
    pub(super) fn uncork(&mut self) {
        if core::mem::take(&mut self.corked) {
            if let Some(conn) = &self.conn {
                conn.sock.push();
            }
        }
    }

    /// The parts FPDU emission works on, borrowed at once: `Ok(None)`
    /// without a message, an error without a connection.
    pub(super) fn emission(&mut self) -> kernel::error::Result<Option<Emission<'_>>> {
        let Some(conn) = self.conn.as_deref() else {
            return Err(crate::kif::compat::error::enotconn());
        };
        if !self.live {
            return Ok(None);
        }
        let job = &self.job;
        Ok(Some(Emission {
            conn,
            job,
            limits: &self.limits,
            pos: &mut self.pos,
            corked: &mut self.corked,
            sent: &mut self.sent,
            max_payload: &mut self.max_payload,
            scratch: &mut self.scratch,
        }))
    }
}

/// A job picker's view of the [`TxState`] (see [`TxState::slot`]): the
/// job's slot, the STag cache and the MSNs.
pub(super) struct Slot<'a> {
    /// The job, built here in place.
    pub(super) job: &'a mut Job,
    /// The cache of the last STag looked up for transmission.
    pub(super) stags: &'a mut StagCache,
    /// Last MSN sent per untagged queue.
    msn: &'a mut [u32; 4],
}

impl Slot<'_> {
    /// The MSN the next message on untagged queue `qn` will carry (not
    /// taken yet; 0 for an unknown queue).
    pub(super) fn peek_msn(&self, qn: u32) -> u32 {
        self.msn.get(qn as usize).map_or(0, |m| m.wrapping_add(1))
    }

    /// The MSN of the next message on untagged queue `qn`.
    pub(super) fn next_msn(&mut self, qn: u32) -> u32 {
        let Some(msn) = self.msn.get_mut(qn as usize) else {
            return 0;
        };
        *msn = msn.wrapping_add(1);
        *msn
    }
}

/// What FPDU emission works on: the message, the stream's position and
/// the scratch area, borrowed from the [`TxState`] at once.
pub(super) struct Emission<'a> {
    /// The connection sent on.
    pub(super) conn: &'a Conn,
    /// The message in transmission.
    pub(super) job: &'a Job,
    /// FPDU sizes and markers/CRC of the connection.
    pub(super) limits: &'a TxLimits,
    /// The stream's committed position.
    pub(super) pos: &'a mut TxPos,
    corked: &'a mut bool,
    sent: &'a mut Traffic,
    max_payload: &'a mut MaxPayload,
    /// Scratch octets for the fields written between payload pieces.
    pub(super) scratch: &'a mut [u8; SCRATCH],
}

impl Emission<'_> {
    /// [`CallCaps::max_payload`] of `caps` for the connection's limits,
    /// a header of `hdr_len` octets and payload from `buffers` buffers,
    /// computed once per connection and kind of message.
    pub(super) fn max_payload(&mut self, caps: &CallCaps, hdr_len: usize, buffers: usize) -> u32 {
        let kept = *self.max_payload;
        if kept.hdr_len == hdr_len && kept.buffers == buffers && hdr_len != 0 {
            return kept.max;
        }
        let max = caps.max_payload(self.limits, hdr_len, buffers);
        *self.max_payload = MaxPayload {
            hdr_len,
            buffers,
            max,
        };
        max
    }

    /// Notes a send call to TCP with `MSG_MORE` set when `queued` (another
    /// message follows) or `more` (the message goes on): a send without it
    /// pushes everything TCP held back before.
    pub(super) fn sent(&mut self, queued: bool, more: bool) {
        *self.corked = queued || (more && *self.corked);
    }

    /// Counts `fpdus` FPDUs with `payload` octets that went to TCP, for
    /// the QP and in the device's counters `stats`.
    pub(super) fn count(&mut self, stats: &Stats, fpdus: u64, payload: u64) {
        self.sent.add(fpdus, payload);
        stats.add(Counter::TxFpdus, fpdus);
        stats.add(Counter::TxPayload, payload);
    }
}
