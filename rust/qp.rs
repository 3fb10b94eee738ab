// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: the [`Qp`] with its shared SQ/RQ rings, the iWARP QP
//! state machine (its transitions are [`crate::state::qp`]'s; RTS only
//! through the connection manager), completions and flushing. The
//! submodules create QPs (`create`), post work requests (`post`), hold
//! what the `inner` lock guards (`inner`), the lock-free state
//! (`lockfree`), the RDMA Read queues ([`reads`]) and the transmit ([`tx`])
//! and receive ([`rx`]) engines; the connection manager is reached only
//! through the [`Endpoint`] a connection holds.
//!
//! # Locks
//!
//! A QP's locks, in the order they nest (a lock is taken only while
//! holding locks above it in this list, never one below it):
//!
//! 1. The connection endpoint's `Cep::phase` (mutex, in `cm`): the MPA
//!    exchange moves the QP to RTS and starts its engines under it (so
//!    `inner`, `conn`, `tx`, `rx`, `outbound_reads` and `inbound_reads`
//!    are taken under it).
//! 2. [`Qp::tx`] (mutex): the transmit engine. Held while it sends (TCP
//!    takes the socket's lock under it) and while it takes `inner`,
//!    `outbound_reads`, `inbound_reads` and completes work requests.
//! 3. [`Qp::rx`] (irqsave spinlock): the receive engine, taken in the
//!    socket's `data_ready` upcall (softirq, socket lock held). Under it
//!    the receive path takes `outbound_reads` (Read Responses),
//!    `inbound_reads` (Read Requests), the SRQ and completes work requests.
//! 4. [`Qp::inner`] (irqsave spinlock): the state, the queue indices, ORD,
//!    IRD, access and the active work request. `rx` and `inner` are never
//!    held together.
//! 5. [`Qp::outbound_reads`] (irqsave spinlock): under `inner` when an RDMA
//!    Read moves into the outbound Read queue together with its send
//!    queue slot.
//! 6. [`Qp::inbound_reads`] (irqsave spinlock).
//! 7. Leaves, under which nothing is taken: [`Qp::conn`] (irqsave
//!    spinlock), the SRQ's `st` and a CQ's `pos` (irqsave spinlocks: a
//!    completion is pushed under `tx` or `rx`, never under `inner`,
//!    `outbound_reads` or `inbound_reads`), a fast-registration MR's page
//!    list, and the kernel interface's handle locks (events, CQ notifications).
//!
//! `mappings` (mutex) is taken alone, when the QP is destroyed.
//! Each lock has a name of its own (`rsiw::Qp::inner`, ...), so that
//! lockdep checks this order. The state changes only through `Qp`
//! methods ([`Qp::put_state`] under `inner`, which also keeps the
//! lock-free copy the data path reads). What `inner`, `outbound_reads` and
//! `inbound_reads` guard is changed only through the methods of the guarded
//! types (`inner::QpInner`, [`OutboundReads`], [`InboundReads`]). The values
//! read without a lock (the QP number, that copy of the state, the flags
//! between the receive side, the transmit side and the doorbell) are atomics
//! in `lockfree::LockFree`, whose comment says who sets and clears each and
//! why its memory ordering is enough.

use core::sync::atomic::AtomicBool;
use kernel::{
    prelude::*,
    sync::{Arc, Mutex},
    workqueue::{impl_has_work, Work, WorkItem},
};

use crate::base::{
    stats::{Counter, Stats},
    Quota,
};
use crate::cq::Cq;
use crate::kif::compat::xarray::XArray;
use crate::kif::{
    compat::sync::SpinLockIrq,
    net::NetDev,
    rdma::attr::Mtu,
    rdma::handle::QpHandle,
    rdma::mmap::UserMapping,
    rdma::qp::{QpModify, QpQuery},
    siw::{Cqe, Opcode, Ring, Rqe, Sqe, Status, WqeFlags, MAX_INLINE},
    sock::Socket,
    trace,
};
use crate::mem;
use crate::srq::Srq;
use crate::state::qp::{self as machine, After, Modify, Refused};
use details::LastTerm;
use inner::QpInner;
use lockfree::LockFree;
use reads::{InboundReads, OutboundReads, WrRef};
use rx::RxState;
use tx::TxState;

pub(crate) use crate::state::qp::QpState;

mod atomic;
pub(crate) mod counter;
mod create;
pub(crate) mod details;
pub(crate) mod imm;
mod inner;
mod lockfree;
mod post;
pub(crate) mod reads;
pub(crate) mod rx;
pub(crate) mod tx;

/// What a QP's connection needs of the connection manager's endpoint
/// (`cm::Cep` implements it): the control-path calls of the QP's
/// transmit and receive sides into the CM.
pub(crate) trait Endpoint: Send + Sync {
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
pub(crate) struct Conn {
    /// The TCP socket (its upcalls go to the QP while it is in RTS).
    pub(crate) sock: Socket,
    /// MPA revision of the exchange (1 or 2).
    pub(crate) mpa_rev: u8,
    /// The exchange chose the peer-to-peer model (RFC 6581: an RTR opens
    /// the connection).
    pub(crate) peer_to_peer: bool,
    /// MPA markers in the FPDUs we send (the peer asked for them: RFC 5044
    /// negotiates markers per direction).
    pub(crate) tx_markers: bool,
    /// MPA markers in the FPDUs we receive (we asked for them).
    pub(crate) rx_markers: bool,
    /// MPA CRC in use.
    pub(crate) crc: bool,
    /// Largest ULPDU of one FPDU we send (from the connection's EMSS).
    pub(crate) mulpdu: u32,
    /// `Some(cap)`: the peer takes FPDUs larger than a TCP segment, and
    /// FPDUs we send carry up to `cap` payload octets (the device's
    /// `mpa_max_fpdu`) instead of what `mulpdu` allows.
    pub(crate) large_fpdu: Option<u32>,
    /// Largest ULPDU_Length accepted from the peer (from the MSS we
    /// advertised, or any when we offered to take large FPDUs; a longer
    /// one is an MPA framing error).
    pub(crate) rx_max_ulpdu: u16,
    /// Peer-to-peer initiator: a zero length Write (the RTR, RFC 6581)
    /// goes out before any work request.
    pub(crate) send_rtr: bool,
    /// Peer-to-peer responder: the first FPDU received (the RTR) is still
    /// to be reported to the CM.
    pub(crate) await_rtr: AtomicBool,
    /// What the connection sends before the peer's first FPDU arrived.
    pub(crate) hold: TxHold,
    /// The connection endpoint, which reports the close to the CM.
    pub(crate) cep: Arc<dyn Endpoint>,
    /// The CM id of the connection, held (a reference) while the QP
    /// has the connection.
    pub(crate) _id: crate::kif::rdma::iwcm::CmId,
}

/// A responder's transmit hold: RFC 5044 section 7.1.2 has an MPA
/// responder send no FPDU before it received the initiator's first one.
/// A TERMINATE still goes out.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum TxHold {
    /// Nothing is held (the initiator).
    None,
    /// Nothing goes out before the initiator's first FPDU arrived: in the
    /// peer-to-peer model (that FPDU is the RTR, RFC 6581), and in the
    /// client-server model with `mpa_responder_waits`.
    UntilFirstFpdu,
    /// As [`TxHold::UntilFirstFpdu`], but only until the connection's
    /// first check of the peer's silence ([`Qp::end_responder_grace`]):
    /// the client-server default, so that an application whose server
    /// speaks first does not wait forever for a client that waits too.
    Grace,
}

/// Fixed QP sizes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct QpCaps {
    /// Send queue entries.
    pub(crate) sq_size: u32,
    /// Receive queue entries (0 with an SRQ).
    pub(crate) rq_size: u32,
    /// SGEs per send work request.
    pub(crate) sq_max_sge: u32,
    /// SGEs per receive work request.
    pub(crate) rq_max_sge: u32,
}

/// A queue pair.
#[pin_data]
pub(crate) struct Qp {
    /// The QP number, a copy of the state and the flags between the QP's
    /// contexts, read and written without a lock.
    lockfree: LockFree,
    /// Owning protection domain.
    pd_id: u32,
    /// Send completion queue.
    scq: Arc<Cq>,
    /// Receive completion queue.
    rcq: Option<Arc<Cq>>,
    /// Shared receive queue.
    srq: Option<Arc<Srq>>,
    /// Send queue ring.
    sq: Ring<Sqe>,
    /// Receive queue ring (none with an SRQ).
    rq: Option<Ring<Rqe>>,
    /// Created by a kernel consumer.
    kernel: bool,
    /// Every send work request completes.
    sig_all: bool,
    /// Sizes.
    caps: QpCaps,
    /// The device's memory objects by STag index (data path lookups).
    mem_xa: mem::Table,
    /// The device's counters.
    stats: Arc<Stats>,
    /// The core QP (events, kernel completion token).
    handle: QpHandle,
    /// Mutable state (lock `rsiw::Qp::inner`).
    #[pin]
    inner: SpinLockIrq<QpInner>,
    /// The user mappings of the rings (lock `rsiw::Qp::mappings`).
    #[pin]
    mappings: Mutex<KVec<UserMapping>>,
    /// The connection, while in RTS (and until teardown; lock
    /// `rsiw::Qp::conn`).
    #[pin]
    conn: SpinLockIrq<Option<Arc<Conn>>>,
    /// Receive side state (deframer, message in progress; lock
    /// `rsiw::Qp::rx`).
    #[pin]
    rx: SpinLockIrq<RxState>,
    /// Transmit side state (work request in progress; lock
    /// `rsiw::Qp::tx`).
    #[pin]
    tx: Mutex<TxState>,
    /// Outbound RDMA Reads awaiting their response (ORD; lock
    /// `rsiw::Qp::outbound_reads`).
    #[pin]
    outbound_reads: SpinLockIrq<OutboundReads>,
    /// Inbound RDMA Reads to answer (IRD; lock `rsiw::Qp::inbound_reads`).
    #[pin]
    inbound_reads: SpinLockIrq<InboundReads>,
    /// The last TERMINATE sent or received (for the resource details).
    last_term: LastTerm,
    /// The transmit work item.
    #[pin]
    tx_work: Work<Qp>,
    /// Counts the QP against [`crate::base::limits::MAX_QP`] while it lives.
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

impl Qp {
    /// Applies a `modify_qp` from the verbs interface (not the CM).
    pub(crate) fn modify(self: &Arc<Self>, m: &QpModify) -> Result {
        if m.nonstandard {
            return Err(crate::kif::compat::error::eopnotsupp());
        }
        let mut inner = self.inner.lock();
        if let Some(acc) = m.access {
            inner.set_access(acc);
        }
        let Some(target) = m.state else {
            return Ok(());
        };
        match machine::modify(inner.state(), target) {
            Ok(Modify::Keep) => Ok(()),
            Ok(Modify::Enter { state, after }) => {
                self.put_state(&mut inner, state);
                drop(inner);
                self.follow(after);
                Ok(())
            }
            Ok(Modify::Reset) => {
                drop(inner);
                self.flush_sq();
                self.flush_rq();
                self.put_state(&mut self.inner.lock(), QpState::Idle);
                Ok(())
            }
            Err(Refused::Invalid) => Err(EINVAL),
            Err(Refused::Aborted) => Err(crate::kif::compat::error::econnaborted()),
        }
    }

    /// Does what a transition implies, in the state machine's order (the
    /// QP lock is not held).
    fn follow(&self, after: After) {
        if after.flush_sq {
            self.flush_sq();
        }
        if after.flush_rq {
            self.flush_rq();
        }
        if after.close {
            self.request_close();
        }
    }

    /// Moves the QP to error and flushes both queues (teardown, fatal
    /// errors).
    pub(crate) fn set_error(&self) {
        self.put_state(&mut self.inner.lock(), QpState::Error);
        self.follow(machine::ERROR);
    }

    /// Moves a QP that was never connected to RTS with the negotiated
    /// `ird` and `ord` (see [`Qp::start_rdma`]); `EINVAL` in any other
    /// state.
    fn enter_rts(&self, ird: u32, ord: u32) -> Result {
        let mut inner = self.inner.lock();
        machine::connect(inner.state()).map_err(|_| EINVAL)?;
        inner.set_rd_limits(ird, ord);
        self.put_state(&mut inner, QpState::Rts);
        Ok(())
    }

    /// Moves a connected QP (RTS or Closing) to Terminate: an error
    /// TERMINATEs the stream, nothing else is sent any more. `false` when
    /// the QP is not connected (no TERMINATE is sent).
    pub(crate) fn enter_terminate(&self) -> bool {
        let mut inner = self.inner.lock();
        if !machine::can_terminate(inner.state()) {
            return false;
        }
        self.put_state(&mut inner, QpState::Terminate);
        true
    }

    /// Current state (a snapshot: decisions that must not race with a
    /// state change look at `inner.state()` under the lock).
    pub(crate) fn state(&self) -> QpState {
        self.lockfree.state()
    }

    /// Sets the state, and with it its lock-free copy (the only place
    /// either changes); `inner` is the locked [`Qp::inner`].
    fn put_state(&self, inner: &mut QpInner, s: QpState) {
        let old = inner.state();
        if old != s {
            trace::qp_state(self.id(), old as u8, s as u8);
        }
        inner.set_state(s, &self.lockfree);
    }

    /// Query results.
    pub(crate) fn query(&self, ndev: &NetDev<'_>) -> QpQuery {
        let inner = self.inner.lock();
        let (ird, ord) = inner.rd_limits();
        QpQuery {
            state: inner.state().verbs(),
            max_send_wr: self.caps.sq_size,
            max_recv_wr: self.caps.rq_size,
            max_send_sge: self.caps.sq_max_sge,
            max_recv_sge: self.caps.rq_max_sge,
            max_inline: MAX_INLINE as u32,
            path_mtu: Mtu::from_link_mtu(ndev.mtu()),
            max_rd_atomic: ord.min(255) as u8,
            max_dest_rd_atomic: ird.min(255) as u8,
            access: inner.access(),
        }
    }

    /// Completes a send queue element into the send CQ (when signalled or
    /// failed) and gives the slot back.
    pub(crate) fn complete_sqe(&self, i: u32, sqe: &Sqe, bytes: u32, status: Status) -> Result {
        let r = self.complete_wr(WrRef::of(sqe), bytes, status);
        self.sq.set_flags(i, WqeFlags::empty());
        r
    }

    /// Completes a receive element into the receive CQ.
    pub(crate) fn complete_rqe(
        &self,
        rqe: &Rqe,
        bytes: u32,
        inval: Option<u32>,
        status: Status,
    ) -> Result {
        let Some(cq) = &self.rcq else { return Ok(()) };
        let c = Cqe {
            id: rqe.id,
            flags: if inval.is_some() {
                WqeFlags::REM_INVAL
            } else {
                WqeFlags::empty()
            },
            opcode: Opcode::Receive.into(),
            status,
            bytes,
            imm_or_inval: u64::from(inval.unwrap_or(0)),
            qp: self.cqe_qp(),
        };
        cq.push(&c, rqe.flags)
    }

    /// Completes a send work request whose queue slot was already given
    /// back (RDMA Reads, completed from the outbound Read queue by their Read
    /// Response).
    pub(crate) fn complete_wr(&self, wr: WrRef, bytes: u32, status: Status) -> Result {
        if wr.flags.contains(WqeFlags::SIGNALLED) || self.sig_all || status != Status::Success {
            let c = Cqe {
                id: wr.id,
                flags: atomic::cqe_flags(&wr),
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

    /// The QP a completion names: the core's token for kernel consumers,
    /// the QP number for user space.
    fn cqe_qp(&self) -> u64 {
        if self.kernel {
            self.handle.token()
        } else {
            u64::from(self.id())
        }
    }

    /// The QP number.
    pub(crate) fn id(&self) -> u32 {
        self.lockfree.id()
    }

    /// The protection domain a receive's memory must belong to: the
    /// SRQ's when the QP takes its receives from one (as siw), else the
    /// QP's own.
    pub(crate) fn recv_pd_id(&self) -> u32 {
        self.srq.as_ref().map_or(self.pd_id, |s| s.pd_id())
    }

    /// Flushes every posted send element with a flush error.
    pub(crate) fn flush_sq(&self) {
        // Outstanding RDMA Reads are older than anything still queued.
        tx::flush_outbound_reads(self);
        let mut n = 0;
        loop {
            let i = {
                let mut inner = self.inner.lock();
                let i = inner.sq_get();
                if !self.sq.flags(i).contains(WqeFlags::VALID) {
                    break;
                }
                inner.take_sq_slot(i, None);
                i
            };
            let sqe = self.sq.read(i);
            if self.complete_sqe(i, &sqe, 0, Status::WrFlushErr).is_err() {
                break;
            }
            n += 1;
        }
        if n > 0 {
            trace::flush(self.id(), true, n);
        }
    }

    /// Flushes every posted receive element with a flush error.
    pub(crate) fn flush_rq(&self) {
        // The receive in progress (own RQ or SRQ) goes first.
        rx::flush_active(self);
        let Some(rq) = &self.rq else { return };
        let mut n = 0;
        loop {
            // The consumer index is the receive side's (see
            // `rx::RxState`).
            let Some(rqe) = self.rx.lock().take_rqe(rq) else {
                break;
            };
            if self
                .complete_rqe(&rqe, 0, None, Status::WrFlushErr)
                .is_err()
            {
                break;
            }
            n += 1;
        }
        if n > 0 {
            trace::flush(self.id(), false, n);
        }
    }

    /// Schedules the transmit work (a no-op if already scheduled).
    pub(crate) fn schedule_tx(self: &Arc<Self>) {
        let _ = crate::kif::compat::workqueue::queue().enqueue(self.clone());
    }

    /// Schedules the transmit work on another CPU, next to what this one
    /// does rather than after it: from the receive path (a Read Response,
    /// a TERMINATE or a stalled Read to send), whose softirq runs on the
    /// CPU that took the packet (with veth, the peer's sending CPU), often
    /// under a process that polls its completion queue (a worker woken
    /// there would first have to preempt it), and for a streaming
    /// application's doorbell.
    pub(crate) fn schedule_tx_elsewhere(self: &Arc<Self>) {
        let _ = crate::kif::compat::workqueue::enqueue_on_next_cpu(self.clone());
    }

    /// Asks the connection manager to close the QP's connection (done on
    /// the workqueue, after a TERMINATE or queued data went out).
    pub(crate) fn request_close(&self) {
        if let Some(c) = self.conn() {
            c.cep.clone().request_close();
        }
    }

    /// The core QP (events, kernel completion token).
    pub(crate) fn handle(&self) -> &QpHandle {
        &self.handle
    }

    /// Starts RDMA mode on `conn`, the connection the MPA exchange settled
    /// (IRD `ird`, ORD `ord`): the QP goes to RTS, takes the socket's
    /// upcalls and starts receiving and sending.
    pub(crate) fn start_rdma(self: &Arc<Self>, conn: Arc<Conn>, ird: u32, ord: u32) -> Result {
        self.enter_rts(ird, ord)?;
        self.stats.inc(Counter::ConnectionsEstablished);
        *self.conn.lock() = Some(conn.clone());
        conn.sock.attach(self.clone())?;
        rx::start(self)?;
        self.schedule_tx();
        Ok(())
    }

    /// The connection, if the QP has one.
    pub(crate) fn conn(&self) -> Option<Arc<Conn>> {
        self.conn.lock().clone()
    }

    /// Ends a client-server responder's grace ([`TxHold::Grace`]): what
    /// its application posted goes out now, even though the initiator has
    /// sent nothing yet. The connection manager calls it at the
    /// connection's first check of the peer's silence.
    ///
    /// Why wait at all: upstream siw's initiator, after it read the MPA
    /// Reply, fails the connection (-EPROTO, "peer sent extra data";
    /// rdma_cm reports a connect error) if more octets are already in its
    /// socket; a server that speaks first, as soon as it is ESTABLISHED,
    /// races it (tests/guest/pair_siw_early_fpdu.sh). Why not wait for
    /// ever: that initiator never sends first when its application
    /// waits for the server (librdmacm's `ucmatose`).
    pub(crate) fn end_responder_grace(self: &Arc<Self>) {
        let grace = self.conn().is_some_and(|c| c.hold == TxHold::Grace);
        if grace && self.lockfree.release_tx() {
            self.schedule_tx();
        }
    }

    /// For a connection whose peer has sent nothing yet: if we sent FPDUs
    /// but none since `*sent_before` were counted (then updated), sends a
    /// zero length RDMA Write, data the peer places and completes nothing
    /// for (see `cm::Cep::wake_peer` for why). `None` once the peer sent
    /// something (or the QP left RTS); while it is silent, whether the
    /// Write went out.
    pub(crate) fn wake_silent_peer(self: &Arc<Self>, sent_before: &mut u64) -> Option<bool> {
        if self.state() != QpState::Rts || self.rx.lock().received().fpdus > 0 {
            return None;
        }
        let sent = {
            let mut tx = self.tx.lock();
            let fpdus = tx.sent().fpdus;
            let idle = fpdus > 0 && fpdus == core::mem::replace(sent_before, fpdus);
            if idle {
                tx.request_rtr();
            }
            idle
        };
        if sent {
            self.stats.inc(Counter::PeerWakeups);
            self.schedule_tx();
        }
        Some(sent)
    }

    /// Drops the connection: the socket's upcalls go back to TCP and the
    /// socket is closed once the last user lets go.
    pub(crate) fn drop_conn(self: &Arc<Self>) {
        // A TERMINATE still queued goes out before the close (the transmit
        // work closes the connection itself once it is sent).
        tx::run(self);
        let c = self.conn.lock().take();
        let tc = self.tx.lock().take_conn();
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
    pub(crate) fn destroy(self: Arc<Self>, qps: &XArray<Qp>) {
        self.set_error();
        self.drop_conn();
        drop(core::mem::replace(&mut *self.mappings.lock(), KVec::new()));
        qps.erase(self.id());
    }
}
