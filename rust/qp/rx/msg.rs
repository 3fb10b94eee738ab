// SPDX-License-Identifier: GPL-2.0

//! The Send message being received into a receive queue element: the
//! element, the memory its SGEs name, how far it is filled (the wire
//! core's [`UntaggedMsg`]) and the status it completes with.

use crate::kif::siw::{Rqe, Sge, Status, WqeFlags, MAX_SGE};
use crate::mem::access::{self, invalidate_now, resolve, MemRef, StagCache};
use crate::qp::Qp;
use crate::wire::{
    error::{DdpError, ProtocolError, RdmapError},
    inbound::{scatter, ScatterError, UntaggedMsg},
    rdmap::Opcode,
};

const NO_MEM: Option<MemRef> = None;

/// A receive completion to make: the element, the octets placed and the
/// status.
pub(super) type RecvCompletion = (Rqe, u32, Status);

/// The Send message in progress, if its [`UntaggedMsg`] is active. It
/// stays in place between messages: starting one writes only what that
/// message uses (the RQE's SGEs in use, their memory), not a whole new
/// element, and ending one drops only those memory references.
pub(super) struct RecvMsg {
    msg: UntaggedMsg,
    rqe: Rqe,
    /// The memory each SGE in use names (checked when it began).
    mems: [Option<MemRef>; MAX_SGE],
    /// SGEs in use.
    num_sge: usize,
    /// Invalidate STag of Send with Invalidate (first segment).
    inval: u32,
    opcode: Opcode,
    /// Completion status if the message failed locally.
    status: Status,
}

impl RecvMsg {
    pub(super) const fn new() -> Self {
        const NO_SGE: Sge = Sge {
            addr: 0,
            length: 0,
            lkey: 0,
        };
        Self {
            msg: UntaggedMsg::idle(),
            rqe: Rqe {
                id: 0,
                flags: WqeFlags::empty(),
                num_sge: 0,
                sge: [NO_SGE; MAX_SGE],
            },
            mems: [NO_MEM; MAX_SGE],
            num_sge: 0,
            inval: 0,
            opcode: Opcode::Send,
            status: Status::Success,
        }
    }

    /// A message is in progress.
    pub(super) fn is_active(&self) -> bool {
        self.msg.is_active()
    }

    /// The message in progress, if any.
    pub(super) fn get_mut(&mut self) -> Option<&mut Self> {
        self.msg.is_active().then_some(self)
    }

    /// Checks the MO of a segment (see [`UntaggedMsg::check_mo`]).
    pub(super) fn check_mo(&self, mo: u32) -> Result<(), ProtocolError> {
        self.msg.check_mo(mo).map_err(Into::into)
    }

    /// Where the next element goes: the slot of the message to begin.
    pub(super) fn rqe_slot(&mut self) -> &mut Rqe {
        &mut self.rqe
    }

    /// Begins a message in the element just taken into
    /// [`RecvMsg::rqe_slot`] on `qp`: `opcode` and `inval` from its first
    /// segment. Looks up the memory of each SGE (through the side's STag
    /// cache `stags`) and checks it belongs to the PD of the receive
    /// queue the element came from (the SRQ's for an SRQ, as in siw) and
    /// takes local writes; an element that fails completes with a
    /// protection error and the stream fails.
    pub(super) fn begin(
        &mut self,
        qp: &Qp,
        opcode: Opcode,
        inval: u32,
        stags: &mut StagCache,
    ) -> Result<(), ProtocolError> {
        self.inval = inval;
        self.opcode = opcode;
        self.status = Status::Success;
        let max = (qp.caps.rq_max_sge as usize).clamp(1, MAX_SGE);
        let pd_id = qp.recv_pd_id();
        let num_sge = usize::from(self.rqe.num_sge);
        let mut bad = num_sge > max;
        let mut total = 0u32;
        self.num_sge = num_sge.min(MAX_SGE);
        for (sge, slot) in self
            .rqe
            .sge
            .iter()
            .zip(self.mems.iter_mut())
            .take(self.num_sge)
        {
            match total.checked_add(sge.length) {
                Some(sum) => total = sum,
                None => bad = true,
            }
            if sge.length == 0 || bad {
                continue;
            }
            let (len, need) = (u64::from(sge.length), access::LOCAL_WRITE);
            match resolve(&qp.mem_xa, stags, sge.lkey, pd_id, sge.addr, len, need) {
                Ok(mem) => *slot = Some(mem),
                Err(_) => bad = true,
            }
        }
        self.msg.begin(total);
        if bad {
            self.status = Status::LocProtErr;
            return Err(DdpError::LocalCatastrophic.into());
        }
        Ok(())
    }

    /// The element's SGE if it has exactly one, of nonzero length (the
    /// element taken into [`RecvMsg::rqe_slot`]).
    pub(super) fn single_sge(&self) -> Option<Sge> {
        match self.rqe.sge.first() {
            Some(sge) if self.rqe.num_sge == 1 && sge.length > 0 => Some(*sge),
            _ => None,
        }
    }

    /// Begins a message whose `placed` octets are in the element's one SGE
    /// already (see [`RecvMsg::single_sge`]; no memory reference is kept),
    /// as [`RecvMsg::begin`] and the placement would: `opcode` and
    /// `inval` from its segment.
    pub(super) fn begin_placed(&mut self, opcode: Opcode, inval: u32, placed: u32) {
        self.inval = inval;
        self.opcode = opcode;
        self.status = Status::Success;
        self.num_sge = 0;
        let total = self.rqe.sge.first().map_or(0, |sge| sge.length);
        self.msg.begin(total);
        self.msg.advance(placed);
    }

    /// Checks that `len` more octets fit the element; a message that
    /// does not completes with a length error.
    pub(super) fn check_room(&mut self, len: u32) -> Result<(), ProtocolError> {
        self.msg.check_room(len).map_err(|err| {
            self.status = Status::LocLenErr;
            err.into()
        })
    }

    /// Places `data`, the message's octets at `mo`, into the element's
    /// memory.
    pub(super) fn place(&mut self, mo: u32, data: &[u8]) -> Result<(), ProtocolError> {
        let pieces = self.rqe.sge.iter().zip(self.mems.iter()).take(self.num_sge);
        let pieces = pieces.map(|(sge, mem)| (sge.length, (sge.addr, mem)));
        let result = scatter(pieces, mo, data, |(addr, mem), off, now| {
            let addr = addr.wrapping_add(u64::from(off));
            match mem.as_ref().map(|mem| mem.write(addr, now).is_ok()) {
                Some(true) => Ok(()),
                _ => Err(()),
            }
        });
        match result {
            Ok(()) => Ok(()),
            Err(ScatterError::Put(())) => {
                self.status = Status::LocProtErr;
                Err(DdpError::LocalCatastrophic.into())
            }
            Err(ScatterError::TooLong) => {
                self.status = Status::LocLenErr;
                Err(DdpError::UntaggedTooLong.into())
            }
        }
    }

    /// A segment of `len` octets was placed.
    pub(super) fn advance(&mut self, len: u32) {
        self.msg.advance(len);
    }

    /// The message's last segment arrived: marks a solicited message's
    /// element and, for Send with Invalidate, invalidates the STag it
    /// carries (one of `qp`'s PD). Returns that STag, or the error the
    /// invalidation draws.
    pub(super) fn finish(&mut self, qp: &Qp) -> Result<Option<u32>, RdmapError> {
        if matches!(self.opcode, Opcode::SendSe | Opcode::SendSeInvalidate) {
            self.rqe.flags |= WqeFlags::SOLICITED;
        }
        if !self.opcode.has_invalidate() {
            return Ok(None);
        }
        // Index and key: a stale STag (an earlier registration cycle's
        // key) must not invalidate the current registration.
        // It cannot wait for a transfer inside the memory (that may be one
        // of this very connection, whose socket we hold): an STag in use
        // cannot be invalidated.
        invalidate_now(&qp.mem_xa, qp.pd_id, self.inval)?;
        Ok(Some(self.inval))
    }

    /// The element of the message.
    pub(super) fn rqe(&self) -> &Rqe {
        &self.rqe
    }

    /// Octets placed so far.
    pub(super) fn placed(&self) -> u32 {
        self.msg.placed()
    }

    /// The message failed locally: it completes with its own status.
    pub(super) fn failed(&self) -> bool {
        self.msg.is_active() && self.status != Status::Success
    }

    /// Ends the message in progress: its element, octets placed and
    /// status.
    pub(super) fn end(&mut self) -> Option<RecvCompletion> {
        let placed = self.msg.end()?;
        for slot in self.mems.iter_mut().take(self.num_sge) {
            *slot = None;
        }
        Some((self.rqe, placed, self.status))
    }
}
