// SPDX-License-Identifier: GPL-2.0

//! MPA CRC32C with the kernel's `crc32c()` (library, possibly accelerated).
//!
//! The kernel function is the raw register update (no pre/post inversion),
//! so the MPA CRC of `d` is `crc32c(!0, d) ^ !0`, exactly the
//! [`crate::wire::crc::Crc32c`] contract. The value goes on the wire least
//! significant octet first (`crate::wire::crc::crc_to_wire`), as upstream siw
//! sends it.

use crate::{kif::compat::moved::crc32c, wire::crc::Crc32c};

/// An incremental CRC32C computed by the kernel's `crc32c()`.
#[derive(Clone, Copy, Debug)]
pub struct KernelCrc32c {
    reg: u32,
}

impl KernelCrc32c {
    /// A fresh computation.
    pub const fn new() -> Self {
        Self { reg: !0 }
    }
}

impl Default for KernelCrc32c {
    fn default() -> Self {
        Self::new()
    }
}

impl Crc32c for KernelCrc32c {
    fn reset(&mut self) {
        self.reg = !0;
    }

    fn update(&mut self, data: &[u8]) {
        // `crc32c()` takes an `unsigned int` length: feed huge slices in
        // chunks (never happens for FPDUs, which are at most 64 KiB).
        for chunk in data.chunks(1 << 30) {
            // SAFETY: `chunk` is a valid, initialised slice for the call;
            // `crc32c()` only reads `length` octets from `address`.
            self.reg = unsafe { crc32c(self.reg, chunk.as_ptr().cast(), chunk.len()) };
        }
    }

    fn finalize(&self) -> u32 {
        self.reg ^ !0
    }
}
