//! Helpers shared by the cases: the two pipe implementations behind one constructor, thin
//! system-call wrappers on raw descriptors that report errno, fork/wait, and patterns.

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};

use streams::Stream;

/// A case's outcome: `Err(why)` fails it.
pub(crate) type R = Result<(), String>;

/// Fail the case with a formatted reason unless the condition holds.
#[macro_export]
macro_rules! ensure {
    ($c:expr, $($fmt:tt)+) => {
        if !$c {
            return Err(format!($($fmt)+));
        }
    };
}

/// `PIPE_BUF` (POSIX: at least 512; Linux and SVR4: 4096). Writes of at most this many bytes
/// must not be interleaved with other writers' data.
pub(crate) const PIPE_BUF: usize = libc::PIPE_BUF;

/// Which pipe a case runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Impl {
    /// pipe2(2): Linux's own pipe.
    Linux,
    /// libstreams `s_pipe` (two opens of `/dev/streams/clone/pipe` welded by I_PIPE).
    Streams,
}

impl Impl {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Impl::Linux => "linux",
            Impl::Streams => "streams",
        }
    }

    /// A new pipe: `r` is the end the cases read, `w` the end they write. (A STREAMS pipe is
    /// full duplex; the POSIX cases only use it one way.)
    pub(crate) fn make(self) -> Result<Pipe, String> {
        match self {
            Impl::Linux => {
                let mut fds = [0i32; 2];
                // SAFETY: `fds` has room for the two descriptors pipe2 stores.
                let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
                if r != 0 {
                    return Err(format!("pipe2: {}", io::Error::last_os_error()));
                }
                // SAFETY: both were just created and are owned by nobody else.
                let (r, w) =
                    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
                Ok(Pipe { r, w })
            }
            Impl::Streams => {
                let (a, b) = e(Stream::pipe(), "s_pipe (/dev/streams/clone/pipe + I_PIPE)")?;
                Ok(Pipe {
                    r: a.into_fd(),
                    w: b.into_fd(),
                })
            }
        }
    }
}

/// Both ends of a pipe.
pub(crate) struct Pipe {
    pub(crate) r: OwnedFd,
    pub(crate) w: OwnedFd,
}

/// Map an io error to the case's failure text.
pub(crate) fn e<T>(r: io::Result<T>, what: &str) -> Result<T, String> {
    r.map_err(|err| format!("{what}: {err}"))
}

/// The errno of a call that must fail.
pub(crate) fn errno_of<T: std::fmt::Debug>(r: io::Result<T>, what: &str) -> Result<i32, String> {
    match r {
        Ok(v) => Err(format!("{what}: succeeded ({v:?}), expected an error")),
        Err(err) => Ok(err.raw_os_error().unwrap_or(0)),
    }
}

fn cvt(r: isize) -> io::Result<usize> {
    usize::try_from(r).map_err(|_| io::Error::last_os_error())
}

/// write(2) on a raw descriptor.
pub(crate) fn write(fd: &impl AsFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is a live slice of `buf.len()` bytes.
    cvt(unsafe { libc::write(fd.as_fd().as_raw_fd(), buf.as_ptr().cast(), buf.len()) })
}

/// read(2) on a raw descriptor.
pub(crate) fn read(fd: &impl AsFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is a live, exclusively borrowed slice of `buf.len()` bytes.
    cvt(unsafe { libc::read(fd.as_fd().as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) })
}

/// Write all of `buf` (several writes if the pipe takes less).
pub(crate) fn write_all(fd: &impl AsFd, mut buf: &[u8]) -> Result<(), String> {
    while !buf.is_empty() {
        let n = e(write(fd, buf), "write")?;
        ensure!(n > 0, "write returned 0");
        buf = &buf[n..];
    }
    Ok(())
}

/// Read exactly `n` bytes.
pub(crate) fn read_n(fd: &impl AsFd, n: usize) -> Result<Vec<u8>, String> {
    let mut out = vec![0u8; n];
    let mut got = 0;
    while got < n {
        let k = e(read(fd, &mut out[got..]), "read")?;
        ensure!(k > 0, "read returned 0 (EOF) after {got} of {n} bytes");
        got += k;
    }
    Ok(out)
}

/// Read until end of file.
pub(crate) fn read_to_eof(fd: &impl AsFd, limit: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 65536];
    loop {
        let k = e(read(fd, &mut buf), "read")?;
        if k == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..k]);
        ensure!(out.len() <= limit, "more than {limit} bytes before EOF");
    }
}

/// poll(2) on one descriptor; returns revents.
pub(crate) fn poll1(fd: &impl AsFd, events: i16, timeout_ms: i32) -> Result<i16, String> {
    let mut p = libc::pollfd {
        fd: fd.as_fd().as_raw_fd(),
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    ensure!(r >= 0, "poll: {}", io::Error::last_os_error());
    Ok(p.revents)
}

/// Set or clear O_NONBLOCK.
pub(crate) fn set_nonblock(fd: &impl AsFd, on: bool) -> R {
    // SAFETY: fcntl on an open descriptor.
    let fl = unsafe { libc::fcntl(fd.as_fd().as_raw_fd(), libc::F_GETFL) };
    ensure!(fl >= 0, "F_GETFL: {}", io::Error::last_os_error());
    let fl = if on {
        fl | libc::O_NONBLOCK
    } else {
        fl & !libc::O_NONBLOCK
    };
    // SAFETY: as above.
    let r = unsafe { libc::fcntl(fd.as_fd().as_raw_fd(), libc::F_SETFL, fl) };
    ensure!(r == 0, "F_SETFL: {}", io::Error::last_os_error());
    Ok(())
}

/// An ioctl writing an int at its argument; returns (return value, the int).
pub(crate) fn ioctl_get_int(fd: &impl AsFd, cmd: u64) -> io::Result<(i32, i32)> {
    let mut v: libc::c_int = 0;
    // SAFETY: `v` is a live int the command may write.
    let r = unsafe {
        libc::ioctl(
            fd.as_fd().as_raw_fd(),
            cmd as libc::c_ulong,
            &mut v as *mut libc::c_int,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok((r, v))
    }
}

/// Write until the pipe refuses with EAGAIN (the descriptor must be non-blocking); returns
/// the bytes written.
pub(crate) fn fill(fd: &impl AsFd, chunk: &[u8], limit: usize) -> Result<usize, String> {
    let mut total = 0usize;
    loop {
        match write(fd, chunk) {
            Ok(n) => total += n,
            Err(err) if err.raw_os_error() == Some(libc::EAGAIN) => return Ok(total),
            Err(err) => return Err(format!("write while filling: {err}")),
        }
        ensure!(total <= limit, "no EAGAIN after {total} bytes");
    }
}

/// Fork; the child runs `f` and `_exit`s with its result. The child must only make system
/// calls (the test may have other threads).
pub(crate) fn fork_child(f: impl FnOnce() -> i32) -> Result<libc::pid_t, String> {
    // SAFETY: the child only runs `f` (system calls on prepared buffers) and `_exit`s.
    let pid = unsafe { libc::fork() };
    ensure!(pid >= 0, "fork: {}", io::Error::last_os_error());
    if pid == 0 {
        let code = f();
        // SAFETY: leave the child without running the parent's destructors or atexit handlers.
        unsafe { libc::_exit(code) };
    }
    Ok(pid)
}

/// waitpid(2): the raw status.
pub(crate) fn wait(pid: libc::pid_t) -> Result<i32, String> {
    let mut st = 0;
    // SAFETY: `st` is a live int.
    let r = unsafe { libc::waitpid(pid, &mut st, 0) };
    ensure!(r == pid, "waitpid: {}", io::Error::last_os_error());
    Ok(st)
}

/// A describable wait status.
pub(crate) fn status_text(st: i32) -> String {
    if libc::WIFEXITED(st) {
        format!("exit {}", libc::WEXITSTATUS(st))
    } else if libc::WIFSIGNALED(st) {
        format!("signal {}", libc::WTERMSIG(st))
    } else {
        format!("status {st:#x}")
    }
}

/// A deterministic byte stream (xorshift), the same for writer and reader.
pub(crate) fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(n);
    out
}

/// FNV-1a 64 over `data`, continuing from `h` (start with [`FNV_START`]).
pub(crate) fn fnv(mut h: u64, data: &[u8]) -> u64 {
    for &b in data {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

/// FNV-1a 64 offset basis.
pub(crate) const FNV_START: u64 = 0xcbf2_9ce4_8422_2325;

/// The raw descriptor, for messages.
pub(crate) fn raw(fd: &impl AsFd) -> RawFd {
    fd.as_fd().as_raw_fd()
}
