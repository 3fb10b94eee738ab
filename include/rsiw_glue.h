/* SPDX-License-Identifier: GPL-2.0 */
/*
 * rsiw C glue: out-of-line wrappers for the static inline kernel helpers the
 * Rust kernel interface layer (rust/kif) needs.  Nothing else lives here.
 */
#ifndef RSIW_GLUE_H
#define RSIW_GLUE_H

#include <linux/netdevice.h>
#include <rdma/ib_verbs.h>

bool rsiw_netif_up(const struct net_device *ndev);
void rsiw_dev_put(struct net_device *ndev);
bool rsiw_ib_device_try_get(struct ib_device *ibdev);
struct net_device *rsiw_netdev_notifier_dev(void *info);
void rsiw_ib_mark_name_assigned_by_user(struct ib_device *ibdev);
bool rsiw_mpa_crc_required(void);
bool rsiw_mpa_markers_wanted(void);

#endif /* RSIW_GLUE_H */
