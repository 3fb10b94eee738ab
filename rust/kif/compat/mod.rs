// SPDX-License-Identifier: GPL-2.0

//! What the 6.12 `kernel` crate lacks and rsiw needs. Each module is named
//! and shaped after its counterpart in newer Rust-for-Linux (its `//!` doc
//! names it and says where rsiw's version differs) and is dropped, its
//! users switched to the `kernel` crate, once the minimum kernel rsiw
//! supports has that counterpart.

pub mod delay;
pub mod delayed_work;
pub mod error;
pub mod percpu;
pub mod random;
pub mod rcu;
pub mod sync;
pub mod workqueue;
pub mod xarray;
