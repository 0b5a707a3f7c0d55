//! Shared tests of the two-phase read and write (`sth/fast.rs`) on a STREAMS pipe.

use super::TestPipe;
use streams_core::errno::Errno;
use streams_core::ktest::{Failure, TestResult};
use streams_core::msg::{Msg, MsgFlags, M_DATA};
use streams_core::sth::consts::*;
use streams_core::sth::fast::{Taken, NTAKE};
use streams_core::sth::tests::{put, rd, wr};
use streams_core::sth::*;
use streams_core::stream::Registry;
use streams_core::{check, check_eq, check_ok, check_some, ktest_suite};

fn msg(b: &[u8]) -> Result<Msg, Failure> {
    Ok(check_ok!(Msg::from_bytes(M_DATA, b)))
}

fn taken_bytes(t: &Taken, i: usize) -> Result<&[u8], Failure> {
    Ok(check_some!(t.get(i)).rd())
}

fn prebuilt_write_then_take() -> TestResult {
    let s = check_ok!(TestPipe::new());
    check!(s.end(0, |s| s.sth_prebuilt_ok(3)));
    let mut slot = Some(msg(b"abc")?);
    check_eq!(s.end(0, |s| s.strwrite_prebuilt(&mut slot, true)), Ok(3));
    check!(slot.is_none());
    let mut slot = Some(msg(b"defg")?);
    check_eq!(s.end(0, |s| s.strwrite_prebuilt(&mut slot, true)), Ok(4));
    check!(s.end(1, |s| s.sth_take_ok(64)));
    let mut t = Taken::new();
    check_eq!(s.end(1, |s| s.strread_take(64, true, &mut t)), Ok(7));
    check_eq!(t.len(), 2);
    check_eq!(taken_bytes(&t, 0)?, b"abc");
    check_eq!(taken_bytes(&t, 1)?, b"defg");
    // Nothing left: the next take blocks (EAGAIN when non-blocking).
    let mut t2 = Taken::new();
    check_eq!(
        s.end(1, |s| s.strread_take(64, true, &mut t2)),
        Err(Stop::Err(Errno::EAGAIN))
    );
    Ok(())
}

fn take_stops_at_len_mark_and_protocol() -> TestResult {
    let s = check_ok!(TestPipe::new());
    for b in [&b"1234"[..], b"5678", b"9abc"] {
        check_ok!(s.end(0, |s| wr(s, b)));
    }
    // 10 bytes: two messages fit, the third would not.
    let mut t = Taken::new();
    check_eq!(s.end(1, |s| s.strread_take(10, true, &mut t)), Ok(8));
    check_eq!(t.len(), 2);
    // The first message does not fit: the platform must use strread.
    check!(!s.end(1, |s| s.sth_take_ok(3)));
    check_eq!(check_ok!(s.end(1, |s| rd(s, 3))).bytes(), b"9ab");
    check_eq!(check_ok!(s.end(1, |s| rd(s, 3))).bytes(), b"c");
    // A protocol message first: not for take.
    check_ok!(s.end(0, |s| put(s, Some(b"c"), Some(b"d"), 0, 0)));
    check!(!s.end(1, |s| s.sth_take_ok(64)));
    Ok(())
}

fn take_stops_after_delimited_message() -> TestResult {
    let s = check_ok!(TestPipe::new());
    let mut m = msg(b"rec")?;
    m.set_flag(MsgFlags::MSGDELIM);
    check_ok!(s.end(0, |s| {
        s.write(m);
        Ok::<(), Errno>(())
    }));
    check_ok!(s.end(0, |s| wr(s, b"next")));
    let mut t = Taken::new();
    check_eq!(s.end(1, |s| s.strread_take(64, true, &mut t)), Ok(3));
    check_eq!(t.len(), 1);
    Ok(())
}

fn untake_restores_order() -> TestResult {
    let s = check_ok!(TestPipe::new());
    for b in [&b"a"[..], b"b", b"c", b"d"] {
        check_ok!(s.end(0, |s| wr(s, b)));
    }
    let mut t = Taken::new();
    check_eq!(s.end(1, |s| s.strread_take(3, true, &mut t)), Ok(3));
    // "a" was delivered, copying "b" faulted: b and c go back in front of d.
    s.end(1, |s| s.strread_untake(&mut t, 1));
    check_eq!(taken_bytes(&t, 0)?, b"a");
    check!(t.get(1).is_none());
    let g = check_ok!(s.end(1, |s| rd(s, 8)));
    check_eq!(g.bytes(), b"bcd");
    Ok(())
}

fn take_limits_and_eof() -> TestResult {
    let s = check_ok!(TestPipe::new());
    for _ in 0..NTAKE + 2 {
        check_ok!(s.end(0, |s| wr(s, b"x")));
    }
    let mut t = Taken::new();
    check_eq!(s.end(1, |s| s.strread_take(1000, true, &mut t)), Ok(NTAKE));
    check_eq!(t.len(), NTAKE);
    s.close(0);
    let mut t = Taken::new();
    check_eq!(s.end(1, |s| s.strread_take(1000, true, &mut t)), Ok(2));
    let mut t = Taken::new();
    check_eq!(s.end(1, |s| s.strread_take(1000, true, &mut t)), Ok(0));
    Ok(())
}

fn options_turn_the_fast_paths_off() -> TestResult {
    let s = check_ok!(TestPipe::new());
    let r = Registry::new();
    check_ok!(s.end(0, |s| s.strioctl(
        &r,
        I_SWROPT,
        IocArg::Int(i64::from(SNDHOLD))
    )));
    check!(!s.end(0, |s| s.sth_prebuilt_ok(8)));
    check!(!s.end(0, |s| s.sth_prebuilt_ok(0)));
    check_ok!(s.end(1, |s| s.strioctl(
        &r,
        I_SRDOPT,
        IocArg::Int(i64::from(RMSGD))
    )));
    check!(!s.end(1, |s| s.sth_take_ok(8)));
    check!(s.end(0, |s| s.sth_take_ok(8)));
    Ok(())
}

fn prebuilt_flow_control_keeps_the_message() -> TestResult {
    let s = check_ok!(TestPipe::new());
    let chunk = [1u8; 200];
    while s.end(0, |s| wr(s, &chunk)).is_ok() {}
    let mut slot = Some(msg(b"kept")?);
    check_eq!(
        s.end(0, |s| s.strwrite_prebuilt(&mut slot, true)),
        Err(Stop::Err(Errno::EAGAIN))
    );
    check!(slot.is_some());
    check_eq!(
        s.end(0, |s| s.strwrite_prebuilt(&mut slot, false)),
        Err(Stop::Block(Block::Writable(0)))
    );
    check!(slot.is_some());
    Ok(())
}

ktest_suite!(STH_FAST_SUITE, "streams_sth_fast":
    prebuilt_write_then_take,
    take_stops_at_len_mark_and_protocol,
    take_stops_after_delimited_message,
    untake_restores_order,
    take_limits_and_eof,
    options_turn_the_fast_paths_off,
    prebuilt_flow_control_keeps_the_message,
);
