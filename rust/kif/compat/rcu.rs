// SPDX-License-Identifier: GPL-2.0

//! RCU read-side critical sections, shaped as newer kernels'
//! `kernel::sync::rcu`: [`read_lock`] returns a [`Guard`] that ends the
//! section when dropped. `rcu_read_lock` is a static inline function, so
//! both ends go through the C glue.
//!
//! Unnecessary from 7.3 on (its crate has `kernel::sync::rcu`; 6.12's
//! has not): there `mod.rs` picks `upstream/rcu.rs`.

use core::marker::PhantomData;

// The glue's out-of-line `rcu_read_lock` and `rcu_read_unlock`, which only
// this module calls (so they are declared here, not in kif's `glue`).
extern "C" {
    fn rsiw_rcu_read_lock();
    fn rsiw_rcu_read_unlock();
}

/// An RCU read-side critical section; it ends when the guard is dropped.
///
/// # Invariants
///
/// The guard was made by [`read_lock`], which entered the section that the
/// guard's drop leaves, on the same CPU (it is not `Send`).
#[must_use = "the read-side critical section ends when the guard is dropped"]
pub struct Guard(PhantomData<*mut ()>);

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the type invariant: the section entered in `read_lock`.
        unsafe { rsiw_rcu_read_unlock() };
    }
}

/// Enters an RCU read-side critical section (any context).
#[inline]
pub fn read_lock() -> Guard {
    // SAFETY: entering a read-side section is allowed in any context.
    unsafe { rsiw_rcu_read_lock() };
    // INVARIANT: the section was entered just above.
    Guard(PhantomData)
}
