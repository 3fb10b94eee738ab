// SPDX-License-Identifier: GPL-2.0
/*
 * LD_PRELOAD library for perftest over rdma_cm (-R), set up by lib.sh's
 * perftest_wrap: an rdma_connect() refused (ECONNREFUSED: nothing listens
 * on the port yet) is tried again every 50 ms for up to 5 s.
 *
 * perftest -R connects twice: once to exchange its parameters, then for
 * the test. Between the two, the server tears its listener down and
 * listens again, and a client that connects in that window is refused.
 * perftest retries that itself, but the retry path of the perftest in
 * the guests (4.5-0.17) crashes in librdmacm; newer perftest fixed it.
 * A refused rdma_connect() leaves its rdma_cm_id route-resolved, so the
 * call can simply be repeated.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <rdma/rdma_cma.h>

#define RETRY_INTERVAL_NS (50 * 1000 * 1000L)
#define RETRIES 100

typedef int (*connect_fn)(struct rdma_cm_id *, struct rdma_conn_param *);

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	static connect_fn real;
	const struct timespec pause = { 0, RETRY_INTERVAL_NS };
	int i, rc, err;

	if (!real)
		real = (connect_fn)dlsym(RTLD_NEXT, "rdma_connect");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	for (i = 0;; i++) {
		rc = real(id, param);
		err = errno;
		if (rc == 0 || err != ECONNREFUSED || i == RETRIES)
			break;
		nanosleep(&pause, NULL);
	}
	if (i)
		fprintf(stderr, "perftest_retry: rdma_connect refused %d time(s)%s\n",
			i, rc ? ", giving up" : ", then connected");
	errno = err;
	return rc;
}
