// SPDX-License-Identifier: GPL-2.0

//! An ID-allocating `xarray` of reference-counted objects (QPs by QP
//! number; memory objects by STag index, read under RCU through kif's
//! `RcuXArray`).
//!
//! Shaped as newer kernels' `kernel::xarray::XArray`: an [`XArray`] whose
//! [`lock`](XArray::lock) gives a [`Guard`] to look up and remove entries.
//! Where rsiw's differs: it holds `Arc<T>` entries only (upstream: any
//! `ForeignOwnable`); its lock is taken irqsave (iw_cm asks for a QP with
//! interrupts off; upstream takes the plain `xa_lock`); it allocates IDs
//! from 1, cyclically or from a random start ([`XArray::alloc_cyclic`],
//! [`XArray::alloc_random`]; upstream stores at a given index).
//!
//! No supported kernel makes it unnecessary yet: `kernel::xarray` (since
//! 6.16) has, up to 7.3, neither ID allocation nor an irq-safe lock.

use core::{cell::UnsafeCell, marker::PhantomData};
use kernel::{
    bindings,
    prelude::*,
    sync::{Arc, ArcBorrow},
    types::Opaque,
};

use crate::kif::glue;

/// `XA_PRESENT` of `linux/xarray.h` (a macro bindgen does not see).
const XA_PRESENT: bindings::xa_mark_t = 8;

/// Objects of type `T` indexed by IDs from 1 to a maximum.
///
/// # Invariants
///
/// `xa` is an initialised xarray whose entries are pointers from
/// `Arc::<T>::into_raw`, each owning one reference.
#[pin_data(PinnedDrop)]
pub struct XArray<T: Send + Sync> {
    #[pin]
    xa: Opaque<bindings::xarray>,
    /// Cursor of the cyclic allocator; written only under the xarray lock.
    next: UnsafeCell<u32>,
    _p: PhantomData<Arc<T>>,
}

// SAFETY: the xarray does its own locking; entries are `Arc<T>` with
// `T: Send + Sync`; `next` is only touched under the xarray lock.
unsafe impl<T: Send + Sync> Send for XArray<T> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync> Sync for XArray<T> {}

impl<T: Send + Sync> XArray<T> {
    /// An empty xarray that allocates IDs from 1.
    pub fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            // SAFETY: `p` is valid for writes of an xarray.
            // INVARIANT: initialised, empty.
            xa <- Opaque::ffi_init(|p| unsafe { glue::rsiw_xa_init_alloc1(p) }),
            next: UnsafeCell::new(0),
            _p: PhantomData,
        })
    }

    /// The C xarray (for kif's `RcuXArray`, which reads it under RCU).
    pub(in crate::kif) fn as_raw(&self) -> *mut bindings::xarray {
        self.xa.get()
    }

    /// Stores `v` under a fresh ID in `1..=max` (cyclically, so IDs are not
    /// reused at once) and returns the ID.
    pub fn alloc_cyclic(&self, v: Arc<T>, max: u32) -> Result<u32> {
        let next = self.next.get();
        // SAFETY: `next` is only accessed by the allocator, under the
        // xarray lock, which it takes.
        unsafe { self.alloc(v, max, next) }
    }

    /// Stores `v` under an ID in `1..=max` searched from a random start,
    /// so that IDs (STag indices) cannot be guessed.
    pub fn alloc_random(&self, v: Arc<T>, max: u32) -> Result<u32> {
        let mut next = super::random::random_u32() % max.max(1);
        // SAFETY: `next` is a local cursor.
        unsafe { self.alloc(v, max, &mut next) }
    }

    /// Stores `v` under a free ID in `1..=max` searched from `*next`.
    ///
    /// # Safety
    ///
    /// `next` is valid and written by no one else during the call.
    unsafe fn alloc(&self, v: Arc<T>, max: u32, next: *mut u32) -> Result<u32> {
        let mut id = 0u32;
        let raw = Arc::into_raw(v).cast_mut().cast::<kernel::ffi::c_void>();
        // SAFETY: the xarray is initialised (type invariant); `next` per
        // the contract.
        // INVARIANT: on success the entry is `raw`, which owns a reference.
        let r = unsafe { glue::rsiw_xa_alloc_cyclic(self.xa.get(), &mut id, raw, max, next) };
        if r < 0 {
            // SAFETY: `raw` came from `into_raw` above and was not stored.
            drop(unsafe { Arc::from_raw(raw.cast::<T>()) });
            return Err(Error::from_errno(r));
        }
        Ok(id)
    }

    /// Locks the xarray (irqsave) for lookups and removals.
    pub fn lock(&self) -> Guard<'_, T> {
        // SAFETY: the xarray is initialised (type invariant).
        let flags = unsafe { glue::rsiw_xa_lock(self.xa.get()) };
        // INVARIANT: locked just above, with these flags.
        Guard {
            xa: self,
            flags,
            _not_send: PhantomData,
        }
    }

    /// The object with ID `id`, if any (a new reference, taken under the
    /// lock).
    pub fn get(&self, id: u32) -> Option<Arc<T>> {
        self.lock().get(id).map(Arc::from)
    }

    /// Removes and returns the object with ID `id`.
    pub fn erase(&self, id: u32) -> Option<Arc<T>> {
        self.lock().remove(id)
    }
}

/// The xarray's lock, held; unlocked when dropped.
///
/// # Invariants
///
/// `xa`'s lock is held, taken with `rsiw_xa_lock`, which returned `flags`.
#[must_use = "the lock unlocks immediately when the guard is unused"]
pub struct Guard<'a, T: Send + Sync> {
    xa: &'a XArray<T>,
    flags: usize,
    _not_send: PhantomData<*mut ()>,
}

impl<T: Send + Sync> Guard<'_, T> {
    /// The object with ID `id`, borrowed for as long as the lock is held.
    pub fn get(&self, id: u32) -> Option<ArcBorrow<'_, T>> {
        // SAFETY: the xarray is initialised and locked (type invariants).
        let p = unsafe { bindings::xa_load(self.xa.xa.get(), id as kernel::ffi::c_ulong) };
        // SAFETY: a non-null entry came from `Arc::into_raw` and stays in
        // the xarray, keeping the object alive, while the lock is held,
        // which outlives the borrow.
        (!p.is_null()).then(|| unsafe { ArcBorrow::from_raw(p.cast::<T>()) })
    }

    /// Removes and returns the object with ID `id`.
    pub fn remove(&mut self, id: u32) -> Option<Arc<T>> {
        // SAFETY: the xarray is initialised and locked (type invariants).
        let p = unsafe { bindings::__xa_erase(self.xa.xa.get(), id as kernel::ffi::c_ulong) };
        // SAFETY: a non-null entry came from `Arc::into_raw`; its reference
        // left the xarray with it and is ours now. No borrow from `get`
        // outlives the `&mut self`.
        (!p.is_null()).then(|| unsafe { Arc::from_raw(p.cast::<T>()) })
    }
}

impl<T: Send + Sync> Drop for Guard<'_, T> {
    fn drop(&mut self) {
        // SAFETY: the type invariant: we hold the lock, taken with `flags`.
        unsafe { glue::rsiw_xa_unlock(self.xa.xa.get(), self.flags) };
    }
}

#[pinned_drop]
impl<T: Send + Sync> PinnedDrop for XArray<T> {
    fn drop(self: Pin<&mut Self>) {
        let mut index: kernel::ffi::c_ulong = 0;
        loop {
            // SAFETY: the xarray is initialised and exclusively ours now.
            let p = unsafe {
                bindings::xa_find(
                    self.xa.get(),
                    &mut index,
                    kernel::ffi::c_ulong::MAX,
                    XA_PRESENT,
                )
            };
            if p.is_null() {
                break;
            }
            drop(self.erase(index as u32));
        }
        // SAFETY: the xarray is empty and not used any more.
        unsafe { bindings::xa_destroy(self.xa.get()) };
    }
}
