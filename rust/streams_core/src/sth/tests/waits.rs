//! Shared (host + KUnit) tests of the waits the platform bounds in time: the I_STR timeout
//! (`ic_timout`, [`istr_timeout_ms`], cancel and the late answer) and the close-time drain
//! (`close.rs`: I_SETCLTIME, which queues count, pops in between, the wakeup when drained).

use super::drivers::*;
use super::*;
use crate::msg::{Msg, M_HANGUP, M_IOCACK};
use crate::queue::FLUSHALL;

fn istr(cmd: i32, timeout: i32) -> StrIoctl {
    StrIoctl::new(cmd, timeout, 0, None)
}

fn do_istr(s: &mut Stream, st: &mut StrIoctl) -> Result<i32, Stop> {
    s.strioctl(&Registry::new(), I_STR, IocArg::Str(st))
}

fn istr_timeout_values() -> TestResult {
    check_eq!(istr_timeout_ms(0), Ok(Some(STRTIMOUT * 1000)));
    check_eq!(istr_timeout_ms(INFTIM), Ok(None));
    check_eq!(istr_timeout_ms(1), Ok(Some(1000)));
    check_eq!(istr_timeout_ms(i32::MAX), Ok(Some(u32::MAX)));
    check_eq!(istr_timeout_ms(-2), Err(Errno::EINVAL));
    check_eq!(istr_timeout_ms(i32::MIN), Err(Errno::EINVAL));
    Ok(())
}

fn istr_bad_timeout_sends_nothing() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let mut st = istr(1, -2);
    check_eq!(do_istr(&mut s, &mut st), Err(Stop::Err(Errno::EINVAL)));
    check!(st.id.is_none());
    // The slot stayed free: the next I_STR is answered at once (the loopback acks cmd 1).
    let mut ok = istr(1, INFTIM);
    check_eq!(do_istr(&mut s, &mut ok), Ok(7));
    Ok(())
}

/// What the platform does when `ic_timout` expires: cancel, then the late M_IOCACK of the
/// cancelled ioctl is freed and does not answer the next one.
fn istr_late_ack_after_timeout_is_freed() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let mut st = istr(3, 1); // never answered by sthloop
    check_eq!(do_istr(&mut s, &mut st), Err(Stop::Block(Block::IoctlAck)));
    let old = check_some!(st.id);
    s.sth_ioctl_cancel(old);
    check!(s.sth_take_events().wake & WAKE_IOCTL != 0);
    check_eq!(do_istr(&mut s, &mut st), Err(Stop::Err(Errno::ETIME)));
    // A second ioctl is sent and waits (cmd 3 again).
    let mut next = istr(3, 1);
    check_eq!(
        do_istr(&mut s, &mut next),
        Err(Stop::Block(Block::IoctlAck))
    );
    check!(next.id != Some(old));
    // The late answer to the cancelled ioctl arrives: freed, the new one still waits.
    let late = IocBlk {
        cmd: 3,
        id: old,
        rval: 5,
        ..IocBlk::default()
    };
    let rq = check_some!(s.driver_rq());
    s.put(rq, check_ok!(Msg::from_bytes(M_IOCACK, &late.encode())));
    check_eq!(
        do_istr(&mut s, &mut next),
        Err(Stop::Block(Block::IoctlAck))
    );
    check_eq!(s.queue(s.head_rq()).map(|q| q.qsize()), Some(0));
    s.sth_ioctl_cancel(check_some!(next.id));
    Ok(())
}

/// A caller that timed out while waiting for the slot (no id yet) cancels nothing: the ioctl
/// in progress goes on and completes.
fn istr_timeout_waiting_for_slot_cancels_nothing() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let mut first = istr(3, 1);
    check_eq!(
        do_istr(&mut s, &mut first),
        Err(Stop::Block(Block::IoctlAck))
    );
    let mut second = istr(1, 1);
    check_eq!(
        do_istr(&mut s, &mut second),
        Err(Stop::Block(Block::IoctlAck))
    );
    check!(second.id.is_none());
    // `second` gives up: it has no id, so there is nothing to cancel; `first` still waits.
    let id = check_some!(first.id);
    let ack = IocBlk {
        cmd: 3,
        id,
        rval: 9,
        ..IocBlk::default()
    };
    let rq = check_some!(s.driver_rq());
    s.put(rq, check_ok!(Msg::from_bytes(M_IOCACK, &ack.encode())));
    check_eq!(do_istr(&mut s, &mut first), Ok(9));
    Ok(())
}

fn wait(level: usize) -> Drain {
    Drain::Wait {
        level,
        ms: STRCLTIME_DEFAULT,
    }
}

fn close_waits_for_driver_write_queue() -> TestResult {
    let mut s = open(&HOLD)?;
    check_eq!(s.sth_close_drain(false, false), Drain::Done); // nothing queued
    check_eq!(wr(&mut s, b"abc"), Ok(3));
    check_eq!(s.sth_close_drain(false, false), wait(1));
    check_eq!(s.sth_close_drain(false, false), wait(1)); // still there: wait again
    check_eq!(s.sth_close_drain(false, true), Drain::Done); // the close time ran out
    s.sth_close();
    Ok(())
}

fn close_nonblock_and_zero_cltime_do_not_wait() -> TestResult {
    let mut s = open(&HOLD)?;
    check_eq!(wr(&mut s, b"abc"), Ok(3));
    check_eq!(s.sth_close_drain(true, false), Drain::Done);
    check_ok!(s.strioctl(&Registry::new(), I_SETCLTIME, IocArg::Int(300)));
    check_eq!(
        s.sth_close_drain(false, false),
        Drain::Wait { level: 1, ms: 300 }
    );
    check_ok!(s.strioctl(&Registry::new(), I_SETCLTIME, IocArg::Int(0)));
    check_eq!(s.sth_close_drain(false, false), Drain::Done);
    Ok(())
}

fn close_pops_drained_modules_and_waits_per_queue() -> TestResult {
    let mut s = open(&HOLD)?;
    check_eq!(s.strioctl(&reg()?, I_PUSH, IocArg::Name("pass")), Ok(0));
    // The first message passes `pass` into hold (which then is full), the second stays in
    // pass's write queue.
    check_eq!(wr(&mut s, &[1u8; 20]), Ok(20));
    s.runqueues();
    check_eq!(wr(&mut s, b"second"), Ok(6));
    s.runqueues();
    check_eq!(s.sth_close_drain(false, false), wait(2));
    check_eq!(s.nmodules(), 1);
    // pass's time ran out: it goes (its message with it); hold gets its own close time.
    check_eq!(s.sth_close_drain(false, true), wait(1));
    check_eq!(s.nmodules(), 0);
    check_eq!(s.sth_close_drain(false, true), Drain::Done);
    Ok(())
}

fn close_pops_empty_module_at_once() -> TestResult {
    let mut s = open(&HOLD)?;
    check_eq!(s.strioctl(&reg()?, I_PUSH, IocArg::Name("pass")), Ok(0));
    check_eq!(wr(&mut s, b"one"), Ok(3));
    s.runqueues();
    // pass has nothing: popped without waiting; the driver's queue holds the message.
    check_eq!(s.sth_close_drain(false, false), wait(1));
    check_eq!(s.nmodules(), 0);
    Ok(())
}

fn close_drain_wakes_when_queue_empties() -> TestResult {
    let mut s = open(&HOLD)?;
    check_eq!(wr(&mut s, b"abc"), Ok(3));
    check_eq!(s.sth_close_drain(false, false), wait(1));
    let _ = s.sth_take_events();
    check!(s.sth_take_events().wake & WAKE_WRITE == 0); // still queued: no wakeup
    let wq = check_some!(s.driver_wq());
    s.flush(wq, None, FLUSHALL);
    check!(s.sth_take_events().wake & WAKE_WRITE != 0);
    check_eq!(s.sth_close_drain(false, false), Drain::Done);
    Ok(())
}

fn close_hangup_or_error_does_not_wait() -> TestResult {
    let mut s = open(&HOLD)?;
    check_eq!(wr(&mut s, b"abc"), Ok(3));
    check_eq!(s.sth_close_drain(false, false), wait(1));
    let rq = check_some!(s.driver_rq());
    s.put(rq, check_ok!(Msg::from_bytes(M_HANGUP, &[])));
    check!(s.sth_take_events().wake & WAKE_WRITE != 0);
    check_eq!(s.sth_close_drain(false, false), Drain::Done);
    Ok(())
}

ktest_suite!(STH_WAITS_SUITE, "streams_sth_waits":
    istr_timeout_values,
    istr_bad_timeout_sends_nothing,
    istr_late_ack_after_timeout_is_freed,
    istr_timeout_waiting_for_slot_cancels_nothing,
    close_waits_for_driver_write_queue,
    close_nonblock_and_zero_cltime_do_not_wait,
    close_pops_drained_modules_and_waits_per_queue,
    close_pops_empty_module_at_once,
    close_drain_wakes_when_queue_empties,
    close_hangup_or_error_does_not_wait,
);
