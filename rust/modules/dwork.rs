// SPDX-License-Identifier: GPL-2.0
//! [`DelayedWork`]: a function run once in process context (the system workqueue) some jiffies
//! after it is armed — the Stream head's write-hold timer (SNDHOLD).
//!
//! 6.12's kernel crate has work items but no delayed work, so the `struct delayed_work` lives
//! in the C shim (`rstreams_dwork_*` in `strshim_core.c`) and this type owns it: arming an armed
//! item does nothing (`schedule_delayed_work` semantics), and dropping it cancels the work and
//! waits for a running callback (`cancel_delayed_work_sync`) before freeing it, so the
//! callback's context only has to outlive the `DelayedWork`. [`DelayedWork::new_atomic`] makes
//! one without sleeping, for a driver under its Stream lock (`xput.rs`, armed with no delay as
//! a plain work item).

use core::ffi::c_void;
use core::marker::PhantomData;

use kernel::ffi::c_ulong;

use crate::errno::Errno;

extern "C" {
    fn rstreams_dwork_new(
        // SAFETY (contract): the shim calls `f(ctx)` from the workqueue only while the work
        // item lives (`rstreams_dwork_free` cancels and waits first).
        f: unsafe extern "C" fn(*mut c_void),
        ctx: *mut c_void,
        atomic: bool,
    ) -> *mut c_void;
    // Only the test build arms without moving (xput.rs); the hold timer moves (`rearm`).
    #[cfg_attr(not(rstreams_test), allow(dead_code))]
    fn rstreams_dwork_arm(d: *mut c_void, delay: c_ulong);
    fn rstreams_dwork_rearm(d: *mut c_void, delay: c_ulong);
    fn rstreams_dwork_pending(d: *mut c_void) -> bool;
    fn rstreams_dwork_free(d: *mut c_void) -> *mut c_void;
}

/// A delayed work item calling `f(ctx)`.
///
/// # Invariants
/// `handle` is a live `rstreams_dwork_new` allocation, freed only by `drop`; `ctx` (given to
/// `new`) outlives `self`.
pub(crate) struct DelayedWork<T: Sync> {
    handle: *mut c_void,
    _ctx: PhantomData<*const T>,
}

// SAFETY: the handle is used only through the workqueue API, which may be called from any
// thread; the callback gets a shared `&T` and `T: Sync`.
unsafe impl<T: Sync> Send for DelayedWork<T> {}
// SAFETY: `arm` and `drop` are safe to call concurrently (workqueue API), see `Send`.
unsafe impl<T: Sync> Sync for DelayedWork<T> {}

/// The C callback: recovers `&T` and calls the Rust function stored next to it.
///
/// # Safety
/// `ctx` is the `Ctx<T>` allocated by `DelayedWork::<T>::new`, still alive.
unsafe extern "C" fn trampoline<T: Sync>(ctx: *mut c_void) {
    // SAFETY: guaranteed by the caller: `new` passed a leaked `KBox<Ctx<T>>` that `drop`
    // frees only after `rstreams_dwork_free` has cancelled and waited for this callback.
    let c = unsafe { &*ctx.cast::<Ctx<T>>() };
    // SAFETY: `c.obj` outlives the `DelayedWork` (contract of `new`), and the work cannot run
    // after the `DelayedWork` is dropped.
    (c.f)(unsafe { &*c.obj });
}

struct Ctx<T> {
    f: fn(&T),
    obj: *const T,
}

impl<T: Sync> DelayedWork<T> {
    /// A work item that calls `f(&*obj)` when it fires. ENOSR when memory runs out.
    ///
    /// # Safety
    /// `obj` points to a `T` that stays valid until this `DelayedWork` is dropped (typically:
    /// the `DelayedWork` is a field of that `T`, dropped before the fields `f` uses).
    pub(crate) unsafe fn new(f: fn(&T), obj: *const T) -> Result<Self, Errno> {
        // SAFETY: the caller's contract is ours.
        unsafe { Self::alloc(f, obj, false) }
    }

    /// [`DelayedWork::new`] without sleeping (GFP_ATOMIC), for a caller holding a Stream lock
    /// (the `xput` test driver's producer; test build only).
    ///
    /// # Safety
    /// As for [`DelayedWork::new`].
    #[cfg(rstreams_test)]
    pub(crate) unsafe fn new_atomic(f: fn(&T), obj: *const T) -> Result<Self, Errno> {
        // SAFETY: the caller's contract is ours.
        unsafe { Self::alloc(f, obj, true) }
    }

    /// # Safety
    /// As for [`DelayedWork::new`].
    unsafe fn alloc(f: fn(&T), obj: *const T, atomic: bool) -> Result<Self, Errno> {
        let flags = if atomic {
            kernel::alloc::flags::GFP_ATOMIC
        } else {
            kernel::alloc::flags::GFP_KERNEL
        };
        let ctx = kernel::alloc::KBox::new(Ctx { f, obj }, flags).map_err(|_| Errno::ENOSR)?;
        let ctx = kernel::alloc::KBox::into_raw(ctx);
        // SAFETY: `trampoline::<T>` matches the C callback type; `ctx` stays allocated until
        // `drop`, after the work item is freed.
        let handle = unsafe { rstreams_dwork_new(trampoline::<T>, ctx.cast(), atomic) };
        if handle.is_null() {
            // SAFETY: `ctx` came from `KBox::into_raw` above and was not handed to C.
            drop(unsafe { kernel::alloc::KBox::from_raw(ctx) });
            return Err(Errno::ENOSR);
        }
        // INVARIANT: `handle` is live; the caller guarantees `obj`'s lifetime.
        Ok(DelayedWork {
            handle,
            _ctx: PhantomData,
        })
    }

    /// Run the callback `delay` jiffies from now, unless it is already pending (the test
    /// build's cross-CPU put kick, `xput.rs`).
    #[cfg_attr(not(rstreams_test), allow(dead_code))]
    pub(crate) fn arm(&self, delay: u64) {
        // SAFETY: `handle` is live (type invariant).
        unsafe { rstreams_dwork_arm(self.handle, delay as c_ulong) }
    }

    /// Run the callback `delay` jiffies from now, moving it if it is already pending.
    pub(crate) fn rearm(&self, delay: u64) {
        // SAFETY: `handle` is live (type invariant).
        unsafe { rstreams_dwork_rearm(self.handle, delay as c_ulong) }
    }

    /// Whether the callback is queued to run (again), armed and not yet started: false in a
    /// callback unless it was re-armed after it started (`delayed_work_pending`).
    pub(crate) fn pending(&self) -> bool {
        // SAFETY: `handle` is live (type invariant).
        unsafe { rstreams_dwork_pending(self.handle) }
    }
}

impl<T: Sync> Drop for DelayedWork<T> {
    fn drop(&mut self) {
        // SAFETY: `handle` is live (type invariant); this cancels the work, waits for a
        // running callback, frees the C side and returns the context pointer it held.
        let ctx = unsafe { rstreams_dwork_free(self.handle) };
        // SAFETY: `ctx` is the `KBox<Ctx<T>>` leaked by `new`; the work can no longer run.
        drop(unsafe { kernel::alloc::KBox::from_raw(ctx.cast::<Ctx<T>>()) });
    }
}
