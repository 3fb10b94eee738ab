// SPDX-License-Identifier: GPL-2.0

//! Other modules, by name: whether one is loaded ([`is_loaded`]), and a
//! [`ModuleGate`] that keeps one from loading while it lives. A module
//! that registers something under a name another module also registers
//! (where the kernel allows one holder only and warns on a second) uses
//! both to hold the name only while the other is absent.

use kernel::{bindings, prelude::*, str::CStr, types::Opaque, ThisModule};

/// Whether a module named `name` is loaded, or is being loaded or
/// unloaded, as far as sysfs shows (`/sys/module/NAME`); asked through
/// `module`, the caller's own module, whose sysfs entry leads to the set of
/// all of them.
///
/// A module being loaded appears there only after its
/// `MODULE_STATE_COMING` notifiers ran; one that a [`ModuleGate`]
/// registered before this call did not refuse may have run them just
/// before the gate was registered and not be visible yet (two loads at
/// the same time).
pub fn is_loaded(module: &'static ThisModule, name: &CStr) -> bool {
    let this = module.as_ptr();
    if this.is_null() {
        // Built in: no module kobject to start from. This code is built
        // only as a loadable module; answer as if it were loaded, which
        // makes callers refuse rather than collide.
        return true;
    }
    // SAFETY: `this` is the caller's live module (`ThisModule`'s contract),
    // whose sysfs entry exists from before its `init` until after its
    // `exit`; its kset is the kernel's set of module kobjects, which lives
    // forever. `name` is NUL-terminated. `kset_find_obj` returns a counted
    // reference, dropped right away: only its existence is the answer.
    unsafe {
        let kset = (*this).mkobj.kobj.kset;
        if kset.is_null() {
            return true;
        }
        let kobj = bindings::kset_find_obj(kset, name.as_char_ptr());
        if kobj.is_null() {
            return false;
        }
        bindings::kobject_put(kobj);
    }
    true
}

/// Refuses the loading of the module named `name` (with `EBUSY`, and an
/// error message naming `what`) while it lives, through a module notifier
/// on `MODULE_STATE_COMING`: the refused module's `init` never runs.
///
/// # Invariants
///
/// `nb` is registered on the module notifier chain until the value drops.
#[pin_data(PinnedDrop)]
pub struct ModuleGate {
    #[pin]
    nb: Opaque<bindings::notifier_block>,
    name: &'static CStr,
    what: &'static CStr,
}

// SAFETY: the notifier block is touched only by its (un)registration,
// which takes the chain's lock on any thread, and by the chain's calls;
// the rest is shared static strings. Dropping it may happen on any thread
// that may sleep.
unsafe impl Send for ModuleGate {}
// SAFETY: no method takes `&self`; the callback only reads the static
// strings.
unsafe impl Sync for ModuleGate {}

/// Module notifier entry point: refuses `MODULE_STATE_COMING` of the gated
/// module.
///
/// # Safety
///
/// Called by the module notifier chain only, with `nb` the `nb` of a live
/// [`ModuleGate`] and `data` the `struct module` the event is about.
unsafe extern "C" fn gate_cb(
    nb: *mut bindings::notifier_block,
    action: kernel::ffi::c_ulong,
    data: *mut kernel::ffi::c_void,
) -> kernel::ffi::c_int {
    if action != bindings::module_state_MODULE_STATE_COMING as kernel::ffi::c_ulong
        || data.is_null()
    {
        return bindings::NOTIFY_DONE as kernel::ffi::c_int;
    }
    // SAFETY: `nb` is the `nb` field of a live `ModuleGate` (the caller's
    // contract; `Opaque` is transparent over the notifier block), which
    // unregisters it before it goes.
    let gate = unsafe {
        &*kernel::container_of!(
            nb.cast::<Opaque<bindings::notifier_block>>(),
            ModuleGate,
            nb
        )
    };
    // SAFETY: the chain passes the module being loaded, alive for the call;
    // its name is a NUL-terminated array.
    let name = unsafe { CStr::from_char_ptr((*data.cast::<bindings::module>()).name.as_ptr()) };
    if crate::kif::compat::moved::cstr_bytes(name)
        != crate::kif::compat::moved::cstr_bytes(gate.name)
    {
        return bindings::NOTIFY_DONE as kernel::ffi::c_int;
    }
    pr_err!(
        "refusing to load module {}: this module holds {}, which {} would register\n",
        gate.name,
        gate.what,
        gate.name
    );
    // notifier_from_errno(-EBUSY), a static inline.
    (bindings::NOTIFY_STOP_MASK | (bindings::NOTIFY_OK + bindings::EBUSY)) as kernel::ffi::c_int
}

impl ModuleGate {
    /// Registers a gate refusing the module named `name`, which would
    /// register `what` (a description for the message, e.g. `RDMA link type
    /// 'siw'`). A module already loaded is not affected: check with
    /// [`is_loaded`] after this.
    pub fn new(name: &'static CStr, what: &'static CStr) -> impl PinInit<Self, Error> {
        // The fields are written in this order: `name` and `what` before the
        // notifier block is registered and the callback may read them.
        try_pin_init!(Self {
            name,
            what,
            // SAFETY: the gate unregisters the block before it is freed
            // (its invariant); `name` and `what`, which `gate_cb` reads,
            // are written first.
            nb <- unsafe {
                crate::kif::notifier::register(
                    Some(gate_cb),
                    bindings::register_module_notifier,
                )
            },
        }? Error)
    }
}

#[pinned_drop]
impl PinnedDrop for ModuleGate {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: registered in `new` (the invariant) and still pinned here.
        unsafe { bindings::unregister_module_notifier(self.nb.get()) };
    }
}
