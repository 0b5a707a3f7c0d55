// SPDX-License-Identifier: GPL-2.0
//! [`WaitQueue`]: a kernel `wait_queue_head` for sleeping with signals and for poll.
//!
//! `kernel::sync::CondVar` sleeps exclusively and keeps its `wait_queue_head` private, so
//! poll(2) cannot register on it. This wrapper exposes both uses of one wait queue:
//! [`WaitQueue::sleep`] (interruptible, non-exclusive: every sleeper re-tests its own
//! condition), [`WaitQueue::sleep_timeout`] (the same with a time limit, as
//! `wait_event_interruptible_timeout`: I_STR's `ic_timout`, the close-time drain) and
//! [`WaitQueue::as_raw`] for `poll_wait` (`chardev::PollTable`).
//!
//! No lost wakeups: `sleep` takes the lock guard under which the caller found it must wait,
//! queues the task (TASK_INTERRUPTIBLE) *before* dropping the guard, then schedules. A waker
//! changes the state under the same lock and calls [`WaitQueue::wake_all`] afterwards, so it
//! either ran before our test (we saw the new state) or finds us queued and wakes us.

use core::ffi::c_int;
use core::marker::PhantomPinned;

use kernel::bindings;
use kernel::ffi::c_long;
use kernel::prelude::*;
use kernel::types::Opaque;

use crate::errno::Errno;

extern "C" {
    fn rstreams_wake_up_if_sleepers(wq: *mut core::ffi::c_void);
}

/// `ERESTARTSYS`: interrupted by a signal; the system call is restarted (SA_RESTART) or fails
/// with EINTR, as the kernel's signal code decides.
pub(crate) const ERESTARTSYS: Errno = Errno(bindings::ERESTARTSYS as i32);

/// "No time limit" for [`WaitQueue::sleep_timeout`] (`MAX_SCHEDULE_TIMEOUT`, `LONG_MAX`).
pub(crate) const MAX_SCHEDULE_TIMEOUT: c_long = c_long::MAX;

/// Jiffies for `ms` milliseconds, rounded up (`msecs_to_jiffies`), at most
/// [`MAX_SCHEDULE_TIMEOUT`] - 1 so that a long limit never means "no limit".
pub(crate) fn ms_to_jiffies(ms: u32) -> c_long {
    let j = kernel::time::msecs_to_jiffies(ms);
    c_long::try_from(j).unwrap_or(MAX_SCHEDULE_TIMEOUT - 1)
}

/// A wait queue head.
///
/// # Invariants
/// `wq` is initialised (`__init_waitqueue_head`) and pinned for its whole life.
#[pin_data]
pub(crate) struct WaitQueue {
    #[pin]
    wq: Opaque<bindings::wait_queue_head>,
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: a wait_queue_head is used from any thread; it has its own spinlock.
unsafe impl Send for WaitQueue {}
// SAFETY: as above: all operations on it are thread-safe.
unsafe impl Sync for WaitQueue {}

impl WaitQueue {
    /// A new, empty wait queue.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            _pin: PhantomPinned,
            // SAFETY: `slot` is valid, unused memory for a wait_queue_head for the closure's
            // duration, and is pinned afterwards.
            wq <- Opaque::ffi_init(|slot| unsafe { crate::chardev::init_waitqueue_head(slot) }),
        })
    }

    /// The C wait queue (for `poll_wait`).
    pub(crate) fn as_raw(&self) -> *mut bindings::wait_queue_head {
        self.wq.get()
    }

    /// Wake every sleeper and poller, if there is any (no wait-queue lock taken otherwise:
    /// the common case of a write nobody waits for). Correct because sleepers queue
    /// themselves before they drop the lock under which they tested their condition.
    pub(crate) fn wake_sleepers(&self) {
        // SAFETY: `wq` is initialised (type invariant).
        unsafe { rstreams_wake_up_if_sleepers(self.wq.get().cast()) };
    }

    /// Whether anyone is queued (sleeping, polling, or registered by epoll): the kernel's
    /// `waitqueue_active`, without a barrier. The caller orders it against the adder by a
    /// lock both take (the Stream lock: `StrPerim::watched`). Inline, as the C one is: one
    /// load of the list head's `next`.
    #[inline]
    pub(crate) fn has_waiters(&self) -> bool {
        let wq = self.wq.get();
        // SAFETY: `wq` is initialised and pinned for `self`'s life (type invariant), so its
        // list head is valid to read. The list changes under the wait queue's own lock, which
        // this does not take: the read is `READ_ONCE(head->next)` (a volatile read of an
        // aligned pointer, as `list_empty` makes it), and the writers store with
        // `WRITE_ONCE`, so it sees the old or the new pointer, never a torn one.
        let (head, next) = unsafe {
            let head = core::ptr::addr_of_mut!((*wq).head);
            (
                head,
                core::ptr::read_volatile(core::ptr::addr_of!((*head).next)),
            )
        };
        next != head
    }

    /// Sleep until woken, releasing `guard` (the lock under which the caller decided to wait)
    /// only after the task is queued. Returns ERESTARTSYS if a signal is pending; the caller
    /// re-takes the lock and re-tests its condition either way.
    pub(crate) fn sleep<G>(&self, guard: G) -> Result<(), Errno> {
        self.sleep_timeout(guard, MAX_SCHEDULE_TIMEOUT).map(|_| ())
    }

    /// As [`WaitQueue::sleep`], for at most `timeout` jiffies ([`MAX_SCHEDULE_TIMEOUT`]: no
    /// limit). Returns the jiffies left when woken, 0 if the time ran out (`schedule_timeout`),
    /// or ERESTARTSYS if a signal is pending. A caller that sleeps again after a wakeup passes
    /// what was left, so spurious wakeups do not extend its limit.
    pub(crate) fn sleep_timeout<G>(&self, guard: G, timeout: c_long) -> Result<c_long, Errno> {
        self.sleep_counted(guard, timeout, None)
    }

    /// [`WaitQueue::sleep_timeout`] for a task that wants to be known as a sleeper while it
    /// is queued: `counter` (the Stream's, `Gate::sleeper_queued`/`sleeper_woken`) counts it
    /// from after it is queued, before `guard` is dropped, until after it is woken.
    pub(crate) fn sleep_counted<G>(
        &self,
        guard: G,
        timeout: c_long,
        counter: Option<&crate::perim::Gate>,
    ) -> Result<c_long, Errno> {
        let entry = Opaque::<bindings::wait_queue_entry>::uninit();
        // SAFETY: `entry` is valid stack memory that outlives its use here (it is removed from
        // the queue by `finish_wait`, or never added when a signal is pending).
        unsafe { bindings::init_wait_entry(entry.get(), 0) };
        // SAFETY: `wq` is initialised (type invariant), `entry` was just initialised.
        let r = unsafe {
            bindings::prepare_to_wait_event(
                self.wq.get(),
                entry.get(),
                bindings::TASK_INTERRUPTIBLE as c_int,
            )
        };
        if r != 0 {
            drop(guard);
            // prepare_to_wait_event did not queue us and left the task running.
            return Err(ERESTARTSYS);
        }
        if let Some(g) = counter {
            g.sleeper_queued();
            // A lazy put that came before the count did not claim or wake (`perim` step 5):
            // look again instead of sleeping on it.
            if g.has_pending() {
                drop(guard);
                // SAFETY: `entry` was queued on `wq` by prepare_to_wait_event; this dequeues
                // it and sets the task running again.
                unsafe { bindings::finish_wait(self.wq.get(), entry.get()) };
                g.sleeper_woken();
                return Ok(timeout);
            }
        }
        drop(guard);
        // SAFETY: reschedule in process context with no spinlock held (the guard is a mutex
        // and has been dropped); any timeout value is accepted (negative ones return at once).
        let left = unsafe { bindings::schedule_timeout(timeout) };
        // SAFETY: `entry` was queued on `wq` by prepare_to_wait_event.
        unsafe { bindings::finish_wait(self.wq.get(), entry.get()) };
        if let Some(g) = counter {
            g.sleeper_woken();
        }
        Ok(left.max(0))
    }
}
