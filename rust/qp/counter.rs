// SPDX-License-Identifier: GPL-2.0

//! Per-QP counters (`rdma statistic qp`): the counter sets of one device,
//! each with the QPs bound to it. A set counts the first
//! [`stats::PER_QP`] device counters (FPDUs and payload octets each way)
//! of its QPs from the moment each was bound, and keeps what a QP counted
//! after it is unbound.
//!
//! The RDMA core shows a port's counter as the device's value plus that
//! of every set, live or gone; [`Counters::attributed`] is what the sets
//! hold, which the device leaves out of its own values.

use kernel::{prelude::*, sync::Arc};

use super::Qp;
use crate::base::stats::{self, Counter};

/// Values of one set, in device counter order.
type Values = [u64; stats::PER_QP];

// The QP's counts (`Qp::traffic`) are in this order.
const _: () = assert!(
    Counter::TxFpdus as usize == 0
        && Counter::TxPayload as usize == 1
        && Counter::RxFpdus as usize == 2
        && Counter::RxPayload as usize == 3
        && stats::PER_QP == 4
);

/// A QP bound to a set and its counts when it was bound.
struct Bound {
    qp: Arc<Qp>,
    base: Values,
}

/// One counter set.
struct Set {
    id: u32,
    /// What QPs no longer bound counted while they were.
    retired: Values,
    /// The QPs bound (an unbound QP leaves a free slot).
    qps: KVec<Option<Bound>>,
}

impl Set {
    /// The set's values now.
    fn values(&self) -> Values {
        let mut v = self.retired;
        for b in self.qps.iter().flatten() {
            add_since(&mut v, &b.qp.traffic(), &b.base);
        }
        v
    }

    /// Whether `qp` is bound to the set.
    fn has(&self, qp: &Arc<Qp>) -> bool {
        self.qps.iter().flatten().any(|b| Arc::ptr_eq(&b.qp, qp))
    }
}

/// Puts `v` in the first free slot of `slots`, or a new one.
fn put<T>(slots: &mut KVec<Option<T>>, v: T) -> Result {
    match slots.iter_mut().find(|s| s.is_none()) {
        Some(free) => *free = Some(v),
        None => slots.push(Some(v), GFP_KERNEL)?,
    }
    Ok(())
}

/// `v += now - base`, per counter (counts only grow; wrapping as they do).
fn add_since(v: &mut Values, now: &Values, base: &Values) {
    for ((v, n), b) in v.iter_mut().zip(now).zip(base) {
        *v = v.wrapping_add(n.wrapping_sub(*b));
    }
}

/// The counter sets of a device (behind its `counters` mutex).
pub(crate) struct Counters {
    /// The live sets (one that went leaves a free slot).
    sets: KVec<Option<Set>>,
    /// What the sets that are gone counted.
    gone: Values,
    /// The id the next new set takes (ids are not 0).
    next_id: u32,
}

impl Counters {
    /// No set.
    pub(crate) fn new() -> Self {
        Self {
            sets: KVec::new(),
            gone: [0; stats::PER_QP],
            next_id: 1,
        }
    }

    /// Binds `qp` to set `id`, or to a new set when `id` is 0; returns the
    /// set's id. `EINVAL` for an unknown set or a QP bound already.
    pub(crate) fn bind(&mut self, id: u32, qp: &Arc<Qp>) -> Result<u32> {
        if self.sets.iter().flatten().any(|s| s.has(qp)) {
            return Err(EINVAL);
        }
        let bound = Bound {
            qp: qp.clone(),
            base: qp.traffic(),
        };
        if id != 0 {
            put(&mut self.set(id)?.qps, bound)?;
            return Ok(id);
        }
        let id = self.new_id();
        let mut qps = KVec::new();
        qps.push(Some(bound), GFP_KERNEL)?;
        let set = Set {
            id,
            retired: [0; stats::PER_QP],
            qps,
        };
        put(&mut self.sets, set)?;
        Ok(id)
    }

    /// Live set `id`.
    fn set(&mut self, id: u32) -> Result<&mut Set> {
        self.sets
            .iter_mut()
            .flatten()
            .find(|s| s.id == id)
            .ok_or(EINVAL)
    }

    /// An id no live set has.
    fn new_id(&mut self) -> u32 {
        loop {
            let id = self.next_id;
            self.next_id = self.next_id.checked_add(1).unwrap_or(1);
            if !self.sets.iter().flatten().any(|s| s.id == id) {
                return id;
            }
        }
    }

    /// Unbinds `qp` from set `id`; the set keeps what the QP counted.
    pub(crate) fn unbind(&mut self, id: u32, qp: &Arc<Qp>) -> Result {
        let set = self.set(id)?;
        let slot = set
            .qps
            .iter_mut()
            .find(|b| b.as_ref().is_some_and(|b| Arc::ptr_eq(&b.qp, qp)))
            .ok_or(EINVAL)?;
        if let Some(b) = slot.take() {
            add_since(&mut set.retired, &b.qp.traffic(), &b.base);
        }
        Ok(())
    }

    /// Set `id` goes; what it counted now counts with the device's.
    pub(crate) fn dealloc(&mut self, id: u32) {
        let zero = [0; stats::PER_QP];
        let slot = self
            .sets
            .iter_mut()
            .find(|s| s.as_ref().is_some_and(|s| s.id == id));
        if let Some(set) = slot.and_then(Option::take) {
            add_since(&mut self.gone, &set.values(), &zero);
        }
    }

    /// The values of set `id` (`out`: at most [`stats::PER_QP`] slots).
    pub(crate) fn read(&mut self, id: u32, out: &mut [u64]) -> Result {
        let v = self.set(id)?.values();
        for (o, v) in out.iter_mut().zip(v) {
            *o = v;
        }
        Ok(())
    }

    /// What every set, live or gone, counted.
    pub(crate) fn attributed(&self) -> Values {
        let zero = [0; stats::PER_QP];
        let mut v = self.gone;
        for s in self.sets.iter().flatten() {
            add_since(&mut v, &s.values(), &zero);
        }
        v
    }
}

impl Default for Counters {
    fn default() -> Self {
        Self::new()
    }
}
