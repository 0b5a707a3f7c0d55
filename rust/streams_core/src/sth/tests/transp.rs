//! Shared (host + KUnit) tests of transparent ioctls: M_COPYIN/M_COPYOUT/M_IOCDATA turns
//! answered at once by `sthloop` or later by a test playing the driver, copy faults, and the
//! message layouts.

use super::drivers::*;
use super::*;
use crate::msg::{Msg, M_COPYOUT, M_IOCDATA, M_IOCNAK, M_IOCTL};

fn tioc(s: &mut Stream, cmd: u32, t: &mut TranspIoctl<'_>) -> Result<i32, Stop> {
    s.strioctl(&Registry::new(), cmd, IocArg::Transparent(t))
}

fn transparent_copyin_copyout_roundtrip() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let mut mem = [0u8; 16];
    for (i, b) in mem.iter_mut().enumerate().skip(8) {
        *b = i as u8;
    }
    let mut io = SliceIo(&mut mem);
    let mut t = TranspIoctl {
        arg: 8,
        mem: &mut io,
        id: None,
    };
    check_eq!(tioc(&mut s, TCMD, &mut t), Ok(99));
    check_eq!(t.id, None);
    check_eq!(mem.get(12..16), Some(&[9u8, 10, 11, 12][..]));
    check_eq!(mem.get(8..12), Some(&[8u8, 9, 10, 11][..]));
    Ok(())
}

fn transparent_copy_faults_fail_with_efault() -> TestResult {
    let mut s = open(&STHLOOP)?;
    // Copy-in faults (2 bytes mapped, 4 asked).
    let mut mem = [0u8; 2];
    let mut io = SliceIo(&mut mem);
    let mut t = TranspIoctl {
        arg: 0,
        mem: &mut io,
        id: None,
    };
    check_eq!(tioc(&mut s, TCMD, &mut t), Err(Stop::Err(Errno::EFAULT)));
    // Copy-out faults (copy-in from 0..4 works, copy-out to 4..8 does not).
    let mut mem = [0u8; 4];
    let mut io = SliceIo(&mut mem);
    let mut t = TranspIoctl {
        arg: 0,
        mem: &mut io,
        id: None,
    };
    check_eq!(tioc(&mut s, TCMD, &mut t), Err(Stop::Err(Errno::EFAULT)));
    // The slot is free again: an I_STR goes through.
    let mut st = StrIoctl {
        cmd: 1,
        timeout: 0,
        len: 0,
        io: &mut FailIo,
        id: None,
    };
    check_eq!(
        s.strioctl(&Registry::new(), I_STR, IocArg::Str(&mut st)),
        Ok(7)
    );
    Ok(())
}

fn transparent_turns_with_late_answers() -> TestResult {
    let mut s = open(&HOLD)?;
    let mut mem = [0u8; 8];
    let mut io = SliceIo(&mut mem);
    let mut t = TranspIoctl {
        arg: 0x1234,
        mem: &mut io,
        id: None,
    };
    check_eq!(
        tioc(&mut s, 0x7777, &mut t),
        Err(Stop::Block(Block::IoctlAck))
    );
    let d = dwq(&s)?;
    let m = check_some!(s.qctx(d).getq());
    let ioc = check_some!(IocBlk::decode(m.rd()));
    check_eq!(
        (m.db_type(), ioc.cmd, ioc.count),
        (M_IOCTL, 0x7777, TRANSPARENT)
    );
    check_eq!(check_some!(m.cont()).rd(), &0x1234u64.to_ne_bytes()[..]);
    // The driver asks for a copy-out of "xyz" to address 2.
    let req = CopyReq {
        cmd: ioc.cmd,
        id: ioc.id,
        size: 3,
        addr: 2,
        private: 77,
        ..CopyReq::default()
    };
    let mut co = check_ok!(Msg::from_bytes(M_COPYOUT, &req.encode()));
    co.linkb(check_ok!(Msg::from_bytes(M_DATA, b"xyz")));
    let rq = check_some!(s.driver_rq());
    s.put(rq, co);
    check_eq!(
        tioc(&mut s, 0x7777, &mut t),
        Err(Stop::Block(Block::IoctlAck))
    );
    let m = check_some!(s.qctx(d).getq());
    let resp = check_some!(CopyResp::decode(m.rd()));
    check_eq!((m.db_type(), resp.rval, resp.private), (M_IOCDATA, 0, 77));
    // Then it refuses the ioctl.
    let nak = IocBlk {
        cmd: ioc.cmd,
        id: ioc.id,
        error: Errno::EIO.0,
        ..IocBlk::default()
    };
    s.put(rq, check_ok!(Msg::from_bytes(M_IOCNAK, &nak.encode())));
    check_eq!(tioc(&mut s, 0x7777, &mut t), Err(Stop::Err(Errno::EIO)));
    check_eq!(mem.get(2..5), Some(&b"xyz"[..]));
    Ok(())
}

fn transparent_arg_only_outside_s_group() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let mut t = TranspIoctl {
        arg: 0,
        mem: &mut FailIo,
        id: None,
    };
    check_eq!(tioc(&mut s, I_NREAD, &mut t), Err(Stop::Err(Errno::EINVAL)));
    check_eq!(
        s.strioctl(&Registry::new(), TCMD, IocArg::None),
        Err(Stop::Err(Errno::ENOTTY))
    );
    Ok(())
}

fn ioctl_message_layouts_roundtrip() -> TestResult {
    let ioc = IocBlk {
        cmd: -5,
        id: 0x0102_0304,
        count: 9,
        flag: 1,
        error: 22,
        rval: -1,
    };
    check_eq!(IocBlk::decode(&ioc.encode()), Some(ioc));
    let req = CopyReq {
        cmd: 7,
        id: 0x0102_0304,
        flag: 2,
        size: 40,
        addr: u64::MAX - 1,
        private: 5,
    };
    check_eq!(CopyReq::decode(&req.encode()), Some(req));
    let resp = CopyResp {
        cmd: 7,
        id: 3,
        flag: 0,
        rval: 14,
        private: 1 << 40,
    };
    check_eq!(CopyResp::decode(&resp.encode()), Some(resp));
    // cmd and id sit where the iocblk has them, so the head can route any answer.
    check_eq!(
        IocBlk::decode(&req.encode()).map(|i| (i.cmd, i.id)),
        Some((7, 0x0102_0304))
    );
    check_eq!(IocBlk::decode(&[0u8; 23]), None);
    check_eq!(CopyReq::decode(&[0u8; 31]), None);
    Ok(())
}

ktest_suite!(STH_TRANSP_SUITE, "streams_sth_transp":
    transparent_copyin_copyout_roundtrip,
    transparent_copy_faults_fail_with_efault,
    transparent_turns_with_late_answers,
    transparent_arg_only_outside_s_group,
    ioctl_message_layouts_roundtrip,
);
