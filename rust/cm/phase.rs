// SPDX-License-Identifier: GPL-2.0

//! Where a connection endpoint is in its life: [`Phase`], the state behind
//! the endpoint's lock. Each phase holds what exists only in it: the
//! socket, frame parser and timeout while the peer's MPA frame is read,
//! the peer's Request while the CM decides, the QP and CM id once the
//! connection is up. This file has the changes that are not one side's
//! exchange: failure, the responder's peer giving up, the peer-to-peer
//! RTR, teardown. The initiator's and the responder's steps are in
//! `connect` and `accept`. A phase that holds the CM id shows its name
//! in the id's details ([`Phase::show`]).

use core::mem;
use kernel::{c_str, prelude::*, str::CStr, sync::Arc};

use crate::base::settings::MpaPolicy;
use crate::kif::compat::delayed_work::Timeout;
use crate::kif::rdma::iwcm::{CmEvent, CmEventKind, CmId};
use crate::kif::sock::{SockAddr, Socket, TcpState};
use crate::kif::trace;
use crate::qp::Qp;
use crate::wire::connect::RrParser;

use super::connect::{report_reply, Offer};
use super::establish::Terms;
use super::ids::HeldId;
use super::listener::Listener;
use super::mpa::Peer;
use super::pending::Entered;
use super::Cep;

/// Where an endpoint is in its life.
pub(super) enum Phase {
    /// Responder: reading the MPA Request.
    AwaitRequest(Incoming),
    /// Responder: the Request went to the CM; waiting for accept or reject.
    AwaitAccept(Requested),
    /// Initiator: our Request is out; reading the MPA Reply.
    AwaitReply(Outgoing),
    /// The QP is in RTS on this connection.
    Rdma(Connected),
    /// Gone (refused, failed or closed).
    Closed,
}

/// The reading of the peer's MPA Request or Reply.
pub(super) struct Exchange {
    /// Limits the wait for the frame (`None` before it is armed, once the
    /// frame is complete, or if arming it failed). Dropped before the
    /// socket.
    pub(super) timeout: Option<Timeout<Cep>>,
    /// The TCP socket (its upcalls go to the endpoint).
    pub(super) sock: Socket,
    /// The frame read so far.
    pub(super) parser: RrParser,
}

/// Responder: a connection the listener accepted, until its Request is
/// complete.
pub(super) struct Incoming {
    /// Reading the Request.
    pub(super) mpa: Exchange,
    /// The listener whose CM id gets the Request.
    pub(super) listener: Arc<Listener>,
    /// The endpoint's place among the device's pending endpoints.
    pub(super) entry: Entered,
}

/// Responder: a complete Request the CM has not answered yet.
pub(super) struct Requested {
    /// The TCP socket (its upcalls go to the endpoint).
    pub(super) sock: Socket,
    /// What the Request said.
    pub(super) peer: Peer,
    /// The initiator's ORD (what we must serve), capped at the device's
    /// maximum IRD.
    pub(super) ird: u32,
    /// The initiator's IRD (what bounds our ORD), capped at the device's
    /// maximum ORD.
    pub(super) ord: u32,
    /// The device's settings when the Request arrived.
    pub(super) policy: MpaPolicy,
    /// The endpoint's place among the device's pending endpoints (the
    /// CM's answer finds it there by its key).
    pub(super) entry: Entered,
    /// Limits the wait for the CM's answer (`cm_accept_timeout`; `None`
    /// if arming it failed).
    pub(super) timeout: Option<Timeout<Cep>>,
}

/// Initiator: our Request is out, until the Reply is complete.
pub(super) struct Outgoing {
    /// Reading the Reply.
    pub(super) mpa: Exchange,
    /// The CM id of the connection (from `iw_connect`).
    pub(super) id: HeldId,
    /// The QP to connect.
    pub(super) qp: Arc<Qp>,
    /// What our Request offered.
    pub(super) offer: Offer,
}

/// The connection is up: the QP is in RTS on it (the socket is the QP's).
pub(super) struct Connected {
    /// The CM id of the connection.
    pub(super) id: HeldId,
    /// The QP on the connection.
    pub(super) qp: Arc<Qp>,
    /// Peer-to-peer responder: ESTABLISHED, reported once the initiator's
    /// RTR arrived.
    pub(super) pending: Option<Established>,
    /// While the peer has sent nothing: the next check of its silence
    /// (see `Cep::wake_peer`), how many checks were armed, and how many
    /// FPDUs the QP had sent at the last check.
    pub(super) wake: Option<Timeout<Cep>>,
    pub(super) wakes: usize,
    pub(super) sent_at_check: u64,
}

/// ESTABLISHED as a responder reports it: at accept, or in the
/// peer-to-peer model once the initiator's RTR arrived.
pub(super) struct Established {
    /// Local and remote address.
    pub(super) addrs: (SockAddr, SockAddr),
    /// The connection's IRD.
    pub(super) ird: u32,
    /// The connection's ORD.
    pub(super) ord: u32,
}

impl Established {
    /// Tells the CM, through `id`, that the connection is up.
    pub(super) fn report(&self, id: &CmId) {
        let ev = CmEvent {
            kind: CmEventKind::Established,
            status: 0,
            addrs: Some(self.addrs),
            pdata: &[],
            ird: self.ird.min(255) as u8,
            ord: self.ord.min(255) as u8,
        };
        let _ = id.event(&ev);
    }
}

impl Connected {
    /// The connection of `qp` with CM id `id` on the terms `t` (`pending`:
    /// see [`Connected::pending`]), its first silence check not yet armed.
    pub(super) fn new(id: HeldId, qp: Arc<Qp>, pending: Option<Established>, t: &Terms) -> Self {
        id.details().set_terms(t);
        Self {
            id,
            qp,
            pending,
            wake: None,
            wakes: 0,
            sent_at_check: 0,
        }
    }

    /// The QP lost its connection, or the peer closed or reset its socket.
    pub(super) fn peer_closed(&self) -> bool {
        match self.qp.conn() {
            Some(c) => matches!(c.sock.state(), TcpState::Closed | TcpState::CloseWait),
            None => true,
        }
    }
}

impl Phase {
    /// The phase's name in the details of its CM id.
    pub(super) fn name(&self) -> &'static CStr {
        match self {
            Phase::AwaitRequest(_) => c_str!("await_request"),
            Phase::AwaitAccept(_) => c_str!("await_accept"),
            Phase::AwaitReply(_) => c_str!("await_reply"),
            Phase::Rdma(_) => c_str!("rdma"),
            Phase::Closed => c_str!("closed"),
        }
    }

    /// Shows the phase in the details of the CM id it holds, if it holds
    /// one (a responder gets its id only at `iw_accept`).
    pub(super) fn show(&self) {
        let id = match self {
            Phase::AwaitReply(o) => &o.id,
            Phase::Rdma(c) => &c.id,
            _ => return,
        };
        id.details().set_phase(self.name());
    }

    /// The reading of the peer's MPA frame, in the phases that do it.
    pub(super) fn exchange(&mut self) -> Option<&mut Exchange> {
        match self {
            Phase::AwaitRequest(i) => Some(&mut i.mpa),
            Phase::AwaitReply(o) => Some(&mut o.mpa),
            _ => None,
        }
    }

    /// Leaves [`Phase::AwaitRequest`] for `Closed`, returning what it
    /// held; any other phase stays.
    pub(super) fn take_incoming(&mut self) -> Option<Incoming> {
        match mem::replace(self, Phase::Closed) {
            Phase::AwaitRequest(i) => Some(i),
            other => {
                *self = other;
                None
            }
        }
    }

    /// Leaves [`Phase::AwaitAccept`] for `Closed`, returning what it held;
    /// any other phase stays.
    pub(super) fn take_requested(&mut self) -> Option<Requested> {
        match mem::replace(self, Phase::Closed) {
            Phase::AwaitAccept(r) => Some(r),
            other => {
                *self = other;
                None
            }
        }
    }

    /// Leaves [`Phase::AwaitReply`] for `Closed`, returning what it held;
    /// any other phase stays.
    pub(super) fn take_outgoing(&mut self) -> Option<Outgoing> {
        match mem::replace(self, Phase::Closed) {
            Phase::AwaitReply(o) => Some(o),
            other => {
                *self = other;
                None
            }
        }
    }

    /// The MPA exchange failed with `e` (or timed out): the timeout stops,
    /// the socket goes, and an initiator's CM id gets CONNECT_REPLY with
    /// `e`. Only the phases that read the peer's frame fail this way.
    pub(super) fn fail(&mut self, e: Error) {
        if self.exchange().is_none() {
            return;
        }
        trace::mpa_failed(matches!(self, Phase::AwaitReply(_)), e);
        if let Phase::AwaitReply(o) = mem::replace(self, Phase::Closed) {
            let Outgoing { mpa, id, .. } = o;
            drop(mpa);
            report_reply(&id, e.to_errno(), None, &[], (0, 0));
        }
        // (a responder's socket and listener went with its phase)
    }

    /// Responder waiting for accept or reject: if the peer gave up, the
    /// socket goes; if the CM's answer took too long (`timed_out`), the
    /// request is refused (a later accept or reject finds neither).
    pub(super) fn drop_if_peer_gone(&mut self, timed_out: bool) {
        if let Phase::AwaitAccept(r) = self {
            if matches!(r.sock.state(), TcpState::Closed | TcpState::CloseWait) {
                // Dropping the socket detaches the endpoint and closes it.
                *self = Phase::Closed;
            } else if timed_out {
                pr_debug!("connect request not answered in time: rejected\n");
                self.reject(&[]);
            }
        }
    }

    /// The endpoint's listener or device goes: a responder that waits for
    /// the peer's Request closes, one whose Request waits for the CM's
    /// answer is refused. Other phases stay.
    pub(super) fn abandon(&mut self) {
        match self {
            // Dropping the socket detaches the endpoint and closes it.
            Phase::AwaitRequest(_) => *self = Phase::Closed,
            Phase::AwaitAccept(_) => self.reject(&[]),
            _ => {}
        }
    }

    /// Peer-to-peer responder: the initiator's RTR arrived: reports
    /// ESTABLISHED (once).
    pub(super) fn report_rtr(&mut self) {
        if let Phase::Rdma(c) = self {
            if let Some(e) = c.pending.take() {
                e.report(&c.id);
            }
        }
    }

    /// The connection is going down: leaves [`Phase::Rdma`] for `Closed`,
    /// returning the QP to tear down and the CM id to report to.
    pub(super) fn close(&mut self) -> Option<Connected> {
        let mut c = match mem::replace(self, Phase::Closed) {
            Phase::Rdma(c) => c,
            other => {
                *self = other;
                return None;
            }
        };
        // Shown until the caller lets go of the id (and so of its entry).
        c.id.details().set_phase(self.name());
        // A peer-to-peer responder whose connection died before the
        // initiator's RTR: the CM id still waits in CONN_RECV, where the
        // CM takes no DISCONNECT or CLOSE (it BUG()s on a CLOSE).
        // ESTABLISHED goes first, so the consumer sees the connection come
        // up and go down.
        if let Some(e) = c.pending.take() {
            e.report(&c.id);
        }
        Some(c)
    }
}
