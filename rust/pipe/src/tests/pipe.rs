//! Shared tests of STREAMS pipes: two Streams joined by the twist, each in its own perimeter;
//! data, messages and bands across the twist, flow control and back-enable across the
//! perimeters, close and hangup, modules pushed on either end, M_FLUSH without ping-pong.

use super::TestPipe;
use core::sync::atomic::{AtomicUsize, Ordering};
use streams_core::errno::Errno;
use streams_core::ktest::{Failure, TestResult};
use streams_core::msg::{esballoc, Bpri, ExtBuf, Msg, M_DATA, M_PASSFP};
use streams_core::sth::consts::*;
use streams_core::sth::tests::{get, nread, put, rd, reg, wr};
use streams_core::sth::Stream;
use streams_core::sth::*;
use streams_core::stream::Registry;
use streams_core::{check, check_eq, check_ok, ktest_suite};

fn pipe() -> Result<TestPipe, Failure> {
    Ok(check_ok!(TestPipe::new()))
}

fn ioc(s: &TestPipe, end: usize, cmd: u32, arg: IocArg<'_>) -> Result<i32, Stop> {
    let r = reg().map_err(|_| Stop::Err(Errno::ENOSR))?;
    s.end(end, |s| s.strioctl(&r, cmd, arg))
}

fn events(s: &TestPipe, end: usize) -> HeadEvents {
    s.end(end, Stream::sth_take_events)
}

fn full_duplex_write_read() -> TestResult {
    let s = pipe()?;
    check!(s.end(0, |s| s.is_pipe()));
    check_eq!(s.end(0, |s| wr(s, b"to one")), Ok(6));
    check_eq!(s.end(1, |s| wr(s, b"to zero!")), Ok(8));
    // Each end reads what the other wrote, and only that.
    let g = check_ok!(s.end(1, |s| rd(s, 64)));
    check_eq!(g.bytes(), b"to one");
    let g = check_ok!(s.end(0, |s| rd(s, 64)));
    check_eq!(g.bytes(), b"to zero!");
    check_eq!(
        s.end(0, |s| rd(s, 64)).err(),
        Some(Stop::Err(Errno::EAGAIN))
    );
    // The write woke the other end's readers, not the writer's own.
    let _ = (events(&s, 0), events(&s, 1));
    check_eq!(s.end(0, |s| wr(s, b"x")), Ok(1));
    check!(events(&s, 1).wake & WAKE_READ != 0);
    check!(events(&s, 0).wake & WAKE_READ == 0);
    Ok(())
}

fn putmsg_getmsg_bands_across() -> TestResult {
    let s = pipe()?;
    check_ok!(s.end(0, |s| put(s, Some(b"ctl"), Some(b"band0"), 0, MSG_BAND)));
    check_ok!(s.end(0, |s| put(s, None, Some(b"band2"), 2, MSG_BAND)));
    check_ok!(s.end(0, |s| put(s, Some(b"pri"), None, 0, MSG_HIPRI)));
    // High priority first, then band 2, then band 0 with its control part intact.
    let (r, c, _) = check_ok!(s.end(1, |s| get(s, 64, 64, 0, MSG_ANY)));
    check_eq!((r.flags, c.bytes()), (MSG_HIPRI, &b"pri"[..]));
    let (r, _, d) = check_ok!(s.end(1, |s| get(s, 64, 64, 0, MSG_ANY)));
    check_eq!((r.band, d.bytes()), (2, &b"band2"[..]));
    let (r, c, d) = check_ok!(s.end(1, |s| get(s, 64, 64, 0, MSG_ANY)));
    check_eq!(
        (r.band, c.bytes(), d.bytes()),
        (0, &b"ctl"[..], &b"band0"[..])
    );
    Ok(())
}

fn flow_control_back_enables_the_other_end() -> TestResult {
    let s = pipe()?;
    let chunk = [7u8; 200];
    let mut sent = 0usize;
    loop {
        match s.end(0, |s| wr(s, &chunk)) {
            Ok(n) => sent += n,
            Err(e) => {
                check_eq!(e, Stop::Err(Errno::EAGAIN));
                break;
            }
        }
        check!(sent <= 64 * 1024);
    }
    // End 1's read queue holds it all: at least its high-water mark.
    check!(sent >= streams_core::stream::STRHIGH);
    check_eq!(s.end(0, nread)?, (0, 0)); // end 0 has nothing queued
    let _ = events(&s, 0);
    let mut got = 0usize;
    while let Ok(g) = s.end(1, |s| rd(s, 200)) {
        got += g.n;
    }
    check_eq!(got, sent);
    // Draining end 1 back-enabled end 0's head: its writers wake and can write again.
    check!(events(&s, 0).wake & WAKE_WRITE != 0);
    check_eq!(s.end(0, |s| wr(s, &chunk)), Ok(200));
    Ok(())
}

fn close_hangs_up_the_other_end() -> TestResult {
    let s = pipe()?;
    check_eq!(s.end(0, |s| wr(s, b"last words")), Ok(10));
    check_ok!(s.end(1, |s| wr(s, b"unread")));
    s.close(0);
    check!(events(&s, 1).wake & WAKE_READ != 0);
    // What was written before the close is still read, then end of file.
    let g = check_ok!(s.end(1, |s| rd(s, 64)));
    check_eq!(g.bytes(), b"last words");
    check_eq!(check_ok!(s.end(1, |s| rd(s, 64))).n, 0);
    // Writing to a pipe nobody reads: EPIPE and SIGPIPE (pipe heads have SNDPIPE).
    check_eq!(s.end(1, |s| wr(s, b"x")), Err(Stop::Err(Errno::EPIPE)));
    check!(events(&s, 1).sigpipe);
    // The closed end is closed.
    check_eq!(s.end(0, |s| wr(s, b"x")), Err(Stop::Err(Errno::EBADF)));
    s.close(1);
    check_eq!(s.end(1, |s| s.strpoll(POLLIN)), POLLNVAL);
    Ok(())
}

fn modules_on_either_end() -> TestResult {
    let s = pipe()?;
    check_eq!(ioc(&s, 0, I_PUSH, IocArg::Name("pass")), Ok(0));
    check_eq!(ioc(&s, 1, I_PUSH, IocArg::Name("nosrv")), Ok(0));
    check_eq!(ioc(&s, 1, I_PUSH, IocArg::Name("pass")), Ok(0));
    check_eq!(ioc(&s, 0, I_LIST, IocArg::None), Ok(1));
    check_eq!(ioc(&s, 1, I_LIST, IocArg::None), Ok(2));
    check_eq!(s.end(0, |s| s.nmodules()), 1);
    check_eq!(s.end(1, |s| s.nmodules()), 2);
    for (from, to) in [(0, 1), (1, 0)] {
        check_eq!(s.end(from, |s| wr(s, b"through")), Ok(7));
        let g = check_ok!(s.end(to, |s| rd(s, 64)));
        check_eq!(g.bytes(), b"through");
    }
    // Popping the top module of end 1 keeps the pipe connected.
    check_eq!(ioc(&s, 1, I_POP, IocArg::None), Ok(0));
    check_eq!(ioc(&s, 1, I_POP, IocArg::None), Ok(0));
    check_eq!(
        ioc(&s, 1, I_POP, IocArg::None),
        Err(Stop::Err(Errno::EINVAL))
    );
    check_eq!(s.end(1, |s| wr(s, b"direct")), Ok(6));
    check_eq!(check_ok!(s.end(0, |s| rd(s, 64))).bytes(), b"direct");
    Ok(())
}

fn flush_crosses_once() -> TestResult {
    let s = pipe()?;
    check_ok!(s.end(0, |s| wr(s, b"for one")));
    check_ok!(s.end(1, |s| wr(s, b"for zero")));
    // FLUSHRW at end 0: its own read queue, and the M_FLUSH reaches end 1, which flushes its
    // read queue and turns the write half around once (MSGNOLOOP), not forever.
    check_eq!(ioc(&s, 0, I_FLUSH, IocArg::Int(i64::from(FLUSHRW))), Ok(0));
    check_eq!(
        s.end(0, |s| rd(s, 64)).err(),
        Some(Stop::Err(Errno::EAGAIN))
    );
    check_eq!(
        s.end(1, |s| rd(s, 64)).err(),
        Some(Stop::Err(Errno::EAGAIN))
    );
    check_eq!(s.end(0, |s| wr(s, b"after")), Ok(5));
    check_eq!(check_ok!(s.end(1, |s| rd(s, 64))).bytes(), b"after");
    Ok(())
}

fn unconnected_end_is_hung_up() -> TestResult {
    let mut s = check_ok!(super::super::end());
    check!(s.is_pipe());
    check!(!super::super::is_connected(&s));
    check_eq!(check_ok!(rd(&mut s, 8)).n, 0);
    check_eq!(wr(&mut s, b"x"), Err(Stop::Err(Errno::EPIPE)));
    check_eq!(
        s.strioctl(&reg()?, I_PUSH, IocArg::Name("pass")),
        Err(Stop::Err(Errno::ENXIO))
    );
    Ok(())
}

/// The twist's put procedures are stepped over for what they only pass on (`Pass`: all on
/// the write side, data on the read side): the puts are still counted on both queues, data
/// keeps its order, and M_HANGUP still goes through the read put procedure, which unlinks.
fn twist_pass_counts_puts_and_keeps_order() -> TestResult {
    let s = pipe()?;
    let w0 = check_ok!(s.end(0, |s| super::super::twist_rq(s).ok_or(Errno::EINVAL))).otherq();
    let r1 = check_ok!(s.end(1, |s| super::super::twist_rq(s).ok_or(Errno::EINVAL)));
    let pcnt = |end: usize, q| s.end(end, |s| s.mstat(q).map_or(0, |m| m.ms_pcnt));
    let (w0_before, r1_before) = (pcnt(0, w0), pcnt(1, r1));
    for b in [b"a", b"b", b"c"] {
        check_eq!(s.end(0, |s| wr(s, b)), Ok(1));
    }
    check_eq!(check_ok!(s.end(1, |s| rd(s, 64))).bytes(), b"abc");
    check_eq!(pcnt(0, w0) - w0_before, 3);
    check_eq!(pcnt(1, r1) - r1_before, 3);
    s.close(0);
    s.settle();
    check!(s.end(1, |s| s.remote(r1).is_none()));
    check_eq!(s.end(1, |s| wr(s, b"x")), Err(Stop::Err(Errno::EPIPE)));
    Ok(())
}

fn pipe_open_fails_cleanly_without_memory() -> TestResult {
    for n in 0..4 {
        let _g = streams_core::queue::tests::FaultGuard::fail_after(n);
        if let Err(e) = TestPipe::new() {
            check_eq!(e, Errno::ENOSR);
        }
    }
    Ok(())
}

// One counter per test (cases run in parallel on the host): what the free routine saw.
static FREED_ACROSS: AtomicUsize = AtomicUsize::new(0);
static FREED_ERRORS: AtomicUsize = AtomicUsize::new(0);
static FREED_FIFO: AtomicUsize = AtomicUsize::new(0);

fn free_across(_buf: &'static mut [u8], arg: usize) {
    FREED_ACROSS.fetch_add(arg, Ordering::SeqCst);
}
fn free_errors(_buf: &'static mut [u8], arg: usize) {
    FREED_ERRORS.fetch_add(arg, Ordering::SeqCst);
}
fn free_fifo(_buf: &'static mut [u8], arg: usize) {
    FREED_FIFO.fetch_add(arg, Ordering::SeqCst);
}

/// An M_PASSFP message as the platform builds it; freeing it calls `free` with `tag`.
fn passfp(tag: usize, free: fn(&'static mut [u8], usize)) -> Result<Msg, Failure> {
    let ext = ExtBuf {
        buf: &mut [],
        free,
        arg: tag,
    };
    let mut m = check_ok!(esballoc(ext, Bpri::Hi).map_err(|_| ()));
    m.set_type(M_PASSFP);
    Ok(m)
}

fn sendfd_recvfd_across_the_pipe() -> TestResult {
    let s = pipe()?;
    let before = FREED_ACROSS.load(Ordering::SeqCst);
    let m = passfp(1 << 20, free_across)?;
    check_ok!(s.end(0, |s| s.strsendfd(m)));
    check!(events(&s, 1).wake & WAKE_READ != 0);
    check_eq!(s.end(1, |s| s.strpoll(POLLIN)), POLLIN);
    // read and getmsg refuse while the file is first.
    check_eq!(
        s.end(1, |s| rd(s, 8)).err(),
        Some(Stop::Err(Errno::EBADMSG))
    );
    check_eq!(
        s.end(1, |s| get(s, 8, 8, 0, 0)).err(),
        Some(Stop::Err(Errno::EBADMSG))
    );
    let m = check_ok!(s.end(1, |s| s.strrecvfd(true, &ReaderToken::new())));
    check_eq!(m.ext_arg(), Some(1 << 20));
    check_eq!(FREED_ACROSS.load(Ordering::SeqCst), before);
    drop(m);
    check_eq!(FREED_ACROSS.load(Ordering::SeqCst) - before, 1 << 20);
    check_eq!(
        s.end(1, |s| s.strrecvfd(true, &ReaderToken::new())).err(),
        Some(Stop::Err(Errno::EAGAIN))
    );
    Ok(())
}

fn sendfd_recvfd_errors() -> TestResult {
    let s = pipe()?;
    // Only M_PASSFP, only on a pipe.
    let data = check_ok!(Msg::with_type(M_DATA, 4));
    check_eq!(
        s.end(0, |s| s.strsendfd(data)),
        Err(Stop::Err(Errno::EINVAL))
    );
    let mut plain = check_ok!(Stream::sth_new(&streams_core::sth::tests::drivers::STHLOOP));
    check_eq!(
        plain.strsendfd(passfp(1, free_errors)?),
        Err(Stop::Err(Errno::EINVAL))
    );
    // An unconnected end is hung up.
    let mut lone = check_ok!(super::super::end());
    check_eq!(
        lone.strsendfd(passfp(1, free_errors)?),
        Err(Stop::Err(Errno::EPIPE))
    );
    // Data first: EBADMSG, and the data is still there.
    check_ok!(s.end(0, |s| wr(s, b"data")));
    check_eq!(
        s.end(1, |s| s.strrecvfd(true, &ReaderToken::new())).err(),
        Some(Stop::Err(Errno::EBADMSG))
    );
    check_eq!(check_ok!(s.end(1, |s| rd(s, 8))).bytes(), b"data");
    // A queued file that is flushed is released, not leaked.
    let before = FREED_ERRORS.load(Ordering::SeqCst);
    let m = passfp(1 << 30, free_errors)?;
    check_ok!(s.end(0, |s| s.strsendfd(m)));
    check_eq!(ioc(&s, 1, I_FLUSH, IocArg::Int(i64::from(FLUSHR))), Ok(0));
    check_eq!(FREED_ERRORS.load(Ordering::SeqCst) - before, 1 << 30);
    // The other end closed: hangup.
    s.close(0);
    check_eq!(
        s.end(1, |s| s.strrecvfd(true, &ReaderToken::new())).err(),
        Some(Stop::Err(Errno::ENXIO))
    );
    let m = passfp(0, free_errors)?;
    check_eq!(s.end(1, |s| s.strsendfd(m)), Err(Stop::Err(Errno::EPIPE)));
    Ok(())
}

/// A FIFO refuses I_SENDFD (EINVAL): its write side comes back to its own head, so a FIFO
/// sent over itself would hold its own file (docs/security.md), and the message (with the
/// file it carries) is freed.
fn sendfd_on_a_fifo_is_refused() -> TestResult {
    let mut f = check_ok!(Stream::fifo());
    f.fifo_openers(1, 1);
    let m = passfp(1 << 10, free_fifo)?;
    check_eq!(f.strsendfd(m), Err(Stop::Err(Errno::EINVAL)));
    check_eq!(FREED_FIFO.load(Ordering::SeqCst), 1 << 10);
    Ok(())
}

fn fionread_counts_every_data_byte() -> TestResult {
    let s = pipe()?;
    check_ok!(s.end(0, |s| wr(s, &[1u8; 100])));
    check_ok!(s.end(0, |s| wr(s, &[2u8; 50])));
    let mut b = [0u8; 4];
    check_eq!(ioc(&s, 1, FIONREAD, IocArg::Out(&mut b)), Ok(0));
    check_eq!(i32::from_ne_bytes(b), 150);
    check_ok!(s.end(1, |s| rd(s, 30)));
    check_eq!(ioc(&s, 1, FIONREAD, IocArg::Out(&mut b)), Ok(0));
    check_eq!(i32::from_ne_bytes(b), 120);
    Ok(())
}

fn ioctl_across_a_pipe_is_nakked() -> TestResult {
    let s = pipe()?;
    // An I_STR at end 0 travels as M_IOCTL to end 1's head, which answers M_IOCNAK (SVR4
    // strrput): the caller gets EINVAL instead of waiting for a driver that is not there.
    let mut arg = StrIoctl::new(0x5401, 0, 0, None);
    let reg = Registry::new();
    // I_STR is retried by the platform while it blocks for the answer.
    let mut r = Err(Stop::Block(Block::IoctlAck));
    for _ in 0..3 {
        r = s.end(0, |s| s.strioctl(&reg, I_STR, IocArg::Str(&mut arg)));
        if r != Err(Stop::Block(Block::IoctlAck)) {
            break;
        }
    }
    check_eq!(r, Err(Stop::Err(Errno::EINVAL)));
    // Nothing is left queued at either head.
    check_eq!(s.end(1, |s| s.strpoll(POLLIN)), 0);
    check_eq!(s.end(0, |s| s.strpoll(POLLIN)), 0);
    Ok(())
}

ktest_suite!(STH_PIPE_SUITE, "streams_sth_pipe":
    full_duplex_write_read,
    putmsg_getmsg_bands_across,
    flow_control_back_enables_the_other_end,
    close_hangs_up_the_other_end,
    modules_on_either_end,
    flush_crosses_once,
    unconnected_end_is_hung_up,
    twist_pass_counts_puts_and_keeps_order,
    pipe_open_fails_cleanly_without_memory,
    sendfd_recvfd_across_the_pipe,
    sendfd_recvfd_errors,
    sendfd_on_a_fifo_is_refused,
    fionread_counts_every_data_byte,
    ioctl_across_a_pipe_is_nakked,
);
