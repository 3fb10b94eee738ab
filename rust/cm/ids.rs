// SPDX-License-Identifier: GPL-2.0

//! The CM ids rsiw holds on a device, each with its [`CmDetails`]: what
//! `rdma resource show cm_id -dd` shows of them. The core names an id by
//! its iWARP CM id, whose provider data the dump must not use (`iw_accept`
//! takes it, and the endpoint it named may be gone): [`CmIds`] maps the
//! id's [`CmIdKey`] to its details instead.
//!
//! An endpoint or listener holds its CM id as a [`HeldId`]: the id is
//! entered with its details as it is taken, and leaves as the `HeldId`
//! drops, before the reference to the id goes (so a key in the registry
//! always names a live id). The registry holds the details only, not the
//! endpoint or listener, which hold their id.

use core::ops::Deref;
use kernel::{prelude::*, sync::Arc};

use crate::kif::compat::sync::SpinLockIrq;
use crate::kif::rdma::{
    iwcm::{CmId, CmIdKey},
    restrack::ResDetails,
};

use super::details::{CmDetails, Role};

/// A CM id in the registry.
struct Entry {
    key: CmIdKey,
    details: Arc<CmDetails>,
}

/// The entries (an id let go leaves a free slot), behind
/// [`CmIds::slots`].
struct Slots(KVec<Option<Entry>>);

impl Slots {
    /// Enters `e`, in the first free slot or a new one.
    fn put(&mut self, e: Entry) -> Result {
        match self.0.iter_mut().find(|s| s.is_none()) {
            Some(free) => *free = Some(e),
            // Atomic: under a spinlock.
            None => self.0.push(Some(e), GFP_ATOMIC)?,
        }
        Ok(())
    }

    /// Takes out the entry of `key`.
    fn take(&mut self, key: CmIdKey) -> Option<Entry> {
        self.0
            .iter_mut()
            .find(|s| s.as_ref().is_some_and(|e| e.key == key))
            .and_then(Option::take)
    }

    /// The details of `key`.
    fn find(&self, key: CmIdKey) -> Option<Arc<CmDetails>> {
        self.0
            .iter()
            .flatten()
            .find(|e| e.key == key)
            .map(|e| e.details.clone())
    }
}

/// The CM ids rsiw holds on a device, with their details.
#[pin_data]
pub(crate) struct CmIds {
    /// Taken alone, or under an endpoint's phase lock (an id may be let go
    /// in any context: irqsave).
    #[pin]
    slots: SpinLockIrq<Slots>,
}

impl CmIds {
    /// No id.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            slots <- crate::new_spinlock_irq!(Slots(KVec::new()), "rsiw::CmIds::slots"),
        })
    }

    /// Adds the details of the id `key` names to its resource entry `d`;
    /// nothing for an id rsiw does not hold.
    pub(crate) fn fill(&self, key: CmIdKey, d: &mut ResDetails<'_>) -> Result {
        // Copied out: the details are read with the registry let go.
        let found = self.slots.lock().find(key);
        match found {
            Some(details) => details.fill(d),
            None => Ok(()),
        }
    }
}

/// A CM id rsiw holds, in its device's [`CmIds`] for as long as held.
pub(super) struct HeldId {
    id: CmId,
    details: Arc<CmDetails>,
    ids: Arc<CmIds>,
}

impl HeldId {
    /// Holds `id` in `role`, entered in `ids`.
    pub(super) fn new(ids: &Arc<CmIds>, id: CmId, role: Role) -> Result<Self> {
        let details = CmDetails::new(role)?;
        let e = Entry {
            key: id.key(),
            details: details.clone(),
        };
        ids.slots.lock().put(e)?;
        Ok(Self {
            id,
            details,
            ids: ids.clone(),
        })
    }

    /// The details the id shows.
    pub(super) fn details(&self) -> &CmDetails {
        &self.details
    }
}

impl Deref for HeldId {
    type Target = CmId;

    fn deref(&self) -> &CmId {
        &self.id
    }
}

impl Drop for HeldId {
    fn drop(&mut self) {
        // Out of the registry before `id` (dropped after this) lets go;
        // the entry itself goes after the lock.
        let gone = self.ids.slots.lock().take(self.id.key());
        drop(gone);
    }
}
