// SPDX-License-Identifier: GPL-2.0
//! [`StrFile`]: one open STREAMS device file: the Stream (or the end of a STREAMS pipe) it is
//! the head of, the Stream's lock and wait queues, and the system calls that drive the head's
//! state machine (`crate::sth`).
//!
//! ```text
//!   read/write/ioctl/poll ──▶ StrFile::run ──lock──▶ Stream::strread/strwrite/strioctl/…
//!                                 │  Ok / Err(e)  ─▶ unlock, apply HeadEvents, return
//!                                 │  Block(_)     ─▶ apply events, queue on `wq`, unlock, sleep,
//!                                 │                  loop (EAGAIN instead if O_NONBLOCK)
//!                                 └─ after every operation, under the lock: runqueues()
//! ```
//!
//! The waiting loops (`run`, `run_limited`, the close-time drain) are in `strwait.rs`, the
//! data path (read/readv, write/writev) in `strrw.rs`, ioctl decoding in `strioctl.rs`.
//!
//! Locking: one kernel `Mutex` per Stream (the "stream lock" of `docs/concurrency.md`); every
//! executive call runs under it. All callers are in process context, so a mutex is allowed;
//! the executive still allocates with GFP_ATOMIC (`sys.rs`), which is correct under a mutex
//! too and keeps it ready for a spinlock once puts arrive from interrupt context.
//!
//! Service procedures: the only code that enables queues on these Streams runs inside a system
//! call on the same Stream (the sloop driver has no timers or interrupts), so each system call
//! drains the run list (`Stream::runqueues`) under the lock before it returns or sleeps: the
//! "run at syscall exit" half of the scheduler design. No workqueue is needed yet; a driver
//! that enables queues from other contexts needs the `SchedFlag` + workqueue runner.
//!
//! Wakeups: one wait queue per Stream head serves readers, writers, ioctl waiters and pollers;
//! every `WAKE_*` bit wakes all of them and each re-tests its own condition under the lock.
//!
//! Pipes: a STREAMS pipe is one `Stream` with two heads (`sth/pipe.rs`), shared by the two
//! files ([`StrShared`], with a wait queue per end); each file knows its end ([`Link`]). An
//! open of the pipe device gives an unconnected end; `I_PIPE` ([`StrFile::weld`]) replaces the
//! links of two such files by the two ends of a new pipe (claimed by compare-and-swap on
//! their `pipe_state`, never by holding two link locks). Every system call therefore reads
//! the link first (a spinlock and a reference count) and then locks the Stream.
//!
//! Close: a head may have several files (opens of an fattach'ed path, `fattach.rs`) and
//! attachments; `StrShared` counts them per end and the last one's close runs `sth_close`.

use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

use kernel::prelude::*;
use kernel::sync::{Arc, Mutex, SpinLock};

use crate::chardev::{self, CallFile, FileOps, PollTable, O_NONBLOCK};
use crate::dwork::DelayedWork;
use crate::errno::Errno;
use crate::fasync::{FasyncCall, FasyncList, POLL_ERR, POLL_HUP, POLL_IN, POLL_OUT, POLL_PRI};
use crate::sth::consts::*;
use crate::sth::HeadEvents;
use crate::stream::{OpenArgs, Registry, Sflag, Stream, StreamTab};
use crate::iter::IterBuf;
use crate::sth::layout::Model;
use crate::uio::UserBuf;
use crate::waitq::WaitQueue;

/// SIGPIPE.
const SIGPIPE: i32 = 13;
/// SIGURG.
const SIGURG: i32 = 23;
/// SIGPOLL (SIGIO on Linux).
const SIGPOLL_NR: i32 = 29;

/// Every poll event the head can report (Linux does not tell `->poll` which were asked).
const POLL_ALL: u32 =
    POLLIN | POLLPRI | POLLOUT | POLLRDNORM | POLLRDBAND | POLLWRNORM | POLLWRBAND | POLLMSG;

/// What the opens of a STREAMS device give.
pub(crate) enum StrKind {
    /// A new Stream over this driver (a clone device).
    Driver(&'static StreamTab),
    /// A new, unconnected pipe end (the pipe device; `I_PIPE` welds two).
    PipeEnd,
    /// The FIFO of this node (`fifo.rs`): every open attaches to the same Stream.
    Fifo(Arc<crate::fifo::FifoSlot>),
    /// A new Stream over this driver inside the driver's Stream complex (a multiplexing or
    /// loop driver, `sth/mux.rs`): every open adds a head to the one shared arena.
    Complex(&'static StreamTab, Arc<StrShared>),
}

/// What a STREAMS device needs to open a Stream: what its opens give and the module registry.
pub(crate) struct StrDev {
    /// What an open gives.
    pub(crate) kind: StrKind,
    /// `fmodsw` for I_PUSH/I_FIND (read-only after module init).
    pub(crate) registry: Arc<Registry>,
}

/// Jiffies a write-hold (SNDHOLD) message waits for more data before it is sent anyway.
const HOLD_JIFFIES: u64 = 1;

/// A Stream and the wait queues of its heads (one, or two for a pipe): what the files open on
/// it share.
#[pin_data]
pub(crate) struct StrShared {
    /// The write-hold timer, set once after creation. Declared first so that it is dropped
    /// (cancelled, waiting for a running callback) before the Stream it flushes.
    #[pin]
    hold: SpinLock<Option<DelayedWork<StrShared>>>,
    /// The qtimeout timer (`stream/timeout.rs`), armed for the earliest deadline; set once
    /// after creation and, like `hold`, dropped before the Stream.
    #[pin]
    tick: SpinLock<Option<DelayedWork<StrShared>>>,
    /// The Stream (heads, modules, driver); the stream lock.
    #[pin]
    pub(crate) stream: Mutex<Stream>,
    /// Sleepers (read, write, ioctl) and pollers of end 0 (the only end of a plain Stream).
    #[pin]
    wq0: WaitQueue,
    /// Those of end 1 of a pipe.
    #[pin]
    wq1: WaitQueue,
    /// A Stream complex: the files whose Streams are linked under it, by muxid (`mux.rs`).
    #[pin]
    pub(crate) lowers: Mutex<KVec<(i32, Option<Arc<StrShared>>)>>,
    /// How many hold each head open: its files (not FIFO files: `fifo.rs` counts those) and
    /// its fattach attachments (`fattach.rs`). The last to go closes the head. Heads of a
    /// Stream complex beyond the first two are not counted: each has one file and cannot be
    /// attached, so its release closes it.
    opens: [AtomicUsize; 2],
    /// O_ASYNC registrations (SIGIO) of end 0 and of end 1.
    fasync: [FasyncList; 2],
}

impl StrShared {
    pub(crate) fn new(s: Stream) -> Result<Arc<StrShared>, Errno> {
        let sh = Arc::pin_init(
            pin_init!(StrShared {
                hold <- kernel::new_spinlock!(None, "rstreams_hold"),
                tick <- kernel::new_spinlock!(None, "rstreams_tick"),
                stream <- kernel::new_mutex!(s, "rstreams_stream"),
                wq0 <- WaitQueue::new(),
                wq1 <- WaitQueue::new(),
                lowers <- kernel::new_mutex!(KVec::new(), "rstreams_lowers"),
                opens: [AtomicUsize::new(0), AtomicUsize::new(0)],
                fasync: [FasyncList::new(), FasyncList::new()],
            }),
            GFP_KERNEL,
        )
        .map_err(|_| Errno::ENOSR)?;
        // SAFETY: the work item is a field of `*sh`, which is pinned in its `Arc` allocation
        // and drops the work item (cancelling it synchronously) before its other fields.
        let w = unsafe { DelayedWork::new(StrShared::hold_expired, &*sh) }?;
        *sh.hold.lock() = Some(w);
        // SAFETY: as for `hold`: a field of the pinned `*sh`, dropped before the Stream.
        let t = unsafe { DelayedWork::new(StrShared::tick_expired, &*sh) }?;
        *sh.tick.lock() = Some(t);
        Ok(sh)
    }

    /// The hold timer fired: send what write hold has coalesced on every head.
    fn hold_expired(&self) {
        let mut g = self.stream.lock();
        g.sth_flush_hold_all();
        // No process of ours runs this: nobody to send SIGPIPE to.
        let mut ev = settle(&mut g, usize::MAX);
        drop(g);
        // Never re-arm from the callback: the timer is only armed by writes, which hold a
        // reference to this object (the drop of the last one cancels the timer).
        ev.hold_timer = false;
        self.apply(ev);
    }

    /// The qtimeout timer fired: enable the queues whose time is up and run them.
    fn tick_expired(&self) {
        let mut g = self.stream.lock();
        g.run_timeouts(now_ns());
        let ev = settle(&mut g, usize::MAX);
        drop(g);
        self.apply(ev); // re-arms for the next deadline, if any
    }

    /// One more holder of head `end` open (a file or an attachment), which must be given back
    /// with [`StrShared::close_head`]. Only a holder of the head (or its creator) adds one, so
    /// the count never comes back from zero.
    pub(crate) fn hold_head(&self, end: usize) {
        if let Some(n) = self.opens.get(end) {
            n.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// A holder of head `end` is gone; the last one closes the head (SVR4: the close
    /// procedures run at the last close of a Stream, not at each close of one of its files).
    /// `me` is the end the calling process uses (`usize::MAX`: none).
    pub(crate) fn close_head(&self, end: usize, me: usize) {
        if self.release_head(end) {
            self.close_now(end, me);
        }
    }

    /// A holder of head `end` is gone: whether it was the last (the caller then closes it).
    pub(crate) fn release_head(&self, end: usize) -> bool {
        self.opens
            .get(end)
            .is_none_or(|n| n.fetch_sub(1, Ordering::AcqRel) == 1)
    }

    /// Close head `end` now (its last holder is gone).
    pub(crate) fn close_now(&self, end: usize, me: usize) {
        let mut g = self.stream.lock();
        g.with_end(end, Stream::sth_close);
        let ev = settle(&mut g, me);
        let cx = g.is_complex();
        drop(g);
        // Closing an upper Stream of a multiplexor unlinks what it linked.
        self.finish(cx, ev);
        // Dropping the last reference frees the Stream: every queued message goes with it.
    }

    /// The wait queue of head `end`: ends alternate between two queues (the two ends of a
    /// pipe get one each; in a Stream complex several heads share one, and every sleeper
    /// re-tests its own condition anyway).
    pub(crate) fn wq(&self, end: usize) -> &WaitQueue {
        if end & 1 == 1 {
            &self.wq1
        } else {
            &self.wq0
        }
    }

    /// The O_ASYNC registrations of head `end` (alternating like the wait queues).
    pub(crate) fn fasync(&self, end: usize) -> &FasyncList {
        &self.fasync[end & 1]
    }

    /// After an operation, without the lock: act on what `settle` collected and, on a Stream
    /// complex (`cx`), give unlinked Streams back to their files (`mux.rs`).
    pub(crate) fn finish(&self, cx: bool, ev: Settled) {
        self.apply(ev);
        if cx {
            crate::mux::give_back(self);
        }
    }

    /// Act on what `settle` collected.
    pub(crate) fn apply(&self, ev: Settled) {
        for (i, w) in ev.wake.iter().enumerate() {
            if *w {
                self.wq(i).wake_sleepers();
            }
            if let Some(&e) = ev.sigpoll.get(i).filter(|e| **e != 0) {
                self.kill_fasync(i, e);
            }
        }
        if ev.hold_timer {
            if let Some(w) = &*self.hold.lock() {
                w.arm(HOLD_JIFFIES);
            }
        }
        if ev.sigpipe {
            chardev::send_sig_current(SIGPIPE);
        }
        if let Some(deadline) = ev.next_timeout {
            let ms = deadline.saturating_sub(now_ns()).div_ceil(1_000_000);
            let j = kernel::time::msecs_to_jiffies(u32::try_from(ms).unwrap_or(u32::MAX));
            if let Some(t) = &*self.tick.lock() {
                t.rearm(u64::try_from(j).unwrap_or(u64::MAX).max(1));
            }
        }
    }
}

/// The monotonic clock qtimeout deadlines are in (as bufmod's timestamps: `ktime_get`).
fn now_ns() -> u64 {
    u64::try_from(kernel::time::Ktime::ktime_get().to_ns()).unwrap_or(0)
}

impl StrShared {
    /// SIGIO for the O_ASYNC registrations of `end`, for the `S_*` events that happened there:
    /// input as for SIGPOLL's S_INPUT/S_RDNORM/S_RDBAND (POLL_IN), S_HIPRI (POLL_PRI),
    /// S_OUTPUT/S_WRBAND (POLL_OUT), S_ERROR (POLL_ERR), S_HANGUP (POLL_HUP).
    fn kill_fasync(&self, end: usize, sigpoll: u32) {
        let list = self.fasync(end);
        for (events, code) in [
            (S_INPUT | S_RDNORM | S_RDBAND, POLL_IN),
            (S_HIPRI, POLL_PRI),
            (S_OUTPUT | S_WRBAND, POLL_OUT),
            (S_ERROR, POLL_ERR),
            (S_HANGUP, POLL_HUP),
        ] {
            if sigpoll & events != 0 {
                list.kill(code);
            }
        }
    }
}

/// Which Stream a file is the head of, and which end.
#[derive(Clone)]
pub(crate) struct Link {
    pub(crate) shared: Arc<StrShared>,
    pub(crate) end: usize,
}

/// `StrFile::pipe_state`: not an unconnected pipe end (a Stream over a driver, or welded).
const CONNECTED: u8 = 0;
/// An unconnected pipe end: `I_PIPE` may weld it.
const UNCONNECTED: u8 = 1;
/// Being welded by an `I_PIPE` in progress.
const WELDING: u8 = 2;

/// One open STREAMS file.
#[pin_data]
pub(crate) struct StrFile {
    /// The Stream; replaced once, when `I_PIPE` welds an unconnected pipe end.
    #[pin]
    link: SpinLock<Link>,
    /// The Stream this file had before a weld: pollers may still be queued on its wait queue,
    /// so it lives as long as the file.
    #[pin]
    retired: SpinLock<Option<Arc<StrShared>>>,
    /// `CONNECTED`, `UNCONNECTED` or `WELDING` (see `weld`).
    pipe_state: AtomicU8,
    /// Serialises `->fasync` of this file with `weld` moving its O_ASYNC registration to the
    /// new Stream (a mutex: fasync_helper allocates with GFP_KERNEL).
    #[pin]
    fasync_lock: Mutex<()>,
    /// Writes may build their message before taking the lock (last seen under the lock;
    /// checked again there).
    pub(crate) prebuilt_hint: AtomicBool,
    /// `fmodsw`, shared with the device.
    pub(crate) registry: Arc<Registry>,
    /// The FIFO node and open mode of a FIFO file (its close is counted there).
    fifo: Option<crate::fifo::FifoOpen>,
}

/// What an operation leaves to do outside the stream lock (see [`settle`]).
#[derive(Default, Clone, Copy)]
pub(crate) struct Settled {
    /// Wake the sleepers and pollers of wait queue 0 / 1 (`StrShared::wq`).
    wake: [bool; 2],
    /// Arm the write-hold timer.
    hold_timer: bool,
    /// Send SIGPIPE to the calling process.
    sigpipe: bool,
    /// Arm the qtimeout timer for this deadline (`Stream::next_timeout`).
    next_timeout: Option<u64>,
    /// `S_*` events of the heads of wait queue 0 / 1, for SIGIO (O_ASYNC).
    sigpoll: [u32; 2],
}

/// After an operation, under the lock: run enabled service procedures, then collect what the
/// heads want done (wakeups, the hold timer; SIGPIPE for end `me`, the caller's). Signals are
/// sent from here, under the lock (kill_pid does not sleep; registrations are rare, so this
/// stays off the common path): SIGPOLL goes to each I_SETSIG registration whose events
/// happened (SIGURG instead for banded input with S_BANDURG); M_SIG/M_PCSIG signals go to the
/// registered processes (rstreams has no controlling-terminal process group for a Stream).
pub(crate) fn settle(s: &mut Stream, me: usize) -> Settled {
    let mut out = Settled::default();
    loop {
        s.sth_take_events_all(|end, head, ev| {
            if ev.wake != 0 {
                out.wake[end & 1] = true;
            }
            out.hold_timer |= ev.hold_timer;
            out.sigpipe |= end == me && ev.sigpipe;
            out.sigpoll[end & 1] |= ev.sigpoll;
            if ev.sigpoll != 0 || ev.signals != 0 {
                send_signals(head, &ev);
            }
        });
        if !s.has_enabled() {
            break;
        }
        s.runqueues();
    }
    out.next_timeout = s.next_timeout();
    out
}

/// The signals of `ev` for the registrations of Stream head `head`.
fn send_signals(head: &crate::sth::StrHead, ev: &HeadEvents) {
    for reg in head.sig_list() {
        let hit = reg.events & ev.sigpoll;
        if hit & !S_BANDURG != 0 {
            let urg = reg.events & S_BANDURG != 0 && hit & S_RDBAND != 0;
            chardev::kill_pid(reg.pid, if urg { SIGURG } else { SIGPOLL_NR });
        }
        for sig in 1..64 {
            if ev.signals & (1u64 << sig) != 0 {
                chardev::kill_pid(reg.pid, sig);
            }
        }
    }
}

impl StrFile {
    pub(crate) fn new(
        link: Link,
        unconnected: bool,
        registry: Arc<Registry>,
        fifo: Option<crate::fifo::FifoOpen>,
    ) -> Result<Arc<StrFile>, Errno> {
        let state = if unconnected { UNCONNECTED } else { CONNECTED };
        let f = Arc::pin_init(
            pin_init!(StrFile {
                link <- kernel::new_spinlock!(link, "rstreams_link"),
                retired <- kernel::new_spinlock!(None, "rstreams_retired"),
                pipe_state: AtomicU8::new(state),
                fasync_lock <- kernel::new_mutex!((), "rstreams_fasync"),
                prebuilt_hint: AtomicBool::new(true),
                registry,
                fifo,
            }),
            GFP_KERNEL,
        )
        .map_err(|_| Errno::ENOSR)?;
        if f.fifo.is_none() {
            let l = f.link();
            l.shared.hold_head(l.end);
        }
        Ok(f)
    }

    /// fattach: the Stream head this file is on, for an attachment. EINVAL for a FIFO file
    /// (its node already names it) and an unconnected pipe end (I_PIPE would move its files).
    pub(crate) fn attachable_link(&self) -> Result<Link, Errno> {
        if self.fifo.is_some() || self.pipe_state.load(Ordering::Acquire) != CONNECTED {
            return Err(Errno::EINVAL);
        }
        // A connected file's link never changes again.
        let l = self.link();
        // A Stream of a complex (a multiplexor's) is not attachable: its heads are not counted
        // in `opens`; nor is a Stream linked under a multiplexor (its placeholder).
        let g = l.shared.stream.lock();
        if g.is_complex() || g.plex_state().is_some() {
            return Err(Errno::EINVAL);
        }
        drop(g);
        Ok(l)
    }

    /// The two ends of a new STREAMS pipe, as per-open objects for files made by the caller
    /// (`I_FIFO_PIPE`), sharing this file's module registry.
    pub(crate) fn new_pipe_pair(&self) -> Result<(Arc<StrFile>, Arc<StrFile>), Errno> {
        let shared = StrShared::new(Stream::pipe()?)?;
        let a = StrFile::new(
            Link {
                shared: shared.clone(),
                end: 0,
            },
            false,
            self.registry.clone(),
            None,
        )?;
        let z = StrFile::new(Link { shared, end: 1 }, false, self.registry.clone(), None)?;
        Ok((a, z))
    }

    /// The current link (a counted reference: a weld meanwhile does not free it under us).
    pub(crate) fn link(&self) -> Link {
        self.link.lock().clone()
    }

    /// I_PIPE: weld this unconnected pipe end and `other` into the two ends of a new STREAMS
    /// pipe. EINVAL unless both are distinct unconnected ends of the pipe device.
    ///
    /// Each file's `pipe_state` goes UNCONNECTED → WELDING by compare-and-swap, so two welds
    /// naming the same file cannot both proceed; no two link locks are ever held together.
    pub(crate) fn weld(&self, other: &StrFile) -> Result<(), Errno> {
        if ptr::eq(self, other) {
            return Err(Errno::EINVAL);
        }
        let claim = |f: &StrFile| {
            f.pipe_state
                .compare_exchange(UNCONNECTED, WELDING, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        };
        if !claim(self) {
            return Err(Errno::EINVAL);
        }
        if !claim(other) {
            self.pipe_state.store(UNCONNECTED, Ordering::Release);
            return Err(Errno::EINVAL);
        }
        let shared = match Stream::pipe().and_then(StrShared::new) {
            Ok(sh) => sh,
            Err(e) => {
                self.pipe_state.store(UNCONNECTED, Ordering::Release);
                other.pipe_state.store(UNCONNECTED, Ordering::Release);
                return Err(e);
            }
        };
        for (f, end) in [(self, 0), (other, 1)] {
            let new = Link {
                shared: shared.clone(),
                end,
            };
            new.shared.hold_head(new.end);
            let _fa = f.fasync_lock.lock();
            let old = core::mem::replace(&mut *f.link.lock(), new);
            // O_ASYNC set on the unconnected end follows the file (only this file used it).
            shared.fasync(end).take_from(old.shared.fasync(old.end));
            // Pollers of the unconnected end re-poll (and find the new wait queue).
            old.shared.wq(0).wake_all();
            *f.retired.lock() = Some(old.shared);
            f.pipe_state.store(CONNECTED, Ordering::Release);
        }
        Ok(())
    }
}

impl StrFile {
    /// ioctl(2) from a caller of data model `model`: the ioctls that involve other files here,
    /// the rest in `strioctl.rs`.
    fn ioctl_as(
        &self,
        cmd: u32,
        arg: usize,
        f_flags: u32,
        file: &CallFile<'_, Self>,
        model: Model,
    ) -> Result<i32, Errno> {
        let nonblock = f_flags & O_NONBLOCK != 0;
        match cmd {
            I_PIPE => {
                let other = file.same_device(arg as u32 as i32)?;
                self.weld(&other).map(|()| 0)
            }
            I_SENDFD => crate::fdpass::sendfd(self, arg as u32 as i32),
            I_LINK | I_PLINK => {
                let lower = file.any_device(arg as u32 as i32)?;
                crate::mux::link(self, &lower, cmd == I_PLINK, nonblock)
            }
            I_UNLINK | I_PUNLINK => {
                crate::mux::unlink(self, arg as u32 as i32, cmd == I_PUNLINK, nonblock)
            }
            I_FIFO_PIPE => crate::fdpass::fifo_pipe(self, file, arg),
            I_RECVFD => crate::fdpass::recvfd(self, arg, nonblock),
            _ => crate::strioctl::ioctl(self, cmd, arg, nonblock, model),
        }
    }
}

impl FileOps for StrFile {
    type Dev = StrDev;

    fn open(dev: &StrDev, f_flags: u32) -> Result<Arc<Self>, Errno> {
        let args = OpenArgs {
            dev: 0,
            oflag: i32::try_from(f_flags).unwrap_or(0),
            sflag: Sflag::CloneOpen,
        };
        let (s, unconnected) = match &dev.kind {
            StrKind::Driver(drv) => (Stream::sth_open(drv, &args)?, false),
            StrKind::PipeEnd => (Stream::pipe_end()?, true),
            StrKind::Fifo(slot) => return crate::fifo::open(slot, f_flags, &dev.registry),
            StrKind::Complex(drv, shared) => {
                let mut g = shared.stream.lock();
                let end = g.open_in(drv, &args)?;
                let ev = settle(&mut g, end);
                drop(g);
                shared.apply(ev);
                let link = Link {
                    shared: shared.clone(),
                    end,
                };
                return StrFile::new(link, false, dev.registry.clone(), None);
            }
        };
        let shared = StrShared::new(s)?;
        // The driver's open may have sent M_SETOPTS/data; nothing can wait on a new Stream.
        let _ = settle(&mut shared.stream.lock(), 0);
        let link = Link { shared, end: 0 };
        StrFile::new(link, unconnected, dev.registry.clone(), None)
    }

    fn release(this: Arc<Self>, f_flags: u32) {
        if let Some(f) = &this.fifo {
            crate::fifo::release(&this, f);
            return;
        }
        let l = this.link();
        if l.shared.release_head(l.end) {
            l.drain_on_close(f_flags & O_NONBLOCK != 0);
            l.shared.close_now(l.end, l.end);
        }
    }

    fn read(&self, buf: UserBuf, f_flags: u32) -> Result<usize, Errno> {
        self.read_io(buf, buf.len(), f_flags)
    }

    fn write(&self, buf: UserBuf, f_flags: u32) -> Result<usize, Errno> {
        self.write_io(buf, buf.len(), f_flags)
    }

    fn read_iter(&self, buf: IterBuf<'_>, f_flags: u32) -> Result<usize, Errno> {
        self.read_io(buf, buf.len(), f_flags)
    }

    fn write_iter(&self, buf: IterBuf<'_>, f_flags: u32) -> Result<usize, Errno> {
        self.write_io(buf, buf.len(), f_flags)
    }

    fn ioctl(
        &self,
        cmd: u32,
        arg: usize,
        f_flags: u32,
        file: &CallFile<'_, Self>,
    ) -> Result<i32, Errno> {
        self.ioctl_as(cmd, arg, f_flags, file, Model::Lp64)
    }

    fn compat_ioctl(
        &self,
        cmd: u32,
        arg: usize,
        f_flags: u32,
        file: &CallFile<'_, Self>,
    ) -> Result<i32, Errno> {
        self.ioctl_as(cmd, arg, f_flags, file, Model::Ilp32)
    }

    fn fasync(&self, call: &FasyncCall<'_>) -> Result<(), Errno> {
        let _g = self.fasync_lock.lock();
        let l = self.link();
        call.register(l.shared.fasync(l.end))
    }

    fn poll(&self, pt: &PollTable<'_>) -> u32 {
        let l = self.link();
        pt.wait(l.shared.wq(l.end));
        let mut g = l.shared.stream.lock();
        let m = g.with_end(l.end, |s| s.strpoll(POLL_ALL));
        let ev = settle(&mut g, l.end);
        drop(g);
        l.shared.apply(ev);
        m
    }
}
