// SPDX-License-Identifier: GPL-2.0

//! The QP's RDMA Read queues and what they hold: [`OutboundReads`], the
//! outbound Reads awaiting their Read Response (ORD), and [`InboundReads`],
//! the inbound Read Requests to answer (IRD) with the TERMINATE the receive
//! side hands to the transmit work, both in a bounded [`Fifo`] (the ring of
//! [`crate::state::fifo`] in a `KVec`), and [`WrRef`], what the completion
//! of a work request whose queue slot was given back needs.

use kernel::{alloc::AllocError, prelude::*};

use super::lockfree::LockFree;
use crate::kif::siw::{Opcode, RawOpcode, Sge, Sqe, WqeFlags};
use crate::mem::access::MemRef;
use crate::state::fifo::{self, Slots};
use crate::wire::{
    rdmap::ReadRequest,
    rfc7306::{AtomicRequest, Outstanding},
};

/// Largest TERMINATE ULPDU: header (22), DDP segment length (2) and a
/// copied header, at most an RFC 7306 Atomic Request's (70).
pub(super) const TERM_MAX: usize = 94;

/// A bounded first-in first-out queue in a `KVec` whose capacity (ORD or
/// IRD) is set when the connection starts; none before.
pub(crate) type Fifo<T> = fifo::Fifo<T, KVec<Option<T>>>;

impl<T> Slots<T> for KVec<Option<T>> {
    type Error = AllocError;

    fn with_len(n: usize) -> core::result::Result<Self, AllocError> {
        let mut ents = KVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            ents.push(None, GFP_KERNEL)?;
        }
        Ok(ents)
    }
}

/// An outbound RDMA Read awaiting its Read Response.
#[derive(Clone)]
pub(crate) struct OutboundRead {
    /// Work request id.
    pub(crate) id: u64,
    /// Work request flags.
    pub(crate) flags: WqeFlags,
    /// [`Opcode::Read`] or [`Opcode::ReadLocalInv`], or an RFC 7306
    /// atomic ([`Opcode::FetchAdd`], [`Opcode::CmpSwap`], sharing ORD
    /// with the Reads), whose response is an Atomic Response.
    pub(crate) opcode: Opcode,
    /// The sink SGE (STag = lkey, TO = address).
    pub(crate) sink: Sge,
    /// The sink memory (none for a zero-length Read).
    pub(crate) mem: Option<MemRef>,
    /// Octets of the response placed so far.
    pub(crate) placed: u32,
    /// The Request Identifier of an atomic (0 for a Read).
    pub(crate) req_id: u32,
}

impl OutboundRead {
    /// Whether it is an atomic (not a Read).
    pub(crate) fn is_atomic(&self) -> bool {
        matches!(self.opcode, Opcode::FetchAdd | Opcode::CmpSwap)
    }

    /// What its completion needs.
    pub(crate) fn wr(&self) -> WrRef {
        WrRef {
            id: self.id,
            flags: self.flags,
            opcode: self.opcode.into(),
        }
    }
}

/// Outbound RDMA Reads awaiting their Read Response (at most ORD), under
/// the QP's `outbound_reads` lock; its fields change only through its
/// methods.
pub(crate) struct OutboundReads {
    /// The Reads, oldest first.
    q: Fifo<OutboundRead>,
    /// The transmit work stopped at a Read (ORD reached) or a fenced work
    /// request: the Read Response that frees a slot wakes it.
    stalled: bool,
}

/// What a completion needs of a work request whose slot was given back.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WrRef {
    /// Work request id.
    pub(crate) id: u64,
    /// Work request flags.
    pub(crate) flags: WqeFlags,
    /// Opcode, as the element had it.
    pub(crate) opcode: RawOpcode,
}

impl WrRef {
    /// The reference of a send queue element.
    pub(crate) fn of(sqe: &Sqe) -> Self {
        Self {
            id: sqe.id,
            flags: sqe.flags,
            opcode: sqe.opcode,
        }
    }
}

impl Default for OutboundReads {
    fn default() -> Self {
        Self::new()
    }
}

impl Default for InboundReads {
    fn default() -> Self {
        Self::new()
    }
}

impl OutboundReads {
    /// An empty queue (no capacity until the connection starts).
    pub(crate) const fn new() -> Self {
        Self {
            q: Fifo::from_slots(KVec::new()),
            stalled: false,
        }
    }

    /// Empties the queue for a new connection, with room for `q`'s
    /// capacity (ORD) from now on; returns the old one (to be dropped
    /// without the lock).
    pub(crate) fn restart(&mut self, q: Fifo<OutboundRead>) -> Fifo<OutboundRead> {
        self.stalled = false;
        core::mem::replace(&mut self.q, q)
    }

    /// What the oldest outstanding request is (an atomic answers with
    /// an Atomic Response, a Read with a Read Response); `None` when
    /// nothing is outstanding.
    pub(crate) fn head_kind(&mut self) -> Option<Outstanding> {
        self.q.head_mut().map(|h| {
            if h.is_atomic() {
                Outstanding::Atomic(h.req_id)
            } else {
                Outstanding::Read
            }
        })
    }

    /// ORD: how many Reads may be outstanding (0 before the connection
    /// started, or when it allows none).
    pub(crate) fn capacity(&self) -> usize {
        self.q.capacity()
    }

    /// Queues the Read `e`; `false` when ORD is reached, and then the
    /// transmit work waits: the Read Response that frees a slot wakes it
    /// (see [`OutboundReads::pop_wake`]).
    pub(crate) fn push(&mut self, e: OutboundRead) -> bool {
        if self.q.push(e).is_err() {
            self.stalled = true;
            return false;
        }
        true
    }

    /// A read-fenced work request is next: whether it must wait for the
    /// outstanding Reads; if so the transmit work waits, and the next
    /// Read Response wakes it (see [`OutboundReads::pop_wake`]).
    pub(crate) fn fence_waits(&mut self) -> bool {
        if self.q.is_empty() {
            return false;
        }
        self.stalled = true;
        true
    }

    /// Removes the oldest outstanding Read; also says whether the
    /// transmit work waits for that (see `stalled`).
    pub(crate) fn pop_wake(&mut self) -> (Option<OutboundRead>, bool) {
        let e = self.pop();
        (e, core::mem::take(&mut self.stalled))
    }

    /// The oldest outstanding Read.
    pub(crate) fn head_mut(&mut self) -> Option<&mut OutboundRead> {
        self.q.head_mut()
    }

    /// Removes the oldest outstanding Read.
    pub(crate) fn pop(&mut self) -> Option<OutboundRead> {
        self.q.pop()
    }
}

/// An inbound request of queue 1 to answer: an RDMA Read Request or an
/// RFC 7306 Atomic Request (which share IRD).
#[derive(Clone, Copy, Debug)]
pub(crate) struct InboundRead {
    /// The request.
    pub(crate) request: Inbound,
    /// Its MSN (for the copied header of a TERMINATE).
    pub(crate) msn: u32,
}

/// What an [`InboundRead`] asks for.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Inbound {
    /// An RDMA Read Request.
    Read(ReadRequest),
    /// An Atomic Request.
    Atomic(AtomicRequest),
}

/// A TERMINATE ULPDU waiting to be sent.
#[derive(Clone, Copy)]
pub(crate) struct TermMsg {
    pub(super) buf: [u8; TERM_MAX],
    pub(super) len: u8,
}

/// Inbound RDMA Read Requests to answer (at most IRD), plus the requests
/// the receive side (softirq) passes to the transmit work, under the QP's
/// `inbound_reads` lock; its fields change only through its methods, which
/// also raise the QP's lock-free flag that sends the transmit side here
/// ([`LockFree::note_inbound_reads_queued`]) with what they queue.
pub(crate) struct InboundReads {
    /// The Read Requests, oldest first.
    q: Fifo<InboundRead>,
    /// A TERMINATE to send, then the QP goes to error.
    term: Option<TermMsg>,
}

impl InboundReads {
    /// An empty queue (no capacity until the connection starts).
    pub(crate) const fn new() -> Self {
        Self {
            q: Fifo::from_slots(KVec::new()),
            term: None,
        }
    }

    /// Empties the queue for a new connection, with room for `q`'s
    /// capacity (IRD) from now on: no response in progress, no TERMINATE.
    /// Returns the old queue (to be dropped without the lock).
    pub(crate) fn restart(&mut self, q: Fifo<InboundRead>) -> Fifo<InboundRead> {
        self.term = None;
        core::mem::replace(&mut self.q, q)
    }

    /// Queues a Read Request and tells the transmit side (`lf`, the QP's
    /// lock-free state); `false` when IRD is exhausted.
    pub(super) fn push(&mut self, e: InboundRead, lf: &LockFree) -> bool {
        // As siw: the response being sent does not count (it left the
        // queue), so a peer may see IRD + 1 accepted; this also covers the
        // peer's next Read Request overtaking our bookkeeping of the
        // response whose last octet just went out.
        if self.q.push(e).is_err() {
            return false;
        }
        lf.note_inbound_reads_queued();
        true
    }

    /// Queues the TERMINATE `t` and tells the transmit side (`lf`);
    /// `false` if one was queued already.
    pub(super) fn queue_term(&mut self, t: TermMsg, lf: &LockFree) -> bool {
        if self.term.is_some() {
            return false;
        }
        self.term = Some(t);
        lf.note_inbound_reads_queued();
        true
    }

    /// Whether a TERMINATE waits to be sent.
    pub(crate) fn term_pending(&self) -> bool {
        self.term.is_some()
    }

    /// The transmit side's look (after
    /// [`LockFree::take_inbound_reads_queued`]): takes the TERMINATE if there
    /// is one, else with `reads` the oldest Read Request, whose response
    /// the transmit side sends next. Tells the transmit side (`lf`) to look again
    /// when work is left.
    pub(super) fn take_work(
        &mut self,
        reads: bool,
        lf: &LockFree,
    ) -> (Option<TermMsg>, Option<InboundRead>) {
        let r = match self.term.take() {
            Some(t) => (Some(t), None),
            None if reads => (None, self.q.pop()),
            None => (None, None),
        };
        if self.term.is_some() || !self.q.is_empty() {
            lf.note_inbound_reads_queued();
        }
        r
    }
}
