//! Shared tests of modules pushed on pipe ends, driven through the real Stream heads: bufmod
//! on one end, and the close-time drain of an end's own modules.

use super::TestPipe;
use streams_core::errno::Errno;
use streams_core::ktest::TestResult;
use streams_core::mods::bufmod::{SbHdr, BUFMOD, SBIOCGCHUNK, SBIOCSCHUNK};
use streams_core::msg::{Msg, M_DATA};
use streams_core::queue::QField;
use streams_core::sth::consts::*;
use streams_core::sth::tests::{rd, reg, wr, BUF};
use streams_core::sth::{Drain, IocArg, SliceIo, Stop, StrIoctl, Stream, WAKE_WRITE};
use streams_core::stream::Registry;
use streams_core::{check, check_eq, check_ok, check_some, ktest_suite};

/// bufmod on end 1 of a STREAMS pipe, set up and driven through the real Stream heads:
/// I_PUSH, I_STR SBIOCSCHUNK/SBIOCGCHUNK, write on end 0, chunked records read on end 1.
fn pipe_end_push_istr_and_read() -> TestResult {
    let s = check_ok!(TestPipe::new());
    let mut reg = Registry::new();
    check_ok!(reg.register_module(&BUFMOD));
    let push = s.end(1, |s| s.strioctl(&reg, I_PUSH, IocArg::Name("bufmod")));
    check_eq!(push, Ok(0));
    let hi = s.end(1, |s| {
        let h = s.head_rq();
        s.qctx(h).strqget(QField::Hiwat, 0)
    });
    check_eq!(hi, Ok(4 * 8192 + 512)); // the M_SETOPTS reached end 1's head
    let req = check_ok!(Msg::from_bytes(M_DATA, &64u32.to_ne_bytes()));
    let mut st = StrIoctl::new(SBIOCSCHUNK, -1, 4, Some(req));
    let r = s.end(1, |s| s.strioctl(&reg, I_STR, IocArg::Str(&mut st)));
    check_eq!(r, Ok(0));
    let req = check_ok!(Msg::from_bytes(M_DATA, &[0u8; 4]));
    let mut st = StrIoctl::new(SBIOCGCHUNK, -1, 4, Some(req));
    let r = s.end(1, |s| s.strioctl(&reg, I_STR, IocArg::Str(&mut st)));
    check_eq!((r, st.len), (Ok(0), 4));
    let mut b = [0u8; 4];
    check_ok!(st.copy_answer(&mut SliceIo(&mut b)));
    check_eq!(u32::from_ne_bytes(b), 64);
    for d in [b"first.....", b"second....", b"third....."] {
        check_eq!(s.end(0, |s| wr(s, d)), Ok(10));
    }
    // Two 40-byte records have gone up (each when the next did not fit); the third waits.
    let g = check_ok!(s.end(1, |s| rd(s, 256)));
    check_eq!(g.n, 80);
    let h = check_some!(SbHdr::decode(g.bytes()));
    check_eq!((h.msglen, h.totlen), (10, 40));
    check_eq!(g.bytes().get(64..74), Some(&b"second...."[..]));
    let again = s.end(1, |s| rd(s, 256)).err();
    check_eq!(again, Some(Stop::Err(Errno::EAGAIN)));
    // I_FLUSH FLUSHW on end 1 pushes the partial chunk up to its reader.
    let r = s.end(1, |s| s.strioctl(&reg, I_FLUSH, IocArg::Int(2)));
    check_eq!(r, Ok(0));
    let g = check_ok!(s.end(1, |s| rd(s, 256)));
    check_eq!((g.n, g.bytes().get(24..34)), (40, Some(&b"third....."[..])));
    Ok(())
}

/// A pipe end waits only for its own modules (not the other end's read queue), and is woken
/// when the other end's reads let them drain: the back-enable crosses the perimeters.
fn close_pipe_end_drains_its_modules() -> TestResult {
    let s = check_ok!(TestPipe::new());
    let r = reg()?;
    check_eq!(
        s.end(0, |s| s.strioctl(&r, I_PUSH, IocArg::Name("pass"))),
        Ok(0)
    );
    let mut sent = 0usize;
    while sent < 1_000_000 {
        match s.end(0, |s| wr(s, &[7u8; 200])) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    check!(sent < 1_000_000);
    check_eq!(
        s.end(0, |s| s.sth_close_drain(false, false)),
        Drain::Wait {
            level: 1,
            ms: STRCLTIME_DEFAULT
        }
    );
    let _ = s.end(0, Stream::sth_take_events);
    let mut got = 0usize;
    while got < sent {
        match s.end(1, |s| rd(s, BUF)) {
            Ok(g) if g.n > 0 => got += g.n,
            _ => check!(s.settle() > 0), // nothing readable: something must move
        }
    }
    let ev = s.end(0, Stream::sth_take_events);
    check!(ev.wake & WAKE_WRITE != 0);
    check_eq!(s.end(0, |s| s.sth_close_drain(false, false)), Drain::Done);
    check_eq!(s.end(0, |s| s.nmodules()), 0);
    s.close(0);
    Ok(())
}

ktest_suite!(PIPE_ENDS_SUITE, "streams_pipe_ends":
    pipe_end_push_istr_and_read,
    close_pipe_end_drains_its_modules,
);
