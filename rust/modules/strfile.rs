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

use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use kernel::prelude::*;
use kernel::sync::{Arc, Mutex, SpinLock};

use crate::chardev::{self, CallFile, FileOps, PollTable, O_NONBLOCK};
use crate::dwork::DelayedWork;
use crate::errno::Errno;
use crate::sth::consts::*;
use crate::msg::{Msg, M_DATA};
use crate::sth::fast::Taken;
use crate::sth::{HeadEvents, Stop, UserIo};
use crate::stream::{OpenArgs, Registry, Sflag, Stream, StreamTab};
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

/// Largest write whose message is built before the stream lock is taken.
const PREBUILD_MAX: usize = 65536;

/// An M_DATA message holding the `len` bytes of `buf` (built outside the stream lock).
fn prebuild(buf: UserBuf, len: usize) -> Result<Msg, Errno> {
    let mut m = Msg::with_type(M_DATA, len).map_err(|_| Errno::ENOSR)?;
    let mut io = buf;
    let dst = m
        .spare_mut()
        .and_then(|s| s.get_mut(..len))
        .ok_or(Errno::ENOSR)?;
    io.copy_from_user(dst, 0)?;
    m.adj_wptr(len);
    Ok(m)
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

    /// Act on what `settle` collected.
    pub(crate) fn apply(&self, ev: Settled) {
        for (i, w) in ev.wake.iter().enumerate() {
            if *w {
                self.wq(i).wake_sleepers();
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
    /// Writes may build their message before taking the lock (last seen under the lock;
    /// checked again there).
    prebuilt_hint: AtomicBool,
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
        Arc::pin_init(
            pin_init!(StrFile {
                link <- kernel::new_spinlock!(link, "rstreams_link"),
                retired <- kernel::new_spinlock!(None, "rstreams_retired"),
                pipe_state: AtomicU8::new(state),
                prebuilt_hint: AtomicBool::new(true),
                registry,
                fifo,
            }),
            GFP_KERNEL,
        )
        .map_err(|_| Errno::ENOSR)
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

    /// Run `op` on this file's Stream head until it completes: sleep (interruptibly) while
    /// it blocks, or fail with EAGAIN when `nonblock`. `cancel` runs under the lock if a
    /// signal ends the wait (I_STR forgets its ioctl there).
    pub(crate) fn run<R>(
        &self,
        nonblock: bool,
        mut op: impl FnMut(&mut Stream) -> Result<R, Stop>,
        cancel: impl FnOnce(&mut Stream),
    ) -> Result<R, Errno> {
        loop {
            // Re-read every time: a weld while we slept moves this file to a new Stream.
            let l = self.link();
            let mut g = l.shared.stream.lock();
            let r = g.with_end(l.end, &mut op);
            let ev = settle(&mut g, l.end);
            match r {
                Err(Stop::Block(_)) if !nonblock => {
                    // Waking others (and maybe ourselves: harmless, we re-test) before queueing.
                    l.shared.apply(ev);
                    if let Err(e) = l.shared.wq(l.end).sleep(g) {
                        let mut g = l.shared.stream.lock();
                        g.with_end(l.end, cancel);
                        let ev = settle(&mut g, l.end);
                        let cx = g.is_complex();
                        drop(g);
                        l.shared.apply(ev);
                        if cx {
                            crate::mux::give_back(&l.shared);
                        }
                        return Err(e);
                    }
                }
                r => {
                    let cx = g.is_complex();
                    drop(g);
                    l.shared.apply(ev);
                    if cx {
                        crate::mux::give_back(&l.shared);
                    }
                    return match r {
                        Ok(v) => Ok(v),
                        Err(Stop::Err(e)) => Err(e),
                        Err(Stop::Block(_)) => Err(Errno::EAGAIN),
                    };
                }
            }
        }
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
            let old = core::mem::replace(&mut *f.link.lock(), new);
            // Pollers of the unconnected end re-poll (and find the new wait queue).
            old.shared.wq(0).wake_all();
            *f.retired.lock() = Some(old.shared);
            f.pipe_state.store(CONNECTED, Ordering::Release);
        }
        Ok(())
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

    fn release(this: Arc<Self>) {
        if let Some(f) = &this.fifo {
            crate::fifo::release(&this, f);
            return;
        }
        let l = this.link();
        let mut g = l.shared.stream.lock();
        g.with_end(l.end, Stream::sth_close);
        let ev = settle(&mut g, l.end);
        let cx = g.is_complex();
        drop(g);
        l.shared.apply(ev);
        if cx {
            crate::mux::give_back(&l.shared);
        }
        // Dropping the last reference frees the Stream: every queued message goes with it.
    }

    fn read(&self, buf: UserBuf, f_flags: u32) -> Result<usize, Errno> {
        let nb = f_flags & O_NONBLOCK != 0;
        let len = buf.len();
        // Whole messages that fit are taken under the lock and copied out after it (see
        // `sth/fast.rs`); anything else is read by `strread` under the lock.
        let mut taken = Taken::new();
        let mut took = false;
        let n = self.run(
            nb,
            |s| {
                took = s.sth_take_ok(len);
                if took {
                    s.strread_take(len, nb, &mut taken)
                } else {
                    let mut io = buf;
                    s.strread(&mut io, len, nb)
                }
            },
            |_| {},
        )?;
        if !took {
            return Ok(n);
        }
        let mut io = buf;
        let mut off = 0usize;
        for i in 0..taken.len() {
            let Some(m) = taken.get(i) else {
                break;
            };
            let mut at = off;
            let mut fault = false;
            for b in m.blocks() {
                if io.copy_to_user(at, b.rd()).is_err() {
                    fault = true;
                    break;
                }
                at += b.blen();
            }
            if fault {
                // Put back what was not delivered (this message too: its bytes already copied
                // are not counted, so nothing is read twice).
                let _ = self.run(
                    true,
                    |s| {
                        s.strread_untake(&mut taken, i);
                        Ok(())
                    },
                    |_| {},
                );
                return if off > 0 { Ok(off) } else { Err(Errno::EFAULT) };
            }
            off = at;
        }
        // `taken` is dropped here, outside the lock: the messages are freed without it.
        Ok(off)
    }

    fn write(&self, buf: UserBuf, f_flags: u32) -> Result<usize, Errno> {
        let nb = f_flags & O_NONBLOCK != 0;
        let len = buf.len();
        if len > 0 && len <= PREBUILD_MAX && self.prebuilt_hint.load(Ordering::Relaxed) {
            // Allocate and copy before taking the lock (see `sth/fast.rs`); a bad buffer
            // fails here with EFAULT before anything happened.
            let mut slot = Some(prebuild(buf, len)?);
            return self.run(
                nb,
                |s| {
                    if s.sth_prebuilt_ok(len) {
                        s.strwrite_prebuilt(&mut slot, nb)
                    } else {
                        // Options changed (write offset, hold, packet sizes): the usual way.
                        self.prebuilt_hint.store(false, Ordering::Relaxed);
                        let mut io = buf;
                        s.strwrite(&mut io, len, nb)
                    }
                },
                |_| {},
            );
        }
        self.run(
            nb,
            |s| {
                self.prebuilt_hint
                    .store(s.sth_prebuilt_ok(1), Ordering::Relaxed);
                let mut io = buf;
                s.strwrite(&mut io, len, nb)
            },
            |_| {},
        )
    }

    fn ioctl(
        &self,
        cmd: u32,
        arg: usize,
        f_flags: u32,
        file: &CallFile<'_, Self>,
    ) -> Result<i32, Errno> {
        let nonblock = f_flags & O_NONBLOCK != 0;
        match cmd {
            I_PIPE => {
                let other = file.same_device(arg as u32 as i32)?;
                return self.weld(&other).map(|()| 0);
            }
            I_SENDFD => return crate::fdpass::sendfd(self, arg as u32 as i32),
            I_LINK | I_PLINK => {
                let lower = file.any_device(arg as u32 as i32)?;
                return crate::mux::link(self, &lower, cmd == I_PLINK, nonblock);
            }
            I_UNLINK | I_PUNLINK => {
                return crate::mux::unlink(self, arg as u32 as i32, cmd == I_PUNLINK, nonblock)
            }
            I_FIFO_PIPE => return crate::fdpass::fifo_pipe(self, file, arg),
            I_FDINSERT => return crate::strioctl::fdinsert(self, file, arg, nonblock),
            I_RECVFD => return crate::fdpass::recvfd(self, arg, nonblock),
            _ => {}
        }
        crate::strioctl::ioctl(self, cmd, arg, nonblock)
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
