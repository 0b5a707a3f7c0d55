// SPDX-License-Identifier: GPL-2.0
//! [`IterBuf`]: the Stream head's [`UserIo`] over the `struct iov_iter` of a `->read_iter` or
//! `->write_iter` call (readv(2)/writev(2), and whatever else the VFS routes there).
//!
//! The core's calls (`sth::call`) address user memory by offset (a write stages it a chunk at
//! a time, a read copies message after message, and a faulting write finds what precedes the
//! bad address again), so every copy is made on a private copy of the iterator
//! (`rstreams_iter_copy` in the shim): advanced to the offset, then `copy_from_iter` /
//! `copy_to_iter`. The caller's iterator is advanced once, by what the call reports done
//! (`chardev.rs`). All segments of a writev therefore form one write, as in SVR4: one message
//! (split only by the topmost module's `maxpsz` and `STRMSGSZ`, as for write(2)); a readv
//! fills its segments in order from one read. A bad segment address is EFAULT (a writev sends
//! the whole pieces before it); nothing is consumed from the Stream by a failed copy.

use core::ffi::{c_int, c_void};
use core::marker::PhantomData;

use crate::errno::Errno;
use crate::sth::UserIo;
use crate::sys::UninitBuf;

extern "C" {
    fn rstreams_iter_copy(
        it: *mut c_void,
        off: usize,
        buf: *mut c_void,
        len: usize,
        to_iter: c_int,
    ) -> c_int;
    fn rstreams_iter_count(it: *const c_void) -> usize;
    fn rstreams_iter_advance(it: *mut c_void, n: usize);
}

/// The iterator of one `->read_iter`/`->write_iter` call.
///
/// # Invariants
/// `it` is the `struct iov_iter` of a `->read_iter`/`->write_iter` call in progress for the
/// lifetime `'a`, used by one thread; it is only read (copied) until [`IterBuf::advance`].
#[derive(Clone, Copy)]
pub(crate) struct IterBuf<'a> {
    it: *mut c_void,
    len: usize,
    _call: PhantomData<&'a mut ()>,
}

impl IterBuf<'_> {
    /// The iterator `it` of the call in progress.
    ///
    /// # Safety
    /// `it` is the `struct iov_iter` argument of a `->read_iter`/`->write_iter` call that is
    /// in progress for the returned value's lifetime.
    pub(crate) unsafe fn new(it: *mut c_void) -> Self {
        // SAFETY: `it` is valid (the caller's contract).
        let len = unsafe { rstreams_iter_count(it) };
        // INVARIANT: guaranteed by the caller.
        IterBuf {
            it,
            len,
            _call: PhantomData,
        }
    }

    /// Bytes the iterator describes (the total of all segments).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Advance the caller's iterator by `n` bytes (what the call did), at the end of the call.
    pub(crate) fn advance(self, n: usize) {
        // SAFETY: `it` is valid (type invariant) and describes at least `len` bytes.
        unsafe { rstreams_iter_advance(self.it, n.min(self.len)) }
    }

    /// Copy up to `len` bytes at offset `off`; returns how many were copied before a bad
    /// address, or EFAULT for a range outside the iterator.
    fn copy(&self, off: usize, buf: *mut c_void, len: usize, to_iter: bool) -> Result<usize, Errno> {
        if len == 0 {
            return Ok(0);
        }
        // SAFETY: `it` is valid (type invariant); `buf` is valid for `len` bytes (a slice of
        // the caller); the shim checks `off + len` against the iterator and copies on a copy
        // of it, stopping at a bad user address.
        let r = unsafe { rstreams_iter_copy(self.it, off, buf, len, c_int::from(to_iter)) };
        usize::try_from(r).map_err(|_| Errno::EFAULT)
    }

    fn copy_all(&self, off: usize, buf: *mut c_void, len: usize, to_iter: bool) -> Result<(), Errno> {
        match self.copy(off, buf, len, to_iter)? {
            n if n == len => Ok(()),
            _ => Err(Errno::EFAULT),
        }
    }
}

impl UserIo for IterBuf<'_> {
    fn copy_from_user(&mut self, dst: &mut [u8], off: usize) -> Result<(), Errno> {
        self.copy_all(off, dst.as_mut_ptr().cast(), dst.len(), false)
    }

    fn copy_to_user(&mut self, off: usize, src: &[u8]) -> Result<(), Errno> {
        // The shim only reads `buf` when copying to the iterator.
        self.copy_all(off, src.as_ptr().cast_mut().cast(), src.len(), true)
    }

    fn copy_from_user_partial(&mut self, dst: &mut [u8], off: usize) -> usize {
        let n = dst.len();
        self.copy(off, dst.as_mut_ptr().cast(), n, false)
            .map_or(0, |k| k.min(n))
    }

    fn copy_from_user_uninit(&mut self, dst: &mut UninitBuf<'_>, off: usize) {
        let room = dst.unfilled_mut();
        let n = room.len();
        // The shim only writes `buf` when copying from the iterator (`copy_from_iter`).
        let Ok(k) = self.copy(off, room.as_mut_ptr().cast(), n, false) else {
            return;
        };
        // SAFETY: `copy_from_iter` wrote the first `k` bytes of `room` (the bytes it reports
        // copied, in order from the start; at most `n`), the first `k` of the unfilled room.
        unsafe { dst.advance(k.min(n)) };
    }
}
