// SPDX-License-Identifier: GPL-2.0
/*
 * rsiw C glue: module parameters and out-of-line copies of static inline
 * helpers that bindgen cannot call.  All logic lives in Rust.
 */
#include <linux/moduleparam.h>
#include <linux/netdevice.h>
#include <linux/mm.h>
#include <linux/scatterlist.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

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

struct ib_udata *rsiw_bundle_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}

struct ib_ucontext *rsiw_udata_ucontext(struct ib_udata *udata)
{
	return udata ? rdma_udata_to_uverbs_attr_bundle(udata)->context : NULL;
}

void rsiw_xa_init_alloc1(struct xarray *xa)
{
	xa_init_flags(xa, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_BH);
}

int rsiw_xa_alloc_cyclic(struct xarray *xa, u32 *id, void *entry, u32 max,
			 u32 *next)
{
	return xa_alloc_cyclic_bh(xa, id, entry, XA_LIMIT(1, max), next,
				  GFP_KERNEL);
}

void *rsiw_xa_erase(struct xarray *xa, unsigned long index)
{
	return xa_erase_bh(xa, index);
}

void rsiw_xa_lock(struct xarray *xa)
{
	xa_lock_bh(xa);
}

void rsiw_xa_unlock(struct xarray *xa)
{
	xa_unlock_bh(xa);
}

size_t rsiw_umem_pages(struct ib_umem *umem, struct page **pages, size_t max)
{
	struct sg_page_iter it;
	size_t n = 0;

	for_each_sgtable_page(&umem->sgt_append.sgt, &it, 0) {
		if (n == max)
			break;
		pages[n++] = sg_page_iter_page(&it);
	}
	return n;
}

void *rsiw_page_address(struct page *page)
{
	return page_address(page);
}
