// SPDX-License-Identifier: GPL-2.0

//! Revocable handles to RDMA core objects (`ib_cq`, `ib_qp`, `ib_srq`) for
//! events and completion notifications. The RDMA core frees its object when
//! the destroy verb returns, while the driver's state may live on (the data
//! path may still hold a reference); so kif revokes the handle in the
//! destroy trampoline and every use checks it under a lock.

use core::ptr::NonNull;
use kernel::{bindings, prelude::*, sync::Arc};

use crate::kif::compat::sync::SpinLockIrq;

/// A pointer to a core object that kif can revoke.
///
/// # Invariants
///
/// While `ptr` holds `Some(p)`, `p` is a live core object: kif revokes the
/// pointer in the object's destroy entry point, before the core frees it.
#[pin_data]
pub(in crate::kif) struct Revocable<B> {
    #[pin]
    ptr: SpinLockIrq<Option<Raw<B>>>,
}

struct Raw<B>(NonNull<B>);

// SAFETY: a `Raw` is the address of a core object (`ib_cq`, `ib_qp`,
// `ib_srq`), owned by the RDMA core, not by the `Raw`. It lives inside a
// `Revocable`'s lock, moves between threads only with it and is used only
// under it, while the object is live (`Revocable`'s invariant); the calls
// made through it (the consumer's event and completion handlers) may be
// made from any thread and context.
unsafe impl<B> Send for Raw<B> {}

impl<B> Revocable<B> {
    /// A revocable pointer to `p`.
    ///
    /// # Safety
    ///
    /// `p` is a live core object that stays so until [`Self::revoke`].
    unsafe fn new(p: NonNull<B>) -> Result<Arc<Self>> {
        // INVARIANT: per the contract.
        Arc::pin_init(
            pin_init!(Self { ptr <- crate::new_spinlock_irq!(Some(Raw(p))) }),
            GFP_KERNEL,
        )
    }

    /// Runs `f` on the object if it still exists.
    fn with<R>(&self, f: impl FnOnce(NonNull<B>) -> R) -> Option<R> {
        let g = self.ptr.lock();
        g.as_ref().map(|r| f(r.0))
    }

    /// Forgets the object (it is about to be freed).
    pub(in crate::kif) fn revoke(&self) {
        *self.ptr.lock() = None;
    }
}

fn dispatch(
    handler: Option<unsafe extern "C" fn(*mut bindings::ib_event, *mut kernel::ffi::c_void)>,
    ctx: *mut kernel::ffi::c_void,
    mut ev: bindings::ib_event,
) {
    if let Some(h) = handler {
        // SAFETY: the consumer registered `h` with context `ctx` for this
        // object, which is alive (checked by the caller under its lock).
        unsafe { h(&mut ev, ctx) };
    }
}

/// A completion queue of the RDMA core.
#[derive(Clone)]
pub struct CqHandle(pub(in crate::kif) Arc<Revocable<bindings::ib_cq>>);

impl CqHandle {
    /// A handle of `p`.
    ///
    /// # Safety
    ///
    /// `p` is a live `ib_cq` that stays so until the handle is revoked
    /// (in its destroy entry point).
    pub(in crate::kif) unsafe fn new(p: NonNull<bindings::ib_cq>) -> Result<Self> {
        // SAFETY: per the contract.
        Ok(Self(unsafe { Revocable::new(p) }?))
    }

    /// Calls the consumer's completion handler (a completion event).
    pub fn notify(&self) {
        self.0.with(|p| {
            // SAFETY: the CQ is alive while the handle is not revoked.
            let cq = unsafe { &mut *p.as_ptr() };
            if let Some(h) = cq.comp_handler {
                // SAFETY: the consumer's handler for this CQ and context.
                unsafe { h(cq, cq.cq_context) };
            }
        });
    }

    /// Reports a CQ overflow (`IB_EVENT_CQ_ERR`).
    pub fn error(&self) {
        self.0.with(|p| {
            // SAFETY: the CQ is alive while the handle is not revoked (we
            // are inside `with`, under the revocation lock).
            let cq = unsafe { &mut *p.as_ptr() };
            let ev = bindings::ib_event {
                device: cq.device,
                element: bindings::ib_event__bindgen_ty_1 { cq: p.as_ptr() },
                event: bindings::ib_event_type_IB_EVENT_CQ_ERR,
            };
            dispatch(cq.event_handler, cq.cq_context, ev);
        });
    }
}

/// Asynchronous QP events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpEvent {
    /// The connection is established (`IB_EVENT_COMM_EST`).
    Established,
    /// A fatal error (`IB_EVENT_QP_FATAL`), e.g. a TERMINATE received.
    Fatal,
    /// The peer sent an invalid request (`IB_EVENT_QP_REQ_ERR`).
    RequestError,
    /// A protection error (`IB_EVENT_QP_ACCESS_ERR`).
    AccessError,
    /// The last WQE of an SRQ-attached QP is done.
    LastWqeReached,
}

/// A queue pair of the RDMA core.
#[derive(Clone)]
pub struct QpHandle(pub(in crate::kif) Arc<Revocable<bindings::ib_qp>>, u64);

impl QpHandle {
    /// A handle of `p`.
    ///
    /// # Safety
    ///
    /// `p` is a live `ib_qp` that stays so until the handle is revoked
    /// (in its destroy entry point).
    pub(in crate::kif) unsafe fn new(p: NonNull<bindings::ib_qp>) -> Result<Self> {
        // SAFETY: per the contract.
        Ok(Self(
            unsafe { Revocable::new(p) }?,
            p.as_ptr() as usize as u64,
        ))
    }

    /// The token that names this QP in a work completion
    /// ([`WorkCompletion::qp`](super::wc::WorkCompletion::qp)); a driver
    /// may keep it in its own completion records (siw's `siw_cqe.base_qp`
    /// is such a field).
    pub fn token(&self) -> u64 {
        self.1
    }

    /// The core QP, unless its destroy entry point has begun to free it.
    pub(in crate::kif) fn live(&self) -> Option<NonNull<bindings::ib_qp>> {
        self.0.with(|p| p)
    }

    /// Delivers an asynchronous event to the consumer.
    pub fn event(&self, e: QpEvent) {
        let event = match e {
            QpEvent::Established => bindings::ib_event_type_IB_EVENT_COMM_EST,
            QpEvent::Fatal => bindings::ib_event_type_IB_EVENT_QP_FATAL,
            QpEvent::RequestError => bindings::ib_event_type_IB_EVENT_QP_REQ_ERR,
            QpEvent::AccessError => bindings::ib_event_type_IB_EVENT_QP_ACCESS_ERR,
            QpEvent::LastWqeReached => bindings::ib_event_type_IB_EVENT_QP_LAST_WQE_REACHED,
        };
        self.0.with(|p| {
            // SAFETY: the QP is alive while the handle is not revoked.
            let qp = unsafe { &mut *p.as_ptr() };
            let ev = bindings::ib_event {
                device: qp.device,
                element: bindings::ib_event__bindgen_ty_1 { qp: p.as_ptr() },
                event,
            };
            dispatch(qp.event_handler, qp.qp_context, ev);
        });
    }
}

/// A shared receive queue of the RDMA core.
#[derive(Clone)]
pub struct SrqHandle(pub(in crate::kif) Arc<Revocable<bindings::ib_srq>>);

impl SrqHandle {
    /// A handle of `p`.
    ///
    /// # Safety
    ///
    /// `p` is a live `ib_srq` that stays so until the handle is revoked
    /// (in its destroy entry point).
    pub(in crate::kif) unsafe fn new(p: NonNull<bindings::ib_srq>) -> Result<Self> {
        // SAFETY: per the contract.
        Ok(Self(unsafe { Revocable::new(p) }?))
    }

    /// Reports that the SRQ fell below its limit.
    pub fn limit_reached(&self) {
        self.0.with(|p| {
            // SAFETY: the SRQ is alive while the handle is not revoked.
            let srq = unsafe { &mut *p.as_ptr() };
            let ev = bindings::ib_event {
                device: srq.device,
                element: bindings::ib_event__bindgen_ty_1 { srq: p.as_ptr() },
                event: bindings::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED,
            };
            dispatch(srq.event_handler, srq.srq_context, ev);
        });
    }
}
