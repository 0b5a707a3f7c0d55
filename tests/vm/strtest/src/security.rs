//! Cases of issue 14 (`docs/security.md`): what one local user can make the kernel do to
//! another, or hold forever. Most run their interesting part in a child that dropped to
//! uid/gid 65534 (nobody), as a hostile local user would.
//!
//! - fd passing: no cycle of passed files can be made (a pipe end over its own pipe, a pipe
//!   end of a pipe that has files in flight, an AF_UNIX socket), so 200 pipes closed after
//!   trying leave `streams.ko`'s use count where it was; FIFOs refuse I_SENDFD; a user's files
//!   in flight are limited by its RLIMIT_NOFILE (ETOOMANYREFS).
//! - I_RECVFD returns 0 and reports the sender's ids as the *receiver's* user namespace sees
//!   them (a sender that is root in its own namespace is 65534 to a receiver outside it).
//! - I_SETSIG: a registration goes when its process closes the Stream (exit included), it
//!   signals the registrant from another pid namespace too, and an unprivileged registrant's
//!   events signal nobody else.
//! - Multiplexing (test build: `mux`, `echo`): another user can neither MUX_ROUTE to nor
//!   I_PUNLINK a persistent link (EPERM).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use streams::{
    strioctl, strrecvfd, Stream, I_GETSIG, I_PLINK, I_PUNLINK, I_RECVFD, I_SENDFD, I_SETSIG, I_STR,
    MUXID_ALL, S_INPUT,
};

use crate::{e, errno_of, ioctl_ptr, R};

/// Nobody's uid and gid.
const NOBODY: u32 = 65534;

fn pipe() -> Result<(Stream, Stream), String> {
    e(Stream::pipe(), "STREAMS pipe")
}

fn linux_pipe() -> Result<(OwnedFd, OwnedFd), String> {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(format!("pipe: {}", io::Error::last_os_error()));
    }
    // SAFETY: pipe(2) just returned these two descriptors, owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn sendfd(s: &Stream, fd: i32) -> io::Result<i32> {
    ioctl_ptr(s, I_SENDFD, fd as usize as *mut libc::c_void)
}

/// I_RECVFD on `s`: the ioctl's return value and what it filled in.
fn recvfd(s: &Stream) -> io::Result<(i32, strrecvfd)> {
    let mut rec = strrecvfd {
        fd: -1,
        uid: 0,
        gid: 0,
        fill: [0; 8],
    };
    let r = ioctl_ptr(s, I_RECVFD, (&mut rec as *mut strrecvfd).cast())?;
    Ok((r, rec))
}

/// Become nobody (group first): false if that failed.
fn drop_to_nobody() -> bool {
    // SAFETY: plain system calls.
    unsafe {
        libc::setgroups(0, std::ptr::null()) == 0
            && libc::setgid(NOBODY) == 0
            && libc::setuid(NOBODY) == 0
    }
}

/// Run `f` in a child process (as nobody if `nobody`); its value is the exit status. The
/// child never returns into the test harness.
fn spawn(nobody: bool, f: impl FnOnce() -> i32) -> Result<libc::pid_t, String> {
    // SAFETY: fork in a test program; the child makes plain system calls and leaves with
    // _exit, without running the parent's destructors.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: {}", io::Error::last_os_error()));
    }
    if pid == 0 {
        let code = if nobody && !drop_to_nobody() {
            100
        } else {
            f()
        };
        // SAFETY: leave the child at once.
        unsafe { libc::_exit(code) };
    }
    Ok(pid)
}

/// Wait for child `pid`: its exit status (or 200 + signal number if killed).
fn reap(pid: libc::pid_t) -> Result<i32, String> {
    let mut status = 0;
    // SAFETY: waiting for our own child.
    if unsafe { libc::waitpid(pid, &mut status, 0) } != pid {
        return Err(format!("waitpid: {}", io::Error::last_os_error()));
    }
    if libc::WIFEXITED(status) {
        Ok(libc::WEXITSTATUS(status))
    } else {
        Ok(200 + libc::WTERMSIG(status))
    }
}

fn in_child(nobody: bool, f: impl FnOnce() -> i32) -> Result<i32, String> {
    let pid = spawn(nobody, f)?;
    reap(pid)
}

/// `streams.ko`'s use count (`/sys/module/streams/refcnt`).
fn refcnt() -> Result<i64, String> {
    let s = e(
        std::fs::read_to_string("/sys/module/streams/refcnt"),
        "read /sys/module/streams/refcnt",
    )?;
    s.trim().parse().map_err(|x| format!("refcnt {s:?}: {x}"))
}

/// Wait (up to 2 s: the last file references may be dropped by delayed work) until the use
/// count is `want`; the last value seen.
fn settle_refcnt(want: i64) -> Result<i64, String> {
    let start = Instant::now();
    loop {
        let n = refcnt()?;
        if n == want || start.elapsed() > Duration::from_secs(2) {
            return Ok(n);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn errno(r: io::Result<i32>) -> i32 {
    match r {
        Ok(_) => 0,
        Err(x) => x.raw_os_error().unwrap_or(-1),
    }
}

/// 200 times, as nobody: a pipe end sent over its own pipe (either end), and the two-pipe
/// cycle (a1 in flight in B, then an end of B over A) are refused with EINVAL, everything is
/// closed; `streams.ko`'s use count is back where it was (it was 200 higher before the
/// refusal: each such pipe held itself).
pub(crate) fn t_fdpass_cycles_refused() -> R {
    let base = refcnt()?;
    let code = in_child(true, || {
        for _ in 0..200 {
            let Ok((p0, p1)) = Stream::pipe() else {
                return 1;
            };
            if errno(sendfd(&p0, p1.raw())) != libc::EINVAL {
                return 2;
            }
            if errno(sendfd(&p0, p0.raw())) != libc::EINVAL {
                return 3;
            }
            let (Ok((a0, a1)), Ok((b0, b1))) = (Stream::pipe(), Stream::pipe()) else {
                return 1;
            };
            // a1 travels in B (B held nothing: allowed); then B's end over A would close a
            // cycle through B's queue: refused.
            if sendfd(&b0, a1.raw()).is_err() {
                return 4;
            }
            if errno(sendfd(&a0, b1.raw())) != libc::EINVAL {
                return 5;
            }
            if errno(sendfd(&a0, b0.raw())) != libc::EINVAL {
                return 6;
            }
        }
        0
    })?;
    ensure!(
        code == 0,
        "child (nobody): status {code} (1 pipe failed, 2/3 an end over its own pipe, 4 a legal send refused, 5/6 the two-pipe cycle not refused, 100 setuid)"
    );
    let now = settle_refcnt(base)?;
    ensure!(
        now == base,
        "streams.ko use count {now} after closing everything, was {base}: Streams leaked"
    );
    Ok(())
}

/// A pipe end is passed once its pipe has nothing in flight any more; an AF_UNIX socket (it
/// can carry files the kernel cannot see through a Stream) and sends on a FIFO (its write side
/// is its own head) are refused with EINVAL.
pub(crate) fn t_fdpass_refusals() -> R {
    let (a0, a1) = pipe()?;
    let (b0, b1) = pipe()?;
    e(sendfd(&b0, a1.raw()), "I_SENDFD a1 over B")?;
    ensure!(
        errno(sendfd(&a0, b1.raw())) == libc::EINVAL,
        "an end of B (which holds a1) sent over A: not refused"
    );
    let (r, rec) = e(recvfd(&b1), "I_RECVFD on b1")?;
    ensure!(r == 0, "I_RECVFD returned {r}, expected 0 (SVR4)");
    // SAFETY: I_RECVFD installed this descriptor for us.
    drop(unsafe { OwnedFd::from_raw_fd(rec.fd) });
    e(sendfd(&a0, b1.raw()), "I_SENDFD b1 over A once B is empty")?;
    let mut sv = [0i32; 2];
    // SAFETY: `sv` has room for two descriptors.
    let ok = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, sv.as_mut_ptr()) };
    ensure!(ok == 0, "socketpair: {}", io::Error::last_os_error());
    // SAFETY: socketpair just returned these, owned by nobody else.
    let (s0, _s1) = unsafe { (OwnedFd::from_raw_fd(sv[0]), OwnedFd::from_raw_fd(sv[1])) };
    ensure!(
        errno(sendfd(&b0, s0.as_raw_fd())) == libc::EINVAL,
        "an AF_UNIX socket passed over a STREAMS pipe: not refused"
    );
    let path = std::ffi::CString::new("/dev/streams/fifo/3").map_err(|x| x.to_string())?;
    // SAFETY: `path` is a NUL-terminated string alive across the call.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    ensure!(fd >= 0, "open FIFO: {}", io::Error::last_os_error());
    // SAFETY: just opened, owned by nobody else.
    let fifo = Stream::from_fd(unsafe { OwnedFd::from_raw_fd(fd) });
    let (_lr, lw) = linux_pipe()?;
    let r = errno_of(sendfd(&fifo, lw.as_raw_fd()), "I_SENDFD on a FIFO")?;
    ensure!(
        r == libc::EINVAL,
        "I_SENDFD on a FIFO: errno {r}, expected EINVAL"
    );
    Ok(())
}

/// As nobody with RLIMIT_NOFILE = 64: exactly 64 files in flight, the next send fails with
/// ETOOMANYREFS; receiving one makes room for one more.
pub(crate) fn t_fdpass_inflight_limit() -> R {
    const LIMIT: u64 = 64;
    let code = in_child(true, || {
        let lim = libc::rlimit {
            rlim_cur: LIMIT,
            rlim_max: LIMIT,
        };
        // SAFETY: a valid rlimit; lowering is always allowed.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
            return 1;
        }
        let (Ok((p0, p1)), Ok((_lr, lw))) = (Stream::pipe(), linux_pipe()) else {
            return 2;
        };
        let mut sent = 0;
        let err = loop {
            match sendfd(&p0, lw.as_raw_fd()) {
                Ok(_) if sent <= LIMIT + 16 => sent += 1,
                Ok(_) => break 0,
                Err(x) => break x.raw_os_error().unwrap_or(-1),
            }
        };
        if err != libc::ETOOMANYREFS {
            return 3;
        }
        if sent != LIMIT {
            return 4;
        }
        let Ok((0, rec)) = recvfd(&p1) else {
            return 5;
        };
        // SAFETY: installed for us by I_RECVFD.
        drop(unsafe { OwnedFd::from_raw_fd(rec.fd) });
        if sendfd(&p0, lw.as_raw_fd()).is_err() {
            return 6;
        }
        if errno(sendfd(&p0, lw.as_raw_fd())) != libc::ETOOMANYREFS {
            return 7;
        }
        0
    })?;
    ensure!(
        code == 0,
        "child (nobody, {LIMIT} descriptors): status {code} (3 no ETOOMANYREFS, 4 limit not {LIMIT}, 5 I_RECVFD, 6 no room after receiving, 7 no limit again)"
    );
    Ok(())
}

/// Write `/proc/self/<name>` (user namespace maps).
fn proc_self(name: &str, v: &str) -> bool {
    std::fs::write(format!("/proc/self/{name}"), v).is_ok()
}

/// A sender that is nobody outside and root inside its own user namespace passes a file to a
/// receiver in the initial namespace: the receiver sees 65534/65534, not 0/0.
pub(crate) fn t_recvfd_ids_in_receiver_namespace() -> R {
    let (a, b) = pipe()?;
    let (_lr, lw) = linux_pipe()?;
    let code = in_child(true, || {
        // setuid made the process non-dumpable, which makes its /proc files root's: make it
        // dumpable again so that it may write its own id maps.
        // SAFETY: plain system calls; the child is single-threaded (unshare needs that).
        if unsafe {
            libc::prctl(libc::PR_SET_DUMPABLE, 1) != 0 || libc::unshare(libc::CLONE_NEWUSER) != 0
        } {
            return 1;
        }
        let uid = format!("0 {NOBODY} 1");
        if !proc_self("uid_map", &uid)
            || !proc_self("setgroups", "deny")
            || !proc_self("gid_map", &uid)
        {
            return 2;
        }
        // SAFETY: plain system calls.
        if unsafe { libc::geteuid() != 0 || libc::getegid() != 0 } {
            return 3;
        }
        if sendfd(&a, lw.as_raw_fd()).is_err() {
            return 4;
        }
        0
    })?;
    ensure!(
        code == 0,
        "sender child: status {code} (1 prctl or unshare(CLONE_NEWUSER), 2 id maps, 3 not root inside, 4 I_SENDFD, 100 setuid)"
    );
    let (r, rec) = e(recvfd(&b), "I_RECVFD")?;
    // SAFETY: installed for us by I_RECVFD.
    drop(unsafe { OwnedFd::from_raw_fd(rec.fd) });
    ensure!(r == 0, "I_RECVFD returned {r}, expected 0");
    ensure!(
        rec.uid == NOBODY && rec.gid == NOBODY,
        "receiver in the initial namespace sees uid/gid {}/{}, expected {NOBODY}/{NOBODY}",
        rec.uid,
        rec.gid
    );
    Ok(())
}

fn setsig(s: &Stream, events: i32) -> io::Result<i32> {
    ioctl_ptr(s, I_SETSIG, events as usize as *mut libc::c_void)
}

fn getsig(s: &Stream) -> io::Result<i32> {
    let mut v = 0i32;
    ioctl_ptr(s, I_GETSIG, (&mut v as *mut i32).cast()).map(|_| v)
}

/// A signal set with just SIGPOLL.
fn sigpoll_set() -> libc::sigset_t {
    // SAFETY: a zeroed sigset_t is a valid argument to sigemptyset, which fills it.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPOLL);
    }
    set
}

/// SIGPOLLs caught by a handler (delivered to a thread that did not block it).
static CAUGHT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

extern "C" fn on_sigpoll(_: libc::c_int) {
    CAUGHT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

/// Block SIGPOLL in the calling thread (`block`) or unblock it; while blocked, a handler
/// counts any SIGPOLL another thread takes (its default action would end the harness).
fn block_sigpoll(block: bool) {
    let handler = if block {
        on_sigpoll as *const () as libc::sighandler_t
    } else {
        libc::SIG_DFL
    };
    // SAFETY: installing an async-signal-safe handler (one atomic add) or the default.
    unsafe { libc::signal(libc::SIGPOLL, handler) };
    let set = sigpoll_set();
    let how = if block {
        libc::SIG_BLOCK
    } else {
        libc::SIG_UNBLOCK
    };
    // SAFETY: a valid set; the old mask is not wanted.
    unsafe { libc::pthread_sigmask(how, &set, std::ptr::null_mut()) };
}

/// Wait up to `ms` for a blocked SIGPOLL: whether one came (or a thread caught one).
fn wait_sigpoll(ms: u64) -> bool {
    if CAUGHT.swap(0, std::sync::atomic::Ordering::SeqCst) != 0 {
        return true;
    }
    let set = sigpoll_set();
    let t = libc::timespec {
        tv_sec: (ms / 1000) as libc::time_t,
        tv_nsec: ((ms % 1000) * 1_000_000) as libc::c_long,
    };
    // SAFETY: valid set and timeout; no siginfo wanted.
    unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &t) == libc::SIGPOLL }
}

/// Registrations go with their process: 8 children (the most a Stream keeps) register and
/// exit, then the parent's registration still finds a free slot; a close of a duplicate by
/// the registrant takes its registration out (SVR4 `strclean`).
pub(crate) fn t_setsig_cleared_at_close_and_exit() -> R {
    let (a, _b) = pipe()?;
    for i in 0..8 {
        let code = in_child(true, || if setsig(&a, S_INPUT).is_ok() { 0 } else { 1 })?;
        ensure!(code == 0, "child {i} (nobody): I_SETSIG failed ({code})");
    }
    e(
        setsig(&a, S_INPUT),
        "I_SETSIG after 8 registrants exited (slots never freed)",
    )?;
    ensure!(e(getsig(&a), "I_GETSIG")? == S_INPUT, "I_GETSIG mask");
    // SAFETY: dup of an open descriptor.
    let d = unsafe { libc::dup(a.raw()) };
    ensure!(d >= 0, "dup: {}", io::Error::last_os_error());
    // SAFETY: `d` is ours.
    unsafe { libc::close(d) };
    let r = errno_of(getsig(&a), "I_GETSIG after closing a duplicate")?;
    ensure!(
        r == libc::EINVAL,
        "registration still there after close: errno {r}"
    );
    Ok(())
}

/// The parent registers; a process in a new pid namespace writes the data: the parent gets
/// SIGPOLL (the registration names the process, not a number looked up where the event
/// happens).
pub(crate) fn t_setsig_across_pid_namespaces() -> R {
    let (a, b) = pipe()?;
    block_sigpoll(true);
    let r = (|| -> R {
        e(setsig(&a, S_INPUT), "I_SETSIG")?;
        let code = in_child(false, || {
            // SAFETY: plain system call in the single-threaded child.
            if unsafe { libc::unshare(libc::CLONE_NEWPID) } != 0 {
                return 1;
            }
            // Pid 1 of the new namespace writes.
            match spawn(false, || if b.write(b"x").is_ok() { 0 } else { 1 }) {
                Ok(g) => reap(g).unwrap_or(3),
                Err(_) => 2,
            }
        })?;
        ensure!(code == 0, "writer in a new pid namespace: status {code}");
        ensure!(wait_sigpoll(3000), "no SIGPOLL for the registrant in 3 s");
        e(setsig(&a, 0), "I_SETSIG 0")?;
        Ok(())
    })();
    while wait_sigpoll(0) {}
    block_sigpoll(false);
    r
}

/// Nobody registers on a pipe end it shares with root; root writes: nobody gets SIGPOLL,
/// root (not registered) gets none.
pub(crate) fn t_setsig_unprivileged_own_process_only() -> R {
    let (a, b) = pipe()?;
    let (rd, wr) = linux_pipe()?;
    block_sigpoll(true);
    let r = (|| -> R {
        let child = spawn(true, || {
            block_sigpoll(true);
            if setsig(&a, S_INPUT).is_err() {
                return 1;
            }
            // SAFETY: a one-byte write from a valid buffer.
            if unsafe { libc::write(wr.as_raw_fd(), b"r".as_ptr().cast(), 1) } != 1 {
                return 2;
            }
            if wait_sigpoll(5000) {
                0
            } else {
                3
            }
        })?;
        // The child holds the only write end now: if it leaves before it is ready (I_SETSIG
        // refused, as under fault injection), the read sees end of file instead of waiting
        // for ever.
        drop(wr);
        let mut c = [0u8; 1];
        // SAFETY: a one-byte read into a valid buffer.
        let n = unsafe { libc::read(rd.as_raw_fd(), c.as_mut_ptr().cast(), 1) };
        ensure!(n == 1, "child never got ready (status {:?})", reap(child));
        e(b.write(b"x"), "write")?;
        let code = reap(child)?;
        ensure!(
            code == 0,
            "registrant (nobody): status {code} (1 I_SETSIG, 3 no SIGPOLL)"
        );
        ensure!(!wait_sigpoll(200), "root, not registered, got SIGPOLL");
        Ok(())
    })();
    while wait_sigpoll(0) {}
    block_sigpoll(false);
    r
}

/// MUX_ROUTE of upper `s` to link `muxid` (the test `mux` driver's I_STR command).
fn mux_route(s: &Stream, muxid: i32) -> io::Result<i32> {
    let mut arg = muxid.to_ne_bytes();
    let mut ic = strioctl {
        ic_cmd: (b'X' as i32) << 8 | 1,
        ic_timout: -1,
        ic_len: 4,
        ic_dp: arg.as_mut_ptr().cast(),
    };
    ioctl_ptr(s, I_STR, (&mut ic as *mut strioctl).cast())
}

/// Root I_PLINKs an echo Stream under `mux`; nobody, on its own upper Stream of the same
/// driver, can neither route itself to that link (read and inject root's traffic) nor
/// I_PUNLINK it (EPERM; MUXID_ALL leaves it alone); root's traffic still flows, and root
/// unlinks it.
pub(crate) fn t_mux_other_users_links() -> R {
    let u = e(Stream::open("/dev/streams/clone/mux"), "open mux")?;
    let l = e(Stream::open("/dev/streams/clone/echo"), "open echo")?;
    let m = e(u.ioctl_int(I_PLINK, l.raw()), "I_PLINK")?;
    drop(l);
    let code = in_child(true, || {
        let Ok(ub) = Stream::open("/dev/streams/clone/mux") else {
            return 1;
        };
        if errno(mux_route(&ub, m)) != libc::EPERM {
            return 2;
        }
        if errno(ub.ioctl_int(I_PUNLINK, m)) != libc::EPERM {
            return 3;
        }
        if ub.ioctl_int(I_PUNLINK, MUXID_ALL).is_err() {
            return 4;
        }
        0
    })?;
    ensure!(
        code == 0,
        "nobody's upper Stream: status {code} (1 open, 2 MUX_ROUTE to root's link not EPERM, 3 I_PUNLINK not EPERM, 4 I_PUNLINK MUXID_ALL failed)"
    );
    ensure!(e(u.write(b"still"), "write")? == 5, "short write");
    let mut b = [0u8; 8];
    let n = e(u.read(&mut b), "read")?;
    ensure!(
        &b[..n] == b"still",
        "root's link after nobody tried: {:?}",
        &b[..n]
    );
    e(u.ioctl_int(I_PUNLINK, m), "I_PUNLINK by root")?;
    Ok(())
}
