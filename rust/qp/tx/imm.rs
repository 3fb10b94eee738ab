// SPDX-License-Identifier: GPL-2.0

//! Transmitting a Write with Immediate (RFC 7306 section 6, see
//! [`crate::qp::imm`]): the RDMA Write is sent as any Write, as a job of
//! [`Kind::WriteImm`]; when its last octet went to TCP, the Immediate
//! Data message follows as the work request's second job, which
//! completes it. A Write of no octets goes straight to the Immediate
//! Data.

use super::job::{Kind, Src};
use super::state::{Slot, TxState};
use crate::base::stats::Counter;
use crate::qp::imm::ImmData;
use crate::qp::Qp;
use crate::wire::rdmap::{SegmentHeader, QN_SEND};

/// Makes the job in `slot` the Write with Immediate `data` (header
/// `hdr`, `total` octets from `src`, in place in the job): its Write, or
/// at once its Immediate Data when it has no octets.
pub(super) fn set_write(
    slot: &mut Slot<'_>,
    data: ImmData,
    hdr: SegmentHeader,
    total: u32,
    src: Src,
) {
    if total == 0 {
        slot.job.release();
        set_immediate(slot, data);
    } else {
        slot.job.set(Kind::WriteImm(data), hdr, total, src);
    }
}

/// The Write of a Write with Immediate went to TCP: its Immediate Data
/// message is the next job (the work request stays the active one, which
/// is what completes).
pub(super) fn follow(qp: &Qp, tx: &mut TxState, data: ImmData) {
    qp.stats.inc(Counter::TxMessages);
    set_immediate(&mut tx.slot(), data);
    tx.begin_job();
}

/// Makes the job in `slot` the Immediate Data message `data`: the next
/// message of queue 0.
fn set_immediate(slot: &mut Slot<'_>, data: ImmData) {
    let hdr = SegmentHeader::immediate(data.solicited, slot.next_msn(QN_SEND), data.octets());
    slot.job.set(Kind::Wr, hdr, 0, Src::None);
}
