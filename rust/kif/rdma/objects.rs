// SPDX-License-Identifier: GPL-2.0

//! Trampolines for the per-object verbs: CQs, QPs, SRQs and MRs. Each
//! object's driver state lives in a slot after the core object (CQ, QP,
//! SRQ: allocated by the core) or in a `KBox` with the core object at its
//! head (MR: allocated by the driver).

use super::wr::{fill_wc, MrHandle};
use super::*;

/// Driver state of a CQ, after its `ib_cq`.
pub(super) struct CqSlot<T: Driver> {
    drv: Arc<T::Cq>,
    handle: CqHandle,
}

/// Driver state of a QP, after its `ib_qp`.
pub(super) struct QpSlot<T: Driver> {
    drv: Arc<T::Qp>,
    handle: QpHandle,
    cm: Arc<CmRefs>,
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
    count: crate::kif::compat::sync::SpinLockIrq<u32>,
    #[pin]
    zero: CondVar,
}

impl CmRefs {
    fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                count <- crate::new_spinlock_irq!(0),
                zero <- new_condvar!(),
            }),
            GFP_KERNEL,
        )
    }

    fn get(&self) {
        *self.count.lock() += 1;
    }

    fn put(&self) {
        let mut c = self.count.lock();
        if *c == 0 {
            pr_warn!("rsiw: iWARP CM dropped a QP reference it did not hold\n");
            return;
        }
        *c -= 1;
        if *c == 0 {
            self.zero.notify_all();
        }
    }

    /// Sleeps until the CM holds no reference.
    fn wait_zero(&self) {
        let mut c = self.count.lock();
        while *c != 0 {
            self.zero.wait(&mut c);
        }
    }
}

/// Driver state of an SRQ, after its `ib_srq`.
pub(super) struct SrqSlot<T: Driver> {
    drv: Arc<T::Srq>,
    handle: SrqHandle,
}

/// An MR: the core object followed by the driver state.
#[repr(C)]
struct MrObj<T: Driver> {
    ib: bindings::ib_mr,
    drv: T::Mr,
}

/// The slot of a core object initialised by its create trampoline.
///
/// # Safety
///
/// `ib` is a live core object whose slot of type `D` was written.
unsafe fn slot<'a, B, D>(ib: *mut B) -> &'a D {
    // SAFETY: per the contract.
    unsafe { &(*obj_ptr::<B, D>(ib)).drv }
}

/// The driver state of a PD.
///
/// # Safety
///
/// `pd` is a live PD of a `T` device.
unsafe fn pd_of<'a, T: Driver>(pd: *mut bindings::ib_pd) -> &'a T::Pd {
    // SAFETY: per the contract, `alloc_pd` wrote the slot.
    unsafe { slot::<_, T::Pd>(pd) }
}

/// The driver state of a CQ, if `cq` is non-null.
///
/// # Safety
///
/// `cq` is null or a live CQ of a `T` device.
unsafe fn cq_of<'a, T: Driver>(cq: *mut bindings::ib_cq) -> Option<&'a Arc<T::Cq>> {
    // SAFETY: per the contract.
    (!cq.is_null()).then(|| unsafe { &slot::<_, CqSlot<T>>(cq).drv })
}

/// The driver state of an SRQ, if `srq` is non-null.
///
/// # Safety
///
/// `srq` is null or a live SRQ of a `T` device.
unsafe fn srq_of<'a, T: Driver>(srq: *mut bindings::ib_srq) -> Option<&'a Arc<T::Srq>> {
    // SAFETY: per the contract.
    (!srq.is_null()).then(|| unsafe { &slot::<_, SrqSlot<T>>(srq).drv })
}

/// Runs `f` on the driver state of the MR a kernel consumer named in a
/// REG_MR work request.
pub fn with_mr<T: Driver, R>(h: MrHandle, f: impl FnOnce(&T::Mr) -> R) -> R {
    // SAFETY: kernel consumers post REG_MR only for MRs they allocated with
    // `alloc_mr` on this device (an `MrObj<T>`), and keep them alive until
    // the work request completes (RDMA core contract).
    f(unsafe { &(*h.0.as_ptr().cast::<MrObj<T>>()).drv })
}

/// The user context of a verb's udata, if it came from user space.
///
/// # Safety
///
/// `udata` is null or the udata of the current verb call.
unsafe fn user_ctx(udata: *mut bindings::ib_udata) -> Option<UserCtx> {
    // SAFETY: per the contract.
    let p = unsafe { glue::rsiw_udata_ucontext(udata) };
    NonNull::new(p).map(|ptr| UserCtx { ptr })
}

/// RDMA core entry point `create_cq`.
///
/// # Safety
///
/// Called by the RDMA core with a fresh CQ of a `T` device.
pub(super) unsafe extern "C" fn create_cq<T: Driver>(
    cq: *mut bindings::ib_cq,
    attr: *const bindings::ib_cq_init_attr,
    attrs: *mut bindings::uverbs_attr_bundle,
) -> kernel::ffi::c_int {
    from_result(|| {
        // SAFETY: live arguments of this call.
        let (dev, attr, udata) = unsafe {
            (
                drv_of::<T>((*cq).device),
                &*attr,
                glue::rsiw_bundle_udata(attrs),
            )
        };
        let handle = CqHandle::new(NonNull::new(cq).ok_or(EINVAL)?)?;
        let args = CreateCq {
            handle: handle.clone(),
            cqe: attr.cqe,
            flags: attr.flags,
            // SAFETY: `udata` is this call's.
            user: unsafe { user_ctx(udata) },
            // SAFETY: as above.
            udata: unsafe { Udata::from_raw(udata)? },
        };
        let drv = T::create_cq(dev, args)?;
        // SAFETY: the core allocated `size_ib_cq` octets; the slot is
        // written once. `cqe` is the size the consumer sees.
        unsafe {
            (*cq).cqe = attr.cqe.next_power_of_two() as i32;
            addr_of_mut!((*obj_ptr::<_, CqSlot<T>>(cq)).drv).write(CqSlot { drv, handle });
        }
        Ok(0)
    })
}

/// RDMA core entry point `destroy_cq`.
///
/// # Safety
///
/// Called by the RDMA core once for a CQ `create_cq` set up.
pub(super) unsafe extern "C" fn destroy_cq<T: Driver>(
    cq: *mut bindings::ib_cq,
    _udata: *mut bindings::ib_udata,
) -> kernel::ffi::c_int {
    // SAFETY: the slot was written by `create_cq` and is read out once.
    let s = unsafe { ptr::read(addr_of_mut!((*obj_ptr::<_, CqSlot<T>>(cq)).drv)) };
    s.handle.0.revoke();
    // SAFETY: live CQ of a `T` device.
    T::destroy_cq(unsafe { drv_of::<T>((*cq).device) }, s.drv);
    0
}

/// RDMA core entry point `poll_cq`.
///
/// # Safety
///
/// Called by kernel consumers through the core with room for `n` WCs.
pub(super) unsafe extern "C" fn poll_cq<T: Driver>(
    cq: *mut bindings::ib_cq,
    n: kernel::ffi::c_int,
    wc: *mut bindings::ib_wc,
) -> kernel::ffi::c_int {
    let max = usize::try_from(n).unwrap_or(0);
    let mut got = 0usize;
    // SAFETY: live CQ whose slot `create_cq` wrote.
    let s = unsafe { slot::<_, CqSlot<T>>(cq) };
    T::poll_cq(&s.drv, max, &mut |c| {
        if got < max {
            // SAFETY: `wc` has room for `n` entries and `got < n`.
            fill_wc(unsafe { &mut *wc.add(got) }, c);
            got += 1;
        }
    });
    got as i32
}

/// RDMA core entry point `req_notify_cq`.
///
/// # Safety
///
/// Called by kernel consumers through the core on a live CQ.
pub(super) unsafe extern "C" fn req_notify_cq<T: Driver>(
    cq: *mut bindings::ib_cq,
    flags: bindings::ib_cq_notify_flags,
) -> kernel::ffi::c_int {
    // SAFETY: live CQ whose slot `create_cq` wrote.
    let s = unsafe { slot::<_, CqSlot<T>>(cq) };
    let solicited = flags & bindings::ib_cq_notify_flags_IB_CQ_SOLICITED_MASK
        == bindings::ib_cq_notify_flags_IB_CQ_SOLICITED;
    let missed = flags & bindings::ib_cq_notify_flags_IB_CQ_REPORT_MISSED_EVENTS != 0;
    T::req_notify_cq(&s.drv, solicited, missed).min(i32::MAX as u32) as i32
}

/// RDMA core entry point `create_qp`.
///
/// # Safety
///
/// Called by the RDMA core with a fresh QP of a `T` device.
pub(super) unsafe extern "C" fn create_qp<T: Driver>(
    qp: *mut bindings::ib_qp,
    attr: *mut bindings::ib_qp_init_attr,
    udata: *mut bindings::ib_udata,
) -> kernel::ffi::c_int {
    from_result(|| {
        // SAFETY: live arguments of this call; the core set `pd` and
        // `device` of the fresh QP before calling.
        let (dev, a, pd) = unsafe { (drv_of::<T>((*qp).device), &*attr, pd_of::<T>((*qp).pd)) };
        let init = QpInit {
            max_send_wr: a.cap.max_send_wr,
            max_recv_wr: a.cap.max_recv_wr,
            max_send_sge: a.cap.max_send_sge,
            max_recv_sge: a.cap.max_recv_sge,
            max_inline: a.cap.max_inline_data,
            rc: a.qp_type == bindings::ib_qp_type_IB_QPT_RC,
            sig_all: a.sq_sig_type == bindings::ib_sig_type_IB_SIGNAL_ALL_WR,
            bad_sig_type: a.sq_sig_type != bindings::ib_sig_type_IB_SIGNAL_ALL_WR
                && a.sq_sig_type != bindings::ib_sig_type_IB_SIGNAL_REQ_WR,
            create_flags: a.create_flags,
        };
        let handle = QpHandle::new(NonNull::new(qp).ok_or(EINVAL)?)?;
        // SAFETY: the CQs and SRQ named by the consumer are live objects of
        // this device (the core resolved them); `udata` is this call's.
        let args = unsafe {
            CreateQp::<T> {
                handle: handle.clone(),
                pd,
                send_cq: cq_of::<T>(a.send_cq),
                recv_cq: cq_of::<T>(a.recv_cq),
                srq: srq_of::<T>(a.srq),
                init,
                user: user_ctx(udata),
                udata: Udata::from_raw(udata)?,
            }
        };
        let cm = CmRefs::new()?;
        let (drv, qpn) = T::create_qp(dev, args)?;
        // SAFETY: the core allocated `size_ib_qp` octets; the slot is
        // written once.
        unsafe {
            (*qp).qp_num = qpn;
            addr_of_mut!((*obj_ptr::<_, QpSlot<T>>(qp)).drv).write(QpSlot { drv, handle, cm });
        }
        Ok(0)
    })
}

/// RDMA core entry point `modify_qp`.
///
/// # Safety
///
/// Called by the RDMA core on a live QP.
pub(super) unsafe extern "C" fn modify_qp<T: Driver>(
    qp: *mut bindings::ib_qp,
    attr: *mut bindings::ib_qp_attr,
    mask: kernel::ffi::c_int,
    _udata: *mut bindings::ib_udata,
) -> kernel::ffi::c_int {
    from_result(|| {
        // SAFETY: live arguments of this call.
        let (s, a) = unsafe { (slot::<_, QpSlot<T>>(qp), &*attr) };
        let mask = mask as u32;
        // IB_QP_ATTR_STANDARD_BITS: every attribute up to IB_QP_RATE_LIMIT.
        let standard = (bindings::ib_qp_attr_mask_IB_QP_RATE_LIMIT << 1) - 1;
        let m = QpModify {
            state: if mask & bindings::ib_qp_attr_mask_IB_QP_STATE != 0 {
                Some(IbQpState::from_raw(a.qp_state).ok_or(EINVAL)?)
            } else {
                None
            },
            access: (mask & bindings::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS != 0)
                .then_some(a.qp_access_flags as u32),
            nonstandard: mask & !standard != 0,
        };
        T::modify_qp(&s.drv, &m)?;
        Ok(0)
    })
}

/// RDMA core entry point `query_qp`.
///
/// # Safety
///
/// Called by the RDMA core on a live QP with valid output buffers.
pub(super) unsafe extern "C" fn query_qp<T: Driver>(
    qp: *mut bindings::ib_qp,
    attr: *mut bindings::ib_qp_attr,
    _mask: kernel::ffi::c_int,
    init: *mut bindings::ib_qp_init_attr,
) -> kernel::ffi::c_int {
    from_result(|| {
        if attr.is_null() || init.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: live QP; the netdev reference is ours to drop.
        let nd =
            unsafe { NetDevRef::from_held(bindings::ib_device_get_netdev((*qp).device, PORT)) }
                .ok_or(ENODEV)?;
        // SAFETY: live QP whose slot `create_qp` wrote.
        let s = unsafe { slot::<_, QpSlot<T>>(qp) };
        let q = T::query_qp(&s.drv, &nd.dev());
        // SAFETY: valid output buffers (checked non-null above).
        let (a, i, ib) = unsafe { (&mut *attr, &mut *init, &*qp) };
        a.qp_state = q.state.raw();
        a.cur_qp_state = q.state.raw();
        a.cap = bindings::ib_qp_cap {
            max_send_wr: q.max_send_wr,
            max_recv_wr: q.max_recv_wr,
            max_send_sge: q.max_send_sge,
            max_recv_sge: q.max_recv_sge,
            max_inline_data: q.max_inline,
            max_rdma_ctxs: 0,
        };
        a.path_mtu = q.path_mtu.raw();
        a.max_rd_atomic = q.max_rd_atomic;
        a.max_dest_rd_atomic = q.max_dest_rd_atomic;
        a.qp_access_flags = q.access as i32;
        i.qp_type = ib.qp_type;
        i.send_cq = ib.send_cq;
        i.recv_cq = ib.recv_cq;
        i.srq = ib.srq;
        i.cap = a.cap;
        Ok(0)
    })
}

/// RDMA core entry point `destroy_qp`.
///
/// # Safety
///
/// Called by the RDMA core once for a QP `create_qp` set up.
pub(super) unsafe extern "C" fn destroy_qp<T: Driver>(
    qp: *mut bindings::ib_qp,
    _udata: *mut bindings::ib_udata,
) -> kernel::ffi::c_int {
    // SAFETY: live QP of a `T` device whose slot `create_qp` wrote.
    let (dev, s) = unsafe { (drv_of::<T>((*qp).device), slot::<_, QpSlot<T>>(qp)) };
    let cm = s.cm.clone();
    // The slot keeps its own reference to the driver state while the CM may
    // still call `modify_qp`.
    T::destroy_qp(dev, s.drv.clone());
    // The connection is gone or going: the CM drops its references when it
    // gets the CLOSE (or a failed CONNECT_REPLY), or when its id is
    // destroyed. Until then it may still use this `ib_qp`.
    cm.wait_zero();
    // SAFETY: the slot was written by `create_qp` and is read out once;
    // nobody uses the QP any more (its owner destroys it, the CM let go).
    let s = unsafe { ptr::read(addr_of_mut!((*obj_ptr::<_, QpSlot<T>>(qp)).drv)) };
    s.handle.0.revoke();
    0
}

/// RDMA core entry point `post_send`.
///
/// # Safety
///
/// Called by consumers through the core on a live QP with a valid list.
pub(super) unsafe extern "C" fn post_send<T: Driver>(
    qp: *mut bindings::ib_qp,
    wr: *const bindings::ib_send_wr,
    bad: *mut *const bindings::ib_send_wr,
) -> kernel::ffi::c_int {
    // SAFETY: live QP whose slot `create_qp` wrote; `wr` per the contract.
    let (s, mut wrs) = unsafe { (slot::<_, QpSlot<T>>(qp), SendWrs::new(wr)) };
    match T::post_send(&s.drv, &mut wrs) {
        Ok(()) => 0,
        Err(e) => {
            if !bad.is_null() {
                // SAFETY: `bad` is the consumer's output pointer.
                unsafe { *bad = wrs.current() };
            }
            e.to_errno()
        }
    }
}

/// RDMA core entry point `post_recv`.
///
/// # Safety
///
/// Called by consumers through the core on a live QP with a valid list.
pub(super) unsafe extern "C" fn post_recv<T: Driver>(
    qp: *mut bindings::ib_qp,
    wr: *const bindings::ib_recv_wr,
    bad: *mut *const bindings::ib_recv_wr,
) -> kernel::ffi::c_int {
    // SAFETY: as in `post_send`.
    let (s, mut wrs) = unsafe { (slot::<_, QpSlot<T>>(qp), RecvWrs::new(wr)) };
    match T::post_recv(&s.drv, &mut wrs) {
        Ok(()) => 0,
        Err(e) => {
            if !bad.is_null() {
                // SAFETY: `bad` is the consumer's output pointer.
                unsafe { *bad = wrs.current() };
            }
            e.to_errno()
        }
    }
}

/// RDMA core entry point `create_srq`.
///
/// # Safety
///
/// Called by the RDMA core with a fresh SRQ of a `T` device.
pub(super) unsafe extern "C" fn create_srq<T: Driver>(
    srq: *mut bindings::ib_srq,
    init: *mut bindings::ib_srq_init_attr,
    udata: *mut bindings::ib_udata,
) -> kernel::ffi::c_int {
    from_result(|| {
        // SAFETY: live arguments of this call; the core set `pd`.
        let (dev, a, pd) = unsafe {
            (
                drv_of::<T>((*srq).device),
                &mut *init,
                pd_of::<T>((*srq).pd),
            )
        };
        let handle = SrqHandle::new(NonNull::new(srq).ok_or(EINVAL)?)?;
        // SAFETY: `udata` is this call's.
        let args = unsafe {
            CreateSrq::<T> {
                handle: handle.clone(),
                pd,
                attr: SrqAttr {
                    max_wr: a.attr.max_wr,
                    max_sge: a.attr.max_sge,
                    limit: a.attr.srq_limit,
                },
                basic: a.srq_type == bindings::ib_srq_type_IB_SRQT_BASIC,
                user: user_ctx(udata),
                udata: Udata::from_raw(udata)?,
            }
        };
        let drv = T::create_srq(dev, args)?;
        a.attr.max_wr = T::query_srq(&drv).max_wr;
        // SAFETY: the core allocated `size_ib_srq` octets; written once.
        unsafe {
            addr_of_mut!((*obj_ptr::<_, SrqSlot<T>>(srq)).drv).write(SrqSlot { drv, handle })
        };
        Ok(0)
    })
}

/// RDMA core entry point `modify_srq`.
///
/// # Safety
///
/// Called by the RDMA core on a live SRQ.
pub(super) unsafe extern "C" fn modify_srq<T: Driver>(
    srq: *mut bindings::ib_srq,
    attr: *mut bindings::ib_srq_attr,
    mask: bindings::ib_srq_attr_mask,
    _udata: *mut bindings::ib_udata,
) -> kernel::ffi::c_int {
    from_result(|| {
        // SAFETY: live arguments of this call.
        let (s, a) = unsafe { (slot::<_, SrqSlot<T>>(srq), &*attr) };
        let max_wr = (mask & bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR != 0).then_some(a.max_wr);
        let limit = (mask & bindings::ib_srq_attr_mask_IB_SRQ_LIMIT != 0).then_some(a.srq_limit);
        T::modify_srq(&s.drv, max_wr, limit)?;
        Ok(0)
    })
}

/// RDMA core entry point `query_srq`.
///
/// # Safety
///
/// Called by the RDMA core on a live SRQ with a valid output buffer.
pub(super) unsafe extern "C" fn query_srq<T: Driver>(
    srq: *mut bindings::ib_srq,
    attr: *mut bindings::ib_srq_attr,
) -> kernel::ffi::c_int {
    // SAFETY: live arguments of this call.
    let (s, a) = unsafe { (slot::<_, SrqSlot<T>>(srq), &mut *attr) };
    let q = T::query_srq(&s.drv);
    a.max_wr = q.max_wr;
    a.max_sge = q.max_sge;
    a.srq_limit = q.limit;
    0
}

/// RDMA core entry point `destroy_srq`.
///
/// # Safety
///
/// Called by the RDMA core once for an SRQ `create_srq` set up.
pub(super) unsafe extern "C" fn destroy_srq<T: Driver>(
    srq: *mut bindings::ib_srq,
    _udata: *mut bindings::ib_udata,
) -> kernel::ffi::c_int {
    // SAFETY: the slot was written by `create_srq` and is read out once.
    let s = unsafe { ptr::read(addr_of_mut!((*obj_ptr::<_, SrqSlot<T>>(srq)).drv)) };
    s.handle.0.revoke();
    // SAFETY: live SRQ of a `T` device.
    T::destroy_srq(unsafe { drv_of::<T>((*srq).device) }, s.drv);
    0
}

/// RDMA core entry point `post_srq_recv`.
///
/// # Safety
///
/// Called by consumers through the core on a live SRQ with a valid list.
pub(super) unsafe extern "C" fn post_srq_recv<T: Driver>(
    srq: *mut bindings::ib_srq,
    wr: *const bindings::ib_recv_wr,
    bad: *mut *const bindings::ib_recv_wr,
) -> kernel::ffi::c_int {
    // SAFETY: as in `post_send`.
    let (s, mut wrs) = unsafe { (slot::<_, SrqSlot<T>>(srq), RecvWrs::new(wr)) };
    match T::post_srq_recv(&s.drv, &mut wrs) {
        Ok(()) => 0,
        Err(e) => {
            if !bad.is_null() {
                // SAFETY: `bad` is the consumer's output pointer.
                unsafe { *bad = wrs.current() };
            }
            e.to_errno()
        }
    }
}

/// Boxes an MR for the core.
fn new_mr<T: Driver>(r: Result<(T::Mr, u32)>) -> *mut bindings::ib_mr {
    let (drv, key) = match r {
        Ok(v) => v,
        Err(e) => return e.to_ptr(),
    };
    let obj = MrObj::<T> {
        // SAFETY: all-zero is a valid `ib_mr`; the core fills in the rest.
        ib: unsafe { core::mem::zeroed() },
        drv,
    };
    match KBox::new(obj, GFP_KERNEL) {
        Ok(b) => {
            let p = KBox::into_raw(b);
            // SAFETY: `p` is a valid, exclusively owned `MrObj`.
            unsafe {
                (*p).ib.lkey = key;
                (*p).ib.rkey = key;
                addr_of_mut!((*p).ib)
            }
        }
        Err(e) => Error::from(e).to_ptr(),
    }
}

/// RDMA core entry point `reg_user_mr`.
///
/// # Safety
///
/// Called by the RDMA core with a live PD of a `T` device.
pub(super) unsafe extern "C" fn reg_user_mr<T: Driver>(
    pd: *mut bindings::ib_pd,
    start: u64,
    len: u64,
    iova: u64,
    access: kernel::ffi::c_int,
    udata: *mut bindings::ib_udata,
) -> *mut bindings::ib_mr {
    let r = (|| {
        // SAFETY: live PD; `udata` is this call's.
        let (dev, p, udata) = unsafe {
            (
                drv_of::<T>((*pd).device),
                pd_of::<T>(pd),
                Udata::from_raw(udata)?,
            )
        };
        // SAFETY: live PD.
        let dev_ptr = unsafe { (*pd).device };
        let pinner = Pinner {
            dev: NonNull::new(dev_ptr).ok_or(EINVAL)?,
        };
        let args = RegUserMr::<T> {
            pd: p,
            pinner,
            start,
            len,
            iova,
            access: access as u32,
            udata,
        };
        T::reg_user_mr(dev, args)
    })();
    new_mr::<T>(r)
}

/// RDMA core entry point `get_dma_mr`.
///
/// # Safety
///
/// Called by the RDMA core with a live PD of a `T` device.
pub(super) unsafe extern "C" fn get_dma_mr<T: Driver>(
    pd: *mut bindings::ib_pd,
    access: kernel::ffi::c_int,
) -> *mut bindings::ib_mr {
    // SAFETY: live PD.
    let (dev, p) = unsafe { (drv_of::<T>((*pd).device), pd_of::<T>(pd)) };
    new_mr::<T>(T::get_dma_mr(dev, p, access as u32))
}

/// RDMA core entry point `alloc_mr`.
///
/// # Safety
///
/// Called by the RDMA core with a live PD of a `T` device.
pub(super) unsafe extern "C" fn alloc_mr<T: Driver>(
    pd: *mut bindings::ib_pd,
    mr_type: bindings::ib_mr_type,
    max_sg: u32,
) -> *mut bindings::ib_mr {
    if mr_type != bindings::ib_mr_type_IB_MR_TYPE_MEM_REG {
        return crate::kif::compat::error::eopnotsupp().to_ptr();
    }
    // SAFETY: live PD.
    let (dev, p) = unsafe { (drv_of::<T>((*pd).device), pd_of::<T>(pd)) };
    new_mr::<T>(T::alloc_mr(dev, p, max_sg))
}

/// `set_page` callback of `ib_sg_to_pages`.
///
/// # Safety
///
/// Called by `ib_sg_to_pages` with the MR `map_mr_sg` passed.
unsafe extern "C" fn set_page<T: Driver>(
    mr: *mut bindings::ib_mr,
    addr: u64,
) -> kernel::ffi::c_int {
    // SAFETY: the MR is an `MrObj<T>` (see `map_mr_sg`).
    let m = unsafe { &(*mr.cast::<MrObj<T>>()).drv };
    from_result(|| T::map_mr_page(m, addr).map(|()| 0))
}

/// RDMA core entry point `map_mr_sg`.
///
/// # Safety
///
/// Called by kernel consumers through the core with an MR of this device
/// and a valid scatterlist.
pub(super) unsafe extern "C" fn map_mr_sg<T: Driver>(
    mr: *mut bindings::ib_mr,
    sg: *mut bindings::scatterlist,
    n: kernel::ffi::c_int,
    off: *mut kernel::ffi::c_uint,
) -> kernel::ffi::c_int {
    // SAFETY: every MR of this device is an `MrObj<T>`.
    let m = unsafe { &(*mr.cast::<MrObj<T>>()).drv };
    if let Err(e) = T::map_mr_begin(m) {
        return e.to_errno();
    }
    // SAFETY: per the contract; `set_page` only touches the driver state.
    let r = unsafe { bindings::ib_sg_to_pages(mr, sg, n, off, Some(set_page::<T>)) };
    if r > 0 {
        // SAFETY: `ib_sg_to_pages` set iova, length and page size.
        let (iova, length, ps) = unsafe { ((*mr).iova, (*mr).length, (*mr).page_size) };
        T::map_mr_end(m, iova, length, ps);
    }
    r
}

/// RDMA core entry point `rereg_user_mr`.
///
/// # Safety
///
/// Called by the RDMA core with a live user MR of a `T` device, whose
/// uobject it holds for writing, and a live PD (the new or the MR's own).
pub(super) unsafe extern "C" fn rereg_user_mr<T: Driver>(
    mr: *mut bindings::ib_mr,
    flags: kernel::ffi::c_int,
    start: u64,
    len: u64,
    iova: u64,
    access: kernel::ffi::c_int,
    pd: *mut bindings::ib_pd,
    udata: *mut bindings::ib_udata,
) -> *mut bindings::ib_mr {
    let f = flags as u32;
    let r = (|| {
        // SAFETY: per the contract; every MR of this device is an
        // `MrObj<T>`, every PD a `T::Pd` object; `udata` is this call's.
        let (dev, old, p, udata, dev_ptr) = unsafe {
            (
                drv_of::<T>((*mr).device),
                &(*mr.cast::<MrObj<T>>()).drv,
                pd_of::<T>(pd),
                Udata::from_raw(udata)?,
                (*pd).device,
            )
        };
        let args = ReregUserMr::<T> {
            trans: f & bindings::ib_mr_rereg_flags_IB_MR_REREG_TRANS != 0,
            new_pd: f & bindings::ib_mr_rereg_flags_IB_MR_REREG_PD != 0,
            new_access: f & bindings::ib_mr_rereg_flags_IB_MR_REREG_ACCESS != 0,
            pd: p,
            pinner: Pinner {
                dev: NonNull::new(dev_ptr).ok_or(EINVAL)?,
            },
            start,
            len,
            iova,
            access: access as u32,
            udata,
        };
        T::rereg_user_mr(dev, old, args)
    })();
    match r {
        Ok(None) => core::ptr::null_mut(),
        Ok(Some(v)) => new_mr::<T>(Ok(v)),
        Err(e) => e.to_ptr(),
    }
}

/// RDMA core entry point `dereg_mr`.
///
/// # Safety
///
/// Called by the RDMA core once for an MR this driver made.
pub(super) unsafe extern "C" fn dereg_mr<T: Driver>(
    mr: *mut bindings::ib_mr,
    _udata: *mut bindings::ib_udata,
) -> kernel::ffi::c_int {
    // SAFETY: the MR came from `KBox::into_raw` in `new_mr`.
    let b = unsafe { KBox::from_raw(mr.cast::<MrObj<T>>()) };
    // SAFETY: `device` of a registered MR is its live device.
    let dev = unsafe { drv_of::<T>(b.ib.device) };
    let MrObj { drv, .. } = KBox::into_inner(b);
    from_result(|| T::dereg_mr(dev, drv).map(|()| 0))
}

/// RDMA core entry point `iw_connect`.
///
/// # Safety
///
/// Called by the iWARP CM with a live id of a `T` device and parameters.
pub(super) unsafe extern "C" fn iw_connect<T: Driver>(
    id: *mut bindings::iw_cm_id,
    p: *mut bindings::iw_cm_conn_param,
) -> kernel::ffi::c_int {
    from_result(|| {
        // SAFETY: live arguments of this call.
        let (dev, id, p) = unsafe {
            (
                drv_of::<T>((*id).device),
                CmId::get(id)?,
                ConnParam::from_raw(p)?,
            )
        };
        T::iw_connect(dev, id, p).map(|()| 0)
    })
}

/// RDMA core entry point `iw_accept`.
///
/// # Safety
///
/// Called by the iWARP CM with the id it made for a connect request, whose
/// provider data is the endpoint of that request.
pub(super) unsafe extern "C" fn iw_accept<T: Driver>(
    id: *mut bindings::iw_cm_id,
    p: *mut bindings::iw_cm_conn_param,
) -> kernel::ffi::c_int {
    from_result(|| {
        // SAFETY: per the contract.
        let cep = unsafe { super::iwcm::take_provider::<T::Cep>(id) }.ok_or(EINVAL)?;
        // SAFETY: live arguments of this call.
        let (dev, id, p) = unsafe {
            (
                drv_of::<T>((*id).device),
                CmId::get(id)?,
                ConnParam::from_raw(p)?,
            )
        };
        T::iw_accept(dev, cep, id, p).map(|()| 0)
    })
}

/// RDMA core entry point `iw_reject`.
///
/// # Safety
///
/// As for `iw_accept`; `pdata` holds `len` octets.
pub(super) unsafe extern "C" fn iw_reject<T: Driver>(
    id: *mut bindings::iw_cm_id,
    pdata: *const kernel::ffi::c_void,
    len: u8,
) -> kernel::ffi::c_int {
    from_result(|| {
        // SAFETY: per the contract.
        let cep = unsafe { super::iwcm::take_provider::<T::Cep>(id) }.ok_or(EINVAL)?;
        let pd: &[u8] = if pdata.is_null() {
            &[]
        } else {
            // SAFETY: per the contract.
            unsafe { core::slice::from_raw_parts(pdata.cast::<u8>(), len as usize) }
        };
        T::iw_reject(cep, pd).map(|()| 0)
    })
}

/// RDMA core entry point `iw_create_listen`.
///
/// # Safety
///
/// Called by the iWARP CM with a live id of a `T` device.
pub(super) unsafe extern "C" fn iw_create_listen<T: Driver>(
    id: *mut bindings::iw_cm_id,
    backlog: kernel::ffi::c_int,
) -> kernel::ffi::c_int {
    from_result(|| {
        // SAFETY: live id.
        let (dev, cid) = unsafe { (drv_of::<T>((*id).device), CmId::get(id)?) };
        let l = T::iw_create_listen(dev, cid.clone(), backlog)?;
        cid.set_provider(l);
        Ok(0)
    })
}

/// RDMA core entry point `iw_destroy_listen`.
///
/// # Safety
///
/// Called by the iWARP CM once for an id `iw_create_listen` set up.
pub(super) unsafe extern "C" fn iw_destroy_listen<T: Driver>(
    id: *mut bindings::iw_cm_id,
) -> kernel::ffi::c_int {
    // SAFETY: per the contract, the provider data is our listener.
    if let Some(l) = unsafe { super::iwcm::take_provider::<T::Listener>(id) } {
        T::iw_destroy_listen(l);
    }
    0
}

/// RDMA core entry point `iw_get_qp`.
///
/// # Safety
///
/// Called by the iWARP CM with a live device of `T`.
pub(super) unsafe extern "C" fn iw_get_qp<T: Driver>(
    ib: *mut bindings::ib_device,
    qpn: kernel::ffi::c_int,
) -> *mut bindings::ib_qp {
    // SAFETY: live device.
    let dev = unsafe { drv_of::<T>(ib) };
    T::iw_get_qp(dev, qpn as u32).map_or(ptr::null_mut(), |h| {
        h.token() as usize as *mut bindings::ib_qp
    })
}

/// RDMA core entry point `iw_add_ref`: the CM keeps a QP of a connection.
///
/// # Safety
///
/// Called by the iWARP CM with a live QP of a `T` device (its owner has
/// not destroyed it).
pub(super) unsafe extern "C" fn iw_add_ref<T: Driver>(qp: *mut bindings::ib_qp) {
    // SAFETY: per the contract, `create_qp` wrote the slot.
    unsafe { slot::<_, QpSlot<T>>(qp) }.cm.get();
}

/// RDMA core entry point `iw_rem_ref`: the CM lets go of a QP.
///
/// # Safety
///
/// Called by the iWARP CM for a QP it holds a reference on, which keeps
/// `destroy_qp` from returning and the slot alive during the call.
pub(super) unsafe extern "C" fn iw_rem_ref<T: Driver>(qp: *mut bindings::ib_qp) {
    // SAFETY: per the contract, the slot is alive until the count drops.
    // The clone keeps the counter alive after that: the wake-up may let
    // `destroy_qp` free the QP while `put` is still returning.
    let cm = unsafe { slot::<_, QpSlot<T>>(qp) }.cm.clone();
    cm.put();
}
