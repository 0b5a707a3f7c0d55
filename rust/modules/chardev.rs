// SPDX-License-Identifier: GPL-2.0
//! A misc character device whose file operations dispatch to a Rust trait ([`FileOps`]).
//!
//! Linux 6.12's kernel crate has no miscdevice or file abstraction (they arrive in 6.13+), so
//! this file (with its child `fops.rs`, the trampolines) is the one place that turns
//! `struct file_operations` callbacks into safe calls: the driver implements [`FileOps`] for
//! its per-open object and never sees a raw pointer.
//! When the kernel is upgraded, this file is replaced by `kernel::miscdevice` and the drivers
//! keep their trait implementations.
//!
//! The `struct miscdevice` itself lives in the C shim (`strshim_core.c`), because bindgen does not
//! see it; the `file_operations` table is built here, per [`FileOps`] type, so that its
//! `owner` is this module (an open file pins `streams.ko`).

use core::any::TypeId;
use core::ffi::c_void;

use core::marker::PhantomData;
use kernel::ffi::{c_char, c_int, c_uint};

use kernel::bindings;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

use crate::errno::Errno;
use crate::fasync::FasyncCall;
use crate::iter::IterBuf;

// The `file_operations` trampolines (`rust/modules/fops.rs`): a child module, so that they
// reach this file's private items (the shim's accessors, `Inner`, `CallFile`, `PollTable`).
#[path = "fops.rs"]
mod fops;
use crate::uio::UserBuf;
use crate::waitq::WaitQueue;

// Pointers to bindgen structs are passed as `c_void` here: some of them contain types rustc
// considers not FFI-safe (`improper_ctypes`), though only their addresses cross the boundary.
extern "C" {
    fn rstreams_misc_register(
        name: *const c_char,
        nodename: *const c_char,
        fops: *const c_void,
        ctx: *mut c_void,
        err: *mut c_int,
    ) -> *mut c_void;
    fn rstreams_misc_deregister(handle: *mut c_void);
    fn rstreams_chr_register(
        name: *const c_char,
        nodename: *const c_char,
        fops: *const c_void,
        ctx: *mut c_void,
        err: *mut c_int,
    ) -> *mut c_void;
    fn rstreams_chr_deregister(handle: *mut c_void);
    fn rstreams_misc_ctx(file: *mut c_void) -> *mut c_void;
    fn rstreams_file_private(file: *mut c_void) -> *mut c_void;
    fn rstreams_file_set_private(file: *mut c_void, p: *mut c_void);
    fn rstreams_poll_wait(file: *mut c_void, wq: *mut c_void, pt: *mut c_void);
    fn rstreams_send_sig_current(sig: c_int);
    fn rstreams_fget(fd: c_uint) -> *mut c_void;
    fn rstreams_fput(file: *mut c_void);
    fn rstreams_file_same_ops(a: *mut c_void, b: *mut c_void) -> bool;
    fn rstreams_fifo_file(
        like: *mut c_void,
        private: *mut c_void,
        nonblock: c_int,
        err: *mut c_int,
    ) -> *mut c_void;
    fn rstreams_init_waitqueue(wq: *mut c_void);
    fn rstreams_kiocb_file(iocb: *mut c_void, flags: *mut c_uint) -> *mut c_void;
}

/// `O_NONBLOCK` in `f_flags`.
pub(crate) const O_NONBLOCK: u32 = bindings::O_NONBLOCK;

/// Send signal `sig` to the calling task (SIGPIPE after a write on a hung-up pipe).
pub(crate) fn send_sig_current(sig: i32) {
    // SAFETY: `send_sig` on `current` is valid in process context for any signal number; it
    // ignores numbers outside 1..=_NSIG.
    unsafe { rstreams_send_sig_current(sig) }
}

/// The per-open object of a misc device: one value per open file, shared (`Arc`) with any
/// system call in progress on that file.
pub(crate) trait FileOps: Sized + Send + Sync + 'static {
    /// Device-wide data (given to `open`).
    type Dev: Send + Sync;
    /// open(2): create the per-open object. `f_flags` are the open flags.
    fn open(dev: &Self::Dev, f_flags: u32) -> Result<Arc<Self>, Errno>;
    /// The last close of the file; `f_flags` are its flags then (O_NONBLOCK: do not wait).
    fn release(this: Arc<Self>, f_flags: u32);
    /// read(2) into `buf`.
    fn read(&self, buf: UserBuf, f_flags: u32) -> Result<usize, Errno>;
    /// write(2) from `buf`.
    fn write(&self, buf: UserBuf, f_flags: u32) -> Result<usize, Errno>;
    /// readv(2) (`->read_iter`): one read into all segments of `buf`, in order.
    fn read_iter(&self, buf: IterBuf<'_>, f_flags: u32) -> Result<usize, Errno>;
    /// writev(2) (`->write_iter`): one write of all segments of `buf`.
    fn write_iter(&self, buf: IterBuf<'_>, f_flags: u32) -> Result<usize, Errno>;
    /// ioctl(2): `arg` is the raw argument (a user address or an integer, by command); `file`
    /// reaches other files of the caller (I_PIPE names one by its descriptor).
    fn ioctl(
        &self,
        cmd: u32,
        arg: usize,
        f_flags: u32,
        file: &CallFile<'_, Self>,
    ) -> Result<i32, Errno>;
    /// ioctl(2) from a 32-bit process (`->compat_ioctl`): `arg` is already widened
    /// (`compat_ptr`); the implementation decodes the ILP32 layouts it supports.
    fn compat_ioctl(
        &self,
        cmd: u32,
        arg: usize,
        f_flags: u32,
        file: &CallFile<'_, Self>,
    ) -> Result<i32, Errno>;
    /// fcntl(F_SETFL, O_ASYNC) / ioctl(FIOASYNC): add or remove the file's SIGIO registration.
    fn fasync(&self, call: &FasyncCall<'_>) -> Result<(), Errno>;
    /// poll(2): register with `pt` the wait queues whose wakeups change the mask, return it.
    fn poll(&self, pt: &PollTable<'_>) -> u32;
    /// close(2) of a descriptor of the file (`->flush`, every close, in the closing process;
    /// `release` follows only for the last reference).
    fn flush(&self);
}

/// The file a system call is made on, for operations that involve another open file.
///
/// # Invariants
/// `file` is a file opened through `open_tramp::<T>` whose system call is in progress, or a
/// file being opened whose `file_operations` are already `T`'s ([`CallFile::opening`]).
pub(crate) struct CallFile<'a, T: FileOps> {
    file: *mut bindings::file,
    _call: PhantomData<(&'a (), fn() -> T)>,
}

impl<T: FileOps> CallFile<'_, T> {
    /// The file an open in progress is making, once its operations are `T`'s (an open of an
    /// fattach'ed path, `strattach.c`, after `replace_fops`), before its `private_data` is set.
    ///
    /// # Safety
    /// `file` is a `struct file` being opened, valid for the returned value's lifetime, whose
    /// `f_op` is the table of a `MiscDevice<T>` of this module.
    pub(crate) unsafe fn opening(file: *mut bindings::file) -> Self {
        // INVARIANT: guaranteed by the caller.
        CallFile {
            file,
            _call: PhantomData,
        }
    }
}

impl<T: FileOps> CallFile<'_, T> {
    /// The per-open object of the caller's descriptor `fd` if it is open on the same device as
    /// this file: EBADF if `fd` is not open, EINVAL if it is another kind of file. The returned
    /// reference keeps the object alive even if `fd` is closed meanwhile.
    pub(crate) fn same_device(&self, fd: i32) -> Result<Arc<T>, Errno> {
        // SAFETY: `self.file` is valid by the type invariant; `other` is valid while fget's
        // reference is held (inside `lookup`).
        self.lookup(fd, |other| unsafe {
            rstreams_file_same_ops(self.file.cast(), other)
        })
    }

    /// As [`same_device`](Self::same_device), for a file open on any device of this module
    /// whose per-open type is `T` ([`file_object`]): I_LINK of an echo Stream under a mux.
    pub(crate) fn any_device(&self, fd: i32) -> Result<Arc<T>, Errno> {
        let fd = c_uint::try_from(fd).map_err(|_| Errno::EBADF)?;
        // SAFETY: fget may be called in process context with any number; it returns a
        // counted reference or null.
        let other = unsafe { rstreams_fget(fd) };
        if other.is_null() {
            return Err(Errno::EBADF);
        }
        // SAFETY: we hold fget's reference on `other` for the call.
        let r = unsafe { file_object::<T>(other.cast()) }.ok_or(Errno::EINVAL);
        // SAFETY: drops the reference fget took, once.
        unsafe { rstreams_fput(other) };
        r
    }

    fn lookup(&self, fd: i32, is_t: impl FnOnce(*mut c_void) -> bool) -> Result<Arc<T>, Errno> {
        let fd = c_uint::try_from(fd).map_err(|_| Errno::EBADF)?;
        // SAFETY: fget may be called in process context with any number; it returns a
        // counted reference or null.
        let other = unsafe { rstreams_fget(fd) };
        if other.is_null() {
            return Err(Errno::EBADF);
        }
        let r = if is_t(other) {
            // SAFETY: `other`'s `file_operations` name `T`'s trampolines (checked by `is_t`),
            // so it was opened by `open_tramp::<T>` and its `private_data` is the `Arc<T>`
            // stored there; the reference fget took keeps the file (and that `Arc`) from being
            // released while we take our own reference. `ManuallyDrop` leaves the file's
            // reference untouched.
            let obj = core::mem::ManuallyDrop::new(unsafe {
                Arc::from_raw(rstreams_file_private(other).cast::<T>())
            });
            Ok((*obj).clone())
        } else {
            Err(Errno::EINVAL)
        };
        // SAFETY: drops the reference fget took, once.
        unsafe { rstreams_fput(other) };
        r
    }
}

impl<T: FileOps> CallFile<'_, T> {
    /// A new file with this file's operations (so: on the same device) whose inode is a FIFO
    /// on rstreams' pseudo filesystem, with `obj` as its per-open object. The returned
    /// reference is the file's only one: dropping it closes the file, which releases `obj`
    /// through `FileOps::release`.
    pub(crate) fn new_fifo_file(
        &self,
        obj: Arc<T>,
        nonblock: bool,
    ) -> Result<crate::fdpass::FileRef, Errno> {
        let p = Arc::into_raw(obj).cast_mut().cast::<c_void>();
        let mut err: c_int = 0;
        // SAFETY: `self.file` is valid (type invariant). On success the new file owns the
        // `Arc` reference `p` as its `private_data`, exactly as `open_tramp::<T>` would have
        // stored it, and uses this file's `file_operations` (`T`'s trampolines), so
        // `release_tramp::<T>` takes it back.
        let f = unsafe { rstreams_fifo_file(self.file.cast(), p, c_int::from(nonblock), &mut err) };
        if f.is_null() {
            // SAFETY: no file was made: the reference `p` is still ours.
            drop(unsafe { Arc::from_raw(p.cast::<T>().cast_const()) });
            return Err(Errno(-err));
        }
        // SAFETY: `f` is a new file whose one reference we hold.
        Ok(unsafe { crate::fdpass::FileRef::from_file(f) })
    }
}

/// The per-open object of `file` if it is a file of a `MiscDevice<T>` of this module (opened
/// through it, or made by [`CallFile::new_fifo_file`] with its operations); `None` for any
/// other file. The returned reference keeps the object alive after the file is closed.
///
/// # Safety
/// `file` is a `struct file` on which the caller holds a reference for the duration of the
/// call.
pub(crate) unsafe fn file_object<T: FileOps>(file: *mut bindings::file) -> Option<Arc<T>> {
    // SAFETY: `file` is valid (caller); `f_op` is set once the file is open and not changed
    // afterwards.
    let fops = unsafe { (*file).f_op };
    // SAFETY: an open file's `f_op` points to a live table (pinned by the file's reference on
    // the table's owner).
    if fops.is_null() || unsafe { (*fops).owner } != crate::THIS_MODULE.as_ptr() {
        return None;
    }
    // SAFETY: tables owned by this module start an `InnerHead` (its invariant), which lives as
    // long as the table.
    if unsafe { (*fops.cast::<InnerHead>()).kind } != TypeId::of::<T>() {
        return None;
    }
    // SAFETY: the table is `T`'s, so the file was opened by `open_tramp::<T>` (or given `T`'s
    // object by `new_fifo_file`) and its `private_data` owns an `Arc<T>` until
    // `release_tramp::<T>`, which the caller's reference holds off. `ManuallyDrop` leaves the
    // file's reference untouched; we return a clone.
    let obj = core::mem::ManuallyDrop::new(unsafe {
        Arc::from_raw(rstreams_file_private(file.cast()).cast::<T>())
    });
    Some((*obj).clone())
}

/// Give `obj` to a file being opened as its per-open object: the returned pointer is what
/// `open_tramp::<T>` would have stored in `private_data` (one `Arc<T>` reference, taken back
/// by `release_tramp::<T>`).
pub(crate) fn into_private<T: FileOps>(obj: Arc<T>) -> *mut c_void {
    Arc::into_raw(obj).cast_mut().cast()
}

/// The poll table of one `->poll` call.
///
/// # Invariants
/// `file` and `pt` are the arguments of a `->poll` call in progress (`pt` may be null).
pub(crate) struct PollTable<'a> {
    file: *mut bindings::file,
    pt: *mut bindings::poll_table_struct,
    _call: PhantomData<&'a ()>,
}

impl PollTable<'_> {
    /// poll_wait: wake this poller when `wq` is woken. `wq` must outlive the file's pollers,
    /// which holds for a wait queue inside the per-open object (pollers are removed before
    /// `release`).
    pub(crate) fn wait(&self, wq: &WaitQueue) {
        // SAFETY: `file`/`pt` are valid for the `->poll` call (type invariant); `wq` is an
        // initialised wait queue that lives in the per-open object, which outlives every poll
        // entry on the file (epoll and select remove theirs before `->release`).
        unsafe { rstreams_poll_wait(self.file.cast(), wq.as_raw().cast(), self.pt.cast()) }
    }
}

/// The start of every [`Inner`], whatever its `T`: the `file_operations` table and which
/// [`FileOps`] type its trampolines serve.
///
/// INVARIANT: every `file_operations` whose `owner` is this module is the `fops` of an
/// `InnerHead` that starts an `Inner<T>` (built by `MiscDevice::register_with`) with
/// `kind == TypeId::of::<T>()`; [`file_object`] relies on it.
#[repr(C)]
struct InnerHead {
    fops: bindings::file_operations,
    kind: TypeId,
}

/// What the C side points at: the `file_operations` table (first: the address of the table is
/// the address of the `Inner`) and the device data.
#[repr(C)]
struct Inner<T: FileOps> {
    head: InnerHead,
    dev: T::Dev,
}

/// The shim's register function: (name, nodename, fops, ctx, err) → handle or null.
// SAFETY (contract): callers pass NUL-terminated names, a `file_operations` table and a context
// that outlive the registration, and a writable `err`.
type RegisterFn = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_void,
    *mut c_void,
    *mut c_int,
) -> *mut c_void;

/// A registered misc device `/dev/<nodename>` whose opens create `T`s; deregistered on drop.
///
/// # Invariants
/// `handle` is the live registration returned by `rstreams_misc_register` (or by
/// `rstreams_chr_register`, then `own_major`), whose `fops` and `ctx` point into `inner`;
/// `inner` is never moved out of its box while registered.
pub(crate) struct MiscDevice<T: FileOps> {
    handle: *mut c_void,
    own_major: bool,
    inner: KBox<Inner<T>>,
}

// SAFETY: the handle is only used by `drop` (misc_deregister is callable from any thread);
// `inner` holds `T::Dev: Send + Sync` and a table of function pointers.
unsafe impl<T: FileOps> Send for MiscDevice<T> {}
// SAFETY: no method takes `&self` apart from reading `dev`, which is `Sync`.
unsafe impl<T: FileOps> Sync for MiscDevice<T> {}

impl<T: FileOps> MiscDevice<T> {
    /// misc_register a device called `name` (sysfs) with node `/dev/<nodename>`.
    pub(crate) fn register(
        name: &'static CStr,
        nodename: &'static CStr,
        dev: T::Dev,
        module: &'static ThisModule,
    ) -> Result<Self> {
        Self::register_with(rstreams_misc_register, false, name, nodename, dev, module)
    }

    /// As [`MiscDevice::register`], for a device whose `open` may sleep for long (a FIFO open
    /// waiting for the other side): a minor of rstreams' own major, whose open runs without
    /// misc_open's global lock (`rstreams_chr_open` in the shim).
    pub(crate) fn register_sleeping_open(
        name: &'static CStr,
        nodename: &'static CStr,
        dev: T::Dev,
        module: &'static ThisModule,
    ) -> Result<Self> {
        Self::register_with(rstreams_chr_register, true, name, nodename, dev, module)
    }

    fn register_with(
        register: RegisterFn,
        own_major: bool,
        name: &'static CStr,
        nodename: &'static CStr,
        dev: T::Dev,
        module: &'static ThisModule,
    ) -> Result<Self> {
        // SAFETY: `file_operations` is a C struct of nullable function pointers, integers and
        // a module pointer: all-zero is its "no operation" value.
        let mut fops: bindings::file_operations = unsafe { core::mem::zeroed() };
        fops.owner = module.as_ptr();
        fops.open = Some(fops::open_tramp::<T>);
        fops.release = Some(fops::release_tramp::<T>);
        fops.flush = Some(fops::flush_tramp::<T>);
        fops.read = Some(fops::read_tramp::<T>);
        fops.write = Some(fops::write_tramp::<T>);
        fops.read_iter = Some(fops::read_iter_tramp::<T>);
        fops.write_iter = Some(fops::write_iter_tramp::<T>);
        fops.unlocked_ioctl = Some(fops::ioctl_tramp::<T>);
        fops.compat_ioctl = Some(fops::compat_ioctl_tramp::<T>);
        fops.fasync = Some(fops::fasync_tramp::<T>);
        fops.poll = Some(fops::poll_tramp::<T>);
        let head = InnerHead {
            fops,
            kind: TypeId::of::<T>(),
        };
        let mut inner = KBox::new(Inner { head, dev }, GFP_KERNEL)?;
        let ctx: *mut Inner<T> = &mut *inner;
        let mut err: c_int = 0;
        // SAFETY: `register` is one of the shim's two register functions. `name`, `nodename` are
        // 'static C strings; `fops` and `ctx` point into the box, which stays put and alive
        // until `drop` deregisters (type invariant).
        let handle = unsafe {
            register(
                name.as_char_ptr(),
                nodename.as_char_ptr(),
                core::ptr::from_ref(&(*ctx).head.fops).cast(),
                ctx.cast(),
                &mut err,
            )
        };
        if handle.is_null() {
            return Err(Error::from_errno(if err < 0 { err } else { -12 }));
        }
        Ok(MiscDevice {
            handle,
            own_major,
            inner,
        })
    }

    /// The device data.
    #[allow(dead_code)]
    pub(crate) fn dev(&self) -> &T::Dev {
        &self.inner.dev
    }
}

impl<T: FileOps> Drop for MiscDevice<T> {
    fn drop(&mut self) {
        if self.own_major {
            // SAFETY: `handle` is live and came from `rstreams_chr_register` (type invariant).
            // An open in progress holds a reference on the fops' owner (this module), so the
            // module is not being unloaded under it; later calls on open files do not reach
            // `inner` (only `open` does).
            unsafe { rstreams_chr_deregister(self.handle) };
            return;
        }
        // SAFETY: `handle` is live (type invariant). misc_deregister waits for opens in
        // progress (misc_mtx); later calls on open files do not reach `inner` (only `open`
        // does), and open files pin the module, so the module is not being unloaded.
        unsafe { rstreams_misc_deregister(self.handle) };
    }
}

/// init_waitqueue_head (a macro in C: it gives the wait queue's lock a static lockdep class).
///
/// # Safety
/// `wq` points to writable memory for a `wait_queue_head` that is not in use.
pub(crate) unsafe fn init_waitqueue_head(wq: *mut bindings::wait_queue_head) {
    // SAFETY: guaranteed by the caller.
    unsafe { rstreams_init_waitqueue(wq.cast()) }
}
