//! The STREAMS scheduler: who runs enabled service procedures, and when.
//!
//! Within one Stream, `qenable` puts a queue on the Stream's own run list exactly once (QENAB),
//! and the Stream drains that list in [`Schedulable::runqueues`]. This module is the other half:
//! the protocol by which the *platform* notices that a Stream has enabled work and runs it later,
//! outside the system call (or put) that enabled it, with the stream lock taken afresh.
//!
//! - [`Schedulable`]: what a Stream offers the scheduler.
//! - [`SchedFlag`]: the per-Stream "is on the global run list" flag. It makes a Stream appear on
//!   the global run list at most once, and the runner clears it *before* taking the stream lock,
//!   so an enable that races with a run is never lost (see `docs/concurrency.md`).
//! - [`RunList`]: a fixed-capacity FIFO of scheduled Streams that never allocates when a Stream
//!   is scheduled (capacity is reserved when a Stream is registered, and the flag guarantees a
//!   Stream occupies at most one slot).
//! - `host` (feature `std` or `cfg(loom)` only): the deterministic and threaded host runners.
//!
//! The kernel platform uses [`SchedFlag`] with a workqueue instead of a [`RunList`] (later).

#[cfg(not(loom))]
use core::sync::atomic::{AtomicBool, Ordering};
#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, Ordering};

use crate::sys::{self, NoMem, Vec};

#[cfg(any(feature = "std", loom))]
pub mod host;

#[cfg(any(rstreams_test, not(rstreams_kernel)))]
#[doc(hidden)]
pub mod tests;

/// Something that holds enabled service procedures (a Stream).
pub trait Schedulable {
    /// Run each enabled service procedure (qenable order) until none is enabled; how many ran.
    fn runqueues(&mut self) -> usize;
    /// Whether any service procedure is enabled.
    fn has_enabled(&self) -> bool;
}

/// The per-Stream "scheduled" flag: set while the Stream sits on the global run list.
///
/// Protocol (both halves are needed for "no lost wakeups"):
/// - after any operation under the stream lock, the platform calls
///   [`schedule_if_enabled`](Self::schedule_if_enabled) (or `has_enabled()` +
///   [`try_schedule`](Self::try_schedule)); only the caller that gets `true` enqueues the Stream;
/// - the runner calls [`begin_run`](Self::begin_run) when it takes the Stream off the run list,
///   BEFORE it takes the stream lock and calls `runqueues` ([`run`](Self::run) does both in this
///   order). An enable that happens during or after the run then finds the flag clear and
///   schedules the Stream again; an enable that happened before the run is seen by it.
///   A holder that takes the inbound list outside a run (`Perim::take_inbound`) clears the
///   claim first too, but only when [`is_scheduled`](Self::is_scheduled) shows it set: a claim
///   it does not see stays standing, and its server (or the holder's fenced look at its
///   unlock, `Gate::needs_look`) runs the Stream once more.
#[derive(Debug)]
pub struct SchedFlag {
    scheduled: AtomicBool,
}

impl SchedFlag {
    /// A clear flag (the Stream is not on any run list).
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        SchedFlag {
            scheduled: AtomicBool::new(false),
        }
    }

    /// A clear flag (the Stream is not on any run list).
    #[cfg(loom)]
    pub fn new() -> Self {
        SchedFlag {
            scheduled: AtomicBool::new(false),
        }
    }

    /// Claim the right to put the Stream on the run list: `true` exactly once until the next
    /// [`begin_run`](Self::begin_run). The caller that gets `true` must enqueue the Stream.
    pub fn try_schedule(&self) -> bool {
        self.scheduled
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The runner took the Stream off the run list: clear the flag (before locking the Stream).
    /// Returns whether the flag was set (it always is for a Stream that came off a run list).
    pub fn begin_run(&self) -> bool {
        self.scheduled.swap(false, Ordering::AcqRel)
    }

    /// Whether the Stream is on a run list now (a snapshot, for statistics and assertions).
    #[inline]
    pub fn is_scheduled(&self) -> bool {
        self.scheduled.load(Ordering::Acquire)
    }

    /// Called with the stream lock held, after an operation on `s`: if `s` has enabled service
    /// procedures, claim the flag. `true` means the caller must enqueue the Stream (after
    /// dropping the stream lock, preferably; the flag keeps others from enqueueing it meanwhile).
    pub fn schedule_if_enabled<S: Schedulable + ?Sized>(&self, s: &S) -> bool {
        s.has_enabled() && self.try_schedule()
    }

    /// The runner's half: clear the flag, THEN take the stream lock (`lock()` returns the guard)
    /// and run the enabled service procedures. Returns how many ran.
    pub fn run<S, G>(&self, lock: impl FnOnce() -> G) -> usize
    where
        S: Schedulable + ?Sized,
        G: core::ops::DerefMut<Target = S>,
    {
        self.begin_run();
        let mut stream = lock();
        stream.runqueues()
    }
}

impl Default for SchedFlag {
    fn default() -> Self {
        Self::new()
    }
}

/// A fixed-capacity FIFO of scheduled Streams (the global run list of a host runner).
///
/// Pushing and popping never allocate: room is made with [`reserve`](Self::reserve) when a
/// Stream is registered. Because [`SchedFlag`] keeps each Stream on the list at most once, a
/// list with room for every registered Stream can never be full when a Stream is scheduled.
#[derive(Debug)]
pub struct RunList<T> {
    slots: Vec<Option<T>>,
    head: usize,
    len: usize,
}

impl<T> RunList<T> {
    /// An empty list with no room yet (host runners; they [`reserve`](Self::reserve) later).
    #[cfg(any(feature = "std", loom))]
    pub(crate) fn empty() -> Self {
        RunList {
            slots: Vec::new(),
            head: 0,
            len: 0,
        }
    }

    /// An empty list with room for `n` entries.
    pub fn with_capacity(n: usize) -> Result<Self, NoMem> {
        Ok(RunList {
            slots: empty_slots(n)?,
            head: 0,
            len: 0,
        })
    }

    /// How many entries fit without [`reserve`](Self::reserve).
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// How many entries are queued.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Append `x` at the tail; a full list hands `x` back (never allocates).
    pub fn push(&mut self, x: T) -> Result<(), T> {
        let cap = self.capacity();
        if self.len >= cap {
            return Err(x);
        }
        let idx = wrap(self.head, self.len, cap);
        match self.slots.as_mut_slice().get_mut(idx) {
            Some(slot) => {
                *slot = Some(x);
                self.len += 1;
                Ok(())
            }
            None => Err(x),
        }
    }

    /// Take the entry at the head (the one scheduled first).
    pub fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let cap = self.capacity();
        let x = self.slots.as_mut_slice().get_mut(self.head)?.take();
        self.head = wrap(self.head, 1, cap);
        self.len -= 1;
        x
    }

    /// The entry at the head, without taking it.
    pub fn peek(&self) -> Option<&T> {
        if self.len == 0 {
            return None;
        }
        self.slots.as_slice().get(self.head)?.as_ref()
    }

    /// Make room for at least `n` entries, keeping the queued ones in order. On failure the
    /// list is unchanged.
    pub fn reserve(&mut self, n: usize) -> Result<(), NoMem> {
        if n <= self.capacity() {
            return Ok(());
        }
        let mut slots = empty_slots(n)?;
        let mut len = 0;
        while let Some(x) = self.pop() {
            // `n > old capacity >= queued entries`, so slot `len` exists.
            debug_assert!(len < n);
            if let Some(slot) = slots.as_mut_slice().get_mut(len) {
                *slot = Some(x);
                len += 1;
            }
        }
        self.slots = slots;
        self.head = 0;
        self.len = len;
        Ok(())
    }
}

/// `n` empty slots, allocated at once so that filling them cannot fail.
fn empty_slots<T>(n: usize) -> Result<Vec<Option<T>>, NoMem> {
    let mut v = sys::vec_with_capacity(n)?;
    for _ in 0..n {
        // Within the capacity just reserved: no allocation, cannot fail.
        sys::vec_push(&mut v, None).map_err(|_| NoMem)?;
    }
    Ok(v)
}

/// `(i + k) mod cap` for `i < cap`, `k <= cap`, without overflow or division by zero.
fn wrap(i: usize, k: usize, cap: usize) -> usize {
    let room = cap.saturating_sub(i);
    if k < room {
        i + k
    } else {
        k - room
    }
}
