// SPDX-License-Identifier: GPL-2.0

//! What the `kernel` crate of the oldest kernel rsiw supports (6.12) lacks
//! and rsiw needs. Each module is named and shaped after its counterpart in
//! newer Rust-for-Linux (its `//!` doc names it, the first kernel version
//! whose crate has it, and where rsiw's version differs).
//!
//! # Kernel versions
//!
//! The Kbuild file passes the version of the kernel rsiw is built for as
//! `--cfg kif_kernel="X.Y"`, and this file is where rsiw picks by it: on
//! a kernel whose `kernel` crate has an item, the module here
//! is a thin adapter to the kernel's (`upstream/`); otherwise it is rsiw's
//! own. The items' names and signatures are the same either way, so no
//! code above this module knows which kernel it runs on. An own module is
//! dropped once the oldest supported kernel has its counterpart.
//!
//! | module | own on | the kernel's on | the kernel's since |
//! |---|---|---|---|
//! | [`sync`] (`SpinLockIrq`) | 6.12 | 7.3 | 7.3 |
//! | [`rcu`] | 6.12 | 7.3 | after 6.12 (in 7.3) |
//! | [`delay`] (`fsleep`) | 6.12 | 7.3 | after 6.12 (in 7.3) |
//! | [`error`] (the codes) | 6.12 | 7.3 | after 6.12 (in 7.3) |
//! | [`xarray`] | 6.12, 7.3 | - | none yet: 6.16's `XArray` neither allocates IDs nor locks irqsave |
//! | [`delayed_work`] | 6.12, 7.3 | - | none yet: 6.17's `DelayedWork` cannot be cancelled |
//! | [`workqueue`] | 6.12, 7.3 | - | none yet: 7.3 cannot allocate a queue |
//! | [`percpu`] | 6.12, 7.3 | - | none yet: 7.3 has no per-CPU data |
//! | [`random`] | 6.12, 7.3 | - | none yet: 7.3 has no CRNG interface |
//!
//! [`moved`] has what both kernels' crates have under other paths, names
//! or signatures (`ARef`, `pin_init_from_closure`, `Opaque`'s pointer,
//! `Vec` lengths, user pointers, `crc32c`), `module!` (below) the same
//! keys for the kernel's `module!`.
//! Outside this directory the kernels differ in two more places only: the
//! parameters 7.3 added to two `ib_device_ops` entries (a `#[cfg]` on the
//! parameter in `rdma/adapter/`), and the C glue, whose differences are
//! decided in one block at the top of `rsiw_glue.c`.
//!
//! Adding a kernel: its version in the `compile_error!` test below (and in
//! `KVERSIONS`, README); then every `not(kif_kernel = "6.12")` here means
//! "7.3 or newer", so only what that kernel changed again needs a case.

// The supported kernels (README): one of these, or the build stops here.
#[cfg(not(any(kif_kernel = "6.12", kif_kernel = "7.3")))]
compile_error!("rsiw supports the 6.12 and 7.3 kernels (rust/kif/compat/mod.rs)");

pub mod delayed_work;
pub mod percpu;
pub mod random;
pub mod workqueue;
pub mod xarray;

#[cfg(kif_kernel = "6.12")]
pub mod delay;
#[cfg(not(kif_kernel = "6.12"))]
#[path = "upstream/delay.rs"]
pub mod delay;

#[cfg(kif_kernel = "6.12")]
pub mod error;
#[cfg(not(kif_kernel = "6.12"))]
#[path = "upstream/error.rs"]
pub mod error;

#[cfg(kif_kernel = "6.12")]
pub mod rcu;
#[cfg(not(kif_kernel = "6.12"))]
#[path = "upstream/rcu.rs"]
pub mod rcu;

#[cfg(kif_kernel = "6.12")]
pub mod sync;
#[cfg(not(kif_kernel = "6.12"))]
#[path = "upstream/sync.rs"]
pub mod sync;

#[cfg(kif_kernel = "6.12")]
pub mod moved;
#[cfg(not(kif_kernel = "6.12"))]
#[path = "upstream/moved.rs"]
pub mod moved;

/// The kernel's `module!`, with the keys rsiw gives it and `authors` as a
/// list, as 7.3 takes it (6.12 takes one `author`).
#[cfg(kif_kernel = "6.12")]
macro_rules! module {
    (
        type: $type:tt,
        name: $name:tt,
        authors: [$author:tt],
        description: $description:tt,
        license: $license:tt,
        alias: [$($alias:tt),* $(,)?] $(,)?
    ) => {
        ::kernel::prelude::module! {
            type: $type,
            name: $name,
            author: $author,
            description: $description,
            license: $license,
            alias: [$($alias),*],
        }
    };
}
/// The kernel's `module!` (see the 6.12 version above).
#[cfg(not(kif_kernel = "6.12"))]
macro_rules! module {
    ($($args:tt)*) => {
        ::kernel::prelude::module! { $($args)* }
    };
}
pub(crate) use module;
