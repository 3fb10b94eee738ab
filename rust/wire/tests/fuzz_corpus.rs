// SPDX-License-Identifier: GPL-2.0

//! Replays every file of `fuzz/corpus/{rx,connect,tx}/` through the fuzz
//! bodies on stable,
//! plus a long random-mutation loop (`--ignored`) as a libFuzzer-free
//! fallback.

use std::path::Path;

/// Under Miri (thousands of times slower) only this many of the smallest
/// inputs of each corpus are replayed.
const MIRI_INPUTS: usize = 3;

/// Runs `body` on every file of `fuzz/corpus/<target>/`.
fn replay(target: &str, body: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut inputs: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .expect("corpus dir")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert!(!inputs.is_empty(), "empty corpus at {}", dir.display());
    if cfg!(miri) {
        inputs.sort_by_key(|d| d.len());
        inputs.truncate(MIRI_INPUTS);
    }
    for d in &inputs {
        body(d);
    }
}

#[test]
fn replay_rx_corpus() {
    replay("rx", rsiw_wire::fuzzing::rx_one);
}

#[test]
fn replay_connect_corpus() {
    replay("connect", rsiw_wire::fuzzing::connect_one);
}

#[test]
fn replay_tx_corpus() {
    replay("tx", rsiw_wire::fuzzing::tx_one);
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, seed: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..=rng.below(8) {
        match rng.below(6) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = rng.next() as u8;
            }
            2 => {
                let i = rng.below(v.len() + 1);
                v.insert(i, rng.next() as u8);
            }
            3 if !v.is_empty() => {
                let i = rng.below(v.len());
                v.remove(i);
            }
            4 if v.len() > 8 => {
                let a = rng.below(v.len());
                let b = rng.below(v.len());
                let (a, b) = (a.min(b), a.max(b));
                let chunk = v[a..b].to_vec();
                let at = rng.below(v.len());
                v.splice(at..at, chunk);
            }
            _ => {
                if v.len() > 1 {
                    v.truncate(rng.below(v.len()) + 1);
                }
            }
        }
    }
    v
}

/// Long random mutation loop over the corpus. Run with
/// `RSIW_FUZZ_ITERS=1000000 cargo test -p rsiw-wire --test fuzz_corpus -- --ignored`.
#[test]
#[ignore]
fn random_mutation_loop() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/rx");
    let seeds: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    let iters: u64 = std::env::var("RSIW_FUZZ_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..iters {
        let s = &seeds[rng.below(seeds.len())];
        let m = mutate(&mut rng, s);
        rsiw_wire::fuzzing::rx_one(&m);
    }
    println!("random_mutation_loop: {iters} executions clean");
}

/// Regenerates the seed part of the corpus (valid streams in all modes).
/// `cargo test -p rsiw-wire --test fuzz_corpus -- --ignored write_seed_corpus`
#[test]
#[ignore]
fn write_seed_corpus() {
    use rsiw_wire::error::DdpError;
    use rsiw_wire::mpa::MpaMode;
    use rsiw_wire::rdmap::{Opcode, ReadRequest, SegmentHeader};
    use rsiw_wire::term::build_terminate;
    use rsiw_wire::tx::encode_fpdu;
    use rsiw_wire::HostCrc32c;

    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/rx");
    std::fs::create_dir_all(&dir).unwrap();
    let offs = [0u32, 300, 509, 0xffff_fff0];
    let mut k = 0;
    for (mi, mode) in MpaMode::ALL.iter().enumerate() {
        for (oi, &off0) in offs.iter().enumerate() {
            let mut stream = Vec::new();
            let mut off = off0;
            let rr = ReadRequest {
                sink_stag: 1,
                sink_to: 2,
                size: 3,
                src_stag: 4,
                src_to: 5,
            };
            let send = SegmentHeader::send(Opcode::Send, 0, 1, 0, true);
            let (sb, sn) = send.to_bytes();
            let mut term = [0u8; 128];
            let tn = build_terminate(
                DdpError::UntaggedInvalidQn.into(),
                1,
                Some(&sb[..sn]),
                9,
                &mut term,
            )
            .unwrap();
            let hdrs = [
                SegmentHeader::write(0x100, 0x2000, false),
                send,
                SegmentHeader::send(Opcode::SendSeInvalidate, 0x77, 2, 0, true),
                SegmentHeader::read_request(1, rr),
                SegmentHeader::read_response(0x55, 0, true),
            ];
            for (i, h) in hdrs.iter().enumerate() {
                let (b, n) = h.to_bytes();
                let payload: Vec<u8> = (0..(i * 37 + oi * 200) % 700).map(|x| x as u8).collect();
                let payload = if h.opcode == Opcode::ReadRequest {
                    vec![]
                } else {
                    payload
                };
                let mut out = vec![0u8; 4096];
                let w = encode_fpdu(
                    *mode,
                    off,
                    &b[..n],
                    &payload,
                    &mut HostCrc32c::new(),
                    &mut out,
                )
                .unwrap();
                stream.extend_from_slice(&out[..w]);
                off = off.wrapping_add(w as u32);
            }
            let mut out = vec![0u8; 4096];
            let w = encode_fpdu(
                *mode,
                off,
                &term[..tn],
                &[],
                &mut HostCrc32c::new(),
                &mut out,
            )
            .unwrap();
            stream.extend_from_slice(&out[..w]);
            let mut seed = vec![mi as u8];
            seed.extend_from_slice(&off0.to_be_bytes());
            seed.push((k * 13) as u8);
            seed.extend_from_slice(&stream);
            std::fs::write(dir.join(format!("seed-{mi}-{oi}")), seed).unwrap();
            k += 1;
        }
    }
    // MPA Request/Reply frames as raw streams.
    use rsiw_wire::connect::*;
    let io = IrdOrd {
        peer_to_peer: true,
        ird: 4,
        ord: 4,
        read_rtr: true,
        ..IrdOrd::default()
    };
    let mut out = [0u8; 600];
    let n = encode_rr(
        MpaRr::new(FrameKind::Request, 2, 0),
        Some(io),
        b"hi",
        &mut out,
    )
    .unwrap();
    let mut seed = vec![0u8, 0, 0, 0, 0, 3];
    seed.extend_from_slice(&out[..n]);
    std::fs::write(dir.join("seed-mpa-req"), seed).unwrap();
    let n = encode_rr(MpaRr::new(FrameKind::Reply, 1, 0), None, b"", &mut out).unwrap();
    let mut seed = vec![3u8, 0, 0, 1, 0, 9];
    seed.extend_from_slice(&out[..n]);
    std::fs::write(dir.join("seed-mpa-rep"), seed).unwrap();
}
