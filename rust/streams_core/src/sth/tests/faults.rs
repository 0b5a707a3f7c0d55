//! Shared (host + KUnit) tests of the platform's half of each system call (`call.rs`) against
//! user buffers that fault at every position: what a faulting read, getmsg, write, putmsg,
//! I_STR, I_PEEK or ioctl result did (nothing consumed that was not delivered, nothing sent
//! that was not whole), and the limits on what a call stages in kernel memory (STRCTLSZ,
//! STRMSGSZ: ERANGE, EINVAL, the write split).

use super::drivers::*;
use super::*;
use crate::sys;

fn srdopt(s: &mut Stream, v: u32) -> TestResult {
    check_ok!(s.strioctl(&Registry::new(), I_SRDOPT, IocArg::Int(i64::from(v))));
    Ok(())
}

/// Every read mode, a fault at every byte of the buffer: the read returns what the messages
/// before the faulting one delivered (EFAULT if none), and every byte is still read, once, in
/// order, with the message boundaries of RMSGN.
fn read_efault_at_every_position() -> TestResult {
    for mode in [RNORM, RMSGN, RMSGD] {
        for at in 0..=9 {
            let mut s = open(&STHLOOP)?;
            srdopt(&mut s, mode)?;
            for m in [&b"abc"[..], b"defg", b"hi"] {
                check_ok!(wr(&mut s, m));
            }
            let mut b = [0u8; 16];
            let r = call::read(
                &Direct::new(&mut s),
                &mut FaultAt { buf: &mut b, at },
                9,
                true,
            );
            // RNORM runs into the next message; the message modes stop after one.
            let expect = match (mode, at) {
                (RNORM, 3..=6) => Ok(3),
                (RNORM, 7..=8) => Ok(7),
                (RNORM, 9) => Ok(9),
                (_, 3..=9) => Ok(3),
                _ => Err(Errno::EFAULT),
            };
            check_eq!(r, expect);
            let got = r.unwrap_or(0);
            let mut all = [0u8; 16];
            all.get_mut(..got)
                .unwrap_or_default()
                .copy_from_slice(b.get(..got).unwrap_or_default());
            let mut n = got;
            while let Ok(g) = rd(&mut s, 16) {
                if let Some(d) = all.get_mut(n..n + g.n) {
                    d.copy_from_slice(g.bytes());
                }
                n += g.n;
                if g.n == 0 {
                    break;
                }
            }
            check_eq!(all.get(..n), Some(&b"abcdefghi"[..]));
        }
    }
    Ok(())
}

/// getmsg: a fault in the control part, the data part or the caller's lengths puts the
/// message back whole.
fn getmsg_efault_anywhere_puts_back() -> TestResult {
    for (c_at, d_at, finish_fails) in [(0, 8, false), (8, 1, false), (8, 8, true)] {
        let mut s = open(&STHLOOP)?;
        check_ok!(put(&mut s, Some(b"ctl"), Some(b"data"), 0, 0));
        let (mut cb, mut db) = ([0u8; 8], [0u8; 8]);
        let cp = Part {
            io: &mut FaultAt {
                buf: &mut cb,
                at: c_at,
            },
            len: 8,
        };
        let dp = Part {
            io: &mut FaultAt {
                buf: &mut db,
                at: d_at,
            },
            len: 2,
        };
        let r = call::getmsg(&Direct::new(&mut s), Some(cp), Some(dp), 0, 0, true, |_| {
            if finish_fails {
                Err(Errno::EFAULT)
            } else {
                Ok(())
            }
        });
        check_eq!(r.err(), Some(Errno::EFAULT));
        let (g, c, d) = check_ok!(get(&mut s, 8, 8, 0, 0));
        check_eq!((g.ctl_len, g.data_len, g.more), (3, 4, 0));
        check_eq!((c.bytes(), d.bytes()), (&b"ctl"[..], &b"data"[..]));
    }
    Ok(())
}

/// write: a fault at byte `at` sends the whole pieces before it (4-byte pieces under PSZ4,
/// one piece for the whole write otherwise), and says how many bytes that was.
fn write_efault_at_every_position() -> TestResult {
    for at in 0..=10 {
        let mut s = open(&PSZ4)?;
        srdopt(&mut s, RMSGN)?;
        let mut b = *b"0123456789";
        let r = call::write(
            &Direct::new(&mut s),
            &mut FaultAt { buf: &mut b, at },
            10,
            true,
        );
        let sent = at / 4 * 4;
        check_eq!(
            r,
            match at {
                10 => Ok(10),
                _ if sent == 0 => Err(Errno::EFAULT),
                _ => Ok(sent),
            }
        );
        let q = check_some!(s.queue(s.head_rq()));
        check_eq!(q.qsize(), if at == 10 { 3 } else { sent / 4 });
        let mut s = open(&HOLD)?;
        let mut b = *b"0123456789";
        let r = call::write(
            &Direct::new(&mut s),
            &mut FaultAt { buf: &mut b, at },
            10,
            true,
        );
        check_eq!(r, if at == 10 { Ok(10) } else { Err(Errno::EFAULT) });
        check_eq!(
            s.queue(dwq(&s)?).map(|q| q.qsize()),
            Some(usize::from(at == 10))
        );
    }
    Ok(())
}

/// putmsg: a fault anywhere in either part sends nothing.
fn putmsg_efault_sends_nothing() -> TestResult {
    for at in 0..4 {
        let mut s = open(&HOLD)?;
        let (mut cb, mut db) = (*b"ctl!", *b"data");
        let cp = Part {
            io: &mut FaultAt { buf: &mut cb, at },
            len: 4,
        };
        let dp = Part {
            io: &mut SliceIo(&mut db),
            len: 4,
        };
        let h = Direct::new(&mut s);
        check_eq!(
            call::putmsg(&h, Some(cp), Some(dp), 0, 0, true),
            Err(Errno::EFAULT)
        );
        let cp = Part {
            io: &mut SliceIo(&mut cb),
            len: 4,
        };
        let dp = Part {
            io: &mut FaultAt { buf: &mut db, at },
            len: 4,
        };
        check_eq!(
            call::putmsg(&h, Some(cp), Some(dp), 0, 0, true),
            Err(Errno::EFAULT)
        );
        check_eq!(
            check_some!(h.with(|s| s.queue(s.head_wq()).map(|q| q.qsize()))),
            Some(0)
        );
        check_eq!(s.queue(dwq(&s)?).map(|q| q.qsize()), Some(0));
    }
    Ok(())
}

/// I_STR: a bad request sends nothing; a bad answer buffer fails after the ioctl completed,
/// and the slot is free for the next one.
fn istr_efault_request_and_answer() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let reg = Registry::new();
    let mut b = *b"abc";
    let r = call::istr(
        &Direct::new(&mut s),
        &reg,
        1,
        0,
        3,
        &mut FaultAt { buf: &mut b, at: 2 },
    );
    check_eq!(r, Err(Errno::EFAULT));
    // The answer does not fit back: EFAULT, and nothing is left in the slot.
    struct ReadOnly<'a>(&'a mut [u8]);
    impl UserIo for ReadOnly<'_> {
        fn copy_from_user(&mut self, d: &mut [u8], off: usize) -> Result<(), Errno> {
            SliceIo(self.0).copy_from_user(d, off)
        }
        fn copy_to_user(&mut self, _: usize, _: &[u8]) -> Result<(), Errno> {
            Err(Errno::EFAULT)
        }
    }
    let r = call::istr(&Direct::new(&mut s), &reg, 1, 0, 3, &mut ReadOnly(&mut b));
    check_eq!(r, Err(Errno::EFAULT));
    check_eq!(
        call::istr(&Direct::new(&mut s), &reg, 1, 0, 3, &mut SliceIo(&mut b)),
        Ok((7, 3))
    );
    check_eq!(&b, b"ABC");
    Ok(())
}

/// I_PEEK and the I_* results copied out after the lock: a bad buffer is EFAULT and changes
/// nothing.
fn peek_and_results_efault_change_nothing() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(put(&mut s, Some(b"ctl"), Some(b"data"), 0, 0));
    let reg = Registry::new();
    let cp = Part {
        io: &mut FailIo,
        len: 8,
    };
    let r = call::peek(&Direct::new(&mut s), &reg, Some(cp), None, 0, |_| Ok(()));
    check_eq!(r, Err(Errno::EFAULT));
    let mut out = [0u8; 4];
    let r = call::ioctl_out(
        &Direct::new(&mut s),
        &mut out,
        &mut FailIo,
        |s, o| s.strioctl(&reg, I_NREAD, IocArg::Out(o)),
        |_| 4,
    );
    check_eq!(r, Err(Errno::EFAULT));
    let mut list = [0u8; 2 * (FMNAMESZ + 1)];
    let r = call::ioctl_out(
        &Direct::new(&mut s),
        &mut list,
        &mut FailIo,
        |s, o| s.strioctl(&reg, I_LIST, IocArg::List { n: 2, out: o }),
        |n| usize::try_from(n).unwrap_or(0) * (FMNAMESZ + 1),
    );
    check_eq!(r, Err(Errno::EFAULT));
    check_eq!(nread(&mut s)?, (1, 4));
    let (g, c, d) = check_ok!(get(&mut s, 8, 8, 0, 0));
    check_eq!(
        (g.ctl_len, c.bytes(), d.bytes()),
        (3, &b"ctl"[..], &b"data"[..])
    );
    Ok(())
}

/// A buffer of `n` bytes of `v` in kernel memory, as a user buffer.
fn big(n: usize, v: u8) -> Result<sys::Vec<u8>, Failure> {
    let mut b = check_ok!(sys::vec_zeroed(n));
    b.as_mut_slice().fill(v);
    Ok(b)
}

/// putmsg stages at most STRCTLSZ control and STRMSGSZ data bytes: one more is ERANGE before
/// anything is copied; exactly the limits go through.
fn putmsg_limits_erange() -> TestResult {
    let mut s = open(&HOLD)?;
    let mut c = big(STRCTLSZ + 1, b'c')?;
    let mut d = big(STRMSGSZ + 1, b'd')?;
    let h = Direct::new(&mut s);
    for (cl, dl, ok) in [
        (STRCTLSZ + 1, 1, false),
        (1, STRMSGSZ + 1, false),
        (STRCTLSZ, STRMSGSZ, true),
    ] {
        let cp = Part {
            io: &mut FaultAt {
                buf: c.as_mut_slice(),
                at: if ok { usize::MAX } else { 0 },
            },
            len: cl as i32,
        };
        let dp = Part {
            io: &mut SliceIo(d.as_mut_slice()),
            len: dl as i32,
        };
        let r = call::putmsg(&h, Some(cp), Some(dp), 0, 0, true);
        check_eq!(r, if ok { Ok(()) } else { Err(Errno::ERANGE) });
    }
    // The head refuses oversized parts itself too.
    let mut over = Some(check_ok!(Msg::with_type(M_DATA, STRCTLSZ + 1)));
    if let Some(m) = over.as_mut() {
        m.adj_wptr(STRCTLSZ + 1);
    }
    check_eq!(
        check_some!(h.with(|s| s.strputpmsg(&mut over, &mut None, 0, 0, true))),
        Err(Stop::Err(Errno::ERANGE))
    );
    let q = check_some!(s.queue(dwq(&s)?));
    check_eq!(q.qsize(), 1);
    let m = check_some!(q.first());
    check_eq!((m.blen(), m.msgsize()), (STRCTLSZ, STRCTLSZ + STRMSGSZ));
    Ok(())
}

/// write(2) splits at STRMSGSZ: no message, and no staging buffer, is larger.
fn write_splits_at_strmsgsz() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(s.strioctl(
        &Registry::new(),
        I_SET_HIWAT,
        IocArg::Int(4 * STRMSGSZ as i64)
    ));
    check_ok!(s.strioctl(&Registry::new(), I_SRDOPT, IocArg::Int(i64::from(RMSGN))));
    let n = 2 * STRMSGSZ + 10;
    let mut b = big(n, b'w')?;
    let r = call::write(
        &Direct::new(&mut s),
        &mut SliceIo(b.as_mut_slice()),
        n,
        true,
    );
    check_eq!(r, Ok(n));
    let q = check_some!(s.queue(s.head_rq()));
    check_eq!(q.qsize(), 3);
    check_eq!(
        (0..3).map(|i| q.peek(i).map_or(0, Msg::msgsize)).max(),
        Some(STRMSGSZ)
    );
    check_eq!(check_some!(q.peek(2)).msgsize(), 10);
    // Pieces of maxpsz that do not divide STRMSGSZ keep their size across the staging.
    let mut p = open(&PSZ4)?;
    let mut w = *b"0123456789";
    check_eq!(
        call::write(&Direct::new(&mut p), &mut SliceIo(&mut w), 10, true),
        Ok(10)
    );
    check_eq!(p.sth_piece(), 4);
    check_eq!(s.sth_piece(), STRMSGSZ);
    Ok(())
}

/// A write of more than a page, whose buffer faults part-way, copies into a buffer that is
/// not zeroed first (`sys::vec_filled_wait`): the reader sees exactly the whole pieces before
/// the fault, never an earlier write's bytes or uninitialised memory. Three writes: the first
/// builds its message before the lock (`Msg::copied_in_wait`), the later ones stage it.
fn write_fault_in_large_write_shows_only_sent_bytes() -> TestResult {
    let n = 4 * crate::msg::cache::PAGEBUF + 100;
    let mut s = open(&PSZ1K)?;
    check_ok!(s.strioctl(&Registry::new(), I_SET_HIWAT, IocArg::Int(4 * n as i64)));
    let mut out = big(n, 0)?;
    for (i, at) in [10_000usize, 5_000, 1_500].into_iter().enumerate() {
        // An earlier write of other bytes, read and freed: its memory may come back.
        let mut old = big(n, b'x')?;
        let h = Direct::new(&mut s);
        check_eq!(
            call::write(&h, &mut SliceIo(old.as_mut_slice()), n, true),
            Ok(n)
        );
        check_eq!(
            call::read(&h, &mut SliceIo(out.as_mut_slice()), n, true),
            Ok(n)
        );
        let mut b = big(n, 0)?;
        for (k, c) in b.iter_mut().enumerate() {
            *c = (k % 253) as u8 + 1 + i as u8;
        }
        let sent = at / 1024 * 1024;
        let r = call::write(
            &h,
            &mut FaultAt {
                buf: b.as_mut_slice(),
                at,
            },
            n,
            true,
        );
        check_eq!(r, Ok(sent));
        check_eq!(
            call::read(&h, &mut SliceIo(out.as_mut_slice()), n, true),
            Ok(sent)
        );
        check!(out.get(..sent) == b.get(..sent));
        check_eq!(
            call::read(&h, &mut SliceIo(out.as_mut_slice()), n, true),
            Err(Errno::EAGAIN)
        );
    }
    // No pieces (maxpsz infinite): a fault sends nothing.
    let mut s = open(&STHLOOP)?;
    let mut b = big(n, b'y')?;
    let h = Direct::new(&mut s);
    let r = call::write(
        &h,
        &mut FaultAt {
            buf: b.as_mut_slice(),
            at: n / 2,
        },
        n,
        true,
    );
    check_eq!(r, Err(Errno::EFAULT));
    check_eq!(
        call::read(&h, &mut SliceIo(out.as_mut_slice()), n, true),
        Err(Errno::EAGAIN)
    );
    Ok(())
}

/// I_STR stages at most STRMSGSZ bytes: a longer `ic_len` is EINVAL before anything is copied
/// or sent.
fn istr_len_limit_einval() -> TestResult {
    let mut s = open(&HOLD)?;
    let reg = Registry::new();
    for len in [-1, STRMSGSZ as i32 + 1] {
        check_eq!(
            call::istr(&Direct::new(&mut s), &reg, 1, 0, len, &mut FailIo),
            Err(Errno::EINVAL)
        );
    }
    check_eq!(s.queue(dwq(&s)?).map(|q| q.qsize()), Some(0));
    Ok(())
}

/// Issue 14 (EBADF bursts under fault injection: the head answers EBADF once it is marked
/// closed): no operation that fails for want of memory marks the head closed or leaves the
/// Stream unusable. I_PUSH of two modules (the pair, the open), write, putmsg, I_FLUSH,
/// I_SRDOPT and I_POP, with the `n`-th allocation and every later one failing, for every `n`
/// up to more than the sequence needs: the head is still open (I_CANPUT answers), and once
/// memory is back the Stream takes a push and a write.
fn alloc_failure_never_closes_the_head() -> TestResult {
    let r = reg()?;
    for n in 0..48 {
        let mut s = open(&STHLOOP)?;
        {
            let _g = FaultGuard::fail_after(n);
            let _ = s.strioctl(&r, I_PUSH, IocArg::Name("pass"));
            let _ = s.strioctl(&r, I_PUSH, IocArg::Name("nosrv"));
            let _ = wr(&mut s, b"abc");
            let _ = put(&mut s, Some(b"c"), Some(b"d"), 0, 0);
            let _ = s.strioctl(&r, I_FLUSH, IocArg::Int(i64::from(FLUSHRW)));
            let _ = s.strioctl(&r, I_SRDOPT, IocArg::Int(i64::from(RMSGN)));
            let _ = s.strioctl(&r, I_POP, IocArg::None);
        }
        s.runqueues();
        check!(!s.sth().is_closed());
        check_ok!(s.strioctl(&r, I_CANPUT, IocArg::Int(0)));
        check_eq!(s.strioctl(&r, I_PUSH, IocArg::Name("pass")), Ok(0));
        check_eq!(wr(&mut s, b"xyz"), Ok(3));
        s.runqueues();
        check!(!s.sth().is_closed());
    }
    Ok(())
}

ktest_suite!(STH_FAULTS_SUITE, "streams_sth_faults":
    read_efault_at_every_position,
    getmsg_efault_anywhere_puts_back,
    write_efault_at_every_position,
    putmsg_efault_sends_nothing,
    istr_efault_request_and_answer,
    peek_and_results_efault_change_nothing,
    putmsg_limits_erange,
    write_splits_at_strmsgsz,
    write_fault_in_large_write_shows_only_sent_bytes,
    istr_len_limit_einval,
    alloc_failure_never_closes_the_head,
);
