// SPDX-License-Identifier: GPL-2.0

//! The access gate of a memory object: whether its STag may be used, with
//! which key and in which registration, and how many transfers are inside
//! its memory right now, all in one atomic word.
//!
//! A transfer *enters* the gate for each piece of memory it touches (one
//! copy of a received chunk, one send call of a message) and *leaves* it
//! right after. Entering succeeds only while the registration it was
//! checked against is still the current one and valid; that check and
//! the count of transfers inside change in one atomic step. So once an
//! invalidation or deregistration has closed the gate and seen the count
//! at zero, no transfer can be inside the memory, and none can enter it
//! again: not one more octet is placed into it or leaves it.
//!
//! Closing comes in two forms, for the two kinds of callers:
//! - [`MemGate::close`] shuts the gate at once whatever the count; the
//!   caller then waits (sleeping) until [`MemGate::inside`] is zero.
//!   Deregistration, re-registration and a Local Invalidate (process
//!   context) do that.
//! - [`MemGate::try_invalidate`] shuts it only if no transfer is inside,
//!   and fails otherwise. A remote invalidation (Send with Invalidate) or
//!   a Read with Local Invalidate, which run where nothing may sleep and
//!   may even run inside a transfer of the same memory, do that: a busy
//!   STag "cannot be invalidated" (RFC 5040), never waited for.
//!
//! The word holds: the count of transfers inside (bits 0-31), VALID (bit
//! 32), the 8-bit key (bits 33-40) and a generation (bits 41-63) that
//! every opening advances, so that a transfer checked against one
//! registration never enters a later one, even with the same key.
//!
//! Everything here is plain `core` atomics: the same file runs in the
//! kernel module and under the host tests (including Miri's data race
//! detection with threads).

use core::sync::atomic::{AtomicU64, Ordering};

const COUNT_MASK: u64 = 0xffff_ffff;
const VALID: u64 = 1 << 32;
const KEY_SHIFT: u32 = 33;
const KEY_MASK: u64 = 0xff << KEY_SHIFT;
const GEN_SHIFT: u32 = 41;
const GEN_ONE: u64 = 1 << GEN_SHIFT;

/// The registration a transfer was checked against: VALID, key and
/// generation as they were then (the upper half of the gate's word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket(u32);

impl Ticket {
    /// The key (the low 8 bits of the STag) of the registration.
    pub const fn key(self) -> u8 {
        (self.0 >> (KEY_SHIFT - 32)) as u8
    }
}

/// Why the gate refused to let a transfer in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// Not valid, another key, or a later registration than the ticket's.
    Stale,
    /// As many transfers inside as the count can hold (never in practice).
    Full,
}

/// Why [`MemGate::try_invalidate`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InvalidateError {
    /// The key does not match the current registration.
    Stale,
    /// A transfer is inside the memory right now.
    Busy,
}

/// Why [`MemGate::open`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// The gate is open (the STag is valid): invalidate it first.
    Valid,
    /// A transfer of the last registration is still inside.
    Busy,
}

/// The gate: one atomic word (see the module documentation).
#[derive(Debug)]
pub struct MemGate(AtomicU64);

impl Default for MemGate {
    fn default() -> Self {
        Self::new()
    }
}

impl MemGate {
    /// A closed gate, key 0, generation 0, nobody inside.
    pub const fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    /// Opens the gate for a new registration with `key`; the fields the
    /// registration describes (address, length, rights) must be written
    /// before and are stable until the next [`close`](Self::close).
    /// Returns the new registration's ticket.
    pub fn open(&self, key: u8) -> Result<Ticket, OpenError> {
        let mut cur = self.0.load(Ordering::Acquire);
        loop {
            if cur & VALID != 0 {
                return Err(OpenError::Valid);
            }
            if cur & COUNT_MASK != 0 {
                return Err(OpenError::Busy);
            }
            let gen = (cur & !(GEN_ONE - 1)).wrapping_add(GEN_ONE);
            let new = gen | (u64::from(key) << KEY_SHIFT) | VALID;
            match self
                .0
                .compare_exchange_weak(cur, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok(Ticket((new >> 32) as u32)),
                Err(now) => cur = now,
            }
        }
    }

    /// Enters the current registration if it is valid and has `key`:
    /// the one consistent look-up of an STag. Returns its ticket; the
    /// caller must [`leave`](Self::leave) once.
    pub fn enter_key(&self, key: u8) -> Result<Ticket, Refused> {
        self.enter_if(|hi| hi & (VALID | KEY_MASK) == VALID | (u64::from(key) << KEY_SHIFT))
    }

    /// Enters again the registration of `ticket`, if it is still the
    /// current one and valid. The caller must [`leave`](Self::leave) once.
    pub fn enter(&self, ticket: Ticket) -> Result<(), Refused> {
        let want = u64::from(ticket.0) << 32;
        self.enter_if(|hi| hi == want && want & VALID != 0)
            .map(|_| ())
    }

    fn enter_if(&self, ok: impl Fn(u64) -> bool) -> Result<Ticket, Refused> {
        let mut cur = self.0.load(Ordering::Acquire);
        loop {
            let hi = cur & !COUNT_MASK;
            if !ok(hi) {
                return Err(Refused::Stale);
            }
            if cur & COUNT_MASK == COUNT_MASK {
                return Err(Refused::Full);
            }
            match self
                .0
                .compare_exchange_weak(cur, cur + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok(Ticket((hi >> 32) as u32)),
                Err(now) => cur = now,
            }
        }
    }

    /// Leaves the gate (after an `enter` that succeeded).
    pub fn leave(&self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }

    /// Closes the gate whatever the key: no transfer enters from now on.
    /// Returns whether it was open. The caller waits until
    /// [`inside`](Self::inside) is zero before it reuses or frees what the
    /// memory object describes.
    pub fn close(&self) -> bool {
        self.0.fetch_and(!VALID, Ordering::AcqRel) & VALID != 0
    }

    /// Invalidates the registration with `key` if no transfer is inside
    /// it (an invalid one with that key stays invalid: invalidating twice
    /// is allowed, as in siw).
    pub fn try_invalidate(&self, key: u8) -> Result<(), InvalidateError> {
        self.invalidate(key, false)
    }

    /// Closes the gate if the current registration has `key` (whatever
    /// the count; see [`close`](Self::close)).
    pub fn close_key(&self, key: u8) -> Result<(), InvalidateError> {
        self.invalidate(key, true)
    }

    /// Clears VALID if the key is `key` and, unless `even_busy`, no
    /// transfer is inside.
    fn invalidate(&self, key: u8, even_busy: bool) -> Result<(), InvalidateError> {
        let mut cur = self.0.load(Ordering::Acquire);
        loop {
            if (cur & KEY_MASK) >> KEY_SHIFT != u64::from(key) {
                return Err(InvalidateError::Stale);
            }
            if cur & VALID == 0 {
                return Ok(());
            }
            if !even_busy && cur & COUNT_MASK != 0 {
                return Err(InvalidateError::Busy);
            }
            match self.0.compare_exchange_weak(
                cur,
                cur & !VALID,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(()),
                Err(now) => cur = now,
            }
        }
    }

    /// Transfers inside the memory right now.
    pub fn inside(&self) -> u32 {
        (self.0.load(Ordering::Acquire) & COUNT_MASK) as u32
    }

    /// Whether the gate is open (the STag is valid).
    pub fn is_valid(&self) -> bool {
        self.0.load(Ordering::Acquire) & VALID != 0
    }

    /// The key of the current (or last) registration.
    pub fn key(&self) -> u8 {
        ((self.0.load(Ordering::Acquire) & KEY_MASK) >> KEY_SHIFT) as u8
    }
}
