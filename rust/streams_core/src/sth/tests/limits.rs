//! Shared (host + KUnit) tests of the tunable limits (`crate::limits`) at the Stream head:
//! write(2) splits at the `strmsgsz` in force, putmsg refuses a larger data part or a control
//! part over `strctlsz` with ERANGE, I_STR a longer request with EINVAL, I_SET_HIWAT above
//! `strhiwatmax` is EPERM for an unprivileged caller only, and zero-length messages fill the
//! head's read queue (its block limit).

use super::drivers::*;
use super::*;
use crate::limits::{limits, Limits, LimitsGuard};
use crate::queue::QFlags;
use crate::sys;

fn guard(l: Limits) -> Result<LimitsGuard, Failure> {
    Ok(check_ok!(LimitsGuard::set(l)))
}

fn buf(n: usize, v: u8) -> Result<sys::Vec<u8>, Failure> {
    let mut b = check_ok!(sys::vec_zeroed(n));
    b.as_mut_slice().fill(v);
    Ok(b)
}

/// A smaller `strmsgsz` splits a write into pieces of that size (and stages no more at a
/// time); the pieces arrive in order and whole.
fn write_splits_at_tuned_strmsgsz() -> TestResult {
    let msgsz = 1000;
    let _g = guard(Limits {
        strmsgsz: msgsz,
        ..limits()
    })?;
    let mut s = open(&STHLOOP)?;
    check_ok!(s.strioctl(&Registry::new(), I_SET_HIWAT, IocArg::Int(1 << 16)));
    check_ok!(s.strioctl(&Registry::new(), I_SRDOPT, IocArg::Int(i64::from(RMSGN))));
    let n = 2 * msgsz + 500;
    let mut b = buf(n, b'm')?;
    let r = call::write(
        &Direct::new(&mut s),
        &mut SliceIo(b.as_mut_slice()),
        n,
        true,
    );
    check_eq!(r, Ok(n));
    check_eq!(s.sth_piece(), msgsz);
    let q = check_some!(s.queue(s.head_rq()));
    check_eq!(q.qsize(), 3);
    let sizes = [0, 1, 2].map(|i| q.peek(i).map_or(0, Msg::msgsize));
    check_eq!(sizes, [msgsz, msgsz, 500]);
    Ok(())
}

/// putmsg: ERANGE for a data part over the tuned `strmsgsz` or a control part over the tuned
/// `strctlsz`, before anything is copied; exactly the limits go through. I_STR: EINVAL for
/// an `ic_len` over `strmsgsz`.
fn putmsg_erange_at_tuned_limits() -> TestResult {
    let (msgsz, ctlsz) = (300, 40);
    let _g = guard(Limits {
        strmsgsz: msgsz,
        strctlsz: ctlsz,
        ..limits()
    })?;
    let mut s = open(&HOLD)?;
    let mut c = buf(ctlsz + 1, b'c')?;
    let mut d = buf(msgsz + 1, b'd')?;
    let h = Direct::new(&mut s);
    for (cl, dl, want) in [
        (ctlsz + 1, 1, Err(Errno::ERANGE)),
        (1, msgsz + 1, Err(Errno::ERANGE)),
        (ctlsz, msgsz, Ok(())),
    ] {
        let cp = Part {
            io: &mut SliceIo(c.as_mut_slice()),
            len: cl as i32,
        };
        let dp = Part {
            io: &mut SliceIo(d.as_mut_slice()),
            len: dl as i32,
        };
        check_eq!(call::putmsg(&h, Some(cp), Some(dp), 0, 0, true), want);
    }
    let reg = Registry::new();
    check_eq!(
        call::istr(
            &h,
            &reg,
            1,
            0,
            (msgsz + 1) as i32,
            &mut SliceIo(d.as_mut_slice())
        ),
        Err(Errno::EINVAL)
    );
    let q = check_some!(s.queue(dwq(&s)?));
    check_eq!(q.qsize(), 1);
    check_eq!(check_some!(q.first()).msgsize(), ctlsz + msgsz);
    Ok(())
}

/// I_SET_HIWAT above `strhiwatmax`: EPERM without privilege (nothing changes), accepted with
/// it; up to the cap anybody may.
fn set_hiwat_cap_needs_privilege() -> TestResult {
    let cap = limits().strhiwatmax;
    let mut s = open(&STHLOOP)?;
    let reg = Registry::new();
    let hiwat = |s: &Stream| s.queue(s.head_rq()).map_or(0, |q| q.hiwat());
    let over = (cap + 1) as i64;
    check_eq!(
        s.strioctl(&reg, I_SET_HIWAT, IocArg::Int(over)),
        Err(Stop::Err(Errno::EPERM))
    );
    check_eq!(
        s.strioctl(
            &reg,
            I_SET_HIWAT,
            IocArg::Hiwat {
                v: i64::from(i32::MAX),
                privileged: false
            }
        ),
        Err(Stop::Err(Errno::EPERM))
    );
    check_eq!(hiwat(&s), crate::stream::STRHIGH);
    check_eq!(
        s.strioctl(&reg, I_SET_HIWAT, IocArg::Int(cap as i64)),
        Ok(0)
    );
    check_eq!(hiwat(&s), cap);
    check_eq!(
        s.strioctl(
            &reg,
            I_SET_HIWAT,
            IocArg::Hiwat {
                v: over,
                privileged: true
            }
        ),
        Ok(0)
    );
    check_eq!(hiwat(&s), cap + 1);
    Ok(())
}

/// Zero-length messages (SNDZERO writes) count toward the head's flow control: the driver
/// below is held back once the head's read queue holds its block limit, though it holds no
/// bytes.
fn zero_length_messages_fill_the_head() -> TestResult {
    let _g = guard(Limits {
        strmblkmax: 8,
        ..limits()
    })?;
    let mut s = open(&STHLOOP)?;
    check_ok!(s.strioctl(&Registry::new(), I_SWROPT, IocArg::Int(i64::from(SNDZERO))));
    let h = s.head_rq();
    let mut sent = 0;
    while !check_some!(s.queue(h)).flags().contains(QFlags::QFULL) {
        check_eq!(wr(&mut s, b""), Ok(0));
        sent += 1;
        check!(sent <= 8);
    }
    let q = check_some!(s.queue(h));
    check_eq!((sent, q.count(), q.mblkcnt()), (8, 0, 8));
    let rq = check_some!(s.driver_rq());
    check!(!s.qctx(rq).canputnext());
    Ok(())
}

ktest_suite!(STH_LIMITS_SUITE, "streams_sth_limits":
    write_splits_at_tuned_strmsgsz,
    putmsg_erange_at_tuned_limits,
    set_hiwat_cap_needs_privilege,
    zero_length_messages_fill_the_head,
);
