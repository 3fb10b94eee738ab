// SPDX-License-Identifier: GPL-2.0

//! RDMA core device glue: allocation and registration of an `ib_device`
//! that embeds the driver's device state, the `ib_device_ops` table whose
//! entries trampoline into a [`Driver`], driver objects embedded in the core's
//! objects (`ib_ucontext`, `ib_pd`, ...), and the registry of live devices that
//! module unload walks.

use core::{
    marker::PhantomData,
    mem::size_of,
    ptr::{self, addr_of_mut, NonNull},
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{
    bindings,
    error::{from_result, to_result},
    new_condvar, new_mutex,
    prelude::*,
    str::CStr,
    sync::{CondVar, Mutex},
};

use kernel::sync::Arc;

pub mod handle;
pub mod iwcm;
pub mod mmap;
pub mod udata;
pub mod umem;
pub mod wr;

use crate::kif::{
    glue,
    net::{NetDev, NetDevRef},
    siw::Cqe,
};
use handle::{CqHandle, QpHandle, SrqHandle};
use iwcm::{CmId, ConnParam};
use mmap::UserCtx;
use udata::Udata;
use umem::Pinner;
use wr::{RecvWrs, SendWrs};

/// The RDMA driver id the stock user-space provider (libsiw) binds to.
const DRIVER_ID: bindings::rdma_driver_id = bindings::rdma_driver_id_RDMA_DRIVER_SIW;
/// User verbs ABI version of `include/uapi/rdma/siw-abi.h`.
const ABI_VERSION: u32 = 1;
/// rsiw devices have exactly one port.
pub const PORT: u32 = 1;

/// Device limits reported by `query_device`.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeviceCaps {
    /// Vendor id (IEEE OUI or the siw value).
    pub vendor_id: u32,
    /// Vendor part id; libsiw reads it back as the device id.
    pub vendor_part_id: u32,
    /// System image GUID (big endian as on the wire).
    pub sys_image_guid: u64,
    /// Largest memory region in octets.
    pub max_mr_size: u64,
    /// Supported page sizes.
    pub page_size_cap: u64,
    /// Queue pairs.
    pub max_qp: u32,
    /// Work requests per queue.
    pub max_qp_wr: u32,
    /// SGEs per send or receive work request.
    pub max_sge: u32,
    /// SGEs per RDMA Read.
    pub max_sge_rd: u32,
    /// Completion queues.
    pub max_cq: u32,
    /// Entries per completion queue.
    pub max_cqe: u32,
    /// Memory regions.
    pub max_mr: u32,
    /// Protection domains.
    pub max_pd: u32,
    /// Inbound RDMA Reads per QP (IRD).
    pub max_ird: u32,
    /// Outbound RDMA Reads per QP (ORD).
    pub max_ord: u32,
    /// Shared receive queues.
    pub max_srq: u32,
    /// Work requests per SRQ.
    pub max_srq_wr: u32,
    /// SGEs per SRQ work request.
    pub max_srq_sge: u32,
    /// Pages in one fast-registration list.
    pub max_fast_reg_page_list_len: u32,
    /// The device supports memory management extensions (REG_MR, LOCAL_INV).
    pub mem_mgt_extensions: bool,
}

/// Path MTU values of the RDMA core (`enum ib_mtu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mtu {
    /// 256 octets.
    M256,
    /// 512 octets.
    M512,
    /// 1024 octets.
    M1024,
    /// 2048 octets.
    M2048,
    /// 4096 octets.
    M4096,
}

impl Mtu {
    /// The largest path MTU that fits into a link MTU of `mtu` octets.
    pub fn from_link_mtu(mtu: u32) -> Self {
        match mtu {
            4096.. => Self::M4096,
            2048.. => Self::M2048,
            1024.. => Self::M1024,
            512.. => Self::M512,
            _ => Self::M256,
        }
    }

    fn raw(self) -> bindings::ib_mtu {
        match self {
            Self::M256 => bindings::ib_mtu_IB_MTU_256,
            Self::M512 => bindings::ib_mtu_IB_MTU_512,
            Self::M1024 => bindings::ib_mtu_IB_MTU_1024,
            Self::M2048 => bindings::ib_mtu_IB_MTU_2048,
            Self::M4096 => bindings::ib_mtu_IB_MTU_4096,
        }
    }
}

/// Port attributes reported by `query_port`.
#[derive(Clone, Copy, Debug)]
pub struct PortInfo {
    /// Link up (net device running with carrier).
    pub active: bool,
    /// Path MTU of the current link MTU.
    pub active_mtu: Mtu,
    /// Path MTU of the largest link MTU.
    pub max_mtu: Mtu,
    /// Number of GIDs.
    pub gid_tbl_len: u32,
}

/// Asynchronous port events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortEvent {
    /// The port became active.
    Active,
    /// The port went down.
    Error,
    /// The port address changed.
    AddressChange,
}

/// The verbs a driver implements; [`register_device`] wires them into the
/// RDMA core.
pub trait Driver: 'static + Sized {
    /// Per-device driver state.
    type Device: Send + Sync;
    /// Per-user-context driver state.
    type Ucontext: Send + Sync;
    /// Per-protection-domain driver state.
    type Pd: Send + Sync;

    /// Device limits.
    fn query_device(dev: &Self::Device) -> DeviceCaps;
    /// Port attributes, from the device's net device.
    fn query_port(dev: &Self::Device, ndev: &NetDev<'_>) -> PortInfo;
    /// The 16-octet GID of the port.
    fn gid(dev: &Self::Device) -> [u8; 16];
    /// A new user context; `resp` is the response written to user space.
    fn alloc_ucontext(dev: &Self::Device, resp: &mut Udata<'_>) -> Result<Self::Ucontext>;
    /// Releases a user context.
    fn dealloc_ucontext(dev: &Self::Device, uctx: Self::Ucontext);
    /// A new protection domain.
    fn alloc_pd(dev: &Self::Device) -> Result<Self::Pd>;
    /// Releases a protection domain.
    fn dealloc_pd(dev: &Self::Device, pd: Self::Pd);

    /// Per-CQ driver state.
    type Cq: Send + Sync;
    /// Per-QP driver state.
    type Qp: Send + Sync;
    /// Per-SRQ driver state.
    type Srq: Send + Sync;
    /// Per-MR driver state.
    type Mr: Send + Sync;

    /// A new completion queue.
    fn create_cq(dev: &Self::Device, args: CreateCq<'_>) -> Result<Arc<Self::Cq>>;
    /// Destroys a completion queue (no QP uses it any more).
    fn destroy_cq(dev: &Self::Device, cq: Arc<Self::Cq>);
    /// Reaps up to `max` completions of a kernel CQ, in order, into `f`.
    fn poll_cq(cq: &Self::Cq, max: usize, f: &mut dyn FnMut(&Cqe));
    /// Arms a kernel CQ; returns the number of unreaped completions when
    /// `report_missed`.
    fn req_notify_cq(cq: &Self::Cq, solicited_only: bool, report_missed: bool) -> u32;

    /// A new queue pair; returns it and its QP number.
    fn create_qp(dev: &Self::Device, args: CreateQp<'_, Self>) -> Result<(Arc<Self::Qp>, u32)>;
    /// Modifies a QP.
    fn modify_qp(qp: &Arc<Self::Qp>, m: &QpModify) -> Result;
    /// Queries a QP.
    fn query_qp(qp: &Self::Qp, ndev: &NetDev<'_>) -> QpQuery;
    /// Destroys a QP.
    fn destroy_qp(dev: &Self::Device, qp: Arc<Self::Qp>);
    /// Posts send work requests (an empty list is the user-space doorbell).
    fn post_send(qp: &Arc<Self::Qp>, wrs: &mut SendWrs<'_>) -> Result;
    /// Posts receive work requests of a kernel consumer.
    fn post_recv(qp: &Self::Qp, wrs: &mut RecvWrs<'_>) -> Result;

    /// A new shared receive queue.
    fn create_srq(dev: &Self::Device, args: CreateSrq<'_, Self>) -> Result<Arc<Self::Srq>>;
    /// Modifies an SRQ: new size and/or limit.
    fn modify_srq(srq: &Self::Srq, max_wr: Option<u32>, limit: Option<u32>) -> Result;
    /// Queries an SRQ.
    fn query_srq(srq: &Self::Srq) -> SrqAttr;
    /// Destroys an SRQ.
    fn destroy_srq(dev: &Self::Device, srq: Arc<Self::Srq>);
    /// Posts receive work requests to a kernel SRQ.
    fn post_srq_recv(srq: &Self::Srq, wrs: &mut RecvWrs<'_>) -> Result;

    /// Registers user memory; returns the MR and its STag.
    fn reg_user_mr(dev: &Self::Device, args: RegUserMr<'_, Self>) -> Result<(Self::Mr, u32)>;
    /// A DMA MR covering all memory of a kernel consumer.
    fn get_dma_mr(dev: &Self::Device, pd: &Self::Pd, access: u32) -> Result<(Self::Mr, u32)>;
    /// A fast-registration MR of up to `max_pages` pages.
    fn alloc_mr(dev: &Self::Device, pd: &Self::Pd, max_pages: u32) -> Result<(Self::Mr, u32)>;
    /// Starts mapping pages into a fast-registration MR.
    fn map_mr_begin(mr: &Self::Mr) -> Result;
    /// Adds one page (DMA address) to the MR's page list.
    fn map_mr_page(mr: &Self::Mr, addr: u64) -> Result;
    /// Ends mapping: the MR covers `length` octets at `iova`.
    fn map_mr_end(mr: &Self::Mr, iova: u64, length: u64, page_size: u32);
    /// Re-registers a user MR (`ibv_rereg_mr`): `Ok(None)` when `old` was
    /// changed in place, `Ok(Some(..))` for a replacement MR (the core
    /// then deregisters `old`).
    fn rereg_user_mr(
        dev: &Self::Device,
        old: &Self::Mr,
        args: ReregUserMr<'_, Self>,
    ) -> Result<Option<(Self::Mr, u32)>>;
    /// Deregisters an MR.
    fn dereg_mr(dev: &Self::Device, mr: Self::Mr) -> Result;

    /// A listening endpoint.
    type Listener: Send + Sync;
    /// A connection endpoint awaiting `iw_accept`/`iw_reject`.
    type Cep: Send + Sync;

    /// Connects a QP (active side).
    fn iw_connect(dev: &Self::Device, id: CmId, p: ConnParam) -> Result;
    /// Accepts a connect request.
    fn iw_accept(dev: &Self::Device, cep: Arc<Self::Cep>, id: CmId, p: ConnParam) -> Result;
    /// Rejects a connect request with private data.
    fn iw_reject(cep: Arc<Self::Cep>, pdata: &[u8]) -> Result;
    /// Starts listening on the id's local address.
    fn iw_create_listen(dev: &Self::Device, id: CmId, backlog: i32) -> Result<Arc<Self::Listener>>;
    /// Stops listening.
    fn iw_destroy_listen(l: Arc<Self::Listener>);
    /// The core QP of QP number `qpn`.
    fn iw_get_qp(dev: &Self::Device, qpn: u32) -> Option<QpHandle>;

    /// Names of the port's counters (`rdma statistic show link DEV/1`).
    const STATS: &'static StatDescs;
    /// The counters' current values, in the order of [`Driver::STATS`]
    /// (`out` has one slot per name).
    fn read_stats(dev: &Self::Device, out: &mut [u64]);
}

/// Most counters a driver can name.
pub const MAX_STATS: usize = 32;

/// The names of a driver's counters as the RDMA core takes them (an array
/// of `struct rdma_stat_desc` that lives as long as the module).
pub struct StatDescs {
    d: [bindings::rdma_stat_desc; MAX_STATS],
    n: usize,
}

// SAFETY: built once at compile time and never written; the pointers in it
// are to `'static` C strings.
unsafe impl Sync for StatDescs {}

impl StatDescs {
    /// Descriptors for `names` (at most [`MAX_STATS`] are used).
    pub const fn new(names: &[&'static CStr]) -> Self {
        let mut d = [bindings::rdma_stat_desc {
            name: ptr::null(),
            flags: 0,
            priv_: ptr::null(),
        }; MAX_STATS];
        let mut i = 0;
        while i < names.len() && i < MAX_STATS {
            d[i].name = names[i].as_char_ptr();
            i += 1;
        }
        Self { d, n: i }
    }

    /// Number of counters.
    pub const fn len(&self) -> usize {
        self.n
    }

    /// Whether there is none.
    pub const fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// How long (jiffies) the core reuses counter values it read (as rxe).
const STATS_LIFESPAN: kernel::ffi::c_ulong = 10;

/// RDMA core entry point `alloc_hw_port_stats`.
///
/// # Safety
///
/// Called by the RDMA core only, for a device registered by
/// [`register_device`].
unsafe extern "C" fn alloc_hw_port_stats<T: Driver>(
    _ib: *mut bindings::ib_device,
    port: u32,
) -> *mut bindings::rdma_hw_stats {
    if port != PORT || T::STATS.is_empty() {
        return ptr::null_mut();
    }
    // SAFETY: `T::STATS` is static and its first `len()` descriptors name
    // static strings; the core copies nothing and keeps the pointer.
    unsafe {
        bindings::rdma_alloc_hw_stats_struct(
            T::STATS.d.as_ptr(),
            T::STATS.len() as kernel::ffi::c_int,
            STATS_LIFESPAN,
        )
    }
}

/// RDMA core entry point `get_hw_stats`.
///
/// # Safety
///
/// Called by the RDMA core only, with a stats structure from
/// [`alloc_hw_port_stats`] (under its mutex).
unsafe extern "C" fn get_hw_stats<T: Driver>(
    ib: *mut bindings::ib_device,
    stats: *mut bindings::rdma_hw_stats,
    port: u32,
    _index: kernel::ffi::c_int,
) -> kernel::ffi::c_int {
    if stats.is_null() || port != PORT {
        return EINVAL.to_errno();
    }
    // SAFETY: `stats` is the live structure the core allocated for us
    // through `rdma_alloc_hw_stats_struct`, with `num_counters` values.
    let st = unsafe { &mut *stats };
    let n = T::STATS
        .len()
        .min(usize::try_from(st.num_counters).unwrap_or(0));
    let mut buf = [0u64; MAX_STATS];
    // SAFETY: `ib` is one of ours.
    T::read_stats(unsafe { drv_of::<T>(ib) }, &mut buf[..n]);
    // SAFETY: the flexible array holds `num_counters` >= `n` values.
    unsafe { st.value.as_mut_slice(n) }.copy_from_slice(&buf[..n]);
    n as kernel::ffi::c_int
}

/// Arguments of `create_cq`.
pub struct CreateCq<'a> {
    /// The core CQ, for notifications.
    pub handle: CqHandle,
    /// Requested number of entries.
    pub cqe: u32,
    /// Creation flags (none supported).
    pub flags: u32,
    /// The user context to map the ring into (user CQs).
    pub user: Option<UserCtx>,
    /// The response channel.
    pub udata: Udata<'a>,
}

/// QP creation attributes.
#[derive(Clone, Copy, Debug)]
pub struct QpInit {
    /// Send work requests.
    pub max_send_wr: u32,
    /// Receive work requests.
    pub max_recv_wr: u32,
    /// SGEs per send work request.
    pub max_send_sge: u32,
    /// SGEs per receive work request.
    pub max_recv_sge: u32,
    /// Inline octets.
    pub max_inline: u32,
    /// The QP is of type RC.
    pub rc: bool,
    /// Every send work request completes (`IB_SIGNAL_ALL_WR`).
    pub sig_all: bool,
    /// The signal type was neither ALL nor REQ.
    pub bad_sig_type: bool,
    /// Creation flags.
    pub create_flags: u32,
}

/// Arguments of `create_qp`.
pub struct CreateQp<'a, T: Driver> {
    /// The core QP, for events and completion tokens.
    pub handle: QpHandle,
    /// The protection domain.
    pub pd: &'a T::Pd,
    /// The send CQ.
    pub send_cq: Option<&'a Arc<T::Cq>>,
    /// The receive CQ.
    pub recv_cq: Option<&'a Arc<T::Cq>>,
    /// The SRQ, if any.
    pub srq: Option<&'a Arc<T::Srq>>,
    /// Attributes.
    pub init: QpInit,
    /// The user context (user QPs).
    pub user: Option<UserCtx>,
    /// The response channel.
    pub udata: Udata<'a>,
}

/// IB QP states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IbQpState {
    /// Reset.
    Reset,
    /// Initialised.
    Init,
    /// Ready to receive.
    Rtr,
    /// Ready to send.
    Rts,
    /// Send queue drain.
    Sqd,
    /// Send queue error.
    Sqe,
    /// Error.
    Err,
}

impl IbQpState {
    fn from_raw(v: bindings::ib_qp_state) -> Option<Self> {
        Some(match v {
            bindings::ib_qp_state_IB_QPS_RESET => Self::Reset,
            bindings::ib_qp_state_IB_QPS_INIT => Self::Init,
            bindings::ib_qp_state_IB_QPS_RTR => Self::Rtr,
            bindings::ib_qp_state_IB_QPS_RTS => Self::Rts,
            bindings::ib_qp_state_IB_QPS_SQD => Self::Sqd,
            bindings::ib_qp_state_IB_QPS_SQE => Self::Sqe,
            bindings::ib_qp_state_IB_QPS_ERR => Self::Err,
            _ => return None,
        })
    }

    fn raw(self) -> bindings::ib_qp_state {
        match self {
            Self::Reset => bindings::ib_qp_state_IB_QPS_RESET,
            Self::Init => bindings::ib_qp_state_IB_QPS_INIT,
            Self::Rtr => bindings::ib_qp_state_IB_QPS_RTR,
            Self::Rts => bindings::ib_qp_state_IB_QPS_RTS,
            Self::Sqd => bindings::ib_qp_state_IB_QPS_SQD,
            Self::Sqe => bindings::ib_qp_state_IB_QPS_SQE,
            Self::Err => bindings::ib_qp_state_IB_QPS_ERR,
        }
    }
}

/// A `modify_qp` request.
#[derive(Clone, Copy, Debug, Default)]
pub struct QpModify {
    /// New state.
    pub state: Option<IbQpState>,
    /// New access flags (IB_ACCESS_*).
    pub access: Option<u32>,
    /// Attribute bits outside the standard set were given.
    pub nonstandard: bool,
}

/// `query_qp` results.
#[derive(Clone, Copy, Debug)]
pub struct QpQuery {
    /// Current state.
    pub state: IbQpState,
    /// Send queue size.
    pub max_send_wr: u32,
    /// Receive queue size.
    pub max_recv_wr: u32,
    /// Send SGEs.
    pub max_send_sge: u32,
    /// Receive SGEs.
    pub max_recv_sge: u32,
    /// Inline octets.
    pub max_inline: u32,
    /// Path MTU.
    pub path_mtu: Mtu,
    /// Outbound RDMA Reads (ORD).
    pub max_rd_atomic: u8,
    /// Inbound RDMA Reads (IRD).
    pub max_dest_rd_atomic: u8,
    /// IB access flags.
    pub access: u32,
}

/// SRQ attributes.
#[derive(Clone, Copy, Debug)]
pub struct SrqAttr {
    /// Work requests.
    pub max_wr: u32,
    /// SGEs per work request.
    pub max_sge: u32,
    /// Limit for the limit event (0: disarmed).
    pub limit: u32,
}

/// Arguments of `create_srq`.
pub struct CreateSrq<'a, T: Driver> {
    /// The core SRQ, for the limit event.
    pub handle: SrqHandle,
    /// The protection domain.
    pub pd: &'a T::Pd,
    /// Attributes.
    pub attr: SrqAttr,
    /// The SRQ is of the basic type.
    pub basic: bool,
    /// The user context (user SRQs).
    pub user: Option<UserCtx>,
    /// The response channel.
    pub udata: Udata<'a>,
}

/// Arguments of `reg_user_mr`.
pub struct RegUserMr<'a, T: Driver> {
    /// The protection domain.
    pub pd: &'a T::Pd,
    /// Pins the memory.
    pub pinner: Pinner,
    /// User address.
    pub start: u64,
    /// Length.
    pub len: u64,
    /// Address the peer uses (IOVA).
    pub iova: u64,
    /// IB access flags.
    pub access: u32,
    /// The request and response channel.
    pub udata: Udata<'a>,
}

/// Arguments of `rereg_user_mr`: what changes (`IB_MR_REREG_*`) and the
/// new values (the others are the request's, not meaningful).
pub struct ReregUserMr<'a, T: Driver> {
    /// New translation: `start`, `len` and `iova` apply.
    pub trans: bool,
    /// New protection domain: `pd` applies (it is the MR's own otherwise).
    pub new_pd: bool,
    /// New access flags: `access` applies.
    pub new_access: bool,
    /// The protection domain the MR will belong to.
    pub pd: &'a T::Pd,
    /// Pins memory.
    pub pinner: Pinner,
    /// User address.
    pub start: u64,
    /// Length.
    pub len: u64,
    /// Address the peer uses (IOVA).
    pub iova: u64,
    /// IB access flags.
    pub access: u32,
    /// The request and response channel.
    pub udata: Udata<'a>,
}

/// An `ib_device` allocated by the RDMA core with the driver state after it.
#[repr(C)]
struct DeviceObj<T: Driver> {
    ib: bindings::ib_device,
    drv: T::Device,
}

/// A core object (`ib_pd`, `ib_ucontext`, ...) with the driver state after it.
#[repr(C)]
struct Obj<B, D> {
    ib: B,
    drv: D,
}

fn obj_ptr<B, D>(ib: *mut B) -> *mut Obj<B, D> {
    ib.cast()
}

fn dev_obj<T: Driver>(ib: *mut bindings::ib_device) -> *mut DeviceObj<T> {
    ib.cast()
}

/// Borrowed driver state of the device that owns the core object `ib`.
///
/// # Safety
///
/// `ib` must be one of `T`'s registered devices, alive for `'a`.
unsafe fn drv_of<'a, T: Driver>(ib: *mut bindings::ib_device) -> &'a T::Device {
    // SAFETY: per the contract `ib` is the head of a live `DeviceObj<T>`
    // whose `drv` was written before registration.
    unsafe { &(*dev_obj::<T>(ib)).drv }
}

/// A counted reference to one of this driver's registered devices.
pub struct DeviceRef<T: Driver> {
    ptr: NonNull<bindings::ib_device>,
    _p: PhantomData<T>,
}

// SAFETY: the RDMA core refcount may be dropped from any context that may
// sleep; the driver state is `Sync`.
unsafe impl<T: Driver> Send for DeviceRef<T> {}
// SAFETY: shared access only reaches `T::Device: Sync`.
unsafe impl<T: Driver> Sync for DeviceRef<T> {}

impl<T: Driver> DeviceRef<T> {
    /// The rsiw device on `ndev`, if there is one (devices of other drivers
    /// with the same driver id, such as upstream siw, are ignored).
    pub fn get_by_netdev(ndev: &NetDev<'_>) -> Option<Self> {
        // SAFETY: `ndev` is a live net device; the returned device, if any,
        // carries a reference we own from here on.
        let ib = unsafe { bindings::ib_device_get_by_netdev(ndev.as_ptr(), DRIVER_ID) };
        let ptr = NonNull::new(ib)?;
        let this = Self {
            ptr,
            _p: PhantomData,
        };
        // SAFETY: we hold a reference, so `ops` is stable; `owner` is set by
        // `ib_set_device_ops` from the table of the driver that made it.
        let owner = unsafe { (*ib).ops.owner };
        if owner != crate::THIS_MODULE.as_ptr() {
            return None; // `this` drops the reference
        }
        Some(this)
    }

    /// Whether any device of the siw driver id (ours or upstream siw's)
    /// sits on `ndev`.
    pub fn any_on_netdev(ndev: &NetDev<'_>) -> bool {
        // SAFETY: as in `get_by_netdev`; the reference is dropped at once.
        let ib = unsafe { bindings::ib_device_get_by_netdev(ndev.as_ptr(), DRIVER_ID) };
        if ib.is_null() {
            return false;
        }
        // SAFETY: we own the reference taken above.
        unsafe { bindings::ib_device_put(ib) };
        true
    }

    /// The driver state.
    pub fn drv(&self) -> &T::Device {
        // SAFETY: we hold a reference on one of `T`'s devices.
        unsafe { drv_of::<T>(self.ptr.as_ptr()) }
    }

    /// Delivers an asynchronous port event to the device's clients.
    pub fn port_event(&self, ev: PortEvent) {
        let event = match ev {
            PortEvent::Active => bindings::ib_event_type_IB_EVENT_PORT_ACTIVE,
            PortEvent::Error => bindings::ib_event_type_IB_EVENT_PORT_ERR,
            PortEvent::AddressChange => bindings::ib_event_type_IB_EVENT_LID_CHANGE,
        };
        let ev = bindings::ib_event {
            device: self.ptr.as_ptr(),
            element: bindings::ib_event__bindgen_ty_1 { port_num: PORT },
            event,
        };
        // SAFETY: the device is registered and referenced; the event is
        // copied by the callee.
        unsafe { bindings::ib_dispatch_event(&ev) };
    }

    /// Starts unregistering the device in the background (its net device is
    /// going away; the RDMA core must not block the notifier).
    pub fn unregister_queued(&self) {
        // SAFETY: the device is registered, has `dealloc_driver` and is
        // referenced by us.
        unsafe { bindings::ib_unregister_device_queued(self.ptr.as_ptr()) };
    }
}

impl<T: Driver> Drop for DeviceRef<T> {
    fn drop(&mut self) {
        // SAFETY: we own one reference.
        unsafe { bindings::ib_device_put(self.ptr.as_ptr()) };
    }
}

/// A raw pointer to a registered device, kept in the [`Registry`].
#[derive(Clone, Copy, PartialEq, Eq)]
struct DevPtr(*mut bindings::ib_device);

// SAFETY: only used as an identity and, with a reference taken, passed to
// the RDMA core, which is thread safe.
unsafe impl Send for DevPtr {}

/// The registry of this module's devices, so that unload can unregister
/// the ones the user did not delete.
#[pin_data]
pub struct Registry {
    #[pin]
    devs: Mutex<KVec<DevPtr>>,
    #[pin]
    emptied: CondVar,
}

/// The live registry; set while the link type is registered.
static REGISTRY: AtomicPtr<Registry> = AtomicPtr::new(ptr::null_mut());

impl Registry {
    /// Creates the registry and publishes it for the device callbacks.
    pub(in crate::kif) fn new() -> Result<Pin<KBox<Self>>> {
        let reg = KBox::pin_init(
            pin_init!(Self {
                devs <- new_mutex!(KVec::new()),
                emptied <- new_condvar!(),
            }),
            GFP_KERNEL,
        )?;
        REGISTRY.store(ptr::from_ref(&*reg).cast_mut(), Ordering::Release);
        Ok(reg)
    }

    fn get() -> Option<&'static Self> {
        let p = REGISTRY.load(Ordering::Acquire);
        // SAFETY: a non-null pointer is the pinned registry, which
        // `unregister_all` unpublishes only after every device is gone, and
        // no device callback or link callback runs after that.
        unsafe { p.as_ref() }
    }

    fn add(&self, d: DevPtr) -> Result {
        self.devs.lock().push(d, GFP_KERNEL)?;
        Ok(())
    }

    fn remove(&self, d: DevPtr) {
        let mut devs = self.devs.lock();
        if let Some(i) = devs.iter().position(|x| *x == d) {
            let last = devs.len() - 1;
            devs.as_mut_slice().swap(i, last);
            // SAFETY: `last < len` and `DevPtr` is `Copy`, so shortening by
            // one leaks nothing.
            unsafe { devs.set_len(last) };
        }
        if devs.is_empty() {
            self.emptied.notify_all();
        }
    }

    /// Unregisters every device left and waits until the RDMA core released
    /// all of them (also those another path is unregistering right now).
    pub(in crate::kif) fn unregister_all(&self) {
        loop {
            let next = {
                let devs = self.devs.lock();
                devs.iter().copied().find(|d| {
                    // SAFETY: a registered device stays allocated while it is
                    // in the registry (removed in `dealloc_driver`, under this
                    // lock); try_get fails once unregistration began.
                    unsafe { glue::rsiw_ib_device_try_get(d.0) }
                })
            };
            match next {
                // SAFETY: we own the reference taken by try_get above.
                Some(d) => unsafe { bindings::ib_unregister_device_and_put(d.0) },
                None => break,
            }
        }
        let mut devs = self.devs.lock();
        while !devs.is_empty() {
            self.emptied.wait(&mut devs);
        }
        drop(devs);
        REGISTRY.store(ptr::null_mut(), Ordering::Release);
    }
}

/// What [`register_device`] needs besides the driver state.
pub struct DeviceSetup<'a> {
    /// The net device to bind to.
    pub ndev: &'a NetDev<'a>,
    /// The device name (`rdma link add NAME`).
    pub name: &'a CStr,
    /// Node GUID (network byte order value).
    pub node_guid: u64,
    /// Node description.
    pub node_desc: &'a [u8],
    /// Completion vectors.
    pub num_comp_vectors: u32,
}

/// Allocates, sets up and registers a device of driver `T` with state `drv`.
pub fn register_device<T: Driver>(
    setup: DeviceSetup<'_>,
    drv: impl PinInit<T::Device, Error>,
) -> Result {
    let reg = Registry::get().ok_or(ENODEV)?;
    // SAFETY: plain allocation; the core zeroes and initialises the
    // `ib_device` at the head of a `DeviceObj<T>` sized block.
    let ib = unsafe { bindings::_ib_alloc_device(size_of::<DeviceObj<T>>()) };
    if ib.is_null() {
        return Err(ENOMEM);
    }
    let obj = dev_obj::<T>(ib);
    // SAFETY: `obj` is a fresh, exclusively owned allocation of the right
    // size that never moves until freed; `drv` is initialised in place once.
    if let Err(e) = unsafe { drv.__pinned_init(addr_of_mut!((*obj).drv)) } {
        // SAFETY: never registered, `drv` not initialised.
        unsafe { bindings::ib_dealloc_device(ib) };
        return Err(e);
    }

    let ops = ops::<T>();
    // SAFETY: `ib` is exclusively ours until registration; every field set
    // here is plain data the core reads at registration.
    let r = unsafe {
        (*ib).node_type = bindings::RDMA_NODE_RNIC as u8;
        (*ib).node_guid = setup.node_guid;
        (*ib).phys_port_cnt = 1;
        (*ib).num_comp_vectors = setup.num_comp_vectors as i32;
        (*ib).uverbs_cmd_mask |= 1u64 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND;
        for (d, s) in (*ib)
            .node_desc
            .iter_mut()
            .zip(setup.node_desc.iter())
            .take(63)
        {
            *d = *s as _;
        }
        for (d, s) in (*ib).iw_ifname.iter_mut().zip(setup.ndev.name().iter()) {
            *d = *s as _;
        }
        (*ib).iw_driver_flags = bindings::iw_flags_IW_F_NO_PORT_MAP;
        bindings::ib_set_device_ops(ib, &ops);
        to_result(bindings::ib_device_set_netdev(
            ib,
            setup.ndev.as_ptr(),
            PORT,
        ))
        .and_then(|()| reg.add(DevPtr(ib)))
    };
    if let Err(e) = r {
        // SAFETY: never registered: drop the driver state, free the device.
        unsafe {
            ptr::drop_in_place(addr_of_mut!((*obj).drv));
            bindings::ib_dealloc_device(ib);
        }
        return Err(e);
    }
    // SAFETY: the device is fully set up; the name is NUL terminated.
    let r = unsafe {
        glue::rsiw_ib_mark_name_assigned_by_user(ib);
        to_result(bindings::ib_register_device(
            ib,
            setup.name.as_char_ptr(),
            ptr::null_mut(),
        ))
    };
    if let Err(e) = r {
        // A failed registration does not call `dealloc_driver`.
        reg.remove(DevPtr(ib));
        // SAFETY: as above, the device never became visible.
        unsafe {
            ptr::drop_in_place(addr_of_mut!((*obj).drv));
            bindings::ib_dealloc_device(ib);
        }
        return Err(e);
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Trampolines. Each one is called by the RDMA core with live objects of a
// device registered by `register_device::<T>`.

/// RDMA core entry point `dealloc_driver`.
///
/// # Safety
///
/// Called by the RDMA core only, with live objects of a device registered
/// by [`register_device`].
unsafe extern "C" fn dealloc_driver<T: Driver>(ib: *mut bindings::ib_device) {
    let obj = dev_obj::<T>(ib);
    // Objects released after an RCU grace period (memory objects) may still
    // reference the device (a umem's release unmaps with it): let them go
    // first.
    crate::kif::compat::workqueue::drain_drops();
    // SAFETY: the core calls this once, after the device is unregistered and
    // no verb can run any more; the memory is freed by the core afterwards.
    unsafe { ptr::drop_in_place(addr_of_mut!((*obj).drv)) };
    if let Some(reg) = Registry::get() {
        reg.remove(DevPtr(ib));
    }
}

/// RDMA core entry point `query_device`.
///
/// # Safety
///
/// Called by the RDMA core only, with live objects of a device registered
/// by [`register_device`].
unsafe extern "C" fn query_device<T: Driver>(
    ib: *mut bindings::ib_device,
    attr: *mut bindings::ib_device_attr,
    udata: *mut bindings::ib_udata,
) -> kernel::ffi::c_int {
    // SAFETY: the core passes a live udata or null.
    if let Some(u) = unsafe { udata.as_ref() } {
        if u.inlen != 0 || u.outlen != 0 {
            return EINVAL.to_errno();
        }
    }
    // SAFETY: `ib` is one of ours (trampoline contract).
    let c = T::query_device(unsafe { drv_of::<T>(ib) });
    let clamp = |v: u32| v.min(i32::MAX as u32) as i32;
    // SAFETY: `attr` is a valid, exclusively borrowed output buffer.
    let a = unsafe { &mut *attr };
    // SAFETY: all-zero is a valid `ib_device_attr` (plain integers).
    *a = unsafe { core::mem::zeroed() };
    a.vendor_id = c.vendor_id;
    a.vendor_part_id = c.vendor_part_id;
    a.sys_image_guid = c.sys_image_guid;
    a.max_mr_size = c.max_mr_size;
    a.page_size_cap = c.page_size_cap;
    a.max_qp = clamp(c.max_qp);
    a.max_qp_wr = clamp(c.max_qp_wr);
    a.max_send_sge = clamp(c.max_sge);
    a.max_recv_sge = clamp(c.max_sge);
    a.max_sge_rd = clamp(c.max_sge_rd);
    a.max_cq = clamp(c.max_cq);
    a.max_cqe = clamp(c.max_cqe);
    a.max_mr = clamp(c.max_mr);
    a.max_pd = clamp(c.max_pd);
    a.max_qp_rd_atom = clamp(c.max_ord);
    a.max_qp_init_rd_atom = clamp(c.max_ird);
    a.max_res_rd_atom = clamp(c.max_qp.saturating_mul(c.max_ird));
    a.max_srq = clamp(c.max_srq);
    a.max_srq_wr = clamp(c.max_srq_wr);
    a.max_srq_sge = clamp(c.max_srq_sge);
    a.max_fast_reg_page_list_len = c.max_fast_reg_page_list_len;
    if c.mem_mgt_extensions {
        a.device_cap_flags = bindings::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS as u64;
        a.kernel_cap_flags = bindings::ib_kernel_cap_flags_IBK_ALLOW_USER_UNREG as u64;
    }
    0
}

/// Fills `attr` for port `port` of `ib`.
///
/// # Safety
///
/// `ib` is one of `T`'s live devices; `attr` is valid for writes.
unsafe fn fill_port<T: Driver>(
    ib: *mut bindings::ib_device,
    port: u32,
    attr: *mut bindings::ib_port_attr,
) -> Result {
    if port != PORT {
        return Err(EINVAL);
    }
    // SAFETY: `attr` is valid for writes; all-zero is a valid value.
    let a = unsafe { &mut *attr };
    // SAFETY: as above.
    *a = unsafe { core::mem::zeroed() };
    // SAFETY: `ib` is live; the outputs point into `a`.
    to_result(unsafe {
        bindings::ib_get_eth_speed(ib, port, &mut a.active_speed, &mut a.active_width)
    })?;
    // SAFETY: returns a referenced net device or null; the reference is ours.
    let nd = unsafe { NetDevRef::from_held(bindings::ib_device_get_netdev(ib, port)) };
    let nd = nd.ok_or(ENODEV)?;
    // SAFETY: `ib` is one of ours.
    let p = T::query_port(unsafe { drv_of::<T>(ib) }, &nd.dev());
    a.gid_tbl_len = p.gid_tbl_len as i32;
    a.max_msg_sz = u32::MAX;
    a.max_mtu = p.max_mtu.raw();
    a.active_mtu = p.active_mtu.raw();
    (a.state, a.phys_state) = if p.active {
        (
            bindings::ib_port_state_IB_PORT_ACTIVE,
            bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_LINK_UP as u8,
        )
    } else {
        (
            bindings::ib_port_state_IB_PORT_DOWN,
            bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_DISABLED as u8,
        )
    };
    a.port_cap_flags = bindings::ib_port_capability_mask_bits_IB_PORT_CM_SUP
        | bindings::ib_port_capability_mask_bits_IB_PORT_DEVICE_MGMT_SUP;
    Ok(())
}

/// RDMA core entry point `query_port`.
///
/// # Safety
///
/// Called by the RDMA core only, with live objects of a device registered
/// by [`register_device`].
unsafe extern "C" fn query_port<T: Driver>(
    ib: *mut bindings::ib_device,
    port: u32,
    attr: *mut bindings::ib_port_attr,
) -> kernel::ffi::c_int {
    // SAFETY: trampoline contract.
    from_result(|| unsafe { fill_port::<T>(ib, port, attr) }.map(|()| 0))
}

/// RDMA core entry point `get_port_immutable`.
///
/// # Safety
///
/// Called by the RDMA core only, with live objects of a device registered
/// by [`register_device`].
unsafe extern "C" fn get_port_immutable<T: Driver>(
    ib: *mut bindings::ib_device,
    port: u32,
    imm: *mut bindings::ib_port_immutable,
) -> kernel::ffi::c_int {
    from_result(|| {
        // SAFETY: all-zero is a valid `ib_port_attr`.
        let mut attr: bindings::ib_port_attr = unsafe { core::mem::zeroed() };
        // SAFETY: trampoline contract; `attr` is a local.
        unsafe { fill_port::<T>(ib, port, &mut attr)? };
        // SAFETY: `imm` is a valid output buffer.
        let imm = unsafe { &mut *imm };
        imm.gid_tbl_len = attr.gid_tbl_len;
        imm.core_cap_flags = bindings::RDMA_CORE_PORT_IWARP;
        Ok(0)
    })
}

/// RDMA core entry point `query_gid`.
///
/// # Safety
///
/// Called by the RDMA core only, with live objects of a device registered
/// by [`register_device`].
unsafe extern "C" fn query_gid<T: Driver>(
    ib: *mut bindings::ib_device,
    port: u32,
    idx: kernel::ffi::c_int,
    gid: *mut bindings::ib_gid,
) -> kernel::ffi::c_int {
    if port != PORT || idx != 0 {
        return EINVAL.to_errno();
    }
    // SAFETY: trampoline contract; `gid` is a valid output buffer.
    unsafe { (*gid).raw = T::gid(drv_of::<T>(ib)) };
    0
}

/// RDMA core entry point `alloc_ucontext`.
///
/// # Safety
///
/// Called by the RDMA core only, with live objects of a device registered
/// by [`register_device`].
unsafe extern "C" fn alloc_ucontext<T: Driver>(
    uctx: *mut bindings::ib_ucontext,
    udata: *mut bindings::ib_udata,
) -> kernel::ffi::c_int {
    from_result(|| {
        let obj = obj_ptr::<_, T::Ucontext>(uctx);
        // SAFETY: the core passes a live ucontext of one of our devices and
        // the udata of this call.
        let (dev, mut resp) = unsafe { (drv_of::<T>((*uctx).device), Udata::from_raw(udata)?) };
        let drv = T::alloc_ucontext(dev, &mut resp)?;
        // SAFETY: the core allocated `size_ib_ucontext` (= size of `Obj`)
        // zeroed octets; `drv` is written exactly once here.
        unsafe { addr_of_mut!((*obj).drv).write(drv) };
        Ok(0)
    })
}

/// RDMA core entry point `dealloc_ucontext`.
///
/// # Safety
///
/// Called by the RDMA core only, with live objects of a device registered
/// by [`register_device`].
unsafe extern "C" fn dealloc_ucontext<T: Driver>(uctx: *mut bindings::ib_ucontext) {
    let obj = obj_ptr::<_, T::Ucontext>(uctx);
    // SAFETY: the core calls this once for a context `alloc_ucontext`
    // initialised; the memory is freed by the core afterwards.
    unsafe {
        let drv = ptr::read(addr_of_mut!((*obj).drv));
        T::dealloc_ucontext(drv_of::<T>((*uctx).device), drv);
    }
}

/// RDMA core entry point `alloc_pd`.
///
/// # Safety
///
/// Called by the RDMA core only, with live objects of a device registered
/// by [`register_device`].
unsafe extern "C" fn alloc_pd<T: Driver>(
    pd: *mut bindings::ib_pd,
    _udata: *mut bindings::ib_udata,
) -> kernel::ffi::c_int {
    from_result(|| {
        let obj = obj_ptr::<_, T::Pd>(pd);
        // SAFETY: live PD of one of our devices.
        let drv = T::alloc_pd(unsafe { drv_of::<T>((*pd).device) })?;
        // SAFETY: core-allocated `size_ib_pd` octets; written once.
        unsafe { addr_of_mut!((*obj).drv).write(drv) };
        Ok(0)
    })
}

/// RDMA core entry point `dealloc_pd`.
///
/// # Safety
///
/// Called by the RDMA core only, with live objects of a device registered
/// by [`register_device`].
unsafe extern "C" fn dealloc_pd<T: Driver>(
    pd: *mut bindings::ib_pd,
    _udata: *mut bindings::ib_udata,
) -> kernel::ffi::c_int {
    let obj = obj_ptr::<_, T::Pd>(pd);
    // SAFETY: called once for a PD `alloc_pd` initialised.
    unsafe {
        let drv = ptr::read(addr_of_mut!((*obj).drv));
        T::dealloc_pd(drv_of::<T>((*pd).device), drv);
    }
    0
}

mod objects;
pub use objects::with_mr;
use objects::*;

/// The operations table of driver `T`, owned by this module.
fn ops<T: Driver>() -> bindings::ib_device_ops {
    bindings::ib_device_ops {
        owner: crate::THIS_MODULE.as_ptr(),
        driver_id: DRIVER_ID,
        uverbs_abi_ver: ABI_VERSION,
        dealloc_driver: Some(dealloc_driver::<T>),
        query_device: Some(query_device::<T>),
        query_port: Some(query_port::<T>),
        get_port_immutable: Some(get_port_immutable::<T>),
        query_gid: Some(query_gid::<T>),
        alloc_ucontext: Some(alloc_ucontext::<T>),
        dealloc_ucontext: Some(dealloc_ucontext::<T>),
        alloc_pd: Some(alloc_pd::<T>),
        dealloc_pd: Some(dealloc_pd::<T>),
        create_cq: Some(create_cq::<T>),
        destroy_cq: Some(destroy_cq::<T>),
        poll_cq: Some(poll_cq::<T>),
        req_notify_cq: Some(req_notify_cq::<T>),
        create_qp: Some(create_qp::<T>),
        modify_qp: Some(modify_qp::<T>),
        query_qp: Some(query_qp::<T>),
        destroy_qp: Some(destroy_qp::<T>),
        post_send: Some(post_send::<T>),
        post_recv: Some(post_recv::<T>),
        create_srq: Some(create_srq::<T>),
        modify_srq: Some(modify_srq::<T>),
        query_srq: Some(query_srq::<T>),
        destroy_srq: Some(destroy_srq::<T>),
        post_srq_recv: Some(post_srq_recv::<T>),
        reg_user_mr: Some(reg_user_mr::<T>),
        get_dma_mr: Some(get_dma_mr::<T>),
        alloc_mr: Some(alloc_mr::<T>),
        map_mr_sg: Some(map_mr_sg::<T>),
        rereg_user_mr: Some(rereg_user_mr::<T>),
        dereg_mr: Some(dereg_mr::<T>),
        iw_connect: Some(iw_connect::<T>),
        iw_accept: Some(iw_accept::<T>),
        iw_reject: Some(iw_reject::<T>),
        iw_create_listen: Some(iw_create_listen::<T>),
        iw_destroy_listen: Some(iw_destroy_listen::<T>),
        iw_get_qp: Some(iw_get_qp::<T>),
        alloc_hw_port_stats: Some(alloc_hw_port_stats::<T>),
        get_hw_stats: Some(get_hw_stats::<T>),
        iw_add_ref: Some(iw_add_ref::<T>),
        iw_rem_ref: Some(iw_rem_ref::<T>),
        mmap: Some(mmap::mmap),
        mmap_free: Some(mmap::mmap_free),
        size_ib_ucontext: size_of::<Obj<bindings::ib_ucontext, T::Ucontext>>(),
        size_ib_pd: size_of::<Obj<bindings::ib_pd, T::Pd>>(),
        size_ib_qp: size_of::<Obj<bindings::ib_qp, QpSlot<T>>>(),
        size_ib_cq: size_of::<Obj<bindings::ib_cq, CqSlot<T>>>(),
        size_ib_srq: size_of::<Obj<bindings::ib_srq, SrqSlot<T>>>(),
        ..Default::default()
    }
}
