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
//!    inbound list (puts call the target queue's put procedure, a run of ordinary data for a
//!    pass-only path goes up to the head's read queue in one step, `stream/batch.rs`;
//!    back-enables enable upstream), so an operation sees everything handed in before it;
//!    then the head takes up what other Streams changed in state it shares with them
//!    (`HeadProcs::sync`: a multiplexor linking or unlinking this Stream).
//! 2. **run** ([`Perim::run`]): the runner's enter, for the caller that claimed the
//!    perimeter: clear the scheduled flag *first* (`SchedFlag::begin_run`), then enter. A put
//!    that comes after the clear claims it again; one that came before is applied by this run.
//!    This is the SVR4 scheduler's no-lost-wakeup rule (`docs/concurrency.md`), with the
//!    inbound list in the place of the run list.
//! 3. **leave** ([`Perim::leave`]): before unlocking, the head's sync again, run the enabled
//!    service procedures, then publish the flow control of the entries (answering refused
//!    writers with back-enables, which may enable service procedures of this Stream: they run
//!    too; skipped when no queue or link changed since the last publish, as in a write that
//!    only joins the held message: a refused writer waits for a change of a queue's flow
//!    state or for the inbound list to be taken, and both mark the flow control stale (the
//!    take only when a writer's mark is there, the head's read and batch put-up only when
//!    they change the flow state: `Stream::getq_upto_at`); and skipped when what it would publish
//!    is what was published and no refused writer waits: `Perim::publish_is_idle`), apply
//!    what came in meanwhile (a few rounds at most, each published), and take the
//!    [`Later`] list. After unlocking, the platform acts on what the Stream head
//!    reported and finishes the `Later` list. A hold that left none of this to do (no queue
//!    enabled, no flow control gone stale, nothing sent across, no `Later` work: one word of
//!    marks and three loads, `Stream::hold_is_quiet`) and in which nothing came in only sets
//!    the gate's lazy and hand-off flags ([`Perim::leave_quiet`]: the common hold of a pipe's
//!    reader; the shared test `streams_pipe_quiet` runs it against the full leave).
//! 4. **busy hand-off** ([`Perim::needs_run`]): while the lock is held by someone who will
//!    look at the inbound list before letting go (the `busy` word, set by `enter`, cleared by
//!    the guard), a put that claimed the perimeter leaves the run to that holder instead of
//!    waiting on the lock; the holder, once it lets go, runs the perimeter if such a claim is
//!    standing, so nothing put meanwhile is stranded. The claimer fences between its claim
//!    and its look at `busy`, the holder between its clear of `busy` and its look at the
//!    claim: one fence per side carries the argument, and `busy` itself is a relaxed word
//!    (the rule on [`PerimGuard`]: every clear is followed by that fenced look).
//! 5. **lazy reader** (`Gate::put_in`): while nothing in the head must hear of an arrival at
//!    once (`HeadProcs::lazy_ok`; not `watched`: no poller, epoll entry or O_ASYNC owner,
//!    [`Perim::leave_watched`]) and no system call sleeps in the head (step 6's count), a put
//!    of an ordinary band-0 message (M_DATA, M_PROTO) only joins the inbound list, applied
//!    at the Stream's next enter (the reader's next read or poll). A task that is about to
//!    sleep in the head counts itself once it is on the wait queue and then looks at the
//!    inbound list once more (`Gate::has_pending`) instead of sleeping on work a lazy put
//!    left there. Anything else, and any put while someone sleeps, claims the perimeter.
//! 6. **sleeper hand-off** ([`Gate::has_sleeper`], [`Gate::handoff_ok`]): a claimer that
//!    cannot run the perimeter itself (softirq, timer, too deep) and finds a system call
//!    asleep in the Stream head (counted from when it queued itself on the head's wait queue
//!    until it woke) wakes it instead of scheduling the runner: the sleeper's next enter
//!    applies the inbound list and serves the claim, and a sleeper that wakes for another
//!    reason after the claim was made sees it standing ([`Perim::needs_run`]) before it
//!    sleeps again or returns (the claimer looks at the count after its fenced look at
//!    *busy*, [`Perim::is_busy`]: one fence for all its looks). The same holds for pollers (poll(2) and epoll harvest call the
//!    Stream's poll, which enters it), so while nothing in the head must hear of arrivals
//!    otherwise (`HeadProcs::lazy_ok`, no O_ASYNC owner: `handoff_ok`), a claimer that finds
//!    anyone on the wait queue wakes it instead. A datagram from the network then reaches a
//!    waiting reader with one wakeup, as a socket's does, instead of a runner's work item and
//!    a second wakeup. A claimer that finds nobody to wake, a quiet head (`handoff_ok`) and
//!    only ordinary data on the inbound list gives the claim back ([`Gate::give_back`])
//!    instead of scheduling the runner: the data waits for the next enter, as step 5's
//!    would (the gate was not lazy only because a poller, gone since, watched at the last
//!    leave). An express writer (step 8) gives its claim back so too, instead of running the
//!    perimeter (`Perimeter::serve`); it wakes nobody in its place (the waiter's enter would
//!    wake the wait queue again for the same arrival: a second edge for EPOLLET).
//! 7. **direct take** ([`Perim::enter_read`]): read(2)'s and getmsg's enter. When the gate is
//!    lazy (so the puts waiting there claimed nothing and nobody watches the head) and the
//!    head allows it (`HeadProcs::direct_ok`), the inbound list is taken as in step 1, but
//!    band-0 M_DATA whose way up to the head's empty read queue only steps over pass-only put
//!    procedures is kept for the read, which takes it after the head's queue, without the put
//!    up, the head's `putq` and its own `getq`; what the read leaves is put up (as in step 1)
//!    first thing in [`Perim::leave`], before anything newer (`stream/direct.rs`). The take
//!    itself is step 1's (the claim cleared first, the pending counts zeroed and fenced), so
//!    the flow control and the refused writers' back-enables are as for any enter.
//!    The *lazy take*: when the gate is lazy, no claim stands (so only ordinary data waits:
//!    anything else claims, and only a take or [`Gate::give_back`] of ordinary data clears
//!    a claim) and the caller's `ready` says the head's read queue alone satisfies the read
//!    (with the reader token idle: a read that blocks must not leave data behind), the
//!    enter does not take the list at all, and neither does the leave unless a claim came
//!    in meanwhile: that data arrived after everything at the head, and goes up with later
//!    arrivals at the next enter that takes (the reader's, once the head cannot satisfy it,
//!    or any other). Its bytes still count against the writer until then.
//! 8. **express write** ([`Perim::write_express`], `express.rs`): a hold whose write went
//!    across in one step through a one-queue path (`stream/across.rs`) arms the perimeter
//!    when it leaves, if the head allows it (`HeadProcs::express_ok`); while armed, a write
//!    holding no lock puts its message into the target's gate directly, admitted and counted
//!    under the target's inbound lock. Every enter disarms first, under that lock too, and
//!    counts the admitted puts on the path: no express put lands once a hold has begun.
//! 9. **express send** ([`Perim::send_express`], `express_send.rs`): a hold whose putmsg
//!    sent an M_PROTO down, after another that did or when the last arming was used, arms
//!    the perimeter's express send when it leaves, if the head allows it
//!    (`HeadProcs::express_ok`), nothing is pushed above the driver, the driver's write
//!    queue holds nothing and the driver has published its transmit path
//!    (`QCtx::set_express_tx`); while armed, a putmsg holding no lock claims a send (a count
//!    in the armed word) and hands its message to that path, which sends it or declines
//!    (the locked putmsg follows). Every enter disarms, then waits until no send is in
//!    flight, before it takes the inbound list (where a send puts its answer, before it
//!    releases its claim): no locked operation runs while a send is in flight.
//!
//! # Locking
//! The Stream lock ([`sys::Mutex`]) is a sleeping lock taken only in process context (system
//! calls and the workqueue runner). No two Stream locks are ever held together: a put into
//! another Stream takes only that Stream's inbound lock, a leaf (`gate.rs`). Nothing copies to
//! or from user space or allocates with sleeping flags while a Stream lock is held.

pub mod express;
pub mod express_send;
pub mod flow;
pub mod gate;
#[cfg(any(rstreams_test, not(rstreams_kernel)))]
#[doc(hidden)]
pub mod test;
#[cfg(any(rstreams_test, not(rstreams_kernel)))]
#[doc(hidden)]
pub mod tests;

pub use crate::stream::cross::NENTRY;
pub use gate::{Gate, Taken};

use crate::errno::Errno;
use crate::msg::Msg;
use crate::stream::{HeadProcs, Later, QueueId, Stream};
use crate::sys;
use flow::{BandState, BlockState};

/// The Stream head's read queue (pair 0's read side), where an express send's answer goes.
const HEAD_RQ: QueueId = QueueId::of(0, false);

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
    /// Writes across without the Stream lock (step 8, `express.rs`).
    express: express::Express,
    /// putmsg sent by the driver without the Stream lock (step 9, `express_send.rs`).
    send: express_send::ExpressSend,
}

impl<H: HeadProcs> Perim<H> {
    /// The perimeter of `s`. ENOSR when memory runs out (a sleeping allocation: call it in
    /// process context holding no Stream lock).
    pub fn new(s: Stream<H>) -> Result<Perim<H>, Errno> {
        Ok(Perim {
            sd: sys::Mutex::new(s).map_err(|_| Errno::ENOSR)?,
            gate: Gate::new().map_err(|_| Errno::ENOSR)?,
            express: express::Express::new().map_err(|_| Errno::ENOSR)?,
            send: express_send::ExpressSend::new().map_err(|_| Errno::ENOSR)?,
        })
    }

    /// The gate (for the platform's `Perimeter` implementation).
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// Take the Stream lock and apply the inbound list (step 1 of the module docs), then let
    /// the head take up what other Streams changed ([`HeadProcs::sync`]). The gate is busy
    /// until the guard is dropped (step 4).
    pub fn enter(&self) -> PerimGuard<'_, H> {
        self.enter_for()
    }

    /// [`Perim::enter`] for read(2) and getmsg (step 7 of the module docs): when the gate is
    /// lazy and the head allows it ([`HeadProcs::direct_ok`]), ordinary data on the inbound
    /// list is taken for the read instead of being put up to the head (`stream/direct.rs`).
    /// When the gate is lazy, no claim stands (so only ordinary data waits there) and
    /// `ready` says the head's read queue alone satisfies the read, the inbound list is not
    /// taken at all (the lazy take): everything on it arrived after what the head holds.
    /// Only the Stream head's read or getmsg may follow this enter: the lock hold's other
    /// operations would not see that data.
    #[inline]
    pub fn enter_read(&self, ready: impl FnOnce(&Stream<H>) -> bool) -> PerimGuard<'_, H> {
        let mut g = self.lock_disarmed();
        if self.gate.has_pending() {
            // Under the lock: `lazy` was set by the last holder's leave, and nothing that
            // `direct_ok` reads changes without the lock. A claim stands for anything but
            // ordinary data put while the gate was lazy (`Gate::give_back` clears one only
            // for ordinary data).
            let lazy = self.gate.is_lazy();
            if lazy && !self.gate.flag.is_scheduled() && ready(&g) {
                g.set_left();
            } else {
                let direct = lazy && H::direct_ok(&g);
                self.take_inbound(&mut g, direct);
            }
        }
        self.entered(g)
    }

    /// [`Perim::enter`]: take the inbound list.
    #[inline]
    fn enter_for(&self) -> PerimGuard<'_, H> {
        let mut g = self.lock_disarmed();
        if self.gate.has_pending() {
            self.take_inbound(&mut g, false);
        }
        self.entered(g)
    }

    /// The start of every enter: the Stream lock, the gate busy (step 4), and the express
    /// write and send disarmed (steps 8, 9) before the inbound list is taken: the answers of
    /// express sends are on it.
    #[inline]
    fn lock_disarmed(&self) -> sys::MutexGuard<'_, Stream<H>> {
        let mut g = self.sd.lock();
        self.gate.set_busy(true);
        if self.express.armed_locked() | self.send.is_armed() {
            self.disarm(&mut g);
        }
        g
    }

    /// The end of every enter, once the inbound list is dealt with: the head takes up what
    /// other Streams changed ([`HeadProcs::sync`]).
    #[inline]
    fn entered<'a>(&'a self, mut g: sys::MutexGuard<'a, Stream<H>>) -> PerimGuard<'a, H> {
        H::sync(&mut g);
        PerimGuard {
            g,
            gate: &self.gate,
        }
    }

    /// Disarm the express write (step 8) and the express send (step 9), whichever is armed,
    /// first thing in a hold: no express put lands and no express send runs after this;
    /// count those that landed on the path's queue, and let go of the link once the lock is
    /// dropped.
    #[cold]
    #[inline(never)]
    fn disarm(&self, s: &mut Stream<H>) {
        if self.express.armed_locked() {
            if let Some((to, q, n)) = self.express.disarm() {
                s.count_express(q, n);
                s.later_mut().release(to.into_perim());
            }
        }
        if self.send.is_armed() {
            self.disarm_send(s);
        }
    }

    /// Arm the express write (step 8), last thing in a hold whose write went across, if the
    /// head allows it and the path is still one pass-only queue.
    #[cold]
    #[inline(never)]
    fn arm(&self, s: &mut Stream<H>) {
        if !H::express_ok(s) {
            return;
        }
        if let Some((to, q, totals)) = s.express_target() {
            if let Some(old) = self.express.arm(to, q, totals) {
                s.later_mut().release(old.into_perim());
            }
        }
    }

    /// Disarm the express send (step 9) and wait for the sends in flight, first thing in a
    /// hold: no send runs from here until the hold ends; count those made on the driver's
    /// write queue.
    fn disarm_send(&self, s: &mut Stream<H>) {
        let n = self.send.disarm();
        if n != 0 {
            // The path armed with is the published one: a change lets go of it at that leave.
            if let Some(q) = s.express_tx_queue() {
                s.count_express(q, n);
            }
        }
    }

    /// The end of a hold that sent an M_PROTO down (`sent`) or followed one that did: arm
    /// the express send (step 9) if it sent one and the express send looks worth it — the
    /// hold before also sent one (a run of putmsgs), or the last arming was used (an express
    /// send was made before the hold that disarmed it). A request and its reply taking turns
    /// (putmsg, getmsg, putmsg…) then do not arm and disarm at each turn for nothing.
    #[inline]
    fn note_send(&self, s: &mut Stream<H>, sent: bool) {
        let streak = s.set_proto_streak(sent);
        if sent && (streak || self.send.was_used()) {
            self.arm_send(s);
        }
    }

    /// Arm the express send (step 9), last thing in a hold whose putmsg sent an M_PROTO
    /// down, if the driver right below the head published its path with nothing waiting on
    /// its write queue and the head allows it.
    #[cold]
    #[inline(never)]
    fn arm_send(&self, s: &mut Stream<H>) {
        if let Some((tx, totals)) = s.express_tx_target() {
            if H::express_ok(s) {
                self.send.arm(tx, totals);
            }
        }
    }

    /// Whether the express send is armed (step 9; tests and models).
    pub fn express_send_armed(&self) -> bool {
        self.send.is_armed()
    }

    /// An express send (step 9, `express_send.rs`): send a putmsg's parts, `ctl` (a band-0
    /// control part, made M_PROTO here) with `data` linked behind, built before any lock,
    /// through the transmit path the driver published, without the Stream lock.
    /// `Some(claimed)`: sent (a failure answered at the head through this Stream's gate); if
    /// `claimed`, that answer's put claimed this perimeter and the caller runs it. `None`:
    /// not armed, something waits on the inbound list (the locked putmsg applies it first),
    /// or the path declined; the parts are back in their slots for the locked putmsg.
    /// Process context, holding no Stream lock; the claim is held with bottom halves off
    /// (`sys::with_bh_off`), so the path's send must not sleep.
    #[inline]
    pub fn send_express(&self, ctl: &mut Option<Msg>, data: &mut Option<Msg>) -> Option<bool> {
        if !self.send.is_armed() || self.gate.has_pending() {
            return None;
        }
        // The claim is held only with bottom halves off (kernel): a drainer spins for it.
        sys::with_bh_off(|| self.send_claimed(ctl, data))
    }

    /// [`Perim::send_express`] from the claim on.
    #[inline(never)]
    fn send_claimed(&self, ctl: &mut Option<Msg>, data: &mut Option<Msg>) -> Option<bool> {
        let claim = self.send.claim()?;
        let mut m = ctl.take()?;
        m.set_type(crate::msg::M_PROTO);
        if let Some(d) = data.take() {
            m.linkb(d);
        }
        let claimed = match claim.send(m) {
            express_send::Sent::Declined(mut m) => {
                // Apart again, as they came (`claim` is released).
                *data = m.unlinkb();
                *ctl = Some(m);
                return None;
            }
            express_send::Sent::Done => false,
            express_send::Sent::Answer(a) => {
                // The locked put procedure's `qreply`: up to the head's read queue (nothing
                // is pushed while armed). Before the claim is released, so the next hold
                // applies it first; the gate is open while a claim is held.
                self.gate.put_in(HEAD_RQ, a).unwrap_or(false)
            }
        };
        claim.count();
        drop(claim);
        Some(claimed)
    }

    /// Whether the express write is armed (step 8; tests and models).
    pub fn express_armed(&self) -> bool {
        self.express.is_armed()
    }

    /// The word a target checks for this Stream's express writes (loom models drive it by
    /// hand).
    pub fn express_word(&self) -> &express::ExpressWord {
        self.express.word()
    }

    /// An express write (step 8, `express.rs`): put `m`, a write's band-0 M_DATA message built
    /// before any lock (`sth::call`), across to the armed link without the Stream lock, and
    /// run the other Stream if that claimed it. `Ok(bytes)`, or `Err(m)`: not armed, something
    /// waits on this Stream's inbound list, the flow control refused, or the target did not
    /// admit it; the caller then makes the locked write. Process context, holding no Stream
    /// lock.
    pub fn write_express(&self, m: Msg) -> Result<usize, Msg> {
        if !self.express.is_armed() || self.gate.has_pending() {
            return Err(m);
        }
        let n = m.msgsize();
        let word = self.express.word();
        // Under the link's `cell`: the link stays armed, so it needs no counted reference
        // unless the put claimed the target, which is run once `cell` is released.
        let claimed = self.express.put_armed(m, |t, m| {
            if !t.to.bcanput(0) {
                return Err(m);
            }
            let perim = t.to.perim();
            let claimed = perim.put_express(t.to.qid(), m, word, express::key_of(&**perim))?;
            t.count_total();
            Ok(claimed.then(|| perim.clone()))
        })?;
        if let Some(perim) = claimed {
            // Given back when nobody waits on a quiet head (`Perimeter::serve`), else run, as
            // a locked write's `Later` runs it once the lock is dropped.
            perim.serve(1);
        }
        Ok(n)
    }

    /// The runner's enter, for the caller that claimed the perimeter (step 2).
    pub fn run(&self) -> PerimGuard<'_, H> {
        self.gate.flag.begin_run();
        self.enter()
    }

    /// Whether a claimer must leave the run to the lock's holder (step 4): true while the
    /// gate is busy.
    pub fn is_busy(&self) -> bool {
        self.gate.is_busy()
    }

    /// After the guard was dropped: whether work came in that nobody else will apply, so the
    /// caller must run the perimeter (step 4). Fenced: every holder asks it after it clears
    /// *busy* (the rule on [`PerimGuard`]).
    pub fn needs_run(&self) -> bool {
        self.gate.needs_look()
    }

    /// Apply what is on the inbound list, oldest first. Whoever takes the list clears the
    /// claim first, as a run does (step 2): a put after the take claims the perimeter again,
    /// and a claim whose run was left to this holder (step 4) is not left standing with
    /// nothing behind it.
    fn apply_inbound(&self, s: &mut Stream<H>) {
        self.take_inbound(s, false)
    }

    /// [`Perim::apply_inbound`]; with `direct`, the puts are kept for the read that follows
    /// if they may be read directly ([`Stream::take_direct`], `stream/direct.rs`). Else they
    /// are put, oldest first, runs of ordinary data up to the head in one step
    /// (`stream/batch.rs`).
    fn take_inbound(&self, s: &mut Stream<H>, direct: bool) {
        // The claim is cleared before the take, and only when a load shows it set (a lazy
        // put claims nothing, so most direct takes find it clear and skip the swap): a claim
        // made after that load stands, and its server, or this holder's fenced
        // `Gate::needs_look`, runs the Stream once more (at worst a run that finds nothing).
        if self.gate.flag.is_scheduled() {
            self.gate.flag.begin_run();
        }
        let mut t = gate::Taken::default();
        self.gate.take_into(&mut t);
        // The pending counts went back to zero (fenced): a writer refused for them is
        // answered by the publish, so it is due if a refused writer's mark is seen now (one
        // made too late to be seen sees the clear in its own second test, `flow.rs`).
        if self.gate.flows().iter().any(flow::Flow::wanted) {
            s.flow_changed();
        }
        for (q, band) in t.backs() {
            s.backenable_at(q, band);
        }
        if t.back_all {
            s.backenable_linked();
        }
        if direct && s.take_direct(&mut t.puts) {
            return;
        }
        s.put_list(t.puts.take());
    }

    /// Before unlocking (step 3): let the head take up outside changes
    /// ([`HeadProcs::sync`]), run the enabled service procedures, publish the entries' flow
    /// control (if anything it is computed from changed, [`Stream::take_flow_changed`]), and
    /// take what is left for after the unlock. Publishing may back-enable an entry in place
    /// (`Side::publish`), so service procedures run again until none is left.
    ///
    /// Inbound work that arrived during this hold (a loop driver answering a put of ours, a
    /// softirq producer putting meanwhile) is applied here too, for at most [`LEAVE_ROUNDS`]
    /// more rounds, each ended by a publish: a producer that keeps the inbound list busy then
    /// sees the flow control it filled (without the publish it would see none until the hold
    /// ends), and cannot keep the holder — a system call — here for ever. What comes after the
    /// last round is left to the run its put claimed, or to this holder once it lets go
    /// (step 4: `needs_run`), so nothing is stranded.
    #[inline]
    pub fn leave(&self, s: &mut Stream<H>) -> Later {
        self.leave_watched(s, false, false)
    }

    /// [`Perim::leave`] for a Stream that may be `watched`: something outside it (a poller or
    /// an epoll registration on its wait queue, an O_ASYNC owner) is told of each arrival as
    /// it happens, so ordinary puts must not wait for the Stream's own next look (step 5).
    ///
    /// `signalled`: an O_ASYNC owner is told of arrivals by signal, not through the wait
    /// queue, so a claim cannot be handed to the wait queue's pollers (step 6).
    #[inline]
    pub fn leave_watched(&self, s: &mut Stream<H>, watched: bool, signalled: bool) -> Later {
        if self.leave_quiet(s, watched, signalled) {
            return Later::new();
        }
        self.leave_full(s, watched, signalled)
    }

    /// The leave of a hold that left it nothing to act on ([`Stream::hold_is_quiet`]: no
    /// queue enabled, flow control not stale, nothing sent across, no [`Later`] work,
    /// nothing taken directly left) and in which nothing came in that the leave would apply
    /// (nothing on the inbound list, or only what this hold's lazy take left there with no
    /// claim standing): only the gate's lazy and hand-off flags are set, as the full leave
    /// ([`Perim::leave_full`]) would set them after finding the same. Whether it was such a
    /// hold (else nothing was done but perhaps the head's [`HeadProcs::sync`], which the full
    /// leave does again after putting up what a direct take left, as here with nothing left).
    /// The common hold of a pipe's reader.
    #[inline]
    pub fn leave_quiet(&self, s: &mut Stream<H>, watched: bool, signalled: bool) -> bool {
        if s.direct_first().is_some() {
            return false;
        }
        H::sync(s);
        if !s.hold_is_quiet() {
            return false;
        }
        // The full leave's first look at the inbound list, and its rule for a lazy take's.
        if self.gate.has_pending() && (!s.left_inbound() || self.gate.flag.is_scheduled()) {
            return false;
        }
        s.take_left();
        self.set_watchers(s, watched, signalled);
        true
    }

    /// The last step of every leave: whether puts may be left for the Stream's own next
    /// look (step 5) and claims handed to its waiters (step 6), now that the hold is over.
    #[inline]
    fn set_watchers(&self, s: &Stream<H>, watched: bool, signalled: bool) {
        let quiet = H::lazy_ok(s);
        self.gate.set_lazy(!watched && quiet);
        self.gate.set_handoff(!signalled && quiet);
    }

    /// [`Perim::leave_watched`] of a hold that is not quiet ([`Perim::leave_quiet`]).
    #[inline(never)]
    pub fn leave_full(&self, s: &mut Stream<H>, watched: bool, signalled: bool) -> Later {
        // What a read took directly and did not read goes up first, before anything newer
        // (step 7).
        s.settle_direct();
        // The read's enter left ordinary data on the inbound list (step 7, the lazy take):
        // so does the leave, unless something that claims came in meanwhile.
        let left = s.take_left();
        H::sync(s);
        let mut round = 0;
        loop {
            while s.has_enabled() {
                s.runqueues();
            }
            if s.take_flow_changed() {
                self.publish(s);
            }
            if s.has_enabled() {
                continue; // a back-enable in place (`Side::publish`) enabled a queue here
            }
            if round == LEAVE_ROUNDS
                || !self.gate.has_pending()
                || (left && !self.gate.flag.is_scheduled())
            {
                break;
            }
            round += 1;
            self.apply_inbound(s);
            H::sync(s);
        }
        if s.take_wrote_across() {
            self.arm(s);
        }
        if s.take_express_tx_changed() {
            drop(self.send.forget()); // never the last reference to what may sleep (`ExpressTx`)
        }
        let sent = s.take_sent_proto();
        if sent || s.proto_streak() {
            self.note_send(s, sent);
        }
        self.set_watchers(s, watched, signalled);
        s.take_later()
    }

    /// Publish the flow control of each entry (`flow.rs`) and back-enable the Streams whose
    /// refused writers can go on.
    // Out of line: most lock holds skip it, and `leave_watched` stays small.
    #[inline(never)]
    pub fn publish(&self, s: &mut Stream<H>) {
        if self.publish_is_idle(s) {
            return;
        }
        let (entries, flowqs) = s.entries_and_flowqs();
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
            let Some(fq) = flowqs.get(slot).copied().flatten() else {
                continue;
            };
            let Some(queue) = s.queue(fq) else {
                continue;
            };
            let hiwat = queue.hiwat();
            let blocks = BlockState {
                mblkmax: queue.mblkmax(),
                full: queue.blocks_full(),
            };
            // `Queue::band_is_low`, with the block test made once.
            let blocks_low = queue.blocks_low();
            let band0 = BandState {
                band: 0,
                full: queue.flags().contains(crate::queue::QFlags::QFULL),
                low: blocks_low && queue.count() <= queue.lowat(),
            };
            if queue.nband() == 0 {
                // The common case, band 0 alone: no bands' iterator, no table of bands.
                let mut back0 = false;
                f.publish(hiwat, blocks, core::iter::once(band0), |_| back0 = true);
                if back0 {
                    s.backenable_remote(q, 0);
                }
                continue;
            }
            // Bands to back-enable, one bit each (`queue` borrows the Stream meanwhile).
            let mut backs = [0u64; 4];
            let bands = (1..=queue.nband()).filter_map(move |b| {
                let b = u8::try_from(b).ok()?;
                let full = queue.band_flags(b).contains(crate::queue::QbFlags::QB_FULL);
                let low = blocks_low && queue.band_count(b) <= queue.band_lowat(b);
                Some(BandState { band: b, full, low })
            });
            f.publish(hiwat, blocks, core::iter::once(band0).chain(bands), |b| {
                if let Some(w) = backs.get_mut(usize::from(b / 64)) {
                    *w |= 1u64 << (b % 64);
                }
            });
            for (i, mut w) in backs.into_iter().enumerate() {
                while w != 0 {
                    let bit = w.trailing_zeros();
                    w &= w - 1;
                    if let Ok(b) = u8::try_from(i * 64 + bit as usize) {
                        s.backenable_remote(q, b);
                    }
                }
            }
        }
    }

    /// Whether a publish would store nothing and back-enable nobody: the entries are as last
    /// published (not stale, each slot claimed for its entry, the others free), and each
    /// entry's flow queue has band 0 alone with the same QFULL, block-full state, high-water
    /// mark and block limit as its slot holds, and no refused writer waits for a back-enable
    /// ([`Flow::band0_unchanged`]). The common lock hold of a pipe's reader (its head queue
    /// filled and drained, never full) then ends with these few loads instead of the publish.
    fn publish_is_idle(&self, s: &Stream<H>) -> bool {
        let Some((entries, flowqs)) = s.entries_cached() else {
            return false;
        };
        for ((f, entry), fq) in self.gate.flows().iter().zip(entries).zip(flowqs) {
            let Some(q) = entry else {
                if !f.is_free() {
                    return false;
                }
                continue;
            };
            if !f.is_for(q.raw()) {
                return false;
            }
            let Some(queue) = fq.and_then(|fq| s.queue(fq)) else {
                continue; // `publish` skips it too
            };
            if queue.nband() != 0 {
                return false;
            }
            let blocks = BlockState {
                mblkmax: queue.mblkmax(),
                full: queue.blocks_full(),
            };
            let full = queue.flags().contains(crate::queue::QFlags::QFULL);
            if !f.band0_unchanged(queue.hiwat(), blocks, full) {
                return false;
            }
        }
        true
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

/// A held Stream lock (from [`Perim::enter`] or [`Perim::run`]). While it lives the gate is
/// busy; dropping it clears that, then unlocks (step 4 of the module docs: the holder then
/// asks [`Perim::needs_run`]).
///
/// # Locking
/// *Busy* is set and cleared with relaxed stores (`Gate::set_busy`): the hand-off's argument
/// is carried by two fences, the claimer's before it loads *busy* (`Gate::is_busy`) and the
/// holder's in [`Perim::needs_run`] after it cleared it. So the rule: **every clear of busy is
/// followed by the holder's [`Perim::needs_run`]** before the holder returns or sleeps: after
/// the drop (the platform's unlock: `TestPerim::op`, `TestPerim::run`, and the kernel's
/// `StrPerim::act` and `Perimeter::run`), or after [`PerimGuard::unbusy`] when the holder is
/// about to sleep with the lock (the drop inside the sleep then only clears it again). A
/// holder that drops the guard and never asks could leave a claimer's put standing unseen
/// (loom model (g) catches one whose look has no fence).
pub struct PerimGuard<'a, H: HeadProcs> {
    g: sys::MutexGuard<'a, Stream<H>>,
    gate: &'a Gate,
}

impl<H: HeadProcs> core::ops::Deref for PerimGuard<'_, H> {
    type Target = Stream<H>;
    fn deref(&self) -> &Stream<H> {
        &self.g
    }
}

impl<H: HeadProcs> core::ops::DerefMut for PerimGuard<'_, H> {
    fn deref_mut(&mut self) -> &mut Stream<H> {
        &mut self.g
    }
}

impl<H: HeadProcs> PerimGuard<'_, H> {
    /// Stop being busy while still holding the lock (a holder about to sleep with it: it
    /// asks [`Perim::needs_run`] itself before it does, as the type's rule says).
    pub fn unbusy(&mut self) {
        self.gate.set_busy(false);
    }
}

impl<H: HeadProcs> Drop for PerimGuard<'_, H> {
    fn drop(&mut self) {
        // Before the unlock (the field drops after this): a claimer that still finds the gate
        // busy is sure to be seen by our `needs_run` (the caller asks it after the drop: the
        // type's rule), one that finds it free takes the lock.
        self.gate.set_busy(false);
    }
}
