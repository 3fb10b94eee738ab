// SPDX-License-Identifier: GPL-2.0

//! Work and completion queues in the siw user ABI (`siw-abi.h`): rings of
//! `siw_sqe`, `siw_rqe` and `siw_cqe` in `vmalloc` memory that user space
//! maps through the RDMA core's mmap entries. Ownership of an element passes
//! between producer and consumer through its `flags` field, accessed
//! atomically; the rest of an element is copied in and out with volatile
//! accesses, since user space may change it at any time (the driver always
//! validates the copy, never the shared memory).

use core::{
    marker::PhantomData,
    mem::size_of,
    ptr::{self, NonNull},
    sync::atomic::{AtomicU16, AtomicU32, AtomicU8, Ordering},
};
use kernel::{bindings, prelude::*, sync::Arc};

use super::wr::RecvWr;

/// Largest number of SGEs in one work queue element.
pub const MAX_SGE: usize = bindings::SIW_MAX_SGE as usize;
/// Largest inline payload: the room of SGEs 1.. of a send queue element.
pub const MAX_INLINE: usize = size_of::<bindings::siw_sge>() * (MAX_SGE - 1);
/// The owner flag of a queue element (`SIW_WQE_VALID`).
pub const WQE_VALID: u16 = bindings::siw_wqe_flags_SIW_WQE_VALID as u16;

/// Zeroed `vmalloc` memory for a queue; user-mappable when made for a user
/// object.
pub struct QueueMem {
    ptr: NonNull<u8>,
    size: usize,
}

// SAFETY: the memory is plain data, only accessed through atomics and
// volatile copies.
unsafe impl Send for QueueMem {}
// SAFETY: as above.
unsafe impl Sync for QueueMem {}

impl QueueMem {
    /// Allocates `size` zeroed octets, with `VM_USERMAP` when `user`.
    pub fn new(size: usize, user: bool) -> Result<Arc<Self>> {
        if size == 0 {
            return Err(EINVAL);
        }
        // SAFETY: plain allocations; both return zeroed memory or null.
        let p = unsafe {
            if user {
                bindings::vmalloc_user_noprof(size as _)
            } else {
                bindings::vzalloc_noprof(size as _)
            }
        };
        let ptr = NonNull::new(p.cast::<u8>()).ok_or(ENOMEM)?;
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
        // their own page references.
        unsafe { bindings::vfree(self.ptr.as_ptr().cast()) };
    }
}

/// A scatter/gather element (`struct siw_sge`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sge {
    /// Address (user or kernel virtual, or DMA address for kernel users).
    pub addr: u64,
    /// Length in octets.
    pub length: u32,
    /// Local key (STag) of the memory region.
    pub lkey: u32,
}

/// A send queue element (`struct siw_sqe`).
#[derive(Clone, Copy, Debug)]
pub struct Sqe {
    /// Work request id.
    pub id: u64,
    /// `SIW_WQE_*` flags.
    pub flags: u16,
    /// Number of SGEs used.
    pub num_sge: u8,
    /// `SIW_OP_*` opcode.
    pub opcode: u8,
    /// Remote key, or the STag to invalidate or register.
    pub rkey: u32,
    /// Remote address, or the MR handle of a REG_MR.
    pub raddr: u64,
    /// SGEs; with `SIW_WQE_INLINE`, only `sge[0].length` counts and the
    /// payload is the octets of `sge[1..]` (see [`Sqe::inline_data`]).
    pub sge: [Sge; MAX_SGE],
    /// Access flags of a REG_MR (the union with `sge` in the ABI).
    pub access: u64,
}

impl Sqe {
    /// The inline payload: the octets of `sge[1..]` as the ABI lays them
    /// out. Built only for inline work requests: an SQE is copied several
    /// times per message, and its 80 inline octets were most of it.
    pub fn inline_data(&self) -> [u8; MAX_INLINE] {
        let mut out = [0u8; MAX_INLINE];
        for (c, s) in out.chunks_exact_mut(16).zip(self.sge.iter().skip(1)) {
            let (a, rest) = c.split_at_mut(8);
            let (l, k) = rest.split_at_mut(4);
            a.copy_from_slice(&s.addr.to_ne_bytes());
            l.copy_from_slice(&s.length.to_ne_bytes());
            k.copy_from_slice(&s.lkey.to_ne_bytes());
        }
        out
    }

    /// Stores `data` as the inline payload (into `sge[1..]`).
    pub fn set_inline_data(&mut self, data: &[u8; MAX_INLINE]) {
        for (c, s) in data.chunks_exact(16).zip(self.sge.iter_mut().skip(1)) {
            let mut a = [0u8; 8];
            let mut l = [0u8; 4];
            let mut k = [0u8; 4];
            a.copy_from_slice(c.get(..8).unwrap_or(&[0; 8]));
            l.copy_from_slice(c.get(8..12).unwrap_or(&[0; 4]));
            k.copy_from_slice(c.get(12..16).unwrap_or(&[0; 4]));
            *s = Sge {
                addr: u64::from_ne_bytes(a),
                length: u32::from_ne_bytes(l),
                lkey: u32::from_ne_bytes(k),
            };
        }
    }
}

/// A receive queue element (`struct siw_rqe`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Rqe {
    /// Work request id.
    pub id: u64,
    /// `SIW_WQE_*` flags.
    pub flags: u16,
    /// Number of SGEs used.
    pub num_sge: u8,
    /// SGEs.
    pub sge: [Sge; MAX_SGE],
}

/// A completion queue element (`struct siw_cqe`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Cqe {
    /// Work request id.
    pub id: u64,
    /// `SIW_WQE_*` flags (valid, solicited, remote invalidate).
    pub flags: u8,
    /// `SIW_OP_*` opcode.
    pub opcode: u8,
    /// `SIW_WC_*` status.
    pub status: u16,
    /// Octets transferred.
    pub bytes: u32,
    /// Invalidated STag (with `SIW_WQE_REM_INVAL`) or immediate data.
    pub imm_or_inval: u64,
    /// QP number (user CQs) or `struct ib_qp *` (kernel CQs).
    pub qp: u64,
}

fn sge_from(s: &bindings::siw_sge) -> Sge {
    Sge {
        addr: s.laddr,
        length: s.length,
        lkey: s.lkey,
    }
}

fn sge_to(s: &Sge) -> bindings::siw_sge {
    bindings::siw_sge {
        laddr: s.addr,
        length: s.length,
        lkey: s.lkey,
    }
}

/// An element type of a ring, with its ABI representation.
pub trait Element: Copy {
    /// The `siw-abi.h` structure.
    type Raw: Copy;
    /// Converts from the ABI structure.
    fn from_raw(raw: &Self::Raw) -> Self;
    /// Converts to the ABI structure (flags are written separately).
    fn to_raw(&self) -> Self::Raw;
}

impl Element for Sqe {
    type Raw = bindings::siw_sqe;

    fn from_raw(r: &Self::Raw) -> Self {
        // SAFETY: both union members are plain integers, valid for any bits.
        let (raddr, sges, access) = unsafe {
            (
                r.__bindgen_anon_1.raddr,
                r.__bindgen_anon_2.sge,
                r.__bindgen_anon_2.access,
            )
        };
        Sqe {
            id: r.id,
            flags: r.flags,
            num_sge: r.num_sge,
            opcode: r.opcode,
            rkey: r.rkey,
            raddr,
            sge: sges.map(|s| sge_from(&s)),
            access,
        }
    }

    fn to_raw(&self) -> Self::Raw {
        // (inline payload included: it lives in `sge[1..]`)
        let sge = self.sge.map(|s| sge_to(&s));
        let mut r = bindings::siw_sqe {
            id: self.id,
            flags: 0,
            num_sge: self.num_sge,
            opcode: self.opcode,
            rkey: self.rkey,
            __bindgen_anon_1: bindings::siw_sqe__bindgen_ty_1 { raddr: self.raddr },
            __bindgen_anon_2: bindings::siw_sqe__bindgen_ty_2 { sge },
        };
        if self.opcode == bindings::siw_opcode_SIW_OP_REG_MR as u8 {
            r.__bindgen_anon_2.access = self.access;
        }
        r
    }
}

impl Element for Rqe {
    type Raw = bindings::siw_rqe;

    fn from_raw(r: &Self::Raw) -> Self {
        Rqe {
            id: r.id,
            flags: r.flags,
            num_sge: r.num_sge,
            sge: r.sge.map(|s| sge_from(&s)),
        }
    }

    fn to_raw(&self) -> Self::Raw {
        bindings::siw_rqe {
            id: self.id,
            flags: 0,
            num_sge: self.num_sge,
            opcode: 0,
            unused: 0,
            sge: self.sge.map(|s| sge_to(&s)),
        }
    }
}

impl Element for Cqe {
    type Raw = bindings::siw_cqe;

    fn from_raw(r: &Self::Raw) -> Self {
        // SAFETY: the union members are plain integers (the pointer member
        // is read as its integer twin).
        let (imm, qp) = unsafe { (r.__bindgen_anon_1.imm_data, r.__bindgen_anon_2.qp_id) };
        Cqe {
            id: r.id,
            flags: r.flags,
            opcode: r.opcode,
            status: r.status,
            bytes: r.bytes,
            imm_or_inval: imm,
            qp,
        }
    }

    fn to_raw(&self) -> Self::Raw {
        bindings::siw_cqe {
            id: self.id,
            flags: 0,
            opcode: self.opcode,
            status: self.status,
            bytes: self.bytes,
            __bindgen_anon_1: bindings::siw_cqe__bindgen_ty_1 {
                imm_data: self.imm_or_inval,
            },
            __bindgen_anon_2: bindings::siw_cqe__bindgen_ty_2 { qp_id: self.qp },
        }
    }
}

/// A ring of `n` (a power of two) elements of `E`, optionally followed by a
/// trailer (the CQ control word).
pub struct Ring<E: Element> {
    mem: Arc<QueueMem>,
    n: u32,
    _p: PhantomData<E>,
}

impl<E: Element> Ring<E> {
    /// Allocates a ring of `n` elements (rounded up to a power of two) plus
    /// `trailer` octets; user-mappable if `user`.
    pub fn new(n: u32, trailer: usize, user: bool) -> Result<Self> {
        let n = n.checked_next_power_of_two().ok_or(EINVAL)?;
        let size = (n as usize)
            .checked_mul(size_of::<E::Raw>())
            .and_then(|s| s.checked_add(trailer))
            .ok_or(EINVAL)?;
        Ok(Self {
            mem: QueueMem::new(size, user)?,
            n,
            _p: PhantomData,
        })
    }

    /// Number of elements.
    pub fn len(&self) -> u32 {
        self.n
    }

    /// Whether the ring has no elements (never, once created).
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The backing memory, to map it to user space.
    pub fn mem(&self) -> &Arc<QueueMem> {
        &self.mem
    }

    fn slot(&self, i: u32) -> *mut E::Raw {
        let i = (i & (self.n - 1)) as usize;
        // SAFETY: `i < n`, so the element lies inside the allocation.
        unsafe { self.mem.ptr.as_ptr().cast::<E::Raw>().add(i) }
    }

    /// Copies element `i` (modulo the ring size) out of the ring.
    pub fn read(&self, i: u32) -> E {
        // SAFETY: the slot is inside the allocation, aligned (vmalloc is page
        // aligned, element sizes are multiples of 8) and any bit pattern is a
        // valid ABI struct of integers.
        let raw = unsafe { ptr::read_volatile(self.slot(i)) };
        E::from_raw(&raw)
    }

    /// Writes element `i` except its flags; publish it with `set_flags`.
    pub fn write(&self, i: u32, e: &E) {
        let raw = e.to_raw();
        // SAFETY: as in `read`; the producer owns the slot (flags clear).
        unsafe { ptr::write_volatile(self.slot(i), raw) };
    }
}

/// Atomic access to the `flags` field of the elements of a ring: the field
/// that passes ownership between producer and consumer.
macro_rules! flag_accessors {
    ($elem:ty, $atomic:ty, $int:ty) => {
        impl Ring<$elem> {
            fn flags_ref(&self, i: u32) -> &$atomic {
                // The ring is page aligned and elements are multiples of 8,
                // so `flags` is naturally aligned; the kernel only ever
                // accesses it atomically.
                // SAFETY: `flags` of a live slot of `self.mem`, aligned.
                unsafe { <$atomic>::from_ptr(ptr::addr_of_mut!((*self.slot(i)).flags)) }
            }

            /// Flags of element `i` (acquire: the contents are visible).
            pub fn flags(&self, i: u32) -> $int {
                self.flags_ref(i).load(Ordering::Acquire)
            }

            /// Sets the flags of element `i` (release: publishes them).
            pub fn set_flags(&self, i: u32, f: $int) {
                self.flags_ref(i).store(f, Ordering::Release)
            }
        }
    };
}

flag_accessors!(Sqe, AtomicU16, u16);
flag_accessors!(Rqe, AtomicU16, u16);
flag_accessors!(Cqe, AtomicU8, u8);

impl Ring<Sqe> {
    /// Gives send queue element `i` back to the producer (flags 0) with a
    /// full barrier, as siw's `smp_store_mb()`: a later look at the next
    /// element cannot be ordered before this store. libsiw publishes its
    /// new element and then looks at the one before to decide whether to
    /// ring the doorbell; with a plain release store, on a weakly ordered
    /// CPU each side could miss the other's store and the work would wait
    /// for a doorbell that never comes.
    pub fn give_back(&self, i: u32) {
        self.flags_ref(i).swap(0, Ordering::SeqCst);
    }
}

impl Ring<Rqe> {
    /// Takes the receive queue element at `*get` if the producer posted
    /// one: reads it, gives the slot back and advances `*get` (the
    /// consumer index, kept under the caller's lock).
    pub fn take(&self, get: &mut u32) -> Option<Rqe> {
        let mut rqe = Rqe::default();
        self.take_into(get, &mut rqe).then_some(rqe)
    }

    /// As [`Ring::take`], into `dst`, reading only the SGEs in use: the
    /// SGEs of `dst` past `num_sge` keep what they held. Every Send
    /// received takes this path; a copy of the whole element costs memory
    /// accesses.
    pub fn take_into(&self, get: &mut u32, dst: &mut Rqe) -> bool {
        let i = *get;
        let flags = self.flags(i);
        if flags & WQE_VALID == 0 {
            return false;
        }
        let p = self.slot(i);
        // SAFETY: as in `read`: fields of a slot inside the allocation,
        // aligned, plain integers valid for any bits.
        let (id, num_sge) = unsafe {
            (
                ptr::read_volatile(ptr::addr_of!((*p).id)),
                ptr::read_volatile(ptr::addr_of!((*p).num_sge)),
            )
        };
        dst.id = id;
        dst.flags = flags;
        dst.num_sge = num_sge;
        for (k, d) in dst.sge.iter_mut().enumerate().take(usize::from(num_sge)) {
            // SAFETY: as above; `k < MAX_SGE`, the length of the array.
            let s = unsafe { ptr::read_volatile(ptr::addr_of!((*p).sge[k])) };
            *d = sge_from(&s);
        }
        self.set_flags(i, 0);
        *get = i.wrapping_add(1);
        true
    }

    /// Posts a kernel consumer's receive work request at `*put` (the
    /// producer index, kept under the caller's lock) and advances it:
    /// `ENOMEM` when the slot is still owned by the consumer (the queue is
    /// full), `EINVAL` for more than `max_sge` SGEs.
    pub fn post(&self, put: &mut u32, wr: &RecvWr, max_sge: u32) -> Result {
        let i = *put;
        if self.flags(i) != 0 {
            return Err(ENOMEM);
        }
        if wr.num_sge > max_sge as usize {
            return Err(EINVAL);
        }
        let rqe = Rqe {
            id: wr.id,
            flags: 0,
            num_sge: wr.num_sge as u8,
            sge: wr.sge,
        };
        self.write(i, &rqe);
        self.set_flags(i, WQE_VALID);
        *put = i.wrapping_add(1);
        Ok(())
    }
}

impl Ring<Cqe> {
    /// The notification control word after the ring (`siw_cq_ctrl.flags`).
    pub fn notify(&self) -> &AtomicU32 {
        // SAFETY: `new` was called with a trailer of `siw_cq_ctrl` size for
        // CQ rings (see `CQ_TRAILER`); the word is 4-aligned.
        unsafe {
            let p = self
                .mem
                .ptr
                .as_ptr()
                .add(self.n as usize * size_of::<bindings::siw_cqe>());
            AtomicU32::from_ptr(p.cast::<u32>())
        }
    }
}

/// Trailer size of a CQ ring (`struct siw_cq_ctrl`).
pub const CQ_TRAILER: usize = size_of::<bindings::siw_cq_ctrl>();

/// A queue mapped to user space (an RDMA core mmap entry). Dropping it
/// removes the entry; the memory stays until user space unmaps it.
pub struct UserMapping {
    entry: NonNull<MmapEntry>,
}

// SAFETY: the entry is owned by the RDMA core's mmap machinery, which is
// thread safe; we only call `rdma_user_mmap_entry_remove` on it once.
unsafe impl Send for UserMapping {}
// SAFETY: `&UserMapping` exposes nothing.
unsafe impl Sync for UserMapping {}

/// An RDMA core mmap entry with the memory it maps.
#[repr(C)]
pub(crate) struct MmapEntry {
    rdma: bindings::rdma_user_mmap_entry,
    mem: Arc<QueueMem>,
}

/// A user context to map queues into (the context of the creating call).
pub struct UserCtx {
    pub(crate) ptr: NonNull<bindings::ib_ucontext>,
}

impl UserCtx {
    /// Makes `mem` mappable by this context; returns the mapping and the
    /// mmap offset ("key") to hand to user space.
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
pub(crate) unsafe extern "C" fn mmap(
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
        let r = bindings::remap_vmalloc_range(vma, mem.ptr.as_ptr().cast(), 0);
        bindings::rdma_user_mmap_entry_put(rdma);
        r
    }
}

/// `ib_device_ops.mmap_free`: frees an entry once unmapped and removed.
///
/// # Safety
///
/// Called by the RDMA core once per entry, after its last reference.
pub(crate) unsafe extern "C" fn mmap_free(rdma: *mut bindings::rdma_user_mmap_entry) {
    // SAFETY: the entry came from `KBox::into_raw` in `UserCtx::map`.
    drop(unsafe { KBox::from_raw(rdma.cast::<MmapEntry>()) });
}
