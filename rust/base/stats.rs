// SPDX-License-Identifier: GPL-2.0

//! Device counters, read with `rdma statistic show link rsiwN/1` (upstream
//! siw has none): what the transmit and receive engines did, how often
//! TCP pushed back, and the protocol errors seen. One set per device,
//! shared by its QPs; the data path adds per batch or per socket upcall,
//! not per octet.

use kernel::{c_str, prelude::*};

use crate::kif::compat::percpu::PerCpuCounters;
use crate::kif::rdma::stats::StatDescs;

/// One counter (its index in [`NAMES`] and [`Stats`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub(crate) enum Counter {
    /// FPDUs sent.
    TxFpdus,
    /// Payload octets sent (DDP segment payloads).
    TxPayload,
    /// FPDUs received.
    RxFpdus,
    /// Payload octets received and placed.
    RxPayload,
    /// Messages sent (Send, Write, Read Request, Read Response, RTR).
    TxMessages,
    /// Calls into TCP that sent FPDUs (several FPDUs go in one call).
    TxTcpSends,
    /// Sends TCP could not take at once (socket buffer full).
    TxTcpFull,
    /// Transmit runs in the doorbell system call.
    TxDoorbellRuns,
    /// Transmit runs on the workqueue.
    TxWorkRuns,
    /// Transmit runs in a kernel consumer's `post_send` (a context that
    /// may sleep, see `Qp::post_send`).
    TxPostRuns,
    /// Socket receive upcalls that carried data.
    RxUpcalls,
    /// FPDUs with a bad MPA CRC.
    RxCrcErrors,
    /// Other protocol errors found in received FPDUs.
    RxProtocolErrors,
    /// TERMINATE messages sent.
    TerminatesSent,
    /// TERMINATE messages received.
    TerminatesReceived,
    /// Connections that reached RTS.
    ConnectionsEstablished,
    /// Zero length Writes sent to wake a peer silent since the connection
    /// came up (see `cm::Cep::wake_peer`).
    PeerWakeups,
}

/// Number of counters.
pub(crate) const NUM: usize = Counter::PeerWakeups as usize + 1;

/// Number of counters a QP keeps too (the first ones: FPDUs and payload
/// octets each way), and so a per-QP counter of `rdma statistic qp`.
pub(crate) const PER_QP: usize = Counter::RxPayload as usize + 1;

/// The counters' names, in [`Counter`] order.
pub(crate) static NAMES: StatDescs = StatDescs::new(&[
    c_str!("tx_fpdus"),
    c_str!("tx_payload_bytes"),
    c_str!("rx_fpdus"),
    c_str!("rx_payload_bytes"),
    c_str!("tx_messages"),
    c_str!("tx_tcp_sends"),
    c_str!("tx_tcp_full"),
    c_str!("tx_doorbell_runs"),
    c_str!("tx_work_runs"),
    c_str!("tx_post_runs"),
    c_str!("rx_upcalls"),
    c_str!("rx_crc_errors"),
    c_str!("rx_protocol_errors"),
    c_str!("terminates_sent"),
    c_str!("terminates_received"),
    c_str!("connections_established"),
    c_str!("peer_wakeups"),
]);

/// The counters of one device (per CPU: the data path of every QP adds
/// to them several times per message).
pub(crate) struct Stats {
    v: PerCpuCounters<NUM>,
}

impl Stats {
    /// All zero.
    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            v: PerCpuCounters::new()?,
        })
    }

    /// Adds `n` to counter `c`.
    #[inline]
    pub(crate) fn add(&self, c: Counter, n: u64) {
        self.v.add(c as usize, n);
    }

    /// Adds one to counter `c`.
    pub(crate) fn inc(&self, c: Counter) {
        self.add(c, 1);
    }

    /// Copies the values, in [`Counter`] order, into `out`.
    pub(crate) fn read(&self, out: &mut [u64]) {
        for (i, o) in out.iter_mut().enumerate().take(NUM) {
            *o = self.v.sum(i);
        }
    }
}
