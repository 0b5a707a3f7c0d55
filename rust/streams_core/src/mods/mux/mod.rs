//! `mux`: a small multiplexing driver, to exercise I_LINK, I_PLINK, I_UNLINK and I_PUNLINK.
//!
//! Every open is its own Stream, an upper Stream of the driver; the platform gives it the
//! driver's link table (`stream/mux.rs`). An upper Stream is routed to at most one link at a
//! time: the one it made last (I_LINK or I_PLINK), or the one it names with the I_STR command
//! [`MUX_ROUTE`] (argument: the muxid as a native `int`; ENXIO if no such link). What it
//! writes (M_DATA, M_PROTO, M_PCPROTO) goes down that link's Stream; what comes up a link goes
//! to the upper Stream routed to it last. Without a route, messages are freed.
//!
//! Flow control runs end to end: the upper write side holds data while the link's lower half
//! is full (the lower write service procedure wakes the uppers routed to it when it drains),
//! and the lower read side holds data while the upper's driver read queue is full (the upper
//! read service procedure, back-enabled when the upper Stream head drains, wakes the lower
//! halves routed to it). M_FLUSH is handled as a driver does on the upper side and as a Stream
//! head does on the lower side. Other messages coming up a link (M_HANGUP, M_ERROR, …) are
//! freed: the link, not the upper Stream, is what they concern.
//!
//! What changed from the single-arena design: the upper and lower halves reach each other's
//! Streams through the table and their perimeters instead of queue ids of one arena, and a
//! lower half wakes only the uppers routed to its link (it used to enable every upper of the
//! driver).

#[doc(hidden)]
pub mod tests;

use crate::box_dyn;
use crate::errno::Errno;
use crate::msg::{Msg, M_DATA, M_FLUSH, M_IOCACK, M_IOCNAK, M_IOCTL, M_PCPROTO, M_PROTO};
use crate::queue::{QFlags, FLUSHALL};
use crate::sth::consts::{FLUSHR, FLUSHW, I_LINK, I_PLINK, I_PUNLINK, I_UNLINK};
use crate::sth::{IocBlk, LinkBlk};
use crate::stream::{
    ModuleInfo, Multiplexor, MuxTable, OpenArgs, QCtx, StreamModule, StreamTab, UpperId,
};
use crate::sys::{Arc, Box};

/// I_STR command: route this upper Stream to link `muxid` (an `int` in the data).
pub const MUX_ROUTE: i32 = (b'X' as i32) << 8 | 1;

/// The name of the driver.
pub const MUX_NAME: &str = "mux";

/// The streamtab of `mux`.
pub static MUX: StreamTab = StreamTab {
    info: ModuleInfo {
        mi_idnum: 5020,
        mi_idname: MUX_NAME,
        mi_minpsz: 0,
        mi_maxpsz: crate::queue::INFPSZ,
        mi_hiwat: 8192,
        mi_lowat: 1024,
    },
    open: open_upper,
};

fn open_upper(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(Upper { mux: None } => dyn StreamModule)?)
}

fn is_data(mp: &Msg) -> bool {
    matches!(mp.db_type(), M_DATA | M_PROTO | M_PCPROTO)
}

/// Answer an M_IOCTL in place: M_IOCACK (`Ok`) or M_IOCNAK with the errno.
fn answer(cx: &mut QCtx<'_>, mut mp: Msg, r: Result<(), Errno>) {
    let mut ioc = IocBlk::decode(mp.rd()).unwrap_or_default();
    ioc.count = 0;
    ioc.rval = 0;
    ioc.error = r.err().map_or(0, |e| e.0);
    if let Some(b) = mp.rd_mut() {
        for (d, s) in b.iter_mut().zip(ioc.encode().iter()) {
            *d = *s;
        }
    }
    drop(mp.unlinkb());
    mp.set_type(if r.is_ok() { M_IOCACK } else { M_IOCNAK });
    cx.qreply(mp);
}

/// Pass `mp` up unless it has to wait behind what is queued or for flow control.
fn up_or_hold(cx: &mut QCtx<'_>, mp: Msg) {
    let queued = cx.queue().is_some_and(|q| q.qsize() > 0);
    if !mp.is_hipri() && (queued || !cx.bcanputnext(mp.band())) {
        let _ = cx.putq(mp);
    } else {
        cx.putnext(mp);
    }
}

/// Pass on what waits on this queue while the next queue takes it.
fn drain_next(cx: &mut QCtx<'_>) {
    while let Some(mp) = cx.getq() {
        if !mp.is_hipri() && !cx.bcanputnext(mp.band()) {
            let _ = cx.putbq(mp);
            return;
        }
        cx.putnext(mp);
    }
}

/// The upper half: one per open.
struct Upper {
    /// The driver's table and this Stream's place in it (from `attach`).
    mux: Option<(Arc<MuxTable>, UpperId)>,
}

impl Upper {
    /// Send `mp` down this Stream's route: `Err(mp)` to hold it.
    fn send(&self, cx: &mut QCtx<'_>, mp: Msg) -> Result<(), Msg> {
        match &self.mux {
            Some((t, me)) => t.send_down(cx, *me, mp),
            None => Ok(()), // not attached: freed
        }
    }

    fn ioctl(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        let cmd = IocBlk::decode(mp.rd()).map_or(0, |i| i.cmd);
        let Some((t, me)) = &self.mux else {
            return answer(cx, mp, Err(Errno::EINVAL));
        };
        let r = match cmd as u32 {
            I_LINK | I_PLINK => match LinkBlk::from_ioctl(&mp) {
                Some(lb) => t.route(*me, lb.index),
                None => Err(Errno::EINVAL),
            },
            I_UNLINK | I_PUNLINK => {
                if let Some(lb) = LinkBlk::from_ioctl(&mp) {
                    t.unroute(*me, lb.index);
                }
                Ok(())
            }
            _ if cmd == MUX_ROUTE => {
                let arg = mp.cont().and_then(|c| c.rd().get(..4)?.try_into().ok());
                match arg.map(i32::from_ne_bytes) {
                    Some(m) => t.route(*me, m),
                    None => Err(Errno::EINVAL),
                }
            }
            _ => Err(Errno::EINVAL),
        };
        if r.is_ok() && (matches!(cmd as u32, I_LINK | I_PLINK) || cmd == MUX_ROUTE) {
            // What this Stream held for its old route goes to the new one, and what the
            // link's lower half held for its old route comes here.
            cx.qenable();
            t.wake_lowers(cx, *me);
        }
        answer(cx, mp, r);
    }
}

impl StreamModule for Upper {
    fn wput(&mut self, cx: &mut QCtx<'_>, mut mp: Msg) {
        match mp.db_type() {
            M_IOCTL => self.ioctl(cx, mp),
            M_FLUSH => {
                let f = mp.rd().first().copied().unwrap_or(0);
                if f & FLUSHW != 0 {
                    cx.flushq(FLUSHALL);
                }
                if f & FLUSHR != 0 {
                    cx.flushq_other(FLUSHALL);
                    if let Some(b) = mp.rd_mut().and_then(|b| b.first_mut()) {
                        *b &= !FLUSHW;
                    }
                    cx.qreply(mp);
                }
            }
            _ if is_data(&mp) => {
                let queued = cx.queue().is_some_and(|q| q.qsize() > 0);
                let held = if queued { Err(mp) } else { self.send(cx, mp) };
                if let Err(mp) = held {
                    let _ = cx.putq(mp);
                }
            }
            _ => {}
        }
    }
    fn wsrv(&mut self, cx: &mut QCtx<'_>) {
        while let Some(mp) = cx.getq() {
            if let Err(mp) = self.send(cx, mp) {
                let _ = cx.putbq(mp);
                break;
            }
        }
    }
    /// What the lower halves send up (through this Stream's perimeter).
    fn rput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        up_or_hold(cx, mp)
    }
    /// Back-enabled by the Stream head above, or by a lower half it refused: pass on what
    /// waits, then wake the lower halves routed here.
    fn rsrv(&mut self, cx: &mut QCtx<'_>) {
        drain_next(cx);
        if !cx.flags().contains(QFlags::QFULL) {
            if let Some((t, me)) = &self.mux {
                t.wake_lowers(cx, *me);
            }
        }
    }
    fn has_rsrv(&self) -> bool {
        true
    }
    fn has_wsrv(&self) -> bool {
        true
    }
    fn mux(&mut self) -> Option<&mut dyn Multiplexor> {
        Some(self)
    }
}

impl Multiplexor for Upper {
    fn attach(&mut self, table: Arc<MuxTable>, me: UpperId) {
        self.mux = Some((table, me));
    }
    fn open_lower(&mut self, muxid: i32) -> Result<Box<dyn StreamModule>, Errno> {
        let table = self
            .mux
            .as_ref()
            .map(|(t, _)| t.clone())
            .ok_or(Errno::EINVAL)?;
        Ok(box_dyn!(Lower { table, muxid } => dyn StreamModule)?)
    }
}

/// The lower half: one per link, on the linked Stream's head pair.
struct Lower {
    table: Arc<MuxTable>,
    muxid: i32,
}

impl StreamModule for Lower {
    fn rput(&mut self, cx: &mut QCtx<'_>, mut mp: Msg) {
        if mp.db_type() == M_FLUSH {
            // As a Stream head: flush, and turn FLUSHW back down.
            let f = mp.rd().first().copied().unwrap_or(0);
            if f & FLUSHR != 0 {
                cx.flushq(FLUSHALL);
            }
            if f & FLUSHW != 0 {
                if let Some(b) = mp.rd_mut().and_then(|b| b.first_mut()) {
                    *b &= !FLUSHR;
                }
                cx.qreply(mp);
            }
            return;
        }
        if !is_data(&mp) {
            return;
        }
        let queued = cx.queue().is_some_and(|q| q.qsize() > 0);
        let held = if queued {
            Err(mp)
        } else {
            self.table.send_up(cx, self.muxid, mp)
        };
        if let Err(mp) = held {
            let _ = cx.putq(mp);
        }
    }
    /// Woken by the upper it sends to (room again), or enabled by its own putq.
    fn rsrv(&mut self, cx: &mut QCtx<'_>) {
        while let Some(mp) = cx.getq() {
            if let Err(mp) = self.table.send_up(cx, self.muxid, mp) {
                let _ = cx.putbq(mp);
                break;
            }
        }
    }
    /// What the uppers routed here send down (through this Stream's perimeter).
    fn wput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        if is_data(&mp) {
            let queued = cx.queue().is_some_and(|q| q.qsize() > 0);
            if !mp.is_hipri() && (queued || !cx.bcanputnext(mp.band())) {
                let _ = cx.putq(mp);
            } else {
                cx.putnext(mp);
            }
        }
    }
    /// Back-enabled by the linked Stream below (or by an upper it refused, or at install):
    /// pass on what waits, then wake the uppers routed to this link.
    fn wsrv(&mut self, cx: &mut QCtx<'_>) {
        drain_next(cx);
        if !cx.flags().contains(QFlags::QFULL) {
            self.table.wake_uppers(cx, self.muxid);
        }
    }
    fn has_rsrv(&self) -> bool {
        true
    }
    fn has_wsrv(&self) -> bool {
        true
    }
}
