//! The batch put-up: a run of ordinary data from the inbound list goes up to the Stream head
//! in one step instead of one put at a time.
//!
//! What other Streams put into this one waits on the inbound list (`perim/gate.rs`) until an
//! enter takes it. When a writer runs ahead of its reader, each enter of the reader finds
//! several messages there, and the head's read queue already holds a backlog (so the direct
//! take, `direct.rs`, which needs that queue empty, is refused). Put one at a time, each
//! message then costs a `put_once` per pair of its path, a `putnext_from` per hop, the head's
//! `sth_rput` dispatch, its `putq`, `apply` and `note`.
//!
//! [`Stream::put_list`] takes the list oldest first. A *run* is a stretch of band-0 M_DATA
//! for one queue. When the put of a run's first message reaches the head's read queue
//! stepping only over pass-only put procedures (each pair idle and opened, its queue empty,
//! nothing deferred: what `put_once` steps over, [`Stream::passes_to_head`]) and the Stream is
//! open, the whole run goes up together: its puts are counted on each pair of the path as
//! the per-message puts would count them ([`Stream::count_path`]), and the head's
//! [`HeadProcs::rput_run`] queues it (the Stream head: `sth_enqueue_run`, one `putq_run` and
//! one note). Anything else (another type or band, a pair that is running, holds messages or
//! has deferred ones, a closed Stream, a queue whose put leaves this Stream through a link)
//! is put by the ordinary path, in order, and the next run is judged after it.
//!
//! Why the Stream ends as the per-message puts leave it: within the run nothing else runs,
//! and the head's queueing of M_DATA changes nothing the path check reads (only the head's
//! read queue), so each message would have taken the same path; the pairs on it keep no
//! state of a put but its statistic; and the head's part is its own to keep equal.

use super::ctx::Engine;
use super::stats::Stat;
use super::{HeadProcs, QueueId, Role, Stream};
use crate::msg::{Msg, MsgType, M_DATA};

/// Whether `m` belongs to a run of messages for queue `dest` (module docs).
#[inline]
fn runs_with(m: &Msg, dest: u64) -> bool {
    m.0.dest == dest && m.db_type() == M_DATA && m.band() == 0
}

/// Cut the run at the front of `list` (its first message is in it): the run, oldest first
/// through `b_next`, and its length. `list` keeps the rest.
fn cut_run(list: &mut Option<Msg>, dest: u64) -> (Option<Msg>, usize) {
    let mut n = 0;
    let mut cur = &mut *list;
    while cur.as_ref().is_some_and(|m| runs_with(m, dest)) {
        match cur {
            Some(m) => cur = &mut m.0.next,
            None => break,
        }
        n += 1;
    }
    let rest = cur.take();
    (core::mem::replace(list, rest), n)
}

impl<H: HeadProcs> Stream<H> {
    /// Whether a band-0 M_DATA message put into `q` reaches the head's read queue with nothing
    /// done to it on the way: each queue before the head belongs to an idle, opened pair whose
    /// put procedure only passes data on, holds nothing, and has nothing deferred.
    pub(super) fn passes_to_head(&self, mut q: QueueId) -> bool {
        for _ in 0..self.npairs() {
            let Some(pair) = self.pair(q.pair()) else {
                return false;
            };
            if pair.role == Role::Head {
                return q.is_read();
            }
            if !pair.steps_over(q.side(), M_DATA) || pair.sides.iter().any(|s| s.deferred > 0) {
                return false;
            }
            match pair.sides.get(q.side()).and_then(|s| s.next) {
                Some(n) => q = n,
                None => return false,
            }
        }
        false
    }

    /// As [`Stream::passes_to_head`] for one band-0 message of type `ty` (not a run), where a
    /// [`Pass::Flow`](super::Pass::Flow) pair is stepped over too when the queue after it
    /// can take band 0, as `put_once` would step over it.
    #[inline(never)]
    pub(super) fn passes_to_head_one(&mut self, mut q: QueueId, ty: MsgType) -> bool {
        for _ in 0..self.npairs() {
            let Some(pair) = self.pair(q.pair()) else {
                return false;
            };
            if pair.role == Role::Head {
                return q.is_read();
            }
            if pair.sides.iter().any(|s| s.deferred > 0) {
                return false;
            }
            let over = pair.steps_over(q.side(), ty)
                || (pair.steps_over_flow(q.side(), ty) && self.bcanputnext_from(q, 0));
            let next = self
                .pair(q.pair())
                .and_then(|p| p.sides.get(q.side()))
                .and_then(|s| s.next);
            match next {
                Some(n) if over => q = n,
                _ => return false,
            }
        }
        false
    }

    /// Count `n` puts on each queue of the path from `q` up to the head's read queue, head
    /// included, as `put_once` counts each message's (a path [`Stream::passes_to_head`]
    /// accepted).
    pub(super) fn count_path(&mut self, mut q: QueueId, n: usize) {
        for _ in 0..self.npairs() {
            let Some(pair) = self.pair_mut_quiet(q.pair()) else {
                return;
            };
            pair.count_stats(q.side(), Stat::Put, n);
            if pair.role == Role::Head {
                return;
            }
            match pair.sides.get(q.side()).and_then(|s| s.next) {
                Some(n) => q = n,
                None => return,
            }
        }
    }

    /// Put each message of `list` (oldest first through `b_next`, each for the queue it was
    /// put into) by its queue's put procedure, a run of ordinary data up to the head in one
    /// step (module docs).
    pub(crate) fn put_list(&mut self, mut list: Option<Msg>) {
        while let Some(first) = list.as_ref() {
            let dest = first.0.dest;
            let q = QueueId::from_raw(dest);
            if let Some(q) =
                q.filter(|q| runs_with(first, dest) && !self.closed && self.passes_to_head(*q))
            {
                let (run, n) = cut_run(&mut list, dest);
                if let Some(run) = run {
                    self.count_path(q, n);
                    H::rput_run(self, run);
                }
                continue;
            }
            let Some(mut m) = list else {
                return;
            };
            list = m.0.next.take();
            match q {
                Some(q) => self.put(q, m),
                None => {
                    drop(m);
                    self.count_drop();
                }
            }
        }
    }
}
