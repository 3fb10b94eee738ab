// SPDX-License-Identifier: GPL-2.0

//! Memory access by the data path: the IB access flags (`enum
//! ib_access_flags`), resolving an STag into a checked [`MemRef`] (with
//! a one-entry cache per QP side; validity, key, PD, rights and bounds in
//! one consistent look), each piece of a transfer inside the memory's
//! gate ([`MemRef::enter`], [`MemRef::write`]), invalidation, and copying
//! out of and into registered memory (user pages, DMA MRs,
//! fast-registration page lists), and what a refusal becomes: the
//! completion status of a local work request, the TERMINATE of a tagged
//! segment or of a Read Request ([`MemFault`]). Shared by the transmit
//! and the receive side of the QPs.
//!
//! The rule it keeps: after an invalidation or deregistration completed,
//! not one octet is placed into the memory or read out of it. A transfer
//! is checked once against a registration and re-enters that same
//! registration for every piece; the memory's gate
//! ([`crate::state::gate`]) counts the pieces inside, and a
//! deregistration or Local Invalidate waits for them to leave.

use core::sync::atomic::Ordering;
use kernel::{prelude::*, sync::Arc};

use super::{Mem, MemKind, Pbl};
use crate::kif::{
    compat::sync::SpinLockIrq,
    rcu_xarray::{LookupCache, RcuXArray},
    rdma::umem::{kernel_atomic_update, kernel_slice, kernel_write},
    siw::Status,
};
use crate::state::gate::{InvalidateError, Ticket};
use crate::wire::error::{DdpError, ProtocolError, RdmapError};

// IB access flags (`enum ib_access_flags`).

/// Local write.
pub(crate) const LOCAL_WRITE: u32 = 1;
/// Remote write.
pub(crate) const REMOTE_WRITE: u32 = 2;
/// Remote read.
pub(crate) const REMOTE_READ: u32 = 4;
/// Remote atomic.
pub(crate) const REMOTE_ATOMIC: u32 = 8;
/// Memory window bind.
pub(crate) const MW_BIND: u32 = 16;
/// The flags an iWARP memory object keeps (remote atomic: RFC 7306, for
/// kernel QPs).
pub(crate) const IWARP_MASK: u32 = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC;

/// Why a memory reference was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemFault {
    /// Unknown, stale (key mismatch) or invalidated STag, or a
    /// registration that ended since the transfer was checked.
    Stag,
    /// The memory belongs to another protection domain.
    Pd,
    /// The access right is missing.
    Access,
    /// The range is outside the memory object.
    Bounds,
    /// The range wraps past 2^64 (its address plus its length overflows).
    Wrap,
    /// The copy itself failed (a page list shorter than its length).
    Copy,
}

/// The completion status of a work request whose local memory (an SGE,
/// the sink of a Read) was refused.
impl From<MemFault> for Status {
    fn from(fault: MemFault) -> Self {
        match fault {
            MemFault::Bounds | MemFault::Wrap => Self::LocLenErr,
            MemFault::Access => Self::LocAccessErr,
            MemFault::Stag | MemFault::Pd | MemFault::Copy => Self::LocProtErr,
        }
    }
}

impl MemFault {
    /// The TERMINATE error of a tagged DDP segment (a Write, a Read
    /// Response) whose sink memory was refused: DDP's tagged buffer
    /// errors (RFC 5041 section 7), but missing rights are RDMAP's access
    /// rights violation (RFC 5040 section 4.8).
    pub(crate) fn tagged_error(self) -> ProtocolError {
        match self {
            Self::Stag => DdpError::TaggedInvalidStag.into(),
            Self::Pd => DdpError::TaggedStagNotAssociated.into(),
            Self::Access => RdmapError::AccessRights.into(),
            Self::Bounds => DdpError::TaggedBaseBounds.into(),
            Self::Wrap => DdpError::TaggedToWrap.into(),
            Self::Copy => DdpError::LocalCatastrophic.into(),
        }
    }

    /// The RDMAP TERMINATE error of a Read Request whose source memory
    /// was refused, or went away while its Read Response was sent (RFC
    /// 5040 4.8: a source TO + size past 2^64 is TO wrap, not
    /// base/bounds).
    pub(crate) fn read_error(self) -> RdmapError {
        match self {
            Self::Stag => RdmapError::InvalidStag,
            Self::Pd => RdmapError::StagNotAssociated,
            Self::Access => RdmapError::AccessRights,
            Self::Bounds => RdmapError::BaseBounds,
            Self::Wrap => RdmapError::ToWrap,
            Self::Copy => RdmapError::LocalCatastrophic,
        }
    }
}

/// The last STag index one side of a QP looked up: the next message
/// usually names the same memory (a hit skips the xarray walk, which is
/// four levels deep for random STag indices).
pub(crate) type StagCache = LookupCache<Mem>;

/// A transfer inside a memory object's gate: the registration it was
/// checked against cannot end (invalidation and deregistration wait for,
/// or fail on, the transfers inside) until this is dropped. Held for one
/// piece of a transfer: one received chunk's copy, one send call.
pub(crate) struct Inside<'a> {
    mem: &'a Mem,
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.mem.gate.leave();
    }
}

/// A memory object checked for one use (a tagged segment, an SGE of a
/// work request, the source of a Read Response, the sink of a Read):
/// the STag resolved, and key, PD, rights and range checked in one
/// consistent look at the registration, which the ticket names. Each
/// piece of the transfer enters that same registration again
/// ([`MemRef::enter`]); once it was invalidated or deregistered, nothing
/// more is placed into the memory or read from it.
#[derive(Clone)]
pub(crate) struct MemRef {
    mem: Arc<Mem>,
    ticket: Ticket,
}

impl MemRef {
    /// Enters the registration this reference was checked against, for
    /// one piece of the transfer; [`MemFault::Stag`] once it ended.
    pub(crate) fn enter(&self) -> core::result::Result<Inside<'_>, MemFault> {
        self.mem
            .gate
            .enter(self.ticket)
            .map_err(|_| MemFault::Stag)?;
        Ok(Inside { mem: &self.mem })
    }

    /// Copies `data` into the memory at `addr` (within the range checked),
    /// inside the registration it was checked against.
    pub(crate) fn write(&self, addr: u64, data: &[u8]) -> core::result::Result<(), MemFault> {
        let _inside = self.enter()?;
        mem_write(&self.mem, addr, data).map_err(|_| MemFault::Copy)
    }

    /// Replaces the 64-bit word at `addr` (within the range checked) by
    /// `f` of its value, inside the registration it was checked against,
    /// and returns the value before: the target of an RFC 7306 Atomic
    /// Operation. It is a real 64-bit atomic (the CPU's
    /// compare-and-exchange on the word, retried until it holds), not a
    /// device lock: atomic with respect to every atomic of this device on
    /// any QP and to the CPU's own atomic accesses to the word (what
    /// `IB_ATOMIC_GLOB` describes; the device advertises none, see
    /// `verbs.rs`). [`MemFault::Copy`]
    /// when the word's kernel address is not 8-aligned (a user region
    /// whose user and tagged addresses differ in their low bits).
    pub(crate) fn atomic(
        &self,
        addr: u64,
        f: impl FnMut(u64) -> u64,
    ) -> core::result::Result<u64, MemFault> {
        let _inside = self.enter()?;
        mem_atomic(&self.mem, addr, f).map_err(|_| MemFault::Copy)
    }

    /// A contiguous piece of the memory at `addr` (within the range
    /// checked), at most `max` octets (less at a page boundary). Only to
    /// be read while `inside` (this reference's [`MemRef::enter`]) lives.
    pub(crate) fn slice<'a>(
        &'a self,
        _inside: &Inside<'_>,
        addr: u64,
        max: u32,
    ) -> Result<&'a [u8]> {
        mem_slice(&self.mem, addr, max)
    }
}

/// Resolves `stag` in `table` (the device's [`Table`](super::Table),
/// through the side's one-entry `cache`) for `[addr, addr + len)` with
/// rights `need` by a QP of protection domain `pd_id`. The key and
/// validity are checked as the look-up enters the gate, and PD, rights
/// and range while inside it: one consistent look, which no
/// invalidation or re-registration can split.
pub(crate) fn resolve(
    table: &RcuXArray<Mem>,
    cache: &mut StagCache,
    stag: u32,
    pd_id: u32,
    addr: u64,
    len: u64,
    need: u32,
) -> core::result::Result<MemRef, MemFault> {
    let mem = table.get_cached(stag >> 8, cache).ok_or(MemFault::Stag)?;
    let ticket = mem
        .gate
        .enter_key((stag & 0xff) as u8)
        .map_err(|_| MemFault::Stag)?;
    let checked = {
        let _inside = Inside { mem: &mem };
        check_registration(&mem, pd_id, addr, len, need)
    };
    checked.map(|()| MemRef { mem, ticket })
}

/// Resolves `stag` as [`resolve`] does, for `[addr, addr + len)` with
/// rights `need`, and copies `data` (at most `len` octets) to `addr` in the
/// same look: a whole segment placed at once. No reference is kept (the
/// memory is borrowed under RCU for the copy), and the registration
/// checked is the one the copy is made inside. Must not sleep, as the
/// receive path does not.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn place(
    table: &RcuXArray<Mem>,
    cache: &mut StagCache,
    stag: u32,
    pd_id: u32,
    addr: u64,
    len: u64,
    data: &[u8],
    need: u32,
) -> core::result::Result<(), MemFault> {
    if data.len() as u64 > len {
        return Err(MemFault::Bounds);
    }
    table.with_cached(stag >> 8, cache, |mem| {
        let mem = mem.ok_or(MemFault::Stag)?;
        mem.gate
            .enter_key((stag & 0xff) as u8)
            .map_err(|_| MemFault::Stag)?;
        let _inside = Inside { mem: &mem };
        check_registration(&mem, pd_id, addr, len, need)?;
        mem_write(&mem, addr, data).map_err(|_| MemFault::Copy)
    })
}

/// PD, rights `need` and bounds of `[addr, addr + len)` in `mem`, whose
/// gate the caller is inside.
fn check_registration(
    mem: &Mem,
    pd_id: u32,
    addr: u64,
    len: u64,
    need: u32,
) -> core::result::Result<(), MemFault> {
    if mem.pd_id != pd_id {
        return Err(MemFault::Pd);
    }
    if mem.access.load(Ordering::Acquire) & need != need {
        return Err(MemFault::Access);
    }
    let va = mem.va.get();
    let end = addr.checked_add(len).ok_or(MemFault::Wrap)?;
    if addr < va || end > va.saturating_add(mem.len.get()) {
        return Err(MemFault::Bounds);
    }
    Ok(())
}

/// The memory object an invalidation (Send with Invalidate, Local
/// Invalidate, Read with Local Invalidate) names: index *and* key must
/// match (a stale STag of an earlier registration cycle names nothing and
/// must leave the current registration alone), and the memory must belong
/// to the QP's PD (`pd_id`). Errors: [`MemFault::Stag`] (unknown or stale)
/// or [`MemFault::Pd`].
fn lookup_inval(
    table: &RcuXArray<Mem>,
    pd_id: u32,
    stag: u32,
) -> core::result::Result<Arc<Mem>, MemFault> {
    let mem = table.get(stag >> 8).ok_or(MemFault::Stag)?;
    if mem.gate.key() != (stag & 0xff) as u8 {
        return Err(MemFault::Stag);
    }
    if mem.pd_id != pd_id {
        return Err(MemFault::Pd);
    }
    Ok(mem)
}

/// Why an invalidation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InvalFault {
    /// No such STag (or a stale key).
    Stag,
    /// The memory belongs to another protection domain.
    Pd,
    /// A transfer is inside the memory right now (remote and Read
    /// invalidations only, which cannot wait).
    Busy,
}

impl From<InvalidateError> for InvalFault {
    fn from(err: InvalidateError) -> Self {
        match err {
            InvalidateError::Stale => Self::Stag,
            InvalidateError::Busy => Self::Busy,
        }
    }
}

/// The RDMAP TERMINATE error of a Send with Invalidate whose STag could
/// not be invalidated.
impl From<InvalFault> for RdmapError {
    fn from(fault: InvalFault) -> Self {
        match fault {
            InvalFault::Pd => Self::ProtectionCannotInvalidate,
            InvalFault::Stag | InvalFault::Busy => Self::OperationCannotInvalidate,
        }
    }
}

impl From<MemFault> for InvalFault {
    fn from(fault: MemFault) -> Self {
        match fault {
            MemFault::Pd => Self::Pd,
            _ => Self::Stag,
        }
    }
}

/// Invalidates `stag` for a QP of `pd_id` where nothing may sleep (a
/// Send with Invalidate or a Read with Local Invalidate, in the receive
/// path): it fails if a transfer is inside the memory, possibly one of
/// this very connection, which waiting would deadlock.
pub(crate) fn invalidate_now(
    table: &RcuXArray<Mem>,
    pd_id: u32,
    stag: u32,
) -> core::result::Result<(), InvalFault> {
    let mem = lookup_inval(table, pd_id, stag)?;
    Ok(mem.gate.try_invalidate((stag & 0xff) as u8)?)
}

/// Invalidates `stag` for a QP of `pd_id` and waits until no transfer is
/// inside the memory any more (a Local Invalidate; process context).
pub(crate) fn invalidate_wait(
    table: &RcuXArray<Mem>,
    pd_id: u32,
    stag: u32,
) -> core::result::Result<(), InvalFault> {
    let mem = lookup_inval(table, pd_id, stag)?;
    mem.gate.close_key((stag & 0xff) as u8)?;
    mem.wait_idle();
    Ok(())
}

/// Kernel address and contiguous length of `addr` in a fast-registration
/// page list.
fn pbl_addr(mem: &Mem, list: &SpinLockIrq<Pbl>, addr: u64) -> Result<(u64, u64)> {
    let pbl = list.lock();
    let page_size = u64::from(pbl.page_size);
    if page_size == 0 {
        return Err(EFAULT);
    }
    let va = mem.va.get();
    let pos = (va % page_size)
        .checked_add(addr.checked_sub(va).ok_or(EFAULT)?)
        .ok_or(EFAULT)?;
    let idx = usize::try_from(pos / page_size).map_err(|_| EFAULT)?;
    if idx >= pbl.used {
        return Err(EFAULT);
    }
    let page = *pbl.pages.get(idx).ok_or(EFAULT)?;
    let in_pg = pos % page_size;
    Ok((page.checked_add(in_pg).ok_or(EFAULT)?, page_size - in_pg))
}

/// A contiguous read-only piece of `mem` starting at `addr`, at most `max`
/// octets (less at a page boundary). The caller checked the bounds.
fn mem_slice(mem: &Mem, addr: u64, max: u32) -> Result<&[u8]> {
    if max == 0 {
        return Ok(&[]);
    }
    match &mem.kind {
        MemKind::User(umem) => {
            let off = addr.checked_sub(mem.va.get()).ok_or(EFAULT)?;
            umem.slice(usize::try_from(off).map_err(|_| EFAULT)?, max as usize)
        }
        MemKind::Dma => kernel_slice(mem, addr, max as usize),
        MemKind::Pbl(pbl) => {
            let (kernel_addr, room) = pbl_addr(mem, pbl, addr)?;
            let len = u64::from(max).min(room) as usize;
            kernel_slice(mem, kernel_addr, len)
        }
    }
}

/// The atomic update of the word at `addr` of `mem` (see
/// [`MemRef::atomic`]). The caller checked the bounds.
fn mem_atomic(mem: &Mem, addr: u64, f: impl FnMut(u64) -> u64) -> Result<u64> {
    match &mem.kind {
        MemKind::User(umem) => {
            let off = addr.checked_sub(mem.va.get()).ok_or(EFAULT)?;
            umem.atomic_update(usize::try_from(off).map_err(|_| EFAULT)?, f)
        }
        MemKind::Dma => kernel_atomic_update(addr, f),
        MemKind::Pbl(pbl) => {
            let (kernel_addr, room) = pbl_addr(mem, pbl, addr)?;
            if room < 8 {
                return Err(EFAULT);
            }
            kernel_atomic_update(kernel_addr, f)
        }
    }
}

/// Copies `data` into `mem` at `addr`. The caller checked the bounds.
#[inline]
fn mem_write(mem: &Mem, addr: u64, data: &[u8]) -> Result {
    if data.is_empty() {
        return Ok(());
    }
    match &mem.kind {
        MemKind::User(umem) => {
            let off = addr.checked_sub(mem.va.get()).ok_or(EFAULT)?;
            let off = usize::try_from(off).map_err(|_| EFAULT)?;
            umem.with_range(off, data.len(), |dst, pos| {
                let src = pos
                    .checked_add(dst.len())
                    .and_then(|end| data.get(pos..end))
                    .ok_or(EFAULT)?;
                dst.copy_from_slice(src);
                Ok(())
            })
        }
        MemKind::Dma => kernel_write(addr, data),
        MemKind::Pbl(pbl) => {
            let mut done = 0usize;
            while done < data.len() {
                let piece_addr = addr.checked_add(done as u64).ok_or(EFAULT)?;
                let (kernel_addr, room) = pbl_addr(mem, pbl, piece_addr)?;
                let len = ((data.len() - done) as u64).min(room) as usize;
                let src = data.get(done..done + len).ok_or(EFAULT)?;
                kernel_write(kernel_addr, src)?;
                done += len;
            }
            Ok(())
        }
    }
}
