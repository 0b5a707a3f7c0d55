//! The gate of a perimeter: what other Streams and other contexts hand a Stream without taking
//! its lock — its inbound list of puts and back-enables, the published flow control of its
//! entries, and its scheduled flag.
//!
//! The inbound list is guarded by a short leaf lock taken with bottom halves disabled
//! ([`sys::BhLock`]), so process, workqueue, timer and softirq context may all put; nothing
//! under it sleeps or allocates. Messages are linked through `b_next` (newest first) and taken
//! all at once, oldest first, by whoever holds the Stream lock.
//!
//! # Locking
//! `inbound` is a leaf: the Stream lock may be held when it is taken, never the other way
//! round, and no other lock is taken under it.
//!
//! The words read without a lock (`pending`, `busy`, `lazy`, `handoff`, `sleepers`, the flow
//! slots) are ordered by sequentially consistent fences, one per side of each
//! store-then-look argument (`perim` steps 4–6, `flow.rs`), not by the orderings of the
//! accesses: `busy` is set and cleared with relaxed stores by the Stream lock's holder (the
//! claimer fences before it looks, `is_busy`; the holder after it clears, `needs_look`);
//! `lazy` and `handoff` are set and cleared with relaxed stores by the holder's leave (the
//! ordinary put fences between its store of `pending` and its look at `lazy`, `put_in_if`;
//! the holder's `needs_look` after the leave); every store of `pending` and of the pending
//! counts is a relaxed store under the inbound lock (a put's and a back-enable's, ordered
//! by the put's fence or by the claim; the take's, followed by its one fence, `take_into`).
//! The writer's side of a put thus has one locked instruction of its own besides the
//! inbound lock: the fence of an ordinary put (or the claim of another).

#[cfg(not(loom))]
use core::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
#[cfg(loom)]
use loom::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};

use super::express::ExpressWord;
use super::flow::Flow;
use crate::msg::Msg;
use crate::sched::SchedFlag;
use crate::stream::QueueId;
use crate::sys::{self, NoMem};

use crate::stream::cross::NENTRY;

/// Most distinct queues with pending back-enables; beyond, every queue with a link is
/// back-enabled (`all`).
const NBACK: usize = 4;

/// Back-enables recorded for a few queues: `(queue, bands)` with bit `b` of word `b / 64` for
/// band `b`.
type Backs = [Option<(QueueId, [u64; 4])>; NBACK];

/// What waits on the inbound list.
#[derive(Default)]
struct Inbound {
    /// Puts, newest first through `b_next`; each message's `dest` names its queue.
    puts: Option<Msg>,
    /// Back-enables: `(queue, bands)` with bit `b` of word `b / 64` for band `b`.
    backs: Backs,
    /// More queues were back-enabled than `backs` holds.
    back_all: bool,
    /// Some back-enable is recorded (`backs` or `back_all`): the common take, puts only, does
    /// not touch them.
    any_back: bool,
    /// A put that is not ordinary data (high priority, a band, another type: what always
    /// claims) waits: a claim may not be given back (`Gate::give_back`).
    urgent: bool,
    /// The Stream closed: refuse everything.
    closed: bool,
}

/// What [`Gate::take`] hands the Stream lock's holder, oldest put first.
#[derive(Default)]
pub struct Taken {
    /// The puts, oldest first (through `b_next`).
    pub puts: Option<Msg>,
    /// The back-enables (see `Inbound::backs`), if any.
    backs: Option<Backs>,
    /// Back-enable every queue that has a link.
    pub back_all: bool,
}

impl Taken {
    /// The back-enables: `(queue, band)` pairs.
    pub fn backs(&self) -> impl Iterator<Item = (QueueId, u8)> + '_ {
        self.backs
            .iter()
            .flatten()
            .flatten()
            .flat_map(|(q, words)| {
                (0..=255u8).filter_map(move |b| {
                    let w = words.get(usize::from(b / 64)).copied().unwrap_or(0);
                    (w & (1u64 << (b % 64)) != 0).then_some((*q, b))
                })
            })
    }

    /// Take the next put, oldest first.
    pub fn next_put(&mut self) -> Option<(QueueId, Msg)> {
        let mut m = self.puts.take()?;
        self.puts = m.0.next.take();
        let q = QueueId::from_raw(m.0.dest)?;
        Some((q, m))
    }
}

/// The gate (see the module docs).
pub struct Gate {
    inbound: sys::BhLock<Inbound>,
    /// Something is on the inbound list (a hint read without the lock; set under it).
    pending: AtomicBool,
    /// The Stream lock is held by someone who will look at the inbound list before it lets
    /// go (`Perim::enter` sets it, the guard clears it): a claimer leaves the run to them.
    busy: AtomicBool,
    /// The Stream will look at its inbound list again by itself (nothing in its head must hear
    /// of an arrival at once: `HeadProcs::lazy_ok`, and nobody watches it), so a put of
    /// ordinary data need not claim it unless a system call sleeps in the head (`perim`
    /// step 5).
    lazy: AtomicBool,
    /// Whoever waits on the head's wait queue (sleepers and pollers) will enter the Stream
    /// when woken and nothing else must hear of an arrival (set when the lock is left):
    /// a claim may be handed to the wait queue (`perim` step 6).
    handoff: AtomicBool,
    /// Tasks asleep on the head's wait queue that enter the Stream when they wake (a system
    /// call waiting in the Stream head): counted from the moment each is queued until it is
    /// woken. A claimer outside a system call wakes them instead of scheduling the runner
    /// (`perim` step 6).
    sleepers: AtomicUsize,
    /// The perimeter is on a runner's list, or claimed by a put that will run it.
    pub(crate) flag: SchedFlag,
    /// The published flow control of the entry queues.
    flow: [Flow; NENTRY],
}

impl Gate {
    /// An open gate with nothing pending. ENOSR-worthy `NoMem` when memory runs out.
    pub fn new() -> Result<Gate, NoMem> {
        Ok(Gate {
            inbound: crate::bh_lock!(Inbound::default(), "rstreams_inbound")?,
            pending: AtomicBool::new(false),
            busy: AtomicBool::new(false),
            lazy: AtomicBool::new(false),
            handoff: AtomicBool::new(false),
            sleepers: AtomicUsize::new(0),
            flag: SchedFlag::new(),
            flow: core::array::from_fn(|_| Flow::new()),
        })
    }

    /// The flow slot of entry `q`, if it has one.
    pub(crate) fn flow_of(&self, q: QueueId) -> Option<&Flow> {
        self.flow.iter().find(|f| f.is_for(q.raw()))
    }

    /// The flow slots.
    pub(crate) fn flows(&self) -> &[Flow; NENTRY] {
        &self.flow
    }

    /// Hand `mp` to queue `q`'s put procedure (see `Perimeter::put_in`): `Ok(true)` if this
    /// claimed the perimeter, `Err(mp)` if the Stream is closed.
    pub fn put_in(&self, q: QueueId, mp: Msg) -> Result<bool, Msg> {
        self.put_in_if(q, mp, || true)
    }

    /// An express write's put (`Perimeter::put_express`): [`Gate::put_in`], admitted only if
    /// `w` is armed for `key`, checked and counted under the inbound lock.
    pub fn put_express(
        &self,
        q: QueueId,
        mp: Msg,
        w: &ExpressWord,
        key: usize,
    ) -> Result<bool, Msg> {
        self.put_in_if(q, mp, || w.admit(key))
    }

    /// Disarm `w` under the inbound lock (`Perimeter::disarm_express`).
    pub fn disarm_express(&self, w: &ExpressWord) -> usize {
        let _inb = self.inbound.lock();
        w.disarm()
    }

    /// [`Gate::put_in`] if `admit` (asked under the inbound lock, after the closed test).
    fn put_in_if(
        &self,
        q: QueueId,
        mut mp: Msg,
        admit: impl FnOnce() -> bool,
    ) -> Result<bool, Msg> {
        let (n, blocks) = mp.msgsize_blocks();
        let flow = self.flow_of(q);
        // Ordinary messages (band-0 M_DATA and M_PROTO: a pipe's data, a transport's
        // T_UNITDATA_IND) may wait for the Stream's own next look (step 5 of `perim`);
        // anything else (high priority, bands, M_HANGUP, ioctl answers...) is what a sleeper
        // waits for.
        let ty = mp.db_type();
        let ordinary = (ty == crate::msg::M_DATA || ty == crate::msg::M_PROTO) && mp.band() == 0;
        {
            let mut inb = self.inbound.lock();
            if inb.closed || !admit() {
                return Err(mp);
            }
            mp.0.dest = q.raw();
            inb.urgent |= !ordinary;
            mp.0.next = inb.puts.take();
            inb.puts = Some(mp);
            // Relaxed (every store of `pending` is made under the inbound lock): what orders
            // it for a Stream or a sleeper that must see it is the fence below (ordinary
            // data), or the claim (anything else). A put that claims hands its store to the
            // claim's server (the claim's release, the run's `begin_run`); one whose claim
            // fails found a claim no take has cleared yet, and every take clears a claim it
            // sees set first (`Perim::take_inbound`; one it does not see stays for its
            // server), so that claim's server takes after this push.
            self.pending.store(true, Relaxed);
            if let Some(f) = flow {
                f.add_pending(n, blocks);
            }
        }
        if ordinary {
            // The put's store, then (fenced) the Stream's word that it will look by itself;
            // the Stream clears that word, then (fenced) looks at the list: one sees the other.
            // This fence carries the argument: the store of `pending` above and the Stream's
            // clear of `lazy` (`set_lazy`) are relaxed.
            fence(SeqCst);
            // The fence above also orders the claim-less put before the sleeper count's load
            // (what a claimer's `is_busy` fence does before `has_sleeper`): no second fence.
            if self.lazy.load(SeqCst) && self.sleepers.load(SeqCst) == 0 {
                return Ok(false);
            }
        }
        Ok(self.flag.try_schedule())
    }

    /// Whether the Stream will look at its inbound list by itself (set under the Stream lock
    /// when it leaves: `Perim::leave`). A relaxed store: a put that misses a set only claims
    /// when it need not; one that misses a clear is seen by the holder's fenced look after
    /// it lets go ([`Gate::needs_look`], the rule on `PerimGuard`), the put's fence against
    /// that one (`put_in_if`).
    pub(crate) fn set_lazy(&self, lazy: bool) {
        if self.lazy.load(Relaxed) != lazy {
            self.lazy.store(lazy, Relaxed);
        }
    }

    /// Whether a claim may be handed to the head's wait queue (set when the lock is left).
    /// A relaxed store, as [`Gate::set_lazy`]: a claimer reads it after its fences (the
    /// ordinary put's in `put_in_if`, which is all a give-back follows, and
    /// [`Gate::is_busy`]'s), and the holder that cleared it looks again after its own
    /// ([`Gate::needs_look`]), so either the claimer sees the clear, or the holder sees the
    /// claim or, if the claimer gave it back, the put (the leave that clears *handoff*
    /// clears *lazy* too: `HeadProcs::lazy_ok` said no, or an O_ASYNC owner, which is a
    /// watcher, is there; `Perim::leave_watched`). Loom model (q).
    pub(crate) fn set_handoff(&self, ok: bool) {
        if self.handoff.load(Relaxed) != ok {
            self.handoff.store(ok, Relaxed);
        }
    }

    /// Whether a claimer may wake the head's waiters, pollers included, instead of
    /// scheduling the runner (`perim` step 6).
    pub fn handoff_ok(&self) -> bool {
        self.handoff.load(SeqCst)
    }

    /// Whether ordinary puts are left for the Stream's own next look.
    pub fn is_lazy(&self) -> bool {
        self.lazy.load(SeqCst)
    }

    /// A task that will enter the Stream when it wakes has queued itself on the head's wait
    /// queue (call it after queueing, before dropping the Stream lock).
    pub fn sleeper_queued(&self) {
        self.sleepers.fetch_add(1, SeqCst);
        // Orders the count before the sleeper's last look at the inbound list
        // (`has_pending`), against a lazy put's store-then-`has_sleeper`: one sees the other.
        fence(SeqCst);
    }

    /// That task woke (call it before it looks at the perimeter again: `Perim::needs_run`, or
    /// its next enter).
    pub fn sleeper_woken(&self) {
        self.sleepers.fetch_sub(1, SeqCst);
    }

    /// Whether a claim can be handed to a sleeper (`perim` step 6): some task asleep on the
    /// head's wait queue will enter the Stream when woken. The caller has claimed the
    /// perimeter and asked [`Gate::is_busy`] since (nothing stored in between): that fence
    /// orders the claim before this load, against the sleeper's uncount-then-look
    /// (`sleeper_woken`, then the fenced [`Gate::needs_look`]), so a sleeper that stops
    /// counting after this load sees the claim standing and serves it. One fence per step:
    /// the claimer's look at *busy*, at the sleepers, at *handoff* and at the head's wait
    /// queue all follow the one fence (`StrPerim::schedule`).
    pub fn has_sleeper(&self) -> bool {
        self.sleepers.load(SeqCst) != 0
    }

    /// Give back a claim that nobody needs served now (`perim` step 6, its last case): the
    /// claimer found no sleeper and no waiter to hand it to, and what waits on the inbound list
    /// is ordinary data alone (no other put, no back-enable) for a Stream whose head is quiet
    /// (`handoff_ok`: nothing must hear of an arrival at once, no O_ASYNC owner). Such puts
    /// are what a lazy gate leaves for the Stream's own next look (step 5); the gate was not
    /// lazy only because someone watched at the last leave (a poll(2) that has returned since),
    /// so the claimer clears the claim instead of scheduling the runner, and the data waits
    /// for the next enter (the reader's next call, or a poll, which enters). True if it did.
    ///
    /// Decided under the inbound lock, so no put or back-enable that must be served slips in
    /// between the look and the clear (a later one claims again: the flag is down). The gate
    /// stays not lazy: a holder that lets go after this (step 4) still looks at the pending
    /// puts (`needs_look`), and later puts claim and come here again until an enter takes
    /// them. `nobody_waits` is the platform's look at its wait queue, made under the lock too:
    /// a poller that queues itself before it is seen enters afterwards and takes the list; a
    /// sleeper that counts itself after the look at `sleepers` finds the list pending in its
    /// last look (`has_pending`) and does not sleep.
    pub fn give_back(&self, nobody_waits: impl FnOnce() -> bool) -> bool {
        let inb = self.inbound.lock();
        if inb.closed
            || inb.urgent
            || inb.any_back
            || !self.handoff.load(SeqCst)
            || self.sleepers.load(SeqCst) != 0
            || !nobody_waits()
        {
            return false;
        }
        self.flag.begin_run();
        true
    }

    /// Back-enable queue `q` for `band` (see `Perimeter::backenable_in`): true if this
    /// claimed the perimeter.
    pub fn backenable_in(&self, q: QueueId, band: u8) -> bool {
        {
            let mut inb = self.inbound.lock();
            if inb.closed {
                return false;
            }
            let (w, bit) = (usize::from(band / 64), 1u64 << (band % 64));
            let slot = match inb
                .backs
                .iter()
                .position(|b| b.is_some_and(|(x, _)| x == q))
            {
                Some(i) => Some(i),
                None => inb.backs.iter().position(Option::is_none),
            };
            match slot.and_then(|i| inb.backs.get_mut(i)) {
                Some(b) => {
                    let (_, words) = b.get_or_insert((q, [0; 4]));
                    if let Some(x) = words.get_mut(w) {
                        *x |= bit;
                    }
                }
                None => inb.back_all = true,
            }
            inb.any_back = true;
            // Relaxed, as in `put_in_if`: a back-enable always claims.
            self.pending.store(true, Relaxed);
        }
        self.flag.try_schedule()
    }

    /// bcanput on entry `q` from outside (true if `q` publishes no flow control).
    pub fn bcanput_in(&self, q: QueueId, band: u8) -> bool {
        self.flow_of(q).is_none_or(|f| f.bcanput(band))
    }

    /// The scheduled flag (the claim protocol; loom models drive it by hand).
    pub fn sched_flag(&self) -> &SchedFlag {
        &self.flag
    }

    /// Mark the Stream lock held and about to look at the inbound list (`Perim::enter`), or
    /// no longer (the guard's drop, `PerimGuard::unbusy`). A relaxed store, set and cleared
    /// by the lock's holder alone: the fences of the hand-off carry its argument (`perim`
    /// step 4, [`Gate::is_busy`], [`Gate::needs_look`]). Every clear is followed by the
    /// holder's fenced [`Gate::needs_look`] (the rule on `PerimGuard`).
    // Inline: every enter and leave (`Perim<H>` is generic, compiled in the platform's crate).
    #[inline]
    pub(crate) fn set_busy(&self, busy: bool) {
        self.busy.store(busy, Relaxed);
    }

    /// Whether the Stream lock's holder will still look at the inbound list: the claimer's
    /// side of the hand-off (`perim` step 4), after its put and its claim. The fence orders
    /// the claim before this load, against the holder's clear of *busy*, then fence, then
    /// look ([`Gate::needs_look`]): of two sequentially consistent fences one comes first, so
    /// either this load sees the clear (and the claimer runs the perimeter itself), or the
    /// holder's look sees the claim. A set of *busy* that this load misses only sends the
    /// claimer the slow way (it waits on the lock, or schedules the runner).
    pub fn is_busy(&self) -> bool {
        fence(SeqCst);
        self.busy.load(Relaxed)
    }

    /// The holder's side of the hand-off, after it cleared *busy*: whether something is on
    /// the inbound list, or a claim stands that a claimer may have left to it (a claim made
    /// just after the holder took the list, for a put the holder already applied, would
    /// otherwise stay standing with nothing behind it, and every later put would find the
    /// perimeter claimed and not run it). The fence is what makes the relaxed clear of
    /// *busy* safe ([`Gate::is_busy`]); it is also the fence of the lazy put's argument
    /// (`put_in_if`) and the sleeper's (`has_sleeper`).
    pub fn needs_look(&self) -> bool {
        fence(SeqCst);
        self.flag.is_scheduled() || (self.pending.load(SeqCst) && !self.lazy.load(SeqCst))
    }

    /// Whether something may be on the inbound list (no lock taken).
    #[inline]
    pub fn has_pending(&self) -> bool {
        self.pending.load(SeqCst)
    }

    /// Take everything on the inbound list, oldest put first (the Stream lock's holder). The
    /// flow slots' pending byte and block counts go back to zero with it (all was taken).
    pub fn take(&self) -> Taken {
        let mut t = Taken::default();
        self.take_into(&mut t);
        t
    }

    /// [`Gate::take`] into `t` (empty on entry), which the caller keeps in its own frame: the
    /// back-enables (a few hundred bytes) are written only when there are any, and the
    /// common take (puts only) copies no `Taken` around.
    pub fn take_into(&self, t: &mut Taken) {
        let mut cleared = false;
        let mut lifo = {
            let mut inb = self.inbound.lock();
            // Relaxed: every store of `pending` is made under the inbound lock, so a later
            // put's `true` is ordered after this; a stale `true` read meanwhile only makes
            // someone take an empty list.
            self.pending.store(false, Relaxed);
            for f in self.flow.iter() {
                cleared |= f.clear_pending();
            }
            inb.urgent = false;
            if core::mem::take(&mut inb.any_back) {
                t.backs = Some(core::mem::take(&mut inb.backs));
                t.back_all = core::mem::take(&mut inb.back_all);
            }
            inb.puts.take()
        };
        if cleared {
            // The relaxed clears of the pending counts, then (fenced) the writers' marks
            // (`Flow::clear_pending`): this fence carries that argument.
            fence(SeqCst);
        }
        // Newest first → oldest first.
        while let Some(mut m) = lifo {
            lifo = m.0.next.take();
            m.0.next = t.puts.take();
            t.puts = Some(m);
        }
    }

    /// The Stream closed: refuse every later put and back-enable, and hand back what was
    /// pending (the caller frees it, after dropping the Stream lock).
    pub fn close(&self) -> Option<Msg> {
        let mut inb = self.inbound.lock();
        inb.closed = true;
        inb.urgent = false;
        inb.backs = Default::default();
        inb.back_all = false;
        inb.any_back = false;
        self.pending.store(false, Relaxed);
        for f in self.flow.iter() {
            f.release();
        }
        inb.puts.take()
    }

    /// Whether the gate was closed.
    pub fn is_closed(&self) -> bool {
        self.inbound.lock().closed
    }
}
