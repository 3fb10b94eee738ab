// SPDX-License-Identifier: GPL-2.0

//! The [`Driver`] trait: what an RDMA provider is (its identity, as
//! associated constants) and the verbs it implements, in the shape of
//! `kernel::net::phy::Driver`. The operations the RDMA core requires of
//! every device (`ib_device_check_mandatory`) are required methods; the
//! others have defaults and are optional: `#[vtable]` generates a `HAS_*`
//! constant per method, and the operations table gets an entry only for
//! the methods a driver implements (see [`Device::register`]).

use kernel::{bindings, error::VTABLE_DEFAULT_ERROR, prelude::*, str::CStr, sync::Arc};

use super::restrack::ResDetails;
use super::{
    attr::{DeviceCaps, PortInfo},
    cq::CreateCq,
    handle::QpHandle,
    iwcm::{CmId, CmIdKey, ConnParam, RequestKey},
    mr::{RegUserMr, ReregUserMr},
    qp::{CreateQp, QpModify, QpQuery},
    srq::{CreateSrq, SrqAttr},
    stats::StatDescs,
    udata::Udata,
    wc::WorkCompletion,
    wr::{RecvWrs, SendWrs},
    Device,
};
use crate::kif::net::NetDev;

/// The most driver attributes a device has in sysfs ([`Driver::ATTRS`]).
pub const MAX_ATTRS: usize = 8;

/// The driver id user space matches its provider library by
/// (`enum rdma_driver_id`), as far as drivers in Rust use it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DriverId {
    /// Soft iWARP: rdma-core's siw provider.
    Siw,
    /// Soft RoCE: rdma-core's rxe provider.
    Rxe,
}

impl DriverId {
    pub(super) const fn raw(self) -> bindings::rdma_driver_id {
        match self {
            Self::Siw => bindings::rdma_driver_id_RDMA_DRIVER_SIW,
            Self::Rxe => bindings::rdma_driver_id_RDMA_DRIVER_RXE,
        }
    }
}

/// The kind of node a device is (`enum rdma_node_type`); it sets the
/// transport of the device's ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeType {
    /// An iWARP RNIC: ports run iWARP, connections go through the iWARP
    /// connection manager ([`Driver::iw_connect`] and the other `iw_*`
    /// verbs).
    Rnic,
}

impl NodeType {
    pub(super) const fn raw(self) -> u8 {
        match self {
            Self::Rnic => bindings::RDMA_NODE_RNIC as u8,
        }
    }

    /// The transport flags of every port (`RDMA_CORE_PORT_*`).
    pub(super) const fn port_core_caps(self) -> u32 {
        match self {
            Self::Rnic => bindings::RDMA_CORE_PORT_IWARP,
        }
    }
}

/// An RDMA driver: its identity and the verbs it implements.
///
/// The types are the driver's state of each object the RDMA core
/// creates; the core's object is reached through a handle where a verb
/// needs it (events, completions).
#[vtable]
pub trait Driver: Sized + 'static {
    /// Per-device state; a [`Device<Self>`] dereferences to it.
    type Data: Send + Sync;
    /// Per-user-context state.
    type Ucontext: Send + Sync;
    /// Per-protection-domain state.
    type Pd: Send + Sync;
    /// Per-completion-queue state.
    type Cq: Send + Sync;
    /// Per-queue-pair state.
    type Qp: Send + Sync;
    /// Per-shared-receive-queue state.
    type Srq: Send + Sync;
    /// Per-memory-region state.
    type Mr: Send + Sync;
    /// A listening endpoint of the iWARP CM.
    type Listener: Send + Sync;

    /// The driver id user space matches its provider by.
    const DRIVER_ID: DriverId;
    /// The version of the driver's user verbs ABI (the provider checks it).
    const UVERBS_ABI_VER: u32;
    /// The kind of node the devices are.
    const NODE_TYPE: NodeType;
    /// Number of ports, numbered from 1; a device's net device (see
    /// [`Device::register`]) is bound to port 1.
    const PHYS_PORT_CNT: u32 = 1;
    /// User space may ring the send queue's doorbell with the
    /// `post_send` command (the driver's [`Driver::post_send`] then gets
    /// an empty list).
    const USER_POST_SEND: bool = false;
    /// The iWARP CM need not register the device's ports with the port
    /// mapper (`IW_F_NO_PORT_MAP`).
    const IW_NO_PORT_MAP: bool = false;
    /// Names of the per-port counters (`rdma statistic`), read with
    /// [`Driver::read_stats`].
    const STATS: &'static StatDescs = &StatDescs::EMPTY;

    /// Device attributes.
    fn query_device(dev: &Device<Self>) -> DeviceCaps;
    /// Attributes of port `port`, whose net device is `ndev`.
    fn query_port(dev: &Device<Self>, port: u32, ndev: &NetDev<'_>) -> PortInfo;
    /// GID `index` of port `port`.
    fn query_gid(_dev: &Device<Self>, _port: u32, _index: u32) -> Result<[u8; 16]> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// A new user context; `resp` is the response written to user space.
    /// (Implemented together with [`Driver::dealloc_ucontext`].)
    fn alloc_ucontext(_dev: &Device<Self>, _resp: &mut Udata<'_>) -> Result<Self::Ucontext> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Releases a user context.
    fn dealloc_ucontext(_dev: &Device<Self>, _uctx: Self::Ucontext) {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// The device goes while a process still has the user context open
    /// (`rdma link delete`, net device removal, module unload): the RDMA
    /// core has destroyed every object of the context through the
    /// driver's destroy verbs (as when the process closes it, but with the
    /// process alive and still mapping the context's queues, whose
    /// mappings keep their pages, see [`UserCtx::map`](super::mmap::UserCtx::map)),
    /// and calls [`Driver::dealloc_ucontext`] right after this.
    ///
    /// Implementing it (together with [`Driver::alloc_ucontext`]) makes
    /// the devices *disassociable*: unregistering one no longer waits until
    /// every process has closed it, the processes get
    /// `IBV_EVENT_DEVICE_FATAL` and `EIO` from then on, and the RDMA core
    /// no longer holds the driver's module while a process has one of its
    /// devices open (module unload unregisters them). A driver whose
    /// objects all end in their destroy verbs has nothing more to do here.
    fn disassociate_ucontext(_dev: &Device<Self>, _uctx: &Self::Ucontext) {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// A new protection domain.
    fn alloc_pd(dev: &Device<Self>) -> Result<Self::Pd>;
    /// Releases a protection domain.
    fn dealloc_pd(dev: &Device<Self>, pd: Self::Pd);

    /// A new completion queue.
    fn create_cq(dev: &Device<Self>, args: CreateCq<'_>) -> Result<Arc<Self::Cq>>;
    /// Destroys a completion queue (no QP uses it any more).
    fn destroy_cq(dev: &Device<Self>, cq: Arc<Self::Cq>);
    /// Reaps up to `max` completions of a kernel consumer's CQ, in order,
    /// into `f`.
    fn poll_cq(cq: &Self::Cq, max: usize, f: &mut dyn FnMut(&WorkCompletion));
    /// Arms a kernel consumer's CQ; returns the number of unreaped
    /// completions when `report_missed`.
    fn req_notify_cq(cq: &Self::Cq, solicited_only: bool, report_missed: bool) -> u32;

    /// A new queue pair; returns it and its QP number.
    fn create_qp(dev: &Device<Self>, args: CreateQp<'_, Self>) -> Result<(Arc<Self::Qp>, u32)>;
    /// Modifies a QP.
    fn modify_qp(qp: &Arc<Self::Qp>, m: &QpModify) -> Result;
    /// Queries a QP; `ndev` is the net device of its port.
    fn query_qp(_qp: &Self::Qp, _ndev: &NetDev<'_>) -> QpQuery {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Adds the driver's details of a QP to its resource entry (`rdma
    /// resource show qp -dd`).
    fn fill_res_qp(_qp: &Self::Qp, _d: &mut ResDetails<'_>) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Destroys a QP.
    fn destroy_qp(dev: &Device<Self>, qp: Arc<Self::Qp>);
    /// Posts send work requests (with [`Driver::USER_POST_SEND`], an
    /// empty list is user space's doorbell).
    fn post_send(qp: &Arc<Self::Qp>, wrs: &mut SendWrs<'_, Self>) -> Result;
    /// Posts a kernel consumer's receive work requests.
    fn post_recv(qp: &Self::Qp, wrs: &mut RecvWrs<'_>) -> Result;

    /// A new shared receive queue. (Implemented together with
    /// [`Driver::destroy_srq`], [`Driver::query_srq`] and
    /// [`Driver::modify_srq`].)
    fn create_srq(_dev: &Device<Self>, _args: CreateSrq<'_, Self>) -> Result<Arc<Self::Srq>> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Modifies an SRQ: new size and/or limit.
    fn modify_srq(_srq: &Self::Srq, _max_wr: Option<u32>, _limit: Option<u32>) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Queries an SRQ.
    fn query_srq(_srq: &Self::Srq) -> SrqAttr {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Destroys an SRQ.
    fn destroy_srq(_dev: &Device<Self>, _srq: Arc<Self::Srq>) {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Posts a kernel consumer's receive work requests to an SRQ.
    fn post_srq_recv(_srq: &Self::Srq, _wrs: &mut RecvWrs<'_>) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Registers user memory; returns the MR and its key.
    fn reg_user_mr(dev: &Device<Self>, args: RegUserMr<'_, Self>) -> Result<(Self::Mr, u32)>;
    /// An MR covering all memory of a kernel consumer.
    fn get_dma_mr(dev: &Device<Self>, pd: &Self::Pd, access: u32) -> Result<(Self::Mr, u32)>;
    /// A fast-registration MR of up to `max_pages` pages. (Implemented
    /// together with [`Driver::map_mr_begin`], [`Driver::map_mr_page`]
    /// and [`Driver::map_mr_end`].)
    fn alloc_mr(_dev: &Device<Self>, _pd: &Self::Pd, _max_pages: u32) -> Result<(Self::Mr, u32)> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Starts mapping pages into a fast-registration MR.
    fn map_mr_begin(_mr: &Self::Mr) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Adds one page (DMA address) to the MR's page list.
    fn map_mr_page(_mr: &Self::Mr, _addr: u64) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Ends mapping: the MR covers `length` octets at `iova`.
    fn map_mr_end(_mr: &Self::Mr, _iova: u64, _length: u64, _page_size: u32) {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Re-registers a user MR (`ibv_rereg_mr`): `Ok(None)` when `old` was
    /// changed in place, `Ok(Some(..))` for a replacement MR (the core
    /// then deregisters `old`).
    fn rereg_user_mr(
        _dev: &Device<Self>,
        _old: &Self::Mr,
        _args: ReregUserMr<'_, Self>,
    ) -> Result<Option<(Self::Mr, u32)>> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Deregisters an MR.
    fn dereg_mr(dev: &Device<Self>, mr: Self::Mr) -> Result;

    /// Connects a QP (active side). (The `iw_*` verbs are implemented
    /// together, by drivers of [`NodeType::Rnic`] devices.)
    fn iw_connect(_dev: &Device<Self>, _id: CmId, _p: ConnParam) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Accepts the connect request `req` (the key the driver gave it in
    /// [`CmId::connect_request`]). After an error the CM no longer
    /// answers the request (its id goes back to idle).
    fn iw_accept(_dev: &Device<Self>, _req: RequestKey, _id: CmId, _p: ConnParam) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Rejects the connect request `req` with private data.
    fn iw_reject(_dev: &Device<Self>, _req: RequestKey, _pdata: &[u8]) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Starts listening on the id's local address.
    fn iw_create_listen(
        _dev: &Device<Self>,
        _id: CmId,
        _backlog: i32,
    ) -> Result<Arc<Self::Listener>> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Stops listening.
    fn iw_destroy_listen(_l: Arc<Self::Listener>) {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// The core QP of QP number `qpn`.
    fn iw_get_qp(_dev: &Device<Self>, _qpn: u32) -> Option<QpHandle> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Adds the driver's details of a CM id of the device (`id` names the
    /// iWARP CM id behind an rdma_cm id) to its resource entry (`rdma
    /// resource show cm_id -dd`); nothing for an id the driver does not
    /// hold.
    fn fill_res_cm_id(_dev: &Device<Self>, _id: CmIdKey, _d: &mut ResDetails<'_>) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The names of the device's driver attributes in sysfs
    /// (`/sys/class/infiniband/DEV/NAME`, unsigned numbers, writable by
    /// root), at most [`MAX_ATTRS`]; served by [`Driver::attr_show`] and
    /// [`Driver::attr_store`].
    const ATTRS: &'static [&'static CStr] = &[];

    /// The value of attribute `idx` of [`Driver::ATTRS`].
    fn attr_show(_dev: &Device<Self>, _idx: usize) -> Result<u32> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Writes `v` to attribute `idx` of [`Driver::ATTRS`]; an error (as
    /// `EINVAL` for a value out of range) goes back to the writer.
    fn attr_store(_dev: &Device<Self>, _idx: usize, _v: u32) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The current values of the counters of port `port`, in the order of
    /// [`Driver::STATS`] (`out` has one slot per name).
    ///
    /// With per-QP counters, the core shows a port's values as these plus
    /// those of every counter, live or gone: leave out what the counters
    /// count.
    fn read_stats(_dev: &Device<Self>, _port: u32, _out: &mut [u64]) {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// How many of [`Driver::STATS`] (the first ones) a per-QP counter of
    /// `rdma statistic qp` has. (Implemented together with
    /// [`Driver::counter_bind_qp`], [`Driver::counter_unbind_qp`],
    /// [`Driver::counter_dealloc`] and [`Driver::counter_read`].)
    const COUNTER_STATS: usize = 0;

    /// Binds `qp` to per-QP counter `id`, or to a new counter when `id` is
    /// 0; returns the counter's id (not 0, unique among the device's live
    /// counters).
    fn counter_bind_qp(_dev: &Device<Self>, _id: u32, _qp: &Arc<Self::Qp>) -> Result<u32> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Unbinds `qp` from counter `id`; the counter keeps what it counted.
    fn counter_unbind_qp(_dev: &Device<Self>, _id: u32, _qp: &Arc<Self::Qp>) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Counter `id` goes (no QP is bound to it any more); its values now
    /// count with the port's (the core keeps them).
    fn counter_dealloc(_dev: &Device<Self>, _id: u32) {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// The values of counter `id` (`out` has [`Driver::COUNTER_STATS`]
    /// slots).
    fn counter_read(_dev: &Device<Self>, _id: u32, _out: &mut [u64]) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
}
