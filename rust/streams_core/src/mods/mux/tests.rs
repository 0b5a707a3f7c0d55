//! Shared (host + KUnit) tests of multiplexing across perimeters: the `mux` driver, every
//! upper Stream and every linked `sthloop` Stream in its own perimeter, linked as the platform
//! does it (I_LINK, I_PLINK, I_UNLINK, I_PUNLINK, MUX_ROUTE); what closing does to links; the
//! linked Stream's own file; flow control across the links both ways; the errors; and the
//! races that can be set up deterministically (data in flight at unlink, closes on either
//! side while the other routes), with every message's free counted.

use super::*;
use crate::ktest::{Failure, TestResult};
use crate::msg::{esballoc, Bpri, ExtBuf};
use crate::perim::test::{settle, TestPerim};
use crate::queue::tests::FaultGuard;
use crate::sth::call;
use crate::sth::consts::{I_PUSH, MUXID_ALL, POLLERR, POLLIN};
use crate::sth::tests::drivers::STHLOOP;
use crate::sth::tests::perim::{close, open, Perim};
use crate::sth::tests::{get, put, rd, wr, Direct};
use crate::sth::{IocArg, LinkReq, SliceIo, Stop, Stream, UnlinkReq, WAKE_WRITE};
use crate::stream::testmods::HOLD;
use crate::stream::{MuxCred, Perimeter, Registry};
use crate::{check, check_eq, check_ok, check_some, ktest_suite};
use core::sync::atomic::{AtomicUsize, Ordering};

const INVAL: Result<i32, Stop> = Err(Stop::Err(Errno::EINVAL));

fn table() -> Result<Arc<MuxTable>, Failure> {
    Ok(check_ok!(MuxTable::new()))
}

/// The user most cases open upper Streams as.
const USER: MuxCred = MuxCred {
    user: 1000,
    privileged: false,
};

/// An open of `mux`: its own Stream, joined to the driver's table as the platform does.
fn upper(t: &Arc<MuxTable>) -> Result<Perim, Failure> {
    upper_as(t, USER)
}

/// An open of `mux` by `cred`.
fn upper_as(t: &Arc<MuxTable>, cred: MuxCred) -> Result<Perim, Failure> {
    let u = open(&MUX)?;
    check_eq!(u.op(|s| s.sth_mux_attach(t.clone(), cred)), Ok(()));
    Ok(u)
}

/// A Stream to link: `sthloop` sends everything back up.
fn lower() -> Result<Perim, Failure> {
    open(&STHLOOP)
}

/// I_LINK (or I_PLINK) of `l` under `u`, as the platform does it: the lower Stream's step
/// under its lock, then the ioctl under the upper's. A link that fails is undone.
fn link(u: &Perim, l: &Perim, persistent: bool) -> Result<i32, Stop> {
    let lp: Arc<dyn Perimeter> = l.clone();
    let mut req = LinkReq::new(lp, persistent)?;
    l.op(|s| s.sth_link_lower(&mut req))?;
    let cmd = if persistent { I_PLINK } else { I_LINK };
    let r = u.op(|s| s.strioctl(&Registry::new(), cmd, IocArg::Link(&mut req)));
    drop(req);
    r
}

fn unlink(u: &Perim, muxid: i32, persistent: bool) -> Result<i32, Stop> {
    let mut req = UnlinkReq::new(muxid, persistent);
    let cmd = if persistent { I_PUNLINK } else { I_UNLINK };
    u.op(|s| s.strioctl(&Registry::new(), cmd, IocArg::Unlink(&mut req)))
}

/// I_STR `cmd` with an int argument on `u`, through the platform's half (`sth::call`).
fn istr(u: &Perim, cmd: i32, arg: i32) -> Result<i32, Stop> {
    u.op(|s| {
        let mut b = arg.to_ne_bytes();
        let mut io = SliceIo(&mut b);
        call::istr(&Direct::new(s), &Registry::new(), cmd, 0, 4, &mut io)
            .map(|(r, _)| r)
            .map_err(Stop::Err)
    })
}

/// Whether `l` is linked (its head is plexed).
fn linked(l: &Perim) -> bool {
    l.op(|s| s.sth().is_linked())
}

/// Write `data` on `u` and expect it back (looped by the linked `sthloop`) on `at`.
fn echo(u: &Perim, at: &Perim, data: &[u8]) -> TestResult {
    check_eq!(u.op(|s| wr(s, data)), Ok(data.len()));
    let got = check_ok!(at.op(|s| rd(s, 64)));
    check_eq!(got.bytes(), data);
    Ok(())
}

fn nothing_at(u: &Perim) -> bool {
    u.op(|s| rd(s, 64)).is_err()
}

fn link_routes_both_ways() -> TestResult {
    let t = table()?;
    let (u1, u2) = (upper(&t)?, upper(&t)?);
    let (l1, l2) = (lower()?, lower()?);
    let m1 = check_ok!(link(&u1, &l1, false));
    check!(m1 > 0);
    check!(linked(&l1));
    echo(&u1, &u1, b"down and up")?;
    // u2 has no route: what it writes is freed, nothing reaches u1.
    check_eq!(u2.op(|s| wr(s, b"lost")), Ok(4));
    check!(nothing_at(&u1));
    check!(nothing_at(&u2));
    // A second link gets another muxid and the route of the Stream that made it.
    let m2 = check_ok!(link(&u2, &l2, false));
    check!(m2 != m1);
    echo(&u2, &u2, b"second")?;
    echo(&u1, &u1, b"first still")?;
    // putmsg/getmsg through the link keep the parts and the priority.
    check_eq!(u1.op(|s| put(s, Some(b"ctl"), Some(b"data"), 0, 0)), Ok(()));
    let (_, c, d) = check_ok!(u1.op(|s| get(s, 64, 64, 0, 0)));
    check_eq!((c.bytes(), d.bytes()), (&b"ctl"[..], &b"data"[..]));
    for p in [&u1, &u2, &l1, &l2] {
        close(p);
    }
    check_eq!(t.nlinks(), 0);
    Ok(())
}

fn unlink_gives_the_stream_back() -> TestResult {
    let t = table()?;
    let u = upper(&t)?;
    let l = lower()?;
    // Data waiting at the lower head before the link goes up through the mux.
    check_eq!(l.op(|s| wr(s, b"early")), Ok(5));
    let m = check_ok!(link(&u, &l, false));
    check_eq!(check_ok!(u.op(|s| rd(s, 64))).bytes(), b"early");
    check_eq!(unlink(&u, m + 100, false), INVAL);
    check_eq!(unlink(&u, m, false), Ok(0));
    check!(!linked(&l));
    check_eq!(t.nlinks(), 0);
    // The Stream works on its own again, with its head.
    check_eq!(l.op(|s| wr(s, b"alone")), Ok(5));
    check_eq!(check_ok!(l.op(|s| rd(s, 64))).bytes(), b"alone");
    // Unlinked: the upper's writes go nowhere now.
    check_eq!(u.op(|s| wr(s, b"x")), Ok(1));
    check!(nothing_at(&u));
    check!(nothing_at(&l));
    // It can be linked again, under a muxid of its own.
    let m2 = check_ok!(link(&u, &l, false));
    check!(m2 != m);
    echo(&u, &u, b"again")?;
    close(&u);
    check!(!linked(&l));
    close(&l);
    Ok(())
}

fn close_unlinks_link_keeps_plink() -> TestResult {
    let t = table()?;
    let (u1, u2) = (upper(&t)?, upper(&t)?);
    let (ll, lp) = (lower()?, lower()?);
    let ml = check_ok!(link(&u1, &ll, false));
    let mp = check_ok!(link(&u1, &lp, true));
    // I_UNLINK does not reach persistent links, I_PUNLINK not the others, and another
    // upper cannot I_UNLINK what u1 linked.
    check_eq!(unlink(&u1, mp, false), INVAL);
    check_eq!(unlink(&u1, ml, true), INVAL);
    check_eq!(unlink(&u2, ml, false), INVAL);
    close(&u1);
    check!(!linked(&ll));
    check!(linked(&lp));
    check_eq!(t.nlinks(), 1);
    // Another Stream routes itself to the persistent link and uses it.
    check_eq!(istr(&u2, MUX_ROUTE, mp), Ok(0));
    check_eq!(istr(&u2, MUX_ROUTE, ml), Err(Stop::Err(Errno::ENXIO)));
    echo(&u2, &u2, b"persistent")?;
    // A new open can I_PUNLINK it.
    let u3 = upper(&t)?;
    check_eq!(unlink(&u3, MUXID_ALL, true), Ok(0));
    check!(!linked(&lp));
    check_eq!(unlink(&u3, MUXID_ALL, true), Ok(0));
    check_eq!(t.nlinks(), 0);
    for p in [&u2, &u3, &ll, &lp] {
        close(p);
    }
    Ok(())
}

fn link_errors() -> TestResult {
    let t = table()?;
    let u = upper(&t)?;
    // Not a multiplexor: a plain Stream refuses, and the lower Stream is itself again.
    let plain = lower()?;
    let l = lower()?;
    check_eq!(link(&plain, &l, false), INVAL);
    check!(!linked(&l));
    // Nor an open of mux that never joined the table.
    let lone = open(&MUX)?;
    check_eq!(link(&lone, &l, false), INVAL);
    check!(!linked(&l));
    check_eq!(lone.op(|s| s.sth_mux_attach(t.clone(), USER)), Ok(()));
    check_eq!(
        lone.op(|s| s.sth_mux_attach(t.clone(), USER)),
        Err(Errno::EINVAL)
    );
    check_eq!(
        plain.op(|s| s.sth_mux_attach(t.clone(), USER)),
        Err(Errno::EINVAL)
    );
    // FIFOs, pipe ends, upper Streams of a multiplexor, closed and linked Streams cannot be
    // linked.
    let fifo = check_ok!(TestPerim::new_owned(check_ok!(Stream::fifo())));
    check_eq!(link(&u, &fifo, false), INVAL);
    let pipe_end = open(&PIPE_LIKE)?;
    check!(pipe_end.op(|s| s.is_pipe()));
    check_eq!(link(&u, &pipe_end, false), INVAL);
    close(&pipe_end);
    check_eq!(link(&u, &lone, false), INVAL);
    check_eq!(link(&u, &u, false), INVAL);
    let closed = lower()?;
    close(&closed);
    check_eq!(link(&u, &closed, false), INVAL);
    let m = check_ok!(link(&u, &l, false));
    check_eq!(link(&u, &l, false), INVAL);
    check_eq!(link(&lone, &l, true), INVAL);
    check_eq!(unlink(&u, m, false), Ok(0));
    // Link changes cannot be forged through I_STR, and I_LINK needs its request.
    for cmd in [I_LINK, I_PLINK, I_UNLINK, I_PUNLINK] {
        check_eq!(istr(&u, cmd as i32, 1), INVAL);
    }
    check_eq!(
        u.op(|s| s.strioctl(&Registry::new(), I_LINK, IocArg::Int(3))),
        INVAL
    );
    check_eq!(istr(&u, MUX_ROUTE, 42), Err(Stop::Err(Errno::ENXIO)));
    check_eq!(unlink(&u, MUXID_ALL, false), Ok(0));
    // No memory for the link: ENOSR, nothing linked.
    for n in 0..3 {
        let r = {
            let _g = FaultGuard::fail_after(n);
            link(&u, &l, false)
        };
        match r {
            Err(e) => check_eq!(e, Stop::Err(Errno::ENOSR)),
            Ok(m) => check_eq!(unlink(&u, m, false), Ok(0)),
        }
        settle(&[&*l]);
        check!(!linked(&l));
    }
    // A persistent link left when the last upper closes stays until the driver retires its
    // table: then the lower Stream is itself again, or closes if its file is gone.
    check_ok!(link(&u, &l, true));
    close(&l); // put off: the link holds it
    check!(!l.op(|s| s.is_closed()));
    for p in [&u, &plain, &lone, &fifo] {
        close(p);
    }
    check_eq!(t.nlinks(), 1);
    check_eq!(t.unlink_all(), 1);
    settle(&[&*l]);
    check_eq!(t.nlinks(), 0);
    check!(l.op(|s| s.is_closed()));
    Ok(())
}

fn linked_stream_file_fails_with_einval() -> TestResult {
    let t = table()?;
    let u = upper(&t)?;
    let l = lower()?;
    let m = check_ok!(link(&u, &l, false));
    check_eq!(l.op(|s| wr(s, b"x")), Err(Stop::Err(Errno::EINVAL)));
    check_eq!(l.op(|s| rd(s, 8)).err(), Some(Stop::Err(Errno::EINVAL)));
    check_eq!(
        l.op(|s| put(s, Some(b"c"), None, 0, 0)),
        Err(Stop::Err(Errno::EINVAL))
    );
    check_eq!(
        l.op(|s| get(s, 8, 8, 0, 0)).err(),
        Some(Stop::Err(Errno::EINVAL))
    );
    let reg = crate::sth::tests::reg()?;
    check_eq!(
        l.op(|s| s.strioctl(&reg, I_PUSH, IocArg::Name("pass"))),
        INVAL
    );
    check_eq!(l.op(|s| s.strpoll(POLLIN)), POLLERR);
    // Its own Stream head is out of the way: the lower half runs on the head pair.
    check!(l.op(|s| s.is_mux_lower()));
    check_eq!(l.op(|s| s.nmodules()), 0);
    echo(&u, &u, b"through")?;
    check_eq!(unlink(&u, m, false), Ok(0));
    check!(!l.op(|s| s.is_mux_lower()));
    check_eq!(l.op(|s| s.strpoll(POLLIN)), 0);
    check_eq!(l.op(|s| wr(s, b"mine")), Ok(4));
    check_eq!(check_ok!(l.op(|s| rd(s, 8))).bytes(), b"mine");
    close(&u);
    close(&l);
    Ok(())
}

fn full_upper_head_holds_lower_input() -> TestResult {
    let t = table()?;
    let u = upper(&t)?;
    let l = lower()?;
    check_ok!(link(&u, &l, false));
    // Fill the upper Stream head: sthloop echoes everything up; the upper driver read queue
    // and then the lower half hold (putq, then putbq in their service procedures) what the
    // full head refuses.
    let chunk = [7u8; 200];
    let mut sent = 0usize;
    for _ in 0..200 {
        match u.op(|s| wr(s, &chunk)) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    check_eq!(sent, 200 * chunk.len());
    let at_head = u.op(|s| s.queue(s.head_rq()).map_or(0, |q| q.count()));
    check!(at_head < sent);
    check!(at_head <= crate::stream::STRHIGH + chunk.len());
    let held_below = l.op(|s| s.queue(s.head_rq()).map_or(0, |q| q.count()));
    check!(held_below > 0);
    // Reading everything back brings every byte, in order, with nothing lost.
    let mut got = 0usize;
    for _ in 0..1000 {
        let Ok(g) = u.op(|s| rd(s, 200)) else {
            if settle(&[&*u, &*l]) == 0 {
                break;
            }
            continue;
        };
        check!(g.bytes().iter().all(|b| *b == 7));
        got += g.n;
    }
    check_eq!(got, sent);
    close(&u);
    close(&l);
    Ok(())
}

fn full_lower_holds_upper_output() -> TestResult {
    let t = table()?;
    let (u1, u2) = (upper(&t)?, upper(&t)?);
    // `hold` keeps what is written to it (hiwat 10): the lower Stream fills up.
    let l = open(&HOLD)?;
    let m = check_ok!(link(&u1, &l, true));
    check_eq!(istr(&u2, MUX_ROUTE, m), Ok(0)); // both uppers send down the one link
    let chunk = [3u8; 100];
    let mut sent = 0usize;
    let mut refused = 0;
    for i in 0..1000 {
        let u = if i % 2 == 0 { &u1 } else { &u2 };
        match u.op(|s| wr(s, &chunk)) {
            Ok(n) => sent += n,
            Err(e) => {
                check_eq!(e, Stop::Err(Errno::EAGAIN));
                refused += 1;
                if refused == 2 {
                    break;
                }
            }
        }
    }
    check_eq!(refused, 2); // both writers are flow controlled
    for u in [&u1, &u2] {
        let _ = u.op(Stream::sth_take_events);
    }
    // Drain the device: every byte arrives, in order per writer, and both writers wake.
    let mut got = 0usize;
    for _ in 0..10_000 {
        let n = l.op(|s| {
            let d = s.driver_wq()?;
            let m = s.qctx(d).getq()?;
            Some(m.msgsize())
        });
        match n {
            Some(n) => got += n,
            None => {
                if settle(&[&*u1, &*u2, &*l]) == 0 {
                    break;
                }
            }
        }
    }
    check_eq!(got, sent);
    for u in [&u1, &u2] {
        check!(u.op(Stream::sth_take_events).wake & WAKE_WRITE != 0);
        check_eq!(u.op(|s| wr(s, b"more")), Ok(4));
    }
    check_eq!(unlink(&u2, m, true), Ok(0));
    // What the lower half still held when it was unlinked went on down the Stream.
    let left = l.op(|s| {
        let d = s.driver_wq().ok_or(Errno::EINVAL)?;
        Ok::<usize, Errno>(s.queue(d).map_or(0, |q| q.count()))
    });
    check_eq!(left, Ok(8));
    for p in [&u1, &u2, &l] {
        close(p);
    }
    Ok(())
}

// One counter per test (cases run in parallel on the host): what the free routine saw.
static FREED_INFLIGHT: AtomicUsize = AtomicUsize::new(0);
static FREED_LOWER: AtomicUsize = AtomicUsize::new(0);
static FREED_UPPER: AtomicUsize = AtomicUsize::new(0);
static FREED_RETIRE: AtomicUsize = AtomicUsize::new(0);

fn free_inflight(_buf: &'static mut [u8], arg: usize) {
    FREED_INFLIGHT.fetch_add(arg, Ordering::SeqCst);
}
fn free_lower(_buf: &'static mut [u8], arg: usize) {
    FREED_LOWER.fetch_add(arg, Ordering::SeqCst);
}
fn free_upper(_buf: &'static mut [u8], arg: usize) {
    FREED_UPPER.fetch_add(arg, Ordering::SeqCst);
}
fn free_retire(_buf: &'static mut [u8], arg: usize) {
    FREED_RETIRE.fetch_add(arg, Ordering::SeqCst);
}

/// An M_DATA message of `len` bytes whose freeing adds `tag` to a counter (an esballoc block
/// with no bytes, then the bytes).
fn tagged(tag: usize, len: usize, free: fn(&'static mut [u8], usize)) -> Result<Msg, Failure> {
    let ext = ExtBuf {
        buf: &mut [],
        free,
        arg: tag,
    };
    let mut m = check_ok!(esballoc(ext, Bpri::Lo).map_err(|_| ()));
    m.linkb(check_ok!(Msg::with_type(M_DATA, len)));
    if let Some(b) = m.cont_mut() {
        b.adj_wptr(len);
    }
    Ok(m)
}

/// Claim `p`'s perimeter without running it, as when its runner has not come round yet:
/// what other Streams put there waits on its inbound list.
fn hold_off(p: &Perim) {
    p.qref(p.op(|s| s.head_wq())).backenable(0);
}

fn unlink_with_data_in_flight() -> TestResult {
    let before = FREED_INFLIGHT.load(Ordering::SeqCst);
    let t = table()?;
    let u = upper(&t)?;
    let l = lower()?;
    let m = check_ok!(link(&u, &l, false));
    // One message goes round; then the lower Stream is held off and two more are on their
    // way to it (accepted by the link: put on its inbound list) when the link goes.
    let first = tagged(1, 10, free_inflight)?;
    u.op(|s| s.write(first));
    check_eq!(u.op(|s| s.read()).and_then(|m| m.ext_arg()), Some(1));
    hold_off(&l);
    for tag in [2usize, 4] {
        let mp = tagged(tag, 10, free_inflight)?;
        u.op(|s| s.write(mp));
    }
    check!(nothing_at(&u));
    check_eq!(unlink(&u, m, false), Ok(0));
    check_eq!(t.nlinks(), 0);
    check!(l.is_scheduled()); // the lower Stream has not run since
    settle(&[&*u, &*l]);
    check!(!linked(&l));
    // The two were delivered down the lower Stream while the lower half was still there;
    // their echoes, which the lower half held when the link went, wait at the lower
    // Stream's head: nothing lost, nothing freed twice.
    check!(nothing_at(&u));
    check_eq!(FREED_INFLIGHT.load(Ordering::SeqCst) - before, 1);
    let mut tags = 0;
    while let Some(mp) = l.op(|s| s.read()) {
        tags += check_some!(mp.ext_arg());
    }
    check_eq!(tags, 6);
    check_eq!(FREED_INFLIGHT.load(Ordering::SeqCst) - before, 7);
    close(&u);
    close(&l);
    check_eq!(FREED_INFLIGHT.load(Ordering::SeqCst) - before, 7);
    Ok(())
}

fn close_lower_while_upper_routes_to_it() -> TestResult {
    let before = FREED_LOWER.load(Ordering::SeqCst);
    let t = table()?;
    let u = upper(&t)?;
    let l = lower()?;
    check_ok!(link(&u, &l, false));
    // The lower Stream's file is closed: no close-time drain (nothing closes yet), and the
    // link holds the Stream, which keeps working.
    check_eq!(
        l.op(|s| s.sth_close_drain(false, false)),
        crate::sth::Drain::Done
    );
    close(&l);
    check!(!l.op(|s| s.is_closed()));
    let mp = tagged(1, 10, free_lower)?;
    u.op(|s| s.write(mp));
    check_eq!(u.op(|s| s.read()).and_then(|m| m.ext_arg()), Some(1));
    // In flight when the upper closes (which unlinks): the lower Stream is held off.
    hold_off(&l);
    for tag in [2usize, 4] {
        let mp = tagged(tag, 10, free_lower)?;
        u.op(|s| s.write(mp));
    }
    close(&u);
    check!(l.is_scheduled()); // the lower Stream has not run since
    settle(&[&*l]);
    // Unlinked, its file gone: it closed, and everything was freed once.
    check!(l.op(|s| s.is_closed()));
    check!(!linked(&l));
    check_eq!(FREED_LOWER.load(Ordering::SeqCst) - before, 7);
    check_eq!(t.nlinks(), 0);
    Ok(())
}

fn close_upper_while_lower_routes_up() -> TestResult {
    let before = FREED_UPPER.load(Ordering::SeqCst);
    let t = table()?;
    let (u1, u2) = (upper(&t)?, upper(&t)?);
    let l = lower()?;
    let m = check_ok!(link(&u1, &l, true));
    // u1's head fills: the upper driver read queue and the lower half hold the rest.
    let mut total = 0usize;
    for i in 0..40usize {
        let tag = 1usize << (i % 20);
        let mp = tagged(tag, 1000, free_upper)?;
        total += tag;
        u1.op(|s| s.write(mp));
    }
    let held_below = l.op(|s| s.queue(s.head_rq()).map_or(0, |q| q.qsize()));
    check!(held_below > 0);
    // Some are on their way up when u1 closes: u1 is held off, so they wait on its
    // inbound list.
    hold_off(&u1);
    l.op(|s| {
        let h = s.head_rq();
        s.qctx(h).qenable();
    });
    close(&u1);
    // The persistent link stays, without a route: the lower half's held messages stay
    // with it until someone routes there again.
    check!(linked(&l));
    check_eq!(istr(&u2, MUX_ROUTE, m), Ok(0));
    let mut n = 0usize;
    for _ in 0..1000 {
        match u2.op(|s| s.read()) {
            Some(mp) => {
                check!(mp.ext_arg().is_some());
                n += 1;
            }
            None => {
                if settle(&[&*u2, &*l]) == 0 {
                    break;
                }
            }
        }
    }
    check!(n > 0);
    check!(n < 40); // what had reached u1 went with it
    check_eq!(unlink(&u2, m, true), Ok(0));
    close(&u2);
    close(&l);
    check_eq!(FREED_UPPER.load(Ordering::SeqCst) - before, total);
    Ok(())
}

fn unlink_keeps_what_the_lower_half_held() -> TestResult {
    let t = table()?;
    let u = upper(&t)?;
    let l = lower()?;
    let m = check_ok!(link(&u, &l, false));
    // The upper head fills, the lower half holds the rest; unlinked, the lower Stream's head
    // has it to read: the Stream comes back with what was on its way.
    let chunk = [9u8; 200];
    for _ in 0..100 {
        check_ok!(u.op(|s| wr(s, &chunk)));
    }
    let held = l.op(|s| s.queue(s.head_rq()).map_or(0, |q| q.count()));
    check!(held > 0);
    check_eq!(unlink(&u, m, false), Ok(0));
    check!(!linked(&l));
    let mut got = 0usize;
    while let Ok(g) = l.op(|s| rd(s, 200)) {
        check!(g.bytes().iter().all(|b| *b == 9));
        got += g.n;
    }
    check_eq!(got, held);
    close(&u);
    close(&l);
    Ok(())
}

fn routes_follow_mux_route_and_close() -> TestResult {
    let t = table()?;
    let (u1, u2) = (upper(&t)?, upper(&t)?);
    let (l1, l2) = (lower()?, lower()?);
    let m1 = check_ok!(link(&u1, &l1, true));
    let m2 = check_ok!(link(&u1, &l2, true));
    check_eq!(t.route_of(upper_id(&u1)?), Some(m2)); // the one it made last
    echo(&u1, &u1, b"via two")?;
    // u2 takes link 1: it sends down link 1 and what comes up link 1 goes to u2.
    check_eq!(istr(&u2, MUX_ROUTE, m1), Ok(0));
    echo(&u2, &u2, b"via one")?;
    // u1 routes itself back to link 1: the echo comes back to it now.
    check_eq!(istr(&u1, MUX_ROUTE, m1), Ok(0));
    echo(&u1, &u1, b"mine again")?;
    // u2 still sends down link 1, but its echo goes to u1, the last routed there.
    check_eq!(u2.op(|s| wr(s, b"crossed")), Ok(7));
    check_eq!(check_ok!(u1.op(|s| rd(s, 64))).bytes(), b"crossed");
    check!(nothing_at(&u2));
    // u1 closes: links routed to it lose their route (echoes are freed), the persistent
    // links stay.
    close(&u1);
    check_eq!(t.nlinks(), 2);
    check_eq!(u2.op(|s| wr(s, b"void")), Ok(4));
    check!(nothing_at(&u2));
    check_eq!(istr(&u2, MUX_ROUTE, m2), Ok(0));
    echo(&u2, &u2, b"two")?;
    check_eq!(unlink(&u2, MUXID_ALL, true), Ok(0));
    check_eq!(t.nlinks(), 0);
    for p in [&u2, &l1, &l2] {
        close(p);
    }
    Ok(())
}

/// A Stream that looks like a pipe end to its head (its driver has the twist's name).
static PIPE_LIKE: StreamTab = StreamTab {
    info: ModuleInfo {
        mi_idname: crate::sth::pipe::PIPE_NAME,
        ..crate::stream::testmods::LOOP.info
    },
    open: crate::stream::testmods::LOOP.open,
};

/// `mux` whose upper half never answers a link ioctl (a driver that is slow to answer).
struct Silent(Upper);

impl StreamModule for Silent {
    fn wput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        let cmd = IocBlk::decode(mp.rd()).map_or(0, |i| i.cmd as u32);
        if mp.db_type() == M_IOCTL && matches!(cmd, I_LINK | I_PLINK) {
            drop(mp); // never answered
            return;
        }
        self.0.wput(cx, mp)
    }
    fn wsrv(&mut self, cx: &mut QCtx<'_>) {
        self.0.wsrv(cx)
    }
    fn rput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        self.0.rput(cx, mp)
    }
    fn rsrv(&mut self, cx: &mut QCtx<'_>) {
        self.0.rsrv(cx)
    }
    fn has_rsrv(&self) -> bool {
        true
    }
    fn has_wsrv(&self) -> bool {
        true
    }
    fn mux(&mut self) -> Option<&mut dyn Multiplexor> {
        Some(&mut self.0)
    }
}

fn open_silent(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<crate::sys::Box<dyn StreamModule>, Errno> {
    Ok(crate::box_dyn!(Silent(Upper { mux: None }) => dyn StreamModule)?)
}

static SILENT: StreamTab = StreamTab {
    info: ModuleInfo {
        mi_idname: "silentmux",
        ..MUX.info
    },
    open: open_silent,
};

fn link_given_up_is_undone() -> TestResult {
    let t = table()?;
    let u = open(&SILENT)?;
    check_eq!(u.op(|s| s.sth_mux_attach(t.clone(), USER)), Ok(()));
    let l = lower()?;
    let lp: Arc<dyn Perimeter> = l.clone();
    // The driver does not answer: the ioctl waits, the link is recorded and its lower half
    // installed meanwhile (the lower Stream ran after the ioctl's lock hold).
    let mut req = check_ok!(LinkReq::new(lp.clone(), false));
    check_eq!(l.op(|s| s.sth_link_lower(&mut req)), Ok(()));
    let r = u.op(|s| s.strioctl(&Registry::new(), I_LINK, IocArg::Link(&mut req)));
    check_eq!(r, Err(Stop::Block(crate::sth::Block::IoctlAck)));
    check!(req.pending_muxid().is_some());
    check_eq!(t.nlinks(), 1);
    check!(l.op(|s| s.is_mux_lower()));
    // The platform gives up (a signal, the time limit): the link goes, the Stream is back.
    u.op(|s| s.sth_link_cancel(&mut req));
    check_eq!(t.nlinks(), 0);
    check!(!linked(&l));
    check!(!l.op(|s| s.is_mux_lower()));
    drop(req);
    // A request dropped while it waits is undone too (the lower Stream runs on its own).
    let mut req = check_ok!(LinkReq::new(lp, true));
    check_eq!(l.op(|s| s.sth_link_lower(&mut req)), Ok(()));
    let r = u.op(|s| s.strioctl(&Registry::new(), I_PLINK, IocArg::Link(&mut req)));
    check_eq!(r, Err(Stop::Block(crate::sth::Block::IoctlAck)));
    check!(req.pending_muxid().is_some());
    drop(req);
    check_eq!(t.nlinks(), 0);
    settle(&[&*l]);
    check!(!linked(&l));
    check_eq!(l.op(|s| wr(s, b"free")), Ok(4));
    check_eq!(check_ok!(l.op(|s| rd(s, 8))).bytes(), b"free");
    close(&u);
    close(&l);
    Ok(())
}

/// Another user's upper Stream can neither route itself to a link (reading and injecting its
/// traffic) nor I_PUNLINK it (EPERM; MUXID_ALL skips it); a privileged one can.
fn other_users_links_are_out_of_reach() -> TestResult {
    let t = table()?;
    let other = MuxCred {
        user: 2000,
        privileged: false,
    };
    let root = MuxCred {
        user: 0,
        privileged: true,
    };
    let (ua, ub, ur) = (upper(&t)?, upper_as(&t, other)?, upper_as(&t, root)?);
    let (la, lb) = (lower()?, lower()?);
    let ma = check_ok!(link(&ua, &la, true));
    let mb = check_ok!(link(&ub, &lb, true));
    let eperm = Err(Stop::Err(Errno::EPERM));
    check_eq!(istr(&ub, MUX_ROUTE, ma), eperm);
    check_eq!(istr(&ua, MUX_ROUTE, mb), eperm);
    check_eq!(unlink(&ub, ma, true), eperm);
    // MUXID_ALL takes only the caller's own persistent links.
    check_eq!(unlink(&ub, MUXID_ALL, true), Ok(0));
    check_eq!(t.nlinks(), 1);
    check!(!linked(&lb));
    echo(&ua, &ua, b"still mine")?;
    check!(nothing_at(&ub));
    // Privilege reaches every link.
    check_eq!(istr(&ur, MUX_ROUTE, ma), Ok(0));
    echo(&ur, &ur, b"root")?;
    check_eq!(unlink(&ur, ma, true), Ok(0));
    check_eq!(t.nlinks(), 0);
    for p in [&ua, &ub, &ur, &la, &lb] {
        close(p);
    }
    Ok(())
}

/// Module unload with a persistent link left (its lower Stream's file and every upper Stream
/// closed, as when a killed process's I_PLINK was never undone): the table holds the lower
/// Stream and the lower half on it holds the table, a cycle that dropping the platform's
/// reference to the table does not break (kmemleak after `rmmod`: the table's lock box and
/// `Arc` from module init, the lower Stream's blocks from its open and the link's from the
/// ioctl). Retiring the table (`unlink_all`, what `streams.ko` does when its `mux` device
/// goes) breaks it: the lower Stream closes, frees what it held and lets go of the table.
fn retired_table_lets_everything_go() -> TestResult {
    let before = FREED_RETIRE.load(Ordering::SeqCst);
    let t = table()?;
    let u = upper(&t)?;
    let l = lower()?;
    check_ok!(link(&u, &l, true));
    let first = tagged(1, 10, free_retire)?;
    u.op(|s| s.write(first));
    check_eq!(u.op(|s| s.read()).and_then(|m| m.ext_arg()), Some(1));
    // Two more on their way to the lower Stream (held off: its runner has not come round)
    // when everything closes.
    hold_off(&l);
    for tag in [2usize, 4] {
        let mp = tagged(tag, 10, free_retire)?;
        u.op(|s| s.write(mp));
    }
    close(&l); // put off: the link holds it
    close(&u); // persistent: the link stays
    settle(&[&*u]);
    check!(!l.op(|s| s.is_closed()));
    check_eq!(t.nlinks(), 1);
    check_eq!(t.nuppers(), 0);
    // The cycle: more than the test's own reference holds the table.
    #[cfg(not(rstreams_kernel))]
    check!(Arc::strong_count(&t) > 1);
    check_eq!(t.unlink_all(), 1);
    settle(&[&*l]);
    check_eq!(t.nlinks(), 0);
    check!(!linked(&l));
    check!(l.op(|s| s.is_closed()));
    check_eq!(FREED_RETIRE.load(Ordering::SeqCst) - before, 7);
    // Nothing but the test holds the table any more: dropping it frees it.
    #[cfg(not(rstreams_kernel))]
    check_eq!(Arc::strong_count(&t), 1);
    check_eq!(t.unlink_all(), 0);
    Ok(())
}

/// The table's name for upper `u` (what the driver's instance keeps).
fn upper_id(u: &Perim) -> Result<UpperId, Failure> {
    Ok(check_some!(u.op(|s| s.sth().mux_id())))
}

ktest_suite!(MUX_SUITE, "streams_mux":
    link_routes_both_ways,
    unlink_gives_the_stream_back,
    close_unlinks_link_keeps_plink,
    link_errors,
    linked_stream_file_fails_with_einval,
    full_upper_head_holds_lower_input,
    full_lower_holds_upper_output,
    unlink_with_data_in_flight,
    close_lower_while_upper_routes_to_it,
    close_upper_while_lower_routes_up,
    unlink_keeps_what_the_lower_half_held,
    routes_follow_mux_route_and_close,
    link_given_up_is_undone,
    other_users_links_are_out_of_reach,
    retired_table_lets_everything_go,
);
