//! Putting across perimeters: [`QRef`], a queue of another Stream, and [`Perimeter`], what a
//! Stream offers to code outside its lock.
//!
//! Each Stream is its own perimeter (one lock: see `docs/concurrency.md`), and two Stream locks
//! are never held together. So a put into another Stream (the twist of a STREAMS pipe, a
//! multiplexor's link, a driver's timer or softirq receive path) cannot call that Stream's put
//! procedure: it hands the message to the target's *inbound* list, which never sleeps and may
//! be used from any context ([`Perimeter::put_in`]). Whoever then holds the target's lock
//! applies the inbound list first: the target's own next system call, or a *run* of the
//! perimeter (`SchedFlag` protocol): the put that found the perimeter idle claims it and runs
//! it, right after dropping its own lock when it came from a system call (see [`Later`]), or
//! through the platform's runner (a workqueue) otherwise.
//!
//! Flow control crosses the same way: [`Perimeter::bcanput_in`] reads a snapshot of the target
//! queue's QFULL bits that the target publishes under its lock, and a refusal leaves a
//! "writer wants" mark that the target answers with [`Perimeter::backenable_in`] once its
//! queue has drained to its low-water mark. Both sides use sequentially consistent atomics, so
//! a refused writer is always back-enabled (`perim/flow.rs` has the argument, `tests/loom_*`
//! the models).
//!
//! A [`QRef`] keeps the target Stream's perimeter alive (a counted reference), so it never
//! dangles; after the target closed, puts are refused (the sender frees the message) and
//! back-enables are ignored.

use super::{HeadProcs, QueueId, Stream};
use crate::msg::Msg;
use crate::perim::express::ExpressWord;
use crate::sys::Arc;

/// Most entry queues (queues other Streams put into) a Stream publishes flow control for: a
/// pipe's twist or a loop driver's read queue, the head of a Stream linked under a
/// multiplexor, a multiplexor's upper read queue.
pub const NENTRY: usize = 2;

/// One queue per entry slot: the entries, or their flow queues ([`Stream::entries_cached`]).
pub type Entries = [Option<QueueId>; NENTRY];

/// What a Stream's perimeter offers to code that does not hold its lock. Implemented by the
/// platform's per-Stream object (`perim::Perim` holds the common part).
///
/// "Claim" below is the perimeter's scheduled flag (`sched::SchedFlag`): the caller that gets
/// `true` from `put_in`/`backenable_in` must make sure the perimeter runs, with
/// [`Perimeter::run`] (process context, holding no Stream lock) or [`Perimeter::schedule`].
pub trait Perimeter: Send + Sync {
    /// Hand `mp` to the put procedure of queue `q` of this Stream. Never sleeps; any context.
    /// `Ok(true)`: the caller claimed the perimeter. `Err(mp)`: the Stream is closed (the
    /// caller frees `mp`).
    fn put_in(&self, q: QueueId, mp: Msg) -> Result<bool, Msg>;
    /// Back-enable queue `q` for band `band` (the Stream downstream of `q` drained). True: the
    /// caller claimed the perimeter.
    fn backenable_in(&self, q: QueueId, band: u8) -> bool;
    /// bcanput on queue `q` from outside: false if band `band` is flow controlled there, and
    /// then a back-enable will follow when it drains.
    fn bcanput_in(&self, q: QueueId, band: u8) -> bool;
    /// Run the perimeter now: apply its inbound list, run its service procedures, act on what
    /// its head reports. Only for the caller that claimed it, in process context, holding no
    /// Stream lock. `depth` counts nested runs (a run's own [`Later`] work runs at `depth + 1`;
    /// beyond a small depth the platform schedules instead).
    fn run(&self, depth: u32);
    /// Serve a claim made by a write that went across without its own Stream's lock (the
    /// express write, `perim/express.rs`), in process context, holding no Stream lock: give
    /// it back when nobody waits and only ordinary data waits for a quiet head (`perim`
    /// step 6, `Gate::give_back`), else [`Perimeter::run`] it (which leaves it to the lock's
    /// holder, step 4). Default: run it.
    fn serve(&self, depth: u32) {
        self.run(depth)
    }
    /// Have the platform's runner run the perimeter later (for a caller that claimed it but
    /// cannot run it: softirq or timer context, or too deep).
    fn schedule(self: Arc<Self>);
    /// An express write's put (`perim/express.rs`): [`Perimeter::put_in`] of `mp` into `q`,
    /// admitted only if `w` is armed for this perimeter (`key`, [`key_of`]), which the inbound
    /// lock's holder checks and counts ([`ExpressWord::admit`]); else `Err(mp)` and the
    /// writer makes a locked write. Default: never admitted (a platform without express
    /// writes).
    ///
    /// [`key_of`]: crate::perim::express::key_of
    fn put_express(&self, q: QueueId, mp: Msg, w: &ExpressWord, key: usize) -> Result<bool, Msg> {
        let _ = (q, w, key);
        Err(mp)
    }
    /// Disarm `w` under the inbound lock ([`ExpressWord::disarm`]), so that no express put is
    /// admitted after this returns; the count of those admitted before. Default: without the
    /// lock (correct for a platform whose [`Perimeter::put_express`] admits none).
    fn disarm_express(&self, w: &ExpressWord) -> usize {
        w.disarm()
    }
}

/// A queue of another Stream (SVR4 `queue_t *` across a perimeter): a counted reference to
/// that Stream's perimeter and the queue's id there.
#[derive(Clone)]
pub struct QRef {
    perim: Arc<dyn Perimeter>,
    q: QueueId,
}

impl QRef {
    /// The queue `q` of the Stream behind `perim`.
    pub fn new(perim: Arc<dyn Perimeter>, q: QueueId) -> QRef {
        QRef { perim, q }
    }

    /// The queue's id in its Stream.
    pub fn qid(&self) -> QueueId {
        self.q
    }

    /// The perimeter of the queue's Stream.
    pub fn perim(&self) -> &Arc<dyn Perimeter> {
        &self.perim
    }

    /// The counted reference to the queue's Stream (to release it through [`Later`]).
    pub fn into_perim(self) -> Arc<dyn Perimeter> {
        self.perim
    }

    /// put(9F) from any context outside a Stream (a timer, a softirq receive path): if this
    /// claims the target it is scheduled on the platform's runner. `Err(mp)`: the target
    /// Stream is closed.
    pub fn put(&self, mp: Msg) -> Result<(), Msg> {
        if self.perim.put_in(self.q, mp)? {
            self.perim.clone().schedule();
        }
        Ok(())
    }

    /// bcanput(9F) on the queue from outside its Stream (see [`Perimeter::bcanput_in`]).
    pub fn bcanput(&self, band: u8) -> bool {
        self.perim.bcanput_in(self.q, band)
    }

    /// canput(9F) on the queue from outside its Stream.
    pub fn canput(&self) -> bool {
        self.bcanput(0)
    }

    /// Back-enable the queue from outside its Stream, scheduling it if this claims it.
    pub fn backenable(&self, band: u8) {
        if self.perim.backenable_in(self.q, band) {
            self.perim.clone().schedule();
        }
    }

    /// Whether two references name the same queue of the same Stream.
    pub fn same(&self, other: &QRef) -> bool {
        let (a, b): (*const dyn Perimeter, *const dyn Perimeter) = (&*self.perim, &*other.perim);
        self.q == other.q && core::ptr::addr_eq(a, b)
    }
}

impl core::fmt::Debug for QRef {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QRef").field("q", &self.q).finish()
    }
}

/// Most perimeters one lock hold can leave to run or release afterwards before the rest go to
/// the platform's runner (run) or are released in place (release).
pub const NLATER: usize = 4;

/// Work a Stream's lock hold leaves for its caller to do once the lock is dropped: running the
/// perimeters its puts claimed (so a write to a pipe delivers at the other end before
/// `write(2)` returns, without a workqueue bounce), and releasing references to other Streams.
/// Fixed capacity: nothing here allocates. Kept small and counted (most lock holds leave
/// nothing, and that case costs a compare), since it travels with every lock hold.
pub struct Later {
    /// `items[..len]` are in use: bit `i` of `run` says whether item `i` is to run (else it is
    /// only released). The rest are `None` (`drain` takes every used slot), so the array needs
    /// no drop glue of its own: `ManuallyDrop` spares the empty list four checks per drop.
    items: core::mem::ManuallyDrop<[Option<Arc<dyn Perimeter>>; NLATER]>,
    len: u8,
    run: u8,
}

impl Default for Later {
    fn default() -> Self {
        Later::new()
    }
}

impl Later {
    /// Nothing to do.
    pub const fn new() -> Later {
        Later {
            items: core::mem::ManuallyDrop::new([const { None }; NLATER]),
            len: 0,
            run: 0,
        }
    }

    /// Whether nothing is left to do.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Add `p`; a full list hands it back.
    fn push(&mut self, p: Arc<dyn Perimeter>, run: bool) -> Result<(), Arc<dyn Perimeter>> {
        let i = usize::from(self.len);
        match self.items.get_mut(i) {
            Some(slot) => {
                *slot = Some(p);
                self.len += 1;
                if run {
                    self.run |= 1 << i;
                }
                Ok(())
            }
            None => Err(p),
        }
    }

    /// Run `p` (claimed by this lock hold) after the lock is dropped; when the list is full it
    /// goes to the platform's runner at once.
    pub fn run(&mut self, p: Arc<dyn Perimeter>) {
        if let Err(p) = self.push(p, true) {
            p.schedule();
        }
    }

    /// Drop `p` after the lock is dropped (when the list is full, now: the caller's Stream
    /// then relies on the other Stream's last release not needing its lock, which holds for
    /// every platform of rstreams; the list only keeps the release out of the lock hold).
    pub fn release(&mut self, p: Arc<dyn Perimeter>) {
        let _ = self.push(p, false);
    }

    /// Move everything into a new list (taken under the lock, finished after it).
    pub fn take(&mut self) -> Later {
        if self.len == 0 {
            return Later::new();
        }
        core::mem::take(self)
    }

    /// The items in use, each with whether it is to run, emptying the list.
    fn drain(&mut self) -> impl Iterator<Item = (Arc<dyn Perimeter>, bool)> + '_ {
        let (n, run) = (usize::from(self.len), self.run);
        self.len = 0;
        self.run = 0;
        self.items
            .iter_mut()
            .take(n)
            .enumerate()
            .filter_map(move |(i, slot)| slot.take().map(|p| (p, run & (1 << i) != 0)))
    }

    /// Do it all, with no Stream lock held, in process context: run the claimed perimeters
    /// (nested `depth`; deeper than [`MAX_INLINE`] they are scheduled instead) and release
    /// the references.
    #[inline]
    pub fn finish(self, depth: u32) {
        if self.len != 0 {
            self.finish_claimed(depth);
        }
    }

    /// [`Later::finish`] of a list that is not empty.
    #[inline(never)]
    fn finish_claimed(mut self, depth: u32) {
        for (p, run) in self.drain() {
            match run {
                true if depth < MAX_INLINE => p.run(depth + 1),
                true => p.schedule(),
                false => drop(p),
            }
        }
    }

    /// Schedule the claimed perimeters on the platform's runner and release the references
    /// (for a caller that may not run them: softirq or timer context).
    pub fn schedule_all(self) {
        drop(self); // `Drop` schedules the runs; the releases go with the list
    }
}

impl Drop for Later {
    /// A list nobody finished: its claimed perimeters must still run (a claim that is dropped
    /// would strand their inbound work), so they go to the platform's runner.
    #[inline]
    fn drop(&mut self) {
        if self.len != 0 {
            self.schedule_claimed();
        }
    }
}

impl Later {
    /// [`Later`]'s drop of a list that is not empty.
    #[inline(never)]
    fn schedule_claimed(&mut self) {
        for (p, run) in self.drain() {
            if run {
                p.schedule();
            }
        }
    }
}

/// Deepest nesting of perimeter runs done in place (a run's own puts claim further perimeters;
/// past this the platform's runner takes them, so the stack stays bounded whatever the
/// topology, e.g. two loop drivers echoing at each other).
pub const MAX_INLINE: u32 = 2;

impl<H: HeadProcs> Stream<H> {
    /// The entry queues: queues with a link to the Stream upstream of them, or that other
    /// Streams put into without one (`Side::publish`), in a fixed order, at most [`NENTRY`].
    pub fn entries(&mut self) -> [Option<QueueId>; NENTRY] {
        self.entries_and_flowqs().0
    }

    /// [`Stream::entries`] and the flow queue of each ([`Stream::flow_queue`]), recomputed
    /// together when a link, a `publish` mark or a service procedure changed (every publish
    /// asks for both: no walk per publish).
    pub fn entries_and_flowqs(&mut self) -> ([Option<QueueId>; NENTRY], [Option<QueueId>; NENTRY]) {
        if self.entries_stale {
            self.entries = self.find_entries();
            self.flowqs = self.entries.map(|e| e.map(|q| self.flow_queue(q)));
            self.entries_stale = false;
        }
        (self.entries, self.flowqs)
    }

    /// The entries and their flow queues as last computed, unless a link, `publish` mark or
    /// service procedure changed since (then `None`: [`Stream::entries_and_flowqs`]
    /// recomputes them).
    pub fn entries_cached(&self) -> Option<(&Entries, &Entries)> {
        (!self.entries_stale).then_some((&self.entries, &self.flowqs))
    }

    fn find_entries(&self) -> [Option<QueueId>; NENTRY] {
        let mut out = [None; NENTRY];
        let mut it = out.iter_mut();
        for p in 0..self.npairs() {
            for q in [QueueId::of(p, false), QueueId::of(p, true)] {
                let Some(side) = self.side(q) else {
                    continue;
                };
                if side.publish || (side.next.is_some() && side.remote.is_some()) {
                    match it.next() {
                        Some(slot) => *slot = Some(q),
                        None => return out,
                    }
                }
            }
        }
        out
    }

    /// The queue flow control is decided on for puts into `entry`: the first queue from it
    /// upward that has a service procedure, or the last one (SVR4 `canputnext`).
    pub fn flow_queue(&self, entry: QueueId) -> QueueId {
        let mut n = entry;
        for _ in 0..self.npairs().saturating_mul(2) {
            if self.has_srv(n) {
                break;
            }
            match self.next(n) {
                Some(nn) => n = nn,
                None => break,
            }
        }
        n
    }

    /// Tell the Stream upstream of entry `entry` that band `band` can be written again. An
    /// entry without a link back (`Side::publish`: many Streams put there) is back-enabled in
    /// place: its service procedure runs and wakes the writers it knows.
    pub fn backenable_remote(&mut self, entry: QueueId, band: u8) {
        let Some(r) = self.remote(entry) else {
            if self.side(entry).is_some_and(|s| s.publish) {
                self.backenable_at(entry, band);
            }
            return;
        };
        let (perim, q) = (r.perim().clone(), r.qid());
        if perim.backenable_in(q, band) {
            self.later_mut().run(perim);
        }
    }

    /// Back-enable (band 0) every queue whose `q_next` is in another Stream (when more
    /// back-enables arrived than the inbound list keeps apart).
    pub fn backenable_linked(&mut self) {
        for p in 0..self.npairs() {
            for q in [QueueId::of(p, false), QueueId::of(p, true)] {
                if self.next(q).is_none() && self.remote(q).is_some() {
                    self.backenable_at(q, 0);
                }
            }
        }
    }
}
