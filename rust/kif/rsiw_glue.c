// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw C glue: module parameters and out-of-line copies of static inline
 * helpers that bindgen cannot call.  All logic lives in Rust.
 */
#include <linux/moduleparam.h>
#include <linux/version.h>
#include <linux/mutex.h>
#include <linux/sysfs.h>
#include <linux/netdevice.h>
#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/skbuff.h>
#include <linux/tcp.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rdma/uverbs_ioctl.h>

#include "../../include/rsiw_glue.h"

/*
 * Kernel versions: the C side of rust/kif/compat/mod.rs. Every difference
 * between the supported kernels (6.12, 7.3) that the glue meets is decided
 * here, by LINUX_VERSION_CODE, and named below; no function tests the
 * version itself. A test names the version that brought the change where
 * it is known, else the first supported kernel that has it (7.3).
 *
 * RSIW_WQ_PERCPU: a per-CPU workqueue says so (WQ_PERCPU, since 6.17; 7.3
 * warns once about a queue that names neither WQ_PERCPU nor WQ_UNBOUND
 * and makes it per-CPU, which it was before).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 17, 0)
#define RSIW_WQ_PERCPU WQ_PERCPU
#else
#define RSIW_WQ_PERCPU 0
#endif

/*
 * RSIW_UMEM_GET: pinning user memory at a user address, ib_umem_get() in
 * 6.12, ib_umem_get_va() in 7.3 (whose ib_umem_get_*() also take buffer
 * descriptors and attributes).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 3, 0)
#define RSIW_UMEM_GET ib_umem_get_va
#else
#define RSIW_UMEM_GET ib_umem_get
#endif

/*
 * RSIW_IB_ALLOC_DEVICE: allocating an ib_device, which in 7.3 belongs to a
 * network namespace from the start (as ib_alloc_device() does: the initial
 * one, as in 6.12).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 3, 0)
#define RSIW_IB_ALLOC_DEVICE(size) _ib_alloc_device(size, &init_net)
#else
#define RSIW_IB_ALLOC_DEVICE(size) _ib_alloc_device(size)
#endif

static bool mpa_crc_required;
module_param(mpa_crc_required, bool, 0644);
MODULE_PARM_DESC(mpa_crc_required, "Refuse MPA peers that do not use CRC32C");

static bool mpa_markers;
module_param(mpa_markers, bool, 0644);
MODULE_PARM_DESC(mpa_markers, "Ask peers for MPA markers (RFC 5044)");

static bool mpa_peer_to_peer;
module_param(mpa_peer_to_peer, bool, 0644);
MODULE_PARM_DESC(mpa_peer_to_peer,
		 "As initiator, ask for the RFC 6581 peer-to-peer model (zero length Write RTR)");

static uint mpa_rev = 2;
module_param(mpa_rev, uint, 0644);
MODULE_PARM_DESC(mpa_rev, "MPA revision rsiw initiates with: 1 or 2 (default)");

static bool mpa_large_fpdu = true;
module_param(mpa_large_fpdu, bool, 0644);
MODULE_PARM_DESC(mpa_large_fpdu,
		 "Offer and use FPDUs larger than a TCP segment (siw's MPA_RR_FLAG_GSO_EXP bit)");

static bool mpa_responder_waits;
module_param(mpa_responder_waits, bool, 0644);
MODULE_PARM_DESC(mpa_responder_waits,
		 "As client-server responder, send no FPDU before the initiator's first (RFC 5044 7.1.2)");

/* Payload octets of one large FPDU; the DDP/RDMAP header must still fit. */
#define RSIW_MIN_MAX_FPDU 512
#define RSIW_MAX_MAX_FPDU 65507

static uint mpa_max_fpdu = 32768;

static int mpa_max_fpdu_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, RSIW_MIN_MAX_FPDU, RSIW_MAX_MAX_FPDU);
}

static const struct kernel_param_ops mpa_max_fpdu_ops = {
	.set = mpa_max_fpdu_set,
	.get = param_get_uint,
};

module_param_cb(mpa_max_fpdu, &mpa_max_fpdu_ops, &mpa_max_fpdu, 0644);
MODULE_PARM_DESC(mpa_max_fpdu,
		 "Payload octets of the largest FPDU sent when large FPDUs are in use: 512 to 65507 (default 32768)");

/*
 * How long a connect request may wait for the CM's accept or reject
 * before rsiw rejects it itself (seconds).
 */
static uint cm_accept_timeout = 60;

static int cm_accept_timeout_set(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, 1, 3600);
}

static const struct kernel_param_ops cm_accept_timeout_ops = {
	.set = cm_accept_timeout_set,
	.get = param_get_uint,
};

module_param_cb(cm_accept_timeout, &cm_accept_timeout_ops, &cm_accept_timeout, 0644);
MODULE_PARM_DESC(cm_accept_timeout,
		 "Seconds a connect request may wait for accept or reject before rsiw rejects it: 1 to 3600 (default 60)");

/*
 * Harnesses that name siw (modprobe siw, rdma link add ... type siw) run
 * on rsiw when it also registers the link type "siw"; read once, at load.
 */
static bool siw_link_type;
module_param(siw_link_type, bool, 0444);
MODULE_PARM_DESC(siw_link_type,
		 "Also register the RDMA link type 'siw' (refused while module siw is loaded; siw is refused while rsiw holds it)");

bool rsiw_siw_link_type(void)
{
	return READ_ONCE(siw_link_type);
}

u32 rsiw_cm_accept_timeout(void)
{
	return READ_ONCE(cm_accept_timeout);
}

u32 rsiw_mpa_max_fpdu(void)
{
	return READ_ONCE(mpa_max_fpdu);
}

bool rsiw_mpa_responder_waits(void)
{
	return READ_ONCE(mpa_responder_waits);
}

bool rsiw_mpa_large_fpdu(void)
{
	return READ_ONCE(mpa_large_fpdu);
}

bool rsiw_mpa_peer_to_peer(void)
{
	return READ_ONCE(mpa_peer_to_peer);
}

u8 rsiw_mpa_rev(void)
{
	return READ_ONCE(mpa_rev) == 1 ? 1 : 2;
}

bool rsiw_mpa_crc_required(void)
{
	return READ_ONCE(mpa_crc_required);
}

bool rsiw_mpa_markers_wanted(void)
{
	return READ_ONCE(mpa_markers);
}

bool rsiw_netif_up(const struct net_device *ndev)
{
	return netif_running(ndev) && netif_carrier_ok(ndev);
}

void rsiw_dev_put(struct net_device *ndev)
{
	dev_put(ndev);
}

bool rsiw_ib_device_try_get(struct ib_device *ibdev)
{
	return ib_device_try_get(ibdev);
}

struct net_device *rsiw_netdev_notifier_dev(void *info)
{
	return netdev_notifier_info_to_dev(info);
}

void rsiw_ib_mark_name_assigned_by_user(struct ib_device *ibdev)
{
	ib_mark_name_assigned_by_user(ibdev);
}

/*
 * A counted reference on the network namespace of @ndev, or NULL when that
 * namespace is already being dismantled (its count reached zero).
 */
struct net *rsiw_netdev_net_get(struct net_device *ndev)
{
	return maybe_get_net(dev_net(ndev));
}

void rsiw_net_put(struct net *net)
{
	put_net(net);
}

/*
 * A TCP socket in @net that holds its own reference on it, as one made by
 * sock_create() in the caller's namespace does (kern = 0).
 */
int rsiw_sock_create_in(struct net *net, int family, struct socket **res)
{
	return __sock_create(net, family, SOCK_STREAM, IPPROTO_TCP, res, 0);
}

/*
 * Before registration: with `rdma system set netns exclusive`, the device
 * belongs to the namespace of its net device (the core made it in
 * init_net).  rdma_dev_access_netns() of a device still in init_net tells
 * the mode for any other namespace: true only when devices are shared.
 * In shared mode the device stays in init_net and is seen everywhere.  The
 * core keeps no reference on a device's namespace (it moves devices back
 * to init_net when a namespace goes), so none is taken here.
 */
void rsiw_ib_device_set_home_net(struct ib_device *ibdev,
				 struct net_device *ndev)
{
	struct net *net = dev_net(ndev);

	if (!net_eq(net, &init_net) && !rdma_dev_access_netns(ibdev, net))
		write_pnet(&ibdev->coredev.rdma_net, net);
}

#ifdef CONFIG_PREEMPT_RT
/* Without PREEMPT_RT, Rust calls _raw_spin_lock_irqsave() directly. */
unsigned long rsiw_spin_lock_irqsave(spinlock_t *lock)
{
	unsigned long flags;

	spin_lock_irqsave(lock, flags);
	return flags;
}

void rsiw_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags)
{
	spin_unlock_irqrestore(lock, flags);
}
#endif

struct ib_udata *rsiw_bundle_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}

struct ib_ucontext *rsiw_udata_ucontext(struct ib_udata *udata)
{
	return udata ? rdma_udata_to_uverbs_attr_bundle(udata)->context : NULL;
}

/*
 * rsiw's xarrays are looked up from process context, softirq (STag and QP
 * lookups on receive) and with interrupts disabled (iw_cm calls get_qp
 * under a spin_lock_irqsave), so their lock is taken irqsave.
 */
void rsiw_xa_init_alloc1(struct xarray *xa)
{
	xa_init_flags(xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
}

int rsiw_xa_alloc_cyclic(struct xarray *xa, u32 *id, void *entry, u32 max,
			 u32 *next)
{
	return xa_alloc_cyclic_irq(xa, id, entry, XA_LIMIT(1, max), next,
				   GFP_KERNEL);
}

void rsiw_rcu_read_lock(void)
{
	rcu_read_lock();
}

void rsiw_rcu_read_unlock(void)
{
	rcu_read_unlock();
}

/*
 * Dropping an object that RCU readers may still see: drop(obj) runs on
 * rsiw's drop workqueue (process context) after a grace period.
 */
struct rsiw_rcu_drop {
	struct rcu_work rwork;
	void *obj;
	void (*drop)(void *obj);
};

static void rsiw_rcu_drop_fn(struct work_struct *work)
{
	struct rsiw_rcu_drop *d =
		container_of(to_rcu_work(work), struct rsiw_rcu_drop, rwork);

	d->drop(d->obj);
	kfree(d);
}

void rsiw_drop_after_gp(struct workqueue_struct *wq, void *obj,
			void (*drop)(void *obj))
{
	struct rsiw_rcu_drop *d = kmalloc(sizeof(*d), GFP_KERNEL);

	if (!d) {
		synchronize_rcu();
		drop(obj);
		return;
	}
	d->obj = obj;
	d->drop = drop;
	INIT_RCU_WORK(&d->rwork, rsiw_rcu_drop_fn);
	queue_rcu_work(wq, &d->rwork);
}

/* Waits until every drop queued by rsiw_drop_after_gp() on wq has run. */
void rsiw_drain_drops(struct workqueue_struct *wq)
{
	rcu_barrier();
	flush_workqueue(wq);
}

unsigned long rsiw_xa_lock(struct xarray *xa)
{
	unsigned long flags;

	xa_lock_irqsave(xa, flags);
	return flags;
}

void rsiw_xa_unlock(struct xarray *xa, unsigned long flags)
{
	xa_unlock_irqrestore(xa, flags);
}

#ifdef CONFIG_HIGHMEM
#error "rsiw maps pinned pages through the direct map: no highmem"
#endif

/* A zeroed ib_device of @size bytes (see RSIW_IB_ALLOC_DEVICE above). */
struct ib_device *rsiw_ib_alloc_device(size_t size)
{
	return RSIW_IB_ALLOC_DEVICE(size);
}

/* Pins user memory (RSIW_UMEM_GET: see the kernel versions above). */
struct ib_umem *rsiw_umem_get(struct ib_device *dev, u64 addr, size_t size,
			      int access)
{
	return RSIW_UMEM_GET(dev, addr, size, access);
}

/*
 * The kernel addresses of the pinned pages (the direct map: rsiw needs a
 * 64-bit kernel without highmem), taken once at registration so that the
 * data path needs no call per page.
 */
size_t rsiw_umem_page_addrs(struct ib_umem *umem, void **addrs, size_t max)
{
	struct sg_page_iter it;
	size_t n = 0;

	for_each_sgtable_page(&umem->sgt_append.sgt, &it, 0) {
		if (n == max)
			break;
		addrs[n++] = page_address(sg_page_iter_page(&it));
	}
	return n;
}

/* Per-CPU counters: n u64 slots per CPU. */
u64 __percpu *rsiw_counters_alloc(unsigned int n)
{
	return __alloc_percpu(n * sizeof(u64), sizeof(u64));
}

void rsiw_counters_free(u64 __percpu *c)
{
	free_percpu(c);
}

void rsiw_counters_add(u64 __percpu *c, unsigned int i, u64 v)
{
	this_cpu_add(c[i], v);
}

u64 rsiw_counters_sum(u64 __percpu *c, unsigned int i)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += *per_cpu_ptr(&c[i], cpu);
	return sum;
}

/*
 * Socket upcalls.  sk_user_data points to a hook that remembers the
 * original callbacks and the Rust context; it is read under
 * sk_callback_lock, which rsiw_sk_detach() takes for writing.
 *
 * The pointer is tagged SK_USER_DATA_NOCOPY: a connection that completes
 * on a listener is a clone of it and would otherwise inherit a pointer to
 * the listener's hook, which it may outlive (accepted after the listener
 * was detached, it kept that pointer and got upcalls through it as it was
 * closed).  Such a child has our upcalls but no hook; they do nothing
 * until rsiw_sk_accept_fixup() gives it the original upcalls back.
 */
struct rsiw_sk_hook {
	void (*data_ready)(struct sock *sk);
	void (*state_change)(struct sock *sk);
	void (*write_space)(struct sock *sk);
	rsiw_sk_cb cb;
	void (*release)(void *ctx);
	void *ctx;
};

/* The hook of @sk, if any.  Caller holds sk_callback_lock. */
static struct rsiw_sk_hook *rsiw_sk_hook(const struct sock *sk)
{
	return __locked_read_sk_user_data_with_flags(sk, SK_USER_DATA_NOCOPY);
}

static void rsiw_sk_upcall(struct sock *sk, int event)
{
	struct rsiw_sk_hook *h;

	read_lock_bh(&sk->sk_callback_lock);
	h = rsiw_sk_hook(sk);
	if (h)
		h->cb(h->ctx, sk, event, sk->sk_state);
	read_unlock_bh(&sk->sk_callback_lock);
}

static void rsiw_sk_data_ready(struct sock *sk)
{
	rsiw_sk_upcall(sk, RSIW_SK_DATA);
}

static void rsiw_sk_state_change(struct sock *sk)
{
	rsiw_sk_upcall(sk, RSIW_SK_STATE);
}

/*
 * TCP calls this on every ACK while SOCK_NOSPACE is set.  As siw does, let
 * the original upcall (sk_stream_write_space()) decide: it clears
 * SOCK_NOSPACE once enough of the send buffer is free, and only then is
 * the transmit work woken, once, to send a large batch.
 */
static void rsiw_sk_write_space(struct sock *sk)
{
	struct rsiw_sk_hook *h;

	read_lock_bh(&sk->sk_callback_lock);
	h = rsiw_sk_hook(sk);
	if (h) {
		h->write_space(sk);
		if (sk->sk_socket &&
		    !test_bit(SOCK_NOSPACE, &sk->sk_socket->flags))
			h->cb(h->ctx, sk, RSIW_SK_SPACE, sk->sk_state);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

int rsiw_sk_attach(struct socket *s, void *ctx, rsiw_sk_cb cb,
		   void (*release)(void *ctx))
{
	struct sock *sk = s->sk;
	struct rsiw_sk_hook *h = kzalloc(sizeof(*h), GFP_KERNEL);

	if (!h)
		return -ENOMEM;
	h->ctx = ctx;
	h->cb = cb;
	h->release = release;
	write_lock_bh(&sk->sk_callback_lock);
	if (sk->sk_user_data) {
		write_unlock_bh(&sk->sk_callback_lock);
		kfree(h);
		return -EBUSY;
	}
	h->data_ready = sk->sk_data_ready;
	h->state_change = sk->sk_state_change;
	h->write_space = sk->sk_write_space;
	__rcu_assign_sk_user_data_with_flags(sk, h, SK_USER_DATA_NOCOPY);
	sk->sk_data_ready = rsiw_sk_data_ready;
	sk->sk_state_change = rsiw_sk_state_change;
	sk->sk_write_space = rsiw_sk_write_space;
	write_unlock_bh(&sk->sk_callback_lock);
	return 0;
}

/* Restore the callbacks; release the Rust context once no upcall uses it. */
void rsiw_sk_detach(struct socket *s)
{
	struct sock *sk = s->sk;
	struct rsiw_sk_hook *h;

	write_lock_bh(&sk->sk_callback_lock);
	h = rsiw_sk_hook(sk);
	if (h) {
		sk->sk_data_ready = h->data_ready;
		sk->sk_state_change = h->state_change;
		sk->sk_write_space = h->write_space;
		rcu_assign_sk_user_data(sk, NULL);
	}
	write_unlock_bh(&sk->sk_callback_lock);
	if (h) {
		h->release(h->ctx);
		kfree(h);
	}
}

/*
 * An accepted socket is a clone of its listener: it inherits the listener's
 * upcalls (but not its hook, see above).  Give it the original upcalls
 * back, so that it can get a hook of its own.  The two callback locks are
 * taken one after the other (never nested: they are of one lock class).
 * Fails with -ENOTCONN once the listener is detached (being closed): the
 * originals are gone with its hook, and the caller drops the child.
 */
int rsiw_sk_accept_fixup(struct socket *listener, struct socket *child)
{
	void (*data_ready)(struct sock *sk) = NULL;
	void (*state_change)(struct sock *sk) = NULL;
	void (*write_space)(struct sock *sk) = NULL;
	struct sock *sk = child->sk;
	struct rsiw_sk_hook *h;

	read_lock_bh(&listener->sk->sk_callback_lock);
	h = rsiw_sk_hook(listener->sk);
	if (h) {
		data_ready = h->data_ready;
		state_change = h->state_change;
		write_space = h->write_space;
	}
	read_unlock_bh(&listener->sk->sk_callback_lock);
	if (!h)
		return -ENOTCONN;
	write_lock_bh(&sk->sk_callback_lock);
	if (!sk->sk_user_data && sk->sk_data_ready == rsiw_sk_data_ready) {
		sk->sk_data_ready = data_ready;
		sk->sk_state_change = state_change;
		sk->sk_write_space = write_space;
	}
	write_unlock_bh(&sk->sk_callback_lock);
	return 0;
}

struct rsiw_rx_desc {
	void *ctx;
	size_t left;
	int err;
};

/*
 * The common skb (linear part and page fragments, no fragment list) is
 * walked directly; anything else goes through skb_seq_read().
 */
static int rsiw_rx_frags(struct rsiw_rx_desc *d, read_descriptor_t *rd,
			 struct sk_buff *skb, unsigned int off, size_t len)
{
	unsigned int pos = skb_headlen(skb), done = 0, i;
	size_t n;
	int r;

	if (off < pos) {
		n = min_t(size_t, pos - off, len);
		r = rsiw_sock_rx(d->ctx, skb->data + off, n);
		if (r < 0)
			goto err;
		done = n;
	}
	for (i = 0; i < skb_shinfo(skb)->nr_frags && done < len; i++) {
		const skb_frag_t *f = &skb_shinfo(skb)->frags[i];
		unsigned int fs = skb_frag_size(f), at = off + done;

		if (at < pos + fs) {
			n = min_t(size_t, pos + fs - at, len - done);
			r = rsiw_sock_rx(d->ctx, skb_frag_address(f) + (at - pos), n);
			if (r < 0)
				goto err;
			done += n;
		}
		pos += fs;
	}
	return done;
err:
	d->err = r;
	rd->count = 0;
	return done;
}

/*
 * Any other skb.  Not inlined into the actor: the kernel zeroes a stack
 * variable such as the skb_seq_state at every call.
 */
static noinline int rsiw_rx_seq(struct rsiw_rx_desc *d, read_descriptor_t *rd,
				struct sk_buff *skb, unsigned int off,
				size_t len)
{
	struct skb_seq_state st;
	unsigned int done = 0, n;
	const u8 *data;
	int r;

	skb_prepare_seq_read(skb, off, off + len, &st);
	while ((n = skb_seq_read(done, &data, &st)) != 0) {
		r = rsiw_sock_rx(d->ctx, data, n);
		if (r < 0) {
			d->err = r;
			rd->count = 0;
			skb_abort_seq_read(&st);
			return done;
		}
		done += n;
	}
	return done;
}

/* Takes at most d->left octets; none after an error of the receiver. */
static int rsiw_rx_actor(read_descriptor_t *rd, struct sk_buff *skb,
			 unsigned int off, size_t len)
{
	struct rsiw_rx_desc *d = rd->arg.data;
	int used;

	if (d->err || !d->left)
		return 0;
	len = min(len, d->left);
	if (!IS_ENABLED(CONFIG_HIGHMEM) && !skb_has_frag_list(skb) &&
	    skb_frags_readable(skb))
		used = rsiw_rx_frags(d, rd, skb, off, len);
	else
		used = rsiw_rx_seq(d, rd, skb, off, len);
	d->left -= used;
	return used;
}

/*
 * Consume at most @limit queued octets into the Rust receive path.  The
 * socket is locked: by the data_ready upcall or by rsiw_sk_lock().
 */
int rsiw_sk_read(struct sock *sk, size_t limit, void *ctx)
{
	struct rsiw_rx_desc d = { .ctx = ctx, .left = limit };
	read_descriptor_t rd = { .arg.data = &d, .count = 1 };

	if (limit)
		tcp_read_sock(sk, &rd, rsiw_rx_actor);
	return d.err;
}

/*
 * Feed the queued octets after the first @skip to the Rust receive path
 * without consuming them (the socket is locked as for rsiw_sk_read).
 */
int rsiw_sk_peek(struct sock *sk, size_t skip, void *ctx)
{
	struct rsiw_rx_desc d = { .ctx = ctx, .left = SIZE_MAX };
	read_descriptor_t rd = { .arg.data = &d, .count = 1 };
	u32 seq = tcp_sk(sk)->copied_seq + skip;
	struct sk_buff *skb;

	skb_queue_walk(&sk->sk_receive_queue, skb) {
		u32 off = seq - TCP_SKB_CB(skb)->seq;
		int used;

		if (off >= skb->len)
			continue;
		used = rsiw_rx_actor(&rd, skb, off, skb->len - off);
		if (used <= 0 || d.err)
			break;
		seq += used;
	}
	return d.err;
}

/* Process context: lock the socket as the data_ready upcall runs it. */
struct sock *rsiw_sk_lock(struct socket *s)
{
	lock_sock(s->sk);
	return s->sk;
}

void rsiw_sk_unlock(struct socket *s)
{
	release_sock(s->sk);
}

int rsiw_sk_state(struct socket *s)
{
	return READ_ONCE(s->sk->sk_state);
}

struct sock *rsiw_sock_sk(struct socket *s)
{
	return s->sk;
}

/*
 * kernel_sendmsg() on a TCP socket the caller locked (rsiw_sk_lock), without
 * the generic socket layers in between (tcp_sendmsg() is lock_sock() around
 * the same call); siw's page sends do the same.  Every message takes this
 * path.  The caller keeps the lock around what must happen before the
 * backlog that release_sock() processes (rsiw: the memory the payload comes
 * from stays entered only until the call returned).
 */
int rsiw_sock_send_locked(struct socket *s, struct kvec *vec, size_t n,
			  size_t len, bool more)
{
	struct msghdr msg = {
		.msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL | (more ? MSG_MORE : 0),
	};

	iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, vec, n, len);
	return tcp_sendmsg_locked(s->sk, &msg, len);
}

int rsiw_sock_recv(struct socket *s, void *buf, size_t len)
{
	struct kvec v = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT };

	return kernel_recvmsg(s, &msg, &v, 1, len, MSG_DONTWAIT);
}

struct workqueue_struct *rsiw_alloc_wq(void)
{
	return alloc_workqueue("rsiw", WQ_MEM_RECLAIM | WQ_HIGHPRI | RSIW_WQ_PERCPU, 0);
}

/*
 * The online CPU after the current one (wrapping; the current one if it is
 * the only one).  A CPU going offline meanwhile is harmless: its work runs
 * on an unbound worker.
 */
int rsiw_next_cpu(void)
{
	int cpu = cpumask_next(raw_smp_processor_id(), cpu_online_mask);

	if (cpu >= nr_cpu_ids)
		cpu = cpumask_first(cpu_online_mask);
	return cpu;
}

struct workqueue_struct *rsiw_alloc_drop_wq(void)
{
	return alloc_workqueue("rsiw_drop", RSIW_WQ_PERCPU, 0);
}

u32 rsiw_sock_mss(struct socket *s)
{
	return READ_ONCE(tcp_sk(s->sk)->mss_cache);
}

int rsiw_sock_set_v6only(struct socket *s)
{
	return ip6_sock_set_v6only(s->sk);
}

/* Sent data not yet acknowledged (a lockless hint). */
bool rsiw_sock_unacked(struct socket *s)
{
	const struct tcp_sock *tp = tcp_sk(s->sk);

	return READ_ONCE(tp->snd_nxt) != READ_ONCE(tp->snd_una);
}

u32 rsiw_sock_advmss(struct socket *s)
{
	return READ_ONCE(tcp_sk(s->sk)->advmss);
}

/*
 * Lets the receive window of the connected TCP socket @s grow to @win
 * octets.  A receiver that takes nothing of an FPDU before all of it is
 * queued (MPA with CRC: the CRC is checked before placement) stalls for
 * good if the window closes first: nothing is consumed, so it never opens
 * again.  Raises sk_rcvbuf to the space such a window needs (at the
 * socket's skb payload/truesize ratio, and at least 4 * @win in case that
 * ratio falls) and the window clamp to @win.
 *
 * sk_rcvbuf is written as TCP's own autotuning writes it, without
 * SOCK_RCVBUF_LOCK (which sock_set_rcvbuf() sets and which stops the
 * autotuning): the autotuning may still grow it, up to tcp_rmem[2], and
 * nothing in TCP shrinks it again, whatever tcp_rmem says.  The window
 * clamp, which TCP set from the small buffer at the handshake, goes
 * through the TCP_WINDOW_CLAMP socket option.  Process context.
 *
 * Returns the largest window the connection can now advertise (the clamp,
 * bounded by the window scale agreed in the handshake), or a negative
 * errno.
 */
int rsiw_sock_reserve_rcv_window(struct socket *s, u32 win)
{
	struct sock *sk = s->sk;
	struct tcp_sock *tp = tcp_sk(sk);
	int val = win, space, r = 0;
	u32 clamp;
	u64 most;

	if (win == 0 || win > INT_MAX / 8)
		return -EINVAL;
	lock_sock(sk);
	space = max_t(int, tcp_space_from_win(sk, win), 4 * win);
	if (READ_ONCE(sk->sk_rcvbuf) < space)
		WRITE_ONCE(sk->sk_rcvbuf, space);
	clamp = READ_ONCE(tp->window_clamp);
	release_sock(sk);
	if (clamp < win)
		r = s->ops->setsockopt(s, SOL_TCP, TCP_WINDOW_CLAMP,
				       KERNEL_SOCKPTR(&val), sizeof(val));
	if (r)
		return r;
	most = min_t(u64, READ_ONCE(tp->window_clamp),
		     (u64)U16_MAX << tp->rx_opt.rcv_wscale);
	return min_t(u64, most, INT_MAX);
}

/*
 * Whether the caller may sleep: task context with interrupts on, outside
 * any RCU read-side section (preemptible RCU does not count one in
 * preempt_count; a reference taken by an RCU look-up may be dropped in
 * it) and, where the kernel counts it, no lock or section that disabled
 * preemption. Without CONFIG_PREEMPT_COUNT a plain spinlock is invisible
 * here; rsiw's locks that may hold the last reference to pinned memory are
 * all interrupt-safe (interrupts off while held), which this sees.
 */
bool rsiw_may_sleep(void)
{
	if (rcu_preempt_depth())
		return false;
#ifdef CONFIG_PREEMPT_COUNT
	return !in_atomic() && !irqs_disabled();
#else
	return in_task() && !irqs_disabled();
#endif
}

/*
 * Whether a kernel consumer's post_send may transmit in the caller's context
 * (lock the socket, call TCP): task context with preemption counted and
 * enabled (no spinlock, no preempt_disable, no local_bh_disable), interrupts
 * on, and outside any RCU read-side section, which preemptible RCU does not
 * count in preempt_count (blk-mq runs a non-blocking queue's ->queue_rq under
 * one, e.g. nvme-rdma's). Without CONFIG_PREEMPT_COUNT a caller's spinlock
 * does not show: then never.
 */
bool rsiw_post_may_sleep(void)
{
#ifdef CONFIG_PREEMPT_COUNT
	return in_task() && preemptible() && !rcu_preempt_depth();
#else
	return false;
#endif
}

struct rsiw_umem_release {
	struct work_struct work;
	struct ib_umem *umem;
};

static void rsiw_umem_release_work(struct work_struct *w)
{
	struct rsiw_umem_release *r =
		container_of(w, struct rsiw_umem_release, work);

	ib_umem_release(r->umem);
	kfree(r);
}

/*
 * ib_umem_release() may sleep; the last reference to a memory region can go
 * away in the receive softirq.  Release it from rsiw's workqueue then.
 */
int rsiw_umem_release_async(struct workqueue_struct *wq, struct ib_umem *umem)
{
	struct rsiw_umem_release *r = kmalloc(sizeof(*r), GFP_ATOMIC);

	if (!r)
		return -ENOMEM;
	r->umem = umem;
	INIT_WORK(&r->work, rsiw_umem_release_work);
	queue_work(wq, &r->work);
	return 0;
}

/*
 * A delayed work item calling back into Rust with a fixed context.
 * Every timeout alive is on rsiw_dworks (process context only), so that
 * module unload can run the pending ones before their queue goes away: a
 * delayed work's timer is not drained by destroy_workqueue().
 */
struct rsiw_dwork {
	struct delayed_work dw;
	struct list_head node;
	void (*fn)(void *ctx);
	void *ctx;
};

static LIST_HEAD(rsiw_dworks);
static DEFINE_SPINLOCK(rsiw_dworks_lock);

static void rsiw_dwork_run(struct work_struct *w)
{
	struct rsiw_dwork *d = container_of(to_delayed_work(w),
					    struct rsiw_dwork, dw);

	d->fn(d->ctx);
}

struct rsiw_dwork *rsiw_dwork_new(void (*fn)(void *ctx), void *ctx)
{
	struct rsiw_dwork *d = kzalloc(sizeof(*d), GFP_KERNEL);

	if (!d)
		return NULL;
	INIT_DELAYED_WORK(&d->dw, rsiw_dwork_run);
	d->fn = fn;
	d->ctx = ctx;
	spin_lock(&rsiw_dworks_lock);
	list_add(&d->node, &rsiw_dworks);
	spin_unlock(&rsiw_dworks_lock);
	return d;
}

bool rsiw_dwork_schedule(struct workqueue_struct *wq, struct rsiw_dwork *d,
			 unsigned int ms)
{
	return queue_delayed_work(wq, &d->dw, msecs_to_jiffies(ms));
}

bool rsiw_dwork_cancel(struct rsiw_dwork *d)
{
	return cancel_delayed_work(&d->dw);
}

void *rsiw_dwork_ctx(struct rsiw_dwork *d)
{
	return d->ctx;
}

/*
 * May be called from the work's own callback, which must not wait for
 * itself.  Off the list first: rsiw_dwork_expire_all() cannot queue it
 * again after the cancel.
 */
void rsiw_dwork_free(struct rsiw_dwork *d)
{
	spin_lock(&rsiw_dworks_lock);
	list_del(&d->node);
	spin_unlock(&rsiw_dworks_lock);
	if (current_work() != &d->dw.work)
		cancel_delayed_work_sync(&d->dw);
	kfree(d);
}

/*
 * Module unload: runs every pending timeout now and waits for it, until
 * none is pending (a run may arm another).  The callbacks run as if their
 * time had come.
 */
void rsiw_dwork_expire_all(struct workqueue_struct *wq)
{
	struct rsiw_dwork *d;
	bool kicked;

	do {
		kicked = false;
		spin_lock(&rsiw_dworks_lock);
		list_for_each_entry(d, &rsiw_dworks, node) {
			if (delayed_work_pending(&d->dw)) {
				mod_delayed_work(wq, &d->dw, 0);
				kicked = true;
			}
		}
		spin_unlock(&rsiw_dworks_lock);
		if (kicked)
			flush_workqueue(wq);
	} while (kicked);
}

/*
 * Driver attributes of an IB device (/sys/class/infiniband/DEV/NAME): up
 * to RSIW_ATTRS_MAX unsigned numbers, named and served by the Rust driver
 * (rust/kif/rdma/adapter/device.rs), which sets them up with
 * rsiw_attrs_init() before its first device registers.
 */
#define RSIW_ATTRS_MAX 8

static rsiw_attr_show_t *rsiw_attr_show_fn;
static rsiw_attr_store_t *rsiw_attr_store_fn;
static struct device_attribute rsiw_dev_attrs[RSIW_ATTRS_MAX];
static struct attribute *rsiw_attrs[RSIW_ATTRS_MAX + 1];
static const struct attribute_group rsiw_attr_group = { .attrs = rsiw_attrs };
static DEFINE_MUTEX(rsiw_attrs_lock);

static ssize_t rsiw_attr_show(struct device *dev, struct device_attribute *attr,
			      char *buf)
{
	u32 v;
	int ret = rsiw_attr_show_fn(rdma_device_to_ibdev(dev),
				    attr - rsiw_dev_attrs, &v);

	return ret ? ret : sysfs_emit(buf, "%u\n", v);
}

static ssize_t rsiw_attr_store(struct device *dev, struct device_attribute *attr,
			       const char *buf, size_t count)
{
	u32 v;
	int ret = kstrtou32(buf, 0, &v);

	if (ret)
		return ret;
	ret = rsiw_attr_store_fn(rdma_device_to_ibdev(dev),
				 attr - rsiw_dev_attrs, v);
	return ret ? ret : count;
}

const struct attribute_group *rsiw_attrs_init(const char *const *names,
					      unsigned int n,
					      rsiw_attr_show_t *show,
					      rsiw_attr_store_t *store)
{
	unsigned int i;

	if (n > RSIW_ATTRS_MAX)
		return NULL;
	mutex_lock(&rsiw_attrs_lock);
	if (!rsiw_attr_show_fn) {
		for (i = 0; i < n; i++) {
			sysfs_attr_init(&rsiw_dev_attrs[i].attr);
			rsiw_dev_attrs[i].attr.name = names[i];
			rsiw_dev_attrs[i].attr.mode = 0644;
			rsiw_dev_attrs[i].show = rsiw_attr_show;
			rsiw_dev_attrs[i].store = rsiw_attr_store;
			rsiw_attrs[i] = &rsiw_dev_attrs[i].attr;
		}
		rsiw_attrs[n] = NULL;
		rsiw_attr_store_fn = store;
		rsiw_attr_show_fn = show;
	}
	mutex_unlock(&rsiw_attrs_lock);
	return &rsiw_attr_group;
}

/*
 * The iWARP CM id behind an rdma_cm id (as a key: rsiw does not read it),
 * NULL if none.  rdma_iw_cm_id() is not exported GPL-only, so symbol_get()
 * refuses it (since 6.5), and a call into a modular rdma_cm would make rsiw
 * depend on rdma_cm.ko: it is called only where rdma_cm is built in.
 */
struct iw_cm_id *rsiw_rdma_iw_cm_id(struct rdma_cm_id *id)
{
#if IS_BUILTIN(CONFIG_INFINIBAND) && IS_ENABLED(CONFIG_INFINIBAND_ADDR_TRANS)
	return rdma_iw_cm_id(id);
#else
	return NULL;
#endif
}

/* The driver details of a resource entry go in one nested attribute. */
struct nlattr *rsiw_res_driver_begin(struct sk_buff *msg)
{
	return nla_nest_start_noflag(msg, RDMA_NLDEV_ATTR_DRIVER);
}

void rsiw_res_driver_end(struct sk_buff *msg, struct nlattr *nest, bool ok)
{
	if (ok)
		nla_nest_end(msg, nest);
	else
		nla_nest_cancel(msg, nest);
}

/*
 * A warning a peer can trigger (a protocol error, a TERMINATE received, a
 * bad Read Request): "rsiw DEV: ..." as the ibdev_*() helpers name a device
 * (plain "rsiw: ..." without one), and rate-limited, so that no peer can
 * fill the kernel log.  @args is a Rust core::fmt::Arguments (printed by
 * %pA).  One budget for the module: the default ten lines every five
 * seconds, then a count of what was suppressed.
 */
void rsiw_warn_peer(const struct ib_device *dev, const void *args)
{
	static DEFINE_RATELIMIT_STATE(rs, DEFAULT_RATELIMIT_INTERVAL,
				      DEFAULT_RATELIMIT_BURST);

	if (!__ratelimit(&rs))
		return;
	if (dev)
		printk(KERN_WARNING KBUILD_MODNAME " %s: %pA", dev_name(&dev->dev),
		       args);
	else
		printk(KERN_WARNING KBUILD_MODNAME ": %pA", args);
}
