// SPDX-License-Identifier: GPL-2.0

//! The responder endpoints of a device that have no connection of their
//! own yet ([`Pending`]): from the TCP accept on a listener, through the
//! peer's MPA Request, to the CM's accept or reject.
//!
//! The CM names such an endpoint by the [`RequestKey`] of its connect
//! request, never by a reference: it may drop a request without answering
//! it (see `RequestKey`), and nothing else would then close the endpoint,
//! whose socket keeps calling into rsiw. So the device holds the endpoints
//! itself, finds them by key when the CM answers, and closes them when
//! nobody else will: when their listener is destroyed
//! ([`Pending::close_listener`]) and when the device goes
//! ([`Pending::close_all`]). The accept timeout (`cm_accept_timeout`)
//! closes one whose request the CM holds but never answers.
//!
//! An endpoint is entered as its listener accepts its socket and leaves as
//! its [`Entered`] drops with the phase that holds it: when it is
//! accepted, rejected, fails, times out or its peer goes.

use core::{num::NonZeroUsize, sync::atomic::Ordering};
use kernel::{
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
};

use crate::kif::rdma::iwcm::RequestKey;

use super::listener::Listener;
use super::Cep;

/// An endpoint in the registry.
struct Entry {
    /// Names it (the provider data of its connect request).
    key: RequestKey,
    /// The [`Listener::serial`] of the listener it came from.
    listener: usize,
    cep: Arc<Cep>,
}

/// The entries (a closed one leaves a free slot), behind
/// [`Pending::entries`].
struct Entries {
    slots: KVec<Option<Entry>>,
    /// The last number handed out (keys and listener serials).
    last: usize,
    /// The device is going: nothing is entered any more.
    closed: bool,
}

impl Entries {
    /// A number not handed out before (in the life of the device).
    fn next(&mut self) -> NonZeroUsize {
        loop {
            self.last = self.last.wrapping_add(1);
            if let Some(n) = NonZeroUsize::new(self.last) {
                return n;
            }
        }
    }

    /// Takes out the first entry `f` picks.
    fn take(&mut self, f: impl Fn(&Entry) -> bool) -> Option<Entry> {
        self.slots
            .iter_mut()
            .find(|s| s.as_ref().is_some_and(&f))
            .and_then(Option::take)
    }
}

/// The device's responder endpoints awaiting their Request or the CM's
/// answer (see the module).
#[pin_data]
pub(crate) struct Pending {
    /// Taken alone, or under an endpoint's phase lock (a leaf: see
    /// [`crate::cm`]); process context only.
    #[pin]
    entries: Mutex<Entries>,
}

impl Pending {
    /// No endpoint.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            entries <- new_mutex!(
                Entries {
                    slots: KVec::new(),
                    last: 0,
                    closed: false,
                },
                "rsiw::Pending::entries"
            ),
        })
    }

    /// A serial number for a new listener (see [`Pending::close_listener`]).
    pub(super) fn listener_serial(&self) -> usize {
        self.entries.lock().next().get()
    }

    /// The key of a new endpoint, which leaves the registry as the
    /// returned [`Entered`] drops. Entered with [`Pending::insert`].
    pub(super) fn entry(self: &Arc<Self>) -> Entered {
        let key = RequestKey::new(self.entries.lock().next());
        Entered {
            key,
            pending: self.clone(),
        }
    }

    /// Enters `cep`, which listener `l` accepted, under `key` (of the
    /// endpoint's [`Entered`]). `ENOTCONN` once `l` is destroyed or the
    /// device goes: the caller drops the endpoint.
    pub(super) fn insert(&self, l: &Listener, key: RequestKey, cep: &Arc<Cep>) -> Result {
        let mut entries = self.entries.lock();
        if entries.closed || !l.open.load(Ordering::Acquire) {
            return Err(crate::kif::compat::error::enotconn());
        }
        let entry = Entry {
            key,
            listener: l.serial,
            cep: cep.clone(),
        };
        match entries.slots.iter_mut().find(|s| s.is_none()) {
            Some(free) => *free = Some(entry),
            None => entries.slots.push(Some(entry), GFP_KERNEL)?,
        }
        Ok(())
    }

    /// The endpoint of the connect request `key`, if it still waits.
    pub(super) fn find(&self, key: RequestKey) -> Option<Arc<Cep>> {
        self.entries
            .lock()
            .slots
            .iter()
            .flatten()
            .find(|e| e.key == key)
            .map(|e| e.cep.clone())
    }

    /// Listener `l` is being destroyed: nothing is entered for it any
    /// more, and its endpoints close (those whose Request came are
    /// refused).
    pub(super) fn close_listener(&self, l: &Listener) {
        {
            let _entries = self.entries.lock();
            // Under the lock: `insert` sees it or was done before.
            l.open.store(false, Ordering::Release);
        }
        self.close_where(|e| e.listener == l.serial);
    }

    /// The device goes: nothing is entered any more, and every endpoint
    /// closes (those whose Request came are refused).
    pub(crate) fn close_all(&self) {
        self.entries.lock().closed = true;
        self.close_where(|_| true);
    }

    /// Closes the endpoints `f` picks, one at a time, each out of the
    /// registry before its phase is locked (the registry is a leaf).
    fn close_where(&self, f: impl Fn(&Entry) -> bool) {
        loop {
            let Some(e) = self.entries.lock().take(&f) else {
                return;
            };
            e.cep.abandon();
        }
    }
}

/// An endpoint's place in [`Pending`]: leaves the registry as it drops.
pub(super) struct Entered {
    key: RequestKey,
    pending: Arc<Pending>,
}

impl Entered {
    /// The key the CM names the endpoint's connect request by.
    pub(super) fn key(&self) -> RequestKey {
        self.key
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        // The endpoint (the entry's reference to it) goes after the lock;
        // whoever drops this holds the endpoint too.
        let gone = self.pending.entries.lock().take(|e| e.key == self.key);
        drop(gone);
    }
}
