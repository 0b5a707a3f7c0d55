//! `strtest`: user programs against the `sloop` STREAMS loopback device, in the test guest.
//!
//! Each case opens `/dev/streams/clone/sloop` (a fresh Stream per open: Stream head + sloop
//! driver, `streams.ko`) and checks real system-call behaviour: read/write and putmsg/getmsg
//! round trips, read modes, bands and priorities, partial getmsg, non-blocking and blocking
//! reads and writes (woken by another thread), poll, EFAULT for bad user pointers, module
//! push/pop, I_* ioctls, signals during sleep, close with data queued, many open/close cycles;
//! and STREAMS pipes (`pipes.rs`: full duplex, hangup, I_SENDFD/I_RECVFD, SIGPOLL).
//! `drivers.rs` covers the `echo` and `nuls` test drivers, I_SET_HIWAT/I_SET_LOWAT and
//! `/proc/streams/modules`; `fattach.rs` fattach/fdetach of pipe ends and driver Streams;
//! `connld.rs` connld(7) on an attached pipe end (a new pipe per open); `xput.rs` puts into a
//! Stream from an hrtimer, a tasklet and a workqueue (sequence numbers, flow control, close);
//! `uffd.rs` system calls stuck in a userfaultfd page fault while the pipe's other end and
//! other Streams work on.
//! Output is TAP-like (`ok N - name` / `not ok N - name: why`) with a final
//! `N passed, N failed` line; the exit status is non-zero if any case failed.

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use streams::ffi::isastream;
use streams::{Stream, *};

const DEV: &str = "/dev/streams/clone/sloop";
/// sloop's private I_STR command: acknowledged with the data echoed.
const SLOOP_IOC_ECHO: i32 = (b'l' as i32) << 8 | 1;

type R = Result<(), String>;
/// One test case: its name and its function.
type Case = (&'static str, fn() -> R);

macro_rules! ensure {
    ($c:expr, $($fmt:tt)+) => {
        if !$c {
            return Err(format!($($fmt)+));
        }
    };
}

// After `ensure!`: macros are in scope only below their definition.
mod bufmod;
mod connld;
mod drivers;
mod fattach;
mod fifo;
mod headops;
mod limits;
mod loopdrv;
mod mux;
mod pipes;
mod security;
mod stressfound;
mod tpiraw;
mod udpnet;
mod uffd;
mod xput;
mod xti;

fn e<T>(r: io::Result<T>, what: &str) -> Result<T, String> {
    r.map_err(|err| format!("{what}: {err}"))
}

fn errno_of<T: std::fmt::Debug>(r: io::Result<T>, what: &str) -> Result<i32, String> {
    match r {
        Ok(v) => Err(format!("{what}: succeeded ({v:?}), expected an error")),
        Err(err) => Ok(err.raw_os_error().unwrap_or(0)),
    }
}

fn open() -> Result<Stream, String> {
    e(Stream::open(DEV), "open")
}

/// Open with extra flags (O_NONBLOCK…), as a Stream.
fn open_flags(flags: i32) -> Result<Stream, String> {
    let path = std::ffi::CString::new(DEV).map_err(|x| x.to_string())?;
    // SAFETY: `path` is a NUL-terminated string alive across the call.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC | flags) };
    if fd < 0 {
        return Err(format!("open: {}", io::Error::last_os_error()));
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(Stream::from_fd(unsafe { OwnedFd::from_raw_fd(fd) }))
}

/// Write `chunk` (on a non-blocking Stream) until EAGAIN; the bytes accepted. Fails if more
/// than `limit` bytes go in (no flow control) or on another error.
fn write_until_eagain(s: &Stream, chunk: &[u8], limit: usize) -> Result<usize, String> {
    let mut total = 0usize;
    loop {
        match s.write(chunk) {
            Ok(n) => total += n,
            Err(err) if err.raw_os_error() == Some(libc::EAGAIN) => return Ok(total),
            Err(err) => return Err(format!("write: {err}")),
        }
        ensure!(total < limit, "no flow control after {total} bytes");
    }
}

fn set_nonblock(s: &Stream, on: bool) -> R {
    // SAFETY: fcntl on an open descriptor.
    let fl = unsafe { libc::fcntl(s.raw(), libc::F_GETFL) };
    let fl = if on {
        fl | libc::O_NONBLOCK
    } else {
        fl & !libc::O_NONBLOCK
    };
    // SAFETY: as above.
    let r = unsafe { libc::fcntl(s.raw(), libc::F_SETFL, fl) };
    ensure!(r == 0, "fcntl: {}", io::Error::last_os_error());
    Ok(())
}

/// Run `f` in a child process that drops to uid/gid 65534 (nobody, no supplementary groups);
/// the child's error comes back through a pipe as the case's.
pub(crate) fn as_nobody(f: impl FnOnce() -> R) -> R {
    use std::io::{Read, Write};
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) writes.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(format!("pipe: {}", io::Error::last_os_error()));
    }
    // SAFETY: both descriptors were just created and are owned here only.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fork in a test program; the child runs `f` and leaves with _exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: {}", io::Error::last_os_error()));
    }
    if pid == 0 {
        drop(rd);
        // SAFETY: plain system calls in the child.
        let dropped = unsafe {
            libc::setgroups(0, std::ptr::null()) == 0
                && libc::setgid(65534) == 0
                && libc::setuid(65534) == 0
        };
        let r = if dropped {
            f()
        } else {
            Err("setgroups/setgid/setuid 65534 failed".to_string())
        };
        let code = match r {
            Ok(()) => 0,
            Err(why) => {
                let _ = std::fs::File::from(wr).write_all(why.as_bytes());
                1
            }
        };
        // SAFETY: leave the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    // The child's end closed here, so a child that dies early gives EOF, not a hang.
    drop(wr);
    let mut why = String::new();
    let _ = std::fs::File::from(rd).read_to_string(&mut why);
    let mut status = 0;
    // SAFETY: waiting for our own child; `status` is a live int.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        return Ok(());
    }
    Err(format!("as nobody: {why} (status {status:#x})"))
}

/// A `struct sockaddr_in` of family `fam` (AF_INET, or another to be refused) for `ip`:`port`,
/// as the TPI UDP drivers take addresses.
pub(crate) fn sockaddr_in(fam: u16, ip: [u8; 4], port: u16) -> Vec<u8> {
    let mut s = vec![0u8; 16];
    s[..2].copy_from_slice(&fam.to_ne_bytes());
    s[2..4].copy_from_slice(&port.to_be_bytes());
    s[4..8].copy_from_slice(&ip);
    s
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

/// Read exactly `n` bytes (several reads if needed).
fn read_n(s: &Stream, n: usize) -> Result<Vec<u8>, String> {
    let mut out = vec![0u8; n];
    let mut got = 0;
    while got < n {
        let k = e(s.read(&mut out[got..]), "read")?;
        ensure!(k > 0, "read returned 0 after {got} of {n} bytes");
        got += k;
    }
    Ok(out)
}

pub(crate) fn poll1(s: &Stream, events: i16, timeout_ms: i32) -> Result<i16, String> {
    let mut p = libc::pollfd {
        fd: s.raw(),
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    ensure!(r >= 0, "poll: {}", io::Error::last_os_error());
    Ok(p.revents)
}

fn nread(s: &Stream) -> Result<(i32, i32), String> {
    e(s.ioctl_get_int(I_NREAD), "I_NREAD")
}

fn ioctl_ptr(s: &Stream, cmd: i32, arg: *mut libc::c_void) -> io::Result<i32> {
    // SAFETY: the caller passes a pointer valid for `cmd` (or a deliberately bad one, which
    // the kernel must reject with EFAULT).
    let r = unsafe { libc::ioctl(s.raw(), cmd as libc::c_ulong, arg) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

// ---------------------------------------------------------------------------------------------

fn t_open_is_stream() -> R {
    let s = open()?;
    ensure!(isastream(s.raw()) == 1, "isastream(sloop) != 1");
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for two descriptors.
    ensure!(unsafe { libc::pipe(fds.as_mut_ptr()) } == 0, "pipe failed");
    let r = isastream(fds[0]);
    // SAFETY: both were just opened.
    unsafe {
        libc::close(fds[0]);
        libc::close(fds[1]);
    }
    ensure!(r == 0, "isastream(Linux pipe) = {r}, expected 0");
    Ok(())
}

fn t_roundtrip_sizes() -> R {
    let s = open()?;
    for (i, &n) in [1usize, 64, 4096, 65536].iter().enumerate() {
        let data = pattern(n, i as u8);
        let w = e(s.write(&data), "write")?;
        ensure!(w == n, "write({n}) returned {w}");
        let back = read_n(&s, n)?;
        ensure!(back == data, "{n} bytes came back different");
        ensure!(nread(&s)?.0 == 0, "bytes left after reading {n}");
    }
    Ok(())
}

fn t_rnorm_byte_stream() -> R {
    let s = open()?;
    e(s.write(b"abc"), "write")?;
    e(s.write(b"defgh"), "write")?;
    let mut b = [0u8; 8];
    let n = e(s.read(&mut b), "read")?;
    ensure!(
        n == 8 && &b == b"abcdefgh",
        "RNORM read across messages: {n} {b:?}"
    );
    e(s.write(b"0123456789"), "write")?;
    let mut b = [0u8; 4];
    ensure!(
        e(s.read(&mut b), "read")? == 4 && &b == b"0123",
        "partial read"
    );
    let mut b = [0u8; 100];
    let n = e(s.read(&mut b), "read")?;
    ensure!(n == 6 && &b[..6] == b"456789", "rest of message: {n}");
    Ok(())
}

fn t_putmsg_getmsg() -> R {
    let s = open()?;
    e(s.putmsg(Some(b"CTRL"), Some(b"some data"), 0), "putmsg")?;
    let (mut c, mut d) = ([0u8; 64], [0u8; 64]);
    let g = e(s.getmsg(Some(&mut c), Some(&mut d), 0), "getmsg")?;
    ensure!(
        g.ctl_len == Some(4) && &c[..4] == b"CTRL",
        "ctl part: {g:?}"
    );
    ensure!(
        g.data_len == Some(9) && &d[..9] == b"some data",
        "data part: {g:?}"
    );
    ensure!(g.flags == 0 && g.more == 0, "flags/more: {g:?}");
    // Data only: no control part.
    e(s.putmsg(None, Some(b"xy"), 0), "putmsg data only")?;
    let g = e(s.getmsg(Some(&mut c), Some(&mut d), 0), "getmsg")?;
    ensure!(
        g.ctl_len.is_none() && g.data_len == Some(2),
        "data only: {g:?}"
    );
    Ok(())
}

fn t_hipri_and_bands() -> R {
    let s = open()?;
    e(
        s.putpmsg(Some(b"b3"), Some(b"band three"), 3, MSG_BAND),
        "putpmsg band 3",
    )?;
    e(
        s.putpmsg(Some(b"HI"), Some(b"urgent"), 0, MSG_HIPRI),
        "putpmsg hipri",
    )?;
    let (mut c, mut d) = ([0u8; 64], [0u8; 64]);
    // High priority first, whatever arrived before it.
    let g = e(s.getpmsg(Some(&mut c), Some(&mut d), 0, MSG_ANY), "getpmsg")?;
    ensure!(g.flags == MSG_HIPRI, "first is not MSG_HIPRI: {g:?}");
    ensure!(
        &c[..2] == b"HI" && g.data_len == Some(6),
        "hipri contents: {g:?}"
    );
    let g = e(s.getpmsg(Some(&mut c), Some(&mut d), 0, MSG_ANY), "getpmsg")?;
    ensure!(g.flags == MSG_BAND && g.band == 3, "band message: {g:?}");
    ensure!(&d[..10] == b"band three", "band data");
    // getmsg RS_HIPRI with no high-priority message queued: EAGAIN when non-blocking.
    set_nonblock(&s, true)?;
    e(s.putmsg(Some(b"lo"), None, 0), "putmsg")?;
    let err = errno_of(
        s.getmsg(Some(&mut c), Some(&mut d), RS_HIPRI),
        "getmsg RS_HIPRI",
    )?;
    ensure!(err == libc::EAGAIN, "getmsg RS_HIPRI: errno {err}");
    Ok(())
}

fn t_getmsg_partial() -> R {
    let s = open()?;
    e(
        s.putmsg(Some(b"0123456789"), Some(b"abcdefghij"), 0),
        "putmsg",
    )?;
    let (mut c, mut d) = ([0u8; 4], [0u8; 4]);
    let g = e(s.getmsg(Some(&mut c), Some(&mut d), 0), "getmsg")?;
    ensure!(
        g.more == MORECTL | MOREDATA,
        "more = {} (expected 3)",
        g.more
    );
    ensure!(&c == b"0123" && &d == b"abcd", "first parts");
    let (mut c, mut d) = ([0u8; 64], [0u8; 64]);
    let g = e(s.getmsg(Some(&mut c), Some(&mut d), 0), "getmsg rest")?;
    ensure!(g.more == 0, "rest: more {}", g.more);
    ensure!(
        g.ctl_len == Some(6) && &c[..6] == b"456789",
        "rest of ctl: {g:?}"
    );
    ensure!(
        g.data_len == Some(6) && &d[..6] == b"efghij",
        "rest of data: {g:?}"
    );
    // Data left behind only.
    e(s.putmsg(None, Some(b"0123456789"), 0), "putmsg")?;
    let mut d4 = [0u8; 4];
    let g = e(s.getmsg(Some(&mut c), Some(&mut d4), 0), "getmsg")?;
    ensure!(g.more == MOREDATA, "data only: more {}", g.more);
    let g = e(s.getmsg(Some(&mut c), Some(&mut d), 0), "getmsg")?;
    ensure!(g.data_len == Some(6) && g.more == 0, "data rest: {g:?}");
    Ok(())
}

fn t_nonblock_read() -> R {
    let s = open_flags(libc::O_NONBLOCK)?;
    let mut b = [0u8; 16];
    let err = errno_of(s.read(&mut b), "read empty O_NONBLOCK")?;
    ensure!(err == libc::EAGAIN, "errno {err}, expected EAGAIN");
    let (mut c, mut d) = ([0u8; 8], [0u8; 8]);
    let err = errno_of(s.getmsg(Some(&mut c), Some(&mut d), 0), "getmsg empty")?;
    ensure!(err == libc::EAGAIN, "getmsg errno {err}, expected EAGAIN");
    Ok(())
}

fn t_poll() -> R {
    let s = open()?;
    let ev = libc::POLLIN | libc::POLLOUT | libc::POLLPRI;
    let r = poll1(&s, ev, 0)?;
    ensure!(r & libc::POLLIN == 0, "POLLIN on an empty Stream ({r:#x})");
    ensure!(
        r & libc::POLLOUT != 0,
        "no POLLOUT on an empty Stream ({r:#x})"
    );
    e(s.write(b"x"), "write")?;
    let r = poll1(&s, ev, 0)?;
    ensure!(r & libc::POLLIN != 0, "no POLLIN after write ({r:#x})");
    read_n(&s, 1)?;
    e(s.putpmsg(Some(b"p"), None, 0, MSG_HIPRI), "putpmsg hipri")?;
    let r = poll1(&s, ev, 0)?;
    ensure!(r & libc::POLLPRI != 0, "no POLLPRI for M_PCPROTO ({r:#x})");
    Ok(())
}

fn t_blocked_reader_woken() -> R {
    let s = Arc::new(open()?);
    let r2 = s.clone();
    let t0 = Instant::now();
    let h = thread::spawn(move || {
        let mut b = [0u8; 16];
        r2.read(&mut b).map(|n| (n, b))
    });
    thread::sleep(Duration::from_millis(300));
    ensure!(!h.is_finished(), "reader did not block on an empty Stream");
    e(s.write(b"wake"), "write")?;
    let (n, b) = e(h.join().map_err(|_| "thread panicked".to_string())?, "read")?;
    ensure!(n == 4 && &b[..4] == b"wake", "woken reader got {n} bytes");
    ensure!(
        t0.elapsed() >= Duration::from_millis(250),
        "reader returned too early"
    );
    Ok(())
}

fn t_poll_woken() -> R {
    let s = Arc::new(open()?);
    let r2 = s.clone();
    let h = thread::spawn(move || poll1(&r2, libc::POLLIN, 10_000));
    thread::sleep(Duration::from_millis(300));
    ensure!(!h.is_finished(), "poll did not wait");
    e(s.write(b"p"), "write")?;
    let r = h.join().map_err(|_| "panic".to_string())??;
    ensure!(r & libc::POLLIN != 0, "poll woke without POLLIN ({r:#x})");
    Ok(())
}

fn t_flow_control() -> R {
    let s = Arc::new(open()?);
    set_nonblock(&s, true)?;
    let chunk = pattern(4096, 7);
    let total = write_until_eagain(&s, &chunk, 1 << 20)?;
    ensure!(total > 0, "first write already flow controlled");
    let r = poll1(&s, libc::POLLOUT, 0)?;
    ensure!(
        r & libc::POLLOUT == 0,
        "POLLOUT while flow controlled ({r:#x})"
    );
    // A blocking writer now sleeps until the reader drains.
    set_nonblock(&s, false)?;
    let done = Arc::new(AtomicBool::new(false));
    let (w, d2, c2) = (s.clone(), done.clone(), chunk.clone());
    let h = thread::spawn(move || {
        let r = w.write(&c2);
        d2.store(true, Ordering::SeqCst);
        r
    });
    thread::sleep(Duration::from_millis(300));
    ensure!(
        !done.load(Ordering::SeqCst),
        "writer did not block under flow control"
    );
    let got = read_n(&s, total)?;
    ensure!(
        got.chunks(4096).all(|c| c == chunk.as_slice()),
        "data corrupted"
    );
    let n = e(
        h.join().map_err(|_| "thread panicked".to_string())?,
        "blocked write",
    )?;
    ensure!(n == 4096, "blocked write returned {n}");
    ensure!(read_n(&s, 4096)? == chunk, "last chunk differs");
    Ok(())
}

fn t_efault() -> R {
    let s = open()?;
    let bad = 8usize as *mut libc::c_void;
    // SAFETY: deliberately invalid user pointer: the kernel must fail with EFAULT.
    let r = unsafe { libc::write(s.raw(), bad, 10) };
    let err = io::Error::last_os_error().raw_os_error();
    ensure!(
        r == -1 && err == Some(libc::EFAULT),
        "write(8): {r} {err:?}"
    );
    e(s.write(b"kept"), "write")?;
    // SAFETY: as above, for read.
    let r = unsafe { libc::read(s.raw(), bad, 10) };
    let err = io::Error::last_os_error().raw_os_error();
    ensure!(r == -1 && err == Some(libc::EFAULT), "read(8): {r} {err:?}");
    // A munmapped page.
    // SAFETY: anonymous mapping of one page, unmapped at once.
    let page = unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        libc::munmap(p, 4096);
        p
    };
    // SAFETY: deliberately unmapped user pointer.
    let r = unsafe { libc::read(s.raw(), page, 4) };
    let err = io::Error::last_os_error().raw_os_error();
    ensure!(
        r == -1 && err == Some(libc::EFAULT),
        "read(unmapped): {r} {err:?}"
    );
    // Nothing was consumed by the failed reads.
    ensure!(read_n(&s, 4)? == b"kept", "data lost by a faulting read");
    // Bad pointers in ioctl arguments.
    let err = errno_of(ioctl_ptr(&s, I_NREAD, bad), "I_NREAD(8)")?;
    ensure!(err == libc::EFAULT, "I_NREAD(8): errno {err}");
    let err = errno_of(ioctl_ptr(&s, I_GETPMSG, page), "I_GETPMSG(unmapped)")?;
    ensure!(err == libc::EFAULT, "I_GETPMSG(unmapped): errno {err}");
    // A small write (the shim's inline copy, `uio.rs`: bytes at 8, words and bytes at 20
    // and 48) whose buffer runs into an unmapped page: a write that is one piece is sent
    // whole or not at all (the host's `write_efault_at_every_position`), so EFAULT and
    // nothing sent, whether the copy is the shim's or `UserSlice`'s (70 bytes).
    let two = untouched(8192)?;
    // SAFETY: the second of the two pages just mapped, unmapped at once; only the first is
    // touched.
    unsafe { libc::munmap(two.add(4096).cast(), 4096) };
    // SAFETY: the 3 bytes before the unmapped page are mapped and writable.
    let tail = unsafe {
        let t = two.add(4093);
        std::ptr::copy_nonoverlapping(b"abc".as_ptr(), t, 3);
        t
    };
    for n in [8usize, 20, 48, 70] {
        // SAFETY: deliberately runs into the unmapped page.
        let r = unsafe { libc::write(s.raw(), tail.cast(), n) };
        let err = io::Error::last_os_error().raw_os_error();
        ensure!(
            r == -1 && err == Some(libc::EFAULT),
            "write of {n} across an unmapped page: {r} {err:?}"
        );
    }
    // Nothing of them was sent: the next bytes read are the next write's.
    e(s.write(b"xyz"), "write")?;
    ensure!(
        read_n(&s, 3)? == b"xyz",
        "bytes of a faulting write were sent"
    );
    // A `struct strpmsg` (40 bytes, the shim's word copy) that runs into the unmapped page:
    // putmsg and getmsg fail with EFAULT, nothing sent or taken.
    let data = *b"pmsg";
    let sp = strpmsg {
        ctlbuf: strbuf::NONE,
        databuf: strbuf {
            maxlen: 4,
            len: 4,
            buf: data.as_ptr().cast_mut().cast(),
        },
        band: 0,
        flags: 0,
    };
    let size = std::mem::size_of::<strpmsg>();
    // SAFETY: the first `size - 8` bytes of the structure, before the unmapped page, are
    // mapped and writable; the rest runs into the unmapped page.
    let cut = unsafe {
        let at = two.add(4096 - (size - 8));
        std::ptr::copy_nonoverlapping((&raw const sp).cast::<u8>(), at, size - 8);
        at
    };
    let err = errno_of(ioctl_ptr(&s, I_PUTPMSG, cut.cast()), "I_PUTPMSG(cut)")?;
    ensure!(
        err == libc::EFAULT,
        "I_PUTPMSG across an unmapped page: errno {err}"
    );
    e(s.write(b"one"), "write")?;
    let err = errno_of(ioctl_ptr(&s, I_GETPMSG, cut.cast()), "I_GETPMSG(cut)")?;
    ensure!(
        err == libc::EFAULT,
        "I_GETPMSG across an unmapped page: errno {err}"
    );
    // A getmsg whose structure is read but whose write-back faults (a read-only page): the
    // message goes back, nothing consumed.
    let mut got = [0u8; 8];
    let want = strpmsg {
        ctlbuf: strbuf::NONE,
        databuf: strbuf {
            maxlen: 8,
            len: 0,
            buf: got.as_mut_ptr().cast(),
        },
        band: 0,
        flags: MSG_ANY,
    };
    // SAFETY: the first page is mapped and writable; then made read-only.
    unsafe {
        std::ptr::copy_nonoverlapping((&raw const want).cast::<u8>(), two, size);
        ensure!(
            libc::mprotect(two.cast(), 4096, libc::PROT_READ) == 0,
            "mprotect: {}",
            io::Error::last_os_error()
        );
    }
    let err = errno_of(ioctl_ptr(&s, I_GETPMSG, two.cast()), "I_GETPMSG(read-only)")?;
    ensure!(
        err == libc::EFAULT,
        "I_GETPMSG with a read-only structure: errno {err}"
    );
    ensure!(
        read_n(&s, 3)? == b"one",
        "a getmsg whose write-back faulted took the message"
    );
    // SAFETY: the mapped first page, unmapped once.
    unsafe { libc::munmap(two.cast(), 4096) };
    Ok(())
}

/// `n` bytes of anonymous memory, mapped and never touched (no page present yet).
fn untouched(n: usize) -> Result<*mut u8, String> {
    // SAFETY: a new anonymous private mapping; nothing else refers to it.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            n,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    ensure!(
        p != libc::MAP_FAILED,
        "mmap: {}",
        io::Error::last_os_error()
    );
    Ok(p.cast())
}

/// With write hold on and its cell open, a write joins the held message with a copy that
/// cannot fault (`uio.rs`: the shim's up to 64 bytes, else `copy_from_user_nofault`); one
/// that would fault appends nothing and goes the staged way. A bad pointer or a buffer
/// running into an unmapped page: EFAULT, nothing held; a buffer in pages not yet present
/// (the copy without a fault fails, the staged copy faults them in): written, in order.
fn t_efault_held() -> R {
    let (a, b) = e(Stream::pipe(), "s_pipe")?;
    e(a.set_write_opt(SNDHOLD), "I_SWROPT SNDHOLD")?;
    e(a.write(b"a"), "write")?; // held under the Stream lock; the cell opens
    let bad = 8usize as *const libc::c_void;
    // SAFETY: deliberately invalid user pointer: the kernel must fail with EFAULT.
    let r = unsafe { libc::write(a.raw(), bad, 10) };
    let err = io::Error::last_os_error().raw_os_error();
    ensure!(
        r == -1 && err == Some(libc::EFAULT),
        "held write(8): {r} {err:?}"
    );
    let two = untouched(8192)?;
    // SAFETY: the second page of the mapping, unmapped; the first stays mapped.
    unsafe { libc::munmap(two.add(4096).cast(), 4096) };
    // SAFETY: the 3 bytes before the unmapped page are mapped and writable.
    let tail = unsafe {
        let t = two.add(4093);
        std::ptr::copy_nonoverlapping(b"abc".as_ptr(), t, 3);
        t
    };
    for n in [8usize, 64, 100] {
        // SAFETY: deliberately runs into the unmapped page.
        let r = unsafe { libc::write(a.raw(), tail.cast(), n) };
        let err = io::Error::last_os_error().raw_os_error();
        ensure!(
            r == -1 && err == Some(libc::EFAULT),
            "held write of {n} across an unmapped page: {r} {err:?}"
        );
    }
    let sizes = [16usize, 64, 100];
    let fresh = untouched(4096 * sizes.len())?;
    for (i, n) in sizes.into_iter().enumerate() {
        // SAFETY: `n` bytes inside page `i` of the untouched mapping, readable.
        let r = unsafe { libc::write(a.raw(), fresh.add(4096 * i).cast(), n) };
        ensure!(
            r == n as isize,
            "held write of {n} from a page not present: {r} {:?}",
            io::Error::last_os_error()
        );
    }
    e(a.write(b"xyz"), "write")?;
    e(a.set_write_opt(0), "I_SWROPT 0")?; // an ioctl: sends what is held
    let mut want = b"a".to_vec();
    want.resize(want.len() + sizes.iter().sum::<usize>(), 0);
    want.extend(b"xyz");
    ensure!(
        read_n(&b, want.len())? == want,
        "held bytes differ (a faulting write held something, or lost some)"
    );
    // SAFETY: the mapped pages of both mappings, unmapped once.
    unsafe {
        libc::munmap(two.cast(), 4096);
        libc::munmap(fresh.cast(), 4096 * sizes.len());
    }
    Ok(())
}

fn look(s: &Stream) -> io::Result<String> {
    let mut name = [0u8; FMNAMESZ + 1];
    ioctl_ptr(s, I_LOOK, name.as_mut_ptr().cast())?;
    let n = name.iter().position(|&c| c == 0).unwrap_or(name.len());
    Ok(String::from_utf8_lossy(&name[..n]).into_owned())
}

fn find(s: &Stream, name: &str) -> io::Result<i32> {
    let c = std::ffi::CString::new(name).map_err(|_| io::Error::other("nul"))?;
    ioctl_ptr(s, I_FIND, c.as_ptr().cast_mut().cast())
}

fn t_push_look_pop() -> R {
    let s = open()?;
    let err = errno_of(look(&s), "I_LOOK without modules")?;
    ensure!(err == libc::EINVAL, "I_LOOK empty: errno {err}");
    ensure!(
        e(find(&s, "nullmod"), "I_FIND")? == 0,
        "nullmod found before push"
    );
    e(s.push("nullmod"), "I_PUSH nullmod")?;
    ensure!(e(look(&s), "I_LOOK")? == "nullmod", "I_LOOK after push");
    ensure!(e(find(&s, "nullmod"), "I_FIND")? == 1, "I_FIND after push");
    let err = errno_of(find(&s, "nosuchmd"), "I_FIND unknown")?;
    ensure!(err == libc::EINVAL, "I_FIND unknown: errno {err}");
    let err = errno_of(s.push("nosuchmd"), "I_PUSH unknown")?;
    ensure!(err == libc::EINVAL, "I_PUSH unknown: errno {err}");
    // Data passes through the module both ways.
    e(s.write(b"through nullmod"), "write")?;
    ensure!(
        read_n(&s, 15)? == b"through nullmod",
        "round trip through nullmod"
    );
    e(s.pop(), "I_POP")?;
    let err = errno_of(look(&s), "I_LOOK after pop")?;
    ensure!(err == libc::EINVAL, "I_LOOK after pop: errno {err}");
    let err = errno_of(s.pop(), "I_POP with no module")?;
    ensure!(err == libc::EINVAL, "I_POP empty: errno {err}");
    Ok(())
}

fn t_nread() -> R {
    let s = open()?;
    ensure!(nread(&s)? == (0, 0), "I_NREAD on empty");
    e(s.write(&[1u8; 10]), "write")?;
    e(s.write(&[2u8; 20]), "write")?;
    let (msgs, first) = nread(&s)?;
    ensure!(
        msgs == 2 && first == 10,
        "I_NREAD: {msgs} messages, first {first}"
    );
    Ok(())
}

fn t_flush() -> R {
    let s = open()?;
    e(s.write(b"to be flushed"), "write")?;
    e(s.ioctl_int(I_FLUSH, FLUSHRW), "I_FLUSH")?;
    ensure!(nread(&s)?.0 == 0, "data left after I_FLUSH FLUSHRW");
    e(s.write(b"after"), "write")?;
    e(s.ioctl_int(I_FLUSH, FLUSHW), "I_FLUSH FLUSHW")?;
    // sloop turns FLUSHW around as FLUSHR: the looped-back data is gone too.
    ensure!(nread(&s)?.0 == 0, "FLUSHW did not flush the loopback");
    let err = errno_of(s.ioctl_int(I_FLUSH, 0), "I_FLUSH 0")?;
    ensure!(err == libc::EINVAL, "I_FLUSH 0: errno {err}");
    Ok(())
}

fn t_istr() -> R {
    let s = open()?;
    let mut buf = *b"hello, driver";
    let mut ic = strioctl {
        ic_cmd: SLOOP_IOC_ECHO,
        ic_timout: -1,
        ic_len: buf.len() as i32,
        ic_dp: buf.as_mut_ptr().cast(),
    };
    let r = e(
        ioctl_ptr(&s, I_STR, (&mut ic as *mut strioctl).cast()),
        "I_STR echo",
    )?;
    ensure!(
        r == 0 && ic.ic_len == 13,
        "I_STR echo: r {r} len {}",
        ic.ic_len
    );
    ensure!(&buf == b"hello, driver", "I_STR data");
    ic.ic_cmd = 0x1234;
    let err = errno_of(
        ioctl_ptr(&s, I_STR, (&mut ic as *mut strioctl).cast()),
        "I_STR nak",
    )?;
    ensure!(err == libc::EINVAL, "I_STR unknown command: errno {err}");
    Ok(())
}

extern "C" fn on_alarm(_: libc::c_int) {}

fn t_signal_interrupts_read() -> R {
    let s = open()?;
    // SAFETY: installing a no-op handler without SA_RESTART, so the read fails with EINTR.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_alarm as *const () as usize;
        sa.sa_flags = 0;
        libc::sigaction(libc::SIGALRM, &sa, std::ptr::null_mut());
        libc::alarm(1);
    }
    let mut b = [0u8; 8];
    let err = errno_of(s.read(&mut b), "read interrupted")?;
    ensure!(err == libc::EINTR, "read after SIGALRM: errno {err}");
    // The Stream still works.
    e(s.write(b"ok"), "write")?;
    ensure!(read_n(&s, 2)? == b"ok", "read after EINTR");
    Ok(())
}

fn t_close_with_data() -> R {
    for _ in 0..10 {
        let s = open()?;
        e(s.write(&pattern(3000, 1)), "write")?;
        e(s.putmsg(Some(b"ctl"), Some(b"data"), 0), "putmsg")?;
        e(s.putpmsg(Some(b"hi"), None, 0, MSG_HIPRI), "putpmsg")?;
        e(s.push("nullmod"), "push")?;
        drop(s);
    }
    Ok(())
}

fn t_open_close_cycles() -> R {
    for i in 0..200 {
        let s = open()?;
        ensure!(s.as_fd().as_raw_fd() >= 0, "bad fd");
        if i % 2 == 0 {
            e(s.write(&[i as u8; 32]), "write")?;
            ensure!(read_n(&s, 32)? == [i as u8; 32], "cycle {i} data");
        }
    }
    Ok(())
}

fn main() {
    let cases: &[Case] = &[
        (
            "open clone device, isastream 1 (and 0 on a Linux pipe)",
            t_open_is_stream,
        ),
        (
            "write/read round trip 1, 64, 4096, 65536 bytes",
            t_roundtrip_sizes,
        ),
        (
            "RNORM byte-stream reads across messages",
            t_rnorm_byte_stream,
        ),
        ("putmsg/getmsg control + data round trip", t_putmsg_getmsg),
        (
            "putpmsg/getpmsg MSG_HIPRI first, MSG_BAND band 3",
            t_hipri_and_bands,
        ),
        (
            "getmsg MORECTL|MOREDATA partial retrieval",
            t_getmsg_partial,
        ),
        ("O_NONBLOCK read/getmsg on empty -> EAGAIN", t_nonblock_read),
        ("poll POLLOUT empty, POLLIN after write, POLLPRI", t_poll),
        (
            "blocked reader (thread) woken by a write",
            t_blocked_reader_woken,
        ),
        ("blocked poll (thread) woken by a write", t_poll_woken),
        (
            "flow control: EAGAIN, no POLLOUT, blocked writer woken",
            t_flow_control,
        ),
        ("bad user pointers -> EFAULT, nothing lost", t_efault),
        (
            "write hold: bad user pointers -> EFAULT, nothing held; pages not present joined",
            t_efault_held,
        ),
        ("I_PUSH nullmod / I_LOOK / I_FIND / I_POP", t_push_look_pop),
        ("I_NREAD counts messages and first size", t_nread),
        ("I_FLUSH FLUSHRW and FLUSHW turned around", t_flush),
        ("I_STR ack with echoed data, nak -> EINVAL", t_istr),
        (
            "signal interrupts a blocked read (EINTR)",
            t_signal_interrupts_read,
        ),
        ("close with data and a module pending", t_close_with_data),
        ("200 open/close cycles", t_open_close_cycles),
        (
            "STREAMS pipe: full duplex, putmsg/getmsg, EOF and EPIPE after close",
            pipes::t_pipe_full_duplex_and_hangup,
        ),
        (
            "STREAMS pipe: I_SENDFD/I_RECVFD pass a file, EBADMSG/EAGAIN/EBADF/EINVAL",
            pipes::t_pipe_fd_passing,
        ),
        (
            "I_SETSIG: SIGPOLL on input from the other end and on hangup, not on own writes",
            pipes::t_pipe_sigpoll,
        ),
        (
            "STREAMS pipe ends are FIFOs (fstat S_IFIFO, pipe:[N]), still Streams",
            pipes::t_pipe_ends_are_fifos,
        ),
        (
            "read fill (RFILL) across a pipe: a blocking reader sleeps until 64 bytes came in 8 writes; non-blocking takes what is there, EAGAIN on none",
            pipes::t_pipe_read_fill,
        ),
        (
            "I_SWROPT SNDMREAD (perftest -M) as nobody: set and read back at one end, EINVAL for other bits, held writes reach a blocking reader in order",
            pipes::t_pipe_sndmread,
        ),
        (
            "echo: write/read and putmsg/getmsg round trips",
            drivers::t_echo_roundtrip,
        ),
        (
            "echo: flow control, FLUSHW turned around",
            drivers::t_echo_flow_control_and_flush,
        ),
        (
            "echo: every ioctl NAKed (EINVAL)",
            drivers::t_echo_ioctl_nak,
        ),
        (
            "nuls: sink takes 4 MiB without flow control, nothing comes back",
            drivers::t_nuls_sink,
        ),
        ("nuls: I_FLUSH/I_FLUSHBAND complete", drivers::t_nuls_flush),
        (
            "nuls: every ioctl NAKed (EINVAL)",
            drivers::t_nuls_ioctl_nak,
        ),
        (
            "I_SET_HIWAT/I_SET_LOWAT: head flow control moves, EINVAL on bad values",
            drivers::t_set_hiwat_lowat,
        ),
        (
            "/proc/streams/modules: module_info and counters that move",
            drivers::t_proc_modules,
        ),
        (
            "FIFO: non-blocking opens, ENXIO, O_RDWR",
            fifo::t_fifo_nonblocking_opens,
        ),
        (
            "FIFO: blocking opens wait for the other side",
            fifo::t_fifo_blocking_opens,
        ),
        (
            "FIFO: signal interrupts a waiting open (EINTR)",
            fifo::t_fifo_open_interrupted,
        ),
        (
            "FIFO: data between openers, 64 KiB with flow control",
            fifo::t_fifo_data_between_openers,
        ),
        (
            "FIFO: EOF after the last writer, new writer readable",
            fifo::t_fifo_eof_after_last_writer,
        ),
        (
            "FIFO: EPIPE after the last reader, data kept",
            fifo::t_fifo_epipe_after_last_reader,
        ),
        (
            "FIFO: shared modules, all discarded after close",
            fifo::t_fifo_discarded_after_close,
        ),
        (
            "FIFO: putmsg/getmsg message boundaries",
            fifo::t_fifo_putmsg_getmsg,
        ),
        (
            "FIFO: isastream 1, fstat S_IFCHR",
            fifo::t_fifo_fstat_isastream,
        ),
        (
            "bufmod on a pipe: chunked sb_hdr records, SBIOC*",
            bufmod::t_bufmod_on_pipe,
        ),
        (
            "bufmod: SBIOCSTIME timeout sends a partial chunk by itself (qtimeout timer)",
            bufmod::t_bufmod_timeout_fires,
        ),
        (
            "mux: I_LINK echo, data both ways, lower fd EINVAL, I_UNLINK gives it back",
            mux::t_mux_link_unlink,
        ),
        (
            "mux: closing the upper Stream undoes its I_LINK",
            mux::t_mux_close_unlinks,
        ),
        (
            "mux: I_PLINK outlives its Stream, MUX_ROUTE, I_PUNLINK (lower fd closed too)",
            mux::t_mux_plink_persists,
        ),
        ("mux: I_LINK/I_UNLINK error cases", mux::t_mux_link_errors),
        (
            "rmmod streams refused while Streams are open (mux + linked echo, echo)",
            mux::t_rmmod_refused_while_open,
        ),
        (
            "fattach: pipe end on a path, opens from here and a child, EBUSY, fdetach",
            fattach::t_fattach_pipe_end,
        ),
        (
            "fattach: echo Stream on a path is the same Stream (S_IFCHR, rdev)",
            fattach::t_fattach_driver_stream,
        ),
        (
            "fattach: the attachment holds the Stream and streams.ko (rmmod refused)",
            fattach::t_fattach_holds_stream_and_module,
        ),
        (
            "fattach/fdetach errors: EINVAL, EBADF, ENOENT, ENOTDIR",
            fattach::t_fattach_errors,
        ),
        (
            "connld: each open of the path is a new pipe, the server gets the other end",
            connld::t_connld_unique_pipes,
        ),
        (
            "connld: EAGAIN / waiting open when full, I_POP restores, ENXIO, pipes only",
            connld::t_connld_flow_and_errors,
        ),
        (
            "I_STR ic_timout: ETIME after 1 s, also while waiting for the ioctl slot",
            headops::t_istr_timeout,
        ),
        (
            "writev of 3 iovecs is one message (getmsg sees the concatenation)",
            headops::t_writev_one_message,
        ),
        (
            "readv fills 2 iovecs in order",
            headops::t_readv_fills_in_order,
        ),
        (
            "writev/readv with a bad iov base: EFAULT, nothing sent or lost",
            headops::t_vectored_efault,
        ),
        (
            "O_ASYNC + F_SETOWN (and FIOASYNC): SIGIO with POLL_IN on input",
            headops::t_fasync_sigio,
        ),
        (
            "epoll EPOLLET on a pipe end: an edge for every arrival, also with unread data",
            headops::t_epoll_edge_each_arrival,
        ),
        (
            "close drain: I_SETCLTIME 300 ms bounds a stalled close, O_NONBLOCK does not wait",
            headops::t_close_drain_cltime,
        ),
        (
            "xput: 100000 puts from an hrtimer (softirq), in order, flow control, back-enable",
            xput::t_xput_hrtimer,
        ),
        (
            "xput: 100000 puts from a tasklet, in order, flow control, back-enable",
            xput::t_xput_tasklet,
        ),
        (
            "xput: 100000 puts from a workqueue, in order, flow control, back-enable",
            xput::t_xput_workqueue,
        ),
        (
            "xput: close mid-run in every mode stops and frees the producer, later put refused",
            xput::t_xput_close_mid_run,
        ),
        (
            "xput: bad requests EINVAL, second start EBUSY",
            xput::t_xput_errors,
        ),
        (
            "userfaultfd: read stuck 5 s in a page fault, the pipe's other end and echo work on",
            uffd::t_read_into_stalled_page,
        ),
        (
            "userfaultfd: write stuck 5 s in a page fault, the pipe and echo work on",
            uffd::t_write_from_stalled_page,
        ),
        (
            "userfaultfd: a reader waiting for the stuck one's token gets EINTR on a signal",
            uffd::t_token_waiter_interrupted,
        ),
        (
            "userfaultfd: a reader stuck in a page fault dies at SIGKILL, nothing lost",
            uffd::t_stalled_reader_killed,
        ),
        (
            "userfaultfd: a reader of a mux upper Stream stuck in a page fault stalls no other user of the complex",
            uffd::t_mux_reader_stalled,
        ),
        (
            "spx: s_pipe by I_FDINSERT, both ways, hangup",
            loopdrv::t_spx_s_pipe,
        ),
        (
            "spx: flow control across, EAGAIN, POLLOUT again",
            loopdrv::t_spx_flow_control,
        ),
        (
            "I_FDINSERT: the message (sloop), tokens",
            loopdrv::t_fdinsert_message,
        ),
        (
            "I_FDINSERT: errors; loop driver M_ERRORs",
            loopdrv::t_fdinsert_errors,
        ),
        (
            "xti: t_open info, states, TOUTSTATE, t_getprotaddr, t_unbind, TNOTSUPPORT",
            xti::t_xti_info_and_states,
        ),
        (
            "xti: XTI<->XTI over 127.0.0.1, addresses, T_MORE, t_optmgmt XTI_SNDBUF",
            xti::t_xti_exchange,
        ),
        (
            "xti: XTI<->Linux UDP socket both ways, addresses checked",
            xti::t_xti_and_sockets,
        ),
        (
            "xti: T_UNITDATA_IND options IP_TTL/IP_TOS of the IP header (XTI and socket senders)",
            xti::t_xti_unitdata_options,
        ),
        (
            "xti: TADDRBUSY, TBADDATA, ICMP unreachable -> TLOOK/T_UDERR/ECONNREFUSED, TACCES",
            xti::t_xti_errors,
        ),
        (
            "xti: the express send against T_OPTMGMT and t_unbind/t_bind from another thread",
            xti::t_xti_express_send_races,
        ),
        (
            "security: fd-passing cycles refused (nobody, 200 pipes), streams.ko use count back",
            security::t_fdpass_cycles_refused,
        ),
        (
            "security: I_SENDFD refusals (busy pipe, AF_UNIX socket, FIFO), I_RECVFD returns 0",
            security::t_fdpass_refusals,
        ),
        (
            "security: files in flight limited by RLIMIT_NOFILE (nobody): ETOOMANYREFS",
            security::t_fdpass_inflight_limit,
        ),
        (
            "security: I_RECVFD ids mapped into the receiver's user namespace",
            security::t_recvfd_ids_in_receiver_namespace,
        ),
        (
            "security: I_SETSIG cleared at close and exit (nobody)",
            security::t_setsig_cleared_at_close_and_exit,
        ),
        (
            "security: I_SETSIG signals the registrant from another pid namespace",
            security::t_setsig_across_pid_namespaces,
        ),
        (
            "security: I_SETSIG of nobody signals nobody's process only",
            security::t_setsig_unprivileged_own_process_only,
        ),
        (
            "security: another user's persistent mux link: MUX_ROUTE and I_PUNLINK EPERM",
            security::t_mux_other_users_links,
        ),
        (
            "limits: module parameters readable by nobody, not writable",
            limits::t_limits_params_readable,
        ),
        (
            "limits: 8 MiB write as nobody, split at strmsgsz, read back whole",
            limits::t_limits_big_write_splits,
        ),
        (
            "limits: putmsg 32 MiB data / strctlsz+1 control as nobody: ERANGE",
            limits::t_limits_putmsg_erange,
        ),
        (
            "limits: zero-length putmsg loop as nobody: EAGAIN within the block limit",
            limits::t_limits_zero_length_putmsg_eagain,
        ),
        (
            "limits: I_SET_HIWAT INT_MAX: EPERM as nobody, ok as root",
            limits::t_limits_set_hiwat_cap,
        ),
        (
            "limits: MemAvailable drop bounded for what nobody pins on a pipe",
            limits::t_limits_memory_bounded,
        ),
        (
            "udpnet: udp: XTI<->XTI, XTI<->socket between two netns over veth, as uid 65534",
            udpnet::t_veth_udp,
        ),
        (
            "udpnet: udp: a reader that never reads: drops counted, held data bounded by the marks",
            udpnet::t_never_reads_udp,
        ),
        (
            "udpnet: rmmod streams refused while UDP Streams are open; they work on",
            udpnet::t_rmmod_refused_with_udp_open,
        ),
        (
            "udpnet: xtiso: XTI<->XTI, XTI<->socket between two netns over veth, as uid 65534",
            udpnet::t_veth_xtiso,
        ),
        (
            "udpnet: xtiso: a reader that never reads: drops counted, held data bounded by the marks",
            udpnet::t_never_reads_xtiso,
        ),
        (
            "xti: xtiso: XTI<->XTI over 127.0.0.1, addresses, T_MORE, t_optmgmt XTI_SNDBUF",
            xti::t_xtiso_exchange,
        ),
        (
            "xti: xtiso: XTI<->Linux UDP socket both ways, addresses checked",
            xti::t_xtiso_and_sockets,
        ),
        (
            "xti: xtiso: T_UNITDATA_IND options IP_TTL/IP_TOS of the IP header (XTI and socket senders)",
            xti::t_xtiso_unitdata_options,
        ),
        (
            "xti: xtiso: TADDRBUSY, TBADDATA, ICMP unreachable -> TLOOK/T_UDERR/ECONNREFUSED, TACCES",
            xti::t_xtiso_errors,
        ),
        (
            "tpiraw: udp, xtiso: T_BIND_REQ bad address -> TBADADDR, short -> TSYSERR/EINVAL, as uid 65534",
            tpiraw::t_tpiraw_bind_bad_address,
        ),
        (
            "tpiraw: udp, xtiso: T_BIND_REQ of a port below 1024 as uid 65534 -> TACCES",
            tpiraw::t_tpiraw_bind_privileged_port,
        ),
        (
            "tpiraw: udp, xtiso: T_UNITDATA_REQ bad option/destination/TSDU -> T_UDERROR_IND, as uid 65534",
            tpiraw::t_tpiraw_unitdata_bad,
        ),
        (
            "tpiraw: udp, xtiso: TOUTSTATE, T_UNITDATA_REQ unbound -> M_ERROR EPROTO, as uid 65534",
            tpiraw::t_tpiraw_out_of_state,
        ),
        (
            "tpiraw: udp, xtiso: short primitives -> TSYSERR/EINVAL or M_ERROR EPROTO, as uid 65534",
            tpiraw::t_tpiraw_short_primitives,
        ),
        (
            "tpiraw: udp, xtiso: unknown and T_COTS primitives -> TNOTSUPPORT, as uid 65534",
            tpiraw::t_tpiraw_unknown_primitive,
        ),
        (
            "tpiraw: udp, xtiso: T_OPTMGMT_REQ bad flags -> TBADFLAG, bad list -> TBADOPT, as uid 65534",
            tpiraw::t_tpiraw_optmgmt_bad,
        ),
        (
            "echo + pipemod, I_FLUSH FLUSHW returns (no flush ping-pong), as uid 65534",
            stressfound::t_pipemod_flush_on_driver_returns,
        ),
    ];
    println!("1..{}", cases.len());
    let (mut pass, mut fail) = (0, 0);
    // `strtest WORD`: only the cases whose name contains WORD (numbered as in the full run).
    let only = std::env::args().nth(1);
    for (i, (name, f)) in cases.iter().enumerate() {
        if only.as_deref().is_some_and(|w| !name.contains(w)) {
            continue;
        }
        match f() {
            Ok(()) => {
                pass += 1;
                println!("ok {} - {name}", i + 1);
            }
            Err(why) => {
                fail += 1;
                println!("not ok {} - {name}: {why}", i + 1);
            }
        }
    }
    println!("{pass} passed, {fail} failed");
    std::process::exit(i32::from(fail != 0));
}
