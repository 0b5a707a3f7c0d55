// SPDX-License-Identifier: GPL-2.0
//! ioctl(2) on a STREAMS file: decode the user argument of each `I_*` command (an integer, a
//! module name, an output buffer, `struct strioctl`, `struct strpmsg`, …; layouts in
//! `docs/abi.md`) into the head's `IocArg`, run it through `StrFile::run`, and copy results
//! back. I_GETPMSG/I_PUTPMSG (the putmsg/getmsg emulation of LfS) are handled here too.
//! Commands outside the `'S'` group go down as transparent ioctls (M_COPYIN/M_COPYOUT reach
//! the caller's whole address space through `UserBuf`, still bounds- and fault-checked).
//!
//! 32-bit processes (`->compat_ioctl`) use the same decoders with the ILP32 layouts of the
//! structures that embed a pointer ([`Model`]: `struct strbuf` 12 bytes, `strpmsg` 32,
//! `strpeek` 28, `strioctl` 16, `str_list` 8); every other argument has the same layout.

use core::cell::Cell;

use crate::errno::Errno;
use crate::sth::consts::*;
use crate::sth::{istr_timeout_ms, GetMsg, IocArg, Part, PeekArgs, StrIoctl, TranspIoctl};
use crate::strfile::StrFile;
use crate::uio::UserBuf;

/// The caller's data model: where the structures that embed a pointer have their fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Model {
    /// A 64-bit process (`docs/abi.md` layouts).
    Lp64,
    /// A 32-bit process (`->compat_ioctl`): pointers and `long` are 4 bytes.
    Ilp32,
}

impl Model {
    /// Bytes of a pointer or `long`.
    fn ptr(self) -> usize {
        match self {
            Model::Lp64 => 8,
            Model::Ilp32 => 4,
        }
    }

    /// Bytes of a `struct strbuf` (int maxlen, int len, char *buf).
    fn strbuf(self) -> usize {
        8 + self.ptr()
    }

    /// A pointer (or `long`) at `off` of `b`, zero-extended (0 if `b` is too short).
    fn word(self, b: &[u8], off: usize) -> usize {
        match self {
            Model::Lp64 => b
                .get(off..off + 8)
                .and_then(|s| s.try_into().ok())
                .map_or(0, u64::from_ne_bytes) as usize,
            Model::Ilp32 => b
                .get(off..off + 4)
                .and_then(|s| s.try_into().ok())
                .map_or(0, u32::from_ne_bytes) as usize,
        }
    }

    /// `struct strbuf` at `off` of `b`: (maxlen, len, buf).
    fn read_strbuf(self, b: &[u8], off: usize) -> (i32, i32, usize) {
        (i32_at(b, off), i32_at(b, off + 4), self.word(b, off + 8))
    }
}

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
            // struct str_list { int sl_nmods; struct str_mlist *sl_modlist; }
            let b = read_struct(arg, 2 * model.ptr())?;
            let n = i32_at(&b, 0);
            let list = model.word(&b, model.ptr());
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
    // `ic_dp` is aligned: offset 16 in LP64, 12 in ILP32.
    let dp_off = 12_usize.next_multiple_of(model.ptr());
    let u = UserBuf::new(arg, dp_off + model.ptr());
    let b = read_struct(arg, dp_off + model.ptr())?;
    let (cmd, timeout, len) = (i32_at(&b, 0), i32_at(&b, 4), i32_at(&b, 8));
    let dp = model.word(&b, dp_off);
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
    u.write_at(model.strbuf() + 4, &g.data_len.to_ne_bytes())
}

/// I_GETPMSG: `struct strpmsg { strbuf ctlbuf; strbuf databuf; int band; int flags; }`.
fn getpmsg(f: &StrFile, arg: usize, nonblock: bool, model: Model) -> Result<i32, Errno> {
    let sb = model.strbuf();
    let u = UserBuf::new(arg, 2 * sb + 8);
    let b = read_struct(arg, 2 * sb + 8)?;
    let (cmax, _, cbuf) = model.read_strbuf(&b, 0);
    let (dmax, _, dbuf) = model.read_strbuf(&b, sb);
    let (band, flags) = (i32_at(&b, 2 * sb), i32_at(&b, 2 * sb + 4));
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
    u.write_at(2 * sb, &i32::from(g.band).to_ne_bytes())?;
    u.write_at(2 * sb + 4, &g.flags.to_ne_bytes())?;
    Ok(g.more)
}

/// I_PUTPMSG: as I_GETPMSG, `len` instead of `maxlen`; nothing is written back.
fn putpmsg(f: &StrFile, arg: usize, nonblock: bool, model: Model) -> Result<i32, Errno> {
    let sb = model.strbuf();
    let b = read_struct(arg, 2 * sb + 8)?;
    let (_, clen, cbuf) = model.read_strbuf(&b, 0);
    let (_, dlen, dbuf) = model.read_strbuf(&b, sb);
    let (band, flags) = (i32_at(&b, 2 * sb), i32_at(&b, 2 * sb + 4));
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
    let sb = model.strbuf();
    let u = UserBuf::new(arg, 2 * sb + model.ptr());
    let b = read_struct(arg, 2 * sb + model.ptr())?;
    let (cmax, _, cbuf) = model.read_strbuf(&b, 0);
    let (dmax, _, dbuf) = model.read_strbuf(&b, sb);
    let flags = i32_at(&b, 2 * sb);
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
        // `long flags`: 8 bytes, or 4 in ILP32 (little-endian: the low half comes first).
        let fb = fl.to_ne_bytes();
        u.write_at(2 * sb, fb.get(..model.ptr()).unwrap_or_default())?;
    }
    Ok(r)
}

