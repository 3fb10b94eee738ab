// SPDX-License-Identifier: GPL-2.0

//! Attributes of a device and its ports, as the driver reports them to
//! `query_device` and `query_port`.

use kernel::bindings;

/// Device limits reported by `query_device`.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeviceCaps {
    /// Vendor id (an IEEE OUI, or the value the driver's provider library
    /// expects).
    pub vendor_id: u32,
    /// Vendor part id (a provider library may read it back: libsiw takes it
    /// as the device id).
    pub vendor_part_id: u32,
    /// System image GUID (big endian as on the wire).
    pub sys_image_guid: u64,
    /// Largest memory region in octets.
    pub max_mr_size: u64,
    /// Supported page sizes.
    pub page_size_cap: u64,
    /// Queue pairs.
    pub max_qp: u32,
    /// Work requests per queue.
    pub max_qp_wr: u32,
    /// SGEs per send or receive work request.
    pub max_sge: u32,
    /// SGEs per RDMA Read.
    pub max_sge_rd: u32,
    /// Completion queues.
    pub max_cq: u32,
    /// Entries per completion queue.
    pub max_cqe: u32,
    /// Memory regions.
    pub max_mr: u32,
    /// Protection domains.
    pub max_pd: u32,
    /// Inbound RDMA Reads per QP (IRD).
    pub max_ird: u32,
    /// Outbound RDMA Reads per QP (ORD).
    pub max_ord: u32,
    /// Shared receive queues.
    pub max_srq: u32,
    /// Work requests per SRQ.
    pub max_srq_wr: u32,
    /// SGEs per SRQ work request.
    pub max_srq_sge: u32,
    /// Pages in one fast-registration list.
    pub max_fast_reg_page_list_len: u32,
    /// The device supports memory management extensions (REG_MR, LOCAL_INV).
    pub mem_mgt_extensions: bool,
    /// Atomic operations (plain and masked) of kernel QPs are atomic
    /// with respect to the CPU too (`IB_ATOMIC_GLOB`); else none.
    pub atomic_glob: bool,
}

/// Path MTU values of the RDMA core (`enum ib_mtu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mtu {
    /// 256 octets.
    M256,
    /// 512 octets.
    M512,
    /// 1024 octets.
    M1024,
    /// 2048 octets.
    M2048,
    /// 4096 octets.
    M4096,
}

impl Mtu {
    /// The largest path MTU that fits into a link MTU of `mtu` octets.
    pub fn from_link_mtu(mtu: u32) -> Self {
        match mtu {
            4096.. => Self::M4096,
            2048.. => Self::M2048,
            1024.. => Self::M1024,
            512.. => Self::M512,
            _ => Self::M256,
        }
    }

    pub(super) fn raw(self) -> bindings::ib_mtu {
        match self {
            Self::M256 => bindings::ib_mtu_IB_MTU_256,
            Self::M512 => bindings::ib_mtu_IB_MTU_512,
            Self::M1024 => bindings::ib_mtu_IB_MTU_1024,
            Self::M2048 => bindings::ib_mtu_IB_MTU_2048,
            Self::M4096 => bindings::ib_mtu_IB_MTU_4096,
        }
    }
}

impl DeviceCaps {
    /// Fills the core's `ib_device_attr` (values past `i32::MAX` are
    /// clamped to it).
    pub(super) fn write_to(&self, a: &mut bindings::ib_device_attr) {
        // (the limits are `int` in 6.12, `u32` in 7.3)
        fn clamp<U: TryFrom<u32> + Default>(v: u32) -> U {
            U::try_from(v.min(i32::MAX as u32)).unwrap_or_default()
        }
        // SAFETY: all-zero is a valid `ib_device_attr` (plain integers).
        *a = unsafe { core::mem::zeroed() };
        a.vendor_id = self.vendor_id;
        a.vendor_part_id = self.vendor_part_id;
        a.sys_image_guid = self.sys_image_guid;
        a.max_mr_size = self.max_mr_size;
        a.page_size_cap = self.page_size_cap;
        a.max_qp = clamp(self.max_qp);
        a.max_qp_wr = clamp(self.max_qp_wr);
        a.max_send_sge = clamp(self.max_sge);
        a.max_recv_sge = clamp(self.max_sge);
        a.max_sge_rd = clamp(self.max_sge_rd);
        a.max_cq = clamp(self.max_cq);
        a.max_cqe = clamp(self.max_cqe);
        a.max_mr = clamp(self.max_mr);
        a.max_pd = clamp(self.max_pd);
        a.max_qp_rd_atom = clamp(self.max_ord);
        a.max_qp_init_rd_atom = clamp(self.max_ird);
        a.max_res_rd_atom = clamp(self.max_qp.saturating_mul(self.max_ird));
        a.max_srq = clamp(self.max_srq);
        a.max_srq_wr = clamp(self.max_srq_wr);
        a.max_srq_sge = clamp(self.max_srq_sge);
        a.max_fast_reg_page_list_len = self.max_fast_reg_page_list_len;
        if self.atomic_glob {
            a.atomic_cap = bindings::ib_atomic_cap_IB_ATOMIC_GLOB;
            a.masked_atomic_cap = bindings::ib_atomic_cap_IB_ATOMIC_GLOB;
        }
        if self.mem_mgt_extensions {
            a.device_cap_flags = bindings::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS as u64;
            a.kernel_cap_flags = u64::from(bindings::ib_kernel_cap_flags_IBK_ALLOW_USER_UNREG);
        }
    }
}

/// Port attributes reported by `query_port`.
#[derive(Clone, Copy, Debug)]
pub struct PortInfo {
    /// Link up (net device running with carrier).
    pub active: bool,
    /// Path MTU of the current link MTU.
    pub active_mtu: Mtu,
    /// Path MTU of the largest link MTU.
    pub max_mtu: Mtu,
    /// Number of GIDs.
    pub gid_tbl_len: u32,
}

impl PortInfo {
    /// Fills the driver's part of the core's `ib_port_attr` (the core's
    /// speed and width are already in).
    pub(super) fn write_to(&self, a: &mut bindings::ib_port_attr) {
        a.gid_tbl_len = self.gid_tbl_len as i32;
        a.max_msg_sz = u32::MAX;
        a.max_mtu = self.max_mtu.raw();
        a.active_mtu = self.active_mtu.raw();
        (a.state, a.phys_state) = if self.active {
            (
                bindings::ib_port_state_IB_PORT_ACTIVE,
                bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_LINK_UP as u8,
            )
        } else {
            (
                bindings::ib_port_state_IB_PORT_DOWN,
                bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_DISABLED as u8,
            )
        };
        a.port_cap_flags = bindings::ib_port_capability_mask_bits_IB_PORT_CM_SUP
            | bindings::ib_port_capability_mask_bits_IB_PORT_DEVICE_MGMT_SUP;
    }
}
