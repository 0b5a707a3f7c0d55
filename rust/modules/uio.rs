// SPDX-License-Identifier: GPL-2.0
//! [`UserBuf`]: the Stream head's [`UserIo`] over one user buffer, through `kernel::uaccess`.
//!
//! Every copy goes through `UserSlice` (`copy_from_user`/`copy_to_user`), which fails with
//! EFAULT on an unmapped or kernel address instead of faulting, so a bad pointer from user
//! space is an error value, never an oops. Copies are bounds-checked against the buffer length
//! first, so a call can never reach past what the caller passed. Only the core's `sth::call`
//! copies through it, never with a Stream lock held. No `unsafe` here.

use kernel::page::PAGE_SIZE;
use kernel::uaccess::UserSlice;

use crate::errno::Errno;
use crate::sth::UserIo;

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
}

impl UserIo for UserBuf {
    fn copy_from_user(&mut self, dst: &mut [u8], off: usize) -> Result<(), Errno> {
        if dst.is_empty() {
            return Ok(());
        }
        let a = self.at(off, dst.len())?;
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
        UserSlice::new(a, src.len())
            .writer()
            .write_slice(src)
            .map_err(|_| Errno::EFAULT)
    }

    /// `UserSlice` says only whether a whole copy worked; what precedes a bad address is found
    /// again a page at a time (user memory is mapped, or not, by pages).
    fn copy_from_user_partial(&mut self, dst: &mut [u8], off: usize) -> usize {
        if self.copy_from_user(dst, off).is_ok() {
            return dst.len();
        }
        let mut done = 0usize;
        while done < dst.len() {
            let Some(a) = self.addr.checked_add(off).and_then(|a| a.checked_add(done)) else {
                break;
            };
            let n = (PAGE_SIZE - a % PAGE_SIZE).min(dst.len() - done);
            let Some(d) = dst.get_mut(done..done + n) else {
                break;
            };
            if self.copy_from_user(d, off + done).is_err() {
                break;
            }
            done += n;
        }
        done
    }
}
