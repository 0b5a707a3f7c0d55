// SPDX-License-Identifier: GPL-2.0
//! How a system call on a Stream waits: [`StrFile::run`] (sleep while the head says
//! `Stop::Block`, interruptibly), [`StrFile::run_limited`] (the same with a time limit: I_STR's
//! `ic_timout`) and [`Link::drain_on_close`] (the close-time drain of the last close,
//! I_SETCLTIME).
//!
//! All three follow the same protocol: run the head's step under the stream lock, collect the
//! heads' events (`settle`), wake others, then queue on the end's wait queue *before* the lock
//! is dropped (`WaitQueue::sleep_timeout`), so no wakeup between the test and the sleep is
//! lost. A time limit is in jiffies and carried across wakeups that do not complete the wait,
//! so traffic on the Stream never extends it.

use crate::errno::Errno;
use crate::sth::{Drain, Stop};
use crate::stream::Stream;
use crate::strfile::{settle, Link, StrFile};
use crate::waitq::{ms_to_jiffies, MAX_SCHEDULE_TIMEOUT};

impl StrFile {
    /// Run `op` on this file's Stream head until it completes: sleep (interruptibly) while
    /// it blocks, or fail with EAGAIN when `nonblock`. `cancel` runs under the lock if a
    /// signal ends the wait (I_STR forgets its ioctl there).
    pub(crate) fn run<R>(
        &self,
        nonblock: bool,
        op: impl FnMut(&mut Stream) -> Result<R, Stop>,
        cancel: impl FnOnce(&mut Stream),
    ) -> Result<R, Errno> {
        self.run_limited(nonblock, None, op, cancel)
    }

    /// [`StrFile::run`] whose waiting, in total, lasts at most `limit_ms` milliseconds
    /// (`None`: no limit): when the time runs out, `cancel` runs under the lock and the call
    /// fails with ETIME (I_STR's `ic_timout`). The limit is not restarted by wakeups that do
    /// not complete the operation.
    pub(crate) fn run_limited<R>(
        &self,
        nonblock: bool,
        limit_ms: Option<u32>,
        op: impl FnMut(&mut Stream) -> Result<R, Stop>,
        cancel: impl FnOnce(&mut Stream),
    ) -> Result<R, Errno> {
        // Re-read every time: a weld while we slept moves this file to a new Stream.
        wait_on(|| self.link(), false, nonblock, limit_ms, op, cancel)
    }
}

impl Link {
    /// [`StrFile::run`] for a caller that is not one of this head's files (an open of an
    /// attached path with connld pushed, `connld.rs`): the head's SIGPIPE is not for it, and
    /// a signal that ends the wait leaves nothing to cancel.
    pub(crate) fn run_quiet<R>(
        &self,
        nonblock: bool,
        op: impl FnMut(&mut Stream) -> Result<R, Stop>,
    ) -> Result<R, Errno> {
        wait_on(|| self.clone(), true, nonblock, None, op, |_| {})
    }
}

/// The waiting loop of `run_limited` and `run_quiet` on the head `link()` gives (read again
/// after every sleep); `quiet`: the caller is none of the head's processes (no SIGPIPE).
fn wait_on<R>(
    link: impl Fn() -> Link,
    quiet: bool,
    nonblock: bool,
    limit_ms: Option<u32>,
    mut op: impl FnMut(&mut Stream) -> Result<R, Stop>,
    cancel: impl FnOnce(&mut Stream),
) -> Result<R, Errno> {
    let me = |l: &Link| if quiet { usize::MAX } else { l.end };
    let mut left = limit_ms.map_or(MAX_SCHEDULE_TIMEOUT, ms_to_jiffies);
    let mut expired = false;
    let (l, err) = loop {
        let l = link();
        let mut g = l.shared.stream.lock();
        let r = g.with_end(l.end, &mut op);
        let ev = settle(&mut g, me(&l));
        match r {
            Err(Stop::Block(_)) if expired => {
                // One last try after the time ran out (the answer may have come with it).
                let cx = g.is_complex();
                drop(g);
                l.shared.finish(cx, ev);
                break (l, Errno::ETIME);
            }
            Err(Stop::Block(_)) if !nonblock => {
                // Waking others (and maybe ourselves: harmless, we re-test) before queueing.
                l.shared.apply(ev);
                match l.shared.wq(l.end).sleep_timeout(g, left) {
                    Err(e) => break (l, e),
                    Ok(0) if limit_ms.is_some() => expired = true,
                    Ok(rest) => left = rest,
                }
            }
            r => {
                let cx = g.is_complex();
                drop(g);
                l.shared.finish(cx, ev);
                return match r {
                    Ok(v) => Ok(v),
                    Err(Stop::Err(e)) => Err(e),
                    Err(Stop::Block(_)) => Err(Errno::EAGAIN),
                };
            }
        }
    };
    // A signal or the time limit ended the wait: forget what was in progress.
    let mut g = l.shared.stream.lock();
    g.with_end(l.end, cancel);
    let ev = settle(&mut g, me(&l));
    let cx = g.is_complex();
    drop(g);
    l.shared.finish(cx, ev);
    Err(err)
}

impl Link {
    /// The close-time drain of the last close (core `sth/close.rs`): before each module is
    /// popped, and before the driver is closed, wait until its write queue is empty or at most
    /// the close time (I_SETCLTIME) for that queue; not with `nonblock` (O_NONBLOCK/O_NDELAY),
    /// after hangup or errors, or with a close time of 0. The time limit restarts whenever
    /// another queue is waited for, and is not extended by wakeups that do not drain it. A
    /// signal ends the wait (close cannot fail: the rest goes at once).
    pub(crate) fn drain_on_close(&self, nonblock: bool) {
        let mut expired = false;
        let mut at = None;
        let mut left = 0;
        loop {
            let mut g = self.shared.stream.lock();
            let d = g.with_end(self.end, |s| s.sth_close_drain(nonblock, expired));
            let ev = settle(&mut g, self.end);
            let Drain::Wait { level, ms } = d else {
                drop(g);
                self.shared.apply(ev);
                return;
            };
            if at != Some(level) {
                at = Some(level);
                left = ms_to_jiffies(ms);
            }
            self.shared.apply(ev);
            match self.shared.wq(self.end).sleep_timeout(g, left) {
                Err(_) => return,
                Ok(0) => expired = true,
                Ok(rest) => {
                    left = rest;
                    expired = false;
                }
            }
        }
    }
}
