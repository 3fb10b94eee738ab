// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw C glue: module parameters and out-of-line copies of static inline
 * helpers that bindgen cannot call.  All logic lives in Rust.
 */
#include <linux/moduleparam.h>
#include <linux/netdevice.h>
#include <rdma/ib_verbs.h>

#include "../../include/rsiw_glue.h"

static bool mpa_crc_required;
module_param(mpa_crc_required, bool, 0644);
MODULE_PARM_DESC(mpa_crc_required, "Refuse MPA peers that do not use CRC32C");

static bool mpa_markers;
module_param(mpa_markers, bool, 0644);
MODULE_PARM_DESC(mpa_markers, "Ask peers for MPA markers (RFC 5044)");

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
