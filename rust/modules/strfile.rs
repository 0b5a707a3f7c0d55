// SPDX-License-Identifier: GPL-2.0
//! [`StrFile`]: one open STREAMS device file: a Stream with its Stream head, its lock, its wait
//! queue, and the system calls that drive the head's state machine (`crate::sth`).
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
//! Wakeups: one wait queue per Stream serves readers, writers, ioctl waiters and pollers; every
//! `WAKE_*` bit wakes all of them and each re-tests its own condition under the lock.

use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

use crate::chardev::{self, FileOps, PollTable, O_NONBLOCK};
use crate::errno::Errno;
use crate::sth::consts::*;
use crate::sth::{HeadEvents, Stop};
use crate::stream::{OpenArgs, Registry, Sflag, Stream, StreamTab};
use crate::uio::UserBuf;
use crate::waitq::WaitQueue;

/// SIGPIPE.
const SIGPIPE: i32 = 13;

/// Every poll event the head can report (Linux does not tell `->poll` which were asked).
const POLL_ALL: u32 =
    POLLIN | POLLPRI | POLLOUT | POLLRDNORM | POLLRDBAND | POLLWRNORM | POLLWRBAND | POLLMSG;

/// What a STREAMS device needs to open a Stream: its driver and the module registry.
pub(crate) struct StrDev {
    /// The driver at the bottom of every Stream opened on this device.
    pub(crate) driver: &'static StreamTab,
    /// `fmodsw` for I_PUSH/I_FIND (read-only after module init).
    pub(crate) registry: Arc<Registry>,
}

/// One open STREAMS file.
#[pin_data]
pub(crate) struct StrFile {
    /// The Stream (head, modules, driver); the stream lock.
    #[pin]
    pub(crate) stream: Mutex<Stream>,
    /// Sleepers (read, write, ioctl) and pollers of this Stream.
    #[pin]
    pub(crate) wq: WaitQueue,
    /// `fmodsw`, shared with the device.
    pub(crate) registry: Arc<Registry>,
}

fn merge(a: &mut HeadEvents, b: HeadEvents) {
    a.wake |= b.wake;
    a.sigpoll |= b.sigpoll;
    a.signals |= b.signals;
    a.sigpipe |= b.sigpipe;
    a.hold_timer |= b.hold_timer;
}

impl StrFile {
    /// After an operation, under the lock: run enabled service procedures, then collect what
    /// the head wants done (wakeups, signals).
    fn settle(s: &mut Stream) -> HeadEvents {
        let mut ev = s.sth_take_events();
        if s.has_enabled() {
            s.runqueues();
            merge(&mut ev, s.sth_take_events());
        }
        ev
    }

    /// Act on head events. SIGPOLL registrations, M_SIG signals and the write-hold timer are
    /// not delivered yet (see `docs/kernel-glue.md`); held data goes at the next read, putmsg,
    /// ioctl or close.
    fn apply(&self, ev: HeadEvents) {
        if ev.wake != 0 {
            self.wq.wake_all();
        }
        if ev.sigpipe {
            chardev::send_sig_current(SIGPIPE);
        }
    }

    /// Run `op` on the Stream until it completes: sleep (interruptibly) while it blocks,
    /// or fail with EAGAIN when `nonblock`. `cancel` runs under the lock if a signal ends
    /// the wait (I_STR forgets its ioctl there).
    pub(crate) fn run<R>(
        &self,
        nonblock: bool,
        mut op: impl FnMut(&mut Stream) -> Result<R, Stop>,
        cancel: impl FnOnce(&mut Stream),
    ) -> Result<R, Errno> {
        loop {
            let mut g = self.stream.lock();
            let r = op(&mut g);
            let ev = Self::settle(&mut g);
            match r {
                Err(Stop::Block(_)) if !nonblock => {
                    // Waking others (and maybe ourselves: harmless, we re-test) before queueing.
                    self.apply(ev);
                    if let Err(e) = self.wq.sleep(g) {
                        let mut g = self.stream.lock();
                        cancel(&mut g);
                        let ev = Self::settle(&mut g);
                        drop(g);
                        self.apply(ev);
                        return Err(e);
                    }
                }
                r => {
                    drop(g);
                    self.apply(ev);
                    return match r {
                        Ok(v) => Ok(v),
                        Err(Stop::Err(e)) => Err(e),
                        Err(Stop::Block(_)) => Err(Errno::EAGAIN),
                    };
                }
            }
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
        let mut s = Stream::sth_open(dev.driver, &args)?;
        // The driver's open may have sent M_SETOPTS/data; nothing can wait on a new Stream.
        let _ = Self::settle(&mut s);
        let registry = dev.registry.clone();
        Arc::pin_init(
            pin_init!(StrFile {
                stream <- kernel::new_mutex!(s, "rstreams_stream"),
                wq <- WaitQueue::new(),
                registry,
            }),
            GFP_KERNEL,
        )
        .map_err(|_| Errno::ENOSR)
    }

    fn release(this: Arc<Self>) {
        let mut g = this.stream.lock();
        g.sth_close();
        let ev = Self::settle(&mut g);
        drop(g);
        this.apply(ev);
        // Dropping the last reference frees the Stream: every queued message goes with it.
    }

    fn read(&self, buf: UserBuf, f_flags: u32) -> Result<usize, Errno> {
        let nb = f_flags & O_NONBLOCK != 0;
        let len = buf.len();
        self.run(
            nb,
            |s| {
                let mut io = buf;
                s.strread(&mut io, len, nb)
            },
            |_| {},
        )
    }

    fn write(&self, buf: UserBuf, f_flags: u32) -> Result<usize, Errno> {
        let nb = f_flags & O_NONBLOCK != 0;
        let len = buf.len();
        self.run(
            nb,
            |s| {
                let mut io = buf;
                s.strwrite(&mut io, len, nb)
            },
            |_| {},
        )
    }

    fn ioctl(&self, cmd: u32, arg: usize, f_flags: u32) -> Result<i32, Errno> {
        crate::strioctl::ioctl(self, cmd, arg, f_flags & O_NONBLOCK != 0)
    }

    fn poll(&self, pt: &PollTable<'_>) -> u32 {
        pt.wait(&self.wq);
        let mut g = self.stream.lock();
        let m = g.strpoll(POLL_ALL);
        let ev = Self::settle(&mut g);
        drop(g);
        self.apply(ev);
        m
    }
}
