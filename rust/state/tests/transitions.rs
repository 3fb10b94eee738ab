// SPDX-License-Identifier: GPL-2.0

//! The QP state machine against a hand-written table of the iWARP verbs
//! semantics as rsiw implements them, and a model-based property test of
//! event sequences (modify_qp, connection, TERMINATE, close, posting).

use proptest::prelude::*;
use rsiw_state::qp::{
    can_terminate, connect, modify, After, Modify, Post, QpState, Refused, VerbsState, ERROR,
};

const STATES: [QpState; 6] = [
    QpState::Idle,
    QpState::Rtr,
    QpState::Rts,
    QpState::Closing,
    QpState::Terminate,
    QpState::Error,
];

const VERBS: [VerbsState; 7] = [
    VerbsState::Reset,
    VerbsState::Init,
    VerbsState::Rtr,
    VerbsState::Rts,
    VerbsState::Sqd,
    VerbsState::Sqe,
    VerbsState::Err,
];

/// One cell of the table: `k` keep, `I` EINVAL, `A` ECONNABORTED, `R`
/// reset from Error, else the state entered (`idle`, `closing`, `term`,
/// `err`) with what follows (`s` flush SQ, `r` flush RQ, `c` close).
fn cell(s: &str) -> Result<Modify, Refused> {
    let enter = |state, fl: &str| {
        Ok(Modify::Enter {
            state,
            after: After {
                flush_sq: fl.contains('s'),
                flush_rq: fl.contains('r'),
                close: fl.contains('c'),
            },
        })
    };
    let (name, fl) = s.split_once('/').unwrap_or((s, ""));
    match name {
        "k" => Ok(Modify::Keep),
        "I" => Err(Refused::Invalid),
        "A" => Err(Refused::Aborted),
        "R" => Ok(Modify::Reset),
        "idle" => enter(QpState::Idle, fl),
        "closing" => enter(QpState::Closing, fl),
        "term" => enter(QpState::Terminate, fl),
        "err" => enter(QpState::Error, fl),
        _ => panic!("bad cell {s}"),
    }
}

/// `modify_qp` from each state (rows) to each verbs state (columns):
/// - RTS is reached only with a connection, which only the CM makes.
/// - IB RESET, INIT and RTR change nothing outside Closing and Error (a
///   QP is Idle until connected; RTR has no meaning on iWARP).
/// - Leaving RTS closes the connection: SQD (Closing) gracefully, with
///   the receive queue flushed and the send queue left to drain; SQE
///   (Terminate) sends the TERMINATE; ERR flushes everything.
/// - A closing QP may become Idle (the close completed) or Error; other
///   requests are refused with ECONNABORTED.
/// - Terminate changes only to Error.
/// - Error is left only by RESET (ibverbs), which flushes anything posted
///   since and makes the QP Idle.
#[rustfmt::skip]
const TABLE: [(QpState, [&str; 7]); 6] = [
    //                  RESET     INIT      RTR   RTS  SQD           SQE      ERR
    (QpState::Idle,      ["k",     "k",      "k",  "I", "k",          "k",     "err/r"]),
    (QpState::Rtr,       ["k",     "k",      "k",  "I", "k",          "k",     "err/r"]),
    (QpState::Rts,       ["k",     "k",      "k",  "k", "closing/rc", "term/c", "err/src"]),
    (QpState::Closing,   ["idle",  "idle",   "A",  "A", "k",          "A",     "err/src"]),
    (QpState::Terminate, ["k",     "k",      "k",  "k", "k",          "k",     "err/src"]),
    (QpState::Error,     ["R",     "k",      "k",  "k", "k",          "k",     "k"]),
];

#[test]
fn modify_follows_the_table() {
    for (from, row) in TABLE {
        for (to, c) in VERBS.iter().zip(row) {
            assert_eq!(modify(from, *to), cell(c), "{from:?} -> {to:?}");
        }
    }
}

#[test]
fn verbs_states_map_both_ways() {
    for s in STATES {
        assert_eq!(QpState::from_verbs(s.verbs()), s);
    }
    assert_eq!(QpState::from_verbs(VerbsState::Reset), QpState::Idle);
    assert_eq!(QpState::Idle.verbs(), VerbsState::Init);
    assert_eq!(QpState::Closing.verbs(), VerbsState::Sqd);
    assert_eq!(QpState::Terminate.verbs(), VerbsState::Sqe);
}

#[test]
fn stored_as_u8() {
    for s in STATES {
        assert_eq!(QpState::from_u8(s as u8), s);
    }
    assert_eq!(QpState::from_u8(6), QpState::Error);
    assert_eq!(QpState::from_u8(255), QpState::Error);
}

#[test]
fn connection_manager_and_terminate() {
    for s in STATES {
        let fresh = matches!(s, QpState::Idle | QpState::Rtr);
        assert_eq!(connect(s).is_ok(), fresh, "{s:?}");
        let connected = matches!(s, QpState::Rts | QpState::Closing);
        assert_eq!(can_terminate(s), connected, "{s:?}");
    }
    assert_eq!(
        ERROR,
        After {
            flush_sq: true,
            flush_rq: true,
            close: false
        }
    );
}

#[test]
fn posting() {
    use Post::*;
    let send = [
        NotConnected,
        NotConnected,
        Queue,
        NotConnected,
        NotConnected,
        Flush,
    ];
    let recv = [Queue, Queue, Queue, NotConnected, NotConnected, Flush];
    for (i, s) in STATES.into_iter().enumerate() {
        assert_eq!(s.post_send(), send[i], "{s:?}");
        assert_eq!(s.post_recv(), recv[i], "{s:?}");
    }
}

/// What happens to a QP: a `modify_qp`, the connection manager's RTS, an
/// error that TERMINATEs, the end of the connection (its close reported,
/// the TERMINATE sent: the QP goes to error), a post.
#[derive(Clone, Debug)]
enum Event {
    Modify(VerbsState),
    Connect,
    Terminate,
    Closed,
    PostSend,
    PostRecv,
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        4 => prop::sample::select(VERBS.to_vec()).prop_map(Event::Modify),
        2 => Just(Event::Connect),
        1 => Just(Event::Terminate),
        1 => Just(Event::Closed),
        2 => Just(Event::PostSend),
        2 => Just(Event::PostRecv),
    ]
}

/// The QP as the driver keeps it: its state, whether it has a connection,
/// whether work requests sit in its queues.
#[derive(Debug)]
struct Model {
    state: QpState,
    conn: bool,
    sq: bool,
    rq: bool,
}

impl Model {
    fn apply(&mut self, after: After) {
        self.sq &= !after.flush_sq;
        self.rq &= !after.flush_rq;
    }

    fn step(&mut self, e: &Event) -> Result<(), TestCaseError> {
        match *e {
            Event::Modify(to) => match modify(self.state, to) {
                Err(_) => {}
                Ok(Modify::Keep) => {}
                Ok(Modify::Reset) => {
                    prop_assert_eq!(self.state, QpState::Error);
                    self.apply(ERROR);
                    self.state = QpState::Idle;
                }
                Ok(Modify::Enter { state, after }) => {
                    prop_assert_ne!(state, QpState::Rts, "RTS only with a connection");
                    prop_assert_ne!(self.state, QpState::Error, "Error is left only by a reset");
                    // Leaving RTS closes the connection, and so does an
                    // error of a connected QP.
                    let connected = matches!(
                        self.state,
                        QpState::Rts | QpState::Closing | QpState::Terminate
                    );
                    if self.state == QpState::Rts || (connected && state == QpState::Error) {
                        prop_assert!(after.close);
                    }
                    self.state = state;
                    self.apply(after);
                }
            },
            // The CM connects a QP once (one endpoint per QP).
            Event::Connect if !self.conn => {
                if connect(self.state).is_ok() {
                    self.state = QpState::Rts;
                    self.conn = true;
                }
            }
            Event::Connect => {}
            Event::Terminate => {
                if can_terminate(self.state) {
                    prop_assert!(self.conn);
                    self.state = QpState::Terminate;
                }
            }
            Event::Closed if self.conn => {
                self.state = QpState::Error;
                self.apply(ERROR);
                self.conn = false;
            }
            Event::Closed => {}
            Event::PostSend => match self.state.post_send() {
                Post::Queue => self.sq = true,
                Post::Flush | Post::NotConnected => {}
            },
            Event::PostRecv => match self.state.post_recv() {
                Post::Queue => self.rq = true,
                Post::Flush | Post::NotConnected => {}
            },
        }
        // RTS always has its connection.
        prop_assert!(self.state != QpState::Rts || self.conn);
        // Sends are queued only on a connection, and flushed at the
        // latest when it ends.
        prop_assert!(!self.sq || self.conn);
        // Nothing stays queued in Error.
        prop_assert!(self.state != QpState::Error || !self.rq);
        prop_assert!(self.state != QpState::Error || !self.sq || self.conn);
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 4 } else { 256 }, ..ProptestConfig::default() })]
    /// Over any sequence of events the invariants hold: RTS only with a
    /// connection, queued sends flushed by the end of the connection at
    /// the latest, nothing queued in Error, Error left only by a reset.
    #[test]
    fn event_sequences_keep_the_invariants(events in prop::collection::vec(event(), 0..60)) {
        let mut m = Model { state: QpState::Idle, conn: false, sq: false, rq: false };
        for e in &events {
            m.step(e)?;
        }
    }
}
