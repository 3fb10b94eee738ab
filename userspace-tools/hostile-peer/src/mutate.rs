// SPDX-License-Identifier: GPL-2.0

//! Random-mutation mode: `--mutate COUNT [--seed S]`. Each of COUNT
//! connections gets a plausible stream (an MPA Request, or an accepted MPA
//! exchange followed by a few well formed FPDUs: Sends, Writes, Read
//! Requests, Read Responses, Terminates) with a few random mutations (bit
//! flips, octet overwrites, deletions, duplications, truncation), sent in
//! one or several writes. There is no single expected answer; what is
//! checked here is that the target keeps serving (a fresh, valid MPA
//! exchange succeeds every 16 connections and at the end) and, by the
//! guest test around it, that the kernel log stays clean. Runs are
//! reproducible from the seed.

use std::collections::BTreeMap;
use std::time::Duration;

use rsiw_wire::rdmap::ReadRequest;
use rsiw_wire::term::TermHdr;

use crate::frames::{self, ReqSpec};
use crate::peer::{code_str, MpaOutcome, Peer};
use crate::scenarios::{establish, listener_alive, Ctx};

/// xorshift64*: small, reproducible, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// Applies 1..=4 random mutations to `b`.
fn mutate(rng: &mut Rng, b: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        if b.is_empty() {
            return;
        }
        let at = rng.below(b.len());
        match rng.below(6) {
            0 | 1 => b[at] ^= 1 << rng.below(8),
            2 => b[at] = rng.next() as u8,
            3 => {
                let n = 1 + rng.below(8.min(b.len() - at));
                b.drain(at..at + n);
            }
            4 => {
                let n = 1 + rng.below(16.min(b.len() - at));
                let dup: Vec<u8> = b[at..at + n].to_vec();
                b.splice(at..at, dup);
            }
            _ => b.truncate(at.max(1)),
        }
    }
}

/// A few well formed FPDUs of every kind, framed for `p`'s transmit mode.
fn stream(rng: &mut Rng, p: &mut Peer) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..1 + rng.below(5) {
        let stag = match rng.below(3) {
            0 => 0,
            1 => rng.next() as u32,
            _ => 0x00ab_cd00 | rng.below(256) as u32,
        };
        let to = rng.next() & 0xffff;
        let len = rng.below(256);
        let payload = frames::garbage(rng.next(), len);
        let f = match rng.below(6) {
            0 | 1 => p.next_send(&frames::rping_info(0x10000, stag, 16)),
            2 => p.fpdu(&frames::write_hdr(stag, to), &payload),
            3 => {
                let rr = ReadRequest {
                    sink_stag: rng.next() as u32,
                    sink_to: rng.next(),
                    size: rng.below(70000) as u32,
                    src_stag: stag,
                    src_to: to,
                };
                let msn = 1 + rng.below(4) as u32;
                p.fpdu(&frames::read_request_hdr(msn, rr), &[])
            }
            4 => p.fpdu(&frames::read_response_hdr(stag, to), &payload),
            _ => {
                let t = TermHdr::decode([rng.next() as u8, 0, 0, 0]);
                p.fpdu(&frames::terminate_hdr(t), &[])
            }
        };
        out.extend(f);
    }
    out
}

/// Runs `count` mutated connections; `Ok` carries a histogram of what the
/// target answered.
pub fn run(ctx: &Ctx, count: u32, seed: u64) -> Result<String, String> {
    let mut rng = Rng(seed | 1);
    let mut seen: BTreeMap<String, u32> = BTreeMap::new();
    let short = Duration::from_millis(400);
    for i in 0..count {
        let outcome = if rng.chance(15) {
            // A mutated MPA Request.
            let mut p = Peer::connect(ctx.target)?;
            let mut req = frames::mpa_request(&ReqSpec {
                crc: rng.chance(50),
                pdata: frames::garbage(rng.next(), rng.below(64)),
                ..ReqSpec::default()
            });
            mutate(&mut rng, &mut req);
            p.send_raw(&req).ok();
            match p.read_reply(short) {
                Ok(MpaOutcome::Reply { hdr, .. }) if hdr.reject => "MPA: reject Reply".into(),
                Ok(MpaOutcome::Reply { .. }) => "MPA: accepting Reply".into(),
                Ok(MpaOutcome::Invalid(_)) => "MPA: invalid Reply".into(),
                Ok(MpaOutcome::Nothing(_)) | Err(_) => "MPA: no Reply".into(),
            }
        } else {
            let req = ReqSpec {
                crc: rng.chance(50),
                ..ReqSpec::default()
            };
            let mut p = establish(ctx, &req).map_err(|e| format!("connection {i}: {e}"))?;
            let mut s = stream(&mut rng, &mut p);
            mutate(&mut rng, &mut s);
            // One write, or the stream cut at random points.
            let mut rest = &s[..];
            while !rest.is_empty() {
                let n = if rng.chance(50) {
                    rest.len()
                } else {
                    1 + rng.below(rest.len())
                };
                if p.send_raw(&rest[..n]).is_err() {
                    break;
                }
                rest = &rest[n..];
            }
            p.observe(short, |p| p.first_term().is_some() || p.end.closed());
            let o = match p.first_term().and_then(|s| s.term()) {
                Some(t) => format!("TERMINATE {}", code_str(t.code)),
                None if p.end.closed() => "closed".into(),
                None => "no answer".into(),
            };
            if rng.chance(30) {
                p.reset();
            }
            o
        };
        *seen.entry(outcome).or_default() += 1;
        if i % 16 == 15 {
            listener_alive(ctx).map_err(|e| format!("after connection {i}: {e}"))?;
        }
    }
    listener_alive(ctx).map_err(|e| format!("at the end: {e}"))?;
    let mut s = format!("{count} mutated connections (seed {seed}), listener alive;");
    for (k, v) in &seen {
        s += &format!(" {v}x {k};");
    }
    Ok(s)
}
