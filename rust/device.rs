// SPDX-License-Identifier: GPL-2.0

//! The rsiw device: its state (the object tables: QPs by number, memory
//! by STag index, the CM ids held; the quotas and counters), its links
//! and its life cycle (created by `rdma link add`, reacting to its net
//! device events, removed by `rdma link delete`, net device removal or
//! module unload).

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{
    c_str, new_mutex,
    prelude::*,
    str::CStr,
    sync::{Arc, Mutex},
};

use crate::base::{eui64, settings::Settings, stats::Stats, Quotas, RsiwDriver, NODE_DESC};
use crate::cm::{CmIds, Pending};
use crate::kif::{compat::xarray::XArray, rcu_xarray::RcuXArray};
use crate::kif::{
    net::{NetDev, NetdevEvent},
    rdma::{
        self,
        link::{LinkDriver, SharedKind},
        DeviceSetup, PortEvent, RegisteredDevice, NETDEV_PORT,
    },
};
use crate::mem;
use crate::qp::{counter::Counters, Qp};

/// Per-device state: the driver data of a
/// `kif::rdma::Device<RsiwDriver>`, which dereferences to it.
#[pin_data(PinnedDrop)]
pub(crate) struct RsiwDevice {
    /// Hardware address of the net device at creation (the GID).
    pub(crate) mac: [u8; 6],
    /// Device id handed to user space (`siw_uresp_alloc_ctx.dev_id`).
    pub(crate) dev_id: u32,
    /// Interface index of the net device (wildcard listens bind to it).
    pub(crate) ifindex: i32,
    /// Live objects of each kind, against the device's limits (each
    /// object holds its [`Quota`](crate::base::Quota)).
    pub(crate) quotas: Arc<Quotas>,
    /// Source of protection domain ids.
    pub(crate) next_pd_id: AtomicU32,
    /// Queue pairs by QP number.
    #[pin]
    pub(crate) qp_xa: XArray<Qp>,
    /// Memory objects by STag index (shared with the QPs' data path).
    pub(crate) mem_xa: mem::Table,
    /// Counters (shared with the QPs' data path).
    pub(crate) stats: Arc<Stats>,
    /// The connection manager's settings (sysfs `mpa_*`).
    pub(crate) settings: Arc<Settings>,
    /// The CM ids the connection manager holds, with what each shows in
    /// `rdma resource show cm_id -dd` (its lock: see [`crate::cm`]).
    pub(crate) cm_ids: Arc<CmIds>,
    /// The responder endpoints without a connection yet (awaiting their
    /// MPA Request or the CM's accept or reject), closed as the device
    /// goes.
    pub(crate) cm_pending: Arc<Pending>,
    /// The per-QP counter sets (`rdma statistic qp`). Taken before a
    /// QP's `tx` and `rx` locks, never while holding one.
    #[pin]
    pub(crate) counters: Mutex<Counters>,
}

#[pinned_drop]
impl PinnedDrop for RsiwDevice {
    fn drop(self: Pin<&mut Self>) {
        // Every listener was destroyed before (and closed its endpoints),
        // but a connect request the CM dropped unanswered may have had no
        // listener any more: nothing of the device may outlive it with a
        // socket that calls into rsiw (module unload follows).
        self.cm_pending.close_all();
    }
}

/// Source of device ids; each new device takes the next.
static NEXT_DEV_ID: AtomicU32 = AtomicU32::new(1);

/// The `rsiw` link type.
pub(crate) struct Link;

/// Upstream siw's link type, which [`Link`] also serves with
/// `siw_link_type=1`, so that harnesses that run `modprobe siw` and `rdma
/// link add NAME type siw` run on rsiw (README, "Harnesses that name siw").
pub(crate) const SIW_KIND: SharedKind = SharedKind {
    kind: c_str!("siw"),
    owner: c_str!("siw"),
    what: c_str!("RDMA link type 'siw'"),
};

/// ARP hardware types rsiw runs on: Ethernet, IEEE 802 and none (tunnels).
fn qualified(ndev: &NetDev<'_>) -> bool {
    const ETHER: u16 = 1;
    const IEEE802: u16 = 6;
    const NONE: u16 = 0xfffe;
    matches!(ndev.hw_type(), ETHER | IEEE802 | NONE)
}

impl LinkDriver for Link {
    type Driver = RsiwDriver;
    const KIND: &'static CStr = c_str!("rsiw");

    fn newlink(name: &CStr, ndev: &NetDev<'_>) -> Result {
        if !qualified(ndev) {
            return Err(EINVAL);
        }
        // One siw-type device per net device, whichever driver made it.
        if rdma::Device::<RsiwDriver>::any_on_netdev(ndev) {
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
        let quotas = Arc::new(Quotas::new(), GFP_KERNEL)?;
        let settings = Arc::new(Settings::new(), GFP_KERNEL)?;
        let cm_ids = Arc::pin_init(CmIds::new(), GFP_KERNEL)?;
        let cm_pending = Arc::pin_init(Pending::new(), GFP_KERNEL)?;
        let dev = try_pin_init!(RsiwDevice {
            mac,
            dev_id,
            ifindex: ndev.ifindex(),
            quotas,
            next_pd_id: AtomicU32::new(1),
            qp_xa <- XArray::new(),
            mem_xa,
            stats,
            settings,
            cm_ids,
            cm_pending,
            counters <- new_mutex!(Counters::new(), "rsiw::RsiwDevice::counters"),
        }? Error);
        let setup = DeviceSetup {
            ndev,
            name,
            node_guid: eui64(mac),
            node_desc: NODE_DESC,
            num_comp_vectors: 1,
        };
        rdma::Device::<RsiwDriver>::register(setup, dev)?;
        pr_info!("device {} on its net device registered\n", name);
        Ok(())
    }

    fn netdev_event(dev: &RegisteredDevice<RsiwDriver>, _ndev: &NetDev<'_>, event: NetdevEvent) {
        match event {
            NetdevEvent::Up => dev.port_event(NETDEV_PORT, PortEvent::Active),
            NetdevEvent::Down => dev.port_event(NETDEV_PORT, PortEvent::Error),
            NetdevEvent::ChangeAddr => dev.port_event(NETDEV_PORT, PortEvent::AddressChange),
            NetdevEvent::Unregister => dev.unregister_queued(),
        }
    }
}
