// SPDX-License-Identifier: GPL-2.0

//! One TCP connection to the target: MPA exchange, FPDU transmission with
//! the right stream offsets, and observation of what comes back (MPA Reply,
//! FPDUs deframed by the wire core, TERMINATE, close).

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use rsiw_wire::connect::{FrameKind, IrdOrd, MpaRr, RrParser};
use rsiw_wire::error::{ProtocolError, TermCode};
use rsiw_wire::mpa::MpaMode;
use rsiw_wire::rdmap::{Body, Opcode, ReadRequest, SegmentHeader};
use rsiw_wire::rx::{CrcVerdict, Deframer, RxConfig, RxSink};
use rsiw_wire::term::TermHdr;
use rsiw_wire::HostCrc32c;

use crate::frames::{self, ReqSpec};

/// How the connection ended (so far).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// Still open when we stopped looking.
    Open,
    /// Orderly close (FIN) by the target.
    Eof,
    /// Reset by the target.
    Reset,
    /// Another socket error.
    Error(String),
}

impl End {
    pub fn closed(&self) -> bool {
        matches!(self, End::Eof | End::Reset)
    }
}

/// A received DDP segment.
#[derive(Clone, Debug)]
pub struct Seg {
    pub hdr: SegmentHeader,
    pub raw: Vec<u8>,
    pub payload: Vec<u8>,
}

impl Seg {
    /// The TERMINATE control word in RFC layout, if this is a TERMINATE.
    pub fn term(&self) -> Option<TermHdr> {
        match self.hdr.body {
            Body::Terminate(t) => Some(t),
            _ => None,
        }
    }
    pub fn read_request(&self) -> Option<ReadRequest> {
        match self.hdr.body {
            Body::ReadRequest(r) => Some(r),
            _ => None,
        }
    }
}

#[derive(Default)]
struct Sink {
    segs: Vec<Seg>,
    cur: Option<Seg>,
}

impl RxSink for Sink {
    fn on_header(&mut self, h: &SegmentHeader, raw: &[u8], _l: u16) -> Result<(), ProtocolError> {
        self.cur = Some(Seg {
            hdr: *h,
            raw: raw.to_vec(),
            payload: Vec::new(),
        });
        Ok(())
    }
    fn on_payload(&mut self, _o: u32, d: &[u8]) -> Result<(), ProtocolError> {
        if let Some(c) = self.cur.as_mut() {
            c.payload.extend_from_slice(d);
        }
        Ok(())
    }
    fn on_fpdu_end(&mut self, _h: &SegmentHeader, _v: CrcVerdict) -> Result<(), ProtocolError> {
        if let Some(c) = self.cur.take() {
            self.segs.push(c);
        }
        Ok(())
    }
}

/// What an MPA exchange produced.
#[derive(Debug)]
pub enum MpaOutcome {
    /// A complete frame (a Reply, or a Request in listener mode).
    Reply {
        hdr: MpaRr,
        ird_ord: Option<IrdOrd>,
        /// Private data after the IRD/ORD data.
        pdata: Vec<u8>,
    },
    /// Octets that do not parse as the expected frame.
    Invalid(String),
    /// Nothing (the connection ended or the timeout expired first).
    Nothing(End),
}

impl std::fmt::Display for MpaOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MpaOutcome::Reply { hdr, .. } => write!(
                f,
                "MPA {:?} rev {} M={} C={} R={} PD_Length {}",
                hdr.kind,
                hdr.revision,
                hdr.markers as u8,
                hdr.crc as u8,
                hdr.reject as u8,
                hdr.pd_len
            ),
            MpaOutcome::Invalid(s) => write!(f, "invalid frame: {s}"),
            MpaOutcome::Nothing(e) => write!(f, "no frame, connection {}", end_str(e)),
        }
    }
}

pub fn end_str(e: &End) -> String {
    match e {
        End::Open => "still open".into(),
        End::Eof => "closed (FIN)".into(),
        End::Reset => "reset (RST)".into(),
        End::Error(s) => format!("error {s}"),
    }
}

pub fn code_str(t: TermCode) -> String {
    let name = if (t.layer, t.etype, t.code) == (2, 0, 3) {
        "MPA: FPDU framing error (marker or ULPDU_Length)"
    } else {
        ProtocolError::from_term_code(t).map_or("unregistered", |e| e.name())
    };
    format!(
        "layer {} etype {} code {:#04x} ({name})",
        t.layer, t.etype, t.code
    )
}

pub struct Peer {
    pub sock: TcpStream,
    pub tx_mode: MpaMode,
    pub tx_off: u32,
    pub rx: Option<Deframer<HostCrc32c>>,
    sink: Sink,
    pub rx_error: Option<ProtocolError>,
    pub end: End,
    /// Octets received after the MPA Reply.
    pub rx_bytes: usize,
    /// MSN of our next Send (starts at 1).
    pub send_msn: u32,
}

impl Peer {
    pub fn connect(target: SocketAddr) -> Result<Self, String> {
        let sock = TcpStream::connect_timeout(&target, Duration::from_secs(5))
            .map_err(|e| format!("connect to {target}: {e}"))?;
        Ok(Self::from_stream(sock))
    }

    /// Connects with a receive buffer of about `rcvbuf` octets, set
    /// before the handshake so that the window we offer stays that small:
    /// a peer that does not read closes its window soon.
    pub fn connect_small_window(target: SocketAddr, rcvbuf: i32) -> Result<Self, String> {
        use std::os::fd::FromRawFd;
        let SocketAddr::V4(v4) = target else {
            return Err("connect_small_window: IPv4 only".into());
        };
        // SAFETY: plain socket calls on a descriptor we own; the address
        // and option are correctly sized; the descriptor goes to the
        // TcpStream, which closes it.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
            if fd < 0 {
                return Err(format!("socket: {}", std::io::Error::last_os_error()));
            }
            let stream = TcpStream::from_raw_fd(fd);
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                &rcvbuf as *const i32 as *const libc::c_void,
                std::mem::size_of::<i32>() as libc::socklen_t,
            );
            let sa = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(*v4.ip()).to_be(),
                },
                sin_zero: [0; 8],
            };
            let r = libc::connect(
                fd,
                &sa as *const libc::sockaddr_in as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            );
            if r != 0 {
                return Err(format!(
                    "connect to {target}: {}",
                    std::io::Error::last_os_error()
                ));
            }
            Ok(Self::from_stream(stream))
        }
    }

    /// A peer on an established (e.g. accepted) connection.
    pub fn from_stream(sock: TcpStream) -> Self {
        sock.set_nodelay(true).ok();
        Self {
            sock,
            tx_mode: MpaMode::default(),
            tx_off: 0,
            rx: None,
            sink: Sink::default(),
            rx_error: None,
            end: End::Open,
            rx_bytes: 0,
            send_msn: 1,
        }
    }

    pub fn send_raw(&mut self, b: &[u8]) -> Result<(), String> {
        self.sock.write_all(b).map_err(|e| format!("send: {e}"))
    }

    /// Sends an MPA Request and waits up to `t` for the Reply (reading no
    /// octet past it).
    pub fn mpa(&mut self, req: &ReqSpec, t: Duration) -> Result<MpaOutcome, String> {
        self.send_raw(&frames::mpa_request(req))?;
        self.read_reply(t)
    }

    pub fn read_reply(&mut self, t: Duration) -> Result<MpaOutcome, String> {
        self.read_rr(FrameKind::Reply, t)
    }

    /// Waits up to `t` for a Request or Reply frame (reading no octet past
    /// it).
    pub fn read_rr(&mut self, kind: FrameKind, t: Duration) -> Result<MpaOutcome, String> {
        let deadline = Instant::now() + t;
        let mut p = RrParser::new(Some(kind), 512);
        let mut buf = [0u8; 532];
        loop {
            let want = p.wanted();
            if want == 0 {
                break;
            }
            match self.read_some(&mut buf[..want], deadline) {
                Ok(0) => return Ok(MpaOutcome::Nothing(self.end.clone())),
                Ok(n) => {
                    if let Err(e) = p.push(&buf[..n]) {
                        return Ok(MpaOutcome::Invalid(format!("{e:?}")));
                    }
                }
                Err(e) => return Err(e),
            }
        }
        let f = p.frame().ok_or("reply parser incomplete")?;
        Ok(MpaOutcome::Reply {
            hdr: f.hdr,
            ird_ord: f.ird_ord,
            pdata: f.pdata.to_vec(),
        })
    }

    /// Reads what is there; 0 with `self.end` set on close/timeout.
    fn read_some(&mut self, buf: &mut [u8], deadline: Instant) -> Result<usize, String> {
        loop {
            let now = Instant::now();
            if now >= deadline {
                self.end = End::Open;
                return Ok(0);
            }
            self.sock
                .set_read_timeout(Some((deadline - now).max(Duration::from_millis(1))))
                .ok();
            match self.sock.read(buf) {
                Ok(0) => {
                    self.end = End::Eof;
                    return Ok(0);
                }
                Ok(n) => return Ok(n),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    continue
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::ConnectionReset => {
                    self.end = End::Reset;
                    return Ok(0);
                }
                Err(e) => {
                    self.end = End::Error(e.to_string());
                    return Ok(0);
                }
            }
        }
    }

    /// Full operation phase with these modes (our TX, our RX).
    pub fn start_fpdus(&mut self, tx: MpaMode, rx: MpaMode) {
        self.tx_mode = tx;
        self.tx_off = 0;
        // (everything the target sends is watched, also after a
        // TERMINATE: a second one is an error to report)
        let cfg = RxConfig {
            stop_at_terminate: false,
            ..RxConfig::new(rx)
        };
        self.rx = Some(Deframer::new(cfg, HostCrc32c::new(), 0));
    }

    /// Frames and sends one FPDU at the current stream offset.
    pub fn send_fpdu(&mut self, hdr: &[u8], payload: &[u8]) -> Result<(), String> {
        let f = self.fpdu(hdr, payload);
        self.send_raw(&f)
    }

    /// Frames one FPDU at the current stream offset and advances it.
    pub fn fpdu(&mut self, hdr: &[u8], payload: &[u8]) -> Vec<u8> {
        let f = frames::fpdu(self.tx_mode, self.tx_off, hdr, payload);
        self.tx_off = self.tx_off.wrapping_add(f.len() as u32);
        f
    }

    /// A valid Send with the next MSN.
    pub fn next_send(&mut self, payload: &[u8]) -> Vec<u8> {
        let h = frames::send_hdr(self.send_msn);
        self.send_msn += 1;
        self.fpdu(&h, payload)
    }

    pub fn segs(&self) -> &[Seg] {
        &self.sink.segs
    }

    pub fn first_term(&self) -> Option<&Seg> {
        self.sink
            .segs
            .iter()
            .find(|s| s.hdr.opcode == Opcode::Terminate)
    }

    /// Reads and deframes until `stop` holds, the connection ends or `t`
    /// expires. Returns whether `stop` held.
    pub fn observe(&mut self, t: Duration, stop: impl Fn(&Peer) -> bool) -> bool {
        let deadline = Instant::now() + t;
        let mut buf = vec![0u8; 65536];
        loop {
            if stop(self) {
                return true;
            }
            if self.end.closed() || matches!(self.end, End::Error(_)) {
                return false;
            }
            let n = match self.read_some(&mut buf, deadline) {
                Ok(n) => n,
                Err(_) => return false,
            };
            if n == 0 {
                return stop(self);
            }
            self.rx_bytes += n;
            if self.rx_error.is_none() {
                if let Some(d) = self.rx.as_mut() {
                    if let Err(e) = d.push(&buf[..n], &mut self.sink) {
                        self.rx_error = Some(e);
                    }
                }
            }
        }
    }

    /// Waits for the target to close the connection.
    pub fn wait_close(&mut self, t: Duration) -> bool {
        self.observe(t, |p| p.end.closed())
    }

    /// Resets the connection (SO_LINGER 0, close).
    pub fn reset(self) {
        use std::os::fd::AsRawFd;
        let l = libc::linger {
            l_onoff: 1,
            l_linger: 0,
        };
        // SAFETY: a valid socket descriptor and a correctly sized option.
        unsafe {
            libc::setsockopt(
                self.sock.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_LINGER,
                &l as *const libc::linger as *const libc::c_void,
                std::mem::size_of::<libc::linger>() as libc::socklen_t,
            );
        }
        drop(self.sock);
    }

    /// A short account of everything received.
    /// (A run of one kind of FPDU shows once, counted: "RDMA_READ_RESP x 40".)
    pub fn summary(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut run = 1;
        for (i, s) in self.sink.segs.iter().enumerate() {
            let part = match s.term() {
                Some(t) => format!("TERMINATE {}", code_str(t.code)),
                None => s.hdr.opcode.name().to_string(),
            };
            let next = self.sink.segs.get(i + 1);
            if next.is_some_and(|n| n.term().is_none() && n.hdr.opcode == s.hdr.opcode) {
                run += 1;
                continue;
            }
            parts.push(if run > 1 {
                format!("{part} x {run}")
            } else {
                part
            });
            run = 1;
        }
        if let Some(e) = self.rx_error {
            parts.push(format!("undecodable stream ({})", e.name()));
        }
        if parts.is_empty() {
            parts.push("no FPDU".into());
        }
        format!("{}; connection {}", parts.join(", "), end_str(&self.end))
    }
}
