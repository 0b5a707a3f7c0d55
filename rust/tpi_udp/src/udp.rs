//! The `udp` STREAMS driver: a T_CLTS transport provider over a [`Net`], one endpoint per
//! Stream (`/dev/streams/clone/udp` in the kernel).
//!
//! ```text
//!  head ─wq─▶ udp wput: T_*_REQ ── T_UNITDATA_REQ ── Port::send ─▶ network
//!                 │ EAGAIN: putq, noenable; Rx::write_space back-enables wsrv, which resends
//!                 └─ T_BIND_REQ: TS_WACK_BREQ, the Binder runs after the unlock (jobs.rs)
//!  head ◀─rq─ udp rsrv ◀─ rput ◀─ gate ◀─ QRef::put ◀─ Rx::datagram/uderror, the binder's M_CTL
//!  putmsg ── (armed: no Stream lock) UdpTx::send ── Port::send_unlocked ─▶ network
//!                 published/withdrawn by sync_tx at the end of each procedure (express.rs)
//! ```
//!
//! Read-side flow control is the queues': the read queue has a service procedure and is the
//! Stream's entry for the port (its back link is an [`RxLink`]), so the Stream publishes its
//! QFULL state and [`Rx::datagram`] drops (and counts) what arrives while it is full. Its
//! high-water mark is XTI_RCVBUF. Memory held for a reader that never reads is therefore
//! bounded by the read queue's and the head's high-water marks.
//!
//! Owned outside the lock (see `jobs.rs`): the bound port ([`Held`], released through `Later`
//! at unbind and close), the binder (made at open). Owned by the instance: the options, the
//! state, the counters (shared with the port's [`Rx`]), an M_ERROR allocated at open so that a
//! fatal error can always be reported.

use core::sync::atomic::Ordering::{Relaxed, SeqCst};

use streams_core::box_dyn;
use streams_core::errno::Errno;
use streams_core::msg::{Msg, M_CTL, M_DATA, M_ERROR, M_FLUSH, M_IOCACK, M_IOCNAK, M_IOCTL};
use streams_core::msg::{M_PCPROTO, M_PROTO};
use streams_core::perim::express_send::ExpressTx;
use streams_core::queue::{QField, FLUSHDATA};
use streams_core::sth::consts::{FLUSHBAND, FLUSHR, FLUSHRW, FLUSHW};
use streams_core::sth::{IocBlk, IOCBLK_SIZE};
use streams_core::stream::{
    ModuleInfo, OpenArgs, Pass, Perimeter, QCtx, QRef, StreamModule, StreamTab,
};
use streams_core::sys::{self, Arc, Box};

use super::express::{self, UdpTx};
use super::jobs::{BindWork, Binder, Held, RxLink};
use super::net::{self, BindReq, Inet4, Net, Port, Received, Rx, Stats, NSTATS};
use super::opt::{self, Opts, T_NEGOTIATE};
use super::prim::{self, Bad, Info, Req};
use super::state::{check, TpiState, Verdict};

/// I_STR command: read the endpoint's counters (`'U' << 8 | 1`). The answer is up to
/// [`NSTATS`] native-endian `u64` words (as many as the caller's buffer holds): received,
/// dropped for flow control, dropped for want of memory, sent, send errors, T_UDERROR_IND for
/// ICMP errors, dropped after unbind/close.
pub const UDP_IOC_STATS: i32 = (b'U' as i32) << 8 | 1;

/// Largest datagram over IPv4 (65535 - 20 - 8).
pub const TSDU_SIZE: i32 = 65507;
/// Module id of `udp`.
pub const UDP_ID: u16 = 0x5111;
/// The direct driver's name.
pub const UDP_NAME: &str = "udp";
/// Module id of `xtiso-udp`.
pub const XTISO_ID: u16 = 0x5112;
/// The name of the driver over queued ports (XTI over sockets, [`Port::QUEUED`]).
pub const XTISO_NAME: &str = "xtiso-udp";
/// Low-water mark of both queues (the high one is XTI_RCVBUF's default).
const LOWAT: usize = 16384;
/// The M_CTL that says a bind finished (and the block it is reused as: a T_BIND_ACK or
/// T_ERROR_ACK fits).
const BIND_NOTE: &[u8; 4] = b"tpiB";
const NOTE_ROOM: usize = 64;

/// The driver's streamtab for network `N`, named `name` with module id `id`
/// (`static UDP: StreamTab = streamtab::<KernelNet>(UDP_NAME, UDP_ID)`).
pub const fn streamtab<N: Net>(name: &'static str, id: u16) -> StreamTab {
    StreamTab {
        info: ModuleInfo {
            mi_idnum: id,
            mi_idname: name,
            mi_minpsz: 0,
            mi_maxpsz: streams_core::queue::INFPSZ,
            mi_hiwat: opt::BUF_DEFAULT as usize,
            mi_lowat: LOWAT,
        },
        open: udp_open::<N>,
    }
}

/// One endpoint (the instance of the driver's queue pair).
struct Udp<N: Net> {
    state: TpiState,
    opener: Arc<N::Opener>,
    privileged: bool,
    /// The bound port (TS_IDLE).
    port: Option<Arc<Held<N>>>,
    binder: Arc<Binder<N>>,
    opts: Opts,
    stats: Arc<Stats>,
    /// A send got EAGAIN: datagrams wait on the write queue for `Rx::write_space`.
    blocked: bool,
    /// For a fatal error (allocated at open; sent once).
    merror: Option<Msg>,
    /// An express send is published (`express.rs`).
    tx_live: bool,
    /// The options changed since it was published (it must be made again).
    tx_stale: bool,
}

fn udp_open<N: Net>(cx: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    let opener = N::opener()?;
    let privileged = N::privileged(&opener);
    let opener = sys::new_arc(opener).map_err(|_| Errno::ENOSR)?;
    let binder = Binder::<N>::new()?;
    let stats = sys::new_arc(Stats::default()).map_err(|_| Errno::ENOSR)?;
    let merror = Msg::with_type(M_ERROR, 2).map_err(|_| Errno::ENOSR)?;
    let link: Arc<dyn Perimeter> = sys::new_arc(RxLink).map_err(|_| Errno::ENOSR)?;
    let udp = box_dyn!(Udp::<N> {
        state: TpiState::Unbnd,
        opener,
        privileged,
        port: None,
        binder,
        opts: Opts::DEFAULT,
        stats,
        blocked: false,
        merror: Some(merror),
        tx_live: false,
        tx_stale: false,
    } => dyn StreamModule)?;
    // The read queue is the entry the port's Rx puts into: give it a back link so that the
    // Stream publishes its flow control (`perim/flow.rs`).
    let qid = cx.qid();
    cx.set_remote(Some(QRef::new(link, qid)));
    Ok(udp)
}

/// Rewrite `mp` in place as `bytes` of type `ty` when its block can hold them (so that an
/// acknowledgement never fails for want of memory), else allocate.
fn reuse(mut mp: Msg, ty: streams_core::msg::MsgType, bytes: &[u8]) -> Option<Msg> {
    drop(mp.unlinkb());
    if !mp.is_shared() && mp.capacity() >= bytes.len() {
        mp.reset();
        mp.append(bytes);
        mp.set_type(ty);
        mp.set_band(0);
        return Some(mp);
    }
    Msg::from_bytes(ty, bytes).ok()
}

/// T_ERROR_ACK for `prim`, in `mp`'s block if it can.
fn error_ack(mp: Msg, prim: i32, tli: i32, unix: i32) -> Option<Msg> {
    let mut b = [0u8; 16];
    for (d, w) in b
        .chunks_exact_mut(4)
        .zip([prim::T_ERROR_ACK, prim, tli, unix])
    {
        d.copy_from_slice(&w.to_ne_bytes());
    }
    reuse(mp, M_PCPROTO, &b)
}

/// T_OK_ACK for `prim`, in `mp`'s block if it can.
fn ok_ack(mp: Msg, prim: i32) -> Option<Msg> {
    let mut b = [0u8; 8];
    for (d, w) in b.chunks_exact_mut(4).zip([prim::T_OK_ACK, prim]) {
        d.copy_from_slice(&w.to_ne_bytes());
    }
    reuse(mp, M_PCPROTO, &b)
}

/// Send `mp` (if any) up from the write side.
fn reply(cx: &mut QCtx<'_>, mp: Option<Msg>) {
    if let Some(mp) = mp {
        cx.qreply(mp);
    }
}

impl<N: Net> Udp<N> {
    /// At the end of each procedure: publish the express send (`express.rs`) while the
    /// endpoint is in TS_IDLE with nothing waiting for send buffer space, made with the
    /// current options; withdraw it otherwise. `cx`: either queue's context (the path is the
    /// write queue's).
    // Out of line: the procedures it ends stay small (their message frees inline).
    #[inline(never)]
    fn sync_tx(&mut self, cx: &mut QCtx<'_>) {
        if self.tx_wanted() == self.tx_live && !self.tx_stale {
            return; // the common case: published and unchanged, or neither
        }
        match cx.is_read() {
            true => self.publish_tx(&mut cx.otherq()),
            false => self.publish_tx(cx),
        }
    }

    /// Whether the express send should be published now.
    #[inline]
    fn tx_wanted(&self) -> bool {
        express::can_publish::<N>() && self.state == TpiState::Idle && !self.blocked
    }

    /// [`Udp::sync_tx`] on the write queue's context `wq`, when something changed.
    #[cold]
    #[inline(never)]
    fn publish_tx(&mut self, wq: &mut QCtx<'_>) {
        let want = self.tx_wanted();
        self.tx_stale = false;
        let tx = match &self.port {
            Some(held) if want => sys::new_arc(UdpTx::<N> {
                held: held.clone(),
                opts: self.opts,
                stats: self.stats.clone(),
            })
            .ok(),
            _ => None,
        };
        // No memory: none published (the locked path sends everything).
        self.tx_live = tx.is_some();
        wq.set_express_tx(tx.map(|tx| -> Arc<dyn ExpressTx> { tx }));
    }

    /// A fatal protocol error: M_ERROR `err` on both sides (once).
    fn fatal(&mut self, cx: &mut QCtx<'_>, err: Errno) {
        if let Some(mut m) = self.merror.take() {
            m.append(&[err.0 as u8, err.0 as u8]);
            cx.qreply(m);
        }
    }

    /// Reply T_UDERROR_IND for a datagram to `dest` that could not be sent.
    fn uderror(&mut self, cx: &mut QCtx<'_>, dest: &[u8], error: i32) {
        self.stats.send_errors.fetch_add(1, Relaxed);
        reply(cx, prim::uderror_ind(dest, error));
    }

    /// An M_PROTO/M_PCPROTO from the user (write side).
    fn proto(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        let Some(ty) = prim::prim_type(mp.rd()) else {
            return self.fatal(cx, Errno::EPROTO);
        };
        match check(ty, self.state) {
            Verdict::Ok => {}
            Verdict::OutState => return reply(cx, error_ack(mp, ty, prim::TOUTSTATE, 0)),
            Verdict::Fatal => return self.fatal(cx, Errno::EPROTO),
            Verdict::NotSupported => return reply(cx, error_ack(mp, ty, prim::TNOTSUPPORT, 0)),
        }
        if ty == prim::T_UNITDATA_REQ {
            let waiting = cx.queue().is_some_and(|q| !q.is_empty());
            if waiting || self.blocked {
                if let Err(mp) = cx.putq(mp) {
                    drop(mp);
                    self.stats.send_errors.fetch_add(1, Relaxed);
                }
            } else if let Some(mp) = self.unitdata(cx, mp) {
                self.block(cx, mp);
            }
            return;
        }
        match Req::decode(mp.rd()) {
            Ok(Some(Req::Info)) => self.info(cx, mp),
            Ok(Some(Req::Addr)) => self.addr(cx, mp),
            Ok(Some(Req::Bind { addr, .. })) => {
                let local = if addr.is_empty() {
                    Some(Inet4::default())
                } else {
                    Inet4::decode(addr)
                };
                self.bind(cx, mp, local)
            }
            Ok(Some(Req::Unbind)) => self.unbind(cx, mp),
            Ok(Some(Req::Optmgmt { opt, flags })) => {
                let r = opt::manage(&self.opts, opt, flags);
                self.optmgmt(cx, mp, r, flags)
            }
            Ok(Some(_)) | Ok(None) => reply(cx, error_ack(mp, ty, prim::TNOTSUPPORT, 0)),
            Err((_, Bad::Short)) => {
                reply(cx, error_ack(mp, ty, prim::TSYSERR, Errno::EINVAL.0));
            }
            Err((_, Bad::Range)) => {
                let tli = match ty {
                    prim::T_BIND_REQ => prim::TBADADDR,
                    _ => prim::TBADOPT,
                };
                reply(cx, error_ack(mp, ty, tli, 0));
            }
        }
    }

    fn info(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        let info = Info {
            tsdu: TSDU_SIZE,
            etsdu: prim::T_INVALID,
            cdata: prim::T_INVALID,
            ddata: prim::T_INVALID,
            addr: super::addr::SOCKADDR_IN as i32,
            opt: opt::OPT_SIZE as i32,
            tidu: TSDU_SIZE,
            serv: prim::T_CLTS,
            state: self.state.ts(),
            flags: prim::T_SNDZERO | prim::T_XPG4_1,
        };
        match info.encode() {
            Some(m) => cx.qreply(m),
            None => reply(
                cx,
                error_ack(mp, prim::T_INFO_REQ, prim::TSYSERR, Errno::ENOSR.0),
            ),
        }
    }

    fn local(&self) -> Option<Inet4> {
        self.port.as_ref().map(|h| h.port.local())
    }

    fn addr(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        let a = self.local().map(|a| a.encode());
        match prim::addr_ack(a.as_ref().map_or(&[][..], |a| &a[..])) {
            Some(m) => cx.qreply(m),
            None => reply(
                cx,
                error_ack(mp, prim::T_ADDR_REQ, prim::TSYSERR, Errno::ENOSR.0),
            ),
        }
    }

    /// T_BIND_REQ (TS_UNBND): check, then leave the bind to the binder after the unlock.
    fn bind(&mut self, cx: &mut QCtx<'_>, mp: Msg, local: Option<Inet4>) {
        const B: i32 = prim::T_BIND_REQ;
        let Some(local) = local else {
            return reply(cx, error_ack(mp, B, prim::TBADADDR, 0));
        };
        if local.port != 0 && local.port < 1024 && !self.privileged {
            return reply(cx, error_ack(mp, B, prim::TACCES, 0));
        }
        let rq = cx.otherq().qref_here();
        let (Some(rq), Some(wq)) = (rq, cx.qref_here()) else {
            return reply(cx, error_ack(mp, B, prim::TSYSERR, Errno::ENXIO.0));
        };
        let Ok(mut note) = Msg::with_type(M_CTL, NOTE_ROOM) else {
            return reply(cx, error_ack(mp, B, prim::TSYSERR, Errno::ENOSR.0));
        };
        note.append(BIND_NOTE);
        let rx = Rx {
            rq: rq.clone(),
            wq,
            stats: self.stats.clone(),
            binding: self.stats.binding.load(SeqCst),
        };
        let req = BindReq {
            local,
            reuseaddr: self.opts.reuseaddr,
            broadcast: self.opts.broadcast,
            sndbuf: self.opts.sndbuf as usize,
            rcvbuf: self.opts.rcvbuf as usize,
        };
        self.binder.state.lock().work = Some(BindWork {
            opener: self.opener.clone(),
            req,
            rx,
            done: rq,
            note,
        });
        self.set_state(cx, TpiState::WackBreq);
        drop(mp);
        let job: Arc<dyn Perimeter> = self.binder.clone();
        cx.run_later(job);
    }

    /// The binder's M_CTL (read side): T_BIND_ACK or T_ERROR_ACK, and the state change.
    fn bind_done(&mut self, cx: &mut QCtx<'_>, note: Msg) {
        let Some(r) = self.binder.take() else {
            return;
        };
        if self.state != TpiState::WackBreq {
            if let Ok(h) = r {
                let job: Arc<dyn Perimeter> = h;
                cx.run_later(job);
            }
            return;
        }
        let ack = match r {
            Ok(h) => {
                let a = h.port.local().encode();
                self.port = Some(h);
                self.set_state(cx, TpiState::Idle);
                if <N::Port as Port>::QUEUED {
                    // What arrived before the acknowledgement waits in the port: take it.
                    cx.qenable();
                }
                let mut b = [0u8; 32];
                for (d, w) in b.chunks_exact_mut(4).zip([prim::T_BIND_ACK, 16, 16, 0]) {
                    d.copy_from_slice(&w.to_ne_bytes());
                }
                if let Some(d) = b.get_mut(16..32) {
                    d.copy_from_slice(&a);
                }
                reuse(note, M_PCPROTO, &b)
            }
            Err(e) => {
                self.set_state(cx, TpiState::Unbnd);
                let (tli, unix) = e.tpi();
                error_ack(note, prim::T_BIND_REQ, tli, unix)
            }
        };
        if let Some(m) = ack {
            cx.putnext(m);
        }
    }

    /// Enter TPI state `s`. The read put procedure only passes data on in TS_IDLE (it drops
    /// what arrives in any other state, and queues what the head has no room for): the
    /// engine steps over it for data exactly then ([`Pass::Flow`]; a T_UNITDATA_IND then goes
    /// from the inbound list to the head, or to a getmsg's direct take, without the call).
    /// (T_OPTMGMT_REQ's TS_WACK_OPTREQ lasts only within its own put procedure: no put runs
    /// meanwhile, so it keeps the pass.)
    fn set_state(&mut self, cx: &mut QCtx<'_>, s: TpiState) {
        self.state = s;
        cx.set_pass(
            true,
            if s == TpiState::Idle {
                Pass::Flow
            } else {
                Pass::None
            },
        );
    }

    /// Let go of the port (outside the lock) and of what it delivered.
    fn release(&mut self, cx: &mut QCtx<'_>) {
        self.stats.binding.fetch_add(1, SeqCst);
        if let Some(h) = self.port.take() {
            // What the port dropped itself stays counted after it is gone.
            self.stats.dropped_flow.fetch_add(h.port.dropped(), Relaxed);
            let job: Arc<dyn Perimeter> = h;
            cx.run_later(job);
        }
        self.blocked = false;
        cx.enableok();
        cx.flushq(FLUSHDATA);
        cx.otherq().flushq(FLUSHDATA);
    }

    /// T_UNBIND_REQ (TS_IDLE): TS_WACK_UREQ, release, flush the Stream, T_OK_ACK, TS_UNBND.
    fn unbind(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        self.set_state(cx, TpiState::WackUreq);
        self.release(cx);
        if let Ok(mut f) = Msg::with_type(M_FLUSH, 2) {
            f.append(&[FLUSHRW, 0]);
            cx.qreply(f);
        }
        self.set_state(cx, TpiState::Unbnd);
        reply(cx, ok_ack(mp, prim::T_UNBIND_REQ));
    }

    /// T_OPTMGMT_REQ (TS_UNBND or TS_IDLE): answered at once (TS_WACK_OPTREQ meanwhile).
    fn optmgmt(&mut self, cx: &mut QCtx<'_>, mp: Msg, r: Result<opt::Answer, i32>, flags: i32) {
        const O: i32 = prim::T_OPTMGMT_REQ;
        let prev = self.state;
        self.state = TpiState::WackOptreq;
        let ack = match r {
            Err(prim::TSYSERR) => error_ack(mp, O, prim::TSYSERR, Errno::ENOSR.0),
            Err(tli) => error_ack(mp, O, tli, 0),
            Ok(a) => match prim::optmgmt_ack(a.out.bytes().len()) {
                None => error_ack(mp, O, prim::TSYSERR, Errno::ENOSR.0),
                Some(mut b) => {
                    b.part(1, 2, a.out.bytes());
                    b.set(3, a.flags);
                    if flags == T_NEGOTIATE {
                        self.apply(cx, a.opts);
                    }
                    Some(b.msg())
                }
            },
        };
        self.state = prev;
        reply(cx, ack);
    }

    /// Make negotiated options take effect: XTI_RCVBUF is the read queue's high-water mark;
    /// the buffers go to the port.
    fn apply(&mut self, cx: &mut QCtx<'_>, new: Opts) {
        let old = self.opts;
        self.opts = new;
        self.tx_stale |= new != old;
        if new.rcvbuf != old.rcvbuf {
            let hi = new.rcvbuf as usize;
            let mut rq = cx.otherq();
            // Lower first when shrinking, so that lowat <= hiwat throughout.
            let _ = rq.strqset(QField::Lowat, 0, (hi / 4).min(LOWAT));
            let _ = rq.strqset(QField::Hiwat, 0, hi);
        }
        if new.sndbuf != old.sndbuf || new.rcvbuf != old.rcvbuf {
            if let Some(h) = &self.port {
                h.port.set_bufs(new.sndbuf as usize, new.rcvbuf as usize);
            }
        }
    }

    /// T_UNITDATA_REQ (TS_IDLE): send it, or answer T_UDERROR_IND. `Some(mp)`: the port has no
    /// send buffer now (EAGAIN); the caller queues it.
    fn unitdata(&mut self, cx: &mut QCtx<'_>, mut mp: Msg) -> Option<Msg> {
        let (dest, tx) = match check_unitdata(&self.opts, &mp) {
            Ok(checked) => checked,
            Err(Refused::Addr(dest)) => {
                let dest = copy16(dest);
                self.uderror(cx, dest.bytes(), prim::TBADADDR);
                return None;
            }
            Err(Refused::Opt(dest, tli)) => {
                let dest = copy16(dest);
                self.uderror(cx, dest.bytes(), tli);
                return None;
            }
            Err(Refused::Range) => {
                self.uderror(cx, &[], prim::TBADADDR);
                return None;
            }
            Err(Refused::Data(dest)) => {
                self.uderror(cx, &dest.encode(), prim::TBADDATA);
                return None;
            }
            Err(Refused::Fatal) => {
                self.fatal(cx, Errno::EPROTO);
                return None;
            }
        };
        let Some(h) = &self.port else {
            self.fatal(cx, Errno::EPROTO);
            return None;
        };
        let r = match mp.cont() {
            Some(d) => h.port.send(dest, d, &tx),
            None => match Msg::with_type(M_DATA, 0) {
                Ok(empty) => h.port.send(dest, &empty, &tx),
                Err(_) => Err(Errno::ENOSR),
            },
        };
        match r {
            Ok(()) => {
                self.stats.sent.fetch_add(1, Relaxed);
                drop(mp.unlinkb());
                None
            }
            Err(Errno::EAGAIN) => Some(mp),
            Err(e) => {
                self.uderror(cx, &dest.encode(), e.0);
                None
            }
        }
    }

    /// No send buffer: hold `mp` at the front of the write queue until `Rx::write_space`
    /// back-enables it (putq must not schedule the service procedure meanwhile).
    fn block(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        self.blocked = true;
        cx.noenable();
        if let Err(mp) = cx.putbq(mp) {
            drop(mp);
            self.stats.send_errors.fetch_add(1, Relaxed);
        }
    }

    /// Take ICMP errors and datagrams from a queued port while the Stream above has room
    /// (read service procedure, empty read queue): the same T_UDERROR_IND and T_UNITDATA_IND
    /// (options: the received header's TTL and TOS) as a direct port's [`Rx`] makes. When it
    /// has none, its back-enable runs this again; the rest waits in the port (its receive
    /// buffer: XTI_RCVBUF), which drops and counts what overflows it.
    fn drain(&mut self, cx: &mut QCtx<'_>) {
        if self.state != TpiState::Idle {
            return;
        }
        let Some(h) = &self.port else {
            return;
        };
        while cx.bcanputnext(0) {
            match h.port.recv() {
                None => return,
                Some(Err(_)) => {
                    self.stats.dropped_nomem.fetch_add(1, Relaxed);
                }
                Some(Ok(Received::Datagram(src, ip, data))) => {
                    if let Some(mp) = net::unitdata_ind(&self.stats, src, ip.as_ref(), data) {
                        self.stats.received.fetch_add(1, Relaxed);
                        cx.putnext(mp);
                    }
                }
                Some(Ok(Received::Error(dst, errno))) => {
                    if let Some(mp) = net::uderror_ind(&self.stats, dst, errno) {
                        self.stats.uderror.fetch_add(1, Relaxed);
                        cx.putnext(mp);
                    }
                }
            }
        }
    }

    /// M_FLUSH at the bottom of the Stream: flush, and turn FLUSHR around.
    fn flush(&mut self, cx: &mut QCtx<'_>, mut mp: Msg) {
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
            if mp.make_writable().is_ok() {
                if let Some(b) = mp.rd_mut().and_then(|b| b.first_mut()) {
                    *b &= !FLUSHW;
                }
                cx.qreply(mp);
            }
        }
    }

    /// M_IOCTL: [`UDP_IOC_STATS`]; anything else is M_IOCNAK EINVAL.
    fn ioctl(&mut self, cx: &mut QCtx<'_>, mut mp: Msg) {
        let Some(mut ioc) = IocBlk::decode(mp.rd()) else {
            return;
        };
        let mut words = self.stats.words();
        if let (Some(h), Some(w)) = (&self.port, words.get_mut(1)) {
            *w += h.port.dropped();
        }
        let r = match ioc.cmd {
            UDP_IOC_STATS => match mp.cont_mut() {
                Some(d) => {
                    let _ = d.make_writable();
                    let out = d.rd_mut().unwrap_or_default();
                    let mut n = 0usize;
                    for (dst, w) in out.chunks_exact_mut(8).zip(words.iter()).take(NSTATS) {
                        dst.copy_from_slice(&w.to_ne_bytes());
                        n += 8;
                    }
                    Ok(n as u32)
                }
                _ => Err(Errno::EINVAL),
            },
            _ => Err(Errno::EINVAL),
        };
        match r {
            Ok(count) => {
                mp.set_type(M_IOCACK);
                (ioc.count, ioc.rval, ioc.error) = (count, 0, 0);
            }
            Err(e) => {
                mp.set_type(M_IOCNAK);
                (ioc.count, ioc.error) = (0, e.0);
            }
        }
        if mp.make_writable().is_err() {
            return;
        }
        if let Some(b) = mp.rd_mut().and_then(|b| b.get_mut(..IOCBLK_SIZE)) {
            b.copy_from_slice(&ioc.encode());
        }
        cx.qreply(mp);
    }
}

/// Up to 16 bytes of an address part, for an answer (the request block is being reused).
struct Copy16 {
    b: [u8; 16],
    n: usize,
}

impl Copy16 {
    fn bytes(&self) -> &[u8] {
        self.b.get(..self.n).unwrap_or_default()
    }
}

/// Why the locked path does not send a T_UNITDATA_REQ ([`check_unitdata`]), so what it
/// answers: T_UDERROR_IND TBADADDR for the destination as given, its option's TLI error,
/// TBADADDR with no address for a length out of range, TBADDATA to the destination, or the
/// fatal M_ERROR EPROTO for anything else malformed.
pub(crate) enum Refused<'a> {
    Addr(&'a [u8]),
    Opt(&'a [u8], i32),
    Range,
    Data(Inet4),
    Fatal,
}

/// The checks of a T_UNITDATA_REQ `mp` over the endpoint's options `opts` that the locked
/// path (`Udp::unitdata`) and the express send (`express::prepare`) share: its destination
/// and transmit options, when the request is well formed, to a valid address, with valid
/// options and a data part (if any) of M_DATA blocks no larger than a TSDU.
pub(crate) fn check_unitdata<'a>(
    opts: &Opts,
    mp: &'a Msg,
) -> Result<(Inet4, net::TxOpts), Refused<'a>> {
    let (dest, tx) = match Req::decode(mp.rd()) {
        Ok(Some(Req::Unitdata { dest, opt })) => {
            let Some(d) = Inet4::decode(dest).filter(|d| d.port != 0 && !d.is_any()) else {
                return Err(Refused::Addr(dest));
            };
            match opt::unitdata(opts, opt) {
                Ok(tx) => (d, tx),
                Err(tli) => return Err(Refused::Opt(dest, tli)),
            }
        }
        Err((_, Bad::Range)) => return Err(Refused::Range),
        _ => return Err(Refused::Fatal),
    };
    if mp.cont().is_some_and(|d| !is_tsdu(d)) {
        return Err(Refused::Data(dest));
    }
    Ok((dest, tx))
}

/// Whether the data part `d` of a T_UNITDATA_REQ is a TSDU the endpoint sends: M_DATA blocks
/// only, no more than `TSDU_SIZE` bytes. One walk of the blocks (msgdsize and a type test
/// each walked them once per datagram).
fn is_tsdu(d: &Msg) -> bool {
    let mut n = 0usize;
    for b in d.blocks() {
        if b.db_type() != M_DATA {
            return false;
        }
        n = n.saturating_add(b.blen());
    }
    n <= TSDU_SIZE as usize
}

fn copy16(src: &[u8]) -> Copy16 {
    let mut c = Copy16 { b: [0; 16], n: 0 };
    c.n = sys::copy_bytes(&mut c.b, src);
    c
}

impl<N: Net> StreamModule for Udp<N> {
    fn wput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        let ty = mp.db_type();
        if ty == M_PROTO || ty == M_PCPROTO {
            self.proto(cx, mp);
        } else if ty == M_FLUSH {
            self.flush(cx, mp);
        } else if ty == M_IOCTL {
            self.ioctl(cx, mp);
        } else if ty == M_DATA {
            // Data without a T_UNITDATA_REQ: a connectionless provider has no peer for it.
            self.fatal(cx, Errno::EPROTO);
        }
        self.sync_tx(cx);
    }

    /// Resend what waited for send buffer space (back-enabled by `Rx::write_space`).
    fn wsrv(&mut self, cx: &mut QCtx<'_>) {
        self.blocked = false;
        cx.enableok();
        while let Some(mp) = cx.getq() {
            if self.state != TpiState::Idle {
                continue; // unbound meanwhile: the flush would have taken it
            }
            if let Some(mp) = self.unitdata(cx, mp) {
                self.block(cx, mp);
                break;
            }
        }
        self.sync_tx(cx);
    }

    fn has_wsrv(&self) -> bool {
        true
    }

    /// What the port put (T_UNITDATA_IND, T_UDERROR_IND) and the binder's M_CTL.
    fn rput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        if mp.db_type() == M_CTL {
            if mp.rd() == BIND_NOTE {
                self.bind_done(cx, mp);
                self.sync_tx(cx);
            }
            return;
        }
        if self.state != TpiState::Idle {
            self.stats.dropped_closed.fetch_add(1, Relaxed);
            return;
        }
        let queued = cx.queue().is_some_and(|q| !q.is_empty());
        if !queued && cx.bcanputnext(mp.band()) {
            cx.putnext(mp);
        } else if let Err(mp) = cx.putq(mp) {
            drop(mp);
            self.stats.dropped_nomem.fetch_add(1, Relaxed);
        }
    }

    /// The head drained: pass up what it takes; then, for a queued port, what waits there.
    fn rsrv(&mut self, cx: &mut QCtx<'_>) {
        while let Some(mp) = cx.getq() {
            if mp.is_hipri() || cx.bcanputnext(mp.band()) {
                cx.putnext(mp);
            } else {
                if let Err(mp) = cx.putbq(mp) {
                    drop(mp);
                }
                return;
            }
        }
        if <N::Port as Port>::QUEUED {
            self.drain(cx);
        }
    }

    fn has_rsrv(&self) -> bool {
        true
    }

    /// Release the port and a bind in flight after the unlock; drop the back link.
    fn close(&mut self, cx: &mut QCtx<'_>) {
        if let Some(h) = self.binder.close() {
            let job: Arc<dyn Perimeter> = h;
            cx.run_later(job);
        }
        self.release(cx);
        self.set_state(cx, TpiState::Unbnd);
        self.sync_tx(cx);
        cx.set_remote(None);
    }
}
