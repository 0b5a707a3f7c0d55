// SPDX-License-Identifier: GPL-2.0
//! Read-only `/proc` files whose content a Rust type writes: [`ProcDir`], [`ProcFile`] and the
//! [`ProcShow`] trait.
//!
//! Linux 6.12's kernel crate has no procfs abstraction, so the C shim (`strshim_core.c`) makes a
//! `single_open` seq_file entry around one callback, and this file is the one place that
//! turns it into safe calls: a file's data is a `T: ProcShow`, whose `show` writes the content
//! with `core::fmt` into a [`SeqFile`]. seq_file sizes the buffer itself (an overflowing show
//! is simply called again with a bigger one), so `show` must produce the same text again
//! when called twice.
//!
//! Lifetimes: `proc_remove` waits for show calls in progress and none starts afterwards, so
//! a file's data may be freed as soon as its `ProcFile` is dropped. A file keeps its
//! directory alive (`Arc<ProcDir>`), so a directory is removed only when it is empty: removing
//! it first would free the file's entry under it.

use core::ffi::c_void;
use core::fmt;
use core::marker::PhantomData;

use kernel::ffi::{c_char, c_int};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

/// The C show callback type: `show(ctx, struct seq_file *m)`.
// SAFETY (contract): the shim calls it with the context given at creation and a live
// seq_file, only while the entry exists (`proc_remove` waits for running calls).
type ShowFn = unsafe extern "C" fn(ctx: *mut c_void, m: *mut c_void) -> c_int;

extern "C" {
    fn rstreams_proc_create(
        name: *const c_char,
        parent: *mut c_void,
        show: Option<ShowFn>,
        ctx: *mut c_void,
    ) -> *mut c_void;
    fn rstreams_proc_remove(handle: *mut c_void);
    fn rstreams_seq_write(m: *mut c_void, s: *const c_char, len: usize) -> c_int;
}

/// What a `/proc` file shows: called (in process context, no locks held) for each read from
/// the start of the file.
pub(crate) trait ProcShow: Send + Sync + 'static {
    /// Write the whole content to `out`.
    fn show(&self, out: &mut SeqFile<'_>) -> fmt::Result;
}

/// The output of one show call (a `struct seq_file`), written with `write!`.
///
/// # Invariants
/// `m` is the seq_file of a show call in progress, for the lifetime `'a`.
pub(crate) struct SeqFile<'a> {
    m: *mut c_void,
    _call: PhantomData<&'a mut ()>,
}

impl fmt::Write for SeqFile<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // SAFETY: `m` is the seq_file of the show call in progress (type invariant); `s` is
        // valid for `s.len()` bytes, which seq_write copies.
        let r = unsafe { rstreams_seq_write(self.m, s.as_ptr().cast(), s.len()) };
        if r < 0 {
            Err(fmt::Error) // buffer full: seq_file calls show again with a bigger one
        } else {
            Ok(())
        }
    }
}

/// A directory under `/proc` (or under another `ProcDir`); removed on drop, when no file is
/// left in it (each [`ProcFile`] holds an `Arc` on its directory).
///
/// # Invariants
/// `h` is a live handle from `rstreams_proc_create` for a directory (`show == NULL`).
pub(crate) struct ProcDir {
    h: *mut c_void,
    /// The parent directory, kept alive while this one exists.
    _parent: Option<Arc<ProcDir>>,
}

// SAFETY: the handle is only used to create children and in `drop`; proc_mkdir, proc_create
// and proc_remove may be called from any thread in process context.
unsafe impl Send for ProcDir {}
// SAFETY: `&ProcDir` only reads the handle to create children, which procfs serialises.
unsafe impl Sync for ProcDir {}

impl ProcDir {
    /// proc_mkdir `name` under `parent` (`None`: directly under `/proc`).
    pub(crate) fn new(name: &'static CStr, parent: Option<&Arc<ProcDir>>) -> Result<Arc<Self>> {
        let p = parent.map_or(core::ptr::null_mut(), |d| d.h);
        // SAFETY: `name` is a 'static C string; `p` is null or a live directory handle (the
        // parent's invariant), which we keep alive below.
        let h = unsafe { rstreams_proc_create(name.as_char_ptr(), p, None, core::ptr::null_mut()) };
        if h.is_null() {
            return Err(ENOMEM);
        }
        // INVARIANT: `h` is a live directory handle. If the `Arc` cannot be allocated, the
        // `ProcDir` is dropped, which removes the directory again.
        let dir = ProcDir {
            h,
            _parent: parent.cloned(),
        };
        Ok(Arc::new(dir, GFP_KERNEL)?)
    }
}

impl Drop for ProcDir {
    fn drop(&mut self) {
        // SAFETY: `h` is live (type invariant); the directory is empty: every file in it
        // holds an `Arc` on it, so they were all removed before this last reference went.
        unsafe { rstreams_proc_remove(self.h) };
    }
}

/// A read-only (0444) `/proc` file whose content `T::show` writes; removed on drop.
///
/// # Invariants
/// `h` is a live handle from `rstreams_proc_create` whose `ctx` points to `*data`; `data` is
/// not moved out of its box or freed while `h` is live.
pub(crate) struct ProcFile<T: ProcShow> {
    h: *mut c_void,
    data: KBox<T>,
    _dir: Arc<ProcDir>,
}

// SAFETY: the handle is used only in `drop` (proc_remove from any thread); `T: Send + Sync`.
unsafe impl<T: ProcShow> Send for ProcFile<T> {}
// SAFETY: `&ProcFile<T>` only gives `&T`, and `T: Sync`.
unsafe impl<T: ProcShow> Sync for ProcFile<T> {}

impl<T: ProcShow> ProcFile<T> {
    /// Create `dir/name` showing `data`.
    pub(crate) fn new(name: &'static CStr, dir: &Arc<ProcDir>, data: T) -> Result<Self> {
        let mut data = KBox::new(data, GFP_KERNEL)?;
        let ctx: *mut T = &mut *data;
        // SAFETY: `name` is a 'static C string; `dir.h` is a live directory handle (kept alive
        // by `_dir`); `ctx` points into the box, which stays put until `drop` removed the
        // entry (type invariant); `show_tramp::<T>` expects exactly such a `ctx`.
        let h = unsafe {
            rstreams_proc_create(name.as_char_ptr(), dir.h, Some(show_tramp::<T>), ctx.cast())
        };
        if h.is_null() {
            return Err(ENOMEM);
        }
        // INVARIANT: `h` is live and its ctx is `*data`.
        Ok(ProcFile {
            h,
            data,
            _dir: dir.clone(),
        })
    }

    /// The data shown.
    #[allow(dead_code)]
    pub(crate) fn data(&self) -> &T {
        &self.data
    }
}

impl<T: ProcShow> Drop for ProcFile<T> {
    fn drop(&mut self) {
        // SAFETY: `h` is live (type invariant). proc_remove waits for show calls in progress
        // and none starts afterwards, so `data` (freed after this) is no longer used by C.
        unsafe { rstreams_proc_remove(self.h) };
    }
}

// SAFETY (contract): only the shim calls this, from the show of an entry made by
// `ProcFile::<T>::new`, with that entry's `ctx` and the seq_file of the read in progress.
unsafe extern "C" fn show_tramp<T: ProcShow>(ctx: *mut c_void, m: *mut c_void) -> c_int {
    // SAFETY: `ctx` is the `T` of a live `ProcFile<T>` (its drop waits for this call).
    let data = unsafe { &*ctx.cast::<T>() };
    // INVARIANT: `m` is this show call's seq_file.
    let mut out = SeqFile {
        m,
        _call: PhantomData,
    };
    // An error means the buffer overflowed: seq_read sees that and calls again.
    let _ = data.show(&mut out);
    0
}
