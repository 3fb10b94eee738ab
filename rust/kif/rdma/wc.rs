// SPDX-License-Identifier: GPL-2.0

//! Work completions as kernel consumers get them from `ib_poll_cq`: a
//! driver's completion queue element, whatever its layout, becomes a
//! [`WorkCompletion`], which kif writes into the consumer's `ib_wc`.

use kernel::bindings;

/// What the completed work request did (`enum ib_wc_opcode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WcOpcode {
    /// A Send.
    Send,
    /// An RDMA Write.
    RdmaWrite,
    /// An RDMA Read.
    RdmaRead,
    /// A Local Invalidate.
    LocalInv,
    /// A fast registration.
    RegMr,
    /// A receive.
    Recv,
    /// A receive consumed by the immediate data of an RDMA Write with
    /// Immediate.
    RecvRdmaWithImm,
    /// An atomic Compare and Swap.
    CompSwap,
    /// An atomic Fetch and Add.
    FetchAdd,
    /// A masked atomic Compare and Swap.
    MaskedCompSwap,
    /// A masked atomic Fetch and Add.
    MaskedFetchAdd,
}

impl WcOpcode {
    fn raw(self) -> bindings::ib_wc_opcode {
        match self {
            Self::Send => bindings::ib_wc_opcode_IB_WC_SEND,
            Self::RdmaWrite => bindings::ib_wc_opcode_IB_WC_RDMA_WRITE,
            Self::RdmaRead => bindings::ib_wc_opcode_IB_WC_RDMA_READ,
            Self::LocalInv => bindings::ib_wc_opcode_IB_WC_LOCAL_INV,
            Self::RegMr => bindings::ib_wc_opcode_IB_WC_REG_MR,
            Self::Recv => bindings::ib_wc_opcode_IB_WC_RECV,
            Self::RecvRdmaWithImm => bindings::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM,
            Self::CompSwap => bindings::ib_wc_opcode_IB_WC_COMP_SWAP,
            Self::FetchAdd => bindings::ib_wc_opcode_IB_WC_FETCH_ADD,
            Self::MaskedCompSwap => bindings::ib_wc_opcode_IB_WC_MASKED_COMP_SWAP,
            Self::MaskedFetchAdd => bindings::ib_wc_opcode_IB_WC_MASKED_FETCH_ADD,
        }
    }
}

/// How the work request ended (`enum ib_wc_status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WcStatus {
    /// Success.
    Success,
    /// Local length error.
    LocLenErr,
    /// Local protection error.
    LocProtErr,
    /// Local QP operation error.
    LocQpOpErr,
    /// Flushed: the QP went to the error state.
    WrFlushErr,
    /// Bad response.
    BadRespErr,
    /// Local access error.
    LocAccessErr,
    /// Remote access error.
    RemAccessErr,
    /// Remote invalid request error.
    RemInvReqErr,
    /// Any other error.
    GeneralErr,
}

impl WcStatus {
    fn raw(self) -> bindings::ib_wc_status {
        match self {
            Self::Success => bindings::ib_wc_status_IB_WC_SUCCESS,
            Self::LocLenErr => bindings::ib_wc_status_IB_WC_LOC_LEN_ERR,
            Self::LocProtErr => bindings::ib_wc_status_IB_WC_LOC_PROT_ERR,
            Self::LocQpOpErr => bindings::ib_wc_status_IB_WC_LOC_QP_OP_ERR,
            Self::WrFlushErr => bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR,
            Self::BadRespErr => bindings::ib_wc_status_IB_WC_BAD_RESP_ERR,
            Self::LocAccessErr => bindings::ib_wc_status_IB_WC_LOC_ACCESS_ERR,
            Self::RemAccessErr => bindings::ib_wc_status_IB_WC_REM_ACCESS_ERR,
            Self::RemInvReqErr => bindings::ib_wc_status_IB_WC_REM_INV_REQ_ERR,
            Self::GeneralErr => bindings::ib_wc_status_IB_WC_GENERAL_ERR,
        }
    }
}

/// One work completion of a kernel consumer's CQ.
#[derive(Clone, Copy, Debug)]
pub struct WorkCompletion {
    /// The work request's id.
    pub wr_id: u64,
    /// What it did.
    pub opcode: WcOpcode,
    /// How it ended.
    pub status: WcStatus,
    /// Octets transferred.
    pub byte_len: u32,
    /// The QP, as its [`QpHandle::token`](super::handle::QpHandle::token).
    pub qp: u64,
    /// The STag the peer invalidated (a Send with Invalidate received).
    pub invalidated: Option<u32>,
    /// The immediate data received, in host order.
    pub imm: Option<u32>,
}

impl WorkCompletion {
    /// Fills the consumer's `ib_wc`.
    pub(super) fn write_to(&self, wc: &mut bindings::ib_wc) {
        // SAFETY: all-zero is a valid `ib_wc`.
        *wc = unsafe { core::mem::zeroed() };
        wc.__bindgen_anon_1.wr_id = self.wr_id;
        wc.byte_len = self.byte_len;
        wc.opcode = self.opcode.raw();
        wc.status = self.status.raw();
        wc.qp = self.qp as usize as *mut bindings::ib_qp;
        if let Some(rkey) = self.invalidated {
            wc.ex.invalidate_rkey = rkey;
            wc.wc_flags = bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE as i32;
        }
        if let Some(imm) = self.imm {
            wc.ex.imm_data = imm.to_be();
            wc.wc_flags |= bindings::ib_wc_flags_IB_WC_WITH_IMM as i32;
        }
    }
}
