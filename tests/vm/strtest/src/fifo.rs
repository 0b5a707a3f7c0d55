//! STREAMS FIFO cases (`/dev/streams/fifo/N`): every open of a node attaches to the same
//! Stream; POSIX FIFO open rules (who waits, ENXIO), end of file and EPIPE as openers come and
//! go, data discarded at the last close, message boundaries, modules shared by the openers.
//!
//! Each case closes everything it opened, so the next case finds the node unopened.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use streams::ffi::isastream;
use streams::{Stream, I_LOOK};

use crate::{e, errno_of, set_nonblock, R};

fn node(n: usize) -> String {
    format!("/dev/streams/fifo/{n}")
}

/// open(2) FIFO node `n` with `flags` (O_RDONLY, O_WRONLY or O_RDWR, maybe O_NONBLOCK).
fn fopen(n: usize, flags: i32) -> io::Result<Stream> {
    let path = std::ffi::CString::new(node(n)).map_err(|_| io::Error::other("nul"))?;
    // SAFETY: `path` is a NUL-terminated string alive across the call.
    let fd = unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(Stream::from_fd(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// A reader and a writer of node `n`, opened without waiting (reader first, non-blocking,
/// then made blocking again).
fn reader_writer(n: usize) -> Result<(Stream, Stream), String> {
    let r = e(fopen(n, libc::O_RDONLY | libc::O_NONBLOCK), "open O_RDONLY")?;
    let w = e(fopen(n, libc::O_WRONLY), "open O_WRONLY")?;
    set_nonblock(&r, false)?;
    Ok((r, w))
}

fn read_some(s: &Stream, max: usize) -> Result<Vec<u8>, String> {
    let mut b = vec![0u8; max];
    let k = e(s.read(&mut b), "read")?;
    b.truncate(k);
    Ok(b)
}

/// Run `f` in a thread; returns whether it finished (flag) and its handle.
fn spawn<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> (Arc<AtomicBool>, thread::JoinHandle<T>) {
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    let h = thread::spawn(move || {
        let r = f();
        d.store(true, Ordering::SeqCst);
        r
    });
    (done, h)
}

/// The result of a thread's function (a panic in it is a failure).
fn join<T>(h: thread::JoinHandle<T>) -> Result<T, String> {
    h.join().map_err(|_| "thread panicked".to_string())
}

fn wait_done(done: &AtomicBool, what: &str) -> R {
    let t0 = Instant::now();
    while !done.load(Ordering::SeqCst) {
        ensure!(
            t0.elapsed() < Duration::from_secs(5),
            "{what}: still blocked"
        );
        thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

pub(crate) fn t_fifo_nonblocking_opens() -> R {
    // No writer: a non-blocking reader opens at once and reads end of file.
    let r = e(
        fopen(0, libc::O_RDONLY | libc::O_NONBLOCK),
        "O_RDONLY|O_NONBLOCK",
    )?;
    ensure!(read_some(&r, 8)?.is_empty(), "read without writer: not EOF");
    drop(r);
    // No reader: a non-blocking writer fails with ENXIO.
    let err = errno_of(
        fopen(0, libc::O_WRONLY | libc::O_NONBLOCK),
        "O_WRONLY|O_NONBLOCK",
    )?;
    ensure!(
        err == libc::ENXIO,
        "writer without reader: errno {err}, expected ENXIO"
    );
    // With a reader there it opens.
    let r = e(
        fopen(0, libc::O_RDONLY | libc::O_NONBLOCK),
        "O_RDONLY|O_NONBLOCK",
    )?;
    let w = e(
        fopen(0, libc::O_WRONLY | libc::O_NONBLOCK),
        "O_WRONLY|O_NONBLOCK, reader there",
    )?;
    e(w.write(b"nb"), "write")?;
    ensure!(read_some(&r, 8)? == b"nb", "data");
    // O_RDWR never waits.
    drop((r, w));
    let rw = e(fopen(0, libc::O_RDWR), "O_RDWR")?;
    e(rw.write(b"self"), "write O_RDWR")?;
    ensure!(read_some(&rw, 8)? == b"self", "O_RDWR reads its own write");
    Ok(())
}

pub(crate) fn t_fifo_blocking_opens() -> R {
    // A blocking reader waits for a writer...
    let (done, h) = spawn(|| fopen(1, libc::O_RDONLY));
    thread::sleep(Duration::from_millis(150));
    ensure!(
        !done.load(Ordering::SeqCst),
        "O_RDONLY open did not wait for a writer"
    );
    let w = e(fopen(1, libc::O_WRONLY), "open O_WRONLY (reader waiting)")?;
    wait_done(&done, "O_RDONLY open after a writer opened")?;
    let r = e(join(h)?, "blocking O_RDONLY")?;
    e(w.write(b"released"), "write")?;
    ensure!(
        read_some(&r, 16)? == b"released",
        "data after blocking open"
    );
    drop((r, w));
    // ...and a blocking writer for a reader.
    let (done, h) = spawn(|| fopen(1, libc::O_WRONLY));
    thread::sleep(Duration::from_millis(150));
    ensure!(
        !done.load(Ordering::SeqCst),
        "O_WRONLY open did not wait for a reader"
    );
    let r = e(fopen(1, libc::O_RDONLY), "open O_RDONLY (writer waiting)")?;
    wait_done(&done, "O_WRONLY open after a reader opened")?;
    let w = e(join(h)?, "blocking O_WRONLY")?;
    e(w.write(b"both ways"), "write")?;
    ensure!(
        read_some(&r, 16)? == b"both ways",
        "data after blocking open"
    );
    Ok(())
}

extern "C" fn on_alarm(_sig: libc::c_int) {}

pub(crate) fn t_fifo_open_interrupted() -> R {
    // SAFETY: a no-op handler without SA_RESTART, so the waiting open fails with EINTR.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_alarm as *const () as usize;
        sa.sa_flags = 0;
        libc::sigaction(libc::SIGALRM, &sa, std::ptr::null_mut());
        libc::alarm(1);
    }
    let err = errno_of(fopen(2, libc::O_RDONLY), "O_RDONLY open interrupted")?;
    ensure!(
        err == libc::EINTR,
        "open after SIGALRM: errno {err}, expected EINTR"
    );
    // The interrupted reader was not left counted: still no reader.
    let err = errno_of(
        fopen(2, libc::O_WRONLY | libc::O_NONBLOCK),
        "O_WRONLY|O_NONBLOCK",
    )?;
    ensure!(
        err == libc::ENXIO,
        "after interrupted open: errno {err}, expected ENXIO"
    );
    Ok(())
}

pub(crate) fn t_fifo_data_between_openers() -> R {
    let (r, w) = reader_writer(3)?;
    let w2 = e(fopen(3, libc::O_WRONLY), "second writer")?;
    e(w.write(b"one "), "write w")?;
    e(w2.write(b"two"), "write w2")?;
    // RNORM: one read runs across both writers' messages.
    ensure!(read_some(&r, 64)? == b"one two", "data from two writers");
    // A large write comes through whole, with flow control in between.
    let big: Vec<u8> = (0..65536u32).map(|i| (i * 7) as u8).collect();
    let b2 = big.clone();
    let (_, h) = spawn(move || w2.write(&b2).map(|n| (n, w2)));
    let mut got = Vec::new();
    while got.len() < big.len() {
        // Bounded: this process holds `w`, so a write that failed part way (ENOSR under the
        // fault pass) would leave the reader waiting for ever for bytes never sent.
        let ev = crate::poll1(&r, libc::POLLIN, 5000)?;
        ensure!(
            ev & libc::POLLIN != 0,
            "nothing to read after {} bytes in 5 s (revents {ev:#x})",
            got.len()
        );
        let k = read_some(&r, 8192)?;
        ensure!(!k.is_empty(), "EOF after {} bytes", got.len());
        got.extend_from_slice(&k);
    }
    let (n, _w2) = e(join(h)?, "big write")?;
    ensure!(
        n == big.len() && got == big,
        "64 KiB through the FIFO: {n} written"
    );
    Ok(())
}

pub(crate) fn t_fifo_eof_after_last_writer() -> R {
    let (r, w) = reader_writer(0)?;
    let w2 = e(fopen(0, libc::O_WRONLY), "second writer")?;
    e(w.write(b"abc"), "write")?;
    drop(w);
    // One writer left: data, then no EOF (EAGAIN when non-blocking).
    ensure!(read_some(&r, 64)? == b"abc", "data after one writer closed");
    set_nonblock(&r, true)?;
    let err = errno_of(r.read(&mut [0u8; 8]), "read with a writer left")?;
    ensure!(
        err == libc::EAGAIN,
        "read with a writer: errno {err}, expected EAGAIN"
    );
    set_nonblock(&r, false)?;
    // A blocked reader is woken by the last writer's close and reads end of file.
    e(w2.write(b"last"), "write")?;
    ensure!(read_some(&r, 64)? == b"last", "data of the last writer");
    let r = Arc::new(r);
    let r2 = r.clone();
    let (done, h) = spawn(move || r2.read(&mut [0u8; 8]));
    thread::sleep(Duration::from_millis(100));
    ensure!(
        !done.load(Ordering::SeqCst),
        "read did not block with a writer open"
    );
    drop(w2);
    wait_done(&done, "blocked read after the last writer closed")?;
    let n = e(join(h)?, "read at EOF")?;
    ensure!(
        n == 0,
        "read after the last writer: {n} bytes, expected EOF"
    );
    ensure!(read_some(&r, 8)?.is_empty(), "EOF again");
    // A new writer makes it readable again: no EOF, then its data.
    let w3 = e(fopen(0, libc::O_WRONLY | libc::O_NONBLOCK), "new writer")?;
    set_nonblock(&r, true)?;
    let err = errno_of(r.read(&mut [0u8; 8]), "read with a new writer")?;
    ensure!(
        err == libc::EAGAIN,
        "after a new writer: errno {err}, expected EAGAIN"
    );
    e(w3.write(b"again"), "write")?;
    ensure!(read_some(&r, 64)? == b"again", "data of the new writer");
    Ok(())
}

pub(crate) fn t_fifo_epipe_after_last_reader() -> R {
    let (r, w) = reader_writer(1)?;
    e(w.write(b"x"), "write with reader")?;
    drop(r);
    // SAFETY: ignoring SIGPIPE for this process so that the EPIPE can be seen.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let res = w.write(b"y");
    // SAFETY: restore the default action.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let err = errno_of(res, "write without reader")?;
    ensure!(
        err == libc::EPIPE,
        "write without reader: errno {err}, expected EPIPE"
    );
    // The data written while the reader was there is kept for the next reader.
    let r = e(fopen(1, libc::O_RDONLY | libc::O_NONBLOCK), "new reader")?;
    ensure!(read_some(&r, 8)? == b"x", "data kept across readers");
    Ok(())
}

pub(crate) fn t_fifo_discarded_after_close() -> R {
    let a = e(fopen(2, libc::O_RDWR), "O_RDWR")?;
    let b = e(fopen(2, libc::O_RDWR), "O_RDWR again")?;
    // Modules pushed by one opener are seen by the other and stay while it is open.
    e(a.push("nullmod"), "I_PUSH nullmod")?;
    drop(a);
    let mut name = [0u8; 32];
    let r = crate::ioctl_ptr(&b, I_LOOK, name.as_mut_ptr().cast());
    e(r, "I_LOOK on the other opener")?;
    ensure!(name.starts_with(b"nullmod\0"), "I_LOOK gave {name:?}");
    e(b.write(b"stale data"), "write through nullmod")?;
    drop(b);
    // Everybody closed: the next open finds a new, empty FIFO without modules.
    let c = e(fopen(2, libc::O_RDWR | libc::O_NONBLOCK), "reopen")?;
    let err = errno_of(c.read(&mut [0u8; 16]), "read after reopen")?;
    ensure!(
        err == libc::EAGAIN,
        "data survived the last close (errno {err})"
    );
    let err = errno_of(
        crate::ioctl_ptr(&c, I_LOOK, name.as_mut_ptr().cast()),
        "I_LOOK after reopen",
    )?;
    ensure!(
        err == libc::EINVAL,
        "module survived the last close (errno {err})"
    );
    Ok(())
}

pub(crate) fn t_fifo_putmsg_getmsg() -> R {
    let (r, w) = reader_writer(3)?;
    e(w.putmsg(Some(b"ctl1"), Some(b"first"), 0), "putmsg 1")?;
    e(w.putmsg(None, Some(b"second message"), 0), "putmsg 2")?;
    e(w.putmsg(Some(b"c3"), None, 0), "putmsg 3")?;
    let (mut c, mut d) = ([0u8; 32], [0u8; 32]);
    let g = e(r.getmsg(Some(&mut c), Some(&mut d), 0), "getmsg 1")?;
    ensure!(
        g.ctl_len == Some(4) && g.data_len == Some(5) && &c[..4] == b"ctl1" && &d[..5] == b"first",
        "message 1: {g:?}"
    );
    let g = e(r.getmsg(Some(&mut c), Some(&mut d), 0), "getmsg 2")?;
    ensure!(
        g.ctl_len.is_none() && g.data_len == Some(14) && &d[..14] == b"second message",
        "message 2: {g:?}"
    );
    let g = e(r.getmsg(Some(&mut c), Some(&mut d), 0), "getmsg 3")?;
    ensure!(
        g.ctl_len == Some(2) && g.data_len.is_none() && &c[..2] == b"c3",
        "message 3: {g:?}"
    );
    Ok(())
}

pub(crate) fn t_fifo_fstat_isastream() -> R {
    let rw = e(fopen(0, libc::O_RDWR), "O_RDWR")?;
    ensure!(isastream(rw.raw()) == 1, "isastream(FIFO) != 1");
    // SAFETY: `st` is written by fstat on an open descriptor.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    ensure!(
        unsafe { libc::fstat(rw.raw(), &mut st) } == 0,
        "fstat failed"
    );
    // As it stands the node is a character device (a misc device), not S_IFIFO.
    ensure!(
        st.st_mode & libc::S_IFMT == libc::S_IFCHR,
        "fstat mode {:o}",
        st.st_mode
    );
    Ok(())
}
