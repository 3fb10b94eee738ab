// SPDX-License-Identifier: GPL-2.0

//! RFC 7306 Immediate Data for kernel consumers: how a work request
//! carries it through the send queue and how its 32 bits travel in the
//! 8 octets of an Immediate Data message. The transmit side's part is in
//! `tx::imm`, the receive side's in `rx::sink::imm`.
//!
//! - `IB_WR_RDMA_WRITE_WITH_IMM` is an RDMA Write followed by an
//!   Immediate Data message (with SE when `IB_SEND_SOLICITED`), which
//!   consumes the peer's next receive (RFC 7306 section 6). A Write of no
//!   octets is left out: it would place nothing.
//! - `IB_WR_SEND_WITH_IMM` is refused: RFC 7306 has no message that
//!   carries both a Send's payload and immediate data, and a Send
//!   followed by Immediate Data would consume two receives where the
//!   consumer counts one.
//! - The verbs' immediate data is 32 bits, the RFC's 8 octets: the value
//!   goes out as a 64-bit big endian number (four zero octets, then the
//!   `imm_data` octets as posted); of a received one, the low 32 bits are
//!   delivered.
//!
//! The send queue element is siw's ABI structure: a Write with Immediate
//! is a Write with [`WqeFlags::IMM`], its value in the `lkey` of the last
//! SGE slot, which such a work request may therefore not use.

use kernel::prelude::*;

use crate::kif::siw::{Cqe, Opcode, Rqe, Sqe, Status, WqeFlags, MAX_SGE};
use crate::wire::{
    rdmap::Extensions,
    rfc7306::{immediate_from_u32, immediate_to_u32, IMMEDIATE_DATA_LEN},
};

/// The SGE slot whose `lkey` holds the immediate data.
const IMM_SLOT: usize = MAX_SGE - 1;

/// The immediate data of a Write with Immediate and whether the peer is
/// to get a solicited event.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct ImmData {
    /// The value, in host order.
    pub(crate) value: u32,
    /// Immediate Data with SE.
    pub(crate) solicited: bool,
}

impl ImmData {
    /// The 8 octets of the Immediate Data message.
    pub(crate) fn octets(self) -> [u8; IMMEDIATE_DATA_LEN] {
        immediate_from_u32(self.value)
    }
}

/// The 32 bits delivered of the 8 octets `data` received.
pub(crate) fn value_of(data: [u8; IMMEDIATE_DATA_LEN]) -> u32 {
    immediate_to_u32(data)
}

/// The error of posting a Send with Immediate (see the module docs).
pub(super) fn send_with_imm() -> Error {
    EINVAL
}

/// Makes the Write `sqe` a Write with Immediate `value`; `EINVAL` when its
/// SGEs reach the slot the value takes.
pub(super) fn write_with_imm(sqe: &mut Sqe, value: u32, solicited: bool) -> Result {
    if usize::from(sqe.num_sge) > IMM_SLOT || sqe.flags.contains(WqeFlags::INLINE) {
        return Err(EINVAL);
    }
    sqe.flags |= WqeFlags::IMM;
    if solicited {
        sqe.flags |= WqeFlags::SOLICITED;
    }
    sqe.sge[IMM_SLOT].lkey = value;
    Ok(())
}

/// The immediate data of the send queue element `sqe` of a kernel QP
/// (`kernel`), if it is a Write with Immediate. User space's elements
/// never carry any: libsiw has no field for it.
pub(super) fn of_sqe(sqe: &Sqe, kernel: bool) -> Option<ImmData> {
    (kernel && sqe.flags.contains(WqeFlags::IMM)).then(|| ImmData {
        value: sqe.sge[IMM_SLOT].lkey,
        solicited: sqe.flags.contains(WqeFlags::SOLICITED),
    })
}

impl super::Qp {
    /// Completes the receive element `rqe` that an Immediate Data message
    /// with `value` consumed (`IB_WC_RECV_RDMA_WITH_IMM`, no octets).
    pub(crate) fn complete_rqe_imm(&self, rqe: &Rqe, value: u32) -> Result {
        let Some(cq) = &self.rcq else { return Ok(()) };
        let c = Cqe {
            id: rqe.id,
            flags: WqeFlags::IMM,
            opcode: Opcode::Receive.into(),
            status: Status::Success,
            bytes: 0,
            imm_or_inval: u64::from(value),
            qp: self.cqe_qp(),
        };
        cq.push(&c, rqe.flags)
    }
}

/// The RDMAP extensions a QP's receive side decodes: RFC 7306 for kernel
/// QPs (`kernel`), none for user space's, whose completion queue ABI
/// cannot carry immediate data. They are accepted without negotiation:
/// RFC 7306 defines none (it leaves that to the ULP), and only a peer
/// that implements it sends its opcodes, which RFC 5040 reserves, so a
/// peer without it is unaffected; what a kernel QP does with a message
/// it did not expect is what it does with any (the queue, MSN and
/// receive checks of its own queue).
pub(crate) fn rx_extensions(kernel: bool) -> Extensions {
    if kernel {
        Extensions::RFC7306
    } else {
        Extensions::NONE
    }
}
