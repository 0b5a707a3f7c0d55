//! Shared (host + KUnit) tests of multiplexing: the `mux` driver in a Stream complex with
//! `sthloop` Streams linked under it (I_LINK, I_PLINK, I_UNLINK, I_PUNLINK, MUX_ROUTE), what
//! closing does to links, and the errors.

use super::*;
use crate::ktest::{Failure, TestResult};
use crate::sth::consts::{I_STR, MUXID_ALL};
use crate::sth::tests::drivers::STHLOOP;
use crate::sth::tests::{rd, wr};
use crate::sth::{IocArg, LinkReq, SliceIo, Stop, StrIoctl, UnlinkReq};
use crate::stream::{OpenArgs, Registry, Stream};
use crate::{check, check_eq, check_ok, check_some, ktest_suite};

const INVAL: Result<i32, Stop> = Err(Stop::Err(Errno::EINVAL));

fn upper(c: &mut Stream) -> Result<usize, Failure> {
    Ok(check_ok!(c.open_in(&MUX, &OpenArgs::driver(0))))
}

fn lower() -> Result<Stream, Failure> {
    Ok(check_ok!(Stream::sth_new(&STHLOOP)))
}

/// I_LINK (or I_PLINK) `l` under upper Stream `u`; on failure the Stream comes back too.
fn link(
    c: &mut Stream,
    u: usize,
    l: Stream,
    persistent: bool,
) -> (Result<i32, Stop>, Option<Stream>) {
    let mut req = LinkReq::new(l, persistent);
    let cmd = if persistent { I_PLINK } else { I_LINK };
    let r = c.with_end(u, |s| {
        s.strioctl(&Registry::new(), cmd, IocArg::Link(&mut req))
    });
    (r, req.lower)
}

fn unlink(c: &mut Stream, u: usize, muxid: i32, persistent: bool) -> Result<i32, Stop> {
    let mut req = UnlinkReq::new(muxid, persistent);
    let cmd = if persistent { I_PUNLINK } else { I_UNLINK };
    c.with_end(u, |s| {
        s.strioctl(&Registry::new(), cmd, IocArg::Unlink(&mut req))
    })
}

/// I_STR `cmd` with an int argument on upper Stream `u`.
fn istr(c: &mut Stream, u: usize, cmd: i32, arg: i32) -> Result<i32, Stop> {
    let mut b = arg.to_ne_bytes();
    let mut io = SliceIo(&mut b);
    let mut si = StrIoctl {
        cmd,
        timeout: 0,
        len: 4,
        io: &mut io,
        id: None,
    };
    c.with_end(u, |s| {
        s.strioctl(&Registry::new(), I_STR, IocArg::Str(&mut si))
    })
}

/// Write `data` on upper `u` and expect it back (looped by the linked `sthloop`) on `at`.
fn echo(c: &mut Stream, u: usize, at: usize, data: &[u8]) -> TestResult {
    check_eq!(c.with_end(u, |s| wr(s, data)), Ok(data.len()));
    c.runqueues();
    let got = check_ok!(c.with_end(at, |s| rd(s, 64)));
    check_eq!(got.bytes(), data);
    Ok(())
}

fn link_routes_both_ways() -> TestResult {
    let mut c = check_ok!(Stream::complex());
    let (u1, u2) = (upper(&mut c)?, upper(&mut c)?);
    let (r, back) = link(&mut c, u1, lower()?, false);
    let m1 = check_ok!(r);
    check!(back.is_none());
    check!(m1 > 0);
    echo(&mut c, u1, u1, b"down and up")?;
    // u2 has no route: what it writes is freed, nothing reaches u1.
    check_eq!(c.with_end(u2, |s| wr(s, b"lost")), Ok(4));
    c.runqueues();
    check!(c.with_end(u1, |s| rd(s, 64)).is_err());
    // A second link gets another muxid and the route of the Stream that made it.
    let m2 = check_ok!(link(&mut c, u2, lower()?, false).0);
    check!(m2 != m1);
    echo(&mut c, u2, u2, b"second")?;
    echo(&mut c, u1, u1, b"first still")?;
    Ok(())
}

fn unlink_gives_the_stream_back() -> TestResult {
    let mut c = check_ok!(Stream::complex());
    let u = upper(&mut c)?;
    let mut l = lower()?;
    // Data waiting at the lower head before the link goes up through the mux.
    check_eq!(wr(&mut l, b"early"), Ok(5));
    let m = check_ok!(link(&mut c, u, l, false).0);
    c.runqueues();
    check_eq!(check_ok!(c.with_end(u, |s| rd(s, 64))).bytes(), b"early");
    check!(c.take_unlinked().is_none());
    check_eq!(unlink(&mut c, u, m + 100, false), INVAL);
    check_eq!(unlink(&mut c, u, m, false), Ok(0));
    let (id, mut back) = check_some!(c.take_unlinked());
    check_eq!(id, m);
    check!(c.take_unlinked().is_none());
    // The Stream works on its own again, with its head.
    check_eq!(wr(&mut back, b"alone"), Ok(5));
    check_eq!(check_ok!(rd(&mut back, 64)).bytes(), b"alone");
    // Unlinked: the upper's writes go nowhere now.
    check_eq!(c.with_end(u, |s| wr(s, b"x")), Ok(1));
    c.runqueues();
    check!(c.with_end(u, |s| rd(s, 64)).is_err());
    Ok(())
}

fn close_unlinks_link_keeps_plink() -> TestResult {
    let mut c = check_ok!(Stream::complex());
    let (u1, u2) = (upper(&mut c)?, upper(&mut c)?);
    let ml = check_ok!(link(&mut c, u1, lower()?, false).0);
    let mp = check_ok!(link(&mut c, u1, lower()?, true).0);
    // I_UNLINK does not reach persistent links, I_PUNLINK not the others.
    check_eq!(unlink(&mut c, u1, mp, false), INVAL);
    check_eq!(unlink(&mut c, u1, ml, true), INVAL);
    c.with_end(u1, Stream::sth_close);
    let (id, _) = check_some!(c.take_unlinked());
    check_eq!(id, ml);
    check!(c.take_unlinked().is_none());
    check_eq!(c.heads().count(), 1);
    // Another Stream routes itself to the persistent link and uses it.
    check_eq!(istr(&mut c, u2, MUX_ROUTE, mp), Ok(0));
    check_eq!(
        istr(&mut c, u2, MUX_ROUTE, ml),
        Err(Stop::Err(Errno::ENXIO))
    );
    echo(&mut c, u2, u2, b"persistent")?;
    // A new open reuses the closed Stream's slot.
    let u3 = upper(&mut c)?;
    check_eq!(c.heads().count(), 2);
    check_eq!(unlink(&mut c, u3, MUXID_ALL, true), Ok(0));
    let (id, _) = check_some!(c.take_unlinked());
    check_eq!(id, mp);
    check_eq!(unlink(&mut c, u3, MUXID_ALL, true), Ok(0));
    Ok(())
}

fn link_errors() -> TestResult {
    let mut c = check_ok!(Stream::complex());
    let u = upper(&mut c)?;
    // Not a multiplexor: a plain Stream refuses, and hands the lower Stream back.
    let mut plain = lower()?;
    let mut req = LinkReq::new(lower()?, false);
    check_eq!(
        plain.strioctl(&Registry::new(), I_LINK, IocArg::Link(&mut req)),
        INVAL
    );
    check!(req.lower.is_some());
    // Pipes, complexes and closed Streams cannot be linked.
    let (r, back) = link(&mut c, u, check_ok!(Stream::pipe()), false);
    check_eq!(r, INVAL);
    check!(back.is_some_and(|p| p.is_pipe()));
    let (r, back) = link(&mut c, u, check_ok!(Stream::complex()), false);
    check_eq!(r, INVAL);
    check!(back.is_some());
    let mut closed = lower()?;
    closed.sth_close();
    check_eq!(link(&mut c, u, closed, false).0, INVAL);
    // Link changes cannot be forged through I_STR.
    for cmd in [I_LINK, I_PLINK, I_UNLINK, I_PUNLINK] {
        check_eq!(istr(&mut c, u, cmd as i32, 1), INVAL);
    }
    check_eq!(istr(&mut c, u, MUX_ROUTE, 42), Err(Stop::Err(Errno::ENXIO)));
    check_eq!(unlink(&mut c, u, MUXID_ALL, false), Ok(0));
    // Dropping the complex with a persistent link left closes everything (no leak).
    check_ok!(link(&mut c, u, lower()?, true).0);
    drop(c);
    Ok(())
}

fn full_upper_head_holds_lower_input() -> TestResult {
    let mut c = check_ok!(Stream::complex());
    let u = upper(&mut c)?;
    let m = check_ok!(link(&mut c, u, lower()?, false).0);
    check!(m > 0);
    // Fill the upper Stream head: sthloop echoes everything up and the mux lower half holds
    // (putq, then putbq in its service procedure) what the full head refuses.
    let chunk = [7u8; 200];
    let mut sent = 0usize;
    for _ in 0..200 {
        match c.with_end(u, |s| wr(s, &chunk)) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
        c.runqueues();
    }
    check_eq!(sent, 200 * chunk.len());
    let at_head = c.with_end(u, |s| s.queue(s.head_rq()).map_or(0, |q| q.count()));
    check!(at_head < sent);
    check!(at_head <= crate::stream::STRHIGH + chunk.len());
    // Reading everything back brings every byte, in order, with nothing lost.
    let mut got = 0usize;
    for _ in 0..1000 {
        c.runqueues();
        let Ok(g) = c.with_end(u, |s| rd(s, 200)) else {
            break;
        };
        check!(g.bytes().iter().all(|b| *b == 7));
        got += g.n;
    }
    check_eq!(got, sent);
    Ok(())
}

ktest_suite!(MUX_SUITE, "streams_mux":
    link_routes_both_ways,
    unlink_gives_the_stream_back,
    close_unlinks_link_keeps_plink,
    link_errors,
    full_upper_head_holds_lower_input,
);
