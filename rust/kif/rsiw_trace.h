/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rsiw tracepoints: connection and QP life events (not the data path).
 * The Rust driver calls them through the wrappers in rsiw_trace.c.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM rsiw

#if !defined(_RSIW_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _RSIW_TRACE_H

#include <linux/tracepoint.h>

#define rsiw_show_qp_state(s)					\
	__print_symbolic(s, { 0, "IDLE" }, { 1, "RTR" },	\
			 { 2, "RTS" }, { 3, "CLOSING" },	\
			 { 4, "TERMINATE" }, { 5, "ERROR" })

TRACE_EVENT(rsiw_qp_state,
	TP_PROTO(u32 qpn, u8 from, u8 to),
	TP_ARGS(qpn, from, to),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u8, from)
		__field(u8, to)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->from = from;
		__entry->to = to;
	),
	TP_printk("qp %u %s -> %s", __entry->qpn,
		  rsiw_show_qp_state(__entry->from),
		  rsiw_show_qp_state(__entry->to))
);

TRACE_EVENT(rsiw_mpa_done,
	TP_PROTO(u32 qpn, bool initiator, u8 rev, bool crc, bool markers_tx,
		 bool markers_rx, bool p2p, u32 mulpdu, u32 ird, u32 ord),
	TP_ARGS(qpn, initiator, rev, crc, markers_tx, markers_rx, p2p, mulpdu,
		ird, ord),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(bool, initiator)
		__field(u8, rev)
		__field(bool, crc)
		__field(bool, markers_tx)
		__field(bool, markers_rx)
		__field(bool, p2p)
		__field(u32, mulpdu)
		__field(u32, ird)
		__field(u32, ord)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->initiator = initiator;
		__entry->rev = rev;
		__entry->crc = crc;
		__entry->markers_tx = markers_tx;
		__entry->markers_rx = markers_rx;
		__entry->p2p = p2p;
		__entry->mulpdu = mulpdu;
		__entry->ird = ird;
		__entry->ord = ord;
	),
	TP_printk("qp %u %s rev %u crc %d markers tx %d rx %d p2p %d mulpdu %u ird %u ord %u",
		  __entry->qpn, __entry->initiator ? "initiator" : "responder",
		  __entry->rev, __entry->crc, __entry->markers_tx,
		  __entry->markers_rx, __entry->p2p, __entry->mulpdu,
		  __entry->ird, __entry->ord)
);

TRACE_EVENT(rsiw_mpa_failed,
	TP_PROTO(bool initiator, int err),
	TP_ARGS(initiator, err),
	TP_STRUCT__entry(
		__field(bool, initiator)
		__field(int, err)
	),
	TP_fast_assign(
		__entry->initiator = initiator;
		__entry->err = err;
	),
	TP_printk("%s err %d", __entry->initiator ? "initiator" : "responder",
		  __entry->err)
);

TRACE_EVENT(rsiw_terminate,
	TP_PROTO(u32 qpn, bool received, u8 layer, u8 etype, u8 code),
	TP_ARGS(qpn, received, layer, etype, code),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(bool, received)
		__field(u8, layer)
		__field(u8, etype)
		__field(u8, code)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->received = received;
		__entry->layer = layer;
		__entry->etype = etype;
		__entry->code = code;
	),
	TP_printk("qp %u %s layer %u etype %u code 0x%02x", __entry->qpn,
		  __entry->received ? "received" : "sent", __entry->layer,
		  __entry->etype, __entry->code)
);

TRACE_EVENT(rsiw_flush,
	TP_PROTO(u32 qpn, bool sq, u32 count),
	TP_ARGS(qpn, sq, count),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(bool, sq)
		__field(u32, count)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->sq = sq;
		__entry->count = count;
	),
	TP_printk("qp %u %s %u work requests", __entry->qpn,
		  __entry->sq ? "sq" : "rq", __entry->count)
);

#endif /* _RSIW_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE rsiw_trace
#include <trace/define_trace.h>
