//! Shared (host + KUnit) tests of the `loop` driver, connected with I_FDINSERT
//! (`sth/tests/fdinsert.rs` tests the ioctl itself): APUE's `s_pipe` in a Stream complex,
//! flow control across, flush, hangup on close, and what bad connect requests get.

use super::*;
use crate::ktest::{Failure, TestResult};
use crate::sth::consts::{FLUSHW, I_FLUSH, I_STR, MSG_HIPRI, RS_HIPRI};
use crate::sth::tests::fdinsert::Ins;
use crate::sth::tests::{get, put, rd, wr};
use crate::sth::{FdTarget, IocArg, SliceIo, Stop, StrIoctl, NO_QUEUE};
use crate::stream::{OpenArgs, Registry, Stream};
use crate::{check, check_eq, check_ok, ktest_suite};

const INVAL: Result<i32, Stop> = Err(Stop::Err(Errno::EINVAL));

fn open_loop(c: &mut Stream) -> Result<usize, Failure> {
    Ok(check_ok!(c.open_in(&LOOP, &OpenArgs::driver(0))))
}

/// with the second as `fildes`.
fn s_pipe() -> Result<(Stream, usize, usize), Failure> {
    let mut c = check_ok!(Stream::complex());
    let (a, b) = (open_loop(&mut c)?, open_loop(&mut c)?);
    check_eq!(c.with_end(a, |s| Ins::to(FdTarget::Here(b)).run(s)), Ok(0));
    c.runqueues();
    Ok((c, a, b))
}

/// The token of end `h`'s driver read queue, as I_FDINSERT writes it.
fn token_of(c: &mut Stream, h: usize) -> u64 {
    c.with_end(h, |s| s.driver_rq().map_or(NO_QUEUE, |q| q.raw()))
}

fn s_pipe_full_duplex() -> TestResult {
    let (mut c, a, b) = s_pipe()?;
    check_eq!(c.with_end(a, |s| wr(s, b"ping")), Ok(4));
    check_eq!(check_ok!(c.with_end(b, |s| rd(s, 64))).bytes(), b"ping");
    check_eq!(c.with_end(b, |s| wr(s, b"pong")), Ok(4));
    check_eq!(check_ok!(c.with_end(a, |s| rd(s, 64))).bytes(), b"pong");
    // putmsg/getmsg keep message boundaries and types across.
    check_eq!(
        c.with_end(a, |s| put(s, Some(b"ctl"), Some(b"data"), 0, 0)),
        Ok(())
    );
    check_eq!(
        c.with_end(a, |s| put(s, Some(b"hi"), None, 0, MSG_HIPRI)),
        Ok(())
    );
    check_eq!(c.with_end(a, |s| put(s, None, Some(b"x"), 0, 0)), Ok(()));
    let (g, cp, _) = check_ok!(c.with_end(b, |s| get(s, 64, 64, 0, 0)));
    check_eq!((g.flags, cp.bytes()), (MSG_HIPRI, &b"hi"[..]));
    let (_, cp, dp) = check_ok!(c.with_end(b, |s| get(s, 64, 64, 0, 0)));
    check_eq!((cp.bytes(), dp.bytes()), (&b"ctl"[..], &b"data"[..]));
    let (g, _, dp) = check_ok!(c.with_end(b, |s| get(s, 64, 64, 0, 0)));
    check_eq!((g.ctl_len, dp.bytes()), (-1, &b"x"[..]));
    // Once connected, an 8-byte M_PROTO is data like any other.
    check_eq!(c.with_end(b, |s| put(s, Some(&[1; 8]), None, 0, 0)), Ok(()));
    let (_, cp, _) = check_ok!(c.with_end(a, |s| get(s, 64, 64, 0, 0)));
    check_eq!(cp.bytes(), &[1u8; 8][..]);
    // The driver NAKs ioctls.
    let mut arg = [0u8; 4];
    let mut io = SliceIo(&mut arg);
    let mut si = StrIoctl {
        cmd: 1,
        timeout: 0,
        len: 4,
        io: &mut io,
        id: None,
    };
    check_eq!(
        c.with_end(a, |s| s.strioctl(
            &Registry::new(),
            I_STR,
            IocArg::Str(&mut si)
        )),
        INVAL
    );
    Ok(())
}

fn flow_control_across() -> TestResult {
    let (mut c, a, b) = s_pipe()?;
    let chunk = [5u8; 200];
    let mut sent = 0usize;
    let mut refused = false;
    for _ in 0..500 {
        match c.with_end(a, |s| wr(s, &chunk)) {
            Ok(n) => sent += n,
            Err(e) => {
                check_eq!(e, Stop::Err(Errno::EAGAIN));
                refused = true;
                break;
            }
        }
        c.runqueues();
    }
    check!(refused);
    // Held: b's head and a's write queue are both at their high water marks.
    let at_head = c.with_end(b, |s| s.queue(s.head_rq()).map_or(0, |q| q.count()));
    check!(at_head < sent);
    // High priority is never held.
    check_eq!(
        c.with_end(a, |s| Ins {
            flags: i64::from(RS_HIPRI),
            ..Ins::to(FdTarget::Here(b))
        }
        .run(s)),
        Ok(0)
    );
    check_eq!(
        c.with_end(a, |s| Ins::to(FdTarget::Here(b)).run(s)),
        Err(Stop::Err(Errno::EAGAIN))
    );
    let (g, _, _) = check_ok!(c.with_end(b, |s| get(s, 64, 64, 0, MSG_HIPRI)));
    check_eq!(g.flags, MSG_HIPRI);
    // Draining b brings every byte in order, and a is writable again.
    let mut got = 0usize;
    for _ in 0..1000 {
        c.runqueues();
        let Ok(g) = c.with_end(b, |s| rd(s, 200)) else {
            break;
        };
        check!(g.bytes().iter().all(|x| *x == 5));
        got += g.n;
    }
    check_eq!(got, sent);
    check_eq!(c.with_end(a, |s| wr(s, b"again")), Ok(5));
    check_eq!(check_ok!(c.with_end(b, |s| rd(s, 64))).bytes(), b"again");
    Ok(())
}

fn flush_crosses_like_a_pipe() -> TestResult {
    let (mut c, a, b) = s_pipe()?;
    check_eq!(c.with_end(a, |s| wr(s, b"stale")), Ok(5));
    let reg = Registry::new();
    check_eq!(
        c.with_end(a, |s| s.strioctl(
            &reg,
            I_FLUSH,
            IocArg::Int(i64::from(FLUSHW))
        )),
        Ok(0)
    );
    c.runqueues();
    check_eq!(
        c.with_end(b, |s| rd(s, 64).err()),
        Some(Stop::Err(Errno::EAGAIN))
    );
    check_eq!(c.with_end(a, |s| wr(s, b"fresh")), Ok(5));
    check_eq!(check_ok!(c.with_end(b, |s| rd(s, 64))).bytes(), b"fresh");
    Ok(())
}

fn close_hangs_up_the_peer() -> TestResult {
    let (mut c, a, b) = s_pipe()?;
    check_eq!(c.with_end(a, |s| wr(s, b"last words")), Ok(10));
    c.with_end(a, Stream::sth_close);
    c.runqueues();
    // The data first, then end of file; writes fail as after M_HANGUP.
    check_eq!(
        check_ok!(c.with_end(b, |s| rd(s, 64))).bytes(),
        b"last words"
    );
    check_eq!(check_ok!(c.with_end(b, |s| rd(s, 64))).n, 0);
    check_eq!(c.with_end(b, |s| wr(s, b"x")), Err(Stop::Err(Errno::ENXIO)));
    // A new open takes the closed Stream's place, and cannot connect to the hung-up one.
    let n = open_loop(&mut c)?;
    check_eq!(c.with_end(n, |s| Ins::to(FdTarget::Here(b)).run(s)), Ok(0));
    c.runqueues();
    check_eq!(
        c.with_end(n, |s| rd(s, 64).err()),
        Some(Stop::Err(Errno::EBUSY))
    );
    Ok(())
}

fn bad_connect_requests() -> TestResult {
    let mut c = check_ok!(Stream::complex());
    let (a, b, d, e) = (
        open_loop(&mut c)?,
        open_loop(&mut c)?,
        open_loop(&mut c)?,
        open_loop(&mut c)?,
    );
    // Data before a connection: M_ERROR ENXIO.
    check_eq!(c.with_end(a, |s| wr(s, b"early")), Ok(5));
    check_eq!(
        c.with_end(a, |s| rd(s, 64).err()),
        Some(Stop::Err(Errno::ENXIO))
    );
    // Itself, and a token from another arena: M_ERROR EINVAL.
    check_eq!(c.with_end(b, |s| Ins::to(FdTarget::Here(b)).run(s)), Ok(0));
    c.runqueues();
    check_eq!(
        c.with_end(b, |s| rd(s, 64).err()),
        Some(Stop::Err(Errno::EINVAL))
    );
    check_eq!(
        c.with_end(d, |s| Ins::to(FdTarget::Elsewhere).run(s)),
        Ok(0)
    );
    c.runqueues();
    check_eq!(
        c.with_end(d, |s| rd(s, 64).err()),
        Some(Stop::Err(Errno::EINVAL))
    );
    // A forged token naming a queue that is not a loop driver's read queue: EINVAL.
    let wq = c.with_end(e, |s| s.driver_wq().map_or(NO_QUEUE, |q| q.raw()));
    check_eq!(
        c.with_end(e, |s| put(s, Some(&wq.to_ne_bytes()), None, 0, 0)),
        Ok(())
    );
    c.runqueues();
    check_eq!(
        c.with_end(e, |s| rd(s, 64).err()),
        Some(Stop::Err(Errno::EINVAL))
    );
    // A peer already connected: M_ERROR EBUSY for the requester, the pair unharmed.
    let (x, y, z) = (open_loop(&mut c)?, open_loop(&mut c)?, open_loop(&mut c)?);
    check_eq!(c.with_end(x, |s| Ins::to(FdTarget::Here(y)).run(s)), Ok(0));
    c.runqueues();
    let ty = token_of(&mut c, y);
    check_eq!(
        c.with_end(z, |s| put(s, Some(&ty.to_ne_bytes()), None, 0, 0)),
        Ok(())
    );
    c.runqueues();
    check_eq!(
        c.with_end(z, |s| rd(s, 64).err()),
        Some(Stop::Err(Errno::EBUSY))
    );
    check_eq!(c.with_end(y, |s| wr(s, b"still")), Ok(5));
    check_eq!(check_ok!(c.with_end(x, |s| rd(s, 64))).bytes(), b"still");
    Ok(())
}

ktest_suite!(LOOP_SUITE, "streams_loop":
    s_pipe_full_duplex,
    flow_control_across,
    flush_crosses_like_a_pipe,
    close_hangs_up_the_peer,
    bad_connect_requests,
);
