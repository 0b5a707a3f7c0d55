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
