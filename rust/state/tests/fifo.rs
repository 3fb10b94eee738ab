// SPDX-License-Identifier: GPL-2.0

//! The RDMA Read queue ring: unit tests, and a model-based property test
//! against `VecDeque` bounded to the same capacity.

use proptest::prelude::*;
use rsiw_state::fifo::{Fifo, Slots};
use std::collections::VecDeque;

type Ring<T> = Fifo<T, Vec<Option<T>>>;

#[test]
fn without_slots_takes_nothing() {
    let mut f: Ring<u32> = Fifo::from_slots(Vec::new());
    assert_eq!(f.capacity(), 0);
    assert!(f.is_empty());
    assert_eq!(f.push(7), Err(7));
    assert_eq!(f.pop(), None);
    assert_eq!(f.head_mut(), None);
    assert_eq!(f.len(), 0);
}

#[test]
fn first_in_first_out_and_bounded() {
    let mut f: Ring<u32> = Fifo::with_capacity(3).unwrap();
    assert_eq!(f.capacity(), 3);
    assert_eq!(f.push(1), Ok(()));
    assert_eq!(f.push(2), Ok(()));
    assert_eq!(f.push(3), Ok(()));
    assert_eq!(f.push(4), Err(4), "full at its capacity");
    assert_eq!(f.len(), 3);
    assert_eq!(f.pop(), Some(1));
    assert_eq!(f.push(4), Ok(()), "a slot came free");
    assert_eq!(f.pop(), Some(2));
    assert_eq!(f.pop(), Some(3));
    assert_eq!(f.pop(), Some(4));
    assert_eq!(f.pop(), None);
    assert!(f.is_empty());
}

#[test]
fn head_is_the_oldest_and_changes_in_place() {
    let mut f: Ring<u32> = Fifo::with_capacity(2).unwrap();
    f.push(10).unwrap();
    f.push(20).unwrap();
    *f.head_mut().unwrap() += 1;
    assert_eq!(f.pop(), Some(11));
    assert_eq!(f.head_mut(), Some(&mut 20));
}

#[test]
fn wraps_around_many_times() {
    let mut f: Ring<usize> = Fifo::with_capacity(5).unwrap();
    for i in 0..if cfg!(miri) { 100 } else { 1000 } {
        f.push(i).unwrap();
        if i >= 3 {
            assert_eq!(f.pop(), Some(i - 3));
        }
    }
    assert_eq!(f.len(), 3);
}

#[test]
fn entries_drop_with_the_ring() {
    use std::rc::Rc;
    let e = Rc::new(());
    let mut f: Ring<Rc<()>> = Fifo::with_capacity(4).unwrap();
    for _ in 0..3 {
        f.push(e.clone()).unwrap();
    }
    drop(f.pop());
    assert_eq!(Rc::strong_count(&e), 3);
    drop(f);
    assert_eq!(Rc::strong_count(&e), 1);
}

#[test]
fn slots_are_allocated_empty() {
    let s = <Vec<Option<u8>> as Slots<u8>>::with_len(6).unwrap();
    assert_eq!(s.len(), 6);
    assert!(s.iter().all(Option::is_none));
}

#[derive(Clone, Debug)]
enum Op {
    Push(u16),
    Pop,
    Head(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => any::<u16>().prop_map(Op::Push),
        2 => Just(Op::Pop),
        1 => any::<u16>().prop_map(Op::Head),
    ]
}

/// Operations per case: fewer under Miri, which interprets every one.
const MAX_OPS: usize = if cfg!(miri) { 40 } else { 200 };

proptest! {
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 4 } else { 256 }, ..ProptestConfig::default() })]
    /// Any sequence of pushes, pops and head updates gives what a
    /// `VecDeque` that refuses entries beyond the capacity gives.
    #[test]
    fn matches_a_bounded_vecdeque(cap in 0usize..9, ops in prop::collection::vec(op(), 0..MAX_OPS)) {
        let mut f: Ring<u16> = Fifo::with_capacity(cap).unwrap();
        let mut m: VecDeque<u16> = VecDeque::new();
        for o in ops {
            match o {
                Op::Push(v) => {
                    let r = f.push(v);
                    if m.len() < cap {
                        m.push_back(v);
                        prop_assert_eq!(r, Ok(()));
                    } else {
                        prop_assert_eq!(r, Err(v));
                    }
                }
                Op::Pop => prop_assert_eq!(f.pop(), m.pop_front()),
                Op::Head(v) => {
                    match (f.head_mut(), m.front_mut()) {
                        (Some(a), Some(b)) => {
                            prop_assert_eq!(*a, *b);
                            *a = v;
                            *b = v;
                        }
                        (a, b) => prop_assert_eq!(a.is_none(), b.is_none()),
                    }
                }
            }
            prop_assert_eq!(f.len(), m.len());
            prop_assert_eq!(f.is_empty(), m.is_empty());
            prop_assert_eq!(f.capacity(), cap);
        }
        // What is left comes out in order.
        while let Some(e) = m.pop_front() {
            prop_assert_eq!(f.pop(), Some(e));
        }
        prop_assert_eq!(f.pop(), None);
    }
}
