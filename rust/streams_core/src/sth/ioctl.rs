//! ioctl(2) at the Stream head (`strioctl`): the I_* commands as a pure dispatcher over the
//! head state, and I_STR's M_IOCTL round trip through the ioctl slot.
//!
//! The platform decodes the user argument by command (an integer, a module name, `struct
//! strioctl`, `struct strpeek`, …) into an [`IocArg`]. Nothing here reaches user memory:
//! results are the return value and kernel buffers ([`IocArg::Out`], [`IocArg::List`]) that
//! the platform copies to the caller after it has dropped the Stream lock; I_STR's request
//! arrives as a message the platform built before the lock, and its answer leaves as the
//! M_IOCACK itself; I_PEEK hands out a `dupmsg` (`msg.rs`).
//!
//! I_STR is stateful and never sleeps: the first call sends M_IOCTL down, records its id in
//! the slot and in the caller's [`StrIoctl`], and returns [`Block::IoctlAck`]; the head's read
//! put procedure stores the answer; the platform calls again with the same `StrIoctl` and the
//! ioctl completes (a loopback answer arriving during the first call completes it at once).
//! A second ioctl waits for the slot. The platform bounds the whole wait (for the slot and
//! for the answer) by [`istr_timeout_ms`] of `ic_timout`; when it expires it calls
//! [`Stream::sth_ioctl_cancel`] and fails with ETIME (a late answer is then freed).
//!
//! I_LINK, I_PLINK, I_UNLINK and I_PUNLINK are in `mux.rs` (the platform resolves the file
//! descriptor into [`IocArg::Link`]), I_FDINSERT in `fdinsert.rs` ([`IocArg::FdInsert`]).
//! Not implemented here (EINVAL): I_SENDFD, I_RECVFD (`fdpass.rs`, called by the
//! platform). Commands outside the `'S'` group are transparent ioctls (`transp.rs`,
//! [`Stream::strtransparent`]); `strioctl` answers them ENOTTY.

use super::consts::*;
use super::msg::GetMsg;
use super::write::wait;
use super::{Block, IocSlot, Stop, WAKE_IOCTL};
use crate::errno::Errno;
use crate::msg::{Msg, MsgFlags, M_FLUSH, M_IOCACK, M_IOCDATA, M_IOCNAK, M_IOCTL};
use crate::queue::QField;
use crate::sth::Stream;
use crate::stream::{Registry, Role};

/// `struct iocblk`, the first block of M_IOCTL/M_IOCACK/M_IOCNAK, in the layout the C header
/// will use: `ioc_cmd` i32 @0, `ioc_id` u32 @4, `ioc_count` u32 @8, `ioc_flag` u32 @12,
/// `ioc_error` i32 @16, `ioc_rval` i32 @20; 24 bytes, native byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IocBlk {
    /// The ioctl command.
    pub cmd: i32,
    /// Id matching the answer to the request.
    pub id: u32,
    /// Bytes of data in `b_cont` (`TRANSPARENT` for transparent ioctls).
    pub count: u32,
    /// Flags (data model).
    pub flag: u32,
    /// Error to return (M_IOCNAK, or M_IOCACK with an error).
    pub error: i32,
    /// Return value (M_IOCACK).
    pub rval: i32,
}

/// Size of an encoded [`IocBlk`].
pub const IOCBLK_SIZE: usize = 24;
/// `ioc_count` of a transparent ioctl.
pub const TRANSPARENT: u32 = u32::MAX;

impl IocBlk {
    /// The bytes of an iocblk.
    pub fn encode(&self) -> [u8; IOCBLK_SIZE] {
        let mut b = [0u8; IOCBLK_SIZE];
        let words = [
            self.cmd.to_ne_bytes(),
            self.id.to_ne_bytes(),
            self.count.to_ne_bytes(),
            self.flag.to_ne_bytes(),
            self.error.to_ne_bytes(),
            self.rval.to_ne_bytes(),
        ];
        for (d, w) in b.chunks_exact_mut(4).zip(words.iter()) {
            d.copy_from_slice(w);
        }
        b
    }
    /// Parse an iocblk (`None` if `b` is too short).
    pub fn decode(b: &[u8]) -> Option<IocBlk> {
        let w = |i: usize| -> Option<[u8; 4]> { b.get(i * 4..i * 4 + 4)?.try_into().ok() };
        Some(IocBlk {
            cmd: i32::from_ne_bytes(w(0)?),
            id: u32::from_ne_bytes(w(1)?),
            count: u32::from_ne_bytes(w(2)?),
            flag: u32::from_ne_bytes(w(3)?),
            error: i32::from_ne_bytes(w(4)?),
            rval: i32::from_ne_bytes(w(5)?),
        })
    }
}

/// `struct strioctl` of I_STR, plus the id of the ioctl in progress (kept across retries).
pub struct StrIoctl {
    /// `ic_cmd`: the command for the module or driver.
    pub cmd: i32,
    /// `ic_timout` in seconds: 0 the default ([`STRTIMOUT`]), [`INFTIM`] (-1) no limit; below
    /// -1 is EINVAL. The platform times out ([`istr_timeout_ms`]) and calls
    /// [`Stream::sth_ioctl_cancel`].
    pub timeout: i32,
    /// `ic_len`: bytes sent (at most [`STRMSGSZ`], else EINVAL); on return, the bytes of the
    /// answer for the caller (at most the `ic_len` sent).
    pub len: i32,
    /// The `ic_len` bytes of `ic_dp`, copied in by the platform before the lock (an M_DATA
    /// message, `None` when `ic_len` is 0); taken when the M_IOCTL goes down.
    pub data: Option<Msg>,
    /// Set by the head when the M_IOCTL is sent; pass the same struct to the retry.
    pub id: Option<u32>,
    /// On return: the M_IOCACK, whose blocks after the `iocblk` hold the answer; the platform
    /// copies `len` bytes of them to `ic_dp` after the lock ([`StrIoctl::copy_answer`]).
    pub answer: Option<Msg>,
}

impl StrIoctl {
    /// An I_STR of command `cmd` with `data` (`len` bytes) and `ic_timout` `timeout`.
    pub fn new(cmd: i32, timeout: i32, len: i32, data: Option<Msg>) -> StrIoctl {
        StrIoctl {
            cmd,
            timeout,
            len,
            data,
            id: None,
            answer: None,
        }
    }

    /// After the lock: copy the answer's `len` bytes to `io` (`ic_dp`).
    pub fn copy_answer(&self, io: &mut dyn super::UserIo) -> Result<(), Errno> {
        let (Some(mp), Ok(n)) = (&self.answer, usize::try_from(self.len)) else {
            return Ok(());
        };
        let mut done = 0usize;
        for b in mp.blocks().skip(1) {
            if done >= n {
                break;
            }
            let k = b.blen().min(n - done);
            io.copy_to_user(done, b.rd().get(..k).unwrap_or_default())?;
            done += k;
        }
        Ok(())
    }
}

/// `struct strpeek` of I_PEEK: `maxlen`s in, lengths, flags and the message out.
#[derive(Default)]
pub struct PeekArgs {
    /// Control `maxlen` (`None`: not processed).
    pub ctl: Option<usize>,
    /// Data `maxlen` (`None`: not processed).
    pub data: Option<usize>,
    /// RS_HIPRI to look only at a high-priority message, else 0.
    pub flags: i32,
    /// On return: what was seen.
    pub got: Option<GetMsg>,
    /// On return: a `dupmsg` of the message seen, to copy the parts from after the lock
    /// ([`crate::sth::msg::peek_copy_out`]) and free there.
    pub msg: Option<Msg>,
}

/// The decoded argument of an I_* ioctl.
pub enum IocArg<'a> {
    /// No argument, or a NULL pointer (I_POP, I_LIST counting).
    None,
    /// An integer argument (I_FLUSH, I_SRDOPT, I_SWROPT, I_CANPUT, I_ATMARK, I_CKBAND, …).
    /// I_SET_HIWAT with `Int` is taken as from an unprivileged caller.
    Int(i64),
    /// I_SET_HIWAT: the new mark, and whether the caller may exceed `strhiwatmax`
    /// (`crate::limits`; CAP_SYS_RESOURCE in the kernel, as for a Linux pipe's
    /// F_SETPIPE_SZ above `pipe-max-size`).
    Hiwat {
        /// The high-water mark (an `int`).
        v: i64,
        /// The caller is exempt from `strhiwatmax`.
        privileged: bool,
    },
    /// A module name (I_PUSH, I_FIND).
    Name(&'a str),
    /// A kernel buffer for the result (I_NREAD, I_GRDOPT, I_GWROPT, I_LOOK, I_GETBAND, …): 4
    /// bytes (an `int`), FMNAMESZ + 1 for I_LOOK. The platform copies it out after the lock.
    Out(&'a mut [u8]),
    /// I_SETSIG for the calling process `owner`.
    Sig {
        /// The registering process.
        owner: crate::sys::Arc<dyn super::SigOwner>,
        /// `S_*` events, 0 to unregister.
        events: i32,
    },
    /// I_GETSIG for the calling process (its [`SigOwner::key`](super::SigOwner::key)), the
    /// mask written to `out` (4 bytes).
    GetSig {
        /// The asking process's key.
        key: usize,
        /// Where the `S_*` mask goes.
        out: &'a mut [u8],
    },
    /// I_FLUSHBAND's `struct bandinfo`.
    Band {
        /// `bi_pri`: the band.
        pri: u8,
        /// `bi_flag`: FLUSHR/FLUSHW/FLUSHRW.
        flag: i32,
    },
    /// I_STR.
    Str(&'a mut StrIoctl),
    /// I_PEEK.
    Peek(&'a mut PeekArgs),
    /// I_LIST with a `struct str_list` of `n` entries of FMNAMESZ + 1 bytes; the names go to
    /// `out` (room for at most `out.len() / (FMNAMESZ + 1)` of them), copied out after the lock.
    List {
        /// `sl_nmods`: room in the list.
        n: i32,
        /// The names.
        out: &'a mut [u8],
    },
    /// I_LINK/I_PLINK: the lower Stream, resolved by the platform, and the link's state
    /// across retries (`mux.rs`).
    Link(&'a mut super::LinkReq),
    /// I_UNLINK/I_PUNLINK (`mux.rs`).
    Unlink(&'a mut super::UnlinkReq),
    /// I_FDINSERT, `fildes` resolved by the platform (`fdinsert.rs`).
    FdInsert(&'a mut super::FdInsert),
}

/// How long an I_STR with `ic_timout` = `timeout` may wait, in milliseconds (`None`: no
/// limit). 0 means the default [`STRTIMOUT`] seconds; [`INFTIM`] waits forever; any other
/// negative value is EINVAL (as in SVR4, checked before anything is sent).
pub fn istr_timeout_ms(timeout: i32) -> Result<Option<u32>, Errno> {
    match timeout {
        INFTIM => Ok(None),
        0 => Ok(Some(STRTIMOUT * 1000)),
        t => {
            let secs = u32::try_from(t).map_err(|_| Errno::EINVAL)?;
            Ok(Some(secs.saturating_mul(1000)))
        }
    }
}

fn put_i32(out: &mut [u8], v: i32) -> Result<i32, Stop> {
    let dst = out.get_mut(..4).ok_or(Errno::EFAULT)?;
    dst.copy_from_slice(&v.to_ne_bytes());
    Ok(0)
}

fn name_bytes(name: &str) -> [u8; FMNAMESZ + 1] {
    let mut b = [0u8; FMNAMESZ + 1];
    for (d, s) in b.iter_mut().zip(name.bytes().take(FMNAMESZ)) {
        *d = s;
    }
    b
}

fn flag_u8(v: i64) -> Result<u8, Errno> {
    match u8::try_from(v) {
        Ok(f) if f != 0 && f & !FLUSHRW == 0 => Ok(f),
        _ => Err(Errno::EINVAL),
    }
}

fn band_u8(v: i64) -> Result<u8, Errno> {
    u8::try_from(v).map_err(|_| Errno::EINVAL)
}

impl Stream {
    /// ioctl(2) on the Stream: dispatch I_* command `cmd` with argument `arg`. Returns the
    /// ioctl's return value.
    pub fn strioctl(&mut self, reg: &Registry, cmd: u32, arg: IocArg<'_>) -> Result<i32, Stop> {
        if self.sth.closed {
            return Err(Errno::EBADF.into());
        }
        if self.sth.plex.is_some() {
            return Err(Errno::EINVAL.into()); // linked under a multiplexor (SVR4 STPLEX)
        }
        if cmd & 0xff00 != SID && cmd != FIONREAD {
            return Err(Errno::ENOTTY.into());
        }
        let h = self.head_rq();
        match (cmd, arg) {
            (I_NREAD, IocArg::Out(out)) => {
                let q = self.queue(h);
                let n = q.map_or(0, |q| q.qsize());
                let bytes = q.and_then(|q| q.first()).map_or(0, Msg::msgdsize);
                put_i32(out, i32::try_from(bytes).unwrap_or(i32::MAX))?;
                Ok(i32::try_from(n).unwrap_or(i32::MAX))
            }
            (FIONREAD, IocArg::Out(out)) => {
                // As on a Linux pipe: every data byte waiting at the head, over all messages.
                let q = self.queue(h);
                let mut bytes = 0usize;
                for pos in 0.. {
                    let Some(m) = q.and_then(|q| q.peek(pos)) else {
                        break;
                    };
                    bytes = bytes.saturating_add(m.msgdsize());
                }
                put_i32(out, i32::try_from(bytes).unwrap_or(i32::MAX))?;
                Ok(0)
            }
            (I_PUSH, IocArg::Name(name)) => {
                self.sth_ioc_ok()?;
                if self.nmodules() >= NSTRPUSH {
                    return Err(Errno::EINVAL.into());
                }
                self.sth_flush_hold();
                self.push(reg, name)?;
                Ok(0)
            }
            (I_POP, _) => {
                self.sth_ioc_ok()?;
                self.sth_flush_hold();
                self.pop()?;
                Ok(0)
            }
            (I_LOOK, IocArg::Out(out)) => {
                let top = self
                    .top_wq()
                    .filter(|q| self.role(*q) == Some(Role::Module));
                let name = top.and_then(|q| self.name(q)).ok_or(Errno::EINVAL)?;
                let dst = out.get_mut(..FMNAMESZ + 1).ok_or(Errno::EFAULT)?;
                dst.copy_from_slice(&name_bytes(name));
                Ok(0)
            }
            (I_FIND, IocArg::Name(name)) => {
                reg.find_module(name).ok_or(Errno::EINVAL)?;
                let found = self
                    .names_down()
                    .any(|(r, n)| r == Role::Module && n == name);
                Ok(i32::from(found))
            }
            (I_FLUSH, IocArg::Int(v)) => {
                let f = flag_u8(v)?;
                self.sth_flush(f, None)
            }
            (I_FLUSHBAND, IocArg::Band { pri, flag }) => {
                let f = flag_u8(i64::from(flag))?;
                self.sth_flush(f, Some(pri))
            }
            (I_SRDOPT, IocArg::Int(v)) => {
                let v = u32::try_from(v).map_err(|_| Errno::EINVAL)?;
                self.sth_set_rdopt(v)?;
                Ok(0)
            }
            (I_GRDOPT, IocArg::Out(out)) => put_i32(out, self.sth.rdopt as i32),
            (I_SWROPT, IocArg::Int(v)) => {
                let v = u32::try_from(v).map_err(|_| Errno::EINVAL)?;
                if v & !(SNDZERO | SNDPIPE | SNDHOLD | SNDMREAD) != 0 {
                    return Err(Errno::EINVAL.into());
                }
                if (v ^ self.sth.wropt) & SNDMREAD != 0 {
                    self.sth_read_notify(v & SNDMREAD != 0)?;
                }
                self.sth.wropt = v;
                if v & SNDHOLD == 0 {
                    self.sth_flush_hold();
                }
                Ok(0)
            }
            (I_GWROPT, IocArg::Out(out)) => put_i32(out, self.sth.wropt as i32),
            (I_SETSIG, IocArg::Sig { owner, events }) => self.sth_setsig(owner, events),
            (I_GETSIG, IocArg::GetSig { key, out }) => {
                let r = self.sth.sig_list().find(|r| r.owner.key() == key);
                let r = r.ok_or(Errno::EINVAL)?;
                put_i32(out, r.events as i32)
            }
            (I_CANPUT, IocArg::Int(v)) => {
                if v == i64::from(ANYBAND) {
                    let any = self.sth_canput(0) || self.sth_canput(1);
                    return Ok(i32::from(any));
                }
                let b = band_u8(v)?;
                Ok(i32::from(self.sth_canput(b)))
            }
            (I_ATMARK, IocArg::Int(v)) => {
                let q = self.queue(h).ok_or(Errno::EINVAL)?;
                let marked = |m: &Msg| m.flag().contains(MsgFlags::MSGMARK);
                let first = q.first().is_some_and(marked);
                match v {
                    1 => Ok(i32::from(first)),
                    2 => {
                        let others = (1..q.qsize()).any(|i| q.peek(i).is_some_and(marked));
                        Ok(i32::from(first && !others))
                    }
                    _ => Err(Errno::EINVAL.into()),
                }
            }
            (I_CKBAND, IocArg::Int(v)) => {
                let b = band_u8(v)?;
                let q = self.queue(h).ok_or(Errno::EINVAL)?;
                let found = (0..q.qsize()).any(|i| q.peek(i).is_some_and(|m| m.band() == b));
                Ok(i32::from(found))
            }
            (I_GETBAND, IocArg::Out(out)) => {
                let q = self.queue(h).ok_or(Errno::EINVAL)?;
                let b = q.first().ok_or(Errno::ENODATA)?.band();
                put_i32(out, i32::from(b))
            }
            (I_PEEK, IocArg::Peek(p)) => {
                let hipri = match p.flags {
                    0 => false,
                    RS_HIPRI => true,
                    _ => return Err(Errno::EINVAL.into()),
                };
                let seen = self.sth_peek(p.ctl, p.data, hipri)?;
                let found = seen.is_some();
                (p.got, p.msg) = seen.map_or((None, None), |(g, m)| (Some(g), Some(m)));
                Ok(i32::from(found))
            }
            (I_STR, IocArg::Str(s)) => {
                // Link changes come only from the head itself, never forged through I_STR.
                if [I_LINK, I_PLINK, I_UNLINK, I_PUNLINK].contains(&(s.cmd as u32)) {
                    return Err(Errno::EINVAL.into());
                }
                self.sth_istr(s)
            }
            (I_LIST, IocArg::None) => {
                Ok(i32::try_from(self.sth_names().count().saturating_sub(1)).unwrap_or(i32::MAX))
            }
            (I_LIST, IocArg::List { n, out }) => {
                let n = usize::try_from(n)
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or(Errno::EINVAL)?;
                let mut done = 0usize;
                let slots = out.chunks_exact_mut(FMNAMESZ + 1);
                for (slot, (_, name)) in slots.zip(self.sth_names().skip(1).take(n)) {
                    slot.copy_from_slice(&name_bytes(name));
                    done += 1;
                }
                Ok(i32::try_from(done).unwrap_or(i32::MAX))
            }
            (I_SETCLTIME, IocArg::Int(v)) => {
                self.sth.cltime = u32::try_from(v).map_err(|_| Errno::EINVAL)?;
                Ok(0)
            }
            (I_GETCLTIME, IocArg::Out(out)) => {
                put_i32(out, i32::try_from(self.sth.cltime).unwrap_or(i32::MAX))
            }
            (I_SET_HIWAT, IocArg::Int(v)) => self.sth_set_wat(QField::Hiwat, v, false),
            (I_SET_HIWAT, IocArg::Hiwat { v, privileged }) => {
                self.sth_set_wat(QField::Hiwat, v, privileged)
            }
            (I_GET_HIWAT, IocArg::Out(out)) => {
                let q = self.queue(self.head_rq()).ok_or(Errno::EINVAL)?;
                put_i32(out, i32::try_from(q.hiwat()).unwrap_or(i32::MAX))
            }
            (I_SET_LOWAT, IocArg::Int(v)) => self.sth_set_wat(QField::Lowat, v, false),
            (I_LINK, IocArg::Link(r)) if !r.persistent() => self.sth_link(r),
            (I_PLINK, IocArg::Link(r)) if r.persistent() => self.sth_link(r),
            (I_UNLINK, IocArg::Unlink(r)) if !r.persistent() => self.sth_unlink(r),
            (I_PUNLINK, IocArg::Unlink(r)) if r.persistent() => self.sth_unlink(r),
            (I_FDINSERT, IocArg::FdInsert(a)) => self.sth_fdinsert(a),
            _ => Err(Errno::EINVAL.into()),
        }
    }

    /// I_SET_HIWAT/I_SET_LOWAT: set a band-0 watermark of the head's read queue. EINVAL for
    /// a negative value, a high mark below the low mark or a low mark above the high mark;
    /// EPERM for a high mark above `strhiwatmax` (`crate::limits`) unless `privileged`.
    /// Like strqset, no back-enable is generated: a writer held back by the old mark goes on
    /// at the next drain below the low mark.
    fn sth_set_wat(&mut self, what: QField, v: i64, privileged: bool) -> Result<i32, Stop> {
        let v = usize::try_from(v).map_err(|_| Errno::EINVAL)?;
        if what == QField::Hiwat && !privileged && v > crate::limits::limits().strhiwatmax {
            return Err(Errno::EPERM.into());
        }
        let h = self.head_rq();
        let q = self.queue(h).ok_or(Errno::EINVAL)?;
        let ok = match what {
            QField::Hiwat => v >= q.lowat(),
            _ => v <= q.hiwat(),
        };
        if !ok {
            return Err(Errno::EINVAL.into());
        }
        self.qctx(h).strqset(what, 0, v)?;
        Ok(0)
    }

    /// Checks before an ioctl that changes the Stream (I_PUSH, I_POP, I_STR).
    pub(crate) fn sth_ioc_ok(&self) -> Result<(), Stop> {
        if self.sth.hangup {
            return Err(Errno::ENXIO.into());
        }
        if let Some(e) = self.sth.werr().or(self.sth.rerr()) {
            return Err(e.into());
        }
        Ok(())
    }

    /// I_FLUSH/I_FLUSHBAND: flush the head, then send M_FLUSH down (the driver turns the
    /// read half around, which flushes the read side on its way up).
    fn sth_flush(&mut self, f: u8, band: Option<u8>) -> Result<i32, Stop> {
        if self.sth.hangup {
            return Err(Errno::ENXIO.into());
        }
        self.sth_flush_local(f, band);
        let m = match band {
            Some(b) => Msg::from_bytes(M_FLUSH, &[f | FLUSHBAND, b])?,
            None => Msg::from_bytes(M_FLUSH, &[f])?,
        };
        self.write(m);
        Ok(0)
    }

    fn sth_setsig(
        &mut self,
        owner: crate::sys::Arc<dyn super::SigOwner>,
        events: i32,
    ) -> Result<i32, Stop> {
        let ev = u32::try_from(events).map_err(|_| Errno::EINVAL)?;
        if ev & !S_ALL != 0 {
            return Err(Errno::EINVAL.into());
        }
        let key = owner.key();
        let mine = self.sth.sig_slot(key, false);
        let old = match (mine, ev) {
            (None, 0) => return Err(Errno::EINVAL.into()),
            (Some(i), 0) => self.sth.set_sig(i, None),
            (Some(i), _) => self
                .sth
                .set_sig(i, Some(super::SigReg { owner, events: ev })),
            (None, _) => {
                let i = self.sth.sig_slot(key, true).ok_or(Errno::EAGAIN)?;
                self.sth
                    .set_sig(i, Some(super::SigReg { owner, events: ev }))
            }
        };
        drop(old);
        Ok(0)
    }

    /// A file of this Stream was closed by the process with [`SigOwner::key`] `key` (SVR4
    /// `strclean`, called for every close, not only the last): its I_SETSIG registration
    /// goes, so a registration never outlives the registrant's last use of the Stream.
    /// Returns the registration taken out, to be dropped after the lock.
    ///
    /// [`SigOwner::key`]: super::SigOwner::key
    pub fn sth_sigclean(&mut self, key: usize) -> Option<super::SigReg> {
        let i = self.sth.sig_slot(key, false)?;
        self.sth.set_sig(i, None)
    }

    /// Where caller `my` stands with the ioctl slot: `Ok(true)` its answer is there,
    /// `Ok(false)` the slot is free for a new ioctl, `Block` still waiting (for its answer or
    /// for the slot), an error if its ioctl was failed by M_ERROR/M_HANGUP or cancelled.
    pub(crate) fn sth_ioc_slot(&mut self, my: &mut Option<u32>) -> Result<bool, Stop> {
        match (&self.sth.ioc, *my) {
            (IocSlot::Answered(id, _), Some(m)) if *id == m => Ok(true),
            (IocSlot::Waiting(id), Some(m)) if *id == m => {
                if let Err(e) = self.sth_ioc_ok() {
                    self.sth.ioc = IocSlot::Free;
                    *my = None;
                    self.sth.note(WAKE_IOCTL, 0);
                    return Err(e);
                }
                Err(Stop::Block(Block::IoctlAck))
            }
            (IocSlot::Free, None) => Ok(false),
            (IocSlot::Free, Some(_)) => {
                *my = None;
                Err(Errno::ETIME.into()) // cancelled under us
            }
            // Our transparent ioctl between two copies: the platform must say how the copy went
            // (`TranspIoctl::done`); a call without it is a protocol error.
            (IocSlot::Copying { id, .. }, Some(m)) if *id == m => Err(Errno::EINVAL.into()),
            (_, _) => Err(wait(false, Block::IoctlAck)),
        }
    }

    /// A fresh ioctl id.
    pub(crate) fn sth_ioc_id(&mut self) -> u32 {
        self.sth.ioc_seq = self.sth.ioc_seq.wrapping_add(1);
        self.sth.ioc_seq
    }

    /// Send `m` (M_IOCTL or M_IOCDATA) down for ioctl `id` and wait in the slot; true if the
    /// answer came back during the send (a loopback answering at once).
    pub(crate) fn sth_ioc_send(&mut self, id: u32, m: Msg) -> bool {
        self.sth.ioc = IocSlot::Waiting(id);
        self.write(m);
        matches!(self.sth.ioc, IocSlot::Answered(a, _) if a == id)
    }

    /// I_STR: start, continue or complete the M_IOCTL round trip (see the module docs).
    fn sth_istr(&mut self, s: &mut StrIoctl) -> Result<i32, Stop> {
        if self.sth_ioc_slot(&mut s.id)? {
            return self.sth_istr_done(s);
        }
        self.sth_ioc_ok()?;
        istr_timeout_ms(s.timeout)?;
        let len = usize::try_from(s.len)
            .ok()
            .filter(|n| *n <= crate::limits::limits().strmsgsz)
            .ok_or(Errno::EINVAL)?;
        if s.data.as_ref().map_or(0, Msg::msgsize) != len {
            return Err(Errno::EINVAL.into());
        }
        let id = self.sth_ioc_id();
        let ioc = IocBlk {
            cmd: s.cmd,
            id,
            count: u32::try_from(len).map_err(|_| Errno::EINVAL)?,
            ..IocBlk::default()
        };
        let mut m = Msg::from_bytes(M_IOCTL, &ioc.encode())?;
        if let Some(d) = s.data.take() {
            m.linkb(d);
        }
        self.sth_flush_hold();
        s.id = Some(id);
        if self.sth_ioc_send(id, m) {
            return self.sth_istr_done(s);
        }
        Err(Stop::Block(Block::IoctlAck))
    }

    fn sth_istr_done(&mut self, s: &mut StrIoctl) -> Result<i32, Stop> {
        let slot = core::mem::replace(&mut self.sth.ioc, IocSlot::Free);
        s.id = None;
        self.sth.note(WAKE_IOCTL, 0);
        let IocSlot::Answered(_, mp) = slot else {
            return Err(Errno::EINVAL.into());
        };
        let ioc = IocBlk::decode(mp.rd()).unwrap_or_default();
        let ty = mp.db_type();
        if ty == M_IOCNAK {
            let e = if ioc.error != 0 {
                ioc.error
            } else {
                Errno::EINVAL.0
            };
            return Err(Errno(e).into());
        }
        if ty != M_IOCACK {
            // M_COPYIN/M_COPYOUT are for transparent ioctls only: refuse the copy request.
            let mut r = ioc;
            r.rval = 1;
            if let Ok(m) = Msg::from_bytes(M_IOCDATA, &r.encode()) {
                self.write(m);
            }
            return Err(Errno::EPROTO.into());
        }
        if ioc.error != 0 {
            return Err(Errno(ioc.error).into());
        }
        let max = usize::try_from(s.len).unwrap_or(0);
        let have = mp
            .blocks()
            .skip(1)
            .fold(0usize, |n, b| n.saturating_add(b.blen()));
        let n = usize::try_from(ioc.count).unwrap_or(0).min(max).min(have);
        s.len = i32::try_from(n).unwrap_or(i32::MAX);
        s.answer = Some(mp);
        Ok(ioc.rval)
    }

    /// The platform's I_STR timeout fired: forget ioctl `id` (its answer, if it comes, is
    /// freed). The caller returns ETIME.
    pub fn sth_ioctl_cancel(&mut self, id: u32) {
        let mine = match &self.sth.ioc {
            IocSlot::Waiting(i) | IocSlot::Answered(i, _) | IocSlot::Copying { id: i, .. } => {
                *i == id
            }
            IocSlot::Free => false,
        };
        if mine {
            self.sth.ioc = IocSlot::Free;
            self.sth.note(WAKE_IOCTL, 0);
        }
    }
}
