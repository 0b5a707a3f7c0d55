//! Shared tests of bufmod's ioctls (every SBIOC* get and set, NAK on bad values and sizes,
//! other M_IOCTLs passed down). bufmod pushed on a STREAMS pipe end, set up with I_PUSH and
//! I_STR and read through the real Stream heads, is tested with the pipes (`rust/pipe`).

use super::super::*;
use super::{get, ioctl, nak, open, set, timeval};
use crate::ktest::TestResult;
use crate::msg::M_IOCACK;
use crate::sth::{IocBlk, TRANSPARENT};
use crate::{check, check_eq, check_ok, check_some, ktest_suite};

fn ioctl_defaults() -> TestResult {
    let mut s = open()?;
    check_eq!(get(&mut s, SBIOCGCHUNK)?, SB_DFLT_CHUNK);
    check_eq!(get(&mut s, SBIOCGSNAP)?, 0);
    check_eq!(get(&mut s, SBIOCGFLAGS)?, 0);
    check_eq!(nak(&mut s, SBIOCGTIME, 16, &[0; 16])?, Errno::ERANGE.0);
    let a = ioctl(&mut s, SBIOCGCHUNK, &[0; 8])?; // `ulong` width
    check_eq!(a.ty, M_IOCACK);
    check_eq!(a.data.get(), &8192u64.to_ne_bytes()[..]);
    Ok(())
}

fn ioctl_set_then_get() -> TestResult {
    let mut s = open()?;
    set(&mut s, SBIOCSCHUNK, 100)?;
    check_eq!(get(&mut s, SBIOCGCHUNK)?, 100);
    let a = ioctl(&mut s, SBIOCSSNAP, &64u64.to_ne_bytes())?;
    check_eq!(a.ty, M_IOCACK);
    // A changed chunk or snapshot size re-sends the head's watermarks (small snapshots: more).
    let so = check_some!(a.setopts);
    check_eq!(
        (so.so_hiwat, so.so_lowat),
        (4 * 4096 * 4 + 512, 2 * 4096 * 4 + 256)
    );
    check_eq!(get(&mut s, SBIOCGSNAP)?, 64);
    set(&mut s, SBIOCSFLAGS, SB_NO_HEADER | SB_NO_DROPS)?;
    check_eq!(get(&mut s, SBIOCGFLAGS)?, SB_NO_HEADER | SB_NO_DROPS);
    check_eq!(
        ioctl(&mut s, SBIOCSTIME, &timeval(1, 500_000))?.ty,
        M_IOCACK
    );
    let a = ioctl(&mut s, SBIOCGTIME, &[0; 16])?;
    check_eq!((a.ty, a.data.get()), (M_IOCACK, &timeval(1, 500_000)[..]));
    let a = ioctl(&mut s, SBIOCGTIME, &[0; 8])?; // struct timeval32
    let mut tv32 = [0u8; 8];
    crate::sys::copy_bytes(&mut tv32, &1i32.to_ne_bytes());
    crate::sys::copy_bytes(
        tv32.get_mut(4..).unwrap_or_default(),
        &500_000i32.to_ne_bytes(),
    );
    check_eq!(a.data.get(), &tv32[..]);
    check_eq!(ioctl(&mut s, SBIOCSTIME, &tv32)?.ty, M_IOCACK);
    check_eq!(ioctl(&mut s, SBIOCCTIME, &[])?.ty, M_IOCACK);
    check_eq!(nak(&mut s, SBIOCGTIME, 16, &[0; 16])?, Errno::ERANGE.0);
    check_eq!(get(&mut s, SBIOCGCHUNK)?, 100); // only a zero timeout changes the chunk
    check!(s.read().is_none());
    Ok(())
}

fn ioctl_bad_values_nak() -> TestResult {
    let mut s = open()?;
    let einval = Errno::EINVAL.0;
    check_eq!(nak(&mut s, SBIOCSFLAGS, 4, &0x40u32.to_ne_bytes())?, einval);
    check_eq!(nak(&mut s, SBIOCSTIME, 16, &timeval(-1, 0))?, einval);
    check_eq!(nak(&mut s, SBIOCSTIME, 16, &timeval(0, 1_000_000))?, einval);
    check_eq!(nak(&mut s, SBIOCSTIME, 16, &timeval(0, -5))?, einval);
    check_eq!(nak(&mut s, SBIOCSTIME, 4, &[0; 4])?, einval);
    check_eq!(nak(&mut s, SBIOCSCHUNK, 2, &[1, 0])?, einval);
    let big = SB_MAX_CHUNK + 1;
    check_eq!(nak(&mut s, SBIOCSCHUNK, 4, &big.to_ne_bytes())?, einval);
    check_eq!(
        nak(&mut s, SBIOCSSNAP, 8, &(1u64 << 32).to_ne_bytes())?,
        einval
    );
    check_eq!(nak(&mut s, SBIOCSCHUNK, 4, &[])?, einval); // count without data
    check_eq!(nak(&mut s, SBIOCGCHUNK, 0, &[])?, einval);
    check_eq!(nak(&mut s, SBIOC | 20, 0, &[])?, einval);
    check_eq!(nak(&mut s, SBIOCGFLAGS, TRANSPARENT, &[])?, einval);
    // Nothing changed, nothing went down to the driver.
    check_eq!(get(&mut s, SBIOCGCHUNK)?, SB_DFLT_CHUNK);
    check_eq!(get(&mut s, SBIOCGFLAGS)?, 0);
    check_eq!(nak(&mut s, SBIOCGTIME, 16, &[0; 16])?, Errno::ERANGE.0);
    let dq = check_some!(s.driver_wq());
    check_eq!(check_some!(s.queue(dq)).qsize(), 0);
    Ok(())
}

fn foreign_ioctl_passes_down() -> TestResult {
    let mut s = open()?;
    let ioc = IocBlk {
        cmd: 0x1234,
        id: 5,
        ..IocBlk::default()
    };
    s.write(check_ok!(Msg::from_bytes(M_IOCTL, &ioc.encode())));
    check!(s.read().is_none());
    let dq = check_some!(s.driver_wq());
    let q = check_some!(s.queue(dq));
    let m = check_some!(q.first());
    check_eq!(m.db_type(), M_IOCTL);
    check_eq!(check_some!(IocBlk::decode(m.rd())).cmd, 0x1234);
    Ok(())
}

ktest_suite!(BUFMOD_IOCTL_SUITE, "streams_bufmod_ioctl":
    ioctl_defaults,
    ioctl_set_then_get,
    ioctl_bad_values_nak,
    foreign_ioctl_passes_down,
);
