//! Shared tests of STREAMS FIFOs (`sth/fifo.rs`): one Stream head whose write side feeds its
//! own read side; hangup while there is no reader or no writer and its lifting; flow control;
//! message boundaries; modules pushed on the loop; M_FLUSH without ping-pong; close.

use super::super::consts::*;
use super::super::*;
use super::{get, nread, put, rd, reg, wr};
use crate::errno::Errno;
use crate::ktest::{Failure, TestResult};
use crate::sth::Stream;
use crate::stream::STRHIGH;
use crate::{check, check_eq, check_ok, ktest_suite};

/// A FIFO with one reader and one writer (both sides present: not hung up).
fn fifo() -> Result<Stream, Failure> {
    let mut s = check_ok!(Stream::fifo());
    s.fifo_openers(1, 1);
    let _ = s.sth_take_events();
    Ok(s)
}

fn ioc(s: &mut Stream, cmd: u32, arg: IocArg<'_>) -> Result<i32, Stop> {
    let r = reg().map_err(|_| Stop::Err(Errno::ENOSR))?;
    s.strioctl(&r, cmd, arg)
}

fn fifo_write_then_read_same_head() -> TestResult {
    let mut s = fifo()?;
    check!(s.is_fifo());
    check!(!s.is_pipe());
    check!(s.driver_wq().is_none());
    check_eq!(wr(&mut s, b"to myself"), Ok(9));
    // The write came back up to the same head and woke its readers.
    check!(s.sth_take_events().wake & WAKE_READ != 0);
    check_eq!(nread(&mut s)?, (1, 9));
    check_eq!(s.strpoll(POLLIN | POLLOUT), POLLIN | POLLOUT);
    check_eq!(check_ok!(rd(&mut s, 64)).bytes(), b"to myself");
    check_eq!(rd(&mut s, 64).err(), Some(Stop::Err(Errno::EAGAIN)));
    check_eq!(s.dropped(), 0);
    Ok(())
}

fn fifo_starts_hung_up() -> TestResult {
    let mut s = check_ok!(Stream::fifo());
    check!(s.sth().hangup());
    // Nobody writes: end of file; nobody reads: EPIPE and SIGPIPE.
    check_eq!(check_ok!(rd(&mut s, 8)).n, 0);
    check_eq!(wr(&mut s, b"x"), Err(Stop::Err(Errno::EPIPE)));
    check!(s.sth_take_events().sigpipe);
    check_eq!(s.strpoll(POLLIN | POLLOUT), POLLHUP);
    // Only readers, or only writers: still hung up.
    s.fifo_openers(2, 0);
    check!(s.sth().hangup());
    s.fifo_openers(0, 3);
    check!(s.sth().hangup());
    s.fifo_openers(1, 1);
    check!(!s.sth().hangup());
    check_eq!(rd(&mut s, 8).err(), Some(Stop::Err(Errno::EAGAIN)));
    Ok(())
}

fn fifo_writer_gone_then_back() -> TestResult {
    let mut s = fifo()?;
    check_eq!(wr(&mut s, b"before"), Ok(6));
    let _ = s.sth_take_events();
    // The last writer closes: readers wake, read what is there, then end of file.
    s.fifo_openers(1, 0);
    let ev = s.sth_take_events();
    check!(ev.wake & WAKE_READ != 0);
    check!(ev.sigpoll & S_HANGUP != 0);
    check_eq!(check_ok!(rd(&mut s, 64)).bytes(), b"before");
    check_eq!(check_ok!(rd(&mut s, 64)).n, 0);
    check_eq!(s.strpoll(POLLIN), POLLHUP);
    // A new writer (M_UNHANGUP semantics): readable again, and a read waits for data.
    s.fifo_openers(1, 1);
    check!(s.sth_take_events().wake & WAKE_READ != 0);
    check_eq!(rd(&mut s, 64).err(), Some(Stop::Err(Errno::EAGAIN)));
    check_eq!(wr(&mut s, b"again"), Ok(5));
    check_eq!(check_ok!(rd(&mut s, 64)).bytes(), b"again");
    // Same state again: nothing happens, nothing to wake.
    let _ = s.sth_take_events();
    s.fifo_openers(3, 2);
    check_eq!(s.sth_take_events().wake, 0);
    Ok(())
}

fn fifo_reader_gone_keeps_data() -> TestResult {
    let mut s = fifo()?;
    check_eq!(wr(&mut s, b"kept"), Ok(4));
    // The last reader closes: writers get EPIPE (and SIGPIPE); the data stays.
    s.fifo_openers(0, 1);
    check!(s.sth_take_events().wake & WAKE_WRITE != 0);
    check_eq!(wr(&mut s, b"lost"), Err(Stop::Err(Errno::EPIPE)));
    check!(s.sth_take_events().sigpipe);
    // A reader opens again: the data written before is still there.
    s.fifo_openers(1, 1);
    check_eq!(check_ok!(rd(&mut s, 64)).bytes(), b"kept");
    check_eq!(rd(&mut s, 64).err(), Some(Stop::Err(Errno::EAGAIN)));
    Ok(())
}

fn fifo_flow_control_back_enables_the_writer() -> TestResult {
    let mut s = fifo()?;
    let chunk = [3u8; 200];
    let mut sent = 0usize;
    loop {
        match wr(&mut s, &chunk) {
            Ok(n) => sent += n,
            Err(e) => {
                check_eq!(e, Stop::Err(Errno::EAGAIN));
                break;
            }
        }
        check!(sent <= 64 * 1024);
    }
    check!(sent >= STRHIGH);
    check_eq!(s.strpoll(POLLOUT), 0);
    let _ = s.sth_take_events();
    let mut got = 0usize;
    while let Ok(g) = rd(&mut s, 200) {
        check_eq!(g.bytes(), &chunk[..g.n]);
        got += g.n;
    }
    check_eq!(got, sent);
    // Draining the read queue back-enabled the head's own write queue.
    check!(s.sth_take_events().wake & WAKE_WRITE != 0);
    check_eq!(s.strpoll(POLLOUT), POLLOUT);
    check_eq!(wr(&mut s, &chunk), Ok(200));
    Ok(())
}

fn fifo_putmsg_getmsg_keep_boundaries() -> TestResult {
    let mut s = fifo()?;
    check_ok!(put(&mut s, Some(b"c1"), Some(b"d1"), 0, MSG_BAND));
    check_ok!(put(&mut s, None, Some(b"second"), 0, MSG_BAND));
    check_ok!(put(&mut s, None, Some(b"b4"), 4, MSG_BAND));
    check_ok!(put(&mut s, Some(b"hi"), None, 0, MSG_HIPRI));
    let (r, c, _) = check_ok!(get(&mut s, 64, 64, 0, MSG_ANY));
    check_eq!((r.flags, c.bytes()), (MSG_HIPRI, &b"hi"[..]));
    let (r, _, d) = check_ok!(get(&mut s, 64, 64, 0, MSG_ANY));
    check_eq!((r.band, d.bytes()), (4, &b"b4"[..]));
    let (r, c, d) = check_ok!(get(&mut s, 64, 64, 0, MSG_ANY));
    check_eq!((r.band, c.bytes(), d.bytes()), (0, &b"c1"[..], &b"d1"[..]));
    let (r, c, d) = check_ok!(get(&mut s, 64, 64, 0, MSG_ANY));
    check_eq!((r.ctl_len, c.n, d.bytes()), (-1, 0, &b"second"[..]));
    Ok(())
}

fn fifo_modules_push_and_pop() -> TestResult {
    let mut s = fifo()?;
    check_eq!(ioc(&mut s, I_PUSH, IocArg::Name("pass")), Ok(0));
    check!(s.is_fifo());
    check_eq!(ioc(&mut s, I_PUSH, IocArg::Name("nosrv")), Ok(0));
    check!(s.is_fifo());
    check_eq!(ioc(&mut s, I_LIST, IocArg::None), Ok(2));
    check_eq!(s.nmodules(), 2);
    check!(s.driver_wq().is_none());
    check_eq!(wr(&mut s, b"around"), Ok(6));
    s.runqueues();
    check_eq!(check_ok!(rd(&mut s, 64)).bytes(), b"around");
    // Flow control still reaches the writer through the modules.
    let mut sent = 0usize;
    while wr(&mut s, &[1u8; 200]).is_ok() {
        s.runqueues();
        sent += 200;
        check!(sent <= 128 * 1024);
    }
    check!(sent >= STRHIGH);
    let mut got = 0usize;
    loop {
        s.runqueues();
        match rd(&mut s, 200) {
            Ok(g) => got += g.n,
            Err(_) => break,
        }
    }
    check_eq!(got, sent);
    check_eq!(ioc(&mut s, I_POP, IocArg::None), Ok(0));
    check!(s.is_fifo());
    check_eq!(ioc(&mut s, I_POP, IocArg::None), Ok(0));
    check!(s.is_fifo());
    check_eq!(
        ioc(&mut s, I_POP, IocArg::None),
        Err(Stop::Err(Errno::EINVAL))
    );
    check_eq!(wr(&mut s, b"direct"), Ok(6));
    check_eq!(check_ok!(rd(&mut s, 64)).bytes(), b"direct");
    check_eq!(s.dropped(), 0);
    Ok(())
}

fn fifo_flush_does_not_loop() -> TestResult {
    for modules in [0usize, 1] {
        let mut s = fifo()?;
        if modules > 0 {
            check_eq!(ioc(&mut s, I_PUSH, IocArg::Name("nosrv")), Ok(0));
        }
        check_ok!(wr(&mut s, b"flushed"));
        // The M_FLUSH comes back to the same head once (MSGNOLOOP), not forever.
        check_eq!(ioc(&mut s, I_FLUSH, IocArg::Int(i64::from(FLUSHRW))), Ok(0));
        check_eq!(rd(&mut s, 64).err(), Some(Stop::Err(Errno::EAGAIN)));
        check_ok!(wr(&mut s, b"kept"));
        check_eq!(ioc(&mut s, I_FLUSH, IocArg::Int(i64::from(FLUSHW))), Ok(0));
        check_eq!(check_ok!(rd(&mut s, 64)).bytes(), b"kept");
    }
    Ok(())
}

fn fifo_close_pops_modules() -> TestResult {
    let mut s = fifo()?;
    check_eq!(ioc(&mut s, I_PUSH, IocArg::Name("pass")), Ok(0));
    check_ok!(wr(&mut s, b"unread"));
    s.sth_close();
    check_eq!(s.nmodules(), 0);
    check_eq!(s.strpoll(POLLIN), POLLNVAL);
    check_eq!(wr(&mut s, b"x"), Err(Stop::Err(Errno::EBADF)));
    Ok(())
}

/// I_SWROPT SNDMREAD on a FIFO: the M_SETOPTS it sends down comes back to this head, whose
/// blocking reads then send M_READ around the loop (taken at the head, nothing to read).
/// Without memory for the message the ioctl fails ENOSR and changes nothing.
fn fifo_swropt_sndmread_reaches_its_own_head() -> TestResult {
    let mut s = fifo()?;
    let r = reg()?;
    let on = || IocArg::Int(i64::from(SNDPIPE | SNDMREAD));
    {
        let _g = super::FaultGuard::fail_after(0);
        check_eq!(s.strioctl(&r, I_SWROPT, on()), Err(Stop::Err(Errno::ENOSR)));
    }
    check!(!s.sth().mread());
    check_eq!(s.sth().wropt(), SNDPIPE);
    check_eq!(s.strioctl(&r, I_SWROPT, on()), Ok(0));
    check!(s.sth().mread());
    check_eq!(s.sth().wropt(), SNDPIPE | SNDMREAD);
    let mut t = Taken::new();
    check_eq!(
        s.strread(8, false, &ReaderToken::new(), &mut t),
        Err(Stop::Block(Block::Readable))
    );
    check_eq!(nread(&mut s)?, (0, 0));
    check_eq!(wr(&mut s, b"ok"), Ok(2));
    check_eq!(check_ok!(rd(&mut s, 64)).bytes(), b"ok");
    let off = IocArg::Int(i64::from(SNDPIPE));
    check_eq!(s.strioctl(&r, I_SWROPT, off), Ok(0));
    check!(!s.sth().mread());
    check_eq!(s.dropped(), 0);
    Ok(())
}

fn fifo_open_fails_cleanly_without_memory() -> TestResult {
    for n in 0..4 {
        let _g = super::FaultGuard::fail_after(n);
        if let Err(e) = Stream::fifo() {
            check_eq!(e, Errno::ENOSR);
        }
    }
    Ok(())
}

ktest_suite!(STH_FIFO_SUITE, "streams_sth_fifo":
    fifo_write_then_read_same_head,
    fifo_starts_hung_up,
    fifo_writer_gone_then_back,
    fifo_reader_gone_keeps_data,
    fifo_flow_control_back_enables_the_writer,
    fifo_putmsg_getmsg_keep_boundaries,
    fifo_modules_push_and_pop,
    fifo_flush_does_not_loop,
    fifo_close_pops_modules,
    fifo_swropt_sndmread_reaches_its_own_head,
    fifo_open_fails_cleanly_without_memory,
);
