// SPDX-License-Identifier: GPL-2.0

//! The MPA Request/Reply exchange on the socket (RFC 5044 section 7.1,
//! RFC 6581): reading the peer's frame, octet-exact, into what the
//! endpoint learns from it ([`Peer`]); sending ours; and the LLP TERMINATE
//! that ends a setup the initiator cannot go on with.

use kernel::{prelude::*, sync::Arc};

use crate::kif::crc::KernelCrc32c;
use crate::kif::sock::{Socket, TcpState};
use crate::wire::connect::{encode_rr, FrameKind, IrdOrd, MpaRr, RrFrame, RrParser, MAX_PD_LEN};
use crate::wire::error::LlpError;
use crate::wire::mpa::MpaMode;
use crate::wire::term::build_terminate;
use crate::wire::tx::encode_fpdu;

use super::phase::{Exchange, Phase};
use super::Cep;

/// What the endpoint learned from the peer's MPA Request or Reply.
pub(super) struct Peer {
    /// The frame's MPA revision.
    pub(super) revision: u8,
    /// The frame has RFC 6581 IRD/ORD data.
    pub(super) enhanced: bool,
    /// The M flag: the peer wants markers in the FPDUs it receives.
    pub(super) markers: bool,
    /// The C flag: the peer wants CRC.
    pub(super) crc: bool,
    /// The IRD/ORD data, if any.
    pub(super) ird_ord: Option<IrdOrd>,
    /// The peer takes FPDUs larger than a TCP segment.
    pub(super) large_fpdu: bool,
    /// The peer's private data.
    pub(super) pdata: KVec<u8>,
}

impl Peer {
    /// What the complete frame `f` says (its private data copied).
    fn new(f: &RrFrame<'_>) -> Result<Self> {
        let mut pdata = KVec::new();
        pdata.extend_from_slice(f.pdata, GFP_KERNEL)?;
        Ok(Self {
            revision: f.hdr.revision,
            enhanced: f.hdr.has_ird_ord(),
            markers: f.hdr.markers,
            crc: f.hdr.crc,
            ird_ord: f.ird_ord,
            large_fpdu: f.hdr.large_fpdu(),
            pdata,
        })
    }
}

impl Exchange {
    /// A new exchange on `sock`, reading a frame of kind `expect` (the
    /// timeout is armed once the endpoint exists).
    pub(super) fn new(sock: Socket, expect: FrameKind) -> Self {
        Self {
            timeout: None,
            sock,
            parser: RrParser::new(Some(expect), MAX_PD_LEN),
        }
    }

    /// Reads what the frame still needs. Once it is complete, stops the
    /// timeout and returns what the peer said and the frame's Reject flag;
    /// `None` while more is to come. `terminate`: an initiator, whose
    /// Request asked for CRC or not.
    pub(super) fn read(&mut self, terminate: Option<bool>) -> Result<Option<(Peer, bool)>> {
        if !self.fill(terminate)? {
            return Ok(None);
        }
        let Some(f) = self.parser.frame() else {
            return Ok(None);
        };
        if let Some(t) = self.timeout.take() {
            t.cancel();
        }
        Ok(Some((Peer::new(&f)?, f.hdr.reject)))
    }

    /// Hands the parser what the socket has, never more than the frame
    /// still needs (what follows it is the first FPDU, for the QP).
    /// `Ok(false)`: the socket has nothing more for now. A frame that
    /// cannot be parsed is `EPROTO`; an initiator (`terminate`: whether
    /// its Request asked for CRC) first answers it with the LLP TERMINATE.
    fn fill(&mut self, terminate: Option<bool>) -> Result<bool> {
        let mut buf = [0u8; 64];
        loop {
            let want = self.parser.wanted().min(buf.len());
            if want == 0 {
                return Ok(true);
            }
            let n = match self.sock.recv(&mut buf[..want]) {
                Ok(0) => return Err(crate::kif::compat::error::econnreset()),
                Ok(n) => n,
                Err(e) if e == EAGAIN => {
                    return match self.sock.state() {
                        TcpState::Established => Ok(false),
                        _ => Err(crate::kif::compat::error::econnreset()),
                    };
                }
                Err(e) => return Err(e),
            };
            match self.parser.push(&buf[..n]) {
                Ok((_, true)) => return Ok(true),
                Ok((_, false)) => {}
                Err(e) => {
                    // A Reply we cannot parse (key, revision, PD_Length)
                    // gets the LLP TERMINATE before the close, as siw
                    // answers a wrong key; no markers (none were agreed),
                    // CRC as our Request asked.
                    if let Some(crc) = terminate {
                        crate::peer_warn!("invalid MPA Reply: {:?}\n", e);
                        let mode = MpaMode {
                            markers: false,
                            crc,
                        };
                        send_setup_terminate(&self.sock, mode, LlpError::InvalidRequestReply(e));
                    }
                    return Err(crate::kif::compat::error::eproto());
                }
            }
        }
    }
}

impl Phase {
    /// Reads what the peer's MPA frame still needs; a complete frame goes
    /// to [`Phase::on_request`] (responder) or [`Phase::on_reply`]
    /// (initiator). A failure ends the exchange ([`Phase::fail`]).
    pub(super) fn read_mpa(&mut self, cep: &Arc<Cep>) {
        if let Err(e) = self.try_read_mpa(cep) {
            pr_debug!("MPA exchange failed: {:?}\n", e);
            self.fail(e);
        }
    }

    fn try_read_mpa(&mut self, cep: &Arc<Cep>) -> Result {
        let terminate = match self {
            Phase::AwaitReply(o) => Some(o.offer.crc),
            _ => None,
        };
        let Some(mpa) = self.exchange() else {
            return Ok(());
        };
        let Some((peer, reject)) = mpa.read(terminate)? else {
            return Ok(());
        };
        match terminate {
            Some(_) => self.on_reply(cep, peer, reject),
            None => self.on_request(cep, peer),
        }
    }
}

/// Connection setup failed at the Reply (it cannot be parsed; RFC 6581:
/// no matching RTR, insufficient IRD): sends the LLP TERMINATE, without
/// header copies, as the first FPDU of the stream in `mode`. Best effort:
/// the connection is closed next either way.
pub(super) fn send_setup_terminate(sock: &Socket, mode: MpaMode, e: LlpError) {
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
pub(super) fn send_rr(sock: &Socket, hdr: MpaRr, ird_ord: Option<IrdOrd>, pdata: &[u8]) -> Result {
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
