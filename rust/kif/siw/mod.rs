// SPDX-License-Identifier: GPL-2.0

//! The siw user ABI (`include/uapi/rdma/siw-abi.h`): what rsiw shares with
//! rdma-core's siw provider, so that the stock libsiw drives rsiw devices.
//! The queue elements and their constants are in [`abi`], the rings of
//! elements in user-mapped memory in [`ring`], the verbs' requests and
//! responses in [`uresp`].

pub mod abi;
pub mod ring;
pub mod uresp;

pub use abi::{Cqe, Element, Opcode, RawOpcode, Rqe, Sqe, Status, WqeFlags, MAX_INLINE, MAX_SGE};
pub use ring::{Ring, CQ_TRAILER};

/// The scatter/gather element of the ABI's queue elements (`struct
/// siw_sge`) is the RDMA one.
pub use crate::kif::rdma::wr::Sge;
