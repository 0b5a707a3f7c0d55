//! Shared (host + KUnit) tests of the `loop` driver, connected with I_FDINSERT
//! (`sth/tests/fdinsert.rs` tests the ioctl itself): APUE's `s_pipe` with each end its own
//! Stream and perimeter, flow control across, flush, hangup on close, what bad connect
//! requests get, and closes racing the connection.

use super::*;
use crate::ktest::{Failure, TestResult};
use crate::msg::{esballoc, Bpri, ExtBuf};
use crate::perim::test::{settle, TestPerim};
use crate::sth::call;
use crate::sth::consts::{FLUSHR, FLUSHW, I_FLUSH, MSG_HIPRI, RS_HIPRI};
use crate::sth::tests::drivers::STHLOOP;
use crate::sth::tests::fdinsert::{fdinsert, Ins};
use crate::sth::tests::perim::{close, fdinsert_target, open, Perim};
use crate::sth::tests::{get, put, rd, wr, Direct};
use crate::sth::{IocArg, SliceIo, Stop, Stream, WAKE_WRITE};
use crate::stream::Registry;
use crate::{check, check_eq, check_ok, check_some, ktest_suite};
use core::sync::atomic::{AtomicUsize, Ordering};

const INVAL: Result<i32, Stop> = Err(Stop::Err(Errno::EINVAL));

fn open_loop() -> Result<Perim, Failure> {
    open(&LOOP)
}

/// APUE's `s_pipe`: open the driver twice, I_FDINSERT on the first with the second as
/// `fildes`. The connection is made before the ioctl returns.
fn s_pipe() -> Result<(Perim, Perim), Failure> {
    let (a, b) = (open_loop()?, open_loop()?);
    check_eq!(fdinsert(&a, &b), Ok(0));
    Ok((a, b))
}

fn err_of(p: &Perim) -> Option<Stop> {
    p.op(|s| rd(s, 64)).err()
}

fn s_pipe_full_duplex() -> TestResult {
    let (a, b) = s_pipe()?;
    check_eq!(a.op(|s| wr(s, b"ping")), Ok(4));
    check_eq!(check_ok!(b.op(|s| rd(s, 64))).bytes(), b"ping");
    check_eq!(b.op(|s| wr(s, b"pong")), Ok(4));
    check_eq!(check_ok!(a.op(|s| rd(s, 64))).bytes(), b"pong");
    // putmsg/getmsg keep message boundaries and types across.
    check_eq!(a.op(|s| put(s, Some(b"ctl"), Some(b"data"), 0, 0)), Ok(()));
    check_eq!(a.op(|s| put(s, Some(b"hi"), None, 0, MSG_HIPRI)), Ok(()));
    check_eq!(a.op(|s| put(s, None, Some(b"x"), 0, 0)), Ok(()));
    let (g, cp, _) = check_ok!(b.op(|s| get(s, 64, 64, 0, 0)));
    check_eq!((g.flags, cp.bytes()), (MSG_HIPRI, &b"hi"[..]));
    let (_, cp, dp) = check_ok!(b.op(|s| get(s, 64, 64, 0, 0)));
    check_eq!((cp.bytes(), dp.bytes()), (&b"ctl"[..], &b"data"[..]));
    let (g, _, dp) = check_ok!(b.op(|s| get(s, 64, 64, 0, 0)));
    check_eq!((g.ctl_len, dp.bytes()), (-1, &b"x"[..]));
    // Once connected, an 8-byte M_PROTO is data like any other.
    check_eq!(b.op(|s| put(s, Some(&[1; 8]), None, 0, 0)), Ok(()));
    let (_, cp, _) = check_ok!(a.op(|s| get(s, 64, 64, 0, 0)));
    check_eq!(cp.bytes(), &[1u8; 8][..]);
    // The driver NAKs ioctls.
    let r = a.op(|s| {
        let mut arg = [0u8; 4];
        let mut io = SliceIo(&mut arg);
        call::istr(&Direct::new(s), &Registry::new(), 1, 0, 4, &mut io)
            .map(|(r, _)| r)
            .map_err(Stop::Err)
    });
    check_eq!(r, INVAL);
    close(&a);
    close(&b);
    Ok(())
}

fn flow_control_across() -> TestResult {
    let (a, b) = s_pipe()?;
    let chunk = [5u8; 200];
    let mut sent = 0usize;
    let mut refused = false;
    for _ in 0..500 {
        match a.op(|s| wr(s, &chunk)) {
            Ok(n) => sent += n,
            Err(e) => {
                check_eq!(e, Stop::Err(Errno::EAGAIN));
                refused = true;
                break;
            }
        }
    }
    check!(refused);
    // Held: b's head and a's write queue are both at their high water marks.
    let at_head = b.op(|s| s.queue(s.head_rq()).map_or(0, |q| q.count()));
    check!(at_head < sent);
    check!(at_head >= crate::stream::STRHIGH);
    let _ = a.op(Stream::sth_take_events);
    // High priority is never held.
    let bq = check_ok!(fdinsert_target(&b));
    let hi = Ins {
        flags: i64::from(RS_HIPRI),
        ..Ins::to(bq.clone())
    };
    check_eq!(a.op(|s| hi.run(s)), Ok(0));
    let lo = Ins::to(bq);
    check_eq!(a.op(|s| lo.run(s)), Err(Stop::Err(Errno::EAGAIN)));
    let (g, _, _) = check_ok!(b.op(|s| get(s, 64, 64, 0, MSG_HIPRI)));
    check_eq!(g.flags, MSG_HIPRI);
    // Draining b brings every byte in order, and a is woken and writable again.
    let mut got = 0usize;
    for _ in 0..1000 {
        let Ok(g) = b.op(|s| rd(s, 200)) else {
            if settle(&[&*a, &*b]) == 0 {
                break;
            }
            continue;
        };
        check!(g.bytes().iter().all(|x| *x == 5));
        got += g.n;
    }
    check_eq!(got, sent);
    check!(a.op(Stream::sth_take_events).wake & WAKE_WRITE != 0);
    check_eq!(a.op(|s| wr(s, b"again")), Ok(5));
    check_eq!(check_ok!(b.op(|s| rd(s, 64))).bytes(), b"again");
    close(&a);
    close(&b);
    Ok(())
}

fn flush_crosses_like_a_pipe() -> TestResult {
    let (a, b) = s_pipe()?;
    let reg = Registry::new();
    // FLUSHW at a: what a sent and b has not read goes.
    check_eq!(a.op(|s| wr(s, b"stale")), Ok(5));
    let r = a.op(|s| s.strioctl(&reg, I_FLUSH, IocArg::Int(i64::from(FLUSHW))));
    check_eq!(r, Ok(0));
    check_eq!(err_of(&b), Some(Stop::Err(Errno::EAGAIN)));
    check_eq!(a.op(|s| wr(s, b"fresh")), Ok(5));
    check_eq!(check_ok!(b.op(|s| rd(s, 64))).bytes(), b"fresh");
    // FLUSHR at a: what b holds for a (its write queue) goes, and a's head is flushed.
    check_eq!(b.op(|s| wr(s, b"read me")), Ok(7));
    let held = b.op(|s| {
        let w = s.driver_wq().ok_or(Errno::EINVAL)?;
        let m = check_some_msg(Msg::from_bytes(M_DATA, b"held"))?;
        s.qctx(w).putq(m).map_err(|_| Errno::ENOSR)
    });
    check_eq!(held, Ok(()));
    let r = a.op(|s| s.strioctl(&reg, I_FLUSH, IocArg::Int(i64::from(FLUSHR))));
    check_eq!(r, Ok(0));
    check_eq!(err_of(&a), Some(Stop::Err(Errno::EAGAIN)));
    let left = b.op(|s| s.driver_wq().and_then(|w| s.queue(w)).map(|q| q.count()));
    check_eq!(left, Some(0));
    // The pipe still works both ways.
    check_eq!(b.op(|s| wr(s, b"after")), Ok(5));
    check_eq!(check_ok!(a.op(|s| rd(s, 64))).bytes(), b"after");
    close(&a);
    close(&b);
    Ok(())
}

fn check_some_msg(m: Result<Msg, crate::sys::NoMem>) -> Result<Msg, Errno> {
    m.map_err(|_| Errno::ENOSR)
}

fn close_hangs_up_the_peer() -> TestResult {
    let (a, b) = s_pipe()?;
    check_eq!(a.op(|s| wr(s, b"last words")), Ok(10));
    close(&a);
    // The data first, then end of file; writes fail as after M_HANGUP (no SNDPIPE: ENXIO).
    check_eq!(check_ok!(b.op(|s| rd(s, 64))).bytes(), b"last words");
    check_eq!(check_ok!(b.op(|s| rd(s, 64))).n, 0);
    check_eq!(b.op(|s| wr(s, b"x")), Err(Stop::Err(Errno::ENXIO)));
    // A new open cannot connect to the hung-up one.
    let n = open_loop()?;
    check_eq!(fdinsert(&n, &b), Ok(0));
    check_eq!(err_of(&n), Some(Stop::Err(Errno::EBUSY)));
    // Nor to the closed one (its Stream cannot be resolved any more).
    check_eq!(fdinsert(&n, &a), Err(Stop::Err(Errno::EINVAL)));
    close(&b);
    close(&n);
    Ok(())
}

fn bad_connect_requests() -> TestResult {
    let (a, b, d, e) = (open_loop()?, open_loop()?, open_loop()?, open_loop()?);
    // Data before a connection: M_ERROR ENXIO.
    check_eq!(a.op(|s| wr(s, b"early")), Ok(5));
    check_eq!(err_of(&a), Some(Stop::Err(Errno::ENXIO)));
    // Itself: M_ERROR EINVAL.
    check_eq!(fdinsert(&b, &b), Ok(0));
    check_eq!(err_of(&b), Some(Stop::Err(Errno::EINVAL)));
    // A Stream of another driver (its reference names `sthloop`, not `loop`), and of the
    // same driver under its other name (`spx`): EINVAL.
    let other = open(&STHLOOP)?;
    check_eq!(fdinsert(&d, &other), Ok(0));
    check_eq!(err_of(&d), Some(Stop::Err(Errno::EINVAL)));
    let spx = open(&SPX)?;
    let f = open_loop()?;
    check_eq!(fdinsert(&f, &spx), Ok(0));
    check_eq!(err_of(&f), Some(Stop::Err(Errno::EINVAL)));
    // A forged token (a plain putmsg of the right size, even with the real token of a loop
    // Stream's read queue) comes without the reference: EINVAL, and it names nothing.
    let (tq, _) = check_some!(check_ok!(fdinsert_target(&a)));
    let tok = tq.qid().raw().to_ne_bytes();
    check_eq!(e.op(|s| put(s, Some(&tok), None, 0, 0)), Ok(()));
    check_eq!(err_of(&e), Some(Stop::Err(Errno::EINVAL)));
    // A peer already connected: M_ERROR EBUSY for the requester, the pair unharmed.
    let (x, y, z) = (open_loop()?, open_loop()?, open_loop()?);
    check_eq!(fdinsert(&x, &y), Ok(0));
    check_eq!(fdinsert(&z, &y), Ok(0));
    check_eq!(err_of(&z), Some(Stop::Err(Errno::EBUSY)));
    check_eq!(y.op(|s| wr(s, b"still")), Ok(5));
    check_eq!(check_ok!(x.op(|s| rd(s, 64))).bytes(), b"still");
    for p in [a, b, d, e, f, x, y, z, other, spx] {
        close(&p);
    }
    Ok(())
}

// One counter per test (cases run in parallel on the host): what the free routine saw.
static FREED_CLOSE: AtomicUsize = AtomicUsize::new(0);
static FREED_RACE: AtomicUsize = AtomicUsize::new(0);

fn free_close(_buf: &'static mut [u8], arg: usize) {
    FREED_CLOSE.fetch_add(arg, Ordering::SeqCst);
}
fn free_race(_buf: &'static mut [u8], arg: usize) {
    FREED_RACE.fetch_add(arg, Ordering::SeqCst);
}

/// An M_DATA message whose freeing adds `tag` to a counter.
fn tagged(tag: usize, free: fn(&'static mut [u8], usize)) -> Result<Msg, Failure> {
    let ext = ExtBuf {
        buf: &mut [],
        free,
        arg: tag,
    };
    Ok(check_ok!(esballoc(ext, Bpri::Lo).map_err(|_| ())))
}

fn close_with_data_in_flight_frees_everything_once() -> TestResult {
    let before = FREED_CLOSE.load(Ordering::SeqCst);
    let (a, b) = s_pipe()?;
    // Some of a's messages reach b's head; then b is claimed (as if its runner had not come
    // round yet), so the rest wait on b's inbound list when a closes.
    for t in [1usize, 2] {
        let m = tagged(t, free_close)?;
        a.op(|s| s.write(m));
    }
    check!(b.op(|s| s.queue(s.head_rq()).map_or(0, |q| q.qsize())) == 2);
    b.qref(b.op(|s| s.head_wq())).backenable(0);
    check!(b.is_scheduled());
    for t in [4usize, 8] {
        let m = tagged(t, free_close)?;
        a.op(|s| s.write(m));
    }
    close(&a);
    check_eq!(FREED_CLOSE.load(Ordering::SeqCst) - before, 0);
    // b runs: the data, then the hangup; nothing is lost.
    settle(&[&*b]);
    let mut n = 0;
    while let Some(m) = b.op(|s| s.read()) {
        check!(m.ext_arg().is_some());
        drop(m);
        n += 1;
    }
    check_eq!(n, 4);
    check_eq!(FREED_CLOSE.load(Ordering::SeqCst) - before, 15);
    check!(b.op(|s| s.sth().hangup()));
    close(&b);
    Ok(())
}

/// I_FDINSERT from `a` naming `b` while `b` is busy (its lock's holder, here only
/// pretended, takes up what comes in when it lets go: `perim` step 4): the connect request
/// waits on `b`'s inbound list, and `b` is only marked scheduled when the pretended holder
/// lets go (`settle` runs it). No lock is held across `a`'s operation.
fn fdinsert_to_busy(a: &Perim, b: &Perim) -> Result<i32, Stop> {
    let target = fdinsert_target(b)?;
    b.perim.gate().set_busy(true);
    let r = a.op(|s| Ins::to(target).run(s));
    b.perim.gate().set_busy(false);
    if b.perim.needs_run() {
        crate::stream::Perimeter::schedule(b.clone());
    }
    r
}

fn close_while_connecting() -> TestResult {
    let before = FREED_RACE.load(Ordering::SeqCst);
    // a asks b, but b is busy and does not answer yet; a writes (held), then closes.
    let (a, b) = (open_loop()?, open_loop()?);
    check_eq!(fdinsert_to_busy(&a, &b), Ok(0));
    let m = tagged(1, free_race)?;
    a.op(|s| s.write(m));
    close(&a);
    // The data a held goes with it.
    check_eq!(FREED_RACE.load(Ordering::SeqCst) - before, 1);
    // b takes up a request whose sender is gone: its ACCEPT cannot be delivered, so b stays
    // unconnected (the DISCONNECT that follows is not from a peer of b's), free to connect.
    settle(&[&*b]);
    check_eq!(err_of(&b), Some(Stop::Err(Errno::EAGAIN)));
    let n = open_loop()?;
    check_eq!(fdinsert(&n, &b), Ok(0));
    check_eq!(n.op(|s| wr(s, b"hello")), Ok(5));
    check_eq!(check_ok!(b.op(|s| rd(s, 64))).bytes(), b"hello");
    close(&b);
    close(&n);
    // A request to a Stream that closes before it answers: the requester gets nothing
    // back (its data stays held) until its own close, which frees it.
    let (c, d) = (open_loop()?, open_loop()?);
    check_eq!(fdinsert_to_busy(&c, &d), Ok(0));
    let m = tagged(2, free_race)?;
    c.op(|s| s.write(m));
    close(&d);
    check!(!TestPerim::is_scheduled(&c));
    close(&c);
    check_eq!(FREED_RACE.load(Ordering::SeqCst) - before, 3);
    Ok(())
}

/// A peer that has no memory to accept refuses in the requester's own CONNECT, and the
/// requester's M_ERROR is made of it: ENOSR (not EBUSY, "connected already"), with every
/// allocation failing, and the peer stays free to connect.
fn connect_without_memory_is_enosr() -> TestResult {
    let (a, b) = (open_loop()?, open_loop()?);
    check_eq!(fdinsert_to_busy(&a, &b), Ok(0));
    {
        let _g = crate::queue::tests::FaultGuard::fail_after(0);
        settle(&[&*b, &*a]);
    }
    settle(&[&*b, &*a]);
    check_eq!(err_of(&a), Some(Stop::Err(Errno::ENOSR)));
    check_eq!(err_of(&b), Some(Stop::Err(Errno::EAGAIN)));
    let n = open_loop()?;
    check_eq!(fdinsert(&n, &b), Ok(0));
    check_eq!(n.op(|s| wr(s, b"hello")), Ok(5));
    check_eq!(check_ok!(b.op(|s| rd(s, 64))).bytes(), b"hello");
    for p in [a, b, n] {
        close(&p);
    }
    Ok(())
}

ktest_suite!(LOOP_SUITE, "streams_loop":
    connect_without_memory_is_enosr,
    s_pipe_full_duplex,
    flow_control_across,
    flush_crosses_like_a_pipe,
    close_hangs_up_the_peer,
    bad_connect_requests,
    close_with_data_in_flight_frees_everything_once,
    close_while_connecting,
);
