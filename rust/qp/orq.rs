// SPDX-License-Identifier: GPL-2.0

//! The QP's RDMA Read queues and what they hold: the [`Orq`] of outbound
//! Reads awaiting their Read Response (ORD), the [`Irq`] of inbound Read
//! Requests to answer (IRD) with the TERMINATE the receive side hands to
//! the transmit work, both in a bounded [`Fifo`] (the ring of
//! [`crate::state::fifo`] in a `KVec`), and [`WrRef`], what the completion
//! of a work request whose queue slot was given back needs.

use kernel::{alloc::AllocError, prelude::*};

use crate::kif::siw::{Opcode, RawOpcode, Sge, Sqe, WqeFlags};
use crate::mem::access::MemRef;
use crate::state::fifo::{self, Slots};
use crate::wire::rdmap::ReadRequest;

/// Largest TERMINATE ULPDU: header (22), DDP segment length (2) and a
/// copied Read Request header (46).
pub(super) const TERM_MAX: usize = 72;

/// A bounded first-in first-out queue in a `KVec` whose capacity (ORD or
/// IRD) is set when the connection starts; none before.
pub type Fifo<T> = fifo::Fifo<T, KVec<Option<T>>>;

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
pub struct OrqEntry {
    /// Work request id.
    pub id: u64,
    /// Work request flags.
    pub flags: WqeFlags,
    /// [`Opcode::Read`] or [`Opcode::ReadLocalInv`].
    pub opcode: Opcode,
    /// The sink SGE (STag = lkey, TO = address).
    pub sink: Sge,
    /// The sink memory (none for a zero-length Read).
    pub(crate) mem: Option<MemRef>,
    /// Octets of the response placed so far.
    pub placed: u32,
}

impl OrqEntry {
    /// What its completion needs.
    pub fn wr(&self) -> WrRef {
        WrRef {
            id: self.id,
            flags: self.flags,
            opcode: self.opcode.into(),
        }
    }
}

/// Outbound RDMA Reads awaiting their Read Response (at most ORD).
pub struct Orq {
    pub(super) q: Fifo<OrqEntry>,
    /// The transmit work stopped at a Read (ORD reached) or a fenced work
    /// request: the Read Response that frees a slot wakes it.
    pub(super) stalled: bool,
}

/// What a completion needs of a work request whose slot was given back.
#[derive(Clone, Copy, Debug)]
pub struct WrRef {
    /// Work request id.
    pub id: u64,
    /// Work request flags.
    pub flags: WqeFlags,
    /// Opcode, as the element had it.
    pub opcode: RawOpcode,
}

impl WrRef {
    /// The reference of a send queue element.
    pub fn of(sqe: &Sqe) -> Self {
        Self {
            id: sqe.id,
            flags: sqe.flags,
            opcode: sqe.opcode,
        }
    }
}

impl Default for Orq {
    fn default() -> Self {
        Self::new()
    }
}

impl Default for Irq {
    fn default() -> Self {
        Self::new()
    }
}

impl Orq {
    /// An empty queue (no capacity until the connection starts).
    pub const fn new() -> Self {
        Self {
            q: Fifo::from_slots(KVec::new()),
            stalled: false,
        }
    }

    /// Removes the oldest outstanding Read; also says whether the
    /// transmit work waits for that (see `stalled`).
    pub fn pop_wake(&mut self) -> (Option<OrqEntry>, bool) {
        let e = self.pop();
        (e, core::mem::take(&mut self.stalled))
    }

    /// Outstanding Reads.
    pub fn len(&self) -> usize {
        self.q.len()
    }

    /// Whether no Read is outstanding.
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// The oldest outstanding Read.
    pub fn head_mut(&mut self) -> Option<&mut OrqEntry> {
        self.q.head_mut()
    }

    /// Removes the oldest outstanding Read.
    pub fn pop(&mut self) -> Option<OrqEntry> {
        self.q.pop()
    }
}

/// An inbound RDMA Read Request to answer.
#[derive(Clone, Copy, Debug)]
pub struct IrqEntry {
    /// The request.
    pub rr: ReadRequest,
    /// Its MSN (for the copied header of a TERMINATE).
    pub msn: u32,
}

/// A TERMINATE ULPDU waiting to be sent.
#[derive(Clone, Copy)]
pub struct TermMsg {
    pub(super) buf: [u8; TERM_MAX],
    pub(super) len: u8,
}

/// Inbound RDMA Read Requests to answer (at most IRD), plus the requests
/// the receive side (softirq) passes to the transmit work.
pub struct Irq {
    pub(super) q: Fifo<IrqEntry>,
    /// A response is being sent (it still takes an IRD slot).
    pub(super) active: bool,
    /// A TERMINATE to send, then the QP goes to error.
    pub(super) term: Option<TermMsg>,
}

impl Irq {
    /// An empty queue (no capacity until the connection starts).
    pub const fn new() -> Self {
        Self {
            q: Fifo::from_slots(KVec::new()),
            active: false,
            term: None,
        }
    }

    /// Queues a Read Request; `false` when IRD is exhausted.
    pub fn push(&mut self, e: IrqEntry) -> bool {
        // As siw: the response being sent does not count (it left the
        // queue), so a peer may see IRD + 1 accepted; this also covers the
        // peer's next Read Request overtaking our bookkeeping of the
        // response whose last octet just went out.
        self.q.push(e).is_ok()
    }
}
