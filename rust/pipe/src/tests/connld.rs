//! Shared (host + KUnit) tests of `connld`: pushed only on a pipe end, transparent to data,
//! and the head side of an open of an attached path ([`connld_pass`]): the passed
//! file reaches the other end, flow control (EAGAIN or wait, the message kept), hangup.

use core::sync::atomic::{AtomicUsize, Ordering};

use super::super::connld::*;
use super::TestPipe;
use streams_core::errno::Errno;
use streams_core::ktest::{Failure, TestResult};
use streams_core::msg::{esballoc, Bpri, ExtBuf, Msg, M_DATA, M_PASSFP};
use streams_core::sth::consts::{I_PUSH, I_SET_HIWAT, I_SET_LOWAT};
use streams_core::sth::tests::drivers::STHLOOP;
use streams_core::sth::tests::{rd, wr};
use streams_core::sth::{Block, IocArg, ReaderToken, Stop, Stream, WAKE_WRITE};
use streams_core::stream::Registry;
use streams_core::{check, check_eq, check_ok, ktest_suite};

// One counter per test (cases run in parallel on the host): what the free routine saw.
static FREED_PASS: AtomicUsize = AtomicUsize::new(0);
static FREED_FLOW: AtomicUsize = AtomicUsize::new(0);
static FREED_HUP: AtomicUsize = AtomicUsize::new(0);

fn free_pass(_buf: &'static mut [u8], arg: usize) {
    FREED_PASS.fetch_add(arg, Ordering::SeqCst);
}
fn free_flow(_buf: &'static mut [u8], arg: usize) {
    FREED_FLOW.fetch_add(arg, Ordering::SeqCst);
}
fn free_hup(_buf: &'static mut [u8], arg: usize) {
    FREED_HUP.fetch_add(arg, Ordering::SeqCst);
}

/// An M_PASSFP message as the platform builds it (the file block and 8 bytes of sender
/// credentials); freeing it calls `free` with `tag`.
fn passfp(tag: usize, free: fn(&'static mut [u8], usize)) -> Result<Option<Msg>, Failure> {
    let ext = ExtBuf {
        buf: &mut [],
        free,
        arg: tag,
    };
    let mut m = check_ok!(esballoc(ext, Bpri::Hi).map_err(|_| ()));
    m.set_type(M_PASSFP);
    let mut ids = check_ok!(Msg::with_type(M_DATA, 8));
    ids.adj_wptr(8);
    m.linkb(ids);
    Ok(Some(m))
}

fn registry() -> Result<Registry, Failure> {
    let mut r = Registry::new();
    check_ok!(r.register_module(&CONNLD));
    Ok(r)
}

/// A pipe with connld pushed on end 0 (the end a server attaches).
fn served_pipe() -> Result<TestPipe, Failure> {
    let r = registry()?;
    let s = check_ok!(TestPipe::new());
    check_eq!(
        s.end(0, |s| s.strioctl(&r, I_PUSH, IocArg::Name(CONNLD_NAME))),
        Ok(0)
    );
    Ok(s)
}

fn pushed_only_on_a_pipe_and_transparent() -> TestResult {
    let r = registry()?;
    let s = served_pipe()?;
    check!(s.end(0, |s| sth_connld(s)));
    check!(!s.end(1, |s| sth_connld(s)));
    // Data goes through both ways unchanged.
    check_eq!(s.end(0, |s| wr(s, b"from the server end")), Ok(19));
    check_eq!(
        check_ok!(s.end(1, |s| rd(s, 64))).bytes(),
        b"from the server end"
    );
    check_eq!(s.end(1, |s| wr(s, b"to it")), Ok(5));
    check_eq!(check_ok!(s.end(0, |s| rd(s, 64))).bytes(), b"to it");
    // Not a pipe: connld's open refuses, nothing is pushed.
    let mut d = check_ok!(Stream::sth_new(&STHLOOP));
    check_eq!(
        d.strioctl(&r, I_PUSH, IocArg::Name(CONNLD_NAME)),
        Err(Stop::Err(Errno::EINVAL))
    );
    check_eq!(d.nmodules(), 0);
    check!(!sth_connld(&d));
    Ok(())
}

fn pass_reaches_the_other_end() -> TestResult {
    let before = FREED_PASS.load(Ordering::SeqCst);
    // Without connld the open is an ordinary one: nothing sent, the message kept.
    let plain = check_ok!(TestPipe::new());
    let mut mp = passfp(1, free_pass)?;
    check_eq!(plain.end(0, |s| connld_pass(s, &mut mp, true)), Ok(false));
    check!(mp.is_some());
    drop(mp);
    check_eq!(FREED_PASS.load(Ordering::SeqCst) - before, 1);
    let s = served_pipe()?;
    // Only M_PASSFP.
    let mut data = Some(check_ok!(Msg::with_type(M_DATA, 4)));
    check_eq!(
        s.end(0, |s| connld_pass(s, &mut data, true)),
        Err(Stop::Err(Errno::EINVAL))
    );
    // The end without connld: ordinary.
    let mut mp = passfp(1 << 8, free_pass)?;
    check_eq!(s.end(1, |s| connld_pass(s, &mut mp, true)), Ok(false));
    check_eq!(s.end(0, |s| connld_pass(s, &mut mp, true)), Ok(true));
    check!(mp.is_none());
    let mut mp = passfp(1 << 16, free_pass)?;
    check_eq!(s.end(0, |s| connld_pass(s, &mut mp, false)), Ok(true));
    // Both arrive at the other end, in order, for I_RECVFD.
    let m = check_ok!(s.end(1, |s| s.strrecvfd(true, &ReaderToken::new())));
    check_eq!(m.ext_arg(), Some(1 << 8));
    drop(m);
    let m = check_ok!(s.end(1, |s| s.strrecvfd(true, &ReaderToken::new())));
    check_eq!(m.ext_arg(), Some(1 << 16));
    drop(m);
    check_eq!(
        FREED_PASS.load(Ordering::SeqCst) - before,
        1 + (1 << 8) + (1 << 16)
    );
    Ok(())
}

fn pass_waits_for_room() -> TestResult {
    let r = registry()?;
    let s = served_pipe()?;
    // Room for one pending connection at the other end (8 bytes of credentials each).
    check_eq!(
        s.end(1, |s| s.strioctl(&r, I_SET_LOWAT, IocArg::Int(0))),
        Ok(0)
    );
    check_eq!(
        s.end(1, |s| s.strioctl(&r, I_SET_HIWAT, IocArg::Int(8))),
        Ok(0)
    );
    let before = FREED_FLOW.load(Ordering::SeqCst);
    let mut first = passfp(1, free_flow)?;
    check_eq!(s.end(0, |s| connld_pass(s, &mut first, true)), Ok(true));
    let mut second = passfp(2, free_flow)?;
    check_eq!(
        s.end(0, |s| connld_pass(s, &mut second, true)),
        Err(Stop::Err(Errno::EAGAIN))
    );
    check_eq!(
        s.end(0, |s| connld_pass(s, &mut second, false)),
        Err(Stop::Block(Block::Writable(0)))
    );
    check!(second.is_some());
    let _ = s.end(0, Stream::sth_take_events);
    // The server takes the first: the waiting open is woken and gets through.
    drop(check_ok!(
        s.end(1, |s| s.strrecvfd(true, &ReaderToken::new()))
    ));
    check!(s.end(0, Stream::sth_take_events).wake & WAKE_WRITE != 0);
    check_eq!(s.end(0, |s| connld_pass(s, &mut second, false)), Ok(true));
    check_eq!(
        check_ok!(s.end(1, |s| s.strrecvfd(true, &ReaderToken::new()))).ext_arg(),
        Some(2)
    );
    check_eq!(FREED_FLOW.load(Ordering::SeqCst) - before, 3);
    Ok(())
}

fn pass_after_hangup_is_enxio() -> TestResult {
    let s = served_pipe()?;
    s.close(1);
    let _ = s.end(0, Stream::sth_take_events);
    let before = FREED_HUP.load(Ordering::SeqCst);
    let mut mp = passfp(5, free_hup)?;
    check_eq!(
        s.end(0, |s| connld_pass(s, &mut mp, false)),
        Err(Stop::Err(Errno::ENXIO))
    );
    // An open, not a write: no SIGPIPE.
    check!(!s.end(0, Stream::sth_take_events).sigpipe);
    check!(mp.is_some());
    drop(mp);
    check_eq!(FREED_HUP.load(Ordering::SeqCst) - before, 5);
    Ok(())
}

ktest_suite!(CONNLD_SUITE, "streams_connld":
    pushed_only_on_a_pipe_and_transparent,
    pass_reaches_the_other_end,
    pass_waits_for_room,
    pass_after_hangup_is_enxio,
);
