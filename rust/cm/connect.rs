// SPDX-License-Identifier: GPL-2.0

//! The initiator: `iw_connect` connects the socket and sends our MPA
//! Request ([`Offer`] keeps what it offered); the peer's Reply moves the
//! QP to RTS, or is refused (the LLP TERMINATE of RFC 6581), or refuses
//! us. The CM learns the outcome as CONNECT_REPLY.

use kernel::{prelude::*, sync::Arc};

use crate::base::{limits, settings::MpaPolicy};
use crate::kif::net::NetNs;
use crate::kif::rdma::iwcm::{CmEvent, CmEventKind, CmId, ConnParam};
use crate::kif::sock::{SockAddr, Socket};
use crate::qp::Qp;
use crate::wire::connect::{
    max_user_pdata, FrameKind, IrdOrd, MpaRr, RES_LARGE_FPDU, REVISION_1, REVISION_2,
};
use crate::wire::error::LlpError;
use crate::wire::mpa::MpaMode;

use super::details::Role;
use super::establish::{establish, PerDir, Rtr, Terms};
use super::ids::{CmIds, HeldId};
use super::mpa::{send_rr, send_setup_terminate, Peer};
use super::phase::{Connected, Exchange, Outgoing, Phase};
use super::Cep;

/// What our MPA Request offered: the connection keeps to it, not to the
/// module parameters read again when the Reply arrives.
pub(super) struct Offer {
    /// Our IRD (from `iw_connect`).
    ird: u32,
    /// Our ORD (from `iw_connect`).
    ord: u32,
    /// The peer-to-peer model (RFC 6581), a zero length Write as RTR.
    p2p: bool,
    /// We take FPDUs larger than a TCP segment.
    large_fpdu: bool,
    /// The C flag: we want CRC.
    pub(super) crc: bool,
    /// The M flag: we want markers in the FPDUs we receive.
    markers: bool,
    /// The payload cap of the large FPDUs we send.
    max_fpdu: u32,
}

impl Offer {
    /// Our Request of revision `rev` with the resources and private data
    /// of `p` and what the device's settings `pol` ask for: what it
    /// offers, its header and IRD/ORD data.
    fn request(rev: u8, p: &ConnParam, pol: &MpaPolicy) -> (Self, MpaRr, Option<IrdOrd>) {
        let mut hdr = MpaRr::new(FrameKind::Request, rev, 0);
        hdr.crc = pol.crc_required;
        hdr.markers = pol.markers;
        let large = pol.large_fpdu;
        if large {
            hdr.res |= RES_LARGE_FPDU;
        }
        // Revision 1 has no IRD/ORD (nor peer-to-peer) negotiation.
        let p2p = rev == REVISION_2 && pol.peer_to_peer;
        let io = (rev == REVISION_2).then(|| IrdOrd {
            ird: p.ird.min(0x3fff) as u16,
            ord: p.ord.min(0x3fff) as u16,
            peer_to_peer: p2p,
            write_rtr: p2p,
            ..IrdOrd::default()
        });
        let offer = Self {
            ird: p.ird,
            ord: p.ord,
            p2p,
            large_fpdu: large,
            crc: hdr.crc,
            markers: hdr.markers,
            max_fpdu: pol.max_fpdu,
        };
        (offer, hdr, io)
    }

    /// What the connection uses after the Reply `peer` (`p2p`: both sides
    /// chose the peer-to-peer model).
    fn terms(&self, peer: &Peer, p2p: bool) -> Terms {
        let (mut ird, mut ord) = (self.ird, self.ord);
        if let Some(io) = peer.ird_ord {
            ord = ord.min(u32::from(io.ird));
            // RFC 6581: the responder's ORD may exceed the IRD we
            // offered: raise ours (the inbound Read queue is sized when the
            // QP enters RTS; more than the device can serve is refused, see
            // `refusal`).
            ird = u32::from(io.ord);
        }
        Terms {
            initiator: true,
            rev: peer.revision,
            crc: peer.crc || self.crc,
            // RFC 5044 7.1.1: each side's M asks for markers on the FPDUs
            // it receives. Ours is the M of our Request.
            markers: PerDir {
                tx: peer.markers,
                rx: self.markers,
            },
            // Large FPDUs both ways if our Request offered them and the
            // Reply has the bit (siw's responder echoes it; its receiver
            // takes any FPDU length), else only what fits a TCP segment.
            large: PerDir {
                tx: self.large_fpdu && peer.large_fpdu,
                rx: self.large_fpdu,
            },
            max_fpdu: self.max_fpdu,
            ird,
            ord,
            rtr: if p2p { Rtr::Send } else { Rtr::None },
        }
    }
}

/// RFC 6581: why a Reply that accepts (`peer`; `p2p`: in the peer-to-peer
/// model) cannot be worked with, if it cannot: an RTR we did not offer,
/// or an ORD beyond any IRD we can serve (a smaller one raises ours, see
/// [`Offer::terms`]).
fn refusal(peer: &Peer, p2p: bool) -> Option<LlpError> {
    // We offer a zero length Write as RTR only (as siw prefers it); a
    // responder that picked another one cannot be served.
    if p2p && !peer.ird_ord.is_some_and(|io| io.write_rtr) {
        crate::peer_warn!("MPA Reply asks for an RTR other than the zero length Write offered\n");
        return Some(LlpError::NoMatchingRtr);
    }
    let o = peer
        .ird_ord
        .map(|io| u32::from(io.ord))
        .filter(|&o| o > limits::MAX_IRD)?;
    crate::peer_warn!(
        "MPA Reply ORD {} exceeds the IRD this device can offer ({})\n",
        o,
        limits::MAX_IRD
    );
    Some(LlpError::InsufficientIrd)
}

/// Tells the CM, through `id`, how our connect request ended: `status` 0
/// (with the Reply's addresses and private data, and the connection's IRD
/// and ORD) or a negative errno.
pub(super) fn report_reply(
    id: &CmId,
    status: i32,
    addrs: Option<(SockAddr, SockAddr)>,
    pdata: &[u8],
    (ird, ord): (u32, u32),
) {
    let ev = CmEvent {
        kind: CmEventKind::ConnectReply,
        status,
        addrs,
        pdata,
        ird: ird.min(255) as u8,
        ord: ord.min(255) as u8,
    };
    let _ = id.event(&ev);
}

impl Phase {
    /// Initiator: the peer's MPA Reply arrived (`reject`: it refuses us).
    /// Moves the QP to RTS on the connection, or closes after a refusal;
    /// the CM learns either as CONNECT_REPLY. An error leaves the phase
    /// to [`Phase::fail`], except once the socket went to the QP: that
    /// failure is reported here, and the phase is closed already.
    pub(super) fn on_reply(&mut self, cep: &Arc<Cep>, peer: Peer, reject: bool) -> Result {
        let Phase::AwaitReply(out) = self else {
            return Err(EINVAL);
        };
        let p2p = out.offer.p2p && peer.ird_ord.is_some_and(|io| io.peer_to_peer);
        let refused = if reject { None } else { refusal(&peer, p2p) };
        if let Some(e) = refused {
            // As siw: the LLP TERMINATE before the close.
            let mode = MpaMode {
                markers: peer.markers,
                crc: peer.crc || out.offer.crc,
            };
            send_setup_terminate(&out.mpa.sock, mode, e);
            return Err(crate::kif::compat::error::econnrefused());
        }
        let addrs = (out.mpa.sock.local_addr()?, out.mpa.sock.peer_addr()?);
        let terms = out.offer.terms(&peer, p2p);
        let Some(Outgoing { mpa, id, qp, .. }) = self.take_outgoing() else {
            return Err(EINVAL);
        };
        if reject {
            mpa.sock.detach();
            let refused = crate::kif::compat::error::econnrefused().to_errno();
            report_reply(&id, refused, Some(addrs), &peer.pdata, (0, 0));
            return Ok(());
        }
        if let Err(e) = establish(cep, &qp, mpa.sock, CmId::clone(&id), &terms) {
            report_reply(&id, e.to_errno(), None, &[], (0, 0));
            return Err(e);
        }
        let resources = (terms.ird, terms.ord);
        report_reply(&id, 0, Some(addrs), &peer.pdata, resources);
        *self = Phase::Rdma(Connected::new(id, qp, None, &terms));
        self.show();
        cep.arm_wake(self);
        Ok(())
    }
}

/// `iw_connect`: connect `qp` (the QP `p.qpn` names) to the CM id's
/// remote address, as the device's settings `pol` ask, from the network
/// namespace `net` (the device's net device's, whoever asks); the id is
/// held in the device's `ids`.
pub(crate) fn connect(
    net: &NetNs,
    qp: Arc<Qp>,
    id: CmId,
    p: ConnParam,
    pol: &MpaPolicy,
    ids: &Arc<CmIds>,
) -> Result {
    let rev = if pol.rev == REVISION_1 {
        REVISION_1
    } else {
        REVISION_2
    };
    // Revision 1 frames carry no IRD/ORD data: 512 octets for the caller.
    if p.pdata.len() > max_user_pdata(rev == REVISION_2)
        || p.ord > limits::MAX_ORD
        || p.ird > limits::MAX_IRD
    {
        return Err(EINVAL);
    }
    let (laddr, raddr) = (id.local_addr(), id.remote_addr());
    // A consumer may connect several ids from one rdma_cm port to one
    // peer (RTRS binds every connection of a path to its first one's
    // source address and port): a TCP connection cannot share its
    // 4-tuple, so such a connection takes an ephemeral port, as a port
    // mapper would map it; the events report the port in use.
    let sock = match tcp_connect(net, &laddr, &raddr, id.afonly()) {
        Err(e) if e == crate::kif::compat::error::eaddrnotavail() => {
            tcp_connect(net, &laddr.without_port(), &raddr, id.afonly())?
        }
        r => r?,
    };
    let (offer, hdr, io) = Offer::request(rev, &p, pol);
    let mpa = Exchange::new(sock, FrameKind::Reply);
    let id = HeldId::new(ids, id, Role::Initiator { qpn: qp.id() })?;
    let phase = Phase::AwaitReply(Outgoing { mpa, id, qp, offer });
    phase.show();
    let cep = Cep::new(phase)?;
    {
        let mut phase = cep.phase.lock();
        let mpa = phase.exchange().ok_or(EINVAL)?;
        send_rr(&mpa.sock, hdr, io, &p.pdata)?;
        mpa.sock.attach(cep.clone())?;
    }
    cep.arm_timeout();
    cep.kick();
    Ok(())
}

/// A TCP socket bound to `laddr` and connected to `raddr` (IPv6 only with
/// `afonly`), without Nagle.
fn tcp_connect(net: &NetNs, laddr: &SockAddr, raddr: &SockAddr, afonly: bool) -> Result<Socket> {
    let sock = Socket::tcp(net, raddr.is_v6())?;
    // rdma_cm may hand out a local port still in TIME_WAIT from an
    // earlier connection (as siw, allow it).
    sock.set_reuseaddr();
    if raddr.is_v6() && afonly {
        sock.set_v6only()?;
    }
    sock.bind(laddr)?;
    sock.connect(raddr)?;
    sock.set_nodelay();
    Ok(sock)
}
