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

// A kernel consumer's work request is copied into an element as it is.
const _: () = assert!(MAX_SGE == crate::kif::rdma::wr::MAX_SGE);
const _: () = assert!(MAX_INLINE == crate::kif::rdma::wr::MAX_INLINE);

/// A fieldless enum of the ABI whose discriminants are the values of the
/// kernel's bindings: converting from the raw integer of a ring is
/// fallible (the unknown value is the error), converting to it is not.
macro_rules! abi_enum {
    (
        $(#[$m:meta])*
        pub enum $name:ident: $int:ident {
            $($(#[$vm:meta])* $v:ident = $val:expr,)*
        }
    ) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr($int)]
        pub enum $name {
            $($(#[$vm])* $v = $val as $int,)*
        }

        impl TryFrom<$int> for $name {
            type Error = $int;

            fn try_from(raw: $int) -> core::result::Result<Self, $int> {
                $(if raw == Self::$v as $int {
                    return Ok(Self::$v);
                })*
                Err(raw)
            }
        }

        impl From<$name> for $int {
            fn from(v: $name) -> $int {
                v as $int
            }
        }
    };
}

abi_enum! {
    /// The opcode of a queue element (`enum siw_opcode`).
    pub enum Opcode: u8 {
        /// RDMA Write.
        Write = bindings::siw_opcode_SIW_OP_WRITE,
        /// RDMA Read.
        Read = bindings::siw_opcode_SIW_OP_READ,
        /// RDMA Read, then a local invalidation of the sink STag.
        ReadLocalInv = bindings::siw_opcode_SIW_OP_READ_LOCAL_INV,
        /// Send.
        Send = bindings::siw_opcode_SIW_OP_SEND,
        /// Send with immediate data (not supported by iWARP).
        SendWithImm = bindings::siw_opcode_SIW_OP_SEND_WITH_IMM,
        /// Send with Invalidate of a remote STag.
        SendRemoteInv = bindings::siw_opcode_SIW_OP_SEND_REMOTE_INV,
        /// Atomic FetchAdd (RFC 7306; kernel QPs only).
        FetchAdd = bindings::siw_opcode_SIW_OP_FETCH_AND_ADD,
        /// Atomic CmpSwap (RFC 7306; kernel QPs only).
        CmpSwap = bindings::siw_opcode_SIW_OP_COMP_AND_SWAP,
        /// A receive (completions of the receive queue).
        Receive = bindings::siw_opcode_SIW_OP_RECEIVE,
        /// A Read Response (not posted by consumers).
        ReadResponse = bindings::siw_opcode_SIW_OP_READ_RESPONSE,
        /// Local Invalidate of an STag.
        InvalStag = bindings::siw_opcode_SIW_OP_INVAL_STAG,
        /// Fast registration of a memory region.
        RegMr = bindings::siw_opcode_SIW_OP_REG_MR,
    }
}

abi_enum! {
    /// The status of a completion (`enum siw_wc_status`).
    pub enum Status: u16 {
        /// Success.
        Success = bindings::siw_wc_status_SIW_WC_SUCCESS,
        /// Local length error.
        LocLenErr = bindings::siw_wc_status_SIW_WC_LOC_LEN_ERR,
        /// Local protection error.
        LocProtErr = bindings::siw_wc_status_SIW_WC_LOC_PROT_ERR,
        /// Local QP operation error.
        LocQpOpErr = bindings::siw_wc_status_SIW_WC_LOC_QP_OP_ERR,
        /// Flushed (the QP went to error).
        WrFlushErr = bindings::siw_wc_status_SIW_WC_WR_FLUSH_ERR,
        /// Bad response.
        BadRespErr = bindings::siw_wc_status_SIW_WC_BAD_RESP_ERR,
        /// Local access error.
        LocAccessErr = bindings::siw_wc_status_SIW_WC_LOC_ACCESS_ERR,
        /// Remote access error.
        RemAccessErr = bindings::siw_wc_status_SIW_WC_REM_ACCESS_ERR,
        /// Remote invalid request.
        RemInvReqErr = bindings::siw_wc_status_SIW_WC_REM_INV_REQ_ERR,
        /// General error.
        GeneralErr = bindings::siw_wc_status_SIW_WC_GENERAL_ERR,
    }
}

impl From<Status> for WcStatus {
    fn from(s: Status) -> Self {
        match s {
            Status::Success => Self::Success,
            Status::LocLenErr => Self::LocLenErr,
            Status::LocProtErr => Self::LocProtErr,
            Status::LocQpOpErr => Self::LocQpOpErr,
            Status::WrFlushErr => Self::WrFlushErr,
            Status::BadRespErr => Self::BadRespErr,
            Status::LocAccessErr => Self::LocAccessErr,
            Status::RemAccessErr => Self::RemAccessErr,
            Status::RemInvReqErr => Self::RemInvReqErr,
            Status::GeneralErr => Self::GeneralErr,
        }
    }
}

/// The opcode octet of a queue element as it was read: user space may
/// write any value into its send queue. [`RawOpcode::get`] tells the
/// [`Opcode`]; a completion of the element reports the octet as it was.
/// Compares with an [`Opcode`] directly (one compare of the octet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct RawOpcode(u8);

impl RawOpcode {
    /// The opcode, or the unknown octet.
    pub fn get(self) -> core::result::Result<Opcode, u8> {
        Opcode::try_from(self.0)
    }

    /// The octet.
    pub fn octet(self) -> u8 {
        self.0
    }
}

impl From<Opcode> for RawOpcode {
    fn from(op: Opcode) -> Self {
        Self(op.into())
    }
}

impl PartialEq<Opcode> for RawOpcode {
    fn eq(&self, op: &Opcode) -> bool {
        self.0 == *op as u8
    }
}

/// The flags of a queue element (`enum siw_wqe_flags`), also the owner
/// bit of a ring slot ([`WqeFlags::VALID`]). Bits without a name are
/// kept as they were read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct WqeFlags(u16);

impl WqeFlags {
    /// The element belongs to its consumer (`SIW_WQE_VALID`).
    pub const VALID: Self = Self(bindings::siw_wqe_flags_SIW_WQE_VALID as u16);
    /// The payload is inline in the element (`SIW_WQE_INLINE`).
    pub const INLINE: Self = Self(bindings::siw_wqe_flags_SIW_WQE_INLINE as u16);
    /// Completes into the CQ even on success (`SIW_WQE_SIGNALLED`).
    pub const SIGNALLED: Self = Self(bindings::siw_wqe_flags_SIW_WQE_SIGNALLED as u16);
    /// Solicited event (`SIW_WQE_SOLICITED`).
    pub const SOLICITED: Self = Self(bindings::siw_wqe_flags_SIW_WQE_SOLICITED as u16);
    /// Waits for the Reads before it (`SIW_WQE_READ_FENCE`).
    pub const READ_FENCE: Self = Self(bindings::siw_wqe_flags_SIW_WQE_READ_FENCE as u16);
    /// A completion that invalidated an STag (`SIW_WQE_REM_INVAL`).
    pub const REM_INVAL: Self = Self(bindings::siw_wqe_flags_SIW_WQE_REM_INVAL as u16);
    /// Not a siw ABI flag (the first bit siw leaves unused, within the
    /// CQE's octet): the element carries immediate data (RFC 7306), on
    /// the send queue a Write with Immediate, on the CQ a receive that
    /// Immediate Data consumed. Kernel QPs only: the driver sets it, and
    /// honours it only for kernel consumers.
    pub const IMM: Self = Self(0x80);
    /// Not a siw ABI flag: the bit of [`WqeFlags::IMM`], which means this
    /// on the element and the completion of an atomic (RFC 7306, kernel
    /// QPs only): a masked one (`IB_WR_MASKED_ATOMIC_*`, completing as
    /// `IB_WC_MASKED_*`).
    pub const MASKED: Self = Self(0x80);

    /// No flags.
    pub const fn empty() -> Self {
        Self(0)
    }

    /// The flags of a raw flags field (every bit kept).
    pub const fn from_bits(raw: u16) -> Self {
        Self(raw)
    }

    /// The raw flags field of a send or receive queue element.
    pub const fn bits(self) -> u16 {
        self.0
    }

    /// The flags of a completion queue element's raw flags field.
    pub const fn from_cqe_bits(raw: u8) -> Self {
        Self(raw as u16)
    }

    /// The raw flags field of a completion queue element, one octet: the
    /// flags a CQE carries (valid, solicited, remote invalidate) fit.
    pub const fn cqe_bits(self) -> u8 {
        self.0 as u8
    }

    /// Whether no flag is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

impl core::ops::BitOr for WqeFlags {
    type Output = Self;

    fn bitor(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

impl core::ops::BitOrAssign for WqeFlags {
    fn bitor_assign(&mut self, other: Self) {
        self.0 |= other.0;
    }
}

// The CQE's flags field is one octet.
const _: () = assert!(WqeFlags::REM_INVAL.0 <= u8::MAX as u16);
const _: () = assert!(WqeFlags::SOLICITED.0 <= u8::MAX as u16);

/// A send queue element (`struct siw_sqe`). Laid out as the ABI's up to
/// the end of its SGEs (see the assertions below), so that
/// [`Ring::read_into`](super::Ring::read_into) copies an element word by
/// word; `access` follows instead of sharing the SGEs' room.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct Sqe {
    /// Work request id.
    pub id: u64,
    /// Flags.
    pub flags: WqeFlags,
    /// Number of SGEs used.
    pub num_sge: u8,
    /// Opcode, as user space wrote it.
    pub opcode: RawOpcode,
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

// `Sqe` up to `access` is `struct siw_sqe`: the same fields at the same
// offsets, each valid for any bits (integers, or newtypes of them).
const _: () = {
    use core::mem::offset_of;
    type Raw = bindings::siw_sqe;
    assert!(offset_of!(Sqe, id) == offset_of!(Raw, id));
    assert!(offset_of!(Sqe, flags) == offset_of!(Raw, flags));
    assert!(offset_of!(Sqe, num_sge) == offset_of!(Raw, num_sge));
    assert!(offset_of!(Sqe, opcode) == offset_of!(Raw, opcode));
    assert!(offset_of!(Sqe, rkey) == offset_of!(Raw, rkey));
    assert!(offset_of!(Sqe, raddr) == offset_of!(Raw, __bindgen_anon_1));
    assert!(offset_of!(Sqe, sge) == offset_of!(Raw, __bindgen_anon_2));
    assert!(offset_of!(Sqe, access) == size_of::<Raw>());
    assert!(size_of::<[Sge; MAX_SGE]>() == size_of::<[bindings::siw_sge; MAX_SGE]>());
    assert!(offset_of!(Sge, addr) == offset_of!(bindings::siw_sge, laddr));
    assert!(offset_of!(Sge, length) == offset_of!(bindings::siw_sge, length));
    assert!(offset_of!(Sge, lkey) == offset_of!(bindings::siw_sge, lkey));
    assert!(size_of::<Raw>() % 8 == 0);
};

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
    /// Flags.
    pub flags: WqeFlags,
    /// Number of SGEs used.
    pub num_sge: u8,
    /// SGEs.
    pub sge: [Sge; MAX_SGE],
}

/// A completion queue element (`struct siw_cqe`).
#[derive(Clone, Copy, Debug)]
pub struct Cqe {
    /// Work request id.
    pub id: u64,
    /// Flags (valid, solicited, remote invalidate).
    pub flags: WqeFlags,
    /// Opcode of the work request (as its element had it).
    pub opcode: RawOpcode,
    /// Status.
    pub status: Status,
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
        let atomic = matches!(self.opcode.get(), Ok(Opcode::FetchAdd | Opcode::CmpSwap));
        let masked = atomic && self.flags.contains(WqeFlags::MASKED);
        let imm = !atomic && self.flags.contains(WqeFlags::IMM);
        let opcode = match self.opcode.get() {
            Ok(Opcode::Receive) if imm => WcOpcode::RecvRdmaWithImm,
            Ok(Opcode::Write) => WcOpcode::RdmaWrite,
            Ok(Opcode::Send | Opcode::SendWithImm | Opcode::SendRemoteInv) => WcOpcode::Send,
            Ok(Opcode::Read | Opcode::ReadLocalInv) => WcOpcode::RdmaRead,
            Ok(Opcode::InvalStag) => WcOpcode::LocalInv,
            Ok(Opcode::RegMr) => WcOpcode::RegMr,
            Ok(Opcode::FetchAdd) if masked => WcOpcode::MaskedFetchAdd,
            Ok(Opcode::CmpSwap) if masked => WcOpcode::MaskedCompSwap,
            Ok(Opcode::FetchAdd) => WcOpcode::FetchAdd,
            Ok(Opcode::CmpSwap) => WcOpcode::CompSwap,
            Ok(Opcode::Receive | Opcode::ReadResponse) | Err(_) => WcOpcode::Recv,
        };
        WorkCompletion {
            wr_id: self.id,
            opcode,
            status: self.status.into(),
            byte_len: self.bytes,
            qp: self.qp,
            invalidated: (self.flags.contains(WqeFlags::REM_INVAL))
                .then_some(self.imm_or_inval as u32),
            imm: imm.then_some(self.imm_or_inval as u32),
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
            flags: WqeFlags::from_bits(r.flags),
            num_sge: r.num_sge,
            opcode: RawOpcode(r.opcode),
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
            opcode: self.opcode.octet(),
            rkey: self.rkey,
            __bindgen_anon_1: bindings::siw_sqe__bindgen_ty_1 { raddr: self.raddr },
            __bindgen_anon_2: bindings::siw_sqe__bindgen_ty_2 { sge },
        };
        if self.opcode == Opcode::RegMr {
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
            flags: WqeFlags::from_bits(r.flags),
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
            flags: WqeFlags::from_cqe_bits(r.flags),
            opcode: RawOpcode(r.opcode),
            // A kernel CQ's ring, which only rsiw writes; anything else
            // would be a general error.
            status: Status::try_from(r.status).unwrap_or(Status::GeneralErr),
            bytes: r.bytes,
            imm_or_inval: imm,
            qp,
        }
    }

    fn to_raw(&self) -> Self::Raw {
        bindings::siw_cqe {
            id: self.id,
            flags: 0,
            opcode: self.opcode.octet(),
            status: self.status.into(),
            bytes: self.bytes,
            __bindgen_anon_1: bindings::siw_cqe__bindgen_ty_1 {
                imm_data: self.imm_or_inval,
            },
            __bindgen_anon_2: bindings::siw_cqe__bindgen_ty_2 { qp_id: self.qp },
        }
    }
}
