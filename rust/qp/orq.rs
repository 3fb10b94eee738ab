// SPDX-License-Identifier: GPL-2.0

//! The QP's RDMA Read queues and what they hold: the bounded [`Fifo`],
//! the [`Orq`] of outbound Reads awaiting their Read Response (ORD), the
//! [`Irq`] of inbound Read Requests to answer (IRD) with the TERMINATE the
//! receive side hands to the transmit work, and [`WrRef`], what the
//! completion of a work request whose queue slot was given back needs.

use kernel::{prelude::*, sync::Arc};

use crate::kif::siw::{Sge, Sqe};
use crate::mem::Mem;
use crate::wire::rdmap::ReadRequest;

/// Largest TERMINATE ULPDU: header (22), DDP segment length (2) and a
/// copied Read Request header (46).
pub(super) const TERM_MAX: usize = 72;

/// A bounded first-in first-out queue whose capacity (ORD or IRD) is set
/// when the connection starts; none before.
pub struct Fifo<T> {
    ents: KVec<Option<T>>,
    head: usize,
    len: usize,
}

impl<T> Fifo<T> {
    /// A queue without capacity.
    pub const fn new() -> Self {
        Self {
            ents: KVec::new(),
            head: 0,
            len: 0,
        }
    }

    /// An empty queue of `cap` slots.
    pub(super) fn with_capacity(cap: usize) -> Result<Self> {
        let mut ents = KVec::with_capacity(cap, GFP_KERNEL)?;
        for _ in 0..cap {
            ents.push(None, GFP_KERNEL)?;
        }
        Ok(Self {
            ents,
            head: 0,
            len: 0,
        })
    }

    /// Queued entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slots in all.
    pub(super) fn capacity(&self) -> usize {
        self.ents.len()
    }

    /// The oldest entry.
    fn head_mut(&mut self) -> Option<&mut T> {
        if self.len == 0 {
            return None;
        }
        self.ents.get_mut(self.head).and_then(|e| e.as_mut())
    }

    /// Removes the oldest entry.
    pub(super) fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let cap = self.ents.len();
        let e = self.ents.get_mut(self.head).and_then(|e| e.take());
        self.head = (self.head + 1) % cap.max(1);
        self.len -= 1;
        e
    }

    /// Appends `e`; gives it back when the queue is full.
    pub(super) fn push(&mut self, e: T) -> core::result::Result<(), T> {
        let cap = self.ents.len();
        if self.len >= cap {
            return Err(e);
        }
        let i = (self.head + self.len) % cap;
        match self.ents.get_mut(i) {
            Some(slot) => {
                *slot = Some(e);
                self.len += 1;
                Ok(())
            }
            None => Err(e),
        }
    }
}

/// An outbound RDMA Read awaiting its Read Response.
#[derive(Clone)]
pub struct OrqEntry {
    /// Work request id.
    pub id: u64,
    /// Work request flags.
    pub flags: u16,
    /// `op::READ` or `op::READ_LOCAL_INV`.
    pub opcode: u8,
    /// The sink SGE (STag = lkey, TO = address).
    pub sink: Sge,
    /// The sink memory (none for a zero-length Read).
    pub mem: Option<Arc<Mem>>,
    /// Octets of the response placed so far.
    pub placed: u32,
}

impl OrqEntry {
    /// What its completion needs.
    pub fn wr(&self) -> WrRef {
        WrRef {
            id: self.id,
            flags: self.flags,
            opcode: self.opcode,
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
    pub flags: u16,
    /// Opcode.
    pub opcode: u8,
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

impl<T> Default for Fifo<T> {
    fn default() -> Self {
        Self::new()
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
            q: Fifo::new(),
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
            q: Fifo::new(),
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
