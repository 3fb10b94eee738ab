// SPDX-License-Identifier: GPL-2.0

//! What a QP shows an operator: the terms its connection negotiated, the
//! traffic of each direction and its last TERMINATE, as the driver details
//! of its resource entry (`rdma resource show qp -dd`).

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{c_str, prelude::*};

use super::Qp;
use crate::base::stats;
use crate::kif::{rdma::restrack::ResDetails, trace};
use crate::wire::error::TermCode;

/// FPDUs and payload octets of one direction of a QP's stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Traffic {
    /// FPDUs.
    pub(crate) fpdus: u64,
    /// Payload octets (DDP segment payload, headers and MPA framing not
    /// counted).
    pub(crate) payload: u64,
}

impl Traffic {
    /// Counts `fpdus` more FPDUs carrying `payload` octets.
    pub(in crate::qp) fn add(&mut self, fpdus: u64, payload: u64) {
        self.fpdus = self.fpdus.wrapping_add(fpdus);
        self.payload = self.payload.wrapping_add(payload);
    }
}

/// The last TERMINATE a QP sent or received, in one word so that either
/// side records it without a lock.
pub(super) struct LastTerm(AtomicU32);

impl LastTerm {
    const VALID: u32 = 1 << 31;
    const RECEIVED: u32 = 1 << 30;

    /// None yet.
    pub(in crate::qp) const fn new() -> Self {
        Self(AtomicU32::new(0))
    }

    /// Records a TERMINATE with `code`, `received` or queued to be sent.
    pub(in crate::qp) fn set(&self, received: bool, code: TermCode) {
        let dir = if received { Self::RECEIVED } else { 0 };
        let v = Self::VALID
            | dir
            | u32::from(code.layer & 0xf) << 16
            | u32::from(code.etype & 0xf) << 8
            | u32::from(code.code);
        self.0.store(v, Ordering::Relaxed);
    }

    /// The last TERMINATE: whether it was received, and its code.
    fn get(&self) -> Option<(bool, TermCode)> {
        let v = self.0.load(Ordering::Relaxed);
        (v & Self::VALID != 0).then(|| {
            let code = TermCode {
                layer: (v >> 16) as u8 & 0xf,
                etype: (v >> 8) as u8 & 0xf,
                code: v as u8,
            };
            (v & Self::RECEIVED != 0, code)
        })
    }
}

impl Qp {
    /// Notes a TERMINATE with `code`, `received` or queued to be sent: the
    /// last one for the details, and the `rsiw_terminate` tracepoint.
    pub(in crate::qp) fn note_terminate(&self, received: bool, code: TermCode) {
        self.last_term.set(received, code);
        trace::terminate(self.id(), received, code.layer, code.etype, code.code);
    }

    /// The QP's own counts of the first [`stats::PER_QP`] device counters
    /// (in their order: FPDUs and payload octets sent, then received), for
    /// the per-QP counters of `rdma statistic qp`.
    pub(crate) fn traffic(&self) -> [u64; stats::PER_QP] {
        let tx = self.tx.lock().sent();
        let rx = self.rx.lock().received();
        [tx.fpdus, tx.payload, rx.fpdus, rx.payload]
    }

    /// Adds the QP's details to its resource entry: IRD and ORD; with a
    /// connection, what MPA negotiated (revision, CRC, markers each way,
    /// the largest ULPDU sent, large FPDUs, peer-to-peer); the FPDUs and
    /// payload octets sent and received; the last TERMINATE.
    pub(crate) fn fill_details(&self, d: &mut ResDetails<'_>) -> Result {
        let (ird, ord) = self.inner.lock().rd_limits();
        d.u32(c_str!("ird"), ird)?;
        d.u32(c_str!("ord"), ord)?;
        if let Some(c) = self.conn() {
            d.u32(c_str!("mpa_rev"), c.mpa_rev.into())?;
            d.u32(c_str!("crc"), c.crc.into())?;
            d.u32(c_str!("markers_tx"), c.tx_markers.into())?;
            d.u32(c_str!("markers_rx"), c.rx_markers.into())?;
            d.u32(c_str!("mulpdu_tx"), c.mulpdu)?;
            d.u32(c_str!("large_fpdu_tx"), c.large_fpdu.is_some().into())?;
            if let Some(cap) = c.large_fpdu {
                d.u32(c_str!("max_fpdu_tx"), cap)?;
            }
            d.u32(c_str!("peer_to_peer"), c.peer_to_peer.into())?;
        }
        let tx = self.tx.lock().sent();
        let rx = self.rx.lock().received();
        d.u64(c_str!("tx_fpdus"), tx.fpdus)?;
        d.u64(c_str!("tx_payload"), tx.payload)?;
        d.u64(c_str!("rx_fpdus"), rx.fpdus)?;
        d.u64(c_str!("rx_payload"), rx.payload)?;
        if let Some((received, code)) = self.last_term.get() {
            let dir = if received {
                c_str!("received")
            } else {
                c_str!("sent")
            };
            d.str(c_str!("last_term"), dir)?;
            d.u32(c_str!("last_term_layer"), code.layer.into())?;
            d.u32(c_str!("last_term_etype"), code.etype.into())?;
            d.u32(c_str!("last_term_code"), code.code.into())?;
        }
        Ok(())
    }
}
