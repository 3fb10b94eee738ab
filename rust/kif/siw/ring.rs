// SPDX-License-Identifier: GPL-2.0

//! The queues of the siw user ABI: rings of [`Sqe`], [`Rqe`] and [`Cqe`]
//! in [`QueueMem`] that user space maps. Ownership of an element passes
//! between producer and consumer through its `flags` field, accessed
//! atomically; the rest of an element is copied in and out with volatile
//! accesses, since user space may change it at any time (the driver always
//! validates the copy, never the shared memory).

use core::{
    marker::PhantomData,
    mem::size_of,
    ptr,
    sync::atomic::{AtomicU16, AtomicU32, AtomicU8, Ordering},
};
use kernel::{bindings, prelude::*, sync::Arc};

use super::abi::{sge_from, Cqe, Element, Rqe, Sqe, WqeFlags};
use crate::kif::rdma::{mmap::QueueMem, wr::RecvWr};

/// A ring of `n` (a power of two) elements of `E`, optionally followed by a
/// trailer (the CQ control word).
///
/// # Invariants
///
/// `n` is a power of two and `mem` holds `n` elements' `E::Raw` followed by
/// at least `E::TRAILER` octets.
pub struct Ring<E: Element> {
    mem: Arc<QueueMem>,
    n: u32,
    _p: PhantomData<E>,
}

impl<E: Element> Ring<E> {
    /// Allocates a ring of `n` elements (rounded up to a power of two) plus
    /// `trailer` octets (at least the element type's trailer);
    /// user-mappable if `user`.
    pub fn new(n: u32, trailer: usize, user: bool) -> Result<Self> {
        let n = n.checked_next_power_of_two().ok_or(EINVAL)?;
        let trailer = trailer.max(E::TRAILER);
        let size = (n as usize)
            .checked_mul(size_of::<E::Raw>())
            .and_then(|s| s.checked_add(trailer))
            .ok_or(EINVAL)?;
        // INVARIANT: `n` rounded up to a power of two, room for `n`
        // elements and the trailer.
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
        unsafe { self.mem.as_ptr().cast::<E::Raw>().add(i) }
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
/// `$from` and `$bits` convert the raw field of `$elem` to flags and back.
macro_rules! flag_accessors {
    ($elem:ty, $atomic:ty, $from:ident, $bits:ident) => {
        impl Ring<$elem> {
            fn flags_ref(&self, i: u32) -> &$atomic {
                // The ring is page aligned and elements are multiples of 8,
                // so `flags` is naturally aligned; the kernel only ever
                // accesses it atomically.
                // SAFETY: `flags` of a live slot of `self.mem`, aligned.
                unsafe { <$atomic>::from_ptr(ptr::addr_of_mut!((*self.slot(i)).flags)) }
            }

            /// Flags of element `i` (acquire: the contents are visible).
            pub fn flags(&self, i: u32) -> WqeFlags {
                WqeFlags::$from(self.flags_ref(i).load(Ordering::Acquire))
            }

            /// Sets the flags of element `i` (release: publishes them).
            pub fn set_flags(&self, i: u32, f: WqeFlags) {
                self.flags_ref(i).store(f.$bits(), Ordering::Release)
            }
        }
    };
}

// The words `Ring::write_cqe` stores.
const _: () = {
    use core::mem::offset_of;
    type Raw = bindings::siw_cqe;
    assert!(size_of::<Raw>() == 32);
    assert!(offset_of!(Raw, flags) == 8);
    assert!(offset_of!(Raw, opcode) == 9);
    assert!(offset_of!(Raw, status) == 10);
    assert!(offset_of!(Raw, bytes) == 12);
    assert!(offset_of!(Raw, __bindgen_anon_1) == 16);
    assert!(offset_of!(Raw, __bindgen_anon_2) == 24);
};

flag_accessors!(Sqe, AtomicU16, from_bits, bits);
flag_accessors!(Rqe, AtomicU16, from_bits, bits);
flag_accessors!(Cqe, AtomicU8, from_cqe_bits, cqe_bits);

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

    /// As [`Ring::read`], into `dst` (the transmit job's copy, built in
    /// place), with `flags` (read before, see [`Ring::flags`]) as its
    /// flags: the element is copied word by word straight into its place
    /// ([`Sqe`] is laid out as the ABI's element), instead of going
    /// through the stack field by field.
    pub fn read_into(&self, i: u32, flags: WqeFlags, dst: &mut Sqe) {
        const WORDS: usize = size_of::<bindings::siw_sqe>() / 8;
        let src = self.slot(i).cast::<u64>();
        let out = ptr::from_mut(dst).cast::<u64>();
        for k in 0..WORDS {
            // SAFETY: word `k` of a slot inside the allocation (aligned, see
            // `read`), read as a plain integer; written into word `k` of
            // `*dst`, which is as large and as aligned up to `access` and
            // whose fields there are integers (or newtypes of them) at the
            // ABI's offsets (asserted next to `Sqe`): any bits are valid.
            unsafe { out.add(k).write(ptr::read_volatile(src.add(k))) };
        }
        dst.flags = flags;
        // `access` is the union's other member, over `sge[0].laddr`.
        dst.access = dst.sge[0].addr;
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
        if !flags.contains(WqeFlags::VALID) {
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
        self.set_flags(i, WqeFlags::empty());
        *get = i.wrapping_add(1);
        true
    }

    /// Posts a kernel consumer's receive work request at `*put` (the
    /// producer index, kept under the caller's lock) and advances it:
    /// `ENOMEM` when the slot is still owned by the consumer (the queue is
    /// full), `EINVAL` for more than `max_sge` SGEs.
    pub fn post(&self, put: &mut u32, wr: &RecvWr, max_sge: u32) -> Result {
        let i = *put;
        if !self.flags(i).is_empty() {
            return Err(ENOMEM);
        }
        if wr.num_sge > max_sge as usize {
            return Err(EINVAL);
        }
        let rqe = Rqe {
            id: wr.id,
            flags: WqeFlags::empty(),
            num_sge: wr.num_sge as u8,
            sge: wr.sge,
        };
        self.write(i, &rqe);
        self.set_flags(i, WqeFlags::VALID);
        *put = i.wrapping_add(1);
        Ok(())
    }
}

impl Ring<Cqe> {
    /// As [`Ring::write`] for a completion (flags 0; publish it with
    /// `set_flags`): four word stores straight into the slot, instead of
    /// the ABI structure being built on the stack and copied field by
    /// field. Every Send, Write and receive completes through here.
    pub fn write_cqe(&self, i: u32, e: &Cqe) {
        let status = u16::from(e.status).to_ne_bytes();
        let bytes = e.bytes.to_ne_bytes();
        // `flags` (0), `opcode`, `status`, `bytes`: the ABI's second word.
        let word1 = u64::from_ne_bytes([
            0,
            e.opcode.octet(),
            status[0],
            status[1],
            bytes[0],
            bytes[1],
            bytes[2],
            bytes[3],
        ]);
        let p = self.slot(i).cast::<u64>();
        // SAFETY: the four words of a slot inside the allocation (aligned,
        // see `read`; `struct siw_cqe` is four words, asserted below), each
        // written as a plain integer; the producer owns the slot (flags
        // clear, the caller checked).
        unsafe {
            ptr::write_volatile(p, e.id);
            ptr::write_volatile(p.add(1), word1);
            ptr::write_volatile(p.add(2), e.imm_or_inval);
            ptr::write_volatile(p.add(3), e.qp);
        }
    }

    /// The notification control word after the ring (`siw_cq_ctrl.flags`).
    pub fn notify(&self) -> &AtomicU32 {
        // SAFETY: a CQ ring has a trailer of `siw_cq_ctrl` size (type
        // invariant, `Cqe::TRAILER`); the word is 4-aligned.
        unsafe {
            let p = self
                .mem
                .as_ptr()
                .add(self.n as usize * size_of::<bindings::siw_cqe>());
            AtomicU32::from_ptr(p.cast::<u32>())
        }
    }
}

/// Trailer size of a CQ ring (`struct siw_cq_ctrl`).
pub const CQ_TRAILER: usize = <Cqe as Element>::TRAILER;
