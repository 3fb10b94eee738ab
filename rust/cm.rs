// SPDX-License-Identifier: GPL-2.0

//! The connection manager: MPA connection setup over kernel TCP sockets
//! (RFC 5044 section 7, RFC 6581) for the iWARP CM, as initiator and
//! responder, and connection teardown.
//!
//! A [`Cep`] (connection endpoint) owns the socket until the MPA exchange
//! is done; then the socket moves into the QP's [`Conn`] and the endpoint
//! stays with it to report the close (the QP knows it as its
//! [`Endpoint`]). All CM work runs on rsiw's workqueue (process context);
//! socket upcalls only schedule it.
//!
//! This file owns the endpoint: its work item, socket upcalls, MPA
//! timeout and teardown. Its submodules:
//!
//! - `phase`: where an endpoint is in its life, each phase with what
//!   exists only in it (the state behind the endpoint's lock);
//! - `mpa`: reading the peer's MPA Request or Reply, sending ours and the
//!   TERMINATE of a failed setup;
//! - `connect`: the initiator (`iw_connect`, the Reply);
//! - `accept`: the responder (the Request, `iw_accept`, `iw_reject`);
//! - `establish`: what an exchange settles, and the move of the socket
//!   into the QP, which enters RTS;
//! - `listener`: listening sockets (`iw_create_listen`);
//! - `ids`: the CM ids rsiw holds on a device ([`CmIds`]), each entered
//!   with its details while held;
//! - `pending`: a device's responder endpoints before their connection
//!   has a CM id of its own ([`Pending`]), which the CM's accept or reject
//!   finds by key and which close with their listener or device;
//! - `details`: what such an id shows in `rdma resource show cm_id -dd`.
//!
//! # Locks
//!
//! In the order they nest (a lock is taken only while holding locks above
//! it in this list, never one below it):
//!
//! 1. `Cep::phase` (mutex): where the endpoint is in its life. The MPA
//!    exchange moves the QP to RTS under it (the QP's locks come next:
//!    see [`crate::qp`]).
//! 2. Leaves, under which nothing is taken, never held together:
//!    `CmDetails::now` (mutex), what a CM id shows, updated under the
//!    phase and read by the resource dump alone; [`CmIds`]' `slots`
//!    (irqsave spinlock), the device's registry, taken as an id is held or
//!    let go (under the phase, or alone: a listener may go anywhere) and
//!    by the dump, which copies an entry out and reads its details after;
//!    and [`Pending`]'s `entries` (mutex), taken as an endpoint is entered
//!    or leaves (under its phase, or alone) and alone to find or close
//!    endpoints (an endpoint is taken out before its phase is locked).
//!
//! [`Conn`]: crate::qp::Conn

use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, ArcBorrow, Mutex},
    workqueue::{impl_has_work, new_work, Work, WorkItem},
};

use crate::kif::compat::delayed_work::{Expire, Timeout};
use crate::kif::rdma::iwcm::{CmEvent, CmEventKind};
use crate::kif::sock::{SockEvents, SockRx, TcpState};
use crate::qp::Endpoint;

/// When the peer's silence is checked after a connection came up
/// (milliseconds, each after the one before; see `Cep::wake_peer`). The
/// first check only notes how much was sent: a wake-up needs a check
/// before it.
const WAKE_PEER_MS: [u32; 4] = [50, 100, 400, 1600];

mod accept;
mod connect;
mod details;
mod establish;
mod ids;
mod listener;
mod mpa;
mod pending;
mod phase;

pub(crate) use accept::{accept, reject};
pub(crate) use connect::connect;
pub(crate) use ids::CmIds;
pub(crate) use listener::Listener;
pub(crate) use listener::{create_listen, destroy_listen};
pub(crate) use pending::Pending;

use phase::{Connected, Phase};

/// How long a connection may wait for the peer's MPA Request or Reply.
const MPA_TIMEOUT_MS: u32 = 10_000;

/// A connection endpoint: one TCP connection, from its MPA exchange to
/// the report of its close.
#[pin_data]
pub(crate) struct Cep {
    /// Where the endpoint is in its life, with what that phase owns.
    #[pin]
    phase: Mutex<Phase>,
    /// The connection went down: report the close once.
    closing: AtomicBool,
    /// The QP left RTS: close the connection from the work item.
    close_req: AtomicBool,
    /// The peer's RTR arrived (peer-to-peer responder).
    rtr_seen: AtomicBool,
    /// The timeout fired: during the MPA exchange, the work item fails
    /// it; while the CM's answer to a Request is awaited, it refuses the
    /// request; once connected, it checks the peer's silence (`wake_peer`).
    timed_out: AtomicBool,
    #[pin]
    work: Work<Cep>,
}

impl_has_work! {
    impl HasWork<Self> for Cep { self.work }
}

impl WorkItem for Cep {
    type Pointer = Arc<Cep>;

    fn run(this: Arc<Cep>) {
        this.process();
    }
}

impl SockEvents for Cep {
    fn data_ready(this: ArcBorrow<'_, Self>, _rx: &mut SockRx<'_>) {
        Arc::<Cep>::from(this).kick();
    }

    fn state_change(this: ArcBorrow<'_, Self>, _s: TcpState) {
        Arc::<Cep>::from(this).kick();
    }
}

impl Cep {
    /// A new endpoint in `phase`, one that reads the peer's MPA frame
    /// (its socket is attached once the endpoint exists).
    fn new(phase: Phase) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                phase <- new_mutex!(phase, "rsiw::Cep::phase"),
                closing: AtomicBool::new(false),
                close_req: AtomicBool::new(false),
                rtr_seen: AtomicBool::new(false),
                timed_out: AtomicBool::new(false),
                work <- new_work!("rsiw::cep"),
            }),
            GFP_KERNEL,
        )
    }

    /// Starts the wait for the peer's MPA frame, if it is still awaited.
    fn arm_timeout(self: &Arc<Self>) {
        let Ok(t) = Timeout::arm(self, MPA_TIMEOUT_MS) else {
            return;
        };
        if let Some(mpa) = self.phase.lock().exchange() {
            mpa.timeout = Some(t);
        }
        // Otherwise the frame came before the timeout was armed: `t` is
        // cancelled as it drops here, after the lock.
    }

    /// Arms the first check of the peer's silence of the connection that
    /// `phase` (just connected) holds.
    fn arm_wake(self: &Arc<Self>, phase: &mut Phase) {
        if let Phase::Rdma(c) = phase {
            c.wake = Timeout::arm(self, WAKE_PEER_MS[0]).ok();
            c.wakes = 1;
            if c.wake.is_none() {
                // No check will come to end a responder's grace.
                c.qp.end_responder_grace();
            }
        }
    }

    /// The peer of connection `c` has sent nothing since it came up: if we
    /// sent FPDUs, none since the last check, the QP sends a zero length
    /// RDMA Write (its STag is not checked, it places and completes
    /// nothing: RFC 5041 section 7.2, the RTR of RFC 6581), and the check
    /// is armed again ([`WAKE_PEER_MS`]) while the peer stays silent.
    ///
    /// Upstream siw's responder sends its MPA Reply before its QP takes
    /// the socket's receive upcall, and its CM's upcall ignores data in
    /// between: an initiator's first FPDU that arrives then waits in
    /// the socket until more data comes. This is that data. A sender
    /// that is still sending (a one-way stream, whose peer never answers)
    /// needs none: its next FPDU is that data. The Write is queued on the
    /// transmit work, which would take the place of the application's
    /// doorbell as the streaming sender (see `Qp::doorbell`).
    fn wake_peer(self: &Arc<Self>, c: &mut Connected) {
        c.wake = None;
        if c.wakes == 1 {
            c.qp.end_responder_grace();
        }
        let Some(woken) = c.qp.wake_silent_peer(&mut c.sent_at_check) else {
            return;
        };
        if woken {
            c.id.details().peer_woken();
        }
        if let Some(&ms) = WAKE_PEER_MS.get(c.wakes) {
            c.wake = Timeout::arm(self, ms).ok();
            c.wakes += 1;
        }
    }

    /// The endpoint's listener or device goes (see [`Phase::abandon`]).
    fn abandon(&self) {
        self.phase.lock().abandon();
    }

    /// Schedules the endpoint's work.
    fn kick(self: &Arc<Self>) {
        let _ = crate::kif::compat::workqueue::queue().enqueue(self.clone());
    }

    /// Moves the connection along; runs on the workqueue.
    fn process(self: &Arc<Self>) {
        let mut phase = self.phase.lock();
        match &*phase {
            Phase::AwaitRequest(_) | Phase::AwaitReply(_) => {
                if self.timed_out.load(Ordering::Acquire) {
                    pr_debug!("MPA exchange timed out\n");
                    phase.fail(crate::kif::compat::error::etimedout());
                } else {
                    phase.read_mpa(self);
                }
            }
            Phase::AwaitAccept(_) => {
                phase.drop_if_peer_gone(self.timed_out.load(Ordering::Acquire));
            }
            Phase::Rdma(_) if self.close_req.load(Ordering::Acquire) => {
                drop(phase);
                self.close(false);
            }
            Phase::Rdma(_) if self.timed_out.swap(false, Ordering::AcqRel) => {
                if let Phase::Rdma(c) = &mut *phase {
                    self.wake_peer(c);
                }
                drop(phase);
                // Look at the rest too.
                self.kick();
            }
            Phase::Rdma(c) if c.pending.is_some() && self.rtr_seen.load(Ordering::Acquire) => {
                // Reported under the endpoint lock: a concurrent `close`
                // must not report CLOSE before it (see `accept`).
                phase.report_rtr();
                drop(phase);
                // Look at the socket state too.
                self.kick();
            }
            Phase::Rdma(c) => {
                if c.peer_closed() {
                    drop(phase);
                    self.close(true);
                }
            }
            Phase::Closed => {}
        }
    }

    /// The RDMA connection is going down (`remote`: the peer closed or
    /// reset it). Reports DISCONNECT (remote only) and CLOSE once.
    fn close(self: &Arc<Self>, remote: bool) {
        if self.closing.swap(true, Ordering::AcqRel) {
            return;
        }
        let connected = self.phase.lock().close();
        let Some(Connected { id, qp, .. }) = connected else {
            return;
        };
        // A closed connection is not a QP error event (a TERMINATE
        // received is reported by the receive path).
        qp.set_error();
        qp.drop_conn();
        let base = CmEvent {
            kind: CmEventKind::Disconnect,
            status: 0,
            addrs: None,
            pdata: &[],
            ird: 0,
            ord: 0,
        };
        if remote {
            let _ = id.event(&base);
        }
        let _ = id.event(&CmEvent {
            kind: CmEventKind::Close,
            ..base
        });
    }
}

impl Endpoint for Cep {
    /// The receive path got the first FPDU of a peer-to-peer connection
    /// (the initiator's RTR): report ESTABLISHED from the work item (the
    /// caller may hold locks `accept` takes).
    fn rtr_received(self: Arc<Self>) {
        self.rtr_seen.store(true, Ordering::Release);
        self.kick();
    }

    /// The local side wants the connection closed (QP left RTS).
    fn request_close(self: Arc<Self>) {
        self.close_req.store(true, Ordering::Release);
        self.kick();
    }

    /// See [`Cep::close`].
    fn close(self: Arc<Self>, remote: bool) {
        Cep::close(&self, remote);
    }
}

impl Expire for Cep {
    /// Leaves the failing of the exchange to the work item: the timeout
    /// is dropped (and its run waited for) under the endpoint's lock, so
    /// its run must not take that lock.
    fn expired(this: Arc<Self>) {
        this.timed_out.store(true, Ordering::Release);
        this.kick();
    }
}
