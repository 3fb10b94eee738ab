// SPDX-License-Identifier: GPL-2.0

//! Kernel interface layer: the only part of rsiw with `unsafe`.
//!
//! Each submodule wraps one kernel facility in a safe type; the driver
//! above sees these types, never `kernel::bindings`. Three groups:
//!
//! - [`compat`]: what the 6.12 `kernel` crate lacks (an interrupt-safe
//!   spinlock, xarrays, delayed work, per-CPU counters, RCU, error
//!   codes, ...), each module named and shaped after its counterpart in
//!   newer Rust-for-Linux and dropped once the minimum kernel has that;
//! - [`rdma`]: the RDMA core's provider interface (devices, the verbs a
//!   driver implements, work requests and completions, the iWARP CM),
//!   usable by any RDMA driver;
//! - [`siw`]: the siw user ABI (`include/uapi/rdma/siw-abi.h`), the queue
//!   elements and rings rsiw shares with rdma-core's siw provider;
//!
//! and the facilities rsiw's transport needs: net devices and the RDMA
//! link type ([`net`]), kernel TCP sockets ([`sock`]), the kernel's CRC32C
//! ([`crc`]), lock-free STag lookups ([`rcu_xarray`]), the module
//! parameters ([`params`]), other modules by name ([`modules`]) and
//! rate-limited warnings a peer can trigger ([`log`]).

pub mod compat;
pub mod crc;
mod glue;
pub mod log;
pub mod modules;
pub mod net;
pub mod notifier;
pub mod params;
pub mod rcu_xarray;
pub mod rdma;
pub mod siw;
pub mod sock;
pub mod trace;
