// SPDX-License-Identifier: GPL-2.0

//! `rsiw-state`: the pure logic of rsiw's queue pairs, built for the host.
//!
//! The logic lives in `mod.rs` and the files next to it; the very same
//! files are compiled into the kernel module (`pub mod state;`). This
//! crate root adds what only the host needs: [`fifo::Slots`] for `Vec`.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

extern crate alloc;

#[path = "mod.rs"]
mod state;

pub use state::*;

use alloc::collections::TryReserveError;
use alloc::vec::Vec;

impl<T> fifo::Slots<T> for Vec<Option<T>> {
    type Error = TryReserveError;

    fn with_len(n: usize) -> Result<Self, TryReserveError> {
        let mut v = Vec::new();
        v.try_reserve_exact(n)?;
        v.resize_with(n, || None);
        Ok(v)
    }
}
