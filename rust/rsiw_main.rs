// SPDX-License-Identifier: GPL-2.0

//! rsiw: a software iWARP RDMA device written in Rust.
//!
//! The crate has three layers:
//!
//! * [`wire`] is the iWARP wire protocol core (MPA, DDP, RDMAP), and
//!   [`state`] the QP state machine and the RDMA Read queue rings. They
//!   have no kernel dependency; the same files build host crates for fast
//!   tests.
//! * [`kif`] is the kernel interface layer: thin safe wrappers over the RDMA
//!   core, net devices and sockets. It is the only place with `unsafe`.
//! * The driver proper is built on [`kif`], [`wire`] and [`state`] and
//!   contains no `unsafe` and no raw bindings. Its modules form layers,
//!   each using only its own and lower ones (`tests/host/layers` checks
//!   it), top to bottom:
//!   - this file: the module (`module!`) and its state;
//!   - [`verbs`]: the `ib_device` operations, dispatched to the layers
//!     below;
//!   - [`device`]: the device, its object tables, links, net device events;
//!   - [`cm`]: connection endpoints and listeners;
//!   - [`qp`]: queue pairs, their state machine, posting, the RDMA Read
//!     queues and the transmit and receive engines;
//!   - [`cq`], [`srq`]: completion queues, shared receive queues;
//!   - [`mem`]: memory registration, and memory access by the data path;
//!   - [`base`]: the driver type, user contexts, PDs, limits, object
//!     quotas, counters and the siw ABI constants.

#![recursion_limit = "256"]

use kernel::prelude::*;
// (`module!` with the same keys on every supported kernel)
use kif::compat::module;

mod base;
mod cm;
mod cq;
mod device;
pub mod kif;
mod mem;
mod qp;
mod srq;
pub mod state;
mod verbs;
pub mod wire;

module! {
    type: RsiwModule,
    name: "rsiw",
    authors: ["rsiw developers"],
    description: "Software iWARP RDMA device (RFC 5040, 5041, 5044, 6581)",
    license: "GPL",
    alias: ["rdma-link-rsiw"],
}

/// Module state: the `rsiw` RDMA link type (and with `siw_link_type=1`
/// upstream siw's `siw` too, for harnesses that name siw) and the net
/// device notifier.
///
/// Dropping it removes the link type and unregisters every rsiw device.
struct RsiwModule {
    // Dropped in order: the link type and all devices first, then the
    // workqueue (which drains whatever they left queued).
    _link: Pin<KBox<kif::rdma::link::LinkRegistration>>,
    _wq: kif::compat::workqueue::WqOwner,
}

impl kernel::Module for RsiwModule {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let wq = kif::compat::workqueue::WqOwner::new()?;
        let mut link = kif::rdma::link::LinkRegistration::register::<device::Link>(module)?;
        if kif::params::siw_link_type() {
            if let Err(e) = link.as_mut().share(device::SIW_KIND) {
                pr_err!(
                    "siw_link_type=1 refused: unload siw, or load rsiw without siw_link_type\n"
                );
                return Err(e);
            }
            pr_info!("soft-iWARP device types 'rsiw' and 'siw' registered\n");
        } else {
            pr_info!("soft-iWARP device type 'rsiw' registered\n");
        }
        Ok(RsiwModule {
            _link: link,
            _wq: wq,
        })
    }
}
