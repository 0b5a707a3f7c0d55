// SPDX-License-Identifier: GPL-2.0
//! `sloop`: a loopback STREAMS test driver (after LfS `loop`) behind the clone device
//! `/dev/streams/clone/sloop` (a fresh Stream per open). Test build only (`--cfg rstreams_test`).
//!
//! What is written comes back up: M_DATA, M_PROTO and M_PCPROTO are `qreply`d, so write→read
//! and putmsg→getmsg round-trip through the real Stream head. Flow control is end to end: the
//! write side holds what the head's read queue cannot take (`canputnext` on `RD(q)`), so a
//! writer fills the write queue to its high-water mark and then blocks; when the reader drains
//! the head below its low-water mark the back-enable runs the read service procedure, which
//! restarts the write side; draining the write queue back-enables the sleeping writer.
//!
//! M_FLUSH (SVR4 driver rules): FLUSHW flushes the write queue, FLUSHR the read queue, and
//! because written data is the data read here, a FLUSHW is turned around as FLUSHR (never with
//! FLUSHW, which the head would send down again). M_IOCTL: [`SLOOP_IOC_ECHO`] is acknowledged
//! with its data unchanged (a private test command), anything else gets M_IOCNAK (EINVAL).
//!
//! The loopback, the M_FLUSH rules and the ioctl answer are shared with the `echo` and `nuls`
//! test drivers (`echo.rs`, `nuls.rs`): [`open_loopback`], [`driver_flush`], [`driver_ioctl`].

use crate::box_dyn;
use crate::errno::Errno;
use crate::msg::{Msg, M_DATA, M_FLUSH, M_IOCACK, M_IOCNAK, M_IOCTL, M_PCPROTO, M_PROTO};
use crate::queue::{FLUSHDATA, INFPSZ};
use crate::sth::consts::{FLUSHBAND, FLUSHR, FLUSHW};
use crate::sth::IocBlk;
use crate::stream::{ModuleInfo, OpenArgs, QCtx, StreamModule, StreamTab};
use crate::sys::Box;

/// I_STR command that sloop acknowledges, echoing the data (`'l' << 8 | 1`).
pub(crate) const SLOOP_IOC_ECHO: i32 = (b'l' as i32) << 8 | 1;

/// Watermarks of sloop's (and echo's) queues: small enough that tests reach flow control quickly.
pub(crate) const SLOOP_HIWAT: usize = 8192;
pub(crate) const SLOOP_LOWAT: usize = 2048;

/// A loopback driver instance (`sloop`, and `echo` which acknowledges no ioctl at all).
pub(crate) struct Loopback {
    /// Acknowledge [`SLOOP_IOC_ECHO`] (sloop) or NAK every ioctl (echo).
    ack_echo: bool,
}

/// Can `mp` go up now (high priority always can)? Asks the read side's next queue, which
/// marks it QWANTW on refusal so that draining it back-enables our read queue.
fn can_reply(cx: &mut QCtx<'_>, mp: &Msg) -> bool {
    mp.is_hipri() || cx.otherq().bcanputnext(mp.band())
}

/// M_FLUSH at the bottom of a Stream (SVR4 driver rules), `cx` on the driver's write queue:
/// FLUSHW flushes the write queue, FLUSHR the read queue (FLUSHBAND honoured), and the message
/// goes back up as FLUSHR (never with FLUSHW, which the head would send down again) when FLUSHR
/// was set, or, for a `loopback`, also when only FLUSHW was (written data is what is read
/// there). Otherwise it is freed.
pub(crate) fn driver_flush(cx: &mut QCtx<'_>, mut mp: Msg, loopback: bool) {
    let f = mp.rd().first().copied().unwrap_or(0);
    let band = (f & FLUSHBAND != 0).then(|| mp.rd().get(1).copied().unwrap_or(0));
    let flush = |cx: &mut QCtx<'_>| match band {
        Some(b) => cx.flushband(b, FLUSHDATA),
        None => cx.flushq(FLUSHDATA),
    };
    if f & FLUSHW != 0 {
        flush(cx);
    }
    if f & FLUSHR != 0 {
        flush(&mut cx.otherq());
    }
    let up = f & FLUSHR != 0 || (loopback && f & FLUSHW != 0);
    if !up || mp.make_writable().is_err() {
        return;
    }
    if let Some(b) = mp.rd_mut().and_then(|b| b.first_mut()) {
        *b = (*b & FLUSHBAND) | FLUSHR;
    }
    cx.qreply(mp);
}

/// Answer an M_IOCTL at the bottom of a Stream: M_IOCACK with the data unchanged when
/// `ack(cmd)` says so, else M_IOCNAK with EINVAL.
pub(crate) fn driver_ioctl(cx: &mut QCtx<'_>, mut mp: Msg, ack: impl FnOnce(i32) -> bool) {
    let Some(mut ioc) = IocBlk::decode(mp.rd()) else {
        return;
    };
    if ack(ioc.cmd) {
        mp.set_type(M_IOCACK);
        ioc.rval = 0;
    } else {
        mp.set_type(M_IOCNAK);
        ioc.error = Errno::EINVAL.0;
        ioc.count = 0;
    }
    if mp.make_writable().is_err() {
        return;
    }
    if let Some(b) = mp
        .rd_mut()
        .and_then(|b| b.get_mut(..crate::sth::IOCBLK_SIZE))
    {
        b.copy_from_slice(&ioc.encode());
    }
    cx.qreply(mp);
}

impl StreamModule for Loopback {
    fn wput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        let ty = mp.db_type();
        if ty == M_FLUSH {
            driver_flush(cx, mp, true);
        } else if ty == M_IOCTL {
            let ack_echo = self.ack_echo;
            driver_ioctl(cx, mp, |cmd| ack_echo && cmd == SLOOP_IOC_ECHO);
        } else if ty == M_DATA || ty == M_PROTO || ty == M_PCPROTO {
            let queued = cx.queue().is_some_and(|q| !q.is_empty());
            if mp.is_hipri() || (!queued && can_reply(cx, &mp)) {
                cx.qreply(mp);
            } else if let Err(mp) = cx.putq(mp) {
                drop(mp); // no memory for the queue entry: lost, as a full SVR4 queue drops
            }
        }
        // Everything else (M_READ, M_CTL, …) means nothing to a loopback: freed.
    }

    fn wsrv(&mut self, cx: &mut QCtx<'_>) {
        while let Some(mp) = cx.getq() {
            if can_reply(cx, &mp) {
                cx.qreply(mp);
            } else {
                if let Err(mp) = cx.putbq(mp) {
                    drop(mp);
                }
                break;
            }
        }
    }

    /// Back-enabled when the head's read queue drained: restart the write side.
    fn rsrv(&mut self, cx: &mut QCtx<'_>) {
        cx.otherq().qenable();
    }

    fn has_rsrv(&self) -> bool {
        true
    }

    fn has_wsrv(&self) -> bool {
        true
    }
}

/// A new loopback instance; `ack_echo` as in [`Loopback`].
pub(crate) fn open_loopback(ack_echo: bool) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(Loopback { ack_echo } => dyn StreamModule)?)
}

fn sloop_open(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    open_loopback(true)
}

/// The sloop driver's streamtab.
pub(crate) static SLOOP: StreamTab = StreamTab {
    info: ModuleInfo {
        mi_idnum: 0x5100,
        mi_idname: "sloop",
        mi_minpsz: 0,
        mi_maxpsz: INFPSZ,
        mi_hiwat: SLOOP_HIWAT,
        mi_lowat: SLOOP_LOWAT,
    },
    open: sloop_open,
};
