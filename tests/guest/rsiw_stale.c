// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw_stale: STags of deregistered memory stop working at once, also
 * right after they were used (each side of a QP remembers the last STag
 * it looked up).
 *
 *   rsiw_stale -s ADDR [-p PORT]   server (two connections, then exit)
 *   rsiw_stale -c ADDR [-p PORT]   client
 *
 * Connection 1 (the receive side's cache):
 *   server: registers X (4 KiB, remote write), sends the client X's
 *     address and STag;
 *   client: RDMA Writes 64 octets of 0xa1 into X, then Sends "dereg";
 *   server: checks X, fills it with 0x55, deregisters it, Sends "done";
 *   client: RDMA Writes 64 octets of 0xb2 to X's STag again;
 *   server: its QP must go to error (the pending receive flushes) and X
 *     must still hold only 0x55.
 * Connection 2 (the transmit side's cache):
 *   client: Sends from MR S, deregisters S, posts a Send naming S's lkey:
 *     it must complete with a local protection error.
 * Connection 3 (on PORT + 1; a receive's PD):
 *   server: its QP is in one PD and takes its receives from an SRQ of
 *     another PD, whose receive buffer is registered in the SRQ's PD (as
 *     siw checks it: a receive's memory belongs to the PD of the queue it
 *     was posted to);
 *   client: one Send; the server's receive must complete successfully
 *     with the Send's octets.
 *
 * Exit status 0 when every check passed; one line per check on stdout.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define XLEN 4096
#define MLEN 64

struct info {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

static int failures;

static void result(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAIL", what);
	if (!ok)
		failures++;
}

static void die(const char *what)
{
	fprintf(stderr, "rsiw_stale: %s: %s\n", what, strerror(errno));
	exit(2);
}

static struct rdma_addrinfo *resolve(const char *addr, const char *port,
				     int passive)
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
	a->cap.max_send_wr = 8;
	a->cap.max_recv_wr = 8;
	a->cap.max_send_sge = 1;
	a->cap.max_recv_sge = 1;
	a->qp_type = IBV_QPT_RC;
	a->sq_sig_all = 1;
}

static struct ibv_wc wait_send(struct rdma_cm_id *id)
{
	struct ibv_wc wc;

	if (rdma_get_send_comp(id, &wc) <= 0)
		die("rdma_get_send_comp");
	return wc;
}

static struct ibv_wc wait_recv(struct rdma_cm_id *id)
{
	struct ibv_wc wc;

	if (rdma_get_recv_comp(id, &wc) <= 0)
		die("rdma_get_recv_comp");
	return wc;
}

static int all(const char *p, int c, size_t n)
{
	while (n--)
		if (*p++ != (char)c)
			return 0;
	return 1;
}

/* Registers r (two MLEN slots) and posts a receive into each. */
static struct ibv_mr *recv_two(struct rdma_cm_id *id, char *r)
{
	struct ibv_mr *mr = rdma_reg_msgs(id, r, 2 * MLEN);

	if (!mr)
		die("reg");
	if (rdma_post_recv(id, NULL, r, MLEN, mr) ||
	    rdma_post_recv(id, NULL, r + MLEN, MLEN, mr))
		die("post_recv");
	return mr;
}

static void server(const char *addr, const char *port)
{
	struct rdma_addrinfo *res = resolve(addr, port, 1);
	struct rdma_cm_id *lid, *id;
	struct ibv_qp_init_attr a;
	struct ibv_mr *xmr, *rmr, *smr;
	static char x[XLEN], r[2 * MLEN], s[MLEN];
	struct info in;
	struct ibv_wc wc;

	qp_attr(&a);
	if (rdma_create_ep(&lid, res, NULL, &a) || rdma_listen(lid, 1))
		die("listen");
	printf("listening\n");
	fflush(stdout);

	/* Connection 1. */
	if (rdma_get_request(lid, &id))
		die("rdma_get_request");
	xmr = rdma_reg_write(id, x, XLEN);
	smr = rdma_reg_msgs(id, s, sizeof(s));
	if (!xmr || !smr)
		die("reg");
	rmr = recv_two(id, r);
	if (rdma_accept(id, NULL))
		die("rdma_accept");
	in.addr = (uintptr_t)x;
	in.rkey = xmr->rkey;
	in.len = XLEN;
	memcpy(s, &in, sizeof(in));
	if (rdma_post_send(id, NULL, s, sizeof(in), smr, 0))
		die("post_send");
	wc = wait_send(id);
	result(wc.status == IBV_WC_SUCCESS, "responder: STag of X sent");
	wc = wait_recv(id);
	result(wc.status == IBV_WC_SUCCESS && all(x, 0xa1, MLEN),
	       "responder: the Write into X arrived before the client's Send");
	memset(x, 0x55, XLEN);
	result(ibv_dereg_mr(xmr) == 0, "responder: X deregistered");
	memcpy(s, "done", 5);
	if (rdma_post_send(id, NULL, s, 5, smr, 0))
		die("post_send");
	wc = wait_send(id);
	result(wc.status == IBV_WC_SUCCESS, "responder: told the client");
	wc = wait_recv(id);
	result(wc.status != IBV_WC_SUCCESS,
	       "responder: a Write to X's STag after deregistration ends the connection");
	result(all(x, 0x55, XLEN),
	       "responder: nothing was placed into deregistered X");
	rdma_disconnect(id);
	rdma_dereg_mr(rmr);
	rdma_dereg_mr(smr);
	rdma_destroy_ep(id);

	/* Connection 2: the client tests its own side. */
	if (rdma_get_request(lid, &id))
		die("rdma_get_request");
	rmr = recv_two(id, r);
	if (rdma_accept(id, NULL))
		die("rdma_accept");
	wc = wait_recv(id);
	result(wc.status == IBV_WC_SUCCESS, "responder: first Send of connection 2");
	/* The second receive flushes when the client's QP fails. */
	wait_recv(id);
	rdma_disconnect(id);
	rdma_dereg_mr(rmr);
	rdma_destroy_ep(id);
	rdma_destroy_ep(lid);
	rdma_freeaddrinfo(res);
}

/* Waits up to 10 s for one completion on cq. */
static int poll_one(struct ibv_cq *cq, struct ibv_wc *wc)
{
	int i, n;

	for (i = 0; i < 10000; i++) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n;
		usleep(1000);
	}
	return 0;
}

/* Connection 3: the QP in PD 1, its receives from an SRQ in PD 2. */
static void server_srq(const char *addr, const char *port)
{
	struct rdma_addrinfo *res = resolve(addr, port, 1);
	struct rdma_cm_id *lid, *id;
	struct ibv_qp_init_attr a;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_pd *pd1, *pd2;
	struct ibv_srq *srq;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_sge sge;
	struct ibv_recv_wr wr = { .wr_id = 7, .sg_list = &sge, .num_sge = 1 }, *bad;
	static char r[MLEN];
	struct ibv_wc wc;
	int n;

	if (rdma_create_ep(&lid, res, NULL, NULL) || rdma_listen(lid, 1))
		die("listen (SRQ)");
	if (rdma_get_request(lid, &id))
		die("rdma_get_request (SRQ)");
	pd1 = ibv_alloc_pd(id->verbs);
	pd2 = ibv_alloc_pd(id->verbs);
	cq = ibv_create_cq(id->verbs, 8, NULL, NULL, 0);
	if (!pd1 || !pd2 || !cq)
		die("PDs and CQ");
	srq = ibv_create_srq(pd2, &sa);
	mr = ibv_reg_mr(pd2, r, sizeof(r), IBV_ACCESS_LOCAL_WRITE);
	if (!srq || !mr)
		die("SRQ and MR in PD 2");
	sge.addr = (uintptr_t)r;
	sge.length = sizeof(r);
	sge.lkey = mr->lkey;
	if (ibv_post_srq_recv(srq, &wr, &bad))
		die("post_srq_recv");
	qp_attr(&a);
	a.send_cq = cq;
	a.recv_cq = cq;
	a.srq = srq;
	a.cap.max_recv_wr = 0;
	if (rdma_create_qp(id, pd1, &a))
		die("QP in PD 1");
	if (rdma_accept(id, NULL))
		die("rdma_accept (SRQ)");
	n = poll_one(cq, &wc);
	result(n == 1 && wc.status == IBV_WC_SUCCESS && wc.wr_id == 7 &&
	       wc.byte_len == 4 && !strcmp(r, "srq"),
	       "responder: a Send into an SRQ receive of the SRQ's PD (not the QP's)");
	if (n == 1 && wc.status != IBV_WC_SUCCESS)
		printf("# status %d (%s)\n", wc.status,
		       ibv_wc_status_str(wc.status));
	rdma_disconnect(id);
	rdma_destroy_qp(id);
	ibv_dereg_mr(mr);
	ibv_destroy_srq(srq);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd2);
	ibv_dealloc_pd(pd1);
	rdma_destroy_id(id);
	rdma_destroy_ep(lid);
	rdma_freeaddrinfo(res);
}

static struct rdma_cm_id *client_ep(const char *addr, const char *port,
				    struct rdma_addrinfo **res)
{
	struct rdma_cm_id *id;
	struct ibv_qp_init_attr a;

	*res = resolve(addr, port, 0);
	qp_attr(&a);
	if (rdma_create_ep(&id, *res, NULL, &a))
		die("rdma_create_ep");
	return id;
}

static void client(const char *addr, const char *port)
{
	struct rdma_addrinfo *res;
	struct rdma_cm_id *id;
	struct ibv_mr *wmr, *rmr, *smr;
	static char w[MLEN], r[2 * MLEN], s[MLEN];
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct info in;
	struct ibv_wc wc;
	uint32_t lkey;

	id = client_ep(addr, port, &res);
	wmr = rdma_reg_msgs(id, w, sizeof(w));
	smr = rdma_reg_msgs(id, s, sizeof(s));
	if (!wmr || !smr)
		die("reg");
	/* Before connecting: the server sends as soon as it accepted. */
	rmr = recv_two(id, r);
	if (rdma_connect(id, NULL))
		die("rdma_connect");
	wc = wait_recv(id);
	memcpy(&in, r, sizeof(in));
	result(wc.status == IBV_WC_SUCCESS && in.len == XLEN,
	       "requester: got X's STag");
	memset(w, 0xa1, MLEN);
	if (rdma_post_write(id, NULL, w, MLEN, wmr, 0, in.addr, in.rkey))
		die("post_write");
	wc = wait_send(id);
	result(wc.status == IBV_WC_SUCCESS, "requester: Write into X");
	memcpy(s, "dereg", 6);
	if (rdma_post_send(id, NULL, s, 6, smr, 0))
		die("post_send");
	wait_send(id);
	wc = wait_recv(id);
	result(wc.status == IBV_WC_SUCCESS && !strcmp(r + MLEN, "done"),
	       "requester: the server deregistered X");
	memset(w, 0xb2, MLEN);
	if (rdma_post_write(id, NULL, w, MLEN, wmr, 0, in.addr, in.rkey))
		die("post_write");
	wait_send(id);
	/* The server ends the connection; wait for it. */
	rdma_disconnect(id);
	rdma_dereg_mr(wmr);
	rdma_dereg_mr(rmr);
	rdma_dereg_mr(smr);
	rdma_destroy_ep(id);
	rdma_freeaddrinfo(res);

	/* Connection 2. */
	id = client_ep(addr, port, &res);
	smr = rdma_reg_msgs(id, s, sizeof(s));
	if (!smr)
		die("reg");
	if (rdma_connect(id, NULL))
		die("rdma_connect");
	memcpy(s, "one", 4);
	if (rdma_post_send(id, NULL, s, 4, smr, 0))
		die("post_send");
	wc = wait_send(id);
	result(wc.status == IBV_WC_SUCCESS, "requester: Send from S");
	lkey = smr->lkey;
	result(ibv_dereg_mr(smr) == 0, "requester: S deregistered");
	sge.addr = (uintptr_t)s;
	sge.length = 4;
	sge.lkey = lkey;
	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_send(id->qp, &wr, &bad))
		die("ibv_post_send");
	wc = wait_send(id);
	result(wc.status == IBV_WC_LOC_PROT_ERR,
	       "requester: a Send naming deregistered S fails with a local protection error");
	if (wc.status != IBV_WC_LOC_PROT_ERR)
		printf("# status %d (%s)\n", wc.status,
		       ibv_wc_status_str(wc.status));
	rdma_disconnect(id);
	rdma_destroy_ep(id);
	rdma_freeaddrinfo(res);
}

/* Connection 3: one Send into the server's SRQ. */
static void client_srq(const char *addr, const char *port)
{
	struct rdma_addrinfo *res;
	struct rdma_cm_id *id;
	struct ibv_mr *smr;
	static char s[MLEN];
	struct ibv_wc wc;
	int i;

	/* the server listens once connection 2 ended */
	for (i = 0;; i++) {
		id = client_ep(addr, port, &res);
		if (!rdma_connect(id, NULL))
			break;
		rdma_destroy_ep(id);
		rdma_freeaddrinfo(res);
		if (i == 50)
			die("rdma_connect (SRQ)");
		usleep(100000);
	}
	smr = rdma_reg_msgs(id, s, sizeof(s));
	if (!smr)
		die("reg");
	memcpy(s, "srq", 4);
	if (rdma_post_send(id, NULL, s, 4, smr, 0))
		die("post_send");
	wc = wait_send(id);
	result(wc.status == IBV_WC_SUCCESS, "requester: Send to the SRQ");
	rdma_disconnect(id);
	rdma_dereg_mr(smr);
	rdma_destroy_ep(id);
	rdma_freeaddrinfo(res);
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *port = "7471";
	char port3[16];
	int c, srv = -1;

	while ((c = getopt(argc, argv, "s:c:p:")) != -1) {
		switch (c) {
		case 's':
			srv = 1;
			addr = optarg;
			break;
		case 'c':
			srv = 0;
			addr = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		default:
			return 2;
		}
	}
	if (srv < 0) {
		fprintf(stderr, "usage: rsiw_stale -s|-c ADDR [-p PORT]\n");
		return 2;
	}
	snprintf(port3, sizeof(port3), "%d", atoi(port) + 1);
	alarm(60);
	if (srv) {
		server(addr, port);
		server_srq(addr, port3);
	} else {
		client(addr, port);
		client_srq(addr, port3);
	}
	return failures ? 1 : 0;
}
