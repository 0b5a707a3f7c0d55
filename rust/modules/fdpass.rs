// SPDX-License-Identifier: GPL-2.0
//! I_SENDFD and I_RECVFD: an open file travels across a STREAMS pipe inside an M_PASSFP
//! message (the Stream head side is `sth/fdpass.rs`).
//!
//! [`FileRef`] owns one reference to a `struct file` and [`UnusedFd`] one reserved descriptor
//! number; they are the only safe handles this file gives out, and each releases what it owns
//! when dropped. I_SENDFD turns a `FileRef` into an esballoc'd M_PASSFP block whose free
//! routine is [`passfp_free`], so whatever happens to the message (received, flushed, freed
//! at close) the reference is dropped exactly once. I_RECVFD reserves the descriptor before it
//! takes the message, so a full descriptor table (EMFILE) loses nothing.

use core::ffi::c_void;

use kernel::bindings::O_CLOEXEC;
use kernel::ffi::{c_int, c_uint};

use crate::errno::Errno;
use crate::msg::{esballoc, Bpri, ExtBuf, Msg, M_DATA, M_PASSFP};
use crate::sys::copy_bytes;
use crate::chardev::CallFile;
use crate::strfile::StrFile;
use crate::uio::UserBuf;

extern "C" {
    fn rstreams_fget(fd: c_uint) -> *mut c_void;
    fn rstreams_fput(file: *mut c_void);
    fn rstreams_get_file(file: *mut c_void);
    fn rstreams_fd_reserve(flags: c_uint) -> c_int;
    fn rstreams_fd_unreserve(fd: c_int);
    fn rstreams_fd_install(fd: c_int, file: *mut c_void);
    fn rstreams_current_ids(uid: *mut c_uint, gid: *mut c_uint);
}

/// One counted reference to an open file.
///
/// # Invariants
/// `0` is a `struct file *` on which this value owns one reference.
pub(crate) struct FileRef(*mut c_void);

impl FileRef {
    /// The file open as descriptor `fd` in the calling process (EBADF if none).
    fn fget(fd: i32) -> Result<FileRef, Errno> {
        let fd = c_uint::try_from(fd).map_err(|_| Errno::EBADF)?;
        // SAFETY: fget accepts any number in process context and returns a counted
        // reference or null.
        let f = unsafe { rstreams_fget(fd) };
        if f.is_null() {
            return Err(Errno::EBADF);
        }
        // INVARIANT: fget took the reference.
        Ok(FileRef(f))
    }

    /// Take ownership of a file reference the caller holds.
    ///
    /// # Safety
    /// `f` is a `struct file *` on which the caller owns one reference, given up here.
    pub(crate) unsafe fn from_file(f: *mut c_void) -> FileRef {
        // INVARIANT: guaranteed by the caller.
        FileRef(f)
    }

    /// Give up ownership: the reference now belongs to whoever holds the address.
    fn into_raw(self) -> usize {
        let p = self.0 as usize;
        core::mem::forget(self);
        p
    }

    /// Take ownership of a reference given up with `into_raw`.
    ///
    /// # Safety
    /// `p` came from `into_raw` and its reference has not been taken back yet.
    unsafe fn from_raw(p: usize) -> FileRef {
        // INVARIANT: guaranteed by the caller.
        FileRef(p as *mut c_void)
    }
}

impl Drop for FileRef {
    fn drop(&mut self) {
        // SAFETY: we own one reference (type invariant) and drop it once.
        unsafe { rstreams_fput(self.0) }
    }
}

/// A descriptor number reserved in the calling process, not yet installed.
///
/// # Invariants
/// `0` was returned by `get_unused_fd_flags` in this process and is neither installed nor
/// released.
struct UnusedFd(c_int);

impl UnusedFd {
    /// Reserve the lowest free descriptor (EMFILE when the table is full); `flags` may be
    /// O_CLOEXEC.
    fn reserve(flags: u32) -> Result<UnusedFd, Errno> {
        // SAFETY: plain call in process context.
        let fd = unsafe { rstreams_fd_reserve(flags) };
        if fd < 0 {
            return Err(Errno(-fd));
        }
        // INVARIANT: freshly reserved.
        Ok(UnusedFd(fd))
    }

    /// Install `file` at this descriptor (consuming the reference) and return the number.
    fn install(self, file: FileRef) -> i32 {
        let fd = self.0;
        core::mem::forget(self);
        // SAFETY: `fd` is reserved and not installed (type invariant); fd_install consumes the
        // reference `file` owns.
        unsafe { rstreams_fd_install(fd, file.into_raw() as *mut c_void) };
        fd
    }
}

impl Drop for UnusedFd {
    fn drop(&mut self) {
        // SAFETY: reserved and not installed (type invariant); released once.
        unsafe { rstreams_fd_unreserve(self.0) }
    }
}

/// Free routine of M_PASSFP blocks: drop the file reference the block owns.
fn passfp_free(_buf: &'static mut [u8], arg: usize) {
    // SAFETY: only `passfp_msg` builds blocks with this free routine, with `arg` from
    // `FileRef::into_raw`; the routine runs once per block (esballoc contract).
    drop(unsafe { FileRef::from_raw(arg) });
}

/// The effective uid and gid of the calling process.
fn current_ids() -> (u32, u32) {
    let (mut uid, mut gid) = (0, 0);
    // SAFETY: two valid out-pointers; reads the caller's credentials.
    unsafe { rstreams_current_ids(&mut uid, &mut gid) };
    (uid, gid)
}

/// I_SENDFD `fd`: pass the file open as `fd` to the other end of the pipe.
pub(crate) fn sendfd(f: &StrFile, fd: i32) -> Result<i32, Errno> {
    let mut mp = Some(passfp_msg(FileRef::fget(fd)?)?);
    f.run(
        true,
        |s| match mp.take() {
            Some(m) => s.strsendfd(m).map(|()| 0),
            None => Err(Errno::EAGAIN.into()),
        },
        |_| {},
    )
}

/// An M_PASSFP message carrying `file` and the calling process's effective uid and gid
/// (what I_RECVFD reports): I_SENDFD, and connld's open (`connld.rs`). Freeing the message,
/// whatever becomes of it, drops the file reference. ENOSR without memory (the file is
/// released).
pub(crate) fn passfp_msg(file: FileRef) -> Result<Msg, Errno> {
    let ext = ExtBuf {
        buf: &mut [],
        free: passfp_free,
        arg: file.into_raw(),
    };
    let mut mp = match esballoc(ext, Bpri::Hi) {
        Ok(m) => m,
        Err(ext) => {
            // SAFETY: esballoc handed the buffer back unused: the reference is still ours.
            drop(unsafe { FileRef::from_raw(ext.arg) });
            return Err(Errno::ENOSR);
        }
    };
    mp.set_type(M_PASSFP);
    // The sender's credentials travel with the file (strrecvfd's uid and gid).
    let (uid, gid) = current_ids();
    let mut ids = Msg::with_type(M_DATA, 8).map_err(|_| Errno::ENOSR)?;
    let (u, g) = (uid.to_ne_bytes(), gid.to_ne_bytes());
    let idb = [u[0], u[1], u[2], u[3], g[0], g[1], g[2], g[3]];
    let n = ids.spare_mut().map_or(0, |b| copy_bytes(b, &idb));
    ids.adj_wptr(n);
    mp.linkb(ids);
    Ok(mp)
}

/// I_RECVFD: receive a passed file as a new descriptor, filling `struct strrecvfd { int fd;
/// uid_t uid; gid_t gid; char fill[8]; }` at `arg`.
pub(crate) fn recvfd(f: &StrFile, arg: usize, nonblock: bool) -> Result<i32, Errno> {
    let out = UserBuf::new(arg, 20);
    // Fail on a bad buffer before a file is taken off the Stream.
    out.write_at(0, &[0u8; 20])?;
    let fd = UnusedFd::reserve(0)?;
    let tok = &f.perim().shared().reader;
    let mp = f.run(nonblock, |s| s.strrecvfd(nonblock, tok), |_| {})?;
    let addr = mp.ext_arg().ok_or(Errno::EBADMSG)?;
    // SAFETY: `mp` is an M_PASSFP block built by `passfp_msg` (the only producer of M_PASSFP
    // with an external buffer; user space cannot make one), so `addr` is a file pointer on
    // which `mp` owns a reference, alive while `mp` is. get_file takes a second one for the
    // new descriptor; dropping `mp` releases the message's.
    let file = unsafe {
        rstreams_get_file(addr as *mut c_void);
        FileRef::from_raw(addr)
    };
    let mut ids = [0u8; 8];
    if let Some(b) = mp.cont() {
        copy_bytes(&mut ids, b.rd());
    }
    drop(mp);
    let n = fd.0.to_ne_bytes();
    let mut rec = [0u8; 20];
    copy_bytes(&mut rec, &n);
    if let Some(r) = rec.get_mut(4..12) {
        copy_bytes(r, &ids);
    }
    // The probe above succeeded; if the buffer went away since, the file is closed again
    // (dropping `file` and `fd`) and the caller learns EFAULT.
    out.write_at(0, &rec)?;
    Ok(fd.install(file))
}

/// `I_FIFO_PIPE` (an rstreams extension): create a STREAMS pipe whose two ends are FIFO-typed
/// files (fstat: S_ISFIFO, as POSIX says of pipe(2)) and install them as new descriptors.
/// `arg` points to `struct { int fds[2]; int flags; }`; `flags` may hold O_CLOEXEC and
/// O_NONBLOCK (else EINVAL). Errors: EFAULT, EINVAL, EMFILE, ENFILE, ENOSR.
pub(crate) fn fifo_pipe(f: &StrFile, call: &CallFile<'_, StrFile>, arg: usize) -> Result<i32, Errno> {
    let req = UserBuf::new(arg, 12);
    let b = req.read_array::<12>(0)?;
    let mut fl = [0u8; 4];
    if let Some(src) = b.get(8..12) {
        copy_bytes(&mut fl, src);
    }
    let flags = u32::from_ne_bytes(fl);
    let (cloexec, nonblock) = (O_CLOEXEC, crate::chardev::O_NONBLOCK);
    if flags & !(cloexec | nonblock) != 0 {
        return Err(Errno::EINVAL);
    }
    let fd0 = UnusedFd::reserve(flags & cloexec)?;
    let fd1 = UnusedFd::reserve(flags & cloexec)?;
    let (a, z) = crate::weld::new_pipe()?;
    let a = StrFile::new(a, false, f.registry.clone(), None)?;
    let z = StrFile::new(z, false, f.registry.clone(), None)?;
    let nb = flags & nonblock != 0;
    let fa = call.new_fifo_file(a, nb)?;
    let fz = call.new_fifo_file(z, nb)?;
    let (n0, n1) = (fd0.0.to_ne_bytes(), fd1.0.to_ne_bytes());
    let fds = [n0[0], n0[1], n0[2], n0[3], n1[0], n1[1], n1[2], n1[3]];
    // On EFAULT everything is undone: the files close (their Streams with them) and the
    // descriptors are given back.
    req.write_at(0, &fds)?;
    fd0.install(fa);
    fd1.install(fz);
    Ok(0)
}
