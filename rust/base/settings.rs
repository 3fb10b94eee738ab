// SPDX-License-Identifier: GPL-2.0

//! A device's settings of the iWARP connection manager: what its
//! connections ask for and accept (CRC, markers, MPA revision,
//! peer-to-peer, large FPDUs, the responder's wait for the first FPDU).
//! Each setting follows its module parameter until an administrator
//! writes the device's sysfs attribute of the same name
//! (`/sys/class/infiniband/DEV/mpa_*`); a connection takes the values of
//! the moment it is set up ([`MpaPolicy`]).

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{c_str, prelude::*, str::CStr};

use crate::kif::params;

/// One setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Setting {
    /// CRC32C on every connection (ask for it, refuse peers without).
    CrcRequired,
    /// Ask for markers on what the device receives.
    Markers,
    /// The MPA revision the device initiates with (1 or 2).
    Rev,
    /// As initiator, ask for the peer-to-peer model (RFC 6581).
    PeerToPeer,
    /// Offer to take FPDUs larger than a TCP segment.
    LargeFpdu,
    /// As client-server responder, send nothing before the initiator's
    /// first FPDU (RFC 5044 7.1.2).
    ResponderWaits,
    /// Payload octets of the largest FPDU sent when large FPDUs are in use.
    MaxFpdu,
}

impl Setting {
    /// Every setting, in the order of [`Setting::NAMES`].
    pub(crate) const ALL: [Setting; 7] = [
        Setting::CrcRequired,
        Setting::Markers,
        Setting::Rev,
        Setting::PeerToPeer,
        Setting::LargeFpdu,
        Setting::ResponderWaits,
        Setting::MaxFpdu,
    ];

    /// The names of the settings (their module parameters and sysfs
    /// attributes), in the order of [`Setting::ALL`].
    pub(crate) const NAMES: [&'static CStr; 7] = [
        c_str!("mpa_crc_required"),
        c_str!("mpa_markers"),
        c_str!("mpa_rev"),
        c_str!("mpa_peer_to_peer"),
        c_str!("mpa_large_fpdu"),
        c_str!("mpa_responder_waits"),
        c_str!("mpa_max_fpdu"),
    ];

    /// The setting at `index` of [`Setting::ALL`].
    pub(crate) fn from_index(index: usize) -> Result<Self> {
        Self::ALL.get(index).copied().ok_or(EINVAL)
    }

    /// The module parameter's value.
    fn param(self) -> u32 {
        match self {
            Setting::CrcRequired => params::mpa_crc_required().into(),
            Setting::Markers => params::mpa_markers_wanted().into(),
            Setting::Rev => params::mpa_rev().into(),
            Setting::PeerToPeer => params::mpa_peer_to_peer().into(),
            Setting::LargeFpdu => params::mpa_large_fpdu().into(),
            Setting::ResponderWaits => params::mpa_responder_waits().into(),
            Setting::MaxFpdu => params::mpa_max_fpdu(),
        }
    }

    /// Whether `v` is a value of the setting: 1 or 2 for the revision,
    /// 512 to 65507 for the largest FPDU (a 28-octet header still fits a
    /// ULPDU), 0 or 1 for the others.
    fn valid(self, v: u32) -> bool {
        match self {
            Setting::Rev => v == 1 || v == 2,
            Setting::MaxFpdu => (512..=65_507).contains(&v),
            _ => v <= 1,
        }
    }
}

/// What a connection is set up with: the settings of its device at that
/// moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MpaPolicy {
    /// See [`Setting::CrcRequired`].
    pub(crate) crc_required: bool,
    /// See [`Setting::Markers`].
    pub(crate) markers: bool,
    /// See [`Setting::Rev`].
    pub(crate) rev: u8,
    /// See [`Setting::PeerToPeer`].
    pub(crate) peer_to_peer: bool,
    /// See [`Setting::LargeFpdu`].
    pub(crate) large_fpdu: bool,
    /// See [`Setting::ResponderWaits`].
    pub(crate) responder_waits: bool,
    /// See [`Setting::MaxFpdu`].
    pub(crate) max_fpdu: u32,
}

/// The settings of one device.
pub(crate) struct Settings([AtomicU32; Setting::ALL.len()]);

impl Settings {
    /// Not written yet: the setting follows its module parameter.
    const FOLLOW: u32 = u32::MAX;

    /// Settings that follow the module parameters.
    pub(crate) fn new() -> Self {
        Self([const { AtomicU32::new(Self::FOLLOW) }; Setting::ALL.len()])
    }

    /// The value of `s` in effect.
    pub(crate) fn get(&self, s: Setting) -> u32 {
        match self.0[s as usize].load(Ordering::Relaxed) {
            Self::FOLLOW => s.param(),
            v => v,
        }
    }

    /// Sets `s` to `v` for connections set up from now on; `EINVAL` if
    /// `v` is not one of its values.
    pub(crate) fn set(&self, s: Setting, v: u32) -> Result {
        if !s.valid(v) {
            return Err(EINVAL);
        }
        self.0[s as usize].store(v, Ordering::Relaxed);
        Ok(())
    }

    /// The values in effect, for a connection being set up.
    pub(crate) fn policy(&self) -> MpaPolicy {
        MpaPolicy {
            crc_required: self.get(Setting::CrcRequired) != 0,
            markers: self.get(Setting::Markers) != 0,
            rev: if self.get(Setting::Rev) == 1 { 1 } else { 2 },
            peer_to_peer: self.get(Setting::PeerToPeer) != 0,
            large_fpdu: self.get(Setting::LargeFpdu) != 0,
            responder_waits: self.get(Setting::ResponderWaits) != 0,
            max_fpdu: self.get(Setting::MaxFpdu),
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self::new()
    }
}
