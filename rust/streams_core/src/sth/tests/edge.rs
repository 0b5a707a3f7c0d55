//! Shared (host + KUnit) tests of Stream head corner cases: ioctls cut short by faults,
//! errors and hangup, zero-length and unprocessed getmsg parts, partial writes, delimiters and
//! marks, M_SETOPTS packet sizes, and when held writes leave the head.

use super::drivers::*;
use super::*;
use crate::msg::{Msg, MsgFlags, M_ERROR, M_HANGUP, M_UNHANGUP};

fn ioc(s: &mut Stream, cmd: u32, arg: IocArg<'_>) -> Result<i32, Stop> {
    s.strioctl(&Registry::new(), cmd, arg)
}

fn up_bytes(s: &mut Stream, ty: crate::msg::MsgType, b: &[u8]) -> TestResult {
    let rq = check_some!(s.driver_rq());
    s.put(rq, check_ok!(Msg::from_bytes(ty, b)));
    Ok(())
}

fn i_str_efault_sends_nothing() -> TestResult {
    let mut s = open(&HOLD)?;
    let reg = Registry::new();
    check_eq!(
        call::istr(&Direct::new(&mut s), &reg, 1, 0, 3, &mut FailIo),
        Err(Errno::EFAULT)
    );
    check_eq!(s.queue(dwq(&s)?).map(|q| q.qsize()), Some(0));
    // The slot stayed free: the next ioctl goes down (and, unanswered, would sleep).
    let mut b = [1u8; 2];
    check_eq!(
        call::istr(&Direct::new(&mut s), &reg, 1, 0, 2, &mut SliceIo(&mut b)),
        Err(Errno::EINTR)
    );
    check_eq!(s.queue(dwq(&s)?).map(|q| q.qsize()), Some(1));
    Ok(())
}

fn merror_and_hangup_fail_pending_ioctl() -> TestResult {
    for (ty, byte, err) in [
        (M_ERROR, Errno::EIO.0 as u8, Errno::EIO),
        (M_HANGUP, 0, Errno::ENXIO),
    ] {
        let mut s = open(&HOLD)?;
        let mut st = StrIoctl::new(1, 0, 0, None);
        check_eq!(
            ioc(&mut s, I_STR, IocArg::Str(&mut st)),
            Err(Stop::Block(Block::IoctlAck))
        );
        up_bytes(&mut s, ty, &[byte])?;
        check!(s.sth_take_events().wake & WAKE_IOCTL != 0);
        check_eq!(
            ioc(&mut s, I_STR, IocArg::Str(&mut st)),
            Err(Stop::Err(err))
        );
        check_eq!(st.id, None);
    }
    Ok(())
}

fn getmsg_zero_length_control_is_removed() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(put(&mut s, Some(b""), None, 0, 0));
    check_eq!(nread(&mut s)?.0, 1);
    let (g, _, _) = check_ok!(get(&mut s, 0, 0, 0, 0));
    check_eq!((g.ctl_len, g.data_len, g.more), (0, -1, 0));
    check_eq!(nread(&mut s)?.0, 0);
    Ok(())
}

fn getmsg_maxlen_zero_leaves_control() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(put(&mut s, Some(b"ab"), Some(b"cd"), 0, 0));
    let (g, _, d) = check_ok!(get(&mut s, 0, 8, 0, 0));
    check_eq!((g.ctl_len, g.data_len, g.more), (0, 2, MORECTL));
    check_eq!(d.bytes(), b"cd");
    let (g, c, _) = check_ok!(get(&mut s, 8, 8, 0, 0));
    check_eq!((g.ctl_len, g.more), (2, 0));
    check_eq!(c.bytes(), b"ab");
    Ok(())
}

fn rmsgn_zero_length_message_reads_zero() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(ioc(&mut s, I_SRDOPT, IocArg::Int(i64::from(RMSGN))));
    check_ok!(ioc(&mut s, I_SWROPT, IocArg::Int(i64::from(SNDZERO))));
    check_eq!(wr(&mut s, b""), Ok(0));
    check_ok!(wr(&mut s, b"z"));
    check_eq!(check_ok!(rd(&mut s, 8)).n, 0);
    check_eq!(check_ok!(rd(&mut s, 8)).bytes(), b"z");
    Ok(())
}

fn write_fault_midway_returns_bytes_sent() -> TestResult {
    let mut s = open(&PSZ4)?;
    let mut b = *b"012345";
    // Ten bytes asked, six mapped: the second 4-byte piece faults.
    check_eq!(
        call::write(&Direct::new(&mut s), &mut SliceIo(&mut b), 10, true),
        Ok(4)
    );
    check_eq!(check_ok!(rd(&mut s, 10)).bytes(), b"0123");
    Ok(())
}

fn read_stops_after_marked_message() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let mut m = check_ok!(Msg::from_bytes(M_DATA, b"mark"));
    m.set_flag(MsgFlags::MSGMARK);
    let rq = check_some!(s.driver_rq());
    s.put(rq, m);
    check_ok!(wr(&mut s, b"next"));
    check_eq!(check_ok!(rd(&mut s, 16)).bytes(), b"mark");
    check_eq!(check_ok!(rd(&mut s, 16)).bytes(), b"next");
    Ok(())
}

fn so_delim_marks_written_messages() -> TestResult {
    let mut s = open(&HOLD)?;
    let o = StrOptions {
        so_flags: SO_DELIM,
        ..StrOptions::default()
    };
    let rq = check_some!(s.driver_rq());
    s.put(rq, check_ok!(o.to_msg()));
    check_ok!(wr(&mut s, b"rec"));
    let q = check_some!(s.queue(dwq(&s)?));
    check!(check_some!(q.first()).flag().contains(MsgFlags::MSGDELIM));
    Ok(())
}

fn setopts_packet_sizes_on_head_read_queue() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let o = StrOptions {
        so_flags: SO_MINPSZ | SO_MAXPSZ | SO_HIWAT | SO_BAND,
        so_minpsz: 2,
        so_maxpsz: -1,
        so_hiwat: 99,
        so_band: 3,
        ..StrOptions::default()
    };
    let rq = check_some!(s.driver_rq());
    s.put(rq, check_ok!(o.to_msg()));
    let q = check_some!(s.queue(s.head_rq()));
    check_eq!((q.minpsz(), q.maxpsz()), (2, crate::queue::INFPSZ));
    check_eq!(q.strqget(crate::queue::QField::Hiwat, 3), Ok(99));
    check_eq!(q.hiwat(), crate::stream::STRHIGH);
    Ok(())
}

fn unhangup_restores_writes() -> TestResult {
    let mut s = open(&STHLOOP)?;
    up_bytes(&mut s, M_HANGUP, b"")?;
    let r = check_ok!(reg_empty());
    check_eq!(
        s.strioctl(&r, I_PUSH, IocArg::Name("pass")),
        Err(Stop::Err(Errno::ENXIO))
    );
    up_bytes(&mut s, M_UNHANGUP, b"")?;
    check!(!s.sth().hangup());
    check_eq!(wr(&mut s, b"ok"), Ok(2));
    Ok(())
}

fn reg_empty() -> Result<Registry, Errno> {
    Ok(Registry::new())
}

fn read_forces_held_writes_out() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(ioc(&mut s, I_SWROPT, IocArg::Int(i64::from(SNDHOLD))));
    check_ok!(wr(&mut s, b"ab"));
    check_eq!(nread(&mut s)?.0, 0);
    check_eq!(check_ok!(rd(&mut s, 8)).bytes(), b"ab");
    check_eq!(s.sth().held(), 0);
    Ok(())
}

fn clearing_sndhold_sends_held_bytes() -> TestResult {
    let mut s = open(&HOLD)?;
    check_ok!(ioc(&mut s, I_SWROPT, IocArg::Int(i64::from(SNDHOLD))));
    check_ok!(wr(&mut s, b"held"));
    check_eq!(s.queue(dwq(&s)?).map(|q| q.qsize()), Some(0));
    check_ok!(ioc(&mut s, I_SWROPT, IocArg::Int(0)));
    check_eq!(s.queue(dwq(&s)?).map(|q| q.count()), Some(4));
    Ok(())
}

/// A write may fill the hold buffer exactly; the next write, which finds no room, moves the
/// full buffer to the held run, and the write that finds no room with the run full sends it.
fn hold_sends_when_buffer_fills() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(ioc(&mut s, I_SWROPT, IocArg::Int(i64::from(SNDHOLD))));
    let piece = [7u8; 64];
    for _ in 0..super::super::STRHOLDSZ / 64 - 1 {
        check_ok!(wr(&mut s, &piece));
    }
    check_eq!(s.sth().held(), super::super::STRHOLDSZ - 64);
    check_eq!(nread(&mut s)?.0, 0);
    check_ok!(wr(&mut s, &piece)); // the hold buffer is full: it waits
    check_eq!(s.sth().held(), super::super::STRHOLDSZ);
    // No room: the full buffer joins the held run, up to STRHOLDRUN full buffers.
    let run = super::super::STRHOLDRUN * super::super::STRHOLDSZ;
    for held in (super::super::STRHOLDSZ + 64..=run).step_by(64) {
        check_ok!(wr(&mut s, &piece));
        check_eq!(s.sth().held(), held);
        check_eq!(nread(&mut s)?.0, 0);
    }
    check_ok!(wr(&mut s, &piece)); // no room, the run full: the run goes down, 64 are held
    check_eq!(s.sth().held(), 64);
    check_eq!(
        nread(&mut s)?,
        (
            super::super::STRHOLDRUN as i32,
            super::super::STRHOLDSZ as i32
        )
    );
    Ok(())
}

/// The held message keeps to the top module's `maxpsz` (it goes down whole): under `psz1k`
/// it is sent at 1024 bytes (1000 here, a run of them); under `psz4` nothing is held (a fast buffer is no smaller than
/// its bytes).
fn hold_keeps_to_the_top_modules_maxpsz() -> TestResult {
    let mut s = open(&PSZ1K)?;
    check_ok!(ioc(&mut s, I_SWROPT, IocArg::Int(i64::from(SNDHOLD))));
    let piece = [7u8; 200];
    for i in 1..=5 {
        check_ok!(wr(&mut s, &piece));
        check_eq!(s.sth().held(), 200 * i);
    }
    check_eq!(nread(&mut s)?.0, 0);
    // No room: the 1000 held bytes join the held run, up to STRHOLDRUN messages of 1000.
    for i in 6..=5 * super::super::STRHOLDRUN {
        check_ok!(wr(&mut s, &piece));
        check_eq!(s.sth().held(), 200 * i);
    }
    check_eq!(nread(&mut s)?.0, 0);
    check_ok!(wr(&mut s, &piece)); // the run full: it goes down, 200 are held
    check_eq!(s.sth().held(), 200);
    check_eq!(nread(&mut s)?, (super::super::STRHOLDRUN as i32, 1000));
    let mut s = open(&PSZ4)?;
    check_ok!(ioc(&mut s, I_SWROPT, IocArg::Int(i64::from(SNDHOLD))));
    check_ok!(wr(&mut s, b"abcdef"));
    check_eq!(s.sth().held(), 0);
    check_eq!(nread(&mut s)?, (2, 4));
    Ok(())
}

fn band_backenable_reports_wrband() -> TestResult {
    let mut s = open(&HOLD)?;
    check_ok!(put(&mut s, None, Some(b"0123456789"), 1, MSG_BAND));
    check_eq!(
        put(&mut s, None, Some(b"x"), 1, MSG_BAND).err(),
        Some(Stop::Err(Errno::EAGAIN))
    );
    let _ = s.sth_take_events();
    let d = dwq(&s)?;
    check!(s.qctx(d).getq().is_some());
    let ev = s.sth_take_events();
    check!(ev.sigpoll & S_WRBAND != 0);
    check!(ev.wake & WAKE_WRITE != 0);
    check_ok!(put(&mut s, None, Some(b"x"), 1, MSG_BAND));
    Ok(())
}

fn pcproto_read_as_data_under_rprotdat() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(ioc(&mut s, I_SRDOPT, IocArg::Int(i64::from(RPROTDAT))));
    check_ok!(wr(&mut s, b"n"));
    check_ok!(put(&mut s, Some(b"HI"), None, 0, MSG_HIPRI));
    // The high-priority message is first; a read of it does not run on into band 0 data.
    check_eq!(check_ok!(rd(&mut s, 8)).bytes(), b"HI");
    check_eq!(check_ok!(rd(&mut s, 8)).bytes(), b"n");
    Ok(())
}

ktest_suite!(STH_EDGE_SUITE, "streams_sth_edge":
    i_str_efault_sends_nothing,
    merror_and_hangup_fail_pending_ioctl,
    getmsg_zero_length_control_is_removed,
    getmsg_maxlen_zero_leaves_control,
    rmsgn_zero_length_message_reads_zero,
    write_fault_midway_returns_bytes_sent,
    read_stops_after_marked_message,
    so_delim_marks_written_messages,
    setopts_packet_sizes_on_head_read_queue,
    unhangup_restores_writes,
    read_forces_held_writes_out,
    clearing_sndhold_sends_held_bytes,
    hold_sends_when_buffer_fills,
    hold_keeps_to_the_top_modules_maxpsz,
    band_backenable_reports_wrband,
    pcproto_read_as_data_under_rprotdat,
);
