//! Shared (host + KUnit) tests of I_FDINSERT (the message it builds, its errors) and of the
//! `loop` driver it connects: APUE's `s_pipe` in a Stream complex, flow control across,
//! flush, hangup on close, and what bad connect requests get.

use super::*;
use crate::ktest::{Failure, TestResult};
use crate::queue::tests::FaultGuard;
use crate::sth::consts::{FLUSHW, I_FDINSERT, I_FLUSH, I_STR, MSG_HIPRI, RS_HIPRI, STRCTLSZ};
use crate::sth::tests::drivers::{PSZ4, STHLOOP};
use crate::sth::tests::{get, put, rd, wr};
use crate::sth::{FailIo, FdInsert, FdTarget, IocArg, Part, SliceIo, Stop, StrIoctl, NO_QUEUE};
use crate::stream::{OpenArgs, Registry, Stream};
use crate::{check, check_eq, check_ok, ktest_suite};

const INVAL: Result<i32, Stop> = Err(Stop::Err(Errno::EINVAL));

fn open_loop(c: &mut Stream) -> Result<usize, Failure> {
    Ok(check_ok!(c.open_in(&LOOP, &OpenArgs::driver(0))))
}

/// I_FDINSERT on the Stream swapped in: control part `ctl` (its `len` overridable with
/// `clen`), the token at `offset`, `flags`, an optional data part; non-blocking.
struct Ins<'a> {
    ctl: &'a [u8],
    clen: Option<i32>,
    data: Option<&'a [u8]>,
    flags: i64,
    offset: i32,
    target: FdTarget,
}

impl Ins<'_> {
    fn to(target: FdTarget) -> Ins<'static> {
        Ins {
            ctl: &[0; TOKEN_SIZE],
            clen: None,
            data: None,
            flags: 0,
            offset: 0,
            target,
        }
    }
    fn run(&self, s: &mut Stream) -> Result<i32, Stop> {
        let mut cb = [0u8; 64];
        let cn = self.ctl.len().min(cb.len());
        sys_copy(&mut cb, self.ctl);
        let mut db = [0u8; 64];
        let dn = self.data.map_or(0, |d| d.len().min(db.len()));
        sys_copy(&mut db, self.data.unwrap_or_default());
        let mut cio = SliceIo(cb.get_mut(..cn).unwrap_or_default());
        let mut dio = SliceIo(db.get_mut(..dn).unwrap_or_default());
        let mut a = FdInsert {
            ctl: Part {
                io: &mut cio,
                len: self.clen.unwrap_or(cn as i32),
            },
            data: self.data.map(|_| Part {
                io: &mut dio,
                len: dn as i32,
            }),
            flags: self.flags,
            offset: self.offset,
            target: self.target,
            nonblock: true,
        };
        s.strioctl(&Registry::new(), I_FDINSERT, IocArg::FdInsert(&mut a))
    }
}

fn sys_copy(dst: &mut [u8], src: &[u8]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = *s;
    }
}

/// Two loop Streams of a new complex, joined as `s_pipe` does: I_FDINSERT on the first
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

fn fdinsert_builds_the_message() -> TestResult {
    // sthloop sends every message back up: the head gets what I_FDINSERT sent down.
    let mut s = check_ok!(Stream::sth_new(&STHLOOP));
    let me = s.head;
    let tok = check_ok!(s.driver_rq().ok_or(Errno::EINVAL)).raw();
    let ctl = [0xaau8; 24];
    let ins = Ins {
        ctl: &ctl,
        clen: None,
        data: Some(b"payload"),
        flags: 0,
        offset: 8,
        target: FdTarget::Here(me),
    };
    check_eq!(ins.run(&mut s), Ok(0));
    let (g, c, d) = check_ok!(get(&mut s, 64, 64, 0, 0));
    check!(g.flags != MSG_HIPRI);
    check_eq!(c.bytes().get(..8), Some(&[0xaau8; 8][..]));
    check_eq!(c.bytes().get(8..16), Some(&tok.to_ne_bytes()[..]));
    check_eq!(c.bytes().get(16..), Some(&[0xaau8; 8][..]));
    check_eq!(d.bytes(), b"payload");
    // RS_HIPRI: M_PCPROTO; a Stream of another arena: a token that names no queue.
    let ins = Ins {
        flags: i64::from(RS_HIPRI),
        ..Ins::to(FdTarget::Elsewhere)
    };
    check_eq!(ins.run(&mut s), Ok(0));
    let (g, c, d) = check_ok!(get(&mut s, 64, 64, 0, MSG_HIPRI));
    check_eq!(g.flags, MSG_HIPRI);
    check_eq!(c.bytes(), &NO_QUEUE.to_ne_bytes()[..]);
    check_eq!(g.data_len, -1);
    check_eq!(d.n, 0);
    Ok(())
}

fn fdinsert_errors() -> TestResult {
    let mut s = check_ok!(Stream::sth_new(&STHLOOP));
    let here = FdTarget::Here(s.head);
    let bad = [
        // flags neither 0 nor RS_HIPRI
        Ins {
            flags: 2,
            ..Ins::to(here)
        },
        // ctlbuf.len not positive
        Ins {
            clen: Some(0),
            ..Ins::to(here)
        },
        Ins {
            clen: Some(-1),
            ..Ins::to(here)
        },
        // offset not pointer-aligned, negative, or the token past the control part
        Ins {
            ctl: &[0; 16],
            offset: 4,
            ..Ins::to(here)
        },
        Ins {
            ctl: &[0; 16],
            offset: -8,
            ..Ins::to(here)
        },
        Ins {
            ctl: &[0; 16],
            offset: 16,
            ..Ins::to(here)
        },
        Ins {
            ctl: &[0; 7],
            ..Ins::to(here)
        },
        // fildes names no Stream head of this arena
        Ins::to(FdTarget::Here(here_plus(&s, 40))),
    ];
    for i in bad.iter() {
        check_eq!(i.run(&mut s), INVAL);
    }
    // Control part over STRCTLSZ: ERANGE, as putmsg.
    let big = Ins {
        clen: Some(STRCTLSZ as i32 + 8),
        ..Ins::to(here)
    };
    check_eq!(big.run(&mut s), Err(Stop::Err(Errno::ERANGE)));
    // A data part over the driver's maxpsz: ERANGE.
    let mut p4 = check_ok!(Stream::sth_new(&PSZ4));
    let h4 = FdTarget::Here(p4.head);
    let long = Ins {
        data: Some(b"too long"),
        ..Ins::to(h4)
    };
    check_eq!(long.run(&mut p4), Err(Stop::Err(Errno::ERANGE)));
    // A bad control buffer: EFAULT, nothing sent.
    let mut fail = FailIo;
    let mut a = FdInsert {
        ctl: Part {
            io: &mut fail,
            len: 8,
        },
        data: None,
        flags: 0,
        offset: 0,
        target: here,
        nonblock: true,
    };
    check_eq!(
        s.strioctl(&Registry::new(), I_FDINSERT, IocArg::FdInsert(&mut a)),
        Err(Stop::Err(Errno::EFAULT))
    );
    check!(rd(&mut s, 64).is_err());
    // No memory for the copy of the control part: ENOSR, nothing sent.
    {
        let _g = FaultGuard::fail_after(0);
        check_eq!(Ins::to(here).run(&mut s), Err(Stop::Err(Errno::ENOSR)));
    }
    check!(rd(&mut s, 64).is_err());
    // A closed Stream: EBADF.
    s.sth_close();
    check_eq!(Ins::to(here).run(&mut s), Err(Stop::Err(Errno::EBADF)));
    Ok(())
}

/// A pair index that is no Stream head of `s`.
fn here_plus(s: &Stream, n: usize) -> usize {
    s.head + n
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
    fdinsert_builds_the_message,
    fdinsert_errors,
    s_pipe_full_duplex,
    flow_control_across,
    flush_crosses_like_a_pipe,
    close_hangs_up_the_peer,
    bad_connect_requests,
);
