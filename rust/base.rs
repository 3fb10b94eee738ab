// SPDX-License-Identifier: GPL-2.0

//! Shared device state and types, the lowest layer of the driver: the
//! driver marker type [`RsiwDriver`], user contexts and protection
//! domains, the limits rsiw advertises and the per-device object quotas
//! that enforce them, identity (vendor id, node description, EUI-64) and the device
//! counters ([`stats`]).

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{prelude::*, sync::Arc};

pub(crate) mod settings;
pub(crate) mod stats;

/// The rsiw driver as the RDMA core sees it (its `kif::rdma::Driver`
/// implementation, the verbs, is in `verbs`).
pub(crate) struct RsiwDriver;

/// A user context.
pub(crate) struct Ucontext {
    /// Counts the context against [`limits::MAX_CONTEXT`] until it is
    /// deallocated.
    pub(crate) _quota: Quota,
}

/// A protection domain.
pub(crate) struct Pd {
    /// Id, unique per device (memory and QPs remember their PD by it).
    pub(crate) id: u32,
    /// Counts the PD against [`limits::MAX_PD`] until it is deallocated.
    pub(crate) _quota: Quota,
}

/// Vendor id reported to user space: the same as upstream siw (ASCII "bmt"),
/// so that tools that key on it treat both alike.
pub(crate) const VENDOR_ID: u32 = 0x62_6d74;
/// Node description of every rsiw device.
pub(crate) const NODE_DESC: &[u8] = b"rsiw soft-iWARP (Rust)";

/// Limits rsiw advertises and enforces.
pub(crate) mod limits {
    /// Queue pairs per device.
    pub(crate) const MAX_QP: u32 = 100 * 1024;
    /// Work requests per queue.
    pub(crate) const MAX_QP_WR: u32 = 32 * 1024;
    /// Outbound RDMA Reads per QP.
    pub(crate) const MAX_ORD: u32 = 128;
    /// Inbound RDMA Reads per QP.
    pub(crate) const MAX_IRD: u32 = 128;
    /// SGEs per work request.
    pub(crate) const MAX_SGE: u32 = 6;
    /// SGEs per RDMA Read (iWARP Read Requests name one sink buffer).
    pub(crate) const MAX_SGE_RD: u32 = 1;
    /// Completion queues per device.
    pub(crate) const MAX_CQ: u32 = 100 * 1024;
    /// Entries per completion queue.
    pub(crate) const MAX_CQE: u32 = MAX_QP_WR * 100;
    /// Memory regions per device.
    pub(crate) const MAX_MR: u32 = MAX_QP * 10;
    /// Protection domains per device.
    pub(crate) const MAX_PD: u32 = MAX_QP;
    /// User contexts per device.
    pub(crate) const MAX_CONTEXT: u32 = MAX_PD;
    /// Shared receive queues per device.
    pub(crate) const MAX_SRQ: u32 = MAX_QP;
    /// Work requests per SRQ.
    pub(crate) const MAX_SRQ_WR: u32 = MAX_QP_WR * 10;
    /// Pages of one fast-registration list.
    pub(crate) const MAX_FRMR_PAGES: u32 = 256;
}

/// The EUI-64 of a MAC address (RFC 4291 appendix A), as a GUID in network
/// byte order.
pub(crate) fn eui64(mac: [u8; 6]) -> u64 {
    let b = [
        mac[0] ^ 2,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ];
    u64::from_ne_bytes(b)
}

/// The kinds of objects whose number per device is limited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// User contexts ([`limits::MAX_CONTEXT`]).
    Ctx,
    /// Protection domains ([`limits::MAX_PD`]).
    Pd,
    /// Completion queues ([`limits::MAX_CQ`]).
    Cq,
    /// Queue pairs ([`limits::MAX_QP`]).
    Qp,
    /// Shared receive queues ([`limits::MAX_SRQ`]).
    Srq,
    /// Memory regions ([`limits::MAX_MR`]).
    Mr,
}

impl Kind {
    /// The most live objects of this kind one device may have.
    pub(crate) const fn limit(self) -> u32 {
        match self {
            Self::Ctx => limits::MAX_CONTEXT,
            Self::Pd => limits::MAX_PD,
            Self::Cq => limits::MAX_CQ,
            Self::Qp => limits::MAX_QP,
            Self::Srq => limits::MAX_SRQ,
            Self::Mr => limits::MAX_MR,
        }
    }
}

/// The number of live objects of each [`Kind`] of one device.
pub(crate) struct Quotas {
    ctx: AtomicU32,
    pd: AtomicU32,
    cq: AtomicU32,
    qp: AtomicU32,
    srq: AtomicU32,
    mr: AtomicU32,
}

impl Default for Quotas {
    fn default() -> Self {
        Self::new()
    }
}

impl Quotas {
    /// No object yet.
    pub(crate) const fn new() -> Self {
        Self {
            ctx: AtomicU32::new(0),
            pd: AtomicU32::new(0),
            cq: AtomicU32::new(0),
            qp: AtomicU32::new(0),
            srq: AtomicU32::new(0),
            mr: AtomicU32::new(0),
        }
    }

    /// The counter of `kind`.
    fn counter(&self, kind: Kind) -> &AtomicU32 {
        match kind {
            Kind::Ctx => &self.ctx,
            Kind::Pd => &self.pd,
            Kind::Cq => &self.cq,
            Kind::Qp => &self.qp,
            Kind::Srq => &self.srq,
            Kind::Mr => &self.mr,
        }
    }
}

/// One object counted against its device's limit for its [`Kind`]: taken
/// by the object's creation, held by the object, given back when it is
/// dropped (with the object, or on the error path of its creation).
pub(crate) struct Quota {
    quotas: Arc<Quotas>,
    kind: Kind,
}

impl Quota {
    /// Counts one more object of `kind`; fails with `ENOMEM` at the limit.
    pub(crate) fn take(quotas: &Arc<Quotas>, kind: Kind) -> Result<Self> {
        quotas
            .counter(kind)
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < kind.limit()).then_some(n + 1)
            })
            .map_err(|_| ENOMEM)?;
        Ok(Self {
            quotas: quotas.clone(),
            kind,
        })
    }
}

impl Drop for Quota {
    fn drop(&mut self) {
        self.quotas
            .counter(self.kind)
            .fetch_sub(1, Ordering::AcqRel);
    }
}
