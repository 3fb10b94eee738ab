// SPDX-License-Identifier: GPL-2.0

//! The siw user ABI constants (`siw-abi.h`) that the queue elements shared
//! with user space carry: opcodes, work queue element flags and completion
//! statuses.

/// `enum siw_opcode`.
#[allow(missing_docs)]
pub mod op {
    pub const WRITE: u8 = 0;
    pub const READ: u8 = 1;
    pub const READ_LOCAL_INV: u8 = 2;
    pub const SEND: u8 = 3;
    pub const SEND_WITH_IMM: u8 = 4;
    pub const SEND_REMOTE_INV: u8 = 5;
    pub const RECEIVE: u8 = 8;
    pub const READ_RESPONSE: u8 = 9;
    pub const INVAL_STAG: u8 = 10;
    pub const REG_MR: u8 = 11;
}

/// `enum siw_wqe_flags`.
#[allow(missing_docs)]
pub mod wqe {
    pub const VALID: u16 = 1;
    pub const INLINE: u16 = 1 << 1;
    pub const SIGNALLED: u16 = 1 << 2;
    pub const SOLICITED: u16 = 1 << 3;
    pub const READ_FENCE: u16 = 1 << 4;
    pub const REM_INVAL: u16 = 1 << 5;
}

/// `enum siw_wc_status`.
#[allow(missing_docs)]
pub mod wc {
    pub const SUCCESS: u16 = 0;
    pub const LOC_LEN_ERR: u16 = 1;
    pub const LOC_PROT_ERR: u16 = 2;
    pub const LOC_QP_OP_ERR: u16 = 3;
    pub const WR_FLUSH_ERR: u16 = 4;
    pub const BAD_RESP_ERR: u16 = 5;
    pub const LOC_ACCESS_ERR: u16 = 6;
    pub const REM_ACCESS_ERR: u16 = 7;
    pub const REM_INV_REQ_ERR: u16 = 8;
    pub const GENERAL_ERR: u16 = 9;
}
