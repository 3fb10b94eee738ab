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
