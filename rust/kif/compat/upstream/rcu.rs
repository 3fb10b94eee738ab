// SPDX-License-Identifier: GPL-2.0

//! RCU read-side critical sections: the kernel's `kernel::sync::rcu`
//! (`../rcu.rs` is the 6.12 version, shaped as this one).

pub use kernel::sync::rcu::{read_lock, Guard};
