//! Shared tests of the write pass-across on a STREAMS pipe (`stream/across.rs` in the core): a
//! write at one end whose path from the head's write queue to the twist is pass-only hands its
//! message to the other end in one step. Each case runs the same steps on two pipes: on the
//! first the writes go across (nothing pushed at the writing end, or `nullpass`, a module the
//! engine steps over); on the second `nosrv`, a module whose put procedure is called, is pushed
//! at the writing end, so each write goes down by the ordinary puts. What is read, the
//! writing end's statistics (head, pushed module, twist), the reading end's queue, the events
//! at both ends, the writer's flow control (refused at the high-water mark, back-enabled at
//! the low one), a hangup or an error in the middle and a push between writes must come out
//! the same.

use super::direct::{
    getmsg, read, read_both_until_back_enabled, read_side, write, write_both_until_refused, BUF,
};
use super::TestPipe;
use streams_core::errno::Errno;
use streams_core::ktest::{Failure, TestResult};
use streams_core::msg::{Msg, M_ERROR, M_HANGUP};
use streams_core::sth::consts::*;
use streams_core::sth::{call, IocArg, Part, SliceIo, Stream};
use streams_core::stream::testmods::{NOSRV, NULLPASS};
use streams_core::stream::{ModuleStat, Registry};
use streams_core::{check, check_eq, check_ok, ktest_suite};

/// The modules these cases push.
fn reg() -> Result<Registry, Failure> {
    let mut r = Registry::new();
    check_ok!(r.register_module(&NOSRV));
    check_ok!(r.register_module(&NULLPASS));
    Ok(r)
}

/// Two pipes: the first one's writes at end 0 go across (with `nullpass` pushed there when
/// `stepped`), the second one's by the ordinary puts (`nosrv` pushed at end 0).
fn pair(stepped: bool) -> Result<[TestPipe; 2], Failure> {
    let a = check_ok!(TestPipe::new());
    let b = check_ok!(TestPipe::new());
    let r = reg()?;
    if stepped {
        check_eq!(
            a.end(0, |s| s.strioctl(&r, I_PUSH, IocArg::Name("nullpass"))),
            Ok(0)
        );
    }
    check_eq!(
        b.end(0, |s| s.strioctl(&r, I_PUSH, IocArg::Name("nosrv"))),
        Ok(0)
    );
    for p in [&a, &b] {
        let _ = p.end(0, |s| s.sth_take_events());
        let _ = p.end(1, |s| s.sth_take_events());
    }
    check!(a.end(0, |s| s.sth_writes_across()));
    check!(!b.end(0, |s| s.sth_writes_across()));
    Ok([a, b])
}

/// The statistics of the writing end's write side: the head's write queue, the module pushed
/// on it (if any) and the twist's write queue.
#[derive(PartialEq, Eq, Debug)]
struct WriteSide {
    head: Option<ModuleStat>,
    module: Option<ModuleStat>,
    twist: Option<ModuleStat>,
    dropped: usize,
}

fn write_side(s: &mut Stream) -> WriteSide {
    let h = s.head_wq();
    let top = s.top_wq();
    let twist = s.driver_wq();
    WriteSide {
        head: s.mstat(h),
        module: top.filter(|t| Some(*t) != twist).and_then(|t| s.mstat(t)),
        twist: twist.and_then(|d| s.mstat(d)),
        dropped: s.dropped(),
    }
}

/// Both ends of both pipes as they must match: the writing end's statistics, the reading
/// end's queue and statistics, the events of each end.
fn same(a: &TestPipe, b: &TestPipe, module_too: bool) -> TestResult {
    let (mut x, mut y) = (a.end(0, write_side), b.end(0, write_side));
    if !module_too {
        x.module = None;
        y.module = None;
    }
    check_eq!(x, y);
    check!(a.end(1, read_side) == b.end(1, read_side));
    for end in [0, 1] {
        check_eq!(
            a.end(end, |s| s.sth_take_events()),
            b.end(end, |s| s.sth_take_events())
        );
    }
    Ok(())
}

/// Writes of several sizes, read back in pieces, the two pipes compared after each step.
fn writes_match(stepped: bool) -> TestResult {
    const WRITES: [&[u8]; 5] = [b"ab", b"cdef", b"g", b"hij", b"klmno"];
    const READS: [usize; 6] = [1, 3, 2, 64, 64, 64];
    let [a, b] = pair(stepped)?;
    for _round in 0..3 {
        for w in WRITES {
            check_eq!(write(&a, 0, w), write(&b, 0, w));
            same(&a, &b, stepped)?;
        }
        for len in READS {
            check_eq!(read(&a, 1, len), read(&b, 1, len));
            same(&a, &b, stepped)?;
        }
    }
    check_eq!(read(&a, 1, 64), Err(Errno::EAGAIN));
    // Every write went across: counted on the twist once each.
    let puts = a.end(0, |s| s.driver_wq().and_then(|d| s.mstat(d)));
    check_eq!(puts.map(|m| m.ms_pcnt), Some(3 * WRITES.len()));
    Ok(())
}

fn writes_match_nothing_pushed() -> TestResult {
    writes_match(false)
}

fn writes_match_stepped_module() -> TestResult {
    writes_match(true)
}

/// End 0 writes until refused: the across writer is refused where the ordinary one is (the
/// bytes pending on end 1's inbound list, then its head's queue past the high-water mark);
/// end 1 then reads one message at a time, and the writer is back-enabled (WAKE_WRITE) by
/// the same read, at the low-water mark, and can write again.
fn writer_refused_at_hiwat_is_back_enabled_at_lowat() -> TestResult {
    let [a, b] = pair(false)?;
    let chunk = [7u8; BUF];
    write_both_until_refused(&a, &b, &chunk, Some(4))?;
    check!(!a.end(0, |s| s.sth_canput(0)));
    same(&a, &b, false)?;
    read_both_until_back_enabled(&a, &b, BUF)?;
    check_eq!(write(&a, 0, &chunk), write(&b, 0, &chunk));
    check_eq!(write(&a, 0, &chunk), Ok(BUF));
    check!(a.end(0, |s| s.sth_writes_across()));
    Ok(())
}

/// The reading end closes between writes: the next write fails with EPIPE (and SIGPIPE) on
/// both pipes, with the same statistics, and the writing end is no longer pass-across (its
/// twist let go of the other end).
fn hangup_between_writes() -> TestResult {
    let [a, b] = pair(false)?;
    check_eq!(write(&a, 0, b"one"), write(&b, 0, b"one"));
    a.close(1);
    b.close(1);
    check_eq!(write(&a, 0, b"two"), Err(Errno::EPIPE));
    check_eq!(write(&b, 0, b"two"), Err(Errno::EPIPE));
    let (x, y) = (a.end(0, write_side), b.end(0, write_side));
    check_eq!(x.twist, y.twist);
    check_eq!(x.dropped, y.dropped);
    let ev = a.end(0, |s| s.sth_take_events());
    check!(ev.sigpipe);
    check_eq!(ev, b.end(0, |s| s.sth_take_events()));
    check!(!a.end(0, |s| s.sth_writes_across()));
    Ok(())
}

/// An M_ERROR arrives at the writing end between writes: the next write fails with its
/// error on both pipes; after the error is cleared writes go across again.
fn error_between_writes() -> TestResult {
    let [a, b] = pair(false)?;
    check_eq!(write(&a, 0, b"one"), write(&b, 0, b"one"));
    for p in [&a, &b] {
        let m = check_ok!(Msg::from_bytes(M_ERROR, &[Errno::EIO.0 as u8]));
        p.end(0, |s| {
            if let Some(d) = s.driver_rq() {
                s.qctx(d).putnext(m);
            }
        });
    }
    check_eq!(write(&a, 0, b"two"), Err(Errno::EIO));
    check_eq!(write(&b, 0, b"two"), Err(Errno::EIO));
    same(&a, &b, false)?;
    check_eq!(read(&a, 1, 64), read(&b, 1, 64));
    Ok(())
}

/// A module pushed between writes at the across end takes the next writes (its put
/// procedure runs: not across), popped it gives them back; everything is read in order.
fn push_between_writes() -> TestResult {
    let [a, b] = pair(false)?;
    let r = reg()?;
    let mut want = [0u8; BUF];
    let mut n = 0;
    for (i, w) in [&b"abc"[..], b"de", b"f", b"gh"].into_iter().enumerate() {
        if i == 1 {
            check_eq!(
                a.end(0, |s| s.strioctl(&r, I_PUSH, IocArg::Name("nosrv"))),
                Ok(0)
            );
            check!(!a.end(0, |s| s.sth_writes_across()));
        }
        if i == 3 {
            check_eq!(a.end(0, |s| s.strioctl(&r, I_POP, IocArg::Int(0))), Ok(0));
            check!(a.end(0, |s| s.sth_writes_across()));
        }
        check_eq!(write(&a, 0, w), Ok(w.len()));
        check_eq!(write(&b, 0, w), Ok(w.len()));
        if let Some(d) = want.get_mut(n..n + w.len()) {
            d.copy_from_slice(w);
        }
        n += w.len();
    }
    let x = check_ok!(read(&a, 1, BUF));
    let y = check_ok!(read(&b, 1, BUF));
    check_eq!(x.0.get(..x.1), want.get(..n));
    check_eq!(y.0.get(..y.1), want.get(..n));
    let tw = |p: &TestPipe| p.end(0, |s| s.driver_wq().and_then(|d| s.mstat(d)));
    check_eq!(tw(&a), tw(&b));
    Ok(())
}

/// Whether end 0 of `p` may write without its Stream lock (the express write is armed).
fn armed(p: &TestPipe) -> bool {
    p.perim(0).perim.express_armed()
}

/// The express write (`perim/express.rs` in the core): after a write that went across, the
/// next writes at that end go without its Stream lock until something enters it. Runs of
/// writes with no enter of the writing end between them, then the two pipes compared (the
/// comparison enters: the express puts are counted then), then read back in order; a write
/// after an enter is locked again and arms it again. With `stepped` (a module the engine
/// steps over is pushed: the path is not one queue) the writes go across under the lock and
/// never without it.
fn express_writes_match(stepped: bool) -> TestResult {
    const WRITES: [&[u8]; 4] = [b"ab", b"cdef", b"g", b"hij"];
    let [a, b] = pair(stepped)?;
    let mut want = [0u8; BUF];
    let mut n = 0;
    for _round in 0..3 {
        check!(!armed(&a));
        for w in WRITES {
            check_eq!(write(&a, 0, w), write(&b, 0, w));
            // The first by a locked write, the rest kept it.
            check_eq!(armed(&a), !stepped);
            if let Some(d) = want.get_mut(n..n + w.len()) {
                d.copy_from_slice(w);
            }
            n += w.len();
        }
        check!(!armed(&b));
        same(&a, &b, stepped)?;
    }
    let x = check_ok!(read(&a, 1, BUF));
    check_eq!(x.0.get(..x.1), want.get(..n));
    check_eq!(read(&b, 1, BUF), Ok(x));
    let puts = a.end(0, |s| s.driver_wq().and_then(|d| s.mstat(d)));
    check_eq!(puts.map(|m| m.ms_pcnt), Some(3 * WRITES.len()));
    same(&a, &b, stepped)
}

fn express_writes_match_nothing_pushed() -> TestResult {
    express_writes_match(false)
}

fn express_not_past_a_stepped_module() -> TestResult {
    express_writes_match(true)
}

/// A hangup waiting on the writing end's own inbound list (put there, its run not yet made)
/// keeps the next write from going without the lock: the locked write applies it first and
/// fails with EPIPE, as on the pipe whose writes take the ordinary puts.
fn express_write_after_a_waiting_hangup_fails() -> TestResult {
    let [a, b] = pair(false)?;
    // The twist's read queue, asked before the writes (asking enters the end).
    let rq = [&a, &b].map(|p| p.end(0, |s| s.driver_rq()));
    check_eq!(write(&a, 0, b"one"), write(&b, 0, b"one"));
    check!(armed(&a));
    for (p, rq) in [&a, &b].into_iter().zip(rq) {
        let q = check_ok!(rq.ok_or(Errno::EINVAL));
        let h = check_ok!(Msg::from_bytes(M_HANGUP, &[]));
        check!(p.perim(0).perim.put_in(q, h).is_ok());
    }
    check!(armed(&a));
    check_eq!(write(&a, 0, b"two"), Err(Errno::EPIPE));
    check_eq!(write(&b, 0, b"two"), Err(Errno::EPIPE));
    check!(!armed(&a));
    same(&a, &b, false)
}

/// putmsg of a data part alone on end `end` of `p`, non-blocking, in `band` (MSG_BAND when
/// not 0).
fn putmsg(p: &TestPipe, end: usize, data: &[u8], band: i32) -> Result<(), Errno> {
    let mut b = [0u8; BUF];
    let n = streams_core::sys::copy_bytes(&mut b, data);
    let d = Part {
        io: &mut SliceIo(b.get_mut(..n).unwrap_or_default()),
        len: i32::try_from(n).unwrap_or(0),
    };
    let flags = if band == 0 { 0 } else { MSG_BAND };
    call::putmsg(&p.call(end), None, Some(d), band, flags, true)
}

/// putmsg of a control part `c` and a data part `d` on end `end` of `p`, non-blocking.
fn putmsg_ctl(p: &TestPipe, end: usize, c: &[u8], d: &[u8]) -> Result<(), Errno> {
    let (mut cb, mut db) = ([0u8; BUF], [0u8; BUF]);
    let cn = streams_core::sys::copy_bytes(&mut cb, c);
    let dn = streams_core::sys::copy_bytes(&mut db, d);
    let (mut cio, mut dio) = (
        SliceIo(cb.get_mut(..cn).unwrap_or_default()),
        SliceIo(db.get_mut(..dn).unwrap_or_default()),
    );
    let len = |n: usize| i32::try_from(n).unwrap_or(0);
    let ctl = Part {
        io: &mut cio,
        len: len(cn),
    };
    let data = Part {
        io: &mut dio,
        len: len(dn),
    };
    call::putmsg(&p.call(end), Some(ctl), Some(data), 0, 0, true)
}

/// A putmsg of a data part alone (band 0, no flags) is a write's message: the locked one goes
/// across and arms the express write as a write does, the next ones go without the lock.
/// Runs of putmsg (with `mixed`, putmsg and write in turn; one data part is empty: a
/// zero-length message) with no enter of the writing end between them, then the two pipes
/// compared, then the messages taken back one getmsg at a time. A putmsg in band 1 after
/// them is locked (it disarms) and stays in its band; so is one with a control part.
fn express_putmsgs_match(stepped: bool, mixed: bool) -> TestResult {
    const PARTS: [&[u8]; 5] = [b"ab", b"cd", b"", b"efg", b"h"];
    let [a, b] = pair(stepped)?;
    for _round in 0..3 {
        check!(!armed(&a));
        for (i, w) in PARTS.into_iter().enumerate() {
            if mixed && i % 2 == 1 {
                check_eq!(write(&a, 0, w), write(&b, 0, w));
            } else {
                check_eq!(putmsg(&a, 0, w, 0), putmsg(&b, 0, w, 0));
            }
            check_eq!(armed(&a), !stepped);
        }
        check!(!armed(&b));
        same(&a, &b, stepped)?;
    }
    for _ in 0..3 * PARTS.len() {
        check_eq!(getmsg(&a, 1, BUF), getmsg(&b, 1, BUF));
    }
    check_eq!(getmsg(&a, 1, BUF).err(), Some(Errno::EAGAIN));
    let puts = a.end(0, |s| s.driver_wq().and_then(|d| s.mstat(d)));
    check_eq!(puts.map(|m| m.ms_pcnt), Some(3 * PARTS.len()));
    same(&a, &b, stepped)?;
    check_eq!(putmsg(&a, 0, b"x", 0), putmsg(&b, 0, b"x", 0));
    check_eq!(putmsg(&a, 0, b"yz", 1), putmsg(&b, 0, b"yz", 1));
    same(&a, &b, stepped)?;
    // The band-1 message first, then band 0.
    let x = check_ok!(getmsg(&a, 1, BUF));
    check_eq!(x.0.get(..2), Some(&b"yz"[..]));
    check_eq!(getmsg(&b, 1, BUF), Ok(x));
    check_eq!(getmsg(&a, 1, BUF), getmsg(&b, 1, BUF));
    same(&a, &b, stepped)?;
    check_eq!(putmsg(&a, 0, b"x", 0), putmsg(&b, 0, b"x", 0));
    check_eq!(
        putmsg_ctl(&a, 0, b"ctl", b"d"),
        putmsg_ctl(&b, 0, b"ctl", b"d")
    );
    same(&a, &b, stepped)
}

/// End 0 sends data-only putmsgs until refused (end 1 entered now and then: its inbound list
/// goes up to its head, and end 0 stays armed): the express and the locked putmsg are
/// refused where the ordinary one is; end 1 then reads until the writer is back-enabled, and
/// the next putmsg goes on both pipes.
fn putmsg_refused_at_hiwat_is_back_enabled() -> TestResult {
    let [a, b] = pair(false)?;
    let chunk = [7u8; BUF];
    let mut refused = false;
    for i in 1..=64 {
        let x = putmsg(&a, 0, &chunk, 0);
        check_eq!(x, putmsg(&b, 0, &chunk, 0));
        if x == Err(Errno::EAGAIN) {
            refused = true;
            break;
        }
        if i % 4 == 0 {
            a.end(1, |_| ());
            b.end(1, |_| ());
        }
    }
    check!(refused);
    same(&a, &b, false)?;
    read_both_until_back_enabled(&a, &b, BUF)?;
    for _ in 0..2 {
        let x = putmsg(&a, 0, &chunk, 0);
        check_eq!(x, Ok(()));
        check_eq!(putmsg(&b, 0, &chunk, 0), x);
    }
    check!(armed(&a));
    same(&a, &b, false)
}

fn express_putmsgs_match_nothing_pushed() -> TestResult {
    express_putmsgs_match(false, false)
}

fn express_putmsgs_match_stepped_module() -> TestResult {
    express_putmsgs_match(true, false)
}

fn express_putmsgs_and_writes_match() -> TestResult {
    express_putmsgs_match(false, true)
}

ktest_suite!(PIPE_ACROSS_SUITE, "streams_pipe_across":
    express_writes_match_nothing_pushed,
    express_not_past_a_stepped_module,
    express_write_after_a_waiting_hangup_fails,
    express_putmsgs_match_nothing_pushed,
    express_putmsgs_match_stepped_module,
    express_putmsgs_and_writes_match,
    putmsg_refused_at_hiwat_is_back_enabled,
    writes_match_nothing_pushed,
    writes_match_stepped_module,
    writer_refused_at_hiwat_is_back_enabled_at_lowat,
    hangup_between_writes,
    error_between_writes,
    push_between_writes,
);
