// SPDX-License-Identifier: GPL-2.0

//! What the kernel's crates have in both supported kernels but under
//! another path or name, or with another signature, at one path for kif:
//! the 6.12 version (`upstream/moved.rs` is 7.3's). Nothing here is
//! dropped when 6.12 goes; kif's users then switch to 7.3's names.

use kernel::{
    alloc::{Allocator, Vec},
    init::PinInit,
    str::CStr,
    types::Opaque,
    uaccess::UserPtr,
};

pub use kernel::{
    init::pin_init_from_closure,
    types::{ARef, AlwaysRefCounted},
};

/// The C string's pointer, in a constant context too.
pub const fn as_char_ptr(s: &CStr) -> *const kernel::ffi::c_char {
    s.as_char_ptr()
}

/// The pointer to the value inside the `Opaque` at `p`.
pub const fn opaque_raw_get<T>(p: *const Opaque<T>) -> *mut T {
    Opaque::raw_get(p)
}

/// The user pointer for a user address the RDMA core passed as a pointer.
pub fn user_ptr(p: *mut kernel::ffi::c_void) -> UserPtr {
    p as UserPtr
}

/// Runs the pinned initialiser `init` on `slot`.
///
/// # Safety
///
/// As `PinInit::__pinned_init`: `slot` is valid for writes and does not
/// move until the value is dropped; on `Err` it is left uninitialised.
pub unsafe fn pinned_init<T, E>(init: impl PinInit<T, E>, slot: *mut T) -> Result<(), E> {
    // SAFETY: the caller's contract is that of `__pinned_init`.
    unsafe { init.__pinned_init(slot) }
}

/// Extends `v` by `n` elements written into its spare capacity.
///
/// # Safety
///
/// The `n` elements after the current length are initialised and within
/// the capacity.
pub unsafe fn vec_inc_len<T, A: Allocator>(v: &mut Vec<T, A>, n: usize) {
    // SAFETY: per the contract.
    unsafe { v.set_len(v.len() + n) }
}

/// Shortens `v` to `len` elements (no-op if it is not longer); the
/// elements are `Copy`, so nothing is dropped.
pub fn vec_truncate<T: Copy, A: Allocator>(v: &mut Vec<T, A>, len: usize) {
    if len < v.len() {
        // SAFETY: `len` is below the length and the elements need no drop.
        unsafe { v.set_len(len) }
    }
}

/// The kernel's `crc32c()`: the CRC32C register `crc` updated with the
/// `len` octets at `p` (6.12 takes an `unsigned int` length: `len` must be
/// below 4 GiB).
///
/// # Safety
///
/// `p` is valid for reads of `len` octets.
pub unsafe fn crc32c(crc: u32, p: *const kernel::ffi::c_void, len: usize) -> u32 {
    // SAFETY: per the contract; `len` fits (the contract).
    unsafe { kernel::bindings::crc32c(crc, p, len as u32) }
}

/// The octets of the C string `s`, without its NUL.
pub fn cstr_bytes(s: &CStr) -> &[u8] {
    s.as_bytes()
}
