// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw_stress: many RC connections through librdmacm, every byte verified.
 * Run by rsiw_stress.sh; one process is the server (-s), one the client.
 *
 * Each connection (client = active side) runs rounds.  In a round the
 * client sends 1..K messages (header + pattern payload), RDMA-Writes a
 * pattern into the server's write target, sends a WDONE message naming the
 * written range, and RDMA-Reads a range back (even rounds: from the
 * server's read source; odd rounds: from the range it has just written).
 * The server checks every received byte and the written range, then sends
 * an ACK (with its own pattern payload, checked by the client).  Sequence
 * numbers in both directions, the round counter and the number of rounds
 * (announced in the connect private data and checked at disconnect) make
 * sure nothing is lost, duplicated or reordered.
 *
 * All connections of a process share one PD, one CQ and one completion
 * channel; one thread polls the rdma_cm, completion and async-event fds.
 *
 * The CQ is created first and is at least 160 pages big, so that its
 * mapping covers mmap page offset 0x90: the siw ABI (which rsiw serves)
 * reports mmap keys as byte offsets and libsiw rejects the key 0x90000
 * (SIW_INVAL_UOBJ_KEY) as "no mapping", so an object whose queue lands on
 * that page fails to be created, and so does every later one, as the same
 * offset is handed out again: with small objects, around 65 QPs per
 * process (upstream siw alike).
 *
 * Exit status: 0 ok; 1 data mismatch (always fatal); 2 error in strict
 * mode (failed completion, lost connection, refused connect); 3 aborted on
 * a device event (port error, device removal); 4 no progress for -w s.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define MAGIC 0x72737731u /* "rsw1" */
#define MSGMAX 2048	  /* send/recv slot size */
#define WT 8192		  /* server write target per connection */
#define RS 8192		  /* server read source per connection */
#define CLI_RQ 2
#define SRV_SQ 4

enum { T_HELLO = 1, T_DATA, T_WDONE, T_ACK };
enum { OP_RECV = 1, OP_SEND, OP_WRITE, OP_READ };
enum { K_SEND = 1, K_WRITE, K_READ, K_ACK };
enum { C_FREE, C_RESOLVING, C_CONNECTING, C_UP, C_CLOSING };

struct hdr {
	uint32_t magic, conn, seq, type;
	uint32_t round, off, len, rkey;
	uint64_t addr_w, addr_r;
	uint32_t rkey_r, pad;
};

struct pdata {
	uint32_t magic, conn, rounds, kmax;
};

struct conn {
	struct rdma_cm_id *id;
	int state;
	uint32_t gen;
	uint32_t conn;	 /* global connection number: seeds the patterns */
	uint32_t rounds; /* rounds this connection is to run */
	uint32_t round;	 /* current round */
	uint32_t sseq, rseq;
	struct ibv_mr *mr;
	char *buf;
	size_t buflen;
	/* client */
	int hello, pend, acked, k, roff, rlen, rsrc, woff, wlen;
	uint64_t addr_w, addr_r;
	uint32_t rkey_w, rkey_r;
	uint64_t rng;
	int sslot;
	int fsends; /* server: Sends completed as flushed */
};

static struct opts {
	int server, strict, conns, conc, rounds, kmax, barrier, dur, wdog, tmax;
	int rand_rounds, ops, quiet, retry_inuse;
	const char *addr, *bind;
	int port;
	unsigned seed;
} o = { .strict = 1, .conns = -1, .conc = 1, .rounds = 4, .kmax = 4, .wdog = 30,
	.tmax = 600, .ops = 7, .port = 7300, .seed = 1 };

static struct rdma_event_channel *ech;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_comp_channel *cch;
static struct rdma_cm_id *lid;
static struct conn *cs;
static int ncs;
static uint32_t gen;
static int started, active, ready, finished, good, failed, aborting, inuse, dflush;
static uint64_t nrounds, bytes;
static int status;
static time_t last_progress, t_start;
static volatile sig_atomic_t stop;

static void msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: ", o.server ? "server" : "client");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* the worst status wins: 1 (mismatch) > 4 (stall) > 3 (abort) > 2 (error) */
static void set_status(int code)
{
	static const int prio[] = { 0, 4, 1, 2, 3 };

	if (prio[code] > prio[status])
		status = code;
}

static void fail(int code, const char *fmt, ...)
{
	va_list ap;

	if (code == 2 && !o.strict)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "%s: FAIL: ", o.server ? "server" : "client");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	set_status(code);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint32_t seed(uint32_t conn, uint32_t kind, uint32_t n)
{
	return conn * 0x01000193u ^ kind << 28 ^ n * 0x27d4eb2du;
}

static uint32_t mix(uint32_t s, uint32_t w)
{
	uint32_t x = s * 0x9E3779B1u ^ w * 0x85EBCA6Bu;

	x ^= x >> 15;
	x *= 0x2C1B3C6Du;
	x ^= x >> 12;
	x *= 0x297A2D39u;
	x ^= x >> 15;
	return x;
}

static void fill(void *p, uint32_t s, uint32_t pos, uint32_t len)
{
	uint8_t *b = p;
	uint32_t w = 0, i;

	for (i = 0; i < len; i++, pos++) {
		if (i == 0 || !(pos & 3))
			w = mix(s, pos >> 2);
		b[i] = w >> ((pos & 3) * 8);
	}
}

/* returns the offset of the first bad byte, or -1 */
static long verify(const void *p, uint32_t s, uint32_t pos, uint32_t len)
{
	const uint8_t *b = p;
	uint32_t w = 0, i;

	for (i = 0; i < len; i++, pos++) {
		if (i == 0 || !(pos & 3))
			w = mix(s, pos >> 2);
		if (b[i] != (uint8_t)(w >> ((pos & 3) * 8)))
			return i;
	}
	return -1;
}

/* per-connection buffer layout */
static int rq_depth(void) { return o.server ? o.kmax + 2 : CLI_RQ; }
static int sq_depth(void) { return o.server ? SRV_SQ : o.kmax + 4; }
static char *rslot(struct conn *c, int i) { return c->buf + i * MSGMAX; }
static char *sslot(struct conn *c, int i) { return c->buf + (rq_depth() + i) * MSGMAX; }
static char *area(struct conn *c) { return c->buf + (rq_depth() + sq_depth()) * MSGMAX; }
/* server: area = write target [WT] + read source [RS];
 * client: area = write source [WT] + read destination [RS] */

static uint64_t wrid(struct conn *c, int op, int slot)
{
	return (uint64_t)c->gen << 32 | (uint64_t)(c - cs) << 12 | slot << 4 | op;
}

static void progress(void) { last_progress = time(NULL); }

static int setup_ctx(struct ibv_context *v)
{
	int cqe;

	if (ctx) {
		if (v != ctx) {
			fail(2, "connections on two devices");
			return -1;
		}
		return 0;
	}
	ctx = v;
	pd = ibv_alloc_pd(ctx);
	cch = ibv_create_comp_channel(ctx);
	cqe = o.conc * (o.kmax + 8) + 16;
	if (cqe < 160 * 4096 / 32) /* see the top of the file */
		cqe = 160 * 4096 / 32;
	cq = cch ? ibv_create_cq(ctx, cqe, NULL, cch, 0) : NULL;
	if (!pd || !cq || ibv_req_notify_cq(cq, 0)) {
		fail(2, "pd/cq setup: %s", strerror(errno));
		return -1;
	}
	fcntl(cch->fd, F_SETFL, fcntl(cch->fd, F_GETFL) | O_NONBLOCK);
	fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	return 0;
}

static int post_recv(struct conn *c, int slot)
{
	struct ibv_sge sge = { (uintptr_t)rslot(c, slot), MSGMAX, c->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wrid(c, OP_RECV, slot), .sg_list = &sge, .num_sge = 1 }, *bad;

	if (ibv_post_recv(c->id->qp, &wr, &bad)) {
		fail(2, "conn %u: post_recv: %s", c->conn, strerror(errno));
		return -1;
	}
	return 0;
}

/* a message of type t with a pattern payload; total length len */
static int post_msg(struct conn *c, int t, uint32_t len, uint32_t off, uint32_t mlen)
{
	int slot = c->sslot++ % sq_depth();
	struct hdr *h = (struct hdr *)sslot(c, slot);
	struct ibv_sge sge = { (uintptr_t)h, len, c->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wrid(c, OP_SEND, slot), .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

	memset(h, 0, sizeof(*h));
	h->magic = MAGIC;
	h->conn = c->conn;
	h->seq = c->sseq;
	h->type = t;
	h->round = c->round;
	h->off = off;
	h->len = t == T_WDONE ? mlen : len;
	if (t == T_HELLO) {
		h->addr_w = (uintptr_t)area(c);
		h->addr_r = (uintptr_t)area(c) + WT;
		h->rkey = h->rkey_r = c->mr->rkey;
	}
	fill(h + 1, seed(c->conn, t == T_ACK ? K_ACK : K_SEND, c->sseq), 0, len - sizeof(*h));
	c->sseq++;
	if (ibv_post_send(c->id->qp, &wr, &bad)) {
		fail(2, "conn %u: post_send: %s", c->conn, strerror(errno));
		return -1;
	}
	return 0;
}

static int post_rdma(struct conn *c, int op, char *local, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)local, len, c->mr->lkey };
	struct ibv_send_wr wr = { .wr_id = wrid(c, op, 0), .sg_list = &sge, .num_sge = 1,
				  .opcode = op == OP_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (ibv_post_send(c->id->qp, &wr, &bad)) {
		fail(2, "conn %u: post rdma: %s", c->conn, strerror(errno));
		return -1;
	}
	return 0;
}

static struct conn *new_conn(void)
{
	int i;

	for (i = 0; i < ncs; i++)
		if (cs[i].state == C_FREE) {
			memset(&cs[i], 0, sizeof(cs[i]));
			cs[i].gen = ++gen;
			return &cs[i];
		}
	return NULL;
}

static int conn_res(struct conn *c)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = sq_depth(), .max_recv_wr = rq_depth(),
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int i;

	c->buflen = (rq_depth() + sq_depth()) * MSGMAX + WT + RS;
	if (posix_memalign((void **)&c->buf, 4096, c->buflen)) {
		c->buf = NULL;
		fail(2, "out of memory");
		return -1;
	}
	memset(c->buf, 0, c->buflen);
	if (o.server)
		fill(area(c) + WT, seed(c->conn, K_READ, 0), 0, RS);
	c->mr = ibv_reg_mr(pd, c->buf, c->buflen,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!c->mr) {
		fail(2, "reg_mr: %s", strerror(errno));
		return -1;
	}
	if (rdma_create_qp(c->id, pd, &qa)) {
		fail(2, "create_qp: %s", strerror(errno));
		return -1;
	}
	for (i = 0; i < rq_depth(); i++)
		if (post_recv(c, i))
			return -1;
	return 0;
}

/* frees everything of c (its cm event, if any, is acked) */
static void teardown(struct conn *c)
{
	if (c->id) {
		if (c->id->qp)
			rdma_destroy_qp(c->id);
		rdma_destroy_id(c->id);
	}
	if (c->mr)
		ibv_dereg_mr(c->mr);
	free(c->buf);
	if (c->state != C_FREE)
		active--;
	c->id = NULL;
	c->mr = NULL;
	c->buf = NULL;
	c->state = C_FREE;
	finished++;
	progress();
}

static void start_conn(int n)
{
	struct conn *c = new_conn();
	struct addrinfo *ai;
	char port[16];

	if (!c)
		return;
	c->conn = n < 0 ? started++ : n;
	c->rng = (uint64_t)(o.seed + 1) * 0x9E3779B97F4A7C15ull ^ c->conn * 0xD1B54A32D192ED03ull;
	c->rounds = o.rand_rounds ? 1 + rnd(&c->rng) % o.rounds : o.rounds;
	c->state = C_RESOLVING;
	active++;
	snprintf(port, sizeof(port), "%d", o.port);
	if (rdma_create_id(ech, &c->id, c, RDMA_PS_TCP)) {
		fail(2, "create_id: %s", strerror(errno));
		teardown(c);
		return;
	}
	if (getaddrinfo(o.addr, port, NULL, &ai)) {
		fail(2, "getaddrinfo %s", o.addr);
		teardown(c);
		return;
	}
	if (rdma_resolve_addr(c->id, NULL, ai->ai_addr, 5000)) {
		fail(2, "resolve_addr: %s", strerror(errno));
		freeaddrinfo(ai);
		teardown(c);
		return;
	}
	freeaddrinfo(ai);
}

static void start_round(struct conn *c)
{
	int j;
	uint32_t len;

	c->k = 1 + rnd(&c->rng) % o.kmax;
	c->pend = 0;
	c->acked = 0;
	for (j = 0; j < c->k; j++) {
		len = sizeof(struct hdr) + rnd(&c->rng) % (MSGMAX - sizeof(struct hdr) + 1);
		if (post_msg(c, T_DATA, len, 0, 0))
			return;
		c->pend++;
	}
	c->wlen = 0;
	if (o.ops & 2) {
		c->wlen = 1 + rnd(&c->rng) % WT;
		c->woff = rnd(&c->rng) % (WT - c->wlen + 1);
		fill(area(c), seed(c->conn, K_WRITE, c->round), 0, c->wlen);
		if (post_rdma(c, OP_WRITE, area(c), c->wlen, c->addr_w + c->woff, c->rkey_w))
			return;
		c->pend++;
	}
	if (post_msg(c, T_WDONE, sizeof(struct hdr), c->woff, c->wlen))
		return;
	c->pend++;
	c->rlen = 0;
	if (o.ops & 4) {
		if (c->round & 1 && c->wlen) {
			/* read back part of what was just written */
			uint32_t a = rnd(&c->rng) % c->wlen;

			c->rlen = 1 + rnd(&c->rng) % (c->wlen - a);
			c->roff = a;
			c->rsrc = 0;
			memset(area(c) + WT, 0, c->rlen);
			if (post_rdma(c, OP_READ, area(c) + WT, c->rlen, c->addr_w + c->woff + a, c->rkey_w))
				return;
		} else {
			c->rlen = 1 + rnd(&c->rng) % RS;
			c->roff = rnd(&c->rng) % (RS - c->rlen + 1);
			c->rsrc = 1;
			memset(area(c) + WT, 0, c->rlen);
			if (post_rdma(c, OP_READ, area(c) + WT, c->rlen, c->addr_r + c->roff, c->rkey_r))
				return;
		}
		c->pend++;
	}
}

static void maybe_next(struct conn *c)
{
	if (c->pend || !c->acked)
		return;
	nrounds++;
	progress();
	if (++c->round < c->rounds) {
		start_round(c);
		return;
	}
	c->state = C_CLOSING;
	if (rdma_disconnect(c->id))
		fail(2, "conn %u: disconnect: %s", c->conn, strerror(errno));
}

static int check_hdr(struct conn *c, struct hdr *h, uint32_t len)
{
	if (len < sizeof(*h) || h->magic != MAGIC || h->conn != c->conn || h->seq != c->rseq ||
	    h->round != c->round || (h->type != T_WDONE && h->len != len)) {
		fail(1, "conn %u: bad message: len %u magic %#x conn %u seq %u (want %u) type %u round %u (want %u) hlen %u",
		     c->conn, len, h->magic, h->conn, h->seq, c->rseq, h->type, h->round, c->round, h->len);
		return -1;
	}
	c->rseq++;
	return 0;
}

static void srv_recv(struct conn *c, int slot, uint32_t len)
{
	struct hdr *h = (struct hdr *)rslot(c, slot), copy;
	long bad;

	if (check_hdr(c, h, len))
		return;
	copy = *h;
	if (h->type == T_DATA) {
		bad = verify(h + 1, seed(c->conn, K_SEND, h->seq), 0, len - sizeof(*h));
		if (bad >= 0)
			fail(1, "conn %u: send seq %u: byte %ld of %u differs", c->conn, h->seq, bad, len);
		bytes += len;
	} else if (h->type == T_WDONE) {
		if (h->len > WT || h->off > WT - h->len) {
			fail(1, "conn %u: WDONE range %u+%u", c->conn, h->off, h->len);
			return;
		}
		bad = verify(area(c) + h->off, seed(c->conn, K_WRITE, h->round), 0, h->len);
		if (bad >= 0)
			fail(1, "conn %u: write round %u: byte %ld of %u differs", c->conn, h->round, bad, h->len);
		bytes += h->len;
	} else {
		fail(1, "conn %u: unexpected type %u", c->conn, h->type);
		return;
	}
	if (post_recv(c, slot))
		return;
	if (copy.type == T_WDONE) {
		post_msg(c, T_ACK, sizeof(struct hdr) + rnd(&c->rng) % (MSGMAX - sizeof(struct hdr) + 1), 0, 0);
		c->round++;
		nrounds++;
		progress();
	}
}

static void cli_recv(struct conn *c, int slot, uint32_t len)
{
	struct hdr *h = (struct hdr *)rslot(c, slot);
	long bad;

	if (!c->hello) {
		if (len < sizeof(*h) || h->magic != MAGIC || h->type != T_HELLO || h->conn != c->conn || h->seq != 0) {
			fail(1, "conn %u: bad hello", c->conn);
			return;
		}
		c->rseq = 1;
		c->hello = 1;
		c->addr_w = h->addr_w;
		c->addr_r = h->addr_r;
		c->rkey_w = h->rkey;
		c->rkey_r = h->rkey_r;
		if (post_recv(c, slot))
			return;
		progress();
		if (o.barrier) {
			if (++ready == o.conns) {
				int i;

				msg("all %d connections up after %ld s", ready, (long)(time(NULL) - t_start));
				for (i = 0; i < ncs; i++)
					if (cs[i].state != C_FREE && cs[i].hello)
						start_round(&cs[i]);
			}
		} else {
			start_round(c);
		}
		return;
	}
	if (check_hdr(c, h, len))
		return;
	if (h->type != T_ACK) {
		fail(1, "conn %u: unexpected type %u", c->conn, h->type);
		return;
	}
	bad = verify(h + 1, seed(c->conn, K_ACK, h->seq), 0, len - sizeof(*h));
	if (bad >= 0)
		fail(1, "conn %u: ack seq %u: byte %ld of %u differs", c->conn, h->seq, bad, len);
	bytes += len;
	if (post_recv(c, slot))
		return;
	c->acked = 1;
	maybe_next(c);
}

static void cli_read_done(struct conn *c)
{
	long bad;

	if (c->rsrc)
		bad = verify(area(c) + WT, seed(c->conn, K_READ, 0), c->roff, c->rlen);
	else
		bad = verify(area(c) + WT, seed(c->conn, K_WRITE, c->round), c->roff, c->rlen);
	if (bad >= 0)
		fail(1, "conn %u: read round %u (%s +%d, %d B): byte %ld differs", c->conn, c->round,
		     c->rsrc ? "source" : "written", c->roff, c->rlen, bad);
	bytes += c->rlen;
}

static void poll_cq(void)
{
	struct ibv_wc wc[32];
	int n = 0, i;

	/*
	 * With one CPU, completions can come as fast as they are taken: the
	 * loop checks for a signal too.
	 */
	while (!stop && (n = ibv_poll_cq(cq, 32, wc)) > 0) {
		for (i = 0; i < n; i++) {
			uint32_t idx = wc[i].wr_id >> 12 & 0xfffff, g = wc[i].wr_id >> 32;
			int op = wc[i].wr_id & 15, slot = wc[i].wr_id >> 4 & 255;
			struct conn *c = idx < (uint32_t)ncs ? &cs[idx] : NULL;

			if (!c || c->gen != g || c->state == C_FREE)
				continue; /* a flushed WR of a connection already gone */
			if (wc[i].status != IBV_WC_SUCCESS) {
				if (wc[i].status == IBV_WC_WR_FLUSH_ERR &&
				    (op == OP_RECV || c->state == C_CLOSING || aborting))
					continue;
				if (wc[i].status == IBV_WC_WR_FLUSH_ERR && o.server && op == OP_SEND) {
					/* judged at the disconnect: see there */
					c->fsends++;
					continue;
				}
				fail(2, "conn %u: op %d: %s", c->conn, op, ibv_wc_status_str(wc[i].status));
				if (c->state != C_CLOSING) {
					c->state = C_CLOSING;
					rdma_disconnect(c->id);
				}
				continue;
			}
			progress();
			if (op == OP_RECV) {
				if (o.server)
					srv_recv(c, slot, wc[i].byte_len);
				else
					cli_recv(c, slot, wc[i].byte_len);
			} else if (!o.server) {
				if (op == OP_READ)
					cli_read_done(c);
				c->pend--;
				maybe_next(c);
			}
		}
	}
	if (n < 0)
		fail(2, "poll_cq: %d", n);
}

/* a connect request, its event already acked (so the id can be destroyed) */
static void accept_conn(struct rdma_cm_id *id, const struct pdata *p, struct rdma_conn_param *cp)
{
	struct conn *c;

	if (p->magic != MAGIC || p->kmax > (uint32_t)o.kmax) {
		/* the receive queue holds -k sends + WDONE */
		fail(2, p->magic != MAGIC ? "connect request without our private data"
					  : "client -k %u above the server's -k %d", p->kmax, o.kmax);
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	c = setup_ctx(id->verbs) ? NULL : new_conn();
	if (!c) {
		fail(2, "cannot take connection %u (active %d)", p->conn, active);
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		return;
	}
	c->id = id;
	c->id->context = c;
	c->conn = p->conn;
	c->rounds = p->rounds;
	c->rng = p->conn * 0x9E3779B97F4A7C15ull + 1;
	c->state = C_CONNECTING;
	active++;
	started++;
	if (conn_res(c)) {
		rdma_reject(c->id, NULL, 0);
		teardown(c);
		return;
	}
	if (rdma_accept(c->id, cp)) {
		fail(2, "accept: %s", strerror(errno));
		teardown(c);
	}
}

static void abort_all(const char *why)
{
	int i;

	if (!aborting)
		msg("aborting: %s", why);
	aborting = 1;
	set_status(3);
	for (i = 0; i < ncs; i++)
		if (cs[i].state != C_FREE)
			teardown(&cs[i]);
}

static void cm_event(void)
{
	struct rdma_cm_event *ev;

	while (!rdma_get_cm_event(ech, &ev)) {
		struct rdma_cm_event e = *ev;
		struct conn *c = ev->id->context;
		struct rdma_conn_param cp = { 0 };
		struct pdata pdat;

		if (e.event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			memset(&pdat, 0, sizeof(pdat));
			memcpy(&pdat, ev->param.conn.private_data,
			       ev->param.conn.private_data_len < sizeof(pdat) ? ev->param.conn.private_data_len
									  : sizeof(pdat));
			cp.responder_resources = ev->param.conn.responder_resources;
			cp.initiator_depth = ev->param.conn.initiator_depth;
			rdma_ack_cm_event(ev);
			accept_conn(e.id, &pdat, &cp);
			continue;
		}
		rdma_ack_cm_event(ev);
		progress();
		if (e.event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
			if (e.id == lid) {
				rdma_destroy_id(lid);
				lid = NULL;
			}
			abort_all("device removal");
			continue;
		}
		if (!c || c->state == C_FREE)
			continue;
		switch (e.event) {
		case RDMA_CM_EVENT_ADDR_RESOLVED:
			if (setup_ctx(c->id->verbs) || rdma_resolve_route(c->id, 5000)) {
				fail(2, "conn %u: resolve_route: %s", c->conn, strerror(errno));
				teardown(c);
			}
			break;
		case RDMA_CM_EVENT_ROUTE_RESOLVED:
			if (conn_res(c)) {
				teardown(c);
				break;
			}
			pdat = (struct pdata){ MAGIC, c->conn, c->rounds, o.kmax };
			cp.private_data = &pdat;
			cp.private_data_len = sizeof(pdat);
			cp.responder_resources = 2;
			cp.initiator_depth = 2;
			c->state = C_CONNECTING;
			if (rdma_connect(c->id, &cp)) {
				int n = c->conn;

				if (errno == EADDRINUSE && o.retry_inuse) {
					/* counted and retried (-E) */
					inuse++;
					teardown(c);
					finished--;
					start_conn(n);
					break;
				}
				fail(2, "conn %u: connect: %s", c->conn, strerror(errno));
				teardown(c);
			}
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			if (c->state == C_CONNECTING)
				c->state = C_UP;
			if (o.server)
				post_msg(c, T_HELLO, sizeof(struct hdr), 0, 0);
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			if (o.server ? c->round == c->rounds : c->round == c->rounds && c->state == C_CLOSING) {
				/*
				 * The client disconnects only after the ACK of its
				 * last round, so it received every Send of ours:
				 * one completed as flushed was delivered (a known
				 * rsiw bug, reported apart).
				 */
				dflush += c->fsends;
				good++;
			} else {
				failed++;
				fail(2, "conn %u: disconnected in round %u of %u%s", c->conn, c->round, c->rounds,
				     c->fsends ? " (with flushed Sends)" : "");
			}
			if (c->state != C_CLOSING)
				rdma_disconnect(c->id);
			teardown(c);
			break;
		default:
			failed++;
			fail(2, "conn %u: %s (status %d)", c->conn, rdma_event_str(e.event), e.status);
			teardown(c);
			break;
		}
	}
}

static void async_event(void)
{
	struct ibv_async_event ae;

	while (!ibv_get_async_event(ctx, &ae)) {
		enum ibv_event_type t = ae.event_type;
		struct conn *c = NULL;
		int i;

		if (t == IBV_EVENT_QP_FATAL || t == IBV_EVENT_QP_REQ_ERR || t == IBV_EVENT_QP_ACCESS_ERR)
			for (i = 0; i < ncs; i++)
				if (cs[i].state != C_FREE && cs[i].id && cs[i].id->qp == ae.element.qp)
					c = &cs[i];
		ibv_ack_async_event(&ae);
		msg("async event: %s", ibv_event_type_str(t));
		if (t == IBV_EVENT_PORT_ERR || t == IBV_EVENT_DEVICE_FATAL)
			abort_all(ibv_event_type_str(t));
		else if (c) {
			fail(2, "conn %u: %s", c->conn, ibv_event_type_str(t));
			if (c->state != C_CLOSING) {
				c->state = C_CLOSING;
				rdma_disconnect(c->id);
			}
		}
	}
}

static void on_signal(int s) { stop = s; }

static void usage(void)
{
	fprintf(stderr,
		"usage: rsiw_stress -s -a ADDR [-p PORT] [-c MAXCONC] [-n CONNS] [-T]\n"
		"       rsiw_stress -a ADDR [-p PORT] [-n CONNS] [-c CONC] [-r ROUNDS] [-R] [-k SENDS]\n"
		"                   [-B] [-d SECS] [-o swr] [-T] [-E] [-w WDOG] [-t TMAX] [-S SEED]\n"
		"  -n total connections (client, default 1; 0 with -d: until -d s passed;\n"
		"     server: exit after n, default: at SIGTERM)\n"
		"  -c concurrent connections, -r rounds per connection (-R: random 1..r),\n"
		"  -k up to k sends per round, -B start rounds when all -n are up,\n"
		"  -o operations: s(ends; always) w(rites) r(eads), -T tolerant of lost connections,\n"
		"  -E retry a connect that fails with EADDRINUSE (counted, reported)\n"
		"  -w fail after this many seconds without progress, -t overall limit\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct addrinfo *ai;
	char port[16];
	int ch;
	time_t last_report = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((ch = getopt(argc, argv, "sa:p:c:n:r:Rk:Bd:o:Tw:t:S:qE")) != -1) {
		switch (ch) {
		case 's': o.server = 1; break;
		case 'a': o.addr = optarg; break;
		case 'p': o.port = atoi(optarg); break;
		case 'c': o.conc = atoi(optarg); break;
		case 'n': o.conns = atoi(optarg); break;
		case 'r': o.rounds = atoi(optarg); break;
		case 'R': o.rand_rounds = 1; break;
		case 'k': o.kmax = atoi(optarg); break;
		case 'B': o.barrier = 1; break;
		case 'd': o.dur = atoi(optarg); break;
		case 'o': o.ops = (strchr(optarg, 'w') ? 2 : 0) | (strchr(optarg, 'r') ? 4 : 0) | 1; break;
		case 'T': o.strict = 0; break;
		case 'w': o.wdog = atoi(optarg); break;
		case 't': o.tmax = atoi(optarg); break;
		case 'S': o.seed = atoi(optarg); break;
		case 'q': o.quiet = 1; break;
		case 'E': o.retry_inuse = 1; break;
		default: usage();
		}
	}
	if (!o.addr || o.conc < 1 || o.rounds < 1 || o.kmax < 1 || o.kmax > 64)
		usage();
	if (o.conns < 0) /* default: a client makes 1, a server serves until a signal */
		o.conns = !o.server;
	if (o.barrier)
		o.conc = o.conns;
	ncs = o.conc;
	cs = calloc(ncs, sizeof(*cs));
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	ech = rdma_create_event_channel();
	if (!ech || !cs) {
		perror("event channel");
		return 2;
	}
	fcntl(ech->fd, F_SETFL, fcntl(ech->fd, F_GETFL) | O_NONBLOCK);
	t_start = time(NULL);
	progress();
	if (o.server) {
		snprintf(port, sizeof(port), "%d", o.port);
		if (getaddrinfo(o.addr, port, NULL, &ai) || rdma_create_id(ech, &lid, NULL, RDMA_PS_TCP) ||
		    rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, 1024)) {
			perror("server: listen");
			return 2;
		}
		freeaddrinfo(ai);
		printf("listening\n");
	}
	for (;;) {
		struct pollfd pf[3] = { { ech->fd, POLLIN, 0 } };
		int nf = 1, dur_over = o.dur && time(NULL) - t_start >= o.dur;
		time_t now;

		if (!o.server && !aborting && !stop)
			while (active < o.conc && (o.conns ? started < o.conns : !dur_over))
				start_conn(-1);
		if (o.server ? (o.conns && finished >= o.conns) : (!active && (o.conns ? started >= o.conns : dur_over)))
			break;
		if (aborting && !active)
			break;
		if (stop) {
			int st = status;

			abort_all("signal");
			status = st;
			break;
		}
		now = time(NULL);
		if (o.server && !active)
			progress();
		if (now - last_progress > o.wdog) {
			fail(4, "no progress for %d s (active %d, started %d, finished %d)", o.wdog, active, started,
			     finished);
			abort_all("watchdog");
			status = 4;
			break;
		}
		if (now - t_start > o.tmax) {
			fail(4, "time limit %d s reached", o.tmax);
			abort_all("time limit");
			status = 4;
			break;
		}
		if (!o.quiet && now - last_report >= 10) {
			last_report = now;
			msg("t=%lds active %d finished %d good %d rounds %llu verified %llu B", (long)(now - t_start),
			    active, finished, good, (unsigned long long)nrounds, (unsigned long long)bytes);
		}
		if (cch) {
			pf[nf++] = (struct pollfd){ cch->fd, POLLIN, 0 };
			pf[nf++] = (struct pollfd){ ctx->async_fd, POLLIN, 0 };
		}
		if (poll(pf, nf, 200) < 0 && errno != EINTR)
			break;
		cm_event();
		if (cch) {
			struct ibv_cq *ecq;
			void *ectx;

			while (!ibv_get_cq_event(cch, &ecq, &ectx)) {
				ibv_ack_cq_events(ecq, 1);
				ibv_req_notify_cq(ecq, 0);
			}
			poll_cq();
			async_event();
		}
		if (status == 1)
			break;
	}
	if (status == 1)
		abort_all("data mismatch");
	if (lid)
		rdma_destroy_id(lid);
	if (cq)
		ibv_destroy_cq(cq);
	if (cch)
		ibv_destroy_comp_channel(cch);
	if (pd)
		ibv_dealloc_pd(pd);
	rdma_destroy_event_channel(ech);
	msg("done in %ld s: %d connections (%d complete, %d lost), %llu rounds, %llu bytes verified, status %d",
	    (long)(time(NULL) - t_start), finished, good, failed, (unsigned long long)nrounds,
	    (unsigned long long)bytes, status);
	if (inuse)
		msg("EADDRINUSE retries %d", inuse);
	if (dflush)
		msg("DELIVERED BUT FLUSHED %d Sends", dflush);
	if (!o.strict && status == 2)
		status = 0;
	return status;
}
