//! Host runners for service procedures: deterministic ([`DetRunner`]) and threaded
//! ([`ThreadedRunner`]). Built only with the `std` feature or under `cfg(loom)`; never in the
//! kernel, whose runner is a workqueue.
//!
//! Both runners hold Streams as [`StreamHandle`]s: a stream lock (`Mutex<S>`) plus the Stream's
//! [`SchedFlag`]. Every operation on a Stream goes through the stream lock, and after it the
//! runner calls [`SchedFlag::schedule_if_enabled`] — the same protocol the kernel platform uses.
//! Under `cfg(loom)` the locks, condition variables, atomics and threads are loom's, so the
//! loom models in `tests/loom_sched.rs` check the real runner code.

extern crate std;

use super::{SchedFlag, Schedulable};

mod det;
mod threaded;

pub use det::DetRunner;
pub use threaded::ThreadedRunner;

#[cfg(loom)]
pub(crate) use loom::{
    sync::{Arc, Condvar, Mutex, MutexGuard},
    thread,
};
#[cfg(not(loom))]
pub(crate) use std::{
    sync::{Arc, Condvar, Mutex, MutexGuard},
    thread,
};

/// Take a lock. A service procedure that panicked while holding it leaves the Stream in
/// whatever state it reached; the host runners carry on (tests see the panic themselves).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

struct Shared<S> {
    id: usize,
    flag: SchedFlag,
    stream: Mutex<S>,
}

/// A Stream registered with a host runner: its stream lock and its scheduled flag.
///
/// Cloning gives another handle to the same Stream.
pub struct StreamHandle<S> {
    shared: Arc<Shared<S>>,
}

impl<S> Clone for StreamHandle<S> {
    fn clone(&self) -> Self {
        StreamHandle {
            shared: self.shared.clone(),
        }
    }
}

impl<S: Schedulable> StreamHandle<S> {
    fn new(id: usize, stream: S) -> Self {
        StreamHandle {
            shared: Arc::new(Shared {
                id,
                flag: SchedFlag::new(),
                stream: Mutex::new(stream),
            }),
        }
    }

    /// The registration number (0, 1, … per runner).
    pub fn id(&self) -> usize {
        self.shared.id
    }

    /// Take the stream lock. Code that enables work under it must let the runner know
    /// afterwards (`schedule`); the runners' `with` does both.
    pub fn lock(&self) -> MutexGuard<'_, S> {
        lock(&self.shared.stream)
    }

    /// The Stream's scheduled flag.
    pub fn flag(&self) -> &SchedFlag {
        &self.shared.flag
    }

    /// Whether the Stream is on its runner's run list now.
    pub fn is_scheduled(&self) -> bool {
        self.shared.flag.is_scheduled()
    }

    /// Run `f` under the stream lock, then claim the scheduled flag if `f` left service
    /// procedures enabled: `true` means the caller must enqueue this handle.
    fn with_locked<R>(&self, f: impl FnOnce(&mut S) -> R) -> (R, bool) {
        let mut s = self.lock();
        let r = f(&mut s);
        let enqueue = self.shared.flag.schedule_if_enabled(&*s);
        (r, enqueue)
    }

    /// The runner's half: clear the flag, then lock and run the enabled service procedures.
    /// Like any other operation under the stream lock, it ends by claiming the flag if work is
    /// still enabled (a Stream whose `runqueues` stops early): `.1` means "enqueue it again".
    fn run(&self) -> (usize, bool) {
        let flag = &self.shared.flag;
        flag.begin_run();
        let mut s = self.lock();
        let n = s.runqueues();
        (n, flag.schedule_if_enabled(&*s))
    }
}
