// SPDX-License-Identifier: GPL-2.0

//! The queue pair's pure logic, without kernel types: the QP state
//! machine ([`qp`]: the states, the verbs states they stand for, and the
//! transitions `modify_qp`, the connection manager and protocol errors
//! apply), the bounded rings of the RDMA Read queues ([`fifo`]) and the
//! access gate of a memory object ([`gate`]: validity, key, generation
//! and the transfers inside, in one atomic word).
//!
//! This tree is shared verbatim by the kernel module (`pub mod state;`)
//! and by the host crate `rsiw-state`, which tests it with `cargo test`,
//! proptest and Miri. It only uses `core`: no allocation of its own (the
//! user hands a [`fifo::Fifo`] its slots), no `unsafe`, no panics.

pub mod fifo;
pub mod gate;
pub mod qp;
