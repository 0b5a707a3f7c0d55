// SPDX-License-Identifier: GPL-2.0
//! The `file_operations` trampolines of [`super::MiscDevice`]: one `unsafe extern "C" fn` per
//! operation, generic over the driver's [`FileOps`] type. Each turns the C arguments into the
//! safe values the trait takes (the per-open object, `UserBuf`, `IterBuf`, `CallFile`,
//! `FasyncCall`, `PollTable`) and the result back into a return value or a negative errno.
//! The table itself is built in `chardev.rs` (`MiscDevice::register_with`).

use core::ffi::c_void;
use core::marker::PhantomData;

use kernel::bindings;
use kernel::ffi::{c_char, c_int, c_long, c_uint, c_ulong};
use kernel::sync::Arc;

use super::{
    rstreams_file_private, rstreams_file_set_private, rstreams_kiocb_file, rstreams_misc_ctx,
    CallFile, FileOps, Inner, PollTable,
};
use crate::errno::Errno;
use crate::fasync::FasyncCall;
use crate::iter::IterBuf;
use crate::uio::UserBuf;

fn errno_ret(e: Errno) -> c_int {
    -e.0
}

/// The per-open object of `file` (set by `open_tramp`), read from the `struct file` itself
/// (no call).
///
/// # Safety
/// `file` is a file opened through `open_tramp::<T>` and not yet released.
unsafe fn this<'a, T: FileOps>(file: *mut bindings::file) -> &'a T {
    // SAFETY: `file` is valid (the caller's contract). `open_tramp` stored `Arc::into_raw` in
    // `private_data` before the file could be used, and nothing writes it afterwards, so the
    // plain read races with nothing; the reference is released only in `release_tramp`,
    // after the last system call on the file returned.
    unsafe { &*(*file).private_data.cast::<T>() }
}

/// The file's `f_flags` (`O_NONBLOCK`…), read from the `struct file` itself (no call).
///
/// # Safety
/// `file` is a valid `struct file` for the call.
unsafe fn flags_of(file: *mut bindings::file) -> c_uint {
    // SAFETY: `file` is valid (the caller's contract), so is its aligned `f_flags`. fcntl
    // (F_SETFL) may change the flags meanwhile (under `f_lock`, which this does not take):
    // the read is `READ_ONCE(file->f_flags)`, a volatile read of an aligned word, which sees
    // the old or the new flags, as every reader of `f_flags` in the kernel does.
    unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*file).f_flags)) }
}

// SAFETY (contract): only the kernel calls this, through the `file_operations` built for `T`,
// with the `file` being opened on a device registered for `T` (misc or character device).
pub(super) unsafe extern "C" fn open_tramp<T: FileOps>(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: called by misc_open under misc_mtx, or by the shim's rstreams_chr_open holding a
    // reference on this module (the fops' owner), with `private_data` = our miscdevice, whose
    // `ctx` is the `Inner<T>` of a live `MiscDevice<T>` (misc deregistration takes misc_mtx;
    // the other is dropped only at this module's exit, which that reference holds off).
    let inner = unsafe { &*rstreams_misc_ctx(file.cast()).cast::<Inner<T>>() };
    // SAFETY: `file` is valid during open.
    let flags = unsafe { flags_of(file) };
    match T::open(&inner.dev, flags) {
        Ok(obj) => {
            let p = Arc::into_raw(obj).cast_mut().cast::<c_void>();
            // SAFETY: `file` is valid; from now on `private_data` owns one reference.
            unsafe { rstreams_file_set_private(file.cast(), p) };
            // A Stream has no file position (SVR4, and pipes): `stream_open` clears
            // FMODE_LSEEK/PREAD/PWRITE and sets FMODE_STREAM, so lseek, pread and pwrite fail
            // with ESPIPE and read/write pass the VFS no position to update.
            // SAFETY: `inode` and `file` are the ones being opened (valid during open);
            // `stream_open` only changes `f_mode` and always succeeds.
            unsafe { bindings::stream_open(inode, file) }
        }
        Err(e) => errno_ret(e),
    }
}

// SAFETY (contract): only the kernel calls this, through the `file_operations` built for `T`,
// with a `file` that `open_tramp::<T>` opened and that is not yet released.
pub(super) unsafe extern "C" fn release_tramp<T: FileOps>(
    _inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: the reference stored by `open_tramp`; release runs once, after every other
    // file operation on `file` returned.
    let obj = unsafe { Arc::from_raw(rstreams_file_private(file.cast()).cast::<T>()) };
    // SAFETY: `file` is valid during release.
    let flags = unsafe { flags_of(file) };
    T::release(obj, flags);
    0
}

// SAFETY (contract): only the kernel calls this, through the `file_operations` built for `T`,
// with a `file` that `open_tramp::<T>` opened and that is not yet released.
pub(super) unsafe extern "C" fn read_tramp<T: FileOps>(
    file: *mut bindings::file,
    buf: *mut c_char,
    len: usize,
    _ppos: *mut bindings::loff_t,
) -> isize {
    // SAFETY: `file` was opened by `open_tramp::<T>` and is not released during a read.
    let (obj, flags) = unsafe { (this::<T>(file), flags_of(file)) };
    match obj.read(UserBuf::new(buf as usize, len), flags) {
        Ok(n) => isize::try_from(n).unwrap_or(isize::MAX),
        Err(e) => errno_ret(e) as isize,
    }
}

// SAFETY (contract): only the kernel calls this, through the `file_operations` built for `T`,
// with a `file` that `open_tramp::<T>` opened and that is not yet released.
pub(super) unsafe extern "C" fn write_tramp<T: FileOps>(
    file: *mut bindings::file,
    buf: *const c_char,
    len: usize,
    _ppos: *mut bindings::loff_t,
) -> isize {
    // SAFETY: as in `read_tramp`.
    let (obj, flags) = unsafe { (this::<T>(file), flags_of(file)) };
    match obj.write(UserBuf::new(buf as usize, len), flags) {
        Ok(n) => isize::try_from(n).unwrap_or(isize::MAX),
        Err(e) => errno_ret(e) as isize,
    }
}

// SAFETY (contract): only the kernel calls this, through the `file_operations` built for `T`,
// with a kiocb on a `file` that `open_tramp::<T>` opened and that is not yet released, and the
// call's iterator.
pub(super) unsafe extern "C" fn read_iter_tramp<T: FileOps>(
    iocb: *mut bindings::kiocb,
    to: *mut bindings::iov_iter,
) -> isize {
    // SAFETY: guaranteed by the contract.
    unsafe { iter_call::<T>(iocb, to, T::read_iter) }
}

// SAFETY (contract): as `read_iter_tramp`.
pub(super) unsafe extern "C" fn write_iter_tramp<T: FileOps>(
    iocb: *mut bindings::kiocb,
    from: *mut bindings::iov_iter,
) -> isize {
    // SAFETY: guaranteed by the contract.
    unsafe { iter_call::<T>(iocb, from, T::write_iter) }
}

/// A `->read_iter`/`->write_iter` call: run `op`, then advance the iterator by what it did.
///
/// # Safety
/// `iocb` is the kiocb of a call in progress on a file opened by `open_tramp::<T>` and not
/// yet released; `it` is that call's iterator.
unsafe fn iter_call<T: FileOps>(
    iocb: *mut bindings::kiocb,
    it: *mut bindings::iov_iter,
    op: fn(&T, IterBuf<'_>, u32) -> Result<usize, Errno>,
) -> isize {
    let mut flags: c_uint = 0;
    // SAFETY: `iocb` is valid for the call (contract).
    let file = unsafe { rstreams_kiocb_file(iocb.cast(), &mut flags) };
    // SAFETY: the kiocb's file was opened by `open_tramp::<T>` and is not released during
    // the call (contract).
    let obj = unsafe { this::<T>(file.cast()) };
    // SAFETY: `it` is the iterator of this call, in progress until we return.
    let buf = unsafe { IterBuf::new(it.cast()) };
    match op(obj, buf, flags) {
        Ok(n) => {
            buf.advance(n);
            isize::try_from(n).unwrap_or(isize::MAX)
        }
        Err(e) => errno_ret(e) as isize,
    }
}

// SAFETY (contract): only the kernel calls this, through the `file_operations` built for `T`,
// with a `file` that `open_tramp::<T>` opened and that is not yet released.
pub(super) unsafe extern "C" fn ioctl_tramp<T: FileOps>(
    file: *mut bindings::file,
    cmd: c_uint,
    arg: c_ulong,
) -> c_long {
    // SAFETY: guaranteed by the contract.
    unsafe { ioctl_call::<T>(file, cmd, arg as usize, T::ioctl) }
}

// SAFETY (contract): as `ioctl_tramp`; called for the ioctls of 32-bit processes.
pub(super) unsafe extern "C" fn compat_ioctl_tramp<T: FileOps>(
    file: *mut bindings::file,
    cmd: c_uint,
    arg: c_ulong,
) -> c_long {
    // compat_ptr: a 32-bit user address is its zero-extended value on x86_64.
    let arg = arg as u32 as usize;
    // SAFETY: guaranteed by the contract.
    unsafe { ioctl_call::<T>(file, cmd, arg, T::compat_ioctl) }
}

/// The ioctl handler type of [`FileOps`] (native or compat).
type IoctlFn<T> = fn(&T, u32, usize, u32, &CallFile<'_, T>) -> Result<i32, Errno>;

/// An `->unlocked_ioctl`/`->compat_ioctl` call on `file`.
///
/// # Safety
/// `file` was opened by `open_tramp::<T>`, is not yet released, and the ioctl is in progress.
unsafe fn ioctl_call<T: FileOps>(
    file: *mut bindings::file,
    cmd: c_uint,
    arg: usize,
    op: IoctlFn<T>,
) -> c_long {
    // SAFETY: as in `read_tramp`.
    let (obj, flags) = unsafe { (this::<T>(file), flags_of(file)) };
    // INVARIANT: `file` was opened by `open_tramp::<T>` and this ioctl is in progress on it.
    let call = CallFile {
        file,
        _call: PhantomData,
    };
    match op(obj, cmd, arg, flags, &call) {
        Ok(v) => v as c_long,
        Err(e) => errno_ret(e) as c_long,
    }
}

// SAFETY (contract): only the kernel calls this, through the `file_operations` built for `T`,
// with a `file` that `open_tramp::<T>` opened and that is not yet released (the VFS calls
// `->fasync(-1, file, 0)` before `->release` of a file with O_ASYNC).
pub(super) unsafe extern "C" fn fasync_tramp<T: FileOps>(
    fd: c_int,
    file: *mut bindings::file,
    on: c_int,
) -> c_int {
    // SAFETY: as in `read_tramp`.
    let obj = unsafe { this::<T>(file) };
    // SAFETY: `file` is this `->fasync` call's file.
    let call = unsafe { FasyncCall::new(fd, file, on != 0) };
    match obj.fasync(&call) {
        Ok(()) => 0,
        Err(e) => errno_ret(e),
    }
}

// SAFETY (contract): only the kernel calls this, through the `file_operations` built for `T`,
// with a `file` that `open_tramp::<T>` opened and that is not yet released (`filp_flush` runs
// `->flush` before it drops the closing descriptor's reference).
pub(super) unsafe extern "C" fn flush_tramp<T: FileOps>(
    file: *mut bindings::file,
    _id: bindings::fl_owner_t,
) -> c_int {
    // SAFETY: as in `read_tramp`.
    let obj = unsafe { this::<T>(file) };
    obj.flush();
    0
}

// SAFETY (contract): only the kernel calls this, through the `file_operations` built for `T`,
// with a `file` that `open_tramp::<T>` opened and that is not yet released.
pub(super) unsafe extern "C" fn poll_tramp<T: FileOps>(
    file: *mut bindings::file,
    pt: *mut bindings::poll_table_struct,
) -> bindings::__poll_t {
    // SAFETY: as in `read_tramp`.
    let obj = unsafe { this::<T>(file) };
    // INVARIANT: `file` and `pt` are this `->poll` call's arguments.
    let table = PollTable {
        file,
        pt,
        _call: PhantomData,
    };
    obj.poll(&table)
}
