// SPDX-License-Identifier: GPL-2.0

//! The driver's tracepoints, system `rsiw` (`rust/kif/rsiw_trace.h`):
//! connection and QP life events, for `trace-cmd record -e rsiw` or
//! `perf trace -e 'rsiw:*'`. Each is a call into the C wrapper and a
//! patched-out branch while the event is off; none is on the per-FPDU
//! path.

use kernel::prelude::*;

extern "C" {
    fn rsiw_trace_qp_state(qpn: u32, from: u8, to: u8);
    fn rsiw_trace_mpa_done(
        qpn: u32,
        initiator: bool,
        rev: u8,
        crc: bool,
        markers_tx: bool,
        markers_rx: bool,
        p2p: bool,
        mulpdu: u32,
        ird: u32,
        ord: u32,
    );
    fn rsiw_trace_mpa_failed(initiator: bool, err: kernel::ffi::c_int);
    fn rsiw_trace_terminate(qpn: u32, received: bool, layer: u8, etype: u8, code: u8);
    fn rsiw_trace_flush(qpn: u32, sq: bool, count: u32);
}

/// `rsiw_qp_state`: QP `qpn` went from state `from` to `to` (the
/// driver's state numbers: IDLE, RTR, RTS, CLOSING, TERMINATE, ERROR).
pub fn qp_state(qpn: u32, from: u8, to: u8) {
    // SAFETY: a C function taking plain values.
    unsafe { rsiw_trace_qp_state(qpn, from, to) }
}

/// What an MPA exchange settled, for [`mpa_done`].
pub struct MpaDone {
    /// The QP that got the connection.
    pub qpn: u32,
    /// This side sent the MPA Request.
    pub initiator: bool,
    /// MPA revision.
    pub rev: u8,
    /// CRC in use.
    pub crc: bool,
    /// Markers in what this side sends.
    pub markers_tx: bool,
    /// Markers in what this side receives.
    pub markers_rx: bool,
    /// The peer-to-peer model (RFC 6581).
    pub p2p: bool,
    /// Largest ULPDU this side sends.
    pub mulpdu: u32,
    /// Inbound RDMA Reads.
    pub ird: u32,
    /// Outbound RDMA Reads.
    pub ord: u32,
}

/// `rsiw_mpa_done`: an MPA exchange ended with a connection.
pub fn mpa_done(m: &MpaDone) {
    // SAFETY: a C function taking plain values.
    unsafe {
        rsiw_trace_mpa_done(
            m.qpn,
            m.initiator,
            m.rev,
            m.crc,
            m.markers_tx,
            m.markers_rx,
            m.p2p,
            m.mulpdu,
            m.ird,
            m.ord,
        )
    }
}

/// `rsiw_mpa_failed`: an MPA exchange failed with `err`.
pub fn mpa_failed(initiator: bool, err: Error) {
    // SAFETY: a C function taking plain values.
    unsafe { rsiw_trace_mpa_failed(initiator, err.to_errno()) }
}

/// `rsiw_terminate`: QP `qpn` sent (queued) or `received` a TERMINATE
/// with this layer, error type and code.
pub fn terminate(qpn: u32, received: bool, layer: u8, etype: u8, code: u8) {
    // SAFETY: a C function taking plain values.
    unsafe { rsiw_trace_terminate(qpn, received, layer, etype, code) }
}

/// `rsiw_flush`: QP `qpn` flushed `count` work requests of its send
/// (`sq`) or receive queue.
pub fn flush(qpn: u32, sq: bool, count: u32) {
    // SAFETY: a C function taking plain values.
    unsafe { rsiw_trace_flush(qpn, sq, count) }
}
