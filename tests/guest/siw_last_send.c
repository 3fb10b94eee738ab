// SPDX-License-Identifier: GPL-2.0
/*
 * siw_last_send: a reproducer of an upstream siw race, for any two iWARP
 * devices (siw on both sides shows it without rsiw).
 *
 * The server Sends one message of 64 octets on each of N connections; the
 * client receives it and disconnects at once. A Send that the client
 * received in full must complete successfully on the server. Upstream
 * siw's transmit path (siw_qp_sq_proc_tx in siw_qp_tx.c) checks
 * tx_suspend after every segment it sent, before it looks at whether the
 * segment was the message's last: when the peer's FIN is processed while
 * siw is still inside tcp_sendmsg() for the last segment (it owns the
 * socket, the FIN waits in the socket's backlog and is handled in
 * release_sock(), which sets tx_suspend), siw fails the Send with
 * -ECONNABORTED and reports IB_WC_LOC_QP_OP_ERR (status 2) although
 * every octet of it went out and was received.
 *
 * tests/guest/siw_last_send.sh opens the window on purpose: both
 * processes on one CPU, full preemption, the client a real-time task
 * that sleeps on its completion channel, so that its wakeup (from the
 * softirq that delivers the Send, run inside the server's tcp_sendmsg())
 * preempts the server before release_sock().
 *
 *   siw_last_send -s ADDR [-p PORT] [-n N]   server
 *   siw_last_send -c ADDR [-p PORT] [-n N]   client
 *
 * The server prints "sent N: C completed, F failed with status 2 (...),
 * O other"; the client "received N of N". Exit status 0 when every Send
 * the client received completed successfully on the server.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define MLEN 64

static void die(const char *what)
{
	fprintf(stderr, "siw_last_send: %s: %s\n", what, strerror(errno));
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
	a->cap.max_send_wr = a->cap.max_recv_wr = 2;
	a->cap.max_send_sge = a->cap.max_recv_sge = 1;
	a->qp_type = IBV_QPT_RC;
	a->sq_sig_all = 1;
}

static int server(const char *addr, const char *port, int n)
{
	struct rdma_addrinfo *res = resolve(addr, port, 1);
	struct rdma_cm_id *listen_id, *id;
	struct ibv_qp_init_attr attr;
	int ok = 0, status2 = 0, other = 0, i;
	char buf[MLEN];

	qp_attr(&attr);
	if (rdma_create_ep(&listen_id, res, NULL, &attr))
		die("rdma_create_ep");
	if (rdma_listen(listen_id, 1))
		die("rdma_listen");
	memset(buf, 0x5a, sizeof(buf));
	for (i = 0; i < n; i++) {
		struct ibv_mr *mr;
		struct ibv_wc wc;

		if (rdma_get_request(listen_id, &id))
			die("rdma_get_request");
		mr = rdma_reg_msgs(id, buf, sizeof(buf));
		if (!mr)
			die("rdma_reg_msgs");
		if (rdma_accept(id, NULL))
			die("rdma_accept");
		if (rdma_post_send(id, NULL, buf, sizeof(buf), mr, 0))
			die("rdma_post_send");
		if (rdma_get_send_comp(id, &wc) <= 0)
			die("rdma_get_send_comp");
		if (wc.status == IBV_WC_SUCCESS)
			ok++;
		else if (wc.status == IBV_WC_LOC_QP_OP_ERR)
			status2++;
		else
			other++;
		rdma_disconnect(id);
		rdma_dereg_mr(mr);
		rdma_destroy_ep(id);
	}
	printf("sent %d: %d completed, %d failed with status 2 (IBV_WC_LOC_QP_OP_ERR), %d other\n",
	       n, ok, status2, other);
	rdma_destroy_ep(listen_id);
	rdma_freeaddrinfo(res);
	return ok == n ? 0 : 1;
}

static int client(const char *addr, const char *port, int n)
{
	struct rdma_addrinfo *res = resolve(addr, port, 0);
	struct ibv_qp_init_attr attr;
	int got = 0, i;
	char buf[MLEN];

	for (i = 0; i < n; i++) {
		struct rdma_cm_id *id;
		struct ibv_mr *mr;
		struct ibv_wc wc;
		int tries;

		qp_attr(&attr);
		if (rdma_create_ep(&id, res, NULL, &attr))
			die("rdma_create_ep");
		mr = rdma_reg_msgs(id, buf, sizeof(buf));
		if (!mr)
			die("rdma_reg_msgs");
		if (rdma_post_recv(id, NULL, buf, sizeof(buf), mr))
			die("rdma_post_recv");
		/* the server's next listen may not be back yet */
		for (tries = 0; rdma_connect(id, NULL); tries++) {
			if (tries == 100)
				die("rdma_connect");
			rdma_dereg_mr(mr);
			rdma_destroy_ep(id);
			usleep(20000);
			if (rdma_create_ep(&id, res, NULL, &attr))
				die("rdma_create_ep");
			mr = rdma_reg_msgs(id, buf, sizeof(buf));
			if (!mr || rdma_post_recv(id, NULL, buf, sizeof(buf), mr))
				die("rdma_post_recv");
		}
		/* sleeps on the completion channel: woken by the delivery */
		if (rdma_get_recv_comp(id, &wc) <= 0)
			die("rdma_get_recv_comp");
		if (wc.status == IBV_WC_SUCCESS && wc.byte_len == MLEN)
			got++;
		rdma_disconnect(id);
		rdma_dereg_mr(mr);
		rdma_destroy_ep(id);
	}
	printf("received %d of %d\n", got, n);
	rdma_freeaddrinfo(res);
	return got == n ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *port = "7199";
	int srv = -1, n = 20, c;

	while ((c = getopt(argc, argv, "s:c:p:n:")) != -1) {
		switch (c) {
		case 's':
		case 'c':
			srv = c == 's';
			addr = optarg;
			break;
		case 'p':
			port = optarg;
			break;
		case 'n':
			n = atoi(optarg);
			break;
		default:
			return 2;
		}
	}
	if (!addr || n < 1) {
		fprintf(stderr, "usage: siw_last_send -s|-c ADDR [-p PORT] [-n N]\n");
		return 2;
	}
	return srv ? server(addr, port, n) : client(addr, port, n);
}
