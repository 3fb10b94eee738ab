// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw_unplug: an application that holds its device while the device
 * goes (`rdma link delete`, the net device deleted, `rmmod`).
 *
 *   rsiw_unplug -s ADDR [-p PORT] [-t SECS] [-n]   server
 *   rsiw_unplug -c ADDR [-p PORT] [-t SECS] [-n]   client
 *
 * Both connect through rdma_cm with their own PD, CQ (with a completion
 * channel), QP and a registered buffer, move one Send each way, post
 * receives and print "ready". Then each waits (up to SECS, default 60) on
 * its async event file and its rdma_cm channel:
 *
 * - IBV_EVENT_DEVICE_FATAL: its device went. It then checks that its
 *   registered memory is no longer pinned (VmPin back to 0), that its
 *   verbs calls that go to the kernel fail with an errno and do not
 *   crash (post_send's doorbell, get_cq_event on the completion channel,
 *   query_qp, modify_qp, create_cq, create_qp, alloc_pd, reg_mr,
 *   query_port); shows what the calls that libsiw serves in user space
 *   alone do (poll_cq, req_notify_cq, post_recv: the rings it maps) and
 *   the kernel's poll_cq command (which siw devices do not offer: their
 *   uverbs command mask has no POLL_CQ); reads and writes every
 *   page of its mappings of the device (the rings); frees everything
 *   (destroy calls succeed: rdma-core takes EIO from a disassociated
 *   device as done) and exits.
 * - with -n (its device stays, the peer's goes): the connection's end
 *   (DISCONNECTED, or the QP's fatal event); it frees everything and
 *   exits.
 *
 * Exit status 0 when every check passed, 1 when one failed, 2 when the
 * setup failed; one line per check on stdout ("ok: ..." / "FAIL: ...").
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define BUF 4096
#define MLEN 64
#define NRECV 4

static int failures;

static void result(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAIL", what);
	fflush(stdout);
	if (!ok)
		failures++;
}

static void info(const char *what)
{
	printf("# %s\n", what);
	fflush(stdout);
}

static void die(const char *what)
{
	fprintf(stderr, "rsiw_unplug: %s: %s\n", what, strerror(errno));
	exit(2);
}

struct conn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *lid, *id;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf;
};

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* How long (s) the setup waits for an event or a completion: generous,
 * as a debug kernel under TCG on a loaded machine is slow. */
#define SETUP_WAIT 120

/* Waits (SETUP_WAIT s at most) for the next rdma_cm event, which must be
 * want. */
static struct rdma_cm_id *cm_wait(struct conn *c, enum rdma_cm_event_type want)
{
	struct rdma_cm_event *e;
	struct rdma_cm_id *id;
	struct pollfd p = { .fd = c->ch->fd, .events = POLLIN };

	if (poll(&p, 1, SETUP_WAIT * 1000) != 1)
		die("no rdma_cm event within SETUP_WAIT s");
	if (rdma_get_cm_event(c->ch, &e))
		die("rdma_get_cm_event");
	if (e->event != want) {
		fprintf(stderr, "rsiw_unplug: got %s, wanted %s (status %d)\n",
			rdma_event_str(e->event), rdma_event_str(want),
			e->status);
		exit(2);
	}
	id = e->id;
	rdma_ack_cm_event(e);
	return id;
}

/* Resolves the peer's address as rping and perftest do: a 2 s timeout,
 * repeated on RDMA_CM_EVENT_ADDR_ERROR for up to SETUP_WAIT s. The
 * timeout is not only an upper bound: when the first lookup finds no
 * neighbour entry yet, the RDMA core (ib_addr) looks again when a
 * neighbour update arrives or when the timeout is up, and an update that
 * lands before the request is queued is missed. With a timeout of
 * SETUP_WAIT s such a client sat for minutes without an event in loaded
 * make check runs (the ARP reply raced the request under TCG). */
static void resolve_addr(struct conn *c, struct sockaddr *dst)
{
	struct rdma_cm_event *e;
	struct pollfd p = { .fd = c->ch->fd, .events = POLLIN };
	double t0 = now();
	enum rdma_cm_event_type ev;
	int status;

	for (;;) {
		if (rdma_resolve_addr(c->id, NULL, dst, 2000))
			die("rdma_resolve_addr");
		if (poll(&p, 1, SETUP_WAIT * 1000) != 1)
			die("no rdma_cm event within SETUP_WAIT s");
		if (rdma_get_cm_event(c->ch, &e))
			die("rdma_get_cm_event");
		ev = e->event;
		status = e->status;
		rdma_ack_cm_event(e);
		if (ev == RDMA_CM_EVENT_ADDR_RESOLVED)
			return;
		if (ev != RDMA_CM_EVENT_ADDR_ERROR || now() - t0 > SETUP_WAIT) {
			fprintf(stderr,
				"rsiw_unplug: got %s (status %d), wanted %s\n",
				rdma_event_str(ev), status,
				rdma_event_str(RDMA_CM_EVENT_ADDR_RESOLVED));
			exit(2);
		}
	}
}

/* PD, completion channel, CQ, QP, buffer and receives of c->id. */
static void resources(struct conn *c)
{
	struct ibv_qp_init_attr a = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};
	int i;

	c->ctx = c->id->verbs;
	c->pd = ibv_alloc_pd(c->ctx);
	c->cc = ibv_create_comp_channel(c->ctx);
	if (!c->pd || !c->cc)
		die("alloc_pd/create_comp_channel");
	c->cq = ibv_create_cq(c->ctx, 16, NULL, c->cc, 0);
	if (!c->cq)
		die("create_cq");
	a.send_cq = a.recv_cq = c->cq;
	if (rdma_create_qp(c->id, c->pd, &a))
		die("rdma_create_qp");
	c->qp = c->id->qp;
	c->buf = calloc(1, BUF);
	c->mr = c->buf ? ibv_reg_mr(c->pd, c->buf, BUF,
				    IBV_ACCESS_LOCAL_WRITE |
					    IBV_ACCESS_REMOTE_WRITE) :
			 NULL;
	if (!c->mr)
		die("reg_mr");
	for (i = 0; i < NRECV; i++) {
		struct ibv_sge s = { (uintptr_t)c->buf + (i + 1) * MLEN, MLEN,
				     c->mr->lkey };
		struct ibv_recv_wr w = { .wr_id = i, .sg_list = &s,
					 .num_sge = 1 }, *bad;

		if (ibv_post_recv(c->qp, &w, &bad))
			die("post_recv");
	}
}

static int post_send(struct conn *c)
{
	struct ibv_sge s = { (uintptr_t)c->buf, MLEN, c->mr->lkey };
	struct ibv_send_wr w = { .wr_id = 100, .sg_list = &s, .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED }, *bad;

	return ibv_post_send(c->qp, &w, &bad);
}

/* Polls (SETUP_WAIT s at most) for one completion of opcode op. */
static void wait_wcs(struct conn *c, int want_send, int want_recv)
{
	double end = now() + SETUP_WAIT;
	struct ibv_wc wc;
	int n;

	while (now() < end && (want_send || want_recv)) {
		n = ibv_poll_cq(c->cq, 1, &wc);
		if (n < 0)
			die("poll_cq");
		if (n == 0) {
			usleep(1000);
			continue;
		}
		if (wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_SEND &&
		    want_send) {
			want_send = 0;
		} else if (wc.status == IBV_WC_SUCCESS &&
			   wc.opcode == IBV_WC_RECV && want_recv) {
			want_recv = 0;
		} else {
			fprintf(stderr, "rsiw_unplug: completion %s, opcode %d\n",
				ibv_wc_status_str(wc.status), wc.opcode);
			exit(2);
		}
	}
	if (!want_send && !want_recv)
		return;
	errno = ETIMEDOUT;
	die("no completion within SETUP_WAIT s");
}

/* The kernel's poll_cq command on the uverbs file (libsiw polls in user
 * space): returns the count or -1 with errno. */
static int kernel_poll(struct conn *c)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_poll_cq cmd;
	} req;
	struct {
		struct ib_uverbs_poll_cq_resp r;
		struct ib_uverbs_wc wc[1];
	} resp;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	req.hdr.command = IB_USER_VERBS_CMD_POLL_CQ;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.cq_handle = c->cq->handle;
	req.cmd.ne = 1;
	if (write(c->ctx->cmd_fd, &req, sizeof(req)) != sizeof(req))
		return -1;
	return resp.r.count;
}

/* Reads and writes back every word of every mapping of a uverbs device
 * (the rings libsiw maps); returns the number of pages, -1 if none. */
static long touch_rings(int write)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	long pages = 0;
	unsigned long sum = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;
		volatile uint64_t *p;

		if (!strstr(line, "/dev/infiniband/uverbs") ||
		    sscanf(line, "%lx-%lx", &a, &b) != 2)
			continue;
		for (p = (volatile uint64_t *)a; (unsigned long)p < b; p++) {
			uint64_t v = *p;

			sum += v;
			if (write) {
				*p = ~v;
				*p = v;
			}
		}
		pages += (b - a) / 4096;
	}
	fclose(f);
	if (sum == 1)
		info("checksum of the rings is 1");
	return pages;
}

/* The process's pinned memory (VmPin, kB), -1 if unknown. */
static long vmpin(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[128];
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* What its calls do once the device is gone. */
static void after_fatal(struct conn *c, long pinned)
{
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	struct ibv_qp_init_attr a = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.send_cq = c->cq,
		.recv_cq = c->cq,
	};
	struct ibv_qp_init_attr qia;
	struct ibv_port_attr pa;
	struct ibv_wc wc[16];
	char msg[160];
	void *p;
	int r, n;
	long pages;

	/* The registered buffer's pages are unpinned (at once or after an
	 * RCU grace period). */
	{
		double end = now() + 5;
		long kb;

		while ((kb = vmpin()) > 0 && now() < end)
			usleep(50000);
		snprintf(msg, sizeof(msg),
			 "its registered memory is unpinned: VmPin %ld kB before, %ld kB now",
			 pinned, kb);
		result(pinned > 0 && kb == 0, msg);
	}
	errno = 0;
	r = post_send(c);
	snprintf(msg, sizeof(msg), "post_send fails: returns %d, errno %s", r,
		 strerror(errno));
	result(r != 0, msg);
	/* The completion channel (non-blocking): events the device left,
	 * then EIO. */
	for (n = 0; n < 8; n++) {
		struct ibv_cq *ecq;
		void *ectx;

		errno = 0;
		if (ibv_get_cq_event(c->cc, &ecq, &ectx))
			break;
		ibv_ack_cq_events(ecq, 1);
	}
	snprintf(msg, sizeof(msg),
		 "get_cq_event fails after %d event(s): %s", n,
		 strerror(errno));
	result(n < 8 && errno && errno != EAGAIN, msg);
	r = ibv_query_qp(c->qp, &qa, IBV_QP_STATE, &qia);
	snprintf(msg, sizeof(msg), "query_qp fails: %s", strerror(r));
	result(r != 0, msg);
	qa.qp_state = IBV_QPS_ERR;
	r = ibv_modify_qp(c->qp, &qa, IBV_QP_STATE);
	snprintf(msg, sizeof(msg), "modify_qp fails: %s", strerror(r));
	result(r != 0, msg);
	errno = 0;
	p = ibv_create_cq(c->ctx, 8, NULL, NULL, 0);
	snprintf(msg, sizeof(msg), "create_cq fails: %s", strerror(errno));
	result(!p && errno, msg);
	errno = 0;
	p = ibv_create_qp(c->pd, &a);
	snprintf(msg, sizeof(msg), "create_qp fails: %s", strerror(errno));
	result(!p && errno, msg);
	errno = 0;
	p = ibv_alloc_pd(c->ctx);
	snprintf(msg, sizeof(msg), "alloc_pd fails: %s", strerror(errno));
	result(!p && errno, msg);
	errno = 0;
	p = ibv_reg_mr(c->pd, c->buf, BUF, IBV_ACCESS_LOCAL_WRITE);
	snprintf(msg, sizeof(msg), "reg_mr fails: %s", strerror(errno));
	result(!p && errno, msg);
	r = ibv_query_port(c->ctx, 1, &pa);
	snprintf(msg, sizeof(msg), "query_port fails: %s", strerror(r));
	result(r != 0, msg);
	errno = 0;
	r = kernel_poll(c);
	snprintf(msg, sizeof(msg),
		 "the kernel's poll_cq command: %d, %s (before: see above)", r,
		 strerror(errno));
	info(msg);

	/* Served by libsiw in user space, on its rings: shown, not judged. */
	r = ibv_poll_cq(c->cq, 16, wc);
	snprintf(msg, sizeof(msg),
		 "poll_cq in user space: %d completion(s)%s%s", r,
		 r > 0 ? ", the first " : "",
		 r > 0 ? ibv_wc_status_str(wc[0].status) : "");
	info(msg);
	r = ibv_req_notify_cq(c->cq, 0);
	snprintf(msg, sizeof(msg), "req_notify_cq in user space: %d", r);
	info(msg);
	{
		struct ibv_sge s = { (uintptr_t)c->buf, MLEN, c->mr->lkey };
		struct ibv_recv_wr w = { .wr_id = 9, .sg_list = &s,
					 .num_sge = 1 }, *bad;

		r = ibv_post_recv(c->qp, &w, &bad);
	}
	snprintf(msg, sizeof(msg), "post_recv in user space: %d", r);
	info(msg);

	pages = touch_rings(1);
	snprintf(msg, sizeof(msg),
		 "its mappings of the rings read and written: %ld pages",
		 pages);
	result(pages > 0, msg);
}

/* Frees everything; destroy calls must succeed. */
static void teardown(struct conn *c)
{
	int r;
	char msg[160];

	rdma_destroy_qp(c->id);
	r = ibv_dereg_mr(c->mr);
	snprintf(msg, sizeof(msg), "dereg_mr: %s", strerror(r));
	result(r == 0, msg);
	r = ibv_destroy_cq(c->cq);
	snprintf(msg, sizeof(msg), "destroy_cq: %s", strerror(r));
	result(r == 0, msg);
	r = ibv_destroy_comp_channel(c->cc);
	snprintf(msg, sizeof(msg), "destroy_comp_channel: %s", strerror(r));
	result(r == 0, msg);
	r = ibv_dealloc_pd(c->pd);
	snprintf(msg, sizeof(msg), "dealloc_pd: %s", strerror(r));
	result(r == 0, msg);
	r = touch_rings(0);
	snprintf(msg, sizeof(msg), "no ring mapped after destroy (%d pages)",
		 r);
	result(r == 0, msg);
	rdma_destroy_id(c->id);
	if (c->lid)
		rdma_destroy_id(c->lid);
	rdma_destroy_event_channel(c->ch);
	free(c->buf);
}

static void setup(struct conn *c, const char *addr, const char *port,
		  int server)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct rdma_conn_param cp = { .responder_resources = 1,
				      .initiator_depth = 1 };

	if (server)
		hints.ai_flags = RAI_PASSIVE;
	if (rdma_getaddrinfo(addr, port, &hints, &res))
		die("rdma_getaddrinfo");
	c->ch = rdma_create_event_channel();
	if (!c->ch)
		die("rdma_create_event_channel");
	if (server) {
		if (rdma_create_id(c->ch, &c->lid, NULL, RDMA_PS_TCP) ||
		    rdma_bind_addr(c->lid, res->ai_src_addr) ||
		    rdma_listen(c->lid, 1))
			die("listen");
		printf("listening\n");
		fflush(stdout);
		c->id = cm_wait(c, RDMA_CM_EVENT_CONNECT_REQUEST);
		resources(c);
		if (rdma_accept(c->id, &cp))
			die("rdma_accept");
	} else {
		if (rdma_create_id(c->ch, &c->id, NULL, RDMA_PS_TCP))
			die("rdma_create_id");
		resolve_addr(c, res->ai_dst_addr);
		if (rdma_resolve_route(c->id, SETUP_WAIT * 1000))
			die("resolve_route");
		cm_wait(c, RDMA_CM_EVENT_ROUTE_RESOLVED);
		resources(c);
		if (rdma_connect(c->id, &cp))
			die("rdma_connect");
	}
	cm_wait(c, RDMA_CM_EVENT_ESTABLISHED);
	rdma_freeaddrinfo(res);
	/* One Send each way: the client first. The client's Send completion
	 * and its Receive's (of the server's answer) share a CQ in no set
	 * order: completions are ordered within a queue, not across the
	 * send and receive queues, and rsiw's receive path may complete the
	 * answer before its transmit path has completed the Send. */
	if (!server) {
		if (post_send(c))
			die("post_send");
		wait_wcs(c, 1, 1);
	} else {
		wait_wcs(c, 0, 1);
		if (post_send(c))
			die("post_send");
		wait_wcs(c, 1, 0);
	}
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *port = "7490";
	int server = 0, peer_only = 0, secs = 60, fatal = 0, gone = 0, o;
	struct conn c = { 0 };
	char msg[160];
	double t0, end;
	long pinned;

	while ((o = getopt(argc, argv, "s:c:p:t:n")) != -1) {
		switch (o) {
		case 's':
			server = 1;
			/* fall through */
		case 'c':
			addr = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 't':
			secs = atoi(optarg);
			break;
		case 'n':
			peer_only = 1;
			break;
		default:
			return 2;
		}
	}
	if (!addr)
		return 2;
	setup(&c, addr, port, server);
	errno = 0;
	o = kernel_poll(&c);
	snprintf(msg, sizeof(msg), "the kernel's poll_cq command before: %d, %s",
		 o, strerror(errno));
	info(msg);
	/* Armed: the flush completions may leave an event on the channel. */
	if (ibv_req_notify_cq(c.cq, 0) ||
	    fcntl(c.cc->fd, F_SETFL, fcntl(c.cc->fd, F_GETFL) | O_NONBLOCK))
		die("req_notify_cq/O_NONBLOCK");
	pinned = vmpin();
	printf("ready\n");
	fflush(stdout);

	t0 = now();
	end = t0 + secs;
	while (!fatal && !(peer_only && gone) && now() < end) {
		struct pollfd p[2] = {
			{ .fd = c.ctx->async_fd, .events = POLLIN },
			{ .fd = c.ch->fd, .events = POLLIN },
		};

		if (poll(p, 2, 200) < 0)
			die("poll");
		if (p[0].revents) {
			struct ibv_async_event e;

			if (ibv_get_async_event(c.ctx, &e)) {
				snprintf(msg, sizeof(msg),
					 "ibv_get_async_event: %s",
					 strerror(errno));
				info(msg);
				usleep(100000);
				continue;
			}
			snprintf(msg, sizeof(msg), "async event %s after %.2f s",
				 ibv_event_type_str(e.event_type), now() - t0);
			info(msg);
			if (e.event_type == IBV_EVENT_DEVICE_FATAL)
				fatal = 1;
			if (e.event_type == IBV_EVENT_QP_FATAL)
				gone = 1;
			ibv_ack_async_event(&e);
		}
		if (p[1].revents) {
			struct rdma_cm_event *e;

			if (rdma_get_cm_event(c.ch, &e) == 0) {
				snprintf(msg, sizeof(msg),
					 "rdma_cm event %s after %.2f s",
					 rdma_event_str(e->event), now() - t0);
				info(msg);
				if (e->event == RDMA_CM_EVENT_DISCONNECTED ||
				    e->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
					gone = 1;
				rdma_ack_cm_event(e);
			}
		}
	}
	if (peer_only) {
		result(gone && !fatal, "the peer's device went: connection ended, own device stays");
	} else {
		snprintf(msg, sizeof(msg),
			 "IBV_EVENT_DEVICE_FATAL from ibv_get_async_event within %d s",
			 secs);
		result(fatal, msg);
		if (fatal)
			after_fatal(&c, pinned);
	}
	teardown(&c);
	return failures ? 1 : 0;
}
