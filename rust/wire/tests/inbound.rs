// SPDX-License-Identifier: GPL-2.0

//! The receiver's message bookkeeping (`inbound`): expected MSNs, the
//! untagged message in progress, the Read Request and Read Response
//! segment rules, scattering over SGEs (against a model that places octet
//! by octet) and the header copy a TERMINATE carries.

use proptest::prelude::*;
use rsiw_wire::ddp::TaggedHdr;
use rsiw_wire::error::DdpError;
use rsiw_wire::inbound::*;
use rsiw_wire::rdmap::{MAX_HDR_LEN, QN_READ_REQUEST, QN_SEND, QN_TERMINATE};

#[test]
fn msns_start_at_one_and_advance_per_queue() {
    let mut m = ExpectedMsns::new();
    assert_eq!(m, ExpectedMsns::default());
    for qn in [QN_SEND, QN_READ_REQUEST, QN_TERMINATE] {
        assert_eq!(m.expected(qn), Some(1));
        assert_eq!(m.check(qn, 1), Ok(()));
        assert_eq!(m.check(qn, 2), Err(DdpError::UntaggedMsnRange));
        assert_eq!(m.check(qn, 0), Err(DdpError::UntaggedMsnRange));
    }
    m.advance(QN_SEND);
    assert_eq!(m.check(QN_SEND, 2), Ok(()));
    assert_eq!(m.check(QN_SEND, 1), Err(DdpError::UntaggedMsnRange));
    assert_eq!(m.check(QN_READ_REQUEST, 1), Ok(()));
    assert_eq!(m.expected(3), None);
    assert_eq!(m.check(3, 1), Err(DdpError::UntaggedInvalidQn));
    m.advance(3);
    assert_eq!(m.check(QN_TERMINATE, 1), Ok(()));
}

#[test]
fn untagged_message_in_order() {
    let mut m = UntaggedMsg::idle();
    assert!(!m.is_active());
    assert_eq!(m.end(), None);
    // A new message starts at MO 0; with none in progress nothing fits.
    assert_eq!(m.check_mo(0), Ok(()));
    assert_eq!(m.check_mo(4), Err(DdpError::UntaggedInvalidMo));
    assert_eq!(m.check_room(0), Err(DdpError::UntaggedTooLong));
    m.begin(100);
    assert!(m.is_active());
    assert_eq!(m.check_mo(0), Ok(()));
    assert_eq!(m.check_room(100), Ok(()));
    assert_eq!(m.check_room(101), Err(DdpError::UntaggedTooLong));
    m.advance(60);
    assert_eq!(m.placed(), 60);
    assert_eq!(m.check_mo(0), Err(DdpError::UntaggedInvalidMo));
    assert_eq!(m.check_mo(60), Ok(()));
    assert_eq!(m.check_room(40), Ok(()));
    assert_eq!(m.check_room(41), Err(DdpError::UntaggedTooLong));
    assert_eq!(m.check_room(u32::MAX), Err(DdpError::UntaggedTooLong));
    m.advance(40);
    assert_eq!(m.check_room(0), Ok(()));
    assert_eq!(m.end(), Some(100));
    assert!(!m.is_active());
    assert_eq!(m.end(), None);
    // The next message starts afresh.
    assert_eq!(m.check_mo(0), Ok(()));
    m.begin(0);
    assert_eq!(m.placed(), 0);
    assert_eq!(m.check_room(0), Ok(()));
    assert_eq!(m.check_room(1), Err(DdpError::UntaggedTooLong));
}

#[test]
fn untagged_advance_saturates() {
    let mut m = UntaggedMsg::idle();
    m.begin(u32::MAX);
    m.advance(u32::MAX);
    m.advance(5);
    assert_eq!(m.placed(), u32::MAX);
    assert_eq!(m.check_room(1), Err(DdpError::UntaggedTooLong));
}

#[test]
fn read_request_is_one_segment_of_its_header() {
    assert_eq!(check_read_request(0, 0, true), Ok(()));
    assert_eq!(
        check_read_request(1, 0, true),
        Err(DdpError::UntaggedInvalidMo)
    );
    assert_eq!(
        check_read_request(28, 4, false),
        Err(DdpError::UntaggedInvalidMo)
    );
    assert_eq!(
        check_read_request(0, 1, true),
        Err(DdpError::UntaggedTooLong)
    );
    assert_eq!(
        check_read_request(0, 0, false),
        Err(DdpError::UntaggedTooLong)
    );
}

#[test]
fn read_response_fills_the_sink_in_order() {
    let s = ReadSink {
        stag: 0x1234_5601,
        to: 0x1000,
        len: 300,
    };
    let h = |stag, to| TaggedHdr { stag, to };
    assert_eq!(s.check_response(0, &h(s.stag, 0x1000), 100, false), Ok(()));
    assert_eq!(s.check_response(0, &h(s.stag, 0x1000), 300, true), Ok(()));
    assert_eq!(
        s.check_response(0, &h(s.stag + 1, 0x1000), 100, false),
        Err(DdpError::TaggedInvalidStag)
    );
    // Not where the last segment ended.
    assert_eq!(
        s.check_response(100, &h(s.stag, 0x1000), 100, false),
        Err(DdpError::TaggedBaseBounds)
    );
    assert_eq!(s.check_response(100, &h(s.stag, 0x1064), 200, true), Ok(()));
    // Beyond the sink, or last before it is full.
    assert_eq!(
        s.check_response(100, &h(s.stag, 0x1064), 201, false),
        Err(DdpError::TaggedBaseBounds)
    );
    assert_eq!(
        s.check_response(100, &h(s.stag, 0x1064), 199, true),
        Err(DdpError::TaggedBaseBounds)
    );
    assert_eq!(
        s.check_response(u32::MAX, &h(s.stag, 0x1000 + u64::from(u32::MAX)), 1, false),
        Err(DdpError::TaggedBaseBounds)
    );
    // The sink's TO may wrap (what it names is the registration's check).
    let w = ReadSink {
        stag: 7,
        to: u64::MAX,
        len: 2,
    };
    assert_eq!(w.check_response(1, &h(7, 0), 1, true), Ok(()));
    // An empty Read takes one empty last segment.
    let e = ReadSink {
        stag: 7,
        to: 5,
        len: 0,
    };
    assert_eq!(e.check_response(0, &h(7, 5), 0, true), Ok(()));
    assert_eq!(
        e.check_response(0, &h(7, 5), 1, true),
        Err(DdpError::TaggedBaseBounds)
    );
}

/// The model of `scatter`: octet `mo + i` goes to the piece whose range
/// holds it; the pieces end with the sum of their lengths.
fn model(lens: &[u32], mo: u32, n: usize) -> (Vec<(usize, u32, usize)>, bool) {
    let mut out: Vec<(usize, u32, usize)> = vec![];
    for i in 0..n {
        let o = u64::from(mo) + i as u64;
        let mut base = 0u64;
        let mut hit = None;
        for (p, &l) in lens.iter().enumerate() {
            if o >= base && o < base + u64::from(l) {
                hit = Some((p, (o - base) as u32));
                break;
            }
            base += u64::from(l);
        }
        let Some((p, off)) = hit else {
            return (out, false);
        };
        match out.last_mut() {
            Some((lp, loff, len)) if *lp == p && *loff + *len as u32 == off => *len += 1,
            _ => out.push((p, off, 1)),
        }
    }
    (out, true)
}

fn run(
    lens: &[u32],
    mo: u32,
    data: &[u8],
) -> (Vec<(usize, u32, usize)>, Result<(), ScatterError<()>>) {
    let mut got = vec![];
    let r = scatter(lens.iter().copied().zip(0usize..), mo, data, |p, off, d| {
        got.push((p, off, d.len()));
        Ok::<(), ()>(())
    });
    (got, r)
}

#[test]
fn scatter_over_pieces() {
    let data = [7u8; 10];
    let (got, r) = run(&[4, 0, 3, 10], 2, &data);
    assert_eq!(r, Ok(()));
    assert_eq!(got, vec![(0, 2, 2), (2, 0, 3), (3, 0, 5)]);
    let (got, r) = run(&[4, 3], 0, &data);
    assert_eq!(r, Err(ScatterError::TooLong));
    assert_eq!(got, vec![(0, 0, 4), (1, 0, 3)]);
    let (got, r) = run(&[], 0, &[]);
    assert_eq!((got, r), (vec![], Ok(())));
    let (got, r) = run(&[], 0, &data[..1]);
    assert_eq!((got, r), (vec![], Err(ScatterError::TooLong)));
    // Beyond every piece.
    let (got, r) = run(&[4, 4], 8, &data[..1]);
    assert_eq!((got, r), (vec![], Err(ScatterError::TooLong)));
    // Pieces whose lengths add up past 2^32 octets.
    let (got, r) = run(&[u32::MAX, 10], u32::MAX - 1, &data[..3]);
    assert_eq!(
        (got, r),
        (vec![(0, u32::MAX - 1, 1)], Err(ScatterError::TooLong))
    );
}

#[test]
fn scatter_stops_at_the_first_failed_put() {
    let data = [1u8; 8];
    let mut calls = 0;
    let r = scatter([(2u32, 0), (2, 1), (8, 2)], 0, &data, |p, _, _| {
        calls += 1;
        if p == 1 {
            Err("bad")
        } else {
            Ok(())
        }
    });
    assert_eq!(r, Err(ScatterError::Put("bad")));
    assert_eq!(calls, 2);
}

#[test]
fn scatter_writes_the_octets_in_place() {
    let mut bufs = [[0u8; 3], [0u8; 3], [0u8; 3]];
    let data: Vec<u8> = (1..=7).collect();
    let r = scatter(bufs.iter_mut().map(|b| (3u32, b)), 1, &data, |b, off, d| {
        b[off as usize..off as usize + d.len()].copy_from_slice(d);
        Ok::<(), ()>(())
    });
    assert_eq!(r, Ok(()));
    assert_eq!(bufs, [[0, 1, 2], [3, 4, 5], [6, 7, 0]]);
}

proptest! {
    #[test]
    fn scatter_matches_model(
        lens in proptest::collection::vec(0u32..20, 0..6),
        mo in 0u32..80,
        n in 0usize..80,
    ) {
        let data = vec![0u8; n];
        let (got, r) = run(&lens, mo, &data);
        let (want, fits) = model(&lens, mo, n);
        prop_assert_eq!(got, want);
        prop_assert_eq!(r.is_ok(), fits);
    }
}

#[test]
fn header_copy_for_the_terminate() {
    let mut h = HeaderCopy::new();
    assert_eq!(h, HeaderCopy::default());
    assert_eq!(h.header(), None);
    assert_eq!(h.ulpdu_len(), 0);
    h.start_fpdu(46);
    assert_eq!(h.ulpdu_len(), 46);
    assert_eq!(h.header(), None);
    let raw: Vec<u8> = (0..(MAX_HDR_LEN as u8 + 14)).collect();
    h.keep(&raw[..18]);
    assert_eq!(h.header(), Some(&raw[..18]));
    // Only the longest header is kept of a longer slice.
    h.keep(&raw);
    assert_eq!(h.header(), Some(&raw[..MAX_HDR_LEN]));
    // A kept header wins over a rejected one.
    assert_eq!(
        h.or_rejected(Some(&raw[1..15])).header(),
        Some(&raw[..MAX_HDR_LEN])
    );
    h.clear();
    assert_eq!(h.header(), None);
    assert_eq!(h.ulpdu_len(), 46);
    let r = h.or_rejected(Some(&raw[1..15]));
    assert_eq!(r.header(), Some(&raw[1..15]));
    assert_eq!(r.ulpdu_len(), 46);
    assert_eq!(h.or_rejected(None).header(), None);
    // `or_rejected` leaves the copy itself alone.
    assert_eq!(h.header(), None);
    h.keep(&raw[..14]);
    h.reset();
    assert_eq!((h.header(), h.ulpdu_len()), (None, 0));
    // A new FPDU forgets the last one's header.
    h.keep(&raw[..14]);
    h.start_fpdu(20);
    assert_eq!((h.header(), h.ulpdu_len()), (None, 20));
}
