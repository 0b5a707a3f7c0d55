// SPDX-License-Identifier: GPL-2.0
//! [`StrFile`]: one open STREAMS file — the Stream it is the head of ([`StrPerim`]) — and
//! the file operations that drive the head's state machine (`crate::sth`).
//!
//! ```text
//!   read/write/ioctl/poll ──▶ StrFile ──▶ sth::call: stage in ─▶ StrPerim: enter ─▶ Stream::strread/strwrite/… ─▶ unlock ─▶ copy out
//!                                                   (Block: wait on the head's wait queue, strwait.rs)
//! ```
//!
//! `StrFile` is the kernel's [`HeadCall`]: the core's `sth::call` does each system call's user
//! copies around the lock holds it asks for, so none happens with the Stream lock held.
//!
//! Where the work is: opening the devices in `strdev.rs`, the waiting loops in `strwait.rs`,
//! the data path (read/readv, write/writev) in `strrw.rs`, ioctl decoding in `strioctl.rs`,
//! I_PIPE in `weld.rs`, I_LINK/I_UNLINK/I_FDINSERT in `strmux.rs`, the per-Stream object and its locking rules in `strperim.rs`.
//!
//! A file's Stream never changes (I_PIPE connects two pipe ends in place), so a system call
//! reaches it without a lock. A head may have several files (opens of an fattach'ed path,
//! `fattach.rs`) and attachments; the last of them to go closes it (`StrPerim::close_now`).

use core::sync::atomic::AtomicU8;

use kernel::prelude::*;
use kernel::sync::Arc;

use crate::chardev::{CallFile, FileOps, PollTable, O_NONBLOCK};
use crate::errno::Errno;
use crate::fasync::FasyncCall;
use crate::iter::IterBuf;
use crate::msg::Msg;
use crate::sth::call::{HeadCall, HeadShared};
use crate::sth::consts::*;
use crate::sth::layout::Model;
use crate::sth::{Stop, Stream};
use crate::strdev::StrDev;
use crate::stream::Registry;
use crate::strperim::{Caller, StrPerim};
use crate::uio::UserBuf;

/// Every poll event the head can report (Linux does not tell `->poll` which were asked).
const POLL_ALL: u32 =
    POLLIN | POLLPRI | POLLOUT | POLLRDNORM | POLLRDBAND | POLLWRNORM | POLLWRBAND | POLLMSG;

/// `StrFile::pipe_state`: not an unconnected pipe end (a Stream over a driver, or connected).
pub(crate) const CONNECTED: u8 = 0;
/// An unconnected pipe end: `I_PIPE` may connect it.
pub(crate) const UNCONNECTED: u8 = 1;
/// Being connected by an `I_PIPE` in progress.
pub(crate) const WELDING: u8 = 2;

/// One open STREAMS file.
pub(crate) struct StrFile {
    /// The Stream this file is the head of.
    perim: Arc<StrPerim>,
    /// `CONNECTED`, `UNCONNECTED` or `WELDING` (see `weld.rs`).
    pub(crate) pipe_state: AtomicU8,
    /// `fmodsw`, shared with the device.
    pub(crate) registry: Arc<Registry>,
    /// The FIFO node and open mode of a FIFO file (its close is counted there).
    fifo: Option<crate::fifo::FifoOpen>,
}

impl StrFile {
    /// A new file on the head of `perim`; unless it is a FIFO file (counted by its node), it
    /// holds the head open. `unconnected`: an unconnected pipe end (I_PIPE may connect it).
    pub(crate) fn new(
        perim: Arc<StrPerim>,
        unconnected: bool,
        registry: Arc<Registry>,
        fifo: Option<crate::fifo::FifoOpen>,
    ) -> Result<Arc<StrFile>, Errno> {
        let state = if unconnected { UNCONNECTED } else { CONNECTED };
        if fifo.is_none() {
            perim.hold_head();
        }
        report_closed_head(&perim);
        let holds = fifo.is_none();
        let f = Arc::new(
            StrFile {
                perim: perim.clone(),
                pipe_state: AtomicU8::new(state),
                registry,
                fifo,
            },
            GFP_KERNEL,
        );
        match f {
            Ok(f) => Ok(f),
            Err(_) => {
                if holds && perim.release_head("a file that could not be allocated") {
                    perim.close_now(Caller::Nobody);
                }
                Err(Errno::ENOSR)
            }
        }
    }

    /// The Stream this file is the head of.
    pub(crate) fn perim(&self) -> &Arc<StrPerim> {
        &self.perim
    }

    /// Whether this is a FIFO file.
    pub(crate) fn is_fifo_file(&self) -> bool {
        self.fifo.is_some()
    }

    /// ioctl(2) from a caller of data model `model`: the ioctls that involve other files here,
    /// the rest in `strioctl.rs`. putmsg/getmsg go straight there, so that their frame does
    /// not carry what the others need (see `strioctl::ioctl`).
    fn ioctl_as(
        &self,
        cmd: u32,
        arg: usize,
        f_flags: u32,
        file: &CallFile<'_, Self>,
        model: Model,
    ) -> Result<i32, Errno> {
        let nonblock = f_flags & O_NONBLOCK != 0;
        match cmd {
            I_PUTPMSG | I_GETPMSG => crate::strioctl::ioctl(self, cmd, arg, nonblock, model),
            _ => self.ioctl_files(cmd, arg, nonblock, file, model),
        }
    }

    /// [`Self::ioctl_as`] for every command but putmsg/getmsg; out of line on purpose.
    #[inline(never)]
    fn ioctl_files(
        &self,
        cmd: u32,
        arg: usize,
        nonblock: bool,
        file: &CallFile<'_, Self>,
        model: Model,
    ) -> Result<i32, Errno> {
        match cmd {
            I_PIPE => {
                let other = file.same_device(arg as u32 as i32)?;
                crate::weld::weld(self, &other).map(|()| 0)
            }
            I_SENDFD => crate::fdpass::sendfd(self, arg as u32 as i32),
            I_FIFO_PIPE => crate::fdpass::fifo_pipe(self, file, arg),
            I_RECVFD => crate::fdpass::recvfd(self, arg, nonblock),
            I_LINK | I_PLINK => {
                let lower = file.any_device(arg as u32 as i32)?;
                crate::strmux::link(self, &lower, cmd == I_PLINK, nonblock)
            }
            I_UNLINK | I_PUNLINK => {
                crate::strmux::unlink(self, arg as u32 as i32, cmd == I_PUNLINK, nonblock)
            }
            I_FDINSERT => crate::strmux::fdinsert(self, file, arg, nonblock, model),
            _ => crate::strioctl::ioctl(self, cmd, arg, nonblock, model),
        }
    }
}

/// Test build: report a new file on a head that was closed already (issue 14: its calls
/// would all answer EBADF), with `BUG:` for the guest console check. A lock hold per open.
#[cfg(rstreams_test)]
fn report_closed_head(perim: &StrPerim) {
    if perim.op(Caller::Nobody, |s| s.sth().is_closed()) {
        pr_err!("rstreams: BUG: a new file on a closed Stream head\n");
    }
}

/// Production build: no check.
#[cfg(not(rstreams_test))]
fn report_closed_head(_perim: &StrPerim) {}

/// A [`StrFile`] that no `struct file` owns yet (a new pipe end on its way to becoming a
/// file). Dropping it closes its Stream without waiting, as the release of its file would: a
/// pipe end that never became a file is closed, not left holding its peer (each connected
/// end holds the other through its queues' remote references, a cycle only a close breaks).
pub(crate) struct Unfiled(Option<Arc<StrFile>>);

impl Unfiled {
    /// A new file on the head of the connected pipe end `perim` (holding it open).
    pub(crate) fn new(perim: Arc<StrPerim>, registry: Arc<Registry>) -> Result<Self, Errno> {
        StrFile::new(perim, false, registry, None).map(|f| Unfiled(Some(f)))
    }

    /// A new FIFO-typed file (`CallFile::new_fifo_file`) owning this object; on failure the
    /// Stream is closed.
    pub(crate) fn into_fifo_file(
        mut self,
        call: &CallFile<'_, StrFile>,
        nonblock: bool,
    ) -> Result<crate::fdpass::FileRef, Errno> {
        let f = self.0.clone().ok_or(Errno::EINVAL)?;
        let file = call.new_fifo_file(f, nonblock)?;
        // The file owns the object now; its release closes the Stream.
        self.0 = None;
        Ok(file)
    }

    /// The object, for a caller that makes it the `private_data` of a file being opened (the
    /// kernel calls its release when that file closes).
    pub(crate) fn into_opened(mut self) -> Option<Arc<StrFile>> {
        self.0.take()
    }
}

impl Drop for Unfiled {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            <StrFile as FileOps>::release(f, O_NONBLOCK);
        }
    }
}

impl HeadCall for StrFile {
    fn run<R>(
        &self,
        nonblock: bool,
        limit_ms: Option<u32>,
        op: impl FnMut(&mut Stream) -> Result<R, Stop>,
        cancel: impl FnOnce(&mut Stream),
    ) -> Result<R, Errno> {
        self.run_limited(nonblock, limit_ms, op, cancel)
    }

    fn run_read<R>(
        &self,
        nonblock: bool,
        ready: impl Fn(&Stream) -> bool,
        op: impl FnMut(&mut Stream) -> Result<R, Stop>,
    ) -> Result<R, Errno> {
        StrFile::run_read(self, nonblock, ready, op)
    }

    fn shared(&self) -> &HeadShared {
        self.perim.shared()
    }

    fn write_express(&self, m: Msg) -> Result<usize, Msg> {
        self.perim.write_express(m)
    }

    fn send_express(&self, ctl: &mut Option<Msg>, data: &mut Option<Msg>) -> bool {
        self.perim.send_express(ctl, data)
    }
}

impl FileOps for StrFile {
    type Dev = StrDev;

    fn open(dev: &StrDev, f_flags: u32) -> Result<Arc<Self>, Errno> {
        crate::strdev::open(dev, f_flags)
    }

    fn release(this: Arc<Self>, f_flags: u32) {
        if let Some(f) = &this.fifo {
            crate::fifo::release(&this, f);
            return;
        }
        if this.perim.release_head("a file's release") {
            crate::strwait::drain_on_close(&this.perim, f_flags & O_NONBLOCK != 0);
            this.perim.close_now(Caller::Me);
        }
    }

    fn read(&self, buf: UserBuf, f_flags: u32) -> Result<usize, Errno> {
        self.read_io(buf, buf.len(), f_flags)
    }

    /// Inline, so that the held write's join runs in `write_tramp` itself (`call::write`).
    #[inline]
    fn write(&self, buf: UserBuf, f_flags: u32) -> Result<usize, Errno> {
        self.write_io(buf, buf.len(), f_flags)
    }

    fn read_iter(&self, buf: IterBuf<'_>, f_flags: u32) -> Result<usize, Errno> {
        self.read_io(buf, buf.len(), f_flags)
    }

    fn write_iter(&self, buf: IterBuf<'_>, f_flags: u32) -> Result<usize, Errno> {
        self.write_io(buf, buf.len(), f_flags)
    }

    fn ioctl(
        &self,
        cmd: u32,
        arg: usize,
        f_flags: u32,
        file: &CallFile<'_, Self>,
    ) -> Result<i32, Errno> {
        self.ioctl_as(cmd, arg, f_flags, file, Model::Lp64)
    }

    fn compat_ioctl(
        &self,
        cmd: u32,
        arg: usize,
        f_flags: u32,
        file: &CallFile<'_, Self>,
    ) -> Result<i32, Errno> {
        self.ioctl_as(cmd, arg, f_flags, file, Model::Ilp32)
    }

    fn fasync(&self, call: &FasyncCall<'_>) -> Result<(), Errno> {
        call.register(self.perim.fasync())?;
        // A lock hold after the registration: its leave sees the owner, so ordinary puts are
        // not left for the Stream's own next look any more (`StrPerim::watched`).
        self.perim.op(Caller::Me, |_| ());
        Ok(())
    }

    fn poll(&self, pt: &PollTable<'_>) -> u32 {
        pt.wait(self.perim.wq());
        // The op's leave sees this poller on the wait queue (`StrPerim::watched`).
        self.perim.op(Caller::Me, |s| s.strpoll(POLL_ALL))
    }

    /// Every close(2): the closing process's I_SETSIG registration goes (SVR4 `strclean`),
    /// dropped after the lock.
    fn flush(&self) {
        let key = crate::sigowner::current_key();
        let gone = self.perim.op(Caller::Nobody, |s| s.sth_sigclean(key));
        drop(gone);
    }
}
