// SPDX-License-Identifier: GPL-2.0

//! The siw user ABI (`include/uapi/rdma/siw-abi.h`): what rsiw shares with
//! rdma-core's siw provider, so that the stock libsiw drives rsiw devices.
//! The queue elements, their constants and the verbs' responses are in
//! [`abi`]; the rings of elements in user-mapped memory in [`ring`].

pub mod abi;
pub mod ring;

pub use abi::{op, wc, wqe, Cqe, Element, Rqe, Sqe, MAX_INLINE, MAX_SGE, WQE_VALID};
pub use ring::{Ring, CQ_TRAILER};

/// The scatter/gather element of the ABI's queue elements (`struct
/// siw_sge`) is the RDMA one.
pub use crate::kif::rdma::wr::Sge;
