//! `mux`: a small multiplexing driver, to exercise I_LINK, I_PLINK, I_UNLINK and I_PUNLINK.
//!
//! Every open is an upper Stream of one Stream complex (`sth/mux.rs`). An upper Stream is
//! routed to at most one link at a time: the one it made last (I_LINK or I_PLINK), or the one
//! it names with the I_STR command [`MUX_ROUTE`] (argument: the muxid as a native `int`;
//! ENXIO if no such link). What it writes (M_DATA, M_PROTO, M_PCPROTO) goes down that link's
//! Stream; what comes up a link goes to the upper Stream routed to it. Without a route,
//! messages are freed. Flow control runs end to end: the upper write service procedure holds
//! data while the lower Stream is full (the lower write service procedure re-enables the
//! uppers when it drains), and the lower read service procedure holds data while the upper
//! Stream head is full (the upper read service procedure, back-enabled by that head,
//! re-enables the lowers routed to it). M_FLUSH is handled as a driver does on the upper
//! side and as a Stream head does on the lower side.

#[doc(hidden)]
pub mod tests;

use crate::box_dyn;
use crate::errno::Errno;
use crate::msg::{Msg, M_DATA, M_FLUSH, M_IOCACK, M_IOCNAK, M_IOCTL, M_PCPROTO, M_PROTO};
use crate::queue::FLUSHALL;
use crate::sth::consts::{FLUSHR, FLUSHW, I_LINK, I_PLINK, I_PUNLINK, I_UNLINK};
use crate::sth::{IocBlk, LinkBlk};
use crate::stream::{LowerOpenFn, ModuleInfo, OpenArgs, QCtx, StreamModule, StreamTab};
use crate::sys::Box;

/// I_STR command: route this upper Stream to link `muxid` (an `int` in the data).
pub const MUX_ROUTE: i32 = (b'X' as i32) << 8 | 1;

/// The streamtab of `mux`.
pub static MUX: StreamTab = StreamTab {
    info: ModuleInfo {
        mi_idnum: 5020,
        mi_idname: "mux",
        mi_minpsz: 0,
        mi_maxpsz: crate::queue::INFPSZ,
        mi_hiwat: 8192,
        mi_lowat: 1024,
    },
    open: open_upper,
};

fn open_upper(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(Upper { route: None } => dyn StreamModule)?)
}

fn open_lower() -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(Lower => dyn StreamModule)?)
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
    if let Some(c) = mp.unlinkb() {
        drop(c);
    }
    mp.set_type(if r.is_ok() { M_IOCACK } else { M_IOCNAK });
    cx.qreply(mp);
}

/// Send `mp` on from queue `from` (another Stream's queue) unless flow control says no.
fn forward(cx: &mut QCtx<'_>, from: crate::stream::QueueId, mp: Msg) -> Result<(), Msg> {
    let mut at = cx.at(from);
    if !mp.is_hipri() && !at.bcanputnext(mp.band()) {
        return Err(mp);
    }
    at.putnext(mp);
    Ok(())
}

/// The upper half: one per open.
struct Upper {
    route: Option<i32>,
}

impl Upper {
    fn send(&self, cx: &mut QCtx<'_>, mp: Msg) -> Result<(), Msg> {
        match self.route.and_then(|m| cx.mux_lower(m)) {
            Some(q) => forward(cx, q, mp),
            None => Ok(()), // no route: freed
        }
    }

    fn ioctl(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        let cmd = IocBlk::decode(mp.rd()).map_or(0, |i| i.cmd);
        let me = cx.qid().otherq();
        let r = match cmd as u32 {
            I_LINK | I_PLINK => match LinkBlk::from_ioctl(&mp) {
                Some(lb) => {
                    self.route = Some(lb.index);
                    cx.mux_set_route(lb.index, Some(me))
                }
                None => Err(Errno::EINVAL),
            },
            I_UNLINK | I_PUNLINK => {
                if let Some(lb) = LinkBlk::from_ioctl(&mp) {
                    if self.route == Some(lb.index) {
                        self.route = None;
                    }
                }
                Ok(())
            }
            _ if cmd == MUX_ROUTE => {
                let arg = mp.cont().and_then(|c| c.rd().get(..4)?.try_into().ok());
                match arg.map(i32::from_ne_bytes) {
                    Some(m) if cx.mux_lower(m).is_some() => {
                        self.route = Some(m);
                        cx.mux_set_route(m, Some(me))
                    }
                    Some(_) => Err(Errno::ENXIO),
                    None => Err(Errno::EINVAL),
                }
            }
            _ => Err(Errno::EINVAL),
        };
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
    /// Back-enabled by the Stream head above: the lowers routed here may send again.
    fn rsrv(&mut self, cx: &mut QCtx<'_>) {
        cx.mux_enable_routed();
    }
    fn has_rsrv(&self) -> bool {
        true
    }
    fn has_wsrv(&self) -> bool {
        true
    }
    fn mux_lower(&self) -> Option<LowerOpenFn> {
        Some(open_lower)
    }
}

/// The lower half: one per link, on the linked Stream's former head pair.
struct Lower;

impl Lower {
    fn send_up(cx: &mut QCtx<'_>, mp: Msg) -> Result<(), Msg> {
        match cx.mux_route() {
            Some(up) => forward(cx, up, mp),
            None => Ok(()), // nobody routed here: freed
        }
    }
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
            Lower::send_up(cx, mp)
        };
        if let Err(mp) = held {
            let _ = cx.putq(mp);
        }
    }
    fn rsrv(&mut self, cx: &mut QCtx<'_>) {
        while let Some(mp) = cx.getq() {
            if let Err(mp) = Lower::send_up(cx, mp) {
                let _ = cx.putbq(mp);
                break;
            }
        }
    }
    /// Back-enabled by the linked Stream: the uppers may send again.
    fn wsrv(&mut self, cx: &mut QCtx<'_>) {
        cx.mux_enable_uppers();
    }
    fn has_rsrv(&self) -> bool {
        true
    }
    fn has_wsrv(&self) -> bool {
        true
    }
}
