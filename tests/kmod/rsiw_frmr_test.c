// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw_frmr_test: a kernel rdma_cm server whose memory is a fast
 * registration MR, for the hostile peer's frmr_* scenarios (issue #34
 * items 1-2; tests/guest/rsiw_hostile.sh loads it).
 *
 *   insmod rsiw_frmr_test.ko addr=IPV4 [port=N] [atomic=1]
 *                                                   (in the netns to listen in)
 *
 * Per connection: a PD, a CQ, a QP, 512 KiB of kernel pages (physically
 * contiguous 64 KiB chunks) filled with a pattern, an MR of type
 * IB_MR_TYPE_MEM_REG mapped over them (remote read and write; with
 * atomic=1 also remote atomic, for tests/kmod/rsiw_atomic_test.ko). The
 * accept's private data carries the MR: address (be64), STag (be32),
 * length (be32). Once the connection is established the MR is registered
 * (IB_WR_REG_MR) and the parameter "registered" counts it.
 *
 * Writing "invalidate" to the parameter "ctl" posts a Local Invalidate of
 * every connection's MR and returns once it completed (an error if one
 * failed or none was registered); "dereg" deregisters the MRs instead
 * (ib_dereg_mr, as a ULP tearing a connection down; a Local Invalidate
 * waits behind a Read Response on the same QP). Then, as a ULP reusing
 * the pages would, the module keeps a copy of each buffer and overwrites
 * the buffer with 0xbb. Nothing may place into the buffer after that, nor
 * may 0xbb leave it. Writing "check", or the connection's end, or the
 * module's unload compares each such buffer with its copy and logs
 * "rsiw_frmr_test: buffer intact" or "rsiw_frmr_test: CORRUPTED ...";
 * "corrupt" counts the connections found corrupted, "checked" the checks,
 * "conns" the connections alive.
 */
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/mm.h>
#include <linux/nsproxy.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#define BUF_LEN (512 * 1024)
#define CHUNK_ORDER 4 /* 64 KiB */
#define CHUNK (PAGE_SIZE << CHUNK_ORDER)
#define NCHUNKS (BUF_LEN / CHUNK)
#define AFTER 0xbb

static char *addr = "198.18.0.2";
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "IPv4 address to listen on");
static int port = 7193;
module_param(port, int, 0444);
MODULE_PARM_DESC(port, "port to listen on");
static bool atomic;
module_param(atomic, bool, 0444);
MODULE_PARM_DESC(atomic, "the MRs grant remote atomic access too");
static int registered, conns, checked, corrupt;
module_param(registered, int, 0444);
MODULE_PARM_DESC(registered, "MRs registered since the load");
module_param(conns, int, 0444);
MODULE_PARM_DESC(conns, "connections alive");
module_param(checked, int, 0444);
MODULE_PARM_DESC(checked, "checks of invalidated buffers");
module_param(corrupt, int, 0444);
MODULE_PARM_DESC(corrupt, "connections whose invalidated buffer changed");

struct conn {
	struct list_head node;
	struct rdma_cm_id *id;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_mr *mr;
	struct page *pages[NCHUNKS];
	struct scatterlist sg[NCHUNKS];
	int nents;		/* mapped */
	u8 *snap;		/* the buffer after the invalidation */
	bool valid;		/* registered, not invalidated or deregistered */
	bool bad;		/* counted in corrupt */
	struct ib_cqe cqe;
	struct completion done;
	int status;
};

static struct rdma_cm_id *listen_id;
static DEFINE_MUTEX(lock);	/* the list and each connection's MR state */
static LIST_HEAD(conn_list);

static void wr_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct conn *c = container_of(wc->wr_cqe, struct conn, cqe);

	c->status = wc->status;
	complete(&c->done);
}

/* Posts @wr (signaled) and waits for its completion. */
static int post_wait(struct conn *c, struct ib_send_wr *wr)
{
	int rc;

	reinit_completion(&c->done);
	c->cqe.done = wr_done;
	wr->wr_cqe = &c->cqe;
	wr->send_flags = IB_SEND_SIGNALED;
	rc = ib_post_send(c->id->qp, wr, NULL);
	if (rc)
		return rc;
	if (!wait_for_completion_timeout(&c->done, 10 * HZ))
		return -ETIMEDOUT;
	return c->status == IB_WC_SUCCESS ? 0 : -EIO;
}

static u8 *chunk(struct conn *c, int i)
{
	return page_address(c->pages[i]);
}

/* Compares an invalidated buffer with its copy (under the lock). */
static void check_conn(struct conn *c)
{
	size_t off, n = 0, first = 0;
	int i;

	if (!c->snap)
		return;
	for (i = 0; i < NCHUNKS; i++) {
		const u8 *p = chunk(c, i), *s = c->snap + i * CHUNK;

		if (!memcmp(p, s, CHUNK))
			continue;
		for (off = 0; off < CHUNK; off++)
			if (p[off] != s[off] && !n++)
				first = i * CHUNK + off;
	}
	checked++;
	if (n) {
		corrupt += !c->bad;
		c->bad = true;
		pr_err("rsiw_frmr_test: CORRUPTED: %zu octets changed after the invalidation, the first at offset %zu\n",
		       n, first);
	} else {
		pr_info("rsiw_frmr_test: buffer intact\n");
	}
}

/* The MR's registration ends: a Local Invalidate, or @dereg. */
static int invalidate(struct conn *c, bool dereg)
{
	struct ib_send_wr wr = {
		.opcode = IB_WR_LOCAL_INV,
		.ex.invalidate_rkey = c->mr->rkey,
	};
	int i, rc;

	if (dereg) {
		rc = ib_dereg_mr(c->mr);
		if (!rc)
			c->mr = NULL;
	} else {
		rc = post_wait(c, &wr);
	}
	if (rc)
		return rc;
	c->valid = false;
	c->snap = kvmalloc(BUF_LEN, GFP_KERNEL);
	if (!c->snap)
		return -ENOMEM;
	/* the pages are the ULP's again: it takes them for something else */
	for (i = 0; i < NCHUNKS; i++) {
		memset(chunk(c, i), AFTER, CHUNK);
		memset(c->snap + i * CHUNK, AFTER, CHUNK);
	}
	return 0;
}

static int ctl_set(const char *val, const struct kernel_param *kp)
{
	bool inv = sysfs_streq(val, "invalidate"), dereg = sysfs_streq(val, "dereg");
	struct conn *c;
	int rc = 0, n = 0;

	if (!inv && !dereg && !sysfs_streq(val, "check"))
		return -EINVAL;
	mutex_lock(&lock);
	list_for_each_entry(c, &conn_list, node) {
		if ((inv || dereg) && c->valid) {
			int r = invalidate(c, dereg);

			n++;
			if (r) {
				pr_err("rsiw_frmr_test: %s failed (%d)\n",
				       dereg ? "ib_dereg_mr" : "Local Invalidate", r);
				rc = r;
			}
		} else if (!inv && !dereg) {
			check_conn(c);
		}
	}
	mutex_unlock(&lock);
	return (inv || dereg) && !n ? -ENOENT : rc;
}

static const struct kernel_param_ops ctl_ops = { .set = ctl_set };
module_param_cb(ctl, &ctl_ops, NULL, 0200);
MODULE_PARM_DESC(ctl, "\"invalidate\": Local Invalidate every MR; \"dereg\": deregister them; \"check\": check the buffers");

/* Frees what conn_setup made; the id is destroyed by the caller. */
static void conn_free(struct conn *c)
{
	int i;

	if (c->id->qp) {
		ib_drain_qp(c->id->qp);
		rdma_destroy_qp(c->id);
	}
	if (c->mr)
		ib_dereg_mr(c->mr);
	if (c->cq)
		ib_free_cq(c->cq);
	if (c->pd)
		ib_dealloc_pd(c->pd);
	if (c->nents)
		ib_dma_unmap_sg(c->id->device, c->sg, NCHUNKS, DMA_BIDIRECTIONAL);
	for (i = 0; i < NCHUNKS; i++)
		if (c->pages[i])
			__free_pages(c->pages[i], CHUNK_ORDER);
	kvfree(c->snap);
	kfree(c);
}

static int conn_setup(struct conn *c)
{
	struct ib_device *dev = c->id->device;
	struct ib_qp_init_attr qa = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
	};
	struct {
		__be64 addr;
		__be32 stag, len;
	} pd;
	struct rdma_conn_param cp = {
		.private_data = &pd, .private_data_len = sizeof(pd),
		.responder_resources = 4, .initiator_depth = 4,
	};
	int i, rc, off;

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
	sg_init_table(c->sg, NCHUNKS);
	for (i = 0; i < NCHUNKS; i++) {
		c->pages[i] = alloc_pages(GFP_KERNEL, CHUNK_ORDER);
		if (!c->pages[i])
			return -ENOMEM;
		sg_set_page(&c->sg[i], c->pages[i], CHUNK, 0);
		for (off = 0; off < CHUNK; off++)
			chunk(c, i)[off] = 0x20 + off % 64;
	}
	c->nents = ib_dma_map_sg(dev, c->sg, NCHUNKS, DMA_BIDIRECTIONAL);
	if (!c->nents)
		return -ENOMEM;
	c->mr = ib_alloc_mr(c->pd, IB_MR_TYPE_MEM_REG, BUF_LEN / PAGE_SIZE);
	if (IS_ERR(c->mr))
		return c->mr = NULL, -ENOMEM;
	if (ib_map_mr_sg(c->mr, c->sg, c->nents, NULL, PAGE_SIZE) != c->nents)
		return -EINVAL;
	pd.addr = cpu_to_be64(c->mr->iova);
	pd.stag = cpu_to_be32(c->mr->rkey);
	pd.len = cpu_to_be32(c->mr->length);
	return rdma_accept(c->id, &cp);
}

/* The MR's registration, once the QP can send. */
static void conn_register(struct conn *c)
{
	struct ib_reg_wr wr = {
		.wr.opcode = IB_WR_REG_MR,
		.mr = c->mr,
		.key = c->mr->rkey,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			  IB_ACCESS_REMOTE_READ,
	};
	int rc;

	if (atomic)
		wr.access |= IB_ACCESS_REMOTE_ATOMIC;
	mutex_lock(&lock);
	/* (not if the unload took the connection meanwhile) */
	rc = list_empty(&c->node) ? -ENOTCONN : post_wait(c, &wr.wr);
	if (rc) {
		pr_err("rsiw_frmr_test: REG_MR failed (%d)\n", rc);
	} else {
		c->valid = true;
		registered++;
	}
	mutex_unlock(&lock);
}

static int cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct conn *c = id->context;
	bool mine;
	int rc;

	if (id == listen_id)
		return 0;
	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		c = kzalloc(sizeof(*c), GFP_KERNEL);
		if (!c)
			return -ENOMEM;
		INIT_LIST_HEAD(&c->node);
		c->id = id;
		id->context = c;
		init_completion(&c->done);
		rc = conn_setup(c);
		if (rc) {
			pr_err("rsiw_frmr_test: connection setup failed (%d)\n", rc);
			conn_free(c);
			return rc;	/* the CM destroys the id */
		}
		mutex_lock(&lock);
		list_add_tail(&c->node, &conn_list);
		conns++;
		mutex_unlock(&lock);
		return 0;
	case RDMA_CM_EVENT_ESTABLISHED:
		conn_register(c);
		return 0;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		mutex_lock(&lock);
		mine = !list_empty(&c->node);
		if (mine) {
			list_del_init(&c->node);
			conns--;
			check_conn(c);
		}
		mutex_unlock(&lock);
		if (!mine)
			return 0;	/* the unload has it */
		conn_free(c);
		return 1;		/* the CM destroys the id */
	default:
		return 0;
	}
}

static int __init frmr_test_init(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	int rc;

	if (!in4_pton(addr, -1, (u8 *)&sin.sin_addr.s_addr, -1, NULL))
		return -EINVAL;
	/* the namespace of the process loading the module */
	listen_id = rdma_create_id(current->nsproxy->net_ns, cm_handler, NULL,
				   RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(listen_id))
		return PTR_ERR(listen_id);
	rc = rdma_bind_addr(listen_id, (struct sockaddr *)&sin);
	if (!rc)
		rc = rdma_listen(listen_id, 8);
	if (rc) {
		rdma_destroy_id(listen_id);
		return rc;
	}
	return 0;
}

static void __exit frmr_test_exit(void)
{
	struct conn *c, *t;
	LIST_HEAD(gone);

	rdma_destroy_id(listen_id);
	mutex_lock(&lock);
	list_splice_init(&conn_list, &gone);
	mutex_unlock(&lock);
	list_for_each_entry_safe(c, t, &gone, node) {
		struct rdma_cm_id *id = c->id;

		list_del_init(&c->node);
		rdma_disconnect(id);
		mutex_lock(&lock);
		conns--;
		check_conn(c);
		mutex_unlock(&lock);
		conn_free(c);
		rdma_destroy_id(id);
	}
}

module_init(frmr_test_init);
module_exit(frmr_test_exit);
MODULE_DESCRIPTION("rsiw test: an rdma_cm server with a fast registration MR");
MODULE_LICENSE("GPL");
