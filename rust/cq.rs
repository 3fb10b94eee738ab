// SPDX-License-Identifier: GPL-2.0

//! Completion queues: the shared `siw_cqe` ring, completion insertion with
//! the solicited/next-completion notification rules, and kernel polling.

use kernel::{new_mutex, prelude::*, sync::Arc, sync::Mutex};

use crate::base::{limits, Kind, Quota, Quotas};
use crate::kif::{
    compat::sync::SpinLockIrq,
    rdma::cq::CreateCq,
    rdma::handle::CqHandle,
    rdma::mmap::UserMapping,
    siw::{uresp, Cqe, Ring, Status, WqeFlags, CQ_TRAILER},
};

/// Notification bits of the shared control word (`enum siw_notify_flags`).
pub(crate) mod notify {
    /// Notify on the next solicited completion.
    pub(crate) const SOLICITED: u32 = 1;
    /// Notify on the next completion.
    pub(crate) const NEXT: u32 = 2;
}

/// Whether a completion of status `status` for a work queue element with
/// `wqe_flags` wakes a CQ armed with `armed` (the shared control word).
/// Armed for the next completion, any does; armed for solicited ones
/// only, a solicited one does, and so does every unsuccessful one, the
/// flushes included (`ibv_req_notify_cq(3)`: "A CQE is solicited if it
/// is a receive completion for a message with the Solicited Event header
/// bit set, or if the status is not successful"). Upstream siw leaves
/// out the second case, so a consumer that waits for solicited
/// completions never learns that its QP went to error.
fn wakes(armed: u32, wqe_flags: WqeFlags, status: Status) -> bool {
    armed & notify::NEXT != 0
        || (armed & notify::SOLICITED != 0
            && (wqe_flags.contains(WqeFlags::SOLICITED) || status != Status::Success))
}

/// Producer and consumer positions.
struct Pos {
    put: u32,
    get: u32,
}

/// A completion queue.
#[pin_data]
pub(crate) struct Cq {
    /// Random id reported to user space.
    pub(crate) id: u32,
    ring: Ring<Cqe>,
    #[pin]
    pos: SpinLockIrq<Pos>,
    handle: CqHandle,
    #[pin]
    mapping: Mutex<Option<UserMapping>>,
    /// Counts the CQ against [`limits::MAX_CQ`] while it lives.
    _quota: Quota,
}

impl Cq {
    /// Creates a CQ of at least `args.cqe` entries.
    pub(crate) fn create(quotas: &Arc<Quotas>, mut args: CreateCq<'_>) -> Result<Arc<Self>> {
        if args.flags != 0 {
            return Err(crate::kif::compat::error::eopnotsupp());
        }
        let quota = Quota::take(quotas, Kind::Cq)?;
        Self::build(&mut args, quota)
    }

    fn build(args: &mut CreateCq<'_>, quota: Quota) -> Result<Arc<Self>> {
        if args.cqe < 1 || args.cqe > limits::MAX_CQE {
            return Err(EINVAL);
        }
        let user = args.user.is_some();
        let ring = Ring::<Cqe>::new(args.cqe, CQ_TRAILER, user)?;
        let id = crate::kif::compat::random::random_u32();
        let mapping = match &args.user {
            Some(user_cq) => {
                let (mapping, key) = user_cq.map(ring.mem())?;
                args.udata.respond(&uresp::create_cq(id, ring.len(), key))?;
                Some(mapping)
            }
            None => None,
        };
        Arc::pin_init(
            pin_init!(Self {
                id,
                ring,
                pos <- crate::new_spinlock_irq!(Pos { put: 0, get: 0 }, "rsiw::Cq::pos"),
                handle: args.handle.clone(),
                mapping <- new_mutex!(mapping, "rsiw::Cq::mapping"),
                _quota: quota,
            }),
            GFP_KERNEL,
        )
    }

    /// Inserts a completion. `wqe_flags` are the flags of the work queue
    /// element (for the solicited rule). Fails with `ENOMEM` on overflow,
    /// which is also reported as a CQ error event.
    pub(crate) fn push(&self, cqe: &Cqe, wqe_flags: WqeFlags) -> Result {
        let notify_now = {
            let mut pos = self.pos.lock();
            let i = pos.put;
            if self.ring.flags(i).contains(WqeFlags::VALID) {
                drop(pos);
                self.handle.error();
                return Err(ENOMEM);
            }
            self.ring.write_cqe(i, cqe);
            self.ring.set_flags(i, WqeFlags::VALID | cqe.flags);
            pos.put = pos.put.wrapping_add(1);
            let armed = self
                .ring
                .notify()
                .load(core::sync::atomic::Ordering::Acquire);
            let now = wakes(armed, wqe_flags, cqe.status);
            if now {
                self.ring
                    .notify()
                    .store(0, core::sync::atomic::Ordering::Release);
            }
            now
        };
        if notify_now {
            self.handle.notify();
        }
        Ok(())
    }

    /// Reaps up to `max` completions (kernel CQs).
    pub(crate) fn poll(&self, max: usize, mut each: impl FnMut(&Cqe)) {
        let mut pos = self.pos.lock();
        for _ in 0..max {
            let i = pos.get;
            if !self.ring.flags(i).contains(WqeFlags::VALID) {
                break;
            }
            let mut cqe = self.ring.read(i);
            cqe.flags = self.ring.flags(i);
            self.ring.set_flags(i, WqeFlags::empty());
            pos.get = pos.get.wrapping_add(1);
            each(&cqe);
        }
    }

    /// Arms the CQ for the next (solicited) completion; returns the number
    /// of unreaped completions when asked.
    pub(crate) fn arm(&self, solicited_only: bool, report_missed: bool) -> u32 {
        let mode = if solicited_only {
            notify::SOLICITED
        } else {
            notify::SOLICITED | notify::NEXT
        };
        self.ring
            .notify()
            .store(mode, core::sync::atomic::Ordering::SeqCst);
        if report_missed {
            let pos = self.pos.lock();
            pos.put.wrapping_sub(pos.get)
        } else {
            0
        }
    }

    /// Destroys the CQ: unmaps it from user space. (Its quota goes back
    /// when the last reference, the QPs' included, is dropped.)
    pub(crate) fn destroy(&self) {
        drop(self.mapping.lock().take());
    }
}
