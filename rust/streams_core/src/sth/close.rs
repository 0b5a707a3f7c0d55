//! close(2) at the Stream head: the SVR4 close-time drain (I_SETCLTIME).
//!
//! On the last close of a Stream whose write side still holds data, SVR4 `strclose` gives the
//! data a chance to leave before the modules and the driver are closed: top down, before each
//! module is popped (and before the driver is closed) it waits until that pair's write queue is
//! empty, or at most the close time (I_SETCLTIME, default
//! [`STRCLTIME_DEFAULT`](super::consts::STRCLTIME_DEFAULT) = 15 s) for
//! that queue; what is still queued then is freed with the pair. It does not wait when the
//! file was opened (or set) O_NONBLOCK/O_NDELAY, with a close time of 0, or after M_HANGUP or
//! a write error (M_ERROR): nothing could leave then.
//!
//! The head never sleeps, so the drain is a step function: [`Stream::sth_close_drain`] pops
//! what is drained and returns [`Drain::Wait`] naming the level it waits at, or
//! [`Drain::Done`]; the platform sleeps (with the time limit, restarted whenever the level
//! changes) and calls it again, then calls [`Stream::sth_close`]. While a head waits, the
//! events collected for it ([`Stream::sth_take_events_of`]) carry WAKE_WRITE as soon as the
//! awaited queue is empty (whoever ran the service procedure that emptied it), or on hangup
//! and errors, which wake every waiter anyway.
//!
//! What counts: the write queues of the modules pushed on this head and of the driver. A pipe
//! end's (or FIFO's) write side ends at a Stream head's read queue, which is not its own to
//! wait for: only its modules are drained.

use super::WAKE_WRITE;
use crate::sth::Stream;
use crate::stream::{QueueId, Role};

/// What a closing head does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drain {
    /// Nothing to wait for (any more): close the rest now ([`Stream::sth_close`]).
    Done,
    /// The write queue of the pair `level` write queues above the bottom still holds data:
    /// wait at most `ms` milliseconds for it (a new limit whenever `level` changes), then
    /// call again, with `expired` if the time ran out.
    Wait {
        /// Write queues (modules and driver) still below the head.
        level: usize,
        /// The close time (I_SETCLTIME).
        ms: u32,
    },
}

impl Stream {
    /// The topmost write queue below the head that close waits for (a module's or the
    /// driver's), if any.
    fn sth_drain_queue(&self) -> Option<QueueId> {
        self.top_wq()
            .filter(|q| !q.is_read())
            .filter(|q| matches!(self.role(*q), Some(Role::Module | Role::Driver)))
    }

    /// Write queues (modules, driver) below the head, as I_LIST counts them.
    fn sth_drain_level(&self) -> usize {
        self.sth_names().count().saturating_sub(1)
    }

    /// Whether close need not wait for `q`: it is empty, or nothing can leave any more.
    fn sth_drained(&self, q: QueueId) -> bool {
        self.sth.hangup
            || self.sth.werr.is_some()
            || self.queue(q).is_none_or(|q| q.first().is_none())
    }

    /// One step of the close-time drain (see the module docs): send what write hold kept, pop
    /// every module whose write queue is empty (or whose wait `expired`), and say whether to
    /// wait for the next one. `nonblock`: the file is O_NONBLOCK/O_NDELAY (never waits).
    /// Call [`Stream::sth_close`] after [`Drain::Done`].
    pub fn sth_close_drain(&mut self, nonblock: bool, mut expired: bool) -> Drain {
        if self.sth.plex.is_some() {
            return Drain::Done; // linked: the Stream does not close now (`plex.rs`)
        }
        self.sth_flush_hold();
        self.sth.draining = false;
        let ms = self.sth.cltime;
        if nonblock || ms == 0 {
            return Drain::Done;
        }
        while let Some(q) = self.sth_drain_queue() {
            if !expired && !self.sth_drained(q) {
                self.sth.draining = true;
                return Drain::Wait {
                    level: self.sth_drain_level(),
                    ms,
                };
            }
            if self.role(q) != Some(Role::Module) || self.pop().is_err() {
                break; // the driver: sth_close closes it (freeing what is left)
            }
            expired = false;
        }
        Drain::Done
    }

    /// While this head waits in the close-time drain: WAKE_WRITE once the awaited queue is
    /// drained (part of collecting the head's events).
    pub(crate) fn sth_drain_note(&mut self) {
        if !self.sth.draining {
            return;
        }
        if self.sth_drain_queue().is_none_or(|q| self.sth_drained(q)) {
            self.sth.draining = false;
            self.sth.note(WAKE_WRITE, 0);
        }
    }
}
