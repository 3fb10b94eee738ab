// SPDX-License-Identifier: GPL-2.0

//! The RDMA core's provider interface (`include/rdma/ib_verbs.h`), in the
//! shape of `kernel::net::phy`: a driver implements the [`Driver`] trait
//! (its identity as constants, its verbs as methods, the optional ones
//! optional) and registers [`Device`]s of it; [`adapter`] turns the RDMA
//! core's calls into calls of the driver's methods with safe types.
//!
//! Nothing here is specific to one driver: the driver chooses its driver
//! id, user ABI, limits and counters, and keeps its own state in each
//! object the core creates.

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
