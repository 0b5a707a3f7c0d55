//! `UserIo`: how the Stream head reaches user memory, and slice-backed implementations.
//!
//! The platform implements [`UserIo`] over `copy_from_user`/`copy_to_user` for one user
//! buffer; the host tests and KUnit use [`SliceIo`] (a buffer, EFAULT past its end) and
//! [`FailIo`] (every copy faults) to check that a fault loses nothing.

use crate::errno::Errno;

/// One user buffer, addressed by byte offset from its start.
pub trait UserIo {
    /// Copy `dst.len()` bytes from user offset `off` into `dst` (EFAULT on a bad address).
    fn copy_from_user(&mut self, dst: &mut [u8], off: usize) -> Result<(), Errno>;
    /// Copy `src` to user offset `off` (EFAULT on a bad address).
    fn copy_to_user(&mut self, off: usize, src: &[u8]) -> Result<(), Errno>;
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
