// SPDX-License-Identifier: GPL-2.0

//! The memory access gate: unit tests, a model-based property test of
//! every operation in any order, and threads racing an invalidation
//! against transfers (Miri checks those for data races too).

use proptest::prelude::*;
use rsiw_state::gate::{InvalidateError, MemGate, OpenError, Refused};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

#[test]
fn closed_until_opened() {
    let g = MemGate::new();
    assert!(!g.is_valid());
    assert_eq!(g.enter_key(0), Err(Refused::Stale));
    let t = g.open(0x5a).unwrap();
    assert_eq!(t.key(), 0x5a);
    assert!(g.is_valid());
    assert_eq!(g.key(), 0x5a);
    assert_eq!(g.enter_key(0x5b), Err(Refused::Stale), "another key");
    assert_eq!(g.enter_key(0x5a), Ok(t));
    assert_eq!(g.inside(), 1);
    g.leave();
    assert_eq!(g.inside(), 0);
}

#[test]
fn open_twice_refused() {
    let g = MemGate::new();
    g.open(1).unwrap();
    assert_eq!(g.open(2), Err(OpenError::Valid));
    assert_eq!(g.key(), 1);
}

#[test]
fn a_ticket_never_enters_a_later_registration() {
    let g = MemGate::new();
    let old = g.open(7).unwrap();
    assert!(g.close());
    assert_eq!(g.enter(old), Err(Refused::Stale), "closed");
    // The same key again: a new generation, the old ticket stays out.
    let new = g.open(7).unwrap();
    assert_ne!(old, new);
    assert_eq!(g.enter(old), Err(Refused::Stale));
    assert_eq!(g.enter(new), Ok(()));
    g.leave();
}

#[test]
fn close_while_inside_lets_the_transfer_finish_but_nobody_in() {
    let g = MemGate::new();
    let t = g.open(3).unwrap();
    g.enter(t).unwrap();
    assert!(g.close());
    assert!(!g.close(), "closed once");
    assert_eq!(g.inside(), 1, "the transfer inside is counted");
    assert_eq!(g.enter(t), Err(Refused::Stale));
    assert_eq!(g.open(3), Err(OpenError::Busy), "no reuse while inside");
    g.leave();
    assert_eq!(g.inside(), 0);
    assert!(g.open(3).is_ok());
}

#[test]
fn try_invalidate_fails_while_busy_and_on_a_stale_key() {
    let g = MemGate::new();
    let t = g.open(9).unwrap();
    g.enter(t).unwrap();
    assert_eq!(g.try_invalidate(9), Err(InvalidateError::Busy));
    assert!(g.is_valid(), "a busy STag stays valid");
    g.leave();
    assert_eq!(g.try_invalidate(8), Err(InvalidateError::Stale));
    assert_eq!(g.try_invalidate(9), Ok(()));
    assert!(!g.is_valid());
    assert_eq!(g.try_invalidate(9), Ok(()), "invalidating twice is allowed");
    assert_eq!(g.enter(t), Err(Refused::Stale));
}

#[test]
fn close_key_checks_the_key_only() {
    let g = MemGate::new();
    let t = g.open(4).unwrap();
    g.enter(t).unwrap();
    assert_eq!(g.close_key(5), Err(InvalidateError::Stale));
    assert!(g.is_valid());
    assert_eq!(g.close_key(4), Ok(()));
    assert!(!g.is_valid());
    assert_eq!(g.inside(), 1);
    g.leave();
}

#[test]
fn generation_wraps_without_touching_key_or_count() {
    let g = MemGate::new();
    let first = g.open(0xff).unwrap();
    for _ in 0..(1u32 << 23) + 1 {
        if cfg!(miri) {
            break;
        }
        g.close();
        g.open(0xff).unwrap();
    }
    assert_eq!(g.key(), 0xff);
    assert_eq!(g.inside(), 0);
    if !cfg!(miri) {
        // 2^23 + 1 openings later the generation has wrapped past the
        // first one's.
        assert_ne!(g.enter(first), Ok(()));
    }
}

/// One operation of the property test.
#[derive(Clone, Debug)]
enum Op {
    Open(u8),
    EnterKey(u8),
    EnterTicket(usize),
    Leave,
    Close,
    CloseKey(u8),
    TryInvalidate(u8),
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0u8..3;
    prop_oneof![
        key.clone().prop_map(Op::Open),
        key.clone().prop_map(Op::EnterKey),
        (0usize..4).prop_map(Op::EnterTicket),
        Just(Op::Leave),
        Just(Op::Close),
        key.clone().prop_map(Op::CloseKey),
        key.prop_map(Op::TryInvalidate),
    ]
}

/// The model: which registration is current (a number), its key, whether
/// it is valid, and how many transfers are inside.
#[derive(Default)]
struct Model {
    reg: u32,
    key: u8,
    valid: bool,
    inside: u32,
}

proptest! {
    /// Every sequence of operations does what the model says: a transfer
    /// gets in only while its own registration is current and valid, and
    /// nothing reopens the memory while a transfer is inside.
    #[test]
    fn gate_follows_the_model(ops in proptest::collection::vec(op(), 0..64)) {
        let g = MemGate::new();
        let mut m = Model::default();
        // tickets handed out, with the registration they belong to
        let mut tickets = Vec::new();
        for o in ops {
            match o {
                Op::Open(k) => {
                    let r = g.open(k);
                    if m.valid {
                        prop_assert_eq!(r, Err(OpenError::Valid));
                    } else if m.inside > 0 {
                        prop_assert_eq!(r, Err(OpenError::Busy));
                    } else {
                        let t = r.unwrap();
                        m.reg += 1;
                        m.key = k;
                        m.valid = true;
                        tickets.push((t, m.reg));
                    }
                }
                Op::EnterKey(k) => {
                    let r = g.enter_key(k);
                    if m.valid && m.key == k {
                        let t = r.unwrap();
                        prop_assert!(tickets.contains(&(t, m.reg)));
                        m.inside += 1;
                    } else {
                        prop_assert_eq!(r, Err(Refused::Stale));
                    }
                }
                Op::EnterTicket(i) => {
                    let Some(&(t, reg)) = tickets.get(i) else { continue };
                    let r = g.enter(t);
                    if m.valid && reg == m.reg {
                        prop_assert_eq!(r, Ok(()));
                        m.inside += 1;
                    } else {
                        prop_assert_eq!(r, Err(Refused::Stale));
                    }
                }
                Op::Leave => {
                    if m.inside > 0 {
                        g.leave();
                        m.inside -= 1;
                    }
                }
                Op::Close => {
                    prop_assert_eq!(g.close(), m.valid);
                    m.valid = false;
                }
                Op::CloseKey(k) => {
                    let r = g.close_key(k);
                    if m.key == k {
                        prop_assert_eq!(r, Ok(()));
                        m.valid = false;
                    } else {
                        prop_assert_eq!(r, Err(InvalidateError::Stale));
                    }
                }
                Op::TryInvalidate(k) => {
                    let r = g.try_invalidate(k);
                    if m.key != k {
                        prop_assert_eq!(r, Err(InvalidateError::Stale));
                    } else if m.valid && m.inside > 0 {
                        prop_assert_eq!(r, Err(InvalidateError::Busy));
                    } else {
                        prop_assert_eq!(r, Ok(()));
                        m.valid = false;
                    }
                }
            }
            prop_assert_eq!(g.is_valid(), m.valid);
            prop_assert_eq!(g.inside(), m.inside);
            if m.reg > 0 {
                prop_assert_eq!(g.key(), m.key);
            }
        }
    }
}

/// Transfers on other threads copy into a buffer while one thread closes
/// the gate and waits for it to drain: once it has, no transfer writes
/// again (the "memory" records who wrote after the drain).
#[test]
fn nothing_gets_in_after_a_drained_close() {
    let rounds = if cfg!(miri) { 20 } else { 2000 };
    let g = Arc::new(MemGate::new());
    let t = g.open(1).unwrap();
    let drained = Arc::new(AtomicBool::new(false));
    let late = Arc::new(AtomicU32::new(0));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (g, drained, late) = (g.clone(), drained.clone(), late.clone());
            std::thread::spawn(move || {
                for _ in 0..rounds {
                    if g.enter(t).is_ok() {
                        // the copy into the memory
                        if drained.load(Ordering::SeqCst) {
                            late.fetch_add(1, Ordering::SeqCst);
                        }
                        g.leave();
                    }
                }
            })
        })
        .collect();
    std::thread::yield_now();
    g.close();
    while g.inside() != 0 {
        std::thread::yield_now();
    }
    drained.store(true, Ordering::SeqCst);
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(late.load(Ordering::SeqCst), 0);
    assert_eq!(g.inside(), 0);
}

/// A try-invalidation racing transfers either fails (busy) or leaves the
/// memory to nobody: a transfer inside when it succeeded is impossible.
#[test]
fn try_invalidate_never_succeeds_under_a_transfer() {
    let rounds = if cfg!(miri) { 20 } else { 5000 };
    let g = Arc::new(MemGate::new());
    let t = g.open(2).unwrap();
    let inside_now = Arc::new(AtomicU32::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let worker = {
        let (g, inside_now, stop) = (g.clone(), inside_now.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                if g.enter(t).is_ok() {
                    inside_now.fetch_add(1, Ordering::SeqCst);
                    inside_now.fetch_sub(1, Ordering::SeqCst);
                    g.leave();
                } else {
                    break;
                }
            }
        })
    };
    let mut done = false;
    for _ in 0..rounds {
        if g.try_invalidate(2).is_ok() {
            done = true;
            break;
        }
        std::thread::yield_now();
    }
    if !done {
        stop.store(true, Ordering::SeqCst);
    }
    worker.join().unwrap();
    assert_eq!(g.inside(), 0);
    assert_eq!(inside_now.load(Ordering::SeqCst), 0);
}
