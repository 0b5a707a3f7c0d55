//! The POSIX pipe cases, written once and run on every implementation ([`Impl`]): what
//! POSIX.1 (`pipe`, `read`, `write`, `poll`, `fstat`) promises a program about a pipe, so that
//! a program cannot tell a STREAMS pipe from a Linux pipe where POSIX says it must not.

use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use streams::I_NREAD;

use crate::ensure;
use crate::util::*;

/// Writers and records of the atomicity case: 4 writers × 64 records × PIPE_BUF = 1 MiB,
/// many times what either pipe holds, so the writers keep meeting a full pipe.
const WRITERS: usize = 4;
const RECORDS: usize = 64;

/// Record `seq` of writer `id`: byte 0 the writer, bytes 1..3 the sequence number, the rest
/// a pattern of both, so that any mixing of two records shows.
fn record(id: u8, seq: u16, out: &mut [u8; PIPE_BUF]) {
    out[0] = id;
    out[1..3].copy_from_slice(&seq.to_le_bytes());
    for (i, b) in out.iter_mut().enumerate().skip(3) {
        *b = (i as u8)
            .wrapping_mul(7)
            .wrapping_add(id.wrapping_mul(37))
            .wrapping_add(seq as u8);
    }
}

/// PIPE_BUF atomicity: several forked writers write PIPE_BUF-sized records at once into a
/// full pipe; every PIPE_BUF bytes the reader gets must be one whole record, and each writer's
/// records come in order.
pub(crate) fn pipe_buf_atomic(im: Impl) -> R {
    let p = im.make()?;
    let mut pids = Vec::new();
    for id in 0..WRITERS as u8 {
        let w = p.w.as_raw_fd();
        pids.push(fork_child(move || {
            let mut rec = [0u8; PIPE_BUF];
            for seq in 0..RECORDS as u16 {
                record(id, seq, &mut rec);
                // SAFETY: `rec` is a live buffer of PIPE_BUF bytes.
                let n = unsafe { libc::write(w, rec.as_ptr().cast(), PIPE_BUF) };
                if n != PIPE_BUF as isize {
                    return 10; // short or failed write of PIPE_BUF bytes
                }
            }
            0
        })?);
    }
    let Pipe { r, w } = p;
    drop(w); // EOF once every child has exited
             // Let the writers fill the pipe and queue up behind each other before reading.
    thread::sleep(Duration::from_millis(100));
    let data = read_to_eof(&r, WRITERS * RECORDS * PIPE_BUF + 1)?;
    for pid in pids {
        let st = wait(pid)?;
        ensure!(
            libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0,
            "writer {}",
            status_text(st)
        );
    }
    ensure!(
        data.len() == WRITERS * RECORDS * PIPE_BUF,
        "read {} bytes, expected {}",
        data.len(),
        WRITERS * RECORDS * PIPE_BUF
    );
    let mut next = [0u16; WRITERS];
    let mut want = [0u8; PIPE_BUF];
    for (k, rec) in data.chunks(PIPE_BUF).enumerate() {
        let id = rec[0];
        ensure!((id as usize) < WRITERS, "record {k}: bad writer id {id}");
        let seq = u16::from_le_bytes([rec[1], rec[2]]);
        ensure!(
            seq == next[id as usize],
            "record {k}: writer {id} seq {seq}, expected {}",
            next[id as usize]
        );
        record(id, seq, &mut want);
        ensure!(
            rec == want.as_slice(),
            "record {k} (writer {id} seq {seq}) interleaved with other data"
        );
        next[id as usize] += 1;
    }
    Ok(())
}

/// End of file: once the last writer has closed, the reader gets what was written, then 0,
/// again 0, and 0 (not EAGAIN) with O_NONBLOCK.
pub(crate) fn eof_after_last_writer(im: Impl) -> R {
    let Pipe { r, w } = im.make()?;
    let w2 = e(w.try_clone(), "dup")?;
    write_all(&w, b"last words")?;
    drop(w);
    // One writer is left: no EOF yet, the data is there.
    ensure!(read_n(&r, 10)? == b"last words", "data before close");
    ensure!(
        poll1(&r, libc::POLLIN, 0)? & libc::POLLHUP == 0,
        "POLLHUP while a writer is still open"
    );
    write_all(&w2, b"!")?;
    drop(w2);
    let mut b = [0u8; 16];
    ensure!(e(read(&r, &mut b), "read")? == 1 && b[0] == b'!', "drain");
    ensure!(e(read(&r, &mut b), "read at EOF")? == 0, "no EOF");
    ensure!(
        e(read(&r, &mut b), "read at EOF")? == 0,
        "second read not EOF"
    );
    set_nonblock(&r, true)?;
    ensure!(
        e(read(&r, &mut b), "O_NONBLOCK read at EOF")? == 0,
        "O_NONBLOCK read at EOF"
    );
    Ok(())
}

/// Writing with no reader: EPIPE with SIGPIPE ignored, death by SIGPIPE with the default
/// action (in a forked child).
pub(crate) fn epipe_and_sigpipe(im: Impl) -> R {
    // Rust programs start with SIGPIPE ignored; make it explicit.
    // SAFETY: setting a signal disposition.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let Pipe { r, w } = im.make()?;
    drop(r);
    let err = errno_of(write(&w, b"nobody"), "write without reader")?;
    ensure!(err == libc::EPIPE, "errno {err}, expected EPIPE");
    // Again: the condition stays.
    let err = errno_of(write(&w, b"x"), "second write")?;
    ensure!(err == libc::EPIPE, "second write: errno {err}");

    let Pipe { r, w } = im.make()?;
    drop(r);
    let wfd = w.as_raw_fd();
    let pid = fork_child(move || {
        // SAFETY: default action, then a write that must raise SIGPIPE.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::write(wfd, b"die".as_ptr().cast(), 3);
        }
        42 // still alive: no SIGPIPE
    })?;
    let st = wait(pid)?;
    ensure!(
        libc::WIFSIGNALED(st) && libc::WTERMSIG(st) == libc::SIGPIPE,
        "child writing without reader: {} (expected signal {})",
        status_text(st),
        libc::SIGPIPE
    );
    Ok(())
}

/// O_NONBLOCK: read on an empty pipe fails with EAGAIN; writes fill the pipe until EAGAIN;
/// the reader drains exactly what was accepted and writing works again.
pub(crate) fn nonblock_eagain(im: Impl) -> R {
    let Pipe { r, w } = im.make()?;
    set_nonblock(&r, true)?;
    set_nonblock(&w, true)?;
    let mut b = [0u8; 64];
    let err = errno_of(read(&r, &mut b), "read on empty pipe")?;
    ensure!(
        err == libc::EAGAIN,
        "read empty: errno {err}, expected EAGAIN"
    );
    let chunk = noise(PIPE_BUF, 3);
    let total = fill(&w, &chunk, 64 << 20)?;
    ensure!(total >= PIPE_BUF, "pipe took only {total} bytes");
    // A PIPE_BUF write must not be split: still EAGAIN, nothing partial.
    let err = errno_of(write(&w, &chunk), "write on full pipe")?;
    ensure!(
        err == libc::EAGAIN,
        "full pipe: errno {err}, expected EAGAIN"
    );
    let got = read_n(&r, total)?;
    ensure!(
        got.chunks(PIPE_BUF).all(|c| c == &chunk[..c.len()]),
        "data changed"
    );
    let err = errno_of(read(&r, &mut b), "read after drain")?;
    ensure!(err == libc::EAGAIN, "drained: errno {err}, expected EAGAIN");
    ensure!(
        e(write(&w, b"again"), "write after drain")? == 5,
        "short write"
    );
    ensure!(read_n(&r, 5)? == b"again", "data after drain");
    Ok(())
}

/// poll: POLLOUT on an empty pipe's write end, no POLLIN on its read end; POLLIN after a
/// write; no POLLOUT when full; POLLHUP at the read end when the writer is gone (with and
/// without data left); POLLERR or POLLHUP at the write end when the reader is gone.
pub(crate) fn poll_events(im: Impl) -> R {
    let Pipe { r, w } = im.make()?;
    let rv = poll1(&r, libc::POLLIN, 0)?;
    ensure!(rv == 0, "empty pipe read end: revents {rv:#x}");
    let wv = poll1(&w, libc::POLLOUT, 0)?;
    ensure!(wv == libc::POLLOUT, "empty pipe write end: revents {wv:#x}");
    write_all(&w, b"x")?;
    let rv = poll1(&r, libc::POLLIN, 0)?;
    ensure!(rv == libc::POLLIN, "after write: revents {rv:#x}");
    set_nonblock(&w, true)?;
    fill(&w, &noise(PIPE_BUF, 1), 64 << 20)?;
    let wv = poll1(&w, libc::POLLOUT, 0)?;
    ensure!(wv & libc::POLLOUT == 0, "full pipe still POLLOUT ({wv:#x})");
    drop(w);
    let rv = poll1(&r, libc::POLLIN, 0)?;
    ensure!(
        rv & libc::POLLIN != 0 && rv & libc::POLLHUP != 0,
        "writer gone, data left: revents {rv:#x} (want POLLIN|POLLHUP)"
    );
    read_to_eof(&r, 64 << 20)?;
    let rv = poll1(&r, libc::POLLIN, 0)?;
    ensure!(
        rv & libc::POLLHUP != 0,
        "writer gone, drained: revents {rv:#x} (want POLLHUP)"
    );
    // A poll that is waiting is woken by the hangup.
    let Pipe { r, w } = im.make()?;
    let r = Arc::new(r);
    let r2 = r.clone();
    let h = thread::spawn(move || poll1(&*r2, libc::POLLIN, 10_000));
    thread::sleep(Duration::from_millis(200));
    ensure!(!h.is_finished(), "poll on an empty pipe did not wait");
    drop(w);
    let rv = h.join().map_err(|_| "poll thread panicked".to_string())??;
    ensure!(
        rv & libc::POLLHUP != 0,
        "waiting poll woken by close: {rv:#x}"
    );
    let Pipe { r, w } = im.make()?;
    drop(r);
    let wv = poll1(&w, libc::POLLOUT, 0)?;
    ensure!(
        wv & (libc::POLLERR | libc::POLLHUP) != 0,
        "reader gone: write end revents {wv:#x} (want POLLERR or POLLHUP)"
    );
    Ok(())
}

/// FIONREAD: the bytes waiting to be read (all of them, not just the first write's). On a
/// STREAMS pipe also I_NREAD: messages queued, bytes in the first.
pub(crate) fn fionread(im: Impl) -> R {
    let Pipe { r, w } = im.make()?;
    let (_, n) = e(ioctl_get_int(&r, libc::FIONREAD), "FIONREAD")?;
    ensure!(n == 0, "FIONREAD on empty pipe: {n}");
    write_all(&w, &[1u8; 100])?;
    write_all(&w, &[2u8; 50])?;
    let (_, n) = e(ioctl_get_int(&r, libc::FIONREAD), "FIONREAD")?;
    ensure!(n == 150, "FIONREAD after 100 + 50 bytes: {n}");
    read_n(&r, 30)?;
    let (_, n) = e(ioctl_get_int(&r, libc::FIONREAD), "FIONREAD")?;
    ensure!(n == 120, "FIONREAD after reading 30: {n}");
    if im == Impl::Streams {
        let (msgs, first) = e(ioctl_get_int(&r, I_NREAD as u64), "I_NREAD")?;
        ensure!(
            msgs == 2 && first == 70,
            "I_NREAD: {msgs} messages, first {first} bytes (want 2, 70)"
        );
    }
    Ok(())
}

/// fstat: both ends are FIFOs (S_ISFIFO), as POSIX requires of pipe().
pub(crate) fn fstat_fifo(im: Impl) -> R {
    let p = im.make()?;
    for (end, fd) in [("read", &p.r), ("write", &p.w)] {
        // SAFETY: `st` is written by fstat.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: an open descriptor and a live stat buffer.
        let r = unsafe { libc::fstat(fd.as_raw_fd(), &mut st) };
        ensure!(r == 0, "fstat: {}", std::io::Error::last_os_error());
        let fmt = st.st_mode & libc::S_IFMT;
        ensure!(
            fmt == libc::S_IFIFO,
            "{end} end: st_mode {:#o}, not S_IFIFO",
            st.st_mode
        );
    }
    Ok(())
}

/// isastream(3): 0 on a Linux pipe, 1 on both ends of a STREAMS pipe.
pub(crate) fn isastream(im: Impl) -> R {
    let p = im.make()?;
    let want = i32::from(im == Impl::Streams);
    for fd in [&p.r, &p.w] {
        let got = streams::ffi::isastream(raw(fd));
        ensure!(got == want, "isastream = {got}, expected {want}");
    }
    Ok(())
}

/// A reader blocked on an empty pipe sleeps until a writer writes; a writer blocked on a full
/// pipe sleeps until the reader drains.
pub(crate) fn blocking_woken(im: Impl) -> R {
    let Pipe { r, w } = im.make()?;
    let r = Arc::new(r);
    let r2 = r.clone();
    let t0 = Instant::now();
    let h = thread::spawn(move || {
        let mut b = [0u8; 16];
        read(&*r2, &mut b).map(|n| (n, b))
    });
    thread::sleep(Duration::from_millis(300));
    ensure!(!h.is_finished(), "reader did not block on an empty pipe");
    write_all(&w, b"wake")?;
    let (n, b) = e(h.join().map_err(|_| "reader panicked".to_string())?, "read")?;
    ensure!(n == 4 && &b[..4] == b"wake", "woken reader got {n} bytes");
    ensure!(
        t0.elapsed() >= Duration::from_millis(250),
        "reader returned early"
    );
    // Blocked writer.
    set_nonblock(&w, true)?;
    let chunk = noise(PIPE_BUF, 9);
    let total = fill(&w, &chunk, 64 << 20)?;
    set_nonblock(&w, false)?;
    let w = Arc::new(w);
    let (w2, c2) = (w.clone(), chunk.clone());
    let h = thread::spawn(move || write(&*w2, &c2));
    thread::sleep(Duration::from_millis(300));
    ensure!(!h.is_finished(), "writer did not block on a full pipe");
    let got = read_n(&*r, total)?;
    ensure!(got.chunks(PIPE_BUF).all(|c| c == &chunk[..c.len()]), "data");
    let n = e(
        h.join().map_err(|_| "writer panicked".to_string())?,
        "blocked write",
    )?;
    ensure!(n == PIPE_BUF, "blocked write returned {n}");
    ensure!(read_n(&*r, PIPE_BUF)? == chunk, "the blocked write's data");
    Ok(())
}

/// Large transfer: 4 MiB through the pipe from a writer thread in odd-sized writes, read in
/// other odd sizes; length and FNV-1a checksum (and every byte) must match.
pub(crate) fn large_transfer(im: Impl) -> R {
    const TOTAL: usize = 4 << 20;
    let Pipe { r, w } = im.make()?;
    let data = Arc::new(noise(TOTAL, 0x5eed));
    let sum = fnv(FNV_START, &data);
    let d2 = data.clone();
    let h = thread::spawn(move || -> R {
        let sizes = [1usize, 4096, 65536, 7, 100_000, 512, 131_072, 3000];
        let mut off = 0;
        let mut k = 0;
        while off < TOTAL {
            let n = sizes[k % sizes.len()].min(TOTAL - off);
            write_all(&w, &d2[off..off + n])?;
            off += n;
            k += 1;
        }
        Ok(()) // `w` closes here: EOF
    });
    let mut got = 0usize;
    let mut h2 = FNV_START;
    let mut buf = vec![0u8; 200_000];
    let rsizes = [65536usize, 1, 4095, 200_000, 10, 8192];
    let mut k = 0;
    loop {
        let want = rsizes[k % rsizes.len()];
        k += 1;
        let n = e(read(&r, &mut buf[..want]), "read")?;
        if n == 0 {
            break;
        }
        ensure!(got + n <= TOTAL, "more than {TOTAL} bytes");
        ensure!(
            buf[..n] == data[got..got + n],
            "bytes {got}..{} differ",
            got + n
        );
        h2 = fnv(h2, &buf[..n]);
        got += n;
    }
    h.join().map_err(|_| "writer panicked".to_string())??;
    ensure!(got == TOTAL, "got {got} bytes, sent {TOTAL}");
    ensure!(h2 == sum, "checksum {h2:#x} != {sum:#x}");
    Ok(())
}
