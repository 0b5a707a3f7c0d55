//! Shared (host + KUnit) tests of a queue's block count (`q_mblkcnt`) and block limit: zero-
//! length and tiny messages make a queue full, every band is full at the limit, a new band is
//! refused there, and a refused writer is back-enabled only once the queue is low again.

use super::*;
use crate::limits::{limits, Limits, LimitsGuard};

/// A queue made with a block limit of `mblkmax` (and the other limits as they are).
fn q_blocks(hiwat: usize, lowat: usize, mblkmax: usize) -> Result<Queue, crate::ktest::Failure> {
    let _g = check_ok!(LimitsGuard::set(Limits {
        strmblkmax: mblkmax,
        ..limits()
    }));
    let q = q(hiwat, lowat);
    check_eq!(q.mblkmax(), mblkmax);
    Ok(q)
}

/// Zero-length messages hold no bytes but a block each: the block limit makes the queue full.
pub(super) fn zero_length_messages_fill_queue() -> TestResult {
    let mut q = q_blocks(100, 10, 8)?;
    for i in 0..8 {
        check!(q.canput());
        let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, b""))));
        check_eq!(q.mblkcnt(), i + 1);
    }
    check_eq!(q.count(), 0);
    check!(q.flags().contains(QFlags::QFULL));
    check!(q.blocks_full());
    check!(!q.canput());
    check!(q.flags().contains(QFlags::QWANTW));
    // Back-enabled only at a quarter of the limit (2 blocks), not before.
    let mut backs = 0;
    for left in (0..8).rev() {
        let (m, ev) = q.getq();
        check_some!(m);
        check_eq!(q.mblkcnt(), left);
        if ev.needs_backenable() {
            check_eq!(left, 2);
            backs += 1;
        }
    }
    check_eq!(backs, 1);
    check!(!q.flags().contains(QFlags::QFULL));
    Ok(())
}

/// One-byte messages: with a block limit below the high-water mark, the blocks decide.
pub(super) fn tiny_messages_full_before_hiwat() -> TestResult {
    let mut q = q_blocks(1000, 100, 16)?;
    let mut n = 0;
    while q.canput() {
        let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"x"))));
        n += 1;
        check!(n <= 16);
    }
    check_eq!((n, q.count(), q.mblkcnt()), (16, 16, 16));
    // A message of several blocks counts each of them.
    let mut m = check_some!(mk(M_DATA, 0, b"a"));
    m.linkb(check_some!(mk(M_DATA, 0, b"b")));
    m.linkb(check_some!(mk(M_DATA, 0, b"")));
    let _ = check_ok!(q.putq(m));
    check_eq!(q.mblkcnt(), 19);
    let f = q.flushq(FLUSHALL);
    check_eq!((f.msgs, f.bytes), (17, 18));
    check!(f.event.needs_backenable());
    check_eq!((q.mblkcnt(), q.count()), (0, 0));
    Ok(())
}

/// At the block limit every band is full, and a band not yet allocated is refused too (its
/// writer is back-enabled with band 0's); high-priority messages still queue.
pub(super) fn block_limit_fills_every_band() -> TestResult {
    let mut q = q_blocks(1000, 100, 4)?;
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 2, b"b2"))));
    for _ in 0..3 {
        let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, b""))));
    }
    check!(q.blocks_full());
    check!(q.band_flags(2).contains(QbFlags::QB_FULL));
    check!(!q.bcanput(2));
    check!(!q.bcanput(7)); // not allocated
    check_eq!(q.nband(), 2);
    check!(q.flags().contains(QFlags::QWANTW));
    let _ = check_ok!(q.putq(check_some!(mk(M_PCPROTO, 0, b"hi"))));
    check_eq!(q.mblkcnt(), 5);
    // Drain to a quarter of the limit (1 block): bands 0 and 2 are back-enabled then.
    let mut back = BandSet::default();
    for _ in 0..4 {
        let (m, ev) = q.getq();
        check_some!(m);
        back.union(&ev.back_bands());
    }
    check_eq!(q.mblkcnt(), 1);
    check!(back.contains(0) && back.contains(2));
    check!(q.bcanput(7));
    check!(q.band_is_low(0) && q.band_is_low(2));
    Ok(())
}

/// The limits in force when a queue is made give its block limit; a later change leaves it.
pub(super) fn block_limit_taken_at_creation() -> TestResult {
    let a = q_blocks(10, 1, 3)?;
    let b = q(10, 1);
    check_eq!(a.mblkmax(), 3);
    check_eq!(b.mblkmax(), limits().strmblkmax);
    check!(LimitsGuard::set(Limits {
        strmblkmax: 0,
        ..limits()
    })
    .is_err());
    Ok(())
}

/// `getq_first` (the Stream head's straight-line read of one message) is `getq_upto` of one
/// message: on twin queues with small marks and block limits, driven through the same random
/// puts (band 0 and 1, high priority, empty, of two blocks), refused writers of band 0 and 1
/// and ordinary getqs, in phases that fill and drain them across the marks, each take returns
/// the same message (or none), reports the same back-enables and leaves the same counts,
/// flags and flow state. (Caught by mutation: a QFULL from the bytes or the blocks alone, no
/// back-enable, a flow state change not reported.)
pub(super) fn getq_first_is_getq_upto_of_one() -> TestResult {
    // Marks the bytes decide, marks the blocks decide, and both far.
    for (hiwat, lowat, mblkmax) in [(12, 4, 8), (40, 4, 8), (16, 8, 64)] {
        getq_first_matches(hiwat, lowat, mblkmax)?;
    }
    Ok(())
}

/// [`getq_first_is_getq_upto_of_one`] on twin queues of these marks and block limit.
fn getq_first_matches(hiwat: usize, lowat: usize, mblkmax: usize) -> TestResult {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n.max(1)
    };
    let accept =
        |m: &Msg| m.db_type() == M_DATA && !m.flag().contains(crate::msg::MsgFlags::MSGMARK);
    let mut a = q_blocks(hiwat, lowat, mblkmax)?;
    let mut b = q_blocks(hiwat, lowat, mblkmax)?;
    let mut took = 0;
    for step in 0..4000 {
        // Phases of filling and of draining, so the marks are crossed both ways.
        let filling = step % 128 < 40;
        // 0: a put, 2: a writer asks, 3: an ordinary getq, else a read's take.
        let op = match (filling, rnd(10)) {
            (true, 0..=5) | (false, 0) => 0,
            (true, 6..=7) | (false, 1) => 2,
            (false, 2..=3) => 3,
            _ => 4,
        };
        match op {
            0 => {
                let (ty, band) = match rnd(24) {
                    0 => (M_PCPROTO, 0),
                    1 => (M_DATA, 1),
                    2 => (M_PROTO, 0),
                    _ => (M_DATA, 0),
                };
                let data: &[u8] = match rnd(8) {
                    0 => b"",
                    1..=3 => b"x",
                    4 => b"abc",
                    _ => b"abcdefg",
                };
                let two = rnd(5) == 0;
                for q in [&mut a, &mut b] {
                    let mut m = check_some!(mk(ty, band, data));
                    if two {
                        m.linkb(check_some!(mk(M_DATA, 0, b"yz")));
                    }
                    if let Ok(ev) = q.putq(m) {
                        let _ = ev;
                    }
                }
            }
            2 => {
                let band = u8::try_from(rnd(4) / 3).unwrap_or(0);
                check_eq!(a.bcanput(band), b.bcanput(band));
            }
            3 => {
                // An ordinary getq, which takes what the reads leave (other classes, empty
                // messages, marks) off both.
                let ((x, xev), (y, yev)) = (a.getq(), b.getq());
                check_eq!(x.map(|m| m.msgsize()), y.map(|m| m.msgsize()));
                check_eq!(xev, yev);
            }
            _ => {
                let bytes = usize::try_from(rnd(12)).unwrap_or(0);
                let before = (a.flow_state(), b.flow_state());
                let x = a.getq_first(bytes, accept);
                let (y, n, ev) = b.getq_upto(bytes, 1, accept);
                match (x, y) {
                    (None, None) => check_eq!((n, ev), (0, QEvent::NONE)),
                    (Some((xm, xn, xev, changed)), Some(ym)) => {
                        took += 1;
                        check_eq!(
                            (xm.msgsize(), xm.band(), xm.db_type()),
                            (ym.msgsize(), ym.band(), ym.db_type())
                        );
                        check_eq!((xn, xev), (n, ev));
                        check_eq!(changed, b.flow_state() != before.1);
                    }
                    _ => check!(false),
                }
            }
        }
        check_eq!(
            (a.count(), a.mblkcnt(), a.flags()),
            (b.count(), b.mblkcnt(), b.flags())
        );
        check_eq!(a.flow_state(), b.flow_state());
        check_eq!(
            (a.band_count(1), a.band_flags(1)),
            (b.band_count(1), b.band_flags(1))
        );
        check_eq!((a.qsize(), a.hipri_len()), (b.qsize(), b.hipri_len()));
    }
    check!(took > 200);
    Ok(())
}
