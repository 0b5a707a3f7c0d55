//! Shared (host + KUnit) tests of one queue: ordering, counts, flags, flow control, bands,
//! flushing, strqget/strqset and allocation failure.

use super::*;
use crate::errno::Errno;
use crate::ktest::TestResult;
use crate::msg::{allocb, Bpri, MsgType, M_CTL, M_DATA, M_IOCACK, M_PCPROTO, M_PROTO};
use crate::sys::fault;
use crate::{check, check_eq, check_ok, check_some, ktest_suite};

mod blocks;
mod flush_strq;
use blocks::*;
use flush_strq::*;

/// A one-block message of type `ty`, band `band`, holding `data` (test helper).
pub fn mk(ty: MsgType, band: u8, data: &[u8]) -> Option<Msg> {
    let mut m = allocb(data.len(), Bpri::Med).ok()?;
    m.set_type(ty);
    m.set_band(band);
    if m.append(data) != data.len() {
        return None;
    }
    Some(m)
}

/// Clears fault injection when dropped, so a failed check cannot leak it into other cases.
pub struct FaultGuard;
impl FaultGuard {
    /// Let `n` allocations through, then fail them until the guard drops.
    pub fn fail_after(n: usize) -> FaultGuard {
        fault::fail_after(n);
        FaultGuard
    }
}
impl Drop for FaultGuard {
    fn drop(&mut self) {
        fault::fail_clear();
    }
}

pub(super) fn q(hiwat: usize, lowat: usize) -> Queue {
    Queue::new(0, INFPSZ, hiwat, lowat, false)
}

/// First byte of the message at the head of the queue, taken with getq.
pub(super) fn get_tag(q: &mut Queue) -> Option<u8> {
    let (m, ev) = q.getq();
    let _ = ev;
    m.and_then(|m| m.rd().first().copied())
}

fn new_queue_defaults() -> TestResult {
    let r = Queue::new(1, 512, 100, 10, true);
    check_eq!(r.count(), 0);
    check_eq!(r.qsize(), 0);
    check!(r.is_empty());
    check!(r.flags().contains(QFlags::QREADR));
    check!(!r.flags().contains(QFlags::QFULL));
    check_eq!(r.strqget(QField::Minpsz, 0), Ok(1));
    check_eq!(r.strqget(QField::Maxpsz, 0), Ok(512));
    check_eq!(r.strqget(QField::Hiwat, 0), Ok(100));
    check_eq!(r.strqget(QField::Lowat, 0), Ok(10));
    let w = q(1, 0);
    check!(!w.flags().contains(QFlags::QREADR));
    Ok(())
}

fn putq_counts_bytes() -> TestResult {
    let mut q = q(1000, 0);
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"abc"))));
    let _ = check_ok!(q.putq(check_some!(mk(M_PROTO, 0, b"defgh"))));
    check_eq!(q.count(), 8);
    check_eq!(q.qsize(), 2);
    check_eq!(q.strqget(QField::Count, 0), Ok(8));
    let (m, _ev) = q.getq();
    check_eq!(check_some!(m).rd(), b"abc");
    check_eq!(q.count(), 5);
    Ok(())
}

fn putq_fifo_band0() -> TestResult {
    let mut q = q(1000, 0);
    for t in 1..=5u8 {
        let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, &[t]))));
    }
    for t in 1..=5u8 {
        check_eq!(get_tag(&mut q), Some(t));
    }
    check_eq!(get_tag(&mut q), None);
    Ok(())
}

fn hipri_first_and_fifo() -> TestResult {
    let mut q = q(1000, 0);
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, &[1]))));
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 7, &[2]))));
    let _ = check_ok!(q.putq(check_some!(mk(M_PCPROTO, 0, &[3]))));
    let _ = check_ok!(q.putq(check_some!(mk(M_IOCACK, 0, &[4]))));
    check_eq!(q.hipri_len(), 2);
    check_eq!(get_tag(&mut q), Some(3));
    check_eq!(get_tag(&mut q), Some(4));
    check_eq!(get_tag(&mut q), Some(2));
    check_eq!(get_tag(&mut q), Some(1));
    Ok(())
}

fn hipri_band_forced_zero() -> TestResult {
    let mut q = q(1000, 0);
    let _ = check_ok!(q.putq(check_some!(mk(M_PCPROTO, 9, b"xyz"))));
    check_eq!(q.nband(), 0);
    check_eq!(q.count(), 3);
    let (m, _ev) = q.getq();
    check_eq!(check_some!(m).band(), 0);
    Ok(())
}

fn bands_descending_order() -> TestResult {
    let mut q = q(1000, 0);
    for (band, tag) in [(1u8, 1u8), (3, 2), (0, 3), (2, 4), (3, 5), (1, 6)] {
        let _ = check_ok!(q.putq(check_some!(mk(M_DATA, band, &[tag]))));
    }
    check_eq!(q.nband(), 3);
    for want in [2u8, 5, 4, 1, 6, 3] {
        check_eq!(get_tag(&mut q), Some(want));
    }
    Ok(())
}

fn band_counts_separate() -> TestResult {
    let mut q = q(1000, 0);
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 4, b"1234"))));
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"12"))));
    check_eq!(q.nband(), 4);
    check_eq!(q.count(), 2);
    check_eq!(q.band_count(4), 4);
    check_eq!(q.band_count(2), 0);
    check_eq!(q.strqget(QField::Count, 4), Ok(4));
    check_eq!(q.band_len(4), 1);
    check_eq!(q.band_len(0), 1);
    Ok(())
}

fn putq_enable_rules() -> TestResult {
    let mut q = q(1000, 0);
    // Plain band-0 data on a queue nobody waits on: no enable.
    check!(!check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"a")))).needs_enable());
    // Band data enables.
    check!(check_ok!(q.putq(check_some!(mk(M_DATA, 1, b"b")))).needs_enable());
    // High priority enables.
    check!(check_ok!(q.putq(check_some!(mk(M_PCPROTO, 0, b"c")))).needs_enable());
    Ok(())
}

fn getq_sets_and_clears_qwantr() -> TestResult {
    let mut q = q(1000, 0);
    let (m, _ev) = q.getq();
    check!(m.is_none());
    check!(q.flags().contains(QFlags::QWANTR));
    // A reader is waiting: band-0 data now enables.
    check!(check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"a")))).needs_enable());
    let (m, _ev) = q.getq();
    check!(m.is_some());
    check!(!q.flags().contains(QFlags::QWANTR));
    check!(!check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"b")))).needs_enable());
    Ok(())
}

fn noenable_enableok() -> TestResult {
    let mut q = q(1000, 0);
    let (_m, _ev) = q.getq(); // QWANTR
    q.noenable();
    check!(q.flags().contains(QFlags::QNOENB));
    check!(!check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"a")))).needs_enable());
    check!(!check_ok!(q.putq(check_some!(mk(M_DATA, 2, b"b")))).needs_enable());
    // noenable never holds back high-priority messages.
    check!(check_ok!(q.putq(check_some!(mk(M_PCPROTO, 0, b"c")))).needs_enable());
    q.enableok();
    check!(!q.flags().contains(QFlags::QNOENB));
    check!(check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"d")))).needs_enable());
    Ok(())
}

fn qfull_set_at_hiwat_cleared_below() -> TestResult {
    let mut q = q(10, 2);
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"12345"))));
    check!(!q.flags().contains(QFlags::QFULL));
    check!(q.canput());
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"12345"))));
    check!(q.flags().contains(QFlags::QFULL));
    let (_m, _ev) = q.getq();
    check_eq!(q.count(), 5);
    check!(!q.flags().contains(QFlags::QFULL));
    Ok(())
}

fn canput_sets_qwantw() -> TestResult {
    let mut q = q(4, 0);
    check!(q.canput());
    check!(!q.flags().contains(QFlags::QWANTW));
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"1234"))));
    check!(!q.canput());
    check!(q.flags().contains(QFlags::QWANTW));
    Ok(())
}

fn backenable_only_at_lowat() -> TestResult {
    let mut q = q(10, 4);
    for _ in 0..4 {
        let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"123"))));
    }
    check!(!q.canput());
    let (_m, ev) = q.getq(); // 9: still above lowat
    check!(!ev.needs_backenable());
    check!(q.canput()); // QFULL cleared below hiwat; QWANTW still pending
    check!(q.flags().contains(QFlags::QWANTW));
    let (_m, ev) = q.getq(); // 6
    check!(!ev.needs_backenable());
    let (_m, ev) = q.getq(); // 3 <= 4
    check!(ev.needs_backenable());
    check!(ev.back_bands().contains(0));
    check!(!q.flags().contains(QFlags::QWANTW));
    let (_m, ev) = q.getq(); // already reported once
    check!(!ev.needs_backenable());
    Ok(())
}

fn no_backenable_without_qwantw() -> TestResult {
    let mut q = q(4, 1);
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"12345"))));
    let (_m, ev) = q.getq();
    check!(!ev.needs_backenable());
    Ok(())
}

fn band_flow_control() -> TestResult {
    let mut q = q(4, 1);
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 2, b"abcd"))));
    check!(q.band_flags(2).contains(QbFlags::QB_FULL));
    check!(!q.flags().contains(QFlags::QFULL));
    check!(q.canput());
    check!(q.bcanput(1));
    check!(!q.bcanput(2));
    check!(q.band_flags(2).contains(QbFlags::QB_WANTW));
    let (_m, ev) = q.getq();
    check!(!q.band_flags(2).contains(QbFlags::QB_FULL));
    check!(!q.band_flags(2).contains(QbFlags::QB_WANTW));
    check!(ev.back_bands().contains(2));
    check!(!ev.back_bands().contains(0));
    Ok(())
}

fn bcanput_unallocated_and_band0() -> TestResult {
    let mut q = q(2, 0);
    check!(q.bcanput(200));
    check_eq!(q.nband(), 0);
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"12"))));
    check!(!q.bcanput(0));
    check!(q.flags().contains(QFlags::QWANTW));
    check!(q.bcanput(3));
    Ok(())
}

fn putbq_front_of_class() -> TestResult {
    let mut q = q(1000, 0);
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, &[1]))));
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, &[2]))));
    let (m, _ev) = q.getq();
    let ev = check_ok!(q.putbq(check_some!(m)));
    check!(!ev.needs_enable());
    check_eq!(q.count(), 2);
    check_eq!(get_tag(&mut q), Some(1));
    check_eq!(get_tag(&mut q), Some(2));
    Ok(())
}

fn putbq_keeps_priority_order() -> TestResult {
    let mut q = q(1000, 0);
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 5, &[1]))));
    let _ = check_ok!(q.putq(check_some!(mk(M_PCPROTO, 0, &[2]))));
    // A band-0 message put back still goes behind band 5 and high priority.
    let _ = check_ok!(q.putbq(check_some!(mk(M_DATA, 0, &[3]))));
    // A band-5 message put back goes ahead of the band-5 one already there.
    let _ = check_ok!(q.putbq(check_some!(mk(M_DATA, 5, &[4]))));
    for want in [2u8, 4, 1, 3] {
        check_eq!(get_tag(&mut q), Some(want));
    }
    Ok(())
}

fn insq_positions() -> TestResult {
    let mut q = q(1000, 0);
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, &[1]))));
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, &[3]))));
    let _ = check_ok!(q.insq(1, check_some!(mk(M_DATA, 0, &[2]))));
    let _ = check_ok!(q.insq(3, check_some!(mk(M_DATA, 0, &[4]))));
    // A band-2 message belongs before all band-0 messages: position 0 only.
    let _ = check_ok!(q.insq(0, check_some!(mk(M_DATA, 2, &[0]))));
    check_eq!(q.qsize(), 5);
    check_eq!(check_some!(q.peek(1)).rd(), &[1]);
    for want in 0..=4u8 {
        check_eq!(get_tag(&mut q), Some(want));
    }
    Ok(())
}

fn insq_rejects_out_of_order() -> TestResult {
    let mut q = q(1000, 0);
    let _ = check_ok!(q.putq(check_some!(mk(M_PCPROTO, 0, &[1]))));
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, &[2]))));
    // Band 0 before a high-priority message: refused, message handed back intact.
    let back = match q.insq(0, check_some!(mk(M_DATA, 0, b"zz"))) {
        Err(m) => m,
        Ok(_) => {
            return Err(crate::ktest::Failure {
                file: file!(),
                line: line!(),
                what: "insq accepted",
            })
        }
    };
    check_eq!(back.rd(), b"zz");
    // High priority after band 0: refused. Past the end: refused.
    check!(q.insq(2, check_some!(mk(M_PCPROTO, 0, b"h"))).is_err());
    check!(q.insq(3, check_some!(mk(M_DATA, 0, b"e"))).is_err());
    check_eq!(q.qsize(), 2);
    check_eq!(q.count(), 2);
    Ok(())
}

fn rmvq_middle_updates_counts() -> TestResult {
    let mut q = q(1000, 0);
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 3, b"aa"))));
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"bbb"))));
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"cccc"))));
    let (m, _ev) = q.rmvq(1);
    check_eq!(check_some!(m).rd(), b"bbb");
    check_eq!(q.count(), 4);
    let (m, _ev) = q.rmvq(0);
    check_eq!(check_some!(m).rd(), b"aa");
    check_eq!(q.band_count(3), 0);
    let (m, _ev) = q.rmvq(5);
    check!(m.is_none());
    check_eq!(q.qsize(), 1);
    Ok(())
}

fn rmvq_backenables() -> TestResult {
    let mut q = q(3, 0);
    let _ = check_ok!(q.putq(check_some!(mk(M_DATA, 0, b"abc"))));
    check!(!q.canput());
    let (_m, ev) = q.rmvq(0);
    check!(ev.needs_backenable());
    Ok(())
}

ktest_suite!(QUEUE_SUITE, "streams_queue":
    new_queue_defaults,
    putq_counts_bytes,
    putq_fifo_band0,
    hipri_first_and_fifo,
    hipri_band_forced_zero,
    bands_descending_order,
    band_counts_separate,
    putq_enable_rules,
    getq_sets_and_clears_qwantr,
    noenable_enableok,
    qfull_set_at_hiwat_cleared_below,
    canput_sets_qwantw,
    backenable_only_at_lowat,
    no_backenable_without_qwantw,
    band_flow_control,
    bcanput_unallocated_and_band0,
    putbq_front_of_class,
    putbq_keeps_priority_order,
    insq_positions,
    insq_rejects_out_of_order,
    rmvq_middle_updates_counts,
    rmvq_backenables,
    flushq_all,
    flushq_data_keeps_control,
    flushband_only_that_band,
    flushband_zero_includes_hipri,
    flush_reports_backenable,
    strqget_fields,
    strqset_errors,
    strqset_values_and_bands,
    strqset_hiwat_recomputes_qfull,
    qenable_once_and_back_flags,
    putq_alloc_failure_keeps_band_message,
    overflow_keeps_band_order,
    long_queue_needs_no_allocation,
    zero_length_messages_fill_queue,
    tiny_messages_full_before_hiwat,
    block_limit_fills_every_band,
    block_limit_taken_at_creation,
    getq_first_is_getq_upto_of_one,
    ring_wraparound_insert_remove,
    zero_length_messages,
    event_merge_and_bandset,
);
