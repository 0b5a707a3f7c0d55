//! Shared (host + KUnit) tests of transparent ioctls: M_COPYIN/M_COPYOUT/M_IOCDATA turns
//! answered at once by `sthloop` or later by a test playing the driver, copy faults, and the
//! message layouts.

use super::drivers::*;
use super::*;
use crate::msg::{Msg, M_COPYOUT, M_IOCDATA, M_IOCNAK, M_IOCTL};

/// A transparent ioctl through the platform's half (`call.rs`), `mem` the address space.
fn tioc(s: &mut Stream, cmd: u32, arg: u64, mem: &mut dyn UserIo) -> Result<i32, Errno> {
    call::transparent(&Direct::new(s), cmd, arg, mem)
}

fn transparent_copyin_copyout_roundtrip() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let mut mem = [0u8; 16];
    for (i, b) in mem.iter_mut().enumerate().skip(8) {
        *b = i as u8;
    }
    check_eq!(tioc(&mut s, TCMD, 8, &mut SliceIo(&mut mem)), Ok(99));
    check_eq!(mem.get(12..16), Some(&[9u8, 10, 11, 12][..]));
    check_eq!(mem.get(8..12), Some(&[8u8, 9, 10, 11][..]));
    Ok(())
}

fn transparent_copy_faults_fail_with_efault() -> TestResult {
    let mut s = open(&STHLOOP)?;
    // Copy-in faults (2 bytes mapped, 4 asked).
    let mut mem = [0u8; 2];
    check_eq!(
        tioc(&mut s, TCMD, 0, &mut SliceIo(&mut mem)),
        Err(Errno::EFAULT)
    );
    // Copy-out faults (copy-in from 0..4 works, copy-out to 4..8 does not).
    let mut mem = [0u8; 4];
    check_eq!(
        tioc(&mut s, TCMD, 0, &mut SliceIo(&mut mem)),
        Err(Errno::EFAULT)
    );
    // The slot is free again: an I_STR goes through.
    let mut st = StrIoctl::new(1, 0, 0, None);
    check_eq!(
        s.strioctl(&Registry::new(), I_STR, IocArg::Str(&mut st)),
        Ok(7)
    );
    Ok(())
}

/// The steps one by one: the head asks for each copy and gets the slot back with its answer.
fn transparent_turns_with_late_answers() -> TestResult {
    let mut s = open(&HOLD)?;
    let mut t = TranspIoctl::new(0x1234);
    check_eq!(
        s.strtransparent(0x7777, &mut t).err(),
        Some(Stop::Block(Block::IoctlAck))
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
    let Ok(Transp::Step(step)) = s.strtransparent(0x7777, &mut t) else {
        return Err(Failure {
            file: file!(),
            line: line!(),
            what: "the M_COPYOUT is a copy step",
        });
    };
    // Between the steps the slot is ours: another ioctl waits, a bare retry is refused.
    let mut other = StrIoctl::new(1, 0, 0, None);
    check_eq!(
        s.strioctl(&Registry::new(), I_STR, IocArg::Str(&mut other)),
        Err(Stop::Block(Block::IoctlAck))
    );
    let mut mem = [0u8; 8];
    check_ok!(step.copy_out(&mut SliceIo(&mut mem)));
    t.done = Some(CopyDone::Out);
    check_eq!(
        s.strtransparent(0x7777, &mut t).err(),
        Some(Stop::Block(Block::IoctlAck))
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
    check_eq!(
        s.strtransparent(0x7777, &mut t).err(),
        Some(Stop::Err(Errno::EIO))
    );
    check_eq!(mem.get(2..5), Some(&b"xyz"[..]));
    Ok(())
}

fn transparent_arg_only_outside_s_group() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_eq!(tioc(&mut s, I_NREAD, 0, &mut FailIo), Err(Errno::EINVAL));
    check_eq!(
        s.strioctl(&Registry::new(), TCMD, IocArg::None),
        Err(Stop::Err(Errno::ENOTTY))
    );
    Ok(())
}

/// A copy-in larger than STRMSGSZ is refused to the module (ENOSR) before anything is staged.
fn transparent_copyin_over_strmsgsz_refused() -> TestResult {
    let mut s = open(&HOLD)?;
    let mut t = TranspIoctl::new(0);
    check_eq!(
        s.strtransparent(0x7778, &mut t).err(),
        Some(Stop::Block(Block::IoctlAck))
    );
    let d = dwq(&s)?;
    let m = check_some!(s.qctx(d).getq());
    let ioc = check_some!(IocBlk::decode(m.rd()));
    let req = CopyReq {
        cmd: ioc.cmd,
        id: ioc.id,
        size: STRMSGSZ as u32 + 1,
        addr: 0,
        ..CopyReq::default()
    };
    let rq = check_some!(s.driver_rq());
    s.put(
        rq,
        check_ok!(Msg::from_bytes(crate::msg::M_COPYIN, &req.encode())),
    );
    check_eq!(
        s.strtransparent(0x7778, &mut t).err(),
        Some(Stop::Err(Errno::ENOSR))
    );
    let m = check_some!(s.qctx(d).getq());
    let resp = check_some!(CopyResp::decode(m.rd()));
    check_eq!((m.db_type(), resp.rval), (M_IOCDATA, Errno::ENOSR.0));
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
    transparent_copyin_over_strmsgsz_refused,
    ioctl_message_layouts_roundtrip,
);
