// SPDX-License-Identifier: GPL-2.0

//! RFC 7306 Atomic Operations for kernel consumers: how an atomic work
//! request travels through the send queue, and what its parts become on
//! the wire. The transmit side's part is in `tx::atomic`, the receive
//! side's in `rx::sink::atomic`.
//!
//! - `IB_WR_ATOMIC_CMP_AND_SWP` and `IB_WR_ATOMIC_FETCH_AND_ADD` are the
//!   RFC's CmpSwap with all-ones masks and FetchAdd with add mask 0; their
//!   masked variants (`IB_WR_MASKED_ATOMIC_*`) pass the consumer's masks
//!   (FetchAdd's "field boundary" mask is the RFC's add mask: a set bit is
//!   the most significant bit of a field).
//! - A masked one is marked [`WqeFlags::MASKED`] in its element, and its
//!   completion says it (`IB_WC_MASKED_COMP_SWAP`,
//!   `IB_WC_MASKED_FETCH_ADD`).
//! - The request takes exactly one SGE of 8 octets, into which the
//!   target's original value is placed in host byte order when the Atomic
//!   Response arrives; it then completes as `IB_WC_COMP_SWAP` or
//!   `IB_WC_FETCH_ADD` with 8 octets.
//! - An Atomic Request is a message of queue 1, numbered with the RDMA
//!   Read Requests and counted against the same ORD (RFC 7306 section
//!   5.2); its Request Identifier is that MSN. The responder answers
//!   queue 1 in order (Read Responses and Atomic Responses, queue 3), so
//!   the outbound Read queue's head is what the next response answers.
//! - User QPs do not send atomics (libsiw refuses the opcodes; an element
//!   user space writes with one completes in error) and do not decode the
//!   RFC 7306 opcodes.
//!
//! The send queue element is siw's ABI structure: an atomic is an element
//! of [`Opcode::FetchAdd`] or [`Opcode::CmpSwap`] whose operands are kept
//! in the `addr` of the SGE slots it does not use (1 to 4).

use kernel::prelude::*;

use crate::base::RsiwDriver;
use crate::kif::{
    rdma::wr::SendKind,
    siw::{Opcode, Sqe, WqeFlags},
};
use crate::qp::reads::WrRef;
use crate::wire::rfc7306::AtomicRequest;

/// Octets of an atomic's target and of its local SGE.
pub(crate) const ATOMIC_LEN: u32 = 8;

/// The SGE slots whose `addr` hold the operands: add or swap data, its
/// mask, compare data, compare mask.
const SLOTS: [usize; 4] = [1, 2, 3, 4];

/// Makes `sqe` the atomic work request `kind` (a [`SendKind::Atomic`]):
/// its remote target, its operands as the RFC names them and, for a masked
/// one, [`WqeFlags::MASKED`] (its completion says it). `EINVAL` unless it
/// has exactly one SGE of 8 octets.
pub(super) fn set_sqe(sqe: &mut Sqe, kind: &SendKind<RsiwDriver>) -> Result {
    let SendKind::Atomic {
        raddr,
        rkey,
        cmp_swap,
        masked,
        compare_add,
        swap,
        compare_add_mask,
        swap_mask,
    } = *kind
    else {
        return Err(EINVAL);
    };
    if sqe.num_sge != 1 || sqe.sge[0].length != ATOMIC_LEN {
        return Err(EINVAL);
    }
    sqe.raddr = raddr;
    sqe.rkey = rkey;
    if masked {
        sqe.flags |= WqeFlags::MASKED;
    }
    // Add or swap data, its mask, compare data, compare mask.
    let vals = if cmp_swap {
        [swap, swap_mask, compare_add, compare_add_mask]
    } else {
        [compare_add, compare_add_mask, 0, u64::MAX]
    };
    for (slot, v) in SLOTS.into_iter().zip(vals) {
        sqe.sge[slot].addr = v;
        sqe.sge[slot].length = 0;
        sqe.sge[slot].lkey = 0;
    }
    Ok(())
}

/// The Atomic Request of the atomic element `sqe` with Request Identifier
/// `req_id`.
pub(crate) fn of_sqe(sqe: &Sqe, req_id: u32) -> AtomicRequest {
    let v = SLOTS.map(|slot| sqe.sge[slot].addr);
    if sqe.opcode == Opcode::CmpSwap {
        AtomicRequest::cmp_swap(req_id, sqe.rkey, sqe.raddr, v[0], v[1], v[2], v[3])
    } else {
        AtomicRequest::fetch_add(req_id, sqe.rkey, sqe.raddr, v[0], v[1])
    }
}

/// The flags of the completion of the work request `wr`: a masked
/// atomic's says so (see [`WqeFlags::MASKED`]); none else.
pub(super) fn cqe_flags(wr: &WrRef) -> WqeFlags {
    let atomic = wr.opcode == Opcode::FetchAdd || wr.opcode == Opcode::CmpSwap;
    if atomic && wr.flags.contains(WqeFlags::MASKED) {
        WqeFlags::MASKED
    } else {
        WqeFlags::empty()
    }
}
