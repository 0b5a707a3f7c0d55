// SPDX-License-Identifier: GPL-2.0
//! The data path of a [`StrFile`]: read(2)/readv(2) and write(2)/writev(2) over any user
//! buffer the head's calls copy through (`UserBuf` for read/write, `IterBuf` for the vectored
//! calls), so a writev is one write and a readv one read.
//!
//! Both are the core's two-phase calls (`sth::call::read`, `sth::call::write`): a write's
//! bytes are copied in before the Stream lock is taken (into the message itself on the fast
//! path, at most `STRMSGSZ` bytes at a time), and a read takes its messages under the lock and
//! copies them out after it, putting back what a faulting copy did not deliver. No user copy
//! happens with the Stream lock held, so a buffer whose page fault blocks (FUSE, userfaultfd)
//! stalls only its own call.

use crate::chardev::O_NONBLOCK;
use crate::errno::Errno;
use crate::sth::call;
use crate::sth::UserIo;
use crate::strfile::StrFile;

impl StrFile {
    /// read(2) and readv(2): `len` bytes into `buf`.
    pub(crate) fn read_io<B: UserIo>(
        &self,
        mut buf: B,
        len: usize,
        f_flags: u32,
    ) -> Result<usize, Errno> {
        call::read(self, &mut buf, len, f_flags & O_NONBLOCK != 0)
    }

    /// write(2) and writev(2): `len` bytes from `buf`, one write.
    #[inline]
    pub(crate) fn write_io<B: UserIo>(
        &self,
        mut buf: B,
        len: usize,
        f_flags: u32,
    ) -> Result<usize, Errno> {
        call::write(self, &mut buf, len, f_flags & O_NONBLOCK != 0)
    }
}
