// SPDX-License-Identifier: GPL-2.0

//! The RDMA core's provider interface (`include/rdma/ib_verbs.h`), in the
//! shape of `kernel::net::phy`: a driver implements the [`Driver`] trait
//! (its identity as constants, its verbs as methods, the optional ones
//! optional) and registers [`Device`]s of it; [`adapter`] turns the RDMA
//! core's calls into calls of the driver's methods with safe types.
//!
//! Nothing here is specific to one driver: the driver chooses its driver
//! id, link type, user ABI, limits and counters ([`Driver`]'s and
//! [`link::LinkDriver`]'s constants), gives its module at registration
//! ([`link::LinkRegistration::register`]), and keeps its own state in each
//! object the core creates. The device names are the user's (`rdma link
//! add NAME`) and messages carry the module's own prefix.
//!
//! What kif calls in C is the module's own C glue (`rust/kif/rsiw_glue.c`,
//! `kif::glue`), whose functions carry the prefix of the module it was
//! written for: they are kif's private helpers, not part of this
//! interface, whose items name no driver.
//!
//! # Limits
//!
//! - A module has one live [`link::LinkRegistration`] at a time (the RDMA
//!   core's callbacks find it in a static of the module: a second one fails
//!   with `EBUSY`), and registers devices of its [`link::LinkDriver::Driver`]
//!   only.
//! - The sysfs group of [`Driver::ATTRS`] is a static of the C glue, the
//!   registered driver's.
//! - Kernel consumers' work requests carry at most [`wr::MAX_SGE`] SGEs and
//!   [`wr::MAX_INLINE`] octets of inline data through this interface,
//!   whatever the driver's limits are.
//!
//! # Examples
//!
//! A skeleton driver: a link type `skel` (`rdma link add skel0 type skel
//! netdev eth0`) making iWARP devices that have the required verbs only,
//! and fail to create CQs, QPs and MRs. The block is `ignore`d: kernel
//! doctests are built only in the kernel tree (its `rusttest` and KUnit
//! targets), while kif is part of an out-of-tree module. (It was compiled
//! as a module of this crate when written.)
//!
//! ```ignore
//! use crate::kif::{
//!     compat::error::eopnotsupp,
//!     net::{NetDev, NetdevEvent},
//!     rdma::{
//!         attr::{DeviceCaps, Mtu, PortInfo},
//!         cq::CreateCq,
//!         link::{LinkDriver, LinkRegistration},
//!         mr::RegUserMr,
//!         qp::{CreateQp, QpModify},
//!         wc::WorkCompletion,
//!         wr::{RecvWrs, SendWrs},
//!         Device, DeviceSetup, Driver, DriverId, NodeType, RegisteredDevice,
//!     },
//! };
//! use kernel::{c_str, prelude::*, str::CStr, sync::Arc};
//!
//! module! {
//!     type: SkelModule,
//!     name: "skel",
//!     author: "Skeleton developers",
//!     description: "A skeleton iWARP driver",
//!     license: "GPL",
//!     // `rdma link add ... type skel` loads the module by this alias.
//!     alias: ["rdma-link-skel"],
//! }
//!
//! struct SkelModule {
//!     _link: Pin<KBox<LinkRegistration>>,
//! }
//!
//! impl kernel::Module for SkelModule {
//!     fn init(module: &'static ThisModule) -> Result<Self> {
//!         // The devices belong to `module`; dropping the registration
//!         // unregisters them all.
//!         let link = LinkRegistration::register::<SkelLink>(module)?;
//!         Ok(Self { _link: link })
//!     }
//! }
//!
//! /// The link type: `rdma link add skel0 type skel netdev eth0`.
//! struct SkelLink;
//!
//! impl LinkDriver for SkelLink {
//!     type Driver = Skel;
//!     const KIND: &'static CStr = c_str!("skel");
//!
//!     fn newlink(name: &CStr, ndev: &NetDev<'_>) -> Result {
//!         let setup = DeviceSetup {
//!             ndev,
//!             name,
//!             node_guid: 0,
//!             node_desc: b"skel",
//!             num_comp_vectors: 1,
//!         };
//!         Device::<Skel>::register(setup, SkelDevice { ifindex: ndev.ifindex() })
//!     }
//!
//!     fn netdev_event(_dev: &RegisteredDevice<Skel>, _ndev: &NetDev<'_>, _event: NetdevEvent) {
//!         // Port events, or `dev.unregister_queued()` when `ndev` goes.
//!     }
//! }
//!
//! /// The driver's state of a device ([`Device<Skel>`] derefs to it).
//! struct SkelDevice {
//!     ifindex: i32,
//! }
//!
//! /// The verbs driver. The types are its state of each object; the
//! /// optional verbs (`query_gid`, user contexts, SRQs, fast registration,
//! /// the iWARP CM's, counters, ...) are left out, and so are their entries
//! /// in the operations table.
//! struct Skel;
//!
//! #[vtable]
//! impl Driver for Skel {
//!     type Data = SkelDevice;
//!     type Ucontext = ();
//!     type Pd = ();
//!     type Cq = ();
//!     type Qp = ();
//!     type Srq = ();
//!     type Mr = ();
//!     type Listener = ();
//!
//!     // User space's provider library for the devices, and its ABI.
//!     const DRIVER_ID: DriverId = DriverId::Siw;
//!     const UVERBS_ABI_VER: u32 = 1;
//!     const NODE_TYPE: NodeType = NodeType::Rnic;
//!
//!     fn query_device(_dev: &Device<Self>) -> DeviceCaps {
//!         DeviceCaps::default()
//!     }
//!
//!     fn query_port(_dev: &Device<Self>, _port: u32, ndev: &NetDev<'_>) -> PortInfo {
//!         PortInfo {
//!             active: ndev.is_up(),
//!             active_mtu: Mtu::from_link_mtu(ndev.mtu()),
//!             max_mtu: Mtu::from_link_mtu(ndev.max_mtu()),
//!             gid_tbl_len: 1,
//!         }
//!     }
//!
//!     fn alloc_pd(_dev: &Device<Self>) -> Result {
//!         Ok(())
//!     }
//!
//!     fn dealloc_pd(_dev: &Device<Self>, _pd: ()) {}
//!
//!     fn create_cq(_dev: &Device<Self>, _args: CreateCq<'_>) -> Result<Arc<()>> {
//!         Err(eopnotsupp())
//!     }
//!
//!     fn destroy_cq(_dev: &Device<Self>, _cq: Arc<()>) {}
//!
//!     fn poll_cq(_cq: &(), _max: usize, _f: &mut dyn FnMut(&WorkCompletion)) {}
//!
//!     fn req_notify_cq(_cq: &(), _solicited_only: bool, _report_missed: bool) -> u32 {
//!         0
//!     }
//!
//!     fn create_qp(_dev: &Device<Self>, _args: CreateQp<'_, Self>) -> Result<(Arc<()>, u32)> {
//!         Err(eopnotsupp())
//!     }
//!
//!     fn modify_qp(_qp: &Arc<()>, _m: &QpModify) -> Result {
//!         Err(eopnotsupp())
//!     }
//!
//!     fn destroy_qp(_dev: &Device<Self>, _qp: Arc<()>) {}
//!
//!     fn post_send(_qp: &Arc<()>, _wrs: &mut SendWrs<'_, Self>) -> Result {
//!         Err(eopnotsupp())
//!     }
//!
//!     fn post_recv(_qp: &(), _wrs: &mut RecvWrs<'_>) -> Result {
//!         Err(eopnotsupp())
//!     }
//!
//!     fn reg_user_mr(_dev: &Device<Self>, _args: RegUserMr<'_, Self>) -> Result<((), u32)> {
//!         Err(eopnotsupp())
//!     }
//!
//!     fn get_dma_mr(_dev: &Device<Self>, _pd: &(), _access: u32) -> Result<((), u32)> {
//!         Err(eopnotsupp())
//!     }
//!
//!     fn dereg_mr(_dev: &Device<Self>, _mr: ()) -> Result {
//!         Ok(())
//!     }
//! }
//! ```

mod adapter;
pub mod attr;
pub mod cq;
pub mod device;
pub mod driver;
pub mod handle;
pub mod iwcm;
pub mod link;
pub mod mmap;
pub mod mr;
mod object;
pub mod qp;
mod registry;
pub mod restrack;
pub mod srq;
pub mod stats;
pub mod udata;
pub mod umem;
pub mod wc;
pub mod wr;

pub use device::{Device, DeviceSetup, PortEvent, RegisteredDevice, NETDEV_PORT};
pub use driver::{Driver, DriverId, NodeType};
pub use object::with_mr;
