//! The random operations: one call picks an operation by weight and runs it on random open
//! Streams of the worker's table. Every system call goes through `Ctx::call` with the errno
//! set that operation may legitimately return (docs/ioctls.md); anything else is a failure.

use std::io;
use std::sync::Arc;

use streams::types::{bandinfo, str_list, str_mlist, strbuf, strfdinsert, strioctl, strpeek};
use streams::*;

use crate::devices::DevKind;
use crate::sys;
use crate::table::{lock, Entry};
use crate::worker::{Ctx, Th};

use libc::{
    EAGAIN, EBADMSG, EBUSY, EINTR, EINVAL, EIO, ELOOP, EMFILE, ENFILE, ENODATA, ENOENT, ENOMEM,
    ENOSR, ENXIO, EPERM, EPIPE, EPROTO, ERANGE, ETIME, ETOOMANYREFS,
};

/// Errors any call on a Stream may return: flow control, a signal, no memory, and what an
/// M_ERROR or M_HANGUP from the other end or the driver leaves (EIO, ENXIO, EPIPE, EPROTO);
/// EINVAL for a Stream linked under a multiplexor (every call on its own descriptor).
const STREAM: &[i32] = &[
    EAGAIN, EINTR, ENOSR, ENOMEM, EINVAL, ENXIO, EIO, EPIPE, EPROTO,
];
/// read/getmsg: plus EBADMSG (a protocol message under RPROTNORM).
const READ: &[i32] = &[
    EAGAIN, EINTR, ENOSR, ENOMEM, EINVAL, ENXIO, EIO, EPIPE, EPROTO, EBADMSG,
];
/// write/putmsg: plus ERANGE (sizes above STRCTLSZ/STRMSGSZ, or a module's packet sizes).
const WRITE: &[i32] = &[
    EAGAIN, EINTR, ENOSR, ENOMEM, EINVAL, ENXIO, EIO, EPIPE, EPROTO, ERANGE,
];
/// I_STR: plus ETIME (the answer did not come in time), ERANGE (a driver's own limit), EPERM
/// (MUX_ROUTE to another user's link) and EBUSY (xput's start while a run of that Stream is
/// going: another thread of the worker started one on the same descriptor).
const ISTR: &[i32] = &[
    EAGAIN, EINTR, ENOSR, ENOMEM, EINVAL, ENXIO, EIO, EPIPE, EPROTO, ETIME, ERANGE, EPERM, EBUSY,
];
/// I_SET_HIWAT/I_SET_LOWAT: plus EPERM (a high-water mark above the unprivileged limit).
const WATER: &[i32] = &[
    EAGAIN, EINTR, ENOSR, ENOMEM, EINVAL, ENXIO, EIO, EPIPE, EPROTO, EPERM,
];
/// I_SENDFD/I_RECVFD: plus EBADMSG (data first), EMFILE, EPERM/ELOOP/ETOOMANYREFS (a
/// refused descriptor: a cycle, an in-flight limit).
const FDPASS: &[i32] = &[
    EAGAIN,
    EINTR,
    ENOSR,
    ENOMEM,
    EINVAL,
    ENXIO,
    EIO,
    EPIPE,
    EPROTO,
    EBADMSG,
    EMFILE,
    EPERM,
    ELOOP,
    ETOOMANYREFS,
];
/// I_LINK/I_UNLINK and friends: plus EPERM (links may be reserved to privileged users) and
/// ETIME.
const LINK: &[i32] = &[
    EAGAIN, EINTR, ENOSR, ENOMEM, EINVAL, ENXIO, EIO, EPIPE, EPROTO, EPERM, ETIME,
];
/// open(2) of a device node: a FIFO without a reader (ENXIO, O_NONBLOCK writer), a signal
/// while a FIFO open waits, no memory, a driver refusing (EIO/ENXIO), EBUSY, EPERM/EACCES.
const OPEN: &[i32] = &[
    EINTR,
    ENOSR,
    ENOMEM,
    ENXIO,
    EIO,
    EBUSY,
    EPERM,
    libc::EACCES,
    EAGAIN,
    ENOENT,
];
/// open(2) of an attach path: as [`OPEN`], plus ENFILE: with connld pushed the open makes a
/// new pipe and returns one end, a new FIFO file whose inode the kernel may fail to make (what
/// pipe(2) returns then, and what an allocation failure there looks like, as for [`PIPE`]).
const OPEN_ATTACHED: &[i32] = &[
    EINTR,
    ENOSR,
    ENOMEM,
    ENXIO,
    EIO,
    EBUSY,
    EPERM,
    libc::EACCES,
    EAGAIN,
    ENOENT,
    ENFILE,
];
/// s_pipe (I_FIFO_PIPE): plus ENFILE (the kernel could not make a file or its inode: what
/// pipe(2) returns then, and what an allocation failure there looks like) and EMFILE.
const PIPE: &[i32] = &[
    EINTR, ENOSR, ENOMEM, ENXIO, EIO, EPERM, EAGAIN, ENFILE, EMFILE,
];
/// fattach/fdetach: EPERM (unprivileged), EBUSY (attached already), EINVAL (not attached),
/// ENOENT/ENOTDIR (the path), plus the Stream errors.
const ATTACH: &[i32] = &[
    EPERM,
    EBUSY,
    EINVAL,
    ENOENT,
    EINTR,
    ENOMEM,
    ENOSR,
    ENXIO,
    EIO,
    libc::EACCES,
];

/// sloop's I_STR command: acknowledged with the data echoed.
const SLOOP_IOC_ECHO: i32 = (b'l' as i32) << 8 | 1;
/// mux's I_STR command: route this upper Stream to link `muxid` (an int).
const MUX_ROUTE: i32 = (b'X' as i32) << 8 | 1;
/// xput's I_STR commands: start a run (count u64, mode u32, size u32); its counters.
const XPUT_IOC_START: i32 = (b'x' as i32) << 8 | 1;
const XPUT_IOC_STATS: i32 = (b'x' as i32) << 8 | 2;

/// An operation.
type Op = fn(&Ctx, &mut Th);

/// The operations and their weights.
pub(crate) const OPS: &[(u32, &str, Op)] = &[
    (10, "open", op_open),
    (4, "pipe", op_pipe),
    (2, "loop_pair", op_loop_pair),
    (8, "close", op_close),
    (3, "dup", op_dup),
    (10, "write", op_write),
    (10, "read", op_read),
    (10, "putmsg", op_putmsg),
    (10, "getmsg", op_getmsg),
    (14, "ioctl", op_ioctl),
    (5, "push", op_push),
    (4, "pop", op_pop),
    (4, "istr", op_istr),
    (4, "sendfd", op_sendfd),
    (4, "recvfd", op_recvfd),
    (3, "link", op_link),
    (3, "unlink", op_unlink),
    (2, "fattach", op_fattach),
    (2, "fdetach", op_fdetach),
    (5, "poll", op_poll),
    (1, "fork", op_fork),
    (2, "signal", op_signal),
    (3, "nonblock", op_nonblock),
    (1, "fdinsert", op_fdinsert),
    (2, "peek", op_peek),
];

/// Run one random operation (of those not skipped: `ctx.ops`, indices into OPS).
pub(crate) fn one(ctx: &Ctx, th: &mut Th) {
    let total: u32 = ctx.ops.iter().map(|&i| OPS[i].0).sum();
    if total == 0 {
        std::thread::sleep(std::time::Duration::from_millis(10));
        return;
    }
    let mut r = th.rng.u32(..total);
    for &i in &ctx.ops {
        let (w, _, f) = OPS[i];
        if r < w {
            return f(ctx, th);
        }
        r -= w;
    }
}

/// A random size: mostly small, sometimes up to a page, up to 64 KiB, or up to `max`.
pub(crate) fn size(rng: &mut fastrand::Rng, max: usize) -> usize {
    match rng.u32(..100) {
        0..50 => rng.usize(..=64),
        50..80 => rng.usize(..=4096),
        80..95 => rng.usize(..=65536.min(max)),
        _ => rng.usize(..=max),
    }
}

fn open_flags(rng: &mut fastrand::Rng, fifo: bool) -> i32 {
    let acc = if fifo {
        [libc::O_RDONLY, libc::O_WRONLY, libc::O_RDWR][rng.usize(..3)]
    } else {
        libc::O_RDWR
    };
    acc | if rng.u32(..4) == 0 {
        0
    } else {
        libc::O_NONBLOCK
    }
}

/// Remember on `e` what `r`, the result of `what` on it, did: a success, or a failure for
/// want of memory, time or a signal (the error paths the fault-injection pass exercises).
fn note_result<T>(e: &Entry, what: &str, r: &io::Result<T>) {
    match r {
        Ok(_) => e.note(what),
        Err(err) => {
            let n = sys::errno(err);
            if [ENOSR, ENOMEM, EAGAIN, EINTR, ETIME, libc::EFAULT].contains(&n) {
                e.note(format_args!("{what}: {}", sys::errno_name(n)));
            }
        }
    }
}

/// `s` cut to at most `max` bytes (on a character boundary).
fn clip(s: &str, max: usize) -> &str {
    let mut n = s.len().min(max);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    s.get(..n).unwrap_or(s)
}

/// A new entry: short close time most of the time (the default 15 s would stall the thread
/// that drops the last reference while data is queued). `origin` says how it was made.
fn add(ctx: &Ctx, th: &mut Th, s: Stream, kind: Option<DevKind>, origin: String) {
    if th.rng.u32(..8) != 0 {
        let mut ms: i32 = th.rng.i32(0..=20);
        // SAFETY: `ms` is a live int I_SETCLTIME reads.
        let _ = ctx.call(th, "I_SETCLTIME", STREAM, || unsafe {
            sys::ioctl_ptr(s.raw(), I_SETCLTIME, (&mut ms as *mut i32).cast())
        });
    }
    ctx.table.insert(&mut th.rng, Entry::new(s, kind, origin));
}

fn op_open(ctx: &Ctx, th: &mut Th) {
    if !ctx.attach.is_empty() && th.rng.u32(..6) == 0 {
        // An attach path: the attached Stream if there is one, else the plain file.
        let p = &ctx.attach[th.rng.usize(..ctx.attach.len())];
        let fl = libc::O_RDWR | libc::O_NONBLOCK;
        if let Ok(fd) = ctx.call(th, "open attached", OPEN_ATTACHED, || sys::open(p, fl)) {
            let s = Stream::from_fd(fd);
            if ffi::isastream(s.raw()) == 1 {
                add(ctx, th, s, None, format!("open {p} (attach path)"));
            }
        }
        return;
    }
    if ctx.devices.is_empty() {
        return;
    }
    let d = ctx.devices[th.rng.usize(..ctx.devices.len())].clone();
    let fl = open_flags(&mut th.rng, d.kind == DevKind::Fifo);
    if let Ok(fd) = ctx.call(th, "open", OPEN, || sys::open(&d.path, fl)) {
        let origin = format!("open {} flags {fl:#o}", d.path);
        add(ctx, th, Stream::from_fd(fd), Some(d.kind), origin);
    }
}

fn op_pipe(ctx: &Ctx, th: &mut Th) {
    if let Ok((a, b)) = ctx.call(th, "s_pipe", PIPE, Stream::pipe) {
        add(ctx, th, a, None, "s_pipe end 0".into());
        add(ctx, th, b, None, "s_pipe end 1".into());
    }
}

/// Two Streams of a loop-around driver joined with I_FDINSERT (APUE's s_pipe).
fn op_loop_pair(ctx: &Ctx, th: &mut Th) {
    let loops: Vec<_> = ctx
        .devices
        .iter()
        .filter(|d| d.kind == DevKind::Loop)
        .collect();
    if loops.is_empty() {
        return;
    }
    let path = loops[th.rng.usize(..loops.len())].path.clone();
    let Ok(a) = ctx.call(th, "open loop", OPEN, || sys::open(&path, libc::O_RDWR)) else {
        return;
    };
    let Ok(b) = ctx.call(th, "open loop", OPEN, || sys::open(&path, libc::O_RDWR)) else {
        return;
    };
    let (a, b) = (Stream::from_fd(a), Stream::from_fd(b));
    let joined = fdinsert(ctx, th, &a, b.raw(), 8, 0, 0).is_ok();
    let how = if joined {
        "joined"
    } else {
        "I_FDINSERT failed"
    };
    add(
        ctx,
        th,
        a,
        Some(DevKind::Loop),
        format!("{path} pair end a, {how}"),
    );
    add(
        ctx,
        th,
        b,
        Some(DevKind::Loop),
        format!("{path} pair end b, {how}"),
    );
}

fn fdinsert(
    ctx: &Ctx,
    th: &mut Th,
    s: &Stream,
    fildes: i32,
    clen: i32,
    off: i32,
    flags: i64,
) -> io::Result<i32> {
    let mut ctl = [0u8; 32];
    th.rng.fill(&mut ctl);
    let mut a = strfdinsert {
        ctlbuf: strbuf {
            maxlen: 0,
            len: clen,
            buf: ctl.as_mut_ptr().cast(),
        },
        databuf: strbuf::NONE,
        flags,
        fildes,
        offset: off,
    };
    // SAFETY: `a` and the 32-byte control buffer it points to are live; `clen` <= 32.
    ctx.call(th, "I_FDINSERT", WRITE, || unsafe {
        sys::ioctl_ptr(s.raw(), I_FDINSERT, (&mut a as *mut strfdinsert).cast())
    })
}

fn op_fdinsert(ctx: &Ctx, th: &mut Th) {
    let (Some(a), Some(b)) = (ctx.table.pick(&mut th.rng), ctx.table.pick(&mut th.rng)) else {
        return;
    };
    let clen = th.rng.i32(0..=32);
    let off = [0, 8, 16, 4, -8][th.rng.usize(..5)];
    let flags = [0, RS_HIPRI as i64, 7][th.rng.usize(..3)];
    let r = fdinsert(ctx, th, &a.s, b.fd(), clen, off, flags);
    note_result(&a, &format!("I_FDINSERT of #{}", b.id), &r);
    note_result(&b, &format!("I_FDINSERT'd into #{}", a.id), &r);
}

fn op_close(ctx: &Ctx, th: &mut Th) {
    let e = ctx.table.remove(&mut th.rng);
    // The close itself happens in the drop, when the last user lets go: counted here when it
    // is this one (with the watchdog watching: a close may wait for queued data to drain).
    if let Some(e) = e {
        if Arc::strong_count(&e) == 1 {
            let _ = ctx.call(th, "close", &[], || {
                drop(e);
                Ok(())
            });
        }
    }
}

fn op_dup(ctx: &Ctx, th: &mut Th) {
    let Some(e) = ctx.table.pick(&mut th.rng) else {
        return;
    };
    if let Ok(fd) = ctx.call(th, "dup", &[libc::EMFILE], || sys::dup(e.fd())) {
        let origin = format!("dup of #{} ({})", e.id, clip(&e.origin, 160));
        let d = Entry::new(Stream::from_fd(fd), e.kind, origin);
        e.note(format_args!("dup'd as #{}", d.id));
        ctx.table.insert(&mut th.rng, d);
    }
}

fn op_write(ctx: &Ctx, th: &mut Th) {
    let Some(e) = ctx.table.pick(&mut th.rng) else {
        return;
    };
    let n = size(&mut th.rng, ctx.max_size);
    let fill = th.rng.u8(..);
    th.buf[..n].fill(fill);
    let buf = std::mem::take(&mut th.buf);
    let _ = ctx.call(th, "write", &e.one_way(WRITE, true), || {
        e.s.write(&buf[..n])
    });
    th.buf = buf;
}

fn op_read(ctx: &Ctx, th: &mut Th) {
    let Some(e) = ctx.table.pick(&mut th.rng) else {
        return;
    };
    let n = size(&mut th.rng, ctx.max_size);
    let mut buf = std::mem::take(&mut th.buf);
    let _ = ctx.call(th, "read", &e.one_way(READ, false), || {
        e.s.read(&mut buf[..n])
    });
    th.buf = buf;
}

/// A control part: for TPI (udp), a primitive number and small fields, so the driver's
/// parser sees plausible offsets and lengths; else random bytes.
fn make_ctl(th: &mut Th, kind: Option<DevKind>) -> usize {
    let n = match th.rng.u32(..10) {
        0 => th.rng.usize(..=8192),
        _ => th.rng.usize(..=64),
    };
    th.rng.fill(&mut th.ctl[..n]);
    if kind == Some(DevKind::Udp) {
        for w in th.ctl[..n].chunks_exact_mut(4) {
            let v: i32 = th.rng.i32(-1..=40);
            w.copy_from_slice(&v.to_ne_bytes());
        }
    }
    n
}

fn op_putmsg(ctx: &Ctx, th: &mut Th) {
    let Some(e) = ctx.table.pick(&mut th.rng) else {
        return;
    };
    let clen = make_ctl(th, e.kind);
    let dlen = size(&mut th.rng, ctx.max_size);
    let (buf, ctlb) = (std::mem::take(&mut th.buf), std::mem::take(&mut th.ctl));
    let ctl = (th.rng.u32(..3) != 0).then_some(&ctlb[..clen]);
    let data = (th.rng.u32(..4) != 0).then_some(&buf[..dlen]);
    let w = e.one_way(WRITE, true);
    let _ = match th.rng.u32(..6) {
        0 => ctx.call(th, "putmsg", &w, || e.s.putmsg(ctl, data, 0)),
        1 => ctx.call(th, "putmsg hipri", &w, || e.s.putmsg(ctl, data, RS_HIPRI)),
        2 | 3 => {
            let band = th.rng.i32(0..=255);
            ctx.call(th, "putpmsg band", &w, || {
                e.s.putpmsg(ctl, data, band, MSG_BAND)
            })
        }
        4 => ctx.call(th, "putpmsg hipri", &w, || {
            e.s.putpmsg(ctl, data, 0, MSG_HIPRI)
        }),
        _ => {
            // Invalid combinations: a band out of range, a band with MSG_HIPRI, bad flags.
            let band = [256, -2, 1][th.rng.usize(..3)];
            let flags = [MSG_BAND, MSG_HIPRI, 0x40][th.rng.usize(..3)];
            ctx.call(th, "putpmsg invalid", &w, || {
                e.s.putpmsg(ctl, data, band, flags)
            })
        }
    };
    th.buf = buf;
    th.ctl = ctlb;
}

fn op_getmsg(ctx: &Ctx, th: &mut Th) {
    let Some(e) = ctx.table.pick(&mut th.rng) else {
        return;
    };
    let clen = th.rng.usize(..=th.ctl.len());
    let dlen = size(&mut th.rng, ctx.max_size);
    let (mut buf, mut ctlb) = (std::mem::take(&mut th.buf), std::mem::take(&mut th.ctl));
    let want_ctl = th.rng.u32(..4) != 0;
    let want_data = th.rng.u32(..4) != 0;
    let ctl = want_ctl.then_some(&mut ctlb[..clen]);
    let data = want_data.then_some(&mut buf[..dlen]);
    let r = e.one_way(READ, false);
    let _ = match th.rng.u32(..5) {
        0 => ctx.call(th, "getmsg", &r, || e.s.getmsg(ctl, data, 0)),
        1 => ctx.call(th, "getmsg hipri", &r, || e.s.getmsg(ctl, data, RS_HIPRI)),
        2 => ctx.call(th, "getpmsg any", &r, || e.s.getpmsg(ctl, data, 0, MSG_ANY)),
        3 => {
            let band = th.rng.i32(0..=255);
            ctx.call(th, "getpmsg band", &r, || {
                e.s.getpmsg(ctl, data, band, MSG_BAND)
            })
        }
        _ => ctx.call(th, "getpmsg hipri", &r, || {
            e.s.getpmsg(ctl, data, 0, MSG_HIPRI)
        }),
    };
    th.buf = buf;
    th.ctl = ctlb;
}

/// ioctl(2) with a pointer to `v`.
fn ioctl_with<T>(s: &Stream, cmd: i32, v: &mut T) -> io::Result<i32> {
    // SAFETY: `v` is a live, exclusively borrowed `T`, the argument type of `cmd`.
    unsafe { sys::ioctl_ptr(s.raw(), cmd, (v as *mut T).cast()) }
}

fn op_ioctl(ctx: &Ctx, th: &mut Th) {
    let Some(e) = ctx.table.pick(&mut th.rng) else {
        return;
    };
    let s = &e.s;
    let fd = s.raw();
    let rng = &mut th.rng;
    let mut int: i32 = 0;
    match rng.u32(..22) {
        0 => drop(ctx.call(th, "I_NREAD", STREAM, || ioctl_with(s, I_NREAD, &mut int))),
        1 => {
            let f = [FLUSHR, FLUSHW, FLUSHRW, 0, 8][rng.usize(..5)];
            let _ = ctx.call(th, "I_FLUSH", STREAM, || sys::ioctl_int(fd, I_FLUSH, f));
        }
        2 => {
            let mut bi = bandinfo {
                bi_pri: rng.u8(..),
                bi_flag: [FLUSHR, FLUSHW, FLUSHRW, 0][rng.usize(..4)],
            };
            let _ = ctx.call(th, "I_FLUSHBAND", STREAM, || {
                ioctl_with(s, I_FLUSHBAND, &mut bi)
            });
        }
        3 => {
            let mode = [RNORM, RMSGD, RMSGN, 3][rng.usize(..4)];
            let prot = [0, RPROTDAT, RPROTDIS, RPROTNORM, RPROTDAT | RPROTDIS][rng.usize(..5)];
            let fill = if rng.u32(..8) == 0 { RFILL } else { 0 };
            let v = mode | prot | fill;
            let _ = ctx.call(th, "I_SRDOPT", STREAM, || sys::ioctl_int(fd, I_SRDOPT, v));
        }
        4 => drop(ctx.call(th, "I_GRDOPT", STREAM, || ioctl_with(s, I_GRDOPT, &mut int))),
        5 => {
            let v = [0, SNDZERO, SNDPIPE, SNDZERO | SNDPIPE, SNDHOLD, 0x100][rng.usize(..6)];
            let _ = ctx.call(th, "I_SWROPT", STREAM, || sys::ioctl_int(fd, I_SWROPT, v));
        }
        6 => drop(ctx.call(th, "I_GWROPT", STREAM, || ioctl_with(s, I_GWROPT, &mut int))),
        7 => {
            let v = if rng.u32(..4) == 0 {
                0
            } else {
                rng.i32(1..=S_ALL)
            };
            let _ = ctx.call(th, "I_SETSIG", STREAM, || sys::ioctl_int(fd, I_SETSIG, v));
        }
        8 => drop(ctx.call(th, "I_GETSIG", STREAM, || ioctl_with(s, I_GETSIG, &mut int))),
        9 => {
            let b = rng.i32(-2..=256);
            let _ = ctx.call(th, "I_CANPUT", STREAM, || sys::ioctl_int(fd, I_CANPUT, b));
        }
        10 => {
            let b = rng.i32(-1..=256);
            let _ = ctx.call(th, "I_CKBAND", STREAM, || sys::ioctl_int(fd, I_CKBAND, b));
        }
        11 => {
            let allowed = [STREAM, &[ENODATA]].concat();
            let _ = ctx.call(th, "I_GETBAND", &allowed, || {
                ioctl_with(s, I_GETBAND, &mut int)
            });
        }
        12 => {
            let v = rng.i32(0..=3);
            let _ = ctx.call(th, "I_ATMARK", STREAM, || sys::ioctl_int(fd, I_ATMARK, v));
        }
        13 => {
            let v = match rng.u32(..4) {
                0 => rng.i32(0..=1024),
                1 | 2 => rng.i32(0..=65536),
                _ => rng.i32(0..=262_144),
            };
            let _ = ctx.call(th, "I_SET_HIWAT", WATER, || {
                sys::ioctl_int(fd, I_SET_HIWAT, v)
            });
        }
        14 => {
            let v = rng.i32(0..=65536);
            let _ = ctx.call(th, "I_SET_LOWAT", WATER, || {
                sys::ioctl_int(fd, I_SET_LOWAT, v)
            });
        }
        15 => {
            int = rng.i32(-1..=20);
            let _ = ctx.call(th, "I_SETCLTIME", STREAM, || {
                ioctl_with(s, I_SETCLTIME, &mut int)
            });
        }
        16 => drop(ctx.call(th, "I_GETCLTIME", STREAM, || {
            ioctl_with(s, I_GETCLTIME, &mut int)
        })),
        17 => {
            let mut name = [0u8; FMNAMESZ + 1];
            let _ = ctx.call(th, "I_LOOK", STREAM, || ioctl_with(s, I_LOOK, &mut name));
        }
        18 => {
            let name = module_name(ctx, rng);
            let _ = ctx.call(th, "I_FIND", STREAM, || {
                // SAFETY: `name` is NUL-terminated and outlives the call.
                unsafe { sys::ioctl_ptr(fd, I_FIND, name.as_ptr() as *mut _) }
            });
        }
        19 => {
            let n = rng.i32(0..=4);
            let mut ml = vec![
                str_mlist {
                    l_name: [0; FMNAMESZ + 1]
                };
                4
            ];
            let mut sl = str_list {
                sl_nmods: n,
                sl_modlist: ml.as_mut_ptr(),
            };
            let _ = if rng.bool() {
                ctx.call(th, "I_LIST", STREAM, || ioctl_with(s, I_LIST, &mut sl))
            } else {
                // SAFETY: I_LIST with NULL counts the modules.
                ctx.call(th, "I_LIST NULL", STREAM, || unsafe {
                    sys::ioctl_ptr(fd, I_LIST, std::ptr::null_mut())
                })
            };
        }
        20 => {
            let _ = ctx.call(th, "FIONREAD", STREAM, || {
                ioctl_with(s, libc::FIONREAD as i32, &mut int)
            });
        }
        _ => {
            // A command nobody knows: EINVAL (or ENOTTY from the VFS for some numbers).
            let cmd = (b'S' as i32) << 8 | rng.i32(100..=255);
            let allowed = [STREAM, &[libc::ENOTTY]].concat();
            let _ = ctx.call(th, "unknown ioctl", &allowed, || sys::ioctl_int(fd, cmd, 0));
        }
    }
}

/// A module name: one of the registered modules, or (rarely) one that does not exist.
fn module_name(ctx: &Ctx, rng: &mut fastrand::Rng) -> std::ffi::CString {
    let name = if ctx.modules.is_empty() || rng.u32(..10) == 0 {
        "nosuchmod".to_string()
    } else {
        ctx.modules[rng.usize(..ctx.modules.len())].clone()
    };
    std::ffi::CString::new(name).unwrap_or_default()
}

fn op_push(ctx: &Ctx, th: &mut Th) {
    let Some(e) = ctx.table.pick(&mut th.rng) else {
        return;
    };
    let name = module_name(ctx, &mut th.rng);
    let allowed = [STREAM, &[EPERM]].concat();
    let r = ctx.call(th, "I_PUSH", &allowed, || {
        // SAFETY: `name` is NUL-terminated and outlives the call.
        unsafe { sys::ioctl_ptr(e.fd(), I_PUSH, name.as_ptr() as *mut _) }
    });
    note_result(&e, &format!("I_PUSH {}", name.to_string_lossy()), &r);
}

fn op_pop(ctx: &Ctx, th: &mut Th) {
    let Some(e) = ctx.table.pick(&mut th.rng) else {
        return;
    };
    let r = ctx.call(th, "I_POP", STREAM, || sys::ioctl_int(e.fd(), I_POP, 0));
    note_result(&e, "I_POP", &r);
}

fn op_istr(ctx: &Ctx, th: &mut Th) {
    let Some(e) = ctx.table.pick(&mut th.rng) else {
        return;
    };
    let rng = &mut th.rng;
    let mut data = [0u8; 1024];
    rng.fill(&mut data);
    let (cmd, len) = match rng.u32(..6) {
        0 => (SLOOP_IOC_ECHO, rng.i32(0..=1024)),
        1 => {
            let id = lock(&e.muxids).first().copied().unwrap_or(rng.i32(-1..=4));
            data[..4].copy_from_slice(&id.to_ne_bytes());
            (MUX_ROUTE, [4, 0, 3][rng.usize(..3)])
        }
        2 => {
            // A short run of the xput producer (count, mode, size), sometimes invalid.
            let count: u64 = rng.u64(1..=2000);
            let mode: u32 = rng.u32(0..=4);
            let sz: u32 = rng.u32(0..=256);
            data[..8].copy_from_slice(&count.to_ne_bytes());
            data[8..12].copy_from_slice(&mode.to_ne_bytes());
            data[12..16].copy_from_slice(&sz.to_ne_bytes());
            (XPUT_IOC_START, 16)
        }
        3 => (XPUT_IOC_STATS, 1024),
        4 => (rng.i32(..), rng.i32(-1..=1024)),
        _ => (rng.i32(..), 70000),
    };
    let mut ic = strioctl {
        ic_cmd: cmd,
        ic_timout: [-1, 0, 1, 2, -2][rng.usize(..5)],
        ic_len: len,
        ic_dp: data.as_mut_ptr().cast(),
    };
    let _ = ctx.call(th, "I_STR", ISTR, || ioctl_with(&e.s, I_STR, &mut ic));
}

fn op_sendfd(ctx: &Ctx, th: &mut Th) {
    let (Some(a), Some(b)) = (ctx.table.pick(&mut th.rng), ctx.table.pick(&mut th.rng)) else {
        return;
    };
    // Any descriptor, including `a` itself or the other end of its pipe (a cycle).
    let fd = if th.rng.u32(..16) == 0 { 0 } else { b.fd() };
    let r = ctx.call(th, "I_SENDFD", FDPASS, || {
        sys::ioctl_int(a.fd(), I_SENDFD, fd)
    });
    if fd == b.fd() {
        note_result(&a, &format!("I_SENDFD of #{}", b.id), &r);
        note_result(&b, &format!("sent with I_SENDFD over #{}", a.id), &r);
    }
}

fn op_recvfd(ctx: &Ctx, th: &mut Th) {
    let Some(a) = ctx.table.pick(&mut th.rng) else {
        return;
    };
    let mut r = strrecvfd {
        fd: -1,
        uid: 0,
        gid: 0,
        fill: [0; 8],
    };
    if ctx
        .call(th, "I_RECVFD", FDPASS, || {
            ioctl_with(&a.s, I_RECVFD, &mut r)
        })
        .is_ok()
    {
        if r.fd < 0 {
            ctx.unexpected(&format!("I_RECVFD succeeded with fd {}", r.fd));
            return;
        }
        // SAFETY: I_RECVFD installed `r.fd` in this process for us.
        let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(r.fd) };
        let s = Stream::from_fd(fd);
        if ffi::isastream(s.raw()) == 1 {
            let e = Entry::new(s, None, format!("I_RECVFD on #{}", a.id));
            a.note(format_args!("I_RECVFD gave #{}", e.id));
            ctx.table.insert(&mut th.rng, e);
        }
    }
}

fn op_link(ctx: &Ctx, th: &mut Th) {
    let upper = if th.rng.u32(..5) == 0 {
        ctx.table.pick(&mut th.rng)
    } else {
        ctx.table.pick_kind(&mut th.rng, DevKind::Mux)
    };
    let (Some(u), Some(l)) = (upper, ctx.table.pick(&mut th.rng)) else {
        return;
    };
    let persistent = th.rng.u32(..4) == 0;
    let cmd = if persistent { I_PLINK } else { I_LINK };
    let r = ctx.call(th, "I_LINK", LINK, || sys::ioctl_int(u.fd(), cmd, l.fd()));
    let what = if persistent { "I_PLINK" } else { "I_LINK" };
    note_result(
        &u,
        &format!("{what} of #{} (muxid {:?})", l.id, r.as_ref().ok()),
        &r,
    );
    note_result(&l, &format!("{what}ed under #{}", u.id), &r);
    if let Ok(id) = r {
        if persistent {
            lock(&ctx.plinks).push(id);
        } else {
            lock(&u.muxids).push(id);
        }
    }
}

fn op_unlink(ctx: &Ctx, th: &mut Th) {
    let Some(u) = ctx.table.pick_kind(&mut th.rng, DevKind::Mux) else {
        return;
    };
    if th.rng.u32(..3) == 0 {
        let id = {
            let mut p = lock(&ctx.plinks);
            if p.is_empty() || th.rng.u32(..8) == 0 {
                MUXID_ALL
            } else {
                let i = th.rng.usize(..p.len());
                p.swap_remove(i)
            }
        };
        let r = ctx.call(th, "I_PUNLINK", LINK, || {
            sys::ioctl_int(u.fd(), I_PUNLINK, id)
        });
        note_result(&u, &format!("I_PUNLINK {id}"), &r);
    } else {
        let id = {
            let mut m = lock(&u.muxids);
            if m.is_empty() || th.rng.u32(..8) == 0 {
                m.clear();
                MUXID_ALL
            } else {
                let i = th.rng.usize(..m.len());
                m.swap_remove(i)
            }
        };
        let r = ctx.call(th, "I_UNLINK", LINK, || {
            sys::ioctl_int(u.fd(), I_UNLINK, id)
        });
        note_result(&u, &format!("I_UNLINK {id}"), &r);
    }
}

fn op_fattach(ctx: &Ctx, th: &mut Th) {
    // Unprivileged workers try now and then (EPERM: fattach is a mount).
    if ctx.attach.is_empty() || (!ctx.privileged && th.rng.u32(..4) != 0) {
        return;
    }
    let Some(e) = ctx.table.pick(&mut th.rng) else {
        return;
    };
    let p = ctx.attach[th.rng.usize(..ctx.attach.len())].clone();
    let r = ctx.call(th, "fattach", ATTACH, || e.s.fattach(&p));
    note_result(&e, &format!("fattach {p}"), &r);
}

fn op_fdetach(ctx: &Ctx, th: &mut Th) {
    if ctx.attach.is_empty() {
        return;
    }
    let p = ctx.attach[th.rng.usize(..ctx.attach.len())].clone();
    let _ = ctx.call(th, "fdetach", ATTACH, || fdetach(&p));
}

fn op_poll(ctx: &Ctx, th: &mut Th) {
    let n = th.rng.usize(1..=8);
    let mut keep = Vec::with_capacity(n);
    let mut fds = Vec::with_capacity(n);
    for _ in 0..n {
        if let Some(e) = ctx.table.pick(&mut th.rng) {
            let ev = [
                libc::POLLIN,
                libc::POLLOUT,
                libc::POLLPRI,
                libc::POLLRDNORM,
                libc::POLLRDBAND,
                libc::POLLWRBAND,
                libc::POLLIN | libc::POLLOUT | libc::POLLPRI,
            ][th.rng.usize(..7)];
            fds.push(libc::pollfd {
                fd: e.fd(),
                events: ev,
                revents: 0,
            });
            keep.push(e);
        }
    }
    let timeout = th.rng.i32(0..=5);
    let _ = ctx.call(th, "poll", &[EINTR, ENOMEM], || {
        // SAFETY: `fds` is a live array of `fds.len()` pollfds; `keep` holds them open.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r)
        }
    });
    drop(keep);
}

/// fork: the child makes a few raw calls on the descriptors it inherited (only system calls:
/// no allocation, no lock, as after any fork of a threaded process) and exits, or is killed.
fn op_fork(ctx: &Ctx, th: &mut Th) {
    let fds = ctx.table.fds();
    let seed = th.rng.u64(..);
    // SAFETY: the child runs only `child` (system calls on stack data) and `_exit`.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        child(&fds, seed);
    }
    if pid < 0 {
        let _ = ctx.call(th, "fork", &[EAGAIN, ENOMEM], || {
            Err::<(), _>(io::Error::last_os_error())
        });
        return;
    }
    ctx.slot
        .forks
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if th.rng.bool() {
        std::thread::sleep(std::time::Duration::from_micros(th.rng.u64(..2000)));
        let _ = sys::kill(pid, libc::SIGKILL);
    }
    // Give it up to 100 ms, then kill it (it may be asleep in a blocking call).
    for _ in 0..100 {
        if let Ok(Some(_)) = sys::wait(pid, true) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let _ = sys::kill(pid, libc::SIGKILL);
    let _ = sys::wait(pid, false);
}

fn child(fds: &[i32], seed: u64) -> ! {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut buf = [0u8; 512];
    if !fds.is_empty() {
        for _ in 0..rng.usize(..16) {
            let fd = fds[rng.usize(..fds.len())];
            // SAFETY: raw system calls on a descriptor number and a stack buffer.
            unsafe {
                match rng.u32(..5) {
                    0 => drop(libc::write(fd, buf.as_ptr().cast(), rng.usize(..=512))),
                    1 => drop(libc::read(fd, buf.as_mut_ptr().cast(), rng.usize(..=512))),
                    2 => drop(libc::ioctl(
                        fd,
                        I_FLUSH as libc::c_ulong,
                        FLUSHRW as libc::c_long,
                    )),
                    3 => drop(libc::ioctl(fd, I_NREAD as libc::c_ulong, buf.as_mut_ptr())),
                    _ => drop(libc::close(fd)),
                }
            }
        }
    }
    // SAFETY: leave without running anything of the parent's (no atexit, no flush).
    unsafe { libc::_exit(0) }
}

fn op_signal(ctx: &Ctx, th: &mut Th) {
    let sig = [libc::SIGUSR1, libc::SIGUSR2][th.rng.usize(..2)];
    ctx.signal_sibling(th, sig);
}

fn op_nonblock(ctx: &Ctx, th: &mut Th) {
    let Some(e) = ctx.table.pick(&mut th.rng) else {
        return;
    };
    let on = th.rng.u32(..4) != 0;
    let _ = ctx.call(th, "fcntl O_NONBLOCK", &[], || {
        sys::set_nonblock(e.fd(), on)
    });
}

fn op_peek(ctx: &Ctx, th: &mut Th) {
    let Some(e) = ctx.table.pick(&mut th.rng) else {
        return;
    };
    let mut c = [0u8; 256];
    let mut d = [0u8; 4096];
    let mut pk = strpeek {
        ctlbuf: strbuf {
            maxlen: th.rng.i32(-1..=256),
            len: 0,
            buf: c.as_mut_ptr().cast(),
        },
        databuf: strbuf {
            maxlen: th.rng.i32(-1..=4096),
            len: 0,
            buf: d.as_mut_ptr().cast(),
        },
        flags: [0, RS_HIPRI as libc::c_long, 5][th.rng.usize(..3)],
    };
    let _ = ctx.call(th, "I_PEEK", READ, || ioctl_with(&e.s, I_PEEK, &mut pk));
}
