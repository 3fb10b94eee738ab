// SPDX-License-Identifier: GPL-2.0

//! The message the transmit engine sends: a [`Job`] (what kind of message,
//! its header, length and where its payload lies), built by the job
//! pickers and read by the FPDU emission.

use kernel::prelude::*;

use crate::kif::siw::{self, Sge, Sqe, WqeFlags, MAX_INLINE, MAX_SGE};
use crate::mem::access::{Inside, MemFault, MemRef};
use crate::qp::imm::ImmData;
use crate::qp::reads::TermMsg;
use crate::wire::{
    rdmap::{Opcode, SegmentHeader},
    tx::Segment,
};

/// Where a message's payload comes from.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Src {
    /// No payload.
    None,
    /// The inline data of the work request, in [`Job::inline`].
    Inline,
    /// Registered memory: the first `n` SGEs of [`Job::sqe`] with their
    /// checked memory references in [`Job::mems`].
    Sgl(usize),
}

/// The memory of a job entered for one send call (see
/// [`MemRef::enter`]): its payload may be read only while this lives, and
/// no invalidation or deregistration of that memory completes meanwhile.
pub(super) struct Entered<'a> {
    inside: [Option<Inside<'a>>; MAX_SGE],
}

impl Entered<'_> {
    /// No memory entered yet (see [`Job::enter`]).
    pub(super) const fn new() -> Self {
        Self {
            inside: [const { None }; MAX_SGE],
        }
    }
}

impl Src {
    /// Buffers the payload lies in (one for inline data and no payload).
    pub(super) fn buffers(self) -> usize {
        match self {
            Self::Sgl(n) => n.max(1),
            Self::Inline | Self::None => 1,
        }
    }
}

/// What a job is.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Send or Write (the active work request, see
    /// [`OutboundReads`](crate::qp::reads::OutboundReads)).
    Wr,
    /// The Write of a Write with Immediate (the active work request):
    /// the Immediate Data follows, see [`super::imm`].
    WriteImm(ImmData),
    /// RDMA Read Request (already in the outbound Read queue).
    ReadReq,
    /// RDMA Read Response.
    ReadResp,
    /// TERMINATE.
    Term,
    /// The peer-to-peer RTR: a zero length Write, no completion.
    Rtr,
}

/// The message being transmitted. It lives in the [`TxState`] and is
/// built there in place by the job pickers (a job is a few hundred
/// octets: a copy of the send queue element, the header, the checked
/// memory references, the inline data or TERMINATE): only the parts a
/// kind of message uses are written, the rest keeps what an earlier job
/// left (see each field).
///
/// [`TxState`]: super::TxState
pub(super) struct Job {
    pub(super) kind: Kind,
    /// The work request (Sends/Writes/Reads); the SGL of [`Src::Sgl`] (only
    /// its first SGEs are read then).
    pub(super) sqe: Sqe,
    /// Header of the first segment (later segments adjust MO/TO and L).
    pub(super) hdr: SegmentHeader,
    /// Message length.
    pub(super) total: u32,
    pub(super) src: Src,
    /// The memory references of [`Src::Sgl`]: all `None` outside a job
    /// (see [`Job::release`]).
    pub(super) mems: [Option<MemRef>; MAX_SGE],
    /// The inline payload of [`Src::Inline`].
    pub(super) inline: [u8; MAX_INLINE],
    /// TERMINATE ULPDU (with `Kind::Term`, `None` otherwise).
    pub(super) term: Option<TermMsg>,
}

/// A send queue element without a work request.
pub(super) fn empty_sqe() -> Sqe {
    Sqe {
        id: 0,
        flags: WqeFlags::empty(),
        num_sge: 0,
        opcode: siw::Opcode::Write.into(),
        rkey: 0,
        raddr: 0,
        sge: [Sge::default(); MAX_SGE],
        access: 0,
    }
}

impl Job {
    /// The slot of a job before the first one.
    pub(super) fn idle() -> Self {
        Self {
            kind: Kind::Rtr,
            sqe: empty_sqe(),
            hdr: SegmentHeader::write(1, 0, true),
            total: 0,
            src: Src::None,
            mems: [const { None }; MAX_SGE],
            inline: [0; MAX_INLINE],
            term: None,
        }
    }

    /// Makes this the TERMINATE `term`.
    pub(super) fn set_terminate(&mut self, term: TermMsg) {
        self.set(
            Kind::Term,
            SegmentHeader::send(Opcode::Send, 0, 0, 0, true),
            0,
            Src::None,
        );
        self.term = Some(term);
    }

    /// Makes this the peer-to-peer RTR. siw uses STag 1 ("some HW may treat
    /// STag 0 special"); a zero length Write's STag is not checked by the
    /// receiver.
    pub(super) fn set_rtr(&mut self) {
        self.set(Kind::Rtr, SegmentHeader::write(1, 0, true), 0, Src::None);
    }

    /// Makes this a message of `kind` with no TERMINATE; the payload `src`
    /// is in place already (the SGL in `sqe` and `mems`, or `inline`).
    pub(super) fn set(&mut self, kind: Kind, hdr: SegmentHeader, total: u32, src: Src) {
        self.kind = kind;
        self.hdr = hdr;
        self.total = total;
        self.src = src;
        self.term = None;
    }

    /// Drops the memory references of the job (it ended, or it was not
    /// made one): the registrations may go away.
    pub(super) fn release(&mut self) {
        if let Src::Sgl(n) = self.src {
            for mem in self.mems.iter_mut().take(n) {
                *mem = None;
            }
        }
        self.src = Src::None;
    }

    /// Enters the memory of every SGE for one send call, into `entered`
    /// (empty, see [`Entered::new`]; filled where it lies, as the payload
    /// is read through it there); fails with [`MemFault::Stag`] once one of
    /// their registrations ended (nothing more of the message may be read).
    pub(super) fn enter<'a>(
        &'a self,
        entered: &mut Entered<'a>,
    ) -> core::result::Result<(), MemFault> {
        if let Src::Sgl(n) = self.src {
            for (slot, mem) in entered.inside.iter_mut().zip(self.mems.iter()).take(n) {
                if let Some(mem) = mem {
                    *slot = Some(mem.enter()?);
                }
            }
        }
        Ok(())
    }

    /// Length of the DDP/RDMAP header (or of the TERMINATE ULPDU).
    pub(super) fn hdr_len(&self) -> usize {
        match &self.term {
            Some(term) => usize::from(term.len),
            None => self.hdr.len(),
        }
    }

    /// The header of segment `seg`, encoded into `out`.
    pub(super) fn header(&self, seg: &Segment, out: &mut [u8]) -> Option<usize> {
        if let Some(term) = &self.term {
            let len = usize::from(term.len);
            out.get_mut(..len)?.copy_from_slice(term.buf.get(..len)?);
            return Some(len);
        }
        self.hdr.encode_segment(seg.last, seg.offset, out)
    }

    /// A slice of the payload at message offset `off`, at most `max`
    /// octets (less where a buffer or a page ends), read while `entered`
    /// (the job's memory, [`Src::enter`]) lives.
    pub(super) fn payload(&self, entered: &Entered<'_>, off: u32, max: u32) -> Result<&[u8]> {
        match self.src {
            Src::None => Err(EINVAL),
            Src::Inline => {
                let start = off as usize;
                let end = start.checked_add(max as usize).ok_or(EINVAL)?;
                self.inline.get(start..end).ok_or(EINVAL)
            }
            Src::Sgl(n) => {
                let mut base = 0u32;
                let sges = self.sqe.sge.iter().zip(self.mems.iter());
                for ((sge, mem), inside) in sges.zip(entered.inside.iter()).take(n) {
                    let end = base.checked_add(sge.length).ok_or(EINVAL)?;
                    if off < end && sge.length > 0 {
                        let in_sge = off.checked_sub(base).ok_or(EINVAL)?;
                        let want = max.min(end - off);
                        let mem = mem.as_ref().ok_or(EINVAL)?;
                        let inside = inside.as_ref().ok_or(EINVAL)?;
                        let addr = sge.addr.checked_add(u64::from(in_sge)).ok_or(EINVAL)?;
                        return mem.slice(inside, addr, want);
                    }
                    base = end;
                }
                Err(EINVAL)
            }
        }
    }
}
