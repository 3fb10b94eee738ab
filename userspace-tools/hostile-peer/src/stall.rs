//! Scenarios in time: a peer that stops in the middle of a message while
//! the consumer on rsiw deregisters the memory the message goes to or
//! comes from. After the deregistration returned, not one more octet may
//! be placed into that memory or leave it (the verbs' contract: the
//! application may reuse or free the buffer at once).
//!
//! The consumer is the canary server (tests/guest/rsiw_canary.c) with its
//! stall MR, entry (d) of the STag table: on SIGUSR1 it deregisters that
//! MR on every connection, then accepts what the buffer holds as its new
//! contents (anything placed later is corruption, found when the
//! connection ends), overwrites it with [`AFTER`] and reports by writing
//! a line to an acknowledgement file. The test script passes the canary's
//! process id and that file in `HOSTILE_CANARY_PID` and
//! `HOSTILE_CANARY_ACK`.

use std::path::PathBuf;
use std::thread::sleep;
use std::time::{Duration, Instant};

use rsiw_wire::error::{DdpError, RdmapError};
use rsiw_wire::rdmap::{Opcode, ReadRequest};

use crate::frames::{self, ReqSpec};
use crate::peer::{code_str, Peer};
use crate::scenarios::{with_table_as, Ctx, Outcome, TableMr};

/// What the canary writes into the stall MR's buffer right after its
/// deregistration returned.
pub const AFTER: u8 = 0xbb;
/// What we write into the stall MR before we read it.
const BEFORE: u8 = 0x11;

/// The canary server's control: its process and acknowledgement file.
struct Canary {
    pid: i32,
    ack: PathBuf,
}

impl Canary {
    fn from_env() -> Result<Self, String> {
        let pid = std::env::var("HOSTILE_CANARY_PID")
            .ok()
            .and_then(|v| v.parse().ok())
            .ok_or("needs the canary server's pid in HOSTILE_CANARY_PID")?;
        let ack = std::env::var("HOSTILE_CANARY_ACK")
            .map_err(|_| "needs the canary's acknowledgement file in HOSTILE_CANARY_ACK")?;
        Ok(Self {
            pid,
            ack: PathBuf::from(ack),
        })
    }

    /// Lines in the acknowledgement file (deregistrations done).
    fn acks(&self) -> usize {
        std::fs::read_to_string(&self.ack).map_or(0, |s| s.lines().count())
    }

    /// Asks the canary to deregister its stall MRs and waits until it
    /// says it did (the deregistration returned).
    fn deregister(&self, t: Duration) -> Result<(), String> {
        let before = self.acks();
        // SAFETY: a plain signal to a process id.
        if unsafe { libc::kill(self.pid, libc::SIGUSR1) } != 0 {
            return Err(format!(
                "kill -USR1 {}: {}",
                self.pid,
                std::io::Error::last_os_error()
            ));
        }
        let end = Instant::now() + t;
        while Instant::now() < end {
            if self.acks() > before {
                return Ok(());
            }
            sleep(Duration::from_millis(20));
        }
        Err("the canary did not acknowledge the deregistration".into())
    }
}

/// The stall MR of a connection's STag table, and the connection (with
/// a receive buffer of `rcvbuf` octets, if given).
fn with_stall_mr(ctx: &Ctx, rcvbuf: Option<i32>) -> Result<(Peer, TableMr, Canary), String> {
    let canary = Canary::from_env()?;
    let req = ReqSpec {
        rcvbuf,
        ..ReqSpec::default()
    };
    let (p, t) = with_table_as(ctx, &req)?;
    let mr = t
        .stall
        .ok_or("the canary's STag table has no stall MR (entry d)")?;
    Ok((p, mr, canary))
}

/// An RDMA Write segment cut in two: its first half is placed, then the
/// consumer deregisters the MR, then the rest arrives. Expect the invalid
/// STag TERMINATE (RFC 5041: the STag is no longer valid) and nothing of
/// the second half placed (the canary checks its buffer).
pub fn write_split_dereg(ctx: &Ctx) -> Outcome {
    let (mut p, mr, canary) = with_stall_mr(ctx, None)?;
    let len = (mr.len as usize).min(60000);
    let h = frames::write_hdr(mr.stag, mr.addr);
    let f = p.fpdu(&h, &vec![0x22; len]);
    let half = f.len() / 2;
    p.send_raw(&f[..half])?;
    // rsiw places what arrives without CRC as it comes
    sleep(Duration::from_millis(500));
    canary.deregister(ctx.t)?;
    p.send_raw(&f[half..])?;
    p.observe(ctx.t, |p| p.first_term().is_some());
    let Some(t) = p.first_term().and_then(|s| s.term()) else {
        return Err(format!(
            "no TERMINATE for the rest of a Write after its MR was deregistered: {}",
            p.summary()
        ));
    };
    let want = rsiw_wire::error::ProtocolError::from(DdpError::TaggedInvalidStag).term_code();
    if t.code != want {
        return Err(format!(
            "TERMINATE {} (expected {})",
            code_str(t.code),
            code_str(want)
        ));
    }
    Ok("the rest of the Write drew the invalid STag TERMINATE".into())
}

/// An RDMA Read of the whole stall MR that we receive slowly (our receive
/// window closes): the consumer deregisters the MR while rsiw is in the
/// middle of the Read Response and then overwrites the buffer with
/// [`AFTER`]. Every octet that reaches us must be from before (our own
/// [`BEFORE`] written into it first); the response stops with a TERMINATE
/// (or the connection closes).
pub fn read_stalled_dereg(ctx: &Ctx) -> Outcome {
    // A window of a few KiB: the 512 KiB response cannot all fit into
    // TCP's buffers on the way.
    let (mut p, mr, canary) = with_stall_mr(ctx, Some(4096))?;
    // Our own contents first: a Write of BEFORE over the whole MR (several
    // FPDUs), then a Read Request for all of it.
    let mut off = 0u32;
    while off < mr.len {
        let n = (mr.len - off).min(16384);
        let h = frames::write_hdr(mr.stag, mr.addr + u64::from(off));
        p.send_fpdu(&h, &vec![BEFORE; n as usize])?;
        off += n;
    }
    let rr = ReadRequest {
        sink_stag: 0x1234_5600,
        sink_to: 0,
        size: mr.len,
        src_stag: mr.stag,
        src_to: mr.addr,
    };
    p.send_fpdu(&frames::read_request_hdr(1, rr), &[])?;
    // We do not read: TCP's window closes and rsiw's Read Response stops
    // with most of it still to send.
    sleep(Duration::from_millis(1500));
    canary.deregister(ctx.t)?;
    p.observe(ctx.t * 2, |p| p.first_term().is_some());
    let resp: Vec<&[u8]> = p
        .segs()
        .iter()
        .filter(|s| s.hdr.opcode == Opcode::ReadResponse)
        .map(|s| s.payload.as_slice())
        .collect();
    let got: usize = resp.iter().map(|s| s.len()).sum();
    if let Some(at) = resp
        .iter()
        .flat_map(|s| s.iter())
        .position(|&b| b != BEFORE)
    {
        return Err(format!(
            "Read Response octet {at} of {got} is not what the memory held before its deregistration (0x{AFTER:02x} is what the consumer wrote after): {}",
            p.summary()
        ));
    }
    if got >= mr.len as usize {
        return Err(format!(
            "the whole Read Response ({got} octets) came; the test needs it to stall (a larger stall MR?)"
        ));
    }
    match p.first_term().and_then(|s| s.term()) {
        Some(t) => {
            let want = rsiw_wire::error::ProtocolError::from(RdmapError::InvalidStag).term_code();
            if t.code != want {
                return Err(format!(
                    "TERMINATE {} (expected {})",
                    code_str(t.code),
                    code_str(want)
                ));
            }
            Ok(format!(
                "{got} of {} octets (all from before the deregistration), then TERMINATE",
                mr.len
            ))
        }
        None if p.end.closed() => Ok(format!(
            "{got} of {} octets (all from before the deregistration), then the connection closed",
            mr.len
        )),
        None => Err(format!(
            "{got} of {} octets, then neither a TERMINATE nor a close: {}",
            mr.len,
            p.summary()
        )),
    }
}
