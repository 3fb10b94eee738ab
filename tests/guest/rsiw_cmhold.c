// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw_cmhold: connect requests that nobody answers, for the endpoint
 * lifetime tests (rsiw_cmlife.sh).
 *
 *   rsiw_cmhold -s -a ADDR -p PORT [-u] [-t SECS]
 *	Server (librdmacm): listens on ADDR:PORT, prints "listening", and
 *	never answers a connect request: it keeps each request's id ("request
 *	N"). -u destroys the listening id as the first request arrives
 *	("unlistened"), SIGUSR1 at any time; the requests' ids stay. Ends on
 *	SIGTERM, on a device removal (the device goes once the process has
 *	closed it) or after SECS (default 60) with "requests N", destroying
 *	what it holds.
 *
 *   rsiw_cmhold -c -a ADDR -p PORT -n N [-m] [-d MS] [-w SECS]
 *	Client (plain TCP, no RDMA): opens N connections to ADDR:PORT, then
 *	(after MS milliseconds, -d) sends an MPA Request on each (-m;
 *	revision 1, no private data), then waits until each has ended, for at
 *	most SECS (-w; default: until SIGTERM), and prints "connected C
 *	refused F rejected R closed X open O": refused at connect, ended after
 *	a reject Reply, ended without one, still open.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <rdma/rdma_cma.h>

static volatile sig_atomic_t stop, unlisten;

static void on_term(int sig) { (void)sig; stop = 1; }
static void on_usr1(int sig) { (void)sig; unlisten = 1; }

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void usage(void)
{
	fprintf(stderr, "usage: rsiw_cmhold -s -a ADDR -p PORT [-u] [-t SECS]\n"
			"       rsiw_cmhold -c -a ADDR -p PORT -n N [-m] [-d MS] [-w SECS]\n");
	exit(2);
}

#define MAXREQ 4096

static int server(const char *addr, const char *port, int unlisten_first, int secs)
{
	struct rdma_event_channel *ech = rdma_create_event_channel();
	struct rdma_cm_id *lid, **reqs = calloc(MAXREQ, sizeof(*reqs));
	struct addrinfo *ai;
	int nreq = 0, total = 0, i;
	double end = now() + secs;

	if (!ech || !reqs || getaddrinfo(addr, port, NULL, &ai) ||
	    rdma_create_id(ech, &lid, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(lid, ai->ai_addr) || rdma_listen(lid, 128)) {
		perror("server: listen");
		return 2;
	}
	freeaddrinfo(ai);
	fcntl(ech->fd, F_SETFL, fcntl(ech->fd, F_GETFL) | O_NONBLOCK);
	printf("listening\n");
	fflush(stdout);
	while (!stop && now() < end) {
		struct pollfd pf = { ech->fd, POLLIN, 0 };
		struct rdma_cm_event *ev;

		if (unlisten && lid) {
			rdma_destroy_id(lid);
			lid = NULL;
			printf("unlistened\n");
			fflush(stdout);
		}
		if (poll(&pf, 1, 100) <= 0 || rdma_get_cm_event(ech, &ev))
			continue;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct rdma_cm_id *id = ev->id;

			rdma_ack_cm_event(ev);
			total++;
			if (nreq < MAXREQ)
				reqs[nreq++] = id;
			else
				rdma_destroy_id(id);
			printf("request %d\n", total);
			fflush(stdout);
			if (unlisten_first)
				unlisten = 1;
		} else if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
			rdma_ack_cm_event(ev);
			printf("device removal\n");
			stop = 1;
		} else {
			rdma_ack_cm_event(ev);
		}
	}
	for (i = 0; i < nreq; i++)
		if (reqs[i])
			rdma_destroy_id(reqs[i]);
	if (lid)
		rdma_destroy_id(lid);
	rdma_destroy_event_channel(ech);
	printf("requests %d\n", total);
	return 0;
}

/* An MPA Request of revision 1 without private data (RFC 5044 7.1) */
static const unsigned char mpa_req[20] = "MPA ID Req Frame\0\1\0\0";

struct conn {
	int fd;
	int got;		/* octets of the Reply header read */
	unsigned char hdr[20];
	int rejected;
};

static int client(const char *addr, int port, int n, int mpa, int delay_ms, int secs)
{
	struct conn *c = calloc(n, sizeof(*c));
	struct pollfd *pf = calloc(n, sizeof(*pf));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { 3, 0 };
	int connected = 0, refused = 0, rejected = 0, closed = 0, open = 0, i;
	double end = secs ? now() + secs : 0;

	if (!c || !pf || inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		usage();
	for (i = 0; i < n && !stop; i++) {
		c[i].fd = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(c[i].fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(c[i].fd, (struct sockaddr *)&sa, sizeof(sa))) {
			close(c[i].fd);
			c[i].fd = -1;
			refused++;
			continue;
		}
		connected++;
	}
	for (; i < n; i++)
		c[i].fd = -1;
	if (delay_ms)
		usleep(delay_ms * 1000);
	for (i = 0; i < n && mpa; i++)
		if (c[i].fd >= 0 && write(c[i].fd, mpa_req, sizeof(mpa_req)) != sizeof(mpa_req)) {
			close(c[i].fd);
			c[i].fd = -1;
			closed++;
		}
	for (;;) {
		int live = 0;

		for (i = 0; i < n; i++) {
			pf[i].fd = c[i].fd;
			pf[i].events = POLLIN;
			live += c[i].fd >= 0;
		}
		if (!live || stop || (end && now() >= end))
			break;
		if (poll(pf, n, 100) <= 0)
			continue;
		for (i = 0; i < n; i++) {
			unsigned char buf[512];
			ssize_t r;

			if (c[i].fd < 0 || !pf[i].revents)
				continue;
			r = read(c[i].fd, buf, sizeof(buf));
			if (r > 0) {
				int k = 0;

				while (c[i].got < 20 && k < r)
					c[i].hdr[c[i].got++] = buf[k++];
				if (c[i].got == 20 && !memcmp(c[i].hdr, "MPA ID Rep Frame", 16) &&
				    (c[i].hdr[16] & 0x20))
					c[i].rejected = 1;
				continue;
			}
			if (r < 0 && errno == EAGAIN)
				continue;
			close(c[i].fd);
			c[i].fd = -1;
			if (c[i].rejected)
				rejected++;
			else
				closed++;
		}
	}
	for (i = 0; i < n; i++)
		if (c[i].fd >= 0) {
			open++;
			close(c[i].fd);
		}
	printf("connected %d refused %d rejected %d closed %d open %d\n", connected, refused,
	       rejected, closed, open);
	return 0;
}

int main(int argc, char **argv)
{
	int srv = 0, cli = 0, unl = 0, mpa = 0, n = 1, t = 60, w = 0, d = 0, o;
	const char *addr = NULL, *port = NULL;

	while ((o = getopt(argc, argv, "scua:p:n:md:t:w:")) != -1) {
		switch (o) {
		case 's': srv = 1; break;
		case 'c': cli = 1; break;
		case 'u': unl = 1; break;
		case 'a': addr = optarg; break;
		case 'p': port = optarg; break;
		case 'n': n = atoi(optarg); break;
		case 'm': mpa = 1; break;
		case 'd': d = atoi(optarg); break;
		case 't': t = atoi(optarg); break;
		case 'w': w = atoi(optarg); break;
		default: usage();
		}
	}
	if (!addr || !port || srv == cli || n < 1)
		usage();
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	signal(SIGUSR1, on_usr1);
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	return srv ? server(addr, port, unl, t) : client(addr, atoi(port), n, mpa, d, w);
}
