// SPDX-License-Identifier: GPL-2.0

//! The interrupt-safe spinlock: the kernel's `kernel::sync::SpinLockIrq`
//! (`../sync.rs` is the 6.12 version). The kernel's counts interrupt
//! disabling per CPU (`spin_lock_irq_disable`) instead of saving the flags
//! in the guard; to rsiw both are a lock whose holder cannot be
//! interrupted on its CPU.

pub use kernel::sync::SpinLockIrq;

/// Creates a [`SpinLockIrq`] initialiser with a new lock class (the
/// kernel's `new_spinlock_irq!`).
#[macro_export]
macro_rules! new_spinlock_irq {
    ($($args:tt)*) => {
        ::kernel::new_spinlock_irq!($($args)*)
    };
}
pub use new_spinlock_irq;
