// SPDX-License-Identifier: GPL-2.0

//! The verbs: rsiw's `ib_device` operations (the `kif::rdma::Driver`
//! implementation of [`Rsiw`]), dispatched to the layers below; device
//! and port queries, user contexts and protection domains are answered
//! here, with the siw user ABI (`siw-abi.h`) responses.

use kernel::prelude::*;

use kernel::sync::Arc;

use crate::base::{eui64, limits, Kind, Pd, Quota, Rsiw, Ucontext, VENDOR_ID};
use crate::cq::Cq;
use crate::device::Device;
use crate::kif::{
    net::NetDev,
    rdma::handle::QpHandle,
    rdma::iwcm::{CmId, ConnParam},
    rdma::udata::Udata,
    rdma::wr::{RecvWrs, SendWrs},
    rdma::{
        CreateCq, CreateQp, CreateSrq, DeviceCaps, Driver, Mtu, PortInfo, QpModify, QpQuery,
        RegUserMr, ReregUserMr, SrqAttr, StatDescs,
    },
    siw::Cqe,
};
use crate::mem::{self, Mr};
use crate::qp::Qp;
use crate::srq::Srq;

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
            sys_image_guid: eui64(dev.mac),
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
        let uctx = Ucontext {
            quota: Quota::take(&dev.quotas, Kind::Ctx)?,
        };
        resp.respond(&alloc_ctx_resp(dev.dev_id))?;
        Ok(uctx)
    }

    fn dealloc_ucontext(_dev: &Device, uctx: Ucontext) {
        // Its quota goes back with it.
        drop(uctx);
    }

    fn alloc_pd(dev: &Device) -> Result<Pd> {
        let quota = Quota::take(&dev.quotas, Kind::Pd)?;
        Ok(Pd {
            id: dev
                .next_pd_id
                .fetch_add(1, core::sync::atomic::Ordering::Relaxed),
            quota,
        })
    }

    fn dealloc_pd(_dev: &Device, pd: Pd) {
        // Its quota goes back with it.
        drop(pd);
    }

    type Cq = Cq;
    type Qp = Qp;
    type Srq = Srq;
    type Mr = Mr;

    fn create_cq(dev: &Device, args: CreateCq<'_>) -> Result<Arc<Cq>> {
        Cq::create(&dev.quotas, args)
    }

    fn destroy_cq(_dev: &Device, cq: Arc<Cq>) {
        cq.destroy();
    }

    fn poll_cq(cq: &Cq, max: usize, f: &mut dyn FnMut(&Cqe)) {
        cq.poll(max, f)
    }

    fn req_notify_cq(cq: &Cq, solicited_only: bool, report_missed: bool) -> u32 {
        cq.arm(solicited_only, report_missed)
    }

    fn create_qp(dev: &Device, args: CreateQp<'_, Self>) -> Result<(Arc<Qp>, u32)> {
        Qp::create(&dev.qp_xa, &dev.quotas, &dev.mem_xa, &dev.stats, args)
    }

    fn modify_qp(qp: &Arc<Qp>, m: &QpModify) -> Result {
        qp.modify(m)
    }

    fn query_qp(qp: &Qp, ndev: &NetDev<'_>) -> QpQuery {
        qp.query(ndev)
    }

    fn destroy_qp(dev: &Device, qp: Arc<Qp>) {
        qp.destroy(&dev.qp_xa)
    }

    fn post_send(qp: &Arc<Qp>, wrs: &mut SendWrs<'_>) -> Result {
        qp.post_send(wrs)
    }

    fn post_recv(qp: &Qp, wrs: &mut RecvWrs<'_>) -> Result {
        qp.post_recv(wrs)
    }

    fn create_srq(dev: &Device, args: CreateSrq<'_, Self>) -> Result<Arc<Srq>> {
        Srq::create(&dev.quotas, args)
    }

    fn modify_srq(srq: &Srq, max_wr: Option<u32>, limit: Option<u32>) -> Result {
        srq.modify(max_wr, limit)
    }

    fn query_srq(srq: &Srq) -> SrqAttr {
        srq.query()
    }

    fn destroy_srq(_dev: &Device, srq: Arc<Srq>) {
        srq.destroy()
    }

    fn post_srq_recv(srq: &Srq, wrs: &mut RecvWrs<'_>) -> Result {
        srq.post(wrs)
    }

    fn reg_user_mr(dev: &Device, args: RegUserMr<'_, Self>) -> Result<(Mr, u32)> {
        mem::reg_user_mr(&dev.mem_xa, &dev.quotas, args)
    }

    fn get_dma_mr(dev: &Device, pd: &Pd, access: u32) -> Result<(Mr, u32)> {
        mem::get_dma_mr(&dev.mem_xa, &dev.quotas, pd, access)
    }

    fn alloc_mr(dev: &Device, pd: &Pd, max_pages: u32) -> Result<(Mr, u32)> {
        mem::alloc_mr(&dev.mem_xa, &dev.quotas, pd, max_pages)
    }

    fn map_mr_begin(mr: &Mr) -> Result {
        mr.map_begin()
    }

    fn map_mr_page(mr: &Mr, addr: u64) -> Result {
        mr.map_page(addr)
    }

    fn map_mr_end(mr: &Mr, iova: u64, length: u64, page_size: u32) {
        mr.map_end(iova, length, page_size)
    }

    fn rereg_user_mr(
        dev: &Device,
        old: &Mr,
        args: ReregUserMr<'_, Self>,
    ) -> Result<Option<(Mr, u32)>> {
        mem::rereg_user_mr(&dev.mem_xa, &dev.quotas, old, args)
    }

    fn dereg_mr(dev: &Device, mr: Mr) -> Result {
        mem::dereg_mr(&dev.mem_xa, mr)
    }

    type Listener = crate::cm::Listener;
    type Cep = crate::cm::Cep;

    fn iw_connect(dev: &Device, id: CmId, p: ConnParam) -> Result {
        let qp = dev.qp_xa.get(p.qpn).ok_or(EINVAL)?;
        crate::cm::connect(qp, id, p)
    }

    fn iw_accept(dev: &Device, cep: Arc<Self::Cep>, id: CmId, p: ConnParam) -> Result {
        let qp = dev.qp_xa.get(p.qpn).ok_or(EINVAL)?;
        crate::cm::accept(qp, cep, id, p)
    }

    fn iw_reject(cep: Arc<Self::Cep>, pdata: &[u8]) -> Result {
        crate::cm::reject(cep, pdata)
    }

    fn iw_create_listen(dev: &Device, id: CmId, backlog: i32) -> Result<Arc<Self::Listener>> {
        crate::cm::create_listen(dev.ifindex, id, backlog)
    }

    fn iw_destroy_listen(l: Arc<Self::Listener>) {
        crate::cm::destroy_listen(l)
    }

    fn iw_get_qp(dev: &Device, qpn: u32) -> Option<QpHandle> {
        dev.qp_xa.get(qpn).map(|q| q.handle.clone())
    }

    const STATS: &'static StatDescs = &crate::base::stats::NAMES;

    fn read_stats(dev: &Device, out: &mut [u64]) {
        dev.stats.read(out);
    }
}
