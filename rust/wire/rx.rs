// SPDX-License-Identifier: GPL-2.0

//! The resumable MPA/DDP/RDMAP receive deframer.
//!
//! [`Deframer::push`] accepts the TCP byte stream of one direction cut
//! anywhere (down to single octets) and drives an [`RxSink`]:
//! 1. [`RxSink::on_fpdu_start`] once ULPDU_Length is known,
//! 2. [`RxSink::on_header`] with the parsed and validated DDP/RDMAP header
//!    (collected in a small fixed buffer; the sink may reject it with a
//!    typed [`ProtocolError`], e.g. after STag/QN/MSN checks),
//! 3. [`RxSink::on_payload`] with payload slices borrowed from the input
//!    (never copied or buffered) and their offset in the segment payload,
//! 4. [`RxSink::on_fpdu_end`] with the CRC verdict.
//!
//! Markers are stripped, checked against the FPDU start and reported with
//! [`RxSink::on_marker`]. The CRC covers everything from the FPDU's first
//! octet (a leading marker included) up to the CRC field. A marker that
//! splits the CRC field (only on a stream that does not start at a
//! multiple of 4) is not covered by it; when CRC is negotiated such a
//! marker must be exact (see [`Deframer::push`]). After an error
//! the deframer stays failed (RFC 5044: no further FPDU is delivered).
//! After a complete TERMINATE (RFC 5040 section 5.3: the stream is dead
//! once one is received) it delivers nothing more either, unless
//! [`RxConfig::stop_at_terminate`] is off (a test tool watching a peer).

use crate::wire::crc::{crc_from_wire, Crc32c};
use crate::wire::ddp::Control;
use crate::wire::error::{FramingFault, LlpError, ProtocolError};
use crate::wire::markers::{self, Marker};
use crate::wire::mpa::{self, MpaMode};
use crate::wire::rdmap::{
    check_control_ext, Extensions, HeaderView, Opcode, SegmentHeader, MAX_HDR_LEN, MIN_HDR_LEN,
};

mod whole;

/// Receive configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxConfig {
    /// Negotiated marker/CRC mode of the receive direction.
    pub mode: MpaMode,
    /// Largest ULPDU_Length accepted.
    pub max_ulpdu: u16,
    /// Reject markers whose reserved bits are not zero. (A marker that
    /// splits the CRC field of a CRC checked FPDU is always checked.)
    pub strict_marker_rsvd: bool,
    /// Deliver nothing after a TERMINATE whose FPDU passed its CRC check
    /// (the later octets of the stream are discarded unparsed).
    pub stop_at_terminate: bool,
    /// MPA only: check each FPDU's framing (ULPDU_Length, markers, PAD)
    /// and CRC without looking into its ULPDU. The sink sees
    /// [`RxSink::on_fpdu_start`] and [`RxSink::on_marker`] only;
    /// [`Deframer::verified_offset`] says how far the stream is made of
    /// complete FPDUs that passed. This is the first pass of verify-first
    /// receiving (RFC 5044 section 7.1: the CRC is checked before the
    /// ULPDU is passed to DDP), see [`RxConfig::crc_prechecked`].
    pub mpa_only: bool,
    /// The CRC of every FPDU this deframer is fed was checked already (by
    /// an [`RxConfig::mpa_only`] deframer over the same octets): it is not
    /// computed again and the verdict is [`CrcVerdict::Ok`].
    pub crc_prechecked: bool,
    /// The RDMAP extensions accepted (default none: the RFC 7306 opcodes
    /// draw "unexpected OpCode" as any unknown opcode).
    pub ext: Extensions,
}

impl RxConfig {
    /// Configuration accepting any ULPDU_Length.
    pub const fn new(mode: MpaMode) -> Self {
        Self {
            mode,
            max_ulpdu: u16::MAX,
            strict_marker_rsvd: false,
            stop_at_terminate: true,
            mpa_only: false,
            crc_prechecked: false,
            ext: Extensions::NONE,
        }
    }

    /// The two passes of verify-first receiving for this configuration:
    /// an MPA-only deframer's and the full deframer's, whose CRC the
    /// first pass checks (see [`RxConfig::mpa_only`]).
    pub const fn verify_first(self) -> (Self, Self) {
        (
            Self {
                mpa_only: true,
                crc_prechecked: false,
                ..self
            },
            Self {
                mpa_only: false,
                crc_prechecked: true,
                ..self
            },
        )
    }

    fn computes_crc(&self) -> bool {
        self.mode.crc && !self.crc_prechecked
    }
}

/// Outcome of the CRC check of one FPDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CrcVerdict {
    /// CRC negotiated and correct.
    Ok,
    /// CRC not negotiated; the field was ignored.
    NotChecked,
    /// CRC negotiated and wrong.
    Mismatch {
        /// CRC computed over the received FPDU.
        computed: u32,
        /// CRC found in the FPDU.
        received: u32,
    },
}

/// Position and size of the FPDU being received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FpduInfo {
    /// Stream offset of the FPDU's first octet (its leading marker, if any).
    pub fpdu_off: u32,
    /// Stream offset of its ULPDU_Length field.
    pub hdr_off: u32,
    /// ULPDU_Length.
    pub ulpdu_len: u16,
    /// PAD octets.
    pub pad: u8,
}

/// Consumer of deframed segments. All callbacks but [`RxSink::on_marker`]
/// may fail with a protocol error, which stops the deframer.
pub trait RxSink {
    /// ULPDU_Length of a new FPDU was received (before it is validated).
    fn on_fpdu_start(&mut self, _info: &FpduInfo) -> Result<(), ProtocolError> {
        Ok(())
    }
    /// The DDP/RDMAP header is complete. `raw` is its wire form (starting
    /// at the control field, needed to build a TERMINATE), `payload_len`
    /// the number of payload octets that follow in this segment.
    fn on_header(
        &mut self,
        hdr: &SegmentHeader,
        raw: &[u8],
        payload_len: u16,
    ) -> Result<(), ProtocolError>;
    /// Payload octets `offset..offset + data.len()` of the current segment.
    fn on_payload(&mut self, offset: u32, data: &[u8]) -> Result<(), ProtocolError>;
    /// The FPDU carrying `hdr` is complete. Complete a message here when
    /// `hdr.ctrl.last()` is set and the verdict is not a mismatch. On
    /// [`CrcVerdict::Mismatch`] the deframer fails with
    /// [`LlpError::CrcMismatch`] after this call.
    fn on_fpdu_end(
        &mut self,
        hdr: &SegmentHeader,
        verdict: CrcVerdict,
    ) -> Result<(), ProtocolError>;
    /// A marker at stream offset `off` was received and checked.
    fn on_marker(&mut self, _off: u32, _m: Marker) {}
    /// A whole FPDU in one piece (no markers), whose CRC needs no check
    /// here (`verdict`: not negotiated, or checked before): its header
    /// `hdr`, checked and in its wire form, and all of its `payload`. The
    /// sink may take it at once, with the effect the calls of
    /// [`RxSink::on_fpdu_start`], [`RxSink::on_header`],
    /// [`RxSink::on_payload`] and [`RxSink::on_fpdu_end`] would have, and
    /// return `Ok(true)`; with `Ok(false)` (the default) nothing was done
    /// and the deframer makes those calls. An error stops the deframer as
    /// one of [`RxSink::on_header`] would.
    fn on_segment(
        &mut self,
        _info: &FpduInfo,
        _hdr: &HeaderView<'_>,
        _payload: &[u8],
        _verdict: CrcVerdict,
    ) -> Result<bool, ProtocolError> {
        Ok(false)
    }
}

/// The sink of an [`RxConfig::mpa_only`] deframer: such a deframer calls
/// none of the segment callbacks, and FPDU starts and markers need no
/// answer.
#[derive(Clone, Copy, Debug, Default)]
pub struct MpaOnlySink;

impl RxSink for MpaOnlySink {
    fn on_header(&mut self, _: &SegmentHeader, _: &[u8], _: u16) -> Result<(), ProtocolError> {
        Ok(())
    }
    fn on_payload(&mut self, _: u32, _: &[u8]) -> Result<(), ProtocolError> {
        Ok(())
    }
    fn on_fpdu_end(&mut self, _: &SegmentHeader, _: CrcVerdict) -> Result<(), ProtocolError> {
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Len,
    Hdr,
    Payload,
    Pad,
    Crc,
}

/// The receive deframer of one TCP direction in MPA full operation mode.
#[derive(Clone, Debug)]
pub struct Deframer<C: Crc32c> {
    cfg: RxConfig,
    crc: C,
    off: u32,
    phase: Phase,
    in_fpdu: bool,
    fpdu_off: u32,
    hdr_off: u32,
    len_buf: [u8; 2],
    len_have: u8,
    ulpdu_len: u16,
    hdr_buf: [u8; MAX_HDR_LEN],
    hdr_have: usize,
    hdr_need: usize,
    payload_len: u32,
    payload_done: u32,
    pad_left: u32,
    crc_buf: [u8; 4],
    crc_have: u8,
    crc_value: u32,
    mk_buf: [u8; 4],
    mk_have: u8,
    mk_off: u32,
    mk_leading: bool,
    failed: Option<ProtocolError>,
    terminated: bool,
    fpdus: u64,
    verified_off: u32,
    hdr: Option<SegmentHeader>,
}

impl<C: Crc32c> Deframer<C> {
    /// A deframer whose next octet is at MPA stream offset `stream_off`
    /// (0 for the first octet after the MPA Request/Reply exchange) and
    /// at an FPDU boundary.
    pub fn new(cfg: RxConfig, crc: C, stream_off: u32) -> Self {
        Self {
            cfg,
            crc,
            off: stream_off,
            phase: Phase::Len,
            in_fpdu: false,
            fpdu_off: stream_off,
            hdr_off: stream_off,
            len_buf: [0; 2],
            len_have: 0,
            ulpdu_len: 0,
            hdr_buf: [0; MAX_HDR_LEN],
            hdr_have: 0,
            hdr_need: 2,
            payload_len: 0,
            payload_done: 0,
            pad_left: 0,
            crc_buf: [0; 4],
            crc_have: 0,
            crc_value: 0,
            mk_buf: [0; 4],
            mk_have: 0,
            mk_off: 0,
            mk_leading: false,
            failed: None,
            terminated: false,
            fpdus: 0,
            verified_off: stream_off,
            hdr: None,
        }
    }

    /// Stream offset of the next octet expected.
    pub fn stream_offset(&self) -> u32 {
        self.off
    }

    /// Whether the deframer sits exactly between two FPDUs.
    pub fn at_fpdu_boundary(&self) -> bool {
        !self.in_fpdu && self.failed.is_none()
    }

    /// Whether a TERMINATE was delivered and the deframer stopped (see
    /// [`RxConfig::stop_at_terminate`]).
    pub fn terminated(&self) -> bool {
        self.terminated
    }

    /// The error that stopped the deframer, if any.
    pub fn error(&self) -> Option<ProtocolError> {
        self.failed
    }

    /// The wire form of a complete DDP/RDMAP header that failed validation
    /// before it reached [`RxSink::on_header`] (for the header copy of the
    /// TERMINATE). `None` when the header is incomplete or was accepted.
    pub fn rejected_header(&self) -> Option<&[u8]> {
        if self.phase == Phase::Hdr && self.hdr_need > 2 && self.hdr_have == self.hdr_need {
            self.hdr_buf.get(..self.hdr_need)
        } else {
            None
        }
    }

    /// The header of the segment being received (after
    /// [`RxSink::on_header`], until the FPDU ends).
    pub fn current_header(&self) -> Option<&SegmentHeader> {
        self.hdr.as_ref()
    }

    /// Number of FPDUs completed.
    pub fn fpdus(&self) -> u64 {
        self.fpdus
    }

    /// Stream offset just past the last FPDU that was completed and
    /// passed its checks (where the stream started when none was): every
    /// octet before it belongs to such FPDUs, whatever error came later.
    pub fn verified_offset(&self) -> u32 {
        self.verified_off
    }

    /// The configuration.
    pub fn config(&self) -> &RxConfig {
        &self.cfg
    }

    fn feed_crc(&mut self, bytes: &[u8]) {
        if self.cfg.computes_crc() {
            self.crc.update(bytes);
        }
    }

    fn fail(&mut self, err: ProtocolError) -> ProtocolError {
        self.failed = Some(err);
        err
    }

    /// Feeds the next octets of the stream. On error the deframer is
    /// failed and every later call returns the same error. After a
    /// TERMINATE ([`Deframer::terminated`]) the octets are discarded.
    ///
    /// Markers: RFC 5044 section 4.3 has the receiver ignore the reserved
    /// bits and the two low FPDUPTR bits, leaving them to the CRC, which
    /// covers the markers of the FPDU. The one marker the CRC cannot cover
    /// is one that splits the CRC field, which the RFC's 4 octet aligned
    /// FPDUs never produce but a stream starting at an unaligned offset
    /// does (the sender writes it exactly, see [`crate::wire::tx`]). With
    /// CRC negotiated such a marker must be exact, reserved bits zero and
    /// all 16 FPDUPTR bits, so that no bit flip in it goes undetected.
    pub fn push<S: RxSink>(&mut self, data: &[u8], sink: &mut S) -> Result<(), ProtocolError> {
        if let Some(err) = self.failed {
            return Err(err);
        }
        if self.terminated {
            return Ok(());
        }
        match self.run(data, sink) {
            Ok(()) => Ok(()),
            Err(err) => Err(self.fail(err)),
        }
    }

    /// The ULPDU_Length `len` of the FPDU at `fpdu_off` is known: tells
    /// the sink.
    fn start_fpdu<S: RxSink>(&mut self, len: u16, sink: &mut S) -> Result<(), ProtocolError> {
        self.ulpdu_len = len;
        let info = FpduInfo {
            fpdu_off: self.fpdu_off,
            hdr_off: self.hdr_off,
            ulpdu_len: len,
            pad: mpa::pad_len(u32::from(len)) as u8,
        };
        sink.on_fpdu_start(&info)
    }

    fn begin_fpdu_if_needed(&mut self) {
        if !self.in_fpdu {
            self.in_fpdu = true;
            self.fpdu_off = self.off;
            self.crc.reset();
        }
    }

    fn run<S: RxSink>(&mut self, mut data: &[u8], sink: &mut S) -> Result<(), ProtocolError> {
        while !data.is_empty() && !self.terminated {
            if !self.cfg.mode.markers && self.phase == Phase::Len && self.len_have == 0 {
                let whole = if self.cfg.mpa_only {
                    self.check_whole_fpdu(data, sink)?
                } else {
                    self.take_whole_fpdu(data, sink)?
                };
                if let Some(taken) = whole {
                    self.off = self.off.wrapping_add(taken as u32);
                    self.verified_off = self.off;
                    data = data.get(taken..).unwrap_or(&[]);
                    continue;
                }
            }
            // Markers first: one is due at every 512th stream octet.
            if self.cfg.mode.markers && (self.mk_have > 0 || markers::is_marker_position(self.off))
            {
                data = self.take_marker(data, sink)?;
                continue;
            }
            let mut avail = data.len();
            if self.cfg.mode.markers {
                let to_marker = markers::octets_to_next_marker(self.off) as usize;
                avail = avail.min(to_marker);
            }
            let used = match self.phase {
                Phase::Len => self.take_len(data, sink)?,
                Phase::Hdr => self.take_hdr(data, avail, sink)?,
                Phase::Payload => self.take_payload(data, avail, sink)?,
                Phase::Pad => {
                    let taken = avail.min(self.pad_left as usize);
                    let bytes = data.get(..taken).unwrap_or(&[]);
                    self.feed_crc(bytes);
                    self.pad_left -= taken as u32;
                    if self.pad_left == 0 {
                        self.phase = Phase::Crc;
                    }
                    taken
                }
                Phase::Crc => self.take_crc(data, avail, sink)?,
            };
            self.off = self.off.wrapping_add(used as u32);
            if !self.in_fpdu {
                self.verified_off = self.off;
            }
            data = data.get(used..).unwrap_or(&[]);
        }
        Ok(())
    }

    /// The CRC field (`crc_buf`) is complete: checks it (when negotiated),
    /// ends the FPDU and hands it to the sink.
    fn end_fpdu<S: RxSink>(&mut self, sink: &mut S) -> Result<(), ProtocolError> {
        self.crc_have = 0;
        self.phase = Phase::Len;
        self.in_fpdu = false;
        self.fpdus += 1;
        let received = crc_from_wire(self.crc_buf);
        let verdict = if !self.cfg.mode.crc {
            CrcVerdict::NotChecked
        } else if self.cfg.crc_prechecked || received == self.crc_value {
            CrcVerdict::Ok
        } else {
            CrcVerdict::Mismatch {
                computed: self.crc_value,
                received,
            }
        };
        // (by reference: taking the header out would copy it)
        let (result, term) = match &self.hdr {
            Some(hdr) => (
                sink.on_fpdu_end(hdr, verdict),
                hdr.opcode == Opcode::Terminate,
            ),
            None => (Ok(()), false),
        };
        self.hdr = None;
        result?;
        if let CrcVerdict::Mismatch { computed, received } = verdict {
            return Err(LlpError::CrcMismatch { computed, received }.into());
        }
        if term && self.cfg.stop_at_terminate {
            self.terminated = true;
        }
        Ok(())
    }

    fn take_marker<'d, S: RxSink>(
        &mut self,
        data: &'d [u8],
        sink: &mut S,
    ) -> Result<&'d [u8], ProtocolError> {
        if self.mk_have == 0 {
            self.mk_leading = self.phase == Phase::Len && self.len_have == 0;
            self.begin_fpdu_if_needed();
            self.mk_off = self.off;
        }
        let taken = (4 - usize::from(self.mk_have)).min(data.len());
        let bytes = data.get(..taken).unwrap_or(&[]);
        let covered = self.marker_crc_covered();
        if covered {
            self.feed_crc(bytes);
        }
        for &x in bytes {
            if let Some(slot) = self.mk_buf.get_mut(usize::from(self.mk_have)) {
                *slot = x;
            }
            self.mk_have += 1;
        }
        self.off = self.off.wrapping_add(taken as u32);
        if self.mk_have == 4 {
            self.mk_have = 0;
            let marker = markers::decode_marker(self.mk_buf);
            let expected = if self.mk_leading {
                0
            } else {
                markers::fpduptr(self.mk_off, self.hdr_off).unwrap_or(u16::MAX)
            };
            // RFC 5044 5: FPDUs are 4 octet aligned, so the two low
            // bits of FPDUPTR are zero when sent; the receiver MUST treat
            // them as zero. (`expected` has them zero on any stream that
            // starts at a multiple of 4; the masking on both sides keeps
            // streams that start elsewhere, as the fuzz targets' do,
            // consistent.) The masked bits and the reserved ones are left
            // to the CRC; a marker the CRC does not cover must be exact.
            let exact = self.cfg.mode.crc && !covered;
            let mask = if exact { u16::MAX } else { !3 };
            if marker.fpduptr & mask != expected & mask {
                return Err(LlpError::Framing(FramingFault::MarkerMismatch {
                    expected,
                    received: marker.fpduptr,
                })
                .into());
            }
            if (self.cfg.strict_marker_rsvd || exact) && marker.reserved != 0 {
                return Err(LlpError::Framing(FramingFault::MarkerReserved).into());
            }
            sink.on_marker(self.mk_off, marker);
        }
        Ok(data.get(taken..).unwrap_or(&[]))
    }

    /// Whether the marker being received is covered by the FPDU's CRC: all
    /// are but one inside the CRC field (after its first octet), whose
    /// value is computed before it. (`phase` and `crc_have` do not change
    /// while the marker's octets arrive.)
    fn marker_crc_covered(&self) -> bool {
        !(self.phase == Phase::Crc && self.crc_have > 0)
    }

    fn take_len<S: RxSink>(&mut self, data: &[u8], sink: &mut S) -> Result<usize, ProtocolError> {
        let Some(&x) = data.first() else {
            return Ok(0);
        };
        if self.len_have == 0 {
            self.begin_fpdu_if_needed();
            self.hdr_off = self.off;
        }
        self.feed_crc(&[x]);
        if let Some(slot) = self.len_buf.get_mut(usize::from(self.len_have)) {
            *slot = x;
        }
        self.len_have += 1;
        if self.len_have < 2 {
            return Ok(1);
        }
        self.len_have = 0;
        let len = u16::from_be_bytes(self.len_buf);
        self.start_fpdu(len, sink)?;
        if len > self.cfg.max_ulpdu {
            return Err(LlpError::Framing(FramingFault::UlpduTooLong {
                len,
                max: self.cfg.max_ulpdu,
            })
            .into());
        }
        if self.cfg.mpa_only {
            // The ULPDU is opaque here: PAD and CRC follow it.
            self.payload_len = u32::from(len);
            self.payload_done = 0;
            self.after_payload_check();
            return Ok(1);
        }
        if usize::from(len) < MIN_HDR_LEN {
            return Err(LlpError::Framing(FramingFault::UlpduTooShort { len }).into());
        }
        self.hdr_have = 0;
        self.hdr_need = 2;
        self.phase = Phase::Hdr;
        Ok(1)
    }

    fn take_hdr<S: RxSink>(
        &mut self,
        data: &[u8],
        avail: usize,
        sink: &mut S,
    ) -> Result<usize, ProtocolError> {
        let taken = avail.min(self.hdr_need.saturating_sub(self.hdr_have));
        let bytes = data.get(..taken).unwrap_or(&[]);
        self.feed_crc(bytes);
        if let Some(dst) = self.hdr_buf.get_mut(self.hdr_have..self.hdr_have + taken) {
            dst.copy_from_slice(bytes);
        }
        self.hdr_have += taken;
        if self.hdr_have < self.hdr_need {
            return Ok(taken);
        }
        if self.hdr_need == 2 {
            let ctrl = Control::decode([self.hdr_buf[0], self.hdr_buf[1]]);
            let op = check_control_ext(ctrl, self.cfg.ext)?;
            self.hdr_need = op.hdr_len();
            if usize::from(self.ulpdu_len) < self.hdr_need {
                return Err(LlpError::Framing(FramingFault::UlpduTooShort {
                    len: self.ulpdu_len,
                })
                .into());
            }
            return Ok(taken);
        }
        let raw = self.hdr_buf.get(..self.hdr_need).unwrap_or(&[]);
        let hdr = &*self
            .hdr
            .insert(SegmentHeader::parse_ext(raw, self.cfg.ext)?);
        let plen = usize::from(self.ulpdu_len) - self.hdr_need;
        self.payload_len = plen as u32;
        self.payload_done = 0;
        if let Err(err) = sink.on_header(hdr, raw, plen as u16) {
            self.hdr = None;
            return Err(err);
        }
        self.after_payload_check();
        Ok(taken)
    }

    fn after_payload_check(&mut self) {
        if self.payload_done >= self.payload_len {
            self.pad_left = mpa::pad_len(u32::from(self.ulpdu_len));
            self.phase = if self.pad_left > 0 {
                Phase::Pad
            } else {
                Phase::Crc
            };
        } else {
            self.phase = Phase::Payload;
        }
    }

    fn take_payload<S: RxSink>(
        &mut self,
        data: &[u8],
        avail: usize,
        sink: &mut S,
    ) -> Result<usize, ProtocolError> {
        let left = (self.payload_len - self.payload_done) as usize;
        let taken = avail.min(left);
        let bytes = data.get(..taken).unwrap_or(&[]);
        self.feed_crc(bytes);
        let at = self.payload_done;
        self.payload_done += taken as u32;
        if !self.cfg.mpa_only {
            sink.on_payload(at, bytes)?;
        }
        self.after_payload_check();
        Ok(taken)
    }

    fn take_crc<S: RxSink>(
        &mut self,
        data: &[u8],
        avail: usize,
        sink: &mut S,
    ) -> Result<usize, ProtocolError> {
        if self.crc_have == 0 {
            self.crc_value = self.crc.finalize();
        }
        let taken = avail.min(4 - usize::from(self.crc_have));
        let bytes = data.get(..taken).unwrap_or(&[]);
        for &x in bytes {
            if let Some(slot) = self.crc_buf.get_mut(usize::from(self.crc_have)) {
                *slot = x;
            }
            self.crc_have += 1;
        }
        if self.crc_have < 4 {
            return Ok(taken);
        }
        self.end_fpdu(sink)?;
        Ok(taken)
    }
}
