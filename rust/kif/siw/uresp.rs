// SPDX-License-Identifier: GPL-2.0

//! The requests and responses of the siw user ABI's verbs (`struct
//! siw_ureq_*`, `struct siw_uresp_*`), as the octets
//! [`Udata`](crate::kif::rdma::udata::Udata) copies in and out, laid out
//! by the kernel's header.

use core::mem::{offset_of, size_of};
use kernel::bindings;

/// The user verbs ABI version of `siw-abi.h` (libsiw checks it).
pub const ABI_VERSION: u32 = bindings::SIW_ABI_VERSION;

/// Writes `v` at `off` in `r`.
fn put<const N: usize>(r: &mut [u8; N], off: usize, v: &[u8]) {
    r[off..off + v.len()].copy_from_slice(v);
}

/// `struct siw_uresp_alloc_ctx`.
pub fn alloc_ctx(dev_id: u32) -> [u8; size_of::<bindings::siw_uresp_alloc_ctx>()] {
    type R = bindings::siw_uresp_alloc_ctx;
    let mut r = [0u8; size_of::<R>()];
    put(&mut r, offset_of!(R, dev_id), &dev_id.to_ne_bytes());
    r
}

/// `struct siw_uresp_create_cq`.
pub fn create_cq(
    cq_id: u32,
    num_cqe: u32,
    cq_key: u64,
) -> [u8; size_of::<bindings::siw_uresp_create_cq>()] {
    type R = bindings::siw_uresp_create_cq;
    let mut r = [0u8; size_of::<R>()];
    put(&mut r, offset_of!(R, cq_id), &cq_id.to_ne_bytes());
    put(&mut r, offset_of!(R, num_cqe), &num_cqe.to_ne_bytes());
    put(&mut r, offset_of!(R, cq_key), &cq_key.to_ne_bytes());
    r
}

/// `struct siw_uresp_create_qp`.
pub fn create_qp(
    qp_id: u32,
    num_sqe: u32,
    num_rqe: u32,
    sq_key: u64,
    rq_key: u64,
) -> [u8; size_of::<bindings::siw_uresp_create_qp>()] {
    type R = bindings::siw_uresp_create_qp;
    let mut r = [0u8; size_of::<R>()];
    put(&mut r, offset_of!(R, qp_id), &qp_id.to_ne_bytes());
    put(&mut r, offset_of!(R, num_sqe), &num_sqe.to_ne_bytes());
    put(&mut r, offset_of!(R, num_rqe), &num_rqe.to_ne_bytes());
    put(&mut r, offset_of!(R, sq_key), &sq_key.to_ne_bytes());
    put(&mut r, offset_of!(R, rq_key), &rq_key.to_ne_bytes());
    r
}

/// `struct siw_uresp_create_srq`.
pub fn create_srq(num_rqe: u32, srq_key: u64) -> [u8; size_of::<bindings::siw_uresp_create_srq>()] {
    type R = bindings::siw_uresp_create_srq;
    let mut r = [0u8; size_of::<R>()];
    put(&mut r, offset_of!(R, num_rqe), &num_rqe.to_ne_bytes());
    put(&mut r, offset_of!(R, srq_key), &srq_key.to_ne_bytes());
    r
}

/// `struct siw_uresp_reg_mr`.
pub fn reg_mr(stag: u32) -> [u8; size_of::<bindings::siw_uresp_reg_mr>()] {
    type R = bindings::siw_uresp_reg_mr;
    let mut r = [0u8; size_of::<R>()];
    put(&mut r, offset_of!(R, stag), &stag.to_ne_bytes());
    r
}

/// `struct siw_ureq_reg_mr`, as user space passes it.
pub type RegMrReq = [u8; size_of::<bindings::siw_ureq_reg_mr>()];

/// The STag key user space chose in a `siw_ureq_reg_mr`.
pub fn reg_mr_stag_key(req: &RegMrReq) -> u8 {
    req[offset_of!(bindings::siw_ureq_reg_mr, stag_key)]
}
