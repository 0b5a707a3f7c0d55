//! One measurement: open the channel, apply the STREAMS options, fork the writer and the
//! reader (LfS `test_async`), let them run for `iterations` report intervals (or `count`
//! messages), collect their totals through a result pipe.
//!
//! The children print the LfS report line every interval:
//! `FD Msgs sent: MSGS/S (AVG), throughput: BYTES/S (AVG), size (AVGSIZE) MIN-MAX EAGAIN/S
//! EINTR ERESTART` (and `Msgs read:` for the reader), AVG being LfS's running average
//! (3·avg + current)/4.

use crate::opts::{Kind, Opts};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;
use streams::Stream;

/// Totals of one measurement.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Outcome {
    /// Messages written.
    pub writes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Writer's running time in seconds.
    pub write_secs: f64,
    /// read()/getmsg() calls that returned data.
    pub reads: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Reader's running time (until end of file) in seconds.
    pub read_secs: f64,
    /// UDP: datagrams sent and never received (None for the pipe test).
    pub lost: Option<u64>,
    /// UDP, sizes of 4 bytes or more: datagrams that arrived after a later one (None when
    /// not counted).
    pub reordered: Option<u64>,
}

impl Outcome {
    /// Writes per second.
    pub fn rate(&self) -> f64 {
        if self.write_secs > 0.0 {
            self.writes as f64 / self.write_secs
        } else {
            0.0
        }
    }

    /// Reads (UDP: datagrams received) per second of the writer's (the test's) time: the LfS
    /// UDP paper's received rate, the receiver's count over the test time.
    pub fn read_rate(&self) -> f64 {
        if self.write_secs > 0.0 {
            self.reads as f64 / self.write_secs
        } else {
            0.0
        }
    }
}

/// PIPE_BUF: the full-read size (`-F`) and the initial "min" of the LfS report line.
const PIPE_BUF: u64 = 4096;

static TICKS: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_alarm(_: libc::c_int) {
    TICKS.fetch_add(1, Ordering::Relaxed);
}

/// The interval clock as one child sees it: the last tick of [`TICKS`] it has taken up. Every
/// child's loop takes up each tick once, printing its interval line (`-v`).
pub(crate) struct Clock {
    seen: u32,
}

impl Clock {
    /// No tick taken up yet.
    pub(crate) fn new() -> Clock {
        Clock { seen: 0 }
    }

    /// If the interval timer ticked since the last call: take the tick up, print the
    /// interval's line (`what`: "sent", "read", "recv") when verbose, and return true.
    pub(crate) fn tick(&mut self, o: &Opts, iv: &mut Tally, fd: RawFd, what: &str) -> bool {
        let t = TICKS.load(Ordering::Relaxed);
        if t == self.seen {
            return false;
        }
        self.seen = t;
        if o.verbose > 0 {
            write_fd(1, &iv.line(fd, what, o.time));
        }
        true
    }

    /// A timed run (no `-c` count) has had all its intervals.
    pub(crate) fn all_intervals(&self, o: &Opts) -> bool {
        o.count.is_none() && self.seen >= o.iterations
    }

    /// Still in the interval of the last tick taken up.
    pub(crate) fn same_interval(&self) -> bool {
        TICKS.load(Ordering::Relaxed) == self.seen
    }

    /// No tick was taken up (so no interval line was printed either).
    pub(crate) fn never_ticked(&self) -> bool {
        self.seen == 0
    }
}

pub(crate) fn os_err(what: &str) -> String {
    format!("{what}: {}", strip_os(&io::Error::last_os_error()))
}

/// `No such file or directory` rather than `No such file or directory (os error 2)`.
pub fn strip_os(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Open the channel: (reader's end, writer's end).
pub fn open_channel(kind: Kind) -> Result<(Stream, Stream), String> {
    let mut fds = [0 as libc::c_int; 2];
    let r = match kind {
        // SAFETY: `fds` has room for two ints.
        Kind::Linux => unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) },
        Kind::Socketpair | Kind::Seqpacket => {
            let ty = if kind == Kind::Socketpair {
                libc::SOCK_STREAM
            } else {
                libc::SOCK_SEQPACKET
            };
            // SAFETY: `fds` has room for two ints.
            unsafe { libc::socketpair(libc::AF_UNIX, ty | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) }
        }
        Kind::Streams => {
            return match Stream::pipe() {
                Ok((a, b)) => Ok((a, b)),
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Err(format!(
                    "no STREAMS pipe device: {}: {}",
                    streams::PIPE_DEVICE,
                    strip_os(&e)
                )),
                Err(e) => Err(format!("STREAMS pipe: {}", strip_os(&e))),
            }
        }
    };
    if r != 0 {
        return Err(os_err(kind.name()));
    }
    // SAFETY: both descriptors were just created and are owned only here.
    let (a, b) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((Stream::from_fd(a), Stream::from_fd(b)))
}

/// The I_SWROPT bits besides SNDPIPE that `-H` and `-M` ask of the write end, and the
/// options' names for the ioctl's error message ("SNDPIPE|SNDHOLD|SNDMREAD").
fn write_options(o: &Opts) -> (i32, String) {
    let mut bits = 0;
    let mut named = String::from("SNDPIPE");
    for (on, bit, name) in [
        (o.hold, streams::SNDHOLD, "SNDHOLD"),
        (o.mread, streams::SNDMREAD, "SNDMREAD"),
    ] {
        if on {
            bits |= bit;
            named.push('|');
            named.push_str(name);
        }
    }
    (bits, named)
}

/// Apply the STREAMS options and `--pipe-size`; on other kinds the STREAMS options are
/// reported as ignored.
pub(crate) fn setup(
    o: &Opts,
    rd: &Stream,
    wr: &Stream,
    warn: &mut dyn FnMut(String),
) -> Result<(), String> {
    let streams_opts =
        o.hold || o.readfill || o.mread || o.push > 0 || o.hiwat.is_some() || o.lowat.is_some();
    if o.kind != Kind::Streams {
        if o.putmsg {
            return Err(format!(
                "--putmsg needs a STREAMS pipe (kind is {})",
                o.kind
            ));
        }
        if streams_opts {
            warn(format!(
                "STREAMS options (-H -w -M -p N --hiwat --lowat) ignored for {}",
                o.kind
            ));
        }
        if let Some(n) = o.pipe_size {
            if o.kind != Kind::Linux {
                return Err(format!("--pipe-size needs a pipe (kind is {})", o.kind));
            }
            set_pipe_size(wr, n)?;
        }
    } else {
        for _ in 0..o.push {
            wr.push(&o.module)
                .map_err(|e| format!("ioctl(I_PUSH, {}): {}", o.module, strip_os(&e)))?;
        }
        // LfS perftest: one I_SWROPT on the write end, SNDMREAD asking the reading end's
        // head for M_READ before its reads block (with -a and without -b the reads never
        // block, so no M_READ is sent there: LfS's head also fails a non-blocking read
        // before any M_READ).
        let (wropt, named) = write_options(o);
        if wropt != 0 {
            wr.set_write_opt(streams::SNDPIPE | wropt)
                .map_err(|e| format!("ioctl(I_SWROPT, {named}): {}", strip_os(&e)))?;
        }
        if o.readfill {
            rd.set_read_opt(streams::RFILL | streams::RPROTNORM)
                .map_err(|e| format!("ioctl(I_SRDOPT, RFILL|RPROTNORM): {}", strip_os(&e)))?;
        }
        let marks = WaterMarks::of(o);
        if let Err(e) = marks.set([rd, wr]) {
            // The pipe-size sweep must not measure the default marks under another name.
            if o.pipe_size.is_some() {
                return Err(format!("--pipe-size: {e}"));
            }
            warn(format!(
                "{e}; --hiwat/--lowat ignored (default water marks)"
            ));
        }
    }
    if !o.blocking {
        for s in [rd, wr] {
            // SAFETY: fcntl on a descriptor we own.
            if unsafe { libc::fcntl(s.raw(), libc::F_SETFL, libc::O_NONBLOCK) } < 0 {
                return Err(os_err("fcntl(O_NONBLOCK)"));
            }
        }
    }
    Ok(())
}

/// F_SETPIPE_SZ on a Linux pipe, checked with F_GETPIPE_SZ (the kernel rounds up to a power
/// of two pages: 4096..65536 stay as asked).
fn set_pipe_size(s: &Stream, n: u64) -> Result<(), String> {
    let arg = libc::c_int::try_from(n).map_err(|_| format!("--pipe-size {n}: too large"))?;
    // SAFETY: fcntl on a descriptor we own, an int argument.
    if unsafe { libc::fcntl(s.raw(), libc::F_SETPIPE_SZ, arg) } < 0 {
        return Err(os_err(&format!("fcntl(F_SETPIPE_SZ, {n})")));
    }
    // SAFETY: as above.
    let got = unsafe { libc::fcntl(s.raw(), libc::F_GETPIPE_SZ) };
    if i64::from(got) != n as i64 {
        return Err(format!(
            "fcntl(F_SETPIPE_SZ, {n}): the pipe holds {got} bytes"
        ));
    }
    Ok(())
}

/// LfS's (HP-UX's) Stream head water-mark ioctls: `I_SET_HIWAT (__SID|91)`,
/// `I_SET_LOWAT (__SID|92)`, int argument, applied to the Stream head read queue.
pub const I_SET_HIWAT: i32 = ((b'S' as i32) << 8) | 91;
/// See [`I_SET_HIWAT`].
pub const I_SET_LOWAT: i32 = ((b'S' as i32) << 8) | 92;

/// The Stream head water marks a run asks for: `--hiwat`/`--lowat`, else from `--pipe-size`
/// (the high mark the pipe size, the low mark an eighth of it: the 8:1 of the LfS
/// perftest_script's 65536/8192; the STREAMS analogue of the seed's PIPE_SIZE/PIPE_SEG).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaterMarks {
    /// I_SET_HIWAT.
    pub hiwat: Option<u64>,
    /// I_SET_LOWAT.
    pub lowat: Option<u64>,
}

impl WaterMarks {
    /// The marks of `o`.
    pub fn of(o: &Opts) -> WaterMarks {
        WaterMarks {
            hiwat: o.hiwat.or(o.pipe_size),
            lowat: o.lowat.or(o.pipe_size.map(|n| n / 8)),
        }
    }

    /// Set them on both ends (the reader's head queue is the one that fills; the writer's
    /// matters for the reverse direction). The order is tried both ways, since the kernel
    /// refuses a high mark under the current low mark and a low mark over the current high
    /// one. A kernel without the ioctls (EINVAL/ENOTTY) gives an error the caller turns into
    /// a warning (the run then measures the default marks, and says so) or a failure.
    fn set(&self, ends: [&Stream; 2]) -> Result<(), String> {
        let mut todo: Vec<(&str, i32, u64)> = Vec::new();
        if let Some(h) = self.hiwat {
            todo.push(("I_SET_HIWAT", I_SET_HIWAT, h));
        }
        if let Some(l) = self.lowat {
            todo.push(("I_SET_LOWAT", I_SET_LOWAT, l));
        }
        for s in ends {
            let mut failed: Vec<(&str, i32, u64, io::Error)> = Vec::new();
            for &(name, cmd, v) in &todo {
                let arg = i32::try_from(v).unwrap_or(i32::MAX);
                if let Err(e) = s.ioctl_int(cmd, arg) {
                    failed.push((name, cmd, v, e));
                }
            }
            if failed.len() < todo.len() {
                // Something went in: the refused one may need the other mark first.
                failed.retain(|(_, cmd, v, _)| {
                    s.ioctl_int(*cmd, i32::try_from(*v).unwrap_or(i32::MAX))
                        .is_err()
                });
            }
            if let Some((name, _, v, e)) = failed.first() {
                return Err(format!("ioctl({name}, {v}): {}", strip_os(e)));
            }
        }
        Ok(())
    }
}

pub(crate) fn write_fd(fd: RawFd, s: &str) {
    let mut b = s.as_bytes();
    while !b.is_empty() {
        // SAFETY: `b` is a live slice.
        let r = unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) };
        if r <= 0 {
            if r < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        b = &b[r as usize..];
    }
}

pub(crate) fn start_timer(secs: f64) -> Result<(), String> {
    TICKS.store(0, Ordering::Relaxed);
    // SAFETY: a zeroed sigaction is valid; the handler only touches an atomic. No SA_RESTART:
    // the alarm must interrupt a blocked read/write/poll.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_alarm as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        if libc::sigaction(libc::SIGALRM, &sa, std::ptr::null_mut()) != 0 {
            return Err(os_err("sigaction"));
        }
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let us = (secs * 1e6).round().max(1.0) as i64;
    let tv = libc::timeval {
        tv_sec: us / 1_000_000,
        tv_usec: (us % 1_000_000) as libc::suseconds_t,
    };
    let it = libc::itimerval {
        it_interval: tv,
        it_value: tv,
    };
    // SAFETY: `it` is a valid itimerval.
    if unsafe { libc::setitimer(libc::ITIMER_REAL, &it, std::ptr::null_mut()) } != 0 {
        return Err(os_err("setitimer"));
    }
    Ok(())
}

/// The interval timer of [`start_timer`] has fired since it was started.
pub(crate) fn timer_fired() -> bool {
    TICKS.load(Ordering::Relaxed) > 0
}

pub(crate) fn stop_timer() {
    // SAFETY: a zero itimerval disarms the timer.
    unsafe {
        let it: libc::itimerval = std::mem::zeroed();
        libc::setitimer(libc::ITIMER_REAL, &it, std::ptr::null_mut());
    }
}

/// Per-interval tally and LfS running averages.
pub(crate) struct Tally {
    msgs: u64,
    bytes: u64,
    min: u64,
    max: u64,
    pub(crate) eagain: u64,
    pub(crate) eintr: u64,
    avg_msgs: i64,
    avg_tput: i64,
}

impl Tally {
    pub(crate) fn new() -> Tally {
        Tally {
            msgs: 0,
            bytes: 0,
            min: PIPE_BUF,
            max: 0,
            eagain: 0,
            eintr: 0,
            avg_msgs: 0,
            avg_tput: 0,
        }
    }

    pub(crate) fn add(&mut self, n: u64) {
        self.msgs += 1;
        self.bytes += n;
        self.min = self.min.min(n);
        self.max = self.max.max(n);
    }

    /// The LfS report line for this interval, then reset (keeping the averages).
    pub(crate) fn line(&mut self, fd: RawFd, what: &str, secs: f64) -> String {
        let msgcnt = (self.msgs as f64 / secs) as i64;
        let thrput = (self.bytes as f64 / secs) as i64;
        let errcnt = (self.eagain as f64 / secs) as i64;
        let avgsiz = self.bytes.checked_div(self.msgs).unwrap_or(0);
        self.avg_msgs = (3 * self.avg_msgs + msgcnt) / 4;
        self.avg_tput = (3 * self.avg_tput + thrput) / 4;
        let s = format!(
            "{fd} Msgs {what}: {msgcnt:>10} ({:>10}), throughput: {thrput:>10} ({:>10}), size ({avgsiz:>4}) {:>4}-{:>4} {errcnt:>6} {:>6} {:>6}\n",
            self.avg_msgs, self.avg_tput, self.min, self.max, self.eintr, 0
        );
        *self = Tally {
            avg_msgs: self.avg_msgs,
            avg_tput: self.avg_tput,
            ..Tally::new()
        };
        s
    }
}

pub(crate) fn nice(v: Option<i32>) {
    if let Some(n) = v {
        // SAFETY: setpriority on our own process.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, n) };
    }
}

pub(crate) fn poll1(fd: RawFd, events: libc::c_short) -> io::Result<libc::c_short> {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    if unsafe { libc::poll(&mut p, 1, -1) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(p.revents)
}

/// The writer child: returns "W writes bytes secs".
fn writer(o: &Opts, s: &Stream) -> Result<String, String> {
    nice(o.nicesend);
    let buf = vec![0x5a_u8; o.size];
    let fd = s.raw();
    let (mut iv, mut writes, mut bytes, mut clock) = (Tally::new(), 0u64, 0u64, Clock::new());
    start_timer(o.time)?;
    let start = Instant::now();
    let done = |w: u64| o.count.is_some_and(|c| w >= c);
    'run: loop {
        if clock.tick(o, &mut iv, fd, "sent") && clock.all_intervals(o) {
            break;
        }
        if done(writes) {
            break;
        }
        if !o.blocking {
            match poll1(fd, libc::POLLOUT) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    iv.eintr += 1;
                    continue;
                }
                Err(e) => return Err(format!("poll(): {}", strip_os(&e))),
                Ok(ev) if ev & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0 => break,
                Ok(_) => {}
            }
        }
        while clock.same_interval() && !done(writes) {
            let r = if o.putmsg {
                s.putmsg(None, Some(&buf), 0).map(|()| buf.len())
            } else {
                s.write(&buf)
            };
            match r {
                Ok(n) => {
                    iv.add(n as u64);
                    writes += 1;
                    bytes += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    iv.eagain += 1;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    iv.eintr += 1;
                    break;
                }
                Err(e) if e.raw_os_error() == Some(libc::EPIPE) => break 'run,
                Err(e) => {
                    let what = if o.putmsg { "putmsg()" } else { "write()" };
                    return Err(format!("{what}: {}", strip_os(&e)));
                }
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    stop_timer();
    Ok(format!("W {writes} {bytes} {secs}\n"))
}

/// The reader child: reads until end of file; returns "R reads bytes secs".
fn reader(o: &Opts, s: &Stream) -> Result<String, String> {
    nice(o.niceread);
    let rsize = if o.full { PIPE_BUF as usize } else { o.size };
    let mut buf = vec![0u8; rsize.max(o.size)];
    let fd = s.raw();
    let (mut iv, mut reads, mut bytes, mut clock) = (Tally::new(), 0u64, 0u64, Clock::new());
    start_timer(o.time)?;
    let start = Instant::now();
    'run: loop {
        clock.tick(o, &mut iv, fd, "read");
        if !o.blocking {
            match poll1(fd, libc::POLLIN) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    iv.eintr += 1;
                    continue;
                }
                Err(e) => return Err(format!("poll(): {}", strip_os(&e))),
                Ok(ev) if ev & (libc::POLLIN | libc::POLLHUP) == 0 => break,
                Ok(_) => {}
            }
        }
        while clock.same_interval() {
            let r = if o.putmsg {
                s.getmsg(None, Some(&mut buf[..rsize]), 0)
                    .map(|g| g.data_len.unwrap_or(0) + g.ctl_len.unwrap_or(0))
            } else {
                s.read(&mut buf[..rsize])
            };
            match r {
                Ok(0) => break 'run,
                Ok(n) => {
                    iv.add(n as u64);
                    reads += 1;
                    bytes += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    iv.eagain += 1;
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    iv.eintr += 1;
                    break;
                }
                Err(e) => {
                    let what = if o.putmsg { "getmsg()" } else { "read()" };
                    return Err(format!("{what}: {}", strip_os(&e)));
                }
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    stop_timer();
    // The reader's intervals start when it does, after the writer's: if the writer finished
    // before the reader's first interval ended, report that partial interval, so a run always
    // has a reader line.
    if clock.never_ticked() && reads > 0 && o.verbose > 0 {
        write_fd(1, &iv.line(fd, "read", o.time));
    }
    Ok(format!("R {reads} {bytes} {secs}\n"))
}

/// Fork a child running `f`; its result line goes to `res`, errors to stderr.
pub(crate) fn spawn(
    res: RawFd,
    f: impl FnOnce() -> Result<String, String>,
) -> Result<libc::pid_t, String> {
    // SAFETY: perftest is single-threaded here; the child only runs `f` and _exit()s.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(os_err("fork()"));
    }
    if pid == 0 {
        let code = match f() {
            Ok(line) => {
                write_fd(res, &line);
                0
            }
            Err(e) => {
                write_fd(2, &format!("perftest: {e}\n"));
                1
            }
        };
        // SAFETY: leave the child without running the parent's destructors or atexit hooks.
        unsafe { libc::_exit(code) };
    }
    Ok(pid)
}

/// A pipe whose ends close on exec: the children report their results through one.
pub(crate) fn cloexec_pipe() -> Result<(OwnedFd, OwnedFd), String> {
    let mut p = [0 as libc::c_int; 2];
    // SAFETY: `p` has room for two ints.
    if unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(os_err("pipe()"));
    }
    // SAFETY: just created, owned here.
    Ok(unsafe { (OwnedFd::from_raw_fd(p[0]), OwnedFd::from_raw_fd(p[1])) })
}

/// The rest of a measured pair of children whose first (`first`) already runs: start the
/// second with `start` (given the result pipe's write end, as [`spawn`] wants it), killing
/// the first if that fails; then `release` the parent's copies of the children's
/// descriptors (each child must see the other's ends close), wait for both and return what
/// they wrote on `res_r`, or say which of `names` (first, second) failed.
pub(crate) fn finish_pair(
    first: libc::pid_t,
    (res_r, res_w): (OwnedFd, OwnedFd),
    start: impl FnOnce(RawFd) -> Result<libc::pid_t, String>,
    release: impl FnOnce(),
    names: (&str, &str),
) -> Result<String, String> {
    let second = match start(res_w.as_raw_fd()) {
        Ok(p) => p,
        Err(e) => {
            // SAFETY: our own child.
            unsafe { libc::kill(first, libc::SIGKILL) };
            wait(first);
            return Err(e);
        }
    };
    release();
    drop(res_w);
    let ok_second = wait(second);
    let ok_first = wait(first);
    let mut text = String::new();
    use std::io::Read;
    let _ = std::fs::File::from(res_r).read_to_string(&mut text);
    if !ok_second || !ok_first {
        return Err(format!(
            "{} child failed",
            if ok_second { names.0 } else { names.1 }
        ));
    }
    Ok(text)
}

pub(crate) fn wait(pid: libc::pid_t) -> bool {
    let mut st = 0;
    loop {
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid, &mut st, 0) };
        if r == pid {
            return libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0;
        }
        if r < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return false;
        }
    }
}

/// Run one measurement. Children print their interval lines on stdout (unless quiet);
/// warnings go to `warn`.
pub fn run(o: &Opts, warn: &mut dyn FnMut(String)) -> Result<Outcome, String> {
    let (rd, wr) = open_channel(o.kind)?;
    setup(o, &rd, &wr, warn)?;
    let (res_r, res_w) = cloexec_pipe()?;
    use std::io::Write;
    let _ = io::stdout().flush();
    let _ = io::stderr().flush();
    let rpid = {
        let wr_fd = wr.raw();
        spawn(res_w.as_raw_fd(), || {
            // SAFETY: the writer's end is not the reader's to keep open (EOF must reach it).
            unsafe { libc::close(wr_fd) };
            reader(o, &rd)
        })?
    };
    let rd_fd = rd.raw();
    let text = finish_pair(
        rpid,
        (res_r, res_w),
        // `move`: the parent's copy of the writer's end closes once the writer is started.
        move |res| {
            spawn(res, || {
                // SAFETY: close the reader's end in the writer (as LfS does).
                unsafe { libc::close(rd_fd) };
                writer(o, &wr)
            })
        },
        || drop(rd),
        ("reader", "writer"),
    )?;
    let mut out = Outcome::default();
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let get = |i: usize| f.get(i).copied().unwrap_or("0");
        match get(0) {
            "W" => {
                out.writes = get(1).parse().unwrap_or(0);
                out.write_bytes = get(2).parse().unwrap_or(0);
                out.write_secs = get(3).parse().unwrap_or(0.0);
            }
            "R" => {
                out.reads = get(1).parse().unwrap_or(0);
                out.read_bytes = get(2).parse().unwrap_or(0);
                out.read_secs = get(3).parse().unwrap_or(0.0);
            }
            _ => {}
        }
    }
    Ok(out)
}
