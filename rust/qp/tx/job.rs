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
pub(super) enum Src {
    /// No payload.
    None,
    /// The inline data of the work request.
    Inline([u8; MAX_INLINE]),
    /// Registered memory: the first `num_sge` SGEs of `Job::sqe` with their
    /// checked memory references.
    Sgl {
        mems: [Option<MemRef>; MAX_SGE],
        num_sge: usize,
    },
}

/// The memory of a job entered for one send call (see
/// [`MemRef::enter`]): its payload may be read only while this lives, and
/// no invalidation or deregistration of that memory completes meanwhile.
pub(super) struct Entered<'a> {
    inside: [Option<Inside<'a>>; MAX_SGE],
}

impl Src {
    /// Registered memory `mem` as the only SGE.
    pub(super) fn one(mem: MemRef) -> Self {
        const NONE: Option<MemRef> = None;
        let mut mems = [NONE; MAX_SGE];
        mems[0] = Some(mem);
        Self::Sgl { mems, num_sge: 1 }
    }

    /// Enters the memory of every SGE for one send call; fails with
    /// [`MemFault::Stag`] once one of their registrations ended (nothing
    /// more of the message may be read).
    pub(super) fn enter(&self) -> core::result::Result<Entered<'_>, MemFault> {
        let mut entered = Entered {
            inside: [const { None }; MAX_SGE],
        };
        if let Self::Sgl { mems, num_sge } = self {
            for (slot, mem) in entered.inside.iter_mut().zip(mems.iter()).take(*num_sge) {
                if let Some(mem) = mem {
                    *slot = Some(mem.enter()?);
                }
            }
        }
        Ok(entered)
    }

    /// Buffers the payload lies in (one for inline data and no payload).
    pub(super) fn buffers(&self) -> usize {
        match self {
            Self::Sgl { num_sge, .. } => (*num_sge).max(1),
            Self::Inline(_) | Self::None => 1,
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

/// The message being transmitted.
pub(super) struct Job {
    pub(super) kind: Kind,
    /// The work request (Sends/Writes/Reads); the SGL of `Src::Sgl`.
    pub(super) sqe: Sqe,
    /// Header of the first segment (later segments adjust MO/TO and L).
    pub(super) hdr: SegmentHeader,
    /// Message length.
    pub(super) total: u32,
    pub(super) src: Src,
    /// TERMINATE ULPDU (with `Kind::Term`).
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
    /// The TERMINATE `term`.
    pub(super) fn terminate(term: TermMsg) -> Self {
        Self {
            kind: Kind::Term,
            sqe: empty_sqe(),
            hdr: SegmentHeader::send(Opcode::Send, 0, 0, 0, true),
            total: 0,
            src: Src::None,
            term: Some(term),
        }
    }

    /// The peer-to-peer RTR. siw uses STag 1 ("some HW may treat STag 0
    /// special"); a zero length Write's STag is not checked by the
    /// receiver.
    pub(super) fn rtr() -> Self {
        Self {
            kind: Kind::Rtr,
            sqe: empty_sqe(),
            hdr: SegmentHeader::write(1, 0, true),
            total: 0,
            src: Src::None,
            term: None,
        }
    }

    /// A message of `kind` with no TERMINATE.
    pub(super) fn message(kind: Kind, sqe: Sqe, hdr: SegmentHeader, total: u32, src: Src) -> Self {
        Self {
            kind,
            sqe,
            hdr,
            total,
            src,
            term: None,
        }
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
        match &self.src {
            Src::None => Err(EINVAL),
            Src::Inline(data) => {
                let start = off as usize;
                let end = start.checked_add(max as usize).ok_or(EINVAL)?;
                data.get(start..end).ok_or(EINVAL)
            }
            Src::Sgl { mems, num_sge } => {
                let mut base = 0u32;
                let sges = self.sqe.sge.iter().zip(mems.iter());
                for ((sge, mem), inside) in sges.zip(entered.inside.iter()).take(*num_sge) {
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
