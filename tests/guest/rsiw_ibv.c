// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw through stock libibverbs (its siw provider): device discovery,
 * queries and the basic objects, with the kernel's kselftest harness.
 * Run by rsiw_ibv.sh with the device name in RSIW_DEV.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#include "kselftest_harness.h"

FIXTURE(dev) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
};

FIXTURE_SETUP(dev)
{
	const char *name = getenv("RSIW_DEV") ? : "rsiw0";
	struct ibv_device **list = ibv_get_device_list(NULL);
	int i;

	ASSERT_NE(NULL, list);
	self->ctx = NULL;
	for (i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			self->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	ASSERT_NE(NULL, self->ctx);
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
}

FIXTURE_TEARDOWN(dev)
{
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
}

TEST_F(dev, iwarp_transport)
{
	ASSERT_EQ(IBV_TRANSPORT_IWARP, self->ctx->device->transport_type);
	ASSERT_EQ(IBV_NODE_RNIC, self->ctx->device->node_type);
}

TEST_F(dev, query_device)
{
	struct ibv_device_attr a;

	ASSERT_EQ(0, ibv_query_device(self->ctx, &a));
	EXPECT_EQ(0x626d74, a.vendor_id);
	EXPECT_EQ(6, a.max_sge);
	EXPECT_EQ(1, a.max_sge_rd);
	EXPECT_EQ(1, a.phys_port_cnt);
	EXPECT_NE(0, a.node_guid);
}

TEST_F(dev, query_port_active)
{
	struct ibv_port_attr p;

	ASSERT_EQ(0, ibv_query_port(self->ctx, 1, &p));
	EXPECT_EQ(IBV_PORT_ACTIVE, p.state);
	EXPECT_EQ(IBV_MTU_1024, p.active_mtu);
	EXPECT_EQ(1, p.gid_tbl_len);
	EXPECT_NE(0, ibv_query_port(self->ctx, 2, &p));
}

TEST_F(dev, cq_qp_mr)
{
	struct ibv_qp_init_attr qa = { 0 };
	struct ibv_qp_attr m = { 0 };
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf = malloc(1 << 16);

	ASSERT_NE(NULL, buf);
	cq = ibv_create_cq(self->ctx, 16, NULL, NULL, 0);
	ASSERT_NE(NULL, cq);
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 8;
	qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 2;
	qp = ibv_create_qp(self->pd, &qa);
	ASSERT_NE(NULL, qp);
	m.qp_state = IBV_QPS_INIT;
	EXPECT_EQ(0, ibv_modify_qp(qp, &m, IBV_QP_STATE));
	m.qp_state = IBV_QPS_RTS;
	EXPECT_EQ(EINVAL, ibv_modify_qp(qp, &m, IBV_QP_STATE));
	mr = ibv_reg_mr(self->pd, buf, 1 << 16, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	ASSERT_NE(NULL, mr);
	EXPECT_EQ(mr->lkey, mr->rkey);
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, ibv_destroy_qp(qp));
	EXPECT_EQ(0, ibv_destroy_cq(cq));
	free(buf);
}

TEST_F(dev, bad_qp_type)
{
	struct ibv_qp_init_attr qa = { 0 };
	struct ibv_cq *cq = ibv_create_cq(self->ctx, 4, NULL, NULL, 0);

	ASSERT_NE(NULL, cq);
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_UD;
	qa.cap.max_send_wr = 1;
	qa.cap.max_recv_wr = 1;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	EXPECT_EQ(NULL, ibv_create_qp(self->pd, &qa));
	EXPECT_EQ(EOPNOTSUPP, errno);
	EXPECT_EQ(0, ibv_destroy_cq(cq));
}

/*
 * ibv_rereg_mr() needs a provider op that libsiw lacks, so user space can
 * only reach the kernel's rereg_user_mr through libibverbs' exported
 * command helper (rdma-core's private driver ABI). The command layout is
 * the uverbs header followed by struct ib_uverbs_rereg_mr.
 */
struct rereg_cmd {
	struct ib_uverbs_cmd_hdr hdr;
	__aligned_u64 response;
	__u32 mr_handle;
	__u32 flags;
	__aligned_u64 start;
	__aligned_u64 length;
	__aligned_u64 hca_va;
	__u32 pd_handle;
	__u32 access_flags;
};

int ibv_cmd_rereg_mr(void *vmr, uint32_t flags, void *addr, size_t length,
		     uint64_t hca_va, int access, struct ibv_pd *pd,
		     void *cmd, size_t cmd_sz,
		     struct ib_uverbs_rereg_mr_resp *resp, size_t resp_sz);

static int rereg(struct ibv_mr *mr, int flags, void *addr, size_t len,
		 int access, struct ibv_pd *pd)
{
	struct ib_uverbs_rereg_mr_resp resp = { 0 };
	struct rereg_cmd cmd;
	int r;

	memset(&cmd, 0, sizeof(cmd));
	/* struct verbs_mr starts with the struct ibv_mr */
	r = ibv_cmd_rereg_mr(mr, flags, addr, len, (uintptr_t)addr, access, pd,
			     &cmd, sizeof(cmd), &resp, sizeof(resp));
	return r < 0 ? -r : r;
}

/* rereg_mr: upstream siw refuses it (EOPNOTSUPP); rsiw implements it. */
TEST_F(dev, rereg_mr)
{
	const char *name = ibv_get_device_name(self->ctx->device);
	char *a = aligned_alloc(4096, 8192), *b = aligned_alloc(4096, 16384);
	struct ibv_pd *pd2 = ibv_alloc_pd(self->ctx);
	struct ibv_mr *mr;
	uint32_t k0, k1;

	ASSERT_NE(NULL, a);
	ASSERT_NE(NULL, b);
	ASSERT_NE(NULL, pd2);
	mr = ibv_reg_mr(self->pd, a, 8192, IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	k0 = mr->lkey;
	if (strncmp(name, "rsiw", 4)) {
		EXPECT_EQ(EOPNOTSUPP, rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, 0,
					    IBV_ACCESS_LOCAL_WRITE, NULL));
		goto out;
	}
	/* Access needing no more of the pinned pages: in place. */
	EXPECT_EQ(0, rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, 0,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, NULL));
	EXPECT_EQ(k0, mr->lkey);
	/* New range: a new MR, new STag index, same key. */
	EXPECT_EQ(0, rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, b, 16384, 0, NULL));
	k1 = mr->lkey;
	EXPECT_NE(k0, k1);
	EXPECT_EQ(k0 & 0xff, k1 & 0xff);
	EXPECT_EQ(mr->lkey, mr->rkey);
	/* New PD and remote write access together. */
	EXPECT_EQ(0, rereg(mr, IBV_REREG_MR_CHANGE_PD | IBV_REREG_MR_CHANGE_ACCESS,
			   NULL, 0, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE, pd2));
	EXPECT_NE(k1, mr->lkey);
	/* Bad arguments: no flag; remote write without local write. */
	EXPECT_EQ(EINVAL, rereg(mr, 0, NULL, 0, 0, NULL));
	EXPECT_EQ(EINVAL, rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, 0,
				IBV_ACCESS_REMOTE_WRITE, NULL));
	/* The old PD is free again, the new one is held. */
	EXPECT_EQ(EBUSY, ibv_dealloc_pd(pd2));
out:
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, ibv_dealloc_pd(pd2));
	free(a);
	free(b);
}

/*
 * A QP whose receives are flushed (modify to ERR) while its CQ is armed
 * and its completion channel waited on: *events gets 1 when the channel
 * reported the CQ within 2 s (0 when not), *flushed the number of flush
 * completions polled. Returns 0, or the step that failed.
 */
static int flush_armed(struct ibv_context *ctx, struct ibv_pd *pd,
		       int solicited_only, int *events, int *flushed)
{
	struct ibv_qp_init_attr qa = { 0 };
	struct ibv_qp_attr m = { 0 };
	struct ibv_recv_wr wr = { 0 }, *bad;
	struct ibv_comp_channel *ch;
	struct ibv_sge sge;
	struct ibv_cq *cq, *ev_cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	struct pollfd pfd;
	static char buf[256];
	void *ev_ctx;
	int i, rc = 0;

	*events = *flushed = 0;
	ch = ibv_create_comp_channel(ctx);
	if (!ch)
		return 1;
	cq = ibv_create_cq(ctx, 8, NULL, ch, 0);
	if (!cq)
		return 2;
	qa.send_cq = cq;
	qa.recv_cq = cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &qa);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!qp || !mr)
		return 3;
	sge.addr = (uintptr_t)buf;
	sge.length = sizeof(buf);
	sge.lkey = mr->lkey;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	for (i = 0; i < 2; i++) {
		wr.wr_id = i;
		if (ibv_post_recv(qp, &wr, &bad))
			return 4;
	}
	if (ibv_req_notify_cq(cq, solicited_only))
		return 5;
	m.qp_state = IBV_QPS_ERR;
	if (ibv_modify_qp(qp, &m, IBV_QP_STATE))
		return 6;
	pfd.fd = ch->fd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 2000) == 1) {
		if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx) || ev_cq != cq)
			return 7;
		ibv_ack_cq_events(cq, 1);
		*events = 1;
	}
	while (ibv_poll_cq(cq, 1, &wc) == 1)
		if (wc.status == IBV_WC_WR_FLUSH_ERR)
			(*flushed)++;
	if (ibv_destroy_qp(qp) || ibv_dereg_mr(mr) || ibv_destroy_cq(cq) ||
	    ibv_destroy_comp_channel(ch))
		rc = 8;
	return rc;
}

/* Armed for the next completion before the QP went to error: woken. */
TEST_F(dev, flush_wakes_armed_cq)
{
	int events, flushed;

	ASSERT_EQ(0, flush_armed(self->ctx, self->pd, 0, &events, &flushed));
	EXPECT_EQ(2, flushed);
	EXPECT_EQ(1, events);
}

/*
 * Armed for solicited completions only: an unsuccessful completion (a
 * flush) counts as solicited (ibv_req_notify_cq(3)), so it wakes the
 * channel too. Upstream siw does not (its CQ wakes only for a solicited
 * receive): checked on rsiw only.
 */
TEST_F(dev, flush_wakes_solicited_armed_cq)
{
	int events, flushed;

	ASSERT_EQ(0, flush_armed(self->ctx, self->pd, 1, &events, &flushed));
	EXPECT_EQ(2, flushed);
	if (!strncmp(ibv_get_device_name(self->ctx->device), "rsiw", 4))
		EXPECT_EQ(1, events);
}

TEST_HARNESS_MAIN
