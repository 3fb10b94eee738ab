// SPDX-License-Identifier: GPL-2.0

//! Work requests of kernel consumers (`ib_send_wr`, `ib_recv_wr` lists) as
//! safe values.

use core::{marker::PhantomData, ptr::NonNull};
use kernel::{bindings, prelude::*};

use super::Driver;
use crate::kif::glue;

/// Most SGEs of a kernel consumer's work request (more are refused).
pub const MAX_SGE: usize = 6;
/// Most octets of inline data of a kernel consumer's work request.
pub const MAX_INLINE: usize = 80;

/// A scatter/gather element (`struct ib_sge`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Sge {
    /// Address (user or kernel virtual, or DMA address for kernel users).
    pub addr: u64,
    /// Length in octets.
    pub length: u32,
    /// Local key (STag) of the memory region.
    pub lkey: u32,
}

/// What a send work request to a QP of driver `T` asks for.
pub enum SendKind<T: Driver> {
    /// Send, optionally invalidating a remote STag.
    Send {
        /// STag the peer invalidates (Send with Invalidate).
        invalidate: Option<u32>,
        /// Immediate data (`IB_WR_SEND_WITH_IMM`), in host order.
        imm: Option<u32>,
    },
    /// RDMA Write.
    Write {
        /// Remote address.
        raddr: u64,
        /// Remote STag.
        rkey: u32,
        /// Immediate data (`IB_WR_RDMA_WRITE_WITH_IMM`), in host order.
        imm: Option<u32>,
    },
    /// RDMA Read.
    Read {
        /// Remote address.
        raddr: u64,
        /// Remote STag.
        rkey: u32,
        /// Invalidate the local sink STag afterwards.
        invalidate_local: bool,
    },
    /// Atomic operation (`IB_WR_ATOMIC_*`, `IB_WR_MASKED_ATOMIC_*`) on
    /// the 64-bit remote target; its original value goes to the one SGE.
    Atomic {
        /// Remote address.
        raddr: u64,
        /// Remote STag.
        rkey: u32,
        /// Compare and Swap (else Fetch and Add).
        cmp_swap: bool,
        /// A masked operation (`IB_WR_MASKED_ATOMIC_*`).
        masked: bool,
        /// Compare value (CmpSwap) or value to add (FetchAdd).
        compare_add: u64,
        /// Swap value (CmpSwap).
        swap: u64,
        /// Compare mask (CmpSwap) or field boundaries (FetchAdd); all
        /// ones resp. 0 for the unmasked operations.
        compare_add_mask: u64,
        /// Swap mask (CmpSwap); all ones for the unmasked one.
        swap_mask: u64,
    },
    /// Local invalidate.
    LocalInv {
        /// STag to invalidate.
        stag: u32,
    },
    /// Fast registration of a memory region.
    RegMr {
        /// The region (an MR of the QP's device).
        mr: MrHandle<T>,
        /// New STag (index and key).
        key: u32,
        /// IB access flags.
        access: u32,
        /// The region's IOVA when the request was posted (consumers may
        /// change it after `ib_map_mr_sg`: xprtrdma puts the XID in the
        /// upper 32 bits).
        iova: u64,
        /// The region's length when the request was posted.
        length: u64,
    },
}

// Manual impls: derived ones would ask `T: Copy` of the driver type.
impl<T: Driver> Clone for SendKind<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Driver> Copy for SendKind<T> {}

/// A memory region of a device of driver `T`, named in a REG_MR work
/// request; [`with_mr`](super::with_mr) resolves it to the driver's
/// object.
///
/// # Invariants
///
/// The `ib_mr` of a REG_MR work request posted to a QP of driver `T`, an
/// MR of that QP's device, which the consumer keeps alive until the
/// request completes.
pub struct MrHandle<T: Driver>(NonNull<bindings::ib_mr>, PhantomData<fn() -> T>);

impl<T: Driver> MrHandle<T> {
    /// The MR.
    pub(in crate::kif) fn as_ptr(self) -> *mut bindings::ib_mr {
        self.0.as_ptr()
    }
}

impl<T: Driver> Clone for MrHandle<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Driver> Copy for MrHandle<T> {}

// SAFETY: an `MrHandle` owns nothing: it is the address of an `ib_mr` that
// the consumer keeps alive until the work request completes (the type
// invariant), which the RDMA core and the consumer may use from any thread.
// `with_mr` dereferences it, on whichever thread processes the request,
// only to reach the driver's `T::Mr`, which is `Send + Sync`.
unsafe impl<T: Driver> Send for MrHandle<T> {}

/// One send work request of a kernel consumer to a QP of driver `T`.
pub struct SendWr<T: Driver> {
    /// Work request id.
    pub id: u64,
    /// Operation.
    pub kind: SendKind<T>,
    /// A completion is wanted.
    pub signaled: bool,
    /// Wait for prior RDMA Reads to complete.
    pub fence: bool,
    /// Solicited event at the peer.
    pub solicited: bool,
    /// Scatter/gather list (unused entries zero).
    pub sge: [Sge; MAX_SGE],
    /// Number of SGEs.
    pub num_sge: usize,
    /// Inline payload and its length, when `IB_SEND_INLINE` was asked.
    pub inline: Option<([u8; MAX_INLINE], usize)>,
}

impl<T: Driver> Clone for SendWr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Driver> Copy for SendWr<T> {}

/// One receive work request.
#[derive(Clone, Copy, Debug)]
pub struct RecvWr {
    /// Work request id.
    pub id: u64,
    /// Scatter/gather list.
    pub sge: [Sge; MAX_SGE],
    /// Number of SGEs.
    pub num_sge: usize,
}

/// Errors a work request list can hold before the driver sees it.
fn sge_list(list: *const bindings::ib_sge, n: i32) -> Result<([Sge; MAX_SGE], usize)> {
    let n = usize::try_from(n).map_err(|_| EINVAL)?;
    if n > MAX_SGE {
        return Err(EINVAL);
    }
    let mut out = [Sge::default(); MAX_SGE];
    for (i, o) in out.iter_mut().enumerate().take(n) {
        // SAFETY: the consumer passes `num_sge` valid SGEs.
        let s = unsafe { &*list.add(i) };
        *o = Sge {
            addr: s.addr,
            length: s.length,
            lkey: s.lkey,
        };
    }
    Ok((out, n))
}

/// The send work requests of one `post_send` call to a QP of driver `T`.
///
/// # Invariants
///
/// `cur` is null or a valid, null-terminated list for `'a`, posted to a QP
/// of driver `T`.
pub struct SendWrs<'a, T: Driver> {
    cur: *const bindings::ib_send_wr,
    _p: PhantomData<&'a bindings::ib_send_wr>,
    _driver: PhantomData<fn() -> T>,
}

impl<T: Driver> SendWrs<'_, T> {
    /// Wraps a consumer's list.
    ///
    /// # Safety
    ///
    /// `wr` is null or a valid, null-terminated list for the call, posted
    /// to a QP of driver `T`.
    pub(in crate::kif) unsafe fn new(wr: *const bindings::ib_send_wr) -> Self {
        // INVARIANT: per the contract.
        Self {
            cur: wr,
            _p: PhantomData,
            _driver: PhantomData,
        }
    }

    /// The request the iterator stopped at (for `bad_wr`).
    pub(in crate::kif) fn current(&self) -> *const bindings::ib_send_wr {
        self.cur
    }

    /// Whether the list is empty (a user doorbell).
    pub fn is_empty(&self) -> bool {
        self.cur.is_null()
    }

    /// Whether the consumer posts this list from a context that may sleep
    /// and so may transmit in place (take a mutex, lock the socket, call
    /// TCP): task context, preemption enabled and counted (no spinlock,
    /// `preempt_disable` or `local_bh_disable` held), interrupts on, and
    /// no RCU read-side section (preemptible RCU does not count one in the
    /// preemption count; blk-mq calls a non-blocking queue's `queue_rq`,
    /// nvme-rdma's, under one). `false` in softirq and interrupt context,
    /// and always on a kernel that does not count preemption, where a
    /// caller's spinlock cannot be seen.
    pub fn poster_may_sleep(&self) -> bool {
        // SAFETY: the glue reads the current context's preemption count,
        // interrupt flag and RCU nesting; it has no precondition.
        unsafe { glue::rsiw_post_may_sleep() }
    }

    fn parse(w: &bindings::ib_send_wr) -> Result<SendWr<T>> {
        // SAFETY: `wr_id` is the active member for verbs consumers (the
        // `wr_cqe` twin is a pointer of the same size, any bits are fine).
        let id = unsafe { w.__bindgen_anon_1.wr_id };
        let flags = w.send_flags as u32;
        let has = |f: bindings::ib_send_flags| flags & f as u32 != 0;
        let kind = Self::kind(w)?;
        let (sge, num_sge) = match kind {
            SendKind::LocalInv { .. } | SendKind::RegMr { .. } => ([Sge::default(); MAX_SGE], 0),
            _ => sge_list(w.sg_list, w.num_sge)?,
        };
        let inline_ok = matches!(kind, SendKind::Send { .. } | SendKind::Write { .. });
        let inline = if has(bindings::ib_send_flags_IB_SEND_INLINE) && inline_ok {
            Some(Self::inline_data(&sge[..num_sge])?)
        } else {
            None
        };
        Ok(SendWr {
            id,
            kind,
            signaled: has(bindings::ib_send_flags_IB_SEND_SIGNALED),
            fence: has(bindings::ib_send_flags_IB_SEND_FENCE),
            solicited: has(bindings::ib_send_flags_IB_SEND_SOLICITED),
            sge,
            num_sge,
            inline,
        })
    }

    /// What the request `w` asks for.
    #[inline(always)]
    fn kind(w: &bindings::ib_send_wr) -> Result<SendKind<T>> {
        let rdma = || {
            // SAFETY: RDMA opcodes are posted in an `ib_rdma_wr` whose first
            // member is this `ib_send_wr`.
            let r = unsafe { &*core::ptr::from_ref(w).cast::<bindings::ib_rdma_wr>() };
            (r.remote_addr, r.rkey)
        };
        // SAFETY: `invalidate_rkey` shares its storage with `imm_data`.
        let inv = unsafe { w.ex.invalidate_rkey };
        // The same octets as the big endian `imm_data`.
        let imm = u32::from_be(inv);
        Ok(match w.opcode {
            bindings::ib_wr_opcode_IB_WR_SEND => SendKind::Send {
                invalidate: None,
                imm: None,
            },
            bindings::ib_wr_opcode_IB_WR_SEND_WITH_INV => SendKind::Send {
                invalidate: Some(inv),
                imm: None,
            },
            bindings::ib_wr_opcode_IB_WR_SEND_WITH_IMM => SendKind::Send {
                invalidate: None,
                imm: Some(imm),
            },
            bindings::ib_wr_opcode_IB_WR_RDMA_WRITE => {
                let (raddr, rkey) = rdma();
                SendKind::Write {
                    raddr,
                    rkey,
                    imm: None,
                }
            }
            bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM => {
                let (raddr, rkey) = rdma();
                SendKind::Write {
                    raddr,
                    rkey,
                    imm: Some(imm),
                }
            }
            bindings::ib_wr_opcode_IB_WR_RDMA_READ
            | bindings::ib_wr_opcode_IB_WR_RDMA_READ_WITH_INV => {
                let (raddr, rkey) = rdma();
                SendKind::Read {
                    raddr,
                    rkey,
                    invalidate_local: w.opcode == bindings::ib_wr_opcode_IB_WR_RDMA_READ_WITH_INV,
                }
            }
            bindings::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP
            | bindings::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD
            | bindings::ib_wr_opcode_IB_WR_MASKED_ATOMIC_CMP_AND_SWP
            | bindings::ib_wr_opcode_IB_WR_MASKED_ATOMIC_FETCH_AND_ADD => Self::atomic(w),
            bindings::ib_wr_opcode_IB_WR_LOCAL_INV => SendKind::LocalInv { stag: inv },
            bindings::ib_wr_opcode_IB_WR_REG_MR => {
                // SAFETY: REG_MR is posted in an `ib_reg_wr`.
                let r = unsafe { &*core::ptr::from_ref(w).cast::<bindings::ib_reg_wr>() };
                let mr = NonNull::new(r.mr).ok_or(EINVAL)?;
                // SAFETY: the consumer keeps the MR alive until the work
                // request completes (RDMA core contract).
                let (iova, length) = unsafe { ((*mr.as_ptr()).iova, (*mr.as_ptr()).length) };
                // INVARIANT: the MR of this REG_MR request, posted to a QP
                // of driver `T` (type invariant of `SendWrs`).
                SendKind::RegMr {
                    mr: MrHandle(mr, PhantomData),
                    key: r.key,
                    access: r.access as u32,
                    iova,
                    length,
                }
            }
            _ => return Err(EINVAL),
        })
    }

    /// An atomic request `w` (one of the four atomic opcodes).
    fn atomic(w: &bindings::ib_send_wr) -> SendKind<T> {
        // SAFETY: atomic opcodes are posted in an `ib_atomic_wr` whose
        // first member is this `ib_send_wr`.
        let a = unsafe { &*core::ptr::from_ref(w).cast::<bindings::ib_atomic_wr>() };
        let masked = matches!(
            w.opcode,
            bindings::ib_wr_opcode_IB_WR_MASKED_ATOMIC_CMP_AND_SWP
                | bindings::ib_wr_opcode_IB_WR_MASKED_ATOMIC_FETCH_AND_ADD
        );
        let cmp_swap = matches!(
            w.opcode,
            bindings::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP
                | bindings::ib_wr_opcode_IB_WR_MASKED_ATOMIC_CMP_AND_SWP
        );
        let (compare_add_mask, swap_mask) = match (masked, cmp_swap) {
            (true, _) => (a.compare_add_mask, a.swap_mask),
            (false, true) => (u64::MAX, u64::MAX),
            (false, false) => (0, 0),
        };
        SendKind::Atomic {
            raddr: a.remote_addr,
            rkey: a.rkey,
            cmp_swap,
            masked,
            compare_add: a.compare_add,
            swap: a.swap,
            compare_add_mask,
            swap_mask,
        }
    }

    /// The octets `sge` name, copied for an inline request.
    #[inline(always)]
    fn inline_data(sge: &[Sge]) -> Result<([u8; MAX_INLINE], usize)> {
        let mut buf = [0u8; MAX_INLINE];
        let mut len = 0usize;
        for s in sge {
            let l = s.length as usize;
            if len + l > MAX_INLINE {
                return Err(EINVAL);
            }
            if l > 0 {
                // SAFETY: inline SGEs of kernel consumers hold kernel
                // virtual addresses of `length` readable octets.
                let src = unsafe { core::slice::from_raw_parts(s.addr as usize as *const u8, l) };
                buf[len..len + l].copy_from_slice(src);
            }
            len += l;
        }
        Ok((buf, len))
    }
}

impl<T: Driver> Iterator for SendWrs<'_, T> {
    type Item = Result<SendWr<T>>;

    fn next(&mut self) -> Option<Self::Item> {
        // SAFETY: per `new`, a non-null `cur` is a valid request.
        let w = unsafe { self.cur.as_ref() }?;
        let r = Self::parse(w);
        if r.is_ok() {
            // INVARIANT: the next request of the valid list, or null.
            self.cur = w.next;
        }
        Some(r)
    }
}

/// The receive work requests of one `post_recv` call.
///
/// # Invariants
///
/// `cur` is null or a valid, null-terminated list for `'a`.
pub struct RecvWrs<'a> {
    cur: *const bindings::ib_recv_wr,
    _p: PhantomData<&'a bindings::ib_recv_wr>,
}

impl RecvWrs<'_> {
    /// Wraps a consumer's list.
    ///
    /// # Safety
    ///
    /// `wr` is null or a valid, null-terminated list for the call.
    pub(in crate::kif) unsafe fn new(wr: *const bindings::ib_recv_wr) -> Self {
        // INVARIANT: per the contract.
        Self {
            cur: wr,
            _p: PhantomData,
        }
    }

    /// The request the iterator stopped at (for `bad_wr`).
    pub(in crate::kif) fn current(&self) -> *const bindings::ib_recv_wr {
        self.cur
    }
}

impl Iterator for RecvWrs<'_> {
    type Item = Result<RecvWr>;

    fn next(&mut self) -> Option<Self::Item> {
        // SAFETY: per `new`, a non-null `cur` is a valid request.
        let w = unsafe { self.cur.as_ref() }?;
        // SAFETY: `wr_id` is the active member for verbs consumers (its
        // `wr_cqe` twin is a pointer of the same size: any bits are fine).
        let id = unsafe { w.__bindgen_anon_1.wr_id };
        let r = sge_list(w.sg_list, w.num_sge).map(|(sge, num_sge)| RecvWr { id, sge, num_sge });
        if r.is_ok() {
            // INVARIANT: the next request of the valid list, or null.
            self.cur = w.next;
        }
        Some(r)
    }
}
