//! A user buffer whose page fault blocks (a userfaultfd page nobody serves yet) stalls only the
//! system call that copies to or from it, never the Stream: no user copy happens with a Stream
//! lock held (core `sth/call.rs`).
//!
//! - read(2) into a missing page on end A of a STREAMS pipe (data written first): for 5 s, end B
//!   writes, reads and polls, end A's own write side and poll work, another reader of end A
//!   waits for the reader token (EAGAIN non-blocking), another Stream (an `echo` clone) works;
//!   then the fault is served and the read returns its data.
//! - write(2) from a missing page: the same, then the write completes and B reads the bytes.
//! - A second reader of end A waiting for the token (an interruptible sleep) gets EINTR on a
//!   signal; the reader stuck in the fault then gets its data when the fault is served. (The
//!   copy itself is killable, not interruptible: the kernel retries a fault taken in kernel
//!   mode unless the signal is fatal, as for a Linux pipe.)
//! - A child stuck in the fault is killed (SIGKILL): it dies at once, and nothing it had
//!   taken is lost.
//!
//! - read(2) into a missing page on an upper Stream of the `mux` complex (an echo Stream linked
//!   under it): for 5 s, the stuck Stream's own write side and poll, another upper Stream of
//!   the same complex with its own linked echo, a new open of the mux device, a new upper
//!   Stream's I_LINK, round trip and I_UNLINK all work; then the read returns its data.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use streams::{Stream, I_LINK, I_NREAD, I_UNLINK};

use crate::{e, errno_of, R};

const ECHO: &str = "/dev/streams/clone/echo";
const MUX: &str = "/dev/streams/clone/mux";
const PAGE: usize = 4096;
/// How long a fault is left unserved while the rest of the world goes on.
const STALL: Duration = Duration::from_secs(5);
/// The longest any other operation may take meanwhile.
const QUICK: Duration = Duration::from_millis(500);

// <linux/userfaultfd.h>: _IOWR(0xAA, nr, struct) for UFFDIO_API (24 bytes), UFFDIO_REGISTER (32)
// and UFFDIO_COPY (40).
const UFFD_API: u64 = 0xAA;
const UFFDIO_API: libc::c_ulong = 0xC018_AA3F;
const UFFDIO_REGISTER: libc::c_ulong = 0xC020_AA00;
const UFFDIO_COPY: libc::c_ulong = 0xC028_AA03;
const UFFDIO_REGISTER_MODE_MISSING: u64 = 1;
const UFFD_EVENT_PAGEFAULT: u8 = 0x12;

#[repr(C)]
struct UffdioApi {
    api: u64,
    features: u64,
    ioctls: u64,
}

#[repr(C)]
struct UffdioRegister {
    start: u64,
    len: u64,
    mode: u64,
    ioctls: u64,
}

#[repr(C)]
struct UffdioCopy {
    dst: u64,
    src: u64,
    len: u64,
    mode: u64,
    copy: i64,
}

/// One anonymous page registered with a userfaultfd for missing faults: any access blocks
/// until [`Uffd::serve`] fills it.
struct Uffd {
    fd: OwnedFd,
    page: *mut u8,
}

// SAFETY: the page is only touched through system calls (read/write/ioctl) and `serve`, which
// the kernel serialises; the pointer is an address, not a Rust reference.
unsafe impl Send for Uffd {}
// SAFETY: as above.
unsafe impl Sync for Uffd {}

impl Uffd {
    fn new() -> Result<Uffd, String> {
        // SAFETY: plain system call; kernel faults are handled too (no UFFD_USER_MODE_ONLY),
        // which needs CAP_SYS_PTRACE: the test runs as root in the guest.
        let fd =
            unsafe { libc::syscall(libc::SYS_userfaultfd, libc::O_CLOEXEC | libc::O_NONBLOCK) };
        if fd < 0 {
            return Err(format!(
                "userfaultfd: {} (CONFIG_USERFAULTFD?)",
                io::Error::last_os_error()
            ));
        }
        // SAFETY: a new descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
        let mut api = UffdioApi {
            api: UFFD_API,
            features: 0,
            ioctls: 0,
        };
        // SAFETY: `api` is a valid uffdio_api for the call.
        let r = unsafe { libc::ioctl(fd.as_raw_fd(), UFFDIO_API, &mut api) };
        ensure!(r == 0, "UFFDIO_API: {}", io::Error::last_os_error());
        // SAFETY: a fresh private anonymous mapping of one page.
        let page = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        ensure!(
            page != libc::MAP_FAILED,
            "mmap: {}",
            io::Error::last_os_error()
        );
        let mut reg = UffdioRegister {
            start: page as u64,
            len: PAGE as u64,
            mode: UFFDIO_REGISTER_MODE_MISSING,
            ioctls: 0,
        };
        // SAFETY: `reg` is a valid uffdio_register for the call.
        let r = unsafe { libc::ioctl(fd.as_raw_fd(), UFFDIO_REGISTER, &mut reg) };
        ensure!(r == 0, "UFFDIO_REGISTER: {}", io::Error::last_os_error());
        Ok(Uffd {
            fd,
            page: page.cast(),
        })
    }

    /// Wait (at most 5 s) until something faults on the page.
    fn wait_fault(&self) -> R {
        let mut p = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, 5000) };
        ensure!(r == 1, "no page fault on the userfaultfd page within 5 s");
        let mut msg = [0u8; 32];
        // SAFETY: `msg` has room for one struct uffd_msg (32 bytes).
        let n = unsafe { libc::read(self.fd.as_raw_fd(), msg.as_mut_ptr().cast(), 32) };
        ensure!(
            n == 32 && msg[0] == UFFD_EVENT_PAGEFAULT,
            "userfaultfd message: {n} bytes, event {:#x}",
            msg[0]
        );
        Ok(())
    }

    /// Fill the page with `fill` (and wake whoever faulted on it).
    fn serve(&self, fill: u8) -> R {
        let src = vec![fill; 2 * PAGE];
        let off = src.as_ptr().align_offset(PAGE);
        let mut c = UffdioCopy {
            dst: self.page as u64,
            src: src[off..].as_ptr() as u64,
            len: PAGE as u64,
            mode: 0,
            copy: 0,
        };
        // SAFETY: `c` is a valid uffdio_copy; `src` outlives the call.
        let r = unsafe { libc::ioctl(self.fd.as_raw_fd(), UFFDIO_COPY, &mut c) };
        ensure!(
            r == 0 && c.copy == PAGE as i64,
            "UFFDIO_COPY: {} (copied {})",
            io::Error::last_os_error(),
            c.copy
        );
        Ok(())
    }

    /// The page's address (a method, so that closures capture the `Uffd`, not the pointer).
    fn page(&self) -> *mut u8 {
        self.page
    }

    fn bytes(&self, n: usize) -> Vec<u8> {
        // SAFETY: the page is mapped and was served (the caller read or wrote it since).
        unsafe { std::slice::from_raw_parts(self.page, n.min(PAGE)).to_vec() }
    }
}

/// Serves the page when dropped: a case that fails (`?`) while a thread of its
/// `thread::scope` is stuck in the fault must free that thread, or the scope would wait for it
/// for ever (under fault injection a `quick` step may fail with ENOSR at any point). After a
/// `serve` the page is there and this second copy fails with EEXIST, which is ignored.
struct Unstick<'a>(&'a Uffd);

impl Drop for Unstick<'_> {
    fn drop(&mut self) {
        let _ = self.0.serve(0);
    }
}

impl Drop for Uffd {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, not used any more.
        unsafe { libc::munmap(self.page.cast(), PAGE) };
    }
}

fn raw_read(fd: i32, buf: *mut u8, len: usize) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `len` bytes (a mapped page, maybe not yet present).
    let r = unsafe { libc::read(fd, buf.cast(), len) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

fn raw_write(fd: i32, buf: *const u8, len: usize) -> io::Result<usize> {
    // SAFETY: `buf` is valid for `len` bytes (a mapped page, maybe not yet present).
    let r = unsafe { libc::write(fd, buf.cast(), len) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

fn poll_now(fd: i32, events: i16) -> Result<i16, String> {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut p, 1, 0) };
    ensure!(r >= 0, "poll: {}", io::Error::last_os_error());
    Ok(p.revents)
}

/// Run `f` and fail if it takes longer than [`QUICK`].
fn quick<T>(what: &str, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    let t = Instant::now();
    let v = f()?;
    let d = t.elapsed();
    ensure!(
        d < QUICK,
        "{what} took {d:?} while a call was stuck in a page fault"
    );
    Ok(v)
}

/// For [`STALL`], over and over: the other end writes, reads and polls, end A writes and polls,
/// a non-blocking reader of end A finds the token taken (only if `token`), an echo Stream
/// round-trips. Each step must be quick. Returns the bytes end B wrote to end A meanwhile.
fn life_goes_on(a: &Stream, b: &Stream, echo: &Stream, token: bool) -> Result<usize, String> {
    let until = Instant::now() + STALL;
    let mut to_a = 0usize;
    let mut buf = [0u8; 64];
    while Instant::now() < until {
        quick("end B write", || e(b.write(b"b->a"), "write B"))?;
        to_a += 4;
        quick("end A write", || e(a.write(b"a->b"), "write A"))?;
        let n = quick("end B read", || e(b.read(&mut buf), "read B"))?;
        ensure!(&buf[..n] == b"a->b", "end B read {:?}", &buf[..n]);
        let pb = quick("end B poll", || poll_now(b.raw(), libc::POLLOUT))?;
        ensure!(pb & libc::POLLOUT != 0, "end B poll {pb:#x}");
        let pa = quick("end A poll", || {
            poll_now(a.raw(), libc::POLLIN | libc::POLLOUT)
        })?;
        ensure!(
            pa & libc::POLLIN != 0 && pa & libc::POLLOUT != 0,
            "end A poll {pa:#x}"
        );
        if token {
            let err = quick("second reader of end A", || {
                // O_NONBLOCK for this read only: the token is held by the stuck reader.
                let mut x = [0u8; 4];
                let r = raw_read_nonblock(a.raw(), &mut x);
                errno_of(r, "non-blocking read of end A while the token is held")
            })?;
            ensure!(err == libc::EAGAIN, "second reader: errno {err}");
        }
        quick("echo round trip", || {
            e(echo.write(b"echo"), "echo write")?;
            let n = e(echo.read(&mut buf), "echo read")?;
            ensure!(&buf[..n] == b"echo", "echo read {:?}", &buf[..n]);
            Ok(())
        })?;
        thread::sleep(Duration::from_millis(50));
    }
    Ok(to_a)
}

/// A non-blocking read (`preadv2` with RWF_NOWAIT is not for character devices: flip
/// O_NONBLOCK on a duplicate of the descriptor, which shares the file).
fn raw_read_nonblock(fd: i32, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: fcntl on an open descriptor.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above; the flag is put back below.
    unsafe { libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK) };
    let r = raw_read(fd, buf.as_mut_ptr(), buf.len());
    // SAFETY: as above.
    unsafe { libc::fcntl(fd, libc::F_SETFL, fl) };
    r
}

/// Read `n` bytes of what end B wrote ("b->a" repeated) off end A.
fn drain_b_to_a(a: &Stream, mut n: usize) -> R {
    let mut buf = [0u8; 256];
    while n > 0 {
        let k = e(a.read(&mut buf[..n.min(256)]), "read A")?;
        ensure!(k > 0, "end of file on end A");
        n -= k;
    }
    Ok(())
}

pub(crate) fn t_read_into_stalled_page() -> R {
    let (a, b) = e(Stream::pipe(), "s_pipe")?;
    let echo = e(Stream::open(ECHO), "open echo")?;
    let u = Uffd::new()?;
    e(b.write(b"hello, stalled reader"), "write B")?;
    let done = AtomicBool::new(false);
    thread::scope(|sc| {
        let _unstick = Unstick(&u);
        let reader = sc.spawn(|| {
            let r = raw_read(a.raw(), u.page(), 64);
            done.store(true, Ordering::SeqCst);
            r
        });
        u.wait_fault()?;
        // The read took its message off the head and is stuck copying it out.
        ensure!(
            e(a.ioctl_get_int(I_NREAD), "I_NREAD")? == (0, 0),
            "the stuck read's message is still queued"
        );
        let to_a = life_goes_on(&a, &b, &echo, true)?;
        ensure!(
            !done.load(Ordering::SeqCst),
            "the read ended before the fault was served"
        );
        u.serve(0)?;
        let n = reader
            .join()
            .map_err(|_| "reader panicked".to_string())?
            .map_err(|err| format!("stuck read: {err}"))?;
        ensure!(n == 21, "stuck read returned {n}");
        ensure!(
            u.bytes(n) == b"hello, stalled reader",
            "stuck read delivered {:?}",
            u.bytes(n)
        );
        drain_b_to_a(&a, to_a)
    })
}

pub(crate) fn t_write_from_stalled_page() -> R {
    let (a, b) = e(Stream::pipe(), "s_pipe")?;
    let echo = e(Stream::open(ECHO), "open echo")?;
    let u = Uffd::new()?;
    let done = AtomicBool::new(false);
    thread::scope(|sc| {
        let _unstick = Unstick(&u);
        let writer = sc.spawn(|| {
            let r = raw_write(a.raw(), u.page(), PAGE);
            done.store(true, Ordering::SeqCst);
            r
        });
        u.wait_fault()?;
        let to_a = life_goes_on(&a, &b, &echo, false)?;
        ensure!(
            !done.load(Ordering::SeqCst),
            "the write ended before the fault was served"
        );
        u.serve(0x5a)?;
        let n = writer
            .join()
            .map_err(|_| "writer panicked".to_string())?
            .map_err(|err| format!("stuck write: {err}"))?;
        ensure!(n == PAGE, "stuck write returned {n}");
        let mut got = vec![0u8; PAGE];
        let mut k = 0;
        while k < PAGE {
            k += e(b.read(&mut got[k..]), "read B")?;
        }
        ensure!(got.iter().all(|&x| x == 0x5a), "end B read other bytes");
        drain_b_to_a(&a, to_a)
    })
}

extern "C" fn on_usr1(_: libc::c_int) {}

/// SIGUSR1 with a no-op handler and no SA_RESTART: a sleep it interrupts fails with EINTR.
fn catch_usr1() {
    // SAFETY: installing a no-op handler.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_usr1 as *const () as usize;
        sa.sa_flags = 0;
        libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut());
    }
}

pub(crate) fn t_token_waiter_interrupted() -> R {
    catch_usr1();
    let (a, b) = e(Stream::pipe(), "s_pipe")?;
    let u = Uffd::new()?;
    e(b.write(b"first"), "write B")?;
    e(b.write(b"second"), "write B")?;
    let waiting_tid = AtomicUsize::new(0);
    thread::scope(|sc| {
        let _unstick = Unstick(&u);
        let stuck = sc.spawn(|| raw_read(a.raw(), u.page(), 5));
        u.wait_fault()?;
        let waiting = sc.spawn(|| {
            // SAFETY: pthread_self has no preconditions.
            waiting_tid.store(unsafe { libc::pthread_self() } as usize, Ordering::SeqCst);
            let mut x = [0u8; 16];
            raw_read(a.raw(), x.as_mut_ptr(), 16)
        });
        // Let the second reader go to sleep on the token, then interrupt it.
        thread::sleep(Duration::from_millis(300));
        let tid = waiting_tid.load(Ordering::SeqCst) as libc::pthread_t;
        // SAFETY: the thread is alive (it has not been joined) and handles SIGUSR1.
        unsafe { libc::pthread_kill(tid, libc::SIGUSR1) };
        let t = Instant::now();
        let r = waiting
            .join()
            .map_err(|_| "waiting reader panicked".to_string())?;
        ensure!(
            t.elapsed() < Duration::from_secs(2),
            "the waiting reader did not wake"
        );
        let err = errno_of(r, "reader waiting for the token")?;
        ensure!(
            err == libc::EINTR,
            "waiting reader: errno {err}, expected EINTR"
        );
        // The stuck reader gets its data when the fault is served; the next read the rest.
        u.serve(0)?;
        let n = stuck
            .join()
            .map_err(|_| "stuck reader panicked".to_string())?
            .map_err(|err| format!("stuck read: {err}"))?;
        ensure!(
            u.bytes(n) == b"first",
            "stuck read delivered {:?}",
            u.bytes(n)
        );
        let mut x = [0u8; 16];
        let n = e(a.read(&mut x), "read A")?;
        ensure!(
            &x[..n] == b"second",
            "read after the interrupted one: {:?}",
            &x[..n]
        );
        Ok(())
    })
}

pub(crate) fn t_stalled_reader_killed() -> R {
    let (a, b) = e(Stream::pipe(), "s_pipe")?;
    e(b.write(b"not lost"), "write B")?;
    // SAFETY: no other thread runs in this process now; the child makes system calls only
    // and leaves with _exit.
    let pid = unsafe { libc::fork() };
    ensure!(pid >= 0, "fork: {}", io::Error::last_os_error());
    if pid == 0 {
        let code = match Uffd::new() {
            Ok(u) => {
                let _ = raw_read(a.raw(), u.page(), 64);
                3 // the read ended: it should not have
            }
            Err(_) => 2,
        };
        // SAFETY: leave the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    // Wait until the child's read has taken the message (it is then stuck copying it out).
    let taken = (|| -> R {
        let t = Instant::now();
        while e(a.ioctl_get_int(I_NREAD), "I_NREAD")? != (0, 0) {
            ensure!(t.elapsed() < Duration::from_secs(5), "the child never read");
            thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    })();
    if let Err(why) = taken {
        // Nobody serves the child's fault: left alone it would stay stuck (holding end A and
        // streams.ko) after this case gave up (I_NREAD failing with ENOSR under the fault pass).
        // SAFETY: our child, not yet waited for; then collect it.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
        return Err(why);
    }
    thread::sleep(Duration::from_millis(200));
    let mut st = 0;
    // SAFETY: our child.
    let r = unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) };
    ensure!(
        r == 0,
        "the child ended before it was killed (status {st:#x})"
    );
    // SAFETY: our child.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let t = Instant::now();
    // SAFETY: our child.
    let r = unsafe { libc::waitpid(pid, &mut st, 0) };
    ensure!(r == pid, "waitpid: {}", io::Error::last_os_error());
    ensure!(
        libc::WIFSIGNALED(st) && libc::WTERMSIG(st) == libc::SIGKILL,
        "child status {st:#x}"
    );
    ensure!(
        t.elapsed() < Duration::from_secs(2),
        "SIGKILL took {:?}",
        t.elapsed()
    );
    // What it had taken is back.
    let mut x = [0u8; 16];
    let n = e(a.read(&mut x), "read A")?;
    ensure!(&x[..n] == b"not lost", "read after the kill: {:?}", &x[..n]);
    Ok(())
}

/// Write `data` on `s` (an upper mux Stream routed to an echo) and read it back.
fn echo_back(s: &Stream, data: &[u8]) -> R {
    ensure!(e(s.write(data), "write")? == data.len(), "short write");
    let mut buf = [0u8; 64];
    let n = e(s.read(&mut buf), "read")?;
    ensure!(&buf[..n] == data, "came back as {:?}", &buf[..n]);
    Ok(())
}

pub(crate) fn t_mux_reader_stalled() -> R {
    let u1 = e(Stream::open(MUX), "open mux")?;
    let l1 = e(Stream::open(ECHO), "open echo")?;
    e(u1.ioctl_int(I_LINK, l1.raw()), "I_LINK under u1")?;
    let u2 = e(Stream::open(MUX), "open mux again")?;
    let l2 = e(Stream::open(ECHO), "open echo again")?;
    e(u2.ioctl_int(I_LINK, l2.raw()), "I_LINK under u2")?;
    let u = Uffd::new()?;
    e(u1.write(b"through the complex"), "write u1")?;
    let done = AtomicBool::new(false);
    thread::scope(|sc| {
        let _unstick = Unstick(&u);
        let reader = sc.spawn(|| {
            let r = raw_read(u1.raw(), u.page(), 64);
            done.store(true, Ordering::SeqCst);
            r
        });
        u.wait_fault()?;
        let until = Instant::now() + STALL;
        let mut on_u1 = 0usize;
        while Instant::now() < until {
            quick("write on the stuck upper Stream", || {
                e(u1.write(b"more"), "write u1")
            })?;
            on_u1 += 4;
            let p = quick("poll of the stuck upper Stream", || {
                poll_now(u1.raw(), libc::POLLIN | libc::POLLOUT)
            })?;
            ensure!(p & libc::POLLOUT != 0, "u1 poll {p:#x}");
            quick("round trip on the other upper Stream", || {
                echo_back(&u2, b"other user")
            })?;
            quick("open and close of the mux device", || {
                e(Stream::open(MUX), "open mux").map(drop)
            })?;
            quick("I_LINK and I_UNLINK on a new upper Stream", || {
                // (Not on u2: unlinking would leave u2 routed nowhere.)
                let u3 = e(Stream::open(MUX), "open mux")?;
                let l3 = e(Stream::open(ECHO), "open echo")?;
                let m = e(u3.ioctl_int(I_LINK, l3.raw()), "I_LINK")?;
                echo_back(&u3, b"third")?;
                e(u3.ioctl_int(I_UNLINK, m), "I_UNLINK")?;
                Ok(())
            })?;
            thread::sleep(Duration::from_millis(50));
        }
        ensure!(
            !done.load(Ordering::SeqCst),
            "the read ended before the fault was served"
        );
        u.serve(0)?;
        let n = reader
            .join()
            .map_err(|_| "reader panicked".to_string())?
            .map_err(|err| format!("stuck read: {err}"))?;
        ensure!(n >= 19, "stuck read returned {n}");
        ensure!(
            u.bytes(19) == b"through the complex",
            "stuck read delivered {:?}",
            u.bytes(n)
        );
        // What the stuck Stream's writes brought back meanwhile is all there, in order.
        let mut left = on_u1 + 19 - n;
        let mut got = u.bytes(n)[19..].to_vec();
        let mut buf = [0u8; 256];
        while left > 0 {
            let k = e(u1.read(&mut buf[..left.min(256)]), "read u1")?;
            ensure!(k > 0, "end of file on u1");
            got.extend_from_slice(&buf[..k]);
            left -= k;
        }
        ensure!(
            got.chunks(4).all(|c| c == b"more"),
            "u1 read back something else"
        );
        Ok(())
    })
}
