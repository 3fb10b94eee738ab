// SPDX-License-Identifier: GPL-2.0

//! rsiw's module parameters: declared with `module_param` in the C glue,
//! read here. The 6.12 `module!` macro takes no parameters; once the
//! minimum kernel's does, they move into `module!` in `rsiw_main.rs` and
//! this module and their C declarations go.

/// Whether MPA CRC32C is required of every peer (`mpa_crc_required=`).
pub fn mpa_crc_required() -> bool {
    // SAFETY: the glue function only does a READ_ONCE of a module global.
    unsafe { super::glue::rsiw_mpa_crc_required() }
}

/// Whether rsiw, as initiator, asks for the peer-to-peer model
/// (`mpa_peer_to_peer=`).
pub fn mpa_peer_to_peer() -> bool {
    // SAFETY: the glue function only does a READ_ONCE of a module global.
    unsafe { super::glue::rsiw_mpa_peer_to_peer() }
}

/// The MPA revision rsiw initiates with, 1 or 2 (`mpa_rev=`).
pub fn mpa_rev() -> u8 {
    // SAFETY: the glue function only does a READ_ONCE of a module global.
    unsafe { super::glue::rsiw_mpa_rev() }
}

/// Whether rsiw asks peers for MPA markers (`mpa_markers=`).
pub fn mpa_markers_wanted() -> bool {
    // SAFETY: the glue function only does a READ_ONCE of a module global.
    unsafe { super::glue::rsiw_mpa_markers_wanted() }
}

/// Whether rsiw offers and uses FPDUs larger than a TCP segment
/// (`mpa_large_fpdu=`, siw's `MPA_RR_FLAG_GSO_EXP` bit).
pub fn mpa_large_fpdu() -> bool {
    // SAFETY: the glue function only does a READ_ONCE of a module global.
    unsafe { super::glue::rsiw_mpa_large_fpdu() }
}

/// The payload octets of the largest FPDU sent when large FPDUs are in
/// use (`mpa_max_fpdu=`, 512 to 65507; the C glue refuses other values).
pub fn mpa_max_fpdu() -> u32 {
    // SAFETY: the glue function only does a READ_ONCE of a module global.
    unsafe { super::glue::rsiw_mpa_max_fpdu() }
}

/// Whether a client-server responder sends nothing before the
/// initiator's first FPDU arrived (`mpa_responder_waits=`, RFC 5044
/// section 7.1.2).
pub fn mpa_responder_waits() -> bool {
    // SAFETY: the glue function only does a READ_ONCE of a module global.
    unsafe { super::glue::rsiw_mpa_responder_waits() }
}

/// How long a connect request may wait for the CM's accept or reject
/// before rsiw rejects it itself, in seconds (`cm_accept_timeout=`, 1 to
/// 3600; the C glue refuses other values).
pub fn cm_accept_timeout() -> u32 {
    // SAFETY: the glue function only does a READ_ONCE of a module global.
    unsafe { super::glue::rsiw_cm_accept_timeout() }
}

/// Whether rsiw also registers the RDMA link type `siw`, upstream siw's,
/// so that harnesses that name siw run on it (`siw_link_type=`, read at
/// load only).
pub fn siw_link_type() -> bool {
    // SAFETY: the glue function only does a READ_ONCE of a module global.
    unsafe { super::glue::rsiw_siw_link_type() }
}
