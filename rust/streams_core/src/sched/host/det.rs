//! The deterministic single-threaded runner: a FIFO of scheduled Streams, run on demand.
//!
//! Tests drive it step by step: operate on Streams with [`DetRunner::with`], then
//! [`DetRunner::run_until_idle`]. The order is the scheduling order, so every run of a test
//! services the same procedures in the same order.

use super::StreamHandle;
use crate::sched::{RunList, Schedulable};
use crate::sys::NoMem;

/// A single-threaded, reproducible runner of service procedures.
pub struct DetRunner<S> {
    list: RunList<StreamHandle<S>>,
    registered: usize,
    ran: usize,
    runs: usize,
}

impl<S: Schedulable> Default for DetRunner<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: Schedulable> DetRunner<S> {
    /// A runner with no Streams.
    pub fn new() -> Self {
        DetRunner {
            list: RunList::empty(),
            registered: 0,
            ran: 0,
            runs: 0,
        }
    }

    /// Take charge of a Stream. Reserves its run-list slot now, so scheduling it never
    /// allocates. If it already has enabled work, it is scheduled.
    pub fn register(&mut self, stream: S) -> Result<StreamHandle<S>, NoMem> {
        let n = self.registered.checked_add(1).ok_or(NoMem)?;
        self.list.reserve(n)?;
        self.registered = n;
        let h = StreamHandle::new(n - 1, stream);
        self.schedule(&h);
        Ok(h)
    }

    /// Run `f` under the Stream's lock, then schedule the Stream if `f` left work enabled
    /// (what the platform does after every put, ioctl, open, close, …).
    pub fn with<R>(&mut self, h: &StreamHandle<S>, f: impl FnOnce(&mut S) -> R) -> R {
        let (r, enqueue) = h.with_locked(f);
        if enqueue {
            self.enqueue(h);
        }
        r
    }

    /// Put the Stream on the run list if it has enabled work and is not there yet.
    /// Returns whether this call put it there.
    pub fn schedule(&mut self, h: &StreamHandle<S>) -> bool {
        let ((), enqueue) = h.with_locked(|_| ());
        if enqueue {
            self.enqueue(h);
        }
        enqueue
    }

    /// Run the Stream at the head of the run list: how many service procedures ran, or `None`
    /// if nothing is scheduled.
    pub fn run_one(&mut self) -> Option<usize> {
        let h = self.list.pop()?;
        let (n, again) = h.run();
        self.ran = self.ran.saturating_add(n);
        self.runs = self.runs.saturating_add(1);
        if again {
            self.enqueue(&h);
        }
        Some(n)
    }

    /// Run scheduled Streams in FIFO order until none is scheduled: how many service
    /// procedures ran.
    ///
    /// A service procedure that re-enables its own queue forever makes this loop forever, as
    /// it would keep a CPU busy in the kernel.
    pub fn run_until_idle(&mut self) -> usize {
        let mut n = 0usize;
        while let Some(k) = self.run_one() {
            n = n.saturating_add(k);
        }
        n
    }

    /// How many Streams are on the run list.
    pub fn pending(&self) -> usize {
        self.list.len()
    }

    /// The id of the Stream that runs next.
    pub fn next_id(&self) -> Option<usize> {
        self.list.peek().map(StreamHandle::id)
    }

    /// Service procedures run so far.
    pub fn serviced(&self) -> usize {
        self.ran
    }

    /// Stream runs (`runqueues` calls) so far.
    pub fn runs(&self) -> usize {
        self.runs
    }

    fn enqueue(&mut self, h: &StreamHandle<S>) {
        if self.list.push(h.clone()).is_ok() {
            return;
        }
        // Only a handle from another runner can get here (each registered Stream has a
        // reserved slot and is queued at most once). Grow; if even that fails, drop the claim
        // so that a later schedule retries instead of the Stream being stranded.
        let more = self.list.capacity().saturating_mul(2).saturating_add(1);
        if self.list.reserve(more).is_err() || self.list.push(h.clone()).is_err() {
            h.flag().begin_run();
        }
    }
}
