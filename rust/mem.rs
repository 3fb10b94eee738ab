// SPDX-License-Identifier: GPL-2.0

//! Memory registration: memory objects named by STags (index in the
//! device's xarray in the upper 24 bits, an 8-bit key chosen by the owner in
//! the lower 8), user MRs over pinned pages, DMA MRs and fast-registration
//! MRs for kernel consumers (the registration verbs). The data path's use
//! of that memory (STag lookup, access checks, copies) is [`access`].

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{prelude::*, sync::Arc};

use crate::base::{limits, Kind, Pd, Quota, Quotas, RsiwDriver};
use crate::kif::{
    compat::delay::sleep_ms,
    compat::sync::SpinLockIrq,
    rcu_xarray::RcuXArray,
    rdma::mr::{RegUserMr, ReregUserMr},
    rdma::umem::Umem,
    siw::uresp,
};
use crate::state::gate::MemGate;

pub(crate) mod access;

/// The memory objects of a device by STag index (shared with the QPs'
/// data path, which looks STags up under RCU).
pub(crate) type Table = Arc<RcuXArray<Mem>>;

/// Largest STag index (24 bits).
pub(crate) const STAG_MAX_INDEX: u32 = 0x00ff_ffff;

/// The page list of a fast-registration MR.
pub(crate) struct Pbl {
    /// DMA addresses of the pages (kernel virtual for rsiw's consumers);
    /// the first `used` are in use.
    pub(crate) pages: KVec<u64>,
    /// Pages in use.
    pub(crate) used: usize,
    /// Page size of the mapping.
    pub(crate) page_size: u32,
}

/// What a memory object describes.
pub(crate) enum MemKind {
    /// Pinned user pages.
    User(Umem),
    /// All kernel memory (a DMA MR of a kernel consumer).
    Dma,
    /// A fast-registration page list.
    Pbl(Pin<KBox<SpinLockIrq<Pbl>>>),
}

/// A memory object: what an STag names.
pub(crate) struct Mem {
    /// Index in the device's memory xarray (set once, at registration).
    index: AtomicU32,
    /// Validity, key (the low 8 bits of the STag), registration and the
    /// transfers inside (see [`access`]).
    pub(crate) gate: MemGate,
    /// The owning protection domain.
    pub(crate) pd_id: u32,
    /// First valid address (IOVA).
    pub(crate) va: AtomicU64Cell,
    /// Length in octets.
    pub(crate) len: AtomicU64Cell,
    /// IB access flags.
    pub(crate) access: AtomicU32,
    /// The backing memory.
    pub(crate) kind: MemKind,
}

/// A 64-bit value updated by fast registration and read by the data path.
pub(crate) struct AtomicU64Cell(core::sync::atomic::AtomicU64);

impl AtomicU64Cell {
    /// A new cell.
    pub(crate) fn new(value: u64) -> Self {
        Self(core::sync::atomic::AtomicU64::new(value))
    }
    /// Reads the value.
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
    /// Writes the value.
    pub(crate) fn set(&self, value: u64) {
        self.0.store(value, Ordering::Release)
    }
}

impl Mem {
    /// Index in the device's memory xarray.
    pub(crate) fn index(&self) -> u32 {
        self.index.load(Ordering::Acquire)
    }

    /// The full STag (with the key of the current or last registration).
    pub(crate) fn stag(&self) -> u32 {
        (self.index() << 8) | u32::from(self.gate.key())
    }

    /// Whether the STag may be used (registered and not invalidated).
    pub(crate) fn is_valid(&self) -> bool {
        self.gate.is_valid()
    }

    /// Waits until no transfer is inside the memory (after its gate was
    /// closed). Process context: a transfer inside is one copy or one
    /// send call, so this sleeps rarely and briefly.
    pub(crate) fn wait_idle(&self) {
        while self.gate.inside() != 0 {
            sleep_ms(1);
        }
    }

    /// Ends the registration: no transfer enters from now on, and none is
    /// inside when this returns (deregistration; process context).
    fn close(&self) {
        self.gate.close();
        self.wait_idle();
    }
}

/// A memory region as the RDMA core sees it.
pub(crate) struct Mr {
    /// The memory object.
    pub(crate) mem: Arc<Mem>,
    /// Counts the MR against [`limits::MAX_MR`] until it is deregistered.
    _quota: Quota,
}

/// Makes a memory object and gives it an STag index.
fn add_mem(table: &Table, pd: &Pd, va: u64, len: u64, acc: u32, kind: MemKind) -> Result<Arc<Mem>> {
    let mem = Arc::new(
        Mem {
            index: AtomicU32::new(0),
            gate: MemGate::new(),
            pd_id: pd.id,
            va: AtomicU64Cell::new(va),
            len: AtomicU64Cell::new(len),
            access: AtomicU32::new(acc & access::IWARP_MASK),
            kind,
        },
        GFP_KERNEL,
    )?;
    let index = table.alloc_random(mem.clone(), STAG_MAX_INDEX)?;
    // Look-ups enter the gate, which the caller opens once the index is
    // known and the key chosen.
    mem.index.store(index, Ordering::Release);
    Ok(mem)
}

/// Registers user memory (`ibv_reg_mr`).
pub(crate) fn reg_user_mr(
    table: &Table,
    quotas: &Arc<Quotas>,
    mut args: RegUserMr<'_, RsiwDriver>,
) -> Result<(Mr, u32)> {
    let quota = Quota::take(quotas, Kind::Mr)?;
    if args.len == 0 {
        return Err(EINVAL);
    }
    let umem = args.pinner.pin(args.start, args.len, args.access)?;
    let mem = add_mem(
        table,
        args.pd,
        args.iova,
        args.len,
        args.access,
        MemKind::User(umem),
    )?;
    let mut key = 0;
    if args.udata.is_user() {
        let mut req: uresp::RegMrReq = Default::default();
        if let Err(err) = args.udata.request(&mut req) {
            table.erase(mem.index());
            return Err(err);
        }
        key = uresp::reg_mr_stag_key(&req);
        let stag = (mem.index() << 8) | u32::from(key);
        if let Err(err) = args.udata.respond(&uresp::reg_mr(stag)) {
            table.erase(mem.index());
            return Err(err);
        }
    }
    open_new(&mem, key)?;
    let stag = mem.stag();
    Ok((Mr { mem, _quota: quota }, stag))
}

/// Opens the gate of a memory object nobody could use yet (a new one, or
/// one whose gate was just closed and drained) with `key`.
fn open_new(mem: &Mem, key: u8) -> Result {
    mem.gate.open(key).map(|_| ()).map_err(|_| EBUSY)
}

/// Whether memory registered with `access` is pinned for writing (the
/// RDMA core's `ib_access_writable`).
fn writable(access: u32) -> bool {
    use access::*;
    access & (LOCAL_WRITE | REMOTE_WRITE | REMOTE_ATOMIC | MW_BIND) != 0
}

/// Re-registers a user MR (`ibv_rereg_mr`; upstream siw refuses it).
/// New access flags that need no more of the pinned pages than they give
/// (not writable where they were read-only) change the MR in place. A new
/// PD, a new range, or write access on read-only pinned pages make a new
/// MR over freshly pinned pages, with a new STag index and the same key;
/// the RDMA core then deregisters the old MR.
pub(crate) fn rereg_user_mr(
    table: &Table,
    quotas: &Arc<Quotas>,
    old: &Mr,
    args: ReregUserMr<'_, RsiwDriver>,
) -> Result<Option<(Mr, u32)>> {
    let MemKind::User(umem) = &old.mem.kind else {
        return Err(EINVAL);
    };
    let old_access = old.mem.access.load(Ordering::Acquire);
    let access = if args.new_access {
        args.access
    } else {
        old_access
    };
    if !args.trans && !args.new_pd && (!writable(access) || writable(old_access)) {
        // In place: the transfers checked against the old rights end
        // with the old registration (the STag stays the same).
        let key = old.mem.gate.key();
        old.mem.close();
        old.mem.access.store(access, Ordering::Release);
        open_new(&old.mem, key)?;
        return Ok(None);
    }
    let (start, len, iova) = if args.trans {
        (args.start, args.len, args.iova)
    } else {
        (umem.start(), old.mem.len.get(), old.mem.va.get())
    };
    let quota = Quota::take(quotas, Kind::Mr)?;
    if len == 0 {
        return Err(EINVAL);
    }
    let umem = args.pinner.pin(start, len, access)?;
    let mem = add_mem(table, args.pd, iova, len, access, MemKind::User(umem))?;
    open_new(&mem, old.mem.gate.key())?;
    let stag = mem.stag();
    Ok(Some((Mr { mem, _quota: quota }, stag)))
}

/// A DMA MR for a kernel consumer.
pub(crate) fn get_dma_mr(
    table: &Table,
    quotas: &Arc<Quotas>,
    pd: &Pd,
    acc: u32,
) -> Result<(Mr, u32)> {
    let quota = Quota::take(quotas, Kind::Mr)?;
    let mem = add_mem(table, pd, 0, u64::MAX, acc, MemKind::Dma)?;
    open_new(&mem, 0)?;
    let stag = mem.stag();
    Ok((Mr { mem, _quota: quota }, stag))
}

/// A fast-registration MR of up to `max` pages for a kernel consumer.
pub(crate) fn alloc_mr(
    table: &Table,
    quotas: &Arc<Quotas>,
    pd: &Pd,
    max: u32,
) -> Result<(Mr, u32)> {
    let quota = Quota::take(quotas, Kind::Mr)?;
    if max > limits::MAX_FRMR_PAGES {
        return Err(ENOMEM);
    }
    let pages = KVec::from_elem(0u64, max as usize, GFP_KERNEL)?;
    let pbl = KBox::pin_init(
        crate::new_spinlock_irq!(
            Pbl {
                pages,
                used: 0,
                page_size: 0
            },
            "rsiw::Mr::pbl"
        ),
        GFP_KERNEL,
    )?;
    let mem = add_mem(table, pd, 0, 0, 0, MemKind::Pbl(pbl))?;
    let stag = mem.stag();
    Ok((Mr { mem, _quota: quota }, stag))
}

impl Mr {
    fn pbl(&self) -> Result<&SpinLockIrq<Pbl>> {
        match &self.mem.kind {
            MemKind::Pbl(pbl) => Ok(pbl),
            _ => Err(EINVAL),
        }
    }

    /// Starts a new page list.
    pub(crate) fn map_begin(&self) -> Result {
        self.pbl()?.lock().used = 0;
        Ok(())
    }

    /// Appends a page.
    pub(crate) fn map_page(&self, addr: u64) -> Result {
        let mut pbl = self.pbl()?.lock();
        let used = pbl.used;
        *pbl.pages.get_mut(used).ok_or(ENOMEM)? = addr;
        pbl.used = used + 1;
        Ok(())
    }

    /// Ends the page list: the MR covers `length` octets at `iova`.
    pub(crate) fn map_end(&self, iova: u64, length: u64, page_size: u32) {
        if let Ok(pbl) = self.pbl() {
            pbl.lock().page_size = page_size;
        }
        self.mem.va.set(iova);
        self.mem.len.set(length);
    }
}

/// Deregisters an MR: its STag stops working at once, and when this
/// returns no transfer is inside its memory and none will enter it (a
/// segment or Read Response in progress draws a TERMINATE at its next
/// piece); the memory object goes when the last work request holding it
/// lets go (the MR's quota goes back now).
pub(crate) fn dereg_mr(table: &Table, mr: Mr) -> Result {
    mr.mem.close();
    table.erase(mr.mem.index());
    drop(mr);
    Ok(())
}
