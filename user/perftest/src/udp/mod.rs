//! The UDP test of the LfS UDP papers ("STREAMS vs. Sockets Performance Comparison for UDP"):
//! netperf UDP_STREAM on loopback. A sender process sends `-s`-byte datagrams to 127.0.0.1 as
//! fast as it can for the test time (`-t` × `-i`); a receiver process receives them. The
//! figures are the messages sent and received per second, the received rate being the
//! receiver's count over the test time, as netperf reports it. Send and receive buffers are
//! the script's `--bufsizes=131071` (`--bufsize`).
//!
//! Three implementations of the same endpoint ([`Endpoint`]), chosen by `--udp`:
//!
//! * `socket`: sendto/recvfrom on an AF_INET SOCK_DGRAM socket ([`socket`]);
//! * `tpi`: XTI (t_sndudata/t_rcvudata) on rstreams' TPI UDP driver, [`TPI_DEVICE`];
//! * `xtiso`: the same XTI calls on XTI over an in-kernel socket, [`XTISO_DEVICE`] ([`xti`]).
//!
//! Lifetime of a run, and why it always ends:
//!
//! ```text
//!   parent: open rx, open tx (bind 127.0.0.1:0 both) ── fails here, before any fork, when the
//!           │                                           implementation is not available
//!           ├─ fork receiver: poll(rx, done) … recv until `done` hangs up, then drain
//!           └─ fork sender:   send for -i intervals of -t s (SIGALRM), exit ⇒ `done` closes
//! ```
//!
//! The `done` pipe's only write end is the sender's: when the sender exits, normally or not,
//! the receiver sees the hang-up, drains what is queued (until nothing has arrived for
//! [`DRAIN_QUIET`], at most [`DRAIN_MAX`]) and reports. The sender never waits on the
//! receiver (UDP has no flow control back to it; a full send buffer is bounded by the
//! interval alarm, which interrupts a blocked send), and the receiver gives up with an error
//! [`GRACE`] after the test time if the sender has not finished.
//!
//! With `-s 4` or more, the first four bytes of each datagram carry its sequence number: the
//! receiver counts the datagrams that arrive after a later one (`reordered`); `lost` is sent
//! minus received. A datagram of the wrong size, or more received than sent, fails the run.

pub mod socket;
pub mod xti;

use crate::opts::Opts;
use crate::run::{
    cloexec_pipe, finish_pair, nice, os_err, poll1, spawn, start_timer, stop_timer, strip_os,
    write_fd, Clock, Outcome, Tally,
};
use std::fmt;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

/// The TPI UDP driver's clone device.
pub const TPI_DEVICE: &str = "/dev/streams/clone/udp";
/// XTI over an in-kernel socket: the clone device of its driver.
pub const XTISO_DEVICE: &str = "/dev/streams/clone/xtiso-udp";

/// After the sender is gone: a drain ends when nothing has arrived for this long …
pub const DRAIN_QUIET: Duration = Duration::from_millis(100);
/// … or after this long in all.
pub const DRAIN_MAX: Duration = Duration::from_secs(2);
/// The receiver fails if the sender has not finished this long after the test time.
pub const GRACE: Duration = Duration::from_secs(30);

/// The implementation under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UdpKind {
    /// AF_INET SOCK_DGRAM, sendto/recvfrom.
    Socket,
    /// XTI on the TPI UDP driver.
    Tpi,
    /// XTI on XTI-over-sockets.
    Xtiso,
}

impl UdpKind {
    /// Every kind, in the order the sweeps alternate them.
    pub const ALL: [UdpKind; 3] = [UdpKind::Socket, UdpKind::Tpi, UdpKind::Xtiso];

    /// Parse a kind name (`socket`, `tpi`, `xtiso`).
    pub fn parse(s: &str) -> Option<UdpKind> {
        match s {
            "socket" | "sockets" => Some(UdpKind::Socket),
            "tpi" | "streams" => Some(UdpKind::Tpi),
            "xtiso" => Some(UdpKind::Xtiso),
            _ => None,
        }
    }

    /// [`UdpKind::parse`] for clap.
    pub fn parse_arg(s: &str) -> Result<UdpKind, String> {
        UdpKind::parse(s).ok_or_else(|| format!("unknown UDP kind {s:?} (socket, tpi, xtiso)"))
    }

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            UdpKind::Socket => "socket",
            UdpKind::Tpi => "tpi",
            UdpKind::Xtiso => "xtiso",
        }
    }

    /// The implementation label in CSV and report: `udp-` and the name. The report tells the
    /// UDP test's rows from the pipe test's by this prefix.
    pub fn label(self) -> &'static str {
        match self {
            UdpKind::Socket => "udp-socket",
            UdpKind::Tpi => "udp-tpi",
            UdpKind::Xtiso => "udp-xtiso",
        }
    }

    /// The XTI device, for the XTI kinds.
    pub fn device(self) -> Option<&'static str> {
        match self {
            UdpKind::Socket => None,
            UdpKind::Tpi => Some(TPI_DEVICE),
            UdpKind::Xtiso => Some(XTISO_DEVICE),
        }
    }
}

impl fmt::Display for UdpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How the error of an implementation that cannot exist here begins (sweeps and the bench
/// record such runs as `unavailable`, not as failures).
pub const UNAVAILABLE: [&str; 1] = [xti::NO_DEVICE];

/// Label prefix of the UDP test's implementations.
pub const LABEL_PREFIX: &str = "udp-";

/// Why a send or receive did not move a datagram.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// Non-blocking and nothing to receive / no room to send (EAGAIN, TNODATA, TFLOW).
    WouldBlock,
    /// A signal (the interval alarm) interrupted a blocked call.
    Interrupted,
    /// This datagram failed, the endpoint is fine (ENOBUFS, an ICMP error, T_UDERR): counted.
    Transient(String),
    /// The endpoint is unusable: the run fails with this message.
    Fatal(String),
}

/// One UDP endpoint, bound to 127.0.0.1 on a port of its own.
pub trait Endpoint {
    /// The descriptor to poll.
    fn fd(&self) -> RawFd;
    /// The bound address.
    fn addr(&self) -> libc::sockaddr_in;
    /// Send one datagram to `to`.
    fn send(&mut self, to: &libc::sockaddr_in, data: &[u8]) -> Result<(), Fault>;
    /// Receive one datagram into `buf`; its length.
    fn recv(&mut self, buf: &mut [u8]) -> Result<usize, Fault>;
}

/// 127.0.0.1, port `port` (host order).
pub fn loopback(port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
        },
        sin_zero: [0; 8],
    }
}

/// Open and bind one endpoint of `kind`. A missing implementation is an error whose message
/// starts with one of [`UNAVAILABLE`].
pub fn open(
    kind: UdpKind,
    bufsize: u32,
    warn: &mut dyn FnMut(String),
) -> Result<Box<dyn Endpoint>, String> {
    match kind.device() {
        None => Ok(Box::new(socket::SocketEndpoint::open(bufsize, warn)?)),
        Some(dev) => xti::open(dev, bufsize, warn),
    }
}

/// Whether `kind` can run here: open one endpoint and close it.
pub fn check(kind: UdpKind) -> Result<(), String> {
    open(kind, crate::opts::UDP_BUFSIZE, &mut |_| {}).map(drop)
}

fn set_nonblocking(fd: RawFd) -> Result<(), String> {
    // SAFETY: fcntl on a descriptor we own.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if fl < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK) } < 0 {
        return Err(os_err("fcntl(O_NONBLOCK)"));
    }
    Ok(())
}

/// The sender child: returns "W sent bytes secs errors".
fn sender(o: &Opts, ep: &mut dyn Endpoint, to: &libc::sockaddr_in) -> Result<String, String> {
    nice(o.nicesend);
    if !o.blocking {
        set_nonblocking(ep.fd())?;
    }
    let mut buf = vec![0x5a_u8; o.size];
    let fd = ep.fd();
    let (mut iv, mut sent, mut bytes, mut errors, mut seq, mut clock) =
        (Tally::new(), 0u64, 0u64, 0u64, 0u32, Clock::new());
    start_timer(o.time)?;
    let start = Instant::now();
    let done = |n: u64| o.count.is_some_and(|c| n >= c);
    loop {
        if clock.tick(o, &mut iv, fd, "sent") && clock.all_intervals(o) {
            break;
        }
        if done(sent) {
            break;
        }
        if !o.blocking {
            match poll1(fd, libc::POLLOUT) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    iv.eintr += 1;
                    continue;
                }
                Err(e) => return Err(format!("poll(): {}", strip_os(&e))),
                Ok(ev) if ev & (libc::POLLERR | libc::POLLNVAL) != 0 && ev & libc::POLLOUT == 0 => {
                    return Err(format!("poll(): revents {ev:#x} on the sender"))
                }
                Ok(_) => {}
            }
        }
        while clock.same_interval() && !done(sent) {
            if o.size >= 4 {
                buf[..4].copy_from_slice(&seq.to_ne_bytes());
            }
            match ep.send(to, &buf) {
                Ok(()) => {
                    iv.add(buf.len() as u64);
                    sent += 1;
                    bytes += buf.len() as u64;
                    seq = seq.wrapping_add(1);
                }
                Err(Fault::WouldBlock) => {
                    iv.eagain += 1;
                    break;
                }
                Err(Fault::Interrupted) => {
                    iv.eintr += 1;
                    break;
                }
                // Not sent: the sequence number is used again, so it is not counted lost.
                Err(Fault::Transient(_)) => {
                    errors += 1;
                    break;
                }
                Err(Fault::Fatal(e)) => return Err(e),
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    stop_timer();
    Ok(format!("W {sent} {bytes} {secs} {errors}\n"))
}

/// What the receiver counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Received {
    /// Datagrams.
    pub msgs: u64,
    /// Bytes.
    pub bytes: u64,
    /// Datagrams not `size` bytes long.
    pub bad_len: u64,
    /// Datagrams that arrived after one with a later sequence number (size ≥ 4).
    pub reordered: u64,
    /// Failed receives that left the endpoint usable (T_UDERR, ICMP errors).
    pub errors: u64,
    /// The sequence number expected next (None before the first datagram).
    next: Option<u32>,
}

impl Received {
    /// Count one datagram of `len` bytes whose first bytes are `head`, `size` being the size
    /// sent.
    pub fn count(&mut self, head: &[u8], len: usize, size: usize) {
        self.msgs += 1;
        self.bytes += len as u64;
        if len != size {
            self.bad_len += 1;
            return;
        }
        if size >= 4 {
            let mut b = [0u8; 4];
            b.copy_from_slice(&head[..4]);
            let seq = u32::from_ne_bytes(b);
            // Serial-number order (RFC 1982): later when ahead by less than 2^31.
            match self.next {
                Some(next) if seq.wrapping_sub(next) >= 1 << 31 => self.reordered += 1,
                _ => self.next = Some(seq.wrapping_add(1)),
            }
        }
    }
}

/// The receiver child: returns "R msgs bytes secs bad_len reordered errors".
fn receiver(o: &Opts, ep: &mut dyn Endpoint, done: RawFd) -> Result<String, String> {
    nice(o.niceread);
    set_nonblocking(ep.fd())?;
    let fd = ep.fd();
    let mut buf = vec![0u8; o.size.max(65_536)];
    let mut iv = Tally::new();
    let mut got = Received::default();
    let mut clock = Clock::new();
    let test = Duration::from_secs_f64(o.time * f64::from(o.iterations));
    start_timer(o.time)?;
    let start = Instant::now();
    let mut sender_gone: Option<Instant> = None;
    loop {
        clock.tick(o, &mut iv, fd, "recv");
        loop {
            match ep.recv(&mut buf) {
                Ok(n) => {
                    iv.add(n as u64);
                    got.count(&buf[..n.min(4)], n, o.size);
                }
                Err(Fault::WouldBlock) => {
                    iv.eagain += 1;
                    break;
                }
                Err(Fault::Interrupted) => {
                    iv.eintr += 1;
                    break;
                }
                Err(Fault::Transient(_)) => got.errors += 1,
                Err(Fault::Fatal(e)) => return Err(e),
            }
        }
        let now = Instant::now();
        if let Some(gone) = sender_gone {
            if now.duration_since(gone) >= DRAIN_MAX {
                break;
            }
        } else if o.count.is_none() && now.duration_since(start) > test + GRACE {
            return Err(format!(
                "the sender did not finish within {} s of the test time",
                GRACE.as_secs()
            ));
        }
        let mut fds = [
            libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: done,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let (n, timeout) = match sender_gone {
            Some(_) => (1, DRAIN_QUIET.as_millis() as libc::c_int),
            None => (2, -1),
        };
        // SAFETY: `fds` holds `n` valid pollfds.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), n, timeout) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                iv.eintr += 1;
                continue;
            }
            return Err(format!("poll(): {}", strip_os(&e)));
        }
        if r == 0 && sender_gone.is_some() {
            // Quiet for DRAIN_QUIET after the sender left: everything has arrived.
            break;
        }
        if fds[0].revents & (libc::POLLERR | libc::POLLNVAL) != 0
            && fds[0].revents & libc::POLLIN == 0
        {
            return Err(format!(
                "poll(): revents {:#x} on the receiver",
                fds[0].revents
            ));
        }
        if sender_gone.is_none() && fds[1].revents != 0 {
            sender_gone = Some(Instant::now());
        }
    }
    let secs = start.elapsed().as_secs_f64();
    stop_timer();
    if clock.never_ticked() && got.msgs > 0 && o.verbose > 0 {
        write_fd(1, &iv.line(fd, "recv", o.time));
    }
    Ok(format!(
        "R {} {} {secs} {} {} {}\n",
        got.msgs, got.bytes, got.bad_len, got.reordered, got.errors
    ))
}

/// The totals the two children reported.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Totals {
    /// The sender's and receiver's counts as an [`Outcome`] (lost and reordered filled in).
    pub outcome: Outcome,
    /// Sends that failed and were counted (ENOBUFS, ICMP errors, T_UDERR).
    pub send_errors: u64,
    /// Receives that failed and were counted.
    pub recv_errors: u64,
}

/// Parse the children's result lines, check the loss accounting.
pub fn totals(text: &str, size: usize) -> Result<Totals, String> {
    let mut t = Totals::default();
    let (mut w, mut r) = (false, false);
    let mut bad_len = 0u64;
    let mut reordered = 0u64;
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let n = |i: usize| -> Result<u64, String> {
            f.get(i)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("bad result line {l:?}"))
        };
        let secs = |i: usize| -> Result<f64, String> {
            f.get(i)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("bad result line {l:?}"))
        };
        match f.first().copied() {
            Some("W") => {
                t.outcome.writes = n(1)?;
                t.outcome.write_bytes = n(2)?;
                t.outcome.write_secs = secs(3)?;
                t.send_errors = n(4)?;
                w = true;
            }
            Some("R") => {
                t.outcome.reads = n(1)?;
                t.outcome.read_bytes = n(2)?;
                t.outcome.read_secs = secs(3)?;
                bad_len = n(4)?;
                reordered = n(5)?;
                t.recv_errors = n(6)?;
                r = true;
            }
            _ => {}
        }
    }
    if !(w && r) {
        return Err("the sender or the receiver gave no result".into());
    }
    let o = &mut t.outcome;
    if bad_len > 0 {
        return Err(format!(
            "{bad_len} of {} datagrams received were not {size} bytes long",
            o.reads
        ));
    }
    if o.reads > o.writes {
        return Err(format!(
            "loss accounting: {} datagrams received but only {} sent",
            o.reads, o.writes
        ));
    }
    o.lost = Some(o.writes - o.reads);
    o.reordered = (size >= 4).then_some(reordered);
    Ok(t)
}

/// Run one UDP measurement: open both endpoints (an unavailable implementation fails here,
/// before any child exists), fork the receiver and the sender, collect their counts.
pub fn run(o: &Opts, kind: UdpKind, warn: &mut dyn FnMut(String)) -> Result<Totals, String> {
    if o.putmsg {
        return Err(
            "--putmsg is a pipe option; the UDP test uses its implementation's calls".into(),
        );
    }
    let pipe_opts = o.hold
        || o.readfill
        || o.mread
        || o.full
        || o.push > 0
        || o.hiwat.is_some()
        || o.lowat.is_some();
    if pipe_opts {
        warn("pipe options (-H -w -M -F -p N --hiwat --lowat) ignored for the UDP test".into());
    }
    // Both endpoints say the same about their buffers: once is enough.
    let mut said: Vec<String> = Vec::new();
    let mut once = |w: String| {
        if !said.contains(&w) {
            said.push(w.clone());
            warn(w);
        }
    };
    let mut rx = open(kind, o.bufsize, &mut once)?;
    let mut tx = open(kind, o.bufsize, &mut once)?;
    let to = rx.addr();
    let (res_r, res_w) = cloexec_pipe()?;
    let (done_r, done_w) = cloexec_pipe()?;
    use std::io::Write;
    let _ = io::stdout().flush();
    let _ = io::stderr().flush();
    let rpid = spawn(res_w.as_raw_fd(), || {
        // SAFETY: only the sender may hold the write end, so that its exit is seen.
        unsafe { libc::close(done_w.as_raw_fd()) };
        receiver(o, rx.as_mut(), done_r.as_raw_fd())
    })?;
    let done_r_fd = done_r.as_raw_fd();
    let text = finish_pair(
        rpid,
        (res_r, res_w),
        // `move`: the parent's sender endpoint closes once the sender is started.
        move |res| {
            spawn(res, || {
                // SAFETY: the receiver's descriptor is not the sender's.
                unsafe { libc::close(done_r_fd) };
                sender(o, tx.as_mut(), &to)
            })
        },
        || {
            drop(done_w);
            drop(done_r);
            drop(rx);
        },
        ("receiver", "sender"),
    )?;
    totals(&text, o.size)
}
