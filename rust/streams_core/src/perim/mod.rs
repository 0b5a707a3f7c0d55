//! A Stream's perimeter: the Stream under its lock, and the gate through which everything
//! outside that lock reaches it.
//!
//! ```text
//!        other Streams, timers, softirq ──put_in / backenable_in──▶ gate (inbound, flow, flag)
//!                                                                      │ taken by
//!   system call ──enter──▶ Stream lock ◀──────────────────────────────┘ enter / run
//!                              │ operation, then leave: service procedures, publish flow
//!                              ▼
//!                         unlock ──▶ Later: run the perimeters this hold claimed, release links
//! ```
//!
//! [`Perim`] is the common part every platform wraps: the kernel's per-Stream object adds the
//! wait queue, timers and the workqueue runner, the shared tests' `perim::test::TestPerim`
//! adds a list of scheduled perimeters. The protocol, in order:
//!
//! 1. **enter** ([`Perim::enter`]): take the Stream lock and apply whatever is on the
//!    inbound list (puts call the target queue's put procedure, back-enables enable upstream),
//!    so an operation sees everything handed in before it.
//! 2. **run** ([`Perim::run`]): the runner's enter, for the caller that claimed the
//!    perimeter: clear the scheduled flag *first* (`SchedFlag::begin_run`), then enter. A put
//!    that comes after the clear claims it again; one that came before is applied by this run.
//!    This is the SVR4 scheduler's no-lost-wakeup rule (`docs/concurrency.md`), with the
//!    inbound list in the place of the run list.
//! 3. **leave** ([`Perim::leave`]): before unlocking, run the enabled service procedures, then
//!    publish the flow control of the entries (answering refused writers with back-enables),
//!    apply what came in meanwhile (a few rounds at most, each published), and take the
//!    [`Later`] list. After unlocking, the platform acts on what the Stream head
//!    reported and finishes the `Later` list.
//!
//! # Locking
//! The Stream lock ([`sys::Mutex`]) is a sleeping lock taken only in process context (system
//! calls and the workqueue runner). No two Stream locks are ever held together: a put into
//! another Stream takes only that Stream's inbound lock, a leaf (`gate.rs`). Nothing copies to
//! or from user space or allocates with sleeping flags while a Stream lock is held.

pub mod flow;
pub mod gate;
#[doc(hidden)]
pub mod test;
#[doc(hidden)]
pub mod tests;

pub use crate::stream::cross::NENTRY;
pub use gate::{Gate, Taken};

use crate::errno::Errno;
use crate::msg::Msg;
use crate::stream::{HeadProcs, Later, QueueId, Stream};
use crate::sys;
use flow::BandState;

/// Most rounds of inbound work one lock hold applies while it leaves ([`Perim::leave`]).
pub const LEAVE_ROUNDS: usize = 4;

/// A Stream under its lock, with its gate.
///
/// # Invariants
/// Everything put through the gate before the gate closed is applied to the Stream or handed
/// back by [`Perim::close`]; nothing is applied after.
pub struct Perim<H: HeadProcs> {
    sd: sys::Mutex<Stream<H>>,
    gate: Gate,
}

impl<H: HeadProcs> Perim<H> {
    /// The perimeter of `s`. ENOSR when memory runs out (a sleeping allocation: call it in
    /// process context holding no Stream lock).
    pub fn new(s: Stream<H>) -> Result<Perim<H>, Errno> {
        Ok(Perim {
            sd: sys::Mutex::new(s).map_err(|_| Errno::ENOSR)?,
            gate: Gate::new().map_err(|_| Errno::ENOSR)?,
        })
    }

    /// The gate (for the platform's `Perimeter` implementation).
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// Take the Stream lock and apply the inbound list (step 1 of the module docs).
    pub fn enter(&self) -> sys::MutexGuard<'_, Stream<H>> {
        let mut g = self.sd.lock();
        if self.gate.has_pending() {
            self.apply_inbound(&mut g);
        }
        g
    }

    /// The runner's enter, for the caller that claimed the perimeter (step 2).
    pub fn run(&self) -> sys::MutexGuard<'_, Stream<H>> {
        self.gate.flag.begin_run();
        self.enter()
    }

    /// Apply what is on the inbound list, oldest first.
    fn apply_inbound(&self, s: &mut Stream<H>) {
        let mut t = self.gate.take();
        for (q, band) in t.backs() {
            s.backenable_at(q, band);
        }
        if t.back_all {
            s.backenable_linked();
        }
        while let Some((q, mp)) = t.next_put() {
            s.put(q, mp);
        }
    }

    /// Before unlocking (step 3): run the enabled service procedures, publish the entries'
    /// flow control, and take what is left for after the unlock.
    ///
    /// Inbound work that arrived during this hold (a loop driver answering a put of ours, a
    /// softirq producer putting meanwhile) is applied here too, for at most [`LEAVE_ROUNDS`]
    /// more rounds, each ended by a publish: a producer that keeps the inbound list busy then
    /// sees the flow control it filled (without the publish it would see none until the hold
    /// ends), and cannot keep the holder — a system call — here for ever. What comes after the
    /// last round waits for the run its put claimed (every put claims the perimeter or finds
    /// it claimed, `gate.rs`), so nothing is stranded.
    pub fn leave(&self, s: &mut Stream<H>) -> Later {
        let mut round = 0;
        loop {
            while s.has_enabled() {
                s.runqueues();
            }
            self.publish(s);
            if round == LEAVE_ROUNDS || !self.gate.has_pending() {
                break;
            }
            round += 1;
            self.apply_inbound(s);
        }
        s.take_later()
    }

    /// Publish the flow control of each entry (`flow.rs`) and back-enable the Streams whose
    /// refused writers can go on.
    pub fn publish(&self, s: &mut Stream<H>) {
        let entries = s.entries();
        for (slot, f) in self.gate.flows().iter().enumerate() {
            let entry = entries.get(slot).copied().flatten();
            match entry {
                Some(q) if f.is_for(q.raw()) => {}
                Some(q) => f.claim(q.raw()),
                None => {
                    if !f.is_free() {
                        f.release();
                    }
                    continue;
                }
            }
            let Some(q) = entry else {
                continue;
            };
            let fq = s.flow_queue(q);
            let Some(queue) = s.queue(fq) else {
                continue;
            };
            let hiwat = queue.hiwat();
            let band0 = BandState {
                band: 0,
                full: queue.flags().contains(crate::queue::QFlags::QFULL),
                low: queue.count() <= queue.lowat(),
            };
            let bands = (1..=queue.nband()).filter_map(|b| {
                let b = u8::try_from(b).ok()?;
                let full = queue.band_flags(b).contains(crate::queue::QbFlags::QB_FULL);
                let low = queue.band_count(b) <= queue.band_lowat(b);
                Some(BandState { band: b, full, low })
            });
            let mut backs = [false; 256];
            f.publish(hiwat, core::iter::once(band0).chain(bands), |b| {
                if let Some(x) = backs.get_mut(usize::from(b)) {
                    *x = true;
                }
            });
            for (b, _) in backs.iter().enumerate().filter(|(_, x)| **x) {
                if let Ok(b) = u8::try_from(b) {
                    s.backenable_remote(q, b);
                }
            }
        }
    }

    /// The Stream closed (under its lock, after the head's close): close the gate and hand
    /// back what was still on the inbound list, for the caller to free after unlocking.
    pub fn close(&self) -> Option<Msg> {
        self.gate.close()
    }

    /// Put from outside (the gate's `put_in`).
    pub fn put_in(&self, q: QueueId, mp: Msg) -> Result<bool, Msg> {
        self.gate.put_in(q, mp)
    }
}
