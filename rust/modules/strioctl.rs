// SPDX-License-Identifier: GPL-2.0
//! ioctl(2) on a STREAMS file: decode the user argument of each `I_*` command (an integer, a
//! module name, an output buffer, `struct strioctl`, `struct strpmsg`, …; layouts in
//! `docs/abi.md`) into the head's `IocArg`, run it through `StrFile::run`, and copy results
//! back. I_GETPMSG/I_PUTPMSG (the putmsg/getmsg emulation of LfS) are handled here too.
//! Commands outside the `'S'` group go down as transparent ioctls (M_COPYIN/M_COPYOUT reach
//! the caller's whole address space through `UserBuf`, still bounds- and fault-checked).
//!
//! 32-bit processes (`->compat_ioctl`) use the same decoders with the ILP32 layouts of the
//! structures that embed a pointer (core `sth/layout.rs`, [`Model`]: `struct strbuf` 12 bytes,
//! `strpmsg` 32, `strpeek` 28, `strioctl` 16, `str_list` 8); every other argument has the same
//! layout.

use core::cell::Cell;

use crate::errno::Errno;
use crate::sth::consts::*;

use crate::sth::layout::{Layout, Model};
use crate::sth::{istr_timeout_ms, GetMsg, IocArg, Part, PeekArgs, StrIoctl, TranspIoctl};
use crate::strfile::StrFile;
use crate::uio::UserBuf;

fn i32_at(b: &[u8], off: usize) -> i32 {
    b.get(off..off + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, i32::from_ne_bytes)
}

/// The `size` bytes of the argument structure at user address `arg` (at most 48).
fn read_struct(arg: usize, size: usize) -> Result<[u8; 48], Errno> {
    let mut b = [0u8; 48];
    let dst = b.get_mut(..size).ok_or(Errno::EINVAL)?;
    let mut u = UserBuf::new(arg, size);
    crate::sth::UserIo::copy_from_user(&mut u, dst, 0)?;
    Ok(b)
}

/// A NUL-terminated module name of at most FMNAMESZ bytes at user address `addr`, copied into
/// `out`; returns its length. Reads byte by byte so that a short name at the end of a mapping
/// does not fault.
fn user_name(addr: usize, out: &mut [u8; FMNAMESZ + 1]) -> Result<usize, Errno> {
    let u = UserBuf::new(addr, FMNAMESZ + 1);
    for i in 0..=FMNAMESZ {
        let [c] = u.read_array::<1>(i)?;
        if c == 0 {
            return Ok(i);
        }
        if let Some(d) = out.get_mut(i) {
            *d = c;
        }
    }
    Err(Errno::EINVAL)
}

/// ioctl(2) entry point for [`StrFile`], for a caller of data model `model`.
pub(crate) fn ioctl(
    f: &StrFile,
    cmd: u32,
    arg: usize,
    nonblock: bool,
    model: Model,
) -> Result<i32, Errno> {
    let reg = &*f.registry;
    // Integer arguments are C `int`s: the upper half of the register is not meaningful.
    let int = i64::from(arg as u32 as i32);
    let out4 = UserBuf::new(arg, 4);
    // Commands whose argument is an `int *` result or a plain integer.
    let simple = |is_out: bool| {
        f.run(
            false,
            |s| {
                let mut o = out4;
                let v = if is_out {
                    IocArg::Out(&mut o)
                } else {
                    IocArg::Int(int)
                };
                s.strioctl(reg, cmd, v)
            },
            |_| {},
        )
    };
    match cmd {
        I_GETPMSG => getpmsg(f, arg, nonblock, model),
        I_PUTPMSG => putpmsg(f, arg, nonblock, model),
        I_PUSH | I_FIND => {
            let mut name = [0u8; FMNAMESZ + 1];
            let n = user_name(arg, &mut name)?;
            let name = core::str::from_utf8(name.get(..n).unwrap_or_default())
                .map_err(|_| Errno::EINVAL)?;
            f.run(false, |s| s.strioctl(reg, cmd, IocArg::Name(name)), |_| {})
        }
        I_POP => f.run(false, |s| s.strioctl(reg, cmd, IocArg::None), |_| {}),
        I_LOOK => {
            let o = UserBuf::new(arg, FMNAMESZ + 1);
            f.run(
                false,
                |s| {
                    let mut o = o;
                    s.strioctl(reg, cmd, IocArg::Out(&mut o))
                },
                |_| {},
            )
        }
        I_NREAD | I_GRDOPT | I_GWROPT | I_GETBAND | I_GETCLTIME | FIONREAD => simple(true),
        I_FLUSH | I_SRDOPT | I_SWROPT | I_CANPUT | I_ATMARK | I_CKBAND => simple(false),
        I_SET_HIWAT | I_SET_LOWAT => simple(false),
        I_SETCLTIME => {
            let v = i32::from_ne_bytes(out4.read_array::<4>(0)?);
            f.run(
                false,
                |s| s.strioctl(reg, cmd, IocArg::Int(i64::from(v))),
                |_| {},
            )
        }
        I_SETSIG | I_GETSIG => {
            let pid = kernel::current!().pid();
            f.run(
                false,
                |s| {
                    let mut o = out4;
                    let a = if cmd == I_SETSIG {
                        IocArg::Sig {
                            pid,
                            events: int as i32,
                        }
                    } else {
                        IocArg::GetSig { pid, out: &mut o }
                    };
                    s.strioctl(reg, cmd, a)
                },
                |_| {},
            )
        }
        I_FLUSHBAND => {
            let b = UserBuf::new(arg, 8).read_array::<8>(0)?;
            let pri = b.first().copied().unwrap_or(0);
            let flag = i32_at(&b, 4);
            f.run(
                false,
                |s| s.strioctl(reg, cmd, IocArg::Band { pri, flag }),
                |_| {},
            )
        }
        I_LIST => {
            if arg == 0 {
                return f.run(false, |s| s.strioctl(reg, cmd, IocArg::None), |_| {});
            }
            let b = read_struct(arg, model.size(Layout::StrList))?;
            let (n, list) = model.str_list(&b);
            let bytes = usize::try_from(n).unwrap_or(0).saturating_mul(FMNAMESZ + 1);
            let o = UserBuf::new(list, bytes);
            f.run(
                false,
                |s| {
                    let mut o = o;
                    s.strioctl(reg, cmd, IocArg::List { n, out: &mut o })
                },
                |_| {},
            )
        }
        I_PEEK => peek(f, arg, model),
        I_STR => istr(f, arg, model),
        c if c & 0xff00 != SID => {
            let t_id: Cell<Option<u32>> = Cell::new(None);
            f.run(
                false,
                |s| {
                    let mut mem = UserBuf::new(0, usize::MAX);
                    let mut t = TranspIoctl {
                        arg: arg as u64,
                        mem: &mut mem,
                        id: t_id.get(),
                    };
                    let r = s.strioctl(reg, cmd, IocArg::Transparent(&mut t));
                    t_id.set(t.id);
                    r
                },
                |s| {
                    if let Some(id) = t_id.get() {
                        s.sth_ioctl_cancel(id)
                    }
                },
            )
        }
        _ => f.run(false, |s| s.strioctl(reg, cmd, IocArg::None), |_| {}),
    }
}

/// I_STR: `struct strioctl { int ic_cmd; int ic_timout; int ic_len; char *ic_dp; }`.
/// The wait for the ioctl slot and the answer lasts at most `ic_timout` seconds (0: STRTIMOUT,
/// -1: no limit); then the ioctl is cancelled (a late answer is freed) and I_STR fails with
/// ETIME.
fn istr(f: &StrFile, arg: usize, model: Model) -> Result<i32, Errno> {
    let size = model.size(Layout::StrIoctl);
    let u = UserBuf::new(arg, size);
    let b = read_struct(arg, size)?;
    let (cmd, timeout, len, dp) = model.strioctl(&b);
    // The buffer serves the request (ic_len bytes) and the answer (up to ic_len bytes back).
    let data = UserBuf::new(dp, usize::try_from(len).unwrap_or(0));
    let limit = istr_timeout_ms(timeout)?;
    let reg = &*f.registry;
    let id: Cell<Option<u32>> = Cell::new(None);
    let mut out_len = len;
    let r = f.run_limited(
        false,
        limit,
        |s| {
            let mut io = data;
            let mut si = StrIoctl {
                cmd,
                timeout,
                len,
                io: &mut io,
                id: id.get(),
            };
            let r = s.strioctl(reg, I_STR, IocArg::Str(&mut si));
            id.set(si.id);
            out_len = si.len;
            r
        },
        |s| {
            if let Some(i) = id.get() {
                s.sth_ioctl_cancel(i)
            }
        },
    )?;
    u.write_at(8, &out_len.to_ne_bytes())?;
    Ok(r)
}

/// The `struct strpmsg`/`struct strpeek` parts as head `Part`s (None for len/maxlen < 0).
fn part(io: &mut UserBuf, len: i32) -> Option<Part<'_>> {
    (len >= 0).then_some(Part { io, len })
}

/// Write a `GetMsg`'s lengths back into the two `strbuf`s at the start of `u`.
fn put_lens(u: &UserBuf, g: &GetMsg, model: Model) -> Result<(), Errno> {
    u.write_at(4, &g.ctl_len.to_ne_bytes())?;
    u.write_at(model.databuf() + 4, &g.data_len.to_ne_bytes())
}

/// I_GETPMSG: `struct strpmsg { strbuf ctlbuf; strbuf databuf; int band; int flags; }`.
fn getpmsg(f: &StrFile, arg: usize, nonblock: bool, model: Model) -> Result<i32, Errno> {
    let size = model.size(Layout::StrPmsg);
    let u = UserBuf::new(arg, size);
    let b = read_struct(arg, size)?;
    let (c, d, band, flags) = model.strpmsg(&b);
    let (cmax, cbuf, dmax, dbuf) = (c.maxlen, c.buf, d.maxlen, d.buf);
    let cio = UserBuf::new(cbuf, usize::try_from(cmax).unwrap_or(0));
    let dio = UserBuf::new(dbuf, usize::try_from(dmax).unwrap_or(0));
    let g = f.run(
        nonblock,
        |s| {
            let (mut c, mut d) = (cio, dio);
            s.strgetpmsg(
                part(&mut c, cmax),
                part(&mut d, dmax),
                band,
                flags,
                nonblock,
            )
        },
        |_| {},
    )?;
    put_lens(&u, &g, model)?;
    u.write_at(model.pmsg_band(), &i32::from(g.band).to_ne_bytes())?;
    u.write_at(model.pmsg_flags(), &g.flags.to_ne_bytes())?;
    Ok(g.more)
}

/// I_PUTPMSG: as I_GETPMSG, `len` instead of `maxlen`; nothing is written back.
fn putpmsg(f: &StrFile, arg: usize, nonblock: bool, model: Model) -> Result<i32, Errno> {
    let b = read_struct(arg, model.size(Layout::StrPmsg))?;
    let (c, d, band, flags) = model.strpmsg(&b);
    let (clen, cbuf, dlen, dbuf) = (c.len, c.buf, d.len, d.buf);
    let cio = UserBuf::new(cbuf, usize::try_from(clen).unwrap_or(0));
    let dio = UserBuf::new(dbuf, usize::try_from(dlen).unwrap_or(0));
    f.run(
        nonblock,
        |s| {
            let (mut c, mut d) = (cio, dio);
            s.strputpmsg(
                part(&mut c, clen),
                part(&mut d, dlen),
                band,
                flags,
                nonblock,
            )
        },
        |_| {},
    )?;
    Ok(0)
}

/// I_PEEK: `struct strpeek { strbuf ctlbuf; strbuf databuf; long flags; }`.
fn peek(f: &StrFile, arg: usize, model: Model) -> Result<i32, Errno> {
    let size = model.size(Layout::StrPeek);
    let u = UserBuf::new(arg, size);
    let b = read_struct(arg, size)?;
    let (c, d, flags) = model.strpeek(&b);
    let (cmax, cbuf, dmax, dbuf) = (c.maxlen, c.buf, d.maxlen, d.buf);
    let cio = UserBuf::new(cbuf, usize::try_from(cmax).unwrap_or(0));
    let dio = UserBuf::new(dbuf, usize::try_from(dmax).unwrap_or(0));
    let reg = &*f.registry;
    let mut got = None;
    let r = f.run(
        false,
        |s| {
            let (mut c, mut d) = (cio, dio);
            let mut p = PeekArgs {
                ctl: part(&mut c, cmax),
                data: part(&mut d, dmax),
                flags,
                got: None,
            };
            let r = s.strioctl(reg, I_PEEK, IocArg::Peek(&mut p));
            got = p.got;
            r
        },
        |_| {},
    )?;
    if let Some(g) = got {
        put_lens(&u, &g, model)?;
        let fl: i64 = if g.flags == MSG_HIPRI {
            i64::from(RS_HIPRI)
        } else {
            0
        };
        let (fb, n) = model.long_bytes(fl);
        u.write_at(model.peek_flags(), fb.get(..n).unwrap_or_default())?;
    }
    Ok(r)
}
