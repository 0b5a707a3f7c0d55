// SPDX-License-Identifier: GPL-2.0
//! How a system call on a Stream waits: [`StrFile::run`] (sleep while the head says
//! `Stop::Block`, interruptibly), [`StrFile::run_limited`] (the same with a time limit: I_STR's
//! `ic_timout`), [`run_quiet`] (for a caller that is not one of the head's processes) and
//! [`drain_on_close`] (the close-time drain of the last close, I_SETCLTIME).
//!
//! All follow the same protocol (no lost wakeup): run the head's step under the Stream lock,
//! end the lock hold (`StrPerim::leave`: service procedures, flow control, the head's events),
//! and then either return, or queue on the head's wait queue *before* the lock is dropped
//! (`StrPerim::sleep`, counted as a sleeper a claimer may hand its claim to: `perim` step 6)
//! and sleep. A step whose lock hold sent something to another
//! Stream (its `Later` list is not empty) or woke the head's sleepers (work that arrived while
//! the lock was held, applied when the hold ended) is not followed by a sleep: the lock is
//! dropped, the other perimeters run (what they answer may be what we wait for), and the step
//! is tried again. So no wakeup is lost to the window between the step and the sleep, and
//! nothing that may sleep runs after the task has queued itself. A time limit is in
//! jiffies and carried across wakeups that do not complete the wait, so traffic on the Stream
//! never extends it.

use crate::errno::Errno;
use crate::sth::{Drain, Stop, Stream};
use crate::strfile::StrFile;
use crate::strperim::{Caller, StrPerim};
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
        wait_on(self.perim(), Caller::Me, OP, nonblock, limit_ms, op, cancel)
    }

    /// [`StrFile::run`] for read(2) (`HeadCall::run_read`): each try enters the Stream with
    /// `StrPerim::enter_read`, so `op`, the head's read, may take data straight from the
    /// inbound list.
    ///
    /// `ready` (asked under the lock, each try): the head's read queue alone satisfies `op`,
    /// so the enter may leave ordinary data on the inbound list (the lazy take, `perim`
    /// step 7 in the core).
    pub(crate) fn run_read<R>(
        &self,
        nonblock: bool,
        ready: impl Fn(&Stream) -> bool,
        op: impl FnMut(&mut Stream) -> Result<R, Stop>,
    ) -> Result<R, Errno> {
        wait_on(
            self.perim(),
            Caller::Me,
            Enter::Read(ready),
            nonblock,
            None,
            op,
            |_| {},
        )
    }
}

/// How [`wait_on`] enters the Stream for each try of its operation. Generic over the read's
/// test, so that `wait_on` is made for each caller's own test and calls it directly.
enum Enter<F> {
    /// `StrPerim::enter`: any operation.
    Op,
    /// `StrPerim::enter_read`: the operation is the Stream head's read, the head's queue
    /// alone satisfies it when this says so.
    Read(F),
}

/// [`Enter::Op`], for a caller with no read test.
const OP: Enter<fn(&Stream) -> bool> = Enter::Op;

/// [`StrFile::run`] for a caller that is not one of the head's processes (an open of an
/// attached path with connld pushed, `connld.rs`): the head's SIGPIPE is not for it, and a
/// signal that ends the wait leaves nothing to cancel.
pub(crate) fn run_quiet<R>(
    p: &StrPerim,
    nonblock: bool,
    op: impl FnMut(&mut Stream) -> Result<R, Stop>,
) -> Result<R, Errno> {
    wait_on(p, Caller::Nobody, OP, nonblock, None, op, |_| {})
}

/// The waiting loop of `run_limited` and `run_quiet` (see the module docs).
fn wait_on<R, F: Fn(&Stream) -> bool>(
    p: &StrPerim,
    caller: Caller,
    enter: Enter<F>,
    nonblock: bool,
    limit_ms: Option<u32>,
    mut op: impl FnMut(&mut Stream) -> Result<R, Stop>,
    cancel: impl FnOnce(&mut Stream),
) -> Result<R, Errno> {
    let mut left = limit_ms.map_or(MAX_SCHEDULE_TIMEOUT, ms_to_jiffies);
    let mut expired = false;
    let err = loop {
        let mut g = match &enter {
            Enter::Op => p.enter(),
            Enter::Read(ready) => p.enter_read(ready),
        };
        let r = op(&mut g);
        let post = p.leave(&mut g);
        match r {
            Err(Stop::Block(_)) if expired => {
                // One last try after the time ran out (the answer may have come with it).
                p.unlock_with(g, post, caller, 0);
                break Errno::ETIME;
            }
            Err(Stop::Block(_)) if !nonblock => {
                if post.must_retry() {
                    p.unlock_with(g, post, caller, 0);
                    continue;
                }
                // Nothing left to run: only wakeups, signals and timers, none of which sleeps.
                // Waking others (and maybe ourselves: harmless, we re-test) before queueing.
                let _empty = p.act_effects_held(&g, post, caller);
                // A put that came in after `leave` looked, whose claimer left it to us
                // (`perim` step 4): apply it instead of sleeping.
                g.unbusy();
                if p.needs_run() {
                    drop(g);
                    crate::stream::Perimeter::run(p, 0);
                    continue;
                }
                match p.sleep(g, left) {
                    Err(e) => break e,
                    Ok(0) if limit_ms.is_some() => expired = true,
                    Ok(rest) => left = rest,
                }
            }
            r => {
                p.unlock_with(g, post, caller, 0);
                return match r {
                    Ok(v) => Ok(v),
                    Err(Stop::Err(e)) => Err(e),
                    Err(Stop::Block(_)) => Err(Errno::EAGAIN),
                };
            }
        }
    };
    // A signal or the time limit ended the wait: forget what was in progress.
    let mut g = p.enter();
    cancel(&mut g);
    p.unlock(g, caller);
    Err(err)
}

/// The close-time drain of the last close (core `sth/close.rs`): before each module is
/// popped, and before the driver is closed, wait until its write queue is empty or at most the
/// close time (I_SETCLTIME) for that queue; not with `nonblock` (O_NONBLOCK/O_NDELAY), after
/// hangup or errors, or with a close time of 0. The time limit restarts whenever another queue
/// is waited for, and is not extended by wakeups that do not drain it. A signal ends the wait
/// (close cannot fail: the rest goes at once).
pub(crate) fn drain_on_close(p: &StrPerim, nonblock: bool) {
    let mut expired = false;
    let mut at = None;
    let mut left = 0;
    loop {
        let mut g = p.enter();
        let d = g.sth_close_drain(nonblock, expired);
        let post = p.leave(&mut g);
        let Drain::Wait { level, ms } = d else {
            p.unlock_with(g, post, Caller::Me, 0);
            return;
        };
        if post.must_retry() {
            p.unlock_with(g, post, Caller::Me, 0);
            continue;
        }
        if at != Some(level) {
            at = Some(level);
            left = ms_to_jiffies(ms);
        }
        let _empty = p.act_effects_held(&g, post, Caller::Me);
        g.unbusy();
        if p.needs_run() {
            drop(g);
            crate::stream::Perimeter::run(p, 0);
            continue;
        }
        match p.sleep(g, left) {
            Err(_) => {
                // A claim handed to us while asleep (`perim` step 6) is served before we go.
                if p.needs_run() {
                    crate::stream::Perimeter::run(p, 0);
                }
                return;
            }
            Ok(0) => expired = true,
            Ok(rest) => {
                left = rest;
                expired = false;
            }
        }
    }
}
