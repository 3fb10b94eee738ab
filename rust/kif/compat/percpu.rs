// SPDX-License-Identifier: GPL-2.0

//! Per-CPU counters (`alloc_percpu`, `this_cpu_add`): the data path counts
//! without a locked instruction and without sharing a cache line between
//! CPUs; readers sum over all CPUs.
//!
//! The 6.12 `kernel` crate has no per-CPU data; Rust-for-Linux has it as
//! `kernel::percpu` (per-CPU variables reached through this CPU's copy).
//! rsiw needs only an array of counters, added to in any context and
//! summed by readers, so [`PerCpuCounters`] has just that.
//!
//! No supported kernel makes it unnecessary yet: up to 7.3 the `kernel`
//! crate has no per-CPU data.

use core::ptr::NonNull;
use kernel::prelude::*;

use crate::kif::glue;

/// `N` counters per CPU.
///
/// # Invariants
///
/// `ptr` is a per-CPU area of `N` `u64` counters from
/// `rsiw_counters_alloc`, owned by this value until it drops.
pub struct PerCpuCounters<const N: usize> {
    ptr: NonNull<u64>,
}

// SAFETY: the per-CPU area is only written with `this_cpu_add` (each CPU
// its own copy, interrupt safe) and read by summing; it lives until drop.
unsafe impl<const N: usize> Send for PerCpuCounters<N> {}
// SAFETY: as above; `&self` methods never hand out references into it.
unsafe impl<const N: usize> Sync for PerCpuCounters<N> {}

impl<const N: usize> PerCpuCounters<N> {
    /// Allocates `N` zeroed counters per CPU.
    pub fn new() -> Result<Self> {
        let n = u32::try_from(N).map_err(|_| EINVAL)?;
        // SAFETY: plain allocation; the area is zeroed.
        let p = unsafe { glue::rsiw_counters_alloc(n) };
        // INVARIANT: a fresh area of `N` counters, or the error.
        Ok(Self {
            ptr: NonNull::new(p).ok_or(ENOMEM)?,
        })
    }

    /// Adds `v` to counter `i` (ignored if out of range) on this CPU.
    #[inline]
    pub fn add(&self, i: usize, v: u64) {
        if i >= N {
            return;
        }
        // What `this_cpu_add()` compiles to on x86-64: one `add` to the
        // per-CPU pointer relative to %gs (this CPU's copy), so that the data
        // path's counters cost no call. One instruction on one CPU's copy
        // cannot be split by preemption or interrupts.
        #[cfg(all(CONFIG_X86_64, CONFIG_SMP))]
        // SAFETY: `ptr` is a live per-CPU area of `N` counters and `i < N`;
        // a single `add` to this CPU's copy is safe in any context.
        unsafe {
            core::arch::asm!(
                "add qword ptr gs:[{p}], {v}",
                p = in(reg) self.ptr.as_ptr().add(i),
                v = in(reg) v,
                options(nostack),
            );
        }
        #[cfg(not(all(CONFIG_X86_64, CONFIG_SMP)))]
        // SAFETY: `ptr` is a live per-CPU area of `N` counters and
        // `i < N`; `this_cpu_add` is safe in any context.
        unsafe {
            glue::rsiw_counters_add(self.ptr.as_ptr(), i as u32, v)
        }
    }

    /// The sum of counter `i` over all CPUs (0 if out of range).
    pub fn sum(&self, i: usize) -> u64 {
        if i >= N {
            return 0;
        }
        // SAFETY: as in `add`; reading other CPUs' counters races only
        // with their own increments (a torn read cannot happen on 64-bit).
        unsafe { glue::rsiw_counters_sum(self.ptr.as_ptr(), i as u32) }
    }
}

impl<const N: usize> Drop for PerCpuCounters<N> {
    fn drop(&mut self) {
        // SAFETY: allocated by `rsiw_counters_alloc`, freed once.
        unsafe { glue::rsiw_counters_free(self.ptr.as_ptr()) }
    }
}
