//! putmsg(2)/putpmsg(2) and getmsg(2)/getpmsg(2) at the Stream head (`strputpmsg`,
//! `strgetpmsg`), and the copy-out shared with I_PEEK.
//!
//! A message is a control part (leading M_PROTO/M_PCPROTO blocks) and a data part (M_DATA
//! blocks). `len`/`maxlen` follow the man pages: -1 (or no buffer) means "no part" for putmsg
//! and "do not process this part" for getmsg; a part larger than `maxlen` is retrieved in part
//! (MORECTL/MOREDATA) and the rest stays at the front of the queue.

use super::consts::*;
use super::write::wait;
use super::{Block, Stop, UserIo};
use crate::errno::Errno;
use crate::msg::{Msg, M_DATA, M_PASSFP, M_PCPROTO, M_PROTO};
use crate::queue::INFPSZ;
use crate::sth::Stream;

/// One part of putmsg/getmsg: the user buffer and its `len` (putmsg) or `maxlen` (getmsg).
pub struct Part<'a> {
    /// The user buffer (`buf` of `struct strbuf`).
    pub io: &'a mut dyn UserIo,
    /// `len` for putmsg, `maxlen` for getmsg; negative means "no part" / "not processed".
    pub len: i32,
}

/// What getmsg/getpmsg/I_PEEK report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetMsg {
    /// `ctlbuf.len`: control bytes retrieved, -1 for no control part (or not processed).
    pub ctl_len: i32,
    /// `databuf.len`: data bytes retrieved, -1 for no data part (or not processed).
    pub data_len: i32,
    /// MSG_HIPRI for a high-priority message, otherwise MSG_BAND (getmsg reports 0).
    pub flags: i32,
    /// Band of the message.
    pub band: u8,
    /// The return value: 0, or MORECTL|MOREDATA when parts were left behind.
    pub more: i32,
}

/// How much of each part a getmsg takes.
struct Take {
    got: GetMsg,
    ctl: Option<usize>,
    data: Option<usize>,
}

fn is_ctl(b: &Msg) -> bool {
    b.db_type() != M_DATA
}

fn maxlen(p: &Option<Part<'_>>) -> Option<usize> {
    p.as_ref().and_then(|p| usize::try_from(p.len).ok())
}

fn len_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// Copy up to `max` bytes of the blocks of `m` selected by `sel` to `io`.
fn copy_part(
    m: &Msg,
    sel: impl Fn(&Msg) -> bool,
    max: usize,
    io: &mut dyn UserIo,
) -> Result<usize, Errno> {
    let mut done = 0usize;
    for b in m.blocks().filter(|b| sel(b)) {
        let n = b.blen().min(max - done);
        if n > 0 {
            io.copy_to_user(done, b.rd().get(..n).unwrap_or_default())?;
        }
        done += n;
        if done == max {
            break;
        }
    }
    Ok(done)
}

/// Copy the parts of `m` to the caller's buffers, as getmsg would; nothing is changed.
fn copy_msg(
    m: &Msg,
    ctl: &mut Option<Part<'_>>,
    data: &mut Option<Part<'_>>,
) -> Result<Take, Errno> {
    let has_ctl = is_ctl(m);
    let cl = m
        .blocks()
        .filter(|b| is_ctl(b))
        .fold(0usize, |n, b| n.saturating_add(b.blen()));
    let has_data = !has_ctl || m.blocks().any(|b| !is_ctl(b));
    let dl = m
        .blocks()
        .filter(|b| !is_ctl(b))
        .fold(0usize, |n, b| n.saturating_add(b.blen()));
    let mut got = GetMsg {
        ctl_len: -1,
        data_len: -1,
        flags: if m.is_hipri() { MSG_HIPRI } else { MSG_BAND },
        band: m.band(),
        more: 0,
    };
    let mut take = (None, None);
    match (maxlen(ctl), ctl.as_mut()) {
        (Some(max), Some(p)) if has_ctl => {
            let n = copy_part(m, is_ctl, max.min(cl), &mut *p.io)?;
            got.ctl_len = len_i32(n);
            take.0 = Some(n);
            if n < cl {
                got.more |= MORECTL;
            }
        }
        (None, _) if has_ctl => got.more |= MORECTL,
        _ => {}
    }
    match (maxlen(data), data.as_mut()) {
        (Some(max), Some(p)) if has_data => {
            let n = copy_part(m, |b| !is_ctl(b), max.min(dl), &mut *p.io)?;
            got.data_len = len_i32(n);
            take.1 = Some(n);
            if n < dl {
                got.more |= MOREDATA;
            }
        }
        (None, _) if has_data && dl > 0 => got.more |= MOREDATA,
        _ => {}
    }
    Ok(Take {
        got,
        ctl: take.0,
        data: take.1,
    })
}

/// What stays queued after getmsg took `take` of `m`: `None` if the message is used up.
fn leftover(m: Msg, take: &Take) -> Option<Msg> {
    let band = m.band();
    let (mut tc, mut td) = (take.ctl, take.data);
    let mut rest = Some(m);
    let mut head: Option<Msg> = None;
    let mut tail = &mut head;
    while let Some(mut b) = rest {
        rest = b.unlinkb();
        let left = if is_ctl(&b) { &mut tc } else { &mut td };
        if let Some(n) = left.as_mut() {
            // A processed part: consume what was copied, free blocks that are used up.
            *n -= b.adj_rptr(*n);
            if b.blen() == 0 {
                continue;
            }
        }
        tail = &mut tail.insert(b).0.cont;
    }
    let mut m = head?;
    m.set_band(band);
    Some(m)
}

impl Stream {
    /// putmsg/putpmsg: send a control part (M_PROTO, or M_PCPROTO with MSG_HIPRI) and/or a
    /// data part (M_DATA) as one message in band `band`.
    ///
    /// `flags` is 0 (putmsg), MSG_HIPRI (band must be 0, a control part is required) or
    /// MSG_BAND. Neither part: nothing is sent. Errors: EINVAL (flags/band), ERANGE (data
    /// outside the top module's `[minpsz, maxpsz]`, control over STRCTLSZ), EFAULT and ENOSR
    /// (nothing sent), the write-side errors of write(2), EAGAIN/Block when flow controlled
    /// (high priority is never flow controlled).
    pub fn strputpmsg(
        &mut self,
        ctl: Option<Part<'_>>,
        data: Option<Part<'_>>,
        band: i32,
        flags: i32,
        nonblock: bool,
    ) -> Result<(), Stop> {
        self.sth_putpmsg(ctl, data, band, flags, nonblock, None)
    }

    /// [`Stream::strputpmsg`], with `more` (blocks of the control part the head made, such as
    /// I_FDINSERT's queue reference) linked after the user's control block.
    pub(crate) fn sth_putpmsg(
        &mut self,
        mut ctl: Option<Part<'_>>,
        mut data: Option<Part<'_>>,
        band: i32,
        flags: i32,
        nonblock: bool,
        more: Option<Msg>,
    ) -> Result<(), Stop> {
        let cl = maxlen(&ctl);
        let dl = maxlen(&data);
        let hipri = match flags {
            MSG_HIPRI if band == 0 && cl.is_some() => true,
            0 | MSG_BAND if (0..=255).contains(&band) => false,
            _ => return Err(Errno::EINVAL.into()),
        };
        let band = u8::try_from(band).map_err(|_| Errno::EINVAL)?;
        self.sth_write_ok()?;
        if cl.is_none() && dl.is_none() {
            return Ok(());
        }
        if cl.is_some_and(|n| n > STRCTLSZ) {
            return Err(Errno::ERANGE.into());
        }
        let (minpsz, maxpsz) = self.sth_psz();
        if let Some(n) = dl {
            if n < minpsz || (maxpsz != INFPSZ && n > maxpsz) {
                return Err(Errno::ERANGE.into());
            }
        }
        if !hipri && !self.sth_canput(band) {
            return Err(wait(nonblock, Block::Writable(band)));
        }
        let dmsg = match (dl, data.as_mut()) {
            (Some(n), Some(p)) => Some(self.sth_mkdata(&mut *p.io, 0, n)?),
            _ => None,
        };
        let mut mp = match (cl, ctl.as_mut()) {
            (Some(n), Some(p)) => {
                let ty = if hipri { M_PCPROTO } else { M_PROTO };
                let mut c = Msg::with_type(ty, n)?;
                let dst = c
                    .spare_mut()
                    .and_then(|s| s.get_mut(..n))
                    .ok_or(Errno::ENOSR)?;
                p.io.copy_from_user(dst, 0)?;
                c.adj_wptr(n);
                if let Some(m) = more {
                    c.linkb(m);
                }
                if let Some(d) = dmsg {
                    c.linkb(d);
                }
                c
            }
            _ => dmsg.ok_or(Errno::EINVAL)?,
        };
        mp.set_band(band);
        self.sth_flush_hold();
        self.write(mp);
        Ok(())
    }

    /// getmsg/getpmsg: take the first message (subject to `flags`: MSG_ANY or 0, MSG_HIPRI,
    /// MSG_BAND with `band` = lowest band wanted), copying its parts to `ctl`/`data`.
    ///
    /// Errors: EINVAL (flags/band), EBADF, the M_ERROR read error, EFAULT (nothing consumed),
    /// EAGAIN/Block when no suitable message is queued. At hangup with nothing queued it
    /// returns both lengths 0 (end of file).
    pub fn strgetpmsg(
        &mut self,
        mut ctl: Option<Part<'_>>,
        mut data: Option<Part<'_>>,
        band: i32,
        flags: i32,
        nonblock: bool,
    ) -> Result<GetMsg, Stop> {
        let minband = match flags {
            MSG_HIPRI if band == 0 => None,
            0 | MSG_ANY => Some(0u8),
            MSG_BAND => Some(u8::try_from(band).map_err(|_| Errno::EINVAL)?),
            _ => return Err(Errno::EINVAL.into()),
        };
        if self.sth.closed {
            return Err(Errno::EBADF.into());
        }
        self.sth_flush_hold();
        if let Some(e) = self.sth.rerr() {
            return Err(e.into());
        }
        let h = self.head_rq();
        let first = self.queue(h).and_then(|q| q.first());
        let ok = first.is_some_and(|m| m.is_hipri() || minband.is_some_and(|b| m.band() >= b));
        let Some(first) = first.filter(|_| ok) else {
            if self.sth.hangup {
                return Ok(GetMsg {
                    ctl_len: 0,
                    data_len: 0,
                    flags: 0,
                    band: 0,
                    more: 0,
                });
            }
            return Err(wait(nonblock, Block::Readable));
        };
        if first.db_type() == M_PASSFP {
            return Err(Errno::EBADMSG.into()); // a passed file is taken with I_RECVFD only
        }
        let take = copy_msg(first, &mut ctl, &mut data)?;
        if let Some(mp) = self.qctx(h).getq() {
            if let Some(rest) = leftover(mp, &take) {
                if let Err(m) = self.qctx(h).putbq(rest) {
                    drop(m);
                    self.count_drop();
                }
            }
        }
        Ok(take.got)
    }

    /// I_PEEK: copy the first message (high priority only with `hipri`) like getmsg, without
    /// taking it. `None` if there is no such message.
    pub(crate) fn sth_peek(
        &mut self,
        ctl: &mut Option<Part<'_>>,
        data: &mut Option<Part<'_>>,
        hipri: bool,
    ) -> Result<Option<GetMsg>, Errno> {
        let first = self.queue(self.head_rq()).and_then(|q| q.first());
        match first {
            Some(m) if !hipri || m.is_hipri() => Ok(Some(copy_msg(m, ctl, data)?.got)),
            _ => Ok(None),
        }
    }
}
