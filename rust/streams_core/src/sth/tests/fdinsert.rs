//! Shared (host + KUnit) tests of I_FDINSERT at the Stream head: the message it builds (seen
//! through `sthloop`, which sends it back up), the tokens, and every error. What a driver does
//! with the token is tested with the `loop` driver (`mods/loopdrv/tests.rs`).

use crate::errno::Errno;
use crate::ktest::TestResult;
use crate::queue::tests::FaultGuard;
use crate::sth::consts::{I_FDINSERT, MSG_HIPRI, RS_HIPRI, STRCTLSZ};
use crate::sth::fdinsert::FDINSERT_TOKEN;
use crate::sth::tests::drivers::{PSZ4, STHLOOP};
use crate::sth::tests::{get, rd};
use crate::sth::{FailIo, FdInsert, FdTarget, IocArg, Part, SliceIo, Stop, NO_QUEUE};
use crate::stream::Registry;
use crate::sth::Stream;
use crate::{check, check_eq, check_ok, ktest_suite};

const INVAL: Result<i32, Stop> = Err(Stop::Err(Errno::EINVAL));

/// I_FDINSERT on the Stream swapped in: control part `ctl` (its `len` overridable with
/// `clen`), the token at `offset`, `flags`, an optional data part; non-blocking.
pub(crate) struct Ins<'a> {
    pub(crate) ctl: &'a [u8],
    pub(crate) clen: Option<i32>,
    pub(crate) data: Option<&'a [u8]>,
    pub(crate) flags: i64,
    pub(crate) offset: i32,
    pub(crate) target: FdTarget,
}

impl Ins<'_> {
    pub(crate) fn to(target: FdTarget) -> Ins<'static> {
        Ins {
            ctl: &[0; FDINSERT_TOKEN],
            clen: None,
            data: None,
            flags: 0,
            offset: 0,
            target,
        }
    }
    pub(crate) fn run(&self, s: &mut Stream) -> Result<i32, Stop> {
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

ktest_suite!(STH_FDINSERT_SUITE, "streams_sth_fdinsert":
    fdinsert_builds_the_message,
    fdinsert_errors,
);
