// SPDX-License-Identifier: GPL-2.0

//! The receive state of a QP, behind its `rx` lock: the deframer, with CRC
//! the MPA-only deframer of the first pass, the sink's state between
//! segments, and the QP's own receive queue's consumer index. The
//! receive engine changes it only through its methods; the consumer index
//! is also used by the flush of the receive queue ([`Qp::flush_rq`]).

use core::sync::atomic::{AtomicBool, Ordering};
use kernel::prelude::*;

use super::actions::Actions;
use super::msg::RecvCompletion;
use super::sink::SinkState;
use crate::kif::{
    crc::KernelCrc32c,
    siw::{Ring, Rqe},
    sock::SockRx,
};
use crate::qp::{details::Traffic, Qp, QpState};
use crate::wire::{
    rdmap::Extensions,
    rx::{Deframer, MpaOnlySink, RxConfig},
};

/// Receive state of a QP.
pub(crate) struct RxState {
    /// The deframer, which drives the placement sink (none before the
    /// connection's start).
    deframer: Option<Deframer<KernelCrc32c>>,
    /// With CRC: the MPA-only deframer that checks each FPDU's CRC before
    /// `deframer` sees any octet of it (see [`super::receive`]).
    verifier: Option<Deframer<KernelCrc32c>>,
    /// What the placement sink keeps between segments.
    sink_state: SinkState,
    /// Next slot of the QP's own receive queue to take. The receive side
    /// is its only consumer besides the flush ([`Qp::flush_rq`]), so it is
    /// kept under this lock rather than the QP's: a Send takes its RQE
    /// without another lock (as siw does).
    rq_get: u32,
    /// What was received and placed.
    received: Traffic,
}

impl RxState {
    /// Idle state (no connection).
    pub(in crate::qp) fn new() -> Self {
        Self {
            deframer: None,
            verifier: None,
            sink_state: SinkState::new(false, Extensions::NONE),
            rq_get: 0,
            received: Traffic::default(),
        }
    }

    /// Sets up receiving on a new connection: the deframer for `cfg`,
    /// with CRC the two passes of verify-first receiving; `await_rtr`
    /// (the connection's [`crate::qp::Conn::await_rtr`]): a peer-to-peer
    /// responder waits for the initiator's RTR.
    pub(super) fn start(&mut self, cfg: RxConfig, await_rtr: &AtomicBool) {
        let (crc, ext) = (cfg.mode.crc, cfg.ext);
        let (verify_cfg, deframe_cfg) = cfg.verify_first();
        self.verifier = crc.then(|| Deframer::new(verify_cfg, KernelCrc32c::new(), 0));
        self.deframer = Some(Deframer::new(
            if crc { deframe_cfg } else { cfg },
            KernelCrc32c::new(),
            0,
        ));
        self.sink_state = SinkState::new(await_rtr.load(Ordering::Acquire), ext);
    }

    /// Feeds received octets of `qp` to the deframer, which places them;
    /// everything to do afterwards is added to `act`.
    pub(super) fn push(&mut self, qp: &Qp, bytes: &[u8], act: &mut Actions) {
        let Some(deframer) = self.deframer.as_mut() else {
            return;
        };
        // After a TERMINATE (RFC 5040 5.3) the deframer delivers nothing
        // more: no placement, no completion, no TERMINATE in answer.
        if deframer.error().is_some() || deframer.terminated() {
            return;
        }
        let (fpdus, payload) = (act.fpdus, act.payload);
        let mut sink = self.sink_state.sink(qp, &mut self.rq_get, act);
        let result = deframer.push(bytes, &mut sink);
        self.received.add(act.fpdus - fpdus, act.payload - payload);
        if let Err(err) = result {
            self.sink_state.fail(deframer.rejected_header(), act, err);
        } else if deframer.fpdus() > 0 && self.sink_state.take_await_rtr() {
            act.rtr = true;
        }
        if deframer.fpdus() > 0 && qp.lockfree.tx_maybe_held() {
            act.release_tx = true;
        }
    }

    /// The first pass of verify-first receiving: lets the MPA-only
    /// deframer check the octets queued in `rx` that it has not seen yet,
    /// without consuming them. Returns how many queued octets the
    /// deframer may take (all without CRC).
    pub(super) fn verify(&mut self, rx: &mut SockRx<'_>) -> usize {
        let (Some(deframer), Some(verifier)) = (self.deframer.as_ref(), self.verifier.as_mut())
        else {
            return usize::MAX;
        };
        if verifier.error().is_none() {
            // The octets of an incomplete FPDU seen in an earlier upcall
            // are still queued, after those of the verified FPDUs the
            // deframer took then.
            let skip = verifier
                .stream_offset()
                .wrapping_sub(deframer.stream_offset());
            let _ = rx.peek(skip as usize, &mut |chunk| {
                verifier.push(chunk, &mut MpaOnlySink).map_err(|_| EINVAL)
            });
        }
        verifier
            .verified_offset()
            .wrapping_sub(deframer.stream_offset()) as usize
    }

    /// After the second pass: the stream of `qp` fails with the first
    /// pass's error once the deframer took every FPDU before the failed
    /// one (unless it failed or ended already).
    pub(super) fn verify_failed(&mut self, qp: &Qp, act: &mut Actions) {
        let (Some(deframer), Some(verifier)) = (self.deframer.as_ref(), self.verifier.as_ref())
        else {
            return;
        };
        let Some(err) = verifier.error() else { return };
        if deframer.error().is_some()
            || deframer.terminated()
            || act.error.is_some()
            || qp.state() != QpState::Rts
        {
            return;
        }
        if deframer.stream_offset() == verifier.verified_offset() {
            // Nothing of the failed FPDU was parsed: no header to copy.
            self.sink_state.forget_header();
            self.sink_state.fail(deframer.rejected_header(), act, err);
        }
    }

    /// The FPDUs and payload octets received so far.
    pub(in crate::qp) fn received(&self) -> Traffic {
        self.received
    }

    /// Takes the next element of the QP's own receive queue `rq`, whose
    /// consumer index is the receive side's (the QP flushes its RQ).
    pub(in crate::qp) fn take_rqe(&mut self, rq: &Ring<Rqe>) -> Option<Rqe> {
        rq.take(&mut self.rq_get)
    }

    /// Ends the receive in progress (the QP is going to error).
    pub(super) fn flush_active(&mut self) -> Option<RecvCompletion> {
        self.sink_state.flush_active()
    }
}
