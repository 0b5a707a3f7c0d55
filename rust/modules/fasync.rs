// SPDX-License-Identifier: GPL-2.0
//! [`FasyncList`]: the O_ASYNC registrations of one Stream head end (`struct fasync_struct *`
//! in the C shim: `fasync_helper`, `kill_fasync`).
//!
//! fcntl(F_SETFL, O_ASYNC) and ioctl(FIOASYNC) reach `->fasync` ([`FasyncCall`]), which adds
//! or removes the file's entry in the list of the end the file is the head of; the VFS calls
//! it again with `on` = 0 before `->release` of a file with O_ASYNC set, so no entry outlives
//! its file. [`FasyncList::kill`] sends SIGIO (or the F_SETSIG signal) to every entry's owner
//! (F_SETOWN): `strfile.rs` does so for the same head events as SIGPOLL's S_INPUT/S_RDNORM
//! (and S_HIPRI, S_OUTPUT, S_HANGUP, S_ERROR with their POLL_* codes), after the stream lock
//! is dropped.

use core::ffi::{c_int, c_void};
use core::marker::PhantomData;
use core::ptr;

use kernel::bindings;
use kernel::types::Opaque;

use crate::errno::Errno;

extern "C" {
    fn rstreams_fasync(fd: c_int, filp: *mut c_void, on: c_int, fa: *mut c_void) -> c_int;
    fn rstreams_kill_fasync(fa: *mut c_void, code: c_int);
}

/// `si_code` POLL_IN (uapi `asm-generic/siginfo.h`): input available.
pub(crate) const POLL_IN: i32 = 1;
/// POLL_OUT: output possible.
pub(crate) const POLL_OUT: i32 = 2;
/// POLL_ERR: an error (M_ERROR).
pub(crate) const POLL_ERR: i32 = 4;
/// POLL_PRI: high-priority input.
pub(crate) const POLL_PRI: i32 = 5;
/// POLL_HUP: hung up.
pub(crate) const POLL_HUP: i32 = 6;

/// The head of a list of fasync entries.
///
/// # Invariants
/// `head` is null or the first entry of a list that only `fasync_helper` (through
/// [`FasyncCall::register`]) changes.
pub(crate) struct FasyncList {
    head: Opaque<*mut c_void>,
}

// SAFETY: the list is changed by fasync_helper under the kernel's fasync lock (callers also
// serialise per file) and read by kill_fasync under RCU, from any thread.
unsafe impl Send for FasyncList {}
// SAFETY: as above.
unsafe impl Sync for FasyncList {}

impl FasyncList {
    /// An empty list.
    pub(crate) fn new() -> Self {
        FasyncList {
            head: Opaque::new(ptr::null_mut()),
        }
    }

    /// Whether no file has O_ASYNC set on this list (one load of the head; the caller orders
    /// it against `fasync_helper` by a lock: `StrPerim::watched`).
    pub(crate) fn is_empty(&self) -> bool {
        // SAFETY: `head` is valid for reads (type invariant); a volatile load of the pointer
        // that fasync_helper writes (under its own lock) is a READ_ONCE.
        unsafe { ptr::read_volatile(self.head.get()) }.is_null()
    }

    /// Send SIGIO with `si_code` `code` (POLL_IN, …) to every registration; nothing (one
    /// load) when there is none.
    pub(crate) fn kill(&self, code: i32) {
        // SAFETY: `head` is a valid list head (type invariant); kill_fasync reads it under RCU.
        unsafe { rstreams_kill_fasync(self.head.get().cast(), code) }
    }
}

/// One `->fasync` call: descriptor, file and whether O_ASYNC is being set or cleared.
///
/// # Invariants
/// `file` is the file of a `->fasync` call in progress for `'a`.
pub(crate) struct FasyncCall<'a> {
    fd: c_int,
    file: *mut bindings::file,
    on: bool,
    _call: PhantomData<&'a ()>,
}

impl FasyncCall<'_> {
    /// The `->fasync(fd, file, on)` call in progress.
    ///
    /// # Safety
    /// `file` is the file argument of a `->fasync` call in progress for the returned value's
    /// lifetime.
    pub(crate) unsafe fn new(fd: c_int, file: *mut bindings::file, on: bool) -> Self {
        // INVARIANT: guaranteed by the caller.
        FasyncCall {
            fd,
            file,
            on,
            _call: PhantomData,
        }
    }

    /// Add this file to `list` (or remove it): `fasync_helper`. ENOMEM when an entry cannot
    /// be allocated.
    pub(crate) fn register(&self, list: &FasyncList) -> Result<(), Errno> {
        // SAFETY: `file` is valid for the call (type invariant); `head` is a valid list head
        // that lives as long as the file's registration (the VFS removes it before release).
        let r = unsafe {
            rstreams_fasync(
                self.fd,
                self.file.cast(),
                c_int::from(self.on),
                list.head.get().cast(),
            )
        };
        if r < 0 {
            Err(Errno(-r))
        } else {
            Ok(())
        }
    }
}
