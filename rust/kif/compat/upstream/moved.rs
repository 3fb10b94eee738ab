// SPDX-License-Identifier: GPL-2.0

//! What the kernel's crates have in both supported kernels but under
//! another path or name, or with another signature, at one path for kif:
//! 7.3's version (`../moved.rs` is 6.12's, with the same items).

use kernel::{
    alloc::{Allocator, Vec},
    prelude::*,
    types::Opaque,
    uaccess::UserPtr,
};

pub use kernel::sync::aref::{ARef, AlwaysRefCounted};
pub use pin_init::pin_init_from_closure;

/// The C string's pointer, in a constant context too.
pub const fn as_char_ptr(s: &CStr) -> *const kernel::ffi::c_char {
    kernel::str::as_char_ptr_in_const_context(s)
}

/// The pointer to the value inside the `Opaque` at `p`.
pub const fn opaque_raw_get<T>(p: *const Opaque<T>) -> *mut T {
    Opaque::cast_into(p)
}

/// The user pointer for a user address the RDMA core passed as a pointer.
pub fn user_ptr(p: *mut kernel::ffi::c_void) -> UserPtr {
    UserPtr::from_ptr(p)
}

/// Runs the pinned initialiser `init` on `slot`.
///
/// # Safety
///
/// As `PinInit::__init`: `slot` is valid for writes and does not move
/// until the value is dropped; on `Err` it is left uninitialised.
pub unsafe fn pinned_init<T, E>(init: impl PinInit<T, E>, slot: *mut T) -> Result<(), E> {
    // SAFETY: the caller's contract is that of `__init`.
    unsafe { init.__init(slot) }
}

/// Extends `v` by `n` elements written into its spare capacity.
///
/// # Safety
///
/// The `n` elements after the current length are initialised and within
/// the capacity.
pub unsafe fn vec_inc_len<T, A: Allocator>(v: &mut Vec<T, A>, n: usize) {
    // SAFETY: per the contract.
    unsafe { v.inc_len(n) }
}

/// Shortens `v` to `len` elements (no-op if it is not longer); the
/// elements are `Copy`, so nothing is dropped.
pub fn vec_truncate<T: Copy, A: Allocator>(v: &mut Vec<T, A>, len: usize) {
    v.truncate(len);
}

/// The kernel's `crc32c()`: the CRC32C register `crc` updated with the
/// `len` octets at `p`.
///
/// # Safety
///
/// `p` is valid for reads of `len` octets.
pub unsafe fn crc32c(crc: u32, p: *const kernel::ffi::c_void, len: usize) -> u32 {
    // SAFETY: per the contract.
    unsafe { kernel::bindings::crc32c(crc, p, len) }
}

/// The octets of the C string `s`, without its NUL.
pub fn cstr_bytes(s: &CStr) -> &[u8] {
    s.to_bytes()
}
