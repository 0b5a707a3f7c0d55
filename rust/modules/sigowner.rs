// SPDX-License-Identifier: GPL-2.0
//! [`PidOwner`]: the process an I_SETSIG registration signals (the core's `sth::SigOwner`).
//!
//! SVR4 keeps a `proc_t *` in each registration and removes it when the process closes the
//! Stream (`strclean`). A pid number cannot do that job on Linux: it is reused after the
//! process exits, means something else in another pid namespace, and says nothing about
//! whether the registrant may still signal the process it names. So a registration holds a
//! counted reference to the registrant's thread group (`struct pid`, which is never reused
//! while held: a new process with the same number has another one) and to its credentials;
//! SIGPOLL goes to that thread group only, if it still exists and the credentials pass the
//! F_SETOWN check (`strsec.c`). Its identity ([`SigOwner::key`]) is the address of the held
//! `struct pid`, which the caller's own thread group has as long as it lives
//! ([`current_key`]).
//!
//! Registrations are also taken out when the registering process closes a file of the
//! Stream (`->flush`, `StrFile::flush`), as SVR4's `strclean`.

use core::ffi::c_void;

use kernel::prelude::*;
use kernel::sync::Arc;

use crate::errno::Errno;
use crate::sth::SigOwner;

extern "C" {
    fn rstreams_sigowner_current() -> *mut c_void;
    fn rstreams_sigowner_free(o: *mut c_void);
    fn rstreams_sigowner_key(o: *const c_void) -> *mut c_void;
    fn rstreams_current_tgid_key() -> *mut c_void;
    fn rstreams_sigowner_kill(o: *const c_void, sig: i32);
}

/// The registrant of an I_SETSIG registration.
///
/// # Invariants
/// `0` is a `struct rstreams_sigowner *` from `rstreams_sigowner_current`, owned by this
/// value (freed once, in `drop`): it holds one reference to a `struct pid` and one to a
/// `struct cred`.
pub(crate) struct PidOwner(*mut c_void);

// SAFETY: the owner is immutable after creation; the shim's functions on it may run on any
// thread and in any context (`put_pid`, `put_cred` and `kill_pid` allow atomic context).
unsafe impl Send for PidOwner {}
// SAFETY: as above: every method takes `&self` and changes nothing.
unsafe impl Sync for PidOwner {}

impl PidOwner {
    /// The calling process (process context): ENOSR without memory.
    pub(crate) fn current() -> Result<Arc<dyn SigOwner>, Errno> {
        // SAFETY: plain call in process context; returns an owned object or null.
        let o = unsafe { rstreams_sigowner_current() };
        if o.is_null() {
            return Err(Errno::ENOSR);
        }
        // INVARIANT: freshly made and owned here.
        let me = PidOwner(o);
        let a: Arc<dyn SigOwner> = Arc::new(me, GFP_KERNEL).map_err(|_| Errno::ENOSR)?;
        Ok(a)
    }

    /// Send `sig` to the owner's thread group, if it still exists and may be signalled by
    /// the owner's credentials; nothing otherwise. Any context.
    pub(crate) fn kill(&self, sig: i32) {
        // SAFETY: `self.0` is a live owner (type invariant); the shim reads it under RCU.
        unsafe { rstreams_sigowner_kill(self.0, sig) }
    }
}

impl SigOwner for PidOwner {
    fn key(&self) -> usize {
        // SAFETY: `self.0` is a live owner (type invariant).
        unsafe { rstreams_sigowner_key(self.0) as usize }
    }

    fn signal(&self, sig: i32) {
        self.kill(sig)
    }
}

impl Drop for PidOwner {
    fn drop(&mut self) {
        // SAFETY: owned by this value (type invariant), freed once.
        unsafe { rstreams_sigowner_free(self.0) }
    }
}

/// The calling process's key, to find its registration (I_GETSIG, close): equal to the key
/// of a [`PidOwner`] made by the same thread group.
pub(crate) fn current_key() -> usize {
    // SAFETY: plain call in process context; the value is compared, never dereferenced.
    unsafe { rstreams_current_tgid_key() as usize }
}
