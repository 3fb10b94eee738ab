// SPDX-License-Identifier: GPL-2.0

//! CRC32C (Castagnoli) as used by MPA (RFC 5044 section 4.4, computed the
//! iSCSI way, RFC 3720 appendix B.4).
//!
//! The core never depends on a CRC implementation: everything that needs a
//! CRC is generic over [`Crc32c`]. The host crate implements it with the
//! hardware accelerated `crc32c` crate, the kernel with the kernel's
//! `crc32c()` (raw register update: MPA CRC = `crc32c(!0, data) ^ !0`).
//! [`SoftCrc32c`] is a table driven fallback with no dependencies.
//!
//! On the wire the CRC value is sent least significant octet first, i.e.
//! `value.to_le_bytes()` (iSCSI convention; upstream siw sends the
//! `crypto_shash_final` output unchanged, which is the same).

/// An incremental CRC32C computation (reflected, init `!0`, final xor `!0`).
pub trait Crc32c {
    /// Starts a new computation.
    fn reset(&mut self);
    /// Feeds `data` into the running computation.
    fn update(&mut self, data: &[u8]);
    /// The CRC32C of everything fed since the last [`Crc32c::reset`]
    /// (already complemented). Does not change the state.
    fn finalize(&self) -> u32;
}

/// Encodes a CRC value in MPA wire order.
pub const fn crc_to_wire(crc: u32) -> [u8; 4] {
    crc.to_le_bytes()
}

/// Decodes a CRC value from MPA wire order.
pub const fn crc_from_wire(b: [u8; 4]) -> u32 {
    u32::from_le_bytes(b)
}

/// The reflected CRC32C polynomial.
pub const POLY_REFLECTED: u32 = 0x82F6_3B78;

const fn make_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ POLY_REFLECTED
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

static TABLE: [u32; 256] = make_table();

/// Raw register update without pre/post inversion (like the kernel's
/// `crc32c(seed, data, len)`): `crc32c_raw(!0, d) ^ !0` is the CRC32C of `d`.
pub fn crc32c_raw(mut reg: u32, data: &[u8]) -> u32 {
    for &b in data {
        let idx = ((reg ^ u32::from(b)) & 0xff) as u8;
        reg = TABLE[usize::from(idx)] ^ (reg >> 8);
    }
    reg
}

/// One-shot CRC32C of `data`.
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c_raw(!0, data) ^ !0
}

/// Table driven software CRC32C.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoftCrc32c {
    reg: u32,
}

impl SoftCrc32c {
    /// A fresh computation.
    pub const fn new() -> Self {
        Self { reg: !0 }
    }
}

impl Default for SoftCrc32c {
    fn default() -> Self {
        Self::new()
    }
}

impl Crc32c for SoftCrc32c {
    fn reset(&mut self) {
        self.reg = !0;
    }
    fn update(&mut self, data: &[u8]) {
        self.reg = crc32c_raw(self.reg, data);
    }
    fn finalize(&self) -> u32 {
        self.reg ^ !0
    }
}
