// SPDX-License-Identifier: GPL-2.0

//! The user-space side channel of a verb (`struct ib_udata`): the request
//! and response structures of the driver's user ABI (for a siw-compatible
//! driver, those of `include/uapi/rdma/siw-abi.h`).

use core::marker::PhantomData;
use kernel::{bindings, prelude::*, uaccess::UserSlice};

use crate::kif::compat::moved;

/// The udata of one verb call; empty for kernel callers.
///
/// # Invariants
///
/// `raw` is a copy of the call's `ib_udata`, whose buffers stay valid user
/// addresses of the calling process for `'a`.
pub struct Udata<'a> {
    raw: Option<bindings::ib_udata>,
    _p: PhantomData<&'a mut bindings::ib_udata>,
}

impl<'a> Udata<'a> {
    /// Wraps the udata the RDMA core passed to a verb (null for kernel
    /// consumers).
    ///
    /// # Safety
    ///
    /// `p` is null or a valid udata for the duration of `'a`.
    pub(in crate::kif) unsafe fn from_raw(p: *mut bindings::ib_udata) -> Result<Self> {
        // SAFETY: per the contract.
        let raw = unsafe { p.as_ref() }.map(|u| bindings::ib_udata { ..*u });
        // INVARIANT: per the contract.
        Ok(Self {
            raw,
            _p: PhantomData,
        })
    }

    /// Whether the verb comes from user space.
    pub fn is_user(&self) -> bool {
        self.raw.is_some()
    }

    /// Length of the request user space passed.
    pub fn inlen(&self) -> usize {
        self.raw.as_ref().map_or(0, |u| u.inlen)
    }

    /// Room user space left for the response.
    pub fn outlen(&self) -> usize {
        self.raw.as_ref().map_or(0, |u| u.outlen)
    }

    /// Copies the response `bytes` to user space. Fails with `EINVAL` when
    /// user space left less room than the response needs, with `EFAULT`
    /// when the buffer is not writable. A no-op for kernel callers.
    pub fn respond(&mut self, bytes: &[u8]) -> Result {
        let Some(u) = self.raw.as_ref() else {
            return Ok(());
        };
        if u.outlen < bytes.len() {
            return Err(EINVAL);
        }
        UserSlice::new(moved::user_ptr(u.outbuf), bytes.len())
            .writer()
            .write_slice(bytes)
    }

    /// Reads the request into `buf` (which must not be longer than `inlen`).
    pub fn request(&self, buf: &mut [u8]) -> Result {
        let Some(u) = self.raw.as_ref() else {
            return Err(EINVAL);
        };
        if u.inlen < buf.len() {
            return Err(EINVAL);
        }
        UserSlice::new(moved::user_ptr(u.inbuf.cast_mut()), buf.len())
            .reader()
            .read_slice(buf)
    }
}
