//! Property tests of whole Streams (host only): random stacks of `pass` (service procedures)
//! and `nosrv` modules over the loopback driver, random writes (bands, high priority, sizes),
//! service runs and reads with a small Stream head high water mark so flow control and
//! back-enable are exercised. Checks: nothing is lost or duplicated, nothing is dropped, FIFO
//! order holds within each class (high priority, each band), and the Stream always drains.

use proptest::prelude::*;
use streams_core::msg::{allocb, Bpri, Msg, M_DATA, M_PCPROTO};
use streams_core::queue::QField;
use streams_core::stream::testmods::{LOOP, NOSRV, PASS};
use streams_core::stream::{OpenArgs, RawHead};

type Stream = streams_core::stream::Stream<RawHead>;

#[derive(Debug, Clone)]
enum Op {
    Write { hipri: bool, band: u8, size: usize },
    Run,
    Read,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (prop::bool::weighted(0.15), 0u8..3, 4usize..24)
            .prop_map(|(hipri, band, size)| Op::Write { hipri, band, size }),
        2 => Just(Op::Run),
        3 => Just(Op::Read),
    ]
}

fn msg(id: u32, hipri: bool, band: u8, size: usize) -> Msg {
    let mut m = allocb(size, Bpri::Med).unwrap();
    m.set_type(if hipri { M_PCPROTO } else { M_DATA });
    m.set_band(band);
    let mut p = vec![0u8; size];
    p[..4].copy_from_slice(&id.to_le_bytes());
    m.append(&p);
    m
}

/// Class of a message: 0 = high priority, 1 + band otherwise.
fn class(m: &Msg) -> usize {
    if m.is_hipri() {
        0
    } else {
        1 + usize::from(m.band())
    }
}

fn id(m: &Msg) -> u32 {
    let b = m.rd();
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn build(stack: &[bool], hiwat: usize) -> Stream {
    let mut s = Stream::open(&LOOP, &OpenArgs::driver(0)).unwrap();
    for &srv in stack {
        s.push_tab(if srv { &PASS } else { &NOSRV }, &OpenArgs::module())
            .unwrap();
    }
    let h = s.head_rq();
    s.qctx(h).strqset(QField::Hiwat, 0, hiwat).unwrap();
    s.qctx(h).strqset(QField::Lowat, 0, hiwat / 3).unwrap();
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn loopback_stream_conserves_and_orders(
        stack in proptest::collection::vec(any::<bool>(), 0..5),
        hiwat in 8usize..64,
        ops in proptest::collection::vec(op(), 1..80),
    ) {
        let mut s = build(&stack, hiwat);
        let mut sent: Vec<Vec<u32>> = vec![Vec::new(); 4];
        let mut got: Vec<Vec<u32>> = vec![Vec::new(); 4];
        let mut next = 0u32;
        let record = |m: Msg, got: &mut Vec<Vec<u32>>| got[class(&m)].push(id(&m));
        for op in ops {
            match op {
                Op::Write { hipri, band, size } => {
                    let m = msg(next, hipri, if hipri { 0 } else { band }, size);
                    sent[class(&m)].push(next);
                    next += 1;
                    s.write(m);
                }
                Op::Run => { s.runqueues(); }
                Op::Read => if let Some(m) = s.read() { record(m, &mut got) },
            }
        }
        // Drain: alternate reading and running until nothing moves.
        for _ in 0..10_000 {
            let mut moved = s.runqueues() > 0;
            while let Some(m) = s.read() {
                record(m, &mut got);
                moved = true;
            }
            if !moved && !s.has_enabled() {
                break;
            }
        }
        prop_assert!(!s.has_enabled());
        prop_assert_eq!(s.dropped(), 0);
        prop_assert_eq!(got, sent, "every message arrives once, FIFO within its class");
    }
}

/// A deep Stream of modules without service procedures: putnext recursion is bounded by the
/// number of pairs, and the loopback re-entry is deferred rather than recursed.
#[test]
fn deep_stack_of_srvless_modules() {
    let stack = vec![false; 200];
    let mut s = build(&stack, 1 << 20);
    assert_eq!(s.nmodules(), 200);
    for i in 0..50 {
        s.write(msg(i, false, 0, 8));
    }
    for i in 0..50 {
        let m = s.read().expect("message looped back");
        assert_eq!(id(&m), i);
    }
    assert!(s.read().is_none());
    assert_eq!(s.runqueues(), 0);
    while s.pop().is_ok() {}
    assert_eq!(s.nmodules(), 0);
}
