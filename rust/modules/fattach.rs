// SPDX-License-Identifier: GPL-2.0
//! fattach(3)/fdetach(3): a Stream head named by a path.
//!
//! libstreams' `fattach(fd, path)` mounts the `streamsattach` filesystem of `strattach.ko`
//! (`strattach.c`) over `path` with the option `fd=N`; its `get_tree` hands the file to
//! [`attach_tramp`], which makes an [`Attachment`]: a counted hold on the file's Stream head
//! (the same `StrPerim` the file has). Every open of the path then comes to [`open_tramp`], which
//! gives a new [`StrFile`] on that head, as every open of a FIFO node attaches to the node's
//! Stream (`fifo.rs`); the shim turns the file into one of the device's files, so it is an
//! ordinary rstreams file from then on. With `connld` pushed on the head, the open gets one
//! end of a new STREAMS pipe instead, whose other end goes to the server (`connld.rs`). `fdetach` unmounts (lazily): once the last file opened
//! through the path is closed, the superblock goes and [`detach_tramp`] drops the attachment.
//!
//! A head stays open while any file or attachment holds it (`StrPerim::hold_head`), so a
//! server may fattach one end of a STREAMS pipe and close its descriptor of that end: clients
//! opening the path reach it, and the end is closed (the other end hung up) only after
//! `fdetach` and the last client's close.
//!
//! [`AttachFs`] registers the three callbacks with the shim for as long as `streams.ko` is
//! loaded; each attachment holds a reference on `streams.ko`, so the module is not unloaded
//! under an attachment (rmmod fails with EWOULDBLOCK while anything is attached).

use core::ffi::c_void;

use kernel::bindings;
use kernel::ffi::{c_int, c_uint};
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::chardev::{self, CallFile};
use crate::errno::Errno;
use crate::stream::Registry;
use crate::strfile::StrFile;
use crate::strperim::{Caller, StrPerim};

// Pointers to bindgen structs cross as `c_void`, as in `chardev.rs` (`improper_ctypes`).
// SAFETY (contract): `strattach.c` calls these three only with the pointers it documents: a
// file it holds a reference on, writable `int`s, and handles that `attach` returned and
// `detach` has not yet been given.
/// attach(file, &fifo, &err) → handle or null (see `strattach.c`).
type AttachFn = unsafe extern "C" fn(*mut c_void, *mut c_int, *mut c_int) -> *mut c_void;
/// open(handle, file, f_flags, &err) → the new file's `private_data` or null.
type OpenFn = unsafe extern "C" fn(*mut c_void, *mut c_void, c_uint, *mut c_int) -> *mut c_void;
/// detach(handle). (SAFETY (contract): as above.)
type DetachFn = unsafe extern "C" fn(*mut c_void);

extern "C" {
    fn rstreams_attach_register(
        owner: *mut c_void,
        attach: AttachFn,
        open: OpenFn,
        detach: DetachFn,
    ) -> c_int;
    fn rstreams_attach_unregister();
}

/// One Stream head attached to a path: held open until the attachment is dropped.
struct Attachment {
    perim: Arc<StrPerim>,
    /// `fmodsw` for the files opened through the path (that of the attached file).
    registry: Arc<Registry>,
}

impl Attachment {
    /// Attach the head of `f` (EINVAL for a FIFO file or an unconnected pipe end).
    fn new(f: &StrFile) -> Result<KBox<Attachment>, Errno> {
        let perim = attachable(f)?;
        // The hold first: an `Attachment` gives one back when it drops, and one that could not
        // be boxed drops right here (it used to release a hold it never took, closing the head
        // under the still-open file: EBADF on every later call, found by the fault pass).
        perim.hold_head();
        KBox::new(
            Attachment {
                perim,
                registry: f.registry.clone(),
            },
            GFP_KERNEL,
        )
        .map_err(|_| Errno::ENOSR)
    }

    /// Whether the head is an end of a STREAMS pipe (the path is then a FIFO).
    fn is_pipe(&self) -> bool {
        self.perim.op(Caller::Nobody, |s| s.is_pipe())
    }

    /// The per-open object of `call`, a file being opened through the path: a new file on
    /// the attached head, or with connld pushed there, one end of a new pipe (`connld.rs`).
    fn open(&self, call: &CallFile<'_, StrFile>, f_flags: u32) -> Result<Arc<StrFile>, Errno> {
        let nonblock = f_flags & chardev::O_NONBLOCK != 0;
        if let Some(f) = crate::connld::open(&self.perim, &self.registry, call, nonblock)? {
            return Ok(f);
        }
        StrFile::new(self.perim.clone(), false, self.registry.clone(), None)
    }
}

impl Drop for Attachment {
    fn drop(&mut self) {
        // Nobody's process to send a signal to: this is an unmount.
        if self.perim.release_head("an fattach attachment") {
            self.perim.close_now(Caller::Nobody);
        }
    }
}

/// The Stream head of `f`, for an attachment: EINVAL for a FIFO file (its node already names
/// it), for an unconnected pipe end (I_PIPE would make it something else) and for a Stream
/// linked under a multiplexor (its head is not one now).
fn attachable(f: &StrFile) -> Result<Arc<StrPerim>, Errno> {
    let connected = f.pipe_state.load(core::sync::atomic::Ordering::Acquire) == crate::strfile::CONNECTED;
    if f.is_fifo_file() || !connected || f.perim().op(Caller::Nobody, |s| s.sth().is_linked()) {
        return Err(Errno::EINVAL);
    }
    Ok(f.perim().clone())
}

/// `get_tree` of a mount with `fd=N`: attach the file open as N.
///
/// # Safety
/// `file` is a `struct file` on which the caller holds a reference; `fifo` and `err` are
/// writable.
unsafe extern "C" fn attach_tramp(
    file: *mut c_void,
    fifo: *mut c_int,
    err: *mut c_int,
) -> *mut c_void {
    // SAFETY: the caller holds a reference on `file` across this call.
    let r = match unsafe { chardev::file_object::<StrFile>(file.cast::<bindings::file>()) } {
        Some(f) => Attachment::new(&f),
        None => Err(Errno::EINVAL),
    };
    match r {
        Ok(a) => {
            // SAFETY: `fifo` is writable (caller).
            unsafe { *fifo = c_int::from(a.is_pipe()) };
            KBox::into_raw(a).cast()
        }
        Err(e) => {
            // SAFETY: `err` is writable (caller).
            unsafe { *err = -e.0 };
            core::ptr::null_mut()
        }
    }
}

/// open(2) of an attached path: the `private_data` of `file` (see [`Attachment::open`]).
///
/// # Safety
/// `handle` came from `attach_tramp` and has not been given to `detach_tramp`; `err` is
/// writable. `file` is being opened and its operations are already those of the attached file
/// (`replace_fops`); the caller installs the result as its `private_data` (so
/// `release_tramp::<StrFile>` takes it back).
unsafe extern "C" fn open_tramp(
    handle: *mut c_void,
    file: *mut c_void,
    f_flags: c_uint,
    err: *mut c_int,
) -> *mut c_void {
    // SAFETY: a live attachment (caller), only read here.
    let a = unsafe { &*handle.cast::<Attachment>() };
    // SAFETY: `file` is being opened with the attached file's operations (caller), which are
    // `StrFile`'s (`attach_tramp` only attaches files `file_object::<StrFile>` recognises);
    // the call borrows it only for this open.
    let call = unsafe { CallFile::<StrFile>::opening(file.cast()) };
    match a.open(&call, f_flags) {
        Ok(f) => chardev::into_private(f),
        Err(e) => {
            // SAFETY: `err` is writable (caller).
            unsafe { *err = -e.0 };
            core::ptr::null_mut()
        }
    }
}

/// The superblock of an attachment is going (fdetach and the last close): drop it.
///
/// # Safety
/// `handle` came from `attach_tramp` and is given here once, after every open through it.
unsafe extern "C" fn detach_tramp(handle: *mut c_void) {
    // SAFETY: `handle` is `KBox::into_raw` of an `Attachment`, given back once (caller).
    drop(unsafe { KBox::from_raw(handle.cast::<Attachment>()) });
}

/// streams.ko's side of `streamsattach`, registered while the module is loaded.
pub(crate) struct AttachFs(());

impl AttachFs {
    /// Register the callbacks (EBUSY if another module did).
    pub(crate) fn register(module: &'static ThisModule) -> Result<AttachFs> {
        // SAFETY: three functions of this module, which outlive the registration (dropped at
        // module exit, when no attachment holds the module any more).
        let r = unsafe {
            rstreams_attach_register(
                module.as_ptr().cast(),
                attach_tramp,
                open_tramp,
                detach_tramp,
            )
        };
        if r < 0 {
            return Err(Error::from_errno(r));
        }
        Ok(AttachFs(()))
    }
}

impl Drop for AttachFs {
    fn drop(&mut self) {
        // SAFETY: no attachment exists (each holds this module, which is being unloaded), and
        // after this no mount calls into the module.
        unsafe { rstreams_attach_unregister() }
    }
}
