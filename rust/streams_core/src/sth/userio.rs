//! `UserIo`: how the platform's half of a system call (`call.rs`) reaches user memory, and
//! slice-backed implementations.
//!
//! Only `call.rs` copies through it, and never with a Stream lock held: the head operations
//! themselves take and give kernel memory. The kernel implements [`UserIo`] over
//! `copy_from_user`/`copy_to_user` for one user buffer (or an `iov_iter`); the host tests and
//! KUnit use [`SliceIo`] (a buffer, EFAULT past its end) and [`FailIo`] (every copy faults) to
//! check that a fault loses nothing.

use crate::errno::Errno;
use crate::sys::UninitBuf;

/// One user buffer, addressed by byte offset from its start.
///
/// The `dst` of the copies from user space may be the unzeroed fast buffer of a cached
/// message block, holding an earlier message's bytes (`msg/mod.rs`): an implementation only
/// writes into it, and reports what it wrote.
pub trait UserIo {
    /// Copy `dst.len()` bytes from user offset `off` into `dst` (EFAULT on a bad address).
    fn copy_from_user(&mut self, dst: &mut [u8], off: usize) -> Result<(), Errno>;
    /// Copy `src` to user offset `off` (EFAULT on a bad address).
    fn copy_to_user(&mut self, off: usize, src: &[u8]) -> Result<(), Errno>;
    /// Copy what can be copied of `dst.len()` bytes from user offset `off` before the first
    /// bad address; returns how many bytes that is (a write sends what precedes a fault).
    fn copy_from_user_partial(&mut self, dst: &mut [u8], off: usize) -> usize {
        match self.copy_from_user(dst, off) {
            Ok(()) => dst.len(),
            Err(_) => 0,
        }
    }
    /// [`UserIo::copy_from_user_partial`] into memory that is not initialised yet (a new
    /// buffer, [`crate::sys::vec_filled_wait`]): copy into `dst`'s unfilled room, from user
    /// offset `off`, what can be copied before the first bad address, and count it as filled
    /// there. Default: zero the room, then `copy_from_user_partial` into it (the host's test
    /// doubles); the kernel copies into the room as it is, which is what saves the zeroing.
    fn copy_from_user_uninit(&mut self, dst: &mut UninitBuf<'_>, off: usize) {
        dst.fill_with(|room| self.copy_from_user_partial(room, off));
    }
    /// Copy `dst.len()` bytes from user offset `off` into `dst` without taking a page fault,
    /// so that it may run under a spinlock (the hold cell's, `hold.rs`): false if any byte
    /// was not at hand (a bad address, or a page not present), `dst` then holding anything;
    /// the caller copies again the ordinary way, with no lock held. Default: false, copying
    /// nothing (a copy that may block must never run here; a writev's iterator takes the
    /// staged way); a source that cannot fault or sleep overrides it.
    fn copy_from_user_nofault(&mut self, dst: &mut [u8], off: usize) -> bool {
        let _ = (dst, off);
        false
    }
}

/// A user buffer backed by a slice: copies outside it fault.
pub struct SliceIo<'a>(pub &'a mut [u8]);

impl UserIo for SliceIo<'_> {
    fn copy_from_user(&mut self, dst: &mut [u8], off: usize) -> Result<(), Errno> {
        let end = off.checked_add(dst.len()).ok_or(Errno::EFAULT)?;
        dst.copy_from_slice(self.0.get(off..end).ok_or(Errno::EFAULT)?);
        Ok(())
    }
    fn copy_to_user(&mut self, off: usize, src: &[u8]) -> Result<(), Errno> {
        let end = off.checked_add(src.len()).ok_or(Errno::EFAULT)?;
        self.0
            .get_mut(off..end)
            .ok_or(Errno::EFAULT)?
            .copy_from_slice(src);
        Ok(())
    }
    fn copy_from_user_partial(&mut self, dst: &mut [u8], off: usize) -> usize {
        let src = self.0.get(off..).unwrap_or_default();
        crate::sys::copy_bytes(dst, src)
    }
    fn copy_from_user_uninit(&mut self, dst: &mut UninitBuf<'_>, off: usize) {
        dst.append(self.0.get(off..).unwrap_or_default());
    }
    /// Memory at hand: the ordinary copy, which never blocks.
    fn copy_from_user_nofault(&mut self, dst: &mut [u8], off: usize) -> bool {
        self.copy_from_user(dst, off).is_ok()
    }
}

/// A user buffer whose every copy faults (an unmapped address).
pub struct FailIo;

impl UserIo for FailIo {
    fn copy_from_user(&mut self, _dst: &mut [u8], _off: usize) -> Result<(), Errno> {
        Err(Errno::EFAULT)
    }
    fn copy_to_user(&mut self, _off: usize, _src: &[u8]) -> Result<(), Errno> {
        Err(Errno::EFAULT)
    }
}
