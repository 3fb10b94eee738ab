// SPDX-License-Identifier: GPL-2.0

//! Kernel notifier blocks initialized in place and registered on a chain
//! (the module chain, the net device chain, ...).

use kernel::{bindings, prelude::*, types::Opaque};

/// A chain's registration function (`register_module_notifier`,
/// `register_netdevice_notifier`, ...).
pub type Register = unsafe extern "C" fn(*mut bindings::notifier_block) -> kernel::ffi::c_int;

/// Initializes a notifier block calling `call` in place and registers it
/// with `register`; fails, with nothing registered, if the registration
/// does.
///
/// # Safety
///
/// The block is unregistered from the same chain before the memory it is
/// initialized in is freed or reused, and whatever `call` reads of that
/// memory is initialized before this initializer runs.
pub unsafe fn register(
    call: bindings::notifier_fn_t,
    register: Register,
) -> impl PinInit<Opaque<bindings::notifier_block>, Error> {
    let init = move |slot: *mut Opaque<bindings::notifier_block>| {
        let p = crate::kif::compat::moved::opaque_raw_get(slot);
        // SAFETY: `slot` is valid for writes and pinned (the contract of a
        // `PinInit`); `Opaque` is transparent over the notifier block.
        unsafe {
            p.write(bindings::notifier_block {
                notifier_call: call,
                ..Default::default()
            })
        };
        // SAFETY: `p` is initialized and pinned; it is unregistered before
        // it is freed and `call` finds what it reads initialized (this
        // function's contract).
        kernel::error::to_result(unsafe { register(p) })
    };
    // SAFETY: on `Ok` the slot is initialized (written above); on `Err` it
    // holds a plain C structure that needs no drop and was not registered.
    unsafe { crate::kif::compat::moved::pin_init_from_closure(init) }
}
