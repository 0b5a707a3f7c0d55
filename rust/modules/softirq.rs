// SPDX-License-Identifier: GPL-2.0
//! Softirq context for code that puts into a Stream from outside it: [`SoftTimer`], an hrtimer
//! whose callback runs in softirq context (`HRTIMER_MODE_REL_SOFT`), and [`Tasklet`].
//!
//! 6.12's kernel crate has neither, so the `struct hrtimer` and the `struct tasklet_struct`
//! live in the C shim (`rstreams_hrtimer_*`, `rstreams_tasklet_*` in `strshim_core.c`) and these
//! types own them, as `dwork.rs` owns a delayed work item. Both are made without sleeping
//! (`GFP_ATOMIC`: a driver makes them under its Stream lock), and dropping one cancels it and
//! waits for a running callback (`hrtimer_cancel`, `tasklet_kill`) before freeing it, so the
//! object the callback uses only has to outlive the wrapper. The drop sleeps: process context,
//! holding no Stream lock.
//!
//! The callback ([`Softirq::softirq`]) runs in softirq context: it must not sleep, take a
//! Stream lock or drop the last reference to a Stream (`stream::QRef::put` is what it may do).
//! One timer's (or tasklet's) callback never runs on two CPUs at once.

use core::ffi::c_void;
use core::marker::PhantomData;

use crate::errno::Errno;

extern "C" {
    fn rstreams_hrtimer_new(
        // SAFETY (contract): the shim calls `f(ctx)` from softirq context only while the timer
        // lives (`rstreams_hrtimer_free` cancels and waits first).
        f: unsafe extern "C" fn(*mut c_void),
        ctx: *mut c_void,
    ) -> *mut c_void;
    fn rstreams_hrtimer_start(t: *mut c_void, ns: u64);
    fn rstreams_hrtimer_free(t: *mut c_void) -> *mut c_void;
    fn rstreams_tasklet_new(
        // SAFETY (contract): as for `rstreams_hrtimer_new` (`rstreams_tasklet_free` kills the
        // tasklet, waiting for a running callback).
        f: unsafe extern "C" fn(*mut c_void),
        ctx: *mut c_void,
    ) -> *mut c_void;
    fn rstreams_tasklet_schedule(t: *mut c_void);
    fn rstreams_tasklet_free(t: *mut c_void) -> *mut c_void;
}

/// What a [`SoftTimer`] or a [`Tasklet`] calls.
pub(crate) trait Softirq: Sync {
    /// The callback, in softirq context (see the module docs).
    fn softirq(&self);
}

/// The C callback of both: `ctx` is the object.
///
/// # Safety
/// `ctx` is the `obj` given to `SoftTimer::<T>::new` or `Tasklet::<T>::new`, and that wrapper
/// has not been dropped yet.
unsafe extern "C" fn trampoline<T: Softirq>(ctx: *mut c_void) {
    // SAFETY: guaranteed by the caller: `obj` outlives the wrapper (contract of `new`), and the
    // wrapper's drop cancels the callback and waits for it before it returns.
    unsafe { &*ctx.cast_const().cast::<T>() }.softirq()
}

/// An hrtimer calling `obj.softirq()` in softirq context when it expires.
///
/// # Invariants
/// `handle` is a live `rstreams_hrtimer_new` allocation, freed only by `drop`; the `obj` given
/// to `new` outlives `self`.
pub(crate) struct SoftTimer<T: Softirq> {
    handle: *mut c_void,
    _obj: PhantomData<*const T>,
}

// SAFETY: the handle is used only through the hrtimer API, which may be called from any
// thread; the callback gets a shared `&T` and `T: Sync`.
unsafe impl<T: Softirq> Send for SoftTimer<T> {}
// SAFETY: `start` and `drop` may run concurrently (hrtimer API, its own locking); see `Send`.
unsafe impl<T: Softirq> Sync for SoftTimer<T> {}

impl<T: Softirq> SoftTimer<T> {
    /// A timer, not armed, that calls `obj.softirq()`. ENOSR when memory runs out.
    ///
    /// # Safety
    /// `obj` points to a `T` that stays valid until this `SoftTimer` is dropped (typically: the
    /// timer is a field of that `T`, dropped before the fields the callback uses).
    pub(crate) unsafe fn new(obj: *const T) -> Result<Self, Errno> {
        // SAFETY: `trampoline::<T>` matches the C callback type and is called with `obj` only
        // while the timer lives (the caller guarantees `obj` outlives it).
        let handle = unsafe { rstreams_hrtimer_new(trampoline::<T>, obj.cast_mut().cast()) };
        if handle.is_null() {
            return Err(Errno::ENOSR);
        }
        // INVARIANT: `handle` is live; the caller guarantees `obj`'s lifetime.
        Ok(SoftTimer {
            handle,
            _obj: PhantomData,
        })
    }

    /// Call back `ns` nanoseconds from now, moving an armed timer. Any context but hard
    /// interrupts, the callback included.
    pub(crate) fn start(&self, ns: u64) {
        // SAFETY: `handle` is live (type invariant).
        unsafe { rstreams_hrtimer_start(self.handle, ns) }
    }
}

impl<T: Softirq> Drop for SoftTimer<T> {
    fn drop(&mut self) {
        // SAFETY: `handle` is live (type invariant) and freed once, here; the shim cancels the
        // timer and waits for a running callback before freeing it. The context pointer it
        // returns is the caller's `obj`, not ours to free.
        let _ = unsafe { rstreams_hrtimer_free(self.handle) };
    }
}

/// A tasklet calling `obj.softirq()`.
///
/// # Invariants
/// `handle` is a live `rstreams_tasklet_new` allocation, freed only by `drop`; the `obj` given
/// to `new` outlives `self`.
pub(crate) struct Tasklet<T: Softirq> {
    handle: *mut c_void,
    _obj: PhantomData<*const T>,
}

// SAFETY: the handle is used only through the tasklet API, which may be called from any
// thread; the callback gets a shared `&T` and `T: Sync`.
unsafe impl<T: Softirq> Send for Tasklet<T> {}
// SAFETY: `schedule` and `drop` may run concurrently (tasklet API, atomic state bits).
unsafe impl<T: Softirq> Sync for Tasklet<T> {}

impl<T: Softirq> Tasklet<T> {
    /// A tasklet, not scheduled, that calls `obj.softirq()`. ENOSR when memory runs out.
    ///
    /// # Safety
    /// As for [`SoftTimer::new`].
    pub(crate) unsafe fn new(obj: *const T) -> Result<Self, Errno> {
        // SAFETY: as in `SoftTimer::new`.
        let handle = unsafe { rstreams_tasklet_new(trampoline::<T>, obj.cast_mut().cast()) };
        if handle.is_null() {
            return Err(Errno::ENOSR);
        }
        // INVARIANT: `handle` is live; the caller guarantees `obj`'s lifetime.
        Ok(Tasklet {
            handle,
            _obj: PhantomData,
        })
    }

    /// Run the callback (once more) in softirq context, on this CPU. Any context but hard
    /// interrupts, the callback included.
    pub(crate) fn schedule(&self) {
        // SAFETY: `handle` is live (type invariant).
        unsafe { rstreams_tasklet_schedule(self.handle) }
    }
}

impl<T: Softirq> Drop for Tasklet<T> {
    fn drop(&mut self) {
        // SAFETY: as for `SoftTimer::drop` (`tasklet_kill`, then free).
        let _ = unsafe { rstreams_tasklet_free(self.handle) };
    }
}
