// SPDX-License-Identifier: GPL-2.0

//! Typed protocol errors and their one-to-one mapping onto TERMINATE
//! (Layer, EType, Error Code) triples of the IANA registry (RFC 6580,
//! defined by RFC 5040 section 4.8, RFC 5041 section 7, RFC 5044 section 8
//! and RFC 6581 section 8), plus the header copy controls (HdrCt M/D/R).
//!
//! These are wire protocol errors, kept apart from errno: the kernel maps a
//! [`ProtocolError`] to a TERMINATE message and to its own errno separately.

use crate::wire::connect::ConnectError;

/// TERMINATE layer: RDMAP.
pub const LAYER_RDMAP: u8 = 0x0;
/// TERMINATE layer: DDP.
pub const LAYER_DDP: u8 = 0x1;
/// TERMINATE layer: lower layer protocol (MPA/TCP).
pub const LAYER_LLP: u8 = 0x2;

/// RDMAP EType: local catastrophic error.
pub const RDMAP_ETYPE_CATASTROPHIC: u8 = 0x0;
/// RDMAP EType: remote protection error.
pub const RDMAP_ETYPE_PROTECTION: u8 = 0x1;
/// RDMAP EType: remote operation error.
pub const RDMAP_ETYPE_OPERATION: u8 = 0x2;
/// DDP EType: local catastrophic error.
pub const DDP_ETYPE_CATASTROPHIC: u8 = 0x0;
/// DDP EType: tagged buffer error.
pub const DDP_ETYPE_TAGGED: u8 = 0x1;
/// DDP EType: untagged buffer error.
pub const DDP_ETYPE_UNTAGGED: u8 = 0x2;
/// LLP EType: MPA error.
pub const LLP_ETYPE_MPA: u8 = 0x0;

/// A (Layer, EType, Error Code) triple as carried in a TERMINATE header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TermCode {
    /// Layer (4 bits).
    pub layer: u8,
    /// Error type (4 bits).
    pub etype: u8,
    /// Error code.
    pub code: u8,
}

/// TERMINATE header control: which parts of the offending segment are
/// copied into the TERMINATE message (RFC 5040 section 4.8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HdrCt {
    /// M: the DDP Segment Length field is valid.
    pub m: bool,
    /// D: the terminated DDP header is included.
    pub d: bool,
    /// R: the terminated RDMAP header is included.
    pub r: bool,
}

/// RDMAP errors (Layer 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RdmapError {
    /// EType 0, code 0x00: local catastrophic error.
    LocalCatastrophic,
    /// EType 1, code 0x00: invalid STag.
    InvalidStag,
    /// EType 1, code 0x01: base or bounds violation.
    BaseBounds,
    /// EType 1, code 0x02: access rights violation.
    AccessRights,
    /// EType 1, code 0x03: STag not associated with RDMAP stream.
    StagNotAssociated,
    /// EType 1, code 0x04: TO wrap.
    ToWrap,
    /// EType 1, code 0x09: STag cannot be invalidated.
    ProtectionCannotInvalidate,
    /// EType 1, code 0xff: unspecified protection error.
    ProtectionUnspecified,
    /// EType 2, code 0x05: invalid RDMAP version.
    InvalidVersion,
    /// EType 2, code 0x06: unexpected OpCode.
    UnexpectedOpcode,
    /// EType 2, code 0x07: catastrophic error, localized to RDMAP stream.
    CatastrophicStream,
    /// EType 2, code 0x08: catastrophic error, global.
    CatastrophicGlobal,
    /// EType 2, code 0x09: STag cannot be invalidated.
    OperationCannotInvalidate,
    /// EType 2, code 0xff: unspecified operation error.
    OperationUnspecified,
}

/// DDP errors (Layer 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DdpError {
    /// EType 0, code 0x00: local catastrophic error.
    LocalCatastrophic,
    /// EType 1, code 0x00: invalid STag.
    TaggedInvalidStag,
    /// EType 1, code 0x01: base or bounds violation.
    TaggedBaseBounds,
    /// EType 1, code 0x02: STag not associated with DDP stream.
    TaggedStagNotAssociated,
    /// EType 1, code 0x03: TO wrap.
    TaggedToWrap,
    /// EType 1, code 0x04: invalid DDP version (tagged segment).
    TaggedInvalidVersion,
    /// EType 2, code 0x01: invalid QN.
    UntaggedInvalidQn,
    /// EType 2, code 0x02: invalid MSN, no buffer available.
    UntaggedMsnNoBuffer,
    /// EType 2, code 0x03: invalid MSN, MSN range.
    UntaggedMsnRange,
    /// EType 2, code 0x04: invalid MO.
    UntaggedInvalidMo,
    /// EType 2, code 0x05: DDP message too long for available buffer.
    UntaggedTooLong,
    /// EType 2, code 0x06: invalid DDP version (untagged segment).
    UntaggedInvalidVersion,
}

/// What went wrong locating an FPDU (all reported as LLP code 0x03).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FramingFault {
    /// A marker's FPDUPTR disagrees with the FPDU start known from the
    /// ULPDU_Length fields.
    MarkerMismatch {
        /// The FPDUPTR the receiver expected.
        expected: u16,
        /// The FPDUPTR found in the marker.
        received: u16,
    },
    /// ULPDU_Length smaller than the DDP/RDMAP header of the segment.
    UlpduTooShort {
        /// The received ULPDU_Length.
        len: u16,
    },
    /// ULPDU_Length larger than the receiver accepts.
    UlpduTooLong {
        /// The received ULPDU_Length.
        len: u16,
        /// The configured maximum.
        max: u16,
    },
    /// Reserved marker bits not zero (only when checked strictly, or in a
    /// marker that splits the CRC field of a CRC checked FPDU).
    MarkerReserved,
}

/// LLP errors (Layer 2, EType 0 = MPA).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LlpError {
    /// Code 0x01: TCP connection closed, terminated or lost.
    ConnectionLost,
    /// Code 0x02: received MPA CRC does not match.
    CrcMismatch {
        /// CRC computed over the received FPDU.
        computed: u32,
        /// CRC found in the FPDU.
        received: u32,
    },
    /// Code 0x03: marker and ULPDU_Length disagree on the FPDU start.
    Framing(FramingFault),
    /// Code 0x04: invalid MPA Request or Reply.
    InvalidRequestReply(ConnectError),
    /// Code 0x05: local catastrophic (enhanced connection setup).
    LocalCatastrophic,
    /// Code 0x06: insufficient IRD resources (RFC 6581).
    InsufficientIrd,
    /// Code 0x07: no matching RTR option (RFC 6581).
    NoMatchingRtr,
}

/// Any wire protocol error, mapping onto exactly one TERMINATE triple.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProtocolError {
    /// RDMAP layer error.
    Rdmap(RdmapError),
    /// DDP layer error.
    Ddp(DdpError),
    /// LLP (MPA) layer error.
    Llp(LlpError),
}

impl From<RdmapError> for ProtocolError {
    fn from(e: RdmapError) -> Self {
        Self::Rdmap(e)
    }
}
impl From<DdpError> for ProtocolError {
    fn from(e: DdpError) -> Self {
        Self::Ddp(e)
    }
}
impl From<LlpError> for ProtocolError {
    fn from(e: LlpError) -> Self {
        Self::Llp(e)
    }
}

const fn tc(layer: u8, etype: u8, code: u8) -> TermCode {
    TermCode { layer, etype, code }
}

impl RdmapError {
    /// All variants (for tables and tests).
    pub const ALL: [RdmapError; 14] = [
        Self::LocalCatastrophic,
        Self::InvalidStag,
        Self::BaseBounds,
        Self::AccessRights,
        Self::StagNotAssociated,
        Self::ToWrap,
        Self::ProtectionCannotInvalidate,
        Self::ProtectionUnspecified,
        Self::InvalidVersion,
        Self::UnexpectedOpcode,
        Self::CatastrophicStream,
        Self::CatastrophicGlobal,
        Self::OperationCannotInvalidate,
        Self::OperationUnspecified,
    ];

    /// The TERMINATE triple.
    pub const fn term_code(self) -> TermCode {
        let (e, c) = match self {
            Self::LocalCatastrophic => (RDMAP_ETYPE_CATASTROPHIC, 0x00),
            Self::InvalidStag => (RDMAP_ETYPE_PROTECTION, 0x00),
            Self::BaseBounds => (RDMAP_ETYPE_PROTECTION, 0x01),
            Self::AccessRights => (RDMAP_ETYPE_PROTECTION, 0x02),
            Self::StagNotAssociated => (RDMAP_ETYPE_PROTECTION, 0x03),
            Self::ToWrap => (RDMAP_ETYPE_PROTECTION, 0x04),
            Self::ProtectionCannotInvalidate => (RDMAP_ETYPE_PROTECTION, 0x09),
            Self::ProtectionUnspecified => (RDMAP_ETYPE_PROTECTION, 0xff),
            Self::InvalidVersion => (RDMAP_ETYPE_OPERATION, 0x05),
            Self::UnexpectedOpcode => (RDMAP_ETYPE_OPERATION, 0x06),
            Self::CatastrophicStream => (RDMAP_ETYPE_OPERATION, 0x07),
            Self::CatastrophicGlobal => (RDMAP_ETYPE_OPERATION, 0x08),
            Self::OperationCannotInvalidate => (RDMAP_ETYPE_OPERATION, 0x09),
            Self::OperationUnspecified => (RDMAP_ETYPE_OPERATION, 0xff),
        };
        tc(LAYER_RDMAP, e, c)
    }

    /// Short human readable name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::LocalCatastrophic => "RDMAP local catastrophic error",
            Self::InvalidStag => "RDMAP invalid STag",
            Self::BaseBounds => "RDMAP base or bounds violation",
            Self::AccessRights => "RDMAP access rights violation",
            Self::StagNotAssociated => "RDMAP STag not associated with RDMAP stream",
            Self::ToWrap => "RDMAP TO wrap",
            Self::ProtectionCannotInvalidate => "RDMAP STag cannot be invalidated (protection)",
            Self::ProtectionUnspecified => "RDMAP unspecified protection error",
            Self::InvalidVersion => "RDMAP invalid RDMAP version",
            Self::UnexpectedOpcode => "RDMAP unexpected OpCode",
            Self::CatastrophicStream => "RDMAP catastrophic error, localized to RDMAP stream",
            Self::CatastrophicGlobal => "RDMAP catastrophic error, global",
            Self::OperationCannotInvalidate => "RDMAP STag cannot be invalidated (operation)",
            Self::OperationUnspecified => "RDMAP unspecified operation error",
        }
    }

    /// Header copy controls for a TERMINATE reporting this error.
    pub const fn hdr_ct(self) -> HdrCt {
        match self {
            Self::LocalCatastrophic
            | Self::InvalidVersion
            | Self::UnexpectedOpcode
            | Self::CatastrophicGlobal => HdrCt {
                m: false,
                d: false,
                r: false,
            },
            Self::InvalidStag
            | Self::BaseBounds
            | Self::AccessRights
            | Self::StagNotAssociated
            | Self::ToWrap
            | Self::ProtectionCannotInvalidate
            | Self::ProtectionUnspecified => HdrCt {
                m: true,
                d: true,
                r: true,
            },
            Self::CatastrophicStream
            | Self::OperationCannotInvalidate
            | Self::OperationUnspecified => HdrCt {
                m: true,
                d: true,
                r: false,
            },
        }
    }
}

impl DdpError {
    /// All variants (for tables and tests).
    pub const ALL: [DdpError; 12] = [
        Self::LocalCatastrophic,
        Self::TaggedInvalidStag,
        Self::TaggedBaseBounds,
        Self::TaggedStagNotAssociated,
        Self::TaggedToWrap,
        Self::TaggedInvalidVersion,
        Self::UntaggedInvalidQn,
        Self::UntaggedMsnNoBuffer,
        Self::UntaggedMsnRange,
        Self::UntaggedInvalidMo,
        Self::UntaggedTooLong,
        Self::UntaggedInvalidVersion,
    ];

    /// The TERMINATE triple.
    pub const fn term_code(self) -> TermCode {
        let (e, c) = match self {
            Self::LocalCatastrophic => (DDP_ETYPE_CATASTROPHIC, 0x00),
            Self::TaggedInvalidStag => (DDP_ETYPE_TAGGED, 0x00),
            Self::TaggedBaseBounds => (DDP_ETYPE_TAGGED, 0x01),
            Self::TaggedStagNotAssociated => (DDP_ETYPE_TAGGED, 0x02),
            Self::TaggedToWrap => (DDP_ETYPE_TAGGED, 0x03),
            Self::TaggedInvalidVersion => (DDP_ETYPE_TAGGED, 0x04),
            Self::UntaggedInvalidQn => (DDP_ETYPE_UNTAGGED, 0x01),
            Self::UntaggedMsnNoBuffer => (DDP_ETYPE_UNTAGGED, 0x02),
            Self::UntaggedMsnRange => (DDP_ETYPE_UNTAGGED, 0x03),
            Self::UntaggedInvalidMo => (DDP_ETYPE_UNTAGGED, 0x04),
            Self::UntaggedTooLong => (DDP_ETYPE_UNTAGGED, 0x05),
            Self::UntaggedInvalidVersion => (DDP_ETYPE_UNTAGGED, 0x06),
        };
        tc(LAYER_DDP, e, c)
    }

    /// Short human readable name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::LocalCatastrophic => "DDP local catastrophic error",
            Self::TaggedInvalidStag => "DDP tagged: invalid STag",
            Self::TaggedBaseBounds => "DDP tagged: base or bounds violation",
            Self::TaggedStagNotAssociated => "DDP tagged: STag not associated with DDP stream",
            Self::TaggedToWrap => "DDP tagged: TO wrap",
            Self::TaggedInvalidVersion => "DDP tagged: invalid DDP version",
            Self::UntaggedInvalidQn => "DDP untagged: invalid QN",
            Self::UntaggedMsnNoBuffer => "DDP untagged: invalid MSN, no buffer available",
            Self::UntaggedMsnRange => "DDP untagged: invalid MSN, MSN range",
            Self::UntaggedInvalidMo => "DDP untagged: invalid MO",
            Self::UntaggedTooLong => "DDP untagged: message too long for available buffer",
            Self::UntaggedInvalidVersion => "DDP untagged: invalid DDP version",
        }
    }

    /// Header copy controls for a TERMINATE reporting this error: the DDP
    /// header is copied unless its layout is unknown (version errors).
    pub const fn hdr_ct(self) -> HdrCt {
        match self {
            Self::LocalCatastrophic | Self::TaggedInvalidVersion | Self::UntaggedInvalidVersion => {
                HdrCt {
                    m: false,
                    d: false,
                    r: false,
                }
            }
            _ => HdrCt {
                m: true,
                d: true,
                r: false,
            },
        }
    }
}

impl LlpError {
    /// The MPA error code (Layer 2, EType 0).
    pub const fn code(self) -> u8 {
        match self {
            Self::ConnectionLost => 0x01,
            Self::CrcMismatch { .. } => 0x02,
            Self::Framing(_) => 0x03,
            Self::InvalidRequestReply(_) => 0x04,
            Self::LocalCatastrophic => 0x05,
            Self::InsufficientIrd => 0x06,
            Self::NoMatchingRtr => 0x07,
        }
    }

    /// The TERMINATE triple.
    pub const fn term_code(self) -> TermCode {
        tc(LAYER_LLP, LLP_ETYPE_MPA, self.code())
    }

    /// Short human readable name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::ConnectionLost => "MPA: TCP connection closed, terminated or lost",
            Self::CrcMismatch { .. } => "MPA: received CRC does not match",
            Self::Framing(FramingFault::MarkerMismatch { .. }) => {
                "MPA: marker and ULPDU_Length disagree on FPDU start"
            }
            Self::Framing(FramingFault::UlpduTooShort { .. }) => "MPA: ULPDU_Length too small",
            Self::Framing(FramingFault::UlpduTooLong { .. }) => "MPA: ULPDU_Length too large",
            Self::Framing(FramingFault::MarkerReserved) => "MPA: marker reserved bits set",
            Self::InvalidRequestReply(_) => "MPA: invalid MPA Request or Reply",
            Self::LocalCatastrophic => "MPA: local catastrophic error",
            Self::InsufficientIrd => "MPA: insufficient IRD resources",
            Self::NoMatchingRtr => "MPA: no matching RTR option",
        }
    }
}

impl ProtocolError {
    /// The TERMINATE (Layer, EType, Error Code) triple.
    pub const fn term_code(self) -> TermCode {
        match self {
            Self::Rdmap(e) => e.term_code(),
            Self::Ddp(e) => e.term_code(),
            Self::Llp(e) => e.term_code(),
        }
    }

    /// Header copy controls for the TERMINATE reporting this error.
    pub const fn hdr_ct(self) -> HdrCt {
        match self {
            Self::Rdmap(e) => e.hdr_ct(),
            Self::Ddp(e) => e.hdr_ct(),
            Self::Llp(_) => HdrCt {
                m: false,
                d: false,
                r: false,
            },
        }
    }

    /// Short human readable name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Rdmap(e) => e.name(),
            Self::Ddp(e) => e.name(),
            Self::Llp(e) => e.name(),
        }
    }

    /// The error a received TERMINATE triple stands for (detail fields are
    /// zero), or `None` for a triple outside the registry.
    pub fn from_term_code(t: TermCode) -> Option<Self> {
        match t.layer {
            LAYER_RDMAP => RdmapError::ALL
                .iter()
                .copied()
                .find(|e| e.term_code().etype == t.etype && e.term_code().code == t.code)
                .map(Self::Rdmap),
            LAYER_DDP => DdpError::ALL
                .iter()
                .copied()
                .find(|e| e.term_code().etype == t.etype && e.term_code().code == t.code)
                .map(Self::Ddp),
            LAYER_LLP if t.etype == LLP_ETYPE_MPA => {
                let e = match t.code {
                    0x01 => LlpError::ConnectionLost,
                    0x02 => LlpError::CrcMismatch {
                        computed: 0,
                        received: 0,
                    },
                    0x03 => LlpError::Framing(FramingFault::MarkerMismatch {
                        expected: 0,
                        received: 0,
                    }),
                    0x04 => LlpError::InvalidRequestReply(ConnectError::Unspecified),
                    0x05 => LlpError::LocalCatastrophic,
                    0x06 => LlpError::InsufficientIrd,
                    0x07 => LlpError::NoMatchingRtr,
                    _ => return None,
                };
                Some(Self::Llp(e))
            }
            _ => None,
        }
    }
}
