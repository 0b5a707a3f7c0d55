//! Property test for the message block cache (host only): a block reused from the cache never
//! shows a byte of the message it held before, whatever the accessors do to it.
//!
//! Each round fills a block of some size to the brim with `DIRT` and frees it (into this
//! thread's cache slot), allocates a block of the same size (usually that one, not zeroed),
//! and applies random operations that write only `OWN` bytes. After every operation the
//! readable bytes, and the headroom a reader can take back, hold no `DIRT`; so does the spare
//! room when `spare_mut` hands it out.

use proptest::prelude::*;
use streams_core::msg::{Msg, M_DATA};

const DIRT: u8 = 0xa5;
const OWN: u8 = 0x11;

#[derive(Debug, Clone)]
enum Op {
    Append(usize),
    AdjWptr(usize),
    AdjRptr(usize),
    UnadjRptr(usize),
    TrimWptr(usize),
    Reset,
    Spare,
    DupAndWrite,
    Copyb,
    Pullup(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0usize..300).prop_map(Op::Append),
        2 => (0usize..300).prop_map(Op::AdjWptr),
        2 => (0usize..300).prop_map(Op::AdjRptr),
        2 => (0usize..300).prop_map(Op::UnadjRptr),
        1 => (0usize..300).prop_map(Op::TrimWptr),
        1 => Just(Op::Reset),
        1 => Just(Op::Spare),
        1 => Just(Op::DupAndWrite),
        1 => Just(Op::Copyb),
        1 => (0usize..300).prop_map(Op::Pullup),
    ]
}

fn size() -> impl Strategy<Value = usize> {
    prop_oneof![0usize..=128, 129usize..=4096, 4097usize..5000]
}

/// No `DIRT` in what the first block shows: its bytes, and its headroom taken back.
fn clean(m: &mut Msg) -> bool {
    let ok = !m.rd().contains(&DIRT);
    let back = m.unadj_rptr(usize::MAX);
    let ok = ok && !m.rd().contains(&DIRT);
    m.adj_rptr(back);
    ok
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn reused_blocks_show_only_their_own_bytes(
        sizes in prop::collection::vec(size(), 1..4),
        ops in prop::collection::vec(op(), 1..30),
    ) {
        for size in sizes {
            let mut d = Msg::with_type(M_DATA, size).unwrap();
            let room = d.wr_room();
            prop_assert_eq!(d.append(&vec![DIRT; room]), room);
            drop(d);
            let mut m = Msg::with_type(M_DATA, size).unwrap();
            prop_assert_eq!(m.blen(), 0);
            for op in &ops {
                match *op {
                    Op::Append(n) => {
                        m.append(&vec![OWN; n]);
                    }
                    Op::AdjWptr(n) => {
                        m.adj_wptr(n);
                    }
                    Op::AdjRptr(n) => {
                        m.adj_rptr(n);
                    }
                    Op::UnadjRptr(n) => {
                        m.unadj_rptr(n);
                    }
                    Op::TrimWptr(n) => {
                        m.trim_wptr(n);
                    }
                    Op::Reset => m.reset(),
                    Op::Spare => {
                        if let Some(s) = m.spare_mut() {
                            prop_assert!(!s.contains(&DIRT));
                        }
                    }
                    Op::DupAndWrite => {
                        let d = m.dupb().unwrap();
                        m.make_writable().unwrap();
                        m.append(&[OWN]);
                        prop_assert!(!d.rd().contains(&DIRT));
                    }
                    Op::Copyb => m = m.copyb().unwrap(),
                    Op::Pullup(n) => {
                        m.linkb(Msg::from_bytes(M_DATA, &vec![OWN; n]).unwrap());
                        m.pullupmsg(None).unwrap();
                    }
                }
                prop_assert!(clean(&mut m), "after {:?}", op);
            }
        }
    }
}
