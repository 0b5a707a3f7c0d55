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
//! that has one, marking QBACK/QB_BACK. The walk stops at the Stream head, whose QBACK tells
//! the (future) head to wake writers.

use super::{QueueId, Role, Stream};
use crate::errno::Errno;
use crate::msg::Msg;
use crate::queue::{QEvent, QField, QFlags, Queue};

/// The context of a running procedure (or of outside code acting on one queue).
pub struct QCtx<'a> {
    s: &'a mut Stream,
    q: QueueId,
}

impl<'a> QCtx<'a> {
    pub(crate) fn new(s: &'a mut Stream, q: QueueId) -> QCtx<'a> {
        QCtx { s, q }
    }

    /// The queue this context acts on.
    pub fn qid(&self) -> QueueId {
        self.q
    }
    /// Read-only view of this queue (counts, watermarks, flags, messages).
    pub fn queue(&self) -> Option<&Queue> {
        self.s.queue(self.q)
    }
    /// `q_flag` of this queue.
    pub fn flags(&self) -> QFlags {
        self.queue().map_or(QFlags::default(), Queue::flags)
    }
    /// Whether this is a read queue.
    pub fn is_read(&self) -> bool {
        self.q.is_read()
    }
    /// A context on the other queue of this pair (`OTHERQ(q)`: SVR4's `RD(q)`/`WR(q)` in a
    /// driver). A loopback driver's write side asks `cx.otherq().bcanputnext(band)` before it
    /// `qreply`s, and its read service procedure (back-enabled from upstream) restarts the write
    /// side with `cx.otherq().qenable()`. The instance stays out of the arena as before.
    pub fn otherq(&mut self) -> QCtx<'_> {
        QCtx::new(self.s, self.q.otherq())
    }

    /// A context on any queue `q` of this arena (`put(9F)`-style access to another queue): a
    /// multiplexing driver reaches the queues of its other Streams with it, e.g.
    /// `cx.at(lower_wq).putnext(mp)`. Instances stay out of the arena as with [`otherq`].
    ///
    /// [`otherq`]: QCtx::otherq
    pub fn at(&mut self, q: QueueId) -> QCtx<'_> {
        QCtx::new(self.s, q)
    }

    pub(crate) fn stream(&self) -> &Stream {
        self.s
    }
    pub(crate) fn stream_mut(&mut self) -> &mut Stream {
        self.s
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

    /// putnext: call the next queue's put procedure now. Off the end of the Stream the
    /// message is freed (and counted in [`Stream::dropped`]).
    pub fn putnext(&mut self, mp: Msg) {
        match self.s.next(self.q) {
            Some(n) => self.s.put(n, mp),
            None => {
                drop(mp);
                self.s.count_drop();
            }
        }
    }
    /// put(9F): call this queue's put procedure with `mp` (with [`at`](QCtx::at): a driver
    /// telling a driver of another Stream of its complex, as a loop driver tells its peer).
    /// If that instance is running, `mp` is queued on the queue instead (see `stream`).
    pub fn put(&mut self, mp: Msg) {
        self.s.put(self.q, mp)
    }
    /// qreply: send `mp` the other way (putnext from `OTHERQ(q)`).
    pub fn qreply(&mut self, mp: Msg) {
        let o = self.q.otherq();
        QCtx::new(self.s, o).putnext(mp)
    }
    /// canputnext: can the next queue with a service procedure (or the last queue) take
    /// band-0 data? A refusal marks it QWANTW, so it back-enables this side later.
    pub fn canputnext(&mut self) -> bool {
        self.bcanputnext(0)
    }
    /// bcanputnext: as canputnext, for band `band`.
    pub fn bcanputnext(&mut self, band: u8) -> bool {
        match self.s.next(self.q) {
            Some(n) => self.s.bcanput_from(n, band),
            None => true,
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
}

impl Stream {
    /// Act on what a queue operation on `q` reported.
    pub(crate) fn apply(&mut self, q: QueueId, ev: QEvent) {
        if ev.needs_enable() {
            self.qenable(q);
        }
        if ev.needs_backenable() {
            for band in ev.back_bands().iter() {
                self.backenable(q, band);
            }
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

    /// backq: the queue whose `q_next` is `q`.
    pub fn backq(&self, q: QueueId) -> Option<QueueId> {
        let n = self.pairs.len();
        (0..n)
            .flat_map(|p| [QueueId::of(p, false), QueueId::of(p, true)])
            .find(|b| self.next(*b) == Some(q))
    }

    /// Back-enable: the nearest queue upstream of `q` with a service procedure (or the Stream
    /// head) gets QBACK/QB_BACK for `band` and, if it has a service procedure, is enabled.
    fn backenable(&mut self, q: QueueId, band: u8) {
        let mut b = self.backq(q);
        while let Some(up) = b {
            if self.has_srv(up) || self.role(up) == Some(Role::Head) {
                if let Some(s) = self.side_mut(up) {
                    s.q.set_back(band);
                }
                if self.role(up) == Some(Role::Head) {
                    self.with_head(up.pair(), |s| s.sth_backenable(band));
                }
                self.qenable(up);
                return;
            }
            b = self.backq(up);
        }
    }

    /// bcanput on the first queue from `n` downstream that has a service procedure or no
    /// `q_next` (a queue without one never holds messages, so its flow control is further on).
    fn bcanput_from(&mut self, mut n: QueueId, band: u8) -> bool {
        loop {
            match self.next(n) {
                Some(nn) if !self.has_srv(n) => n = nn,
                _ => break,
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

    /// put(9F): call `q`'s put procedure with `mp`. The Stream head's read queue just queues
    /// it; its write queue passes it on. If `q`'s instance is already running, `mp` is queued
    /// on `q` instead (see the module docs).
    pub fn put(&mut self, q: QueueId, mp: Msg) {
        if self.put_once(q, mp) {
            self.drain_deferred(q.pair());
        }
    }

    /// One put without draining deferred messages; true if `q`'s instance ran (so messages
    /// may have been deferred to its pair meanwhile).
    fn put_once(&mut self, q: QueueId, mp: Msg) -> bool {
        if self.role(q) == Some(Role::Head) {
            self.count_stat(q, super::stats::Stat::Put);
        }
        if q.is_read() && self.role(q) == Some(Role::Head) && self.head_active(q.pair()) {
            self.with_head(q.pair(), |s| s.sth_rput(mp));
            return false;
        }
        let Some(pair) = self.pair_mut(q.pair()) else {
            drop(mp);
            self.count_drop();
            return false;
        };
        if pair.role == Role::Head {
            if q.is_read() {
                let r = pair.sides[0].q.putq(mp);
                self.putq_result(q, r);
            } else {
                QCtx::new(self, q).putnext(mp);
            }
            return false;
        }
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
        self.call_put(q, &mut *inst, mp);
        if let Some(pair) = self.pair_mut(q.pair()) {
            pair.inst = Some(inst);
            pair.running = false;
        }
        true
    }

    fn call_put(&mut self, q: QueueId, inst: &mut dyn super::StreamModule, mp: Msg) {
        self.count_stat(q, super::stats::Stat::Put);
        let mut cx = QCtx::new(self, q);
        if q.is_read() {
            inst.rput(&mut cx, mp)
        } else {
            inst.wput(&mut cx, mp)
        }
    }

    fn putq_result(&mut self, q: QueueId, r: Result<QEvent, Msg>) {
        match r {
            Ok(ev) => self.apply(q, ev),
            Err(mp) => {
                drop(mp);
                self.count_drop();
            }
        }
    }

    /// Feed messages queued by re-entry (on queues of pair `p` without a service procedure)
    /// to the put procedures, now that the instance is free. A loop over `put_once`, so the
    /// stack does not grow with the number of deferred messages.
    pub(crate) fn drain_deferred(&mut self, p: usize) {
        loop {
            let Some(pair) = self.pair_mut(p) else {
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
