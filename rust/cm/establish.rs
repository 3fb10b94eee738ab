// SPDX-License-Identifier: GPL-2.0

//! What an MPA exchange settles for a connection ([`Terms`]: CRC, markers
//! and large FPDUs per direction, IRD and ORD, the peer-to-peer RTR), and
//! [`establish`], which hands the socket to the QP as its connection and
//! moves the QP to RTS. Both sides end their exchange here.

use core::sync::atomic::AtomicBool;
use kernel::{prelude::*, sync::Arc};

use crate::kif::rdma::iwcm::CmId;
use crate::kif::sock::Socket;
use crate::kif::trace;
use crate::qp::{Conn, Qp, TxHold};
use crate::wire::mpa::{max_fpdu_wire_len, mulpdu, MpaMode};

use super::Cep;

/// An FPDU option negotiated per direction: MPA markers (RFC 5044 7.1.1)
/// and FPDUs larger than a TCP segment (`RES_LARGE_FPDU`).
#[derive(Clone, Copy)]
pub(super) struct PerDir {
    /// In the FPDUs we send.
    pub(super) tx: bool,
    /// In the FPDUs we receive.
    pub(super) rx: bool,
}

/// The peer-to-peer ready-to-receive message of a connection.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Rtr {
    /// Client-server initiator: nothing to send or await.
    None,
    /// Initiator: send a zero length Write before anything else.
    Send,
    /// Responder: send nothing before the initiator's RTR arrived, and
    /// report ESTABLISHED then.
    Await,
    /// Client-server responder: send no FPDU before the initiator's first
    /// one arrived (RFC 5044 section 7.1.2, `mpa_responder_waits`).
    Hold,
    /// Client-server responder by default: as `Hold`, but only until the
    /// first check of the peer's silence ([`crate::qp::TxHold::Grace`]).
    Grace,
}

/// What the MPA exchange settled for a connection.
pub(super) struct Terms {
    /// This side sent the MPA Request.
    pub(super) initiator: bool,
    /// MPA revision of the exchange (1 or 2).
    pub(super) rev: u8,
    /// MPA CRC in use.
    pub(super) crc: bool,
    /// MPA markers.
    pub(super) markers: PerDir,
    /// FPDUs larger than a TCP segment.
    pub(super) large: PerDir,
    /// The payload cap of the large FPDUs we send (the device's
    /// `mpa_max_fpdu` when the exchange started).
    pub(super) max_fpdu: u32,
    /// The connection's IRD (the QP's inbound Read queue is sized for it).
    pub(super) ird: u32,
    /// The connection's ORD.
    pub(super) ord: u32,
    /// The peer-to-peer RTR, or the responder's hold.
    pub(super) rtr: Rtr,
}

impl Terms {
    /// The connection follows the peer-to-peer model (RFC 6581).
    pub(super) fn peer_to_peer(&self) -> bool {
        matches!(self.rtr, Rtr::Send | Rtr::Await)
    }
}

/// With CRC the receiver checks an FPDU's CRC before it takes any octet of
/// it (RFC 5044 section 7.1; `qp::rx`), so the FPDU waits in the socket
/// until it is complete. If the socket cannot queue the largest FPDU the
/// peer may send (`markers`: in what we receive), TCP's window closes on
/// an incomplete FPDU and never opens again: the connection hangs, without
/// an error. So the window is let grow to two of them (from any
/// `tcp_rmem`; the handshake's window scale still bounds it).
fn fit_fpdu_window(sock: &Socket, markers: bool) {
    let fpdu = max_fpdu_wire_len(MpaMode { markers, crc: true });
    match sock.reserve_rcv_window(2 * fpdu) {
        Ok(w) if w >= fpdu => {}
        Ok(w) => pr_warn!(
            "receive window at most {} octets, less than an FPDU ({}): FPDUs that large will stall (window scale)\n",
            w,
            fpdu
        ),
        Err(e) => pr_warn!("cannot size the receive window: {:?}\n", e),
    }
}

/// Hands `sock` to `qp` as its connection on the terms `t` (CM id `id`;
/// `cep` reports the close) and moves the QP to RTS.
pub(super) fn establish(cep: &Arc<Cep>, qp: &Arc<Qp>, sock: Socket, id: CmId, t: &Terms) -> Result {
    sock.detach();
    if t.crc {
        fit_fpdu_window(&sock, t.markers.rx);
    }
    let m = mulpdu(sock.mss().max(536), t.markers.tx);
    // RFC 5044: receivers must not depend on FPDU alignment, and
    // upstream siw takes any ULPDU_Length: MULPDU (and the large FPDU
    // flag of the exchange) limits what we send, not what we take.
    let rx_max = u16::MAX;
    let conn = Arc::new(
        Conn {
            sock,
            mpa_rev: t.rev,
            peer_to_peer: t.peer_to_peer(),
            tx_markers: t.markers.tx,
            rx_markers: t.markers.rx,
            crc: t.crc,
            mulpdu: m,
            large_fpdu: t.large.tx.then_some(t.max_fpdu),
            rx_max_ulpdu: rx_max,
            send_rtr: t.rtr == Rtr::Send,
            await_rtr: AtomicBool::new(t.rtr == Rtr::Await),
            // RFC 5044 7.1.2, RFC 6581: a responder sends no FPDU before
            // it received one; in the peer-to-peer model that one is the
            // initiator's RTR.
            hold: match t.rtr {
                Rtr::Hold | Rtr::Await => TxHold::UntilFirstFpdu,
                Rtr::Grace => TxHold::Grace,
                Rtr::None | Rtr::Send => TxHold::None,
            },
            cep: cep.clone(),
            _id: id,
        },
        GFP_KERNEL,
    )?;
    trace::mpa_done(&trace::MpaDone {
        qpn: qp.id(),
        initiator: t.initiator,
        rev: t.rev,
        crc: t.crc,
        markers_tx: t.markers.tx,
        markers_rx: t.markers.rx,
        p2p: conn.peer_to_peer,
        mulpdu: conn.mulpdu,
        ird: t.ird,
        ord: t.ord,
    });
    qp.start_rdma(conn, t.ird, t.ord)
}
