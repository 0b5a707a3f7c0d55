//! [`TestPerim`]: the perimeter platform of the shared tests (host `cargo test`, loom models
//! and KUnit alike): a [`Perim`] whose runner is the test itself.
//!
//! An operation is [`TestPerim::op`]: enter, the test's closure, leave, unlock, then the
//! [`Later`](crate::stream::Later) list is finished in place, so a write at one end of a pipe
//! has been delivered at the other end when `op` returns, as with the kernel platform. A
//! perimeter that is scheduled instead (a put from outside any Stream, [`QRef::put`]) is only
//! marked; the test runs it with [`TestPerim::run_scheduled`], or [`settle`] runs every marked
//! one of a set until none is left.
//!
//! [`QRef::put`]: crate::stream::QRef::put

#[cfg(not(loom))]
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};

// The test knobs are set by the test alone, never raced: not modelled under loom.
use core::sync::atomic::{AtomicU8 as KnobWord, AtomicUsize as KnobCount, Ordering::Relaxed};

use super::{Perim, PerimGuard};
use crate::errno::Errno;
use crate::msg::Msg;
use crate::stream::{HeadProcs, Later, Perimeter, QRef, QueueId, Stream};
use crate::sys::{self, Arc};

/// How a [`TestPerim`] leaves its lock holds (`TestPerim::set_leave`): the platform's own
/// way by default, or with these set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LeaveKnobs {
    /// Never the quiet leave: every hold goes through [`Perim::leave_full`] (the reference
    /// the quiet leave is tested against).
    pub full: bool,
    /// Leave as if a poller watched the head (`Perim::leave_watched`'s `watched`).
    pub watched: bool,
    /// ... and as if an O_ASYNC owner did (`signalled`).
    pub signalled: bool,
    /// Count the holds that left the quiet way ([`TestPerim::quiet_leaves`]).
    pub count: bool,
}

impl LeaveKnobs {
    const FULL: u8 = 1;
    const WATCHED: u8 = 2;
    const SIGNALLED: u8 = 4;
    const COUNT: u8 = 8;

    fn word(self) -> u8 {
        let bit = |on: bool, b: u8| if on { b } else { 0 };
        bit(self.full, Self::FULL)
            | bit(self.watched, Self::WATCHED)
            | bit(self.signalled, Self::SIGNALLED)
            | bit(self.count, Self::COUNT)
    }
}

/// A perimeter run by the test that owns it (see the module docs).
pub struct TestPerim<H: HeadProcs> {
    /// The Stream and its gate.
    pub perim: Perim<H>,
    /// `schedule` was called and no run has happened since.
    scheduled: AtomicBool,
    /// How many runs happened (in place or scheduled).
    runs: AtomicUsize,
    /// [`LeaveKnobs`], as a word (0: the platform's own leave).
    knobs: KnobWord,
    /// Holds that left the quiet way while [`LeaveKnobs::count`] was set.
    quiet_leaves: KnobCount,
}

impl<H: HeadProcs> TestPerim<H> {
    /// A perimeter around `s`. ENOSR when memory runs out.
    pub fn new(s: Stream<H>) -> Result<Arc<TestPerim<H>>, Errno> {
        let p = TestPerim {
            perim: Perim::new(s)?,
            scheduled: AtomicBool::new(false),
            runs: AtomicUsize::new(0),
            knobs: KnobWord::new(0),
            quiet_leaves: KnobCount::new(0),
        };
        sys::new_arc(p).map_err(|_| Errno::ENOSR)
    }

    /// [`TestPerim::new`], and the Stream is given its perimeter
    /// ([`Stream::set_perimeter`]) as the kernel platform gives every Stream: its drivers can
    /// then hand other Streams references to their queues. Such a Stream is freed only after
    /// it is closed.
    pub fn new_owned(s: Stream<H>) -> Result<Arc<TestPerim<H>>, Errno> {
        let p = TestPerim::new(s)?;
        let me: Arc<dyn Perimeter> = p.clone();
        p.op(|s| s.set_perimeter(me));
        Ok(p)
    }

    /// An operation on the Stream, as a system call does it: enter, `f`, leave, unlock, then
    /// the perimeters it claimed run in place.
    pub fn op<R>(&self, f: impl FnOnce(&mut Stream<H>) -> R) -> R {
        self.op_entered(self.perim.enter(), f)
    }

    /// [`TestPerim::op`] for the Stream head's read: entered with `Perim::enter_read(ready)`
    /// (`perim` step 7), so `f` may read data straight from the inbound list, or leave it
    /// there when `ready` says the head's queue satisfies `f`.
    pub fn op_read<R>(
        &self,
        ready: impl FnOnce(&Stream<H>) -> bool,
        f: impl FnOnce(&mut Stream<H>) -> R,
    ) -> R {
        self.op_entered(self.perim.enter_read(ready), f)
    }

    /// Leave every later lock hold as `k` says.
    pub fn set_leave(&self, k: LeaveKnobs) {
        self.knobs.store(k.word(), Relaxed);
    }

    /// How many holds left the quiet way while [`LeaveKnobs::count`] was set.
    pub fn quiet_leaves(&self) -> usize {
        self.quiet_leaves.load(Relaxed)
    }

    /// The leave of a lock hold (step 3), as the knobs say.
    #[inline]
    fn leave(&self, s: &mut Stream<H>) -> Later {
        match self.knobs.load(Relaxed) {
            0 => self.perim.leave(s),
            k => self.leave_knobbed(s, k),
        }
    }

    /// [`TestPerim::leave`] with knobs `k` set.
    #[inline(never)]
    fn leave_knobbed(&self, s: &mut Stream<H>, k: u8) -> Later {
        let watched = k & LeaveKnobs::WATCHED != 0;
        let signalled = k & LeaveKnobs::SIGNALLED != 0;
        if k & LeaveKnobs::FULL == 0 && self.perim.leave_quiet(s, watched, signalled) {
            if k & LeaveKnobs::COUNT != 0 {
                self.quiet_leaves.fetch_add(1, Relaxed);
            }
            return Later::new();
        }
        self.perim.leave_full(s, watched, signalled)
    }

    /// The rest of [`TestPerim::op`] once entered by `g`.
    fn op_entered<R>(&self, mut g: PerimGuard<'_, H>, f: impl FnOnce(&mut Stream<H>) -> R) -> R {
        let r = f(&mut g);
        let later = self.leave(&mut g);
        drop(g);
        later.finish(0);
        // A put that came in after `leave` looked and whose claimer left it to us (step 4).
        if self.perim.needs_run() {
            self.run(0);
        }
        r
    }

    /// A putmsg's express send (`perim` step 9): its band-0 control part `ctl` and its data
    /// part, through the driver's published path without the lock, and this perimeter run if
    /// the send's answer claimed it. Whether it was sent (else the parts are back in their
    /// slots for the locked putmsg).
    #[inline]
    pub fn send_express(&self, ctl: &mut Option<Msg>, data: &mut Option<Msg>) -> bool {
        match self.perim.send_express(ctl, data) {
            None => false,
            Some(claimed) => {
                if claimed {
                    self.run(0);
                }
                true
            }
        }
    }

    /// A reference to queue `q` of this Stream, for another Stream or a driver.
    pub fn qref(self: &Arc<Self>, q: QueueId) -> QRef {
        let p: Arc<dyn Perimeter> = self.clone();
        QRef::new(p, q)
    }

    /// Run the perimeter if it was scheduled; true if it ran.
    pub fn run_scheduled(&self) -> bool {
        if !self.scheduled.swap(false, SeqCst) {
            return false;
        }
        self.run(0);
        true
    }

    /// How many runs happened so far.
    pub fn runs(&self) -> usize {
        self.runs.load(SeqCst)
    }

    /// Whether the perimeter is marked as scheduled.
    pub fn is_scheduled(&self) -> bool {
        self.scheduled.load(SeqCst)
    }

    /// Close the gate and free what was still on the inbound list (the Stream itself is left
    /// to the caller, who closes its head first).
    pub fn close_gate(&self) {
        drop(self.perim.close());
    }
}

impl<H: HeadProcs> Perimeter for TestPerim<H> {
    fn put_in(&self, q: QueueId, mp: Msg) -> Result<bool, Msg> {
        self.perim.gate().put_in(q, mp)
    }
    fn backenable_in(&self, q: QueueId, band: u8) -> bool {
        self.perim.gate().backenable_in(q, band)
    }
    fn bcanput_in(&self, q: QueueId, band: u8) -> bool {
        self.perim.gate().bcanput_in(q, band)
    }
    fn run(&self, depth: u32) {
        loop {
            if self.perim.is_busy() {
                return; // the lock's holder applies it (`perim` step 4)
            }
            self.runs.fetch_add(1, SeqCst);
            let mut g = self.perim.run();
            let later = self.leave(&mut g);
            drop(g);
            later.finish(depth);
            if !self.perim.needs_run() {
                return;
            }
        }
    }
    fn schedule(self: Arc<Self>) {
        self.scheduled.store(true, SeqCst);
    }
    fn put_express(
        &self,
        q: QueueId,
        mp: Msg,
        w: &super::express::ExpressWord,
        key: usize,
    ) -> Result<bool, Msg> {
        self.perim.gate().put_express(q, mp, w, key)
    }
    fn disarm_express(&self, w: &super::express::ExpressWord) -> usize {
        self.perim.gate().disarm_express(w)
    }
}

/// Run every scheduled perimeter of `ps` until none is scheduled (at most `ps.len() * 64`
/// rounds); returns how many runs happened.
pub fn settle<H: HeadProcs>(ps: &[&TestPerim<H>]) -> usize {
    let mut n = 0;
    for _ in 0..ps.len().saturating_mul(64) {
        let ran = ps.iter().filter(|p| p.run_scheduled()).count();
        if ran == 0 {
            break;
        }
        n += ran;
    }
    n
}
