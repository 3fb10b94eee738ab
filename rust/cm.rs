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

use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, ArcBorrow, Mutex},
    workqueue::{impl_has_work, new_work, Work, WorkItem},
};

use crate::base::limits;
use crate::kif::crc::KernelCrc32c;
use crate::kif::{
    compat::delayed_work::{Expire, Timeout},
    params,
    rdma::iwcm::{CmEvent, CmEventKind, CmId, ConnParam},
    sock::{SockAddr, SockEvents, SockRx, Socket, TcpState},
};
use crate::qp::{Conn, Endpoint, Qp, QpState};
use crate::wire::connect::{
    encode_rr, max_user_pdata, FrameKind, IrdOrd, MpaRr, RrParser, RtrType, MAX_PD_LEN,
    RES_LARGE_FPDU, REVISION_1, REVISION_2,
};
use crate::wire::error::LlpError;
use crate::wire::mpa::{mulpdu, MpaMode};
use crate::wire::term::build_terminate;
use crate::wire::tx::encode_fpdu;

/// Where an endpoint is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Responder: waiting for the MPA Request.
    AwaitRequest,
    /// Responder: the request went to the CM; waiting for accept/reject.
    AwaitAccept,
    /// Initiator: the request is out; waiting for the MPA Reply.
    AwaitReply,
    /// The QP is in RTS on this connection.
    Rdma,
    /// Gone (refused, failed or closed).
    Closed,
}

/// An FPDU option negotiated per direction: MPA markers (RFC 5044 7.1.1)
/// and FPDUs larger than a TCP segment ([`RES_LARGE_FPDU`]).
#[derive(Clone, Copy)]
struct PerDir {
    /// In the FPDUs we send.
    tx: bool,
    /// In the FPDUs we receive.
    rx: bool,
}

/// The peer-to-peer ready-to-receive message of a connection.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rtr {
    /// Not the peer-to-peer model.
    None,
    /// Initiator: send a zero length Write before anything else.
    Send,
    /// Responder: report ESTABLISHED when the initiator's RTR arrived.
    Await,
    /// Client-server responder: send no FPDU before the initiator's first
    /// one arrived (RFC 5044 section 7.1.2, `mpa_responder_waits`).
    Hold,
}

/// What the endpoint learned from the peer's frame.
struct Peer {
    revision: u8,
    enhanced: bool,
    markers: bool,
    crc: bool,
    ird_ord: Option<IrdOrd>,
    /// The peer takes FPDUs larger than a TCP segment.
    large_fpdu: bool,
    pdata: KVec<u8>,
}

/// Mutable endpoint state.
struct CepState {
    phase: Phase,
    sock: Option<Socket>,
    parser: RrParser,
    /// The CM id of the connection (initiator: from `iw_connect`; responder:
    /// from `iw_accept`).
    id: Option<CmId>,
    /// The listener a responder endpoint came from.
    listener: Option<Arc<Listener>>,
    qp: Option<Arc<Qp>>,
    peer: Option<Peer>,
    /// Our request's resources (initiator).
    ird: u32,
    ord: u32,
    /// Peer-to-peer model (RFC 6581): the initiator asked for it; the
    /// responder agreed and waits for the initiator's RTR.
    p2p: bool,
    /// Initiator: our Request offered to take large FPDUs.
    offered_large: bool,
    /// Initiator: our Request's C and M flags (what the connection uses,
    /// not the module parameters read again when the Reply arrives).
    req_crc: bool,
    req_markers: bool,
    /// Responder in the peer-to-peer model: ESTABLISHED as it will be
    /// reported once the RTR arrived (addresses, IRD, ORD).
    pending_established: Option<((SockAddr, SockAddr), u32, u32)>,
}

/// A connection endpoint.
#[pin_data]
pub struct Cep {
    active: bool,
    #[pin]
    st: Mutex<CepState>,
    /// The connection went down: report the close once.
    closing: AtomicBool,
    /// The QP left RTS: close the connection from the work item.
    close_req: AtomicBool,
    /// The peer's RTR arrived (peer-to-peer responder).
    rtr_seen: AtomicBool,
    /// Limits the wait for the peer's MPA frame.
    #[pin]
    timeout: Mutex<Option<Timeout<Cep>>>,
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
    fn new(active: bool, sock: Socket, listener: Option<Arc<Listener>>) -> Result<Arc<Self>> {
        let phase = if active {
            Phase::AwaitReply
        } else {
            Phase::AwaitRequest
        };
        let expect = if active {
            FrameKind::Reply
        } else {
            FrameKind::Request
        };
        Arc::pin_init(
            pin_init!(Self {
                active,
                st <- new_mutex!(CepState {
                    phase,
                    sock: Some(sock),
                    parser: RrParser::new(Some(expect), MAX_PD_LEN),
                    id: None,
                    listener,
                    qp: None,
                    peer: None,
                    ird: 0,
                    ord: 0,
                    p2p: false,
                    offered_large: false,
                    req_crc: false,
                    req_markers: false,
                    pending_established: None,
                }),
                closing: AtomicBool::new(false),
                close_req: AtomicBool::new(false),
                rtr_seen: AtomicBool::new(false),
                timeout <- new_mutex!(None),
                work <- new_work!("rsiw::cep"),
            }),
            GFP_KERNEL,
        )
    }

    /// Starts the wait for the peer's MPA frame.
    fn arm_timeout(self: &Arc<Self>) {
        if let Ok(t) = Timeout::arm(self, MPA_TIMEOUT_MS) {
            *self.timeout.lock() = Some(t);
        }
    }

    /// The peer's frame arrived (or the endpoint is done): stop waiting.
    fn disarm_timeout(&self) {
        if let Some(t) = self.timeout.lock().take() {
            t.cancel();
        }
    }

    /// Schedules the endpoint's work.
    fn kick(self: &Arc<Self>) {
        let _ = crate::kif::compat::workqueue::queue().enqueue(self.clone());
    }

    /// Moves the connection along; runs on the workqueue.
    fn process(self: &Arc<Self>) {
        let mut st = self.st.lock();
        match st.phase {
            Phase::AwaitRequest | Phase::AwaitReply => {
                if let Err(e) = self.read_frame(&mut st) {
                    pr_debug!("MPA exchange failed: {:?}\n", e);
                    self.fail(&mut st, e);
                }
            }
            Phase::Rdma if self.close_req.load(Ordering::Acquire) => {
                drop(st);
                self.close(false);
            }
            Phase::Rdma
                if st.pending_established.is_some() && self.rtr_seen.load(Ordering::Acquire) =>
            {
                // Reported under the endpoint lock: a concurrent `close`
                // must not report CLOSE before it (see `accept`).
                if let (Some((addrs, ird, ord)), Some(id)) =
                    (st.pending_established.take(), st.id.as_ref())
                {
                    report_established(id, addrs, ird, ord);
                }
                drop(st);
                // Look at the socket state too.
                self.kick();
            }
            Phase::Rdma => {
                let closed = match st.qp.as_ref().and_then(|q| q.conn()) {
                    Some(c) => matches!(c.sock.state(), TcpState::Closed | TcpState::CloseWait),
                    None => true,
                };
                if closed {
                    drop(st);
                    self.close(true);
                }
            }
            Phase::AwaitAccept => {
                // The peer gave up before the CM answered: drop the socket;
                // a later accept or reject finds the endpoint closed.
                let gone = match st.sock.as_ref() {
                    Some(s) => matches!(s.state(), TcpState::Closed | TcpState::CloseWait),
                    None => true,
                };
                if gone {
                    st.phase = Phase::Closed;
                    if let Some(s) = st.sock.take() {
                        s.detach();
                    }
                }
            }
            Phase::Closed => {}
        }
    }

    /// Reads (only) the bytes the MPA frame still needs.
    fn read_frame(self: &Arc<Self>, st: &mut CepState) -> Result {
        let mut buf = [0u8; 64];
        loop {
            let want = st.parser.wanted().min(buf.len());
            if want == 0 {
                break;
            }
            let sock = st.sock.as_ref().ok_or(EINVAL)?;
            let n = match sock.recv(&mut buf[..want]) {
                Ok(0) => return Err(crate::kif::compat::error::econnreset()),
                Ok(n) => n,
                Err(e) if e == EAGAIN => {
                    return match sock.state() {
                        TcpState::Established => Ok(()),
                        _ => Err(crate::kif::compat::error::econnreset()),
                    };
                }
                Err(e) => return Err(e),
            };
            let (_, done) = match st.parser.push(&buf[..n]) {
                Ok(r) => r,
                Err(e) => {
                    // A Reply we cannot parse (key, revision, PD_Length)
                    // gets the LLP TERMINATE before the close, as siw
                    // answers a wrong key; no markers (none were agreed),
                    // CRC as our Request asked.
                    if self.active {
                        pr_warn!("rsiw: invalid MPA Reply: {:?}\n", e);
                        let mode = MpaMode {
                            markers: false,
                            crc: st.req_crc,
                        };
                        send_setup_terminate(sock, mode, LlpError::InvalidRequestReply(e));
                    }
                    return Err(crate::kif::compat::error::eproto());
                }
            };
            if done {
                break;
            }
        }
        let Some(f) = st.parser.frame() else {
            return Ok(());
        };
        self.disarm_timeout();
        let mut pdata = KVec::new();
        pdata.extend_from_slice(f.pdata, GFP_KERNEL)?;
        let peer = Peer {
            revision: f.hdr.revision,
            enhanced: f.hdr.has_ird_ord(),
            markers: f.hdr.markers,
            crc: f.hdr.crc,
            ird_ord: f.ird_ord,
            large_fpdu: f.hdr.large_fpdu(),
            pdata,
        };
        let reject = f.hdr.reject;
        if self.active {
            self.on_reply(st, peer, reject)
        } else {
            self.on_request(st, peer)
        }
    }

    /// Responder: a complete MPA Request arrived; tell the CM.
    fn on_request(self: &Arc<Self>, st: &mut CepState, peer: Peer) -> Result {
        let listener = st.listener.clone().ok_or(EINVAL)?;
        let sock = st.sock.as_ref().ok_or(EINVAL)?;
        let addrs = (sock.local_addr()?, sock.peer_addr()?);
        // The initiator's ORD is what we must serve (our IRD) and its IRD
        // bounds our ORD. A revision 1 peer says nothing: offer the maxima
        // rather than 0 (upstream siw offers 0, which breaks RDMA Read).
        let (ird, ord) = match peer.ird_ord {
            Some(io) => (
                (io.ord as u32).min(limits::MAX_IRD),
                (io.ird as u32).min(limits::MAX_ORD),
            ),
            None => (limits::MAX_IRD, limits::MAX_ORD),
        };
        st.ird = ird;
        st.ord = ord;
        st.phase = Phase::AwaitAccept;
        let peer = st.peer.insert(peer);
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
        let r = listener.id.event(&ev, Some(self.clone()));
        // The CM made its own id for this connection; holding the
        // listener (and its id) any longer would block the listener's
        // destruction while the request waits for accept or reject.
        st.listener = None;
        r
    }

    /// Initiator: the MPA Reply arrived.
    fn on_reply(self: &Arc<Self>, st: &mut CepState, peer: Peer, reject: bool) -> Result {
        // We offer a zero length Write as RTR only (as siw prefers it); a
        // responder that picked another one cannot be served.
        let p2p = st.p2p && peer.ird_ord.is_some_and(|io| io.peer_to_peer);
        // RFC 6581: a Reply we cannot work with gets the LLP TERMINATE
        // before the close (as siw): an RTR we did not offer, or an ORD
        // beyond any IRD we can serve (a smaller one raises ours below).
        let setup_err = if reject {
            None
        } else if p2p && !peer.ird_ord.is_some_and(|io| io.write_rtr) {
            pr_warn!("rsiw: MPA Reply asks for an RTR other than the zero length Write offered\n");
            Some(LlpError::NoMatchingRtr)
        } else if let Some(o) = peer
            .ird_ord
            .map(|io| u32::from(io.ord))
            .filter(|&o| o > limits::MAX_IRD)
        {
            pr_warn!(
                "rsiw: MPA Reply ORD {} exceeds the IRD this device can offer ({})\n",
                o,
                limits::MAX_IRD
            );
            Some(LlpError::InsufficientIrd)
        } else {
            None
        };
        if let Some(e) = setup_err {
            if let Some(sock) = st.sock.as_ref() {
                let mode = MpaMode {
                    markers: peer.markers,
                    crc: peer.crc || st.req_crc,
                };
                send_setup_terminate(sock, mode, e);
            }
            return Err(crate::kif::compat::error::econnrefused());
        }
        let id = st.id.clone().ok_or(EINVAL)?;
        let sock = st.sock.take().ok_or(EINVAL)?;
        let addrs = (sock.local_addr()?, sock.peer_addr()?);
        if reject {
            st.phase = Phase::Closed;
            sock.detach();
            let ev = CmEvent {
                kind: CmEventKind::ConnectReply,
                status: crate::kif::compat::error::econnrefused().to_errno(),
                addrs: Some(addrs),
                pdata: &peer.pdata,
                ird: 0,
                ord: 0,
            };
            let _ = id.event::<Cep>(&ev, None);
            st.id = None;
            return Ok(());
        }
        let qp = st.qp.clone().ok_or(EINVAL)?;
        let (mut ird, mut ord) = (st.ird, st.ord);
        if let Some(io) = peer.ird_ord {
            ord = ord.min(u32::from(io.ird));
            // RFC 6581: the responder's ORD may exceed the IRD we
            // offered: raise ours (the IRQ is sized when the QP enters
            // RTS; more than the device can serve was refused above).
            ird = u32::from(io.ord);
        }
        // What our Request carried, not the module parameters now.
        let crc = peer.crc || st.req_crc;
        // RFC 5044 7.1.1: each side's M asks for markers on the FPDUs it
        // receives. Ours is the M of our Request.
        let markers = PerDir {
            tx: peer.markers,
            rx: st.req_markers,
        };
        // Large FPDUs both ways if our Request offered them and the Reply
        // has the bit (siw's responder echoes it; its receiver takes any
        // FPDU length), else only what fits a TCP segment.
        let large = PerDir {
            tx: st.offered_large && peer.large_fpdu,
            rx: st.offered_large,
        };
        let rtr = if p2p { Rtr::Send } else { Rtr::None };
        self.enter_rts(&qp, sock, id.clone(), markers, large, crc, (ird, ord), rtr)?;
        st.phase = Phase::Rdma;
        let peer = st.peer.insert(peer);
        let ev = CmEvent {
            kind: CmEventKind::ConnectReply,
            status: 0,
            addrs: Some(addrs),
            pdata: &peer.pdata,
            ird: ird.min(255) as u8,
            ord: ord.min(255) as u8,
        };
        let _ = id.event::<Cep>(&ev, None);
        Ok(())
    }

    /// Hands the socket to the QP and moves it to RTS.
    #[allow(clippy::too_many_arguments)]
    fn enter_rts(
        self: &Arc<Self>,
        qp: &Arc<Qp>,
        sock: Socket,
        id: CmId,
        markers: PerDir,
        large: PerDir,
        crc: bool,
        (ird, ord): (u32, u32),
        rtr: Rtr,
    ) -> Result {
        sock.detach();
        let m = mulpdu(sock.mss().max(536), markers.tx);
        // RFC 5044: receivers must not depend on FPDU alignment, and
        // upstream siw takes any ULPDU_Length: MULPDU (and the large FPDU
        // flag of the exchange) limits what we send, not what we take.
        let rx_max = u16::MAX;
        let conn = Arc::new(
            Conn {
                sock,
                tx_markers: markers.tx,
                rx_markers: markers.rx,
                crc,
                mulpdu: m,
                large_fpdu: large.tx,
                rx_max_ulpdu: rx_max,
                send_rtr: rtr == Rtr::Send,
                await_rtr: AtomicBool::new(rtr == Rtr::Await),
                hold_tx: rtr == Rtr::Hold,
                cep: self.clone(),
                id,
            },
            GFP_KERNEL,
        )?;
        {
            let mut inner = qp.inner.lock();
            if inner.state != QpState::Idle && inner.state != QpState::Rtr {
                return Err(EINVAL);
            }
            inner.ird = ird;
            inner.ord = ord;
            qp.put_state(&mut inner, QpState::Rts);
        }
        qp.stats
            .inc(crate::base::stats::Counter::ConnectionsEstablished);
        *qp.conn.lock() = Some(conn.clone());
        conn.sock.attach(qp.clone())?;
        crate::qp::rx::start(qp)?;
        qp.schedule_tx();
        Ok(())
    }

    /// The exchange failed: tell the CM (initiator) and drop the socket.
    fn fail(self: &Arc<Self>, st: &mut CepState, e: Error) {
        st.phase = Phase::Closed;
        self.disarm_timeout();
        if let Some(s) = st.sock.take() {
            s.detach();
        }
        if self.active {
            if let Some(id) = st.id.take() {
                let ev = CmEvent {
                    kind: CmEventKind::ConnectReply,
                    status: e.to_errno(),
                    addrs: None,
                    pdata: &[],
                    ird: 0,
                    ord: 0,
                };
                let _ = id.event::<Cep>(&ev, None);
            }
        }
        st.qp = None;
        st.listener = None;
    }

    /// The RDMA connection is going down (`remote`: the peer closed or
    /// reset it). Reports DISCONNECT (remote only) and CLOSE once.
    fn close(self: &Arc<Self>, remote: bool) {
        if self.closing.swap(true, Ordering::AcqRel) {
            return;
        }
        let (qp, id) = {
            let mut st = self.st.lock();
            st.phase = Phase::Closed;
            let id = st.id.take();
            // A peer-to-peer responder whose connection died before the
            // initiator's RTR: the CM id still waits in CONN_RECV, where
            // the CM takes no DISCONNECT or CLOSE (it BUG()s on a CLOSE).
            // ESTABLISHED goes first, so the consumer sees the connection
            // come up and go down.
            if let (Some((addrs, ird, ord)), Some(id)) = (st.pending_established.take(), &id) {
                report_established(id, addrs, ird, ord);
            }
            (st.qp.take(), id)
        };
        if let Some(qp) = &qp {
            // A closed connection is not a QP error event (a TERMINATE
            // received is reported by the receive path).
            qp.set_error();
            qp.drop_conn();
        }
        if let Some(id) = id {
            let base = CmEvent {
                kind: CmEventKind::Disconnect,
                status: 0,
                addrs: None,
                pdata: &[],
                ird: 0,
                ord: 0,
            };
            if remote {
                let _ = id.event::<Cep>(&base, None);
            }
            let _ = id.event::<Cep>(
                &CmEvent {
                    kind: CmEventKind::Close,
                    ..base
                },
                None,
            );
        }
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

/// How long a connection may wait for the peer's MPA Request or Reply.
const MPA_TIMEOUT_MS: u32 = 10_000;

impl Expire for Cep {
    fn expired(this: Arc<Self>) {
        let mut st = this.st.lock();
        if matches!(st.phase, Phase::AwaitRequest | Phase::AwaitReply) {
            pr_debug!("MPA exchange timed out\n");
            this.fail(&mut st, crate::kif::compat::error::etimedout());
        }
    }
}

/// Connection setup failed after the Reply (RFC 6581: no matching RTR,
/// insufficient IRD): sends the LLP TERMINATE, without header copies, as
/// the first FPDU of the stream in the negotiated `mode`. Best effort: the
/// connection is closed next either way.
fn send_setup_terminate(sock: &Socket, mode: MpaMode, e: LlpError) {
    let mut ulpdu = [0u8; 32];
    let Some(n) = build_terminate(e.into(), 1, None, 0, &mut ulpdu) else {
        return;
    };
    let mut f = [0u8; 64];
    let mut crc = KernelCrc32c::new();
    if let Ok(m) = encode_fpdu(
        mode,
        0,
        ulpdu.get(..n).unwrap_or(&[]),
        &[],
        &mut crc,
        &mut f,
    ) {
        let _ = send_all(sock, f.get(..m).unwrap_or(&[]));
    }
}

/// Sends an MPA Request or Reply.
fn send_rr(sock: &Socket, hdr: MpaRr, ird_ord: Option<IrdOrd>, pdata: &[u8]) -> Result {
    let mut buf = [0u8; 20 + MAX_PD_LEN];
    let n = encode_rr(hdr, ird_ord, pdata, &mut buf).map_err(|_| EINVAL)?;
    send_all(sock, buf.get(..n).unwrap_or(&[]))
}

/// Sends all of `buf` (retrying a full send buffer for up to a second).
fn send_all(sock: &Socket, buf: &[u8]) -> Result {
    let n = buf.len();
    let mut off = 0;
    let mut tries = 0;
    while off < n {
        match sock.send(&[&buf[off..n]], false) {
            Ok(k) => off += k,
            Err(e) if e == EAGAIN && tries < 100 => {
                tries += 1;
                crate::kif::compat::delay::sleep_ms(10);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `iw_connect`: connect `qp` (the QP `p.qpn` names) to the CM id's
/// remote address.
pub fn connect(qp: Arc<Qp>, id: CmId, p: ConnParam) -> Result {
    let rev = if params::mpa_rev() == REVISION_1 {
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
    let raddr = id.remote_addr();
    let sock = Socket::tcp(raddr.is_v6())?;
    // rdma_cm may hand out a local port still in TIME_WAIT from an
    // earlier connection (as siw, allow it).
    sock.set_reuseaddr();
    if raddr.is_v6() && id.afonly() {
        sock.set_v6only()?;
    }
    sock.bind(&id.local_addr())?;
    sock.connect(&raddr)?;
    sock.set_nodelay();
    let cep = Cep::new(true, sock, None)?;
    {
        let mut st = cep.st.lock();
        st.id = Some(id);
        st.qp = Some(qp);
        st.ird = p.ird;
        st.ord = p.ord;
        let sock = st.sock.as_ref().ok_or(EINVAL)?;
        let mut hdr = MpaRr::new(FrameKind::Request, rev, 0);
        hdr.crc = params::mpa_crc_required();
        hdr.markers = params::mpa_markers_wanted();
        let large = params::mpa_large_fpdu();
        if large {
            hdr.res |= RES_LARGE_FPDU;
        }
        // Revision 1 has no IRD/ORD (nor peer-to-peer) negotiation.
        let p2p = rev == REVISION_2 && params::mpa_peer_to_peer();
        let io = (rev == REVISION_2).then(|| IrdOrd {
            ird: p.ird.min(0x3fff) as u16,
            ord: p.ord.min(0x3fff) as u16,
            peer_to_peer: p2p,
            write_rtr: p2p,
            ..IrdOrd::default()
        });
        send_rr(sock, hdr, io, &p.pdata)?;
        sock.attach(cep.clone())?;
        st.p2p = p2p;
        st.offered_large = large;
        st.req_crc = hdr.crc;
        st.req_markers = hdr.markers;
    }
    cep.arm_timeout();
    cep.kick();
    Ok(())
}

/// `iw_accept`: answer a connect request and move `qp` (the QP `p.qpn`
/// names) to RTS.
pub fn accept(qp: Arc<Qp>, cep: Arc<Cep>, id: CmId, p: ConnParam) -> Result {
    let mut st = cep.st.lock();
    if st.phase != Phase::AwaitAccept {
        return Err(EINVAL);
    }
    let peer = st.peer.as_ref().ok_or(EINVAL)?;
    // The Reply has IRD/ORD data only if the Request had them.
    if p.pdata.len() > max_user_pdata(peer.enhanced)
        || p.ord > limits::MAX_ORD
        || p.ird > limits::MAX_IRD
    {
        return Err(EINVAL);
    }
    let crc = peer.crc || params::mpa_crc_required();
    // Markers per direction (RFC 5044 7.1.1): the initiator's M asks for
    // them on what we send, ours (in the Reply) on what we receive.
    let markers = PerDir {
        tx: peer.markers,
        rx: params::mpa_markers_wanted(),
    };
    // Large FPDUs (both ways) only if the initiator offered them: the
    // Reply then carries the bit too, as siw's does.
    let large_ok = params::mpa_large_fpdu() && peer.large_fpdu;
    let large = PerDir {
        tx: large_ok,
        rx: large_ok,
    };
    let rev = if peer.revision == REVISION_1 {
        REVISION_1
    } else {
        REVISION_2
    };
    // Peer-to-peer (RFC 6581): keep one RTR of those offered (a zero
    // length Write by preference, as siw, then a Read; a Send when the
    // initiator offered neither), and wait for it before reporting
    // ESTABLISHED.
    let offered = peer.ird_ord.filter(|io| peer.enhanced && io.peer_to_peer);
    // (rsiw takes every RTR type)
    let rtr_type = offered.and_then(|o| o.choose_rtr(true, true).ok());
    // RFC 6581 (as siw's accept): our ORD at most the initiator's IRD, our
    // IRD raised to its ORD where resources allow (`st.ird` is that ORD,
    // capped at the device's maximum; an irdma initiator refuses a Reply
    // whose IRD is below its ORD).
    let (mut ird, mut ord) = (p.ird, p.ord);
    if peer.enhanced && peer.ird_ord.is_some() {
        ord = ord.min(st.ord);
        ird = ird.max(st.ird);
    }
    let io = peer.enhanced.then(|| IrdOrd {
        ird: ird.min(0x3fff) as u16,
        ord: ord.min(0x3fff) as u16,
        peer_to_peer: offered.is_some(),
        zero_length_rtr: offered.is_some_and(|o| o.zero_length_rtr),
        write_rtr: rtr_type == Some(RtrType::Write),
        read_rtr: rtr_type == Some(RtrType::Read),
    });
    let mut hdr = MpaRr::new(FrameKind::Reply, rev, 0);
    hdr.crc = crc;
    hdr.markers = params::mpa_markers_wanted();
    if large_ok {
        hdr.res |= RES_LARGE_FPDU;
    }
    let sock = st.sock.take().ok_or(EINVAL)?;
    send_rr(&sock, hdr, io, &p.pdata)?;
    let addrs = (sock.local_addr()?, sock.peer_addr()?);
    st.qp = Some(qp.clone());
    st.id = Some(id.clone());
    st.listener = None;
    let rtr = if offered.is_some() {
        Rtr::Await
    } else if params::mpa_responder_waits() {
        Rtr::Hold
    } else {
        Rtr::None
    };
    if rtr == Rtr::Await {
        st.pending_established = Some((addrs, ird, ord));
    }
    if let Err(e) = cep.enter_rts(&qp, sock, id.clone(), markers, large, crc, (ird, ord), rtr) {
        // The CM puts its id back to IDLE when accept fails: no event may
        // reach it any more (a CLOSE there is a BUG() in the CM).
        st.phase = Phase::Closed;
        st.id = None;
        st.qp = None;
        st.pending_established = None;
        return Err(e);
    }
    st.phase = Phase::Rdma;
    if rtr != Rtr::Await {
        // Under the endpoint lock: the connection may already be dying
        // (a peer that closes right after our Reply), and `close` must
        // not report CLOSE before ESTABLISHED, which the CM, its id still
        // in CONN_RECV, answers with BUG().
        report_established(&id, addrs, ird, ord);
    }
    Ok(())
}

/// Responder: tells the CM the connection is up (at accept, or when the
/// peer-to-peer RTR arrived).
fn report_established(id: &CmId, addrs: (SockAddr, SockAddr), ird: u32, ord: u32) {
    let ev = CmEvent {
        kind: CmEventKind::Established,
        status: 0,
        addrs: Some(addrs),
        pdata: &[],
        ird: ird.min(255) as u8,
        ord: ord.min(255) as u8,
    };
    let _ = id.event::<Cep>(&ev, None);
}

/// `iw_reject`: refuse a connect request with private data.
pub fn reject(cep: Arc<Cep>, pdata: &[u8]) -> Result {
    // (the reject Reply has no IRD/ORD data) More than fits is the
    // caller's error, not something to cut silently.
    if pdata.len() > max_user_pdata(false) {
        return Err(EINVAL);
    }
    let mut st = cep.st.lock();
    let rev = st.peer.as_ref().map_or(REVISION_2, |p| p.revision);
    if let Some(sock) = st.sock.take() {
        let mut hdr = MpaRr::new(FrameKind::Reply, rev, 0);
        hdr.reject = true;
        let _ = send_rr(&sock, hdr, None, pdata);
        sock.detach();
        sock.shutdown();
    }
    st.phase = Phase::Closed;
    st.listener = None;
    Ok(())
}

/// A listening socket and the CM id it serves.
#[pin_data]
pub struct Listener {
    sock: Socket,
    id: CmId,
    #[pin]
    work: Work<Listener>,
}

impl_has_work! {
    impl HasWork<Self> for Listener { self.work }
}

impl WorkItem for Listener {
    type Pointer = Arc<Listener>;

    fn run(this: Arc<Listener>) {
        while let Ok(Some(s)) = this.sock.accept() {
            s.set_nodelay();
            let Ok(cep) = Cep::new(false, s, Some(this.clone())) else {
                continue;
            };
            let st = cep.st.lock();
            let attached = st.sock.as_ref().map(|s| s.attach(cep.clone()));
            drop(st);
            if let Some(Ok(())) = attached {
                cep.arm_timeout();
                cep.kick();
            }
        }
    }
}

impl SockEvents for Listener {
    fn data_ready(this: ArcBorrow<'_, Self>, _rx: &mut SockRx<'_>) {
        let _ = crate::kif::compat::workqueue::queue().enqueue(Arc::<Listener>::from(this));
    }

    fn state_change(_this: ArcBorrow<'_, Self>, _s: TcpState) {}
}

/// `iw_create_listen` on the device whose net device has interface index
/// `ifindex`.
pub fn create_listen(ifindex: i32, id: CmId, backlog: i32) -> Result<Arc<Listener>> {
    let laddr = id.local_addr();
    let sock = Socket::tcp(laddr.is_v6())?;
    sock.set_reuseaddr();
    // A consumer listening on both families (nfsd, say) asks for IPv6
    // only on its IPv6 listener; without it the IPv4 one gets EADDRINUSE.
    if laddr.is_v6() && id.afonly() {
        sock.set_v6only()?;
    }
    // rdma_cm listens on every device for a wildcard address; each device
    // takes only its own net device's connections (as siw does), so that
    // listeners of several devices can share the port.
    if laddr.is_wildcard() {
        sock.bind_to_ifindex(ifindex)?;
    }
    sock.bind(&laddr)?;
    sock.listen(backlog.max(1))?;
    let l = Arc::pin_init(
        pin_init!(Listener { sock, id, work <- new_work!("rsiw::listen") }),
        GFP_KERNEL,
    )?;
    l.sock.attach(l.clone())?;
    Ok(l)
}

/// `iw_destroy_listen`.
pub fn destroy_listen(l: Arc<Listener>) {
    l.sock.detach();
}
