//! Shared (host + KUnit) tests of Streams: links, push/pop, open/close order, putnext/qreply,
//! flow control across queues, back-enable, the run list, re-entry, registry, allocation
//! failure. The modules used are in `testmods.rs`.

use super::testmods::*;
use super::*;

/// The Streams of these tests: a head that queues whatever arrives.
type Stream = super::Stream<RawHead>;
use crate::errno::Errno;
use crate::ktest::{Failure, TestResult};
use crate::msg::Msg;
use crate::msg::{MsgType, M_CTL, M_DATA, M_IOCACK, M_IOCTL, M_PCPROTO};
use crate::queue::tests::{mk, FaultGuard};
use crate::queue::{QField, QFlags, QbFlags, FLUSHALL};
use crate::{check, check_eq, check_ok, check_some, ktest_suite};

fn open(drv: &'static StreamTab) -> Result<Stream, Failure> {
    Ok(check_ok!(Stream::new(drv)))
}

fn data(tag: u8, len: usize) -> Option<Msg> {
    let mut buf = [tag; 64];
    if let Some(b) = buf.get_mut(1..) {
        b.fill(0);
    }
    mk(M_DATA, 0, buf.get(..len.max(1))?)
}

/// Read the next message at the head: (type, first byte, second byte).
fn read3(s: &mut Stream) -> Option<(MsgType, u8, u8)> {
    let m = s.read()?;
    let b = m.rd();
    Some((
        m.db_type(),
        b.first().copied().unwrap_or(0),
        b.get(1).copied().unwrap_or(0),
    ))
}

fn reg() -> Result<Registry, Failure> {
    let mut r = Registry::new();
    for t in [
        &PASS, &NOSRV, &LOGA, &LOGB, &IOC, &FAILOPEN, &TICK1, &TICK2, &FLOWPASS,
    ] {
        check_ok!(r.register_module(t));
    }
    Ok(r)
}

fn wq_count(s: &Stream, q: Option<QueueId>) -> usize {
    q.and_then(|q| s.queue(q)).map_or(usize::MAX, |q| q.count())
}

fn queueid_arithmetic() -> TestResult {
    let s = open(&NULL)?;
    let h = s.head_wq();
    check!(!h.is_read());
    check_eq!(h.rd(), s.head_rq());
    check_eq!(h.rd().wr(), h);
    check_eq!(h.otherq(), s.head_rq());
    check_eq!(h.otherq().otherq(), h);
    check!(s.head_rq().is_read());
    check!(s
        .queue(s.head_rq())
        .is_some_and(|q| q.flags().contains(QFlags::QREADR)));
    Ok(())
}

fn open_links_head_and_driver() -> TestResult {
    let s = open(&HOLD)?;
    let dw = check_some!(s.driver_wq());
    check_eq!(s.next(s.head_wq()), Some(dw));
    check_eq!(s.next(dw), None);
    check_eq!(s.next(dw.rd()), Some(s.head_rq()));
    check_eq!(s.next(s.head_rq()), None);
    check_eq!(s.role(dw), Some(Role::Driver));
    check_eq!(s.name(dw), Some("hold"));
    check_eq!(s.queue(dw).map(|q| q.hiwat()), Some(10));
    check!(s.has_srv(dw));
    check!(!s.has_srv(dw.rd()));
    check_eq!(s.nmodules(), 0);
    check_eq!(s.backq(dw), Some(s.head_wq()));
    Ok(())
}

fn write_reaches_driver_directly() -> TestResult {
    let mut s = open(&HOLD)?;
    s.write(check_some!(data(1, 3)));
    check_eq!(wq_count(&s, s.driver_wq()), 3);
    check!(!s.has_enabled());
    Ok(())
}

fn driver_read_side_reaches_head() -> TestResult {
    let mut s = open(&LOOP)?;
    let r = check_ok!(reg());
    check_ok!(s.push(&r, "nosrv"));
    let rq = check_some!(s.driver_rq());
    s.put(rq, check_some!(data(7, 2)));
    check_eq!(read3(&mut s), Some((M_DATA, 7, 0)));
    check!(s.read().is_none());
    Ok(())
}

fn loopback_qreply_direction() -> TestResult {
    let mut s = open(&LOOP)?;
    s.write(check_some!(data(5, 1)));
    check_eq!(read3(&mut s), Some((M_DATA, 5, 0)));
    check_eq!(s.queue(s.head_rq()).map(|q| q.count()), Some(0));
    Ok(())
}

fn module_qreply_goes_up() -> TestResult {
    let mut s = open(&HOLD)?;
    let r = check_ok!(reg());
    check_ok!(s.push(&r, "ioc"));
    s.write(check_some!(mk(M_IOCTL, 0, b"x")));
    s.write(check_some!(data(3, 1)));
    check_eq!(read3(&mut s), Some((M_IOCACK, b'x', 0)));
    check!(s.read().is_none());
    // Only the data message went down.
    check_eq!(
        s.queue(check_some!(s.driver_wq())).map(|q| q.qsize()),
        Some(1)
    );
    Ok(())
}

fn push_pop_order_of_names() -> TestResult {
    let mut s = open(&HOLD)?;
    let r = check_ok!(reg());
    check_ok!(s.push(&r, "loga"));
    check_ok!(s.push(&r, "logb"));
    check_eq!(s.nmodules(), 2);
    let mut want = [
        (Role::Head, "strhead"),
        (Role::Module, "logb"),
        (Role::Module, "loga"),
        (Role::Driver, "hold"),
    ]
    .into_iter();
    for got in s.names_down() {
        check_eq!(Some(got), want.next());
    }
    check!(want.next().is_none());
    check_ok!(s.pop());
    check_eq!(s.top_wq().and_then(|q| s.name(q)), Some("loga"));
    check_ok!(s.pop());
    check_eq!(s.top_wq().and_then(|q| s.name(q)), Some("hold"));
    check_eq!(s.pop(), Err(Errno::EINVAL));
    Ok(())
}

fn open_close_call_order() -> TestResult {
    let mut s = open(&LOGDRV)?;
    let r = check_ok!(reg());
    check_ok!(s.push(&r, "loga"));
    check_ok!(s.push(&r, "logb"));
    s.close();
    s.close(); // idempotent: close routines run once
    for (what, id) in [
        (b'o', 9u8),
        (b'o', 1),
        (b'o', 2),
        (b'c', 2),
        (b'c', 1),
        (b'c', 9),
    ] {
        check_eq!(read3(&mut s), Some((M_CTL, what, id)));
    }
    check!(s.read().is_none());
    Ok(())
}

fn push_unknown_is_einval() -> TestResult {
    let mut s = open(&HOLD)?;
    let r = check_ok!(reg());
    check_eq!(s.push(&r, "nosuch"), Err(Errno::EINVAL));
    check_eq!(s.nmodules(), 0);
    Ok(())
}

fn push_open_failure_unlinks() -> TestResult {
    let mut s = open(&HOLD)?;
    let r = check_ok!(reg());
    check_eq!(s.push(&r, "failopen"), Err(Errno::ENXIO));
    check_eq!(s.nmodules(), 0);
    check_eq!(s.top_wq().and_then(|q| s.name(q)), Some("hold"));
    s.write(check_some!(data(1, 2)));
    check_eq!(wq_count(&s, s.driver_wq()), 2);
    // The freed slot is reused by the next push.
    check_ok!(s.push(&r, "nosrv"));
    check_eq!(s.nmodules(), 1);
    Ok(())
}

fn registry_errors() -> TestResult {
    let mut r = check_ok!(reg());
    check_eq!(r.register_module(&PASS), Err(Errno::EBUSY));
    check!(r.find_module("pass").is_some());
    check_ok!(r.unregister_module("pass"));
    check!(r.find_module("pass").is_none());
    check_eq!(r.unregister_module("pass"), Err(Errno::EINVAL));
    check_ok!(r.register_driver(7, &LOOP));
    check_eq!(r.register_driver(7, &HOLD), Err(Errno::EBUSY));
    check_eq!(r.find_driver(7).map(|t| t.info.mi_idname), Some("loop"));
    check_eq!(r.unregister_driver(8), Err(Errno::ENXIO));
    let mut full = Registry::new();
    for major in 0..registry::MAX_DRIVERS as u32 {
        check_ok!(full.register_driver(major, &NULL));
    }
    check_eq!(full.register_driver(1000, &NULL), Err(Errno::ENOSR));
    Ok(())
}

fn open_major_uses_cdevsw() -> TestResult {
    let mut r = Registry::new();
    check_ok!(r.register_driver(42, &LOOP));
    let mut s = check_ok!(Stream::open_major(&r, 42, &OpenArgs::driver(42)));
    check_eq!(s.driver_wq().and_then(|q| s.name(q)), Some("loop"));
    s.write(check_some!(data(4, 1)));
    check_eq!(read3(&mut s), Some((M_DATA, 4, 0)));
    check!(Stream::open_major(&r, 43, &OpenArgs::driver(43)).is_err());
    Ok(())
}

fn putnext_off_end_counts_drop() -> TestResult {
    let mut s = open(&NULL)?;
    s.write(check_some!(data(1, 1)));
    check_eq!(s.dropped(), 1);
    Ok(())
}

fn pass_queues_when_blocked_and_backenable_resumes() -> TestResult {
    let mut s = open(&HOLD)?;
    let r = check_ok!(reg());
    check_ok!(s.push(&r, "pass"));
    let pw = check_some!(s.top_wq());
    let dw = check_some!(s.driver_wq());
    for t in 1..=4u8 {
        s.write(check_some!(data(t, 4)));
    }
    // hold took 1..3 (12 >= hiwat 10 after the third), pass queued 4.
    check_eq!(wq_count(&s, Some(dw)), 12);
    check_eq!(wq_count(&s, Some(pw)), 4);
    check!(s
        .queue(dw)
        .is_some_and(|q| q.flags().contains(QFlags::QWANTW)));
    check_eq!(s.runqueues(), 0);
    // The "device" takes two messages: 4 bytes left <= lowat 4 → pass back-enabled.
    let _ = check_some!(s.qctx(dw).getq());
    check!(!s.has_enabled());
    let _ = check_some!(s.qctx(dw).getq());
    check!(s.has_enabled());
    check!(s
        .queue(pw)
        .is_some_and(|q| q.flags().contains(QFlags::QENAB)));
    check!(s
        .queue(pw)
        .is_some_and(|q| q.flags().contains(QFlags::QBACK)));
    check_eq!(s.runqueues(), 1);
    check_eq!(wq_count(&s, Some(pw)), 0);
    check_eq!(wq_count(&s, Some(dw)), 8);
    check!(s
        .queue(pw)
        .is_some_and(|q| !q.flags().contains(QFlags::QBACK)));
    Ok(())
}

/// `Pass::Flow`: the read put procedure is stepped over while nothing is queued at it and
/// the head has room, called once the head is full (it queues) and while it holds messages,
/// and always after `set_pass(Pass::None)`; the back-enabled service procedure drains it.
fn flow_pass_steps_over_only_while_the_next_has_room() -> TestResult {
    use core::sync::atomic::Ordering::Relaxed;
    let mut s = open(&NULL)?;
    let r = check_ok!(reg());
    check_ok!(s.push(&r, "flowpass"));
    let mr = check_some!(s.top_wq()).otherq();
    let h = s.head_rq();
    let calls = || FLOWPASS_CALLS.load(Relaxed);
    let big = |t: u8| Msg::from_bytes(M_DATA, &[t; 1000]).ok();
    let c0 = calls();
    // STRHIGH (5120) takes six 1000-byte messages before the head is full.
    for t in 1..=6u8 {
        s.put(mr, check_some!(big(t)));
    }
    check_eq!(
        (calls() - c0, wq_count(&s, Some(h)), wq_count(&s, Some(mr))),
        (0, 6000, 0)
    );
    // Full: the put procedure runs and queues; then it runs because it holds one.
    s.put(mr, check_some!(big(7)));
    s.put(mr, check_some!(big(8)));
    check_eq!(
        (calls() - c0, wq_count(&s, Some(h)), wq_count(&s, Some(mr))),
        (2, 6000, 2000)
    );
    // Drained below the low-water mark: back-enabled, the service procedure passes 7 and 8.
    for _ in 0..6 {
        let _ = check_some!(s.qctx(h).getq());
    }
    s.runqueues();
    check_eq!((wq_count(&s, Some(h)), wq_count(&s, Some(mr))), (2000, 0));
    // No step over after set_pass(None), though the head has room.
    s.put(mr, check_some!(Msg::from_bytes(M_CTL, b"off").ok()));
    s.put(mr, check_some!(big(9)));
    check_eq!((calls() - c0, wq_count(&s, Some(h))), (4, 3000));
    Ok(())
}

fn canputnext_skips_srvless_modules() -> TestResult {
    let mut s = open(&HOLD)?;
    let r = check_ok!(reg());
    check_ok!(s.push(&r, "nosrv"));
    let nw = check_some!(s.top_wq());
    let dw = check_some!(s.driver_wq());
    let h = s.head_wq();
    check!(s.qctx(h).canputnext());
    s.write(check_some!(data(1, 10)));
    check_eq!(wq_count(&s, Some(nw)), 0);
    check!(!s.qctx(h).canputnext());
    check!(s
        .queue(dw)
        .is_some_and(|q| q.flags().contains(QFlags::QWANTW)));
    check!(s
        .queue(nw)
        .is_some_and(|q| !q.flags().contains(QFlags::QWANTW)));
    Ok(())
}

fn backenable_through_srvless_module() -> TestResult {
    let mut s = open(&HOLD)?;
    let r = check_ok!(reg());
    check_ok!(s.push(&r, "nosrv"));
    check_ok!(s.push(&r, "pass"));
    let pw = check_some!(s.top_wq());
    let dw = check_some!(s.driver_wq());
    for t in 1..=3u8 {
        s.write(check_some!(data(t, 6)));
    }
    check_eq!(wq_count(&s, Some(dw)), 12);
    check_eq!(wq_count(&s, Some(pw)), 6);
    let _ = check_some!(s.qctx(dw).getq()); // 6: above lowat
    check!(!s.has_enabled());
    let _ = check_some!(s.qctx(dw).getq()); // 0
    check!(s
        .queue(pw)
        .is_some_and(|q| q.flags().contains(QFlags::QENAB)));
    check_eq!(s.runqueues(), 1);
    check_eq!(wq_count(&s, Some(dw)), 6);
    Ok(())
}

fn read_side_backenable_driver_through_nosrv() -> TestResult {
    let mut s = open(&SRC)?;
    let r = check_ok!(reg());
    check_ok!(s.push(&r, "nosrv"));
    let hr = s.head_rq();
    check_ok!(s.qctx(hr).strqset(QField::Hiwat, 0, 8));
    check_ok!(s.qctx(hr).strqset(QField::Lowat, 0, 2));
    let dr = check_some!(s.driver_rq());
    for t in 1..=3u8 {
        s.put(dr, check_some!(data(t, 4)));
    }
    check_eq!(s.runqueues(), 1);
    check_eq!(s.queue(hr).map(|q| q.count()), Some(8));
    check_eq!(wq_count(&s, Some(dr)), 4);
    check_eq!(read3(&mut s).map(|m| m.1), Some(1));
    check!(!s.has_enabled()); // 4 > lowat 2
    check_eq!(read3(&mut s).map(|m| m.1), Some(2));
    check!(s.has_enabled()); // drained: src's read queue back-enabled past nosrv
    check_eq!(s.runqueues(), 1);
    check_eq!(read3(&mut s).map(|m| m.1), Some(3));
    Ok(())
}

fn band_flow_control_across_queues() -> TestResult {
    let mut s = open(&HOLD)?;
    let r = check_ok!(reg());
    check_ok!(s.push(&r, "pass"));
    let (pw, dw, h) = (
        check_some!(s.top_wq()),
        check_some!(s.driver_wq()),
        s.head_wq(),
    );
    s.write(check_some!(mk(M_DATA, 1, b"0123456789")));
    // From the head the nearest service procedure is pass's, whose band 1 is empty.
    check!(s.qctx(h).bcanputnext(1));
    check!(!s.qctx(pw).bcanputnext(1));
    check!(s.qctx(pw).bcanputnext(2));
    check!(s.qctx(pw).canputnext());
    check!(s
        .queue(dw)
        .is_some_and(|q| q.band_flags(1).contains(QbFlags::QB_FULL)));
    s.write(check_some!(mk(M_DATA, 1, b"ab")));
    check_eq!(s.queue(pw).map(|q| q.band_count(1)), Some(2));
    // Band data enables hold's (idle) service procedure and pass's, which puts "ab" back.
    check_eq!(s.runqueues(), 2);
    check_eq!(s.queue(pw).map(|q| q.band_count(1)), Some(2));
    let _ = check_some!(s.qctx(dw).getq());
    check!(s
        .queue(pw)
        .is_some_and(|q| q.band_flags(1).contains(QbFlags::QB_BACK)));
    // pass runs and sends "ab" down, which enables hold's service procedure once more.
    check_eq!(s.runqueues(), 2);
    check_eq!(s.queue(pw).map(|q| q.band_count(1)), Some(0));
    check_eq!(s.queue(dw).map(|q| q.band_count(1)), Some(2));
    Ok(())
}

fn hipri_bypasses_flow_control() -> TestResult {
    let mut s = open(&HOLD)?;
    let r = check_ok!(reg());
    check_ok!(s.push(&r, "pass"));
    let (pw, dw) = (check_some!(s.top_wq()), check_some!(s.driver_wq()));
    s.write(check_some!(data(1, 10)));
    s.write(check_some!(data(2, 1)));
    check_eq!(wq_count(&s, Some(pw)), 1);
    s.write(check_some!(mk(M_PCPROTO, 0, b"hi")));
    check_eq!(wq_count(&s, Some(pw)), 1);
    check_eq!(wq_count(&s, Some(dw)), 12);
    check_eq!(
        s.queue(dw).and_then(|q| q.first()).map(|m| m.db_type()),
        Some(M_PCPROTO)
    );
    Ok(())
}

fn qenable_once_and_noop_without_srv() -> TestResult {
    let mut s = open(&HOLD)?;
    let r = check_ok!(reg());
    check_ok!(s.push(&r, "nosrv"));
    check_ok!(s.push(&r, "pass"));
    let pw = check_some!(s.top_wq());
    let nw = check_some!(s.next(pw));
    s.qenable(nw);
    check!(!s.has_enabled());
    s.qenable(pw);
    s.qenable(pw);
    s.qctx(pw).qenable();
    check!(s.has_enabled());
    check_eq!(s.runqueues(), 1);
    check!(!s.has_enabled());
    check_eq!(s.runqueues(), 0);
    check!(s
        .queue(pw)
        .is_some_and(|q| !q.flags().contains(QFlags::QENAB)));
    Ok(())
}

fn runqueues_in_qenable_order() -> TestResult {
    let mut s = open(&HOLD)?;
    let r = check_ok!(reg());
    check_ok!(s.push(&r, "tick1"));
    check_ok!(s.push(&r, "tick2"));
    let t2 = check_some!(s.top_wq()).rd();
    let t1 = check_some!(s.next(t2.wr())).rd();
    s.qenable(t1);
    s.qenable(t2);
    check_eq!(s.runqueues(), 2);
    check_eq!(read3(&mut s).map(|m| m.1), Some(1));
    check_eq!(read3(&mut s).map(|m| m.1), Some(2));
    s.qenable(t2);
    s.qenable(t1);
    let sched: &mut dyn crate::sched::Schedulable = &mut s;
    check!(sched.has_enabled());
    check_eq!(sched.runqueues(), 2);
    check!(!sched.has_enabled());
    check_eq!(read3(&mut s).map(|m| m.1), Some(2));
    check_eq!(read3(&mut s).map(|m| m.1), Some(1));
    Ok(())
}

fn reentry_without_srv_is_deferred_not_recursive() -> TestResult {
    let mut s = open(&LOOP)?;
    let r = check_ok!(reg());
    check_ok!(s.push(&r, "nosrv"));
    // nosrv's wput is running when loop qreplies into nosrv's rput: queued, then fed to rput
    // when wput returns.
    s.write(check_some!(data(8, 3)));
    check!(!s.has_enabled());
    check_eq!(read3(&mut s), Some((M_DATA, 8, 0)));
    let nr = check_some!(s.top_wq()).rd();
    check_eq!(s.queue(nr).map(|q| q.qsize()), Some(0));
    Ok(())
}

fn reentry_with_srv_goes_to_service() -> TestResult {
    let mut s = open(&LOOP)?;
    let r = check_ok!(reg());
    check_ok!(s.push(&r, "pass"));
    s.write(check_some!(data(6, 3)));
    let pr = check_some!(s.top_wq()).rd();
    check_eq!(s.queue(pr).map(|q| q.qsize()), Some(1));
    check!(s.read().is_none());
    check_eq!(s.runqueues(), 1);
    check_eq!(read3(&mut s), Some((M_DATA, 6, 0)));
    Ok(())
}

fn ctx_flush_backenables_upstream() -> TestResult {
    let mut s = open(&HOLD)?;
    let r = check_ok!(reg());
    check_ok!(s.push(&r, "pass"));
    let (pw, dw) = (check_some!(s.top_wq()), check_some!(s.driver_wq()));
    for t in 1..=4u8 {
        s.write(check_some!(data(t, 5)));
    }
    check_eq!(wq_count(&s, Some(pw)), 10);
    check_eq!(s.qctx(dw).flushq(FLUSHALL), 2);
    check_eq!(wq_count(&s, Some(dw)), 0);
    check!(s.has_enabled());
    check_eq!(s.runqueues(), 1);
    check_eq!(wq_count(&s, Some(dw)), 10);
    Ok(())
}

fn pop_drops_queued_and_runlist_entries() -> TestResult {
    let mut s = open(&HOLD)?;
    let r = check_ok!(reg());
    check_ok!(s.push(&r, "pass"));
    let pw = check_some!(s.top_wq());
    s.write(check_some!(data(1, 10)));
    s.write(check_some!(data(2, 3)));
    check_eq!(wq_count(&s, Some(pw)), 3);
    s.qenable(pw);
    check!(s.has_enabled());
    check_ok!(s.pop());
    check!(!s.has_enabled());
    check_eq!(s.runqueues(), 0);
    check_ok!(s.push(&r, "nosrv"));
    check_eq!(
        s.top_wq().and_then(|q| s.queue(q)).map(|q| q.qsize()),
        Some(0)
    );
    Ok(())
}

fn ctx_queue_ops_and_noenable() -> TestResult {
    let mut s = open(&HOLD)?;
    let r = check_ok!(reg());
    check_ok!(s.push(&r, "pass"));
    let pr = check_some!(s.top_wq()).rd();
    let mut cx = s.qctx(pr);
    check!(cx.is_read());
    check_eq!(cx.qid(), pr);
    check!(cx.getq().is_none()); // sets QWANTR
    cx.noenable();
    check_ok!(cx.putq(check_some!(data(1, 2))));
    check!(!cx.flags().contains(QFlags::QENAB));
    cx.enableok();
    check_ok!(cx.putq(check_some!(data(2, 2))));
    check!(cx.flags().contains(QFlags::QENAB));
    check_eq!(cx.strqget(QField::Count, 0), Ok(4));
    check_eq!(cx.strqset(QField::Count, 0, 1), Err(Errno::EPERM));
    let m = check_some!(cx.getq());
    check_ok!(cx.putbq(m));
    check_eq!(cx.flushband(0, FLUSHALL), 2);
    check_eq!(cx.flushq_other(FLUSHALL), 0);
    Ok(())
}

fn alloc_failure_push_and_open() -> TestResult {
    let mut s = open(&HOLD)?;
    let r = check_ok!(reg());
    {
        let _g = FaultGuard::fail_after(0);
        check_eq!(s.push(&r, "pass"), Err(Errno::ENOSR));
        check!(Stream::open(&HOLD, &OpenArgs::driver(0)).is_err());
    }
    check_eq!(s.nmodules(), 0);
    check_eq!(s.top_wq().and_then(|q| s.name(q)), Some("hold"));
    check_ok!(s.push(&r, "pass"));
    check_eq!(s.nmodules(), 1);
    Ok(())
}

/// The first message of a band whose qband cannot be allocated is still queued (on the
/// queue's overflow list), counted with band 0, and the Stream drops nothing.
fn alloc_failure_ctx_putq_keeps_message() -> TestResult {
    let mut s = open(&HOLD)?;
    let dw = check_some!(s.driver_wq());
    let mut m = check_some!(data(9, 4));
    m.set_band(3); // the first message of a band needs its qband allocated
    let r = {
        let _g = FaultGuard::fail_after(0);
        s.qctx(dw).putq(m)
    };
    check_ok!(r);
    let q = check_some!(s.queue(dw));
    check_eq!((q.qsize(), q.count(), q.band_count(3)), (1, 4, 0));
    check_eq!(check_some!(q.first()).rd().first().copied(), Some(9));
    check_eq!(s.dropped(), 0);
    Ok(())
}

ktest_suite!(STREAM_SUITE, "streams_stream":
    queueid_arithmetic,
    open_links_head_and_driver,
    write_reaches_driver_directly,
    driver_read_side_reaches_head,
    loopback_qreply_direction,
    module_qreply_goes_up,
    push_pop_order_of_names,
    open_close_call_order,
    push_unknown_is_einval,
    push_open_failure_unlinks,
    registry_errors,
    open_major_uses_cdevsw,
    putnext_off_end_counts_drop,
    pass_queues_when_blocked_and_backenable_resumes,
    flow_pass_steps_over_only_while_the_next_has_room,
    canputnext_skips_srvless_modules,
    backenable_through_srvless_module,
    read_side_backenable_driver_through_nosrv,
    band_flow_control_across_queues,
    hipri_bypasses_flow_control,
    qenable_once_and_noop_without_srv,
    runqueues_in_qenable_order,
    reentry_without_srv_is_deferred_not_recursive,
    reentry_with_srv_goes_to_service,
    ctx_flush_backenables_upstream,
    pop_drops_queued_and_runlist_entries,
    ctx_queue_ops_and_noenable,
    alloc_failure_push_and_open,
    alloc_failure_ctx_putq_keeps_message,
);
