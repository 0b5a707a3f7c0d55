//! The write pass-across (issue 12): a write's message goes from the Stream head's write
//! queue straight to the Stream its path leaves into, instead of one put per queue.
//!
//! A pipe end's write path is the head's write queue, the modules pushed on it and the twist,
//! whose write queue has no `q_next` in this Stream: its put hands the message to the other
//! end's inbound list (`cross.rs`). With nothing pushed that is a `putnext_from` at the head, a
//! `put_once` of the twist (stepped over: `Pass::All`), a second `putnext_from` there, and
//! before that `canputnext`'s own walk of the same queues. Like the batch put-up on the read
//! side (`batch.rs`: [`Stream::passes_to_head`], [`Stream::count_path`]), when the put of a
//! band-0 M_DATA message from queue `from` reaches the queue through which it leaves the
//! Stream stepping only over pass-only put procedures without a service procedure (each pair
//! idle and opened, its queue empty, nothing deferred: what `put_once` steps over; and
//! nothing on the way that `canputnext` would stop at), [`Stream::passes_across`] names that
//! queue, and the write asks its link's published flow control once and puts the message
//! there ([`Stream::put_across`]), counted as put on each queue of the path as the per-queue
//! puts would count it.
//!
//! Why that is the per-queue put: on such a path every `put_once` only counts the put, marks
//! its pair running for the time of the nested put and clears it again (nothing can re-enter
//! this Stream meanwhile: the put that leaves it only takes the other Stream's inbound lock),
//! and finds nothing deferred after it; `canputnext` from the head walks the same queues (none
//! has a service procedure) to the same link and asks it the same question. The pairs keep no
//! state of a put but its statistic, and nothing here touches a queue, so the flow control
//! stays as published (`pair_mut_quiet`), as it does for the per-queue puts.
//!
//! A hold whose write went across through a path of one queue (a pipe end with nothing
//! pushed) arms the perimeter's express write when it leaves ([`Stream::express_target`],
//! `perim/express.rs`): the next writes then go across without the Stream lock at all.

use super::stats::{Stat, Totals};
use super::{HeadProcs, QRef, QueueId, Role, Stream};
use crate::msg::{Msg, M_DATA};

impl<H: HeadProcs> Stream<H> {
    /// The queue through which a band-0 M_DATA message put next from `from` leaves this
    /// Stream (its link, [`Stream::remote`], is set) when every queue on the way belongs to
    /// an idle, opened pair whose put procedure only passes data on, holds nothing, has
    /// nothing deferred and has no service procedure, and the Stream is open (module docs).
    pub(crate) fn passes_across(&self, from: QueueId) -> Option<QueueId> {
        if self.closed {
            return None;
        }
        let mut q = self.next(from)?;
        for _ in 0..self.npairs() {
            let pair = self.pair(q.pair())?;
            if pair.role == Role::Head
                || !pair.steps_over(q.side(), M_DATA)
                || pair.sides.iter().any(|s| s.deferred > 0)
            {
                return None;
            }
            let side = pair.sides.get(q.side())?;
            if side.srv {
                return None;
            }
            match side.next {
                Some(n) => q = n,
                None => return side.remote.is_some().then_some(q),
            }
        }
        None
    }

    /// putnext of `mp` from `from` along the path [`Stream::passes_across`] accepted, ending
    /// at `exit`: counted as put on each queue of the path, then handed to the link of `exit`
    /// as its put would hand it ([`Stream::put_remote`]).
    pub(crate) fn put_across(&mut self, from: QueueId, exit: QueueId, mp: Msg) {
        self.marks.set(super::HoldMarks::ACROSS);
        if let Some(n) = self.next(from) {
            // The path ends at `exit`, whose `q_next` is not in this Stream: so does the count.
            self.count_path(n, 1);
        }
        self.put_remote(exit, mp);
    }

    /// Whether a write went across in this lock hold (`Perim::leave` then arms the express
    /// write, `perim/express.rs`), clearing it.
    #[inline]
    pub(crate) fn take_wrote_across(&mut self) -> bool {
        self.marks.take(super::HoldMarks::ACROSS)
    }

    /// What an express write puts through (`perim/express.rs`): when the head's write queue's
    /// `q_next` is itself the queue that leaves the Stream, pass-only ([`Stream::passes_across`];
    /// nothing pushed on a pipe end), its link, that queue, and its module-wide totals.
    pub(crate) fn express_target(&self) -> Option<(QRef, QueueId, Option<Totals>)> {
        let h = self.head_wq();
        let exit = self.passes_across(h)?;
        if self.next(h) != Some(exit) {
            return None;
        }
        let to = self.remote(exit)?.clone();
        Some((to, exit, self.pair(exit.pair())?.totals))
    }

    /// Count `n` express puts on queue `q` (the path's one queue), in the Stream only: the
    /// writers counted the module-wide totals as they put.
    pub(crate) fn count_express(&mut self, q: QueueId, n: usize) {
        if let Some(s) = self
            .pair_mut_quiet(q.pair())
            .and_then(|p| p.sides.get_mut(q.side()))
        {
            s.stats.bump(Stat::Put, n);
        }
    }
}
