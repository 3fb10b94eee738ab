/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rsiw C glue: out-of-line wrappers for the static inline kernel helpers the
 * Rust kernel interface layer (rust/kif) needs, and the wrappers of rsiw's
 * tracepoints (rsiw_trace.c).  Nothing else lives here.
 */
#ifndef RSIW_GLUE_H
#define RSIW_GLUE_H

#include <linux/netdevice.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

bool rsiw_netif_up(const struct net_device *ndev);
void rsiw_dev_put(struct net_device *ndev);
bool rsiw_ib_device_try_get(struct ib_device *ibdev);
struct net_device *rsiw_netdev_notifier_dev(void *info);
struct net *rsiw_netdev_net_get(struct net_device *ndev);
void rsiw_net_put(struct net *net);
int rsiw_sock_create_in(struct net *net, int family, struct socket **res);
void rsiw_ib_device_set_home_net(struct ib_device *ibdev,
				 struct net_device *ndev);
void rsiw_ib_mark_name_assigned_by_user(struct ib_device *ibdev);
unsigned long rsiw_spin_lock_irqsave(spinlock_t *lock);
void rsiw_spin_unlock_irqrestore(spinlock_t *lock, unsigned long flags);
struct ib_udata *rsiw_bundle_udata(struct uverbs_attr_bundle *attrs);
struct ib_ucontext *rsiw_udata_ucontext(struct ib_udata *udata);
void rsiw_xa_init_alloc1(struct xarray *xa);
int rsiw_xa_alloc_cyclic(struct xarray *xa, u32 *id, void *entry, u32 max,
			 u32 *next);
void rsiw_rcu_read_lock(void);
void rsiw_rcu_read_unlock(void);
void rsiw_drop_after_gp(struct workqueue_struct *wq, void *obj,
			void (*drop)(void *obj));
void rsiw_drain_drops(struct workqueue_struct *wq);
unsigned long rsiw_xa_lock(struct xarray *xa);
void rsiw_xa_unlock(struct xarray *xa, unsigned long flags);
struct ib_device *rsiw_ib_alloc_device(size_t size);
struct ib_umem *rsiw_umem_get(struct ib_device *dev, u64 addr, size_t size,
			      int access);
size_t rsiw_umem_page_addrs(struct ib_umem *umem, void **addrs, size_t max);
u64 __percpu *rsiw_counters_alloc(unsigned int n);
void rsiw_counters_free(u64 __percpu *c);
void rsiw_counters_add(u64 __percpu *c, unsigned int i, u64 v);
u64 rsiw_counters_sum(u64 __percpu *c, unsigned int i);
/* Socket callbacks: the Rust side receives events through these. */
enum rsiw_sk_event { RSIW_SK_DATA, RSIW_SK_STATE, RSIW_SK_SPACE };
typedef void (*rsiw_sk_cb)(void *ctx, struct sock *sk, int event, int state);
int rsiw_sock_rx(void *ctx, const u8 *data, size_t len);
int rsiw_sk_attach(struct socket *s, void *ctx, rsiw_sk_cb cb,
		   void (*release)(void *ctx));
void rsiw_sk_detach(struct socket *s);
int rsiw_sk_accept_fixup(struct socket *listener, struct socket *child);
int rsiw_sk_read(struct sock *sk, size_t limit, void *ctx);
int rsiw_sk_peek(struct sock *sk, size_t skip, void *ctx);
struct sock *rsiw_sk_lock(struct socket *s);
void rsiw_sk_unlock(struct socket *s);
int rsiw_sk_state(struct socket *s);
struct sock *rsiw_sock_sk(struct socket *s);
int rsiw_sock_send_locked(struct socket *s, struct kvec *vec, size_t n,
			  size_t len, bool more);
void rsiw_warn_peer(const struct ib_device *dev, const void *args);
int rsiw_sock_recv(struct socket *s, void *buf, size_t len);
struct workqueue_struct *rsiw_alloc_wq(void);
struct workqueue_struct *rsiw_alloc_drop_wq(void);
int rsiw_next_cpu(void);
bool rsiw_may_sleep(void);
bool rsiw_post_may_sleep(void);
struct rsiw_dwork;
struct rsiw_dwork *rsiw_dwork_new(void (*fn)(void *ctx), void *ctx);
bool rsiw_dwork_schedule(struct workqueue_struct *wq, struct rsiw_dwork *d,
			 unsigned int ms);
bool rsiw_dwork_cancel(struct rsiw_dwork *d);
void rsiw_dwork_free(struct rsiw_dwork *d);
void rsiw_dwork_expire_all(struct workqueue_struct *wq);
void *rsiw_dwork_ctx(struct rsiw_dwork *d);
int rsiw_umem_release_async(struct workqueue_struct *wq, struct ib_umem *umem);
u32 rsiw_sock_mss(struct socket *s);
bool rsiw_sock_unacked(struct socket *s);
u32 rsiw_sock_advmss(struct socket *s);
int rsiw_sock_reserve_rcv_window(struct socket *s, u32 win);
int rsiw_sock_set_v6only(struct socket *s);
bool rsiw_mpa_crc_required(void);
bool rsiw_mpa_peer_to_peer(void);
u8 rsiw_mpa_rev(void);
bool rsiw_mpa_markers_wanted(void);
bool rsiw_mpa_large_fpdu(void);
bool rsiw_mpa_responder_waits(void);
u32 rsiw_mpa_max_fpdu(void);
u32 rsiw_cm_accept_timeout(void);
bool rsiw_siw_link_type(void);

struct iw_cm_id *rsiw_rdma_iw_cm_id(struct rdma_cm_id *id);
struct nlattr *rsiw_res_driver_begin(struct sk_buff *msg);
void rsiw_res_driver_end(struct sk_buff *msg, struct nlattr *nest, bool ok);

/* Driver attributes of the IB device in sysfs (rsiw_glue.c) */
typedef int rsiw_attr_show_t(struct ib_device *ibdev, unsigned int idx, u32 *val);
typedef int rsiw_attr_store_t(struct ib_device *ibdev, unsigned int idx, u32 val);
const struct attribute_group *rsiw_attrs_init(const char *const *names,
					      unsigned int n,
					      rsiw_attr_show_t *show,
					      rsiw_attr_store_t *store);

/* rsiw_trace.c: the tracepoints of rsiw_trace.h */
void rsiw_trace_qp_state(u32 qpn, u8 from, u8 to);
void rsiw_trace_mpa_done(u32 qpn, bool initiator, u8 rev, bool crc,
			 bool markers_tx, bool markers_rx, bool p2p,
			 u32 mulpdu, u32 ird, u32 ord);
void rsiw_trace_mpa_failed(bool initiator, int err);
void rsiw_trace_terminate(u32 qpn, bool received, u8 layer, u8 etype, u8 code);
void rsiw_trace_flush(u32 qpn, bool sq, u32 count);

#endif /* RSIW_GLUE_H */
