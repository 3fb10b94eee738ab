// SPDX-License-Identifier: GPL-2.0

//! Memory access by the data path: the IB access flags (`enum
//! ib_access_flags`), STag lookup (with a one-entry cache per QP side),
//! the validity, PD, access and bounds checks, and copying out of and
//! into registered memory (user pages, DMA MRs, fast-registration page
//! lists). Shared by the transmit and the receive side of the QPs.

use core::sync::atomic::Ordering;
use kernel::{prelude::*, sync::Arc};

use super::{Mem, MemKind, Pbl};
use crate::kif::{
    compat::sync::SpinLockIrq,
    rcu_xarray::{LookupCache, RcuXArray},
    rdma::umem::{kernel_slice, kernel_write},
};

// IB access flags (`enum ib_access_flags`).

/// Local write.
pub const LOCAL_WRITE: u32 = 1;
/// Remote write.
pub const REMOTE_WRITE: u32 = 2;
/// Remote read.
pub const REMOTE_READ: u32 = 4;
/// Remote atomic.
pub const REMOTE_ATOMIC: u32 = 8;
/// Memory window bind.
pub const MW_BIND: u32 = 16;
/// The flags an iWARP memory object keeps.
pub const IWARP_MASK: u32 = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ;

/// Why a memory reference was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemFault {
    /// Unknown, stale (key mismatch) or invalidated STag.
    Stag,
    /// The memory belongs to another protection domain.
    Pd,
    /// The access right is missing.
    Access,
    /// The range is outside the memory object.
    Bounds,
}

/// The last STag index one side of a QP looked up: the next message
/// usually names the same memory (a hit skips the xarray walk, which is
/// four levels deep for random STag indices).
pub(crate) type StagCache = LookupCache<Mem>;

/// The memory object an STag names (index and key) in `table` (the
/// device's [`Table`](super::Table)), if any.
pub(crate) fn lookup_stag(
    table: &RcuXArray<Mem>,
    stag: u32,
    cache: &mut StagCache,
) -> Option<Arc<Mem>> {
    let mem = table.get_cached(stag >> 8, cache)?;
    if mem.key.load(Ordering::Acquire) & 0xff != stag & 0xff {
        return None;
    }
    Some(mem)
}

/// The memory object an invalidation (Send with Invalidate, Local
/// Invalidate, Read with Local Invalidate) names: index *and* key must
/// match (a stale STag of an earlier registration cycle names nothing and
/// must leave the current registration alone), and the memory must belong
/// to the QP's PD (`pd_id`). Errors: [`MemFault::Stag`] (unknown or stale)
/// or [`MemFault::Pd`].
pub(crate) fn lookup_inval(
    table: &RcuXArray<Mem>,
    pd_id: u32,
    stag: u32,
) -> core::result::Result<Arc<Mem>, MemFault> {
    let mem = table.get(stag >> 8).ok_or(MemFault::Stag)?;
    if mem.key.load(Ordering::Acquire) & 0xff != stag & 0xff {
        return Err(MemFault::Stag);
    }
    if mem.pd_id != pd_id {
        return Err(MemFault::Pd);
    }
    Ok(mem)
}

/// Checks validity, PD, access rights `need` and bounds of `[addr, addr +
/// len)` of `mem` for a QP of protection domain `pd_id`.
pub(crate) fn check_mem(
    mem: &Mem,
    pd_id: u32,
    addr: u64,
    len: u64,
    need: u32,
) -> core::result::Result<(), MemFault> {
    if !mem.valid.load(Ordering::Acquire) {
        return Err(MemFault::Stag);
    }
    if mem.pd_id != pd_id {
        return Err(MemFault::Pd);
    }
    if mem.access.load(Ordering::Acquire) & need != need {
        return Err(MemFault::Access);
    }
    let va = mem.va.get();
    let end = addr.checked_add(len).ok_or(MemFault::Bounds)?;
    if addr < va || end > va.saturating_add(mem.len.get()) {
        return Err(MemFault::Bounds);
    }
    Ok(())
}

/// Kernel address and contiguous length of `addr` in a fast-registration
/// page list.
fn pbl_addr(mem: &Mem, p: &SpinLockIrq<Pbl>, addr: u64) -> Result<(u64, u64)> {
    let pbl = p.lock();
    let ps = u64::from(pbl.page_size);
    if ps == 0 {
        return Err(EFAULT);
    }
    let va = mem.va.get();
    let pos = (va % ps)
        .checked_add(addr.checked_sub(va).ok_or(EFAULT)?)
        .ok_or(EFAULT)?;
    let idx = usize::try_from(pos / ps).map_err(|_| EFAULT)?;
    if idx >= pbl.n {
        return Err(EFAULT);
    }
    let page = *pbl.pages.get(idx).ok_or(EFAULT)?;
    let in_pg = pos % ps;
    Ok((page.checked_add(in_pg).ok_or(EFAULT)?, ps - in_pg))
}

/// A contiguous read-only piece of `mem` starting at `addr`, at most `max`
/// octets (less at a page boundary). The caller checked the bounds.
pub(crate) fn mem_slice(mem: &Mem, addr: u64, max: u32) -> Result<&[u8]> {
    if max == 0 {
        return Ok(&[]);
    }
    match &mem.kind {
        MemKind::User(u) => {
            let off = addr.checked_sub(mem.va.get()).ok_or(EFAULT)?;
            u.slice(usize::try_from(off).map_err(|_| EFAULT)?, max as usize)
        }
        MemKind::Dma => kernel_slice(mem, addr, max as usize),
        MemKind::Pbl(p) => {
            let (ka, room) = pbl_addr(mem, p, addr)?;
            let n = u64::from(max).min(room) as usize;
            kernel_slice(mem, ka, n)
        }
    }
}

/// Copies `data` into `mem` at `addr`. The caller checked the bounds.
pub(crate) fn mem_write(mem: &Mem, addr: u64, data: &[u8]) -> Result {
    if data.is_empty() {
        return Ok(());
    }
    match &mem.kind {
        MemKind::User(u) => {
            let off = addr.checked_sub(mem.va.get()).ok_or(EFAULT)?;
            let off = usize::try_from(off).map_err(|_| EFAULT)?;
            u.with_range(off, data.len(), |dst, pos| {
                let src = pos
                    .checked_add(dst.len())
                    .and_then(|end| data.get(pos..end))
                    .ok_or(EFAULT)?;
                dst.copy_from_slice(src);
                Ok(())
            })
        }
        MemKind::Dma => kernel_write(addr, data),
        MemKind::Pbl(p) => {
            let mut done = 0usize;
            while done < data.len() {
                let a = addr.checked_add(done as u64).ok_or(EFAULT)?;
                let (ka, room) = pbl_addr(mem, p, a)?;
                let n = ((data.len() - done) as u64).min(room) as usize;
                let src = data.get(done..done + n).ok_or(EFAULT)?;
                kernel_write(ka, src)?;
                done += n;
            }
            Ok(())
        }
    }
}
