//! The few raw system calls strstress needs beyond `streams::Stream`: descriptors by number,
//! ioctls with pointer arguments, signals to threads, fork, privilege drop, and memory shared
//! between processes. Each wrapper returns `io::Result` (the errno on failure).

use std::ffi::CString;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// The errno of an `io::Error` (0 if it has none).
pub(crate) fn errno(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(0)
}

/// open(2) `path` with `flags` (`O_CLOEXEC` added).
pub(crate) fn open(path: &str, flags: i32) -> io::Result<OwnedFd> {
    let c = CString::new(path).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `c` is a NUL-terminated string alive across the call.
    let fd = cvt(unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) })?;
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// ioctl(2) with a pointer argument.
///
/// # Safety
/// `arg` must be valid for what `cmd` reads and writes.
pub(crate) unsafe fn ioctl_ptr(fd: RawFd, cmd: i32, arg: *mut libc::c_void) -> io::Result<i32> {
    // SAFETY: the caller's contract.
    cvt(unsafe { libc::ioctl(fd, cmd as libc::c_ulong, arg) })
}

/// ioctl(2) with an int argument passed by value.
pub(crate) fn ioctl_int(fd: RawFd, cmd: i32, arg: i32) -> io::Result<i32> {
    // SAFETY: the commands strstress passes this way take an int by value, not a pointer.
    cvt(unsafe { libc::ioctl(fd, cmd as libc::c_ulong, arg as libc::c_long) })
}

/// fcntl(F_SETFL): set or clear O_NONBLOCK.
pub(crate) fn set_nonblock(fd: RawFd, on: bool) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor number; a closed one gives EBADF.
    let fl = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    let fl = if on {
        fl | libc::O_NONBLOCK
    } else {
        fl & !libc::O_NONBLOCK
    };
    // SAFETY: as above.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, fl) }).map(drop)
}

/// dup(2) with close-on-exec.
pub(crate) fn dup(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: fcntl on a descriptor number.
    let n = cvt(unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) })?;
    // SAFETY: `n` is a new descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(n) })
}

/// The calling thread's id.
pub(crate) fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// tgkill(2): signal one thread of process `pid`.
pub(crate) fn tgkill(pid: i32, tid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: a plain system call on numbers.
    cvt(unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, sig) } as libc::c_int).map(drop)
}

/// kill(2).
pub(crate) fn kill(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: a plain system call on numbers.
    cvt(unsafe { libc::kill(pid, sig) }).map(drop)
}

extern "C" fn on_signal(_: libc::c_int) {}

extern "C" fn on_sigpoll(_: libc::c_int) {
    SIGPOLLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// SIGPOLLs this process received (I_SETSIG).
pub(crate) static SIGPOLLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn handle(sig: i32, f: extern "C" fn(libc::c_int)) -> io::Result<()> {
    // SAFETY: `sa` is zeroed then filled; the handlers only touch an atomic (async-signal-safe).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = f as usize;
        // No SA_RESTART: a signal interrupts a sleeping system call with EINTR.
        sa.sa_flags = 0;
        libc::sigemptyset(&mut sa.sa_mask);
        cvt(libc::sigaction(sig, &sa, std::ptr::null_mut())).map(drop)
    }
}

/// The worker's signal dispositions: SIGUSR1 (the watchdog's and the `signal` operation's
/// interrupt) and SIGUSR2 caught without SA_RESTART, SIGPOLL counted, SIGPIPE ignored.
pub(crate) fn worker_signals() -> io::Result<()> {
    handle(libc::SIGUSR1, on_signal)?;
    handle(libc::SIGUSR2, on_signal)?;
    handle(libc::SIGPOLL, on_sigpoll)?;
    // SAFETY: setting a disposition to SIG_IGN.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    Ok(())
}

/// Drop to uid/gid 65534 (nobody), with no supplementary groups.
pub(crate) fn drop_privileges() -> io::Result<()> {
    // SAFETY: plain system calls on numbers.
    unsafe {
        cvt(libc::setgroups(0, std::ptr::null()))?;
        cvt(libc::setgid(65534))?;
        cvt(libc::setuid(65534))?;
    }
    Ok(())
}

/// Orphaned descendants (children of killed workers) become this process's children, so that
/// it reaps them.
pub(crate) fn become_subreaper() -> io::Result<()> {
    // SAFETY: prctl with integer arguments.
    cvt(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }).map(drop)
}

/// A child's end: `Exited(status)` or `Signaled(signal)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    Exited(i32),
    Signaled(i32),
}

/// waitpid(2) for `pid` (-1: any child), WNOHANG if `nohang`: `None` if nothing ended.
pub(crate) fn wait(pid: i32, nohang: bool) -> io::Result<Option<(i32, Exit)>> {
    let mut st = 0;
    let fl = if nohang { libc::WNOHANG } else { 0 };
    // SAFETY: `st` is a live int.
    let r = cvt(unsafe { libc::waitpid(pid, &mut st, fl) })?;
    if r == 0 {
        return Ok(None);
    }
    let how = if libc::WIFSIGNALED(st) {
        Exit::Signaled(libc::WTERMSIG(st))
    } else {
        Exit::Exited(libc::WEXITSTATUS(st))
    };
    Ok(Some((r, how)))
}

/// Memory shared with every process forked after this call (MAP_SHARED | MAP_ANONYMOUS),
/// holding one zero-initialised `T`, which must be valid when all zero (atomics).
pub(crate) fn shared<T: Sync>() -> io::Result<&'static T> {
    let len = std::mem::size_of::<T>();
    // SAFETY: an anonymous mapping of `len` bytes; on success it is page-aligned (enough for
    // any `T` here), zero-filled, and never unmapped, so `&'static` is sound; `T` is all
    // atomics, valid when zeroed and shared across processes through atomic operations only.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(&*(p as *const T))
    }
}

/// The name of an errno value ("EAGAIN"), for reports.
pub(crate) fn errno_name(e: i32) -> String {
    let names = [
        (libc::EPERM, "EPERM"),
        (libc::ENOENT, "ENOENT"),
        (libc::EINTR, "EINTR"),
        (libc::EIO, "EIO"),
        (libc::ENXIO, "ENXIO"),
        (libc::EBADF, "EBADF"),
        (libc::EAGAIN, "EAGAIN"),
        (libc::ENOMEM, "ENOMEM"),
        (libc::EACCES, "EACCES"),
        (libc::EFAULT, "EFAULT"),
        (libc::EBUSY, "EBUSY"),
        (libc::EEXIST, "EEXIST"),
        (libc::ENODEV, "ENODEV"),
        (libc::EINVAL, "EINVAL"),
        (libc::ENFILE, "ENFILE"),
        (libc::EMFILE, "EMFILE"),
        (libc::ENOTTY, "ENOTTY"),
        (libc::EPIPE, "EPIPE"),
        (libc::ERANGE, "ERANGE"),
        (libc::ENOSTR, "ENOSTR"),
        (libc::ENODATA, "ENODATA"),
        (libc::ETIME, "ETIME"),
        (libc::ENOSR, "ENOSR"),
        (libc::EBADMSG, "EBADMSG"),
        (libc::ELOOP, "ELOOP"),
        (libc::EOPNOTSUPP, "EOPNOTSUPP"),
        (libc::ENOLINK, "ENOLINK"),
        (libc::EPROTO, "EPROTO"),
        (libc::ENOSPC, "ENOSPC"),
        (libc::ETIMEDOUT, "ETIMEDOUT"),
        (libc::ETOOMANYREFS, "ETOOMANYREFS"),
        (libc::EXDEV, "EXDEV"),
        (libc::ENOTDIR, "ENOTDIR"),
        (libc::EISDIR, "EISDIR"),
        (libc::EADDRINUSE, "EADDRINUSE"),
        (libc::EOVERFLOW, "EOVERFLOW"),
        (libc::ECHILD, "ECHILD"),
        (libc::ESRCH, "ESRCH"),
    ];
    names
        .iter()
        .find(|(n, _)| *n == e)
        .map(|(_, s)| s.to_string())
        .unwrap_or_else(|| format!("errno {e}"))
}
