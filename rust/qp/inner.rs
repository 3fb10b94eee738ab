// SPDX-License-Identifier: GPL-2.0

//! [`QpInner`], what the QP's `inner` lock guards: the state, the queue
//! indices of kernel posts and of the transmit side, RDMA access, IRD,
//! ORD and the work request in transmission. Its fields are private:
//! its methods, called with the lock held, are the only way to read or
//! change them, so that what must change together does (the state with
//! its lock-free copy, a send queue slot with the work request taken
//! from it).

use kernel::prelude::*;

use super::lockfree::LockFree;
use super::reads::WrRef;
use super::QpState;
use crate::kif::{
    rdma::wr::RecvWr,
    siw::{Ring, Rqe},
};
use crate::mem::access;

/// Mutable QP state, under `Qp::inner`.
pub(crate) struct QpInner {
    /// Protocol state (its lock-free copy is `LockFree`'s, see
    /// [`QpInner::set_state`]).
    state: QpState,
    /// Next SQ slot a kernel post fills.
    sq_put: u32,
    /// Next SQ slot the transmit side takes.
    sq_get: u32,
    /// Next RQ slot a kernel post fills.
    rq_put: u32,
    /// RDMA access the peer is granted (IB access flags).
    access: u32,
    /// Inbound RDMA Reads (IRD).
    ird: u32,
    /// Outbound RDMA Reads (ORD).
    ord: u32,
    // INVARIANT: `Some` only for the Send or Write in transmission, from
    // the moment its send queue slot was taken (`take_sq_slot`, which
    // sets both together under the lock) until it completes; whoever
    // takes it (`take_active`) completes it, exactly once: the transmit
    // work when its last octet went to TCP (or the send failed), a flush
    // when the QP goes to error. At most one: the transmit side takes
    // the next slot only after the previous job ended.
    /// The Send or Write being transmitted (its slot is back in the SQ).
    active: Option<WrRef>,
}

impl QpInner {
    /// A new QP's: Idle, empty queues, local write and remote write and
    /// read access, no IRD or ORD yet.
    pub(super) const fn new() -> Self {
        Self {
            state: QpState::Idle,
            sq_put: 0,
            sq_get: 0,
            rq_put: 0,
            access: access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ,
            ird: 0,
            ord: 0,
            active: None,
        }
    }

    /// The state (the authoritative one: decisions that must not race
    /// with a change look here, under the lock).
    pub(super) fn state(&self) -> QpState {
        self.state
    }

    /// Sets the state to `s` and its lock-free copy in `copy`, the QP's
    /// [`LockFree`], together (only `Qp::put_state` calls it).
    pub(super) fn set_state(&mut self, s: QpState, copy: &LockFree) {
        self.state = s;
        copy.publish_state(s);
    }

    /// RDMA access the peer is granted (IB access flags).
    pub(super) fn access(&self) -> u32 {
        self.access
    }

    /// Grants the peer RDMA access `acc` (iWARP's flags of it).
    pub(super) fn set_access(&mut self, acc: u32) {
        self.access = acc & access::IWARP_MASK;
    }

    /// IRD and ORD, in this order.
    pub(super) fn rd_limits(&self) -> (u32, u32) {
        (self.ird, self.ord)
    }

    /// Sets IRD and ORD (negotiated by the connection).
    pub(super) fn set_rd_limits(&mut self, ird: u32, ord: u32) {
        self.ird = ird;
        self.ord = ord;
    }

    /// The next SQ slot a kernel post fills.
    pub(super) fn sq_put(&self) -> u32 {
        self.sq_put
    }

    /// A kernel post filled the slot [`QpInner::sq_put`] named: the next
    /// one is next.
    pub(super) fn sq_filled(&mut self) {
        self.sq_put = self.sq_put.wrapping_add(1);
    }

    /// Posts a kernel consumer's receive work request `wr` into `rq`, the
    /// QP's receive queue (see [`Ring::post`]).
    pub(super) fn post_rq(&mut self, rq: &Ring<Rqe>, wr: &RecvWr, max_sge: u32) -> Result {
        rq.post(&mut self.rq_put, wr, max_sge)
    }

    /// The next SQ slot the transmit side (or a flush) takes.
    pub(super) fn sq_get(&self) -> u32 {
        self.sq_get
    }

    /// Takes SQ slot `idx` if it is the next one (`false` when a flush
    /// took it meanwhile); `active`: its work request is the Send or
    /// Write in transmission from now on.
    pub(super) fn take_sq_slot(&mut self, idx: u32, active: Option<WrRef>) -> bool {
        if self.sq_get != idx {
            return false;
        }
        if active.is_some() {
            self.active = active;
        }
        self.sq_get = idx.wrapping_add(1);
        true
    }

    /// Takes the Send or Write in transmission, to complete it (`None`
    /// when there is none or it was completed already).
    pub(super) fn take_active(&mut self) -> Option<WrRef> {
        self.active.take()
    }
}
