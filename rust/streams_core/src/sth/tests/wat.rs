//! Shared (host + KUnit) tests of I_SET_HIWAT / I_SET_LOWAT: the Stream head read queue's
//! watermarks set from user space (argument an int by value), seen through flow control from
//! the driver below (`canputnext` on its read side) and through EINVAL on bad values.

use super::*;
use crate::queue::QFlags;
use crate::stream::{STRHIGH, STRLOW};

fn set(s: &mut Stream, cmd: u32, v: i64) -> Result<i32, Stop> {
    s.strioctl(&Registry::new(), cmd, IocArg::Int(v))
}

/// (hiwat, lowat, QFULL) of the head's read queue.
fn marks(s: &Stream) -> Result<(usize, usize, bool), Failure> {
    let q = check_some!(s.queue(s.head_rq()));
    Ok((q.hiwat(), q.lowat(), q.flags().contains(QFlags::QFULL)))
}

/// Can the driver send up (canputnext from its read queue)?
fn driver_can_send(s: &mut Stream) -> Result<bool, Failure> {
    let rq = check_some!(s.driver_rq());
    Ok(s.qctx(rq).canputnext())
}

fn set_hiwat_lowat_drive_head_flow_control() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_eq!(marks(&s)?, (STRHIGH, STRLOW, false));
    check_eq!(set(&mut s, I_SET_LOWAT, 4), Ok(0));
    check_eq!(set(&mut s, I_SET_HIWAT, 10), Ok(0));
    check_eq!(marks(&s)?, (10, 4, false));
    check_eq!(wr(&mut s, b"0123456789abcdef"), Ok(16));
    // 16 bytes queued at a high mark of 10: the driver must hold back.
    check_eq!(marks(&s)?, (10, 4, true));
    check!(!driver_can_send(&mut s)?);
    // Raising the mark above what is queued lifts QFULL at once.
    check_eq!(set(&mut s, I_SET_HIWAT, 64), Ok(0));
    check_eq!(marks(&s)?, (64, 4, false));
    check!(driver_can_send(&mut s)?);
    // Lowering it again below the queued count sets it again.
    check_eq!(set(&mut s, I_SET_HIWAT, 16), Ok(0));
    check!(!driver_can_send(&mut s)?);
    check_eq!(check_ok!(rd(&mut s, 16)).bytes(), b"0123456789abcdef");
    check!(driver_can_send(&mut s)?);
    Ok(())
}

fn set_watermark_bad_values_einval() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let inval = Err(Stop::Err(Errno::EINVAL));
    check_eq!(set(&mut s, I_SET_HIWAT, -1), inval);
    check_eq!(set(&mut s, I_SET_LOWAT, -5), inval);
    // The high mark may not go below the low mark, nor the low mark above the high one.
    check_eq!(set(&mut s, I_SET_HIWAT, (STRLOW - 1) as i64), inval);
    check_eq!(set(&mut s, I_SET_LOWAT, (STRHIGH + 1) as i64), inval);
    check_eq!(marks(&s)?, (STRHIGH, STRLOW, false));
    // Equal marks are fine, and so is zero for both.
    check_eq!(set(&mut s, I_SET_HIWAT, STRLOW as i64), Ok(0));
    check_eq!(set(&mut s, I_SET_LOWAT, 0), Ok(0));
    check_eq!(set(&mut s, I_SET_HIWAT, 0), Ok(0));
    check_eq!(marks(&s)?, (0, 0, false));
    // Out-of-range integers never reach the queue.
    check_eq!(set(&mut s, I_SET_HIWAT, i64::MIN), inval);
    check_eq!(marks(&s)?, (0, 0, false));
    // Not by pointer: an output-buffer argument is refused.
    let mut b = [0u8; 4];
    check_eq!(
        s.strioctl(&Registry::new(), I_SET_HIWAT, IocArg::Out(&mut b)),
        inval
    );
    Ok(())
}

fn set_watermarks_touch_only_this_head() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let t = open(&STHLOOP)?;
    check_eq!(set(&mut s, I_SET_LOWAT, 1), Ok(0));
    check_eq!(set(&mut s, I_SET_HIWAT, 2), Ok(0));
    check_eq!(marks(&t)?, (STRHIGH, STRLOW, false));
    // The write side and the driver keep their module_info marks.
    let hw = check_some!(s.queue(s.head_wq()));
    check_eq!((hw.hiwat(), hw.lowat()), (STRHIGH, STRLOW));
    let d = check_some!(s.queue(dwq(&s)?));
    check_eq!((d.hiwat(), d.lowat()), (1000, 100));
    Ok(())
}

/// I_GET_HIWAT reads back what I_SET_HIWAT set (and the default before).
fn get_hiwat_reads_the_head_mark() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let get = |s: &mut Stream| {
        let mut b = [0u8; 4];
        let r = s.strioctl(&Registry::new(), I_GET_HIWAT, IocArg::Out(&mut b));
        r.map(|_| i32::from_ne_bytes(b))
    };
    check_eq!(get(&mut s), Ok(STRHIGH as i32));
    check_eq!(set(&mut s, I_SET_HIWAT, (STRHIGH * 4) as i64), Ok(0));
    check_eq!(get(&mut s), Ok((STRHIGH * 4) as i32));
    check_eq!(
        s.strioctl(&Registry::new(), I_GET_HIWAT, IocArg::Int(0)),
        Err(Stop::Err(Errno::EINVAL))
    );
    Ok(())
}

ktest_suite!(STH_WAT_SUITE, "streams_sth_wat":
    set_hiwat_lowat_drive_head_flow_control,
    set_watermark_bad_values_einval,
    set_watermarks_touch_only_this_head,
    get_hiwat_reads_the_head_mark,
);
