// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw_canary: a persistent rdma_cm server for the hostile-peer test
 * (issue 7) that detects stray placement into its memory.
 *
 *   rsiw_canary -a ADDR [-p PORT] [-t IDLE_SECS] [-n MAX_CONNS] [-k] [-f] [-e]
 *               [-d ACK_FILE] [-v]
 *
 * -k: after a failed work completion keep the connection until the peer
 *     or the shutdown ends it (default: disconnect at once, as rping does).
 * -f: the sink of an RDMA Read that completed with an error (flushed)
 *     must be untouched (for read_resp_after_flush: no other octet of the
 *     Read Response came before the error).
 * -e: send first: post the STag table Send as soon as the connection is
 *     established, instead of after the Read (for
 *     responder_waits_first_fpdu).
 * -d: on SIGUSR1, deregister the stall MR (d) of every connection (the
 *     hostile peer's stall scenarios: a peer stopped in the middle of a
 *     message meanwhile); once ibv_dereg_mr returned, take what its buffer
 *     holds as its contents (nothing may change it any more), overwrite it
 *     with 0xbb (which must then never leave in a Read Response), and
 *     append a line to ACK_FILE.
 *
 * It speaks rping's server protocol (rping -s -P) so the hostile peer's
 * scenarios work unchanged, and per connection:
 *
 *  1. posts two 16 octet receives (the first takes the peer's
 *     struct rping_rdma_info: be64 buf, be32 rkey, be32 size; the second
 *     takes one more Send, e.g. a Send with Invalidate), then accepts
 *     (responder resources 1, initiator depth 1, as rping);
 *  2. when the first Send arrives (exactly 16 octets), issues an RDMA Read
 *     of n = min(size, 64) octets from the peer's (buf, rkey) into the
 *     start of a 64 octet sink buffer registered whole (a Read Response
 *     longer than n must not place into the rest);
 *  3. when the Read completed, sends the peer one Send carrying the STag
 *     table below (from its own send buffer).
 *
 * Every buffer (the two receives, the sink, the send buffer and the three
 * MRs of the table) sits in its own mmap'd region: one canary page, the
 * buffer's pages, one canary page.  The buffer ends exactly at the end of
 * its last page, so an overflow hits a canary page at once; canary pages
 * are never registered.  Each region is filled with a known pattern (a
 * shadow copy holds what it must contain).  After a connection ended
 * (DISCONNECTED, a connection error, a failed work completion, or the
 * shutdown), its QP is destroyed and its MRs deregistered, and then every
 * octet of its regions is compared with the shadow, except the octets
 * legitimately written by the peer: the two 16 octet receive buffers and
 * the first n octets of the sink.  This covers the canary pages and the parts of
 * registered pages outside the registered ranges.  One line per connection;
 * on SIGTERM/SIGINT, or after IDLE_SECS without any event, the server
 * disconnects what is left, checks it, prints
 *
 *   canary: N connections, M regions checked, all intact
 *
 * (or how many were corrupted) and exits 0 only if every check passed and
 * no connection failed to set up.
 *
 * STag table (the payload of the server's Send; big endian, 72 octets):
 *
 *   offset  size  field
 *    0      4     magic 0x43414e59 ("CANY")
 *    4      4     table length in octets (56)
 *    8      8     (a) read-only MR: address     (remote read only,
 *   16      4         STag                       QP's PD)
 *   20      4         length
 *   24      8     (b) other-PD MR: address      (local + remote write,
 *   32      4         STag                       a second PD)
 *   36      4         length
 *   40      8     (c) invalidatable MR: address (local + remote write,
 *   48      4         STag                       QP's PD; the peer may
 *   52      4         length                     invalidate it)
 *   56      8     (d) stall MR: address         (local + remote read and
 *   64      4         STag                       write, QP's PD, 512 KiB;
 *   68      4         length                     deregistered on SIGUSR1)
 *
 * The hostile peer's scenarios write_readonly, write_other_pd,
 * write_invalidated and send_inv_foreign use it, write_split_dereg and
 * read_stalled_dereg the stall MR (scenarios.rs has the same layout).  None
 * of the first three MRs is ever legitimately written; the stall MR may be
 * written until it is deregistered.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define MAX_CONNS 64
#define INFO_LEN 16
#define SINK_MAX 64
#define MR_LEN 256
#define TABLE_LEN 72
#define STALL_LEN (512 * 1024)
#define STALL_AFTER 0xbb
#define TABLE_MAGIC 0x43414e59u
/* A connection that started tearing down and got no event for this long
 * is finished without it. */
#define STUCK_SECS 10

enum {
	R_RECV1,
	R_RECV2,
	R_SINK,
	R_SEND,
	R_RO,
	R_OPD,
	R_INV,
	R_STALL,
	R_NUM
};

static const char *const region_name[R_NUM] = {
	"recv1", "recv2", "sink", "send", "ro", "other-pd", "inval", "stall",
};

static const size_t region_len[R_NUM] = {
	INFO_LEN, INFO_LEN, SINK_MAX, TABLE_LEN, MR_LEN, MR_LEN, MR_LEN,
	STALL_LEN,
};

enum { WR_RECV1 = 1, WR_RECV2, WR_READ, WR_SEND };

struct region {
	uint8_t *map;		/* canary page, buffer pages, canary page */
	size_t map_len;
	uint8_t *shadow;	/* what map must hold */
	uint8_t *buf;		/* the buffer: ends at the last buffer page's end */
	size_t len;
	size_t exempt;		/* octets from buf the peer may write */
	struct ibv_mr *mr;
};

struct conn {
	int used;
	unsigned long serial;
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	unsigned int cq_events;
	int qp_made;
	struct region r[R_NUM];
	int established, have_info, read_done, table_sent, error;
	int disconnecting, done;
	time_t end_started;
	uint32_t nread, invalidated;
	int nrecv;
	char peer[64];
	char note[256];
};

static volatile sig_atomic_t stop, dereg_stall;
static const char *ack_file;
static int verbose, keep_on_error, strict_flush, send_first;
static long page;
static unsigned int region_serial;
static struct ibv_context *ctx;
static struct ibv_pd *pd1, *pd2;
static struct ibv_comp_channel *cch;
static struct rdma_event_channel *ech;
static struct conn conns[MAX_CONNS];
static int max_conns = 32;
static unsigned long n_conns, n_regions, n_corrupt, n_setup_fail, n_rejected;
static time_t last_event;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void on_usr1(int sig)
{
	(void)sig;
	dereg_stall = 1;
}

static void note(struct conn *c, const char *fmt, ...)
{
	size_t n = strlen(c->note);
	va_list ap;

	if (n + 3 >= sizeof(c->note))
		return;
	if (n) {
		strcpy(c->note + n, ", ");
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(c->note + n, sizeof(c->note) - n, fmt, ap);
	va_end(ap);
}

static uint8_t pattern(unsigned int rid, size_t i)
{
	return (uint8_t)(i * 0x9d + (i >> 8) * 0x3b + rid * 0x55 + 0xc3);
}

static int region_alloc(struct region *r, size_t len)
{
	size_t pages = (len + page - 1) / page;
	unsigned int rid = region_serial++;
	size_t i;

	if (!pages)
		pages = 1;
	r->map_len = (pages + 2) * page;
	r->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->map == MAP_FAILED) {
		r->map = NULL;
		return -1;
	}
	r->shadow = malloc(r->map_len);
	if (!r->shadow) {
		munmap(r->map, r->map_len);
		r->map = NULL;
		return -1;
	}
	for (i = 0; i < r->map_len; i++)
		r->shadow[i] = pattern(rid, i);
	memcpy(r->map, r->shadow, r->map_len);
	r->len = len;
	r->buf = r->map + (pages + 1) * page - len;
	r->exempt = 0;
	r->mr = NULL;
	return 0;
}

static void region_free(struct region *r)
{
	if (r->map)
		munmap(r->map, r->map_len);
	free(r->shadow);
	memset(r, 0, sizeof(*r));
}

/* Where offset i of the region lies, for the report. */
static const char *where(const struct region *r, size_t i)
{
	size_t b = r->buf - r->map;

	if (i < (size_t)page)
		return "canary page before";
	if (i >= r->map_len - page)
		return "canary page after";
	if (i < b)
		return "registered page, before the buffer";
	if (i < b + r->len)
		return "inside the buffer";
	return "after the buffer";
}

/* Compares a region with its shadow; 0 when intact. */
static int region_check(struct conn *c, int k)
{
	struct region *r = &c->r[k];
	size_t b = r->buf - r->map, i, first = 0, last = 0, bad = 0;

	for (i = 0; i < r->map_len; i++) {
		if (i >= b && i < b + r->exempt)
			continue;
		if (r->map[i] != r->shadow[i]) {
			if (!bad)
				first = i;
			last = i;
			bad++;
		}
	}
	n_regions++;
	if (!bad)
		return 0;
	printf("canary: conn %lu region %s CORRUPTED: %zu octets changed, first at buffer%+ld (%s, 0x%02x instead of 0x%02x), last at buffer%+ld (%s)\n",
	       c->serial, region_name[k], bad, (long)first - (long)b,
	       where(r, first), r->map[first], r->shadow[first],
	       (long)last - (long)b, where(r, last));
	return 1;
}

static struct ibv_mr *reg(struct ibv_pd *pd, struct region *r, size_t len,
			  int access)
{
	r->mr = ibv_reg_mr(pd, r->buf + r->len - len, len, access);
	return r->mr;
}

static int post_recv(struct conn *c, int k, uint64_t wr_id)
{
	struct region *r = &c->r[k];
	struct ibv_sge sge = {
		.addr = (uintptr_t)r->buf,
		.length = (uint32_t)r->len,
		.lkey = r->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(c->id->qp, &wr, &bad);
}

static void put_be32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static void put_be64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

static void put_mr(uint8_t *p, const struct region *r)
{
	put_be64(p, (uintptr_t)r->buf);
	put_be32(p + 8, r->mr->rkey);
	put_be32(p + 12, (uint32_t)r->len);
}

static void begin_disconnect(struct conn *c)
{
	if (c->disconnecting)
		return;
	c->disconnecting = 1;
	c->end_started = time(NULL);
	rdma_disconnect(c->id);
}

static void send_table(struct conn *c)
{
	struct region *r = &c->r[R_SEND];
	uint8_t t[TABLE_LEN];
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	size_t off = r->buf - r->map;

	put_be32(t, TABLE_MAGIC);
	put_be32(t + 4, TABLE_LEN);
	put_mr(t + 8, &c->r[R_RO]);
	put_mr(t + 24, &c->r[R_OPD]);
	put_mr(t + 40, &c->r[R_INV]);
	put_mr(t + 56, &c->r[R_STALL]);
	/* our own write: the shadow follows */
	memcpy(r->buf, t, TABLE_LEN);
	memcpy(r->shadow + off, t, TABLE_LEN);

	memset(&wr, 0, sizeof(wr));
	sge.addr = (uintptr_t)r->buf;
	sge.length = TABLE_LEN;
	sge.lkey = r->mr->lkey;
	wr.wr_id = WR_SEND;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	if (ibv_post_send(c->id->qp, &wr, &bad)) {
		note(c, "post of the table Send failed (%s)", strerror(errno));
		begin_disconnect(c);
	}
}

static void start_read(struct conn *c, const uint8_t *info)
{
	struct region *r = &c->r[R_SINK];
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	uint64_t buf;
	uint32_t rkey, size;

	memcpy(&buf, info, 8);
	memcpy(&rkey, info + 8, 4);
	memcpy(&size, info + 12, 4);
	buf = be64toh(buf);
	rkey = be32toh(rkey);
	size = be32toh(size);
	c->nread = size < SINK_MAX ? size : SINK_MAX;
	note(c, "info size %u", size);

	memset(&wr, 0, sizeof(wr));
	if (c->nread) {
		/* The sink's registration is all SINK_MAX octets of the
		 * buffer (ending at the page end); the Read fills its first
		 * n: a Read Response longer than the Read must not place
		 * into the rest of the MR (checked against the shadow). */
		if (!reg(pd1, r, SINK_MAX,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)) {
			note(c, "sink registration failed (%s)", strerror(errno));
			n_setup_fail++;
			begin_disconnect(c);
			return;
		}
		r->exempt = c->nread;
		sge.addr = (uintptr_t)r->buf;
		sge.length = c->nread;
		sge.lkey = r->mr->lkey;
		wr.sg_list = &sge;
		wr.num_sge = 1;
	}
	wr.wr_id = WR_READ;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = buf;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(c->id->qp, &wr, &bad)) {
		note(c, "post of the RDMA Read failed (%s)", strerror(errno));
		begin_disconnect(c);
	}
}

static void on_wc(struct conn *c, const struct ibv_wc *wc)
{
	/* (completions flushed by the QP's destruction) */
	if (!c->qp_made)
		return;
	if (wc->status != IBV_WC_SUCCESS) {
		/* -f: the sink of a Read that did not complete must not
		 * have been written (by a Read Response after the flush). */
		if (strict_flush && wc->wr_id == WR_READ) {
			c->r[R_SINK].exempt = 0;
			note(c, "Read failed: its sink must be untouched");
		}
		if (!c->error)
			note(c, "wr %llu: %s", (unsigned long long)wc->wr_id,
			     ibv_wc_status_str(wc->status));
		c->error = 1;
		if (!keep_on_error)
			begin_disconnect(c);
		return;
	}
	switch (wc->wr_id) {
	case WR_RECV1:
	case WR_RECV2:
		c->nrecv++;
		if (wc->wc_flags & IBV_WC_WITH_INV) {
			c->invalidated = wc->invalidated_rkey;
			note(c, "STag %#x invalidated by the peer", c->invalidated);
		}
		if (c->have_info)
			break;
		if (wc->byte_len != INFO_LEN) {
			note(c, "first Send of %u octets (not an rping info)",
			     wc->byte_len);
			break;
		}
		c->have_info = 1;
		start_read(c, c->r[wc->wr_id == WR_RECV1 ? R_RECV1 : R_RECV2].buf);
		break;
	case WR_READ:
		c->read_done = 1;
		note(c, "read %u octets", c->nread);
		if (!send_first)
			send_table(c);
		break;
	case WR_SEND:
		c->table_sent = 1;
		note(c, "STag table sent");
		break;
	}
}

static void poll_conn(struct conn *c)
{
	struct ibv_wc wc[8];
	int n, i;

	if (!c->cq)
		return;
	while ((n = ibv_poll_cq(c->cq, 8, wc)) > 0)
		for (i = 0; i < n; i++)
			on_wc(c, &wc[i]);
}

static void handle_cq_events(void)
{
	struct ibv_cq *cq;
	void *cq_ctx;

	while (ibv_get_cq_event(cch, &cq, &cq_ctx) == 0) {
		struct conn *c = cq_ctx;

		last_event = time(NULL);
		c->cq_events++;
		ibv_req_notify_cq(cq, 0);
		poll_conn(c);
	}
}

static int setup_conn(struct conn *c, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa;
	struct rdma_conn_param cp;
	struct sockaddr_in *sa;
	int k;

	memset(c, 0, sizeof(*c));
	c->used = 1;
	c->serial = ++n_conns;
	c->id = id;
	id->context = c;
	sa = (struct sockaddr_in *)rdma_get_peer_addr(id);
	if (sa && sa->sin_family == AF_INET)
		snprintf(c->peer, sizeof(c->peer), "%s:%u",
			 inet_ntoa(sa->sin_addr), ntohs(sa->sin_port));
	else
		snprintf(c->peer, sizeof(c->peer), "?");

	for (k = 0; k < R_NUM; k++) {
		if (region_alloc(&c->r[k], region_len[k])) {
			note(c, "mmap failed");
			return -1;
		}
	}
	c->cq = ibv_create_cq(ctx, 16, c, cch, 0);
	if (!c->cq || ibv_req_notify_cq(c->cq, 0)) {
		note(c, "CQ creation failed (%s)", strerror(errno));
		return -1;
	}
	memset(&qa, 0, sizeof(qa));
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, pd1, &qa)) {
		note(c, "QP creation failed (%s)", strerror(errno));
		return -1;
	}
	c->qp_made = 1;
	if (!reg(pd1, &c->r[R_RECV1], INFO_LEN, IBV_ACCESS_LOCAL_WRITE) ||
	    !reg(pd1, &c->r[R_RECV2], INFO_LEN, IBV_ACCESS_LOCAL_WRITE) ||
	    !reg(pd1, &c->r[R_SEND], TABLE_LEN, 0) ||
	    !reg(pd1, &c->r[R_RO], MR_LEN, IBV_ACCESS_REMOTE_READ) ||
	    !reg(pd2, &c->r[R_OPD], MR_LEN,
		 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) ||
	    !reg(pd1, &c->r[R_INV], MR_LEN,
		 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) ||
	    !reg(pd1, &c->r[R_STALL], STALL_LEN,
		 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		 IBV_ACCESS_REMOTE_READ)) {
		note(c, "MR registration failed (%s)", strerror(errno));
		return -1;
	}
	c->r[R_RECV1].exempt = INFO_LEN;
	c->r[R_RECV2].exempt = INFO_LEN;
	/* the peer may write the stall MR until it is deregistered */
	c->r[R_STALL].exempt = STALL_LEN;
	if (post_recv(c, R_RECV1, WR_RECV1) || post_recv(c, R_RECV2, WR_RECV2)) {
		note(c, "post_recv failed (%s)", strerror(errno));
		return -1;
	}
	memset(&cp, 0, sizeof(cp));
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	if (rdma_accept(id, &cp)) {
		note(c, "accept failed (%s)", strerror(errno));
		return -1;
	}
	if (verbose)
		printf("canary: conn %lu %s: accepted (ro %#x, other-pd %#x, inval %#x)\n",
		       c->serial, c->peer, c->r[R_RO].mr->rkey,
		       c->r[R_OPD].mr->rkey, c->r[R_INV].mr->rkey);
	return 0;
}

/* Tears a connection down, then checks its memory. */
static void finish(struct conn *c)
{
	int k, bad = 0;

	if (c->qp_made)
		rdma_destroy_qp(c->id);
	c->qp_made = 0;
	/* Completions flushed by the destruction are of no interest, but
	 * every event read must be acknowledged before the CQ goes. */
	handle_cq_events();
	for (k = 0; k < R_NUM; k++) {
		if (c->r[k].mr && ibv_dereg_mr(c->r[k].mr)) {
			note(c, "deregistration of %s failed", region_name[k]);
			n_setup_fail++;
		}
		c->r[k].mr = NULL;
	}
	if (c->cq) {
		ibv_ack_cq_events(c->cq, c->cq_events);
		if (ibv_destroy_cq(c->cq))
			note(c, "CQ destruction failed");
	}
	c->cq = NULL;
	/* Nothing can place data any more: compare. */
	for (k = 0; k < R_NUM; k++) {
		if (c->r[k].map)
			bad += region_check(c, k);
		region_free(&c->r[k]);
	}
	if (bad)
		n_corrupt++;
	printf("canary: conn %lu %s: %s%s%s; %s\n", c->serial, c->peer,
	       c->established ? "established" : "not established",
	       c->note[0] ? ", " : "", c->note,
	       bad ? "MEMORY CORRUPTED" : "all regions intact");
	fflush(stdout);
	rdma_destroy_id(c->id);
	c->used = 0;
}

static struct conn *free_slot(void)
{
	int i, live = 0;
	struct conn *f = NULL;

	for (i = 0; i < MAX_CONNS; i++) {
		if (conns[i].used)
			live++;
		else if (!f)
			f = &conns[i];
	}
	return live < max_conns ? f : NULL;
}

static int live_conns(void)
{
	int i, n = 0;

	for (i = 0; i < MAX_CONNS; i++)
		n += conns[i].used;
	return n;
}

static void reap(int force);

static void handle_cm_events(void)
{
	struct rdma_cm_event *ev;

	while (rdma_get_cm_event(ech, &ev) == 0) {
		enum rdma_cm_event_type type = ev->event;
		struct rdma_cm_id *id = ev->id;
		struct conn *c = id->context;
		int reject = 0;

		last_event = time(NULL);
		if (verbose)
			printf("canary: event %s\n", rdma_event_str(type));
		switch (type) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			c = stop || id->verbs != ctx ? NULL : free_slot();
			/* This loop runs as long as events come: a peer that
			 * connects and closes in quick succession keeps it
			 * here, and the connections that ended are finished
			 * only by reap(). Finish them before refusing. */
			if (!c && !stop && id->verbs == ctx) {
				reap(0);
				c = free_slot();
			}
			if (!c) {
				rdma_reject(id, NULL, 0);
				n_rejected++;
				reject = 1;
			} else if (setup_conn(c, id)) {
				n_setup_fail++;
				c->done = 1;
			}
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			if (c) {
				c->established = 1;
				if (send_first)
					send_table(c);
			}
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
		case RDMA_CM_EVENT_CONNECT_ERROR:
		case RDMA_CM_EVENT_UNREACHABLE:
		case RDMA_CM_EVENT_REJECTED:
			if (c) {
				if (type != RDMA_CM_EVENT_DISCONNECTED)
					note(c, "%s", rdma_event_str(type));
				c->done = 1;
			}
			break;
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			printf("canary: device removed\n");
			n_setup_fail++;
			stop = 1;
			break;
		default:
			break;
		}
		rdma_ack_cm_event(ev);
		if (reject)
			rdma_destroy_id(id);
	}
}

/* Polls every CQ (a missed notification costs nothing then) and finishes
 * the connections that ended. */
static void reap(int force)
{
	time_t now = time(NULL);
	int i;

	for (i = 0; i < MAX_CONNS; i++) {
		struct conn *c = &conns[i];

		if (!c->used)
			continue;
		poll_conn(c);
		if (!c->done && c->disconnecting &&
		    now - c->end_started > STUCK_SECS) {
			note(c, "no DISCONNECTED %d s after the disconnect",
			     STUCK_SECS);
			c->done = 1;
		}
		if (c->done || force)
			finish(c);
	}
}

/*
 * SIGUSR1 (-d): deregisters every connection's stall MR. Once
 * ibv_dereg_mr() returned nothing may place into the buffer or read from
 * it: what it holds now is its contents (the shadow), and our own
 * overwrite with STALL_AFTER must never reach the peer.
 */
static void deregister_stall(void)
{
	FILE *f;
	int i, n = 0;

	for (i = 0; i < MAX_CONNS; i++) {
		struct conn *c = &conns[i];
		struct region *r = &c->r[R_STALL];
		size_t off;

		if (!c->used || !r->mr)
			continue;
		if (ibv_dereg_mr(r->mr)) {
			note(c, "deregistration of the stall MR failed");
			n_setup_fail++;
			continue;
		}
		r->mr = NULL;
		off = r->buf - r->map;
		memcpy(r->shadow, r->map, r->map_len);
		memset(r->buf, STALL_AFTER, r->len);
		memset(r->shadow + off, STALL_AFTER, r->len);
		r->exempt = 0;
		note(c, "stall MR deregistered");
		n++;
	}
	f = ack_file ? fopen(ack_file, "a") : NULL;
	if (f) {
		fprintf(f, "%d\n", n);
		fclose(f);
	}
}

static void set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static int usage(void)
{
	fprintf(stderr,
		"usage: rsiw_canary -a ADDR [-p PORT] [-t IDLE_SECS] [-n MAX_CONNS] [-k] [-f] [-e] [-d ACK_FILE] [-v]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct rdma_cm_id *listen_id;
	struct addrinfo *ai, hints;
	const char *addr = NULL, *port = "7174";
	struct sigaction sa;
	int idle = 0, o, i;
	time_t t0;

	while ((o = getopt(argc, argv, "a:p:t:n:kfed:v")) != -1) {
		switch (o) {
		case 'a':
			addr = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 't':
			idle = atoi(optarg);
			break;
		case 'n':
			max_conns = atoi(optarg);
			if (max_conns < 1 || max_conns > MAX_CONNS)
				return usage();
			break;
		case 'k':
			keep_on_error = 1;
			break;
		case 'f':
			strict_flush = 1;
			break;
		case 'e':
			send_first = 1;
			break;
		case 'd':
			ack_file = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			return usage();
		}
	}
	if (!addr)
		return usage();
	page = sysconf(_SC_PAGESIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET;
	hints.ai_flags = AI_PASSIVE;
	if (getaddrinfo(addr, port, &hints, &ai)) {
		fprintf(stderr, "canary: bad address %s:%s\n", addr, port);
		return 2;
	}
	ech = rdma_create_event_channel();
	if (!ech || rdma_create_id(ech, &listen_id, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(listen_id, ai->ai_addr) ||
	    rdma_listen(listen_id, 16)) {
		perror("canary: listen");
		return 1;
	}
	freeaddrinfo(ai);
	ctx = listen_id->verbs;
	if (!ctx) {
		fprintf(stderr, "canary: %s is no RDMA device's address\n", addr);
		return 1;
	}
	pd1 = ibv_alloc_pd(ctx);
	pd2 = ibv_alloc_pd(ctx);
	cch = ibv_create_comp_channel(ctx);
	if (!pd1 || !pd2 || !cch) {
		perror("canary: PD/channel");
		return 1;
	}
	set_nonblock(ech->fd);
	set_nonblock(cch->fd);
	printf("canary: listening on %s:%s (%s, up to %d connections)\n",
	       addr, port, ibv_get_device_name(ctx->device), max_conns);

	last_event = time(NULL);
	while (!stop) {
		struct pollfd p[2] = {
			{ .fd = ech->fd, .events = POLLIN },
			{ .fd = cch->fd, .events = POLLIN },
		};

		if (poll(p, 2, 200) < 0 && errno != EINTR) {
			perror("canary: poll");
			n_setup_fail++;
			break;
		}
		handle_cm_events();
		handle_cq_events();
		if (dereg_stall) {
			dereg_stall = 0;
			deregister_stall();
		}
		reap(0);
		if (idle && time(NULL) - last_event >= idle) {
			printf("canary: idle for %d s\n", idle);
			break;
		}
	}

	/* Shutdown: disconnect what is left and give the events 3 s. */
	for (i = 0; i < MAX_CONNS; i++)
		if (conns[i].used && !conns[i].done)
			begin_disconnect(&conns[i]);
	t0 = time(NULL);
	while (live_conns() && time(NULL) - t0 < 3) {
		struct pollfd p = { .fd = ech->fd, .events = POLLIN };

		poll(&p, 1, 100);
		handle_cm_events();
		handle_cq_events();
		reap(0);
	}
	reap(1);
	rdma_destroy_id(listen_id);
	ibv_destroy_comp_channel(cch);
	ibv_dealloc_pd(pd2);
	ibv_dealloc_pd(pd1);
	rdma_destroy_event_channel(ech);

	if (n_corrupt || n_setup_fail) {
		printf("canary: %lu connections, %lu regions checked, %lu corrupted, %lu setup failures (%lu rejected as over the limit)\n",
		       n_conns, n_regions, n_corrupt, n_setup_fail, n_rejected);
		return 1;
	}
	printf("canary: %lu connections, %lu regions checked, all intact (%lu rejected as over the limit)\n",
	       n_conns, n_regions, n_rejected);
	return 0;
}
