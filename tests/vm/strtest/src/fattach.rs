//! fattach(3)/fdetach(3) cases: a STREAMS pipe end and a Stream over the echo driver named by
//! a file in /tmp. Opening the path reaches the attached Stream head (the same Stream, not a
//! new one), from this process and from a child; fdetach gives the plain file back; the
//! attachment holds the head (and `streams.ko`) until it is detached and the last file closes.
//!
//! Every case detaches what it attached, even when it fails ([`Attached`]): a mount left
//! behind would keep `streams.ko` from unloading at the end of the run.

use std::ffi::CString;
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use streams::ffi::isastream;
use streams::{fdetach, Stream, I_LOOK};

use crate::{e, errno_of, set_nonblock, R};

/// A file in /tmp, removed on drop.
pub(crate) struct TmpFile(pub(crate) PathBuf);

impl TmpFile {
    pub(crate) fn new(name: &str, mode: u32, content: &[u8]) -> Result<TmpFile, String> {
        use std::os::unix::fs::PermissionsExt;
        let p = PathBuf::from(format!("/tmp/strtest-{name}"));
        let _ = std::fs::remove_file(&p);
        e(std::fs::write(&p, content), "create file")?;
        e(
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)),
            "chmod",
        )?;
        Ok(TmpFile(p))
    }
}

impl Drop for TmpFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// An attachment, detached on drop if the case did not.
pub(crate) struct Attached<'a>(pub(crate) &'a Path);

impl Drop for Attached<'_> {
    fn drop(&mut self) {
        let _ = fdetach(self.0);
    }
}

pub(crate) fn cpath(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_bytes()).map_err(|x| x.to_string())
}

pub(crate) fn open_path(p: &Path, flags: i32) -> io::Result<Stream> {
    let c = CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::other("nul"))?;
    // SAFETY: `c` is a NUL-terminated string alive across the call.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(Stream::from_fd(unsafe { OwnedFd::from_raw_fd(fd) }))
}

fn stat_path(p: &Path) -> Result<libc::stat, String> {
    let c = cpath(p)?;
    // SAFETY: an all-zero stat is a valid out-buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated, `st` is written by stat.
    let r = unsafe { libc::stat(c.as_ptr(), &mut st) };
    if r != 0 {
        return Err(format!("stat: {}", io::Error::last_os_error()));
    }
    Ok(st)
}

pub(crate) fn fstat(s: &Stream) -> Result<libc::stat, String> {
    // SAFETY: an all-zero stat is a valid out-buffer.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is written by fstat.
    let r = unsafe { libc::fstat(s.raw(), &mut st) };
    if r != 0 {
        return Err(format!("fstat: {}", io::Error::last_os_error()));
    }
    Ok(st)
}

/// Write `msg` on `from` and read it whole at `to`.
pub(crate) fn pass(from: &Stream, to: &Stream, msg: &[u8]) -> R {
    e(from.write(msg), "write")?;
    let mut b = vec![0u8; msg.len() + 16];
    let n = e(to.read(&mut b), "read")?;
    ensure!(&b[..n] == msg, "read {:?}, expected {:?}", &b[..n], msg);
    Ok(())
}

/// A child process opens `p` write-only, writes `msg` and exits 0 (anything else: 1).
fn child_writes(p: &Path, msg: &'static [u8]) -> R {
    let c = cpath(p)?;
    // SAFETY: the child only makes async-signal-safe calls (open, write, _exit).
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: in the child: plain system calls on our own buffers, then _exit.
        unsafe {
            let fd = libc::open(c.as_ptr(), libc::O_WRONLY);
            let ok =
                fd >= 0 && libc::write(fd, msg.as_ptr().cast(), msg.len()) == msg.len() as isize;
            libc::_exit(i32::from(!ok));
        }
    }
    ensure!(pid > 0, "fork: {}", io::Error::last_os_error());
    let mut status = 0;
    // SAFETY: waits for our own child.
    let r = unsafe { libc::waitpid(pid, &mut status, 0) };
    ensure!(r == pid, "waitpid: {}", io::Error::last_os_error());
    ensure!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child open/write through the path failed (status {status:#x})"
    );
    Ok(())
}

pub(crate) fn t_fattach_pipe_end() -> R {
    let f = TmpFile::new("fattach-pipe", 0o640, b"plain")?;
    let p = f.0.as_path();
    let (a, b) = e(Stream::pipe(), "s_pipe")?;
    e(b.fattach(p), "fattach")?;
    let _guard = Attached(p);
    let st = stat_path(p)?;
    ensure!(
        st.st_mode & libc::S_IFMT == libc::S_IFIFO && st.st_mode & 0o7777 == 0o640,
        "stat of the attached path: mode {:o}, expected a FIFO with the file's 0640",
        st.st_mode
    );
    let c = e(open_path(p, libc::O_RDWR), "open attached path")?;
    ensure!(isastream(c.raw()) == 1, "isastream(path fd) != 1");
    let st = fstat(&c)?;
    ensure!(
        st.st_mode & libc::S_IFMT == libc::S_IFIFO,
        "fstat mode {:o}: not S_IFIFO",
        st.st_mode
    );
    // The path is the attached end: both directions.
    pass(&c, &a, b"to the other end")?;
    pass(&a, &c, b"from the other end")?;
    // The attachment holds the end open: closing the attached descriptor hangs nothing up.
    drop(b);
    pass(&a, &c, b"after close")?;
    child_writes(p, b"from a child")?;
    let mut buf = [0u8; 32];
    let n = e(a.read(&mut buf), "read child's data")?;
    ensure!(&buf[..n] == b"from a child", "read {:?}", &buf[..n]);
    let r = errno_of(c.fattach(p), "fattach onto an attached path")?;
    ensure!(
        r == libc::EBUSY,
        "fattach onto an attached path: errno {r}, expected EBUSY"
    );
    e(fdetach(p), "fdetach")?;
    // The plain file again.
    let plain = e(open_path(p, libc::O_RDONLY), "open after fdetach")?;
    ensure!(
        isastream(plain.raw()) == 0,
        "the detached path is still a Stream"
    );
    let n = e(plain.read(&mut buf), "read plain file")?;
    ensure!(&buf[..n] == b"plain", "plain file reads {:?}", &buf[..n]);
    let r = errno_of(fdetach(p), "second fdetach")?;
    ensure!(
        r == libc::EINVAL,
        "second fdetach: errno {r}, expected EINVAL"
    );
    // Files opened through the path still work; the last one's close closes the end.
    pass(&a, &c, b"after fdetach")?;
    drop(c);
    // Non-blocking: if the end were not closed, this must not hang the run.
    set_nonblock(&a, true)?;
    let n = e(a.read(&mut buf), "read at hangup")?;
    ensure!(n == 0, "the other end read {n} bytes, expected end of file");
    Ok(())
}

pub(crate) fn t_fattach_driver_stream() -> R {
    let f = TmpFile::new("fattach-echo", 0o600, b"")?;
    let p = f.0.as_path();
    let s = e(Stream::open("/dev/streams/clone/echo"), "open echo")?;
    e(s.fattach(p), "fattach")?;
    let _guard = Attached(p);
    let st = stat_path(p)?;
    let dev = fstat(&s)?;
    ensure!(
        st.st_mode & libc::S_IFMT == libc::S_IFCHR && st.st_rdev == dev.st_rdev,
        "stat of the attached path: mode {:o} rdev {:#x}, expected S_IFCHR of rdev {:#x}",
        st.st_mode,
        st.st_rdev,
        dev.st_rdev
    );
    let c = e(open_path(p, libc::O_RDWR), "open attached path")?;
    ensure!(isastream(c.raw()) == 1, "isastream(path fd) != 1");
    // One Stream: written through the path, echoed up to the head both files share.
    pass(&c, &s, b"echo through the path")?;
    e(c.push("nullmod"), "I_PUSH through the path")?;
    let mut name = [0u8; 16];
    // SAFETY: I_LOOK writes at most FMNAMESZ + 1 bytes into `name`.
    let r = unsafe { libc::ioctl(s.raw(), I_LOOK as libc::c_ulong, name.as_mut_ptr()) };
    ensure!(
        r == 0 && name.starts_with(b"nullmod\0"),
        "I_LOOK on the original fd: {r} {name:?}"
    );
    e(s.pop(), "I_POP")?;
    drop(s);
    pass(&c, &c, b"after closing the attached fd")?;
    e(fdetach(p), "fdetach")?;
    Ok(())
}

/// delete_module(2) with O_NONBLOCK (what `rmmod` does).
pub(crate) fn delete_module(name: &std::ffi::CStr) -> io::Result<()> {
    // SAFETY: a NUL-terminated name and a flag.
    let r = unsafe { libc::syscall(libc::SYS_delete_module, name.as_ptr(), libc::O_NONBLOCK) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub(crate) fn t_fattach_holds_stream_and_module() -> R {
    let f = TmpFile::new("fattach-hold", 0o600, b"")?;
    let p = f.0.as_path();
    let (a, b) = e(Stream::pipe(), "s_pipe")?;
    e(b.fattach(p), "fattach")?;
    let _guard = Attached(p);
    e(a.write(b"kept"), "write")?;
    // Only the attachment holds the Stream now (the end `a` closed: the attached end is hung
    // up with its data still queued); it must also hold streams.ko.
    drop(a);
    drop(b);
    let r = errno_of(delete_module(c"streams"), "rmmod streams while attached")?;
    ensure!(
        r == libc::EWOULDBLOCK || r == libc::EBUSY,
        "rmmod streams while attached: errno {r}, expected EWOULDBLOCK"
    );
    let c = e(open_path(p, libc::O_RDONLY), "open attached path")?;
    let mut buf = [0u8; 8];
    let n = e(c.read(&mut buf), "read")?;
    ensure!(&buf[..n] == b"kept", "read {:?}", &buf[..n]);
    set_nonblock(&c, true)?;
    let n = e(c.read(&mut buf), "read at hangup")?;
    ensure!(
        n == 0,
        "read {n} bytes after the data, expected end of file"
    );
    e(fdetach(p), "fdetach")?;
    Ok(())
}

pub(crate) fn t_fattach_errors() -> R {
    let f = TmpFile::new("fattach-err", 0o600, b"x")?;
    let p = f.0.as_path();
    let plain = e(std::fs::File::open(p), "open plain file")?;
    let plain = Stream::from_fd(plain.into());
    let r = errno_of(plain.fattach(p), "fattach of a regular file")?;
    ensure!(
        r == libc::EINVAL,
        "fattach of a non-Stream: errno {r}, expected EINVAL"
    );
    let c = cpath(p)?;
    // SAFETY: `c` is NUL-terminated.
    let r = unsafe { streams::ffi::fattach(1000, c.as_ptr()) };
    let err = io::Error::last_os_error().raw_os_error();
    ensure!(
        r == -1 && err == Some(libc::EBADF),
        "fattach(1000): {r} {err:?}, expected EBADF"
    );
    let r = errno_of(fdetach(p), "fdetach of a plain file")?;
    ensure!(
        r == libc::EINVAL,
        "fdetach of a plain file: errno {r}, expected EINVAL"
    );
    let (a, _b) = e(Stream::pipe(), "s_pipe")?;
    let r = errno_of(
        a.fattach("/tmp/strtest-no-such-file"),
        "fattach onto nothing",
    )?;
    ensure!(
        r == libc::ENOENT,
        "fattach onto a missing path: errno {r}, expected ENOENT"
    );
    let r = errno_of(a.fattach("/tmp"), "fattach onto a directory")?;
    ensure!(
        r == libc::ENOTDIR,
        "fattach onto a directory: errno {r}, expected ENOTDIR"
    );
    // An unconnected end of the pipe device (I_PIPE would move it) and a FIFO node file.
    let u = e(Stream::open("/dev/streams/clone/pipe"), "open pipe device")?;
    let r = errno_of(u.fattach(p), "fattach of an unconnected pipe end")?;
    ensure!(
        r == libc::EINVAL,
        "unconnected pipe end: errno {r}, expected EINVAL"
    );
    let fifo = e(Stream::open("/dev/streams/fifo/3"), "open FIFO")?;
    let r = errno_of(fifo.fattach(p), "fattach of a FIFO")?;
    ensure!(
        r == libc::EINVAL,
        "STREAMS FIFO: errno {r}, expected EINVAL"
    );
    // None of these attached anything.
    ensure!(
        isastream(e(open_path(p, libc::O_RDONLY), "open")?.raw()) == 0,
        "path became a Stream"
    );
    Ok(())
}
