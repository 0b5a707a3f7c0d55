//! `QCtx`, what a procedure may do, and the Stream's put/service engine behind it.
//!
//! A procedure gets `&mut QCtx` for the queue it runs on. Everything it may touch goes through
//! the context: its own queue (putq, getq, putbq, flushq, strqget/strqset), the next queue
//! (putnext, canputnext, bcanputnext), the other side (qreply), scheduling (qenable,
//! noenable, enableok). The context never hands out a module instance, and the running
//! instance is out of the arena anyway, so a procedure cannot alias itself.
//!
//! The engine applies the [`QEvent`]s queue operations return: enable requests become
//! `qenable` (only queues with a service procedure are scheduled, as in SVR4), back-enables
//! walk upstream (`backq`) past queues without a service procedure and enable the first one
//! that has one, marking QBACK/QB_BACK. At the Stream head the walk ends in the head's
//! back-enable procedure ([`HeadProcs::backenable`]), which wakes its writers.
//!
//! Across a perimeter (a queue with a [`QRef`] instead of a `q_next`) putnext hands the
//! message to the other Stream's inbound list, and bcanputnext asks that Stream's published
//! flow-control state (`cross.rs`).
//!
//! `QCtx` is the same type whatever the Stream's head: it reaches the Stream through the
//! object-safe [`Engine`] trait, so module code is written once.

use super::cross::Later;
use super::{HeadProcs, QRef, QueueId, Role, Side, Stream};
use crate::errno::Errno;
use crate::msg::Msg;
use crate::queue::{QEvent, QField, QFlags, Queue};

/// What a [`QCtx`] needs from its Stream, whatever the Stream's head type.
pub(crate) trait Engine {
    fn side(&self, q: QueueId) -> Option<&Side>;
    fn side_mut(&mut self, q: QueueId) -> Option<&mut Side>;
    fn apply(&mut self, q: QueueId, ev: QEvent);
    fn flush(&mut self, q: QueueId, band: Option<u8>, flag: i32) -> usize;
    fn putnext_from(&mut self, q: QueueId, mp: Msg);
    fn put(&mut self, q: QueueId, mp: Msg);
    fn bcanputnext_from(&mut self, q: QueueId, band: u8) -> bool;
    fn qenable(&mut self, q: QueueId);
    fn name(&self, q: QueueId) -> Option<&'static str>;
    fn driver_name(&self) -> Option<&'static str>;
    fn set_timeout(&mut self, q: QueueId, deadline_ns: Option<u64>);
    fn set_remote(&mut self, q: QueueId, to: Option<QRef>);
    fn later_mut(&mut self) -> &mut Later;
    fn qref_here(&self, q: QueueId) -> Option<QRef>;
    fn set_express_tx(
        &mut self,
        q: QueueId,
        tx: Option<crate::sys::Arc<dyn crate::perim::express_send::ExpressTx>>,
    );
}

/// The context of a running procedure (or of outside code acting on one queue).
pub struct QCtx<'a> {
    s: &'a mut dyn Engine,
    q: QueueId,
}

impl<'a> QCtx<'a> {
    pub(crate) fn new<H: HeadProcs>(s: &'a mut Stream<H>, q: QueueId) -> QCtx<'a> {
        QCtx { s, q }
    }

    /// The queue this context acts on.
    pub fn qid(&self) -> QueueId {
        self.q
    }
    /// Read-only view of this queue (counts, watermarks, flags, messages).
    pub fn queue(&self) -> Option<&Queue> {
        self.s.side(self.q).map(|s| &s.q)
    }
    /// `q_flag` of this queue.
    pub fn flags(&self) -> QFlags {
        self.queue().map_or(QFlags::default(), Queue::flags)
    }
    /// Whether this is a read queue.
    pub fn is_read(&self) -> bool {
        self.q.is_read()
    }
    /// Name (`mi_idname`) of the module or driver this queue belongs to.
    pub fn name(&self) -> Option<&'static str> {
        self.s.name(self.q)
    }
    /// Name of this Stream's driver (`None` for a Stream without one, such as a FIFO).
    pub fn driver_name(&self) -> Option<&'static str> {
        self.s.driver_name()
    }
    /// A context on the other queue of this pair (`OTHERQ(q)`: SVR4's `RD(q)`/`WR(q)` in a
    /// driver). A loopback driver's write side asks `cx.otherq().bcanputnext(band)` before it
    /// `qreply`s, and its read service procedure (back-enabled from upstream) restarts the write
    /// side with `cx.otherq().qenable()`. The instance stays out of the arena as before.
    pub fn otherq(&mut self) -> QCtx<'_> {
        QCtx {
            s: &mut *self.s,
            q: self.q.otherq(),
        }
    }

    /// The link of this queue into another Stream (see `Side::remote`), if any.
    pub fn remote(&self) -> Option<&QRef> {
        self.s.side(self.q)?.remote.as_ref()
    }
    /// Link this queue to a queue of another Stream (or unlink it with `None`): on a queue
    /// without `q_next`, putnext and canputnext then go there; on the entry of a twist it is
    /// where this Stream's back-enables go. A replaced link is released after the lock is
    /// dropped.
    pub fn set_remote(&mut self, to: Option<QRef>) {
        self.s.set_remote(self.q, to)
    }
    /// Publish `tx` as this (driver's write) queue's transmit path for the express send, or
    /// withdraw it with `None` (`perim/express_send.rs`): the driver publishes it only while
    /// its write put procedure would do nothing with a request but what `tx` does, and
    /// withdraws it (under the lock, in the procedure that changes that) as soon as not.
    pub fn set_express_tx(
        &mut self,
        tx: Option<crate::sys::Arc<dyn crate::perim::express_send::ExpressTx>>,
    ) {
        self.s.set_express_tx(self.q, tx)
    }
    /// Run `p` after this Stream's lock is dropped (a driver that claimed another perimeter
    /// with [`crate::stream::Perimeter::put_in`]).
    pub fn run_later(&mut self, p: crate::sys::Arc<dyn super::Perimeter>) {
        self.s.later_mut().run(p)
    }
    /// Let go of `p` after this Stream's lock is dropped (a reference to another Stream the
    /// procedure no longer needs: its last release must not happen under this lock).
    pub fn release_later(&mut self, p: crate::sys::Arc<dyn super::Perimeter>) {
        self.s.later_mut().release(p)
    }
    /// A reference to this queue for code outside this Stream: another Stream (given, say, in
    /// a message made with [`Msg::with_qref`]), a timer or a softirq receive path putting here
    /// with `QRef::put`; if the platform gave this Stream its perimeter
    /// ([`Stream::set_perimeter`]) and the Stream is open.
    pub fn qref_here(&self) -> Option<QRef> {
        self.s.qref_here(self.q)
    }
    /// Put `mp` on queue `to` of another Stream (its put procedure runs there, under that
    /// Stream's lock): the cross-perimeter `put(9F)`. A perimeter the put claims runs after
    /// this Stream's lock is dropped. `Err(mp)`: that Stream is closed.
    pub fn put_to(&mut self, to: &QRef, mp: Msg) -> Result<(), Msg> {
        if to.perim().put_in(to.qid(), mp)? {
            self.s.later_mut().run(to.perim().clone());
        }
        Ok(())
    }
    /// Back-enable queue `to` of another Stream (its service procedure, or the nearest one
    /// upstream of it there, is enabled), running it after this Stream's lock is dropped.
    pub fn backenable_to(&mut self, to: &QRef, band: u8) {
        if to.perim().backenable_in(to.qid(), band) {
            self.s.later_mut().run(to.perim().clone());
        }
    }

    /// putq on this queue. On allocation failure the message comes back.
    pub fn putq(&mut self, mp: Msg) -> Result<(), Msg> {
        let ev = match self.s.side_mut(self.q) {
            Some(s) => s.q.putq(mp)?,
            None => return Err(mp),
        };
        self.s.apply(self.q, ev);
        Ok(())
    }
    /// putbq on this queue (a service procedure that cannot pass `mp` on).
    pub fn putbq(&mut self, mp: Msg) -> Result<(), Msg> {
        let ev = match self.s.side_mut(self.q) {
            Some(s) => s.q.putbq(mp)?,
            None => return Err(mp),
        };
        self.s.apply(self.q, ev);
        Ok(())
    }
    /// getq on this queue; back-enables upstream when the queue drains to its low mark.
    pub fn getq(&mut self) -> Option<Msg> {
        let (mp, ev) = self.s.side_mut(self.q)?.q.getq();
        self.s.apply(self.q, ev);
        mp
    }
    /// rmvq on this queue: take the message at logical position `pos` out (back-enables as
    /// getq does).
    pub fn rmvq(&mut self, pos: usize) -> Option<Msg> {
        let (mp, ev) = self.s.side_mut(self.q)?.q.rmvq(pos);
        self.s.apply(self.q, ev);
        mp
    }
    /// flushq on this queue; returns the number of messages freed.
    pub fn flushq(&mut self, flag: i32) -> usize {
        self.s.flush(self.q, None, flag)
    }
    /// flushq on the other queue of the pair (M_FLUSH handling).
    pub fn flushq_other(&mut self, flag: i32) -> usize {
        self.s.flush(self.q.otherq(), None, flag)
    }
    /// flushband on this queue; returns the number of messages freed.
    pub fn flushband(&mut self, band: u8, flag: i32) -> usize {
        self.s.flush(self.q, Some(band), flag)
    }
    /// strqget on this queue.
    pub fn strqget(&self, what: QField, band: u8) -> Result<usize, Errno> {
        self.queue().ok_or(Errno::EINVAL)?.strqget(what, band)
    }
    /// strqset on this queue.
    pub fn strqset(&mut self, what: QField, band: u8, val: usize) -> Result<(), Errno> {
        let s = self.s.side_mut(self.q).ok_or(Errno::EINVAL)?;
        s.q.strqset(what, band, val)
    }

    /// putnext: call the next queue's put procedure now (across a perimeter: hand the message
    /// to the other Stream). Off the end of the Stream the message is freed (and counted in
    /// [`Stream::dropped`]).
    pub fn putnext(&mut self, mp: Msg) {
        self.s.putnext_from(self.q, mp)
    }
    /// put(9F): call this queue's put procedure with `mp`. If that instance is running, `mp`
    /// is queued on the queue instead (see `stream`).
    pub fn put(&mut self, mp: Msg) {
        self.s.put(self.q, mp)
    }
    /// qreply: send `mp` the other way (putnext from `OTHERQ(q)`).
    pub fn qreply(&mut self, mp: Msg) {
        self.s.putnext_from(self.q.otherq(), mp)
    }
    /// canputnext: can the next queue with a service procedure (or the last queue) take
    /// band-0 data? A refusal marks it QWANTW, so it back-enables this side later.
    pub fn canputnext(&mut self) -> bool {
        self.bcanputnext(0)
    }
    /// bcanputnext: as canputnext, for band `band`.
    pub fn bcanputnext(&mut self, band: u8) -> bool {
        self.s.bcanputnext_from(self.q, band)
    }
    /// Which messages this pair's read (`read`) or write put procedure only passes on
    /// ([`super::Pass`], first read at open), from the next put on: for a put procedure whose
    /// passing depends on its state (a TPI driver's read side passes data only while bound).
    pub fn set_pass(&mut self, read: bool, pass: super::Pass) {
        let q = if read { self.q.rd() } else { self.q.wr() };
        if let Some(s) = self.s.side_mut(q) {
            s.pass = pass;
        }
    }
    /// qenable this queue (if it has a service procedure; once until it runs).
    pub fn qenable(&mut self) {
        self.s.qenable(self.q)
    }
    /// noenable: putq no longer schedules this queue for ordinary messages.
    pub fn noenable(&mut self) {
        if let Some(s) = self.s.side_mut(self.q) {
            s.q.noenable()
        }
    }
    /// enableok: undo noenable.
    pub fn enableok(&mut self) {
        if let Some(s) = self.s.side_mut(self.q) {
            s.q.enableok()
        }
    }
    /// Enable this queue's service procedure once the platform's monotonic clock reaches
    /// `deadline_ns` (replacing this queue's earlier timeout, if any): qtimeout, `timeout.rs`.
    pub fn qtimeout_at(&mut self, deadline_ns: u64) {
        self.s.set_timeout(self.q, Some(deadline_ns))
    }
    /// Cancel this queue's timeout (`quntimeout`).
    pub fn quntimeout(&mut self) {
        self.s.set_timeout(self.q, None)
    }
}

impl<H: HeadProcs> Engine for Stream<H> {
    fn side(&self, q: QueueId) -> Option<&Side> {
        Stream::side(self, q)
    }
    fn side_mut(&mut self, q: QueueId) -> Option<&mut Side> {
        Stream::side_mut(self, q)
    }
    fn apply(&mut self, q: QueueId, ev: QEvent) {
        Stream::apply(self, q, ev)
    }
    fn flush(&mut self, q: QueueId, band: Option<u8>, flag: i32) -> usize {
        Stream::flush(self, q, band, flag)
    }
    fn putnext_from(&mut self, q: QueueId, mp: Msg) {
        Stream::putnext_from(self, q, mp)
    }
    fn put(&mut self, q: QueueId, mp: Msg) {
        Stream::put(self, q, mp)
    }
    fn bcanputnext_from(&mut self, q: QueueId, band: u8) -> bool {
        match self.next(q) {
            Some(n) => self.bcanput_from(n, band),
            None => match self.remote(q) {
                Some(r) => r.bcanput(band),
                None => true,
            },
        }
    }
    fn qenable(&mut self, q: QueueId) {
        Stream::qenable(self, q)
    }
    fn name(&self, q: QueueId) -> Option<&'static str> {
        Stream::name(self, q)
    }
    fn driver_name(&self) -> Option<&'static str> {
        self.driver_wq().and_then(|q| Stream::name(self, q))
    }
    fn set_timeout(&mut self, q: QueueId, deadline_ns: Option<u64>) {
        Stream::set_timeout(self, q, deadline_ns)
    }
    fn set_remote(&mut self, q: QueueId, to: Option<QRef>) {
        Stream::set_remote(self, q, to)
    }
    fn later_mut(&mut self) -> &mut Later {
        Stream::later_mut(self)
    }
    fn qref_here(&self, q: QueueId) -> Option<QRef> {
        Stream::qref_here(self, q)
    }
    fn set_express_tx(
        &mut self,
        q: QueueId,
        tx: Option<crate::sys::Arc<dyn crate::perim::express_send::ExpressTx>>,
    ) {
        Stream::set_express_tx(self, q, tx)
    }
}

impl<H: HeadProcs> Stream<H> {
    /// Act on what a queue operation on `q` reported.
    /// Inline: every putq and getq ends here, and most report nothing.
    #[inline]
    pub(crate) fn apply(&mut self, q: QueueId, ev: QEvent) {
        if ev.needs_enable() {
            self.qenable(q);
        }
        if ev.needs_backenable() {
            self.apply_back(q, ev);
        }
    }

    /// getq on `q` and act on what it reports: [`QCtx::getq`] for the Stream's own code,
    /// without the context's dynamic dispatch (the Stream head's reads).
    #[inline]
    pub(crate) fn getq_at(&mut self, q: QueueId) -> Option<Msg> {
        let (mp, ev) = self.side_mut(q)?.q.getq();
        self.apply(q, ev);
        mp
    }

    /// [`Queue::getq_upto`] on `q`, acting on what it reports (the Stream head's read of a
    /// run of ordinary messages, `sth/read.rs`). Unlike every other change of a queue it
    /// marks the published flow control stale only if the queue's flow state changed
    /// ([`Queue::flow_state`]): a publish after it would store what was published and
    /// back-enable nobody, since a refused writer waits for a change of that state or for
    /// the inbound list to be taken, which marks it stale itself (`perim/flow.rs`). A
    /// reader that keeps taking from a queue that stays below its marks then ends its lock
    /// hold without a publish.
    pub(crate) fn getq_upto_at(
        &mut self,
        q: QueueId,
        bytes: usize,
        msgs: usize,
        accept: impl Fn(&Msg) -> bool,
    ) -> (Option<Msg>, usize) {
        let Some(side) = self
            .pair_mut_quiet(q.pair())
            .and_then(|p| p.sides.get_mut(q.side()))
        else {
            return (None, 0);
        };
        if side.q.band_len(0) == 0 {
            return (None, 0); // the common case of a reader that keeps up
        }
        let before = side.q.flow_state();
        let (mp, n, ev) = side.q.getq_upto(bytes, msgs, accept);
        if side.q.flow_state() != before {
            self.flow_changed();
        }
        self.apply(q, ev);
        (mp, n)
    }

    /// [`Queue::getq_first`] on `q`, acting on what it reports as
    /// [`Stream::getq_upto_at`] does: the message and its bytes.
    #[inline]
    pub(crate) fn getq_first_at(
        &mut self,
        q: QueueId,
        bytes: usize,
        accept: impl Fn(&Msg) -> bool,
    ) -> Option<(Msg, usize)> {
        let side = self
            .pair_mut_quiet(q.pair())
            .and_then(|p| p.sides.get_mut(q.side()))?;
        let (m, n, ev, changed) = side.q.getq_first(bytes, accept)?;
        if changed {
            self.flow_changed();
        }
        self.apply(q, ev);
        Some((m, n))
    }

    /// [`Queue::putq_run`] on `q`, acting on what it reports (the batch put-up of a run of
    /// ordinary data to the Stream head, `batch.rs`), and whether the queue was empty before.
    /// Like [`Stream::getq_upto_at`] it marks the published flow control stale only if the
    /// queue's flow state changed: the refused writer such a put-up could answer waits for
    /// the take of the inbound list it came from (`Perim::take_inbound`). `None` (the run
    /// freed) if `q` does not exist.
    pub(crate) fn putq_run_at(&mut self, q: QueueId, run: Msg) -> Option<bool> {
        let side = self
            .pair_mut_quiet(q.pair())
            .and_then(|p| p.sides.get_mut(q.side()))?;
        let was_empty = side.q.first().is_none();
        let before = side.q.flow_state();
        let ev = side.q.putq_run(Some(run));
        if side.q.flow_state() != before {
            self.flow_changed();
        }
        self.apply(q, ev);
        Some(was_empty)
    }

    /// The back-enables of [`Stream::apply`].
    #[cold]
    fn apply_back(&mut self, q: QueueId, ev: QEvent) {
        for band in ev.back_bands().iter() {
            self.backenable(q, band);
        }
    }

    /// qenable: schedule `q`'s service procedure once (QENAB). No-op without one.
    pub fn qenable(&mut self, q: QueueId) {
        let Some(s) = self.side_mut(q) else {
            return;
        };
        if !s.srv || !s.q.qenable() {
            return;
        }
        // Room was reserved when the pair was created, so this does not allocate.
        if self.runlist.push_back(q).is_err() {
            if let Some(s) = self.side_mut(q) {
                s.q.clear_enabled();
            }
        }
    }

    /// backq: the queue of this Stream whose `q_next` is `q`.
    pub fn backq(&self, q: QueueId) -> Option<QueueId> {
        let n = self.pairs.len();
        (0..n)
            .flat_map(|p| [QueueId::of(p, false), QueueId::of(p, true)])
            .find(|b| self.next(*b) == Some(q))
    }

    /// Back-enable: the nearest queue upstream of `q` with a service procedure (or the Stream
    /// head) gets QBACK/QB_BACK for `band` and, if it has a service procedure, is enabled.
    /// The walk ends at the first queue of this Stream (back-enables across a perimeter are
    /// the perimeter's business: `perim::Perim::publish`).
    fn backenable(&mut self, q: QueueId, band: u8) {
        if let Some(up) = self.backq(q) {
            self.backenable_at(up, band);
        }
    }

    /// Back-enable starting at `q` itself: `q` if it has a service procedure or is the head's
    /// write queue, else the nearest such queue upstream of it. What a back-enable arriving
    /// from another Stream does to the queue whose `q_next` is there.
    pub fn backenable_at(&mut self, q: QueueId, band: u8) {
        let mut b = Some(q);
        while let Some(up) = b {
            let head = up == self.head_wq();
            if self.has_srv(up) || head {
                if let Some(s) = self.side_mut(up) {
                    s.q.set_back(band);
                }
                if head {
                    H::backenable(self, band);
                }
                self.qenable(up);
                return;
            }
            b = self.backq(up);
        }
    }

    /// bcanput on the first queue from `n` downstream that has a service procedure or no
    /// `q_next` (a queue without one never holds messages, so its flow control is further on);
    /// across a perimeter, the other Stream's published state.
    fn bcanput_from(&mut self, mut n: QueueId, band: u8) -> bool {
        loop {
            if self.has_srv(n) {
                break;
            }
            match self.next(n) {
                Some(nn) => n = nn,
                None => {
                    if let Some(r) = self.remote(n) {
                        return r.bcanput(band);
                    }
                    break;
                }
            }
        }
        match self.side_mut(n) {
            Some(s) => s.q.bcanput(band),
            None => true,
        }
    }

    pub(crate) fn flush(&mut self, q: QueueId, band: Option<u8>, flag: i32) -> usize {
        let Some(s) = self.side_mut(q) else {
            return 0;
        };
        let f = match band {
            Some(b) => s.q.flushband(b, flag),
            None => s.q.flushq(flag),
        };
        self.apply(q, f.event);
        f.msgs
    }

    /// putnext from `q`: the next queue's put procedure in this Stream, or the other Stream's
    /// inbound list across a link; off the end the message is freed (and counted).
    pub(crate) fn putnext_from(&mut self, q: QueueId, mp: Msg) {
        if let Some(n) = self.next(q) {
            return self.put(n, mp);
        }
        self.put_remote(q, mp)
    }

    /// The put of `mp` from `q`, which has no `q_next` in this Stream: into the other Stream
    /// across `q`'s link (running it after the lock is dropped when this claimed it), or off
    /// the end (freed and counted).
    pub(crate) fn put_remote(&mut self, q: QueueId, mp: Msg) {
        let Some(r) = self.remote(q) else {
            drop(mp);
            self.count_drop();
            return;
        };
        // The perimeter is cloned (a reference count) only when the put claimed it.
        match r.perim().put_in(r.qid(), mp) {
            Ok(true) => {
                let perim = r.perim().clone();
                self.later.run(perim);
            }
            Ok(false) => {}
            Err(mp) => {
                drop(mp);
                self.count_drop();
            }
        }
    }

    /// put(9F): call `q`'s put procedure with `mp`. The Stream head's read queue gets the
    /// head's read put procedure; its write queue passes the message on. If `q`'s instance is
    /// already running, `mp` is queued on `q` instead (see the module docs).
    pub fn put(&mut self, q: QueueId, mp: Msg) {
        if self.closed {
            // A closed Stream whose gate is still open (one that closed when its link to a
            // multiplexor went): what still arrives is freed, not kept until it is dropped.
            drop(mp);
            self.count_drop();
            return;
        }
        if self.put_once(q, mp) && self.has_deferred(q.pair()) {
            self.drain_deferred(q.pair());
        }
    }

    /// Whether pair `p` is free and has messages deferred by re-entry (`drain_deferred`'s
    /// first test, inline: after most puts there are none).
    #[inline]
    fn has_deferred(&self, p: usize) -> bool {
        self.pair(p)
            .is_some_and(|pair| !pair.running && pair.sides.iter().any(|s| s.deferred > 0))
    }

    /// One put without draining deferred messages; true if `q`'s instance ran (so messages
    /// may have been deferred to its pair meanwhile).
    fn put_once(&mut self, q: QueueId, mp: Msg) -> bool {
        // Quiet: taking the instance out changes no queue (the busy case's putq says so).
        let Some(pair) = self.pair_mut_quiet(q.pair()) else {
            drop(mp);
            self.count_drop();
            return false;
        };
        if pair.role == Role::Head {
            pair.count_stat(q.side(), super::stats::Stat::Put);
            if q.is_read() {
                H::rput(self, mp);
            } else {
                // The head sends down with putnext; a put on its write queue can only come
                // from another Stream (a multiplexor's upper half that has not yet seen its
                // link go): the head pair is no lower half (any more), so it goes nowhere.
                drop(mp);
                self.count_drop();
            }
            return false;
        }
        // `Pass`: an idle pair whose put procedure would only putnext this message, with
        // nothing queued ahead of it (messages deferred by re-entry, or queued by the module,
        // keep their order): count the put and pass it on. `running` is set meanwhile, so a
        // put that comes back into this pair is deferred as it would be while the put
        // procedure ran.
        if pair.steps_over(q.side(), mp.db_type()) {
            pair.running = true;
            pair.count_stat(q.side(), super::stats::Stat::Put);
            self.putnext_from(q, mp);
            if let Some(pair) = self.pair_mut_quiet(q.pair()) {
                pair.running = false;
            }
            return true;
        }
        // `Pass::Flow`: the same, if the next queue has room for the message's band.
        let (pair, mp) = if pair.steps_over_flow(q.side(), mp.db_type()) {
            let Some(mp) = self.put_over_flow(q, mp) else {
                return true;
            };
            // Borrowed again: the flow check needed the whole Stream.
            let Some(pair) = self.pair_mut_quiet(q.pair()) else {
                drop(mp);
                self.count_drop();
                return false;
            };
            (pair, mp)
        } else {
            (pair, mp)
        };
        let inst = if pair.running { None } else { pair.inst.take() };
        let Some(mut inst) = inst else {
            // Busy (or still opening): queue it; the service procedure or the running
            // procedure's caller will pick it up.
            let Some(side) = pair.sides.get_mut(q.side()) else {
                return false;
            };
            match side.q.putq(mp) {
                Ok(ev) => {
                    if !side.srv {
                        side.deferred = side.deferred.saturating_add(1);
                    }
                    self.flow_changed();
                    self.apply(q, ev);
                    self.qenable(q);
                }
                Err(mp) => {
                    drop(mp);
                    self.count_drop();
                }
            }
            return false;
        };
        pair.running = true;
        pair.count_stat(q.side(), super::stats::Stat::Put);
        self.call_put(q, &mut *inst, mp);
        if let Some(pair) = self.pair_mut_quiet(q.pair()) {
            // The slot is empty while `running` (this put took the instance out): test for
            // that inline instead of calling the drop glue of the `None` it overwrites.
            if let Some(old) = pair.inst.replace(inst) {
                drop(old);
            }
            pair.running = false;
        }
        true
    }

    /// `put_once` on a [`Pass::Flow`](super::Pass::Flow) side that may be stepped over: pass
    /// `mp` on as the step over does if the next queue has room for its band; else give it
    /// back for the put procedure (out of line: the common steps over stay as they were).
    #[inline(never)]
    fn put_over_flow(&mut self, q: QueueId, mp: Msg) -> Option<Msg> {
        if !self.bcanputnext_from(q, mp.band()) {
            return Some(mp);
        }
        if let Some(pair) = self.pair_mut_quiet(q.pair()) {
            pair.running = true;
            pair.count_stat(q.side(), super::stats::Stat::Put);
        }
        self.putnext_from(q, mp);
        if let Some(pair) = self.pair_mut_quiet(q.pair()) {
            pair.running = false;
        }
        None
    }

    /// Call `inst`'s put procedure for `q` (counted by the caller, `put_once`).
    fn call_put(&mut self, q: QueueId, inst: &mut dyn super::StreamModule, mp: Msg) {
        let mut cx = QCtx::new(self, q);
        if q.is_read() {
            inst.rput(&mut cx, mp)
        } else {
            inst.wput(&mut cx, mp)
        }
    }

    /// Feed messages queued by re-entry (on queues of pair `p` without a service procedure)
    /// to the put procedures, now that the instance is free. A loop over `put_once`, so the
    /// stack does not grow with the number of deferred messages.
    pub(crate) fn drain_deferred(&mut self, p: usize) {
        loop {
            // Quiet until a deferred message is taken off its queue (the common case: none).
            let Some(pair) = self.pair_mut_quiet(p) else {
                return;
            };
            if pair.running {
                return;
            }
            let Some(side) = pair.sides.iter().position(|s| s.deferred > 0) else {
                return;
            };
            let Some(sd) = pair.sides.get_mut(side) else {
                return;
            };
            sd.deferred -= 1;
            let (mp, ev) = sd.q.getq();
            let q = QueueId::of(p, side == 1);
            self.flow_changed();
            self.apply(q, ev);
            if let Some(mp) = mp {
                let _ = self.put_once(q, mp);
            }
        }
    }

    /// Run `q`'s service procedure; false if it has none or its instance is busy.
    pub(crate) fn run_srv(&mut self, q: QueueId) -> bool {
        let Some(pair) = self.pair_mut(q.pair()) else {
            return false;
        };
        if pair.running || !pair.sides.get(q.side()).is_some_and(|s| s.srv) {
            return false;
        }
        let Some(mut inst) = pair.inst.take() else {
            return false;
        };
        pair.running = true;
        self.count_stat(q, super::stats::Stat::Srv);
        {
            let mut cx = QCtx::new(self, q);
            if q.is_read() {
                inst.rsrv(&mut cx)
            } else {
                inst.wsrv(&mut cx)
            }
        }
        if let Some(pair) = self.pair_mut(q.pair()) {
            pair.inst = Some(inst);
            pair.running = false;
            // The service procedure had its chance to look at QBACK/QB_BACK.
            if let Some(s) = pair.sides.get_mut(q.side()) {
                s.q.clear_back();
            }
        }
        self.drain_deferred(q.pair());
        true
    }
}
