// SPDX-License-Identifier: GPL-2.0

//! Sleeping for a while in process context. Newer kernels have
//! `kernel::time::delay::fsleep`, which takes a `Delta`.
//!
//! Unnecessary from 7.3 on (its crate has `fsleep`; not 6.12's): there
//! `mod.rs` picks `upstream/delay.rs`, the kernel's under this name.

/// Sleeps for about `ms` milliseconds (`msleep`). Process context only.
pub fn sleep_ms(ms: u32) {
    // SAFETY: a plain sleep; callers run in process context.
    unsafe { kernel::bindings::msleep(ms) };
}
