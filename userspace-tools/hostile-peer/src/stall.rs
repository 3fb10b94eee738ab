// SPDX-License-Identifier: GPL-2.0

//! Scenarios in time: a peer that stops in the middle of a message while
//! the consumer on rsiw deregisters or invalidates the memory the message
//! goes to or comes from. After the deregistration (or the Local
//! Invalidate) completed, not one more octet may be placed into that
//! memory or leave it (the verbs' contract: the consumer may reuse or
//! free the buffer at once).
//!
//! Two consumers:
//!
//! - The canary server (tests/guest/rsiw_canary.c) with its stall MR,
//!   entry (d) of the STag table (`write_split_dereg`,
//!   `read_stalled_dereg`): on SIGUSR1 it deregisters that MR on every
//!   connection, then accepts what the buffer holds as its new contents
//!   (anything placed later is corruption, found when the connection
//!   ends), overwrites it with [`AFTER`] and reports by writing a line to
//!   an acknowledgement file. The test script passes the canary's process
//!   id and that file in `HOSTILE_CANARY_PID` and `HOSTILE_CANARY_ACK`.
//! - The kernel module tests/kmod/rsiw_frmr_test.c (`frmr_write_split_inval`,
//!   `frmr_read_stalled_dereg`): a kernel rdma_cm server whose memory is
//!   a fast registration MR, named in its MPA Reply's private data. Writing
//!   `invalidate` to its parameter `ctl` posts a Local Invalidate and
//!   returns once it completed, `dereg` deregisters the MR (ib_dereg_mr);
//!   the module then keeps a copy of the buffer and overwrites it with
//!   [`AFTER`] (as a ULP that reuses the pages); `check` compares the
//!   buffer with the copy and counts a corrupted one in the parameter
//!   `corrupt`. `HOSTILE_FRMR_PARAMS` names its parameter directory
//!   (default [`FRMR_PARAMS`]). The Read uses `dereg`: a Local Invalidate
//!   goes through the send queue, whose work requests rsiw (as siw) takes
//!   only after the Read Response in progress, so it cannot end the
//!   registration in the middle of one (it waits for as long as the peer
//!   keeps its window closed).

use std::path::PathBuf;
use std::thread::sleep;
use std::time::{Duration, Instant};

use rsiw_wire::error::{DdpError, RdmapError};
use rsiw_wire::rdmap::{Opcode, ReadRequest};

use crate::frames::{self, ReqSpec};
use crate::peer::{code_str, Peer};
use crate::scenarios::{establish_pdata, with_table_as, Ctx, Outcome, TableMr};

/// What the consumer writes into the stalled memory right after its
/// deregistration or invalidation completed.
pub const AFTER: u8 = 0xbb;
/// What we write into the stall MR before we read it.
const BEFORE: u8 = 0x11;
/// The parameters of tests/kmod/rsiw_frmr_test.ko.
const FRMR_PARAMS: &str = "/sys/module/rsiw_frmr_test/parameters";

/// The consumer on rsiw that owns the stalled memory.
enum Consumer {
    /// The canary server: its process and acknowledgement file.
    Canary { pid: i32, ack: PathBuf },
    /// The kernel module: its parameter directory, what ends the
    /// registration (`invalidate` or `dereg`, written to `ctl`) and its
    /// count of corrupted buffers before.
    Kmod {
        dir: PathBuf,
        how: &'static str,
        corrupt: u64,
    },
}

impl Consumer {
    fn canary_from_env() -> Result<Self, String> {
        let pid = std::env::var("HOSTILE_CANARY_PID")
            .ok()
            .and_then(|v| v.parse().ok())
            .ok_or("needs the canary server's pid in HOSTILE_CANARY_PID")?;
        let ack = std::env::var("HOSTILE_CANARY_ACK")
            .map_err(|_| "needs the canary's acknowledgement file in HOSTILE_CANARY_ACK")?;
        Ok(Self::Canary {
            pid,
            ack: PathBuf::from(ack),
        })
    }

    /// The kernel module's parameter directory.
    fn kmod_dir() -> PathBuf {
        PathBuf::from(std::env::var("HOSTILE_FRMR_PARAMS").unwrap_or_else(|_| FRMR_PARAMS.into()))
    }

    /// What ends the memory's registration.
    fn what(&self) -> &'static str {
        match self {
            Self::Canary { .. } => "deregistration",
            Self::Kmod {
                how: "invalidate", ..
            } => "Local Invalidate",
            Self::Kmod { .. } => "deregistration",
        }
    }

    /// A counter of the kernel module.
    fn param(dir: &std::path::Path, name: &str) -> Result<u64, String> {
        let f = dir.join(name);
        std::fs::read_to_string(&f)
            .map_err(|e| format!("{}: {e}", f.display()))?
            .trim()
            .parse()
            .map_err(|e| format!("{}: {e}", f.display()))
    }

    fn ctl(dir: &std::path::Path, cmd: &str) -> Result<(), String> {
        let f = dir.join("ctl");
        std::fs::write(&f, cmd).map_err(|e| format!("echo {cmd} > {}: {e}", f.display()))
    }

    /// Lines in the canary's acknowledgement file (deregistrations done).
    fn acks(ack: &std::path::Path) -> usize {
        std::fs::read_to_string(ack).map_or(0, |s| s.lines().count())
    }

    /// Asks the consumer to deregister (invalidate) the memory and waits
    /// until it says it did (the deregistration returned, the Local
    /// Invalidate completed).
    fn deregister(&self, t: Duration) -> Result<(), String> {
        let (pid, ack) = match self {
            Self::Kmod { dir, how, .. } => return Self::ctl(dir, how),
            Self::Canary { pid, ack } => (*pid, ack),
        };
        let before = Self::acks(ack);
        // SAFETY: a plain signal to a process id.
        if unsafe { libc::kill(pid, libc::SIGUSR1) } != 0 {
            return Err(format!(
                "kill -USR1 {pid}: {}",
                std::io::Error::last_os_error()
            ));
        }
        let end = Instant::now() + t;
        while Instant::now() < end {
            if Self::acks(ack) > before {
                return Ok(());
            }
            sleep(Duration::from_millis(20));
        }
        Err("the canary did not acknowledge the deregistration".into())
    }

    /// Whether the memory is as the consumer left it after the
    /// deregistration. The canary checks at the connection's end (its
    /// verdict is the test script's); the kernel module checks now (or
    /// did when the connection ended).
    fn intact(&self) -> Result<(), String> {
        let Self::Kmod { dir, corrupt, .. } = self else {
            return Ok(());
        };
        Self::ctl(dir, "check")?;
        if Self::param(dir, "corrupt")? > *corrupt {
            return Err(
                "the kernel module's buffer changed after its MR's registration ended (rsiw placed into invalidated memory; see the kernel log)"
                    .into(),
            );
        }
        Ok(())
    }
}

/// The stall MR of a connection's STag table, and the connection (with
/// a receive buffer of `rcvbuf` octets, if given).
fn with_stall_mr(ctx: &Ctx, rcvbuf: Option<i32>) -> Result<(Peer, TableMr, Consumer), String> {
    let canary = Consumer::canary_from_env()?;
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

/// A connection to the kernel module and its fast registration MR (from
/// the Reply's private data: address be64, STag be32, length be32), once
/// the module registered it; `how` ends the registration (see [`Consumer`]).
fn with_frmr(
    ctx: &Ctx,
    rcvbuf: Option<i32>,
    how: &'static str,
) -> Result<(Peer, TableMr, Consumer), String> {
    let dir = Consumer::kmod_dir();
    let before = Consumer::param(&dir, "registered")?;
    let corrupt = Consumer::param(&dir, "corrupt")?;
    let req = ReqSpec {
        rcvbuf,
        ..ReqSpec::default()
    };
    let (p, pd) = establish_pdata(ctx, &req)?;
    let (Some(a), Some(s), Some(l)) = (pd.get(0..8), pd.get(8..12), pd.get(12..16)) else {
        return Err(format!(
            "the Reply's private data ({} octets) does not name an MR",
            pd.len()
        ));
    };
    let mr = TableMr {
        addr: u64::from_be_bytes(a.try_into().unwrap()),
        stag: u32::from_be_bytes(s.try_into().unwrap()),
        len: u32::from_be_bytes(l.try_into().unwrap()),
    };
    // The module registers the MR once the connection is established.
    let end = Instant::now() + ctx.t;
    while Consumer::param(&dir, "registered")? == before {
        if Instant::now() > end {
            return Err("the kernel module did not register its MR".into());
        }
        sleep(Duration::from_millis(20));
    }
    Ok((p, mr, Consumer::Kmod { dir, how, corrupt }))
}

/// A connection to the kernel module and its fast registration MR, once
/// the module registered it (for scenarios that leave the MR alone).
pub(crate) fn frmr_registered(ctx: &Ctx) -> Result<(Peer, TableMr), String> {
    let (p, mr, _) = with_frmr(ctx, None, "none")?;
    Ok((p, mr))
}

/// An RDMA Write segment cut in two: its first half is placed, then the
/// canary deregisters the MR, then the rest arrives. See [`write_split`].
pub fn write_split_dereg(ctx: &Ctx) -> Outcome {
    write_split(ctx, with_stall_mr(ctx, None)?)
}

/// [`write_split_dereg`] with the kernel module's fast registration MR,
/// which it invalidates (Local Invalidate) in the middle.
pub fn frmr_write_split_inval(ctx: &Ctx) -> Outcome {
    write_split(ctx, with_frmr(ctx, None, "invalidate")?)
}

/// An RDMA Write segment cut in two: its first half is placed, then the
/// consumer deregisters (invalidates) the MR, then the rest arrives.
/// Expect the invalid STag TERMINATE (RFC 5041: the STag is no longer
/// valid) and nothing of the second half placed (the consumer checks its
/// buffer).
fn write_split(ctx: &Ctx, (mut p, mr, consumer): (Peer, TableMr, Consumer)) -> Outcome {
    let what = consumer.what();
    let len = (mr.len as usize).min(60000);
    let h = frames::write_hdr(mr.stag, mr.addr);
    let f = p.fpdu(&h, &vec![0x22; len]);
    let half = f.len() / 2;
    p.send_raw(&f[..half])?;
    // rsiw places what arrives without CRC as it comes
    sleep(Duration::from_millis(500));
    consumer.deregister(ctx.t)?;
    p.send_raw(&f[half..])?;
    p.observe(ctx.t, |p| p.first_term().is_some());
    consumer
        .intact()
        .map_err(|e| format!("{e}; received: {}", p.summary()))?;
    let Some(t) = p.first_term().and_then(|s| s.term()) else {
        return Err(format!(
            "no TERMINATE for the rest of a Write after the {what} of its MR: {}",
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

/// An RDMA Read of the canary's whole stall MR, received slowly, while
/// the canary deregisters the MR. See [`read_stalled`].
pub fn read_stalled_dereg(ctx: &Ctx) -> Outcome {
    // A window of a few KiB: the 512 KiB response cannot all fit into
    // TCP's buffers on the way.
    read_stalled(ctx, with_stall_mr(ctx, Some(4096))?)
}

/// [`read_stalled_dereg`] with the kernel module's fast registration MR,
/// which it deregisters (ib_dereg_mr) while the Read Response waits for
/// our window.
pub fn frmr_read_stalled_dereg(ctx: &Ctx) -> Outcome {
    read_stalled(ctx, with_frmr(ctx, Some(4096), "dereg")?)
}

/// An RDMA Read of the whole MR that we receive slowly (our receive
/// window closes): the consumer deregisters (invalidates) the MR while
/// rsiw is in the middle of the Read Response and then overwrites the
/// buffer with [`AFTER`]. Every octet that reaches us must be from before
/// (our own [`BEFORE`] written into it first); the response stops with a
/// TERMINATE (or the connection closes).
fn read_stalled(ctx: &Ctx, (mut p, mr, consumer): (Peer, TableMr, Consumer)) -> Outcome {
    let what = consumer.what();
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
    consumer.deregister(ctx.t)?;
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
            "Read Response octet {at} of {got} is not what the memory held before its {what} (0x{AFTER:02x} is what the consumer wrote after): {}",
            p.summary()
        ));
    }
    if got >= mr.len as usize {
        return Err(format!(
            "the whole Read Response ({got} octets) came; the test needs it to stall (a larger stall MR?)"
        ));
    }
    consumer.intact()?;
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
                "{got} of {} octets (all from before the {what}), then TERMINATE",
                mr.len
            ))
        }
        None if p.end.closed() => Ok(format!(
            "{got} of {} octets (all from before the {what}), then the connection closed",
            mr.len
        )),
        None => Err(format!(
            "{got} of {} octets, then neither a TERMINATE nor a close: {}",
            mr.len,
            p.summary()
        )),
    }
}
