// SPDX-License-Identifier: GPL-2.0
/*
 * latpair: ping-pong latency of two RDMA paths, measured in ONE process
 * pair, alternating between the paths every few iterations.
 *
 * Under TCG on a shared host the guest's speed drifts by a factor of two
 * within seconds; perftest runs of two drivers, one after the other, then
 * compare two different machines. Here both connections (path A, path B:
 * e.g. rsiw on one veth pair, siw on another) are up at once, and the
 * client runs BLOCKS blocks of ITERS ping-pongs on each path, A then B in
 * even blocks, B then A in odd ones, so that both paths see the same
 * drift. Each iteration is timed with the TSC, as perftest does.
 *
 *   latpair -s ADDR_A,ADDR_B [options]   server (one connection per path)
 *   latpair -c ADDR_A,ADDR_B [options]   client
 *
 * Options (both sides must be given the same):
 *   -p PORT    rdma_cm port (default 19000)
 *   -t TEST    write (default), send or read; as perftest's ib_*_lat:
 *              write and send report half the round trip, read the whole
 *              RDMA Read
 *   -z SIZE    message size in octets (default 64)
 *   -n BLOCKS  blocks (default 40)
 *   -k ITERS   ping-pongs per path and block (default 50)
 *   -w ITERS   warm-up ping-pongs per path first (default 200)
 *
 * The client prints per path the median and the 10th and 90th percentile
 * of all iterations (microseconds), the ratio A/B of the medians, and the
 * median of the per-block ratios (block median of A over block median of
 * B): a line "latpair TEST SIZE a_med b_med ratio block_ratio" for
 * scripts. Exit status 0 on success.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define NPATH 2
#define NRECV 16
#define MAXSIZE (1 << 20)

enum test { T_WRITE, T_SEND, T_READ };

struct info {
	uint64_t addr;
	uint32_t rkey;
	uint32_t pad;
};

struct path {
	struct rdma_cm_id *lid, *id;
	char *sbuf, *rbuf;		/* source of Writes/Sends; target */
	struct ibv_mr *smr, *rmr;
	struct info peer;
	uint8_t seq;
};

static enum test test = T_WRITE;
static size_t size = 64;
static int blocks = 40, iters = 50, warm = 200;
static const char *port = "19000";
static struct path paths[NPATH];

static void die(const char *what)
{
	fprintf(stderr, "latpair: %s: %s\n", what, strerror(errno));
	exit(2);
}

static struct rdma_addrinfo *resolve(const char *addr, int passive)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;

	if (passive)
		hints.ai_flags = RAI_PASSIVE;
	if (rdma_getaddrinfo(addr, port, &hints, &res))
		die("rdma_getaddrinfo");
	return res;
}

static void qp_attr(struct ibv_qp_init_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->cap.max_send_wr = 16;
	a->cap.max_recv_wr = NRECV;
	a->cap.max_send_sge = 1;
	a->cap.max_recv_sge = 1;
	a->qp_type = IBV_QPT_RC;
	a->sq_sig_all = 1;
}

static void poll_one(struct ibv_cq *cq, const char *what)
{
	struct ibv_wc wc;
	int n;

	do
		n = ibv_poll_cq(cq, 1, &wc);
	while (n == 0);
	if (n < 0 || wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "latpair: %s: %s\n", what,
			n < 0 ? "poll failed" : ibv_wc_status_str(wc.status));
		exit(2);
	}
}

static void post_recv(struct path *p)
{
	if (rdma_post_recv(p->id, NULL, p->rbuf, size, p->rmr))
		die("post_recv");
}

static void post_send(struct path *p, size_t len)
{
	if (rdma_post_send(p->id, NULL, p->sbuf, len, p->smr, 0))
		die("post_send");
}

/* Buffers and receives of one path. */
static void setup(struct path *p)
{
	int i;

	p->sbuf = aligned_alloc(4096, MAXSIZE);
	p->rbuf = aligned_alloc(4096, MAXSIZE);
	if (!p->sbuf || !p->rbuf)
		die("alloc");
	memset(p->sbuf, 0, MAXSIZE);
	memset(p->rbuf, 0, MAXSIZE);
	p->smr = ibv_reg_mr(p->id->pd, p->sbuf, MAXSIZE,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	p->rmr = ibv_reg_mr(p->id->pd, p->rbuf, MAXSIZE,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ);
	if (!p->smr || !p->rmr)
		die("reg_mr");
	for (i = 0; i < NRECV; i++)
		post_recv(p);
}

/* After the connection: each side Sends its info, then takes the peer's. */
static void exchange(struct path *p)
{
	struct info mine = {
		.addr = (uintptr_t)(test == T_READ ? p->sbuf : p->rbuf),
		.rkey = test == T_READ ? p->smr->rkey : p->rmr->rkey,
	};

	memcpy(p->sbuf, &mine, sizeof(mine));
	post_send(p, sizeof(mine));
	poll_one(p->id->send_cq, "info send");
	poll_one(p->id->recv_cq, "info recv");
	memcpy(&p->peer, p->rbuf, sizeof(p->peer));
	memset(p->rbuf, 0, sizeof(p->peer));
	memset(p->sbuf, 0, sizeof(p->peer));
	post_recv(p);
}

static void post_rdma(struct path *p, enum ibv_wr_opcode op, char *local,
		      struct ibv_mr *mr)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)local, .length = size, .lkey = mr->lkey,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = p->peer.addr, .rkey = p->peer.rkey },
	}, *bad;

	if (ibv_post_send(p->id->qp, &wr, &bad))
		die("ibv_post_send");
}

static uint8_t next_seq(struct path *p)
{
	if (++p->seq == 0)
		p->seq = 1;
	return p->seq;
}

/* One ping-pong (client: ping then wait; server: wait then pong). */
static void ping(struct path *p, int client)
{
	char *last = p->rbuf + size - 1;
	uint8_t s;

	switch (test) {
	case T_WRITE:
		if (client) {
			s = next_seq(p);
			p->sbuf[size - 1] = (char)s;
			post_rdma(p, IBV_WR_RDMA_WRITE, p->sbuf, p->smr);
			poll_one(p->id->send_cq, "write");
			while (__atomic_load_n(last, __ATOMIC_ACQUIRE) != (char)s)
				;
		} else {
			s = next_seq(p);
			while (__atomic_load_n(last, __ATOMIC_ACQUIRE) != (char)s)
				;
			p->sbuf[size - 1] = (char)s;
			post_rdma(p, IBV_WR_RDMA_WRITE, p->sbuf, p->smr);
			poll_one(p->id->send_cq, "write");
		}
		break;
	case T_SEND:
		if (client) {
			post_send(p, size);
			poll_one(p->id->send_cq, "send");
			poll_one(p->id->recv_cq, "recv");
			post_recv(p);
		} else {
			poll_one(p->id->recv_cq, "recv");
			post_recv(p);
			post_send(p, size);
			poll_one(p->id->send_cq, "send");
		}
		break;
	case T_READ:
		if (client) {
			post_rdma(p, IBV_WR_RDMA_READ, p->rbuf, p->rmr);
			poll_one(p->id->send_cq, "read");
		}
		break;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t pct(uint64_t *v, size_t n, int p)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[(n - 1) * p / 100];
}

static double ns_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The block schedule, the same on both sides: A B, B A, A B, ... */
static int path_at(int block, int slot)
{
	return (block & 1) ? !slot : slot;
}

static void run(int client)
{
	size_t n = (size_t)blocks * iters;
	uint64_t *all[NPATH], *blk[NPATH], t0;
	double *ratio = calloc(blocks, sizeof(double));
	double c0 = 0, c1, ns0 = 0, per_us, med[NPATH], div;
	int b, s, it, k;

	for (k = 0; k < NPATH; k++) {
		all[k] = calloc(n, sizeof(uint64_t));
		blk[k] = calloc(iters, sizeof(uint64_t));
		if (!all[k] || !blk[k])
			die("calloc");
		for (it = 0; it < warm; it++)
			ping(&paths[k], client);
	}
	if (!ratio)
		die("calloc");
	if (client) {
		ns0 = ns_now();
		c0 = (double)__rdtsc();
	}
	for (b = 0; b < blocks; b++) {
		for (s = 0; s < NPATH; s++) {
			k = path_at(b, s);
			for (it = 0; it < iters; it++) {
				t0 = __rdtsc();
				ping(&paths[k], client);
				all[k][(size_t)b * iters + it] = __rdtsc() - t0;
			}
		}
	}
	/* The end: one Send per path, so that a read server may exit. */
	for (k = 0; k < NPATH; k++) {
		if (client) {
			post_send(&paths[k], 1);
			poll_one(paths[k].id->send_cq, "end send");
		} else {
			poll_one(paths[k].id->recv_cq, "end recv");
		}
	}
	if (!client)
		goto out;
	c1 = (double)__rdtsc();
	per_us = (c1 - c0) / ((ns_now() - ns0) / 1e3);
	div = test == T_READ ? 1.0 : 2.0;
	for (b = 0; b < blocks; b++) {
		double m[NPATH];

		for (k = 0; k < NPATH; k++) {
			memcpy(blk[k], all[k] + (size_t)b * iters,
			       iters * sizeof(uint64_t));
			m[k] = (double)pct(blk[k], iters, 50);
		}
		ratio[b] = m[0] / m[1];
	}
	qsort(ratio, blocks, sizeof(double), cmp_dbl);
	for (k = 0; k < NPATH; k++) {
		med[k] = pct(all[k], n, 50) / per_us / div;
		printf("path %c: median %.2f us, p10 %.2f, p90 %.2f (%zu iterations)\n",
		       'A' + k, med[k], pct(all[k], n, 10) / per_us / div,
		       pct(all[k], n, 90) / per_us / div, n);
	}
	printf("A/B: %.3f (median of %d block ratios %.3f, range %.3f-%.3f)\n",
	       med[0] / med[1], blocks, ratio[blocks / 2], ratio[0],
	       ratio[blocks - 1]);
	printf("latpair %s %zu %.2f %.2f %.3f %.3f\n",
	       test == T_WRITE ? "write" : test == T_SEND ? "send" : "read",
	       size, med[0], med[1], med[0] / med[1], ratio[blocks / 2]);
out:
	for (k = 0; k < NPATH; k++) {
		free(all[k]);
		free(blk[k]);
	}
	free(ratio);
}

int main(int argc, char **argv)
{
	char *addrs = NULL, *sep;
	const char *addr[NPATH];
	struct rdma_conn_param cp = {
		.responder_resources = 1, .initiator_depth = 1,
	};
	struct ibv_qp_init_attr a;
	int server = -1, o, k;

	while ((o = getopt(argc, argv, "s:c:p:t:z:n:k:w:")) != -1) {
		switch (o) {
		case 's':
		case 'c':
			server = o == 's';
			addrs = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 't':
			test = !strcmp(optarg, "send") ? T_SEND :
			       !strcmp(optarg, "read") ? T_READ : T_WRITE;
			break;
		case 'z':
			size = strtoul(optarg, NULL, 0);
			break;
		case 'n':
			blocks = atoi(optarg);
			break;
		case 'k':
			iters = atoi(optarg);
			break;
		case 'w':
			warm = atoi(optarg);
			break;
		default:
			return 2;
		}
	}
	sep = addrs ? strchr(addrs, ',') : NULL;
	if (server < 0 || !sep || size < 1 ||
	    size > MAXSIZE || blocks < 1 || iters < 1 || warm < 0) {
		fprintf(stderr, "usage: latpair -s|-c ADDR_A,ADDR_B [-p PORT] [-t write|send|read] [-z SIZE] [-n BLOCKS] [-k ITERS] [-w WARM]\n");
		return 2;
	}
	*sep = 0;
	addr[0] = addrs;
	addr[1] = sep + 1;
	if (server) {
		for (k = 0; k < NPATH; k++) {
			struct rdma_addrinfo *res = resolve(addr[k], 1);

			/* rdma_create_ep writes the CQs it made into *attr. */
			qp_attr(&a);
			if (rdma_create_ep(&paths[k].lid, res, NULL, &a) ||
			    rdma_listen(paths[k].lid, 1))
				die("listen");
			rdma_freeaddrinfo(res);
		}
		printf("listening\n");
		fflush(stdout);
		for (k = 0; k < NPATH; k++) {
			if (rdma_get_request(paths[k].lid, &paths[k].id))
				die("rdma_get_request");
			setup(&paths[k]);
			if (rdma_accept(paths[k].id, &cp))
				die("rdma_accept");
			exchange(&paths[k]);
		}
	} else {
		for (k = 0; k < NPATH; k++) {
			struct rdma_addrinfo *res = resolve(addr[k], 0);

			qp_attr(&a);
			if (rdma_create_ep(&paths[k].id, res, NULL, &a))
				die("rdma_create_ep");
			rdma_freeaddrinfo(res);
			setup(&paths[k]);
			if (rdma_connect(paths[k].id, &cp)) {
				fprintf(stderr, "latpair: path %c (%s): ", 'A' + k, addr[k]);
				die("rdma_connect");
			}
			exchange(&paths[k]);
		}
	}
	run(!server);
	for (k = 0; k < NPATH; k++)
		rdma_disconnect(paths[k].id);
	return 0;
}
