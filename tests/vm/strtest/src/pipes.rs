//! STREAMS pipe cases (`/dev/streams/clone/pipe` welded by I_PIPE): full duplex, hangup at
//! close, file descriptor passing with I_SENDFD/I_RECVFD, and SIGPOLL (I_SETSIG).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use streams::{strrecvfd, Stream, I_GETSIG, I_RECVFD, I_SENDFD, I_SETSIG, S_HANGUP, S_INPUT};

use crate::{e, errno_of, ioctl_ptr, open, R};

/// A Linux pipe (read end, write end).
fn linux_pipe() -> Result<(OwnedFd, OwnedFd), String> {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for the two descriptors.
    ensure!(unsafe { libc::pipe(fds.as_mut_ptr()) } == 0, "pipe failed");
    // SAFETY: pipe(2) just returned these two descriptors, owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn raw_read(fd: i32, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` bytes.
    let r = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

fn raw_write(fd: i32, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `buf.len()` bytes.
    let r = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

pub(crate) fn t_pipe_full_duplex_and_hangup() -> R {
    let (a, b) = e(Stream::pipe(), "s_pipe")?;
    e(a.write(b"a to b"), "write a")?;
    e(b.write(b"b to a!"), "write b")?;
    let mut buf = [0u8; 16];
    let n = e(b.read(&mut buf), "read b")?;
    ensure!(&buf[..n] == b"a to b", "b read {:?}", &buf[..n]);
    let n = e(a.read(&mut buf), "read a")?;
    ensure!(&buf[..n] == b"b to a!", "a read {:?}", &buf[..n]);
    e(a.putmsg(Some(b"ctl"), Some(b"data"), 0), "putmsg a")?;
    let (mut c, mut d) = ([0u8; 8], [0u8; 8]);
    let g = e(b.getmsg(Some(&mut c), Some(&mut d), 0), "getmsg b")?;
    ensure!(
        g.ctl_len == Some(3) && g.data_len == Some(4) && &d[..4] == b"data",
        "getmsg across the pipe: {g:?}"
    );
    // Close one end: the other reads what is left, then end of file; writing gives EPIPE.
    e(a.write(b"last"), "write a")?;
    drop(a);
    let n = e(b.read(&mut buf), "read b after close")?;
    ensure!(
        &buf[..n] == b"last",
        "data written before close: {:?}",
        &buf[..n]
    );
    ensure!(e(b.read(&mut buf), "read at EOF")? == 0, "no end of file");
    // SAFETY: ignoring SIGPIPE for this process so that the EPIPE can be seen.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let r = errno_of(b.write(b"x"), "write to a closed pipe")?;
    // SAFETY: restore the default action.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    ensure!(
        r == libc::EPIPE,
        "write to closed pipe: errno {r}, expected EPIPE"
    );
    Ok(())
}

pub(crate) fn t_pipe_fd_passing() -> R {
    let (a, b) = e(Stream::pipe(), "s_pipe")?;
    let (lr, lw) = linux_pipe()?;
    let sent = ioctl_ptr(&a, I_SENDFD, lw.as_raw_fd() as usize as *mut libc::c_void);
    e(sent, "I_SENDFD")?;
    drop(lw); // the passed reference keeps the write end open
              // The file is first at b: read refuses with EBADMSG.
    let mut buf = [0u8; 8];
    let r = errno_of(b.read(&mut buf), "read with a file first")?;
    ensure!(
        r == libc::EBADMSG,
        "read before I_RECVFD: errno {r}, expected EBADMSG"
    );
    let mut rec = strrecvfd {
        fd: -1,
        uid: 0,
        gid: 0,
        fill: [0; 8],
    };
    e(
        ioctl_ptr(&b, I_RECVFD, (&mut rec as *mut strrecvfd).cast()),
        "I_RECVFD",
    )?;
    ensure!(rec.fd >= 0, "I_RECVFD gave fd {}", rec.fd);
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    ensure!(rec.uid == euid, "uid {} != euid {euid}", rec.uid);
    // SAFETY: I_RECVFD installed this descriptor for us.
    let got = unsafe { OwnedFd::from_raw_fd(rec.fd) };
    e(
        raw_write(got.as_raw_fd(), b"via fd"),
        "write to the received fd",
    )?;
    drop(got);
    let n = e(raw_read(lr.as_raw_fd(), &mut buf), "read the Linux pipe")?;
    ensure!(&buf[..n] == b"via fd", "Linux pipe read {:?}", &buf[..n]);
    // Every writer is gone now (the message's reference was released): end of file.
    ensure!(
        e(raw_read(lr.as_raw_fd(), &mut buf), "read at EOF")? == 0,
        "the passed file's reference leaked: no end of file"
    );
    // Errors: nothing queued (EAGAIN with O_NONBLOCK), bad descriptor, not a pipe.
    crate::set_nonblock(&b, true)?;
    let r = errno_of(
        ioctl_ptr(&b, I_RECVFD, (&mut rec as *mut strrecvfd).cast()),
        "I_RECVFD on empty",
    )?;
    ensure!(
        r == libc::EAGAIN,
        "I_RECVFD on empty: errno {r}, expected EAGAIN"
    );
    let r = errno_of(
        ioctl_ptr(&a, I_SENDFD, 999usize as *mut libc::c_void),
        "bad fd",
    )?;
    ensure!(r == libc::EBADF, "I_SENDFD 999: errno {r}, expected EBADF");
    let s = open()?;
    let r = errno_of(
        ioctl_ptr(&s, I_SENDFD, a.raw() as usize as *mut libc::c_void),
        "I_SENDFD on sloop",
    )?;
    ensure!(
        r == libc::EINVAL,
        "I_SENDFD on a non-pipe: errno {r}, expected EINVAL"
    );
    Ok(())
}

static SIGPOLLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

extern "C" fn on_sigpoll(_sig: libc::c_int) {
    SIGPOLLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

pub(crate) fn t_pipe_sigpoll() -> R {
    use std::sync::atomic::Ordering;
    let (a, b) = e(Stream::pipe(), "s_pipe")?;
    // SAFETY: installing a handler that only touches an atomic.
    unsafe { libc::signal(libc::SIGPOLL, on_sigpoll as *const () as libc::sighandler_t) };
    let before = SIGPOLLS.load(Ordering::SeqCst);
    e(a.ioctl_int(I_SETSIG, S_INPUT | S_HANGUP), "I_SETSIG")?;
    let (_, ev) = e(a.ioctl_get_int(I_GETSIG), "I_GETSIG")?;
    ensure!(ev == S_INPUT | S_HANGUP, "I_GETSIG gave {ev:#x}");
    // Writing on a is input for b, not for a: no signal.
    e(a.write(b"out"), "write a")?;
    ensure!(
        SIGPOLLS.load(Ordering::SeqCst) == before,
        "SIGPOLL for a's own write"
    );
    // b writes: a has input and gets SIGPOLL (delivered on return from the write).
    e(b.write(b"in"), "write b")?;
    let t0 = std::time::Instant::now();
    while SIGPOLLS.load(Ordering::SeqCst) == before && t0.elapsed().as_secs() < 2 {
        std::thread::yield_now();
    }
    ensure!(
        SIGPOLLS.load(Ordering::SeqCst) > before,
        "no SIGPOLL for input"
    );
    // Hangup is an event too.
    let mid = SIGPOLLS.load(Ordering::SeqCst);
    drop(b);
    let t0 = std::time::Instant::now();
    while SIGPOLLS.load(Ordering::SeqCst) == mid && t0.elapsed().as_secs() < 2 {
        std::thread::yield_now();
    }
    ensure!(
        SIGPOLLS.load(Ordering::SeqCst) > mid,
        "no SIGPOLL for hangup"
    );
    e(a.ioctl_int(I_SETSIG, 0), "I_SETSIG 0")?;
    // SAFETY: restore the default action.
    unsafe { libc::signal(libc::SIGPOLL, libc::SIG_DFL) };
    Ok(())
}

pub(crate) fn t_pipe_ends_are_fifos() -> R {
    let (a, b) = e(Stream::pipe(), "s_pipe")?;
    for s in [&a, &b] {
        // SAFETY: an all-zero stat is a valid out-buffer for fstat.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `st` is written by fstat.
        let r = unsafe { libc::fstat(s.raw(), &mut st) };
        ensure!(r == 0, "fstat: {}", io::Error::last_os_error());
        ensure!(
            st.st_mode & libc::S_IFMT == libc::S_IFIFO,
            "fstat mode {:o}: not S_IFIFO",
            st.st_mode
        );
        ensure!(
            streams::ffi::isastream(s.raw()) == 1,
            "a FIFO-typed pipe end is still a Stream"
        );
        let link = e(
            std::fs::read_link(format!("/proc/self/fd/{}", s.raw())),
            "readlink /proc/self/fd",
        )?;
        let name = link.to_string_lossy().into_owned();
        ensure!(name.starts_with("pipe:["), "/proc/self/fd name {name}");
    }
    // Welded already: I_PIPE refuses.
    let r = errno_of(
        a.ioctl_int(streams::I_PIPE, b.raw()),
        "I_PIPE on a pipe end",
    )?;
    ensure!(
        r == libc::EINVAL,
        "I_PIPE on welded ends: errno {r}, expected EINVAL"
    );
    e(a.write(b"fifo"), "write")?;
    let mut buf = [0u8; 8];
    let n = e(b.read(&mut buf), "read")?;
    ensure!(&buf[..n] == b"fifo", "read {:?}", &buf[..n]);
    Ok(())
}

/// Read fill (RFILL) across a pipe: a blocking reader asking for 64 bytes sleeps through
/// eight 8-byte writes from the other end, a few milliseconds apart, and gets all 64 in
/// order once the last arrives (each write claims the reader's Stream, whose head read fill
/// keeps from the lazy reader, `HeadProcs::lazy_ok`, and wakes the reader to look again); a
/// non-blocking read of a short queue takes what is there, and one of an empty queue fails
/// with EAGAIN.
pub(crate) fn t_pipe_read_fill() -> R {
    let (a, b) = e(Stream::pipe(), "s_pipe")?;
    e(
        b.set_read_opt(streams::RNORM | streams::RFILL),
        "I_SRDOPT RFILL",
    )?;
    let b = std::sync::Arc::new(b);
    let reader = b.clone();
    let h = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        reader.read(&mut buf).map(|n| (n, buf))
    });
    for i in 0..8u8 {
        std::thread::sleep(std::time::Duration::from_millis(20));
        ensure!(
            !h.is_finished(),
            "the read-fill reader returned after {i} of 8 writes"
        );
        e(a.write(&[i; 8]), "write")?;
    }
    let (n, buf) = e(
        h.join().map_err(|_| "reader thread panicked".to_string())?,
        "read",
    )?;
    ensure!(n == 64, "the read-fill reader got {n} bytes, expected 64");
    for (k, chunk) in buf.chunks(8).enumerate() {
        ensure!(
            chunk.iter().all(|&x| usize::from(x) == k),
            "bytes out of order: {buf:?}"
        );
    }
    // Non-blocking: 5 bytes queued, a read of 64 takes them; then EAGAIN on the empty queue.
    e(a.write(b"short"), "write")?;
    crate::set_nonblock(&b, true)?;
    let mut buf = [0u8; 64];
    let n = e(b.read(&mut buf), "non-blocking read")?;
    ensure!(
        &buf[..n] == b"short",
        "non-blocking read-fill read {:?}",
        &buf[..n]
    );
    let r = errno_of(b.read(&mut buf), "non-blocking read of nothing")?;
    ensure!(
        r == libc::EAGAIN,
        "non-blocking empty read: errno {r}, expected EAGAIN"
    );
    Ok(())
}

/// I_SWROPT SNDMREAD (LfS perftest's `-M`), as nobody: accepted with SNDPIPE and SNDHOLD and
/// read back by I_GWROPT at the end that set it, the other end's options left alone; SNDELIM
/// and unknown bits EINVAL, the options unchanged. A blocking reader at the other end gets
/// one-byte writes that write hold keeps at the writing end (the reader's M_READ, or the
/// hold timer, sends them), all of them, in order.
pub(crate) fn t_pipe_sndmread() -> R {
    crate::as_nobody(|| {
        let (a, b) = e(Stream::pipe(), "s_pipe")?;
        let opts = streams::SNDPIPE | streams::SNDHOLD | streams::SNDMREAD;
        e(a.set_write_opt(opts), "I_SWROPT SNDPIPE|SNDHOLD|SNDMREAD")?;
        let got = |s: &Stream| e(s.ioctl_get_int(streams::I_GWROPT), "I_GWROPT").map(|r| r.1);
        ensure!(got(&a)? == opts, "I_GWROPT {:#x}, set {opts:#x}", got(&a)?);
        ensure!(
            got(&b)? == streams::SNDPIPE,
            "the other end's options {:#x}",
            got(&b)?
        );
        for bad in [0x008, 0x020, -1] {
            let err = errno_of(a.set_write_opt(bad), "I_SWROPT")?;
            ensure!(
                err == libc::EINVAL,
                "I_SWROPT {bad:#x}: errno {err}, expected EINVAL"
            );
        }
        ensure!(
            got(&a)? == opts,
            "I_GWROPT {:#x} after refused calls",
            got(&a)?
        );
        let b = std::sync::Arc::new(b);
        let reader = b.clone();
        let h = std::thread::spawn(move || -> Result<Vec<u8>, String> {
            let mut all = Vec::new();
            while all.len() < 16 {
                let mut buf = [0u8; 16];
                let n = e(reader.read(&mut buf), "blocking read")?;
                ensure!(n > 0, "EOF after {} bytes", all.len());
                all.extend_from_slice(&buf[..n]);
            }
            Ok(all)
        });
        for i in 0..16u8 {
            std::thread::sleep(std::time::Duration::from_millis(2));
            e(a.write(&[i]), "write")?;
        }
        let all = h
            .join()
            .map_err(|_| "reader thread panicked".to_string())??;
        ensure!(all == (0..16u8).collect::<Vec<_>>(), "read {all:?}");
        Ok(())
    })
}
