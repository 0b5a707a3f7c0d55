//! The threaded runner: N worker threads sharing one global run queue, like the SVR4 MP
//! STREAMS scheduler threads (or the kernel's workqueue, which the kernel platform uses).
//!
//! Producers operate on Streams from any thread with [`ThreadedRunner::with`]; a worker takes
//! the Stream at the head of the run queue, clears its scheduled flag, takes its stream lock and
//! runs its enabled service procedures. The run-queue lock and a stream lock are never held at
//! once, so there is no lock order to get wrong.

use super::{lock, thread, Arc, Condvar, Mutex, StreamHandle};
use crate::sched::{RunList, Schedulable};
use crate::sys::NoMem;

extern crate std;
use std::vec::Vec;

struct State<S> {
    list: RunList<StreamHandle<S>>,
    registered: usize,
    /// Streams taken off the list whose run has not finished.
    running: usize,
    shutdown: bool,
    ran: usize,
    runs: usize,
}

struct Global<S> {
    state: Mutex<State<S>>,
    /// Signalled when a Stream is queued or on shutdown.
    work: Condvar,
    /// Signalled when the list is empty and no run is in progress.
    idle: Condvar,
}

/// A pool of worker threads running service procedures.
pub struct ThreadedRunner<S> {
    global: Arc<Global<S>>,
    workers: Vec<thread::JoinHandle<()>>,
}

impl<S: Schedulable + Send + 'static> ThreadedRunner<S> {
    /// Start `workers` worker threads (at least one). Fails if a thread cannot be started.
    pub fn new(workers: usize) -> Result<Self, NoMem> {
        let global = Arc::new(Global {
            state: Mutex::new(State {
                list: RunList::empty(),
                registered: 0,
                running: 0,
                shutdown: false,
                ran: 0,
                runs: 0,
            }),
            work: Condvar::new(),
            idle: Condvar::new(),
        });
        let mut r = ThreadedRunner {
            global,
            workers: Vec::new(),
        };
        for i in 0..workers.max(1) {
            let g = r.global.clone();
            let name = std::format!("streams-sched-{i}");
            match thread::Builder::new().name(name).spawn(move || worker(&g)) {
                Ok(j) => r.workers.push(j),
                Err(_) => {
                    r.stop();
                    return Err(NoMem);
                }
            }
        }
        Ok(r)
    }

    /// Take charge of a Stream (reserving its run-list slot). If it already has enabled work,
    /// it is scheduled.
    pub fn register(&self, stream: S) -> Result<StreamHandle<S>, NoMem> {
        let h = {
            let mut st = lock(&self.global.state);
            let n = st.registered.checked_add(1).ok_or(NoMem)?;
            st.list.reserve(n)?;
            st.registered = n;
            StreamHandle::new(n - 1, stream)
        };
        self.schedule(&h);
        Ok(h)
    }

    /// Run `f` under the Stream's lock (from any thread), then schedule the Stream if `f` left
    /// work enabled.
    pub fn with<R>(&self, h: &StreamHandle<S>, f: impl FnOnce(&mut S) -> R) -> R {
        let (r, enqueue) = h.with_locked(f);
        if enqueue {
            self.enqueue(h);
        }
        r
    }

    /// Put the Stream on the run queue if it has enabled work and is not there yet.
    /// Returns whether this call put it there.
    pub fn schedule(&self, h: &StreamHandle<S>) -> bool {
        let ((), enqueue) = h.with_locked(|_| ());
        if enqueue {
            self.enqueue(h);
        }
        enqueue
    }

    /// Wait until the run queue is empty and no worker is running a Stream; service
    /// procedures run so far. Work enabled concurrently with this call may or may not be done.
    pub fn quiesce(&self) -> usize {
        let mut st = lock(&self.global.state);
        while !(st.list.is_empty() && st.running == 0) {
            st = self.global.idle.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.ran
    }

    /// Service procedures run so far.
    pub fn serviced(&self) -> usize {
        lock(&self.global.state).ran
    }

    /// Stream runs (`runqueues` calls) so far.
    pub fn runs(&self) -> usize {
        lock(&self.global.state).runs
    }

    /// Finish all scheduled work, stop the workers and wait for them; service procedures run
    /// in total.
    pub fn shutdown(mut self) -> usize {
        self.quiesce();
        self.stop();
        lock(&self.global.state).ran
    }

    fn enqueue(&self, h: &StreamHandle<S>) {
        let mut st = lock(&self.global.state);
        if st.list.push(h.clone()).is_err() {
            // Only a handle from another runner can get here; see DetRunner::enqueue.
            let more = st.list.capacity().saturating_mul(2).saturating_add(1);
            if st.list.reserve(more).is_err() || st.list.push(h.clone()).is_err() {
                h.flag().begin_run();
                return;
            }
        }
        drop(st);
        self.global.work.notify_one();
    }
}

impl<S> ThreadedRunner<S> {
    /// Tell the workers to exit once the queue is empty, and join them.
    fn stop(&mut self) {
        lock(&self.global.state).shutdown = true;
        self.global.work.notify_all();
        for j in self.workers.drain(..) {
            // A worker that panicked (a service procedure panicked) has nothing left to join.
            let _ = j.join();
        }
    }
}

impl<S> Drop for ThreadedRunner<S> {
    fn drop(&mut self) {
        self.stop();
    }
}

fn worker<S: Schedulable>(g: &Global<S>) {
    let mut st = lock(&g.state);
    loop {
        if let Some(h) = st.list.pop() {
            st.running += 1;
            drop(st);
            let (n, again) = h.run();
            st = lock(&g.state);
            st.running -= 1;
            st.ran = st.ran.saturating_add(n);
            st.runs = st.runs.saturating_add(1);
            if again {
                // The slot it just left is free, so this push cannot fail; if it did, dropping
                // the claim lets the next operation on the Stream schedule it.
                match st.list.push(h) {
                    Ok(()) => g.work.notify_one(),
                    Err(h) => {
                        h.flag().begin_run();
                    }
                }
                continue;
            }
            if st.list.is_empty() && st.running == 0 {
                g.idle.notify_all();
            }
            continue;
        }
        if st.shutdown {
            return;
        }
        st = g.work.wait(st).unwrap_or_else(|e| e.into_inner());
    }
}
