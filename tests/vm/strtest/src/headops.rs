//! strtest cases for the Stream head file operations beyond read/write/ioctl/poll: the I_STR
//! timeout (`ic_timout`, ETIME), readv/writev (one message per writev), compat and fasync
//! (O_ASYNC → SIGIO), and the close-time drain (I_SETCLTIME).

use super::*;

const NULS: &str = "/dev/streams/clone/nuls";
/// The I_STR command `nuls` swallows without an answer (its timeout test command).
const NULS_IOC_SINK: i32 = (b'n' as i32) << 8 | 1;

fn istr_timed(s: &Stream, cmd: i32, timout: i32) -> io::Result<i32> {
    let mut ic = strioctl {
        ic_cmd: cmd,
        ic_timout: timout,
        ic_len: 0,
        ic_dp: std::ptr::null_mut(),
    };
    ioctl_ptr(s, I_STR, (&mut ic as *mut strioctl).cast())
}

pub(crate) fn t_istr_timeout() -> R {
    let s = e(Stream::open(NULS), NULS)?;
    let t = Instant::now();
    let err = errno_of(istr_timed(&s, NULS_IOC_SINK, 1), "I_STR never answered")?;
    let dt = t.elapsed();
    ensure!(
        err == libc::ETIME,
        "unanswered I_STR: errno {err}, want ETIME"
    );
    ensure!(
        dt >= Duration::from_millis(900) && dt < Duration::from_secs(5),
        "ic_timout 1 s expired after {dt:?}"
    );
    // The ioctl was cancelled: the slot is free, the next one is answered at once.
    let t = Instant::now();
    let err = errno_of(istr_timed(&s, 1, 0), "I_STR after timeout")?;
    ensure!(err == libc::EINVAL, "I_STR after the timeout: errno {err}");
    ensure!(t.elapsed() < Duration::from_millis(500), "slot not freed");
    let err = errno_of(istr_timed(&s, 1, -2), "ic_timout -2")?;
    ensure!(err == libc::EINVAL, "ic_timout -2: errno {err}");
    // The limit covers the wait for the Stream's one ioctl slot too: while another thread's
    // ioctl (limit 2 s) holds it, an I_STR with limit 1 s gives up after 1 s.
    let s = Arc::new(s);
    let s2 = s.clone();
    let t = Instant::now();
    let h = thread::spawn(move || {
        let r = istr_timed(&s2, NULS_IOC_SINK, 2);
        (r.map_err(|x| x.raw_os_error()), t.elapsed())
    });
    thread::sleep(Duration::from_millis(100));
    let err = errno_of(istr_timed(&s, 1, 1), "I_STR waiting for the slot")?;
    let dt = t.elapsed();
    ensure!(
        err == libc::ETIME,
        "I_STR waiting for the slot: errno {err}"
    );
    ensure!(
        dt >= Duration::from_millis(1000) && dt < Duration::from_millis(1900),
        "slot wait with ic_timout 1 ended after {dt:?}"
    );
    let (r, dt) = h.join().map_err(|_| "thread panicked".to_string())?;
    ensure!(r == Err(Some(libc::ETIME)), "the slot holder: {r:?}");
    ensure!(
        dt >= Duration::from_millis(1900),
        "the slot holder gave up after {dt:?}"
    );
    Ok(())
}

fn iov(b: &[u8]) -> libc::iovec {
    libc::iovec {
        iov_base: b.as_ptr().cast_mut().cast(),
        iov_len: b.len(),
    }
}

fn writev(s: &Stream, v: &[libc::iovec]) -> io::Result<usize> {
    // SAFETY: `v` is a valid array of iovecs (whose bases may deliberately be bad: the
    // kernel must answer EFAULT).
    let r = unsafe { libc::writev(s.raw(), v.as_ptr(), v.len() as i32) };
    usize::try_from(r).map_err(|_| io::Error::last_os_error())
}

fn readv(s: &Stream, v: &mut [libc::iovec]) -> io::Result<usize> {
    // SAFETY: as `writev`; the segments point to writable buffers (or deliberately bad ones).
    let r = unsafe { libc::readv(s.raw(), v.as_mut_ptr(), v.len() as i32) };
    usize::try_from(r).map_err(|_| io::Error::last_os_error())
}

pub(crate) fn t_writev_one_message() -> R {
    let s = open()?;
    let (a, b, c) = (pattern(10, 1), pattern(3000, 2), pattern(7, 3));
    let n = e(writev(&s, &[iov(&a), iov(&b), iov(&c)]), "writev")?;
    ensure!(n == 3017, "writev wrote {n} of 3017");
    let (msgs, first) = nread(&s)?;
    ensure!(
        msgs == 1 && first == 3017,
        "I_NREAD after writev: {msgs} messages, first {first}"
    );
    let mut d = vec![0u8; 4096];
    let g = e(s.getmsg(None, Some(&mut d), 0), "getmsg")?;
    let want: Vec<u8> = [a, b, c].concat();
    ensure!(g.data_len == Some(3017), "getmsg data_len {:?}", g.data_len);
    ensure!(
        d[..3017] == want[..],
        "the message is not the concatenation in order"
    );
    Ok(())
}

pub(crate) fn t_readv_fills_in_order() -> R {
    let s = open()?;
    let data = pattern(100, 9);
    ensure!(e(s.write(&data), "write")? == 100, "short write");
    let (mut x, mut y) = ([0u8; 30], [0u8; 200]);
    let mut v = [
        libc::iovec {
            iov_base: x.as_mut_ptr().cast(),
            iov_len: x.len(),
        },
        libc::iovec {
            iov_base: y.as_mut_ptr().cast(),
            iov_len: y.len(),
        },
    ];
    let n = e(readv(&s, &mut v), "readv")?;
    ensure!(n == 100, "readv read {n} of 100");
    ensure!(
        x[..] == data[..30] && y[..70] == data[30..],
        "readv split the bytes wrongly"
    );
    Ok(())
}

pub(crate) fn t_vectored_efault() -> R {
    let s = open()?;
    let good = pattern(8, 4);
    let bad = libc::iovec {
        iov_base: 8 as *mut libc::c_void, // unmapped, below mmap_min_addr
        iov_len: 16,
    };
    let err = errno_of(writev(&s, &[iov(&good), bad]), "writev with a bad base")?;
    ensure!(err == libc::EFAULT, "writev bad base: errno {err}");
    ensure!(nread(&s)?.0 == 0, "a failed writev sent something");
    ensure!(e(s.write(&good), "write")? == 8, "short write");
    let err = errno_of(readv(&s, &mut [bad]), "readv into a bad base")?;
    ensure!(err == libc::EFAULT, "readv bad base: errno {err}");
    ensure!(
        read_n(&s, 8)? == good,
        "the message was consumed by a failed readv"
    );
    Ok(())
}

static SIGIOS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static SIGIO_CODE: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn on_sigio(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let code = unsafe { (*info).si_code };
    SIGIO_CODE.store(code, Ordering::SeqCst);
    SIGIOS.fetch_add(1, Ordering::SeqCst);
}

/// Wait up to 2 s for the SIGIO count to pass `before`.
fn sigio_after(before: usize) -> bool {
    let t0 = Instant::now();
    while SIGIOS.load(Ordering::SeqCst) == before && t0.elapsed() < Duration::from_secs(2) {
        thread::yield_now();
    }
    SIGIOS.load(Ordering::SeqCst) > before
}

fn fcntl(fd: i32, cmd: i32, arg: libc::c_long) -> Result<i32, String> {
    // SAFETY: fcntl on an open descriptor with an integer argument.
    let r = unsafe { libc::fcntl(fd, cmd, arg) };
    ensure!(r >= 0, "fcntl {cmd}: {}", io::Error::last_os_error());
    Ok(r)
}

pub(crate) fn t_fasync_sigio() -> R {
    const POLL_IN: i32 = 1;
    let (a, b) = e(Stream::pipe(), "s_pipe")?;
    // SAFETY: an SA_SIGINFO handler that only touches atomics.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigio as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigaction(libc::SIGIO, &sa, std::ptr::null_mut());
    }
    // SAFETY: getpid has no preconditions.
    let me = unsafe { libc::getpid() };
    fcntl(a.raw(), libc::F_SETOWN, me.into())?;
    // With F_SETSIG the signal carries si_code (POLL_IN …); plain SIGIO has SI_KERNEL.
    const F_SETSIG: i32 = 10; // Linux fcntl.h (not in the libc crate for every target)
    fcntl(a.raw(), F_SETSIG, libc::SIGIO.into())?;
    let fl = fcntl(a.raw(), libc::F_GETFL, 0)?;
    fcntl(a.raw(), libc::F_SETFL, (fl | libc::O_ASYNC).into())?;
    let r = (|| {
        let before = SIGIOS.load(Ordering::SeqCst);
        e(a.write(b"out"), "write a")?;
        thread::sleep(Duration::from_millis(50));
        ensure!(
            SIGIOS.load(Ordering::SeqCst) == before,
            "SIGIO for a's own write"
        );
        e(b.write(b"in"), "write b")?;
        ensure!(sigio_after(before), "no SIGIO on input from the other end");
        let code = SIGIO_CODE.load(Ordering::SeqCst);
        ensure!(code == POLL_IN, "si_code {code}, want POLL_IN");
        ensure!(read_n(&a, 2)? == b"in", "the input");
        // O_ASYNC off: no more signals.
        fcntl(a.raw(), libc::F_SETFL, fl.into())?;
        let before = SIGIOS.load(Ordering::SeqCst);
        e(b.write(b"again"), "write b")?;
        thread::sleep(Duration::from_millis(50));
        ensure!(
            SIGIOS.load(Ordering::SeqCst) == before,
            "SIGIO after O_ASYNC was cleared"
        );
        // FIOASYNC sets it too (the VFS turns it into ->fasync).
        let mut on: libc::c_int = 1;
        ioctl_ptr(
            &a,
            libc::FIOASYNC as i32,
            (&mut on as *mut libc::c_int).cast(),
        )
        .map_err(|x| format!("FIOASYNC: {x}"))?;
        e(b.write(b"third"), "write b")?;
        ensure!(sigio_after(before), "no SIGIO after FIOASYNC");
        Ok(())
    })();
    // Close with O_ASYNC still set (the VFS removes the registration), then restore SIGIO.
    drop(a);
    drop(b);
    // SAFETY: restore the default action.
    unsafe { libc::signal(libc::SIGIO, libc::SIG_DFL) };
    r
}

/// A sloop Stream with nullmod pushed whose driver write queue holds data (the head's read
/// queue is full, so the loopback cannot send it up), close time `ms`, blocking unless
/// `nonblock`.
fn stalled(ms: i32, nonblock: bool) -> Result<Stream, String> {
    let s = open()?;
    e(s.push("nullmod"), "I_PUSH nullmod")?;
    let mut v: libc::c_int = ms;
    ioctl_ptr(&s, I_SETCLTIME, (&mut v as *mut libc::c_int).cast())
        .map_err(|x| format!("I_SETCLTIME: {x}"))?;
    set_nonblock(&s, true)?;
    let chunk = pattern(1024, 6);
    write_until_eagain(&s, &chunk, 4 << 20)?;
    set_nonblock(&s, nonblock)?;
    let (_, got) = e(s.ioctl_get_int(I_GETCLTIME), "I_GETCLTIME")?;
    ensure!(got == ms, "I_GETCLTIME {got}, set {ms}");
    Ok(s)
}

pub(crate) fn t_close_drain_cltime() -> R {
    let s = stalled(300, false)?;
    let t = Instant::now();
    drop(s);
    let dt = t.elapsed();
    ensure!(
        dt >= Duration::from_millis(280) && dt < Duration::from_secs(3),
        "close with a stalled write queue and I_SETCLTIME 300 took {dt:?}"
    );
    let s = stalled(300, true)?;
    let t = Instant::now();
    drop(s);
    let dt = t.elapsed();
    ensure!(
        dt < Duration::from_millis(150),
        "O_NONBLOCK close waited {dt:?}"
    );
    // Nothing queued on the write side: no wait even with the default close time.
    let s = open()?;
    e(s.write(b"unread"), "write")?;
    let t = Instant::now();
    drop(s);
    ensure!(
        t.elapsed() < Duration::from_millis(150),
        "close without write-side data waited"
    );
    Ok(())
}

/// Events one `epoll_wait` of up to `ms` milliseconds reports for `ep`.
fn epoll_events(ep: &OwnedFd, ms: i32) -> Result<Vec<u32>, String> {
    let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 4];
    // SAFETY: `evs` has room for the 4 events asked for.
    let n = unsafe { libc::epoll_wait(ep.as_raw_fd(), evs.as_mut_ptr(), 4, ms) };
    ensure!(n >= 0, "epoll_wait: {}", io::Error::last_os_error());
    Ok(evs[..n as usize].iter().map(|e| e.events).collect())
}

/// Edge-triggered epoll on a pipe end reports every arrival, also while earlier data is still
/// unread (as Linux pipes do since 5.14): the head does not batch arrivals behind a watcher.
pub(crate) fn t_epoll_edge_each_arrival() -> R {
    let (a, b) = e(Stream::pipe(), "s_pipe")?;
    // SAFETY: epoll_create1 has no memory arguments.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    ensure!(ep >= 0, "epoll_create1: {}", io::Error::last_os_error());
    // SAFETY: `ep` is a new descriptor nobody else owns.
    let ep = unsafe { OwnedFd::from_raw_fd(ep) };
    let mut ev = libc::epoll_event {
        events: (libc::EPOLLIN | libc::EPOLLET) as u32,
        u64: 7,
    };
    // SAFETY: `ev` is a valid epoll_event for the call.
    let r = unsafe { libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, a.raw(), &mut ev) };
    ensure!(r == 0, "EPOLL_CTL_ADD: {}", io::Error::last_os_error());
    ensure!(
        epoll_events(&ep, 0)?.is_empty(),
        "an event before any input"
    );
    for (i, word) in [&b"one"[..], b"two", b"three"].iter().enumerate() {
        e(b.write(word), "write b")?;
        let evs = epoll_events(&ep, 2000)?;
        ensure!(
            evs.len() == 1 && evs[0] & libc::EPOLLIN as u32 != 0,
            "arrival {i} with {i} unread before it: events {evs:?}, want one EPOLLIN"
        );
    }
    ensure!(
        epoll_events(&ep, 50)?.is_empty(),
        "an edge with no new arrival"
    );
    ensure!(read_n(&a, 11)? == b"onetwothree", "the input, in order");
    Ok(())
}
