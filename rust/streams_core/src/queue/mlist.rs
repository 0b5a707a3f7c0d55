//! `MsgList`: the FIFO of one queue class, linked through the messages' own `b_next` as SVR4
//! links a queue, so that queueing a message never allocates and so never fails.
//!
//! A singly linked list cannot append in O(1) without a tail pointer, which safe Rust cannot
//! keep into a list of owned boxes. So the class is two lists: `front` holds the oldest
//! messages oldest first, `back` the newest ones newest first. putq pushes onto `back`, getq
//! pops off `front`, and when `front` runs dry `back` is reversed into it (each message is
//! moved once: O(1) per message over time). putbq pushes onto `front`. The rare operations in
//! the middle (insq, rmvq, flush with a predicate) first join the two into `front`, O(n).
//!
//! # Invariants
//! `front` is empty only if `back` is (the first message, `q_first`, is always `front`'s
//! head); `nfront`/`nback` are the lengths of the two lists.

use crate::msg::Msg;

/// A queue class (see the module docs).
pub(crate) struct MsgList {
    front: Option<Msg>,
    back: Option<Msg>,
    nfront: usize,
    nback: usize,
}

/// Reverse a `b_next` list.
fn reverse(mut list: Option<Msg>) -> Option<Msg> {
    let mut out: Option<Msg> = None;
    while let Some(mut m) = list {
        list = m.0.next.take();
        m.0.next = out;
        out = Some(m);
    }
    out
}

/// The `i`-th message of a `b_next` list.
fn nth(list: &Option<Msg>, i: usize) -> Option<&Msg> {
    let mut cur = list.as_ref();
    for _ in 0..i {
        cur = cur?.0.next.as_ref();
    }
    cur
}

/// The `i`-th message of a `b_next` list, mutable.
fn nth_mut(list: &mut Option<Msg>, i: usize) -> Option<&mut Msg> {
    let mut cur = list.as_mut();
    for _ in 0..i {
        cur = cur?.0.next.as_mut();
    }
    cur
}

/// The link that holds the `i`-th message of a list (`i` = its length: the end), if the list
/// is that long.
fn slot(list: &mut Option<Msg>, i: usize) -> Option<&mut Option<Msg>> {
    let mut cur = list;
    for _ in 0..i {
        cur = &mut cur.as_mut()?.0.next;
    }
    Some(cur)
}

impl MsgList {
    /// An empty list.
    pub(crate) const fn new() -> Self {
        MsgList {
            front: None,
            back: None,
            nfront: 0,
            nback: 0,
        }
    }

    /// Number of messages.
    pub(crate) fn len(&self) -> usize {
        self.nfront + self.nback
    }

    /// The head message.
    #[inline]
    pub(crate) fn first(&self) -> Option<&Msg> {
        self.front.as_ref()
    }

    /// The messages of the front part, in order (the whole list when nothing was appended
    /// since it was last joined; a prefix of it otherwise).
    pub(crate) fn front_iter(&self) -> impl Iterator<Item = &Msg> {
        core::iter::successors(self.front.as_ref(), |m| m.0.next.as_ref())
    }

    /// Whether the list holds nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.nfront == 0
    }

    /// Move `back` to the end of `front`, so that `front` holds everything in order.
    fn join(&mut self) {
        if self.nback == 0 {
            return;
        }
        let back = reverse(self.back.take());
        match slot(&mut self.front, self.nfront) {
            Some(end) => *end = back,
            // Cannot happen (`nfront` is `front`'s length); keep the messages anyway.
            None => self.front = back,
        }
        self.nfront += self.nback;
        self.nback = 0;
    }

    /// Append at the tail. Never fails: the message is its own link.
    pub(crate) fn push_back(&mut self, mut x: Msg) {
        if self.nfront == 0 {
            x.0.next = None;
            self.front = Some(x);
            self.nfront = 1;
        } else {
            x.0.next = self.back.take();
            self.back = Some(x);
            self.nback += 1;
        }
    }

    /// Insert before logical position `i` (`i == len` appends); `x` comes back if `i > len`.
    pub(crate) fn insert(&mut self, i: usize, mut x: Msg) -> Result<(), Msg> {
        if i > self.len() {
            return Err(x);
        }
        if i == self.len() {
            self.push_back(x);
            return Ok(());
        }
        if i > 0 {
            self.join();
        }
        let Some(at) = slot(&mut self.front, i) else {
            return Err(x);
        };
        x.0.next = at.take();
        *at = Some(x);
        self.nfront += 1;
        Ok(())
    }

    /// Remove the message at logical position `i`.
    pub(crate) fn remove(&mut self, i: usize) -> Option<Msg> {
        if i >= self.len() {
            return None;
        }
        if i == 0 {
            return self.pop_front();
        }
        self.join();
        let at = slot(&mut self.front, i)?;
        let mut m = at.take()?;
        *at = m.0.next.take();
        self.nfront -= 1;
        Some(m)
    }

    /// Remove the head message.
    #[inline]
    pub(crate) fn pop_front(&mut self) -> Option<Msg> {
        let mut m = self.front.take()?;
        self.front = m.0.next.take();
        self.nfront = self.nfront.saturating_sub(1);
        if self.nfront == 0 && self.nback > 0 {
            self.front = reverse(self.back.take());
            self.nfront = self.nback;
            self.nback = 0;
        }
        Some(m)
    }

    /// The message at logical position `i`.
    pub(crate) fn get(&self, i: usize) -> Option<&Msg> {
        if i < self.nfront {
            nth(&self.front, i)
        } else {
            let j = self.len().checked_sub(i + 1)?;
            nth(&self.back, j)
        }
    }

    /// The message at logical position `i`, mutable.
    pub(crate) fn get_mut(&mut self, i: usize) -> Option<&mut Msg> {
        if i < self.nfront {
            nth_mut(&mut self.front, i)
        } else {
            let j = self.len().checked_sub(i + 1)?;
            nth_mut(&mut self.back, j)
        }
    }

    /// Remove every message for which `pred` holds, keeping the order of the others; the
    /// removed ones are passed to `sink` in order.
    pub(crate) fn extract_if(
        &mut self,
        mut pred: impl FnMut(&Msg) -> bool,
        mut sink: impl FnMut(Msg),
    ) {
        self.join();
        let mut list = self.front.take();
        let mut kept: Option<Msg> = None; // newest first
        let mut n = 0;
        while let Some(mut m) = list {
            list = m.0.next.take();
            if pred(&m) {
                sink(m);
            } else {
                m.0.next = kept;
                kept = Some(m);
                n += 1;
            }
        }
        self.front = reverse(kept);
        self.nfront = n;
    }
}
