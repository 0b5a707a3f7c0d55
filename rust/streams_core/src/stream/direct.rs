//! The direct take (issue 12): ordinary data a read takes straight from its Stream's inbound
//! list, without the put up to the Stream head, the head's `putq` and the read's `getq`.
//!
//! A read enters its Stream with `Perim::enter_read`. When something waits on the inbound
//! list, the gate is lazy (the puts claimed nothing: nobody watches the head) and the head
//! allows it ([`HeadProcs::direct_ok`]: a Stream head with no read fill, write hold,
//! signals, hangup or error), the reader takes the list as every enter does
//! (`Gate::take_into`: the claim cleared first, the pending counts zeroed and fenced, so
//! the refused writer's mark is seen by the publish as before) and applies its back-enables,
//! but keeps its puts here instead of putting them up ([`Stream::take_direct`]) when all of
//! them are band-0 M_DATA for one queue whose put reaches the head's read queue stepping only
//! over pass-only put procedures (each pair idle and opened, its queues empty, nothing
//! deferred: what `put_once` steps over), and the head's read queue is empty with no writer
//! waiting on it (QWANTW). Or when the puts are one band-0 M_PROTO message (a TPI driver's
//! T_UNITDATA_IND) whose path may also step over a put procedure that passes data while the
//! next queue has room (`Pass::Flow`: the `udp` driver's read side while TS_IDLE), as
//! `put_once` would. Anything else is applied as before.
//!
//! The head reads these messages as if they were queued behind its read queue
//! ([`Stream::direct_first`], [`Stream::direct_pop`]). They are counted as put on every
//! queue of their path and on the head (module statistics) when they are taken, all of them
//! in one walk of the path, as the enter's put-up would have counted them (`batch.rs`).
//! Each one read clears QWANTR as its `getq` would; the head notes its arrival events itself
//! (for the rest it puts back). What the read does not take goes up to the head's read put
//! procedure in one run, as an enter puts up the inbound list (`batch.rs`: `rput_run`,
//! not counted again; the one M_PROTO message of a TPI driver goes to the head's put
//! procedure, as the put stepping over the path would have brought it), when the lock hold
//! ends, first thing ([`Stream::settle_direct`], from `Perim::leave`), before any later
//! inbound work: it lands behind the rest of a split message in order. That run is what the
//! enter's put-up would do with it: within the hold nothing but the read runs, so the path
//! still passes to the head and the Stream is still open.
//!
//! The take needs the head's read queue empty, so it serves a reader that keeps up with its
//! writer. A reader that lags (a backlog at the head) reads from the head's queue; when that
//! queue alone satisfies the read, its enter leaves the inbound list where it is (the lazy
//! take, `perim` step 7, recorded here as `left` for the leave), so the arrivals go up in
//! large runs (`batch.rs`) once the head runs short, instead of one put-up per read. Nothing else runs between the take and the
//! read (only read(2) and getmsg enter so; getmsg takes these messages as read does, after
//! the head's queue: they are band 0, so a getmsg for high-priority or a higher band leaves
//! them to be put up).
//!
//! Why the head's queue ends as it would have: the messages read here never enter it, and
//! those that would have were put and taken back within one lock hold in which nobody looks
//! at it (the put path steps over pass-only procedures, the read only takes). QFULL follows
//! the counts alone (`Queue::update_full`), a waiting writer (QWANTW) is excluded, and QWANTR
//! is cleared as `getq` clears it; so the counts, flags and the flow control published at the
//! end of the hold are the same.

use super::{HeadProcs, QueueId, Stream};
use crate::msg::{Msg, M_DATA, M_PROTO};
use crate::queue::QFlags;

/// Messages taken from the inbound list for the read in progress (see the module docs).
///
/// # Invariants
/// `taken` is `None` whenever no read holds the Stream lock (`Perim::leave` settles it first).
#[derive(Default)]
pub(crate) struct Direct {
    /// The queue the messages were put into, and the messages, oldest first through `b_next`.
    taken: Option<(QueueId, Msg)>,
    /// The read's enter left ordinary data on the inbound list, the head's queue being
    /// enough for the read (the lazy take, `perim` step 7): the leave leaves it too.
    left: bool,
}

impl<H: HeadProcs> Stream<H> {
    /// The reader's enter took `puts` (oldest first) from the inbound list: keep them for the
    /// read if they may be read directly (module docs), and say so; else leave them for the
    /// caller to apply.
    #[inline]
    pub(crate) fn take_direct(&mut self, puts: &mut Option<Msg>) -> bool {
        let Some(first) = puts.as_ref() else {
            return false;
        };
        if first.db_type() == M_PROTO {
            return self.take_direct_one(puts);
        }
        let dest = first.0.dest;
        let mut m = Some(first);
        let mut n = 0;
        while let Some(x) = m {
            if x.0.dest != dest || x.db_type() != M_DATA || x.band() != 0 {
                return false;
            }
            m = x.0.next.as_ref();
            n += 1;
        }
        let Some(q) = QueueId::from_raw(dest) else {
            return false;
        };
        if !self.direct_room() || !self.passes_to_head(q) {
            return false;
        }
        self.count_path(q, n);
        self.direct.taken = puts.take().map(|list| (q, list));
        true
    }

    /// [`Stream::take_direct`] of one band-0 M_PROTO message (a TPI driver's
    /// T_UNITDATA_IND): its path may also step over a put procedure that passes data on
    /// while the next queue has room (`Pass::Flow`, [`Stream::passes_to_head_one`]). One
    /// only: the room for a second message would be judged with the first one in the head's
    /// queue, where it is not.
    #[inline(never)]
    fn take_direct_one(&mut self, puts: &mut Option<Msg>) -> bool {
        let Some(m) = puts.as_ref() else {
            return false;
        };
        if m.0.next.is_some() || m.band() != 0 {
            return false;
        }
        let (ty, q) = (m.db_type(), QueueId::from_raw(m.0.dest));
        let Some(q) = q else {
            return false;
        };
        if !self.direct_room() || !self.passes_to_head_one(q, ty) {
            return false;
        }
        self.count_path(q, 1);
        self.direct.taken = puts.take().map(|list| (q, list));
        true
    }

    /// Whether the head can take a direct take now (module docs): the Stream is open, its
    /// read queue is empty with no writer waiting on it, and no take is held (never: every
    /// `Perim::leave` settles it; one would be overwritten: refused).
    #[inline]
    fn direct_room(&self) -> bool {
        debug_assert!(self.direct.taken.is_none());
        let head_idle = self
            .queue(self.head_rq())
            .is_some_and(|hq| hq.first().is_none() && !hq.flags().contains(QFlags::QWANTW));
        !self.closed && head_idle && self.direct.taken.is_none()
    }

    /// The read's enter left what waits on the inbound list there (`perim` step 7, the lazy
    /// take): [`Stream::take_left`] tells the leave.
    #[inline]
    pub(crate) fn set_left(&mut self) {
        self.direct.left = true;
    }

    /// Whether this lock hold's enter left the inbound list for a read the head's queue
    /// satisfies; cleared (`Perim::leave`).
    #[inline]
    pub(crate) fn take_left(&mut self) -> bool {
        core::mem::replace(&mut self.direct.left, false)
    }

    /// Whether this lock hold's enter left data on the inbound list (tests and models: a read
    /// that would block must never have).
    pub fn left_inbound(&self) -> bool {
        self.direct.left
    }

    /// The next message of the direct take, if any.
    #[inline]
    pub(crate) fn direct_first(&self) -> Option<&Msg> {
        self.direct.taken.as_ref().map(|(_, m)| m)
    }

    /// Take the next message of the direct take (counted as put along its path when it was
    /// taken), leaving the head's read queue as its `putq` and `getq` would have
    /// ([`Queue::bypassed`](crate::queue::Queue::bypassed)).
    pub(crate) fn direct_pop(&mut self) -> Option<Msg> {
        let (q, mut m) = self.direct.taken.take()?;
        self.direct.taken = m.0.next.take().map(|rest| (q, rest));
        let h = self.head_rq();
        if self
            .queue(h)
            .is_some_and(|hq| hq.flags().contains(QFlags::QWANTR))
        {
            if let Some(s) = self.side_mut(h) {
                s.q.bypassed();
            }
        }
        Some(m)
    }

    /// Put up what the read did not take, in order, as an enter puts the inbound list up
    /// (`Perim::leave`, before anything else; `batch.rs`'s run, already counted).
    #[inline]
    pub(crate) fn settle_direct(&mut self) {
        if self.direct.taken.is_some() {
            self.settle_direct_slow();
        }
    }

    #[cold]
    fn settle_direct_slow(&mut self) {
        if let Some((q, list)) = self.direct.taken.take() {
            if list.db_type() == M_PROTO {
                // The one message of `take_direct_one` (counted there), into the head's put
                // procedure as the put stepping over the path would have brought it: the head
                // had room at the take, and nothing was queued there since.
                debug_assert!(!self.closed && list.0.next.is_none());
                H::rput(self, list);
                return;
            }
            // What `put_list` does with the run (module docs), less its count.
            debug_assert!(!self.closed && self.passes_to_head(q));
            H::rput_run(self, list);
        }
    }
}
