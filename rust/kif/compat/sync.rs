// SPDX-License-Identifier: GPL-2.0

//! An interrupt-safe spinlock. The 6.12 `kernel` crate only has the plain
//! `spin_lock` flavour; state that the TCP receive softirq, kernel RDMA
//! consumers (which post and poll from any context) and process context all
//! touch needs `spin_lock_irqsave`.
//!
//! Named as the `SpinLockIrq` of the Rust-for-Linux interrupt series
//! (`kernel::sync::SpinLockIrq`, `new_spinlock_irq!`): a [`Lock`] with a
//! backend that disables interrupts. That one tracks the interrupt state
//! in a per-CPU count instead of saving the flags in the guard, and lets
//! code that already runs with interrupts off take the lock without
//! touching them.
//!
//! Unnecessary from 7.3 on, whose crate has `kernel::sync::SpinLockIrq`:
//! there `mod.rs` picks `upstream/sync.rs`.

use kernel::{
    bindings,
    sync::lock::{Backend, Lock},
};

/// A spinlock taken with interrupts (and so softirqs) disabled.
pub type SpinLockIrq<T> = Lock<T, SpinLockIrqBackend>;

/// Creates a [`SpinLockIrq`] initialiser with a new lock class.
#[macro_export]
macro_rules! new_spinlock_irq {
    ($inner:expr $(, $name:literal)? $(,)?) => {
        $crate::kif::compat::sync::SpinLockIrq::new(
            $inner,
            ::kernel::optional_name!($($name)?),
            ::kernel::static_lock_class!(),
        )
    };
}
pub use new_spinlock_irq;

/// The backend of [`SpinLockIrq`].
pub struct SpinLockIrqBackend;

// SAFETY: the underlying `spinlock_t` gives mutual exclusion; the saved
// interrupt flags travel in the guard from `lock` to `unlock`.
unsafe impl Backend for SpinLockIrqBackend {
    type State = bindings::spinlock_t;
    type GuardState = kernel::ffi::c_ulong;

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const kernel::ffi::c_char,
        key: *mut bindings::lock_class_key,
    ) {
        // SAFETY: the caller guarantees `ptr` is valid for writes and `name`
        // and `key` live forever.
        unsafe { bindings::__spin_lock_init(ptr, name, key) }
    }

    #[cfg(not(CONFIG_PREEMPT_RT))]
    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // What `spin_lock_irqsave()` expands to, without a call through the
        // glue: this lock is on the path of every message.
        // SAFETY: the caller guarantees `ptr` is an initialised lock; without
        // PREEMPT_RT a `spinlock_t` is a union whose member at offset 0 is
        // its `raw_spinlock_t` (`rlock`).
        unsafe { bindings::_raw_spin_lock_irqsave(ptr.cast::<bindings::raw_spinlock_t>()) }
    }

    #[cfg(not(CONFIG_PREEMPT_RT))]
    unsafe fn unlock(ptr: *mut Self::State, flags: &Self::GuardState) {
        // SAFETY: the caller owns the lock; `flags` come from `lock`; the
        // cast is the one in `lock`.
        unsafe {
            bindings::_raw_spin_unlock_irqrestore(ptr.cast::<bindings::raw_spinlock_t>(), *flags)
        }
    }

    #[cfg(CONFIG_PREEMPT_RT)]
    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: the caller guarantees `ptr` is an initialised lock.
        unsafe { crate::kif::glue::rsiw_spin_lock_irqsave(ptr) }
    }

    #[cfg(CONFIG_PREEMPT_RT)]
    unsafe fn unlock(ptr: *mut Self::State, flags: &Self::GuardState) {
        // SAFETY: the caller owns the lock; `flags` come from `lock`.
        unsafe { crate::kif::glue::rsiw_spin_unlock_irqrestore(ptr, *flags) }
    }
}
