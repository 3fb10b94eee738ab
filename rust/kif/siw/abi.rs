// SPDX-License-Identifier: GPL-2.0

//! The siw user ABI (`include/uapi/rdma/siw-abi.h`), which rdma-core's siw
//! provider (libsiw) speaks: the elements of the send, receive and
//! completion queues shared with user space ([`Sqe`], [`Rqe`], [`Cqe`]),
//! their opcodes, flags and completion statuses, and the responses of the
//! verbs that create objects.

use core::mem::size_of;
use kernel::bindings;

use crate::kif::rdma::{
    wc::{WcOpcode, WcStatus, WorkCompletion},
    wr::Sge,
};

/// Largest number of SGEs in one work queue element.
pub const MAX_SGE: usize = bindings::SIW_MAX_SGE as usize;
/// Largest inline payload: the room of SGEs 1.. of a send queue element.
pub const MAX_INLINE: usize = size_of::<bindings::siw_sge>() * (MAX_SGE - 1);
/// The owner flag of a queue element (`SIW_WQE_VALID`).
pub const WQE_VALID: u16 = wqe::VALID;

// A kernel consumer's work request is copied into an element as it is.
const _: () = assert!(MAX_SGE == crate::kif::rdma::wr::MAX_SGE);
const _: () = assert!(MAX_INLINE == crate::kif::rdma::wr::MAX_INLINE);

/// `enum siw_opcode`.
#[allow(missing_docs)]
pub mod op {
    use kernel::bindings as b;

    pub const WRITE: u8 = b::siw_opcode_SIW_OP_WRITE as u8;
    pub const READ: u8 = b::siw_opcode_SIW_OP_READ as u8;
    pub const READ_LOCAL_INV: u8 = b::siw_opcode_SIW_OP_READ_LOCAL_INV as u8;
    pub const SEND: u8 = b::siw_opcode_SIW_OP_SEND as u8;
    pub const SEND_WITH_IMM: u8 = b::siw_opcode_SIW_OP_SEND_WITH_IMM as u8;
    pub const SEND_REMOTE_INV: u8 = b::siw_opcode_SIW_OP_SEND_REMOTE_INV as u8;
    pub const RECEIVE: u8 = b::siw_opcode_SIW_OP_RECEIVE as u8;
    pub const READ_RESPONSE: u8 = b::siw_opcode_SIW_OP_READ_RESPONSE as u8;
    pub const INVAL_STAG: u8 = b::siw_opcode_SIW_OP_INVAL_STAG as u8;
    pub const REG_MR: u8 = b::siw_opcode_SIW_OP_REG_MR as u8;
}

/// `enum siw_wqe_flags`.
#[allow(missing_docs)]
pub mod wqe {
    use kernel::bindings as b;

    pub const VALID: u16 = b::siw_wqe_flags_SIW_WQE_VALID as u16;
    pub const INLINE: u16 = b::siw_wqe_flags_SIW_WQE_INLINE as u16;
    pub const SIGNALLED: u16 = b::siw_wqe_flags_SIW_WQE_SIGNALLED as u16;
    pub const SOLICITED: u16 = b::siw_wqe_flags_SIW_WQE_SOLICITED as u16;
    pub const READ_FENCE: u16 = b::siw_wqe_flags_SIW_WQE_READ_FENCE as u16;
    pub const REM_INVAL: u16 = b::siw_wqe_flags_SIW_WQE_REM_INVAL as u16;
}

/// `enum siw_wc_status`.
#[allow(missing_docs)]
pub mod wc {
    use kernel::bindings as b;

    pub const SUCCESS: u16 = b::siw_wc_status_SIW_WC_SUCCESS as u16;
    pub const LOC_LEN_ERR: u16 = b::siw_wc_status_SIW_WC_LOC_LEN_ERR as u16;
    pub const LOC_PROT_ERR: u16 = b::siw_wc_status_SIW_WC_LOC_PROT_ERR as u16;
    pub const LOC_QP_OP_ERR: u16 = b::siw_wc_status_SIW_WC_LOC_QP_OP_ERR as u16;
    pub const WR_FLUSH_ERR: u16 = b::siw_wc_status_SIW_WC_WR_FLUSH_ERR as u16;
    pub const BAD_RESP_ERR: u16 = b::siw_wc_status_SIW_WC_BAD_RESP_ERR as u16;
    pub const LOC_ACCESS_ERR: u16 = b::siw_wc_status_SIW_WC_LOC_ACCESS_ERR as u16;
    pub const REM_ACCESS_ERR: u16 = b::siw_wc_status_SIW_WC_REM_ACCESS_ERR as u16;
    pub const REM_INV_REQ_ERR: u16 = b::siw_wc_status_SIW_WC_REM_INV_REQ_ERR as u16;
    pub const GENERAL_ERR: u16 = b::siw_wc_status_SIW_WC_GENERAL_ERR as u16;
}

/// A send queue element (`struct siw_sqe`).
#[derive(Clone, Copy, Debug)]
pub struct Sqe {
    /// Work request id.
    pub id: u64,
    /// `SIW_WQE_*` flags.
    pub flags: u16,
    /// Number of SGEs used.
    pub num_sge: u8,
    /// `SIW_OP_*` opcode.
    pub opcode: u8,
    /// Remote key, or the STag to invalidate or register.
    pub rkey: u32,
    /// Remote address, or the MR handle of a REG_MR.
    pub raddr: u64,
    /// SGEs; with `SIW_WQE_INLINE`, only `sge[0].length` counts and the
    /// payload is the octets of `sge[1..]` (see [`Sqe::inline_data`]).
    pub sge: [Sge; MAX_SGE],
    /// Access flags of a REG_MR (the union with `sge` in the ABI).
    pub access: u64,
}

impl Sqe {
    /// The inline payload: the octets of `sge[1..]` as the ABI lays them
    /// out. Built only for inline work requests: an SQE is copied several
    /// times per message, and its 80 inline octets were most of it.
    pub fn inline_data(&self) -> [u8; MAX_INLINE] {
        let mut out = [0u8; MAX_INLINE];
        for (c, s) in out.chunks_exact_mut(16).zip(self.sge.iter().skip(1)) {
            let (a, rest) = c.split_at_mut(8);
            let (l, k) = rest.split_at_mut(4);
            a.copy_from_slice(&s.addr.to_ne_bytes());
            l.copy_from_slice(&s.length.to_ne_bytes());
            k.copy_from_slice(&s.lkey.to_ne_bytes());
        }
        out
    }

    /// Stores `data` as the inline payload (into `sge[1..]`).
    pub fn set_inline_data(&mut self, data: &[u8; MAX_INLINE]) {
        for (c, s) in data.chunks_exact(16).zip(self.sge.iter_mut().skip(1)) {
            let mut a = [0u8; 8];
            let mut l = [0u8; 4];
            let mut k = [0u8; 4];
            a.copy_from_slice(c.get(..8).unwrap_or(&[0; 8]));
            l.copy_from_slice(c.get(8..12).unwrap_or(&[0; 4]));
            k.copy_from_slice(c.get(12..16).unwrap_or(&[0; 4]));
            *s = Sge {
                addr: u64::from_ne_bytes(a),
                length: u32::from_ne_bytes(l),
                lkey: u32::from_ne_bytes(k),
            };
        }
    }
}

/// A receive queue element (`struct siw_rqe`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Rqe {
    /// Work request id.
    pub id: u64,
    /// `SIW_WQE_*` flags.
    pub flags: u16,
    /// Number of SGEs used.
    pub num_sge: u8,
    /// SGEs.
    pub sge: [Sge; MAX_SGE],
}

/// A completion queue element (`struct siw_cqe`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Cqe {
    /// Work request id.
    pub id: u64,
    /// `SIW_WQE_*` flags (valid, solicited, remote invalidate).
    pub flags: u8,
    /// `SIW_OP_*` opcode.
    pub opcode: u8,
    /// `SIW_WC_*` status.
    pub status: u16,
    /// Octets transferred.
    pub bytes: u32,
    /// Invalidated STag (with `SIW_WQE_REM_INVAL`) or immediate data.
    pub imm_or_inval: u64,
    /// QP number (user CQs) or `struct ib_qp *` (kernel CQs).
    pub qp: u64,
}

impl Cqe {
    /// The work completion a kernel consumer gets for this CQE (of a
    /// kernel CQ, whose `qp` is the QP's token).
    pub fn work_completion(&self) -> WorkCompletion {
        let opcode = match self.opcode {
            op::WRITE => WcOpcode::RdmaWrite,
            op::SEND | op::SEND_WITH_IMM | op::SEND_REMOTE_INV => WcOpcode::Send,
            op::READ | op::READ_LOCAL_INV => WcOpcode::RdmaRead,
            op::INVAL_STAG => WcOpcode::LocalInv,
            op::REG_MR => WcOpcode::RegMr,
            _ => WcOpcode::Recv,
        };
        let status = match self.status {
            wc::SUCCESS => WcStatus::Success,
            wc::LOC_LEN_ERR => WcStatus::LocLenErr,
            wc::LOC_PROT_ERR => WcStatus::LocProtErr,
            wc::LOC_QP_OP_ERR => WcStatus::LocQpOpErr,
            wc::WR_FLUSH_ERR => WcStatus::WrFlushErr,
            wc::BAD_RESP_ERR => WcStatus::BadRespErr,
            wc::LOC_ACCESS_ERR => WcStatus::LocAccessErr,
            wc::REM_ACCESS_ERR => WcStatus::RemAccessErr,
            wc::REM_INV_REQ_ERR => WcStatus::RemInvReqErr,
            _ => WcStatus::GeneralErr,
        };
        WorkCompletion {
            wr_id: self.id,
            opcode,
            status,
            byte_len: self.bytes,
            qp: self.qp,
            invalidated: (u16::from(self.flags) & wqe::REM_INVAL != 0)
                .then_some(self.imm_or_inval as u32),
        }
    }
}

pub(super) fn sge_from(s: &bindings::siw_sge) -> Sge {
    Sge {
        addr: s.laddr,
        length: s.length,
        lkey: s.lkey,
    }
}

fn sge_to(s: &Sge) -> bindings::siw_sge {
    bindings::siw_sge {
        laddr: s.addr,
        length: s.length,
        lkey: s.lkey,
    }
}

/// An element type of a ring, with its ABI representation.
pub trait Element: Copy {
    /// The `siw-abi.h` structure.
    type Raw: Copy;
    /// Octets after a ring of these elements.
    const TRAILER: usize = 0;
    /// Converts from the ABI structure.
    fn from_raw(raw: &Self::Raw) -> Self;
    /// Converts to the ABI structure (flags are written separately).
    fn to_raw(&self) -> Self::Raw;
}

impl Element for Sqe {
    type Raw = bindings::siw_sqe;

    fn from_raw(r: &Self::Raw) -> Self {
        // SAFETY: both union members are plain integers, valid for any bits.
        let (raddr, sges, access) = unsafe {
            (
                r.__bindgen_anon_1.raddr,
                r.__bindgen_anon_2.sge,
                r.__bindgen_anon_2.access,
            )
        };
        Sqe {
            id: r.id,
            flags: r.flags,
            num_sge: r.num_sge,
            opcode: r.opcode,
            rkey: r.rkey,
            raddr,
            sge: sges.map(|s| sge_from(&s)),
            access,
        }
    }

    fn to_raw(&self) -> Self::Raw {
        // (inline payload included: it lives in `sge[1..]`)
        let sge = self.sge.map(|s| sge_to(&s));
        let mut r = bindings::siw_sqe {
            id: self.id,
            flags: 0,
            num_sge: self.num_sge,
            opcode: self.opcode,
            rkey: self.rkey,
            __bindgen_anon_1: bindings::siw_sqe__bindgen_ty_1 { raddr: self.raddr },
            __bindgen_anon_2: bindings::siw_sqe__bindgen_ty_2 { sge },
        };
        if self.opcode == bindings::siw_opcode_SIW_OP_REG_MR as u8 {
            r.__bindgen_anon_2.access = self.access;
        }
        r
    }
}

impl Element for Rqe {
    type Raw = bindings::siw_rqe;

    fn from_raw(r: &Self::Raw) -> Self {
        Rqe {
            id: r.id,
            flags: r.flags,
            num_sge: r.num_sge,
            sge: r.sge.map(|s| sge_from(&s)),
        }
    }

    fn to_raw(&self) -> Self::Raw {
        bindings::siw_rqe {
            id: self.id,
            flags: 0,
            num_sge: self.num_sge,
            opcode: 0,
            unused: 0,
            sge: self.sge.map(|s| sge_to(&s)),
        }
    }
}

impl Element for Cqe {
    type Raw = bindings::siw_cqe;
    /// The CQ's notification control word (`struct siw_cq_ctrl`).
    const TRAILER: usize = size_of::<bindings::siw_cq_ctrl>();

    fn from_raw(r: &Self::Raw) -> Self {
        // SAFETY: the union members are plain integers (the pointer member
        // is read as its integer twin).
        let (imm, qp) = unsafe { (r.__bindgen_anon_1.imm_data, r.__bindgen_anon_2.qp_id) };
        Cqe {
            id: r.id,
            flags: r.flags,
            opcode: r.opcode,
            status: r.status,
            bytes: r.bytes,
            imm_or_inval: imm,
            qp,
        }
    }

    fn to_raw(&self) -> Self::Raw {
        bindings::siw_cqe {
            id: self.id,
            flags: 0,
            opcode: self.opcode,
            status: self.status,
            bytes: self.bytes,
            __bindgen_anon_1: bindings::siw_cqe__bindgen_ty_1 {
                imm_data: self.imm_or_inval,
            },
            __bindgen_anon_2: bindings::siw_cqe__bindgen_ty_2 { qp_id: self.qp },
        }
    }
}
