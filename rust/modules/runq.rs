// SPDX-License-Identifier: GPL-2.0
//! [`RunQueue`]: the STREAMS scheduler's runner in the kernel, a per-CPU workqueue on which
//! perimeters are run when no system call is there to run them.
//!
//! A perimeter is *claimed* by whoever hands it work (a put, a back-enable, a qenable from a
//! timer) and finds it idle (`sched::SchedFlag`). A claimer in a system call runs it itself
//! once it has dropped its own Stream lock (core `stream::Later`); a claimer in softirq or timer
//! context, or one that is already nested too deep, schedules it here instead
//! (`Perimeter::schedule`), and the work item runs it on the CPU that queued it.
//!
//! The workqueue is created when `streams.ko` loads and destroyed (after draining) when it
//! unloads, so no work item of ours can run once the module's text is gone.

use core::ffi::c_void;
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use kernel::sync::Arc;
use kernel::workqueue::{Queue, RawWorkItem};

use crate::errno::Errno;

extern "C" {
    fn rstreams_runq_create() -> *mut c_void;
    fn rstreams_runq_flush(wq: *mut c_void);
    fn rstreams_runq_destroy(wq: *mut c_void);
}

/// The workqueue, while `streams.ko` is loaded (set by [`RunQueue::create`]).
static RUNQ: AtomicPtr<c_void> = AtomicPtr::new(core::ptr::null_mut());

/// Work items queued so far (to tell, at unload, when running them queued no more).
static QUEUED: AtomicUsize = AtomicUsize::new(0);

/// Most flushes at unload before the runner is destroyed anyway (a Stream that kept
/// rescheduling itself for ever would otherwise hold up `rmmod`).
const MAX_FLUSHES: usize = 64;

/// Owner of the runner's workqueue; dropping it drains and destroys the workqueue.
///
/// # Invariants
/// While a `RunQueue` exists, [`RUNQ`] holds a live workqueue that it created.
pub(crate) struct RunQueue(());

impl RunQueue {
    /// Create the workqueue (module init). ENOMEM if the kernel cannot.
    pub(crate) fn create() -> Result<RunQueue, Errno> {
        // SAFETY: plain call in process context (module init).
        let wq = unsafe { rstreams_runq_create() };
        if wq.is_null() {
            return Err(Errno::ENOMEM);
        }
        RUNQ.store(wq, Ordering::Release);
        // INVARIANT: RUNQ holds the workqueue just created.
        Ok(RunQueue(()))
    }

    /// Queue `item` on this CPU's runner; `Err(item)` if it is already queued (its claim is
    /// then being served) or the module is unloading.
    pub(crate) fn enqueue<T>(item: Arc<T>) -> Result<(), Arc<T>>
    where
        T: Send + Sync + 'static,
        Arc<T>: RawWorkItem<0, EnqueueOutput = Result<(), Arc<T>>>,
    {
        let wq = RUNQ.load(Ordering::Acquire);
        if wq.is_null() {
            return Err(item);
        }
        // SAFETY: `wq` is the live workqueue of the `RunQueue` (type invariant), which is
        // destroyed only at module exit, after every Stream (and so every enqueuer) is gone.
        let q = unsafe { Queue::from_raw(wq.cast()) };
        let r = q.enqueue(item);
        if r.is_ok() {
            QUEUED.fetch_add(1, Ordering::AcqRel);
        }
        r
    }
}

impl Drop for RunQueue {
    fn drop(&mut self) {
        // First run what is queued with the runner still open to the work it chains: a Stream
        // that closes on the runner at unload (a lower Stream let go by a retired mux table,
        // `strdev.rs`) may hand its neighbours to it. Once RUNQ is null such a claim is
        // dropped (`StrPerim::schedule`) and that Stream would never close: a leak. Flush
        // until a flush saw nothing new queued.
        let wq = RUNQ.load(Ordering::Acquire);
        if !wq.is_null() {
            for _ in 0..MAX_FLUSHES {
                let before = QUEUED.load(Ordering::Acquire);
                // SAFETY: `wq` is the live workqueue of this `RunQueue` (type invariant): it
                // is destroyed only below.
                unsafe { rstreams_runq_flush(wq) };
                if QUEUED.load(Ordering::Acquire) == before {
                    break;
                }
            }
        }
        let wq = RUNQ.swap(core::ptr::null_mut(), Ordering::AcqRel);
        if !wq.is_null() {
            // SAFETY: `wq` was created by `create` and is destroyed once (the swap); pending
            // work items run to completion first (destroy_workqueue drains).
            unsafe { rstreams_runq_destroy(wq) };
        }
    }
}
