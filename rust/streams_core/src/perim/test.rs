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

use super::{Perim, PerimGuard};
use crate::errno::Errno;
use crate::msg::Msg;
use crate::stream::{HeadProcs, Perimeter, QRef, QueueId, Stream};
use crate::sys::{self, Arc};

/// A perimeter run by the test that owns it (see the module docs).
pub struct TestPerim<H: HeadProcs> {
    /// The Stream and its gate.
    pub perim: Perim<H>,
    /// `schedule` was called and no run has happened since.
    scheduled: AtomicBool,
    /// How many runs happened (in place or scheduled).
    runs: AtomicUsize,
}

impl<H: HeadProcs> TestPerim<H> {
    /// A perimeter around `s`. ENOSR when memory runs out.
    pub fn new(s: Stream<H>) -> Result<Arc<TestPerim<H>>, Errno> {
        let p = TestPerim {
            perim: Perim::new(s)?,
            scheduled: AtomicBool::new(false),
            runs: AtomicUsize::new(0),
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

    /// The rest of [`TestPerim::op`] once entered by `g`.
    fn op_entered<R>(&self, mut g: PerimGuard<'_, H>, f: impl FnOnce(&mut Stream<H>) -> R) -> R {
        let r = f(&mut g);
        let later = self.perim.leave(&mut g);
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
            let later = self.perim.leave(&mut g);
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
