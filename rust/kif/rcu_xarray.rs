// SPDX-License-Identifier: GPL-2.0

//! An [`XArray`] read without its lock, for lookups on every message
//! (memory objects by STag index): [`RcuXArray`] lookups run under RCU,
//! and erased entries are released only after a grace period. A
//! [`LookupCache`] remembers one lookup without holding a reference: a
//! repeated lookup of the same ID skips the tree walk until any entry is
//! erased.

use core::{
    marker::PhantomData,
    sync::atomic::{AtomicU64, Ordering},
};
use kernel::{
    bindings,
    prelude::*,
    sync::{Arc, ArcBorrow},
};

use super::compat::{rcu, workqueue::drop_after_gp, xarray::XArray};

/// Bumped by every erase from, and every drop of, an [`RcuXArray`]: a
/// [`LookupCache`] filled before the bump no longer hits. Erases (memory
/// deregistration) are rare next to lookups (every message), so one
/// counter for all xarrays costs nothing measurable.
static ERASE_GEN: AtomicU64 = AtomicU64::new(0);

/// An [`XArray`] whose lookups take no lock: they find the entry under
/// RCU and take a reference, which is sound because an erased entry's own
/// reference is dropped only after a grace period ([`drop_after_gp`]).
/// Erasing needs process context.
///
/// # Invariants
///
/// An entry's reference is dropped only after a grace period that began
/// after the entry left the tree, and after [`ERASE_GEN`] was bumped.
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
        let _rcu = rcu::read_lock();
        // SAFETY: the xarray is initialised.
        let p = unsafe { bindings::xa_load(self.xa.as_raw(), id as kernel::ffi::c_ulong) };
        // SAFETY: inside the RCU read section the entry found stays alive
        // (type invariant), so we can take our own reference.
        (!p.is_null()).then(|| Arc::from(unsafe { ArcBorrow::from_raw(p.cast::<T>()) }))
    }

    /// As [`Self::get`], but the lookup is remembered in `cache`: asking
    /// again for the same ID while nothing was erased from any xarray
    /// takes the entry from the cache instead of walking the tree.
    pub fn get_cached(&self, id: u32, cache: &mut LookupCache<T>) -> Option<Arc<T>> {
        self.with_cached(id, cache, |entry| entry.map(Arc::from))
    }

    /// Runs `f` on the object with ID `id` (or `None`), looked up as by
    /// [`Self::get_cached`], without taking a reference: the borrow lasts
    /// as long as the RCU read section around `f`, so `f` must not sleep.
    #[inline(always)]
    pub fn with_cached<R>(
        &self,
        id: u32,
        cache: &mut LookupCache<T>,
        f: impl FnOnce(Option<ArcBorrow<'_, T>>) -> R,
    ) -> R {
        let me = core::ptr::from_ref(self) as usize;
        let _rcu = rcu::read_lock();
        let gen = ERASE_GEN.load(Ordering::Acquire);
        let p = if cache.xa == me && cache.id == id && cache.gen == gen && cache.ptr != 0 {
            cache.ptr as *const T
        } else {
            // SAFETY: the xarray is initialised.
            let p = unsafe { bindings::xa_load(self.xa.as_raw(), id as kernel::ffi::c_ulong) }
                .cast::<T>();
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
        // that grace period also waits for this read section, which lasts
        // until `f` returned.
        // SAFETY: a non-null `p` is a live entry's `Arc` pointer, see above,
        // for as long as `_rcu` is held; the borrow does not outlive `f`.
        let entry = (!p.is_null()).then(|| unsafe { ArcBorrow::from_raw(p) });
        f(entry)
    }

    /// Removes the object with ID `id`; the xarray's reference to it goes
    /// after a grace period. Process context.
    pub fn erase(&self, id: u32) {
        if let Some(a) = self.xa.erase(id) {
            // After the entry left the tree (a cache filled later cannot
            // find it), before the grace period starts.
            ERASE_GEN.fetch_add(1, Ordering::AcqRel);
            // INVARIANT: the reference goes after a grace period that
            // begins now.
            drop_after_gp(a);
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
