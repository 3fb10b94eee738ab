// SPDX-License-Identifier: GPL-2.0

//! Control-path verbs: device and port queries, user contexts and
//! protection domains, with the siw user ABI (`siw-abi.h`) responses.

use kernel::prelude::*;

use crate::device::{count_down, count_up, limits, Device, VENDOR_ID};
use crate::kif::{
    ib::{DeviceCaps, Driver, Mtu, PortInfo},
    net::NetDev,
    udata::Udata,
};

/// The rsiw driver as the RDMA core sees it.
pub struct Rsiw;

/// A user context.
pub struct Ucontext;

/// A protection domain.
pub struct Pd;

/// `struct siw_uresp_alloc_ctx`: the device id and 4 octets of padding.
fn alloc_ctx_resp(dev_id: u32) -> [u8; 8] {
    let mut r = [0u8; 8];
    r[..4].copy_from_slice(&dev_id.to_ne_bytes());
    r
}

impl Driver for Rsiw {
    type Device = Device;
    type Ucontext = Ucontext;
    type Pd = Pd;

    fn query_device(dev: &Device) -> DeviceCaps {
        DeviceCaps {
            vendor_id: VENDOR_ID,
            vendor_part_id: dev.dev_id,
            sys_image_guid: crate::device::eui64(dev.mac),
            max_mr_size: u64::MAX,
            page_size_cap: kernel::page::PAGE_SIZE as u64,
            max_qp: limits::MAX_QP,
            max_qp_wr: limits::MAX_QP_WR,
            max_sge: limits::MAX_SGE,
            max_sge_rd: limits::MAX_SGE_RD,
            max_cq: limits::MAX_CQ,
            max_cqe: limits::MAX_CQE,
            max_mr: limits::MAX_MR,
            max_pd: limits::MAX_PD,
            max_ird: limits::MAX_IRD,
            max_ord: limits::MAX_ORD,
            max_srq: limits::MAX_SRQ,
            max_srq_wr: limits::MAX_SRQ_WR,
            max_srq_sge: limits::MAX_SGE,
            max_fast_reg_page_list_len: limits::MAX_FRMR_PAGES,
            mem_mgt_extensions: true,
        }
    }

    fn query_port(_dev: &Device, ndev: &NetDev<'_>) -> PortInfo {
        PortInfo {
            active: ndev.is_up(),
            active_mtu: Mtu::from_link_mtu(ndev.mtu()),
            max_mtu: Mtu::from_link_mtu(ndev.max_mtu()),
            gid_tbl_len: 1,
        }
    }

    fn gid(dev: &Device) -> [u8; 16] {
        let mut gid = [0u8; 16];
        gid[..6].copy_from_slice(&dev.mac);
        gid
    }

    fn alloc_ucontext(dev: &Device, resp: &mut Udata<'_>) -> Result<Ucontext> {
        count_up(&dev.num_ctx, limits::MAX_CONTEXT)?;
        if let Err(e) = resp.respond(&alloc_ctx_resp(dev.dev_id)) {
            count_down(&dev.num_ctx);
            return Err(e);
        }
        Ok(Ucontext)
    }

    fn dealloc_ucontext(dev: &Device, _uctx: Ucontext) {
        count_down(&dev.num_ctx);
    }

    fn alloc_pd(dev: &Device) -> Result<Pd> {
        count_up(&dev.num_pd, limits::MAX_PD)?;
        Ok(Pd)
    }

    fn dealloc_pd(dev: &Device, _pd: Pd) {
        count_down(&dev.num_pd);
    }
}
