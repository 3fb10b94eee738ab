// SPDX-License-Identifier: GPL-2.0

//! Queue pairs as the verbs see them: creation arguments, states,
//! `modify_qp` requests and `query_qp` results. The states are the QP
//! state core's [`VerbsState`] (`enum ib_qp_state`), which this module
//! converts from and to the kernel's values.

use kernel::{bindings, sync::Arc};

use super::{attr::Mtu, handle::QpHandle, mmap::UserCtx, udata::Udata, Driver};
use crate::state::qp::VerbsState;

/// QP creation attributes.
#[derive(Clone, Copy, Debug)]
pub struct QpInit {
    /// Send work requests.
    pub max_send_wr: u32,
    /// Receive work requests.
    pub max_recv_wr: u32,
    /// SGEs per send work request.
    pub max_send_sge: u32,
    /// SGEs per receive work request.
    pub max_recv_sge: u32,
    /// Inline octets.
    pub max_inline: u32,
    /// The QP is of type RC.
    pub rc: bool,
    /// Every send work request completes (`IB_SIGNAL_ALL_WR`).
    pub sig_all: bool,
    /// The signal type was neither ALL nor REQ.
    pub bad_sig_type: bool,
    /// Creation flags.
    pub create_flags: u32,
}

/// Arguments of `create_qp`.
pub struct CreateQp<'a, T: Driver> {
    /// The core QP, for events and completion tokens.
    pub handle: QpHandle,
    /// The protection domain.
    pub pd: &'a T::Pd,
    /// The send CQ.
    pub send_cq: Option<&'a Arc<T::Cq>>,
    /// The receive CQ.
    pub recv_cq: Option<&'a Arc<T::Cq>>,
    /// The SRQ, if any.
    pub srq: Option<&'a Arc<T::Srq>>,
    /// Attributes.
    pub init: QpInit,
    /// The user context (user QPs).
    pub user: Option<UserCtx<'a>>,
    /// The response channel.
    pub udata: Udata<'a>,
}

/// The state of a kernel `enum ib_qp_state` value (none for a value
/// outside the enum).
pub(super) fn state_from_raw(v: bindings::ib_qp_state) -> Option<VerbsState> {
    Some(match v {
        bindings::ib_qp_state_IB_QPS_RESET => VerbsState::Reset,
        bindings::ib_qp_state_IB_QPS_INIT => VerbsState::Init,
        bindings::ib_qp_state_IB_QPS_RTR => VerbsState::Rtr,
        bindings::ib_qp_state_IB_QPS_RTS => VerbsState::Rts,
        bindings::ib_qp_state_IB_QPS_SQD => VerbsState::Sqd,
        bindings::ib_qp_state_IB_QPS_SQE => VerbsState::Sqe,
        bindings::ib_qp_state_IB_QPS_ERR => VerbsState::Err,
        _ => return None,
    })
}

/// The kernel's `enum ib_qp_state` value of a state.
fn state_raw(s: VerbsState) -> bindings::ib_qp_state {
    match s {
        VerbsState::Reset => bindings::ib_qp_state_IB_QPS_RESET,
        VerbsState::Init => bindings::ib_qp_state_IB_QPS_INIT,
        VerbsState::Rtr => bindings::ib_qp_state_IB_QPS_RTR,
        VerbsState::Rts => bindings::ib_qp_state_IB_QPS_RTS,
        VerbsState::Sqd => bindings::ib_qp_state_IB_QPS_SQD,
        VerbsState::Sqe => bindings::ib_qp_state_IB_QPS_SQE,
        VerbsState::Err => bindings::ib_qp_state_IB_QPS_ERR,
    }
}

/// A `modify_qp` request.
#[derive(Clone, Copy, Debug, Default)]
pub struct QpModify {
    /// New state.
    pub state: Option<VerbsState>,
    /// New access flags (IB_ACCESS_*).
    pub access: Option<u32>,
    /// Attribute bits outside the standard set were given.
    pub nonstandard: bool,
}

/// `query_qp` results.
#[derive(Clone, Copy, Debug)]
pub struct QpQuery {
    /// Current state.
    pub state: VerbsState,
    /// Send queue size.
    pub max_send_wr: u32,
    /// Receive queue size.
    pub max_recv_wr: u32,
    /// Send SGEs.
    pub max_send_sge: u32,
    /// Receive SGEs.
    pub max_recv_sge: u32,
    /// Inline octets.
    pub max_inline: u32,
    /// Path MTU.
    pub path_mtu: Mtu,
    /// Outbound RDMA Reads (ORD).
    pub max_rd_atomic: u8,
    /// Inbound RDMA Reads (IRD).
    pub max_dest_rd_atomic: u8,
    /// IB access flags.
    pub access: u32,
}

impl QpQuery {
    /// Fills the core's `ib_qp_attr`.
    pub(super) fn write_to(&self, a: &mut bindings::ib_qp_attr) {
        a.qp_state = state_raw(self.state);
        a.cur_qp_state = state_raw(self.state);
        a.cap = bindings::ib_qp_cap {
            max_send_wr: self.max_send_wr,
            max_recv_wr: self.max_recv_wr,
            max_send_sge: self.max_send_sge,
            max_recv_sge: self.max_recv_sge,
            max_inline_data: self.max_inline,
            max_rdma_ctxs: 0,
        };
        a.path_mtu = self.path_mtu.raw();
        a.max_rd_atomic = self.max_rd_atomic;
        a.max_dest_rd_atomic = self.max_dest_rd_atomic;
        a.qp_access_flags = self.access as i32;
    }
}
