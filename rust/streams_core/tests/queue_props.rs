//! Property tests of one queue against a reference model (host only).
//!
//! Random sequences of putq/getq/putbq/flushq/flushband/canput/bcanput with random bands,
//! sizes and types, under a random block limit. After every step: q_count and band counts
//! equal the bytes queued, q_mblkcnt the blocks, QFULL/QB_FULL hold exactly when the count
//! reaches hiwat or the blocks the block limit, messages are conserved, and back-enables are
//! reported exactly when a refused writer's class drained to lowat with the blocks at a
//! quarter of the limit. At the end the queue drains in model order (high priority, bands
//! descending, FIFO within).

use proptest::prelude::*;
use std::collections::VecDeque;
use streams_core::limits::{limits, set_limits, Limits};
use streams_core::msg::{allocb, Bpri, Msg, MsgType, M_CTL, M_DATA, M_IOCACK, M_PCPROTO};
use streams_core::queue::{QFlags, QbFlags, Queue, FLUSHALL, FLUSHDATA, INFPSZ};

#[derive(Debug, Clone)]
enum Op {
    Put { ty: u8, band: u8, size: usize },
    Get,
    GetPutBack,
    Flush { all: bool },
    FlushBand { band: u8, all: bool },
    Canput { band: u8 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..4, 0u8..4, 4usize..40).prop_map(|(ty, band, size)| Op::Put { ty, band, size }),
        3 => Just(Op::Get),
        1 => Just(Op::GetPutBack),
        1 => any::<bool>().prop_map(|all| Op::Flush { all }),
        1 => (0u8..4, any::<bool>()).prop_map(|(band, all)| Op::FlushBand { band, all }),
        2 => (0u8..4).prop_map(|band| Op::Canput { band }),
    ]
}

fn msgtype(t: u8) -> MsgType {
    match t {
        0 => M_DATA,
        1 => M_CTL,
        2 => M_PCPROTO,
        _ => M_IOCACK,
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    id: u32,
    size: usize,
    data: bool,
}

/// The model: class 0 = high priority, 1..=255 = bands, 256 = band 0 (index by key()).
struct Model {
    classes: Vec<VecDeque<Entry>>,
    wantw: [bool; 256],
}

fn key(hipri: bool, band: u8) -> usize {
    if hipri {
        0
    } else if band == 0 {
        256
    } else {
        256 - usize::from(band)
    }
}

impl Model {
    fn count(&self, band: u8) -> usize {
        let sum = |k: usize| self.classes[k].iter().map(|e| e.size).sum::<usize>();
        if band == 0 {
            sum(0) + sum(256)
        } else {
            sum(key(false, band))
        }
    }
    fn len(&self) -> usize {
        self.classes.iter().map(|c| c.len()).sum()
    }
    fn pop(&mut self) -> Option<(usize, Entry)> {
        let k = (0..self.classes.len()).find(|k| !self.classes[*k].is_empty())?;
        self.classes[k].pop_front().map(|e| (k, e))
    }
}

fn band_of_key(k: usize) -> u8 {
    if k == 0 || k == 256 {
        0
    } else {
        (256 - k) as u8
    }
}

fn id_of(m: &Msg) -> u32 {
    let b = m.rd();
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn check_invariants(
    q: &Queue,
    m: &Model,
    hiwat: usize,
    mblkmax: usize,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(q.count(), m.count(0));
    prop_assert_eq!(q.qsize(), m.len());
    prop_assert_eq!(q.mblkcnt(), m.len(), "one block per message");
    let blocks = m.len() >= mblkmax;
    prop_assert_eq!(
        q.flags().contains(QFlags::QFULL),
        q.count() >= hiwat || blocks,
        "QFULL iff count >= hiwat or blocks >= mblkmax"
    );
    for b in 1..=3u8 {
        prop_assert_eq!(q.band_count(b), m.count(b));
        if q.nband() >= usize::from(b) {
            let full = q.band_flags(b).contains(QbFlags::QB_FULL);
            prop_assert_eq!(full, m.count(b) >= hiwat || blocks, "QB_FULL iff full");
        }
    }
    Ok(())
}

/// After a removal: a back-enable for band b is reported iff a writer waited and the count
/// is now <= lowat.
fn check_back(
    m: &mut Model,
    back: streams_core::queue::BandSet,
    lowat: usize,
    mblkmax: usize,
) -> Result<(), TestCaseError> {
    let blocks_low = m.len() <= mblkmax / 4;
    for b in 0..=3u8 {
        let due = m.wantw[usize::from(b)] && m.count(b) <= lowat && blocks_low;
        prop_assert_eq!(back.contains(b), due, "back-enable band {}", b);
        if due {
            m.wantw[usize::from(b)] = false;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn queue_matches_model(hiwat in 1usize..120, lowat_frac in 0usize..100,
                           mblkmax in 1usize..40,
                           ops in proptest::collection::vec(op(), 1..120)) {
        let lowat = hiwat * lowat_frac / 100;
        // The only test of this binary: the block limit of the queues made from here on.
        set_limits(Limits { strmblkmax: mblkmax, ..limits() }).unwrap();
        let mut q = Queue::new(0, INFPSZ, hiwat, lowat, false);
        prop_assert_eq!(q.mblkmax(), mblkmax);
        let mut m = Model { classes: vec![VecDeque::new(); 257], wantw: [false; 256] };
        let (mut put, mut got, mut flushed) = (0usize, 0usize, 0usize);
        let mut next_id = 0u32;
        for op in ops {
            match op {
                Op::Put { ty, band, size } => {
                    let ty = msgtype(ty);
                    let mut mp = allocb(size, Bpri::Med).unwrap();
                    mp.set_type(ty);
                    mp.set_band(band);
                    let mut payload = vec![0u8; size];
                    payload[..4].copy_from_slice(&next_id.to_le_bytes());
                    mp.append(&payload);
                    let ev = q.putq(mp).map_err(|_| TestCaseError::fail("putq failed"))?;
                    prop_assert_eq!(ev.needs_enable(), ty.is_hipri() || band > 0
                        || q.flags().contains(QFlags::QWANTR));
                    m.classes[key(ty.is_hipri(), band)].push_back(Entry { id: next_id, size, data: ty.is_data() });
                    next_id += 1;
                    put += 1;
                }
                Op::Get => {
                    let (mp, ev) = q.getq();
                    match (mp, m.pop()) {
                        (Some(mp), Some((_, e))) => { prop_assert_eq!(id_of(&mp), e.id); got += 1; }
                        (None, None) => prop_assert!(q.flags().contains(QFlags::QWANTR)),
                        _ => prop_assert!(false, "getq and model disagree"),
                    }
                    check_back(&mut m, ev.back_bands(), lowat, mblkmax)?;
                }
                Op::GetPutBack => {
                    let (mp, ev) = q.getq();
                    let popped = m.pop();
                    check_back(&mut m, ev.back_bands(), lowat, mblkmax)?;
                    if let Some(mp) = mp {
                        let (k, e) = popped.unwrap();
                        prop_assert_eq!(id_of(&mp), e.id);
                        let ev = q.putbq(mp).map_err(|_| TestCaseError::fail("putbq failed"))?;
                        prop_assert!(!ev.needs_enable());
                        m.classes[k].push_front(e);
                    }
                }
                Op::Flush { all } => {
                    let f = q.flushq(if all { FLUSHALL } else { FLUSHDATA });
                    let mut n = 0;
                    for c in m.classes.iter_mut() {
                        let before = c.len();
                        c.retain(|e| !(all || e.data));
                        n += before - c.len();
                    }
                    prop_assert_eq!(f.msgs, n);
                    flushed += n;
                    check_back(&mut m, f.event.back_bands(), lowat, mblkmax)?;
                }
                Op::FlushBand { band, all } => {
                    let f = q.flushband(band, if all { FLUSHALL } else { FLUSHDATA });
                    let keys: Vec<usize> = if band == 0 { vec![0, 256] } else { vec![key(false, band)] };
                    let mut n = 0;
                    for k in keys {
                        let c = &mut m.classes[k];
                        let before = c.len();
                        c.retain(|e| !(all || e.data));
                        n += before - c.len();
                    }
                    prop_assert_eq!(f.msgs, n);
                    flushed += n;
                    check_back(&mut m, f.event.back_bands(), lowat, mblkmax)?;
                }
                Op::Canput { band } => {
                    let unallocated = band > 0 && q.nband() < usize::from(band);
                    let ok = q.bcanput(band);
                    prop_assert_eq!(ok, m.len() < mblkmax && m.count(band) < hiwat);
                    if !ok {
                        // A band without a qband waits with band 0's writers.
                        m.wantw[usize::from(if unallocated { 0 } else { band })] = true;
                    }
                }
            }
            check_invariants(&q, &m, hiwat, mblkmax)?;
            prop_assert_eq!(put, got + flushed + q.qsize(), "messages conserved");
        }
        // Drain: model order, and nothing left over.
        let mut prev_key = 0;
        while let (Some(mp), _) = q.getq() {
            let (k, e) = m.pop().unwrap();
            prop_assert!(k >= prev_key, "classes drain in priority order");
            prop_assert_eq!(band_of_key(k), mp.band());
            prop_assert_eq!(id_of(&mp), e.id);
            prev_key = k;
        }
        prop_assert_eq!(m.len(), 0);
    }
}
