// SPDX-License-Identifier: GPL-2.0

//! Where the driver's state of each RDMA object lives: in a slot after the
//! core's object, which the core allocates with the sizes the operations
//! table gives (user contexts, PDs, CQs, QPs, SRQs), or in a `KBox` with
//! the core's object at its head (MRs, which the driver allocates).

use core::ptr::NonNull;
use kernel::{new_condvar, prelude::*, sync::Arc, sync::CondVar};

use super::{
    handle::{CqHandle, QpHandle, SrqHandle},
    mmap::UserCtx,
    wr::MrHandle,
    Driver,
};
use crate::kif::{compat::sync::SpinLockIrq, glue};
use kernel::bindings;

/// A core object (`ib_pd`, `ib_ucontext`, ...) with the driver's slot
/// after it; the core allocates it with the size of `Obj<B, D>` (the
/// `size_ib_*` fields of the operations table), with `kzalloc`, whose
/// block is aligned to at least the largest power of two dividing its
/// size: a multiple of `Obj<B, D>`'s alignment, so aligned for it.
#[repr(C)]
pub(super) struct Obj<B, D> {
    ib: B,
    slot: D,
}

/// The slot of the core object `ib`, to be written.
pub(super) fn slot_ptr<B, D>(ib: *mut B) -> *mut D {
    // `ib` is the first field of the `repr(C)` `Obj<B, D>`; the caller
    // dereferences the result only under its own contract.
    let obj = ib.cast::<Obj<B, D>>();
    // SAFETY: no dereference: a place projection of a pointer into the
    // allocation the core made for `Obj<B, D>`.
    unsafe { core::ptr::addr_of_mut!((*obj).slot) }
}

/// The slot of a core object whose create operation wrote it.
///
/// # Safety
///
/// `ib` is a live core object whose slot of type `D` was written and
/// stays so for `'a`.
pub(super) unsafe fn slot<'a, B, D>(ib: *mut B) -> &'a D {
    // SAFETY: per the contract.
    unsafe { &*slot_ptr::<B, D>(ib) }
}

/// Driver state of a CQ, after its `ib_cq`.
pub(super) struct CqSlot<T: Driver> {
    pub(super) drv: Arc<T::Cq>,
    pub(super) handle: CqHandle,
}

/// Driver state of a QP, after its `ib_qp`.
pub(super) struct QpSlot<T: Driver> {
    pub(super) drv: Arc<T::Qp>,
    pub(super) handle: QpHandle,
    pub(super) cm: Arc<CmRefs>,
}

/// Driver state of an SRQ, after its `ib_srq`.
pub(super) struct SrqSlot<T: Driver> {
    pub(super) drv: Arc<T::Srq>,
    pub(super) handle: SrqHandle,
}

/// An MR: the core object followed by the driver state.
#[repr(C)]
pub(super) struct MrObj<T: Driver> {
    pub(super) ib: bindings::ib_mr,
    pub(super) drv: T::Mr,
}

/// The iWARP CM's references on a QP (`iw_add_ref`/`iw_rem_ref`). The CM
/// keeps the `ib_qp` pointer of a connection and uses it (e.g. to move the
/// QP to error when its id is destroyed) until it drops its reference, while
/// the RDMA core frees the `ib_qp` as soon as `destroy_qp` returns; so
/// `destroy_qp` waits until the count is zero. The CM takes and drops its
/// references under its `cm_id_priv->lock`, which its event handler also
/// takes in softirq context (a peer-to-peer RTR arriving), so the count's
/// lock must keep interrupts off as well.
#[pin_data]
pub(super) struct CmRefs {
    #[pin]
    count: SpinLockIrq<u32>,
    #[pin]
    zero: CondVar,
}

impl CmRefs {
    pub(super) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                count <- crate::new_spinlock_irq!(0),
                zero <- new_condvar!(),
            }),
            GFP_KERNEL,
        )
    }

    pub(super) fn get(&self) {
        *self.count.lock() += 1;
    }

    pub(super) fn put(&self) {
        let mut c = self.count.lock();
        if *c == 0 {
            pr_warn!("iWARP CM dropped a QP reference it did not hold\n");
            return;
        }
        *c -= 1;
        if *c == 0 {
            self.zero.notify_all();
        }
    }

    /// Sleeps until the CM holds no reference.
    pub(super) fn wait_zero(&self) {
        let mut c = self.count.lock();
        while *c != 0 {
            self.zero.wait(&mut c);
        }
    }
}

/// The driver state of a PD.
///
/// # Safety
///
/// `pd` is a live PD of a `T` device.
pub(super) unsafe fn pd_of<'a, T: Driver>(pd: *mut bindings::ib_pd) -> &'a T::Pd {
    // SAFETY: per the contract, `alloc_pd` wrote the slot.
    unsafe { slot::<_, T::Pd>(pd) }
}

/// The driver state of a CQ, if `cq` is non-null.
///
/// # Safety
///
/// `cq` is null or a live CQ of a `T` device.
pub(super) unsafe fn cq_of<'a, T: Driver>(cq: *mut bindings::ib_cq) -> Option<&'a Arc<T::Cq>> {
    // SAFETY: per the contract.
    (!cq.is_null()).then(|| unsafe { &slot::<_, CqSlot<T>>(cq).drv })
}

/// The driver state of an SRQ, if `srq` is non-null.
///
/// # Safety
///
/// `srq` is null or a live SRQ of a `T` device.
pub(super) unsafe fn srq_of<'a, T: Driver>(srq: *mut bindings::ib_srq) -> Option<&'a Arc<T::Srq>> {
    // SAFETY: per the contract.
    (!srq.is_null()).then(|| unsafe { &slot::<_, SrqSlot<T>>(srq).drv })
}

/// The driver state of an MR.
///
/// # Safety
///
/// `mr` is a live MR of a `T` device.
pub(super) unsafe fn mr_of<'a, T: Driver>(mr: *mut bindings::ib_mr) -> &'a T::Mr {
    // SAFETY: per the contract; every MR of a `T` device is an `MrObj<T>`
    // (made by `new_mr`), with the `ib_mr` at its head.
    unsafe { &(*mr.cast::<MrObj<T>>()).drv }
}

/// Runs `f` on the driver state of the MR a kernel consumer named in a
/// REG_MR work request.
pub fn with_mr<T: Driver, R>(h: MrHandle<T>, f: impl FnOnce(&T::Mr) -> R) -> R {
    // SAFETY: the MR is one of a device of `T` (type invariant of
    // `MrHandle<T>`), so an `MrObj<T>`, kept alive until the work request
    // completes.
    f(unsafe { mr_of::<T>(h.as_ptr()) })
}

/// The user context of a verb's udata, if it came from user space.
///
/// # Safety
///
/// `udata` is null or the udata of the current verb call.
pub(super) unsafe fn user_ctx<'a>(udata: *mut bindings::ib_udata) -> Option<UserCtx<'a>> {
    // SAFETY: per the contract.
    let p = unsafe { glue::rsiw_udata_ucontext(udata) };
    // SAFETY: the context of the current verb call, which the caller's
    // `'a` does not outlive.
    NonNull::new(p).map(|ptr| unsafe { UserCtx::from_raw(ptr) })
}
