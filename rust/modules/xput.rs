// SPDX-License-Identifier: GPL-2.0
//! `xput`: a test driver that puts into its own Stream from outside it — from an hrtimer in
//! softirq context, a tasklet or a workqueue — on the clone device `/dev/streams/clone/xput`.
//!
//! It exists to prove the cross-perimeter inbound path under load (issue 11): a [`Producer`]
//! running in the chosen context holds a `QRef` to the driver's read queue and puts numbered
//! M_DATA messages through it (`QRef::put`: the Stream's gate, never its lock), obeying flow
//! control; the reader checks every sequence number arrives once, in order.
//!
//! ```text
//!  producer (softirq / workqueue)               the Stream, under its lock
//!  ------------------------------               ----------------------------------------------
//!  QRef::canput? ── no: refused, stop           rput ─▶ putq ─▶ rsrv ─canputnext─▶ head ─▶ read(2)
//!     │ yes                                      ▲                 (head full: QWANTW, the
//!  QRef::put(M_DATA seq) ─▶ gate ─run─▶ apply ───┘                  head's drain re-enables rsrv)
//!                                                publish (every lock hold): driver rq low and
//!  Perimeter::backenable_in ◀── Side::remote ◀── a writer wants → back-enable the remote
//!     re-arms the producer                       (the producer, as the entry's back link)
//! ```
//!
//! Flow control is the real thing: the producer asks `QRef::canput` before every put and stops
//! when refused; the refusal leaves a "want" mark that the Stream answers with
//! `Perimeter::backenable_in` on the perimeter named by the read queue's back link
//! (`Side::remote`: the producer itself, set with `QCtx::set_remote`, which makes the read queue
//! an *entry* whose flow control the Stream publishes: `perim/flow.rs`). The producer's
//! `backenable_in` re-arms it. It starts only after the lock hold that linked it, when the
//! Stream has published the new entry's flow control: the driver has it run after the unlock
//! (`QCtx::run_later`; the producer's `Perimeter::run` arms it). The read queue's service
//! procedure passes messages up with
//! `canputnext`, so the head's flow control and its back-enable chain take part too.
//!
//! Ownership, and why close is safe: the Stream owns the producer (the read queue's link is
//! its only counted reference) and the producer owns its timer, tasklet or work item (first
//! field: dropped, cancelled synchronously, before the rest) and a `QRef` to the Stream. The
//! driver instance owns only the run's counters ([`Tally`]). At close the driver unlinks the
//! producer; the Stream releases the link after its lock is dropped (`Later`), so the
//! producer's drop — cancel and wait — runs in process context outside every Stream lock, and
//! its `QRef` is never the last reference to the Stream dropped in softirq context (the
//! closing file holds one). After the drop nothing of the run can execute. Puts that race with
//! the close land on the inbound list (freed by the gate's close) or are refused by the closed
//! gate (the producer frees the message); the drop shows the latter once more on purpose
//! (a last put, refused and counted in [`XPUT_IOC_STATS`]).
//!
//! Ioctls (I_STR): [`XPUT_IOC_START`] with an [`XputReq`] starts the one run of this Stream
//! (EBUSY for a second, EINVAL for a bad request); [`XPUT_IOC_STATS`] answers with the
//! counters (`NSTATS` native-endian u64 words, see [`Xput::stats`]). Written data is freed;
//! M_FLUSH follows the driver rules (`sloop::driver_flush`).

use core::pin::Pin;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed, Ordering::SeqCst};

use kernel::prelude::*;
use kernel::sync::Arc;

use crate::box_dyn;
use crate::dwork::DelayedWork;
use crate::errno::Errno;
use crate::msg::{Msg, M_DATA, M_FLUSH, M_IOCACK, M_IOCNAK, M_IOCTL};
use crate::queue::INFPSZ;
use crate::sloop::driver_flush;
use crate::softirq::{SoftTimer, Softirq, Tasklet};
use crate::sth::{IocBlk, IOCBLK_SIZE};
use crate::stream::{
    ModuleInfo, OpenArgs, Perimeter, QCtx, QRef, QueueId, StreamModule, StreamTab,
};
use crate::sys::Box;

/// I_STR: start the run (`'x' << 8 | 1`, data: [`XputReq`]).
pub(crate) const XPUT_IOC_START: i32 = (b'x' as i32) << 8 | 1;
/// I_STR: read the counters (`'x' << 8 | 2`, data: room for `NSTATS` u64 words).
pub(crate) const XPUT_IOC_STATS: i32 = (b'x' as i32) << 8 | 2;

/// Watermarks of xput's queues (the read queue is the flow-controlled entry).
const XPUT_HIWAT: usize = 8192;
const XPUT_LOWAT: usize = 2048;
/// Most messages one callback puts before it re-arms (a softirq must not run for long).
const BATCH: u32 = 32;
/// Re-arm delay of the hrtimer producer.
const PERIOD_NS: u64 = 20_000;
/// Message sizes: the 8-byte sequence number, then filler.
const MIN_SIZE: usize = 8;
const MAX_SIZE: usize = 4096;
/// Words of the [`XPUT_IOC_STATS`] answer.
const NSTATS: usize = 12;

/// Producers alive (every xput Stream): 0 once every run's Stream is closed.
static LIVE: AtomicU64 = AtomicU64::new(0);
/// Puts after close refused by the gate (the message freed by the producer).
static CLOSED_REFUSED: AtomicU64 = AtomicU64::new(0);
/// Puts after close the gate took (a bug: must stay 0).
static CLOSED_ACCEPTED: AtomicU64 = AtomicU64::new(0);

/// Where the producer runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// An hrtimer in softirq context (`HRTIMER_MODE_REL_SOFT`), re-armed every `PERIOD_NS`.
    Hrtimer = 1,
    /// A tasklet (softirq), rescheduled after each batch.
    Tasklet = 2,
    /// A work item on the system workqueue (process context), queued again after each batch.
    Workqueue = 3,
}

/// The [`XPUT_IOC_START`] request (16 bytes, native endian): `count: u64`, `mode: u32`
/// (1 hrtimer, 2 tasklet, 3 workqueue), `size: u32` (bytes per message, 8 to 4096).
struct XputReq {
    count: u64,
    mode: Mode,
    size: usize,
}

impl XputReq {
    /// Decode and check a request (EINVAL if short or out of range).
    fn decode(b: &[u8]) -> Result<XputReq, Errno> {
        let word = |r: core::ops::Range<usize>| b.get(r).ok_or(Errno::EINVAL);
        let count = u64::from_ne_bytes(word(0..8)?.try_into().map_err(|_| Errno::EINVAL)?);
        let mode = u32::from_ne_bytes(word(8..12)?.try_into().map_err(|_| Errno::EINVAL)?);
        let size = u32::from_ne_bytes(word(12..16)?.try_into().map_err(|_| Errno::EINVAL)?);
        let mode = match mode {
            1 => Mode::Hrtimer,
            2 => Mode::Tasklet,
            3 => Mode::Workqueue,
            _ => return Err(Errno::EINVAL),
        };
        let size = usize::try_from(size).map_err(|_| Errno::EINVAL)?;
        if count == 0 || !(MIN_SIZE..=MAX_SIZE).contains(&size) {
            return Err(Errno::EINVAL);
        }
        Ok(XputReq { count, mode, size })
    }
}

/// `Tally::state`: producing.
const RUNNING: u32 = 1;
/// `Tally::state`: every message was put.
const DONE: u32 = 2;
/// `Tally::state`: stopped before the end (the Stream closed).
const STOPPED: u32 = 3;

/// The counters of a run, shared by the producer (any context) and the driver instance
/// (under the Stream lock): atomics only, so either may drop the last reference anywhere.
struct Tally {
    state: AtomicU32,
    /// Messages the gate took.
    sent: AtomicU64,
    /// `canput` refusals (each one waits for a back-enable).
    refused: AtomicU64,
    /// Back-enables received (`Perimeter::backenable_in`).
    backenables: AtomicU64,
    /// Callbacks run.
    fires: AtomicU64,
    /// Messages that could not be allocated (retried at the next callback).
    nomem: AtomicU64,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            state: AtomicU32::new(RUNNING),
            sent: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            backenables: AtomicU64::new(0),
            fires: AtomicU64::new(0),
            nomem: AtomicU64::new(0),
        }
    }

    fn running(&self) -> bool {
        self.state.load(SeqCst) == RUNNING
    }

    /// Stop a running producer (a finished one stays DONE).
    fn stop(&self) {
        let _ = self
            .state
            .compare_exchange(RUNNING, STOPPED, SeqCst, SeqCst);
    }
}

/// What runs the producer's callback.
enum Kick {
    Timer(SoftTimer<Producer>),
    Tasklet(Tasklet<Producer>),
    Work(DelayedWork<Producer>),
}

impl Kick {
    /// The runner of `mode` for the producer at `obj`.
    ///
    /// # Safety
    /// `obj` outlives the returned value (it is a field of `*obj`, dropped before the fields
    /// the callback uses).
    unsafe fn new(mode: Mode, obj: *const Producer) -> Result<Kick, Errno> {
        Ok(match mode {
            // SAFETY: the caller guarantees that `obj` outlives the timer.
            Mode::Hrtimer => Kick::Timer(unsafe { SoftTimer::new(obj) }?),
            // SAFETY: the caller guarantees that `obj` outlives the tasklet.
            Mode::Tasklet => Kick::Tasklet(unsafe { Tasklet::new(obj) }?),
            // SAFETY: the caller guarantees that `obj` outlives the work item.
            Mode::Workqueue => Kick::Work(unsafe { DelayedWork::new_atomic(Producer::fire, obj) }?),
        })
    }

    /// Run the callback (again) soon. Any context but hard interrupts, the callback included.
    fn arm(&self) {
        match self {
            Kick::Timer(t) => t.start(PERIOD_NS),
            Kick::Tasklet(t) => t.schedule(),
            Kick::Work(w) => w.arm(0),
        }
    }
}

/// Counts a live producer from its creation to the end of its drop (the last field).
struct Live;

impl Live {
    fn new() -> Live {
        LIVE.fetch_add(1, SeqCst);
        Live
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        LIVE.fetch_sub(1, SeqCst);
    }
}

/// The producer of a run (see the module docs). It is also the perimeter the read queue's
/// back link names, so that the Stream's back-enables reach it.
#[pin_data(PinnedDrop)]
struct Producer {
    /// Runs [`Producer::fire`]. First: dropped (cancelled, waiting for a running callback)
    /// before the fields the callback uses.
    kick: Kick,
    /// The driver's read queue. Kept until the drop (process context), so the callback never
    /// drops a reference to the Stream.
    target: QRef,
    tally: Arc<Tally>,
    /// Messages to put, and their size.
    count: u64,
    size: usize,
    /// The next sequence number. Only the callback changes it, and a callback never runs on
    /// two CPUs at once (hrtimer, tasklet and workqueue each guarantee it).
    next: AtomicU64,
    /// Last: the producer counts as gone once everything else is.
    _live: Live,
}

impl Producer {
    /// A producer for `req`, not armed, putting into `target`. Atomic allocations only (under
    /// the Stream lock).
    fn new(req: &XputReq, target: QRef, tally: Arc<Tally>) -> Result<Arc<Producer>, Errno> {
        let mode = req.mode;
        let init = try_pin_init!(&this in Producer {
            // SAFETY: `kick` is a field of `*this`, which lives pinned in its `Arc` and drops
            // `kick` first; nothing arms it before the initialisation is complete.
            kick: unsafe { Kick::new(mode, this.as_ptr().cast_const()) }
                .map_err(|_| kernel::error::code::ENOMEM)?,
            target,
            tally,
            count: req.count,
            size: req.size,
            next: AtomicU64::new(0),
            _live: Live::new(),
        });
        Arc::pin_init(init, GFP_ATOMIC).map_err(|_| Errno::ENOSR)
    }

    /// Message `seq`: the sequence number, then `size - 8` bytes of its low byte.
    fn message(&self, seq: u64) -> Result<Msg, Errno> {
        let mut mp = Msg::with_type(M_DATA, self.size)?;
        if let Some(b) = mp.spare_mut().and_then(|b| b.get_mut(..self.size)) {
            b.fill(seq as u8);
            if let Some(h) = b.get_mut(..8) {
                h.copy_from_slice(&seq.to_ne_bytes());
            }
        }
        mp.adj_wptr(self.size);
        Ok(mp)
    }

    /// The callback (softirq context, or the workqueue): put up to `BATCH` messages while flow
    /// control allows, then re-arm — unless refused (the back-enable re-arms), finished or
    /// stopped.
    fn fire(&self) {
        self.tally.fires.fetch_add(1, Relaxed);
        for _ in 0..BATCH {
            if !self.tally.running() {
                return;
            }
            let seq = self.next.load(SeqCst);
            if seq >= self.count {
                let _ = self
                    .tally
                    .state
                    .compare_exchange(RUNNING, DONE, SeqCst, SeqCst);
                return;
            }
            if !self.target.canput() {
                self.tally.refused.fetch_add(1, Relaxed);
                return;
            }
            let Ok(mp) = self.message(seq) else {
                self.tally.nomem.fetch_add(1, Relaxed);
                break;
            };
            if let Err(mp) = self.target.put(mp) {
                drop(mp); // the Stream closed under us
                self.tally.stop();
                return;
            }
            self.next.store(seq + 1, SeqCst);
            self.tally.sent.fetch_add(1, Relaxed);
        }
        self.kick.arm();
    }
}

#[pinned_drop]
impl PinnedDrop for Producer {
    /// The Stream closed (this runs after its lock hold released the link: process context,
    /// no lock). Stop, and show that the closed gate refuses a put; then the fields drop:
    /// `kick` first, which cancels the callback and waits for it.
    fn drop(self: Pin<&mut Self>) {
        self.tally.stop();
        let seq = self.next.load(SeqCst);
        if let Ok(mp) = self.message(seq) {
            match self.target.put(mp) {
                Err(mp) => {
                    drop(mp);
                    CLOSED_REFUSED.fetch_add(1, SeqCst);
                }
                Ok(()) => {
                    CLOSED_ACCEPTED.fetch_add(1, SeqCst);
                }
            }
        }
    }
}

impl Softirq for Producer {
    fn softirq(&self) {
        self.fire()
    }
}

impl Perimeter for Producer {
    /// Nothing is put into a producer.
    fn put_in(&self, _q: QueueId, mp: Msg) -> Result<bool, Msg> {
        Err(mp)
    }

    /// The Stream's read queue drained after a refusal (called under the Stream lock): go on.
    fn backenable_in(&self, _q: QueueId, _band: u8) -> bool {
        self.tally.backenables.fetch_add(1, Relaxed);
        if self.tally.running() {
            self.kick.arm();
        }
        false // never claimed: nothing to run
    }

    fn bcanput_in(&self, _q: QueueId, _band: u8) -> bool {
        true
    }

    /// Start: the lock hold of [`XPUT_IOC_START`] is over (`QCtx::run_later`), so the read
    /// queue's flow control is published. Process context, no Stream lock.
    fn run(&self, _depth: u32) {
        if self.tally.running() {
            self.kick.arm();
        }
    }

    /// Start, when the run cannot wait for the unlock (a full `Later` list, too deep a
    /// nesting): the same, a little early. The reference dropped here is never the last (the
    /// read queue's link holds one until the Stream's close, which releases it after unlocking).
    fn schedule(self: Arc<Self>) {
        self.run(0);
    }
}

/// An xput driver instance (the state of its Stream, under the Stream lock).
struct Xput {
    /// The run's counters, once started.
    tally: Option<Arc<Tally>>,
    mode: u32,
    /// The sequence number expected next at the read put procedure.
    expect: u64,
    /// Messages the read put procedure got, and how many of them were not the one expected.
    received: u64,
    misordered: u64,
}

impl Xput {
    /// [`XPUT_IOC_START`]: make the producer, link it as the read queue's back link, arm it.
    fn start(&mut self, cx: &mut QCtx<'_>, req: &[u8]) -> Result<(), Errno> {
        if self.tally.is_some() {
            return Err(Errno::EBUSY);
        }
        let req = XputReq::decode(req)?;
        let mut rq = cx.otherq();
        let target = rq.qref_here().ok_or(Errno::ENXIO)?;
        let tally = Arc::new(Tally::new(), GFP_ATOMIC).map_err(|_| Errno::ENOSR)?;
        let p = Producer::new(&req, target, tally.clone())?;
        // From here nothing fails: the producer is never dropped under this lock.
        let link: Arc<dyn Perimeter> = p;
        let qid = rq.qid();
        rq.set_remote(Some(QRef::new(link.clone(), qid)));
        // Start it once this lock hold has published the new entry's flow control (before
        // that, `canput` would not limit it): `Perimeter::run` after the unlock arms it.
        rq.run_later(link);
        self.tally = Some(tally);
        self.mode = req.mode as u32;
        Ok(())
    }

    /// The [`XPUT_IOC_STATS`] words: state (0 not started, 1 running, 2 done, 3 stopped), mode,
    /// sent, refused, back-enables, callbacks, allocation failures, received by the read put
    /// procedure, received out of order; then for all xput Streams: producers alive, puts
    /// after close refused, puts after close accepted.
    fn stats(&self) -> [u64; NSTATS] {
        let t = |f: fn(&Tally) -> &AtomicU64| self.tally.as_ref().map_or(0, |t| f(t).load(SeqCst));
        [
            self.tally
                .as_ref()
                .map_or(0, |t| u64::from(t.state.load(SeqCst))),
            u64::from(self.mode),
            t(|t| &t.sent),
            t(|t| &t.refused),
            t(|t| &t.backenables),
            t(|t| &t.fires),
            t(|t| &t.nomem),
            self.received,
            self.misordered,
            LIVE.load(SeqCst),
            CLOSED_REFUSED.load(SeqCst),
            CLOSED_ACCEPTED.load(SeqCst),
        ]
    }

    /// Write the counters into the ioctl's data; the bytes written.
    fn write_stats(&self, mp: &mut Msg) -> Result<u32, Errno> {
        let words = self.stats();
        let Some(d) = mp.cont_mut() else {
            return Err(Errno::EINVAL);
        };
        d.make_writable()?;
        let out = d.rd_mut().ok_or(Errno::EINVAL)?;
        let mut n = 0usize;
        for (dst, w) in out.chunks_exact_mut(8).zip(words.iter()) {
            dst.copy_from_slice(&w.to_ne_bytes());
            n += 8;
        }
        u32::try_from(n).map_err(|_| Errno::EINVAL)
    }

    /// Answer an M_IOCTL: ACK with the bytes of data returned, or NAK with the error.
    fn ioctl(&mut self, cx: &mut QCtx<'_>, mut mp: Msg) {
        let Some(mut ioc) = IocBlk::decode(mp.rd()) else {
            return;
        };
        let r = match ioc.cmd {
            XPUT_IOC_START => {
                let req = mp.cont().map_or(&[][..], |d| d.rd());
                self.start(cx, req).map(|()| 0)
            }
            XPUT_IOC_STATS => self.write_stats(&mut mp),
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

    /// Check the sequence number of a message from the producer.
    fn check(&mut self, mp: &Msg) {
        let seq = mp
            .rd()
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_ne_bytes);
        self.received += 1;
        if seq != Some(self.expect) {
            self.misordered += 1;
        }
        if let Some(s) = seq {
            self.expect = s.wrapping_add(1);
        }
    }
}

impl StreamModule for Xput {
    fn wput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        let ty = mp.db_type();
        if ty == M_IOCTL {
            self.ioctl(cx, mp);
        } else if ty == M_FLUSH {
            driver_flush(cx, mp, false);
        }
        // Written data: freed (the test only reads).
    }

    /// What the producer put (applied from the gate under the Stream lock).
    fn rput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        if mp.db_type() == M_DATA {
            self.check(&mp);
        }
        let queued = cx.queue().is_some_and(|q| !q.is_empty());
        if mp.is_hipri() || (!queued && cx.bcanputnext(mp.band())) {
            cx.putnext(mp);
        } else if let Err(mp) = cx.putq(mp) {
            drop(mp); // no memory for the queue entry
        }
    }

    /// Back-enabled when the head drained: pass up what the head takes.
    fn rsrv(&mut self, cx: &mut QCtx<'_>) {
        while let Some(mp) = cx.getq() {
            if mp.is_hipri() || cx.bcanputnext(mp.band()) {
                cx.putnext(mp);
            } else {
                if let Err(mp) = cx.putbq(mp) {
                    drop(mp);
                }
                break;
            }
        }
    }

    fn has_rsrv(&self) -> bool {
        true
    }

    /// Stop the run and let go of the producer: the Stream releases the link after its lock
    /// is dropped, and the producer's drop cancels its callback there.
    fn close(&mut self, cx: &mut QCtx<'_>) {
        if let Some(t) = &self.tally {
            t.stop();
        }
        cx.set_remote(None);
    }
}

fn xput_open(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(Xput {
        tally: None,
        mode: 0,
        expect: 0,
        received: 0,
        misordered: 0,
    } => dyn StreamModule)?)
}

/// The xput driver's streamtab.
pub(crate) static XPUT: StreamTab = StreamTab {
    info: ModuleInfo {
        mi_idnum: 0x5105,
        mi_idname: "xput",
        mi_minpsz: 0,
        mi_maxpsz: INFPSZ,
        mi_hiwat: XPUT_HIWAT,
        mi_lowat: XPUT_LOWAT,
    },
    open: xput_open,
};
