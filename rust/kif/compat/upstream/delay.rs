// SPDX-License-Identifier: GPL-2.0

//! Sleeping for a while in process context: the kernel's
//! `kernel::time::delay::fsleep` under rsiw's name (`../delay.rs` is the
//! 6.12 version, which calls `msleep`).

use kernel::time::{delay::fsleep, Delta};

/// Sleeps for about `ms` milliseconds (`fsleep`). Process context only.
pub fn sleep_ms(ms: u32) {
    fsleep(Delta::from_millis(ms.into()));
}
