// SPDX-License-Identifier: GPL-2.0

//! The deframer's one-pass path: an FPDU that lies whole at the start of
//! the octets fed (no markers) is checked, and handed to the sink, in one
//! step instead of octet-wise ([`Deframer::push`] tries it first at each
//! FPDU boundary); with no CRC to compute in this pass the sink may take
//! it whole ([`RxSink::on_segment`]). Anything else, errors included, is
//! left to the octet-wise path, which makes the same sink calls with the
//! same state.

use super::{CrcVerdict, Deframer, FpduInfo, Phase, RxSink};
use crate::wire::crc::Crc32c;
use crate::wire::error::ProtocolError;
use crate::wire::mpa;
use crate::wire::rdmap::{HeaderView, Opcode, MIN_HDR_LEN};

impl<C: Crc32c> Deframer<C> {
    /// The MPA-only one-pass path: `data` starts with a whole FPDU (no
    /// markers) of acceptable length; checks its CRC. `None` (nothing
    /// consumed) otherwise.
    pub(super) fn check_whole_fpdu<S: RxSink>(
        &mut self,
        data: &[u8],
        sink: &mut S,
    ) -> Result<Option<usize>, ProtocolError> {
        let (Some(&l0), Some(&l1)) = (data.first(), data.get(1)) else {
            return Ok(None);
        };
        let len = u16::from_be_bytes([l0, l1]);
        if len > self.cfg.max_ulpdu {
            return Ok(None);
        }
        let body_end =
            mpa::MPA_HDR_LEN as usize + usize::from(len) + mpa::pad_len(u32::from(len)) as usize;
        let Some(fpdu) = data.get(..body_end + mpa::MPA_CRC_LEN as usize) else {
            return Ok(None);
        };
        self.in_fpdu = true;
        self.fpdu_off = self.off;
        self.hdr_off = self.off;
        self.start_fpdu(len, sink)?;
        if self.cfg.computes_crc() {
            self.crc.reset();
            self.crc.update(fpdu.get(..body_end).unwrap_or(&[]));
            self.crc_value = self.crc.finalize();
        }
        self.crc_buf
            .copy_from_slice(fpdu.get(body_end..).unwrap_or(&[0; 4]));
        self.end_fpdu(sink)?;
        Ok(Some(fpdu.len()))
    }

    /// The common case in one pass: `data` starts with a whole FPDU (no
    /// markers) whose length, control field and header are valid. Makes
    /// the same sink calls with the same state as the octet-wise path;
    /// `None` (nothing consumed) for anything else, which the octet-wise
    /// path then handles, errors included.
    pub(super) fn take_whole_fpdu<S: RxSink>(
        &mut self,
        data: &[u8],
        sink: &mut S,
    ) -> Result<Option<usize>, ProtocolError> {
        let (Some(&l0), Some(&l1)) = (data.first(), data.get(1)) else {
            return Ok(None);
        };
        let len = u16::from_be_bytes([l0, l1]);
        let ulpdu = usize::from(len);
        if len > self.cfg.max_ulpdu || ulpdu < MIN_HDR_LEN {
            return Ok(None);
        }
        let body_end = mpa::MPA_HDR_LEN as usize + ulpdu + mpa::pad_len(u32::from(len)) as usize;
        let Some(fpdu) = data.get(..body_end + mpa::MPA_CRC_LEN as usize) else {
            return Ok(None);
        };
        let ulpdu_octets = fpdu.get(2..2 + ulpdu).unwrap_or(&[]);
        let Ok(view) = HeaderView::check_ext(ulpdu_octets, self.cfg.ext) else {
            return Ok(None);
        };
        let raw = view.raw();
        let hdr_need = raw.len();
        let hdr_end = 2 + hdr_need;
        let plen = ulpdu - hdr_need;
        if !self.cfg.computes_crc() {
            if let Some(taken) = self.offer_segment(fpdu, len, &view, hdr_end, plen, sink)? {
                return Ok(Some(taken));
            }
        }
        // Kept in the slot until the FPDU ends.
        self.hdr = view.header().ok();
        if self.hdr.is_none() {
            return Ok(None);
        }
        // Accepted: the steps of take_len, take_hdr, take_payload, the PAD
        // and take_crc.
        self.in_fpdu = true;
        self.fpdu_off = self.off;
        self.hdr_off = self.off;
        if self.cfg.computes_crc() {
            self.crc.reset();
            self.crc.update(fpdu.get(..body_end).unwrap_or(&[]));
        }
        if let Err(err) = self.start_fpdu(len, sink) {
            self.hdr = None;
            return Err(err);
        }
        if let Some(dst) = self.hdr_buf.get_mut(..hdr_need) {
            dst.copy_from_slice(raw);
        }
        self.phase = Phase::Hdr;
        self.hdr_have = hdr_need;
        self.hdr_need = hdr_need;
        self.payload_len = plen as u32;
        self.payload_done = 0;
        // (`self.hdr` was set above; it is borrowed only from here on, as
        // `start_fpdu` needs all of `self`)
        let Some(hdr) = &self.hdr else {
            return Ok(None);
        };
        if let Err(err) = sink.on_header(hdr, raw, plen as u16) {
            self.hdr = None;
            return Err(err);
        }
        if plen > 0 {
            self.phase = Phase::Payload;
            self.payload_done = plen as u32;
            sink.on_payload(0, fpdu.get(hdr_end..hdr_end + plen).unwrap_or(&[]))?;
        }
        self.crc_value = self.crc.finalize();
        self.crc_buf
            .copy_from_slice(fpdu.get(body_end..).unwrap_or(&[0; 4]));
        self.pad_left = 0;
        self.end_fpdu(sink)?;
        Ok(Some(fpdu.len()))
    }

    /// [`Self::take_whole_fpdu`] when no CRC is computed here: offers the
    /// whole FPDU `fpdu` (ULPDU_Length `len`, header `hdr` ending at
    /// octet `hdr_end`, `plen` payload octets) to the sink's
    /// [`RxSink::on_segment`]. `Some` (the FPDU's length) when the sink
    /// took it: the deframer is then as after [`Self::end_fpdu`].
    #[inline(always)]
    fn offer_segment<S: RxSink>(
        &mut self,
        fpdu: &[u8],
        len: u16,
        hdr: &HeaderView<'_>,
        hdr_end: usize,
        plen: usize,
        sink: &mut S,
    ) -> Result<Option<usize>, ProtocolError> {
        let info = FpduInfo {
            fpdu_off: self.off,
            hdr_off: self.off,
            ulpdu_len: len,
            pad: mpa::pad_len(u32::from(len)) as u8,
        };
        let verdict = if self.cfg.mode.crc {
            CrcVerdict::Ok
        } else {
            CrcVerdict::NotChecked
        };
        let raw = hdr.raw();
        let payload = fpdu.get(hdr_end..hdr_end + plen).unwrap_or(&[]);
        match sink.on_segment(&info, hdr, payload, verdict) {
            Ok(false) => Ok(None),
            Ok(true) => {
                self.fpdus += 1;
                if hdr.opcode() == Opcode::Terminate && self.cfg.stop_at_terminate {
                    self.terminated = true;
                }
                Ok(Some(fpdu.len()))
            }
            Err(err) => {
                // As a header the sink rejected: the octet-wise path's
                // state after `take_hdr`.
                self.in_fpdu = true;
                self.fpdu_off = self.off;
                self.hdr_off = self.off;
                self.ulpdu_len = len;
                let need = raw.len();
                if let Some(dst) = self.hdr_buf.get_mut(..need) {
                    dst.copy_from_slice(raw);
                }
                self.phase = Phase::Hdr;
                self.hdr_have = need;
                self.hdr_need = need;
                self.hdr = None;
                Err(err)
            }
        }
    }
}
