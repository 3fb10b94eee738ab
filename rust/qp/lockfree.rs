// SPDX-License-Identifier: GPL-2.0

//! [`LockFree`], the part of a QP read and written without its locks:
//! its number, a copy of its state, and the flags by which its contexts
//! (the socket upcalls in softirq, the transmit function in process
//! context, the doorbell system call) tell each other what to look at.
//! Each is changed only through a method named after what it does for
//! the QP, which carries its memory ordering; this comment says once why
//! that ordering is enough.
//!
//! | value | set by | cleared (or taken) by | ordering |
//! |---|---|---|---|
//! | number | [`LockFree::set_id`], once, right after creation | never | Release / Acquire |
//! | state | [`LockFree::publish_state`], from `QpInner::set_state` only | (a copy) | Release / Acquire |
//! | receiving | [`LockFree::start_receiving`] | never | Release / Acquire |
//! | inbound Read work | [`LockFree::note_inbound_reads_queued`] (receive side, transmit side) | [`LockFree::take_inbound_reads_queued`] (transmit side), [`LockFree::new_connection`] | Release / AcqRel |
//! | TCP closed | [`LockFree::note_llp_closed`] (any context) | [`LockFree::take_llp_closed`] (transmit side), [`LockFree::new_connection`] | Release / AcqRel |
//! | sending held | [`LockFree::hold_tx`] (start of receiving) | [`LockFree::release_tx`] (receive side; the CM's first silence check ends a grace) | Release / Acquire, AcqRel |
//! | received | [`LockFree::note_received`] (receive side) | [`LockFree::take_received`] (doorbell) | Relaxed |
//! | streaming | [`LockFree::set_streaming`] (transmit side, per message) | the same | Relaxed |
//!
//! - **Number**: the QP number, stored once after the QP table gave it
//!   out, before the QP is handed to anyone; read by every trace and
//!   message. The QP reaches other contexts through the table or the
//!   core, which order the store already; Release/Acquire make the value
//!   safe to read without that argument (a plain load on x86).
//! - **State**: `QpInner::state`, readable without the `inner` lock (the
//!   data path looks at it for every message): written only under that
//!   lock, together with it. Release/Acquire: a context that sees a state
//!   also sees what was written before it under the lock (IRD and ORD
//!   before RTS). A snapshot: decisions that must not race with a change
//!   take the lock and read `QpInner::state`.
//! - **Receiving**: the receive side was set up (its deframer, whether it
//!   verifies CRCs first): the socket's `data_ready` upcall may take data
//!   out of TCP. One value carries both, stored (Release) after the
//!   receive state was set up under its lock, loaded (Acquire) by every
//!   upcall: a started receive side is seen with its CRC mode.
//! - **Inbound Read work**: a Read Request or a TERMINATE was queued in the
//!   QP's [`InboundReads`](super::reads::InboundReads) (raised by its
//!   methods, under its lock, with what they queued): the transmit
//!   function takes the `inbound_reads` lock only when it is set, once or
//!   twice per message. Taking it is a load
//!   and, only when set, a swap (no read-modify-write in the common case);
//!   the transmit side raises it again under the lock when it left work
//!   in the queue, so no queued entry is forgotten: an entry queued after
//!   the swap raises the flag after it. The queue itself is ordered by its
//!   lock; the flag's Release/Acquire only order the flag.
//! - **TCP closed**: the connection closed or the stream died (any
//!   context, softirq included); the transmit function, in process
//!   context, takes it under its lock and reports the close to the CM.
//!   The store (Release) comes before the wake-up of the transmit work;
//!   the take is a load and, only when set, a swap (AcqRel), so exactly
//!   one transmit run reports the close.
//! - **Sending held**: a responder sends nothing before the initiator's
//!   first FPDU arrived (`Conn::hold`): set (Release) when receiving
//!   starts, before the transmit side starts; looked at by the transmit
//!   side before each job (Acquire: a run that finds sending released
//!   also sees what the receive side did before it released it);
//!   released by the receive side with a swap (AcqRel) that says which
//!   one context released it (and wakes the transmit work); a
//!   client-server responder's grace is released the same way by the
//!   connection manager's first check of the peer's silence
//!   (`Qp::end_responder_grace`). The receive
//!   side's own look before that swap is Relaxed: it only decides whether
//!   the swap is tried.
//! - **Received**: octets arrived since the last doorbell (set before
//!   they are placed, so an application answering what it sees finds it
//!   set). A hint for the doorbell (answering or streaming, see
//!   `Qp::post_send`): the completion that shows the data to the
//!   application is published with its own release, which orders this
//!   store before the application's doorbell; a value seen late costs one
//!   message a wake-up, nothing more. Set and cleared by a store only
//!   when the value changes (no read-modify-write, no cache line dirtied
//!   per upcall); a set lost between the doorbell's load and its store
//!   costs the same.
//! - **Streaming**: the last message went out while earlier data was
//!   still unacknowledged by TCP; written by the transmit side for each
//!   message, read by the doorbell. A heuristic that publishes nothing:
//!   Relaxed.

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};

use super::QpState;

/// The receive side has not started (see [`LockFree::start_receiving`]).
const RX_OFF: u8 = 0;
/// The receive side takes octets as they come.
const RX_PLAIN: u8 = 1;
/// The receive side verifies each FPDU's CRC before it places it.
const RX_VERIFY: u8 = 2;

/// How the receive side takes data out of TCP, once it started.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Receiving {
    /// As the octets come.
    Plain,
    /// Each FPDU's CRC checked before it is placed (verify-first).
    VerifyFirst,
}

/// The lock-free part of a QP (see the module's comment for what each
/// value means, who changes it and why its ordering is right).
pub(crate) struct LockFree {
    /// The QP number (0 until [`LockFree::set_id`]).
    id: AtomicU32,
    // INVARIANT: the lock-free copy of the same QP's `QpInner::state`,
    // equal to it whenever its `inner` lock is free: written only
    // together with it, under that lock, by `QpInner::set_state` (which
    // only `Qp::put_state` calls).
    /// The state, as a `QpState` discriminant.
    state: AtomicU8,
    /// `RX_OFF`, `RX_PLAIN` or `RX_VERIFY`.
    rx_mode: AtomicU8,
    /// A Read Request or a TERMINATE was queued in `InboundReads`.
    inbound_reads_queued: AtomicBool,
    /// The TCP connection closed (the transmit side reports it).
    llp_closed: AtomicBool,
    /// Nothing but a TERMINATE may be sent yet.
    tx_held: AtomicBool,
    /// Octets arrived since the last doorbell.
    rx_seen: AtomicBool,
    /// The last message went out with earlier data still unacknowledged.
    tx_streaming: AtomicBool,
}

impl LockFree {
    /// A new QP's: no number yet, Idle, nothing started or signalled.
    pub(crate) const fn new() -> Self {
        Self {
            id: AtomicU32::new(0),
            state: AtomicU8::new(QpState::Idle as u8),
            rx_mode: AtomicU8::new(RX_OFF),
            inbound_reads_queued: AtomicBool::new(false),
            llp_closed: AtomicBool::new(false),
            tx_held: AtomicBool::new(false),
            rx_seen: AtomicBool::new(false),
            tx_streaming: AtomicBool::new(false),
        }
    }

    /// The QP number.
    pub(crate) fn id(&self) -> u32 {
        self.id.load(Ordering::Acquire)
    }

    /// Gives the QP its number (once, right after creation).
    pub(super) fn set_id(&self, id: u32) {
        self.id.store(id, Ordering::Release);
    }

    /// The QP's state (a snapshot, see the module's comment).
    pub(crate) fn state(&self) -> QpState {
        QpState::from_u8(self.state.load(Ordering::Acquire))
    }

    /// Publishes the state `s`; only `QpInner::set_state` calls it, under
    /// the `inner` lock, with the state it sets there (see the invariant
    /// on the field).
    pub(super) fn publish_state(&self, s: QpState) {
        self.state.store(s as u8, Ordering::Release);
    }

    /// The receive side was set up for a connection (`verify`: it checks
    /// CRCs first): upcalls may take data out of TCP from now on.
    pub(super) fn start_receiving(&self, verify: bool) {
        let mode = if verify { RX_VERIFY } else { RX_PLAIN };
        self.rx_mode.store(mode, Ordering::Release);
    }

    /// How the receive side takes data, `None` before it started.
    pub(super) fn receiving(&self) -> Option<Receiving> {
        match self.rx_mode.load(Ordering::Acquire) {
            RX_OFF => None,
            RX_VERIFY => Some(Receiving::VerifyFirst),
            _ => Some(Receiving::Plain),
        }
    }

    /// A Read Request or a TERMINATE was queued in `InboundReads` (called
    /// by its methods, under its lock): the transmit side is to look there.
    pub(super) fn note_inbound_reads_queued(&self) {
        self.inbound_reads_queued.store(true, Ordering::Release);
    }

    /// Transmit side: whether something was queued in `InboundReads`
    /// since the last look (which the caller then takes; it raises the flag
    /// again if it leaves work there).
    pub(super) fn take_inbound_reads_queued(&self) -> bool {
        self.inbound_reads_queued.load(Ordering::Acquire)
            && self.inbound_reads_queued.swap(false, Ordering::AcqRel)
    }

    /// The TCP connection closed or the stream died (any context): the
    /// transmit side is to report it to the CM.
    pub(super) fn note_llp_closed(&self) {
        self.llp_closed.store(true, Ordering::Release);
    }

    /// Transmit side: whether the connection closed since the last look
    /// (`true` once per close: the caller reports it).
    pub(super) fn take_llp_closed(&self) -> bool {
        self.llp_closed.load(Ordering::Relaxed) && self.llp_closed.swap(false, Ordering::AcqRel)
    }

    /// A new connection's transmit side: no close seen, nothing queued in
    /// `InboundReads` (its queues were just emptied).
    pub(super) fn new_connection(&self) {
        self.llp_closed.store(false, Ordering::Release);
        self.inbound_reads_queued.store(false, Ordering::Release);
    }

    /// Starts a connection with sending held until the peer's first FPDU
    /// (`hold`) or not.
    pub(super) fn hold_tx(&self, hold: bool) {
        self.tx_held.store(hold, Ordering::Release);
    }

    /// Transmit side: whether sending is held (nothing but a TERMINATE
    /// goes out).
    pub(super) fn tx_held(&self) -> bool {
        self.tx_held.load(Ordering::Acquire)
    }

    /// Receive side, after FPDUs arrived: whether sending may still be
    /// held (a cheap look: [`LockFree::release_tx`] decides).
    pub(super) fn tx_maybe_held(&self) -> bool {
        self.tx_held.load(Ordering::Relaxed)
    }

    /// Receive side: the peer's first FPDU arrived, sending is released.
    /// `true` when this call released it (the caller wakes the transmit
    /// work).
    pub(super) fn release_tx(&self) -> bool {
        self.tx_held.swap(false, Ordering::AcqRel)
    }

    /// Receive side: octets arrived (noted before they are placed).
    pub(super) fn note_received(&self) {
        if !self.rx_seen.load(Ordering::Relaxed) {
            self.rx_seen.store(true, Ordering::Relaxed);
        }
    }

    /// Doorbell: whether octets arrived since the last doorbell (and
    /// forget it). A plain store clears the flag: a receive that sets it
    /// in between is lost, which costs the next message a hand-off to the
    /// transmit work, nothing more.
    pub(super) fn take_received(&self) -> bool {
        let seen = self.rx_seen.load(Ordering::Relaxed);
        if seen {
            self.rx_seen.store(false, Ordering::Relaxed);
        }
        seen
    }

    /// Transmit side, at a message's first batch: whether the application
    /// streams (see `Qp::post_send`).
    pub(super) fn set_streaming(&self, streaming: bool) {
        self.tx_streaming.store(streaming, Ordering::Relaxed);
    }

    /// Doorbell: whether the last message went out while earlier data was
    /// still unacknowledged.
    pub(super) fn streaming(&self) -> bool {
        self.tx_streaming.load(Ordering::Relaxed)
    }
}
