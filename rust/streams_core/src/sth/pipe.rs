//! STREAMS pipes: one Stream with two Stream heads in a twisted pair.
//!
//! ```text
//!   end 0: head ─wq─▶ [modules pushed on end 0] ─▶ [modules pushed on end 1] ─rq─▶ head :end 1
//!          head ◀─rq─ [modules pushed on end 0] ◀─ [modules pushed on end 1] ◀─wq─ head
//! ```
//!
//! As in SVR4 and LfS, each head's write queue has as `q_next` the other head's read queue
//! (through whatever modules are pushed on either end), so a write at one end is a `putnext`
//! that lands at the other head, and flow control and back-enabling run across the pipe
//! exactly as down a Stream and back: the writer at end 0 is refused by `bcanputnext` when
//! end 1's read queue is full, and end 1's reader draining it back-enables end 0's head.
//!
//! Both heads live in the same queue arena, under the one stream lock, so a pipe needs no
//! lock ordering between its ends. The arena has one `StrHead` slot in use at a time
//! (`Stream::sth`, `Stream::head`); the other end's state waits in [`Parked`].
//! [`Stream::with_end`] swaps the wanted end in for the duration of an operation, and the
//! engine does the same when a message reaches the other head (`with_head`), so every
//! Stream head function is written once, for "the" head, and works on both ends.
//!
//! Closing one end ([`Stream::sth_close`]) pops its modules and hangs up the other end:
//! its reader gets end of file once the data already there is read, its writer EPIPE (and
//! SIGPIPE: pipe heads have SNDPIPE). The arena goes when both ends are closed.

use super::consts::SNDPIPE;
use super::{HeadEvents, StrHead};
use crate::errno::Errno;
use crate::queue::FLUSHALL;
use crate::stream::{QueueId, Role, Stream, HEAD_INFO};
use crate::sys::{self, Box};

/// The Stream head of a pipe that is not swapped in: its pair index and its state.
pub(crate) struct Parked {
    pub(crate) head: usize,
    pub(crate) sth: Box<StrHead>,
}

fn pipe_head() -> Result<Box<StrHead>, Errno> {
    let mut h = sys::new_box(StrHead::new(true))?;
    h.ispipe = true;
    h.wropt |= SNDPIPE;
    Ok(h)
}

impl Stream {
    /// A STREAMS pipe: two Stream heads whose write queues feed each other's read queues.
    /// End 0 is swapped in; use [`Stream::with_end`] to act on either end. ENOSR when memory
    /// runs out.
    pub fn pipe() -> Result<Stream, Errno> {
        let mut s = Stream::empty(true)?;
        let a = s.alloc_pair(HEAD_INFO, Role::Head)?;
        let b = s.alloc_pair(HEAD_INFO, Role::Head)?;
        s.set_next(QueueId::of(a, true), Some(QueueId::of(b, false)));
        s.set_next(QueueId::of(b, true), Some(QueueId::of(a, false)));
        s.sth = pipe_head()?;
        s.head = a;
        let other = Parked {
            head: b,
            sth: pipe_head()?,
        };
        sys::vec_push(&mut s.parked, other).map_err(|_| Errno::ENOSR)?;
        Ok(s)
    }

    /// One unconnected end of a pipe (what an open of the pipe clone device gives before
    /// `I_PIPE` welds two of them): a Stream head with nothing below. It reads end of file
    /// and writes fail with EPIPE until it is replaced by a welded [`Stream::pipe`].
    pub fn pipe_end() -> Result<Stream, Errno> {
        let mut s = Stream::empty(true)?;
        s.alloc_pair(HEAD_INFO, Role::Head)?;
        s.sth = pipe_head()?;
        s.sth.hangup = true;
        s.closed = true; // no driver: no close routine to call
        Ok(s)
    }

    /// Whether this Stream is a welded pipe (two heads).
    pub fn is_pipe(&self) -> bool {
        self.multi.is_none() && !self.parked.is_empty()
    }

    /// Which end is swapped in (0 for a Stream that is not a pipe).
    pub fn end(&self) -> usize {
        self.head
    }

    /// Run `f` with end `end` (0 or 1) of a pipe as "the" Stream head: read, write, putmsg,
    /// ioctl, poll, close and `sth_take_events` then act on that end. On a Stream that is not
    /// a pipe, or with an end that does not exist, `f` runs on the only head.
    pub fn with_end<R>(&mut self, end: usize, f: impl FnOnce(&mut Stream) -> R) -> R {
        self.with_head(end, f)
    }

    /// [`Stream::sth_take_events`] of end `end` without swapping it in (what the platform
    /// does after every operation, for both ends of a pipe).
    pub fn sth_take_events_of(&mut self, end: usize) -> HeadEvents {
        if end == self.head {
            return self.sth_take_events();
        }
        if self.parked.iter().any(|p| p.head == end && p.sth.draining) {
            self.with_end(end, Stream::sth_drain_note);
        }
        match self.parked.iter_mut().find(|p| p.head == end) {
            Some(p) => core::mem::take(&mut p.sth.ev),
            None => HeadEvents::default(),
        }
    }

    /// Run `f` with the head of pair `pair` swapped in (the engine's entry: a message
    /// reached that head's read queue, or a back-enable its write queue).
    pub(crate) fn with_head<R>(&mut self, pair: usize, f: impl FnOnce(&mut Stream) -> R) -> R {
        let Some(i) = self.parked.iter().position(|p| p.head == pair) else {
            return f(self);
        };
        self.swap_parked(i);
        let r = f(self);
        self.swap_parked(i);
        if self.multi.is_some() {
            // A Stream of a complex that closed leaves its slot for the next open.
            if let Some(p) = self.parked.as_mut_slice().get_mut(i) {
                if p.sth.closed {
                    p.head = crate::stream::VACANT;
                }
            }
        }
        r
    }

    /// Run `f` on the other end of a pipe.
    pub(crate) fn with_other_end<R>(&mut self, f: impl FnOnce(&mut Stream) -> R) -> R {
        self.swap_parked(0);
        let r = f(self);
        self.swap_parked(0);
        r
    }

    /// Swap parked head `i` with the head swapped in.
    fn swap_parked(&mut self, i: usize) {
        if let Some(p) = self.parked.as_mut_slice().get_mut(i) {
            core::mem::swap(&mut self.sth, &mut p.sth);
            core::mem::swap(&mut self.head, &mut p.head);
        }
    }

    /// The pair indices of every Stream head of this arena (one, two for a pipe, any number
    /// in a Stream complex), the one swapped in first.
    pub fn heads(&self) -> impl Iterator<Item = usize> + '_ {
        let me = (self.multi.is_none() || self.pair(self.head).is_some()).then_some(self.head);
        let parked = self.parked.iter().map(|p| p.head);
        me.into_iter()
            .chain(parked.filter(|h| *h != crate::stream::VACANT))
    }

    /// Collect (and clear) the events of every Stream head of this arena: `f(end, head,
    /// events)` for each (what the platform does after every operation).
    pub fn sth_take_events_all(&mut self, mut f: impl FnMut(usize, &StrHead, HeadEvents)) {
        for i in 0..self.parked.len() {
            let draining = self
                .parked
                .get(i)
                .is_some_and(|p| p.sth.draining && p.head != crate::stream::VACANT);
            if draining {
                self.swap_parked(i);
                self.sth_drain_note();
                self.swap_parked(i);
            }
        }
        if self.multi.is_none() || self.pair(self.head).is_some() {
            self.sth_drain_note();
            let ev = core::mem::take(&mut self.sth.ev);
            f(self.head, &self.sth, ev);
        }
        for p in self.parked.as_mut_slice().iter_mut() {
            if p.head != crate::stream::VACANT {
                let ev = core::mem::take(&mut p.sth.ev);
                f(p.head, &p.sth, ev);
            }
        }
    }

    /// [`Stream::sth_flush_hold`] on every Stream head of this arena (the hold timer).
    pub fn sth_flush_hold_all(&mut self) {
        if self.multi.is_none() || self.pair(self.head).is_some() {
            self.sth_flush_hold();
        }
        for i in 0..self.parked.len() {
            if self
                .parked
                .get(i)
                .is_some_and(|p| p.head != crate::stream::VACANT)
            {
                self.swap_parked(i);
                self.sth_flush_hold();
                self.swap_parked(i);
            }
        }
    }

    /// Whether the head of pair `pair` is a real Stream head (acts on what arrives).
    pub(crate) fn head_active(&self, pair: usize) -> bool {
        if pair == self.head {
            return self.sth.active;
        }
        self.parked.iter().any(|p| p.head == pair && p.sth.active)
    }

    /// close(2) of one end of a pipe whose other end is still open: the modules pushed on
    /// this end close, what waits unread at this head is freed, and the other end is hung
    /// up. Returns false when this is not such an end (the caller closes the whole Stream).
    pub(crate) fn sth_close_pipe_end(&mut self) -> bool {
        if !self.is_pipe() || self.parked.first().is_none_or(|p| p.sth.closed) {
            return false;
        }
        while self.pop().is_ok() {}
        let h = self.head_rq();
        self.flush(h, None, FLUSHALL);
        self.with_other_end(Stream::sth_set_hangup);
        true
    }
}
