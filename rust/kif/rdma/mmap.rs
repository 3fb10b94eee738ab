// SPDX-License-Identifier: GPL-2.0

//! Queue memory shared with user space: zeroed `vmalloc` memory
//! ([`QueueMem`]) that a user context maps through an RDMA core mmap entry
//! ([`UserCtx::map`], [`UserMapping`]), and the `mmap`/`mmap_free`
//! operations that serve those entries.
//!
//! A mapping is made with `remap_vmalloc_range`: each page table entry
//! holds a reference on its page, so the pages outlive the [`QueueMem`]
//! (`vfree` drops the allocation's own references) until the process
//! unmaps them. That is what keeps a process safe when its device goes
//! while it runs ([`Driver::disassociate_ucontext`](super::Driver::disassociate_ucontext)):
//! the RDMA core then destroys the queues and puts the mmap entries
//! (`mmap_free` frees them and, with the last, the `QueueMem`), and its
//! `zap_vma_ptes` leaves these mappings alone (it zaps `VM_PFNMAP` ones
//! only, and these are `VM_MIXEDMAP`): the process keeps its queues'
//! pages, as they were when the device went, readable and writable and
//! seen by nothing else, and they are freed when it unmaps them or exits.

use core::{marker::PhantomData, ptr::NonNull};
use kernel::{bindings, prelude::*, sync::Arc};

/// Zeroed `vmalloc` memory for a queue; user-mappable when made for a user
/// object.
///
/// # Invariants
///
/// `ptr` is `size` octets from `vmalloc_user` or `vzalloc`, owned by this
/// value until it drops.
pub struct QueueMem {
    ptr: NonNull<u8>,
    size: usize,
}

// SAFETY: a `QueueMem` owns its vmalloc block, freed once, in `drop`,
// with `vfree`, which any thread may call (from interrupt context it
// defers the freeing); the block's contents are plain octets, tied to no
// thread.
unsafe impl Send for QueueMem {}
// SAFETY: a `&QueueMem` gives only the block's address (to kif) and size;
// the rings built on the block are shared with user space by design and
// access it through atomics and volatile copies only, so threads that
// share it race with nothing that is not already expected of user space.
unsafe impl Sync for QueueMem {}

impl QueueMem {
    /// The start of the memory.
    pub(in crate::kif) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Allocates `size` zeroed octets, with `VM_USERMAP` when `user`.
    pub(in crate::kif) fn new(size: usize, user: bool) -> Result<Arc<Self>> {
        if size == 0 {
            return Err(EINVAL);
        }
        // SAFETY: plain allocations; both return `size` zeroed octets or
        // null. vmalloc memory is page aligned, enough for any ring built
        // on it.
        let p = unsafe {
            if user {
                bindings::vmalloc_user_noprof(size as kernel::ffi::c_ulong)
            } else {
                bindings::vzalloc_noprof(size as kernel::ffi::c_ulong)
            }
        };
        let ptr = NonNull::new(p.cast::<u8>()).ok_or(ENOMEM)?;
        // INVARIANT: `size` octets allocated just above.
        Ok(Arc::new(Self { ptr, size }, GFP_KERNEL)?)
    }

    /// Size in octets.
    pub fn size(&self) -> usize {
        self.size
    }
}

impl Drop for QueueMem {
    fn drop(&mut self) {
        // SAFETY: allocated by `vmalloc_user`/`vzalloc`; user mappings hold
        // their own page references (also those the RDMA core left in
        // place when the device went: see the module).
        unsafe { bindings::vfree(self.ptr.as_ptr().cast()) };
    }
}

/// A queue mapped to user space (an RDMA core mmap entry). Dropping it
/// removes the entry; the memory stays until user space unmaps it.
///
/// # Invariants
///
/// `entry` is an `MmapEntry` inserted into its context, not removed yet.
pub struct UserMapping {
    entry: NonNull<MmapEntry>,
}

// SAFETY: a `UserMapping` owns the insertion of its entry, which `drop`
// undoes once with `rdma_user_mmap_entry_remove`; that takes the context's
// own lock and may run on any thread. The entry itself is the RDMA core's
// (freed through `mmap_free`), tied to no thread.
unsafe impl Send for UserMapping {}
// SAFETY: `UserMapping` has no method taking `&self` and private fields: a
// shared reference reads and writes nothing.
unsafe impl Sync for UserMapping {}

/// An RDMA core mmap entry with the memory it maps.
#[repr(C)]
struct MmapEntry {
    rdma: bindings::rdma_user_mmap_entry,
    mem: Arc<QueueMem>,
}

/// A user context to map queues into (the context of the creating call).
///
/// # Invariants
///
/// `ptr` is the user context of the verb call that lasts for `'a`.
pub struct UserCtx<'a> {
    ptr: NonNull<bindings::ib_ucontext>,
    _p: PhantomData<&'a bindings::ib_ucontext>,
}

impl UserCtx<'_> {
    /// The user context `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is the user context of the current verb call, which lasts for
    /// `'a`.
    pub(in crate::kif) unsafe fn from_raw<'a>(ptr: NonNull<bindings::ib_ucontext>) -> UserCtx<'a> {
        // INVARIANT: per the contract.
        UserCtx {
            ptr,
            _p: PhantomData,
        }
    }

    /// Makes `mem` mappable by this context; returns the mapping and the
    /// mmap offset ("key") to hand to user space. A process's mapping of
    /// it holds the pages, also after the device is gone (see the module).
    pub fn map(&self, mem: &Arc<QueueMem>) -> Result<(UserMapping, u64)> {
        let e = KBox::new(
            MmapEntry {
                // SAFETY: all-zero is the expected initial entry state.
                rdma: unsafe { core::mem::zeroed() },
                mem: mem.clone(),
            },
            GFP_KERNEL,
        )?;
        let e = KBox::into_raw(e);
        // SAFETY: `e` is a valid, exclusively owned entry; the context is
        // live for the creating call. On success the core owns the entry
        // until `mmap_free`, which frees it.
        let r = unsafe {
            bindings::rdma_user_mmap_entry_insert(self.ptr.as_ptr(), &mut (*e).rdma, mem.size())
        };
        if r != 0 {
            // SAFETY: not inserted: still ours.
            drop(unsafe { KBox::from_raw(e) });
            return Err(Error::from_errno(r));
        }
        // SAFETY: inserted; `start_pgoff` is set by the insert.
        let key = unsafe { (*e).rdma.start_pgoff as u64 } << bindings::PAGE_SHIFT;
        // INVARIANT: inserted just above.
        let entry = NonNull::new(e).ok_or(EINVAL)?;
        Ok((UserMapping { entry }, key))
    }
}

impl Drop for UserMapping {
    fn drop(&mut self) {
        // SAFETY: the entry was inserted by `map` and is removed once; the
        // core frees it through `mmap_free` when its last user is gone.
        unsafe { bindings::rdma_user_mmap_entry_remove(&mut (*self.entry.as_ptr()).rdma) };
    }
}

/// `ib_device_ops.mmap`: maps the queue an mmap offset names.
///
/// # Safety
///
/// Called by the RDMA core with a live context and VMA.
pub(in crate::kif) unsafe extern "C" fn mmap(
    ctx: *mut bindings::ib_ucontext,
    vma: *mut bindings::vm_area_struct,
) -> kernel::ffi::c_int {
    // SAFETY: per the contract; returns a referenced entry or null.
    let rdma = unsafe { bindings::rdma_user_mmap_entry_get(ctx, vma) };
    if rdma.is_null() {
        return EINVAL.to_errno();
    }
    let e = rdma.cast::<MmapEntry>();
    // SAFETY: every entry of our contexts is an `MmapEntry` (the rdma entry
    // at offset 0); the reference keeps it and its memory alive; the memory
    // is `vmalloc_user` memory of exactly the mapped size.
    unsafe {
        let mem: &Arc<QueueMem> = &(*e).mem;
        let r = bindings::remap_vmalloc_range(vma, mem.as_ptr().cast(), 0);
        bindings::rdma_user_mmap_entry_put(rdma);
        r
    }
}

/// `ib_device_ops.mmap_free`: frees an entry once unmapped and removed.
///
/// # Safety
///
/// Called by the RDMA core once per entry, after its last reference.
pub(in crate::kif) unsafe extern "C" fn mmap_free(rdma: *mut bindings::rdma_user_mmap_entry) {
    // SAFETY: the entry came from `KBox::into_raw` in `UserCtx::map`.
    drop(unsafe { KBox::from_raw(rdma.cast::<MmapEntry>()) });
}
