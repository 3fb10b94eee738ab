// SPDX-License-Identifier: GPL-2.0

//! A bounded first-in first-out ring whose slots its user allocates: the
//! shape of the QP's RDMA Read queues, the outbound one of Reads awaiting
//! their Read Response (at most ORD) and the inbound one of Read Requests
//! to answer (at most IRD). The capacity is fixed when the slots are
//! allocated (when the connection starts and ORD and IRD are known); a
//! ring without slots takes nothing.

use core::marker::PhantomData;
use core::ops::DerefMut;

/// The slots of a [`Fifo`]: a slice of `Option<T>` the user allocates (a
/// `KVec` in the kernel, a `Vec` on the host), one slot per entry.
pub trait Slots<T>: DerefMut<Target = [Option<T>]> + Sized {
    /// Why the allocation failed.
    type Error;

    /// `n` empty slots.
    fn with_len(n: usize) -> Result<Self, Self::Error>;
}

/// A bounded first-in first-out queue of `T` in the slots `S`.
///
/// `head` is the slot of the oldest entry and `len` the number of
/// entries; the entries are the `len` slots from `head` on, wrapping at
/// the end of the slots. Every other slot is `None`.
pub struct Fifo<T, S> {
    slots: S,
    head: usize,
    len: usize,
    _entries: PhantomData<T>,
}

impl<T, S: Slots<T>> Fifo<T, S> {
    /// An empty queue in `slots`, whose length is its capacity; `slots`
    /// are all `None` (an entry left in one is dropped when its slot is
    /// filled).
    pub const fn from_slots(slots: S) -> Self {
        Self {
            slots,
            head: 0,
            len: 0,
            _entries: PhantomData,
        }
    }

    /// An empty queue of `cap` slots.
    pub fn with_capacity(cap: usize) -> Result<Self, S::Error> {
        Ok(Self::from_slots(S::with_len(cap)?))
    }

    /// Queued entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slots in all: how many entries the queue takes.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The oldest entry.
    pub fn head_mut(&mut self) -> Option<&mut T> {
        if self.len == 0 {
            return None;
        }
        self.slots.get_mut(self.head).and_then(|e| e.as_mut())
    }

    /// Removes the oldest entry.
    pub fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let cap = self.slots.len();
        let e = self.slots.get_mut(self.head).and_then(|e| e.take());
        self.head = (self.head + 1) % cap.max(1);
        self.len -= 1;
        e
    }

    /// Appends `e`; gives it back when the queue is full.
    pub fn push(&mut self, e: T) -> Result<(), T> {
        let cap = self.slots.len();
        if self.len >= cap {
            return Err(e);
        }
        let i = (self.head + self.len) % cap;
        match self.slots.get_mut(i) {
            Some(slot) => {
                *slot = Some(e);
                self.len += 1;
                Ok(())
            }
            None => Err(e),
        }
    }
}
