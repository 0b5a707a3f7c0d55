//! Shared (host + KUnit) tests of I_FDINSERT at the Stream head: the message it builds (seen
//! through `sthloop`, which sends it back up), the token and the reference block, how
//! `fildes` is resolved, and every error. What a driver does with the reference is tested with
//! the `loop` driver (`mods/loopdrv/tests.rs`).

use super::perim::{close, fdinsert_target, open, Perim};
use crate::errno::Errno;
use crate::ktest::TestResult;
use crate::perim::test::{settle, TestPerim};
use crate::queue::tests::FaultGuard;
use crate::sth::call;
use crate::sth::consts::{MSG_HIPRI, RS_HIPRI, STRCTLSZ, STRMSGSZ};
use crate::sth::fdinsert::FDINSERT_TOKEN;
use crate::sth::tests::drivers::{PSZ4, STHLOOP};
use crate::sth::tests::{get, rd, Direct};
use crate::sth::{FailIo, FdInsertArgs, LinkReq, Part, SliceIo, Stop, Stream, NO_QUEUE};
use crate::stream::{Perimeter, QRef, Registry};
use crate::sys::Arc;
use crate::{check, check_eq, check_ok, check_some, ktest_suite};

const INVAL: Result<i32, Stop> = Err(Stop::Err(Errno::EINVAL));

/// I_FDINSERT: control part `ctl` (its `len` overridable with `clen`), the token at `offset`,
/// `flags`, an optional data part; `fildes` resolved into `target`; non-blocking.
pub(crate) struct Ins<'a> {
    pub(crate) ctl: &'a [u8],
    pub(crate) clen: Option<i32>,
    pub(crate) data: Option<&'a [u8]>,
    pub(crate) flags: i64,
    pub(crate) offset: i32,
    pub(crate) target: Option<(QRef, &'static str)>,
}

impl Ins<'_> {
    /// The plain request of APUE's `s_pipe`: an 8-byte control part holding the token.
    pub(crate) fn to(target: Option<(QRef, &'static str)>) -> Ins<'static> {
        Ins {
            ctl: &[0; FDINSERT_TOKEN],
            clen: None,
            data: None,
            flags: 0,
            offset: 0,
            target,
        }
    }
    /// Run it on `s` through the platform's half (`sth::call::fdinsert`).
    pub(crate) fn run(&self, s: &mut Stream) -> Result<i32, Stop> {
        let mut cb = [0u8; 64];
        let cn = self.ctl.len().min(cb.len());
        crate::sys::copy_bytes(&mut cb, self.ctl);
        let mut db = [0u8; 64];
        let dn = self.data.map_or(0, |d| d.len().min(db.len()));
        crate::sys::copy_bytes(&mut db, self.data.unwrap_or_default());
        let mut cio = SliceIo(cb.get_mut(..cn).unwrap_or_default());
        let mut dio = SliceIo(db.get_mut(..dn).unwrap_or_default());
        let a = FdInsertArgs {
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
            target: self.target.clone(),
        };
        call::fdinsert(&Direct::new(s), &Registry::new(), a, true).map_err(Stop::Err)
    }
}

/// I_FDINSERT on `p` with `fildes` = `to`, resolved as the platform does.
pub(crate) fn fdinsert(p: &Perim, to: &Perim) -> Result<i32, Stop> {
    let target = fdinsert_target(to)?;
    p.op(|s| Ins::to(target).run(s))
}

fn fdinsert_builds_the_message() -> TestResult {
    // sthloop sends every message back up: the head gets what I_FDINSERT sent down.
    let s = open(&STHLOOP)?;
    let target = check_ok!(fdinsert_target(&s)); // `fildes` is this Stream itself
    let (tq, tname) = check_some!(target.clone());
    let tok = check_ok!(s.op(|s| s.driver_rq().ok_or(Errno::EINVAL))).raw();
    check_eq!(tq.qid().raw(), tok);
    check_eq!(tname, "sthloop");
    let ctl = [0xaau8; 24];
    let ins = Ins {
        ctl: &ctl,
        clen: None,
        data: Some(b"payload"),
        flags: 0,
        offset: 8,
        target,
    };
    check_eq!(s.op(|s| ins.run(s)), Ok(0));
    drop(ins);
    // The reference travels as a block of its own after the user's control block.
    let seen = s.op(|s| {
        let h = s.head_rq();
        let first = s.queue(h).and_then(|q| q.first())?;
        let (q, name) = first.blocks().find_map(|b| b.qref())?;
        Some((q.same(&tq), name, first.blen()))
    });
    check_eq!(seen, Some((true, "sthloop", 24)));
    let (g, c, d) = check_ok!(s.op(|s| get(s, 64, 64, 0, 0)));
    check!(g.flags != MSG_HIPRI);
    check_eq!(g.ctl_len, 24); // the reference block adds no bytes
    check_eq!(c.bytes().get(..8), Some(&[0xaau8; 8][..]));
    check_eq!(c.bytes().get(8..16), Some(&tok.to_ne_bytes()[..]));
    check_eq!(c.bytes().get(16..), Some(&[0xaau8; 8][..]));
    check_eq!(d.bytes(), b"payload");
    // RS_HIPRI: M_PCPROTO; a Stream without a driver (a FIFO): a token that names no queue,
    // and no reference.
    let fifo = check_ok!(TestPerim::new_owned(check_ok!(Stream::fifo())));
    let none = check_ok!(fdinsert_target(&fifo));
    check!(none.is_none());
    let ins = Ins {
        flags: i64::from(RS_HIPRI),
        ..Ins::to(none)
    };
    check_eq!(s.op(|s| ins.run(s)), Ok(0));
    let refs = s.op(|s| {
        let h = s.head_rq();
        s.queue(h)
            .and_then(|q| q.first())
            .map(|m| m.blocks().filter(|b| b.qref().is_some()).count())
    });
    check_eq!(refs, Some(0));
    let (g, c, d) = check_ok!(s.op(|s| get(s, 64, 64, 0, MSG_HIPRI)));
    check_eq!(g.flags, MSG_HIPRI);
    check_eq!(c.bytes(), &NO_QUEUE.to_ne_bytes()[..]);
    check_eq!(g.data_len, -1);
    check_eq!(d.n, 0);
    close(&s);
    fifo.op(Stream::sth_close);
    fifo.close_gate();
    Ok(())
}

fn fdinsert_errors() -> TestResult {
    let s = open(&STHLOOP)?;
    let here = check_ok!(fdinsert_target(&s));
    let bad = [
        // flags neither 0 nor RS_HIPRI
        Ins {
            flags: 2,
            ..Ins::to(here.clone())
        },
        // ctlbuf.len not positive
        Ins {
            clen: Some(0),
            ..Ins::to(here.clone())
        },
        Ins {
            clen: Some(-1),
            ..Ins::to(here.clone())
        },
        // offset not pointer-aligned, negative, or the token past the control part
        Ins {
            ctl: &[0; 16],
            offset: 4,
            ..Ins::to(here.clone())
        },
        Ins {
            ctl: &[0; 16],
            offset: -8,
            ..Ins::to(here.clone())
        },
        Ins {
            ctl: &[0; 16],
            offset: 16,
            ..Ins::to(here.clone())
        },
        Ins {
            ctl: &[0; 7],
            ..Ins::to(here.clone())
        },
    ];
    for i in bad.iter() {
        check_eq!(s.op(|s| i.run(s)), INVAL);
    }
    drop(bad);
    // Control part over STRCTLSZ: ERANGE, as putmsg.
    let big = Ins {
        clen: Some(STRCTLSZ as i32 + 8),
        ..Ins::to(here.clone())
    };
    check_eq!(s.op(|s| big.run(s)), Err(Stop::Err(Errno::ERANGE)));
    drop(big);
    // A data part over the driver's maxpsz: ERANGE.
    let p4 = open(&PSZ4)?;
    let long = Ins {
        data: Some(b"too long"),
        ..Ins::to(check_ok!(fdinsert_target(&p4)))
    };
    check_eq!(p4.op(|s| long.run(s)), Err(Stop::Err(Errno::ERANGE)));
    drop(long);
    close(&p4);
    // A bad control buffer: EFAULT, nothing sent.
    let r = s.op(|s| {
        let mut fail = FailIo;
        let a = FdInsertArgs {
            ctl: Part {
                io: &mut fail,
                len: 8,
            },
            data: None,
            flags: 0,
            offset: 0,
            target: here.clone(),
        };
        call::fdinsert(&Direct::new(s), &Registry::new(), a, true).map_err(Stop::Err)
    });
    check_eq!(r, Err(Stop::Err(Errno::EFAULT)));
    check!(s.op(|s| rd(s, 64)).is_err());
    // A bad data buffer: EFAULT; a data part over STRMSGSZ: ERANGE before anything is
    // copied. Neither takes the Stream lock (the copies are made before it), nothing is sent.
    for (len, want) in [(8, Errno::EFAULT), (STRMSGSZ as i32 + 1, Errno::ERANGE)] {
        let (r, runs) = s.op(|s| {
            let mut ctl = [0u8; FDINSERT_TOKEN];
            let (mut cio, mut fail) = (SliceIo(&mut ctl), FailIo);
            let a = FdInsertArgs {
                ctl: Part {
                    io: &mut cio,
                    len: FDINSERT_TOKEN as i32,
                },
                data: Some(Part { io: &mut fail, len }),
                flags: 0,
                offset: 0,
                target: here.clone(),
            };
            let d = Direct::new(s);
            let r = call::fdinsert(&d, &Registry::new(), a, true);
            (r, d.runs.get())
        });
        check_eq!((r, runs), (Err(want), 0));
    }
    check!(s.op(|s| rd(s, 64)).is_err());
    // No memory for the copy of the control part: ENOSR, nothing sent.
    {
        let _g = FaultGuard::fail_after(0);
        let ins = Ins::to(here.clone());
        check_eq!(s.op(|s| ins.run(s)), Err(Stop::Err(Errno::ENOSR)));
    }
    check!(s.op(|s| rd(s, 64)).is_err());
    // `fildes` cannot be resolved while it is linked under a multiplexor, nor once closed.
    let l = open(&STHLOOP)?;
    let lp: Arc<dyn Perimeter> = l.clone();
    let mut req = check_ok!(LinkReq::new(lp, false));
    check_eq!(l.op(|s| s.sth_link_lower(&mut req)), Ok(()));
    check_eq!(fdinsert_target(&l).err(), Some(Errno::EINVAL));
    drop(req); // the link is given up: the Stream is itself again when it next runs
    settle(&[&*l]);
    check!(check_ok!(fdinsert_target(&l)).is_some());
    close(&l);
    check_eq!(fdinsert_target(&l).err(), Some(Errno::EINVAL));
    // A closed Stream: EBADF.
    close(&s);
    let ins = Ins::to(here);
    check_eq!(s.op(|s| ins.run(s)), Err(Stop::Err(Errno::EBADF)));
    Ok(())
}

ktest_suite!(STH_FDINSERT_SUITE, "streams_sth_fdinsert":
    fdinsert_builds_the_message,
    fdinsert_errors,
);
