//! Magazines (Bonwick) for the message block cache (`cache.rs`): a [`FreeList`] of free
//! blocks linked through `b_next` is a magazine, moved whole as its `(head, count)` pair; a
//! slot keeps two of them per kind and pool ([`Mags`]), the depot a bounded stack of full ones
//! per kind and pool ([`Shelf`]). Nothing here allocates: the links are the blocks' own.

use super::{Mblk, Msg};
use crate::sys::{Box, Recycled};

/// Free blocks linked through `b_next`, newest first: a magazine (or a batch to free).
///
/// # Invariants
/// `count` is the number of blocks on `head`; none has a `b_cont`; each has a fast buffer
/// (fast lists) or a heap buffer of the list's class capacity (buffer lists).
pub(crate) struct FreeList {
    head: Option<Msg>,
    count: usize,
}

impl FreeList {
    pub(crate) const fn new() -> Self {
        FreeList {
            head: None,
            count: 0,
        }
    }

    /// Keep `b` (which has no `b_cont`/`b_next` and the data of this list), or hand it back if
    /// the list holds `max` blocks already.
    pub(crate) fn push(&mut self, mut b: Box<Mblk>, max: usize) -> Result<(), Box<Mblk>> {
        if self.count >= max {
            return Err(b);
        }
        b.next = self.head.take();
        self.head = Some(Msg(Recycled::new(b)));
        self.count = self.count.saturating_add(1);
        Ok(())
    }

    /// The newest free block, unlinked.
    pub(crate) fn pop(&mut self) -> Option<Msg> {
        let mut m = self.head.take()?;
        self.head = m.0.next.take();
        self.count = self.count.saturating_sub(1);
        Some(m)
    }

    /// Blocks on the list.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// Unlink up to `n` blocks, as a list to free outside the slot.
    pub(crate) fn take(&mut self, n: usize) -> FreeList {
        let mut out = FreeList::new();
        while out.count < n {
            let Some(mut m) = self.pop() else { break };
            m.0.next = out.head.take();
            out.head = Some(m);
            out.count = out.count.saturating_add(1);
        }
        out
    }
}

impl Drop for FreeList {
    /// Give every block back to the allocator (not to the cache), one at a time.
    fn drop(&mut self) {
        while let Some(m) = self.pop() {
            drop(m.0.into_box());
        }
    }
}

/// One slot's two magazines of a kind and pool (Bonwick): allocations pop `loaded`, frees
/// push it; when it is empty (allocating) or full (freeing) it is exchanged with `prev`, and
/// only when both are empty or both full does the slot go to the depot, for a whole magazine.
///
/// # Invariants
/// Each holds at most the kind's `cache::Kind::mag` blocks; `prev` is empty or full, except
/// after `cache::trim` took part of it.
pub(crate) struct Mags {
    /// Popped and pushed.
    pub(crate) loaded: FreeList,
    /// The other one, full or empty.
    pub(crate) prev: FreeList,
}

impl Mags {
    pub(crate) const fn new() -> Self {
        Mags {
            loaded: FreeList::new(),
            prev: FreeList::new(),
        }
    }
    pub(crate) fn len(&self) -> usize {
        self.loaded.len().saturating_add(self.prev.len())
    }
    /// Exchange `loaded` and `prev` (two pairs moved).
    pub(crate) fn exchange(&mut self) {
        core::mem::swap(&mut self.loaded, &mut self.prev);
    }
}

/// The depot's full magazines of a kind and pool, a stack of `(head, count)` pairs: a
/// magazine comes and goes whole, in O(1).
///
/// # Invariants
/// `full[..n]` hold the magazines (none empty, each at most `cache::Kind::mag` blocks); the
/// rest are empty.
pub(crate) struct Shelf<const N: usize> {
    full: [FreeList; N],
    n: usize,
}

impl<const N: usize> Shelf<N> {
    pub(crate) const fn new() -> Self {
        Shelf {
            full: [const { FreeList::new() }; N],
            n: 0,
        }
    }
    /// Keep the magazine `mag` (not empty) if fewer than `max` are kept, else hand it back.
    pub(crate) fn put(&mut self, mag: FreeList, max: usize) -> Result<(), FreeList> {
        match self.full.get_mut(self.n) {
            Some(slot) if self.n < max && mag.len() != 0 => {
                *slot = mag; // was empty: nothing is freed here
                self.n += 1;
                Ok(())
            }
            _ => Err(mag),
        }
    }
    /// The newest magazine, if any.
    pub(crate) fn get(&mut self) -> Option<FreeList> {
        let i = self.n.checked_sub(1)?;
        let mag = core::mem::replace(self.full.get_mut(i)?, FreeList::new());
        self.n = i;
        Some(mag)
    }
    /// Up to `n` blocks: the newest magazine whole, or part of it if it holds more than `n`.
    pub(crate) fn take(&mut self, n: usize) -> FreeList {
        let Some(i) = self.n.checked_sub(1) else {
            return FreeList::new();
        };
        match self.full.get_mut(i) {
            Some(last) if last.len() > n => last.take(n), // it keeps the rest: not empty
            _ => self.get().unwrap_or(FreeList::new()),
        }
    }
    /// Whether it keeps no magazine.
    pub(crate) fn is_empty(&self) -> bool {
        self.n == 0
    }
    /// Blocks kept.
    pub(crate) fn len(&self) -> usize {
        self.full.iter().map(FreeList::len).sum()
    }
}
