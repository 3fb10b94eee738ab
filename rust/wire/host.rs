// SPDX-License-Identifier: GPL-2.0

//! `rsiw-wire`: the iWARP wire protocol core of rsiw, built for the host.
//!
//! The protocol code lives in `mod.rs` and the files next to it; the very
//! same files are compiled into the kernel module (`pub mod wire;`). This
//! crate root adds what only the host needs: a hardware accelerated
//! [`HostCrc32c`] (the `crc32c` crate) and the [`fuzzing`] entry points.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(test)]
extern crate std;

#[path = "mod.rs"]
mod wire;

pub use wire::*;

pub mod fuzzing;

/// CRC32C backed by the `crc32c` crate (SSE4.2 / ARMv8 CRC when present).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostCrc32c {
    value: u32,
}

impl HostCrc32c {
    /// A fresh computation.
    pub const fn new() -> Self {
        Self { value: 0 }
    }
}

impl crc::Crc32c for HostCrc32c {
    fn reset(&mut self) {
        self.value = 0;
    }
    fn update(&mut self, data: &[u8]) {
        self.value = crc32c::crc32c_append(self.value, data);
    }
    fn finalize(&self) -> u32 {
        self.value
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crc::Crc32c;

    #[test]
    fn host_crc_matches_soft() {
        let data: std::vec::Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut h = HostCrc32c::new();
        h.update(&data[..10]);
        h.update(&data[10..]);
        assert_eq!(h.finalize(), crc::crc32c(&data));
        assert_eq!(h.finalize(), crc32c::crc32c(&data));
    }
}
