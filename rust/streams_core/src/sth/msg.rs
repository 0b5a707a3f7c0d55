//! putmsg(2)/putpmsg(2) and getmsg(2)/getpmsg(2) at the Stream head (`strputpmsg`,
//! `strgetpmsg`), and I_PEEK's look at the first message.
//!
//! A message is a control part (leading M_PROTO/M_PCPROTO blocks) and a data part (M_DATA
//! blocks). `len`/`maxlen` follow the man pages: -1 (or no buffer) means "no part" for putmsg
//! and "do not process this part" for getmsg; a part larger than `maxlen` is retrieved in part
//! (MORECTL/MOREDATA) and the rest stays at the front of the queue.
//!
//! No user memory is reached under the Stream lock: putmsg gets its parts already copied into
//! messages (at most [`STRCTLSZ`] and [`STRMSGSZ`] bytes, built by the platform before it took
//! the lock, so the lock hold only checks and sends); getmsg takes what it retrieves off the head into a [`Taken`] (`take.rs`),
//! which the platform copies out after the lock (putting it back on a fault); I_PEEK hands the
//! platform a `dupmsg` of the first message to copy from.

use super::consts::*;
use super::take::{is_ctl, split, Cut, ReaderToken, Taken};
use super::write::wait;
use super::{Block, Stop, UserIo, WAKE_POLL, WAKE_READ};
use crate::errno::Errno;
use crate::msg::{Msg, MsgFlags, M_DATA, M_PASSFP, M_PCPROTO, M_PROTO};
use crate::queue::INFPSZ;
use crate::sth::Stream;

/// One part of putmsg/getmsg as the platform has it: the user buffer and its `len` (putmsg) or
/// `maxlen` (getmsg); a negative length means "no part" / "not processed".
pub struct Part<'a> {
    /// The user buffer (`buf` of `struct strbuf`).
    pub io: &'a mut dyn UserIo,
    /// `len` for putmsg, `maxlen` for getmsg.
    pub len: i32,
}

impl Part<'_> {
    /// The length as the head takes it: `None` for a negative one.
    pub fn size(p: &Option<Part<'_>>) -> Option<usize> {
        p.as_ref().and_then(|p| usize::try_from(p.len).ok())
    }
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
struct Plan {
    got: GetMsg,
    ctl: Option<usize>,
    data: Option<usize>,
    /// Every block of the message is retrieved whole: getmsg takes the message as it is,
    /// with no split and nothing left queued.
    whole: bool,
}

fn len_i32(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// What getmsg with these `maxlen`s (`None`: part not processed) takes of `m`. Inline in
/// getmsg and I_PEEK: one call fewer per getmsg (under TCG every call and return is a
/// translation-block lookup).
#[inline(always)]
fn plan(m: &Msg, cmax: Option<usize>, dmax: Option<usize>) -> Plan {
    let has_ctl = is_ctl(m);
    // One pass: the size and block count of each part.
    let (mut cl, mut dl, mut nctl, mut ndata) = (0usize, 0usize, 0usize, 0usize);
    for b in m.blocks() {
        if is_ctl(b) {
            cl = cl.saturating_add(b.blen());
            nctl = nctl.saturating_add(1);
        } else {
            dl = dl.saturating_add(b.blen());
            ndata = ndata.saturating_add(1);
        }
    }
    let has_data = !has_ctl || ndata > 0;
    let mut got = GetMsg {
        ctl_len: -1,
        data_len: -1,
        flags: if m.is_hipri() { MSG_HIPRI } else { MSG_BAND },
        band: m.band(),
        more: 0,
    };
    let (mut ctl, mut data) = (None, None);
    match cmax {
        Some(max) if has_ctl => {
            let n = max.min(cl);
            got.ctl_len = len_i32(n);
            ctl = Some(n);
            if n < cl {
                got.more |= MORECTL;
            }
        }
        None if has_ctl => got.more |= MORECTL,
        _ => {}
    }
    match dmax {
        Some(max) if has_data => {
            let n = max.min(dl);
            got.data_len = len_i32(n);
            data = Some(n);
            if n < dl {
                got.more |= MOREDATA;
            }
        }
        None if has_data && dl > 0 => got.more |= MOREDATA,
        _ => {}
    }
    // Nothing left over in a part that is taken, and no block of a part that is not (not
    // even an empty one, which `split` would leave queued).
    let whole = got.more == 0 && (ctl.is_some() || nctl == 0) && (data.is_some() || ndata == 0);
    Plan {
        got,
        ctl,
        data,
        whole,
    }
}

impl Stream {
    /// putmsg/putpmsg: send a control part (M_PROTO, or M_PCPROTO with MSG_HIPRI) and/or a
    /// data part (M_DATA) as one message in band `band`. The parts are the caller's bytes,
    /// already copied into kernel memory as messages by the platform (`None`: no part; the
    /// type of `ctl` is set here). They are taken out of their slots only when the message is
    /// sent (or fails for good): on EAGAIN/Block they stay there for the retry. The data part
    /// is sent as it is, or copied into a message with the head's write offset.
    ///
    /// `flags` is 0 (putmsg), MSG_HIPRI (band must be 0, a control part is required) or
    /// MSG_BAND. Neither part: nothing is sent. Errors: EINVAL (flags/band), ERANGE (data
    /// outside the top module's `[minpsz, maxpsz]` or over [`STRMSGSZ`], control over
    /// [`STRCTLSZ`]), ENOSR (nothing sent), the write-side errors of write(2), EAGAIN/Block
    /// when flow controlled (high priority is never flow controlled).
    pub fn strputpmsg(
        &mut self,
        ctl: &mut Option<Msg>,
        data: &mut Option<Msg>,
        band: i32,
        flags: i32,
        nonblock: bool,
    ) -> Result<(), Stop> {
        self.sth_putpmsg(ctl, data, band, flags, nonblock, &mut None)
    }

    /// [`Stream::strputpmsg`], with `more` (blocks of the control part made before the lock,
    /// such as I_FDINSERT's queue reference) linked after the user's control block. Like the
    /// parts, `more` leaves its slot only when the message is sent or fails for good.
    pub(crate) fn sth_putpmsg(
        &mut self,
        ctl: &mut Option<Msg>,
        data: &mut Option<Msg>,
        band: i32,
        flags: i32,
        nonblock: bool,
        more: &mut Option<Msg>,
    ) -> Result<(), Stop> {
        let cl = ctl.as_ref().map(Msg::msgsize);
        let dl = data.as_ref().map(Msg::msgsize);
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
        let lim = crate::limits::limits();
        if cl.is_some_and(|n| n > lim.strctlsz) || dl.is_some_and(|n| n > lim.strmsgsz) {
            return Err(Errno::ERANGE.into());
        }
        let (minpsz, maxpsz) = self.sth_psz();
        if let Some(n) = dl {
            if n < minpsz || (maxpsz != INFPSZ && n > maxpsz) {
                return Err(Errno::ERANGE.into());
            }
        }
        // A data part alone in band 0 is a write's message: across a pass-only way out of
        // the Stream as a write's goes (`stream/across.rs`; its link's flow control is what
        // `canputnext` would ask), which arms the express write as a write does.
        let h = self.head_wq();
        let across = match (cl, band, more.is_none()) {
            (None, 0, true) => self.passes_across(h),
            _ => None,
        };
        let can = match across {
            Some(x) => self.remote(x).is_some_and(|r| r.bcanput(0)),
            None => hipri || self.sth_canput(band),
        };
        if !can {
            return Err(wait(nonblock, Block::Writable(band)));
        }
        let dmsg = match data.take() {
            Some(d) if self.sth.wroff == 0 => {
                let mut d = d;
                d.set_type(M_DATA);
                if self.sth.delim {
                    d.set_flag(d.flag() | MsgFlags::MSGDELIM);
                }
                Some(d)
            }
            Some(d) => Some(self.sth_mkdata_msg(&d)?),
            None => None,
        };
        let mut mp = match ctl.take() {
            Some(mut c) => {
                c.set_type(if hipri { M_PCPROTO } else { M_PROTO });
                if let Some(m) = more.take() {
                    c.linkb(m);
                }
                if let Some(d) = dmsg {
                    c.linkb(d);
                }
                c
            }
            None => dmsg.ok_or(Errno::EINVAL)?,
        };
        mp.set_band(band);
        self.sth_flush_hold();
        match across {
            Some(x) => self.put_across(h, x, mp),
            None => {
                if cl.is_some() && band == 0 && !hipri {
                    // The leave may arm the express send (`perim/express_send.rs`).
                    self.note_sent_proto();
                }
                self.write(mp)
            }
        }
        Ok(())
    }

    /// Whether getmsg with `band` and `flags` takes the first message of the head's read
    /// queue (as `strgetpmsg` chooses it), so its enter may leave ordinary data on the
    /// inbound list (the lazy take, `perim` step 7; that data arrived after the message).
    #[inline]
    pub(crate) fn sth_getmsg_ready(&self, band: i32, flags: i32) -> bool {
        // A queue of no band-0 bytes first, inline (the reader that keeps up: the direct take
        // follows); such a queue says no even when it holds a message that would do.
        self.sth_rq_holding()
            .is_some_and(|q| sth_getmsg_ready_first(q, band, flags))
    }

    /// getmsg/getpmsg, first phase: take the first message (subject to `flags`: MSG_ANY or 0,
    /// MSG_HIPRI, MSG_BAND with `band` = lowest band wanted) into `out` as far as the part
    /// `maxlen`s `ctl`/`data` retrieve it (`None`: part not processed); what is left of it
    /// stays at the front. Holds the reader token `tok` if anything was taken; the platform
    /// copies the parts out with [`Taken::copy_parts`] after the lock, then gives `tok` back
    /// (on a fault: [`Stream::sth_untake`] from 0).
    ///
    /// Errors: EINVAL (flags/band), EBADF, the M_ERROR read error, EBADMSG for a passed file,
    /// ENOSR (a part must be split and cannot be), EAGAIN/Block when no suitable message is
    /// queued or another reader of the head is copying its take out. At hangup with nothing
    /// queued it returns both lengths 0 (end of file).
    #[allow(clippy::too_many_arguments)] // getpmsg's own arguments, plus the take
    pub fn strgetpmsg(
        &mut self,
        ctl: Option<usize>,
        data: Option<usize>,
        band: i32,
        flags: i32,
        nonblock: bool,
        tok: &ReaderToken,
        out: &mut Taken,
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
        if !tok.free() {
            return Err(wait(nonblock, Block::Readable));
        }
        let h = self.head_rq();
        // The head's first message, else the first the enter took straight from the inbound
        // list (band-0 M_DATA: `stream/direct.rs`).
        let first = self.sth_front(h);
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
        let p = plan(first, ctl, data);
        if p.ctl.is_none() && p.data.is_none() {
            return Ok(p.got); // nothing is retrieved: the message stays as it is
        }
        let Some(mp) = self.sth_take_front(h) else {
            return Ok(p.got);
        };
        let band = mp.band();
        let ty = mp.db_type();
        let (front, rest) = if p.whole {
            // The common case (the message fits the buffers): what `split` would give.
            (Some(mp), None)
        } else {
            let (take_ctl, take_data) = (p.ctl.is_some(), p.data.is_some());
            let cut = |b: &Msg| match (is_ctl(b), take_ctl, take_data) {
                (true, true, _) => Cut::Part(0),
                (false, _, true) => Cut::Part(1),
                _ => Cut::Rest,
            };
            match split(mp, [p.ctl.unwrap_or(0), p.data.unwrap_or(0)], cut) {
                Ok(parts) => parts,
                Err(mp) => {
                    self.sth_putbq_taken(mp);
                    return Err(Errno::ENOSR.into());
                }
            }
        };
        out.begin_getmsg();
        if let Some(front) = front {
            if let Some(r) = &rest {
                out.set_rest(r, 0, ty, band);
            }
            out.push(front);
            out.seal(self.sth.rgen);
            tok.hold();
        }
        if let Some(r) = rest {
            self.sth_putbq_taken(r);
        }
        Ok(p.got)
    }

    /// [`Stream::sth_putbq_head`] of (the rest of) the message a read or getmsg just took
    /// with `sth_take_front`. If that came from the direct take, its arrival is noted now, as
    /// `sth_enqueue` notes data arriving on the empty queue the direct take requires (the
    /// readers' and pollers' wakeup, S_INPUT | S_RDNORM): the data stays for others to see.
    pub(crate) fn sth_putbq_taken(&mut self, mp: Msg) {
        if core::mem::take(&mut self.sth.taken_direct) {
            self.sth.note(WAKE_READ | WAKE_POLL, S_INPUT | S_RDNORM);
        }
        self.sth_putbq_head(mp);
    }

    /// putbq on the head's read queue (a message that cannot be put back is counted as
    /// dropped).
    pub(crate) fn sth_putbq_head(&mut self, mp: Msg) {
        let h = self.head_rq();
        if let Err(m) = self.qctx(h).putbq(mp) {
            drop(m);
            self.count_drop();
        }
    }

    /// I_PEEK: what getmsg with `maxlen`s `ctl`/`data` would retrieve of the first message
    /// (high priority only with `hipri`), and a `dupmsg` of it for the platform to copy the
    /// parts from after the lock; the message stays queued. `None` if there is no such message.
    /// ENOSR if the dupmsg cannot be made.
    pub(crate) fn sth_peek(
        &mut self,
        ctl: Option<usize>,
        data: Option<usize>,
        hipri: bool,
    ) -> Result<Option<(GetMsg, Msg)>, Errno> {
        let h = self.head_rq();
        let Some(first) = self
            .side_mut(h)
            .and_then(|s| s.q.peek_mut(0))
            .filter(|m| !hipri || m.is_hipri())
        else {
            return Ok(None);
        };
        let p = plan(first, ctl, data);
        let dup = first.dupmsg()?;
        Ok(Some((p.got, dup)))
    }
}

/// I_PEEK, after the lock: copy the parts [`GetMsg`] `got` reports of `m` (a dupmsg of the
/// peeked message) to `ctl` and `data`.
pub fn peek_copy_out(
    m: &Msg,
    got: &GetMsg,
    ctl: Option<&mut dyn UserIo>,
    data: Option<&mut dyn UserIo>,
) -> Result<(), Errno> {
    use super::take::copy_blocks;
    if let (Some(io), Ok(n)) = (ctl, usize::try_from(got.ctl_len)) {
        copy_blocks(m, is_ctl, n, io, 0)?;
    }
    if let (Some(io), Ok(n)) = (data, usize::try_from(got.data_len)) {
        copy_blocks(m, |b| !is_ctl(b), n, io, 0)?;
    }
    Ok(())
}

/// [`Stream::sth_getmsg_ready`] for the head's read queue `q`, which holds bytes: whether
/// `strgetpmsg` would take its first message.
fn sth_getmsg_ready_first(q: &crate::queue::Queue, band: i32, flags: i32) -> bool {
    let minband = match flags {
        MSG_HIPRI if band == 0 => None,
        0 | MSG_ANY => Some(0u8),
        MSG_BAND => u8::try_from(band).ok(),
        _ => return false,
    };
    q.first()
        .is_some_and(|m| m.is_hipri() || minband.is_some_and(|b| m.band() >= b))
}
