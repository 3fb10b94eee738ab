// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues: the shared `siw_rqe` ring, kernel posting, the
//! consumer side for the receive path and the limit event.

use kernel::{new_mutex, prelude::*, sync::Arc, sync::Mutex};

use crate::base::{limits, Kind, Quota, Quotas, RsiwDriver};
use crate::kif::{
    compat::sync::SpinLockIrq,
    rdma::handle::SrqHandle,
    rdma::mmap::UserMapping,
    rdma::srq::{CreateSrq, SrqAttr},
    rdma::wr::RecvWrs,
    siw::{uresp, Ring, Rqe, WqeFlags, MAX_SGE},
};

/// Mutable SRQ state.
struct SrqState {
    put: u32,
    get: u32,
    limit: u32,
    armed: bool,
}

/// A shared receive queue.
#[pin_data]
pub(crate) struct Srq {
    ring: Ring<Rqe>,
    max_sge: u32,
    kernel: bool,
    /// The protection domain its receives' memory must belong to.
    pd_id: u32,
    #[pin]
    st: SpinLockIrq<SrqState>,
    handle: SrqHandle,
    #[pin]
    mapping: Mutex<Option<UserMapping>>,
    /// Counts the SRQ against [`limits::MAX_SRQ`] while it lives.
    _quota: Quota,
}

impl Srq {
    /// The protection domain the SRQ was created in.
    pub(crate) fn pd_id(&self) -> u32 {
        self.pd_id
    }

    /// Creates an SRQ.
    pub(crate) fn create(
        quotas: &Arc<Quotas>,
        mut a: CreateSrq<'_, RsiwDriver>,
    ) -> Result<Arc<Self>> {
        if !a.basic {
            return Err(crate::kif::compat::error::eopnotsupp());
        }
        let quota = Quota::take(quotas, Kind::Srq)?;
        let at = a.attr;
        if at.max_wr == 0
            || at.max_wr > limits::MAX_SRQ_WR
            || at.max_sge > MAX_SGE as u32
            || at.limit > at.max_wr
        {
            return Err(EINVAL);
        }
        let user = a.user.is_some();
        let ring = Ring::<Rqe>::new(at.max_wr, 0, user)?;
        let mapping = match &a.user {
            Some(u) => {
                let (m, key) = u.map(ring.mem())?;
                a.udata.respond(&uresp::create_srq(ring.len(), key))?;
                Some(m)
            }
            None => None,
        };
        Arc::pin_init(
            pin_init!(Self {
                ring,
                max_sge: at.max_sge,
                kernel: !user,
                pd_id: a.pd.id,
                st <- crate::new_spinlock_irq!(
                    SrqState {
                        put: 0,
                        get: 0,
                        limit: at.limit,
                        armed: at.limit != 0,
                    },
                    "rsiw::Srq::st"
                ),
                handle: a.handle.clone(),
                mapping <- new_mutex!(mapping, "rsiw::Srq::mapping"),
                _quota: quota,
            }),
            GFP_KERNEL,
        )
    }

    /// Changes the limit (resizing is not supported, as in siw).
    pub(crate) fn modify(&self, max_wr: Option<u32>, limit: Option<u32>) -> Result {
        if max_wr.is_some() {
            return Err(crate::kif::compat::error::eopnotsupp());
        }
        if let Some(l) = limit {
            if l > self.ring.len() {
                return Err(EINVAL);
            }
            let mut st = self.st.lock();
            st.limit = l;
            st.armed = l != 0;
        }
        Ok(())
    }

    /// Current attributes.
    pub(crate) fn query(&self) -> SrqAttr {
        SrqAttr {
            max_wr: self.ring.len(),
            max_sge: self.max_sge,
            limit: self.st.lock().limit,
        }
    }

    /// Posts kernel receive work requests.
    pub(crate) fn post(&self, wrs: &mut RecvWrs<'_>) -> Result {
        if !self.kernel {
            return Err(EINVAL);
        }
        let mut st = self.st.lock();
        for wr in wrs {
            self.ring.post(&mut st.put, &wr?, self.max_sge)?;
        }
        Ok(())
    }

    /// Takes the next posted receive element into `dst` (its SGEs in use;
    /// see [`Ring::take_into`]), if any (receive path), and raises the
    /// limit event when the queue falls below its limit.
    pub(crate) fn take_into(&self, dst: &mut Rqe) -> bool {
        let event = {
            let mut st = self.st.lock();
            if !self.ring.take_into(&mut st.get, dst) {
                return false;
            }
            let mut event = false;
            if st.armed {
                // Count the valid elements left (user space posts without
                // telling us, so look at the ring).
                let mut left = 0;
                let valid = |k: u32| self.ring.flags(k).contains(WqeFlags::VALID);
                while left < st.limit && valid(st.get.wrapping_add(left)) {
                    left += 1;
                }
                if left < st.limit {
                    st.armed = false;
                    event = true;
                }
            }
            event
        };
        if event {
            self.handle.limit_reached();
        }
        true
    }

    /// Destroys the SRQ. (Its quota goes back when the last reference,
    /// the QPs' included, is dropped.)
    pub(crate) fn destroy(&self) {
        drop(self.mapping.lock().take());
    }
}
