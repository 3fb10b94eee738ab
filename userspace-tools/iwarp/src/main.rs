// SPDX-License-Identifier: GPL-2.0

//! `iwarp`: frame ULPDUs into MPA FPDUs and decode iWARP captures, using
//! the same wire core (`rsiw-wire`) as the rsiw kernel module.

mod capture;
mod decode;
mod rfc7306;

use std::io::Read;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use rsiw_wire::mpa::MpaMode;
use rsiw_wire::tx::encode_fpdu;
use rsiw_wire::HostCrc32c;

#[derive(Parser)]
#[command(
    name = "iwarp",
    version,
    about = "iWARP (MPA/DDP/RDMAP) framing and decoding tool"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Read a ULPDU as hex on stdin (whitespace ignored), print the FPDU as hex.
    Frame {
        /// Insert MPA markers (every 512 stream octets, first at offset 0).
        #[arg(long)]
        markers: bool,
        /// Compute the CRC32C (otherwise the CRC field is zero).
        #[arg(long)]
        crc: bool,
        /// MPA stream octets already sent before this FPDU (decimal or 0x hex).
        #[arg(long, default_value = "0", value_parser = parse_u32)]
        stream_offset: u32,
    },
    /// Decode a pcap/pcapng capture (or a hex TCP payload with --hex).
    Decode {
        /// Markers in use when no MPA Request/Reply is seen.
        #[arg(long)]
        markers: bool,
        /// CRC in use when no MPA Request/Reply is seen.
        #[arg(long)]
        crc: bool,
        /// FILE holds one direction's raw TCP payload as hex.
        #[arg(long)]
        hex: bool,
        /// MPA stream offset of the first FPDU (for --hex without MPA frames).
        #[arg(long, default_value = "0", value_parser = parse_u32)]
        stream_offset: u32,
        /// Input file.
        file: std::path::PathBuf,
    },
}

fn parse_u32(s: &str) -> Result<u32, String> {
    let s = s.trim();
    let r = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u32::from_str_radix(h, 16)
    } else {
        s.parse::<u32>()
    };
    r.map_err(|e| format!("invalid offset {s:?}: {e}"))
}

/// Parses hex ignoring whitespace (and an optional `0x` prefix per token).
pub fn parse_hex(text: &str) -> Result<Vec<u8>, String> {
    let mut digits = String::with_capacity(text.len());
    for tok in text.split_whitespace() {
        let t = tok
            .strip_prefix("0x")
            .or_else(|| tok.strip_prefix("0X"))
            .unwrap_or(tok);
        digits.push_str(t);
    }
    if !digits.len().is_multiple_of(2) {
        return Err("odd number of hex digits".into());
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&digits[i..i + 2], 16)
                .map_err(|_| format!("invalid hex {:?}", &digits[i..i + 2]))
        })
        .collect()
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn frame(markers: bool, crc: bool, off: u32) -> Result<(), String> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| format!("stdin: {e}"))?;
    let ulpdu = parse_hex(&text)?;
    let mode = MpaMode { markers, crc };
    let mut out = vec![0u8; ulpdu.len() + 2 + 3 + 4 + 4 * (ulpdu.len() / 508 + 3)];
    let n = encode_fpdu(mode, off, &ulpdu, &[], &mut HostCrc32c::new(), &mut out)
        .map_err(|e| format!("cannot frame: {e:?}"))?;
    println!("{}", to_hex(&out[..n]));
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Frame {
            markers,
            crc,
            stream_offset,
        } => frame(markers, crc, stream_offset),
        Cmd::Decode {
            markers,
            crc,
            hex,
            stream_offset,
            file,
        } => decode::run(&file, hex, MpaMode { markers, crc }, stream_offset),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("iwarp: {e}");
            ExitCode::FAILURE
        }
    }
}
