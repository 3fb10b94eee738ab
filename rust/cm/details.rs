// SPDX-License-Identifier: GPL-2.0

//! What a CM id rsiw holds shows an operator: the driver details of its
//! entry in `rdma resource show cm_id -dd`. A listening id shows its role
//! and backlog; a connection's id its role, the phase of its endpoint, its
//! QP and, in RDMA mode, what the MPA exchange settled and how often the
//! QP woke a silent peer. The endpoint or listener keeps its
//! [`CmDetails`] up to date; the dump finds them through the device's
//! registry (`ids`).

use kernel::{
    c_str, new_mutex,
    prelude::*,
    str::CStr,
    sync::{Arc, Mutex},
};

use crate::kif::rdma::restrack::ResDetails;

use super::establish::Terms;

/// What a CM id is to rsiw.
#[derive(Clone, Copy)]
pub(super) enum Role {
    /// A listening id (`iw_create_listen`) with the backlog of its socket.
    Listen { backlog: u32 },
    /// Our side of a connection we asked for (`iw_connect`) on QP `qpn`.
    Initiator { qpn: u32 },
    /// Our side of a connection we accepted (`iw_accept`) on QP `qpn`.
    Responder { qpn: u32 },
}

/// What an MPA exchange settled, as shown.
#[derive(Clone, Copy)]
struct Negotiated {
    rev: u8,
    crc: bool,
    markers_tx: bool,
    markers_rx: bool,
    ird: u32,
    ord: u32,
    peer_to_peer: bool,
}

/// What changes as a connection moves along (behind [`CmDetails::now`]).
struct Progress {
    /// The endpoint's phase (`Phase::name`).
    phase: Option<&'static CStr>,
    /// What the MPA exchange settled, once in RDMA mode.
    terms: Option<Negotiated>,
    /// The zero length Writes the QP sent to wake a silent peer.
    peer_wakeups: u32,
}

/// The details of one CM id rsiw holds.
#[pin_data]
pub(crate) struct CmDetails {
    role: Role,
    /// Updated under the endpoint's phase lock; read by the dump alone.
    #[pin]
    now: Mutex<Progress>,
}

impl CmDetails {
    /// The details of an id in `role`, its phase not known yet.
    pub(super) fn new(role: Role) -> Result<Arc<Self>> {
        let now = Progress {
            phase: None,
            terms: None,
            peer_wakeups: 0,
        };
        Arc::pin_init(
            pin_init!(Self {
                role,
                now <- new_mutex!(now, "rsiw::CmDetails::now"),
            }),
            GFP_KERNEL,
        )
    }

    /// The endpoint is in the phase named `name`.
    pub(super) fn set_phase(&self, name: &'static CStr) {
        self.now.lock().phase = Some(name);
    }

    /// The connection is in RDMA mode on the terms `t`.
    pub(super) fn set_terms(&self, t: &Terms) {
        self.now.lock().terms = Some(Negotiated {
            rev: t.rev,
            crc: t.crc,
            markers_tx: t.markers.tx,
            markers_rx: t.markers.rx,
            ird: t.ird,
            ord: t.ord,
            peer_to_peer: t.peer_to_peer(),
        });
    }

    /// The QP sent a zero length Write to wake its silent peer.
    pub(super) fn peer_woken(&self) {
        let mut now = self.now.lock();
        now.peer_wakeups = now.peer_wakeups.saturating_add(1);
    }

    /// Adds the details to the id's resource entry `d`.
    pub(super) fn fill(&self, d: &mut ResDetails<'_>) -> Result {
        let (phase, terms, wakeups) = {
            let now = self.now.lock();
            (now.phase, now.terms, now.peer_wakeups)
        };
        let (role, qpn) = match self.role {
            Role::Listen { backlog } => {
                d.str(c_str!("role"), c_str!("listen"))?;
                return d.u32(c_str!("backlog"), backlog);
            }
            Role::Initiator { qpn } => (c_str!("initiator"), qpn),
            Role::Responder { qpn } => (c_str!("responder"), qpn),
        };
        d.str(c_str!("role"), role)?;
        if let Some(p) = phase {
            d.str(c_str!("phase"), p)?;
        }
        d.u32(c_str!("qpn"), qpn)?;
        if let Some(t) = terms {
            d.u32(c_str!("mpa_rev"), t.rev.into())?;
            d.u32(c_str!("crc"), t.crc.into())?;
            d.u32(c_str!("markers_tx"), t.markers_tx.into())?;
            d.u32(c_str!("markers_rx"), t.markers_rx.into())?;
            d.u32(c_str!("ird"), t.ird)?;
            d.u32(c_str!("ord"), t.ord)?;
            d.u32(c_str!("peer_to_peer"), t.peer_to_peer.into())?;
            d.u32(c_str!("peer_wakeups"), wakeups)?;
        }
        Ok(())
    }
}
