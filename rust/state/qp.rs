// SPDX-License-Identifier: GPL-2.0

//! The iWARP QP state machine as rsiw implements it: the states
//! ([`QpState`]), the verbs states a `modify_qp` names ([`VerbsState`]),
//! and every transition with what it implies: `modify_qp` ([`modify`]),
//! the connection manager entering RTS ([`connect`]), an error that
//! TERMINATEs the stream ([`can_terminate`]), a fatal error or teardown
//! ([`ERROR`]), and what posting a work request does in each state
//! ([`QpState::post_send`], [`QpState::post_recv`]).
//!
//! The states are those of the iWARP verbs (Idle, RTS, Closing, Terminate,
//! Error; RFC 5040 leaves the QP to the verbs): a QP reaches RTS only with
//! an LLP connection, which only the connection manager makes; leaving
//! RTS closes the connection; Error is final until a reset.

/// The iWARP QP states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpState {
    /// Created, not connected (IB RESET and INIT).
    Idle,
    /// Accepted by the IB state machine as RTR (no meaning on iWARP).
    Rtr,
    /// Connected: data moves.
    Rts,
    /// Graceful close in progress (IB SQD).
    Closing,
    /// A TERMINATE is being sent (IB SQE).
    Terminate,
    /// Error: final; all work requests flush.
    Error,
}

/// The QP states of the verbs interface (`enum ib_qp_state`), which a
/// `modify_qp` asks for and a `query_qp` reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VerbsState {
    /// IB_QPS_RESET.
    Reset,
    /// IB_QPS_INIT.
    Init,
    /// IB_QPS_RTR.
    Rtr,
    /// IB_QPS_RTS.
    Rts,
    /// IB_QPS_SQD.
    Sqd,
    /// IB_QPS_SQE.
    Sqe,
    /// IB_QPS_ERR.
    Err,
}

/// What posting a work request does in a state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Post {
    /// The work request goes into the queue.
    Queue,
    /// It completes at once with a flush error (unlike siw, which refuses
    /// it: ibverbs documents the flush, and `ib_drain_qp` relies on it).
    Flush,
    /// Refused with `ENOTCONN`.
    NotConnected,
}

impl QpState {
    /// The state stored as `s as u8` (an unknown value reads as Error).
    pub fn from_u8(v: u8) -> Self {
        [
            Self::Idle,
            Self::Rtr,
            Self::Rts,
            Self::Closing,
            Self::Terminate,
            Self::Error,
        ]
        .get(usize::from(v))
        .copied()
        .unwrap_or(Self::Error)
    }

    /// The verbs state a query reports (Idle reports INIT).
    pub fn verbs(self) -> VerbsState {
        match self {
            Self::Idle => VerbsState::Init,
            Self::Rtr => VerbsState::Rtr,
            Self::Rts => VerbsState::Rts,
            Self::Closing => VerbsState::Sqd,
            Self::Terminate => VerbsState::Sqe,
            Self::Error => VerbsState::Err,
        }
    }

    /// The state a verbs state stands for (RESET and INIT are Idle).
    pub fn from_verbs(s: VerbsState) -> Self {
        match s {
            VerbsState::Reset | VerbsState::Init => Self::Idle,
            VerbsState::Rtr => Self::Rtr,
            VerbsState::Rts => Self::Rts,
            VerbsState::Sqd => Self::Closing,
            VerbsState::Sqe => Self::Terminate,
            VerbsState::Err => Self::Error,
        }
    }

    /// What a send work request (or a user doorbell) does in this state:
    /// it is sent only in RTS.
    #[inline]
    pub fn post_send(self) -> Post {
        match self {
            Self::Rts => Post::Queue,
            Self::Error => Post::Flush,
            _ => Post::NotConnected,
        }
    }

    /// What a receive work request does in this state: receives may be
    /// posted before the connection exists.
    #[inline]
    pub fn post_recv(self) -> Post {
        match self {
            Self::Idle | Self::Rtr | Self::Rts => Post::Queue,
            Self::Error => Post::Flush,
            _ => Post::NotConnected,
        }
    }
}

/// What a transition implies once the new state is set, done in this
/// order with the QP lock released.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct After {
    /// Complete the outstanding RDMA Reads and the posted send work
    /// requests with flush errors.
    pub flush_sq: bool,
    /// Complete the posted receive work requests with flush errors.
    pub flush_rq: bool,
    /// Ask the connection manager to close the connection (it reports
    /// the close once the socket is gone, which the iWARP CM waits for).
    pub close: bool,
}

/// A fatal error or the QP's teardown (from any state): the QP enters
/// Error and both queues flush; the caller drops the connection itself.
pub const ERROR: After = After {
    flush_sq: true,
    flush_rq: true,
    close: false,
};

/// What a `modify_qp` to a state does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Modify {
    /// Accepted; nothing changes.
    Keep,
    /// The QP enters `state`, then `after` is done.
    Enter {
        /// The new state.
        state: QpState,
        /// What follows.
        after: After,
    },
    /// A reset from Error (as ibverbs allows; siw ignores it): both
    /// queues flush what was posted since the QP entered Error, then the
    /// QP is Idle. Ring indices continue where user space is.
    Reset,
}

/// Why a `modify_qp` is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// `EINVAL`: RTS needs a connection, which only the connection
    /// manager makes.
    Invalid,
    /// `ECONNABORTED`: a closing QP becomes only Idle or Error.
    Aborted,
}

/// The transition a `modify_qp` from the verbs interface (not the
/// connection manager) to `to` makes from `from`.
pub fn modify(from: QpState, to: VerbsState) -> Result<Modify, Refused> {
    use QpState::{Closing, Error, Idle, Rtr, Rts, Terminate};
    if from == Error && to == VerbsState::Reset {
        return Ok(Modify::Reset);
    }
    let enter = |state, flush_sq, flush_rq, close| {
        Ok(Modify::Enter {
            state,
            after: After {
                flush_sq,
                flush_rq,
                close,
            },
        })
    };
    match (from, QpState::from_verbs(to)) {
        (Idle | Rtr, Rts) => Err(Refused::Invalid),
        // Nothing was sent yet: only receives can be queued.
        (Idle | Rtr, Error) => enter(Error, false, true, false),
        // Leaving RTS closes the connection: gracefully for Closing, where
        // the send queue drains; Terminate sends only the TERMINATE.
        (Rts, Closing) => enter(Closing, false, true, true),
        (Rts, Terminate) => enter(Terminate, false, false, true),
        (Rts | Terminate | Closing, Error) => enter(Error, true, true, true),
        (Closing, Idle) => enter(Idle, false, false, false),
        (Closing, Closing) => Ok(Modify::Keep),
        (Closing, _) => Err(Refused::Aborted),
        _ => Ok(Modify::Keep),
    }
}

/// Whether the connection manager may move a QP in `from` to RTS with its
/// new connection: only a QP that was never connected (Idle or RTR).
pub fn connect(from: QpState) -> Result<(), Refused> {
    match from {
        QpState::Idle | QpState::Rtr => Ok(()),
        _ => Err(Refused::Invalid),
    }
}

/// Whether an error that TERMINATEs the stream (a protocol error from the
/// peer, a local catastrophic error) moves a QP in `from` to Terminate:
/// only a connected QP (RTS or Closing) sends a TERMINATE; after it the QP
/// goes to error ([`ERROR`]) and the connection is dropped.
pub fn can_terminate(from: QpState) -> bool {
    matches!(from, QpState::Rts | QpState::Closing)
}
