// SPDX-License-Identifier: GPL-2.0
//! I_SENDFD and I_RECVFD: an open file travels across a STREAMS pipe inside an M_PASSFP
//! message (the Stream head side is `sth/fdpass.rs`).
//!
//! [`FileRef`] owns one reference to a `struct file` and [`UnusedFd`] one reserved descriptor
//! number; they are the only safe handles this file gives out, and each releases what it owns
//! when dropped. I_SENDFD turns a `FileRef` into an [`InFlight`] item (the file, a charge
//! against the sender's per-user limit and a count in the pipe it was sent into) owned by an
//! esballoc'd M_PASSFP block whose free routine is [`passfp_free`], so whatever happens to the
//! message (received, flushed, freed at close) the item is dropped exactly once. The sender's
//! credentials, as kernel ids, follow in an 8-byte continuation block.
//!
//! **No cycles** (`docs/security.md`). A passed file is held by the Stream whose queue the
//! message is in, and a Stream's queues are freed only when its last file goes; so a Stream
//! whose own file is in flight in itself (`ioctl(p0, I_SENDFD, p1); close(p0); close(p1)`),
//! or in a chain of Streams that leads back to it, would never be freed, with `streams.ko`
//! pinned forever. AF_UNIX collects such cycles; rstreams refuses to make them (EINVAL):
//! - a STREAMS file of the pipe it would be sent into (either end);
//! - a STREAMS file of a pipe that has files in flight itself (counted per pipe,
//!   [`PipePass`]: a message may sit in either end's queues on its way), or of a multiplexor's
//!   upper Stream (a linked pipe end hands its messages up to one);
//! - a file that can itself hold open files the kernel cannot see through: an AF_UNIX socket
//!   (SCM_RIGHTS) or an io_uring instance.
//!
//! Every edge "Stream A holds a file of Stream B" is then made while B holds nothing, and the
//! edge that would close a cycle starts at a Stream that holds something: refused. Two sends
//! racing to close a cycle both count their message in the destination pipe *before* they
//! look at the other pipe's count, so at least one of them sees the other's (sequentially
//! consistent atomics).
//!
//! **Per-user limit**: files in flight are charged to the sender's real uid, at most its
//! RLIMIT_NOFILE, as AF_UNIX (ETOOMANYREFS; CAP_SYS_RESOURCE/CAP_SYS_ADMIN are exempt).
//!
//! I_RECVFD takes the message, maps the sender's ids into the *receiver's* user namespace
//! and installs the file with the kernel's `receive_fd` (the LSM's `security_file_receive`
//! check, the socket cgroup update): it returns 0 (SVR4) with the descriptor in `strrecvfd`.

use core::ffi::c_void;
use core::sync::atomic::{AtomicUsize, Ordering};

use kernel::bindings::O_CLOEXEC;
use kernel::ffi::{c_int, c_uint};
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::chardev::CallFile;
use crate::errno::Errno;
use crate::msg::{esballoc, Bpri, ExtBuf, Msg, M_DATA, M_PASSFP};
use crate::strfile::StrFile;
use crate::strperim::{Caller, StrPerim};
use crate::sys::copy_bytes;
use crate::uio::UserBuf;

extern "C" {
    fn rstreams_fget(fd: c_uint) -> *mut c_void;
    fn rstreams_fput(file: *mut c_void);
    fn rstreams_fd_reserve(flags: c_uint) -> c_int;
    fn rstreams_fd_unreserve(fd: c_int);
    fn rstreams_fd_install(fd: c_int, file: *mut c_void);
    fn rstreams_receive_fd(file: *mut c_void, ufd: *mut c_int, flags: c_uint) -> c_int;
    fn rstreams_file_carries_files(file: *mut c_void) -> bool;
    fn rstreams_current_kids(kuid: *mut c_uint, kgid: *mut c_uint);
    fn rstreams_map_kids(kuid: c_uint, kgid: c_uint, uid: *mut c_uint, gid: *mut c_uint);
    fn rstreams_inflight_charge(kuid: *mut c_uint) -> c_int;
    fn rstreams_inflight_uncharge(kuid: c_uint);
}

/// One counted reference to an open file.
///
/// # Invariants
/// `0` is a `struct file *` on which this value owns one reference.
pub(crate) struct FileRef(*mut c_void);

// SAFETY: a file reference may be used and dropped (`fput`) on any thread.
unsafe impl Send for FileRef {}
// SAFETY: `&FileRef` only reads the file's immutable identity (`f_op`, `private_data`, its
// socket or anon inode), which is safe from any thread.
unsafe impl Sync for FileRef {}

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
    fn into_raw(self) -> *mut c_void {
        let p = self.0;
        core::mem::forget(self);
        p
    }

    /// The STREAMS file this is, if it is one of this module's.
    fn stream(&self) -> Option<Arc<StrFile>> {
        // SAFETY: we hold a reference to the file (type invariant) for the call.
        unsafe { crate::chardev::file_object::<StrFile>(self.0.cast()) }
    }

    /// Whether the file can hold open files itself (an AF_UNIX socket, an io_uring).
    fn carries_files(&self) -> bool {
        // SAFETY: we hold a reference to the file (type invariant) for the call.
        unsafe { rstreams_file_carries_files(self.0) }
    }

    /// Install a new descriptor for the file in the calling process (`receive_fd`: the LSM
    /// check, then the lowest free descriptor, whose number is written to the user's `int`
    /// at `ufd` first). The new descriptor takes a reference of its own.
    fn receive(&self, ufd: usize) -> Result<i32, Errno> {
        // SAFETY: we hold a reference to the file (type invariant); receive_fd takes its own
        // for the descriptor; `ufd` is a user address, written with put_user (EFAULT).
        let r = unsafe { rstreams_receive_fd(self.0, ufd as *mut c_int, 0) };
        if r < 0 {
            Err(Errno(-r))
        } else {
            Ok(r)
        }
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
        unsafe { rstreams_fd_install(fd, file.into_raw()) };
        fd
    }
}

impl Drop for UnusedFd {
    fn drop(&mut self) {
        // SAFETY: reserved and not installed (type invariant); released once.
        unsafe { rstreams_fd_unreserve(self.0) }
    }
}

/// The effective uid and gid of a sender as kernel ids (the same in every user namespace).
/// They travel in the M_PASSFP message's continuation block (8 bytes), which is also what
/// the message counts in the receiving queue, as in SVR4 where M_PASSFP carries a
/// `struct strrecvfd`.
#[derive(Clone, Copy)]
struct KernelIds {
    kuid: u32,
    kgid: u32,
}

impl KernelIds {
    /// As the 8 bytes of the continuation block.
    fn to_bytes(self) -> [u8; 8] {
        let (u, g) = (self.kuid.to_ne_bytes(), self.kgid.to_ne_bytes());
        [u[0], u[1], u[2], u[3], g[0], g[1], g[2], g[3]]
    }

    /// From the continuation block (zeros if it is short: never, `passfp_msg` wrote it).
    fn from_bytes(b: &[u8]) -> KernelIds {
        let mut ids = [0u8; 8];
        copy_bytes(&mut ids, b);
        let word = |i: usize| {
            let mut w = [0u8; 4];
            if let Some(s) = ids.get(i..i + 4) {
                copy_bytes(&mut w, s);
            }
            u32::from_ne_bytes(w)
        };
        KernelIds {
            kuid: word(0),
            kgid: word(4),
        }
    }

    /// The calling process's.
    fn current() -> KernelIds {
        let (mut kuid, mut kgid) = (0, 0);
        // SAFETY: two valid out-pointers; reads the caller's credentials.
        unsafe { rstreams_current_kids(&mut kuid, &mut kgid) };
        KernelIds { kuid, kgid }
    }

    /// As the calling process's user namespace sees them (the overflow ids, 65534 by
    /// default, for ids it does not map).
    fn mapped(self) -> (u32, u32) {
        let (mut uid, mut gid) = (0, 0);
        // SAFETY: two valid out-pointers; maps through the caller's user namespace.
        unsafe { rstreams_map_kids(self.kuid, self.kgid, &mut uid, &mut gid) };
        (uid, gid)
    }
}

/// One file in flight charged to a user (`strsec.c`'s per-user table).
///
/// # Invariants
/// One charge was taken for kernel uid `0` and not yet given back.
struct Charge(c_uint);

impl Charge {
    /// Charge the caller's real uid: ETOOMANYREFS at its RLIMIT_NOFILE (unless
    /// CAP_SYS_RESOURCE or CAP_SYS_ADMIN), ENOSR without memory.
    fn new() -> Result<Charge, Errno> {
        let mut kuid = 0;
        // SAFETY: a valid out-pointer; process context (the caller's system call).
        let r = unsafe { rstreams_inflight_charge(&mut kuid) };
        match r {
            0 => Ok(Charge(kuid)),
            r if -r == Errno::ENOMEM.0 => Err(Errno::ENOSR),
            r => Err(Errno(-r)),
        }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        // SAFETY: one charge for this uid is outstanding (type invariant), given back once;
        // the shim's uncharge may run in any context.
        unsafe { rstreams_inflight_uncharge(self.0) }
    }
}

/// The files in flight in one STREAMS pipe (both ends share it; set when the ends are
/// connected, `weld.rs`): the cycle check's count.
pub(crate) struct PipePass {
    inflight: AtomicUsize,
}

impl PipePass {
    /// A pipe with nothing in flight (ENOSR without memory).
    pub(crate) fn new() -> Result<Arc<PipePass>, Errno> {
        let p = PipePass {
            inflight: AtomicUsize::new(0),
        };
        Arc::new(p, GFP_KERNEL).map_err(|_| Errno::ENOSR)
    }

    /// Whether files are in flight in this pipe.
    fn busy(&self) -> bool {
        self.inflight.load(Ordering::SeqCst) != 0
    }
}

/// One message counted in a pipe's [`PipePass`]; dropping it takes the count back.
struct Counted(Arc<PipePass>);

impl Counted {
    fn new(p: Arc<PipePass>) -> Counted {
        p.inflight.fetch_add(1, Ordering::SeqCst);
        Counted(p)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.inflight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What an M_PASSFP block owns: the file and what keeps count of it.
struct InFlight {
    file: FileRef,
    _charge: Charge,
    _count: Counted,
}

/// Free routine of M_PASSFP blocks: drop the item the block owns (the file reference, the
/// charge and the pipe's count).
fn passfp_free(_buf: &'static mut [u8], arg: usize) {
    // SAFETY: only `passfp_msg` builds blocks with this free routine, with `arg` from
    // `KBox::into_raw` of an `InFlight`; the routine runs once per block (esballoc contract).
    drop(unsafe { KBox::from_raw(arg as *mut InFlight) });
}

/// Whether `file` may be sent into the pipe `into` without making a cycle (see the module
/// docs); EINVAL if not.
fn may_pass(file: &FileRef, into: &Arc<PipePass>) -> Result<(), Errno> {
    if file.carries_files() {
        return Err(Errno::EINVAL);
    }
    let Some(them) = file.stream() else {
        return Ok(());
    };
    let p = them.perim();
    if let Some(theirs) = p.pipe() {
        if Arc::ptr_eq(&theirs, into) || theirs.busy() {
            return Err(Errno::EINVAL);
        }
    }
    // Their Stream's lock, taken and dropped with no other held.
    if p.op(Caller::Nobody, |s| s.is_mux_upper()) {
        return Err(Errno::EINVAL);
    }
    Ok(())
}

/// I_SENDFD `fd`: pass the file open as `fd` to the other end of the pipe.
pub(crate) fn sendfd(f: &StrFile, fd: i32) -> Result<i32, Errno> {
    let mut mp = Some(passfp_msg(FileRef::fget(fd)?, f.perim())?);
    f.run(
        true,
        |s| match mp.take() {
            Some(m) => s.strsendfd(m).map(|()| 0),
            None => Err(Errno::EAGAIN.into()),
        },
        |_| {},
    )
}

/// An M_PASSFP message carrying `file` into the pipe end `into`, with the calling process's
/// effective ids (what I_RECVFD reports), charged to its real uid: I_SENDFD, and connld's open
/// (`connld.rs`). Freeing the message, whatever becomes of it, releases all that. EINVAL when
/// `into` is not a connected pipe end or the file may not be passed (a cycle: module docs),
/// ETOOMANYREFS over the user's limit, ENOSR without memory (the file is released).
pub(crate) fn passfp_msg(file: FileRef, into: &StrPerim) -> Result<Msg, Errno> {
    let pipe = into.pipe().ok_or(Errno::EINVAL)?;
    let charge = Charge::new()?;
    // Counted before the check: a racing send the other way sees this one (module docs).
    let count = Counted::new(pipe.clone());
    may_pass(&file, &pipe)?;
    let item = InFlight {
        file,
        _charge: charge,
        _count: count,
    };
    let item = KBox::new(item, GFP_KERNEL).map_err(|_| Errno::ENOSR)?;
    let ext = ExtBuf {
        buf: &mut [],
        free: passfp_free,
        arg: KBox::into_raw(item) as usize,
    };
    let mut mp = match esballoc(ext, Bpri::Hi) {
        Ok(m) => m,
        Err(ext) => {
            // SAFETY: esballoc handed the buffer back unused: the item is still ours.
            drop(unsafe { KBox::from_raw(ext.arg as *mut InFlight) });
            return Err(Errno::ENOSR);
        }
    };
    mp.set_type(M_PASSFP);
    // The sender's ids travel with the file (mapped for the receiver at I_RECVFD).
    let mut ids = Msg::with_type(M_DATA, 8).map_err(|_| Errno::ENOSR)?;
    let n = ids
        .spare_mut()
        .map_or(0, |b| copy_bytes(b, &KernelIds::current().to_bytes()));
    ids.adj_wptr(n);
    mp.linkb(ids);
    Ok(mp)
}

/// I_RECVFD: receive a passed file as a new descriptor, filling `struct strrecvfd { int fd;
/// uid_t uid; gid_t gid; char fill[8]; }` at `arg`; 0 on success (SVR4).
pub(crate) fn recvfd(f: &StrFile, arg: usize, nonblock: bool) -> Result<i32, Errno> {
    let out = UserBuf::new(arg, 20);
    // Fail on a bad buffer before a file is taken off the Stream.
    out.write_at(0, &[0u8; 20])?;
    // And on a full descriptor table (EMFILE): the reservation is given back at once, since
    // `receive_fd` makes its own. A thread of this process that fills the table in between
    // makes the install fail: the file is then closed and the error returned, as for
    // SCM_RIGHTS.
    drop(UnusedFd::reserve(0)?);
    let tok = &f.perim().shared().reader;
    let mp = f.run(nonblock, |s| s.strrecvfd(nonblock, tok), |_| {})?;
    let addr = mp.ext_arg().ok_or(Errno::EBADMSG)?;
    // SAFETY: `mp` is an M_PASSFP block built by `passfp_msg` (the only producer of M_PASSFP
    // with an external buffer; user space cannot make one), so `addr` is its `InFlight`,
    // alive while `mp` is.
    let item = unsafe { &*(addr as *const InFlight) };
    let (uid, gid) = KernelIds::from_bytes(mp.cont().map_or(&[][..], |b| b.rd())).mapped();
    let (u, g) = (uid.to_ne_bytes(), gid.to_ne_bytes());
    let ids = [u[0], u[1], u[2], u[3], g[0], g[1], g[2], g[3]];
    // The probe above succeeded; if the buffer went away since, the file is closed (dropping
    // the message) and the caller learns EFAULT.
    out.write_at(4, &ids)?;
    item.file.receive(arg)?;
    drop(mp);
    Ok(0)
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
    // Each step that fails closes what it was given: an end not yet a file closes when its
    // `Unfiled` drops, an end that is a file when its `FileRef` does.
    let (a, z) = crate::weld::new_pipe_files(&f.registry)?;
    let nb = flags & nonblock != 0;
    let fa = a.into_fifo_file(call, nb)?;
    let fz = z.into_fifo_file(call, nb)?;
    let (n0, n1) = (fd0.0.to_ne_bytes(), fd1.0.to_ne_bytes());
    let fds = [n0[0], n0[1], n0[2], n0[3], n1[0], n1[1], n1[2], n1[3]];
    // On EFAULT everything is undone: the files close (their Streams with them) and the
    // descriptors are given back.
    req.write_at(0, &fds)?;
    fd0.install(fa);
    fd1.install(fz);
    Ok(0)
}
