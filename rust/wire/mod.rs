// SPDX-License-Identifier: GPL-2.0

//! iWARP wire protocol core: MPA (RFC 5044 / RFC 6581), DDP (RFC 5041)
//! and RDMAP (RFC 5040, with the RFC 7306 extensions) encoding, parsing
//! and framing.
//!
//! This tree is shared verbatim by the kernel module (`pub mod wire;`) and
//! by the host crate `rsiw-wire`. It only uses `core`: no allocation, no
//! `unsafe`, no floats, and no panic reachable from wire input.
//!
//! Layout:
//! - [`crc`]: the CRC32C abstraction ([`crc::Crc32c`]) and a table driven
//!   software fallback.
//! - [`mpa`]: FPDU framing arithmetic (ULPDU_Length, pad, CRC, MULPDU).
//! - [`markers`]: MPA marker positions and FPDUPTR computation.
//! - [`connect`]: MPA Request/Reply frames, RFC 6581 IRD/ORD data.
//! - [`ddp`]: DDP control field, tagged/untagged headers, receiver checks.
//! - [`rdmap`]: RDMAP opcodes, complete segment headers, Read Request.
//! - [`rfc7306`]: Atomic Request/Response headers and operations, the
//!   receiver's checks of the RFC 7306 messages.
//! - [`error`]: typed protocol errors mapped to TERMINATE codes.
//! - [`term`]: the RDMAP TERMINATE message.
//! - [`rx`]: the resumable, zero-copy receive deframer.
//! - [`inbound`]: the receiver's message bookkeeping above the deframer
//!   (expected MSNs, the untagged message in progress, Read Request and
//!   Read Response rules, scattering over SGEs, the TERMINATE's header).
//! - [`tx`]: FPDU framing plans, segmentation and batching.
//! - [`txstream`]: a transmit stream across send calls: FPDU and batch
//!   sizes, the FPDUs of the next call, what a partial send means.

pub mod connect;
pub mod crc;
pub mod ddp;
pub mod error;
pub mod inbound;
pub mod markers;
pub mod mpa;
pub mod rdmap;
pub mod rfc7306;
pub mod rx;
pub mod term;
pub mod tx;
pub mod txstream;

/// Reads a big endian `u16` at `off`, `None` when out of range.
pub(crate) fn be16(buf: &[u8], off: usize) -> Option<u16> {
    let end = off.checked_add(2)?;
    let b = buf.get(off..end)?;
    let a: [u8; 2] = b.try_into().ok()?;
    Some(u16::from_be_bytes(a))
}

/// Reads a big endian `u32` at `off`, `None` when out of range.
pub(crate) fn be32(buf: &[u8], off: usize) -> Option<u32> {
    let end = off.checked_add(4)?;
    let b = buf.get(off..end)?;
    let a: [u8; 4] = b.try_into().ok()?;
    Some(u32::from_be_bytes(a))
}

/// Reads a big endian `u64` at `off`, `None` when out of range.
pub(crate) fn be64(buf: &[u8], off: usize) -> Option<u64> {
    let end = off.checked_add(8)?;
    let b = buf.get(off..end)?;
    let a: [u8; 8] = b.try_into().ok()?;
    Some(u64::from_be_bytes(a))
}

/// Copies `src` into `out` at `off`; `None` when it does not fit.
pub(crate) fn put(out: &mut [u8], off: usize, src: &[u8]) -> Option<()> {
    let end = off.checked_add(src.len())?;
    out.get_mut(off..end)?.copy_from_slice(src);
    Some(())
}
