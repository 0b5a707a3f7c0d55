//! `Ring<T>`: a growable FIFO over `sys::Vec<Option<T>>`: a Stream's run list of enabled
//! queues (`stream/mod.rs`), reserved for every queue of the Stream when a pair is added, so
//! that qenable never grows it. (Messages are not kept here: a queue class links its messages
//! through `b_next`, `mlist.rs`.)
//!
//! The kernel `KVec` has no insert/remove/pop, so the ring keeps every slot filled (`None` when
//! free) and moves elements with `Option::take`. Growth is the only allocation and is fallible:
//! an element that cannot be stored is handed back, never dropped.

use crate::sys::{self, NoMem, Vec};

/// A FIFO ring. `buf.len()` is the ring's capacity; slots outside `head..head+len` are `None`.
pub(crate) struct Ring<T> {
    buf: Vec<Option<T>>,
    head: usize,
    len: usize,
}

impl<T> Ring<T> {
    /// An empty ring (no allocation until the first push).
    pub(crate) fn new() -> Self {
        Ring {
            buf: Vec::new(),
            head: 0,
            len: 0,
        }
    }

    /// Whether the ring holds nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Buffer index of logical position `i` (only meaningful when the ring has slots).
    fn slot(&self, i: usize) -> usize {
        let cap = self.buf.len();
        if cap == 0 {
            return 0;
        }
        // head < cap and i <= len <= cap, so the sum cannot overflow for any real allocation.
        (self.head % cap + i % cap) % cap
    }

    /// Make room for at least `n` elements in total.
    pub(crate) fn reserve(&mut self, n: usize) -> Result<(), NoMem> {
        let cap = self.buf.len();
        if n <= cap {
            return Ok(());
        }
        let new_cap = cap.checked_mul(2).ok_or(NoMem)?.max(n).max(4);
        let mut nv: Vec<Option<T>> = sys::vec_with_capacity(new_cap)?;
        for _ in 0..new_cap {
            // Capacity was reserved above, so these pushes do not allocate.
            if sys::vec_push(&mut nv, None).is_err() {
                return Err(NoMem);
            }
        }
        // Nothing has moved yet: from here on nothing can fail.
        for i in 0..self.len {
            let from = self.slot(i);
            let item = self.buf.as_mut_slice().get_mut(from).and_then(Option::take);
            if let Some(dst) = nv.as_mut_slice().get_mut(i) {
                *dst = item;
            }
        }
        self.buf = nv;
        self.head = 0;
        Ok(())
    }

    fn grow_for_one(&mut self) -> Result<(), NoMem> {
        let want = self.len.checked_add(1).ok_or(NoMem)?;
        self.reserve(want)
    }

    /// Append at the tail; on allocation failure `x` comes back.
    pub(crate) fn push_back(&mut self, x: T) -> Result<(), T> {
        if self.grow_for_one().is_err() {
            return Err(x);
        }
        let s = self.slot(self.len);
        match self.buf.as_mut_slice().get_mut(s) {
            Some(dst) => {
                *dst = Some(x);
                self.len += 1;
                Ok(())
            }
            None => Err(x),
        }
    }

    /// Remove the head element.
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let s = self.slot(0);
        let x = self.buf.as_mut_slice().get_mut(s).and_then(Option::take);
        self.len -= 1;
        let cap = self.buf.len();
        self.head = if self.len == 0 || cap == 0 {
            0
        } else {
            (s + 1) % cap
        };
        x
    }

    /// Remove every element for which `pred` holds, keeping the order of the others; the
    /// removed ones are passed to `sink` in order.
    pub(crate) fn extract_if(&mut self, mut pred: impl FnMut(&T) -> bool, mut sink: impl FnMut(T)) {
        let n = self.len;
        let mut w = 0;
        for r in 0..n {
            let rs = self.slot(r);
            let Some(x) = self.buf.as_mut_slice().get_mut(rs).and_then(Option::take) else {
                continue;
            };
            if pred(&x) {
                sink(x);
            } else {
                // w <= r: slot w is already empty (taken earlier) or is slot r itself.
                let ws = self.slot(w);
                if let Some(dst) = self.buf.as_mut_slice().get_mut(ws) {
                    *dst = Some(x);
                }
                w += 1;
            }
        }
        self.len = w;
        if w == 0 {
            self.head = 0;
        }
    }
}
