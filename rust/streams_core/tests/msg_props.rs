//! Property tests for the message layer (host only): random chains and random sequences of
//! message operations, checked block by block against a plain `Vec` model.
//!
//! The model of pullupmsg and adjmsg is a literal transcription of illumos `stream.c` (adjmsg
//! trims the tail by repeatedly finding the last block of the leading run), so these also check
//! that the executive's single-pass versions agree with SVR4 on block layout, not just bytes.

use proptest::prelude::*;
use streams_core::msg::{Msg, MsgError, MsgType, M_CTL, M_DATA, M_PROTO};

/// A block of the model: type and readable bytes.
type Block = (MsgType, Vec<u8>);

const TYPES: [MsgType; 3] = [M_DATA, M_PROTO, M_CTL];

/// One generated block: type index, bytes, headroom before `b_rptr`, spare room after `b_wptr`.
fn block() -> impl Strategy<Value = (usize, Vec<u8>, usize, usize)> {
    (
        prop_oneof![3 => Just(0usize), 1 => Just(1usize), 1 => Just(2usize)],
        prop::collection::vec(any::<u8>(), 0..40),
        0usize..4,
        0usize..4,
    )
}

fn chain() -> impl Strategy<Value = Vec<(usize, Vec<u8>, usize, usize)>> {
    prop::collection::vec(block(), 1..8)
}

/// Build the message and its model.
fn make(parts: &[(usize, Vec<u8>, usize, usize)]) -> (Msg, Vec<Block>) {
    let mut model = Vec::new();
    let mut head: Option<Msg> = None;
    for (t, bytes, head_room, tail_room) in parts {
        let ty = TYPES[*t];
        let mut b = Msg::with_type(ty, head_room + bytes.len() + tail_room).unwrap();
        b.append(&vec![0xee; *head_room]);
        b.append(bytes);
        assert_eq!(b.adj_rptr(*head_room), *head_room);
        model.push((ty, bytes.clone()));
        match head.as_mut() {
            Some(h) => h.linkb(b),
            None => head = Some(b),
        }
    }
    (head.unwrap(), model)
}

fn layout(m: &Msg) -> Vec<Block> {
    m.blocks().map(|b| (b.db_type(), b.rd().to_vec())).collect()
}

fn flat(model: &[Block]) -> Vec<u8> {
    model.iter().flat_map(|(_, b)| b.iter().copied()).collect()
}

fn run_len(model: &[Block]) -> usize {
    let ty = model[0].0;
    model
        .iter()
        .take_while(|(t, _)| *t == ty)
        .map(|(_, b)| b.len())
        .sum()
}

/// illumos pullupmsg on the model.
fn model_pullup(model: &mut Vec<Block>, len: Option<usize>) -> Result<(), MsgError> {
    let first = model[0].1.len();
    let mut left = match len {
        None if model.len() == 1 => return Ok(()),
        None => run_len(model),
        Some(n) if n <= first => return Ok(()),
        Some(n) if run_len(model) < n => return Err(MsgError::TooShort),
        Some(n) => n,
    };
    let ty = model[0].0;
    let mut new = Vec::new();
    loop {
        let bp = &mut model[0].1;
        let n = bp.len().min(left);
        new.extend(bp.drain(..n));
        left -= n;
        if !model[0].1.is_empty() {
            break;
        }
        model.remove(0);
        if left == 0 || model.is_empty() {
            break;
        }
    }
    model.insert(0, (ty, new));
    Ok(())
}

/// illumos adjmsg on the model.
fn model_adj(model: &mut Vec<Block>, len: isize) -> Result<(), MsgError> {
    let mut n = len.unsigned_abs();
    if run_len(model) < n {
        return Err(MsgError::TooShort);
    }
    if len >= 0 {
        let mut i = 0;
        let mut first = true;
        while n > 0 {
            let k = model[i].1.len().min(n);
            model[i].1.drain(..k);
            n -= k;
            if !first && model[i].1.is_empty() {
                model.remove(i);
            } else {
                i += 1;
            }
            first = false;
        }
    } else {
        let ty = model[0].0;
        while n > 0 {
            let last = model.iter().take_while(|(t, _)| *t == ty).count() - 1;
            let b = &mut model[last].1;
            let k = b.len().min(n);
            b.truncate(b.len() - k);
            n -= k;
            if last != 0 && model[last].1.is_empty() {
                model.remove(last);
            }
        }
    }
    Ok(())
}

/// msgpullup on the model: `want` bytes into the first block, the rest as it was (a partly
/// consumed block keeps its remainder).
fn model_msgpullup(model: &[Block], len: Option<usize>) -> Result<Vec<Block>, MsgError> {
    let total = run_len(model);
    let want = len.unwrap_or(total);
    if want > total {
        return Err(MsgError::TooShort);
    }
    let mut out = vec![(model[0].0, Vec::new())];
    for (ty, b) in model {
        let room = want - out[0].1.len();
        if room == 0 {
            out.push((*ty, b.clone()));
            continue;
        }
        let n = b.len().min(room);
        out[0].1.extend_from_slice(&b[..n]);
        if n < b.len() {
            out.push((*ty, b[n..].to_vec()));
        }
    }
    Ok(out)
}

#[derive(Debug, Clone)]
enum Op {
    PullAll,
    Pull(usize),
    Adj(isize),
    MsgPull(Option<usize>),
    Copy,
    Dup,
    Rmvb(usize),
    Unlink,
    Link(Vec<(usize, Vec<u8>, usize, usize)>),
    AdjRptr(usize),
    TrimWptr(usize),
    WriteFirst(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::PullAll),
        (0usize..120).prop_map(Op::Pull),
        (-120isize..120).prop_map(Op::Adj),
        prop::option::of(0usize..120).prop_map(Op::MsgPull),
        Just(Op::Copy),
        Just(Op::Dup),
        (0usize..8).prop_map(Op::Rmvb),
        Just(Op::Unlink),
        chain().prop_map(Op::Link),
        (0usize..20).prop_map(Op::AdjRptr),
        (0usize..20).prop_map(Op::TrimWptr),
        any::<u8>().prop_map(Op::WriteFirst),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sizes_match_model(parts in chain()) {
        let (m, model) = make(&parts);
        prop_assert_eq!(m.msgsize(), flat(&model).len());
        let d: usize = model.iter().filter(|(t, _)| *t == M_DATA).map(|(_, b)| b.len()).sum();
        prop_assert_eq!(m.msgdsize(), d);
        prop_assert_eq!(m.xmsgsize(), run_len(&model));
        prop_assert_eq!(m.blocks().count(), model.len());
        prop_assert_eq!(layout(&m), model);
    }

    #[test]
    fn pullupmsg_matches_illumos(parts in chain(), len in prop::option::of(0usize..150)) {
        let (mut m, mut model) = make(&parts);
        let bytes = flat(&model);
        let before = layout(&m);
        let r = m.pullupmsg(len);
        prop_assert_eq!(r, model_pullup(&mut model, len));
        if r.is_err() {
            prop_assert_eq!(layout(&m), before);
        } else if let Some(n) = len {
            prop_assert!(m.blen() >= n);
        } else {
            prop_assert_eq!(m.blen(), run_len(&model));
        }
        prop_assert_eq!(layout(&m), model);
        prop_assert_eq!(flat(&layout(&m)), bytes);
    }

    #[test]
    fn msgpullup_copies_and_preserves(parts in chain(), len in prop::option::of(0usize..150)) {
        let (m, model) = make(&parts);
        let r = m.msgpullup(len);
        let want = model_msgpullup(&model, len);
        match (r, want) {
            (Ok(p), Ok(w)) => {
                prop_assert_eq!(layout(&p), w);
                prop_assert_eq!(flat(&layout(&p)), flat(&model));
                prop_assert!(p.blocks().all(|b| !b.is_shared()));
            }
            (Err(e), Err(f)) => prop_assert_eq!(e, f),
            (r, w) => prop_assert!(false, "msgpullup {:?} vs model {:?}", r.err(), w.err()),
        }
        prop_assert_eq!(layout(&m), model);
    }

    #[test]
    fn adjmsg_matches_illumos(parts in chain(), len in -150isize..150) {
        let (mut m, mut model) = make(&parts);
        let before = layout(&m);
        let bytes = flat(&model);
        let run = run_len(&model);
        let r = m.adjmsg(len);
        prop_assert_eq!(r, model_adj(&mut model, len));
        prop_assert_eq!(layout(&m), model.clone());
        if r.is_err() {
            prop_assert_eq!(layout(&m), before);
        } else if len >= 0 {
            prop_assert_eq!(flat(&model), bytes[len as usize..].to_vec());
        } else {
            let n = len.unsigned_abs();
            let mut expect = bytes[..run - n].to_vec();
            expect.extend_from_slice(&bytes[run..]);
            prop_assert_eq!(flat(&model), expect);
        }
    }

    #[test]
    fn copymsg_and_dupmsg_equal_original(parts in chain()) {
        let (mut m, model) = make(&parts);
        let c = m.copymsg().unwrap();
        prop_assert_eq!(layout(&c), model.clone());
        prop_assert!(c.blocks().all(|b| !b.is_shared()));
        let d = m.dupmsg().unwrap();
        prop_assert_eq!(layout(&d), model.clone());
        prop_assert!(d.blocks().all(|b| b.is_shared()));
        prop_assert!(m.blocks().all(|b| b.is_shared()));
        for (x, y) in m.blocks().zip(d.blocks()) {
            prop_assert_eq!(x.rd().as_ptr(), y.rd().as_ptr());
        }
        drop(m);
        prop_assert_eq!(layout(&d), model.clone());
        prop_assert_eq!(layout(&c), model);
    }

    #[test]
    fn random_op_sequences_track_model(parts in chain(), ops in prop::collection::vec(op(), 1..25)) {
        let (mut m, mut model) = make(&parts);
        // Dups and copies set aside, with what they must keep showing.
        let mut stash: Vec<(Msg, Vec<Block>)> = Vec::new();
        for op in ops {
            match op {
                Op::PullAll => prop_assert_eq!(m.pullupmsg(None), model_pullup(&mut model, None)),
                Op::Pull(n) => prop_assert_eq!(m.pullupmsg(Some(n)), model_pullup(&mut model, Some(n))),
                Op::Adj(n) => prop_assert_eq!(m.adjmsg(n), model_adj(&mut model, n)),
                Op::MsgPull(n) => match (m.msgpullup(n), model_msgpullup(&model, n)) {
                    (Ok(p), Ok(w)) => {
                        stash.push((m, model));
                        m = p;
                        model = w;
                    }
                    (Err(e), Err(f)) => prop_assert_eq!(e, f),
                    (r, w) => prop_assert!(false, "msgpullup {:?} vs {:?}", r.err(), w.err()),
                },
                Op::Copy => {
                    let c = m.copymsg().unwrap();
                    stash.push((c, model.clone()));
                }
                Op::Dup => {
                    let d = m.dupmsg().unwrap();
                    stash.push((m, model.clone()));
                    m = d;
                }
                Op::Rmvb(i) => match m.rmvb(i) {
                    Ok((Some(rest), removed)) => {
                        let r = model.remove(i);
                        prop_assert_eq!(layout(&removed), vec![r]);
                        m = rest;
                    }
                    Ok((None, only)) => {
                        prop_assert_eq!(model.len(), 1);
                        m = only;
                    }
                    Err(back) => {
                        prop_assert!(i >= model.len());
                        m = back;
                    }
                },
                Op::Unlink => {
                    let rest = m.unlinkb();
                    prop_assert_eq!(rest.is_some(), model.len() > 1);
                    if let Some(r) = rest {
                        stash.push((r, model.split_off(1)));
                    }
                }
                Op::Link(parts) => {
                    let (t, tm) = make(&parts);
                    m.linkb(t);
                    model.extend(tm);
                }
                Op::AdjRptr(n) => {
                    let k = m.adj_rptr(n);
                    prop_assert_eq!(k, n.min(model[0].1.len()));
                    model[0].1.drain(..k);
                }
                Op::TrimWptr(n) => {
                    let k = m.trim_wptr(n);
                    let b = &mut model[0].1;
                    prop_assert_eq!(k, n.min(b.len()));
                    b.truncate(b.len() - k);
                }
                Op::WriteFirst(x) => {
                    m.make_writable().unwrap();
                    if let Some(first) = m.rd_mut().unwrap().first_mut() {
                        *first ^= x;
                        model[0].1[0] ^= x;
                    }
                }
            }
            prop_assert_eq!(layout(&m), model.clone());
            prop_assert_eq!(m.msgsize(), flat(&model).len());
        }
        for (s, sm) in &stash {
            prop_assert_eq!(&layout(s), sm);
        }
    }
}

/// A 100 000-block chain must drop without recursion (also run here in release builds).
#[test]
fn long_chain_drop() {
    let mut head = Msg::from_bytes(M_DATA, b"z").unwrap();
    for _ in 1..100_000 {
        let mut b = Msg::from_bytes(M_DATA, b"z").unwrap();
        b.linkb(head);
        head = b;
    }
    let d = head.dupmsg().unwrap();
    assert_eq!(d.msgsize(), 100_000);
    drop(head);
    drop(d);
}
