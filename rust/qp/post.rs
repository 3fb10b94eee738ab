// SPDX-License-Identifier: GPL-2.0

//! Posting work requests: the user-space doorbell (which transmits in the
//! caller's context or hands off to the transmit work), the send and
//! receive work requests of kernel consumers written into the rings, and
//! the flush of work requests posted to a QP in error.

use kernel::{prelude::*, sync::Arc};

use super::{atomic, imm, tx, Qp};
use crate::base::{stats::Counter, RsiwDriver};
use crate::kif::{
    rdma::wr::{RecvWrs, SendKind, SendWr, SendWrs},
    siw::{Cqe, Opcode, Rqe, Sqe, Status, WqeFlags},
};
use crate::mem::access;
use crate::state::qp::Post;

/// The send queue opcode of a work request.
fn opcode(kind: &SendKind<RsiwDriver>) -> Opcode {
    match kind {
        SendKind::Send {
            invalidate: None,
            imm: None,
        } => Opcode::Send,
        SendKind::Send { imm: Some(_), .. } => Opcode::SendWithImm,
        SendKind::Send {
            invalidate: Some(_),
            ..
        } => Opcode::SendRemoteInv,
        SendKind::Write { .. } => Opcode::Write,
        SendKind::Read {
            invalidate_local: false,
            ..
        } => Opcode::Read,
        SendKind::Read {
            invalidate_local: true,
            ..
        } => Opcode::ReadLocalInv,
        SendKind::Atomic { cmp_swap: true, .. } => Opcode::CmpSwap,
        SendKind::Atomic {
            cmp_swap: false, ..
        } => Opcode::FetchAdd,
        SendKind::LocalInv { .. } => Opcode::InvalStag,
        SendKind::RegMr { .. } => Opcode::RegMr,
    }
}

/// The send queue element of a kernel consumer's work request with at
/// most `max_sge` SGEs (`EINVAL` for more, and for a Read without exactly
/// one sink SGE).
fn sqe_of(wr: &SendWr<RsiwDriver>, max_sge: u32) -> Result<Sqe> {
    if wr.num_sge > max_sge as usize {
        return Err(EINVAL);
    }
    let mut sqe = Sqe {
        id: wr.id,
        flags: WqeFlags::empty(),
        num_sge: wr.num_sge as u8,
        opcode: opcode(&wr.kind).into(),
        rkey: 0,
        raddr: 0,
        sge: wr.sge,
        access: 0,
    };
    if wr.signaled {
        sqe.flags |= WqeFlags::SIGNALLED;
    }
    if wr.fence {
        sqe.flags |= WqeFlags::READ_FENCE;
    }
    match wr.kind {
        SendKind::Send { imm: Some(_), .. } => return Err(imm::send_with_imm()),
        SendKind::Send { invalidate, .. } => {
            if wr.solicited {
                sqe.flags |= WqeFlags::SOLICITED;
            }
            if let Some(k) = invalidate {
                sqe.rkey = k;
            }
        }
        SendKind::Write { raddr, rkey, imm } => {
            sqe.raddr = raddr;
            sqe.rkey = rkey;
            if let Some(imm) = imm {
                imm::write_with_imm(&mut sqe, imm, wr.solicited)?;
            }
        }
        SendKind::Read { raddr, rkey, .. } => {
            if wr.num_sge != 1 {
                return Err(EINVAL);
            }
            sqe.raddr = raddr;
            sqe.rkey = rkey;
        }
        SendKind::Atomic { .. } => atomic::set_sqe(&mut sqe, &wr.kind)?,
        SendKind::LocalInv { stag } => sqe.rkey = stag,
        SendKind::RegMr {
            mr,
            key,
            access: acc,
            iova,
            length,
        } => {
            sqe.raddr =
                crate::kif::rdma::with_mr::<RsiwDriver, _>(mr, |m| u64::from(m.mem.index()));
            sqe.rkey = key;
            sqe.access = u64::from(acc & access::IWARP_MASK);
            // The region as the request sees it (see `tx::sq::reg_mr`). In
            // `siw_sqe`, `access` shares its union with sge[0]: the values
            // go into sge[1].
            sqe.sge[1].addr = iova;
            sqe.sge[1].length = u32::try_from(length).unwrap_or(u32::MAX);
        }
    }
    if let Some((data, len)) = wr.inline {
        sqe.flags |= WqeFlags::INLINE;
        sqe.num_sge = 1;
        sqe.sge[0].length = len as u32;
        sqe.set_inline_data(&data);
    }
    Ok(sqe)
}

impl Qp {
    /// Posts send work requests. Kernel consumers pass a list; user space
    /// rings the doorbell with an empty one.
    ///
    /// A kernel consumer's list is transmitted in its own context when
    /// that context may sleep ([`SendWrs::poster_may_sleep`]: task
    /// context, preemption and interrupts enabled, no RCU read-side
    /// section), as a user doorbell is, instead of waking the transmit
    /// work: that saves a wake-up per post (nvmet-rdma posts the RDMA
    /// Reads of a write command from its CQ's work item). From any other
    /// context (softirq, a spinlock or RCU section held: nvme-rdma's
    /// `queue_rq`, completions of softirq-polled CQs) the work item
    /// transmits, as before. Why in place is safe:
    ///
    /// - Sleeping: the transmit function takes [`Qp::tx`] (a mutex), the
    ///   socket lock and calls TCP, which may allocate; the poster may
    ///   sleep, checked by the kernel's own counts, not assumed.
    /// - Lock order: no lock of this QP is held here (`inner` is dropped
    ///   first), so the transmit function nests its locks as it does on the
    ///   work item (`tx`, the socket, then `inner` and the rest). Consumer
    ///   code that rsiw calls while it holds `tx` or the socket lock
    ///   (completion handlers, QP and CQ events) runs under the handle's
    ///   interrupt-safe lock, with interrupts off, so a post from there
    ///   never transmits in place and cannot come back for `tx` or the
    ///   socket lock. A sleeping lock the poster holds is therefore only
    ///   ever taken before `tx`, never after it.
    /// - Order on the wire: whichever context gets `tx` sends the send
    ///   queue in order; a work request posted earlier from atomic context
    ///   (the work item queued for it) goes out first either way, and the
    ///   work item then finds the queue done.
    /// - Memory gate: the same transmit function enters the work
    ///   request's memory only with the socket locked, as it does on the
    ///   work item.
    /// - Waiting: if the work item or another poster holds `tx`, the poster
    ///   waits for it (a user doorbell does the same); a full TCP send
    ///   buffer leaves the rest to the work item, woken by TCP's
    ///   write-space upcall.
    pub(crate) fn post_send(self: &Arc<Self>, wrs: &mut SendWrs<'_, RsiwDriver>) -> Result {
        if !self.kernel {
            if !wrs.is_empty() {
                return Err(EINVAL);
            }
            return self.doorbell();
        }
        let mut inner = self.inner.lock();
        match inner.state().post_send() {
            Post::Queue => {}
            Post::Flush => {
                drop(inner);
                return self.flush_send_wrs(wrs);
            }
            Post::NotConnected => return Err(crate::kif::compat::error::enotconn()),
        }
        for wr in &mut *wrs {
            let wr = wr?;
            let i = inner.sq_put();
            if !self.sq.flags(i).is_empty() {
                return Err(ENOMEM);
            }
            let sqe = sqe_of(&wr, self.caps.sq_max_sge)?;
            self.sq.write(i, &sqe);
            self.sq.set_flags(i, sqe.flags | WqeFlags::VALID);
            inner.sq_filled();
        }
        drop(inner);
        tx::kick(self, wrs.poster_may_sleep());
        Ok(())
    }

    /// The user-space doorbell: user space wrote its work requests into
    /// the send queue ring itself.
    #[inline]
    fn doorbell(self: &Arc<Self>) -> Result {
        match self.state().post_send() {
            // The doorbell is a system call: transmit right here, as siw
            // does, instead of waking the workqueue (a scheduling round
            // trip per message costs latency). The work item takes over
            // when TCP is full.
            Post::Queue => {
                // An application that streams (nothing received since its
                // last doorbell, its last message still not acknowledged)
                // is not waiting for a reply: a worker on another CPU sends
                // for it, and sends what it posts meanwhile in one go,
                // while the application goes on posting. A ping-pong
                // (something arrived in between) sends in the system call:
                // a wake-up costs latency. (A plain store clears the flag:
                // a receive that sets it again in between is lost, and the
                // next doorbell may then hand off to the worker, which
                // only costs that message a wake-up.)
                let rx = self.lockfree.take_received();
                if !rx && self.lockfree.streaming() {
                    self.schedule_tx_elsewhere();
                } else {
                    tx::run_answer(self, rx);
                    self.stats.inc(Counter::TxDoorbellRuns);
                }
                Ok(())
            }
            Post::Flush => {
                self.flush_sq();
                Ok(())
            }
            Post::NotConnected => Err(crate::kif::compat::error::enotconn()),
        }
    }

    /// Completes kernel send work requests of a QP in error with flush
    /// errors (`ib_drain_sq`).
    fn flush_send_wrs(&self, wrs: &mut SendWrs<'_, RsiwDriver>) -> Result {
        for wr in wrs {
            let wr = wr?;
            let c = Cqe {
                id: wr.id,
                flags: WqeFlags::empty(),
                opcode: opcode(&wr.kind).into(),
                status: Status::WrFlushErr,
                bytes: 0,
                imm_or_inval: 0,
                qp: self.cqe_qp(),
            };
            self.scq.push(&c, WqeFlags::empty())?;
        }
        Ok(())
    }

    /// Posts kernel receive work requests.
    pub(crate) fn post_recv(&self, wrs: &mut RecvWrs<'_>) -> Result {
        let Some(rq) = &self.rq else {
            return Err(EINVAL);
        };
        if !self.kernel {
            return Err(EINVAL);
        }
        let mut inner = self.inner.lock();
        match inner.state().post_recv() {
            Post::Queue => {}
            Post::Flush => {
                drop(inner);
                return self.flush_recv_wrs(wrs);
            }
            Post::NotConnected => return Err(crate::kif::compat::error::enotconn()),
        }
        for wr in wrs {
            inner.post_rq(rq, &wr?, self.caps.rq_max_sge)?;
        }
        Ok(())
    }

    /// Completes kernel receive work requests of a QP in error with flush
    /// errors (`ib_drain_rq`).
    fn flush_recv_wrs(&self, wrs: &mut RecvWrs<'_>) -> Result {
        for wr in wrs {
            let wr = wr?;
            let rqe = Rqe {
                id: wr.id,
                flags: WqeFlags::empty(),
                num_sge: 0,
                sge: wr.sge,
            };
            self.complete_rqe(&rqe, 0, None, Status::WrFlushErr)?;
        }
        Ok(())
    }
}
