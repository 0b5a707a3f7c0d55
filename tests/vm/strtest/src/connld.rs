//! connld(7) cases: a server pushes `connld` on one end of a STREAMS pipe and fattaches it to
//! a file in /tmp; every open of the path (here and from a child) gets a new, private pipe
//! whose other end the server receives with I_RECVFD on its end of the original pipe. Flow
//! control (EAGAIN for O_NONBLOCK, a blocking open waits for the server), hangup (ENXIO),
//! the old behaviour once connld is popped, and connld only on pipes.
//!
//! Nothing here may hang the run: every wait for the server's side is a poll with a time
//! limit, and children are killed if they do not finish in time.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

use streams::ffi::isastream;
use streams::{fdetach, strrecvfd, Stream, I_RECVFD, I_SET_HIWAT, I_SET_LOWAT};

use crate::fattach::{cpath, fstat, open_path, pass, Attached, TmpFile};
use crate::{e, errno_of, ioctl_ptr, poll1, set_nonblock, R};

/// How long the server waits for something that must come.
const LIMIT_MS: i32 = 5000;

/// I_RECVFD on `srv` once a file is there (at most `LIMIT_MS`): the received Stream and
/// what `strrecvfd` said.
fn recv(srv: &Stream) -> Result<(Stream, strrecvfd), String> {
    let ev = poll1(srv, libc::POLLIN, LIMIT_MS)?;
    ensure!(
        ev & libc::POLLIN != 0,
        "no connection arrived at the server in {LIMIT_MS} ms (revents {ev:#x})"
    );
    let mut rec = strrecvfd {
        fd: -1,
        uid: 0,
        gid: 0,
        fill: [0; 8],
    };
    e(
        ioctl_ptr(srv, I_RECVFD, (&mut rec as *mut strrecvfd).cast()),
        "I_RECVFD",
    )?;
    ensure!(rec.fd >= 0, "I_RECVFD gave fd {}", rec.fd);
    // SAFETY: I_RECVFD installed this descriptor for us.
    Ok((
        Stream::from_fd(unsafe { OwnedFd::from_raw_fd(rec.fd) }),
        rec,
    ))
}

/// Read one message from `s` within `LIMIT_MS` and expect `msg`.
fn expect(s: &Stream, msg: &[u8], what: &str) -> R {
    let ev = poll1(s, libc::POLLIN, LIMIT_MS)?;
    ensure!(
        ev & libc::POLLIN != 0,
        "{what}: nothing to read (revents {ev:#x})"
    );
    let mut b = [0u8; 64];
    let n = e(s.read(&mut b), what)?;
    ensure!(
        &b[..n] == msg,
        "{what}: read {:?}, expected {:?}",
        &b[..n],
        msg
    );
    Ok(())
}

/// A child that opens `p` read-write (blocking), writes `msg` and, if `reply` is not empty,
/// reads it back; it exits 0 when all went as expected.
fn spawn_client(p: &Path, msg: &'static [u8], reply: &'static [u8]) -> Result<i32, String> {
    let c = cpath(p)?;
    // SAFETY: the child only makes async-signal-safe calls (open, write, read, _exit).
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let mut buf = [0u8; 64];
        // SAFETY: in the child: plain system calls on our own buffers, then _exit.
        unsafe {
            let fd = libc::open(c.as_ptr(), libc::O_RDWR);
            let mut ok =
                fd >= 0 && libc::write(fd, msg.as_ptr().cast(), msg.len()) == msg.len() as isize;
            if ok && !reply.is_empty() {
                let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
                ok = n == reply.len() as isize && buf[..reply.len()] == *reply;
            }
            libc::_exit(i32::from(!ok));
        }
    }
    ensure!(pid > 0, "fork: {}", io::Error::last_os_error());
    Ok(pid)
}

/// Whether child `pid` has exited (its status), without waiting.
fn exited(pid: i32) -> Result<Option<i32>, String> {
    let mut status = 0;
    // SAFETY: waits (without blocking) for our own child.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    ensure!(r >= 0, "waitpid: {}", io::Error::last_os_error());
    Ok((r == pid).then_some(status))
}

/// Wait at most `LIMIT_MS` for child `pid` to exit 0; kill it if it does not finish.
fn reap(pid: i32, what: &str) -> R {
    let start = Instant::now();
    loop {
        if let Some(status) = exited(pid)? {
            ensure!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "{what}: the child failed (status {status:#x})"
            );
            return Ok(());
        }
        if start.elapsed() > Duration::from_millis(LIMIT_MS as u64) {
            // SAFETY: our own child; then collect it.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
            return Err(format!("{what}: the child did not finish in {LIMIT_MS} ms"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A non-blocking read of `s` must find nothing (EAGAIN).
fn empty(s: &Stream, what: &str) -> R {
    set_nonblock(s, true)?;
    let mut b = [0u8; 64];
    let r = errno_of(s.read(&mut b), what)?;
    ensure!(r == libc::EAGAIN, "{what}: errno {r}, expected EAGAIN");
    set_nonblock(s, false)
}

/// A non-blocking read of `s` must give end of file (its other end is closed).
fn at_eof(s: &Stream, what: &str) -> R {
    set_nonblock(s, true)?;
    let mut b = [0u8; 64];
    let n = e(s.read(&mut b), what)?;
    ensure!(
        n == 0,
        "{what}: read {n} bytes ({:?}), expected end of file",
        &b[..n]
    );
    Ok(())
}

/// A server with connld on `a`, attached to `p`; `b` is where connections arrive.
fn serve(p: &Path) -> Result<(Stream, Stream), String> {
    let (a, b) = e(Stream::pipe(), "s_pipe")?;
    e(a.push("connld"), "I_PUSH connld")?;
    e(a.fattach(p), "fattach")?;
    Ok((a, b))
}

pub(crate) fn t_connld_unique_pipes() -> R {
    let f = TmpFile::new("connld", 0o666, b"")?;
    let p = f.0.as_path();
    let (a, b) = serve(p)?;
    let _guard = Attached(p);
    let c1 = e(open_path(p, libc::O_RDWR), "first client open")?;
    ensure!(isastream(c1.raw()) == 1, "isastream(client fd) != 1");
    let st = fstat(&c1)?;
    ensure!(
        st.st_mode & libc::S_IFMT == libc::S_IFIFO,
        "client fstat mode {:o}: not S_IFIFO",
        st.st_mode
    );
    let (s1, rec) = recv(&b)?;
    // SAFETY: geteuid/getegid have no preconditions.
    let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
    ensure!(
        rec.uid == euid && rec.gid == egid,
        "strrecvfd uid/gid {}/{}, expected the client's {euid}/{egid}",
        rec.uid,
        rec.gid
    );
    let st = fstat(&s1)?;
    ensure!(
        st.st_mode & libc::S_IFMT == libc::S_IFIFO && isastream(s1.raw()) == 1,
        "server's end: mode {:o}, expected a STREAMS FIFO",
        st.st_mode
    );
    // Full duplex between the client and the server's received end.
    pass(&c1, &s1, b"client 1 to server")?;
    pass(&s1, &c1, b"server to client 1")?;
    // A second client in this process and a third in a child: each its own pipe.
    let c2 = e(open_path(p, libc::O_RDWR), "second client open")?;
    let (s2, _) = recv(&b)?;
    let pid = spawn_client(p, b"child hello", b"server to the child")?;
    let (s3, _) = recv(&b)?;
    expect(&s3, b"child hello", "the child's data at its server end")?;
    e(s3.write(b"server to the child"), "write to the child")?;
    reap(pid, "child client")?;
    // Isolation: what each client writes reaches only its own server end, and back.
    e(c2.write(b"from c2"), "write c2")?;
    e(c1.write(b"from c1"), "write c1")?;
    expect(&s1, b"from c1", "s1")?;
    expect(&s2, b"from c2", "s2")?;
    e(s2.write(b"to c2"), "write s2")?;
    expect(&c2, b"to c2", "c2")?;
    empty(&c1, "c1 after s2 wrote")?;
    empty(&s1, "s1 after c2 wrote")?;
    // The child has gone: its pipe is hung up, nothing of the others' data there.
    at_eof(&s3, "the child's server end")?;
    // The server's own pipe carried only the three files, and is still a pipe.
    empty(&b, "the server's end")?;
    empty(&a, "the attached end")?;
    pass(&b, &a, b"the server's pipe")?;
    // A client's close hangs up the server's end of its pipe, and only that one.
    drop(c1);
    at_eof(&s1, "server end of the closed client")?;
    pass(&c2, &s2, b"c2 still connected")?;
    drop(s2);
    at_eof(&c2, "client whose server end closed")?;
    e(fdetach(p), "fdetach")?;
    Ok(())
}

pub(crate) fn t_connld_flow_and_errors() -> R {
    let f = TmpFile::new("connld-flow", 0o666, b"")?;
    let p = f.0.as_path();
    let (a, b) = serve(p)?;
    let _guard = Attached(p);
    // Room for one connection not yet received (8 bytes of credentials each).
    e(b.ioctl_int(I_SET_LOWAT, 0), "I_SET_LOWAT")?;
    e(b.ioctl_int(I_SET_HIWAT, 8), "I_SET_HIWAT")?;
    let nb = libc::O_RDWR | libc::O_NONBLOCK;
    let c1 = e(open_path(p, nb), "first O_NONBLOCK open")?;
    let r = errno_of(
        open_path(p, nb),
        "O_NONBLOCK open with the server's queue full",
    )?;
    ensure!(
        r == libc::EAGAIN,
        "O_NONBLOCK open, queue full: errno {r}, expected EAGAIN"
    );
    // A blocking open waits until the server takes a connection.
    let pid = spawn_client(p, b"late", b"")?;
    std::thread::sleep(Duration::from_millis(300));
    ensure!(
        exited(pid)?.is_none(),
        "a blocking open with the server's queue full did not wait"
    );
    let (s1, _) = recv(&b)?;
    let (s2, _) = recv(&b)?;
    expect(&s2, b"late", "the waiting client's data")?;
    reap(pid, "waiting client")?;
    set_nonblock(&c1, false)?;
    pass(&c1, &s1, b"first client")?;
    pass(&s1, &c1, b"and back")?;
    // Without connld, opens of the path reach the attached end again.
    e(a.pop(), "I_POP connld")?;
    let c = e(open_path(p, libc::O_RDWR), "open without connld")?;
    pass(&c, &b, b"to the attached end's peer")?;
    pass(&b, &c, b"from it")?;
    drop(c);
    // The server's end closed: nobody to accept.
    e(a.push("connld"), "I_PUSH connld again")?;
    drop(b);
    let r = errno_of(open_path(p, libc::O_RDWR), "open with the server gone")?;
    ensure!(
        r == libc::ENXIO,
        "open with the server gone: errno {r}, expected ENXIO"
    );
    // connld is for pipes only.
    let echo = e(Stream::open("/dev/streams/clone/echo"), "open echo")?;
    let r = errno_of(echo.push("connld"), "I_PUSH connld on a driver Stream")?;
    ensure!(
        r == libc::EINVAL,
        "I_PUSH connld on echo: errno {r}, expected EINVAL"
    );
    let mods = e(
        std::fs::read_to_string("/proc/streams/modules"),
        "read /proc/streams/modules",
    )?;
    ensure!(
        mods.lines()
            .any(|l| l.split_whitespace().any(|w| w == "connld")),
        "connld not in /proc/streams/modules"
    );
    e(fdetach(p), "fdetach")?;
    drop(a);
    Ok(())
}
