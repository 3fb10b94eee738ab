// SPDX-License-Identifier: GPL-2.0

//! Sleeping for a while in process context. Newer kernels have
//! `kernel::time::delay::fsleep`, which takes a `Delta`.
//!
//! Drop when the minimum kernel has `kernel::time::delay`.

/// Sleeps for about `ms` milliseconds (`msleep`). Process context only.
pub fn sleep_ms(ms: u32) {
    // SAFETY: a plain sleep; callers run in process context.
    unsafe { kernel::bindings::msleep(ms) };
}
