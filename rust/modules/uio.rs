// SPDX-License-Identifier: GPL-2.0
//! [`UserBuf`]: the Stream head's [`UserIo`] over one user buffer, through `kernel::uaccess`.
//!
//! Every copy goes through `UserSlice` (`copy_from_user`/`copy_to_user`), which fails with
//! EFAULT on an unmapped or kernel address instead of faulting, so a bad pointer from user
//! space is an error value, never an oops; a copy of up to [`SMALL_COPY`] bytes tries
//! `strshim_core.c`'s inline copy first (the same checks, `user_access_begin` and the fault
//! handling of `unsafe_get_user`/`unsafe_put_user`) and goes through `UserSlice` after any
//! fault. Copies are bounds-checked against the buffer length first, so a call can never
//! reach past what the caller passed. Only the core's `sth::call` and the ioctl decoders
//! (`strioctl.rs`) copy through it, never with a Stream lock held. The `unsafe` blocks: the
//! two shim calls, `copy_from_user_nofault`, and a copy into a new buffer that is not zeroed
//! (`read_raw`), which counts what it wrote there as initialised.

use core::ffi::c_void;

use kernel::page::PAGE_SIZE;
use kernel::uaccess::UserSlice;

use crate::errno::Errno;
use crate::sth::UserIo;
use crate::sys::UninitBuf;

/// One user buffer: address and length as the system call gave them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct UserBuf {
    addr: usize,
    len: usize,
}

impl UserBuf {
    /// The user buffer at `addr` of `len` bytes (not checked until a copy).
    pub(crate) fn new(addr: usize, len: usize) -> UserBuf {
        UserBuf { addr, len }
    }

    /// Length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The user address `off` bytes in, if `off + n` stays inside the buffer.
    fn at(&self, off: usize, n: usize) -> Result<usize, Errno> {
        let end = off.checked_add(n).ok_or(Errno::EFAULT)?;
        if end > self.len {
            return Err(Errno::EFAULT);
        }
        self.addr.checked_add(off).ok_or(Errno::EFAULT)
    }

    /// Read `N` bytes at offset `off` (a struct the ioctl decoder parses).
    pub(crate) fn read_array<const N: usize>(&self, off: usize) -> Result<[u8; N], Errno> {
        let mut b = [0u8; N];
        let mut me = *self;
        me.copy_from_user(&mut b, off)?;
        Ok(b)
    }

    /// Write `src` at offset `off`.
    pub(crate) fn write_at(&self, off: usize, src: &[u8]) -> Result<(), Errno> {
        let mut me = *self;
        me.copy_to_user(off, src)
    }

    /// Copy the `want` bytes at offset `off` with `copy(done, n)` (the `n` bytes `done` bytes
    /// in, in order): all at once, else, after a fault, a page at a time up to the first bad
    /// address (user memory is mapped, or not, by pages). Returns how many bytes were copied.
    fn copy_by_pages(
        &self,
        off: usize,
        want: usize,
        mut copy: impl FnMut(usize, usize) -> Result<(), Errno>,
    ) -> usize {
        if copy(0, want).is_ok() {
            return want;
        }
        let mut done = 0usize;
        while done < want {
            let Some(a) = self.addr.checked_add(off).and_then(|a| a.checked_add(done)) else {
                break;
            };
            let n = (PAGE_SIZE - a % PAGE_SIZE).min(want - done);
            if copy(done, n).is_err() {
                break;
            }
            done += n;
        }
        done
    }

    /// Copy `n` bytes at offset `off` to the start of `dst`'s unfilled room (not
    /// initialised) and count them as filled; on EFAULT nothing counts.
    fn read_uninit(&self, dst: &mut UninitBuf<'_>, off: usize, n: usize) -> Result<(), Errno> {
        if n == 0 {
            return Ok(());
        }
        let a = self.at(off, n)?;
        let room = dst.unfilled_mut().get_mut(..n).ok_or(Errno::EFAULT)?;
        UserSlice::new(a, n)
            .reader()
            .read_raw(room)
            .map_err(|_| Errno::EFAULT)?;
        // SAFETY: `read_raw` returned `Ok`, which guarantees that all `n` bytes of `room`, the
        // first `n` of the unfilled room, are initialised.
        unsafe { dst.advance(n) };
        Ok(())
    }
}

/// Up to this many bytes a copy first goes through `strshim_core.c`'s inline copy, by words
/// then bytes (one call, not `UserSlice`'s chain of four): small reads and writes, and the
/// 32- or 40-byte `struct strpmsg` of putmsg/getmsg and its write-back; the C side's
/// `RSTREAMS_SMALL_COPY`.
const SMALL_COPY: usize = 64;

/// Up to this many bytes the held write's copy without a fault goes through `strshim_core.c`'s
/// inline word copy (one call, not `copy_from_user_nofault`'s three); the C side's
/// `RSTREAMS_NOFAULT_COPY`.
const NOFAULT_COPY: usize = 64;

extern "C" {
    fn rstreams_copy_in_small(dst: *mut c_void, src: *const c_void, n: usize) -> usize;
    fn rstreams_copy_out_small(dst: *mut c_void, src: *const c_void, n: usize) -> usize;
    fn rstreams_copy_in_nofault(dst: *mut c_void, src: *const c_void, n: usize) -> usize;
}

impl UserIo for UserBuf {
    fn copy_from_user(&mut self, dst: &mut [u8], off: usize) -> Result<(), Errno> {
        if dst.is_empty() {
            return Ok(());
        }
        let a = self.at(off, dst.len())?;
        if dst.len() <= SMALL_COPY {
            // SAFETY: `dst` is a writable slice of `dst.len()` bytes; `a` is a user address,
            // which the shim checks (`user_access_begin`) and reads with fault handling, so a
            // bad one is a nonzero return, never an oops.
            let left = unsafe {
                rstreams_copy_in_small(dst.as_mut_ptr().cast(), a as *const c_void, dst.len())
            };
            if left == 0 {
                return Ok(());
            }
        }
        UserSlice::new(a, dst.len())
            .reader()
            .read_slice(dst)
            .map_err(|_| Errno::EFAULT)
    }

    fn copy_to_user(&mut self, off: usize, src: &[u8]) -> Result<(), Errno> {
        if src.is_empty() {
            return Ok(());
        }
        let a = self.at(off, src.len())?;
        if src.len() <= SMALL_COPY {
            // SAFETY: `src` is a readable slice of `src.len()` bytes; `a` is a user address,
            // which the shim checks (`user_access_begin`) and writes with fault handling, so a
            // bad one is a nonzero return, never an oops.
            let left = unsafe {
                rstreams_copy_out_small(a as *mut c_void, src.as_ptr().cast(), src.len())
            };
            if left == 0 {
                return Ok(());
            }
        }
        UserSlice::new(a, src.len())
            .writer()
            .write_slice(src)
            .map_err(|_| Errno::EFAULT)
    }

    /// `UserSlice` says only whether a whole copy worked; what precedes a bad address is found
    /// again a page at a time ([`UserBuf::copy_by_pages`]).
    fn copy_from_user_partial(&mut self, dst: &mut [u8], off: usize) -> usize {
        let mut me = *self;
        self.copy_by_pages(off, dst.len(), |done, n| {
            let d = dst.get_mut(done..done + n).ok_or(Errno::EFAULT)?;
            me.copy_from_user(d, off.checked_add(done).ok_or(Errno::EFAULT)?)
        })
    }

    /// `copy_from_user_nofault` (mm/maccess.c): `access_ok`, then the copy with page faults
    /// disabled, so it never sleeps; any fault fails the whole copy. Up to [`NOFAULT_COPY`]
    /// bytes the shim's inline copy does the same in one call.
    #[inline]
    fn copy_from_user_nofault(&mut self, dst: &mut [u8], off: usize) -> bool {
        let Ok(a) = self.at(off, dst.len()) else {
            return false;
        };
        if dst.len() <= NOFAULT_COPY {
            // SAFETY: `dst` is valid for writes of `dst.len()` bytes (a unique borrow). `a` is
            // a user address, which the shim checks (`user_access_begin` or the arch's
            // masking) and reads with page faults disabled and fault handling: a bad or absent
            // page makes it return nonzero, never fault or sleep.
            let left = unsafe {
                rstreams_copy_in_nofault(dst.as_mut_ptr().cast(), a as *const c_void, dst.len())
            };
            return left == 0;
        }
        // SAFETY: `dst` is valid for writes of `dst.len()` bytes (a unique borrow). The source
        // is a user address, which `copy_from_user_nofault` checks itself (`access_ok`) and
        // reads with page faults disabled: a bad or absent page makes it return nonzero,
        // never fault or sleep.
        let left = unsafe {
            kernel::bindings::copy_from_user_nofault(
                dst.as_mut_ptr().cast(),
                a as *const core::ffi::c_void,
                dst.len(),
            )
        };
        left == 0
    }

    /// Into the new buffer as it is (`read_raw`: no zeroing first), page by page after a fault
    /// as above.
    fn copy_from_user_uninit(&mut self, dst: &mut UninitBuf<'_>, off: usize) {
        let want = dst.len().saturating_sub(dst.filled());
        self.copy_by_pages(off, want, |done, n| {
            self.read_uninit(dst, off.checked_add(done).ok_or(Errno::EFAULT)?, n)
        });
    }
}
