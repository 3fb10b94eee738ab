// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw_atomic_test: a kernel rdma_cm client that posts RFC 7306 atomics
 * (issue #38), for tests/guest/rsiw_atomic.sh. Its server is
 * rsiw_frmr_test.ko (loaded with atomic=1, its MR then grants remote
 * atomic access), whose accept names its MR in the private data: address
 * (be64), STag (be32), length (be32); the MR's first octets hold the
 * pattern 0x20, 0x21, ... (the little endian 0x2726252423222120).
 *
 *   insmod rsiw_atomic_test.ko server=IPV4 [port=N] [expect=ok|error]
 *
 * The whole test runs in the module's init, which fails (-EIO, or the
 * error of a step) when it does not pass; the kernel log says why.
 *
 * expect=ok: CmpSwap and FetchAdd, plain and masked, in a chain whose
 * every step checks the original value returned into the local 8-octet
 * buffer and the completion (opcode IB_WC_COMP_SWAP / IB_WC_FETCH_ADD,
 * success); then a FetchAdd at a misaligned address, which the responder
 * answers with a TERMINATE: it must complete in error, not hang.
 *
 * expect=error: the server's device implements no atomics (upstream siw):
 * the first CmpSwap must complete in error within 10 s.
 */
#include <linux/delay.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/nsproxy.h>
#include <linux/slab.h>
#include <linux/unaligned.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

static char *server = "198.18.0.2";
module_param(server, charp, 0444);
MODULE_PARM_DESC(server, "IPv4 address of the rsiw_frmr_test server");
static int port = 7193;
module_param(port, int, 0444);
MODULE_PARM_DESC(port, "its port");
static char *expect = "ok";
module_param(expect, charp, 0444);
MODULE_PARM_DESC(expect, "\"ok\": atomics work; \"error\": they complete in error");
static int passed;
module_param(passed, int, 0444);
MODULE_PARM_DESC(passed, "operations that gave what was expected");

#define PATTERN 0x2726252423222120ULL

struct ctx {
	struct rdma_cm_id *id;
	struct completion cm;
	enum rdma_cm_event_type ev;
	int ev_status;
	struct ib_pd *pd;
	struct ib_cq *cq;
	u64 *buf;
	u64 dma;
	u64 raddr;
	u32 rkey;
	struct ib_cqe cqe;
	struct completion wc_done;
	struct ib_wc wc;
};

static int cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct ctx *c = id->context;

	if (ev->event == RDMA_CM_EVENT_ESTABLISHED &&
	    ev->param.conn.private_data_len >= 16) {
		const u8 *pd = ev->param.conn.private_data;

		c->raddr = get_unaligned_be64(pd);
		c->rkey = get_unaligned_be32(pd + 8);
	}
	if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
		return 0;	/* (the test ends with its own disconnect) */
	c->ev = ev->event;
	c->ev_status = ev->status;
	complete(&c->cm);
	return 0;
}

/* Waits for the next CM event, which must be @want. */
static int cm_wait(struct ctx *c, enum rdma_cm_event_type want)
{
	if (!wait_for_completion_timeout(&c->cm, 10 * HZ)) {
		pr_err("rsiw_atomic_test: no CM event (waiting for %d)\n", want);
		return -ETIMEDOUT;
	}
	reinit_completion(&c->cm);
	if (c->ev != want) {
		pr_err("rsiw_atomic_test: CM event %d status %d, not %d\n",
		       c->ev, c->ev_status, want);
		return -ECONNREFUSED;
	}
	return 0;
}

static void wc_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct ctx *c = container_of(wc->wr_cqe, struct ctx, cqe);

	c->wc = *wc;
	complete(&c->wc_done);
}

/*
 * Posts one atomic (@op, operands as in struct ib_atomic_wr) at @raddr and
 * waits for its completion (-ETIMEDOUT after 10 s); *orig gets what the
 * local buffer holds then.
 */
static int atomic_op(struct ctx *c, enum ib_wr_opcode op, u64 raddr,
		     u64 compare_add, u64 swap, u64 cmask, u64 smask, u64 *orig)
{
	struct ib_sge sge = {
		.addr = c->dma, .length = 8, .lkey = c->pd->local_dma_lkey,
	};
	struct ib_atomic_wr wr = {
		.wr = {
			.wr_cqe = &c->cqe, .opcode = op, .sg_list = &sge,
			.num_sge = 1, .send_flags = IB_SEND_SIGNALED,
		},
		.remote_addr = raddr, .compare_add = compare_add, .swap = swap,
		.compare_add_mask = cmask, .swap_mask = smask, .rkey = c->rkey,
	};
	int rc;

	WRITE_ONCE(*c->buf, 0x5a5a5a5a5a5a5a5aULL);
	reinit_completion(&c->wc_done);
	rc = ib_post_send(c->id->qp, &wr.wr, NULL);
	if (rc) {
		pr_err("rsiw_atomic_test: post of opcode %d failed (%d)\n", op, rc);
		return rc;
	}
	if (!wait_for_completion_timeout(&c->wc_done, 10 * HZ)) {
		pr_err("rsiw_atomic_test: opcode %d: no completion in 10 s\n", op);
		return -ETIMEDOUT;
	}
	*orig = READ_ONCE(*c->buf);
	return 0;
}

/* One step of the chain: @op must succeed with the completion @wop and
 * return @want. */
static int step(struct ctx *c, const char *what, enum ib_wr_opcode op,
		enum ib_wc_opcode wop, u64 compare_add, u64 swap, u64 cmask,
		u64 smask, u64 want)
{
	u64 orig;
	int rc = atomic_op(c, op, c->raddr, compare_add, swap, cmask, smask, &orig);

	if (rc)
		return rc;
	if (c->wc.status != IB_WC_SUCCESS || c->wc.opcode != wop || orig != want) {
		pr_err("rsiw_atomic_test: %s: status %d opcode %d (want %d) returned %#llx (want %#llx)\n",
		       what, c->wc.status, c->wc.opcode, wop, orig, want);
		return -EIO;
	}
	pr_info("rsiw_atomic_test: %s: returned %#llx\n", what, orig);
	passed++;
	return 0;
}

#define CS IB_WR_ATOMIC_CMP_AND_SWP, IB_WC_COMP_SWAP
#define FA IB_WR_ATOMIC_FETCH_AND_ADD, IB_WC_FETCH_ADD
#define MCS IB_WR_MASKED_ATOMIC_CMP_AND_SWP, IB_WC_MASKED_COMP_SWAP
#define MFA IB_WR_MASKED_ATOMIC_FETCH_AND_ADD, IB_WC_MASKED_FETCH_ADD

/* The chain of expect=ok on the server's first 8 octets. */
static int chain(struct ctx *c)
{
	const u64 top = 0x8000000080000000ULL;	/* two 32-bit fields */
	u64 orig;
	int rc;

	rc = step(c, "CmpSwap, no match", CS, 0, 1, 0, 0, PATTERN) ?:
	     step(c, "CmpSwap, match", CS, PATTERN, 0x1000, 0, 0, PATTERN) ?:
	     step(c, "FetchAdd 0x234", FA, 0x234, 0, 0, 0, 0x1000) ?:
	     step(c, "FetchAdd 0", FA, 0, 0, 0, 0, 0x1234) ?:
	     step(c, "CmpSwap to 0x1ffffffff", CS, 0x1234, 0x1ffffffffULL, 0, 0, 0x1234) ?:
	     step(c, "masked FetchAdd (two fields)", MFA, 0x100000001ULL, 0, top, 0, 0x1ffffffffULL) ?:
	     step(c, "masked CmpSwap (high field)", MCS, 0x200000000ULL, 0xabcd,
		  0xffffffff00000000ULL, 0xffff, 0x200000000ULL) ?:
	     step(c, "FetchAdd 0 (final value)", FA, 0, 0, 0, 0, 0x20000abcdULL);
	if (rc)
		return rc;
	/* The responder's error: a misaligned target draws its TERMINATE. */
	rc = atomic_op(c, IB_WR_ATOMIC_FETCH_AND_ADD, c->raddr + 4, 1, 0, 0, 0, &orig);
	if (rc)
		return rc;
	if (c->wc.status == IB_WC_SUCCESS) {
		pr_err("rsiw_atomic_test: misaligned FetchAdd succeeded\n");
		return -EIO;
	}
	pr_info("rsiw_atomic_test: misaligned FetchAdd: status %d\n", c->wc.status);
	passed++;
	return 0;
}

/* expect=error: the first atomic completes in error. */
static int refused(struct ctx *c)
{
	u64 orig;
	int rc = atomic_op(c, IB_WR_ATOMIC_CMP_AND_SWP, c->raddr, 0, 1, 0, 0, &orig);

	if (rc)
		return rc;
	if (c->wc.status == IB_WC_SUCCESS) {
		pr_err("rsiw_atomic_test: CmpSwap succeeded toward a peer without atomics\n");
		return -EIO;
	}
	pr_info("rsiw_atomic_test: CmpSwap toward a peer without atomics: status %d\n",
		c->wc.status);
	passed++;
	return 0;
}

/* Resolves, connects and runs the test on @c (whose id exists). */
static int run(struct ctx *c, struct sockaddr_in *sin, bool ok)
{
	struct ib_qp_init_attr qa = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
	};
	struct rdma_conn_param cp = {
		.responder_resources = 4, .initiator_depth = 4,
	};
	struct ib_device *dev;
	int rc;

	rc = rdma_resolve_addr(c->id, NULL, (struct sockaddr *)sin, 5000) ?:
	     cm_wait(c, RDMA_CM_EVENT_ADDR_RESOLVED) ?:
	     rdma_resolve_route(c->id, 5000) ?:
	     cm_wait(c, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (rc)
		return rc;
	dev = c->id->device;
	pr_info("rsiw_atomic_test: device %s, atomic_cap %d\n",
		dev_name(&dev->dev), dev->attrs.atomic_cap);
	c->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(c->pd))
		return c->pd = NULL, -ENOMEM;
	c->cq = ib_alloc_cq(dev, c, 16, 0, IB_POLL_SOFTIRQ);
	if (IS_ERR(c->cq))
		return c->cq = NULL, -ENOMEM;
	qa.send_cq = qa.recv_cq = c->cq;
	rc = rdma_create_qp(c->id, c->pd, &qa);
	if (rc)
		return rc;
	c->dma = ib_dma_map_single(dev, c->buf, 8, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(dev, c->dma))
		return c->dma = 0, -ENOMEM;
	rc = rdma_connect(c->id, &cp) ?: cm_wait(c, RDMA_CM_EVENT_ESTABLISHED);
	if (rc)
		return rc;
	if (!c->rkey) {
		pr_err("rsiw_atomic_test: the accept named no MR\n");
		return -EPROTO;
	}
	/* the server registers its MR when it sees the connection */
	msleep(200);
	return ok ? chain(c) : refused(c);
}

static int __init atomic_test_init(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	bool ok = !strcmp(expect, "ok");
	struct ctx *c;
	int rc;

	if (!ok && strcmp(expect, "error"))
		return -EINVAL;
	if (!in4_pton(server, -1, (u8 *)&sin.sin_addr.s_addr, -1, NULL))
		return -EINVAL;
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	c->buf = kzalloc(8, GFP_KERNEL);
	if (!c->buf) {
		kfree(c);
		return -ENOMEM;
	}
	init_completion(&c->cm);
	init_completion(&c->wc_done);
	c->cqe.done = wc_done;
	/* the namespace of the process loading the module */
	c->id = rdma_create_id(current->nsproxy->net_ns, cm_handler, c,
			       RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(c->id)) {
		rc = PTR_ERR(c->id);
	} else {
		rc = run(c, &sin, ok);
		rdma_disconnect(c->id);
		if (c->id->qp) {
			ib_drain_qp(c->id->qp);
			rdma_destroy_qp(c->id);
		}
		if (c->dma)
			ib_dma_unmap_single(c->id->device, c->dma, 8, DMA_BIDIRECTIONAL);
		if (c->cq)
			ib_free_cq(c->cq);
		if (c->pd)
			ib_dealloc_pd(c->pd);
		rdma_destroy_id(c->id);
	}
	kfree(c->buf);
	kfree(c);
	pr_info("rsiw_atomic_test: %s (%d operations as expected)\n",
		rc ? "FAILED" : "passed", passed);
	return rc;
}

static void __exit atomic_test_exit(void)
{
}

module_init(atomic_test_init);
module_exit(atomic_test_exit);
MODULE_DESCRIPTION("rsiw test: a kernel rdma_cm client posting RFC 7306 atomics");
MODULE_LICENSE("GPL");
