//! Shared queue tests, second half: flushing, strqget/strqset, qenable bookkeeping,
//! allocation failure and ring edge cases (the suite is declared in `mod.rs`).

use super::*;

pub(super) fn flushq_all() -> TestResult {
    let mut q = q(1000, 0);
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"ab"))));
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 4, b"cde"))));
    let _ = check_ok!(q.putq(check_some!(mk(M_IOCACK, 0, b"f"))));
    let f = q.flushq(FLUSHALL);
    check_eq!(f.msgs, 3);
    check_eq!(f.bytes, 6);
    check!(q.is_empty());
    check_eq!(q.count(), 0);
    check_eq!(q.band_count(4), 0);
    Ok(())
}

pub(super) fn flushq_data_keeps_control() -> TestResult {
    let mut q = q(1000, 0);
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, &[1]))));
    let _ = check_ok!(q.putq(check_some!(mk(M_CTL, 0, &[2]))));
    let _ = check_ok!(q.putq(check_some!(mk(M_PROTO, 2, &[3]))));
    let _ = check_ok!(q.putq(check_some!(mk(M_PCPROTO, 0, &[4]))));
    let _ = check_ok!(q.putq(check_some!(mk(M_IOCACK, 0, &[5]))));
    let f = q.flushq(FLUSHDATA);
    check_eq!(f.msgs, 3);
    check_eq!(q.qsize(), 2);
    check_eq!(q.count(), 2);
    check_eq!(get_tag(&mut q), Some(5));
    check_eq!(get_tag(&mut q), Some(2));
    Ok(())
}

pub(super) fn flushband_only_that_band() -> TestResult {
    let mut q = q(1000, 0);
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 1, &[1]))));
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 2, &[2]))));
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 2, &[3]))));
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, &[4]))));
    let f = q.flushband(2, FLUSHALL);
    check_eq!(f.msgs, 2);
    check_eq!(q.band_count(2), 0);
    check_eq!(q.band_count(1), 1);
    check_eq!(get_tag(&mut q), Some(1));
    check_eq!(get_tag(&mut q), Some(4));
    Ok(())
}

pub(super) fn flushband_zero_includes_hipri() -> TestResult {
    let mut q = q(1000, 0);
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 1, &[1]))));
    let _ = check_ok!(q.putq(check_some!(mk(M_IOCACK, 0, &[2]))));
    let _ = check_ok!(q.putq(check_some!(mk(M_CTL, 0, &[3]))));
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, &[4]))));
    let f = q.flushband(0, FLUSHDATA);
    check_eq!(f.msgs, 1);
    let f = q.flushband(0, FLUSHALL);
    check_eq!(f.msgs, 2);
    check_eq!(q.count(), 0);
    check_eq!(get_tag(&mut q), Some(1));
    Ok(())
}

pub(super) fn flush_reports_backenable() -> TestResult {
    let mut q = q(2, 0);
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"ab"))));
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 6, b"ab"))));
    check!(!q.canput());
    check!(!q.bcanput(6));
    let f = q.flushq(FLUSHALL);
    check!(f.event.back_bands().contains(0));
    check!(f.event.back_bands().contains(6));
    check!(!f.event.back_bands().contains(1));
    Ok(())
}

pub(super) fn strqget_fields() -> TestResult {
    let mut q = q(50, 5);
    check_eq!(q.strqget(QField::First, 0), Ok(0));
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 3, b"abc"))));
    check_eq!(q.strqget(QField::First, 0), Ok(1));
    check_eq!(q.strqget(QField::Last, 3), Ok(1));
    check_eq!(q.strqget(QField::First, 2), Ok(0));
    check_eq!(q.strqget(QField::Hiwat, 3), Ok(50));
    check_eq!(q.strqget(QField::Lowat, 3), Ok(5));
    check_eq!(q.strqget(QField::Flag, 0), Ok(q.flags().0 as usize));
    check_eq!(q.strqget(QField::Maxpsz, 1), Err(Errno::EINVAL));
    check_eq!(q.strqget(QField::Minpsz, 1), Err(Errno::EINVAL));
    // Reading an unallocated band answers defaults without allocating it.
    check_eq!(q.strqget(QField::Hiwat, 200), Ok(50));
    check_eq!(q.nband(), 3);
    Ok(())
}

pub(super) fn strqset_errors() -> TestResult {
    let mut q = q(50, 5);
    check_eq!(q.strqset(QField::Count, 0, 1), Err(Errno::EPERM));
    check_eq!(q.strqset(QField::First, 0, 1), Err(Errno::EPERM));
    check_eq!(q.strqset(QField::Last, 2, 1), Err(Errno::EPERM));
    check_eq!(q.strqset(QField::Flag, 0, 1), Err(Errno::EPERM));
    check_eq!(q.strqset(QField::Maxpsz, 2, 1), Err(Errno::EINVAL));
    check_eq!(q.strqset(QField::Minpsz, 2, 1), Err(Errno::EINVAL));
    check_eq!(q.nband(), 0);
    check_eq!(q.count(), 0);
    Ok(())
}

pub(super) fn strqset_values_and_bands() -> TestResult {
    let mut q = q(50, 5);
    check_ok!(q.strqset(QField::Maxpsz, 0, 64));
    check_ok!(q.strqset(QField::Minpsz, 0, 2));
    check_ok!(q.strqset(QField::Lowat, 0, 7));
    check_eq!(q.maxpsz(), 64);
    check_eq!(q.minpsz(), 2);
    check_eq!(q.lowat(), 7);
    check_ok!(q.strqset(QField::Hiwat, 4, 3));
    check_eq!(q.nband(), 4);
    check_eq!(q.strqget(QField::Hiwat, 4), Ok(3));
    check_eq!(q.strqget(QField::Hiwat, 2), Ok(50));
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 4, b"abc"))));
    check!(q.band_flags(4).contains(QbFlags::QB_FULL));
    Ok(())
}

pub(super) fn strqset_hiwat_recomputes_qfull() -> TestResult {
    let mut q = q(10, 0);
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"12345"))));
    check!(!q.flags().contains(QFlags::QFULL));
    check_ok!(q.strqset(QField::Hiwat, 0, 5));
    check!(q.flags().contains(QFlags::QFULL));
    check_ok!(q.strqset(QField::Hiwat, 0, 6));
    check!(!q.flags().contains(QFlags::QFULL));
    Ok(())
}

pub(super) fn qenable_once_and_back_flags() -> TestResult {
    let mut q = q(10, 0);
    check!(q.qenable());
    check!(q.flags().contains(QFlags::QENAB));
    check!(!q.qenable());
    q.clear_enabled();
    check!(!q.flags().contains(QFlags::QENAB));
    check!(q.qenable());
    q.set_back(0);
    check!(q.flags().contains(QFlags::QBACK));
    check_ok!(q.strqset(QField::Lowat, 2, 0));
    q.set_back(2);
    check!(q.band_flags(2).contains(QbFlags::QB_BACK));
    q.clear_back();
    check!(!q.flags().contains(QFlags::QBACK));
    check!(!q.band_flags(2).contains(QbFlags::QB_BACK));
    Ok(())
}

/// Band 0 and high-priority messages are linked through `b_next`: putq never allocates for
/// them, so it goes through with every allocation failing; the first message of a new band
/// needs its `qband`, and when that allocation fails it is still queued (on the overflow
/// list), never handed back or lost.
pub(super) fn putq_alloc_failure_keeps_band_message() -> TestResult {
    let mut q = q(1000, 0);
    let m1 = check_some!(mk(M_DATA, 0, b"first"));
    let m2 = check_some!(mk(M_DATA, 9, b"band"));
    let m3 = check_some!(mk(M_PCPROTO, 0, b"hi"));
    let (r1, r2, r3) = {
        let _g = FaultGuard::fail_after(0);
        (q.putq(m1), q.putq(m2), q.putq(m3))
    };
    let _ = check_ok!(r1);
    let _ = check_ok!(r2);
    let _ = check_ok!(r3);
    // No qband, the band message counted with band 0; getq order: high priority, the band
    // message, band 0.
    check_eq!((q.count(), q.nband(), q.qsize()), (11, 0, 3));
    check_eq!(check_some!(q.peek(1)).rd(), b"band");
    let order: [&[u8]; 3] = [b"hi", b"band", b"first"];
    for want in order {
        let (m, _ev) = q.getq();
        check_eq!(check_some!(m).rd(), want);
    }
    check_eq!((q.count(), q.mblkcnt()), (0, 0));
    Ok(())
}

/// While band messages wait on the overflow list, messages of one band still come off in
/// the order they went on (the ones of an allocated band first, the overflow list after the
/// bands), putbq returns a message to where it was taken from, and flushband finds the
/// band's messages on the overflow list too.
pub(super) fn overflow_keeps_band_order() -> TestResult {
    let mut q = q(usize::MAX, 0);
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 2, b"2a"))));
    let m = check_some!(mk(M_DATA, 7, b"7a"));
    {
        let _g = FaultGuard::fail_after(0);
        let _ = check_ok!(q.putq(m));
    }
    check!(q.nband() < 7);
    // Band 7 can be allocated now, but the overflow list holds messages: later band
    // messages (of any band) queue behind them.
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 7, b"7b"))));
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 2, b"2b"))));
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"0a"))));
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 3, b"3a"))));
    check_eq!(q.qsize(), 6);
    // flushband(3) finds 3a on the overflow list.
    let f = q.flushband(3, FLUSHALL);
    check_eq!((f.msgs, f.bytes), (1, 2));
    let (m, _ev) = q.getq();
    let m = check_some!(m);
    check_eq!(m.rd(), b"2a");
    let _ = check_ok!(q.putbq(m));
    let mut got = [[0u8; 2]; 5];
    for g in got.iter_mut() {
        let (m, _ev) = q.getq();
        let m = check_some!(m);
        crate::sys::copy_bytes(g, m.rd());
        if g == b"7a" {
            // Put back from the overflow list while band 7 has no qband: it stays first.
            let _g = FaultGuard::fail_after(0);
            let _ = check_ok!(q.putbq(m));
            let (m, _ev) = q.getq();
            check_eq!(check_some!(m).rd(), b"7a");
        }
    }
    check_eq!(got, [*b"2a", *b"7a", *b"7b", *b"2b", *b"0a"]);
    check!(q.is_empty());
    check_eq!((q.count(), q.mblkcnt()), (0, 0));
    Ok(())
}

/// A long queue is kept without any allocation: 10 000 band-0 messages go on with every
/// allocation failing (a `Vec` ring would have to grow, and could fail, at each doubling),
/// and come off in order.
pub(super) fn long_queue_needs_no_allocation() -> TestResult {
    let mut q = q(usize::MAX, 0);
    let n = 10_000usize;
    let mut msgs = crate::sys::vec_with_capacity(n).map_err(|_| crate::ktest::Failure {
        file: file!(),
        line: line!(),
        what: "vec",
    })?;
    for i in 0..n {
        let m = check_some!(mk(M_DATA, 0, &(i as u32).to_ne_bytes()));
        check!(crate::sys::vec_push(&mut msgs, m).is_ok());
    }
    {
        let _g = FaultGuard::fail_after(0);
        for m in core::mem::take(&mut msgs) {
            let _ = check_ok!(q.putq(m));
        }
    }
    check_eq!((q.qsize(), q.count(), q.mblkcnt()), (n, 4 * n, n));
    for i in 0..n {
        let (m, _ev) = q.getq();
        let m = check_some!(m);
        check_eq!(m.rd(), &(i as u32).to_ne_bytes()[..]);
    }
    check!(q.is_empty());
    check_eq!(q.mblkcnt(), 0);
    Ok(())
}

pub(super) fn ring_wraparound_insert_remove() -> TestResult {
    let mut q = q(1000, 0);
    // Advance the ring head so later inserts and removes cross the buffer end.
    for round in 0..3u8 {
        let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, &[round]))));
        let (_m, _ev) = q.getq();
    }
    for t in [10u8, 30, 40] {
        let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, &[t]))));
    }
    let _ = check_ok!(q.insq(1, check_some!(mk(M_DATA, 0, &[20]))));
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, &[50]))));
    let (m, _ev) = q.rmvq(2);
    check_eq!(check_some!(m).rd(), &[30]);
    for want in [10u8, 20, 40, 50] {
        check_eq!(get_tag(&mut q), Some(want));
    }
    check!(q.is_empty());
    Ok(())
}

pub(super) fn zero_length_messages() -> TestResult {
    let mut q = q(1, 0);
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, b""))));
    check_eq!(q.count(), 0);
    check_eq!(q.qsize(), 1);
    check!(!q.flags().contains(QFlags::QFULL));
    check!(q.canput());
    check_eq!(check_some!(q.first()).msgsize(), 0);
    Ok(())
}

pub(super) fn event_merge_and_bandset() -> TestResult {
    let mut a = QEvent::NONE;
    a.add_back(3);
    let b = QEvent::enable();
    let c = a.merge(b);
    check!(c.needs_enable());
    check!(c.needs_backenable());
    let mut n = 0;
    for band in c.back_bands().iter() {
        check_eq!(band, 3);
        n += 1;
    }
    check_eq!(n, 1);
    let mut s = BandSet::default();
    s.insert(255);
    s.insert(0);
    check!(s.contains(255) && s.contains(0) && !s.contains(128));
    Ok(())
}
