// SPDX-License-Identifier: GPL-2.0

//! The names of a driver's per-port counters (`rdma statistic`), in the
//! form the RDMA core takes them.

use core::ptr;
use kernel::{bindings, str::CStr};

/// Most counters a driver can name.
pub const MAX_STATS: usize = 32;

/// The names of a driver's counters as the RDMA core takes them (an array
/// of `struct rdma_stat_desc` that lives as long as the module).
///
/// # Invariants
///
/// The first `n` (at most [`MAX_STATS`]) descriptors name `'static` C
/// strings.
pub struct StatDescs {
    d: [bindings::rdma_stat_desc; MAX_STATS],
    n: usize,
}

// SAFETY: nothing writes a `StatDescs` after `new` (no method takes `&mut
// self`, and `as_ptr` gives the core a `*const` that it only reads), and
// its pointers are to `'static` C strings, which any thread may read.
unsafe impl Sync for StatDescs {}

impl StatDescs {
    /// No counters.
    pub const EMPTY: Self = Self::new(&[]);

    /// Descriptors for `names` (at most [`MAX_STATS`] are used).
    pub const fn new(names: &[&'static CStr]) -> Self {
        let mut d = [bindings::rdma_stat_desc {
            name: ptr::null(),
            flags: 0,
            priv_: ptr::null(),
        }; MAX_STATS];
        let mut i = 0;
        while i < names.len() && i < MAX_STATS {
            d[i].name = crate::kif::compat::moved::as_char_ptr(names[i]);
            i += 1;
        }
        // INVARIANT: the first `i` descriptors name the `'static` names.
        Self { d, n: i }
    }

    /// Number of counters.
    pub const fn len(&self) -> usize {
        self.n
    }

    /// Whether there is none.
    pub const fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The descriptors, for `rdma_alloc_hw_stats_struct`.
    pub(super) fn as_ptr(&self) -> *const bindings::rdma_stat_desc {
        self.d.as_ptr()
    }
}
