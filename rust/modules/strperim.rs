// SPDX-License-Identifier: GPL-2.0
//! [`StrPerim`]: one Stream in the kernel — its perimeter (the core's `perim::Perim`: the
//! Stream under its lock, with its inbound gate), the wait queue and O_ASYNC list of its head,
//! what its system calls use without the lock (the reader token and the write hint,
//! `sth::call::HeadShared`), its timers, the work item that runs it on the scheduler's runner,
//! and how many hold its head open.
//!
//! ```text
//!  system call ─▶ enter ─▶ Stream lock ─▶ operation ─▶ unlock():  leave (service procedures,
//!                                                               publish flow, take Later)
//!                                                               head events → Post
//!                                                               drop the lock (copying the
//!                                                               I_SETSIG registrations first
//!                                                               if a signal is due)
//!                                                               act on Post (wake, signals,
//!                                                               timers); finish Later (run
//!                                                               the perimeters it claimed)
//!  put from another Stream / softirq ─▶ gate ─▶ claim ─▶ run() now or RunQueue (runq.rs)
//! ```
//!
//! # Locking
//! The Stream lock is the core's `sys::Mutex` inside `perim` (a kernel mutex; one lockdep
//! class for every Stream; two are never held together). Under it: the Stream (head, queues,
//! modules, driver). Never under it: a user copy, a sleeping allocation, another Stream lock,
//! a wait. The inbound lock of the gate is a leaf (BH-safe spinlock). `hold` and `tick` are
//! leaf spinlocks around their work items. The wait queue has its own lock; sleepers queue on
//! it before they drop the Stream lock (`strwait.rs`). `shared` is atomics only: the reader
//! token is taken under the Stream lock and given back without it (core `sth/take.rs` has the
//! protocol).

use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use kernel::prelude::*;
use kernel::sync::{Arc, SpinLock};
use kernel::workqueue::{impl_has_work, new_work, Work, WorkItem};

use crate::dwork::DelayedWork;
use crate::errno::Errno;
use crate::fasync::FasyncList;
use crate::fdpass::PipePass;
use crate::msg::Msg;
use crate::perim::express::ExpressWord;
use crate::perim::{Perim, PerimGuard};
use crate::runq::RunQueue;
use crate::sth::call::HeadShared;
use crate::sth::consts::{S_HIPRI, S_INPUT, S_RDBAND, S_RDNORM};
use crate::sth::{HeadEvents, StrHead, Stream};
use crate::stream::{Later, Perimeter, QueueId};
use crate::strsig::Signals;
use crate::waitq::WaitQueue;

/// The `S_*` events of an arrival at the head.
const INPUT_EVENTS: u32 = S_INPUT | S_RDNORM | S_RDBAND | S_HIPRI;

/// Jiffies a write-hold (SNDHOLD) message waits for more data before it is sent anyway.
const HOLD_JIFFIES: u64 = 1;

/// A held Stream lock (the gate is busy while it is held: `perim` step 4). Every drop of one
/// is followed by the fenced `needs_run` (the rule on `PerimGuard`): [`StrPerim::unlock_with`]
/// after an unlock, [`Perimeter::run`]'s loop, and `strwait.rs` after `unbusy` before it
/// sleeps.
pub(crate) type Held<'a> = PerimGuard<'a, StrHead>;

/// Who the operation ending a lock hold is for: the process that gets SIGPIPE.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Caller {
    /// A process using this head (its system call): it gets SIGPIPE.
    Me,
    /// Nobody's system call (a timer, the runner, an open through an attached path).
    Nobody,
}

/// What a lock hold leaves to do once the lock is dropped (collected under it). Small: the
/// I_SETSIG registrations a signal goes to are not carried here but copied as the lock is
/// dropped, and only when `signal` says so ([`StrPerim::drop_lock`]).
pub(crate) struct Post {
    ev: HeadEvents,
    /// `ev` calls for signals to I_SETSIG registrations (SIGPOLL events or M_SIG signals),
    /// and the head has some.
    signal: bool,
    next_timeout: Option<u64>,
    later: Later,
    /// Nothing to do at all ([`Post::quiet`]): the unlock looks no further.
    quiet: bool,
}

impl Post {
    /// Nothing to do: no event, no signal, no timer, no `Later` work.
    #[inline]
    fn quiet() -> Post {
        Post {
            ev: HeadEvents::default(),
            signal: false,
            next_timeout: None,
            later: Later::new(),
            quiet: true,
        }
    }

    /// Whether a caller about to sleep must drop the lock and try again instead: the hold
    /// claimed other perimeters (they run after the unlock, and may answer), or something in
    /// it woke the head's sleepers — work that arrived while the lock was held (inbound puts
    /// applied on leaving, service procedures) after the caller's step found nothing.
    pub(crate) fn must_retry(&self) -> bool {
        !self.later.is_empty() || self.ev.wake != 0
    }
}

/// One Stream in the kernel (see the module docs).
#[pin_data]
pub(crate) struct StrPerim {
    /// The write-hold timer, set once after creation. Declared first so that it is dropped
    /// (cancelled, waiting for a running callback) before the Stream it flushes.
    #[pin]
    hold: SpinLock<Option<DelayedWork<StrPerim>>>,
    /// The generation of the held run the hold timer was last armed for
    /// (`HeadEvents::hold_gen`). Written and read only under `hold`'s lock, which
    /// [`StrPerim::act_events`] holds across recording it and re-arming, and
    /// [`StrPerim::hold_expired`] across reading it and asking whether the timer is pending.
    hold_gen: AtomicU32,
    /// The qtimeout timer (`stream/timeout.rs`), armed for the earliest deadline.
    #[pin]
    tick: SpinLock<Option<DelayedWork<StrPerim>>>,
    /// The Stream, its lock and its gate.
    perim: Perim<StrHead>,
    /// Sleepers (read, write, ioctl, close drain) and pollers of the head.
    #[pin]
    wq: WaitQueue,
    /// O_ASYNC registrations (SIGIO) of the head's files.
    fasync: FasyncList,
    /// The head's reader token and write hint, used by its system calls without the lock.
    shared: HeadShared,
    /// Runs the perimeter on the scheduler's runner (`runq.rs`); while queued it holds a
    /// reference, so a scheduled perimeter outlives every other holder until it has run.
    #[pin]
    work: Work<StrPerim>,
    /// How many hold the head open: its files (not FIFO files: `fifo.rs` counts those) and
    /// its fattach attachments. The last to go closes the head.
    opens: AtomicUsize,
    /// The files in flight in the pipe this is an end of (`fdpass.rs`), shared with the
    /// other end; set when the ends are connected (`weld.rs`), never for other Streams.
    #[pin]
    pipe: SpinLock<Option<Arc<PipePass>>>,
}

impl_has_work! {
    impl HasWork<Self> for StrPerim { self.work }
}

impl WorkItem for StrPerim {
    type Pointer = Arc<StrPerim>;

    fn run(this: Arc<StrPerim>) {
        Perimeter::run(&*this, 0);
    }
}

impl StrPerim {
    /// The kernel object of Stream `s` (in process context, holding no Stream lock). It must
    /// be closed ([`StrPerim::close_now`], done by the last holder's release) to be freed.
    pub(crate) fn new(s: Stream) -> Result<Arc<StrPerim>, Errno> {
        let perim = Perim::new(s)?;
        let p = Arc::pin_init(
            pin_init!(StrPerim {
                hold <- kernel::new_spinlock!(None, "rstreams_hold"),
                tick <- kernel::new_spinlock!(None, "rstreams_tick"),
                perim,
                wq <- WaitQueue::new(),
                fasync: FasyncList::new(),
                shared: HeadShared::new(),
                work <- new_work!("rstreams_run"),
                opens: AtomicUsize::new(0),
                hold_gen: AtomicU32::new(0),
                pipe <- kernel::new_spinlock!(None, "rstreams_pipe"),
            }),
            GFP_KERNEL,
        )
        .map_err(|_| Errno::ENOSR)?;
        // SAFETY: the work item is a field of `*p`, which is pinned in its `Arc` allocation
        // and drops the work item (cancelling it synchronously) before its other fields.
        let w = unsafe { DelayedWork::new(StrPerim::hold_expired, &*p) }?;
        *p.hold.lock() = Some(w);
        // SAFETY: as for `hold`: a field of the pinned `*p`, dropped before the Stream.
        let t = unsafe { DelayedWork::new(StrPerim::tick_expired, &*p) }?;
        *p.tick.lock() = Some(t);
        // The Stream's drivers may hand out references to its queues (`QCtx::qref_here`); the
        // close of the head lets go of this one.
        let me: Arc<dyn Perimeter> = p.clone();
        p.op(Caller::Nobody, |s| s.set_perimeter(me));
        Ok(p)
    }

    /// The pass count of the pipe this is an end of (`None`: not a connected pipe end).
    pub(crate) fn pipe(&self) -> Option<Arc<PipePass>> {
        self.pipe.lock().clone()
    }

    /// Make this an end of the pipe whose pass count is `p` (`weld.rs`, both ends).
    pub(crate) fn set_pipe(&self, p: Arc<PipePass>) {
        *self.pipe.lock() = Some(p);
    }

    /// The wait queue of the head.
    pub(crate) fn wq(&self) -> &WaitQueue {
        &self.wq
    }

    /// Sleep on the head's wait queue for at most `timeout` jiffies, releasing `g` once
    /// queued (`WaitQueue::sleep_timeout`), counted as a sleeper that enters the Stream when it
    /// wakes (`perim` step 6): the caller enters again, or asks `needs_run`, before it sleeps
    /// again or returns.
    pub(crate) fn sleep(
        &self,
        g: Held<'_>,
        timeout: kernel::ffi::c_long,
    ) -> Result<kernel::ffi::c_long, Errno> {
        self.wq.sleep_counted(g, timeout, Some(self.perim.gate()))
    }

    /// The O_ASYNC registrations of the head.
    pub(crate) fn fasync(&self) -> &FasyncList {
        &self.fasync
    }

    /// Whether something outside the Stream is told of each arrival, and whether by signal:
    /// `(watched, signalled)` for `Perim::leave_watched`. Watched: a poller or an epoll
    /// registration on the wait queue, or an O_ASYNC owner; signalled: an O_ASYNC owner.
    /// Read under the Stream lock; both are added before the adder takes that lock
    /// (`StrFile::poll`, `StrFile::fasync`), so the leave that follows an addition sees it.
    /// The O_ASYNC list is one load, asked once; the wait queue's test (a call) only when the
    /// list is empty.
    fn watched(&self) -> (bool, bool) {
        let signalled = !self.fasync.is_empty();
        (signalled || self.wq.has_waiters(), signalled)
    }

    /// What the head's system calls use without the lock (`sth::call`).
    pub(crate) fn shared(&self) -> &HeadShared {
        &self.shared
    }

    /// Take the Stream lock and apply what came in through the gate (the gate is busy until
    /// the guard is dropped).
    pub(crate) fn enter(&self) -> Held<'_> {
        self.perim.enter()
    }

    /// An express write (`perim/express.rs` in the core): `m`, a whole write's message built
    /// before any lock, across to the other end without this Stream's lock; `Err(m)` for the
    /// locked write.
    pub(crate) fn write_express(&self, m: Msg) -> Result<usize, Msg> {
        self.perim.write_express(m)
    }

    /// An express send (`perim/express_send.rs` in the core): a putmsg's band-0 parts,
    /// built before any lock, through the transmit path of the driver below the head
    /// without this Stream's lock, and this Stream run if the send's answer claimed it.
    /// Whether it was sent (else the parts are back for the locked putmsg).
    pub(crate) fn send_express(&self, ctl: &mut Option<Msg>, data: &mut Option<Msg>) -> bool {
        match self.perim.send_express(ctl, data) {
            None => false,
            Some(claimed) => {
                if claimed {
                    // As a locked putmsg's `Later` runs it once the lock is dropped.
                    Perimeter::run(self, 0);
                }
                true
            }
        }
    }

    /// [`StrPerim::enter`] for the Stream head's read (`Perim::enter_read`): data waiting on
    /// the inbound list may be read straight from there (`stream/direct.rs` in the core), or
    /// left there when `ready` says the head's read queue alone satisfies the read (the lazy
    /// take, `perim` step 7). `ready` is the caller's own closure (read's or getmsg's test),
    /// called directly, not through a pointer.
    pub(crate) fn enter_read(&self, ready: impl FnOnce(&Stream) -> bool) -> Held<'_> {
        self.perim.enter_read(ready)
    }

    /// Run `f` on the Stream as a system call of `caller` does: enter, `f`, unlock.
    pub(crate) fn op<R>(&self, caller: Caller, f: impl FnOnce(&mut Stream) -> R) -> R {
        let mut g = self.enter();
        let r = f(&mut g);
        self.unlock(g, caller);
        r
    }

    /// End a lock hold: [`StrPerim::leave`], then [`StrPerim::unlock_with`].
    pub(crate) fn unlock(&self, mut g: Held<'_>, caller: Caller) {
        let post = self.leave(&mut g);
        self.unlock_with(g, post, caller, 0);
    }

    /// Before the lock is dropped: run the enabled service procedures, publish flow control,
    /// take what the lock hold leaves for later and what the head reported. A quiet hold
    /// (`Perim::leave_quiet`) whose head has nothing to report leaves nothing to do.
    #[inline]
    pub(crate) fn leave(&self, s: &mut Stream) -> Post {
        let (watched, signalled) = self.watched();
        let quiet = self.perim.leave_quiet(s, watched, signalled);
        if quiet && s.sth_nothing_to_report() {
            return Post::quiet();
        }
        self.leave_full(s, quiet, watched, signalled)
    }

    /// [`StrPerim::leave`] of a hold that is not quiet (else `quiet`: its leave is done, but
    /// the head has something to report).
    #[inline(never)]
    fn leave_full(&self, s: &mut Stream, quiet: bool, watched: bool, signalled: bool) -> Post {
        let later = match quiet {
            true => Later::new(),
            false => self.perim.leave_full(s, watched, signalled),
        };
        let ev = s.sth_take_events();
        Post {
            signal: Signals::due(s.sth(), &ev),
            ev,
            next_timeout: s.next_timeout(),
            later,
            quiet: false,
        }
    }

    /// Drop the lock `g` of the hold whose [`StrPerim::leave`] gave `post`, then act on it:
    /// wake, signal, arm the timers, run the perimeters the hold claimed (`depth` deep: see
    /// `stream::Later::finish`), and this one again if a put came in that its claimer left to
    /// us (`perim` step 4). Process context.
    #[inline]
    pub(crate) fn unlock_with(&self, g: Held<'_>, post: Post, caller: Caller, depth: u32) {
        if post.quiet {
            drop(g);
        } else {
            let later = self.drop_lock(g, post, caller);
            later.finish(depth);
        }
        if self.perim.needs_run() {
            Perimeter::run(self, depth);
        }
    }

    /// Drop the lock `g`, then wake, signal and arm the timers for `post`, handing back its
    /// `Later` list. The registrations a signal goes to are copied before the lock is
    /// dropped (an I_SETSIG may change them as soon as it is), in a cold path of its own, so
    /// the copy is no part of a quiet hold's frame.
    #[inline]
    fn drop_lock(&self, g: Held<'_>, post: Post, caller: Caller) -> Later {
        if post.signal {
            return self.drop_lock_signalling(g, post, caller);
        }
        drop(g);
        self.act_effects(post, None, caller)
    }

    /// [`StrPerim::drop_lock`] of a hold whose events signal I_SETSIG registrations.
    #[cold]
    #[inline(never)]
    fn drop_lock_signalling(&self, g: Held<'_>, post: Post, caller: Caller) -> Later {
        let sigs = Signals::of(g.sth(), &post.ev);
        drop(g);
        self.act_effects(post, sigs.as_ref(), caller)
    }

    /// Wake, signal and arm the timers for `post` with the lock `g` still held (none of which
    /// sleeps: for a holder about to sleep), handing back its `Later` list.
    #[inline]
    pub(crate) fn act_effects_held(&self, g: &Held<'_>, post: Post, caller: Caller) -> Later {
        if post.signal {
            return self.act_signalling_held(g, post, caller);
        }
        self.act_effects(post, None, caller)
    }

    /// [`StrPerim::act_effects_held`] of a hold whose events signal I_SETSIG registrations.
    #[cold]
    #[inline(never)]
    fn act_signalling_held(&self, g: &Held<'_>, post: Post, caller: Caller) -> Later {
        let sigs = Signals::of(g.sth(), &post.ev);
        self.act_effects(post, sigs.as_ref(), caller)
    }

    /// Wake, signal `sigs` and arm the timers for `post`, handing back its `Later` list.
    #[inline]
    fn act_effects(&self, post: Post, sigs: Option<&Signals>, caller: Caller) -> Later {
        // The common hold: no event (so no registration to signal), no timeout. Each step of
        // `act_events` would find nothing to do: no wakeup, SIGIO, SIGPIPE, SIGPOLL or timer.
        if post.ev == HeadEvents::default() && sigs.is_none() && post.next_timeout.is_none() {
            return post.later;
        }
        self.act_events(post, sigs, caller)
    }

    /// [`StrPerim::act_effects`] of a hold that is not quiet.
    #[inline(never)]
    fn act_events(&self, post: Post, sigs: Option<&Signals>, caller: Caller) -> Later {
        let Post {
            ev,
            signal: _,
            next_timeout,
            later,
            quiet: _,
        } = post;
        self.wake(&ev, caller);
        if let Some(sigs) = sigs {
            sigs.send(&ev);
        }
        if ev.hold_timer {
            // A new held run: its timer runs from now. `rearm` moves an expiry still pending
            // for the run sent before it (by the write that found no room, or by a flush),
            // which would otherwise send this one early; an expiry already running for it
            // finds the new generation, or the timer pending again, and sends nothing.
            if let Some(w) = &*self.hold.lock() {
                self.hold_gen.store(ev.hold_gen, Ordering::Relaxed);
                w.rearm(HOLD_JIFFIES);
            }
        }
        if let Some(deadline) = next_timeout {
            let ms = deadline.saturating_sub(now_ns()).div_ceil(1_000_000);
            let j = kernel::time::msecs_to_jiffies(u32::try_from(ms).unwrap_or(u32::MAX));
            if let Some(t) = &*self.tick.lock() {
                t.rearm(u64::try_from(j).unwrap_or(u64::MAX).max(1));
            }
        }
        later
    }

    /// Whether a put came in that nobody else will apply (after the guard was dropped, or
    /// after [`PerimGuard::unbusy`]).
    pub(crate) fn needs_run(&self) -> bool {
        self.perim.needs_run()
    }

    /// The wakeups and per-file signals of `ev` (no lock needed: none sleeps).
    pub(crate) fn wake(&self, ev: &HeadEvents, caller: Caller) {
        // The head wakes its readers only when the queue was empty (or for what they may wait
        // for); pollers and epoll entries are woken by every arrival, as Linux pipes do for a
        // polled pipe ("epoll nonsensically wants a wakeup whether the pipe was already empty
        // or not", fs/pipe.c): an edge-triggered waiter sees each one. A check, no lock, when
        // nobody waits.
        if ev.wake != 0 || ev.sigpoll & INPUT_EVENTS != 0 {
            self.wq.wake_sleepers();
        }
        crate::strsig::kill_fasync(&self.fasync, ev.sigpoll);
        if ev.sigpipe && caller == Caller::Me {
            crate::strsig::sigpipe_current();
        }
    }

    /// The hold timer fired: send the held run it was armed for (docs/concurrency.md, "The
    /// hold timer"). Under the Stream lock, and under `hold`'s lock for the check: a write
    /// may have sent that run and started the next while this callback waited for the
    /// Stream lock. Then either its `act_events` has not re-armed yet (the generation
    /// recorded is the old run's, which the head no longer holds: nothing is sent), or it
    /// has (the timer is pending again, and that expiry sends the new run at its time).
    fn hold_expired(&self) {
        let mut g = self.enter();
        let gen = match &*self.hold.lock() {
            Some(w) if !w.pending() => Some(self.hold_gen.load(Ordering::Relaxed)),
            _ => None,
        };
        if let Some(gen) = gen {
            g.sth_hold_expired(gen);
        }
        let mut post = self.leave(&mut g);
        // Never re-arm from the callback: the timer is only armed by writes, which hold a
        // reference to this object (the drop of the last one cancels the timer).
        post.ev.hold_timer = false;
        self.unlock_with(g, post, Caller::Nobody, 0);
    }

    /// The qtimeout timer fired: enable the queues whose time is up (they run in `leave`).
    fn tick_expired(&self) {
        let mut g = self.enter();
        g.run_timeouts(now_ns());
        self.unlock(g, Caller::Nobody); // re-arms for the next deadline, if any
    }

    /// One more holder of the head (a file or an attachment), which must be given back with
    /// [`StrPerim::release_head`]. Only a holder (or its creator) adds one, so the count never
    /// comes back from zero.
    pub(crate) fn hold_head(&self) {
        self.opens.fetch_add(1, Ordering::AcqRel);
    }

    /// A holder of the head is gone: whether it was the last (the caller then closes it).
    /// `who` names the holder for the report of a release with no hold left: the head was
    /// then closed while a holder was still there (issue 14: EBADF on an open file). That is
    /// reported with `BUG:` (the guest console check fails the run on it) and the count
    /// stays at zero.
    pub(crate) fn release_head(&self, who: &str) -> bool {
        let was = self.opens.fetch_sub(1, Ordering::AcqRel);
        if was == 0 {
            self.opens.fetch_add(1, Ordering::AcqRel);
            pr_err!(
                "rstreams: BUG: Stream head released with no hold left ({})\n",
                who
            );
            return false;
        }
        was == 1
    }

    /// Close the head now (its last holder is gone): the Stream head closes (modules pop,
    /// the driver closes; a pipe's twist hangs up the other end), then the gate closes and
    /// what was still in flight to this Stream is freed. SVR4: the close procedures run at
    /// the last close of a Stream, not at each close of one of its files; and a Stream linked
    /// under a multiplexor stays until it is unlinked.
    pub(crate) fn close_now(&self, caller: Caller) {
        let mut g = self.enter();
        if g.sth().is_closed() {
            // Its last holder went twice (issue 14): reported as `release_head` does.
            pr_err!("rstreams: BUG: Stream head closed twice\n");
        }
        g.sth_close();
        // A Stream linked under a multiplexor closes itself when the link goes (its head only
        // took note here); its gate stays open for the multiplexor meanwhile.
        let left: Option<Msg> = if g.is_closed() {
            self.perim.close()
        } else {
            None
        };
        let post = self.leave(&mut g);
        self.unlock_with(g, post, caller, 0);
        drop(left);
    }
}

impl Perimeter for StrPerim {
    fn put_in(&self, q: QueueId, mp: Msg) -> Result<bool, Msg> {
        self.perim.gate().put_in(q, mp)
    }

    fn backenable_in(&self, q: QueueId, band: u8) -> bool {
        self.perim.gate().backenable_in(q, band)
    }

    fn bcanput_in(&self, q: QueueId, band: u8) -> bool {
        self.perim.gate().bcanput_in(q, band)
    }

    fn put_express(&self, q: QueueId, mp: Msg, w: &ExpressWord, key: usize) -> Result<bool, Msg> {
        self.perim.gate().put_express(q, mp, w, key)
    }

    fn disarm_express(&self, w: &ExpressWord) -> usize {
        self.perim.gate().disarm_express(w)
    }

    fn run(&self, depth: u32) {
        loop {
            if self.perim.is_busy() {
                return; // the lock's holder applies it (`perim` step 4)
            }
            let mut g = self.perim.run();
            let post = self.leave(&mut g);
            let later = self.drop_lock(g, post, Caller::Nobody);
            later.finish(depth);
            if !self.perim.needs_run() {
                return;
            }
        }
    }

    /// An express writer's claim: left to the lock's holder, or given back when nobody waits
    /// and only ordinary data waits for a quiet head (`Gate::give_back`: the reader's poll(2)
    /// has returned since the last leave saw it), else run. Not handed to a sleeper or a
    /// poller as [`Perimeter::schedule`] does: the waiter's enter would put the data up and
    /// wake the wait queue again, a second edge for one arrival to an EPOLLET watcher
    /// (strtest `t_epoll_edge_each_arrival`).
    fn serve(&self, depth: u32) {
        // The fence of the express put (an ordinary put, `Gate::put_in_if`) precedes these
        // looks, as `give_back` requires; `run` asks `is_busy` itself.
        if self.perim.gate().give_back(|| !self.wq.has_waiters()) {
            return;
        }
        Perimeter::run(self, depth);
    }

    fn schedule(self: Arc<Self>) {
        // A system call asleep in the head enters the Stream when woken: it serves the claim
        // (`perim` step 6), one wakeup instead of the runner's work item and a second one.
        // The lock's holder looks at the inbound list once more after letting go (`perim`
        // step 4): no work item, no wakeup.
        if self.perim.is_busy() {
            return;
        }
        let gate = self.perim.gate();
        if gate.has_sleeper() {
            self.wq.wake_sleepers();
            return;
        }
        // Pollers enter the Stream too when woken (their poll re-polls it). One that queues
        // itself after this look enters the Stream afterwards anyway: `is_busy`'s fence above
        // orders the claim before this look, as `wq_has_sleeper`'s does (only loads since,
        // so one fence serves every look of this claimer: `Gate::has_sleeper`).
        if gate.handoff_ok() {
            if self.wq.has_waiters() {
                self.wq.wake_sleepers();
                return;
            }
            // Nobody to tell, and nothing that must be served now: ordinary data the gate
            // would have left for the next enter had its last leave not seen a poller (a
            // poll(2) that has returned since). No runner: the data waits for the reader's
            // next call, as a lazy put's does (`Gate::give_back`).
            if gate.give_back(|| !self.wq.has_waiters()) {
                return;
            }
        }
        // Already queued: that run serves this claim too (it has not cleared the flag yet).
        // Not queued because the module is unloading: no Stream exists any more.
        let _ = RunQueue::enqueue(self);
    }
}

/// The monotonic clock qtimeout deadlines are in (as bufmod's timestamps: `ktime_get`).
fn now_ns() -> u64 {
    u64::try_from(kernel::time::Ktime::ktime_get().to_ns()).unwrap_or(0)
}
