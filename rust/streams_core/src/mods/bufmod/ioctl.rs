//! bufmod's ioctls: the SBIOC* commands of an I_STR (M_IOCTL), answered by `qreply` with
//! M_IOCACK (data for the get commands) or M_IOCNAK (EINVAL for bad values or sizes, ERANGE
//! for SBIOCGTIME after SBIOCCTIME). Other M_IOCTLs are not bufmod's: they pass down.
//!
//! Argument sizes are checked against `ioc_count`: integers are C `uint` (4 bytes) or, as the
//! Solaris manual page writes for SBIOCSSNAP/SBIOCSFLAGS, `ulong` (8 bytes); get commands
//! answer in the width the caller sent. The timeout is a native `struct timeval` (16 bytes) or
//! a `struct timeval32` (8 bytes). Transparent ioctls are refused (EINVAL): bufmod's commands
//! are I_STR only, as in Solaris.

use super::{
    Bufmod, NSEC_PER_SEC, SBIOC, SBIOCCTIME, SBIOCGCHUNK, SBIOCGFLAGS, SBIOCGSNAP, SBIOCGTIME,
    SBIOCSCHUNK, SBIOCSFLAGS, SBIOCSSNAP, SBIOCSTIME, SB_FLAGS_ALL, SB_MAX_CHUNK,
};
use crate::errno::Errno;
use crate::msg::{Msg, M_DATA, M_IOCACK, M_IOCNAK};
use crate::sth::{IocBlk, IOCBLK_SIZE, TRANSPARENT};
use crate::stream::QCtx;

/// Largest argument bufmod reads or writes (a native `struct timeval`).
const ARGMAX: usize = 16;

/// An answer's data: up to [`ARGMAX`] bytes.
struct Out {
    buf: [u8; ARGMAX],
    len: usize,
}

impl Out {
    const NONE: Out = Out {
        buf: [0; ARGMAX],
        len: 0,
    };
    fn bytes(b: &[u8]) -> Out {
        let mut o = Out::NONE;
        o.len = crate::sys::copy_bytes(&mut o.buf, b);
        o
    }
    /// `v` in the caller's width (`count` 4 or 8 bytes).
    fn uint(v: u32, count: usize) -> Result<Out, Errno> {
        match count {
            4 => Ok(Out::bytes(&v.to_ne_bytes())),
            8 => Ok(Out::bytes(&u64::from(v).to_ne_bytes())),
            _ => Err(Errno::EINVAL),
        }
    }
}

/// The first `ARGMAX` bytes of the ioctl's data (`b_cont` chain) and how many there are.
fn arg_bytes(mp: &Msg) -> ([u8; ARGMAX], usize) {
    let mut buf = [0u8; ARGMAX];
    let mut n = 0usize;
    for b in mp.blocks().skip(1) {
        let d = buf.get_mut(n..).unwrap_or_default();
        n = n.saturating_add(crate::sys::copy_bytes(d, b.rd()));
    }
    (buf, n)
}

/// An unsigned integer argument: `count` must be 4 or 8 and that many bytes present; values
/// above `u32::MAX` are EINVAL.
fn uint_arg(a: &[u8; ARGMAX], have: usize, count: usize) -> Result<u32, Errno> {
    if have < count {
        return Err(Errno::EINVAL);
    }
    let v = match count {
        4 => u64::from(u32::from_ne_bytes(word(a, 0))),
        8 => u64::from_ne_bytes(dword(a, 0)),
        _ => return Err(Errno::EINVAL),
    };
    u32::try_from(v).map_err(|_| Errno::EINVAL)
}

fn word(a: &[u8; ARGMAX], at: usize) -> [u8; 4] {
    a.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .unwrap_or_default()
}

fn dword(a: &[u8; ARGMAX], at: usize) -> [u8; 8] {
    a.get(at..at + 8)
        .and_then(|s| s.try_into().ok())
        .unwrap_or_default()
}

/// A `struct timeval` (16 bytes) or `struct timeval32` (8 bytes) as nanoseconds; negative,
/// unnormalised or overflowing values are EINVAL.
fn timeval_arg(a: &[u8; ARGMAX], have: usize, count: usize) -> Result<u64, Errno> {
    if have < count {
        return Err(Errno::EINVAL);
    }
    let (sec, usec) = match count {
        16 => (
            i64::from_ne_bytes(dword(a, 0)),
            i64::from_ne_bytes(dword(a, 8)),
        ),
        8 => (
            i64::from(i32::from_ne_bytes(word(a, 0))),
            i64::from(i32::from_ne_bytes(word(a, 4))),
        ),
        _ => return Err(Errno::EINVAL),
    };
    let sec = u64::try_from(sec).map_err(|_| Errno::EINVAL)?;
    let usec = u64::try_from(usec)
        .ok()
        .filter(|u| *u < 1_000_000)
        .ok_or(Errno::EINVAL)?;
    sec.checked_mul(NSEC_PER_SEC)
        .and_then(|ns| ns.checked_add(usec * 1000))
        .ok_or(Errno::EINVAL)
}

/// Nanoseconds as a `struct timeval` of `count` bytes (16 native, 8 timeval32).
fn timeval_out(ns: u64, count: usize) -> Result<Out, Errno> {
    let sec = ns / NSEC_PER_SEC;
    let usec = ns % NSEC_PER_SEC / 1000;
    let mut b = [0u8; ARGMAX];
    match count {
        16 => {
            let s = i64::try_from(sec).map_err(|_| Errno::ERANGE)?;
            let u = i64::try_from(usec).unwrap_or(0);
            crate::sys::copy_bytes(&mut b, &s.to_ne_bytes());
            crate::sys::copy_bytes(b.get_mut(8..).unwrap_or_default(), &u.to_ne_bytes());
        }
        8 => {
            let s = i32::try_from(sec).map_err(|_| Errno::ERANGE)?;
            let u = i32::try_from(usec).unwrap_or(0);
            crate::sys::copy_bytes(&mut b, &s.to_ne_bytes());
            crate::sys::copy_bytes(b.get_mut(4..).unwrap_or_default(), &u.to_ne_bytes());
        }
        _ => return Err(Errno::EINVAL),
    }
    Ok(Out::bytes(b.get(..count).unwrap_or_default()))
}

impl Bufmod {
    /// Handle M_IOCTL `mp` on the write queue `cx`; false if it is not a bufmod command (the
    /// caller passes it down). A set command sends the partial chunk up first, so records
    /// already collected keep the settings they were collected under.
    pub(super) fn ioctl(&mut self, cx: &mut QCtx<'_>, mp: &Msg) -> bool {
        let Some(ioc) = IocBlk::decode(mp.rd()) else {
            return false;
        };
        if ioc.cmd & !0xff != SBIOC {
            return false;
        }
        let r = if ioc.count == TRANSPARENT {
            Err(Errno::EINVAL)
        } else {
            self.command(cx, ioc.cmd, mp)
        };
        reply(cx, ioc, r);
        true
    }

    fn command(&mut self, cx: &mut QCtx<'_>, cmd: i32, mp: &Msg) -> Result<Out, Errno> {
        let (a, have) = arg_bytes(mp);
        let count = IocBlk::decode(mp.rd())
            .and_then(|i| usize::try_from(i.count).ok())
            .unwrap_or(0);
        match cmd {
            SBIOCSTIME => {
                let ns = timeval_arg(&a, have, count)?;
                self.close_chunk(&mut cx.otherq());
                self.timeout = Some(ns);
                self.frcvd = false;
                if ns == 0 {
                    self.chunk = 0;
                }
                Ok(Out::NONE)
            }
            SBIOCGTIME => timeval_out(self.timeout.ok_or(Errno::ERANGE)?, count),
            SBIOCCTIME => {
                self.timeout = None;
                self.frcvd = false;
                Ok(Out::NONE)
            }
            SBIOCSCHUNK => {
                let v = uint_arg(&a, have, count)?;
                if v > SB_MAX_CHUNK {
                    return Err(Errno::EINVAL);
                }
                let mut rq = cx.otherq();
                self.close_chunk(&mut rq);
                self.chunk = v;
                self.set_head_watermarks(&mut rq);
                Ok(Out::NONE)
            }
            SBIOCGCHUNK => Out::uint(self.chunk, count),
            SBIOCSSNAP => {
                let v = uint_arg(&a, have, count)?;
                let mut rq = cx.otherq();
                self.close_chunk(&mut rq);
                self.snap = v;
                self.set_head_watermarks(&mut rq);
                Ok(Out::NONE)
            }
            SBIOCGSNAP => Out::uint(self.snap, count),
            SBIOCSFLAGS => {
                let v = uint_arg(&a, have, count)?;
                if v & !SB_FLAGS_ALL != 0 {
                    return Err(Errno::EINVAL);
                }
                self.close_chunk(&mut cx.otherq());
                self.flags = v;
                self.frcvd = false;
                Ok(Out::NONE)
            }
            SBIOCGFLAGS => Out::uint(self.flags, count),
            _ => Err(Errno::EINVAL),
        }
    }
}

/// Answer ioctl `ioc`: M_IOCACK with `out` as its data, or M_IOCNAK with the error. A reply
/// that cannot be allocated is lost; the Stream head's I_STR then times out or is interrupted.
fn reply(cx: &mut QCtx<'_>, mut ioc: IocBlk, r: Result<Out, Errno>) {
    let ty = match &r {
        Ok(o) => {
            ioc.count = u32::try_from(o.len).unwrap_or(0);
            ioc.error = 0;
            ioc.rval = 0;
            M_IOCACK
        }
        Err(e) => {
            ioc.count = 0;
            ioc.error = e.0;
            M_IOCNAK
        }
    };
    let Ok(mut m) = Msg::from_bytes(ty, &ioc.encode()) else {
        return;
    };
    debug_assert!(m.blen() == IOCBLK_SIZE);
    if let Ok(o) = &r {
        if o.len > 0 {
            let Ok(d) = Msg::from_bytes(M_DATA, o.buf.get(..o.len).unwrap_or_default()) else {
                return;
            };
            m.linkb(d);
        }
    }
    cx.qreply(m);
}
