// SPDX-License-Identifier: GPL-2.0

//! Creating a QP: the attributes checked against the device's limits, the
//! shared SQ/RQ rings and their user mappings, the QP's number in the
//! device's QP table, and the answer to libsiw (`siw_uresp_create_qp`).

use kernel::{new_mutex, prelude::*, sync::Arc, workqueue::new_work};

use super::details::LastTerm;
use super::reads::{InboundReads, OutboundReads};
use super::rx::RxState;
use super::tx::TxState;
use super::{LockFree, Qp, QpCaps, QpInner};
use crate::base::{limits, stats::Stats, Kind, Quota, Quotas, RsiwDriver};
use crate::cq::Cq;
use crate::kif::compat::xarray::XArray;
use crate::kif::{
    rdma::mmap::UserMapping,
    rdma::qp::{CreateQp, QpInit},
    siw::{Ring, Rqe, Sqe, MAX_INLINE, MAX_SGE},
};
use crate::mem;

/// `struct siw_uresp_create_qp`.
fn create_resp(id: u32, nsq: u32, nrq: u32, sq_key: u64, rq_key: u64) -> [u8; 32] {
    let mut r = [0u8; 32];
    r[..4].copy_from_slice(&id.to_ne_bytes());
    r[4..8].copy_from_slice(&nsq.to_ne_bytes());
    r[8..12].copy_from_slice(&nrq.to_ne_bytes());
    r[16..24].copy_from_slice(&sq_key.to_ne_bytes());
    r[24..].copy_from_slice(&rq_key.to_ne_bytes());
    r
}

/// Checks the attributes of a new QP: an RC QP within the device's
/// limits, with at least one send work request.
fn check(i: &QpInit) -> Result {
    if !i.rc {
        return Err(crate::kif::compat::error::eopnotsupp());
    }
    if i.max_send_wr > limits::MAX_QP_WR
        || i.max_recv_wr > limits::MAX_QP_WR
        || i.max_send_sge > MAX_SGE as u32
        || i.max_recv_sge > MAX_SGE as u32
        || i.max_inline > MAX_INLINE as u32
        || i.max_send_wr == 0
        || i.bad_sig_type
    {
        return Err(EINVAL);
    }
    Ok(())
}

/// A new QP's rings, their sizes and, for user space, their mappings.
struct Queues {
    sq: Ring<Sqe>,
    rq: Option<Ring<Rqe>>,
    caps: QpCaps,
    mappings: KVec<UserMapping>,
    /// The mmap keys of the rings (0 for a queue the QP does not have, as
    /// siw: libsiw only maps queues with entries).
    sq_key: u64,
    rq_key: u64,
}

impl Queues {
    /// Allocates the rings `a` asks for (no RQ with an SRQ) and maps them
    /// for user space.
    fn new(a: &CreateQp<'_, RsiwDriver>) -> Result<Self> {
        let i = a.init;
        let user = a.user.is_some();
        let sq = Ring::<Sqe>::new(i.max_send_wr, 0, user)?;
        let rq = if a.srq.is_none() && i.max_recv_wr > 0 {
            Some(Ring::<Rqe>::new(i.max_recv_wr, 0, user)?)
        } else {
            None
        };
        let caps = QpCaps {
            sq_size: sq.len(),
            rq_size: rq.as_ref().map_or(0, |r| r.len()),
            sq_max_sge: i.max_send_sge,
            rq_max_sge: i.max_recv_sge,
        };
        let mut q = Self {
            sq,
            rq,
            caps,
            mappings: KVec::new(),
            sq_key: 0,
            rq_key: 0,
        };
        if let Some(u) = &a.user {
            let (m, k) = u.map(q.sq.mem())?;
            q.mappings.push(m, GFP_KERNEL)?;
            q.sq_key = k;
            if let Some(rq) = &q.rq {
                let (m, k) = u.map(rq.mem())?;
                q.mappings.push(m, GFP_KERNEL)?;
                q.rq_key = k;
            }
        }
        Ok(q)
    }
}

impl Qp {
    /// Creates an RC QP and gives it a number in `qps` (the device's QP
    /// table); `mem_xa` and `stats` are the device's, the QP's data path
    /// uses them.
    pub(crate) fn create(
        qps: &XArray<Qp>,
        quotas: &Arc<Quotas>,
        mem_xa: &mem::Table,
        stats: &Arc<Stats>,
        a: CreateQp<'_, RsiwDriver>,
    ) -> Result<(Arc<Self>, u32)> {
        let i = a.init;
        if i.create_flags != 0 {
            return Err(crate::kif::compat::error::eopnotsupp());
        }
        let quota = Quota::take(quotas, Kind::Qp)?;
        Self::build(qps, mem_xa, stats, a, quota)
    }

    /// Creates the QP `a` asks for, counted by `quota`, and numbers it.
    fn build(
        qps: &XArray<Qp>,
        mem_xa: &mem::Table,
        stats: &Arc<Stats>,
        mut a: CreateQp<'_, RsiwDriver>,
        quota: Quota,
    ) -> Result<(Arc<Self>, u32)> {
        check(&a.init)?;
        let scq = a.send_cq.ok_or(EINVAL)?.clone();
        if a.recv_cq.is_none() && a.srq.is_none() {
            return Err(EINVAL);
        }
        let q = Queues::new(&a)?;
        let (caps, sq_key, rq_key) = (q.caps, q.sq_key, q.rq_key);
        let qp = Arc::pin_init(Self::new(&a, q, scq, mem_xa, stats, quota), GFP_KERNEL)?;
        let id = qps.alloc_cyclic(qp.clone(), u32::MAX >> 8)?;
        qp.lockfree.set_id(id);
        if !qp.kernel {
            let r = create_resp(id, caps.sq_size, caps.rq_size, sq_key, rq_key);
            if let Err(e) = a.udata.respond(&r) {
                qps.erase(id);
                return Err(e);
            }
        }
        Ok((qp, id))
    }

    /// The initialiser of a new QP (Idle, no number yet) with the queues
    /// `q`; every lock gets its name (see the lock order in [`super`]).
    fn new(
        a: &CreateQp<'_, RsiwDriver>,
        q: Queues,
        scq: Arc<Cq>,
        mem_xa: &mem::Table,
        stats: &Arc<Stats>,
        quota: Quota,
    ) -> impl PinInit<Self> {
        let Queues {
            sq,
            rq,
            caps,
            mappings,
            ..
        } = q;
        let (pd_id, rcq, srq) = (a.pd.id, a.recv_cq.cloned(), a.srq.cloned());
        let (kernel, sig_all, handle) = (a.user.is_none(), a.init.sig_all, a.handle.clone());
        let (mem_xa, stats) = (mem_xa.clone(), stats.clone());
        pin_init!(Self {
            lockfree: LockFree::new(),
            pd_id,
            scq,
            rcq,
            srq,
            sq,
            rq,
            kernel,
            sig_all,
            caps,
            mem_xa,
            stats,
            handle,
            inner <- crate::new_spinlock_irq!(QpInner::new(), "rsiw::Qp::inner"),
            mappings <- new_mutex!(mappings, "rsiw::Qp::mappings"),
            conn <- crate::new_spinlock_irq!(None, "rsiw::Qp::conn"),
            rx <- crate::new_spinlock_irq!(RxState::new(), "rsiw::Qp::rx"),
            tx <- new_mutex!(TxState::new(), "rsiw::Qp::tx"),
            outbound_reads <- crate::new_spinlock_irq!(OutboundReads::new(), "rsiw::Qp::outbound_reads"),
            inbound_reads <- crate::new_spinlock_irq!(InboundReads::new(), "rsiw::Qp::inbound_reads"),
            last_term: LastTerm::new(),
            tx_work <- new_work!("rsiw::qp_tx"),
            _quota: quota,
        })
    }
}
