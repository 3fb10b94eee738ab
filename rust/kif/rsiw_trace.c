// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw tracepoints (rsiw_trace.h), called from Rust (rust/kif/trace.rs).
 * Each wrapper is a call and a patched-out branch while its event is off.
 */
#include "../../include/rsiw_glue.h"

#define CREATE_TRACE_POINTS
#include "rsiw_trace.h"

void rsiw_trace_qp_state(u32 qpn, u8 from, u8 to)
{
	trace_rsiw_qp_state(qpn, from, to);
}

void rsiw_trace_mpa_done(u32 qpn, bool initiator, u8 rev, bool crc,
			 bool markers_tx, bool markers_rx, bool p2p,
			 u32 mulpdu, u32 ird, u32 ord)
{
	trace_rsiw_mpa_done(qpn, initiator, rev, crc, markers_tx, markers_rx,
			    p2p, mulpdu, ird, ord);
}

void rsiw_trace_mpa_failed(bool initiator, int err)
{
	trace_rsiw_mpa_failed(initiator, err);
}

void rsiw_trace_terminate(u32 qpn, bool received, u8 layer, u8 etype, u8 code)
{
	trace_rsiw_terminate(qpn, received, layer, etype, code);
}

void rsiw_trace_flush(u32 qpn, bool sq, u32 count)
{
	trace_rsiw_flush(qpn, sq, count);
}
