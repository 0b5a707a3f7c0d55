//! TPI UDP beyond loopback, and its limits, once over each provider: the direct driver
//! (`/dev/streams/clone/udp`) and XTI over sockets (`/dev/streams/clone/xtiso-udp`).
//!
//! - Two network namespaces joined by a veth pair: XTI↔XTI and XTI↔Linux UDP socket both ways
//!   over a real interface, addresses checked, the veth's packet counters moved; then XTI↔XTI
//!   a datagram larger than the veth's MTU (1500) both ways (the `udp` driver sends it through
//!   its socket, which fragments it: its own transmit takes only what fits). The parent
//!   (root) makes the pair and moves one end into each child's namespace; each child sets up
//!   its end, drops to uid 65534 and does the endpoint work.
//! - A reader that never reads (as uid 65534): a sender floods it, the drops are counted in
//!   `UDP_IOC_STATS`, and what the Stream held is bounded by the read side's water marks.
//! - `streams.ko` refuses to unload while a UDP Stream is open, and the Stream works on.
//!
//! Cases over a provider that is absent, or without network namespaces / veth in the kernel
//! (the lean one), pass with a "# skip" note.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;
use std::time::{Duration, Instant};

use streams::xti::{self, Endpoint, OptBuilder};
use streams::{strioctl, I_SET_HIWAT, I_SET_LOWAT, I_STR};

use crate::R;

/// `UDP_IOC_STATS` (`'U' << 8 | 1`) and its words.
const UDP_IOC_STATS: i32 = (b'U' as i32) << 8 | 1;
const ST_RECEIVED: usize = 0;
const ST_DROPPED_FLOW: usize = 1;
const ST_DROPPED_NOMEM: usize = 2;
const ST_SENT: usize = 3;

fn present(dev: &str) -> bool {
    if std::path::Path::new(dev).exists() {
        return true;
    }
    println!("# skip: {dev} absent");
    false
}

fn x<T>(r: xti::XtiResult<T>, what: &str) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

fn io<T>(r: std::io::Result<T>, what: &str) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

/// A `struct sockaddr_in` for `ip:port`.
fn sin(ip: Ipv4Addr, port: u16) -> Vec<u8> {
    crate::sockaddr_in(libc::AF_INET as u16, ip.octets(), port)
}

/// (address, port) of a sockaddr_in.
fn parse(a: &[u8]) -> Result<(Ipv4Addr, u16), String> {
    ensure!(
        a.len() >= 8 && u16::from_ne_bytes([a[0], a[1]]) == libc::AF_INET as u16,
        "not a sockaddr_in: {a:?}"
    );
    Ok((
        Ipv4Addr::new(a[4], a[5], a[6], a[7]),
        u16::from_be_bytes([a[2], a[3]]),
    ))
}

/// Wait until `fd` is readable (at most `ms` milliseconds).
pub(crate) fn wait_readable(fd: i32, ms: i32) -> Result<bool, String> {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one live pollfd.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    ensure!(r >= 0, "poll: {}", std::io::Error::last_os_error());
    Ok(r == 1)
}

/// One datagram from `ep` within 5 s: (source, bytes).
fn recv(ep: &Endpoint, what: &str) -> Result<((Ipv4Addr, u16), Vec<u8>), String> {
    ensure!(
        wait_readable(ep.as_raw_fd(), 5000)?,
        "{what}: nothing within 5 s"
    );
    let mut buf = vec![0u8; 8192];
    let (src, n, more) = x(ep.recv_unitdata(&mut buf), what)?;
    ensure!(!more, "{what}: T_MORE on a small datagram");
    buf.truncate(n);
    Ok((parse(&src)?, buf))
}

/// The endpoint's `UDP_IOC_STATS` words.
fn stats(ep: &Endpoint) -> Result<[u64; 7], String> {
    let mut b = [0u8; 56];
    let mut ic = strioctl {
        ic_cmd: UDP_IOC_STATS,
        ic_timout: -1,
        ic_len: b.len() as i32,
        ic_dp: b.as_mut_ptr().cast(),
    };
    // SAFETY: I_STR with a live strioctl whose buffer outlives the call.
    let r = unsafe { libc::ioctl(ep.as_raw_fd(), I_STR as libc::c_ulong, &mut ic) };
    ensure!(r >= 0, "UDP_IOC_STATS: {}", std::io::Error::last_os_error());
    let mut w = [0u64; 7];
    for (d, c) in w.iter_mut().zip(b.chunks_exact(8)) {
        *d = u64::from_ne_bytes(c.try_into().map_err(|_| "stats word")?);
    }
    Ok(w)
}

fn drop_privileges() -> R {
    // SAFETY: plain system calls.
    let r = unsafe {
        (
            libc::setgroups(0, core::ptr::null()),
            libc::setgid(65534),
            libc::setuid(65534),
        )
    };
    ensure!(r == (0, 0, 0), "dropping to uid 65534: {r:?}");
    Ok(())
}

/// A pipe (read end, write end), close-on-exec.
fn pipe() -> Result<(std::fs::File, std::fs::File), String> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    ensure!(r == 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: both descriptors were just made and are owned here alone.
    Ok(unsafe {
        (
            std::fs::File::from(OwnedFd::from_raw_fd(fds[0])),
            std::fs::File::from(OwnedFd::from_raw_fd(fds[1])),
        )
    })
}

/// A forked child running `f`; its verdict comes back through a pipe.
struct Child {
    pid: libc::pid_t,
    out: std::fs::File,
}

/// Fork a child that runs `f` and writes `ok` or the error to its pipe.
fn fork(f: impl FnOnce() -> R) -> Result<Child, String> {
    let (r, mut w) = pipe()?;
    // SAFETY: fork in a test program; the child runs the case's code and leaves with _exit.
    let pid = unsafe { libc::fork() };
    ensure!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        drop(r);
        let msg = match f() {
            Ok(()) => "ok".to_string(),
            Err(e) => e,
        };
        let _ = w.write_all(msg.as_bytes());
        drop(w);
        // SAFETY: leave the child without running the parent's destructors.
        unsafe { libc::_exit(0) };
    }
    Ok(Child { pid, out: r })
}

impl Child {
    /// The child's verdict (killed after `secs` seconds).
    fn verdict(mut self, secs: u64) -> R {
        let pid = self.pid;
        let deadline = Instant::now() + Duration::from_secs(secs);
        let mut msg = String::new();
        while Instant::now() < deadline {
            if wait_readable(self.out.as_raw_fd(), 100)? {
                let _ = self.out.read_to_string(&mut msg);
                break;
            }
        }
        if msg.is_empty() {
            // SAFETY: our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            msg = format!("child {pid} gave no verdict within {secs} s");
        }
        let mut status = 0;
        // SAFETY: waiting for our own child.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        self.pid = 0;
        if msg == "ok" {
            Ok(())
        } else {
            Err(msg)
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.pid > 0 {
            // SAFETY: our own child, not yet waited for.
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
                libc::waitpid(self.pid, core::ptr::null_mut(), 0);
            }
        }
    }
}

fn sh(args: &[&str]) -> R {
    let out = io(Command::new(args[0]).args(&args[1..]).output(), args[0])?;
    ensure!(
        out.status.success(),
        "{}: {} {}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(())
}

/// Packets (received, sent) of interface `dev` in the caller's namespace (`/proc/self/net/dev`).
fn packets(dev: &str) -> Result<(u64, u64), String> {
    let t = io(
        std::fs::read_to_string("/proc/self/net/dev"),
        "/proc/self/net/dev",
    )?;
    let line = t
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(&format!("{dev}:")))
        .ok_or_else(|| format!("{dev} not in /proc/self/net/dev"))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    ensure!(f.len() >= 10, "/proc/self/net/dev line {line:?}");
    Ok((f[1], f[9]))
}

const NET_A: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
const NET_B: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
const VETH_A: &str = "rsveth0";
const VETH_B: &str = "rsveth1";
/// Fixed ports: each namespace is new, so nothing else has them.
const PORT_XTI: u16 = 5001;
const PORT_SOCK: u16 = 5002;

/// A child in a network namespace of its own: it unshares, says `u` (or why not) on `ready`,
/// waits for the parent's go on `go` (its veth end is there then), brings up `veth` as
/// `addr`, drops to uid 65534 and runs `work`.
fn netns_child(
    veth: &'static str,
    addr: Ipv4Addr,
    work: impl FnOnce() -> R,
) -> Result<(Child, std::fs::File, std::fs::File), String> {
    let (mut ready_r, mut ready_w) = pipe()?;
    let (mut go_r, go_w) = pipe()?;
    let child = fork(move || {
        // SAFETY: unshare with a flag.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            let e = std::io::Error::last_os_error();
            let _ = ready_w.write_all(format!("{e}").as_bytes());
            return Ok(()); // the parent skips
        }
        io(ready_w.write_all(b"u"), "ready")?;
        let mut b = [0u8; 1];
        io(go_r.read_exact(&mut b), "waiting for the veth end")?;
        ensure!(b[0] == b'g', "parent gave up");
        sh(&["ip", "link", "set", "lo", "up"])?;
        sh(&["ip", "addr", "add", &format!("{addr}/24"), "dev", veth])?;
        sh(&["ip", "link", "set", veth, "up"])?;
        drop_privileges()?;
        work()
    })?;
    let mut b = [0u8; 1];
    io(ready_r.read_exact(&mut b), "child's unshare")?;
    if b[0] != b'u' {
        let mut rest = String::new();
        let _ = ready_r.read_to_string(&mut rest);
        return Err(format!(
            "# skip: unshare(CLONE_NEWNET): {}{rest}",
            b[0] as char
        ));
    }
    Ok((child, ready_r, go_w))
}

/// A datagram larger than the veth's MTU: IP fragments it.
const BIG: usize = 4000;

/// Side A (10.77.0.1): XTI endpoint on :5001 and a UDP socket on :5002; answers three
/// datagrams from B (XTI, XTI to the socket, socket to XTI) with the sender's address
/// checked, telling B on `bound` once both are bound; then echoes a [`BIG`] one (XTI).
fn side_a(dev: &str, mut bound: std::fs::File) -> R {
    let ea = x(Endpoint::open(dev), "A t_open")?;
    let a = x(ea.bind(Some(&sin(NET_A, PORT_XTI))), "A t_bind")?;
    ensure!(
        parse(&a)? == (NET_A, PORT_XTI),
        "A bound to {:?}",
        parse(&a)
    );
    let sa = io(UdpSocket::bind((NET_A, PORT_SOCK)), "A socket bind")?;
    sa.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    io(bound.write_all(b"b"), "A tells B")?;
    // 1. XTI → XTI.
    let (src, d) = recv(&ea, "A t_rcvudata 1")?;
    ensure!(d == b"xti to xti", "A got {d:?}");
    ensure!(src == (NET_B, PORT_XTI), "A: source {src:?}");
    x(
        ea.send_unitdata(&sin(src.0, src.1), b"xti reply"),
        "A t_sndudata 1",
    )?;
    // 2. XTI → socket.
    let mut buf = [0u8; 64];
    let (n, from) = io(sa.recv_from(&mut buf), "A recv_from")?;
    ensure!(
        &buf[..n] == b"xti to socket",
        "A socket got {:?}",
        &buf[..n]
    );
    ensure!(
        from == std::net::SocketAddr::V4(SocketAddrV4::new(NET_B, PORT_XTI)),
        "A socket: source {from}"
    );
    io(sa.send_to(b"socket reply", from), "A send_to")?;
    // 3. socket → XTI.
    let (src, d) = recv(&ea, "A t_rcvudata 3")?;
    ensure!(d == b"socket to xti", "A got {d:?}");
    ensure!(src == (NET_B, PORT_SOCK), "A: source {src:?}");
    x(
        ea.send_unitdata(&sin(src.0, src.1), b"xti reply 3"),
        "A t_sndudata 3",
    )?;
    // 4. XTI → XTI, fragmented, and back.
    let (src, d) = recv(&ea, "A t_rcvudata 4")?;
    ensure!(
        d == crate::pattern(BIG, 4) && src == (NET_B, PORT_XTI),
        "A got {} bytes from {src:?}",
        d.len()
    );
    x(ea.send_unitdata(&sin(src.0, src.1), &d), "A t_sndudata 4")?;
    Ok(())
}

/// Side B (10.77.0.2): the other half of [`side_a`], then the veth's counters.
fn side_b(dev: &str, mut bound: std::fs::File) -> R {
    let eb = x(Endpoint::open(dev), "B t_open")?;
    x(eb.bind(Some(&sin(NET_B, PORT_XTI))), "B t_bind")?;
    let sb = io(UdpSocket::bind((NET_B, PORT_SOCK)), "B socket bind")?;
    sb.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    let before = packets(VETH_B)?;
    let mut b = [0u8; 1];
    io(bound.read_exact(&mut b), "B waits for A")?;
    // 1.
    x(
        eb.send_unitdata(&sin(NET_A, PORT_XTI), b"xti to xti"),
        "B t_sndudata 1",
    )?;
    let (src, d) = recv(&eb, "B t_rcvudata 1")?;
    ensure!(
        d == b"xti reply" && src == (NET_A, PORT_XTI),
        "B got {d:?} from {src:?}"
    );
    // 2.
    x(
        eb.send_unitdata(&sin(NET_A, PORT_SOCK), b"xti to socket"),
        "B t_sndudata 2",
    )?;
    let (src, d) = recv(&eb, "B t_rcvudata 2")?;
    ensure!(
        d == b"socket reply" && src == (NET_A, PORT_SOCK),
        "B got {d:?} from {src:?}"
    );
    // 3.
    io(sb.send_to(b"socket to xti", (NET_A, PORT_XTI)), "B send_to")?;
    let mut buf = [0u8; 64];
    let (n, from) = io(sb.recv_from(&mut buf), "B recv_from")?;
    ensure!(
        &buf[..n] == b"xti reply 3"
            && from == std::net::SocketAddr::V4(SocketAddrV4::new(NET_A, PORT_XTI)),
        "B socket got {:?} from {from}",
        &buf[..n]
    );
    // 4.
    let big = crate::pattern(BIG, 4);
    x(
        eb.send_unitdata(&sin(NET_A, PORT_XTI), &big),
        "B t_sndudata 4",
    )?;
    let (src, d) = recv(&eb, "B t_rcvudata 4")?;
    ensure!(
        d == big && src == (NET_A, PORT_XTI),
        "B got {} bytes from {src:?}",
        d.len()
    );
    // Real packets over the veth: three datagrams each way (and ARP).
    let after = packets(VETH_B)?;
    ensure!(
        after.0 >= before.0 + 3 && after.1 >= before.1 + 3,
        "{VETH_B} packets (rx, tx) {before:?} -> {after:?}"
    );
    Ok(())
}

/// Rename the peer of veth `dev` to `name` (busybox `ip` takes no `peer name`: the kernel
/// names the peer `vethN`). The peer is the interface whose ifindex is `dev`'s iflink.
fn name_peer(dev: &str, name: &str) -> R {
    let read = |p: String| -> Result<String, String> {
        Ok(io(std::fs::read_to_string(&p), &p)?.trim().to_string())
    };
    let peer = read(format!("/sys/class/net/{dev}/iflink"))?;
    for d in io(std::fs::read_dir("/sys/class/net"), "/sys/class/net")? {
        let n = io(d, "/sys/class/net")?
            .file_name()
            .to_string_lossy()
            .into_owned();
        if n != dev && read(format!("/sys/class/net/{n}/ifindex"))? == peer {
            return if n == name {
                Ok(())
            } else {
                sh(&["ip", "link", "set", &n, "name", name])
            };
        }
    }
    Err(format!("no peer of {dev} (iflink {peer})"))
}

fn veth_exchange(dev: &'static str) -> R {
    if !present(dev) {
        return Ok(());
    }
    let (bound_r, bound_w) = pipe()?;
    let (a, _ra, mut go_a) = match netns_child(VETH_A, NET_A, move || side_a(dev, bound_w)) {
        Ok(c) => c,
        Err(e) if e.starts_with("# skip") => {
            println!("{e}");
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    let (b, _rb, mut go_b) = netns_child(VETH_B, NET_B, move || side_b(dev, bound_r))?;
    if let Err(e) = sh(&["ip", "link", "add", VETH_A, "type", "veth"]) {
        println!("# skip: no veth pair ({e})");
        return Ok(());
    }
    if let Err(e) = name_peer(VETH_A, VETH_B) {
        let _ = sh(&["ip", "link", "del", VETH_A]);
        return Err(e);
    }
    let moved = sh(&["ip", "link", "set", VETH_A, "netns", &a.pid.to_string()])
        .and_then(|()| sh(&["ip", "link", "set", VETH_B, "netns", &b.pid.to_string()]));
    if let Err(e) = moved {
        let _ = sh(&["ip", "link", "del", VETH_A]);
        return Err(e);
    }
    io(go_a.write_all(b"g"), "go A")?;
    io(go_b.write_all(b"g"), "go B")?;
    // Each child's verdict; the pair goes away with the namespaces.
    let ra = a.verdict(30);
    let rb = b.verdict(30);
    ra.map_err(|e| format!("side A: {e}"))?;
    rb.map_err(|e| format!("side B: {e}"))
}

pub(crate) fn t_veth_udp() -> R {
    veth_exchange(xti::UDP_DEVICE)
}

pub(crate) fn t_veth_xtiso() -> R {
    veth_exchange(xti::XTISO_UDP_DEVICE)
}

/// Datagram size of the flood and how many.
const FLOOD_SIZE: usize = 1000;
const FLOOD_N: u64 = 400;
/// The read side's marks for the flood: head read queue and XTI_RCVBUF (the driver's).
const HEAD_HIWAT: usize = 8192;
const RCVBUF: i32 = 16384;

fn never_reads(dev: &'static str) -> R {
    if !present(dev) {
        return Ok(());
    }
    fork(move || {
        drop_privileges()?;
        never_reads_as_nobody(dev)
    })?
    .verdict(60)
}

fn never_reads_as_nobody(dev: &str) -> R {
    let lo = Ipv4Addr::LOCALHOST;
    let r = x(Endpoint::open(dev), "t_open reader")?;
    let opt = OptBuilder::new()
        .scalar(xti::XTI_GENERIC, xti::XTI_RCVBUF, RCVBUF)
        .build();
    let (_, flags) = x(r.optmgmt(&opt, xti::T_NEGOTIATE), "XTI_RCVBUF")?;
    ensure!(
        flags as u32 == xti::T_SUCCESS,
        "XTI_RCVBUF {RCVBUF}: flags {flags:#x}"
    );
    // The head's read queue marks (I_SET_LOWAT first: the high mark may not go below it).
    let fd = r.as_raw_fd();
    for (cmd, v) in [(I_SET_LOWAT, 1024), (I_SET_HIWAT, HEAD_HIWAT as i32)] {
        // SAFETY: an int argument.
        let rc = unsafe { libc::ioctl(fd, cmd as libc::c_ulong, v) };
        ensure!(
            rc == 0,
            "ioctl {cmd:#x} {v}: {}",
            std::io::Error::last_os_error()
        );
    }
    let a = x(r.bind(Some(&sin(lo, 0))), "t_bind reader")?;
    let (_, port) = parse(&a)?;
    let s = x(Endpoint::open(dev), "t_open sender")?;
    x(s.bind(Some(&sin(lo, 0))), "t_bind sender")?;
    let data = vec![0x5au8; FLOOD_SIZE];
    for i in 0..FLOOD_N {
        x(
            s.send_unitdata(&sin(lo, port), &data),
            &format!("t_sndudata {i}"),
        )?;
    }
    std::thread::sleep(Duration::from_millis(300));
    let sent = stats(&s)?[ST_SENT];
    ensure!(sent == FLOOD_N, "sender's stats: {sent} sent of {FLOOD_N}");
    // Nothing read yet: what the reader's Stream holds is what it received.
    let w = stats(&r)?;
    let held = w[ST_RECEIVED] as usize * FLOOD_SIZE;
    // One message over each mark: flow control is checked before a message goes on.
    let bound = HEAD_HIWAT + RCVBUF as usize + 2 * (FLOOD_SIZE + 64);
    ensure!(
        held <= bound,
        "held {held} bytes ({} datagrams) > {bound} (marks {HEAD_HIWAT} + {RCVBUF})",
        w[ST_RECEIVED]
    );
    ensure!(w[ST_DROPPED_FLOW] > 0, "no drops counted: {w:?}");
    // Read everything: each datagram whole, then the counts add up.
    let mut got = 0u64;
    let mut buf = vec![0u8; 2 * FLOOD_SIZE];
    while wait_readable(fd, 500)? {
        let (_, n, more) = x(r.recv_unitdata(&mut buf), "t_rcvudata")?;
        ensure!(
            n == FLOOD_SIZE && !more && buf[..n] == data[..],
            "datagram {got}: {n} bytes"
        );
        got += 1;
    }
    let w = stats(&r)?;
    ensure!(
        got == w[ST_RECEIVED],
        "read {got} datagrams, stats received {w:?}"
    );
    ensure!(
        w[ST_RECEIVED] + w[ST_DROPPED_FLOW] + w[ST_DROPPED_NOMEM] == FLOOD_N,
        "received + dropped != sent {FLOOD_N}: {w:?}"
    );
    // The reader reads again: datagrams arrive again.
    x(
        s.send_unitdata(&sin(lo, port), b"after"),
        "t_sndudata after",
    )?;
    ensure!(wait_readable(fd, 5000)?, "nothing after the drain");
    let (_, n, _) = x(r.recv_unitdata(&mut buf), "t_rcvudata after")?;
    ensure!(&buf[..n] == b"after", "after the drain: {:?}", &buf[..n]);
    Ok(())
}

pub(crate) fn t_never_reads_udp() -> R {
    never_reads(xti::UDP_DEVICE)
}

pub(crate) fn t_never_reads_xtiso() -> R {
    never_reads(xti::XTISO_UDP_DEVICE)
}

/// `streams.ko` stays while UDP Streams are open (one bound, one not); they work afterwards.
pub(crate) fn t_rmmod_refused_with_udp_open() -> R {
    let mut open = Vec::new();
    for dev in [xti::UDP_DEVICE, xti::XTISO_UDP_DEVICE] {
        if present(dev) {
            let a = x(Endpoint::open(dev), "t_open")?;
            let b = x(Endpoint::open(dev), "t_open")?;
            let addr = x(b.bind(Some(&sin(Ipv4Addr::LOCALHOST, 0))), "t_bind")?;
            open.push((dev, a, b, parse(&addr)?.1));
        }
    }
    if open.is_empty() {
        return Ok(());
    }
    let r = crate::errno_of(
        crate::fattach::delete_module(c"streams"),
        "rmmod streams with UDP Streams open",
    )?;
    ensure!(
        r == libc::EWOULDBLOCK || r == libc::EBUSY,
        "rmmod with UDP Streams open: errno {r}"
    );
    for (dev, a, b, port) in &open {
        x(a.bind(Some(&sin(Ipv4Addr::LOCALHOST, 0))), "t_bind after")?;
        x(
            a.send_unitdata(&sin(Ipv4Addr::LOCALHOST, *port), b"still here"),
            "t_sndudata",
        )?;
        let (_, d) = recv(b, dev)?;
        ensure!(d == b"still here", "{dev}: got {d:?}");
    }
    Ok(())
}
