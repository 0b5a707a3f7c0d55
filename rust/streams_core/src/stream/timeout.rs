//! qtimeout: a queue's service procedure enabled at a given time.
//!
//! SVR4's `qtimeout(q, func, arg, ticks)` calls a function later; here the only thing a timeout
//! does is `qenable` the queue that asked, so the module's service procedure runs and looks at
//! what is due (bufmod sends a partial chunk whose time is up). That keeps every callback inside
//! the Stream's procedures, under the stream lock, with no function pointers or arguments to
//! outlive the module.
//!
//! The core has no clock: deadlines are in the platform's monotonic nanoseconds (`ktime_get`
//! in the kernel); a module reads "now" from the clock it was given. The platform asks
//! [`Stream::next_timeout`] after each operation, arms one timer for the earliest deadline and,
//! when it fires, calls [`Stream::run_timeouts`] under the stream lock and runs the enabled
//! service procedures as after any operation. One timeout per queue: a new one replaces it.

use super::{HeadProcs, QueueId, Stream};

impl<H: HeadProcs> Stream<H> {
    /// Set (or with `None` cancel) queue `q`'s timeout (`QCtx::qtimeout_at`).
    pub(crate) fn set_timeout(&mut self, q: QueueId, deadline_ns: Option<u64>) {
        if let Some(side) = self.side_mut(q) {
            side.timeout = deadline_ns;
            self.timeouts |= deadline_ns.is_some();
        }
    }

    /// The earliest pending qtimeout deadline, if any (what the platform's timer is armed
    /// for).
    pub fn next_timeout(&mut self) -> Option<u64> {
        if !self.timeouts {
            return None;
        }
        let next = self
            .pairs
            .iter()
            .flatten()
            .flat_map(|p| p.sides.iter())
            .filter_map(|s| s.timeout)
            .min();
        self.timeouts = next.is_some();
        next
    }

    /// The platform clock reads `now_ns`: enable every queue whose timeout is due (its
    /// service procedure runs with the next `runqueues`). Returns how many were enabled.
    pub fn run_timeouts(&mut self, now_ns: u64) -> usize {
        if !self.timeouts {
            return 0;
        }
        let mut n = 0;
        for p in 0..self.pairs.len() {
            for q in [QueueId::of(p, false), QueueId::of(p, true)] {
                let due = self
                    .side_mut(q)
                    .filter(|s| s.timeout.is_some_and(|t| t <= now_ns))
                    .map(|s| s.timeout = None)
                    .is_some();
                if due {
                    self.qenable(q);
                    n += 1;
                }
            }
        }
        n
    }
}
