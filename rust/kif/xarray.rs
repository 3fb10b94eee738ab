// SPDX-License-Identifier: GPL-2.0

//! An ID-allocating `xarray` of reference-counted objects (QPs by QP number,
//! memory objects by STag index). [`XArray`] lookups take the xarray lock
//! (irqsave: iw_cm asks for a QP with interrupts off) just long enough to
//! take a reference; [`RcuXArray`] lookups (STags, on every message) take
//! none: they run under RCU and erased entries are released only after a
//! grace period. A [`LookupCache`] remembers one [`RcuXArray`] lookup
//! without holding a reference: a repeated lookup of the same ID skips the
//! tree walk until any entry is erased.

use core::{
    cell::UnsafeCell,
    marker::PhantomData,
    sync::atomic::{AtomicU64, Ordering},
};
use kernel::{
    bindings,
    prelude::*,
    sync::{Arc, ArcBorrow},
    types::Opaque,
};

use super::glue;

/// `XA_PRESENT` of `linux/xarray.h` (a macro bindgen does not see).
const XA_PRESENT: bindings::xa_mark_t = 8;

/// Objects of type `T` indexed by IDs from 1 to a maximum.
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
            xa <- Opaque::ffi_init(|p| unsafe { glue::rsiw_xa_init_alloc1(p) }),
            next: UnsafeCell::new(0),
            _p: PhantomData,
        })
    }

    /// Stores `v` under a fresh ID in `1..=max` (cyclically, so IDs are not
    /// reused at once) and returns the ID.
    pub fn alloc_cyclic(&self, v: Arc<T>, max: u32) -> Result<u32> {
        let mut id = 0u32;
        let raw = Arc::into_raw(v).cast_mut().cast::<kernel::ffi::c_void>();
        // SAFETY: the xarray is initialised; `next` is only accessed by the
        // allocator under the xarray lock, which it takes.
        let r = unsafe {
            glue::rsiw_xa_alloc_cyclic(self.xa.get(), &mut id, raw, max, self.next.get())
        };
        if r < 0 {
            // SAFETY: `raw` came from `into_raw` above and was not stored.
            drop(unsafe { Arc::from_raw(raw.cast::<T>()) });
            return Err(Error::from_errno(r));
        }
        Ok(id)
    }

    /// Stores `v` under an ID in `1..=max` searched from a random start,
    /// so that IDs (STag indices) cannot be guessed.
    pub fn alloc_random(&self, v: Arc<T>, max: u32) -> Result<u32> {
        let mut id = 0u32;
        let mut next = super::random_u32() % max.max(1);
        let raw = Arc::into_raw(v).cast_mut().cast::<kernel::ffi::c_void>();
        // SAFETY: the xarray is initialised; `next` is a local cursor.
        let r = unsafe { glue::rsiw_xa_alloc_cyclic(self.xa.get(), &mut id, raw, max, &mut next) };
        if r < 0 {
            // SAFETY: `raw` came from `into_raw` above and was not stored.
            drop(unsafe { Arc::from_raw(raw.cast::<T>()) });
            return Err(Error::from_errno(r));
        }
        Ok(id)
    }

    /// The object with ID `id`, if any.
    pub fn get(&self, id: u32) -> Option<Arc<T>> {
        // SAFETY: the xarray is initialised. While its lock is held no entry
        // can be erased, so the stored `Arc` keeps the object alive while
        // we take our own reference.
        unsafe {
            let flags = glue::rsiw_xa_lock(self.xa.get());
            let p = bindings::xa_load(self.xa.get(), id as _);
            let r = if p.is_null() {
                None
            } else {
                Some(Arc::from(ArcBorrow::from_raw(p.cast::<T>())))
            };
            glue::rsiw_xa_unlock(self.xa.get(), flags);
            r
        }
    }

    /// Removes and returns the object with ID `id`.
    pub fn erase(&self, id: u32) -> Option<Arc<T>> {
        // SAFETY: the xarray is initialised; a non-null entry is an `Arc`
        // stored by `alloc_cyclic`, now owned by us.
        unsafe {
            let p = glue::rsiw_xa_erase(self.xa.get(), id as _);
            (!p.is_null()).then(|| Arc::from_raw(p.cast::<T>()))
        }
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

/// Bumped by every erase from, and every drop of, an [`RcuXArray`]: a
/// [`LookupCache`] filled before the bump no longer hits. Erases (memory
/// deregistration) are rare next to lookups (every message), so one
/// counter for all xarrays costs nothing measurable.
static ERASE_GEN: AtomicU64 = AtomicU64::new(0);

/// An [`XArray`] read without its lock: lookups find the entry under RCU
/// and take a reference, which is sound because an erased entry's own
/// reference is dropped only after a grace period
/// ([`super::wq::drop_after_gp`]), so every entry a reader can still find
/// is alive. Erasing needs process context.
#[pin_data(PinnedDrop)]
pub struct RcuXArray<T: Send + Sync> {
    #[pin]
    xa: XArray<T>,
}

/// The last lookup made through [`RcuXArray::get_cached`]: which xarray,
/// which ID, the entry's address and the erase generation then. It holds
/// no reference, so it keeps nothing alive (a deregistered memory object
/// goes as soon as its last real user lets go).
pub struct LookupCache<T> {
    xa: usize,
    id: u32,
    ptr: usize,
    gen: u64,
    _p: PhantomData<fn() -> T>,
}

impl<T> LookupCache<T> {
    /// An empty cache (it never hits until filled).
    pub const fn new() -> Self {
        Self {
            xa: 0,
            id: 0,
            ptr: 0,
            gen: 0,
            _p: PhantomData,
        }
    }
}

impl<T> Default for LookupCache<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Send + Sync> RcuXArray<T> {
    /// An empty xarray that allocates IDs from 1.
    pub fn new() -> impl PinInit<Self> {
        pin_init!(Self { xa <- XArray::new() })
    }

    /// See [`XArray::alloc_random`].
    pub fn alloc_random(&self, v: Arc<T>, max: u32) -> Result<u32> {
        self.xa.alloc_random(v, max)
    }

    /// The object with ID `id`, if any (any context).
    pub fn get(&self, id: u32) -> Option<Arc<T>> {
        // SAFETY: the xarray is initialised. Inside the RCU read section
        // the entry found stays alive: `erase` drops the xarray's own
        // reference only after a grace period, so we can take ours.
        unsafe {
            glue::rsiw_rcu_read_lock();
            let p = bindings::xa_load(self.xa.xa.get(), id as _);
            let r = if p.is_null() {
                None
            } else {
                Some(Arc::from(ArcBorrow::from_raw(p.cast::<T>())))
            };
            glue::rsiw_rcu_read_unlock();
            r
        }
    }

    /// As [`Self::get`], but the lookup is remembered in `cache`: asking
    /// again for the same ID while nothing was erased from any xarray
    /// takes the entry from the cache instead of walking the tree.
    pub fn get_cached(&self, id: u32, cache: &mut LookupCache<T>) -> Option<Arc<T>> {
        let me = core::ptr::from_ref(self) as usize;
        // SAFETY: an RCU read section, ended below.
        unsafe { glue::rsiw_rcu_read_lock() };
        let gen = ERASE_GEN.load(Ordering::Acquire);
        let p = if cache.xa == me && cache.id == id && cache.gen == gen && cache.ptr != 0 {
            cache.ptr as *const T
        } else {
            // SAFETY: the xarray is initialised.
            let p = unsafe { bindings::xa_load(self.xa.xa.get(), id as _) }.cast::<T>();
            *cache = LookupCache {
                xa: me,
                id,
                ptr: p as usize,
                gen,
                _p: PhantomData,
            };
            p.cast_const()
        };
        // Why `p` is alive: inside the RCU read section an entry found by
        // `xa_load` stays alive (see `get`). A cached address is used only
        // if `ERASE_GEN` still has the value read before that entry was
        // found in this xarray (`cache.xa`; an xarray bumps the counter
        // when dropped, so an address reused by a new xarray does not
        // match either): then the entry has not been erased since, or the
        // erase's bump, which precedes the grace period that ends before
        // the entry's reference drops, follows our load of the counter, so
        // that grace period also waits for this read section.
        let r = (!p.is_null()).then(|| {
            // SAFETY: `p` is a live entry's `Arc` pointer, see above.
            let b = unsafe { ArcBorrow::from_raw(p) };
            Arc::from(b)
        });
        // SAFETY: ends the read section begun above.
        unsafe { glue::rsiw_rcu_read_unlock() };
        r
    }

    /// Removes the object with ID `id`; the xarray's reference to it goes
    /// after a grace period. Process context.
    pub fn erase(&self, id: u32) {
        if let Some(a) = self.xa.erase(id) {
            // After the entry left the tree (a cache filled later cannot
            // find it), before the grace period starts.
            ERASE_GEN.fetch_add(1, Ordering::AcqRel);
            super::wq::drop_after_gp(a);
        }
    }
}

#[pinned_drop]
impl<T: Send + Sync> PinnedDrop for RcuXArray<T> {
    fn drop(self: Pin<&mut Self>) {
        // Caches filled from this xarray must not hit a new xarray that
        // gets the same address.
        ERASE_GEN.fetch_add(1, Ordering::AcqRel);
    }
}
