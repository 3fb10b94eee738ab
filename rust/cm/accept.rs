// SPDX-License-Identifier: GPL-2.0

//! The responder: the initiator's MPA Request goes to the CM as
//! CONNECT_REQUEST; `iw_accept` answers it with our Reply (RFC 5044
//! section 7.1, RFC 6581 IRD/ORD and RTR) and moves the QP to RTS;
//! `iw_reject` answers it with a reject Reply.

use core::sync::atomic::Ordering;
use kernel::{prelude::*, sync::Arc};

use crate::base::limits;
use crate::kif::compat::delayed_work::Timeout;
use crate::kif::params;
use crate::kif::rdma::iwcm::{CmEvent, CmEventKind, CmId, ConnParam, RequestKey};
use crate::qp::Qp;
use crate::wire::connect::{
    max_user_pdata, FrameKind, IrdOrd, MpaRr, RtrType, RES_LARGE_FPDU, REVISION_1, REVISION_2,
};

use super::details::Role;
use super::establish::{establish, PerDir, Rtr, Terms};
use super::ids::{CmIds, HeldId};
use super::mpa::{send_rr, Peer};
use super::pending::Pending;
use super::phase::{Connected, Established, Incoming, Phase, Requested};
use super::Cep;

/// Our MPA Reply to a Request, and what the connection then uses.
struct Reply {
    /// The Reply's header.
    hdr: MpaRr,
    /// Its IRD/ORD data (if the Request had them).
    ird_ord: Option<IrdOrd>,
    /// What the connection uses.
    terms: Terms,
}

/// Peer-to-peer (RFC 6581): the IRD/ORD data of a Request `peer` that
/// offers the model, and the RTR we keep of those it offers (a zero
/// length Write by preference, as siw, then a Read; a Send when it offers
/// neither; rsiw takes every RTR type).
fn rtr_offered(peer: &Peer) -> (Option<IrdOrd>, Option<RtrType>) {
    let offered = peer.ird_ord.filter(|io| peer.enhanced && io.peer_to_peer);
    let rtr_type = offered.and_then(|o| o.choose_rtr(true, true).ok());
    (offered, rtr_type)
}

impl Requested {
    /// The IRD and ORD of the connection with the resources of `p`.
    /// RFC 6581 (as siw's accept): our ORD at most the initiator's IRD,
    /// our IRD raised to its ORD where resources allow (an irdma initiator
    /// refuses a Reply whose IRD is below its ORD).
    fn resources(&self, p: &ConnParam) -> (u32, u32) {
        let (mut ird, mut ord) = (p.ird, p.ord);
        if self.peer.enhanced && self.peer.ird_ord.is_some() {
            ord = ord.min(self.ord);
            ird = ird.max(self.ird);
        }
        (ird, ord)
    }

    /// The Reply to this Request with the resources of `p` and what the
    /// device's settings ask for. `EINVAL` for private data beyond what
    /// the Reply carries, or resources beyond the device's.
    fn reply(&self, p: &ConnParam) -> Result<Reply> {
        let peer = &self.peer;
        // The Reply has IRD/ORD data only if the Request had them.
        if p.pdata.len() > max_user_pdata(peer.enhanced)
            || p.ord > limits::MAX_ORD
            || p.ird > limits::MAX_IRD
        {
            return Err(EINVAL);
        }
        let crc = peer.crc || self.policy.crc_required;
        let markers_wanted = self.policy.markers;
        // Large FPDUs (both ways) only if the initiator offered them: the
        // Reply then carries the bit too, as siw's does.
        let large_ok = self.policy.large_fpdu && peer.large_fpdu;
        let rev = if peer.revision == REVISION_1 {
            REVISION_1
        } else {
            REVISION_2
        };
        let (offered, rtr_type) = rtr_offered(peer);
        let (mut ird, ord) = self.resources(p);
        // A Read RTR is itself an RDMA Read Request we answer: our IRD
        // (in the Reply, and the inbound Read queue sized for it) must take
        // it, whatever the consumer asked for (cxgb4 and irdma raise it too),
        // or the RTR draws the TERMINATE for an exceeded IRD.
        if let Some(rtr) = rtr_type {
            ird = ird.max(rtr.read_credits());
        }
        let ird_ord = peer.enhanced.then(|| IrdOrd {
            ird: ird.min(0x3fff) as u16,
            ord: ord.min(0x3fff) as u16,
            peer_to_peer: offered.is_some(),
            zero_length_rtr: offered.is_some_and(|o| o.zero_length_rtr),
            write_rtr: rtr_type == Some(RtrType::Write),
            read_rtr: rtr_type == Some(RtrType::Read),
        });
        let mut hdr = MpaRr::new(FrameKind::Reply, rev, 0);
        hdr.crc = crc;
        hdr.markers = markers_wanted;
        if large_ok {
            hdr.res |= RES_LARGE_FPDU;
        }
        // Peer-to-peer: ESTABLISHED waits for the initiator's RTR.
        let rtr = if offered.is_some() {
            Rtr::Await
        } else if self.policy.responder_waits {
            Rtr::Hold
        } else {
            Rtr::Grace
        };
        let terms = Terms {
            initiator: false,
            rev,
            crc,
            // Markers per direction (RFC 5044 7.1.1): the initiator's M
            // asks for them on what we send, ours (in the Reply) on what
            // we receive.
            markers: PerDir {
                tx: peer.markers,
                rx: markers_wanted,
            },
            large: PerDir {
                tx: large_ok,
                rx: large_ok,
            },
            max_fpdu: self.policy.max_fpdu,
            ird,
            ord,
            rtr,
        };
        Ok(Reply {
            hdr,
            ird_ord,
            terms,
        })
    }
}

impl Phase {
    /// Responder: the peer's MPA Request arrived: goes to the CM as
    /// CONNECT_REQUEST on the listener's id, named by this endpoint's key,
    /// and the endpoint waits for the CM's accept or reject, for at most
    /// `cm_accept_timeout` seconds.
    pub(super) fn on_request(&mut self, cep: &Arc<Cep>, peer: Peer) -> Result {
        let Some(Incoming {
            mpa,
            listener,
            entry,
        }) = self.take_incoming()
        else {
            return Err(EINVAL);
        };
        // (A dual-stack listener's IPv4 connection as IPv4, see
        // `SockAddr::unmapped`.)
        let addrs = (
            mpa.sock.local_addr()?.unmapped(),
            mpa.sock.peer_addr()?.unmapped(),
        );
        // The initiator's ORD is what we must serve (our IRD) and its IRD
        // bounds our ORD. A revision 1 peer says nothing: offer the maxima
        // rather than 0 (upstream siw offers 0, which breaks RDMA Read).
        let (ird, ord) = match peer.ird_ord {
            Some(io) => (
                u32::from(io.ord).min(limits::MAX_IRD),
                u32::from(io.ird).min(limits::MAX_ORD),
            ),
            None => (limits::MAX_IRD, limits::MAX_ORD),
        };
        // The event carries the peer's view (as siw does): its IRD, which
        // rdma_cm makes our initiator depth (ORD), and its ORD, which becomes
        // our responder resources (IRD).
        let ev = CmEvent {
            kind: CmEventKind::ConnectRequest,
            status: 0,
            addrs: Some(addrs),
            pdata: &peer.pdata,
            ird: ord.min(255) as u8,
            ord: ird.min(255) as u8,
        };
        listener.id.connect_request(&ev, entry.key())?;
        let policy = listener.settings.policy();
        // The CM made its own id for this connection; holding the
        // listener (and its id) any longer would block the listener's
        // destruction while the request waits for accept or reject.
        drop(listener);
        // The Request's timeout is gone (`Exchange::read`): what it may
        // have flagged is stale.
        cep.timed_out.store(false, Ordering::Release);
        let ms = params::cm_accept_timeout().saturating_mul(1000);
        *self = Phase::AwaitAccept(Requested {
            sock: mpa.sock,
            peer,
            ird,
            ord,
            policy,
            entry,
            timeout: Timeout::arm(cep, ms).ok(),
        });
        Ok(())
    }

    /// Accepts the Request: sends our Reply and moves `qp` to RTS on the
    /// connection (CM id `id`; `cep` is this endpoint). Any failure after
    /// the Reply's checks leaves the endpoint closed: the CM puts its id
    /// back to IDLE when accept fails, and no event may reach it any more
    /// (a CLOSE there is a BUG() in the CM).
    fn accept(&mut self, cep: &Arc<Cep>, qp: Arc<Qp>, id: HeldId, p: &ConnParam) -> Result {
        id.details().set_phase(self.name());
        let Phase::AwaitAccept(req) = self else {
            return Err(EINVAL);
        };
        let Reply {
            hdr,
            ird_ord,
            terms,
        } = req.reply(p)?;
        let Requested {
            sock,
            entry,
            timeout,
            ..
        } = self.take_requested().ok_or(EINVAL)?;
        // No longer pending; and the timeout goes before the silence
        // checks of the connection (`timed_out` is theirs from now on).
        drop(entry);
        drop(timeout);
        cep.timed_out.store(false, Ordering::Release);
        send_rr(&sock, hdr, ird_ord, &p.pdata)?;
        let est = Established {
            addrs: (sock.local_addr()?.unmapped(), sock.peer_addr()?.unmapped()),
            ird: terms.ird,
            ord: terms.ord,
        };
        establish(cep, &qp, sock, CmId::clone(&id), &terms)?;
        let pending = if terms.rtr == Rtr::Await {
            Some(est)
        } else {
            // Under the endpoint lock: the connection may already be
            // dying (a peer that closes right after our Reply), and
            // `close` must not report CLOSE before ESTABLISHED, which the
            // CM, its id still in CONN_RECV, answers with BUG().
            est.report(&id);
            None
        };
        *self = Phase::Rdma(Connected::new(id, qp, pending, &terms));
        self.show();
        cep.arm_wake(self);
        Ok(())
    }

    /// Refuses the Request waiting for the CM: sends the reject Reply with
    /// `pdata` and closes. An endpoint in another phase (closed, its peer
    /// gone) stays as it is.
    pub(super) fn reject(&mut self, pdata: &[u8]) {
        let Some(req) = self.take_requested() else {
            return;
        };
        let mut hdr = MpaRr::new(FrameKind::Reply, req.peer.revision, 0);
        hdr.reject = true;
        let _ = send_rr(&req.sock, hdr, None, pdata);
        req.sock.detach();
        req.sock.shutdown();
    }
}

/// `iw_accept`: answer the connect request `key` of the device's
/// `pending` endpoints and move `qp` (the QP `p.qpn` names, if there is
/// one) to RTS; the id is held in the device's `ids`. The CM answers a
/// request once: after a failure it is refused. `ECONNABORTED` for a
/// request that is gone (its peer, listener or timeout closed it).
pub(crate) fn accept(
    pending: &Pending,
    key: RequestKey,
    qp: Option<Arc<Qp>>,
    id: CmId,
    p: ConnParam,
    ids: &Arc<CmIds>,
) -> Result {
    let cep = pending
        .find(key)
        .ok_or_else(crate::kif::compat::error::econnaborted)?;
    let mut phase = cep.phase.lock();
    let r = match qp {
        Some(qp) => HeldId::new(ids, id, Role::Responder { qpn: qp.id() })
            .and_then(|id| phase.accept(&cep, qp, id, &p)),
        None => Err(EINVAL),
    };
    if r.is_err() {
        // (nothing, if the failure came after our Reply: closed then)
        phase.reject(&[]);
    }
    r
}

/// `iw_reject`: refuse the connect request `key` of the device's `pending`
/// endpoints with private data `pdata`. More than fits is the caller's
/// error (`EINVAL`); the request is refused all the same, without it (the
/// CM answers a request once). A request that is gone was refused as it
/// went.
pub(crate) fn reject(pending: &Pending, key: RequestKey, pdata: &[u8]) -> Result {
    let Some(cep) = pending.find(key) else {
        return Ok(());
    };
    // (the reject Reply has no IRD/ORD data)
    let fits = pdata.len() <= max_user_pdata(false);
    cep.phase.lock().reject(if fits { pdata } else { &[] });
    if fits {
        Ok(())
    } else {
        Err(EINVAL)
    }
}
