// SPDX-License-Identifier: GPL-2.0

//! The rsiw device: its state, its limits, and its life cycle (created by
//! `rdma link add`, reacting to its net device, removed by `rdma link delete`,
//! net device removal or module unload).

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{prelude::*, str::CStr, sync::Arc};

use crate::kif::xarray::{RcuXArray, XArray};
use crate::kif::{
    ib::{self, DeviceRef, DeviceSetup, PortEvent},
    net::{LinkDriver, NetDev, NetdevEvent},
};
use crate::mem::Mem;
use crate::qp::Qp;
use crate::stats::Stats;
use crate::verbs::Rsiw;

/// Vendor id reported to user space: the same as upstream siw (ASCII "bmt"),
/// so that tools that key on it treat both alike.
pub const VENDOR_ID: u32 = 0x62_6d74;
/// Node description of every rsiw device.
pub const NODE_DESC: &[u8] = b"rsiw soft-iWARP (Rust)";

/// Limits rsiw advertises and enforces.
pub mod limits {
    /// Queue pairs per device.
    pub const MAX_QP: u32 = 100 * 1024;
    /// Work requests per queue.
    pub const MAX_QP_WR: u32 = 32 * 1024;
    /// Outbound RDMA Reads per QP.
    pub const MAX_ORD: u32 = 128;
    /// Inbound RDMA Reads per QP.
    pub const MAX_IRD: u32 = 128;
    /// SGEs per work request.
    pub const MAX_SGE: u32 = 6;
    /// SGEs per RDMA Read (iWARP Read Requests name one sink buffer).
    pub const MAX_SGE_RD: u32 = 1;
    /// Completion queues per device.
    pub const MAX_CQ: u32 = 100 * 1024;
    /// Entries per completion queue.
    pub const MAX_CQE: u32 = MAX_QP_WR * 100;
    /// Memory regions per device.
    pub const MAX_MR: u32 = MAX_QP * 10;
    /// Protection domains per device.
    pub const MAX_PD: u32 = MAX_QP;
    /// User contexts per device.
    pub const MAX_CONTEXT: u32 = MAX_PD;
    /// Shared receive queues per device.
    pub const MAX_SRQ: u32 = MAX_QP;
    /// Work requests per SRQ.
    pub const MAX_SRQ_WR: u32 = MAX_QP_WR * 10;
    /// Pages of one fast-registration list.
    pub const MAX_FRMR_PAGES: u32 = 256;
}

/// Per-device state.
#[pin_data]
pub struct Device {
    /// Hardware address of the net device at creation (the GID).
    pub mac: [u8; 6],
    /// Device id handed to user space (`siw_uresp_alloc_ctx.dev_id`).
    pub dev_id: u32,
    /// Interface index of the net device (wildcard listens bind to it).
    pub ifindex: i32,
    /// Live user contexts.
    pub num_ctx: AtomicU32,
    /// Live protection domains.
    pub num_pd: AtomicU32,
    /// Live completion queues.
    pub num_cq: AtomicU32,
    /// Live queue pairs.
    pub num_qp: AtomicU32,
    /// Live shared receive queues.
    pub num_srq: AtomicU32,
    /// Live memory regions.
    pub num_mr: AtomicU32,
    /// Source of protection domain ids.
    pub next_pd_id: AtomicU32,
    /// Queue pairs by QP number.
    #[pin]
    pub qp_xa: XArray<Qp>,
    /// Memory objects by STag index (shared with the QPs' data path).
    pub mem_xa: Arc<RcuXArray<Mem>>,
    /// Counters (shared with the QPs' data path).
    pub stats: Arc<Stats>,
}

/// The EUI-64 of a MAC address (RFC 4291 appendix A), as a GUID in network
/// byte order.
pub fn eui64(mac: [u8; 6]) -> u64 {
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

/// Source of device ids; each new device takes the next.
static NEXT_DEV_ID: AtomicU32 = AtomicU32::new(1);

/// Counts one more object against `limit`; fails with `ENOMEM` at the limit.
pub fn count_up(counter: &AtomicU32, limit: u32) -> Result {
    counter
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < limit).then_some(n + 1)
        })
        .map(|_| ())
        .map_err(|_| ENOMEM)
}

/// Gives back one object counted by [`count_up`].
pub fn count_down(counter: &AtomicU32) {
    counter.fetch_sub(1, Ordering::AcqRel);
}

/// The `rsiw` link type.
pub struct Link;

/// ARP hardware types rsiw runs on: Ethernet, IEEE 802 and none (tunnels).
fn qualified(ndev: &NetDev<'_>) -> bool {
    const ETHER: u16 = 1;
    const IEEE802: u16 = 6;
    const NONE: u16 = 0xfffe;
    matches!(ndev.hw_type(), ETHER | IEEE802 | NONE)
}

impl LinkDriver for Link {
    type Driver = Rsiw;

    fn newlink(name: &CStr, ndev: &NetDev<'_>) -> Result {
        if !qualified(ndev) {
            return Err(EINVAL);
        }
        // One siw-type device per net device, whichever driver made it.
        if DeviceRef::<Rsiw>::any_on_netdev(ndev) {
            return Err(EEXIST);
        }
        // Devices without an address still need a unique GID: derive a
        // locally administered one from the device id.
        let dev_id = NEXT_DEV_ID.fetch_add(1, Ordering::Relaxed);
        let mac = ndev.mac().unwrap_or_else(|| {
            let id = dev_id.to_be_bytes();
            [0x02, 0x72, id[0], id[1], id[2], id[3]]
        });
        let mem_xa = Arc::pin_init(RcuXArray::new(), GFP_KERNEL)?;
        let stats = Arc::new(Stats::new()?, GFP_KERNEL)?;
        let dev = try_pin_init!(Device {
            mac,
            dev_id,
            ifindex: ndev.ifindex(),
            num_ctx: AtomicU32::new(0),
            num_pd: AtomicU32::new(0),
            num_cq: AtomicU32::new(0),
            num_qp: AtomicU32::new(0),
            num_srq: AtomicU32::new(0),
            num_mr: AtomicU32::new(0),
            next_pd_id: AtomicU32::new(1),
            qp_xa <- XArray::new(),
            mem_xa,
            stats,
        }? Error);
        let setup = DeviceSetup {
            ndev,
            name,
            node_guid: eui64(mac),
            node_desc: NODE_DESC,
            num_comp_vectors: 1,
        };
        ib::register_device::<Rsiw>(setup, dev)?;
        pr_info!("device {} on its net device registered\n", name);
        Ok(())
    }

    fn netdev_event(dev: &DeviceRef<Rsiw>, _ndev: &NetDev<'_>, event: NetdevEvent) {
        match event {
            NetdevEvent::Up => dev.port_event(PortEvent::Active),
            NetdevEvent::Down => dev.port_event(PortEvent::Error),
            NetdevEvent::ChangeAddr => dev.port_event(PortEvent::AddressChange),
            NetdevEvent::Unregister => dev.unregister_queued(),
        }
    }
}
