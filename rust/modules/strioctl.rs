// SPDX-License-Identifier: GPL-2.0
//! ioctl(2) on a STREAMS file: decode the user argument of each `I_*` command (an integer, a
//! module name, an output buffer, `struct strioctl`, `struct strpmsg`, …; layouts in
//! `docs/abi.md`) and run it through the core's two-phase calls (`sth::call`): what a command
//! sends is copied in before the Stream lock is taken, its results (an `int`, a module name,
//! the I_LIST names, the I_STR answer, the I_PEEK and I_GETPMSG parts) are copied out after
//! the lock is dropped. I_GETPMSG/I_PUTPMSG (the putmsg/getmsg emulation of LfS) are handled
//! here too. Commands outside the `'S'` group go down as transparent ioctls: each M_COPYIN /
//! M_COPYOUT is a step the core hands back, copied here without the lock through a `UserBuf`
//! over the caller's whole address space (still bounds- and fault-checked).
//!
//! 32-bit processes (`->compat_ioctl`) use the same decoders with the ILP32 layouts of the
//! structures that embed a pointer (core `sth/layout.rs`, [`Model`]: `struct strbuf` 12 bytes,
//! `strpmsg` 32, `strpeek` 28, `strioctl` 16, `str_list` 8); every other argument has the same
//! layout.

use crate::errno::Errno;
use crate::sth::call;
use crate::sth::consts::*;

use crate::sth::layout::{Layout, Model};
use crate::sth::{GetMsg, IocArg, Part};
use crate::strfile::StrFile;
use crate::uio::UserBuf;

fn i32_at(b: &[u8], off: usize) -> i32 {
    b.get(off..off + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, i32::from_ne_bytes)
}

/// The `size` bytes of the argument structure at user address `arg` (at most `N`), in a
/// buffer of `N` bytes: 48 for I_STR, I_PEEK and I_LIST, the largest `strpmsg` for
/// putmsg/getmsg; EINVAL if `size` is over `N`.
fn read_struct<const N: usize>(arg: usize, size: usize) -> Result<[u8; N], Errno> {
    let mut b = [0u8; N];
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

/// An `I_*` command whose result is `N` bytes written to the caller's buffer at `arg`
/// (an `int`, or a module name for I_LOOK): `arg` built from the kernel buffer the head fills.
fn result<const N: usize>(
    f: &StrFile,
    cmd: u32,
    arg: usize,
    make: impl for<'a> Fn(&'a mut [u8]) -> IocArg<'a>,
) -> Result<i32, Errno> {
    let reg = &*f.registry;
    let mut out = [0u8; N];
    let mut io = UserBuf::new(arg, N);
    call::ioctl_out(
        f,
        &mut out,
        &mut io,
        |s, o| s.strioctl(reg, cmd, make(o)),
        |_| N,
    )
}

/// The largest `struct strpmsg` (LP64, 40 bytes: two 16-byte `strbuf`s, `band`, `flags`).
const STRPMSG_MAX: usize = Model::Lp64.size(Layout::StrPmsg);

/// ioctl(2) entry point for [`StrFile`], for a caller of data model `model`.
///
/// putmsg and getmsg (I_PUTPMSG/I_GETPMSG) are the hot commands: they are dispatched here,
/// ahead of the rest, so that their frame does not carry the stack buffers of the others (a
/// module name, the result buffers, the I_STR and I_LIST decoding), which live in
/// [`ioctl_other`].
#[inline]
pub(crate) fn ioctl(
    f: &StrFile,
    cmd: u32,
    arg: usize,
    nonblock: bool,
    model: Model,
) -> Result<i32, Errno> {
    match cmd {
        I_PUTPMSG => putpmsg(f, arg, nonblock, model),
        I_GETPMSG => getpmsg(f, arg, nonblock, model),
        _ => ioctl_other(f, cmd, arg, model),
    }
}

/// Every command but I_PUTPMSG/I_GETPMSG; out of line on purpose (see [`ioctl`]).
#[inline(never)]
fn ioctl_other(f: &StrFile, cmd: u32, arg: usize, model: Model) -> Result<i32, Errno> {
    let reg = &*f.registry;
    // Integer arguments are C `int`s: the upper half of the register is not meaningful.
    let int = i64::from(arg as u32 as i32);
    // Commands whose argument is a value: nothing to copy either way.
    let plain = |a: fn(i64) -> IocArg<'static>, v: i64| {
        f.run(false, |s| s.strioctl(reg, cmd, a(v)), |_| {})
    };
    match cmd {
        I_PUSH | I_FIND => {
            let mut name = [0u8; FMNAMESZ + 1];
            let n = user_name(arg, &mut name)?;
            let name = core::str::from_utf8(name.get(..n).unwrap_or_default())
                .map_err(|_| Errno::EINVAL)?;
            f.run(false, |s| s.strioctl(reg, cmd, IocArg::Name(name)), |_| {})
        }
        I_POP => plain(|_| IocArg::None, 0),
        I_LOOK => result::<{ FMNAMESZ + 1 }>(f, cmd, arg, |o| IocArg::Out(o)),
        I_NREAD | I_GRDOPT | I_GWROPT | I_GETBAND | I_GETCLTIME | I_GET_HIWAT | FIONREAD => {
            result::<4>(f, cmd, arg, |o| IocArg::Out(o))
        }
        I_FLUSH | I_SRDOPT | I_SWROPT | I_CANPUT | I_ATMARK | I_CKBAND => plain(IocArg::Int, int),
        I_SET_HIWAT => {
            // Ask for the capability only when it matters (no audit record otherwise).
            let over = usize::try_from(int).is_ok_and(|v| v > crate::limits::limits().strhiwatmax);
            let privileged = over && crate::strlimits::may_exceed_hiwatmax();
            f.run(
                false,
                |s| s.strioctl(reg, cmd, IocArg::Hiwat { v: int, privileged }),
                |_| {},
            )
        }
        I_SET_LOWAT => plain(IocArg::Int, int),
        I_SETCLTIME => {
            let v = i32::from_ne_bytes(UserBuf::new(arg, 4).read_array::<4>(0)?);
            plain(IocArg::Int, i64::from(v))
        }
        I_SETSIG => {
            // Made (a sleeping allocation) before the lock; a replaced or refused owner is
            // dropped after it.
            let mut owner = Some(crate::sigowner::PidOwner::current()?);
            let events = int as i32;
            f.run(
                false,
                |s| match owner.take() {
                    Some(owner) => s.strioctl(reg, cmd, IocArg::Sig { owner, events }),
                    None => Err(Errno::EINVAL.into()),
                },
                |_| {},
            )
        }
        I_GETSIG => {
            let key = crate::sigowner::current_key();
            result::<4>(f, cmd, arg, |out| IocArg::GetSig { key, out })
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
        I_LIST => list(f, arg, model),
        I_PEEK => peek(f, arg, model),
        I_STR => istr(f, arg, model),
        c if c & 0xff00 != SID => {
            let mut mem = UserBuf::new(0, usize::MAX);
            call::transparent(f, cmd, arg as u64, &mut mem)
        }
        _ => plain(|_| IocArg::None, 0),
    }
}

/// I_LIST: with a NULL argument the number of modules; else `struct str_list { int sl_nmods;
/// struct str_mlist *sl_modlist; }`: the names (FMNAMESZ + 1 bytes each) go to a kernel buffer
/// under the lock (there are at most NSTRPUSH + 1 of them) and to `sl_modlist` after it.
fn list(f: &StrFile, arg: usize, model: Model) -> Result<i32, Errno> {
    let reg = &*f.registry;
    if arg == 0 {
        return f.run(false, |s| s.strioctl(reg, I_LIST, IocArg::None), |_| {});
    }
    let b = read_struct::<48>(arg, model.size(Layout::StrList))?;
    let (n, addr) = model.str_list(&b);
    let room = usize::try_from(n).unwrap_or(0).min(NSTRPUSH + 1);
    let mut out = crate::sys::vec_zeroed_wait(room * (FMNAMESZ + 1)).map_err(|_| Errno::ENOSR)?;
    let bytes = usize::try_from(n).unwrap_or(0).saturating_mul(FMNAMESZ + 1);
    let mut io = UserBuf::new(addr, bytes);
    call::ioctl_out(
        f,
        out.as_mut_slice(),
        &mut io,
        |s, o| s.strioctl(reg, I_LIST, IocArg::List { n, out: o }),
        |done| usize::try_from(done).unwrap_or(0) * (FMNAMESZ + 1),
    )
}

/// I_STR: `struct strioctl { int ic_cmd; int ic_timout; int ic_len; char *ic_dp; }`. The
/// request (`ic_len` bytes, at most STRMSGSZ) is copied in before the lock, the answer copied
/// back to `ic_dp` and its length to `ic_len` after it. The wait for the ioctl slot and the
/// answer lasts at most `ic_timout` seconds (0: STRTIMOUT, -1: no limit); then the ioctl is
/// cancelled (a late answer is freed) and I_STR fails with ETIME.
fn istr(f: &StrFile, arg: usize, model: Model) -> Result<i32, Errno> {
    let size = model.size(Layout::StrIoctl);
    let u = UserBuf::new(arg, size);
    let b = read_struct::<48>(arg, size)?;
    let (cmd, timeout, len, dp) = model.strioctl(&b);
    // The buffer serves the request (ic_len bytes) and the answer (up to ic_len bytes back).
    let mut data = UserBuf::new(dp, usize::try_from(len).unwrap_or(0));
    let (r, out_len) = call::istr(f, &f.registry, cmd, timeout, len, &mut data)?;
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

/// I_GETPMSG: `struct strpmsg { strbuf ctlbuf; strbuf databuf; int band; int flags; }`. The
/// parts, then the lengths, band and flags (one copy from `ctlbuf.len` to the end), are copied
/// out after the lock; if any of those copies faults the message goes back and nothing was
/// consumed.
fn getpmsg(f: &StrFile, arg: usize, nonblock: bool, model: Model) -> Result<i32, Errno> {
    let size = model.size(Layout::StrPmsg);
    let u = UserBuf::new(arg, size);
    let mut b = read_struct::<STRPMSG_MAX>(arg, size)?;
    let (c, d, band, flags) = model.strpmsg(&b);
    let (cmax, cbuf, dmax, dbuf) = (c.maxlen, c.buf, d.maxlen, d.buf);
    let mut cio = UserBuf::new(cbuf, usize::try_from(cmax).unwrap_or(0));
    let mut dio = UserBuf::new(dbuf, usize::try_from(dmax).unwrap_or(0));
    let g = call::getmsg(
        f,
        part(&mut cio, cmax),
        part(&mut dio, dmax),
        band,
        flags,
        nonblock,
        |g| {
            // The lengths, band and flags in one copy over the structure as it came in.
            let r = model
                .pmsg_results(&mut b, g.ctl_len, g.data_len, i32::from(g.band), g.flags)
                .ok_or(Errno::EINVAL)?;
            u.write_at(r.start, b.get(r).unwrap_or_default())
        },
    )?;
    Ok(g.more)
}

/// I_PUTPMSG: as I_GETPMSG, `len` instead of `maxlen`; the parts are copied in before the
/// lock (ERANGE beyond STRCTLSZ/STRMSGSZ); nothing is written back.
fn putpmsg(f: &StrFile, arg: usize, nonblock: bool, model: Model) -> Result<i32, Errno> {
    let b = read_struct::<STRPMSG_MAX>(arg, model.size(Layout::StrPmsg))?;
    let (c, d, band, flags) = model.strpmsg(&b);
    let (clen, cbuf, dlen, dbuf) = (c.len, c.buf, d.len, d.buf);
    let mut cio = UserBuf::new(cbuf, usize::try_from(clen).unwrap_or(0));
    let mut dio = UserBuf::new(dbuf, usize::try_from(dlen).unwrap_or(0));
    call::putmsg(
        f,
        part(&mut cio, clen),
        part(&mut dio, dlen),
        band,
        flags,
        nonblock,
    )?;
    Ok(0)
}

/// I_PEEK: `struct strpeek { strbuf ctlbuf; strbuf databuf; long flags; }`. The parts are
/// copied from a `dupmsg` of the first message after the lock.
fn peek(f: &StrFile, arg: usize, model: Model) -> Result<i32, Errno> {
    let size = model.size(Layout::StrPeek);
    let u = UserBuf::new(arg, size);
    let b = read_struct::<48>(arg, size)?;
    let (c, d, flags) = model.strpeek(&b);
    let (cmax, cbuf, dmax, dbuf) = (c.maxlen, c.buf, d.maxlen, d.buf);
    let mut cio = UserBuf::new(cbuf, usize::try_from(cmax).unwrap_or(0));
    let mut dio = UserBuf::new(dbuf, usize::try_from(dmax).unwrap_or(0));
    call::peek(
        f,
        &f.registry,
        part(&mut cio, cmax),
        part(&mut dio, dmax),
        flags,
        |g| {
            put_lens(&u, g, model)?;
            let fl: i64 = if g.flags == MSG_HIPRI {
                i64::from(RS_HIPRI)
            } else {
                0
            };
            let (fb, n) = model.long_bytes(fl);
            u.write_at(model.peek_flags(), fb.get(..n).unwrap_or_default())
        },
    )
}
