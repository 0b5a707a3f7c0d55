//! Drivers for the Stream head tests.
//!
//! - `sthloop`: a well-behaved loopback: data and protocol messages come back up (qreply),
//!   M_FLUSH is handled canonically (FLUSHW flushes and stops, FLUSHR is turned around),
//!   M_IOCTL is answered: command 1 acks with the data upper-cased and rval 7, command 2 naks
//!   with EPERM, command 3 is never answered, others nak with EINVAL. M_READ is dropped.
//!   Transparent command `TCMD`: M_COPYIN 4 bytes at the argument, then M_COPYOUT those
//!   bytes plus one each to the argument + 4, then M_IOCACK with rval 99; a failed copy
//!   (M_IOCDATA with `cp_rval` set) ends it silently.
//! - `psz4`: the same with `maxpsz` 4; `pszmin`: the same with `minpsz` 2, `maxpsz` 8.

use crate::box_dyn;
use crate::errno::Errno;
use crate::msg::{
    Msg, M_COPYIN, M_COPYOUT, M_FLUSH, M_IOCACK, M_IOCDATA, M_IOCNAK, M_IOCTL, M_READ,
};
use crate::queue::{FLUSHALL, INFPSZ};
use crate::sth::consts::{FLUSHR, FLUSHW};
use crate::sth::{CopyReq, CopyResp, IocBlk, TRANSPARENT};
use crate::stream::{ModuleInfo, OpenArgs, QCtx, StreamModule, StreamTab};
use crate::sys::Box;

struct SthLoop;

/// The transparent ioctl `sthloop` understands.
pub const TCMD: u32 = 0x7401;

/// The next step of the transparent ioctl `TCMD`, if any.
fn transparent_step(mp: &Msg) -> Option<Msg> {
    if mp.db_type() == M_IOCTL {
        let ioc = IocBlk::decode(mp.rd())?;
        let arg = u64::from_ne_bytes(mp.cont()?.rd().try_into().ok()?);
        let req = CopyReq {
            cmd: ioc.cmd,
            id: ioc.id,
            size: 4,
            addr: arg,
            private: arg << 8 | 1,
            ..CopyReq::default()
        };
        return Msg::from_bytes(M_COPYIN, &req.encode()).ok();
    }
    let resp = CopyResp::decode(mp.rd())?;
    if resp.rval != 0 {
        return None;
    }
    let addr = resp.private >> 8;
    if resp.private & 0xff == 1 {
        let mut data = [0u8; 4];
        for (d, s) in data.iter_mut().zip(mp.cont()?.rd()) {
            *d = s.wrapping_add(1);
        }
        let req = CopyReq {
            cmd: resp.cmd,
            id: resp.id,
            size: 4,
            addr: addr.wrapping_add(4),
            private: addr << 8 | 2,
            ..CopyReq::default()
        };
        let mut m = Msg::from_bytes(M_COPYOUT, &req.encode()).ok()?;
        m.linkb(Msg::from_bytes(crate::msg::M_DATA, &data).ok()?);
        return Some(m);
    }
    let ack = IocBlk {
        cmd: resp.cmd,
        id: resp.id,
        rval: 99,
        ..IocBlk::default()
    };
    Msg::from_bytes(M_IOCACK, &ack.encode()).ok()
}

fn answer_ioctl(mut mp: Msg) -> Msg {
    let mut ioc = IocBlk::decode(mp.rd()).unwrap_or_default();
    let ty = match ioc.cmd {
        1 => {
            if let Some(d) = mp.cont_mut().and_then(Msg::rd_mut) {
                d.make_ascii_uppercase();
            }
            ioc.rval = 7;
            M_IOCACK
        }
        2 => {
            ioc.error = Errno::EPERM.0;
            M_IOCNAK
        }
        _ => {
            ioc.error = Errno::EINVAL.0;
            M_IOCNAK
        }
    };
    if let Some(b) = mp.rd_mut() {
        for (d, s) in b.iter_mut().zip(ioc.encode().iter()) {
            *d = *s;
        }
    }
    mp.set_type(ty);
    mp
}

impl StreamModule for SthLoop {
    fn wput(&mut self, cx: &mut QCtx<'_>, mut mp: Msg) {
        let ty = mp.db_type();
        if ty == M_FLUSH {
            let f = mp.rd().first().copied().unwrap_or(0);
            if f & FLUSHW != 0 {
                let _ = cx.flushq(FLUSHALL);
            }
            if f & FLUSHR != 0 {
                let _ = cx.flushq_other(FLUSHALL);
                if let Some(b) = mp.rd_mut().and_then(|b| b.first_mut()) {
                    *b &= !FLUSHW;
                }
                cx.qreply(mp);
            }
        } else if ty == M_IOCDATA
            || (ty == M_IOCTL && IocBlk::decode(mp.rd()).is_some_and(|i| i.count == TRANSPARENT))
        {
            if let Some(m) = transparent_step(&mp) {
                cx.qreply(m);
            }
        } else if ty == M_IOCTL {
            let cmd = IocBlk::decode(mp.rd()).map_or(0, |i| i.cmd);
            if cmd != 3 {
                cx.qreply(answer_ioctl(mp));
            }
        } else if ty != M_READ {
            cx.qreply(mp);
        }
    }
}

fn open_loop(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(SthLoop => dyn StreamModule)?)
}

const fn info(name: &'static str, minpsz: usize, maxpsz: usize) -> ModuleInfo {
    ModuleInfo {
        mi_idnum: 40,
        mi_idname: name,
        mi_minpsz: minpsz,
        mi_maxpsz: maxpsz,
        mi_hiwat: 1000,
        mi_lowat: 100,
    }
}

/// `sthloop`: canonical loopback driver.
pub static STHLOOP: StreamTab = StreamTab {
    info: info("sthloop", 0, INFPSZ),
    open: open_loop,
};
/// `psz4`: loopback with maxpsz 4.
pub static PSZ4: StreamTab = StreamTab {
    info: info("psz4", 0, 4),
    open: open_loop,
};
/// `psz1k`: loopback with maxpsz 1024 (a large write is many pieces).
pub static PSZ1K: StreamTab = StreamTab {
    info: info("psz1k", 0, 1024),
    open: open_loop,
};
/// `pszmin`: loopback with minpsz 2, maxpsz 8.
pub static PSZMIN: StreamTab = StreamTab {
    info: info("pszmin", 2, 8),
    open: open_loop,
};
