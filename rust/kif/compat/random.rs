// SPDX-License-Identifier: GPL-2.0

//! Random numbers from the kernel's CRNG (`get_random_bytes`); the 6.12
//! `kernel` crate has no interface to it.
//!
//! No supported kernel makes it unnecessary yet: up to 7.3 the `kernel`
//! crate has no interface to the CRNG.

/// A random 32-bit number.
pub fn random_u32() -> u32 {
    let mut v = 0u32;
    // SAFETY: `v` is valid for writes of 4 octets.
    unsafe { kernel::bindings::get_random_bytes(core::ptr::from_mut(&mut v).cast(), 4) };
    v
}
