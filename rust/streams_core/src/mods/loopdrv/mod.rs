//! `loop` (and its alias `spx`): a loop-around driver that joins two of its Streams into a
//! full-duplex pipe, the SVR4-portable way of APUE's `s_pipe` (open the driver twice, then
//! I_FDINSERT on one with the other as `fildes`).
//!
//! Every open is its own Stream under its own lock. I_FDINSERT hands this driver a reference
//! to `fildes`'s driver read queue as a block of the message (`sth/fdinsert.rs`), and the two
//! instances then talk through their Streams' perimeters with M_CTL messages that carry a
//! reference to the sender's read queue ([`Msg::with_qref`]): a reference is the only way to
//! name another Stream's queue, so a token a user forges names nothing.
//!
//! ```text
//!   unconnected ──M_PROTO(8 bytes + ref to B)──▶ connecting(B) ──ACCEPT──▶ connected(B)
//!        │  (A puts M_CTL CONNECT on B's read queue; B answers ACCEPT or REFUSE)   │
//!        └── data: M_ERROR ENXIO                     close of B: hung up ◀───────┘
//! ```
//!
//! Connecting: an *unconnected* Stream that receives an M_PROTO or M_PCPROTO whose first
//! block is exactly 8 bytes takes it as a connect request (the rest is freed). It must carry
//! the reference I_FDINSERT adds, to the driver read queue of another Stream of this driver
//! (same name); if not, the requester gets M_ERROR EINVAL. The requester puts an M_CTL CONNECT
//! on the peer's read queue; an unconnected peer accepts, any other answers REFUSE and the
//! requester gets M_ERROR EBUSY (ENOSR if the peer had no memory to accept). A refusal is the
//! CONNECT sent back, and the requester's M_ERROR is made of it: no answer and no error
//! needs memory, so a requester never stays connecting for want of one, and an allocation
//! failure never reads as "connected already". Both answers come back through the requester's perimeter,
//! which the platform runs before the ioctl returns. Data written meanwhile is held on the
//! write queue.
//!
//! Connected: the driver is a pipe's twist (the `rust/pipe` crate): its write queue's `q_next`
//! is the peer's read queue across the perimeter, so M_DATA, M_PROTO and M_PCPROTO written on
//! one end go up the other, and flow control runs as for a pipe: the write side queues what
//! the peer's Stream head cannot take (`bcanputnext` there), and the peer back-enables this
//! write queue when its head drains. High-priority messages are never held. M_FLUSH is a
//! pipe's: FLUSHW flushes this write queue and goes up the peer as FLUSHR (its head flushes
//! its read side); FLUSHR asks the peer to flush its write queue (data on its way here) and
//! goes back up this Stream. M_IOCTL is NAK'd with EINVAL; anything else is freed.
//!
//! Before a connection, data is answered with M_ERROR ENXIO, as the loop driver of the SVR4
//! STREAMS Programmer's Guide does: the Stream is then unusable, so connect first.
//!
//! Close: what this end still holds on its write queue goes up the peer regardless of flow
//! control, then an M_CTL DISCONNECT (made when the connection was, so a close never lacks
//! memory for it): the peer frees what it held for this end and sends M_HANGUP up its Stream
//! (its reader gets end of file after the data, its writer ENXIO); the M_HANGUP is the
//! DISCONNECT itself. A hung-up Stream never
//! connects again.
//!
//! What changed from the single-arena design: the peer is reached through its perimeter
//! (answers are no longer queued on a busy read queue, so the read side has no service
//! procedure), a connect request needs I_FDINSERT's reference block instead of a queue id
//! (a Stream of any other driver, or of none, gets EINVAL as a foreign token did), and FLUSHR
//! reaches the peer's write queue as a message.

#[doc(hidden)]
pub mod tests;

use crate::box_dyn;
use crate::errno::Errno;
use crate::msg::{
    Msg, M_CTL, M_DATA, M_ERROR, M_FLUSH, M_HANGUP, M_IOCNAK, M_IOCTL, M_PCPROTO, M_PROTO,
};
use crate::queue::FLUSHALL;
use crate::sth::consts::{FLUSHBAND, FLUSHR, FLUSHW};
use crate::sth::IocBlk;
use crate::stream::{ModuleInfo, OpenArgs, QCtx, QRef, StreamModule, StreamTab};
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

/// Size of a connect request's control part (the I_FDINSERT token).
pub const TOKEN_SIZE: usize = 8;

fn open(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(Loop { peer: Peer::Unconnected, bye: None } => dyn StreamModule)?)
}

/// Where a loop Stream stands (the peer named by its driver read queue).
enum Peer {
    Unconnected,
    /// CONNECT sent to this peer; its answer is on the way.
    Connecting(QRef),
    Connected(QRef),
    /// The peer closed; for good.
    HungUp,
}

/// What the M_CTL messages between two loop Streams say (first byte; the second is a band
/// for FLUSHW; the next block refers to the sender's read queue).
const CONNECT: u8 = 1;
const ACCEPT: u8 = 2;
const REFUSE: u8 = 3;
const DISCONNECT: u8 = 4;
/// Flush your write queue (the data on its way to me): `[FLUSHW_PEER, band + 1 or 0]`.
const FLUSHW_PEER: u8 = 5;

/// Our M_CTL `what` (with `arg`), introducing our read queue `cx` acts on. `None` when
/// memory runs out or the Stream was not given its perimeter.
fn ctl_msg(cx: &QCtx<'_>, what: u8, arg: u8) -> Option<Msg> {
    let me = cx.qref_here()?;
    let name = cx.name()?;
    let mut m = Msg::from_bytes(M_CTL, &[what, arg]).ok()?;
    m.linkb(Msg::with_qref(M_CTL, me, name).ok()?);
    Some(m)
}

/// Parse one of our M_CTLs: (what, arg, the sender's read queue).
fn parse_ctl(mp: &Msg) -> Option<(u8, u8, &QRef)> {
    let b = mp.rd();
    let (q, _) = mp.cont()?.qref()?;
    Some((*b.first()?, b.get(1).copied().unwrap_or(0), q))
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

/// Send M_ERROR `e` up the Stream of the read queue `cx` acts on, made of `mp` (a message this
/// driver was given and is done with), so that an error path does not need memory itself; a
/// new message only if `mp`'s block cannot be reused.
fn error_up_in(cx: &mut QCtx<'_>, mut mp: Msg, e: Errno) {
    drop(mp.unlinkb());
    mp.reset();
    if !mp.is_shared() && mp.append(&[e.0 as u8]) == 1 {
        mp.set_type(M_ERROR);
        mp.set_band(0);
        cx.putnext(mp);
    } else {
        drop(mp);
        error_up(cx, e);
    }
}

/// Answer the CONNECT `mp` (from `from`'s Stream) with REFUSE and errno `e` (EBUSY: this end
/// is not unconnected; ENOSR: no memory to accept). The answer is the CONNECT itself, which
/// names the requester's read queue: refusing needs no memory, so a requester never stays
/// connecting for want of an answer.
fn refuse(cx: &mut QCtx<'_>, mut mp: Msg, from: &QRef, e: Errno) {
    if let Some([what, arg, ..]) = mp.rd_mut() {
        *what = REFUSE;
        *arg = e.0 as u8;
        let _ = cx.put_to(from, mp);
    } else if let Some(m) = ctl_msg(cx, REFUSE, e.0 as u8) {
        let _ = cx.put_to(from, m);
    }
}

/// A reference to the other queue of the pair `q` names.
fn otherq(q: &QRef) -> QRef {
    QRef::new(q.perim().clone(), q.qid().otherq())
}

/// One Stream's instance of the driver.
struct Loop {
    peer: Peer,
    /// The DISCONNECT this end sends at close, made when it started connecting.
    bye: Option<Msg>,
}

impl Loop {
    /// A connect request (see the module docs), on the write queue.
    fn connect(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        let to = mp
            .blocks()
            .find_map(|b| b.qref())
            .map(|(q, n)| (q.clone(), n));
        let me = cx.otherq().qref_here();
        let ok = match (&to, &me) {
            (Some((q, name)), Some(me)) => {
                q.qid().is_read() && Some(*name) == cx.name() && !q.same(me)
            }
            _ => false,
        };
        // The errors below are made of the request itself (`error_up_in`).
        let Some((to, _)) = to.filter(|_| ok) else {
            error_up_in(&mut cx.otherq(), mp, Errno::EINVAL);
            return;
        };
        let m = ctl_msg(&cx.otherq(), CONNECT, 0);
        let bye = ctl_msg(&cx.otherq(), DISCONNECT, 0);
        let (Some(m), Some(bye)) = (m, bye) else {
            error_up_in(&mut cx.otherq(), mp, Errno::ENOSR);
            return;
        };
        if cx.put_to(&to, m).is_err() {
            error_up_in(&mut cx.otherq(), mp, Errno::EINVAL); // closed meanwhile
            return;
        }
        drop(mp);
        self.bye = Some(bye);
        self.peer = Peer::Connecting(to);
    }

    /// Connected to `p`: this write queue's `q_next` is `p`, and `p`'s write queue is where
    /// this read queue's back-enables go (`cx` on the read queue).
    fn connected(&mut self, cx: &mut QCtx<'_>, p: QRef) {
        cx.set_remote(Some(otherq(&p)));
        cx.otherq().set_remote(Some(p.clone()));
        self.peer = Peer::Connected(p);
        cx.otherq().qenable(); // what was written meanwhile goes now
    }

    /// Not connected any more (`cx` on the read queue).
    fn cut(&mut self, cx: &mut QCtx<'_>, to: Peer) {
        cx.set_remote(None);
        cx.otherq().set_remote(None);
        cx.otherq().flushq(FLUSHALL);
        self.bye = None;
        self.peer = to;
    }

    /// One of our M_CTLs, on the read queue.
    fn ctl(&mut self, cx: &mut QCtx<'_>, mut mp: Msg) {
        let Some((what, arg, from)) = parse_ctl(&mp) else {
            return;
        };
        let from = from.clone();
        let mine = |p: &QRef| p.same(&from);
        // A refusal comes back in our own CONNECT (naming our read queue); an older peer's
        // REFUSE names the peer.
        let own = cx.qref_here().is_some_and(|me| me.same(&from));
        match (what, &self.peer) {
            (CONNECT, Peer::Unconnected) => {
                let (Some(m), Some(bye)) = (ctl_msg(cx, ACCEPT, 0), ctl_msg(cx, DISCONNECT, 0))
                else {
                    refuse(cx, mp, &from, Errno::ENOSR);
                    return;
                };
                drop(mp);
                if cx.put_to(&from, m).is_ok() {
                    self.bye = Some(bye);
                    self.connected(cx, from);
                }
            }
            (CONNECT, _) => refuse(cx, mp, &from, Errno::EBUSY),
            (ACCEPT, Peer::Connecting(p)) if mine(p) => self.connected(cx, from),
            (REFUSE, Peer::Connecting(p)) if own || mine(p) => {
                self.cut(cx, Peer::Unconnected);
                let e = if arg == 0 {
                    Errno::EBUSY
                } else {
                    Errno(i32::from(arg))
                };
                error_up_in(cx, mp, e);
            }
            (DISCONNECT, Peer::Connected(p) | Peer::Connecting(p)) if mine(p) => {
                self.cut(cx, Peer::HungUp);
                // The M_HANGUP is the DISCONNECT itself: a hangup never lacks memory.
                drop(mp.unlinkb());
                mp.reset();
                mp.set_type(M_HANGUP);
                cx.putnext(mp);
            }
            (FLUSHW_PEER, Peer::Connected(p)) if mine(p) => {
                let mut w = cx.otherq();
                let _ = match arg.checked_sub(1) {
                    Some(b) => w.flushband(b, FLUSHALL),
                    None => w.flushq(FLUSHALL),
                };
            }
            _ => {}
        }
    }

    /// M_FLUSH from this Stream's head (`cx` on the write queue).
    fn flush(&mut self, cx: &mut QCtx<'_>, mut mp: Msg) {
        let f = mp.rd().first().copied().unwrap_or(0);
        let band = (f & FLUSHBAND != 0).then(|| mp.rd().get(1).copied().unwrap_or(0));
        let connected = matches!(self.peer, Peer::Connected(_));
        if f & FLUSHW != 0 {
            let _ = match band {
                Some(b) => cx.flushband(b, FLUSHALL),
                None => cx.flushq(FLUSHALL),
            };
            if connected {
                let up = [(f & FLUSHBAND) | FLUSHR, band.unwrap_or(0)];
                let n = if band.is_some() { 2 } else { 1 };
                if let Ok(m) = Msg::from_bytes(M_FLUSH, up.get(..n).unwrap_or_default()) {
                    cx.putnext(m);
                }
            }
        }
        if f & FLUSHR != 0 {
            if connected {
                let arg = band.map_or(0, |b| b.saturating_add(1));
                if let Some(m) = ctl_msg(&cx.otherq(), FLUSHW_PEER, arg) {
                    cx.putnext(m);
                }
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
                Peer::Connected(_) => {
                    let queued = cx.queue().is_some_and(|q| q.qsize() > 0);
                    if !mp.is_hipri() && (queued || !cx.bcanputnext(mp.band())) {
                        let _ = cx.putq(mp);
                    } else {
                        cx.putnext(mp);
                    }
                }
                Peer::HungUp => {}
            },
            _ => {}
        }
    }

    /// Enabled when connected (what was written meanwhile), and back-enabled by the peer
    /// when its Stream head drains.
    fn wsrv(&mut self, cx: &mut QCtx<'_>) {
        match self.peer {
            Peer::Connected(_) => {
                while let Some(mp) = cx.getq() {
                    if !mp.is_hipri() && !cx.bcanputnext(mp.band()) {
                        let _ = cx.putbq(mp);
                        return;
                    }
                    cx.putnext(mp);
                }
            }
            Peer::Connecting(_) => {}
            Peer::Unconnected | Peer::HungUp => {
                cx.flushq(FLUSHALL);
            }
        }
    }

    /// What the peer puts here (through this Stream's perimeter): our M_CTLs, and once
    /// connected its data, M_FLUSH and the rest, which go up.
    fn rput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        if mp.db_type() == M_CTL {
            self.ctl(cx, mp);
        } else if matches!(self.peer, Peer::Connected(_)) {
            cx.putnext(mp);
        }
    }

    fn has_wsrv(&self) -> bool {
        true
    }

    fn close(&mut self, cx: &mut QCtx<'_>) {
        let bye = self.bye.take();
        match core::mem::replace(&mut self.peer, Peer::HungUp) {
            Peer::Connected(_) => {
                let mut w = cx.otherq();
                while let Some(mp) = w.getq() {
                    w.putnext(mp);
                }
                if let Some(m) = bye {
                    w.putnext(m);
                }
            }
            Peer::Connecting(p) => {
                if let Some(m) = bye {
                    let _ = cx.put_to(&p, m);
                }
            }
            Peer::Unconnected | Peer::HungUp => {}
        }
        cx.set_remote(None);
        cx.otherq().set_remote(None);
    }
}
