// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: creation with the shared SQ/RQ rings, the iWARP QP state
//! machine (RTS only through the connection manager), flushing on error,
//! and posting of kernel work requests. The submodules hold the RDMA Read
//! queues ([`orq`]) and the transmit ([`tx`]) and receive ([`rx`])
//! engines; the connection manager is reached only through the
//! [`Endpoint`] a connection holds.

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
    workqueue::{impl_has_work, new_work, Work, WorkItem},
};

use crate::base::{
    limits,
    stats::{Counter, Stats},
    Kind, Quota, Quotas, Rsiw,
};
use crate::cq::Cq;
use crate::kif::compat::xarray::XArray;
use crate::kif::{
    compat::sync::SpinLockIrq,
    net::NetDev,
    rdma::attr::Mtu,
    rdma::handle::QpHandle,
    rdma::mmap::UserMapping,
    rdma::qp::{CreateQp, IbQpState, QpModify, QpQuery},
    rdma::wr::{RecvWrs, SendKind, SendWrs},
    siw::{op, wc, wqe, Cqe, Ring, Rqe, Sqe, MAX_INLINE, MAX_SGE},
    sock::Socket,
};
use crate::mem::{self, access};
use crate::srq::Srq;
use orq::{Irq, Orq, WrRef};
use rx::RxState;
use tx::TxState;

pub mod orq;
pub mod rx;
pub mod tx;

/// The iWARP QP states (RFC 5040 section 10 / verbs for iWARP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpState {
    /// Created, not connected (IB RESET and INIT).
    Idle,
    /// Accepted by the IB state machine as RTR (no meaning on iWARP).
    Rtr,
    /// Connected: data moves.
    Rts,
    /// Graceful close in progress (IB SQD).
    Closing,
    /// A TERMINATE is being sent (IB SQE).
    Terminate,
    /// Error: final; all work requests flush.
    Error,
}

impl QpState {
    /// The state stored as `s as u8` (an unknown value reads as Error).
    fn from_u8(v: u8) -> Self {
        [
            Self::Idle,
            Self::Rtr,
            Self::Rts,
            Self::Closing,
            Self::Terminate,
            Self::Error,
        ]
        .get(usize::from(v))
        .copied()
        .unwrap_or(Self::Error)
    }

    fn ib(self) -> IbQpState {
        match self {
            Self::Idle => IbQpState::Init,
            Self::Rtr => IbQpState::Rtr,
            Self::Rts => IbQpState::Rts,
            Self::Closing => IbQpState::Sqd,
            Self::Terminate => IbQpState::Sqe,
            Self::Error => IbQpState::Err,
        }
    }

    fn from_ib(s: IbQpState) -> Self {
        match s {
            IbQpState::Reset | IbQpState::Init => Self::Idle,
            IbQpState::Rtr => Self::Rtr,
            IbQpState::Rts => Self::Rts,
            IbQpState::Sqd => Self::Closing,
            IbQpState::Sqe => Self::Terminate,
            IbQpState::Err => Self::Error,
        }
    }
}

/// Mutable QP state, under the QP lock.
pub struct QpInner {
    /// Protocol state.
    pub state: QpState,
    /// Next SQ slot a kernel post fills.
    pub sq_put: u32,
    /// Next SQ slot the transmit side takes.
    pub sq_get: u32,
    /// Next RQ slot a kernel post fills.
    pub rq_put: u32,
    /// RDMA access the peer is granted (IB access flags).
    pub access: u32,
    /// Inbound RDMA Reads (IRD).
    pub ird: u32,
    /// Outbound RDMA Reads (ORD).
    pub ord: u32,
    /// The Send or Write being transmitted (its slot is back in the SQ):
    /// whoever takes it completes it (the transmit work when the last
    /// octet went to TCP, [`tx::flush_orq`] when the QP goes to
    /// error).
    pub active: Option<WrRef>,
}

/// What a QP's connection needs of the connection manager's endpoint
/// (`cm::Cep` implements it): the control-path calls of the QP's
/// transmit and receive sides into the CM.
pub trait Endpoint: Send + Sync {
    /// The receive path got the first FPDU of a peer-to-peer connection
    /// (the initiator's RTR): the CM reports ESTABLISHED.
    fn rtr_received(self: Arc<Self>);
    /// The local side wants the connection closed (the QP left RTS).
    fn request_close(self: Arc<Self>);
    /// The RDMA connection is going down (`remote`: the peer closed or
    /// reset it): the CM reports it.
    fn close(self: Arc<Self>, remote: bool);
}

/// The MPA connection of a QP in RTS: its socket and what was negotiated.
pub struct Conn {
    /// The TCP socket (its upcalls go to the QP while it is in RTS).
    pub sock: Socket,
    /// MPA markers in the FPDUs we send (the peer asked for them: RFC 5044
    /// negotiates markers per direction).
    pub tx_markers: bool,
    /// MPA markers in the FPDUs we receive (we asked for them).
    pub rx_markers: bool,
    /// MPA CRC in use.
    pub crc: bool,
    /// Largest ULPDU of one FPDU we send (from the connection's EMSS).
    pub mulpdu: u32,
    /// The peer takes FPDUs larger than a TCP segment: FPDUs we send
    /// carry up to [`crate::wire::mpa::LARGE_FPDU_PAYLOAD`] payload octets
    /// instead of what `mulpdu` allows.
    pub large_fpdu: bool,
    /// Largest ULPDU_Length accepted from the peer (from the MSS we
    /// advertised, or any when we offered to take large FPDUs; a longer
    /// one is an MPA framing error).
    pub rx_max_ulpdu: u16,
    /// Peer-to-peer initiator: a zero length Write (the RTR, RFC 6581)
    /// goes out before any work request.
    pub send_rtr: bool,
    /// Peer-to-peer responder: the first FPDU received (the RTR) is still
    /// to be reported to the CM.
    pub await_rtr: AtomicBool,
    /// Client-server responder: no FPDU goes out before the initiator's
    /// first one arrived (RFC 5044 section 7.1.2).
    pub hold_tx: bool,
    /// The connection endpoint, which reports the close to the CM.
    pub cep: Arc<dyn Endpoint>,
    /// The CM id of the connection.
    pub id: crate::kif::rdma::iwcm::CmId,
}

/// Fixed QP sizes.
#[derive(Clone, Copy, Debug)]
pub struct QpCaps {
    /// Send queue entries.
    pub sq_size: u32,
    /// Receive queue entries (0 with an SRQ).
    pub rq_size: u32,
    /// SGEs per send work request.
    pub sq_max_sge: u32,
    /// SGEs per receive work request.
    pub rq_max_sge: u32,
}

/// A queue pair.
#[pin_data]
pub struct Qp {
    /// QP number (set once, right after creation).
    id: AtomicU32,
    /// Owning protection domain.
    pub pd_id: u32,
    /// Send completion queue.
    pub scq: Arc<Cq>,
    /// Receive completion queue.
    pub rcq: Option<Arc<Cq>>,
    /// Shared receive queue.
    pub srq: Option<Arc<Srq>>,
    /// Send queue ring.
    pub sq: Ring<Sqe>,
    /// Receive queue ring (none with an SRQ).
    pub rq: Option<Ring<Rqe>>,
    /// Created by a kernel consumer.
    pub kernel: bool,
    /// Every send work request completes.
    pub sig_all: bool,
    /// Sizes.
    pub caps: QpCaps,
    /// The device's memory objects by STag index (data path lookups).
    pub mem_xa: mem::Table,
    /// The device's counters.
    pub stats: Arc<Stats>,
    /// The core QP (events, kernel completion token).
    pub handle: QpHandle,
    /// Mutable state.
    #[pin]
    pub inner: SpinLockIrq<QpInner>,
    /// `inner.state`, readable without the lock (the data path looks at
    /// the state on every message); written only together with it, see
    /// [`Qp::put_state`].
    state_now: AtomicU8,
    #[pin]
    mappings: Mutex<KVec<UserMapping>>,
    /// The connection, while in RTS (and until teardown).
    #[pin]
    pub conn: SpinLockIrq<Option<Arc<Conn>>>,
    /// Receive side state (deframer, message in progress).
    #[pin]
    pub rx: SpinLockIrq<RxState>,
    /// Receiving has started (`rx` has its deframer): the socket upcall
    /// may take data out of TCP.
    pub rx_ready: AtomicBool,
    /// Set after a Read Request or a TERMINATE was queued in `irq`: the
    /// transmit function takes the `irq` lock only when it is set (it
    /// looks for work once or twice per message).
    pub irq_hint: AtomicBool,
    /// The TCP connection closed: the transmit function (process context)
    /// reports it to the connection manager.
    pub llp_closed: AtomicBool,
    /// The last message went out while earlier data was still
    /// unacknowledged by TCP.
    pub tx_streaming: AtomicBool,
    /// Octets arrived since the last doorbell (set before they are placed).
    pub rx_seen: AtomicBool,
    /// Nothing may be sent yet: a client-server responder waits for the
    /// initiator's first FPDU ([`Conn::hold_tx`]); set by the receive
    /// side's start, cleared when that FPDU was received.
    pub tx_held: AtomicBool,
    /// The connection uses CRC: the receive side verifies each FPDU
    /// before it places it (set by its start, read without its lock).
    pub rx_verify: AtomicBool,
    /// Transmit side state (work request in progress).
    #[pin]
    pub tx: Mutex<TxState>,
    /// Outbound RDMA Reads awaiting their response (ORD).
    #[pin]
    pub orq: SpinLockIrq<Orq>,
    /// Inbound RDMA Reads to answer (IRD).
    #[pin]
    pub irq: SpinLockIrq<Irq>,
    /// The transmit work item.
    #[pin]
    tx_work: Work<Qp>,
    /// Counts the QP against [`limits::MAX_QP`] while it lives.
    _quota: Quota,
}

impl_has_work! {
    impl HasWork<Self> for Qp { self.tx_work }
}

impl WorkItem for Qp {
    type Pointer = Arc<Qp>;

    fn run(this: Arc<Qp>) {
        this.stats.inc(Counter::TxWorkRuns);
        tx::run(&this);
    }
}

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

impl Qp {
    /// Creates an RC QP and gives it a number in `qps` (the device's QP
    /// table); `mem_xa` and `stats` are the device's, the QP's data path
    /// uses them.
    pub fn create(
        qps: &XArray<Qp>,
        quotas: &Arc<Quotas>,
        mem_xa: &mem::Table,
        stats: &Arc<Stats>,
        a: CreateQp<'_, Rsiw>,
    ) -> Result<(Arc<Self>, u32)> {
        let i = a.init;
        if i.create_flags != 0 {
            return Err(crate::kif::compat::error::eopnotsupp());
        }
        let quota = Quota::take(quotas, Kind::Qp)?;
        Self::build(qps, mem_xa, stats, a, quota)
    }

    fn build(
        qps: &XArray<Qp>,
        mem_xa: &mem::Table,
        stats: &Arc<Stats>,
        mut a: CreateQp<'_, Rsiw>,
        quota: Quota,
    ) -> Result<(Arc<Self>, u32)> {
        let i = a.init;
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
        let scq = a.send_cq.ok_or(EINVAL)?.clone();
        if a.recv_cq.is_none() && a.srq.is_none() {
            return Err(EINVAL);
        }
        let user = a.user.is_some();
        let sq = Ring::<Sqe>::new(i.max_send_wr, 0, user)?;
        let srq = a.srq.cloned();
        let rq = if srq.is_none() && i.max_recv_wr > 0 {
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
        let mut mappings = KVec::new();
        // A queue the QP does not have is reported with key 0, as siw does
        // (libsiw only maps queues with entries).
        let (mut sq_key, mut rq_key) = (0, 0);
        if let Some(u) = &a.user {
            let (m, k) = u.map(sq.mem())?;
            mappings.push(m, GFP_KERNEL)?;
            sq_key = k;
            if let Some(rq) = &rq {
                let (m, k) = u.map(rq.mem())?;
                mappings.push(m, GFP_KERNEL)?;
                rq_key = k;
            }
        }
        let qp = Arc::pin_init(
            pin_init!(Self {
                id: AtomicU32::new(0),
                pd_id: a.pd.id,
                scq,
                rcq: a.recv_cq.cloned(),
                srq,
                sq,
                rq,
                kernel: !user,
                sig_all: i.sig_all,
                caps,
                mem_xa: mem_xa.clone(),
                stats: stats.clone(),
                handle: a.handle.clone(),
                state_now: AtomicU8::new(QpState::Idle as u8),
                inner <- crate::new_spinlock_irq!(QpInner {
                    state: QpState::Idle,
                    sq_put: 0,
                    sq_get: 0,
                    rq_put: 0,
                    access: access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ,
                    ird: 0,
                    ord: 0,
                    active: None,
                }),
                mappings <- new_mutex!(mappings),
                conn <- crate::new_spinlock_irq!(None),
                rx <- crate::new_spinlock_irq!(RxState::new()),
                rx_ready: AtomicBool::new(false),
                irq_hint: AtomicBool::new(false),
                llp_closed: AtomicBool::new(false),
                tx_streaming: AtomicBool::new(false),
                rx_seen: AtomicBool::new(false),
                tx_held: AtomicBool::new(false),
                rx_verify: AtomicBool::new(false),
                tx <- new_mutex!(TxState::new()),
                orq <- crate::new_spinlock_irq!(Orq::new()),
                irq <- crate::new_spinlock_irq!(Irq::new()),
                tx_work <- new_work!("rsiw::qp_tx"),
                _quota: quota,
            }),
            GFP_KERNEL,
        )?;
        let id = qps.alloc_cyclic(qp.clone(), u32::MAX >> 8)?;
        qp.id.store(id, Ordering::Release);
        if user {
            let r = create_resp(id, caps.sq_size, caps.rq_size, sq_key, rq_key);
            if let Err(e) = a.udata.respond(&r) {
                qps.erase(id);
                return Err(e);
            }
        }
        Ok((qp, id))
    }

    /// Applies a `modify_qp` from the verbs interface (not the CM).
    pub fn modify(self: &Arc<Self>, m: &QpModify) -> Result {
        if m.nonstandard {
            return Err(crate::kif::compat::error::eopnotsupp());
        }
        let mut inner = self.inner.lock();
        if let Some(acc) = m.access {
            inner.access = acc & access::IWARP_MASK;
        }
        let Some(target) = m.state else {
            return Ok(());
        };
        let to = QpState::from_ib(target);
        if inner.state == QpState::Error && target == IbQpState::Reset {
            // Reset from error (ibverbs; siw ignores it): everything was
            // flushed on the way into error; flush what came since and
            // start over. Ring indices continue where user space is.
            drop(inner);
            self.flush_sq();
            self.flush_rq();
            self.put_state(&mut self.inner.lock(), QpState::Idle);
            return Ok(());
        }
        match (inner.state, to) {
            // RTS needs a connection: only the connection manager gets there.
            (QpState::Idle | QpState::Rtr, QpState::Rts) => Err(EINVAL),
            (QpState::Idle | QpState::Rtr, QpState::Error) => {
                self.put_state(&mut inner, QpState::Error);
                drop(inner);
                self.flush_rq();
                Ok(())
            }
            // Leaving RTS closes the connection (graceful for Closing),
            // which the CM reports with a CLOSE event once the socket is
            // gone (the iWARP CM waits for it).
            (QpState::Rts, QpState::Closing) => {
                self.put_state(&mut inner, QpState::Closing);
                drop(inner);
                self.flush_rq();
                self.request_close();
                Ok(())
            }
            (QpState::Rts, QpState::Terminate) => {
                self.put_state(&mut inner, QpState::Terminate);
                drop(inner);
                self.request_close();
                Ok(())
            }
            (QpState::Rts | QpState::Terminate | QpState::Closing, QpState::Error) => {
                self.put_state(&mut inner, QpState::Error);
                drop(inner);
                self.flush_sq();
                self.flush_rq();
                self.request_close();
                Ok(())
            }
            (QpState::Closing, QpState::Idle) => {
                self.put_state(&mut inner, QpState::Idle);
                Ok(())
            }
            (QpState::Closing, QpState::Closing) => Ok(()),
            (QpState::Closing, _) => Err(crate::kif::compat::error::econnaborted()),
            _ => Ok(()),
        }
    }

    /// Moves the QP to error and flushes both queues (teardown, fatal
    /// errors).
    pub fn set_error(&self) {
        self.put_state(&mut self.inner.lock(), QpState::Error);
        self.flush_sq();
        self.flush_rq();
    }

    /// Current state (a snapshot: decisions that must not race with a
    /// state change look at `inner.state` under the lock).
    pub fn state(&self) -> QpState {
        QpState::from_u8(self.state_now.load(Ordering::Acquire))
    }

    /// Sets the state; `inner` is the locked [`Qp::inner`].
    pub fn put_state(&self, inner: &mut QpInner, s: QpState) {
        inner.state = s;
        self.state_now.store(s as u8, Ordering::Release);
    }

    /// Query results.
    pub fn query(&self, ndev: &NetDev<'_>) -> QpQuery {
        let inner = self.inner.lock();
        QpQuery {
            state: inner.state.ib(),
            max_send_wr: self.caps.sq_size,
            max_recv_wr: self.caps.rq_size,
            max_send_sge: self.caps.sq_max_sge,
            max_recv_sge: self.caps.rq_max_sge,
            max_inline: MAX_INLINE as u32,
            path_mtu: Mtu::from_link_mtu(ndev.mtu()),
            max_rd_atomic: inner.ord.min(255) as u8,
            max_dest_rd_atomic: inner.ird.min(255) as u8,
            access: inner.access,
        }
    }

    /// Completes a send queue element into the send CQ (when signalled or
    /// failed) and gives the slot back.
    pub fn complete_sqe(&self, i: u32, sqe: &Sqe, bytes: u32, status: u16) -> Result {
        let r = self.complete_wr(WrRef::of(sqe), bytes, status);
        self.sq.set_flags(i, 0);
        r
    }

    /// Completes a receive element into the receive CQ.
    pub fn complete_rqe(&self, rqe: &Rqe, bytes: u32, inval: Option<u32>, status: u16) -> Result {
        let Some(cq) = &self.rcq else { return Ok(()) };
        let c = Cqe {
            id: rqe.id,
            flags: if inval.is_some() {
                wqe::REM_INVAL as u8
            } else {
                0
            },
            opcode: op::RECEIVE,
            status,
            bytes,
            imm_or_inval: inval.unwrap_or(0) as u64,
            qp: self.cqe_qp(),
        };
        cq.push(&c, rqe.flags)
    }

    /// Completes a send work request whose queue slot was already given
    /// back (RDMA Reads, completed from the ORQ by their Read Response).
    pub fn complete_wr(&self, wr: WrRef, bytes: u32, status: u16) -> Result {
        if wr.flags & wqe::SIGNALLED != 0 || self.sig_all || status != wc::SUCCESS {
            let c = Cqe {
                id: wr.id,
                flags: 0,
                opcode: wr.opcode,
                status,
                bytes,
                imm_or_inval: 0,
                qp: self.cqe_qp(),
            };
            self.scq.push(&c, wr.flags)
        } else {
            Ok(())
        }
    }

    fn cqe_qp(&self) -> u64 {
        if self.kernel {
            self.handle.token()
        } else {
            self.id() as u64
        }
    }

    /// The QP number.
    pub fn id(&self) -> u32 {
        self.id.load(Ordering::Acquire)
    }

    /// Flushes every posted send element with a flush error.
    pub fn flush_sq(&self) {
        // Outstanding RDMA Reads are older than anything still queued.
        tx::flush_orq(self);
        loop {
            let i = {
                let mut inner = self.inner.lock();
                let i = inner.sq_get;
                if self.sq.flags(i) & wqe::VALID == 0 {
                    break;
                }
                inner.sq_get = i.wrapping_add(1);
                i
            };
            let sqe = self.sq.read(i);
            if self.complete_sqe(i, &sqe, 0, wc::WR_FLUSH_ERR).is_err() {
                break;
            }
        }
    }

    /// Flushes every posted receive element with a flush error.
    pub fn flush_rq(&self) {
        // The receive in progress (own RQ or SRQ) goes first.
        rx::flush_active(self);
        let Some(rq) = &self.rq else { return };
        loop {
            // The consumer index is the receive side's (see
            // `rx::RxState`).
            let Some(rqe) = rq.take(&mut self.rx.lock().rq_get) else {
                break;
            };
            if self.complete_rqe(&rqe, 0, None, wc::WR_FLUSH_ERR).is_err() {
                break;
            }
        }
    }

    /// Posts send work requests. Kernel consumers pass a list; user space
    /// rings the doorbell with an empty one.
    pub fn post_send(self: &Arc<Self>, wrs: &mut SendWrs<'_, Rsiw>) -> Result {
        if !self.kernel {
            if !wrs.is_empty() {
                return Err(EINVAL);
            }
            return match self.state() {
                // The doorbell is a system call: transmit right here, as
                // siw does, instead of waking the workqueue (a scheduling
                // round trip per message costs latency). The work item
                // takes over when TCP is full.
                QpState::Rts => {
                    // An application that streams (nothing received since
                    // its last doorbell, its last message still not
                    // acknowledged) is not waiting for a reply: a worker
                    // on another CPU sends for it, and sends what it posts
                    // meanwhile in one go, while the application goes on
                    // posting. A ping-pong (something arrived in between)
                    // sends in the system call: a wake-up costs latency.
                    // (A plain store clears the flag: a receive that sets
                    // it again in between is lost, and the next doorbell
                    // may then hand off to the worker, which only costs
                    // that message a wake-up.)
                    let rx = self.rx_seen.load(Ordering::Relaxed);
                    if rx {
                        self.rx_seen.store(false, Ordering::Relaxed);
                    }
                    if !rx && self.tx_streaming.load(Ordering::Relaxed) {
                        self.schedule_tx_elsewhere();
                    } else {
                        tx::run_answer(self, rx);
                        self.stats.inc(Counter::TxDoorbellRuns);
                    }
                    Ok(())
                }
                // Unlike siw, work posted to a QP in error completes with a
                // flush error (what ibverbs documents).
                QpState::Error => {
                    self.flush_sq();
                    Ok(())
                }
                _ => Err(crate::kif::compat::error::enotconn()),
            };
        }
        let mut inner = self.inner.lock();
        match inner.state {
            QpState::Rts => {}
            QpState::Error => {
                drop(inner);
                return self.flush_send_wrs(wrs);
            }
            _ => return Err(crate::kif::compat::error::enotconn()),
        }
        for wr in wrs {
            let wr = wr?;
            let i = inner.sq_put;
            if self.sq.flags(i) != 0 {
                return Err(ENOMEM);
            }
            if wr.num_sge > self.caps.sq_max_sge as usize {
                return Err(EINVAL);
            }
            let mut sqe = Sqe {
                id: wr.id,
                flags: 0,
                num_sge: wr.num_sge as u8,
                opcode: 0,
                rkey: 0,
                raddr: 0,
                sge: wr.sge,
                access: 0,
            };
            if wr.signaled {
                sqe.flags |= wqe::SIGNALLED;
            }
            if wr.fence {
                sqe.flags |= wqe::READ_FENCE;
            }
            match wr.kind {
                SendKind::Send { invalidate } => {
                    if wr.solicited {
                        sqe.flags |= wqe::SOLICITED;
                    }
                    sqe.opcode = if let Some(k) = invalidate {
                        sqe.rkey = k;
                        op::SEND_REMOTE_INV
                    } else {
                        op::SEND
                    };
                }
                SendKind::Write { raddr, rkey } => {
                    sqe.opcode = op::WRITE;
                    sqe.raddr = raddr;
                    sqe.rkey = rkey;
                }
                SendKind::Read {
                    raddr,
                    rkey,
                    invalidate_local,
                } => {
                    if wr.num_sge != 1 {
                        return Err(EINVAL);
                    }
                    sqe.opcode = if invalidate_local {
                        op::READ_LOCAL_INV
                    } else {
                        op::READ
                    };
                    sqe.raddr = raddr;
                    sqe.rkey = rkey;
                }
                SendKind::LocalInv { stag } => {
                    sqe.opcode = op::INVAL_STAG;
                    sqe.rkey = stag;
                }
                SendKind::RegMr {
                    mr,
                    key,
                    access: acc,
                    iova,
                    length,
                } => {
                    sqe.opcode = op::REG_MR;
                    sqe.raddr = crate::kif::rdma::with_mr::<Rsiw, _>(mr, |m| m.mem.index() as u64);
                    sqe.rkey = key;
                    sqe.access = (acc & access::IWARP_MASK) as u64;
                    // The region as the request sees it (see `tx::reg_mr`).
                    // In `siw_sqe`, `access` shares its union with sge[0]:
                    // the values go into sge[1].
                    sqe.sge[1].addr = iova;
                    sqe.sge[1].length = u32::try_from(length).unwrap_or(u32::MAX);
                }
            }
            if let Some((data, len)) = wr.inline {
                sqe.flags |= wqe::INLINE;
                sqe.num_sge = 1;
                sqe.sge[0].length = len as u32;
                sqe.set_inline_data(&data);
            }
            self.sq.write(i, &sqe);
            self.sq.set_flags(i, sqe.flags | wqe::VALID);
            inner.sq_put = i.wrapping_add(1);
        }
        drop(inner);
        tx::kick(self);
        Ok(())
    }

    /// Completes kernel send work requests of a QP in error with flush
    /// errors (`ib_drain_sq`).
    fn flush_send_wrs(&self, wrs: &mut SendWrs<'_, Rsiw>) -> Result {
        for wr in wrs {
            let wr = wr?;
            let opcode = match wr.kind {
                SendKind::Send { invalidate: None } => op::SEND,
                SendKind::Send {
                    invalidate: Some(_),
                } => op::SEND_REMOTE_INV,
                SendKind::Write { .. } => op::WRITE,
                SendKind::Read {
                    invalidate_local: false,
                    ..
                } => op::READ,
                SendKind::Read {
                    invalidate_local: true,
                    ..
                } => op::READ_LOCAL_INV,
                SendKind::LocalInv { .. } => op::INVAL_STAG,
                SendKind::RegMr { .. } => op::REG_MR,
            };
            let c = Cqe {
                id: wr.id,
                flags: 0,
                opcode,
                status: wc::WR_FLUSH_ERR,
                bytes: 0,
                imm_or_inval: 0,
                qp: self.cqe_qp(),
            };
            self.scq.push(&c, 0)?;
        }
        Ok(())
    }

    /// Posts kernel receive work requests.
    pub fn post_recv(&self, wrs: &mut RecvWrs<'_>) -> Result {
        let Some(rq) = &self.rq else {
            return Err(EINVAL);
        };
        if !self.kernel {
            return Err(EINVAL);
        }
        let mut inner = self.inner.lock();
        match inner.state {
            QpState::Idle | QpState::Rtr | QpState::Rts => {}
            QpState::Error => {
                drop(inner);
                for wr in wrs {
                    let wr = wr?;
                    let rqe = Rqe {
                        id: wr.id,
                        flags: 0,
                        num_sge: 0,
                        sge: wr.sge,
                    };
                    self.complete_rqe(&rqe, 0, None, wc::WR_FLUSH_ERR)?;
                }
                return Ok(());
            }
            _ => return Err(crate::kif::compat::error::enotconn()),
        }
        for wr in wrs {
            rq.post(&mut inner.rq_put, &wr?, self.caps.rq_max_sge)?;
        }
        Ok(())
    }

    /// Schedules the transmit work (a no-op if already scheduled).
    pub fn schedule_tx(self: &Arc<Self>) {
        let _ = crate::kif::compat::workqueue::queue().enqueue(self.clone());
    }

    /// Schedules the transmit work on another CPU, next to what this one
    /// does rather than after it: from the receive path (a Read Response,
    /// a TERMINATE or a stalled Read to send), whose softirq runs on the
    /// CPU that took the packet (with veth, the peer's sending CPU), often
    /// under a process that polls its completion queue (a worker woken
    /// there would first have to preempt it: ib_read_lat 64 B 86 vs 70 us
    /// per Read), and for a streaming application's doorbell.
    pub fn schedule_tx_elsewhere(self: &Arc<Self>) {
        let _ = crate::kif::compat::workqueue::enqueue_on_next_cpu(self.clone());
    }

    /// Asks the connection manager to close the QP's connection (done on
    /// the workqueue, after a TERMINATE or queued data went out).
    pub fn request_close(&self) {
        if let Some(c) = self.conn() {
            c.cep.clone().request_close();
        }
    }

    /// The connection, if the QP has one.
    pub fn conn(&self) -> Option<Arc<Conn>> {
        self.conn.lock().clone()
    }

    /// Drops the connection: the socket's upcalls go back to TCP and the
    /// socket is closed once the last user lets go.
    pub fn drop_conn(self: &Arc<Self>) {
        // A TERMINATE still queued goes out before the close (the transmit
        // work closes the connection itself once it is sent).
        tx::run(self);
        let c = self.conn.lock().take();
        let tc = self.tx.lock().conn.take();
        drop(tc);
        if let Some(c) = c {
            c.sock.detach();
            c.sock.shutdown();
            c.cep.clone().close(false);
        }
    }

    /// Destroys the QP: error state, flush, unmap, forget the QP number
    /// (in `qps`, the device's QP table). Its quota goes back when the last
    /// reference is dropped.
    pub fn destroy(self: Arc<Self>, qps: &XArray<Qp>) {
        self.set_error();
        self.drop_conn();
        drop(core::mem::replace(&mut *self.mappings.lock(), KVec::new()));
        qps.erase(self.id());
    }
}
