// SPDX-License-Identifier: GPL-2.0

//! The iWARP connection manager interface (`iw_cm_id`, `iw_cm_event`):
//! counted references to CM ids, event delivery to the iWARP CM, the
//! provider data the CM hands back to the driver (the listener of a listen
//! id, the [`RequestKey`] of a connect request), and the keys that name an
//! id without holding it ([`CmIdKey`]).

use core::{num::NonZeroUsize, ptr::NonNull};
use kernel::{bindings, prelude::*, sync::Arc};

use crate::kif::sock::SockAddr;

/// A counted reference to an `iw_cm_id`.
///
/// # Invariants
///
/// We own one reference on the id (taken with its `add_ref`, which the CM
/// sets for every id), which keeps it alive.
pub struct CmId {
    ptr: NonNull<bindings::iw_cm_id>,
}

// SAFETY: a `CmId` owns one reference on its id, taken with the CM's
// `add_ref` and given back with `rem_ref` in `drop`: an atomic count that
// any thread may drop. The id's other state is the CM's, under its own
// lock. Nothing ties a `CmId` to the thread that made it.
unsafe impl Send for CmId {}
// SAFETY: what a `&CmId` does, from any thread: reads the addresses and
// flags the CM set before handing the id to the driver, which it does not
// change while the id lives (`local_addr`, `remote_addr`, `afonly`,
// `key`); delivers events through the id's `event_handler`, the CM's
// `cm_event_handler`, which takes `cm_id_priv->lock` and may be called
// concurrently from any context; takes another reference (`clone`: the
// atomic `add_ref`). Its one write, `set_provider`, is kif's, made in
// `iw_create_listen` before the id is shared with anything.
unsafe impl Sync for CmId {}

/// What names a CM id without holding it: the id's address, for finding
/// the driver's record of an id the core names (`rdma resource show
/// cm_id`). Compare only: a key is never turned back into an id, so the
/// key of an id that is gone is harmless (a driver that drops its record
/// of an id before its reference to it has no record left to match).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct CmIdKey(usize);

impl CmIdKey {
    /// The key of the id at `p` (which is not read).
    pub(in crate::kif) fn of(p: *const bindings::iw_cm_id) -> Self {
        Self(p as usize)
    }
}

/// What names a connect request the driver reported
/// ([`CmId::connect_request`]) when the CM answers it (`iw_accept`,
/// `iw_reject`): a number the driver chose, carried as the provider data of
/// the CM id the CM makes for the request.
///
/// A key, not a reference: the CM may drop a request without ever
/// answering it (its listener being destroyed while the request's event
/// waits in the CM's queue, or no memory for the new id), so what a
/// reference in the provider data held would leak. The driver keeps the
/// request's endpoint itself and finds it by its key; a key it no longer
/// knows (the request was closed meanwhile) names nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestKey(NonZeroUsize);

impl RequestKey {
    /// The key `n`.
    pub fn new(n: NonZeroUsize) -> Self {
        Self(n)
    }
}

/// CM event kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmEventKind {
    /// A peer asks to connect (on a listen id).
    ConnectRequest,
    /// The peer answered our connect request.
    ConnectReply,
    /// The connection is up.
    Established,
    /// The peer started closing.
    Disconnect,
    /// The connection is gone.
    Close,
}

/// A CM event.
pub struct CmEvent<'a> {
    /// What happened.
    pub kind: CmEventKind,
    /// 0 or a negative errno (for `ConnectReply`: refused, reset, ...).
    pub status: i32,
    /// Local and remote address (requests and replies).
    pub addrs: Option<(SockAddr, SockAddr)>,
    /// Private data of the peer (requests and replies).
    pub pdata: &'a [u8],
    /// IRD to report.
    pub ird: u8,
    /// ORD to report.
    pub ord: u8,
}

/// Private data and resources of `iw_connect`/`iw_accept`.
pub struct ConnParam {
    /// Private data for the MPA frame.
    pub pdata: KVec<u8>,
    /// Outbound RDMA Reads.
    pub ord: u32,
    /// Inbound RDMA Reads.
    pub ird: u32,
    /// The QP to connect.
    pub qpn: u32,
}

impl ConnParam {
    /// Copies the CM's parameters.
    ///
    /// # Safety
    ///
    /// `p` is a valid `iw_cm_conn_param` whose private data is readable.
    pub(in crate::kif) unsafe fn from_raw(p: *const bindings::iw_cm_conn_param) -> Result<Self> {
        // SAFETY: per the contract.
        let p = unsafe { &*p };
        let mut pdata = KVec::new();
        if !p.private_data.is_null() && p.private_data_len > 0 {
            // SAFETY: per the contract, `private_data_len` octets.
            let s = unsafe {
                core::slice::from_raw_parts(
                    p.private_data.cast::<u8>(),
                    p.private_data_len as usize,
                )
            };
            pdata.extend_from_slice(s, GFP_KERNEL)?;
        }
        Ok(Self {
            pdata,
            ord: p.ord,
            ird: p.ird,
            qpn: p.qpn,
        })
    }
}

impl CmId {
    /// Takes a new reference on `p`.
    ///
    /// # Safety
    ///
    /// `p` is a live CM id (the CM holds a reference during the call).
    pub(in crate::kif) unsafe fn get(p: *mut bindings::iw_cm_id) -> Result<Self> {
        let ptr = NonNull::new(p).ok_or(EINVAL)?;
        // SAFETY: live id; `add_ref` is set by the CM for every id.
        unsafe {
            if let Some(f) = (*p).add_ref {
                f(p);
            }
        }
        // INVARIANT: the reference taken just above.
        Ok(Self { ptr })
    }

    fn raw(&self) -> &bindings::iw_cm_id {
        // SAFETY: we hold a reference.
        unsafe { self.ptr.as_ref() }
    }

    /// The key that names this id ([`CmIdKey`]).
    pub fn key(&self) -> CmIdKey {
        CmIdKey::of(self.ptr.as_ptr())
    }

    /// The local address the CM resolved.
    pub fn local_addr(&self) -> SockAddr {
        SockAddr(self.raw().local_addr)
    }

    /// Whether an IPv6 address of this id stands for IPv6 only (the CM's
    /// `afonly`, set by `rdma_set_afonly`).
    pub fn afonly(&self) -> bool {
        self.raw().afonly()
    }

    /// The remote address the CM resolved.
    pub fn remote_addr(&self) -> SockAddr {
        SockAddr(self.raw().remote_addr)
    }

    /// Delivers `ev` to the CM.
    pub fn event(&self, ev: &CmEvent<'_>) -> Result {
        self.deliver(ev, None)
    }

    /// Delivers the connect request `ev` (of kind
    /// [`CmEventKind::ConnectRequest`], on a listening id) named `key`: the
    /// CM's `iw_accept` or `iw_reject` for it comes with that key.
    pub fn connect_request(&self, ev: &CmEvent<'_>, key: RequestKey) -> Result {
        self.deliver(ev, Some(key))
    }

    fn deliver(&self, ev: &CmEvent<'_>, key: Option<RequestKey>) -> Result {
        let kind = match ev.kind {
            CmEventKind::ConnectRequest => bindings::iw_cm_event_type_IW_CM_EVENT_CONNECT_REQUEST,
            CmEventKind::ConnectReply => bindings::iw_cm_event_type_IW_CM_EVENT_CONNECT_REPLY,
            CmEventKind::Established => bindings::iw_cm_event_type_IW_CM_EVENT_ESTABLISHED,
            CmEventKind::Disconnect => bindings::iw_cm_event_type_IW_CM_EVENT_DISCONNECT,
            CmEventKind::Close => bindings::iw_cm_event_type_IW_CM_EVENT_CLOSE,
        };
        // SAFETY: all-zero is a valid event.
        let mut e: bindings::iw_cm_event = unsafe { core::mem::zeroed() };
        e.event = kind;
        e.status = ev.status;
        if let Some((l, r)) = ev.addrs {
            e.local_addr = l.0;
            e.remote_addr = r.0;
        }
        if !ev.pdata.is_empty() {
            e.private_data = ev.pdata.as_ptr().cast_mut().cast();
            e.private_data_len = ev.pdata.len().min(255) as u8;
        }
        e.ird = ev.ird;
        e.ord = ev.ord;
        if let Some(k) = key {
            // A number, never dereferenced (see `RequestKey`).
            e.provider_data = k.0.get() as *mut kernel::ffi::c_void;
        }
        let handler = self.raw().event_handler.ok_or(EINVAL)?;
        // SAFETY: the CM's handler for this id; the event and its private
        // data live for the call (the CM copies what it keeps).
        let r = unsafe { handler(self.ptr.as_ptr(), &mut e) };
        if r != 0 {
            return Err(Error::from_errno(r));
        }
        Ok(())
    }

    /// Stores `p` as the id's provider data (a listener).
    pub(in crate::kif) fn set_provider<P: Send + Sync>(&self, p: Arc<P>) {
        // SAFETY: we hold a reference; the CM does not touch provider data
        // of ids the driver set up.
        unsafe { (*self.ptr.as_ptr()).provider_data = Arc::into_raw(p).cast_mut().cast() };
    }
}

/// Takes the provider data of a CM id (set by [`CmId::set_provider`]).
///
/// # Safety
///
/// `p` is a live id whose provider data is null or an `Arc<P>` pointer.
pub(in crate::kif) unsafe fn take_provider<P: Send + Sync>(
    p: *mut bindings::iw_cm_id,
) -> Option<Arc<P>> {
    // SAFETY: per the contract.
    unsafe {
        let d = (*p).provider_data;
        (*p).provider_data = core::ptr::null_mut();
        (!d.is_null()).then(|| Arc::from_raw(d.cast::<P>()))
    }
}

/// Takes the key of the connect request a CM id was made for (see
/// [`RequestKey`]; the CM copied it from the request's event).
///
/// # Safety
///
/// `p` is a live id that the CM made for a connect request.
pub(in crate::kif) unsafe fn take_request_key(p: *mut bindings::iw_cm_id) -> Option<RequestKey> {
    // SAFETY: per the contract.
    unsafe {
        let d = (*p).provider_data;
        (*p).provider_data = core::ptr::null_mut();
        NonZeroUsize::new(d as usize).map(RequestKey)
    }
}

impl Clone for CmId {
    fn clone(&self) -> Self {
        // SAFETY: we hold a reference, so the id is live; the new reference
        // is owned by the clone.
        unsafe {
            if let Some(f) = (*self.ptr.as_ptr()).add_ref {
                f(self.ptr.as_ptr());
            }
        }
        // INVARIANT: the reference taken just above.
        Self { ptr: self.ptr }
    }
}

impl Drop for CmId {
    fn drop(&mut self) {
        // SAFETY: we own one reference.
        unsafe {
            if let Some(f) = (*self.ptr.as_ptr()).rem_ref {
                f(self.ptr.as_ptr());
            }
        }
    }
}
