//! `loop` (and its alias `spx`): a loop-around driver that joins two of its Streams into a
//! full-duplex pipe, the SVR4-portable way of APUE's `s_pipe` (open the driver twice, then
//! I_FDINSERT on one with the other as `fildes`).
//!
//! Every open is one Stream of one Stream complex (`stream/complex.rs`), so a driver can name
//! another of its Streams by a queue token: I_FDINSERT puts the `QueueId::raw` of `fildes`'s
//! driver read queue into the control part (`sth/fdinsert.rs`). Tokens mean something only
//! inside the complex that made them; a token from anywhere else names no queue here.
//!
//! ```text
//!   unconnected ──M_PROTO(8-byte token of B)──▶ connecting(B) ──ACCEPT──▶ connected(B)
//!        │  (A puts M_CTL CONNECT on B's read queue; B answers ACCEPT or REFUSE)   │
//!        └── data: M_ERROR ENXIO                            close of B: hung up ◀─┘
//! ```
//!
//! Connecting: an *unconnected* Stream that receives an M_PROTO or M_PCPROTO whose control
//! part is exactly 8 bytes takes it as a connect request (a data part is freed). The token
//! must name the driver read queue of another Stream of this driver in this complex; if not,
//! the requester gets M_ERROR EINVAL. The requester tells the peer with a put of an M_CTL
//! CONNECT on the peer's read queue (as SVR4 drivers reach each other); an unconnected peer
//! accepts, any other answers REFUSE and the requester gets M_ERROR EBUSY. The answer is put
//! on the requester's read queue, which is running, so it is queued there and its read
//! service procedure completes the connection (the platform runs it before the ioctl
//! returns). Data written meanwhile is held on the write queue.
//!
//! Connected: M_DATA, M_PROTO and M_PCPROTO written on one end go up the other
//! (`putnext` from the peer's driver read queue). Flow control runs across: the write put
//! procedure queues what the peer's Stream head cannot take (`bcanputnext` there, which arms
//! its back-enable), and when that head drains, the peer's read service procedure enables
//! this write queue again. High-priority messages are never held. M_FLUSH is a pipe's:
//! FLUSHW flushes this write queue and goes up the peer as FLUSHR (its head flushes its read
//! side); FLUSHR flushes the peer's write queue (data on its way here) and goes back up this
//! Stream. M_IOCTL is NAK'd with EINVAL; anything else is freed.
//!
//! Before a connection, data is answered with M_ERROR ENXIO, as the loop driver of the
//! SVR4 STREAMS Programmer's Guide does: the Stream is then unusable, so connect first.
//!
//! Close: what this end still holds on its write queue goes up the peer regardless of flow
//! control, then an M_CTL DISCONNECT is put on the peer's read queue: the peer frees what it
//! held for this end and sends M_HANGUP up its Stream (its reader gets end of file after the
//! data, its writer ENXIO/EPIPE). A hung-up Stream never connects again.

#[doc(hidden)]
pub mod tests;

use crate::box_dyn;
use crate::errno::Errno;
use crate::msg::{Msg, M_CTL, M_DATA, M_ERROR, M_FLUSH, M_IOCNAK, M_IOCTL, M_PCPROTO, M_PROTO};
use crate::queue::FLUSHALL;
use crate::sth::consts::{FLUSHBAND, FLUSHR, FLUSHW};
use crate::sth::IocBlk;
use crate::stream::{ModuleInfo, OpenArgs, QCtx, QueueId, Role, StreamModule, StreamTab};
use crate::sys::Box;

/// The `module_info` of both names: only the name differs.
const fn info(name: &'static str) -> ModuleInfo {
    ModuleInfo {
        mi_idnum: 5030,
        mi_idname: name,
        mi_minpsz: 0,
        mi_maxpsz: crate::queue::INFPSZ,
        mi_hiwat: 8192,
        mi_lowat: 1024,
    }
}

/// The streamtab of `loop`.
pub static LOOP: StreamTab = StreamTab {
    info: info("loop"),
    open,
};

/// The same driver under the name of the SVR4 "stream pipe" driver (`/dev/spx`).
pub static SPX: StreamTab = StreamTab {
    info: info("spx"),
    open,
};

/// Size of a connect request's control part: one queue token.
pub const TOKEN_SIZE: usize = 8;

fn open(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(Loop { peer: Peer::Unconnected } => dyn StreamModule)?)
}

/// Where a loop Stream stands (the peer named by its driver read queue).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peer {
    Unconnected,
    /// CONNECT sent to this peer; its answer is on the way.
    Connecting(QueueId),
    Connected(QueueId),
    /// The peer closed; for good.
    HungUp,
}

/// What the M_CTL messages between two loop Streams say (first byte; the sender's read
/// queue token follows).
const CONNECT: u8 = 1;
const ACCEPT: u8 = 2;
const REFUSE: u8 = 3;
const DISCONNECT: u8 = 4;

/// The M_CTL `what` from read queue `me`.
fn ctl_msg(what: u8, me: QueueId) -> Option<Msg> {
    let mut b = [0u8; 1 + TOKEN_SIZE];
    for (d, s) in b
        .iter_mut()
        .zip(core::iter::once(what).chain(me.raw().to_ne_bytes()))
    {
        *d = s;
    }
    Msg::from_bytes(M_CTL, &b).ok()
}

/// Parse one of our M_CTLs: (what, sender's read queue).
fn parse_ctl(mp: &Msg) -> Option<(u8, QueueId)> {
    let b = mp.rd();
    let tok = u64::from_ne_bytes(b.get(1..1 + TOKEN_SIZE)?.try_into().ok()?);
    Some((*b.first()?, QueueId::from_raw(tok)?))
}

fn is_data(mp: &Msg) -> bool {
    matches!(mp.db_type(), M_DATA | M_PROTO | M_PCPROTO)
}

/// Send M_ERROR `e` up the Stream of the read queue `cx` acts on.
fn error_up(cx: &mut QCtx<'_>, e: Errno) {
    if let Ok(m) = Msg::from_bytes(M_ERROR, &[e.0 as u8]) {
        cx.putnext(m);
    }
}

/// Send `mp` up peer read queue `p` unless its Stream is full (high priority always goes).
fn forward(cx: &mut QCtx<'_>, p: QueueId, mp: Msg) -> Result<(), Msg> {
    let mut at = cx.at(p);
    if !mp.is_hipri() && !at.bcanputnext(mp.band()) {
        return Err(mp);
    }
    at.putnext(mp);
    Ok(())
}

/// One Stream's instance of the driver.
struct Loop {
    peer: Peer,
}

impl Loop {
    /// Whether `q` names the driver read queue of another Stream of this driver here.
    fn names_peer(cx: &QCtx<'_>, q: QueueId) -> bool {
        let s = cx.stream();
        let me = cx.qid().rd();
        q.is_read()
            && q != me
            && s.role(q) == Some(Role::Driver)
            && s.name(q).is_some_and(|n| s.name(me) == Some(n))
    }

    /// A connect request (see the module docs), on the write queue.
    fn connect(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        let tok = mp.rd().try_into().ok().map(u64::from_ne_bytes);
        drop(mp);
        let me = cx.qid().rd();
        let Some(q) = tok
            .and_then(QueueId::from_raw)
            .filter(|q| Loop::names_peer(cx, *q))
        else {
            error_up(&mut cx.otherq(), Errno::EINVAL);
            return;
        };
        let Some(m) = ctl_msg(CONNECT, me) else {
            error_up(&mut cx.otherq(), Errno::ENOSR);
            return;
        };
        self.peer = Peer::Connecting(q);
        cx.at(q).put(m);
    }

    /// One of our M_CTLs, on the read queue.
    fn ctl(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        let Some((what, from)) = parse_ctl(&mp) else {
            return;
        };
        drop(mp);
        let me = cx.qid();
        match (what, self.peer) {
            (CONNECT, Peer::Unconnected) if Loop::names_peer(cx, from) => {
                if let Some(m) = ctl_msg(ACCEPT, me) {
                    self.peer = Peer::Connected(from);
                    cx.at(from).put(m);
                }
            }
            (CONNECT, _) => {
                if let Some(m) = ctl_msg(REFUSE, me) {
                    cx.at(from).put(m);
                }
            }
            (ACCEPT, Peer::Connecting(p)) if p == from => {
                self.peer = Peer::Connected(p);
                cx.otherq().qenable(); // what was written meanwhile goes now
            }
            (REFUSE, Peer::Connecting(p)) if p == from => {
                self.peer = Peer::Unconnected;
                cx.otherq().flushq(FLUSHALL);
                error_up(cx, Errno::EBUSY);
            }
            (DISCONNECT, Peer::Connected(p) | Peer::Connecting(p)) if p == from => {
                self.peer = Peer::HungUp;
                cx.otherq().flushq(FLUSHALL);
                if let Ok(m) = Msg::from_bytes(crate::msg::M_HANGUP, &[]) {
                    cx.putnext(m);
                }
            }
            _ => {}
        }
    }

    fn flush(&mut self, cx: &mut QCtx<'_>, mut mp: Msg) {
        let f = mp.rd().first().copied().unwrap_or(0);
        let band = (f & FLUSHBAND != 0).then(|| mp.rd().get(1).copied().unwrap_or(0));
        let flush = |cx: &mut QCtx<'_>| match band {
            Some(b) => cx.flushband(b, FLUSHALL),
            None => cx.flushq(FLUSHALL),
        };
        let peer = match self.peer {
            Peer::Connected(p) => Some(p),
            _ => None,
        };
        if f & FLUSHW != 0 {
            flush(cx);
            if let Some(p) = peer {
                let mut up = [(f & FLUSHBAND) | FLUSHR, band.unwrap_or(0)];
                let n = if band.is_some() { 2 } else { 1 };
                if let Ok(m) = Msg::from_bytes(M_FLUSH, up.get_mut(..n).unwrap_or_default()) {
                    cx.at(p).putnext(m);
                }
            }
        }
        if f & FLUSHR != 0 {
            flush(&mut cx.otherq());
            if let Some(p) = peer {
                flush(&mut cx.at(p.wr()));
            }
            if let Some(b) = mp.rd_mut().and_then(|b| b.first_mut()) {
                *b &= !FLUSHW;
            }
            cx.qreply(mp);
        }
    }
}

/// NAK an M_IOCTL with EINVAL.
fn nak(cx: &mut QCtx<'_>, mut mp: Msg) {
    let mut ioc = IocBlk::decode(mp.rd()).unwrap_or_default();
    ioc.count = 0;
    ioc.rval = 0;
    ioc.error = Errno::EINVAL.0;
    if let Some(b) = mp.rd_mut() {
        for (d, s) in b.iter_mut().zip(ioc.encode().iter()) {
            *d = *s;
        }
    }
    drop(mp.unlinkb());
    mp.set_type(M_IOCNAK);
    cx.qreply(mp);
}

impl StreamModule for Loop {
    fn wput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        match mp.db_type() {
            M_IOCTL => nak(cx, mp),
            M_FLUSH => self.flush(cx, mp),
            _ if is_data(&mp) => match self.peer {
                Peer::Unconnected if mp.db_type() != M_DATA && mp.blen() == TOKEN_SIZE => {
                    self.connect(cx, mp)
                }
                Peer::Unconnected => {
                    drop(mp);
                    error_up(&mut cx.otherq(), Errno::ENXIO);
                }
                Peer::Connecting(_) => {
                    let _ = cx.putq(mp);
                }
                Peer::Connected(p) => {
                    let queued = cx.queue().is_some_and(|q| q.qsize() > 0);
                    let held = if queued && !mp.is_hipri() {
                        Err(mp)
                    } else {
                        forward(cx, p, mp)
                    };
                    if let Err(mp) = held {
                        let _ = cx.putq(mp);
                    }
                }
                Peer::HungUp => {}
            },
            _ => {}
        }
    }

    fn wsrv(&mut self, cx: &mut QCtx<'_>) {
        while let Some(mp) = cx.getq() {
            match self.peer {
                Peer::Connected(p) => {
                    if let Err(mp) = forward(cx, p, mp) {
                        let _ = cx.putbq(mp);
                        break;
                    }
                }
                Peer::Connecting(_) => {
                    let _ = cx.putbq(mp);
                    break;
                }
                Peer::Unconnected | Peer::HungUp => {}
            }
        }
    }

    fn rput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        if mp.db_type() == M_CTL {
            self.ctl(cx, mp);
        }
    }

    /// Runs for the answers queued while this instance was busy, and when back-enabled by
    /// this Stream's head: the peer may send what it holds for us again.
    fn rsrv(&mut self, cx: &mut QCtx<'_>) {
        while let Some(mp) = cx.getq() {
            if mp.db_type() == M_CTL {
                self.ctl(cx, mp);
            }
        }
        if let Peer::Connected(p) = self.peer {
            cx.at(p.wr()).qenable();
        }
    }

    fn has_rsrv(&self) -> bool {
        true
    }
    fn has_wsrv(&self) -> bool {
        true
    }

    fn close(&mut self, cx: &mut QCtx<'_>) {
        let p = match self.peer {
            Peer::Connected(p) | Peer::Connecting(p) => p,
            _ => return,
        };
        if let Peer::Connected(_) = self.peer {
            let w = cx.qid().wr();
            while let Some(mp) = cx.at(w).getq() {
                cx.at(p).putnext(mp);
            }
        }
        self.peer = Peer::HungUp;
        if let Some(m) = ctl_msg(DISCONNECT, cx.qid().rd()) {
            cx.at(p).put(m);
        }
    }
}
