// SPDX-License-Identifier: GPL-2.0

//! Transmitting a Write with Immediate (RFC 7306 section 6, see
//! [`crate::qp::imm`]): the RDMA Write is sent as any Write, as a job of
//! [`Kind::WriteImm`]; when its last octet went to TCP, the Immediate
//! Data message follows as the work request's second job, which
//! completes it. A Write of no octets goes straight to the Immediate
//! Data.

use super::job::{empty_sqe, Job, Kind, Src};
use super::state::TxState;
use crate::base::stats::Counter;
use crate::kif::siw::Sqe;
use crate::qp::imm::{self, ImmData};
use crate::qp::Qp;
use crate::wire::rdmap::{SegmentHeader, QN_SEND};

/// The job of the Write `sqe` (header `hdr`, `total` octets from `src`):
/// a plain Write's, or the first of a Write with Immediate.
pub(super) fn write_job(
    qp: &Qp,
    tx: &mut TxState,
    sqe: Sqe,
    hdr: SegmentHeader,
    total: u32,
    src: Src,
) -> Job {
    match imm::of_sqe(&sqe, qp.kernel) {
        None => Job::message(Kind::Wr, sqe, hdr, total, src),
        Some(data) if total == 0 => immediate_job(tx, sqe, data),
        Some(data) => Job::message(Kind::WriteImm(data), sqe, hdr, total, src),
    }
}

/// The Write of a Write with Immediate went to TCP: its Immediate Data
/// message is the next job (the work request stays the active one, which
/// is what completes: the job needs no copy of it).
pub(super) fn follow(qp: &Qp, tx: &mut TxState, data: ImmData) {
    qp.stats.inc(Counter::TxMessages);
    let job = immediate_job(tx, empty_sqe(), data);
    tx.set_job(job);
}

/// The Immediate Data message of the work request `sqe`: the next
/// message of queue 0.
fn immediate_job(tx: &mut TxState, sqe: Sqe, data: ImmData) -> Job {
    let hdr = SegmentHeader::immediate(data.solicited, tx.next_msn(QN_SEND), data.octets());
    Job::message(Kind::Wr, sqe, hdr, 0, Src::None)
}
