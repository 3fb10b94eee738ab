// SPDX-License-Identifier: GPL-2.0

//! Pinned user memory (`ib_umem`) and access to its pages.

use core::{marker::PhantomData, ptr::NonNull};
use kernel::{bindings, page::PAGE_SIZE, prelude::*};

use crate::kif::{compat::moved, glue};

/// The kernel (direct map) address of a page of pinned memory.
#[derive(Clone, Copy)]
struct PageAddr(NonNull<u8>);

// SAFETY: a `PageAddr` is an address, not an owner (the `Umem` holds the
// pin): the direct map address of a pinned page, which is the same and
// valid on every CPU and in every context, so it may move to any thread.
unsafe impl Send for PageAddr {}
// SAFETY: a `&PageAddr` gives only the address value (`Copy`, never
// written after `pin`); what is done with the page is up to `Umem`'s
// methods, which state their own arguments.
unsafe impl Sync for PageAddr {}

/// User memory pinned for the life of a memory region.
///
/// # Invariants
///
/// `umem` came from `rsiw_umem_get` and is released once, in `drop`; `pages`
/// are the direct map addresses of its pinned pages, whose octets from
/// `first_off` on, `len` of them, are the region (fewer pages only while
/// `pin` builds it).
pub struct Umem {
    umem: NonNull<bindings::ib_umem>,
    /// The user address the region was pinned at.
    start: u64,
    /// Offset of the first octet within the first page.
    first_off: usize,
    len: usize,
    /// The pages' kernel addresses, taken at pinning time (the data path
    /// makes no call per page).
    pages: KVVec<PageAddr>,
}

// SAFETY: a `Umem` owns its `ib_umem`, released once, in `drop`, on any
// thread: directly where the thread may sleep, else through the module's
// workqueue; and a `KVVec` of page addresses (`Send`). The pinned pages are
// in the direct map for every thread.
unsafe impl Send for Umem {}
// SAFETY: the `&self` methods read fields that are not written after `pin`
// (`start`, `len`, `first_off`, the page addresses) and hand out slices of
// the pinned pages for copies (`with_range`, `slice`). That memory has no
// exclusive owner, whoever holds the `Umem`: user space writes it at will
// and the peer's RDMA writes land in it; RDMA's contract leaves ordering
// such accesses to the application.
unsafe impl Sync for Umem {}

/// Pins user memory for a registration on a given device.
///
/// # Invariants
///
/// `dev` is the device of the registering verb call, which lasts for `'a`.
pub struct Pinner<'a> {
    dev: NonNull<bindings::ib_device>,
    _p: PhantomData<&'a bindings::ib_device>,
}

impl<'a> Pinner<'a> {
    /// A pinner for `dev`.
    ///
    /// # Safety
    ///
    /// `dev` is the device of the current verb call, which lasts for `'a`.
    pub(in crate::kif) unsafe fn from_raw(dev: NonNull<bindings::ib_device>) -> Self {
        // INVARIANT: per the contract.
        Self {
            dev,
            _p: PhantomData,
        }
    }

    /// Pins `len` octets at user address `start` with IB access `access`.
    pub fn pin(&self, start: u64, len: u64, access: u32) -> Result<Umem> {
        let len = usize::try_from(len).map_err(|_| EINVAL)?;
        // SAFETY: the device is live for the registering verb call (type
        // invariant); the core checks the range against the caller's
        // address space.
        let p = unsafe { glue::rsiw_umem_get(self.dev.as_ptr(), start, len, access as i32) };
        // `rsiw_umem_get` returns a valid pointer or an `ERR_PTR`.
        let p = kernel::error::from_err_ptr(p)?;
        let umem = NonNull::new(p).ok_or(ENOMEM)?;
        let first_off = start as usize % PAGE_SIZE;
        let npages = (first_off + len).div_ceil(PAGE_SIZE);
        let mut this = Umem {
            umem,
            start,
            first_off,
            len,
            pages: KVVec::new(),
        };
        this.pages.reserve(npages, GFP_KERNEL)?;
        let out = this.pages.spare_capacity_mut().as_mut_ptr().cast();
        // The umem is pinned, and its pages stay in the direct map (64-bit,
        // no highmem: the glue refuses to build otherwise) until released.
        // SAFETY: `out` has room for `npages` addresses (a
        // `MaybeUninit<PageAddr>` has the layout of a pointer).
        let n = unsafe { glue::rsiw_umem_page_addrs(umem.as_ptr(), out, npages) };
        if n != npages {
            return Err(EFAULT);
        }
        // SAFETY: the first `n` elements were written above with the
        // (non-null) direct map addresses of the umem's pages.
        // INVARIANT: all the pages of the region are in.
        unsafe { moved::vec_inc_len(&mut this.pages, n) };
        Ok(this)
    }
}

impl Umem {
    /// The user address the region was pinned at.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// Length in octets.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of pinned pages.
    pub fn npages(&self) -> usize {
        self.pages.len()
    }

    /// Runs `f` on the kernel mapping of the octets `[off, off + len)` of
    /// the region, split at page boundaries; `f` gets each piece and its
    /// offset from `off`. Fails with `EFAULT` past the end.
    pub fn with_range(
        &self,
        off: usize,
        len: usize,
        mut f: impl FnMut(&mut [u8], usize) -> Result,
    ) -> Result {
        let end = off.checked_add(len).ok_or(EFAULT)?;
        if end > self.len {
            return Err(EFAULT);
        }
        let mut pos = off;
        while pos < end {
            let abs = self.first_off + pos;
            let (pg, in_pg) = (abs / PAGE_SIZE, abs % PAGE_SIZE);
            let n = (PAGE_SIZE - in_pg).min(end - pos);
            let page = self.pages.get(pg).ok_or(EFAULT)?;
            // Concurrent access by the pinning process is the nature of RDMA
            // memory: the slice is only used for copies.
            // SAFETY: the page is pinned for `self`'s life and `page` is its
            // direct map address; `[in_pg, in_pg + n)` lies inside it.
            let s = unsafe { core::slice::from_raw_parts_mut(page.0.as_ptr().add(in_pg), n) };
            f(s, pos - off)?;
            pos += n;
        }
        Ok(())
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // Where the caller may not sleep (the receive softirq, or a
        // flush under an interrupt-safe lock dropped the last reference:
        // a segment in progress keeps its memory past a deregistration)
        // the release, which may sleep, goes to the module's workqueue
        // (`kif::compat::workqueue`), which outlives every memory region
        // (devices go first).
        // SAFETY: obtained from `rsiw_umem_get`, released exactly once.
        unsafe {
            if glue::rsiw_may_sleep()
                || glue::rsiw_umem_release_async(
                    crate::kif::compat::workqueue::raw(),
                    self.umem.as_ptr(),
                ) != 0
            {
                bindings::ib_umem_release(self.umem.as_ptr());
            }
        }
    }
}

impl Umem {
    /// The kernel mapping of the octets from `off` up to the end of their
    /// page, at most `max` of them (zero-copy transmit: the slice lives as
    /// long as the pinned region). Fails with `EFAULT` past the end.
    pub fn slice(&self, off: usize, max: usize) -> Result<&[u8]> {
        if off >= self.len || max == 0 {
            return Err(EFAULT);
        }
        let abs = self.first_off.checked_add(off).ok_or(EFAULT)?;
        let (pg, in_pg) = (abs / PAGE_SIZE, abs % PAGE_SIZE);
        let n = (PAGE_SIZE - in_pg).min(self.len - off).min(max);
        let page = self.pages.get(pg).ok_or(EFAULT)?;
        // The slice is only read (copied by TCP); user space changing the
        // buffer under a posted work request is its own fault.
        // SAFETY: the page is pinned for `self`'s life (which the slice's
        // borrows) and `page` is its direct map address; `[in_pg, in_pg +
        // n)` lies inside it.
        let s = unsafe { core::slice::from_raw_parts(page.0.as_ptr().add(in_pg), n) };
        Ok(s)
    }
}

impl Umem {
    /// Replaces the 64-bit word at `off` of the region by `f` of its
    /// value, atomically (see [`update_u64`]); returns the value before.
    /// Fails with `EFAULT` past the end and `EINVAL` when the word's
    /// kernel address is not 8-aligned (the user address decides that).
    pub fn atomic_update(&self, off: usize, f: impl FnMut(u64) -> u64) -> Result<u64> {
        let end = off.checked_add(8).ok_or(EFAULT)?;
        if end > self.len {
            return Err(EFAULT);
        }
        let abs = self.first_off.checked_add(off).ok_or(EFAULT)?;
        if abs % 8 != 0 {
            return Err(EINVAL);
        }
        let (pg, in_pg) = (abs / PAGE_SIZE, abs % PAGE_SIZE);
        let page = self.pages.get(pg).ok_or(EFAULT)?;
        // SAFETY: the page is pinned for `self`'s life and `page` is its
        // direct map address; `in_pg` is 8-aligned, so the word lies
        // inside the page.
        let word = unsafe { page.0.as_ptr().add(in_pg) };
        // SAFETY: `word` is an 8-aligned address of 8 octets of a page
        // pinned while this runs (see above).
        Ok(unsafe { update_u64(word.cast(), f) })
    }
}

/// Replaces the 64-bit word at `word` by `f` of its value with the CPU's
/// compare-and-exchange (retried until no other access came in between;
/// `f` may be called more than once), so that the update is atomic with
/// respect to every other atomic access to the word, by the CPU or by
/// this driver. Returns the value before.
///
/// # Safety
///
/// `word` is 8-aligned and valid for reads and writes for the call.
/// Other accesses may happen concurrently (user space or other kernel
/// code owns the memory): that is what the atomic instruction is for.
unsafe fn update_u64(word: *mut u64, mut f: impl FnMut(u64) -> u64) -> u64 {
    // SAFETY: per the contract: aligned and valid for the call; every
    // access through it here is atomic.
    let atom = unsafe { core::sync::atomic::AtomicU64::from_ptr(word) };
    let order = core::sync::atomic::Ordering::SeqCst;
    match atom.fetch_update(order, order, |v| Some(f(v))) {
        Ok(v) | Err(v) => v,
    }
}

/// Replaces the 64-bit word at the kernel address `addr` of a kernel
/// consumer's DMA or fast-registration MR by `f` of its value, atomically
/// (see [`update_u64`]); returns the value before. `EINVAL` when `addr`
/// is not 8-aligned.
pub fn kernel_atomic_update(addr: u64, f: impl FnMut(u64) -> u64) -> Result<u64> {
    let a = kernel_range_ok(addr, 8)?;
    if a % 8 != 0 {
        return Err(EINVAL);
    }
    // The consumer granted remote atomic access to this kernel buffer and
    // keeps it valid until deregistration or invalidation (which wait for
    // this, see `mem::access`).
    // SAFETY: the DMA MR contract (`kernel_slice`); 8-aligned, no wrap.
    Ok(unsafe { update_u64(a as *mut u64, f) })
}

/// Checks a kernel virtual address range of a kernel consumer.
fn kernel_range_ok(addr: u64, len: usize) -> Result<usize> {
    let a = usize::try_from(addr).map_err(|_| EFAULT)?;
    if a == 0 {
        return Err(EFAULT);
    }
    a.checked_add(len).ok_or(EFAULT)?;
    Ok(a)
}

/// The octets `[addr, addr + len)` of kernel memory named by a kernel
/// consumer's DMA or fast-registration MR, for transmit (a device
/// registered here has no DMA device, so the RDMA core's virtual DMA makes
/// its "DMA addresses" kernel virtual addresses). The slice borrows `owner` (the
/// memory object) for its lifetime.
pub fn kernel_slice<T>(_owner: &T, addr: u64, len: usize) -> Result<&[u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    let a = kernel_range_ok(addr, len)?;
    // The DMA MR contract: a kernel consumer only names kernel memory it owns
    // (virtual DMA: the address is a kernel virtual address) and keeps it
    // valid until the work request completes, after the last use of this.
    // SAFETY: per the DMA MR contract above; the range does not wrap.
    Ok(unsafe { core::slice::from_raw_parts(a as *const u8, len) })
}

/// Copies `data` to kernel memory at `addr` named by a kernel consumer's
/// DMA or fast-registration MR (receive placement).
pub fn kernel_write(addr: u64, data: &[u8]) -> Result {
    if data.is_empty() {
        return Ok(());
    }
    let a = kernel_range_ok(addr, data.len())?;
    // The consumer posted a receive into (or granted remote write to) this
    // kernel buffer and keeps it valid until completion or deregistration.
    // SAFETY: the DMA MR contract (`kernel_slice`); no wrap, no overlap.
    unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), a as *mut u8, data.len()) };
    Ok(())
}
