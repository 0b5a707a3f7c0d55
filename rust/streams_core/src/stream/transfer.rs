//! Moving the queue pairs of a Stream into another arena and back: what I_LINK and I_UNLINK
//! do to the lower Stream when its multiplexing driver lives in a Stream complex
//! (`sth/mux.rs`).
//!
//! [`Stream::absorb`] moves every pair of a Stream into this arena, renumbering the `q_next`
//! links and run-list entries, and keeps the emptied Stream as a husk (its head state, its
//! `Vec` of now empty slots) with the old-to-new index map. Every allocation happens before
//! the first pair moves, so a failure leaves both Streams as they were.
//! [`Stream::release`] puts the pairs back into the husk's slots (the indices they had) and
//! hands the Stream back without allocating, so an unlink cannot fail for memory.
//! Messages on the queues move with their pairs; none is copied or lost.

use super::{QueueId, Stream};
use crate::errno::Errno;
use crate::sys::{self, Vec};

/// No pair (an empty slot of the moved Stream).
const NONE: usize = usize::MAX;

/// A Stream whose pairs live in another arena: its husk and where each pair went.
pub(crate) struct Moved {
    husk: Stream,
    /// `map[old] = new`: pair `old` of the husk is pair `new` of the arena (or `NONE`).
    map: Vec<usize>,
}

fn lookup(map: &[usize], old: usize) -> Option<usize> {
    map.get(old).copied().filter(|n| *n != NONE)
}

fn inverse(map: &[usize], new: usize) -> Option<usize> {
    map.iter().position(|n| *n == new)
}

impl Moved {
    /// The husk's head pair, as numbered in the arena.
    pub(crate) fn head(&self) -> Option<usize> {
        lookup(self.map.as_slice(), self.husk.head)
    }
}

impl Stream {
    /// Move every pair of the Stream in `slot` (a plain Stream: one head, not a pipe, FIFO
    /// or complex) into this arena, taking it out of `slot`. On ENOSR (or an empty `slot`:
    /// EINVAL) `slot` is left as it was.
    pub(crate) fn absorb(&mut self, slot: &mut Option<Stream>) -> Result<Moved, Errno> {
        let Some(n) = slot.as_ref().map(|o| o.pairs.len()) else {
            return Err(Errno::EINVAL);
        };
        let free = self.pairs.iter().filter(|p| p.is_none()).count();
        let grow = n.saturating_sub(free);
        let queues = self
            .pairs
            .len()
            .saturating_add(grow)
            .saturating_add(1)
            .saturating_mul(2);
        let mut map = sys::vec_with_capacity(n)?;
        sys::vec_reserve(&mut self.pairs, grow)?;
        self.runlist.reserve(queues)?;
        let Some(mut other) = slot.take() else {
            return Err(Errno::EINVAL);
        };
        let mut cursor = 0usize;
        for old in other.pairs.as_mut_slice().iter_mut() {
            let Some(pair) = old.take() else {
                let _ = sys::vec_push(&mut map, NONE); // capacity n: cannot fail
                continue;
            };
            // The next free slot of this arena, else a new one (room reserved above).
            let slots = self.pairs.as_mut_slice();
            while slots.get(cursor).is_some_and(Option::is_some) {
                cursor += 1;
            }
            let new = if let Some(slot) = slots.get_mut(cursor) {
                *slot = Some(pair);
                cursor
            } else {
                let i = self.pairs.len();
                let _ = sys::vec_push(&mut self.pairs, Some(pair));
                i
            };
            let _ = sys::vec_push(&mut map, new);
        }
        for &new in map.iter().filter(|n| **n != NONE) {
            if let Some(pair) = self.pair_mut(new) {
                for s in pair.sides.iter_mut() {
                    s.next = s.next.and_then(|q| {
                        lookup(map.as_slice(), q.pair()).map(|p| QueueId::of(p, !q.is_read()))
                    });
                }
            }
        }
        while let Some(q) = other.runlist.pop_front() {
            if let Some(p) = lookup(map.as_slice(), q.pair()) {
                let _ = self.runlist.push_back(QueueId::of(p, !q.is_read())); // reserved
            }
        }
        self.timeouts |= other.timeouts;
        // The husk has no pairs: dropping it must not run close routines.
        other.closed = true;
        Ok(Moved { husk: other, map })
    }

    /// Take the pairs of `m` out of this arena and give back the Stream they came from, as it
    /// was (its pairs at their old indices, its head state, its enabled queues).
    pub(crate) fn release(&mut self, m: Moved) -> Stream {
        let Moved { mut husk, map } = m;
        for (old, &new) in map.iter().enumerate() {
            if new == NONE {
                continue;
            }
            let pair = self
                .pairs
                .as_mut_slice()
                .get_mut(new)
                .and_then(Option::take);
            if let Some(slot) = husk.pairs.as_mut_slice().get_mut(old) {
                *slot = pair;
            }
        }
        for pair in husk.pairs.as_mut_slice().iter_mut().flatten() {
            for s in pair.sides.iter_mut() {
                s.next = s.next.and_then(|q| {
                    inverse(map.as_slice(), q.pair()).map(|p| QueueId::of(p, !q.is_read()))
                });
            }
        }
        let runlist = &mut husk.runlist;
        self.runlist.extract_if(
            |q| map.as_slice().contains(&q.pair()),
            |q| {
                if let Some(p) = inverse(map.as_slice(), q.pair()) {
                    // The husk's run list kept the room it had for these queues.
                    let _ = runlist.push_back(QueueId::of(p, !q.is_read()));
                }
            },
        );
        husk.closed = false;
        husk.timeouts = true; // it may have taken some with it (the next scan tells)
        husk
    }
}
