//! XTI over the T_CLTS UDP provider (`/dev/streams/clone/udp`): libstreams' `xti` module
//! against the kernel TPI driver. XTI↔XTI and XTI↔Linux UDP sockets over 127.0.0.1 (both
//! ways, addresses checked), TADDRBUSY, TACCES for a privileged port as an unprivileged user,
//! ICMP port unreachable as T_UDERR/ECONNREFUSED, TBADDATA, TOUTSTATE and TNOTSUPPORT.
//! The express send (T_UNITDATA_REQ without the Stream lock) races T_OPTMGMT and t_unbind/t_bind
//! from another thread.
//! The exchange, sockets, received options and errors cases run again over XTI over sockets
//! (`xtiso-udp`). When a driver is absent its cases pass with a "# skip" note.

use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::Duration;

use streams::xti::{self, Endpoint, OptBuilder, XtiError};

use crate::R;

const DEV: &str = xti::UDP_DEVICE;

fn present() -> bool {
    present_dev(DEV)
}

fn present_dev(dev: &str) -> bool {
    if std::path::Path::new(dev).exists() {
        return true;
    }
    println!("# skip: {dev} absent (no such TPI UDP driver)");
    false
}

/// A `struct sockaddr_in` for 127.0.0.1:`port`, as the TPI UDP driver takes addresses.
fn sin(port: u16) -> Vec<u8> {
    // SAFETY: sockaddr_in is plain old data: all-zero is valid.
    let mut s: libc::sockaddr_in = unsafe { core::mem::zeroed() };
    s.sin_family = libc::AF_INET as libc::sa_family_t;
    s.sin_port = port.to_be();
    s.sin_addr.s_addr = u32::from(Ipv4Addr::LOCALHOST).to_be();
    // SAFETY: `s` is a live sockaddr_in; viewing its bytes is fine.
    unsafe {
        core::slice::from_raw_parts((&s as *const libc::sockaddr_in).cast::<u8>(), size_of_sin())
    }
    .to_vec()
}

fn size_of_sin() -> usize {
    core::mem::size_of::<libc::sockaddr_in>()
}

/// (address, port) of a sockaddr_in.
fn parse(a: &[u8]) -> Result<(Ipv4Addr, u16), String> {
    if a.len() < 8 {
        return Err(format!("address of {} bytes", a.len()));
    }
    let fam = u16::from_ne_bytes([a[0], a[1]]);
    if fam != libc::AF_INET as u16 {
        return Err(format!("family {fam}"));
    }
    Ok((
        Ipv4Addr::new(a[4], a[5], a[6], a[7]),
        u16::from_be_bytes([a[2], a[3]]),
    ))
}

fn x<T>(r: xti::XtiResult<T>, what: &str) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

fn expect_err<T: std::fmt::Debug>(
    r: xti::XtiResult<T>,
    t: i32,
    what: &str,
) -> Result<XtiError, String> {
    match r {
        Ok(v) => Err(format!(
            "{what}: succeeded ({v:?}), expected {}",
            xti::error::name(t)
        )),
        Err(e) if e.t == t => Ok(e),
        Err(e) => Err(format!("{what}: {e}, expected {}", xti::error::name(t))),
    }
}

/// An endpoint of provider `dev` bound to 127.0.0.1 on a port the provider chooses;
/// (endpoint, port).
fn bound_on(dev: &str) -> Result<(Endpoint, u16), String> {
    let ep = x(Endpoint::open(dev), "t_open")?;
    let a = x(ep.bind(Some(&sin(0))), "t_bind")?;
    let (ip, port) = parse(&a)?;
    ensure!(
        ip == Ipv4Addr::LOCALHOST && port != 0,
        "bound to {ip}:{port}"
    );
    Ok((ep, port))
}

pub(crate) fn t_xti_info_and_states() -> R {
    if !present() {
        return Ok(());
    }
    let ep = x(Endpoint::open(DEV), "t_open")?;
    let i = *ep.info();
    ensure!(i.servtype == xti::T_CLTS, "servtype {}", i.servtype);
    ensure!(i.addr >= size_of_sin() as i32, "addr size {}", i.addr);
    ensure!(i.tsdu > 0, "tsdu {}", i.tsdu);
    ensure!(
        x(ep.state(), "t_getstate")? == xti::T_UNBND,
        "not T_UNBND after t_open"
    );
    // Wrong state: data before t_bind, t_unbind before t_bind.
    expect_err(
        ep.send_unitdata(&sin(9), b"x"),
        xti::TOUTSTATE,
        "t_sndudata unbound",
    )?;
    let mut b = [0u8; 8];
    expect_err(
        ep.recv_unitdata(&mut b),
        xti::TOUTSTATE,
        "t_rcvudata unbound",
    )?;
    expect_err(ep.unbind(), xti::TOUTSTATE, "t_unbind unbound")?;
    let (l, _) = x(ep.protaddr(), "t_getprotaddr unbound")?;
    ensure!(l.is_empty(), "unbound endpoint has address {l:?}");
    x(ep.bind(None), "t_bind NULL")?;
    ensure!(
        x(ep.state(), "t_getstate")? == xti::T_IDLE,
        "not T_IDLE after t_bind"
    );
    expect_err(ep.bind(None), xti::TOUTSTATE, "second t_bind")?;
    let (l, r) = x(ep.protaddr(), "t_getprotaddr")?;
    ensure!(parse(&l)?.1 != 0 && r.is_empty(), "protaddr {l:?} {r:?}");
    ensure!(x(ep.look(), "t_look")? == 0, "event on an idle endpoint");
    ensure!(x(ep.sync(), "t_sync")? == xti::T_IDLE, "t_sync state");
    x(ep.unbind(), "t_unbind")?;
    ensure!(
        x(ep.state(), "t_getstate")? == xti::T_UNBND,
        "not T_UNBND after t_unbind"
    );
    // A connection-oriented call on T_CLTS.
    // SAFETY: t_sndrel takes only the descriptor.
    let r = xti::ffi::t_sndrel(std::os::fd::AsRawFd::as_raw_fd(&ep));
    ensure!(
        r == -1 && xti::error::t_errno() == xti::TNOTSUPPORT,
        "t_sndrel: {r}"
    );
    Ok(())
}

pub(crate) fn t_xti_exchange() -> R {
    exchange(DEV)
}

/// [`t_xti_exchange`] over XTI over sockets.
pub(crate) fn t_xtiso_exchange() -> R {
    exchange(xti::XTISO_UDP_DEVICE)
}

fn exchange(dev: &str) -> R {
    if !present_dev(dev) {
        return Ok(());
    }
    let (a, pa) = bound_on(dev)?;
    let (b, pb) = bound_on(dev)?;
    x(a.send_unitdata(&sin(pb), b"hello from a"), "t_sndudata a→b")?;
    std::thread::sleep(Duration::from_millis(50));
    ensure!(
        x(b.look(), "t_look")? == xti::T_DATA,
        "t_look is not T_DATA"
    );
    let mut buf = [0u8; 64];
    ready(&b, "t_rcvudata b")?;
    let (src, n, more) = x(b.recv_unitdata(&mut buf), "t_rcvudata b")?;
    ensure!(&buf[..n] == b"hello from a" && !more, "got {:?}", &buf[..n]);
    ensure!(
        parse(&src)? == (Ipv4Addr::LOCALHOST, pa),
        "source {:?}",
        parse(&src)
    );
    x(b.send_unitdata(&src, b"reply"), "t_sndudata b→a")?;
    ready(&a, "t_rcvudata a")?;
    let (src, n, _) = x(a.recv_unitdata(&mut buf), "t_rcvudata a")?;
    ensure!(
        &buf[..n] == b"reply" && parse(&src)?.1 == pb,
        "reply {:?}",
        &buf[..n]
    );
    // T_MORE: a 100-byte datagram through a 40-byte buffer.
    let big: Vec<u8> = (0..100u8).collect();
    x(a.send_unitdata(&sin(pb), &big), "t_sndudata 100")?;
    let mut got = Vec::new();
    let mut small = [0u8; 40];
    ready(&b, "t_rcvudata 40")?;
    loop {
        let (_, n, more) = x(b.recv_unitdata(&mut small), "t_rcvudata 40")?;
        got.extend_from_slice(&small[..n]);
        if !more {
            break;
        }
    }
    ensure!(
        got == big,
        "T_MORE pieces reassemble to {} bytes",
        got.len()
    );
    // Options: XTI_SNDBUF negotiated.
    let opt = OptBuilder::new()
        .scalar(xti::XTI_GENERIC, xti::XTI_SNDBUF, 65536)
        .build();
    let (o, flags) = x(a.optmgmt(&opt, xti::T_NEGOTIATE), "t_optmgmt")?;
    ensure!(
        flags as u32 & (xti::T_SUCCESS | xti::T_PARTSUCCESS) != 0,
        "flags {flags:#x}"
    );
    ensure!(
        xti::options(&o).any(|p| p.name == xti::XTI_SNDBUF),
        "no XTI_SNDBUF in {o:?}"
    );
    Ok(())
}

/// The options of a received datagram: IP_TTL and IP_TOS of its IPv4 header, from an XTI
/// sender that set them per datagram (T_UNITDATA_REQ options) and from a Linux socket with
/// IP_TTL/IP_TOS set.
pub(crate) fn t_xti_unitdata_options() -> R {
    unitdata_options(DEV)
}

/// [`t_xti_unitdata_options`] over XTI over sockets (IP_RECVTTL/IP_RECVTOS on its socket).
pub(crate) fn t_xtiso_unitdata_options() -> R {
    unitdata_options(xti::XTISO_UDP_DEVICE)
}

/// Wait (at most 5 s) until `ep` has something to receive: under fault injection a datagram may
/// be dropped (UDP's, counted), and a blocking receive would then wait for ever.
fn ready(ep: &Endpoint, what: &str) -> R {
    let fd = std::os::fd::AsRawFd::as_raw_fd(ep);
    ensure!(
        crate::udpnet::wait_readable(fd, 5000)?,
        "{what}: nothing within 5 s"
    );
    Ok(())
}

fn unitdata_options(dev: &str) -> R {
    if !present_dev(dev) {
        return Ok(());
    }
    let (a, _) = bound_on(dev)?;
    let (b, pb) = bound_on(dev)?;
    // What b's t_rcvudata returns as options: (TTL, TOS), each checked to be T_SUCCESS.
    let recv_ip = || -> Result<(u8, u8), String> {
        let mut addr = [0u8; 64];
        let mut opt = [0u8; 256];
        let mut data = [0u8; 64];
        ready(&b, "t_rcvudata with options")?;
        let r = x(
            b.recv_unitdata_parts(Some(&mut addr), Some(&mut opt), &mut data),
            "t_rcvudata with options",
        )?;
        let (mut ttl, mut tos) = (None, None);
        for o in xti::options(&opt[..r.opt_len]) {
            ensure!(
                o.level == xti::T_INET_IP && o.status == xti::T_SUCCESS && o.value.len() == 1,
                "option level {} name {} status {} value {:?}",
                o.level,
                o.name,
                o.status,
                o.value
            );
            match o.name {
                xti::T_IP_TTL => ttl = Some(o.value[0]),
                xti::T_IP_TOS => tos = Some(o.value[0]),
                n => return Err(format!("unexpected option {n}")),
            }
        }
        match (ttl, tos) {
            (Some(ttl), Some(tos)) => Ok((ttl, tos)),
            _ => Err(format!("options {:?}", &opt[..r.opt_len])),
        }
    };
    x(a.send_unitdata(&sin(pb), b"defaults"), "t_sndudata")?;
    let got = recv_ip()?;
    ensure!(got == (64, 0), "default TTL/TOS received as {got:?}");
    let opt = OptBuilder::new()
        .push(xti::T_INET_IP, xti::T_IP_TTL, &[7])
        .push(xti::T_INET_IP, xti::T_IP_TOS, &[0x10])
        .build();
    x(
        a.send_unitdata_opt(&sin(pb), &opt, b"ttl 7 tos 0x10"),
        "t_sndudata with IP_TTL/IP_TOS",
    )?;
    let got = recv_ip()?;
    ensure!(got == (7, 0x10), "TTL 7/TOS 0x10 received as {got:?}");
    // From a Linux socket.
    let s = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| e.to_string())?;
    s.set_ttl(9).map_err(|e| e.to_string())?;
    let tos: libc::c_int = 0x08;
    // SAFETY: setsockopt on our socket with a c_int option of its size.
    let rc = unsafe {
        use std::os::fd::AsRawFd;
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_TOS,
            (&tos as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    ensure!(
        rc == 0,
        "setsockopt IP_TOS: {}",
        std::io::Error::last_os_error()
    );
    s.send_to(b"from a socket", (Ipv4Addr::LOCALHOST, pb))
        .map_err(|e| e.to_string())?;
    let got = recv_ip()?;
    ensure!(got == (9, 0x08), "socket's TTL 9/TOS 8 received as {got:?}");
    Ok(())
}

pub(crate) fn t_xti_and_sockets() -> R {
    and_sockets(DEV)
}

/// [`t_xti_and_sockets`] over XTI over sockets.
pub(crate) fn t_xtiso_and_sockets() -> R {
    and_sockets(xti::XTISO_UDP_DEVICE)
}

fn and_sockets(dev: &str) -> R {
    if !present_dev(dev) {
        return Ok(());
    }
    let (ep, port) = bound_on(dev)?;
    let sock = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| e.to_string())?;
    sock.set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(|e| e.to_string())?;
    let sport = sock.local_addr().map_err(|e| e.to_string())?.port();
    // Socket → XTI.
    sock.send_to(b"from socket", SocketAddrV4::new(Ipv4Addr::LOCALHOST, port))
        .map_err(|e| e.to_string())?;
    let mut buf = [0u8; 64];
    ready(&ep, "t_rcvudata")?;
    let (src, n, _) = x(ep.recv_unitdata(&mut buf), "t_rcvudata")?;
    ensure!(&buf[..n] == b"from socket", "got {:?}", &buf[..n]);
    ensure!(
        parse(&src)? == (Ipv4Addr::LOCALHOST, sport),
        "source {:?}",
        parse(&src)
    );
    // XTI → socket.
    x(ep.send_unitdata(&sin(sport), b"from xti"), "t_sndudata")?;
    let (n, from) = sock
        .recv_from(&mut buf)
        .map_err(|e| format!("recv_from: {e}"))?;
    ensure!(&buf[..n] == b"from xti", "socket got {:?}", &buf[..n]);
    ensure!(
        from.port() == port,
        "socket saw port {} not {port}",
        from.port()
    );
    Ok(())
}

pub(crate) fn t_xti_errors() -> R {
    errors(DEV)
}

/// [`t_xti_errors`] over XTI over sockets (ICMP errors from its socket's error queue,
/// IP_RECVERR).
pub(crate) fn t_xtiso_errors() -> R {
    errors(xti::XTISO_UDP_DEVICE)
}

fn errors(dev: &str) -> R {
    if !present_dev(dev) {
        return Ok(());
    }
    let (a, pa) = bound_on(dev)?;
    // The same address again: TADDRBUSY.
    let b = x(Endpoint::open(dev), "t_open")?;
    expect_err(
        b.bind(Some(&sin(pa))),
        xti::TADDRBUSY,
        "t_bind of a bound port",
    )?;
    // Oversize: TBADDATA, nothing sent.
    let tsdu = a.info().tsdu as usize;
    expect_err(
        a.send_unitdata(&sin(pa), &vec![0u8; tsdu + 1]),
        xti::TBADDATA,
        "tsdu + 1",
    )?;
    // A closed port: ICMP port unreachable comes back as T_UDERR / ECONNREFUSED.
    let closed = {
        let s = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).map_err(|e| e.to_string())?;
        s.local_addr().map_err(|e| e.to_string())?.port()
    };
    x(
        a.send_unitdata(&sin(closed), b"anyone?"),
        "t_sndudata to a closed port",
    )?;
    std::thread::sleep(Duration::from_millis(100));
    ready(&a, "t_rcvudata after ICMP")?;
    let mut buf = [0u8; 16];
    expect_err(
        a.recv_unitdata(&mut buf),
        xti::TLOOK,
        "t_rcvudata after ICMP",
    )?;
    ensure!(
        x(a.look(), "t_look")? == xti::T_UDERR,
        "t_look is not T_UDERR"
    );
    let (dest, err) = x(a.recv_uderr(), "t_rcvuderr")?;
    ensure!(err == libc::ECONNREFUSED, "uderr error {err}");
    ensure!(
        parse(&dest)?.1 == closed,
        "uderr address {:?}",
        parse(&dest)
    );
    expect_err(a.recv_uderr(), xti::TNOUDERR, "second t_rcvuderr")?;
    // A privileged port as an unprivileged user: TACCES (in a child that drops root).
    // SAFETY: fork in a test program; the child only calls async-signal-safe-enough code
    // and exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: plain system calls in the child.
        let code = unsafe {
            if libc::setgid(65534) != 0 || libc::setuid(65534) != 0 {
                2
            } else {
                match Endpoint::open(dev).and_then(|e| e.bind(Some(&sin(999)))) {
                    Err(e) if e.t == xti::TACCES => 0,
                    _ => 1,
                }
            }
        };
        // SAFETY: leave the child without running the parent's destructors.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    ensure!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "bind of port 999 as nobody: child status {status:#x} (1: not TACCES, 2: setuid failed)"
    );
    Ok(())
}

/// The express send (a T_UNITDATA_REQ sent by the driver without the Stream lock,
/// docs/tpi.md) against T_OPTMGMT on the same endpoint from another thread, then against
/// t_unbind/t_bind: every datagram that arrives is whole, in the order sent, with one of the
/// two TTLs negotiated; the sender's errors are only those of its state; the endpoint works
/// afterwards. Drops are allowed (the receiver's queue may fill); a crash, a lockdep or KASAN
/// report, or a hang is what the case is for.
pub(crate) fn t_xti_express_send_races() -> R {
    if !present() {
        return Ok(());
    }
    const N: u32 = 4000;
    let (a, _) = bound_on(DEV)?;
    let (b, pb) = bound_on(DEV)?;
    let ttl_opt = |ttl: u8| {
        OptBuilder::new()
            .push(xti::T_INET_IP, xti::T_IP_TTL, &[ttl])
            .build()
    };
    let datagram = |i: u32| {
        let mut d = [0xa5u8; 32];
        d[..4].copy_from_slice(&i.to_be_bytes());
        d
    };
    let (received, changes) = std::thread::scope(|s| -> Result<(u32, u32), String> {
        let sender = s.spawn(|| -> R {
            for i in 0..N {
                x(a.send_unitdata(&sin(pb), &datagram(i)), "t_sndudata")?;
            }
            Ok(())
        });
        let receiver = s.spawn(|| -> Result<u32, String> {
            let (mut got, mut next) = (0u32, 0u32);
            while next < N
                && crate::udpnet::wait_readable(std::os::fd::AsRawFd::as_raw_fd(&b), 3000)?
            {
                let (mut opt, mut data) = ([0u8; 256], [0u8; 64]);
                let r = x(
                    b.recv_unitdata_parts(None, Some(&mut opt), &mut data),
                    "t_rcvudata",
                )?;
                ensure!(
                    r.data_len == 32 && !r.more,
                    "datagram of {} bytes",
                    r.data_len
                );
                let d = &data[..32];
                let i = u32::from_be_bytes([d[0], d[1], d[2], d[3]]);
                ensure!(d[..] == datagram(i)[..], "datagram {i} damaged: {d:?}");
                ensure!(i >= next, "datagram {i} after {}", next.wrapping_sub(1));
                let ttl = xti::options(&opt[..r.opt_len])
                    .find(|o| o.name == xti::T_IP_TTL)
                    .and_then(|o| o.value.first().copied());
                ensure!(
                    matches!(ttl, Some(5) | Some(64)),
                    "datagram {i} with TTL {ttl:?}"
                );
                next = i + 1;
                got += 1;
            }
            Ok(got)
        });
        let mut changes = 0u32;
        while !sender.is_finished() {
            let ttl = if changes.is_multiple_of(2) { 5 } else { 64 };
            x(
                a.optmgmt(&ttl_opt(ttl), xti::T_NEGOTIATE),
                "t_optmgmt IP_TTL",
            )?;
            changes += 1;
        }
        sender.join().map_err(|_| "sender panicked".to_string())??;
        let got = receiver
            .join()
            .map_err(|_| "receiver panicked".to_string())??;
        Ok((got, changes))
    })?;
    ensure!(received > 0, "nothing received of {N} datagrams");
    ensure!(changes > 0, "no T_OPTMGMT ran during the sends");
    println!("# {received} of {N} datagrams received, {changes} option changes meanwhile");
    // Against unbind/bind: a send finds the endpoint bound (sent), unbound in the library
    // (TOUTSTATE), or unbound in the provider after the library let it go: TPI's fatal
    // M_ERROR EPROTO for a T_UNITDATA_REQ out of state (TSYSERR/EPROTO from then on, for
    // every call). Either way the same as with the lock: the express path is withdrawn at
    // T_UNBIND_REQ and the send goes the locked way.
    let fatal = |e: &XtiError| e.t == xti::TSYSERR && e.errno == libc::EPROTO;
    const CYCLES: u32 = 200;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let dead = std::thread::scope(|s| -> Result<bool, String> {
        let sender = s.spawn(|| -> Result<(u32, u32, bool), String> {
            let (mut sent, mut outstate, mut i) = (0u32, 0u32, 0u32);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                match a.send_unitdata(&sin(pb), &datagram(i)) {
                    Ok(()) => sent += 1,
                    Err(e) if e.t == xti::TOUTSTATE => outstate += 1,
                    Err(e) if fatal(&e) => return Ok((sent, outstate, true)),
                    Err(e) => return Err(format!("t_sndudata during unbind/bind: {e}")),
                }
                i = i.wrapping_add(1);
            }
            Ok((sent, outstate, false))
        });
        let (mut cycles, mut dead) = (0u32, false);
        while cycles < CYCLES && !dead && !sender.is_finished() {
            match a.unbind().and_then(|()| a.bind(Some(&sin(0))).map(|_| ())) {
                Ok(()) => cycles += 1,
                Err(e) if fatal(&e) => dead = true,
                Err(e) => {
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    return Err(format!("t_unbind/t_bind during sends: {e}"));
                }
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let (sent, outstate, sender_dead) =
            sender.join().map_err(|_| "sender panicked".to_string())??;
        let dead = dead || sender_dead;
        println!(
            "# {sent} sent, {outstate} TOUTSTATE during {cycles} unbind/bind cycles{}",
            if dead {
                ", then M_ERROR EPROTO (a send out of state)"
            } else {
                ""
            }
        );
        ensure!(
            dead || (cycles == CYCLES && sent > 0),
            "the sends and the unbind/bind cycles did not overlap"
        );
        Ok(dead)
    })?;
    // Drain what b holds, so that one more datagram finds room.
    let mut data = [0u8; 64];
    while crate::udpnet::wait_readable(std::os::fd::AsRawFd::as_raw_fd(&b), 200)? {
        x(
            b.recv_unitdata_parts(None, None, &mut data),
            "t_rcvudata (drain)",
        )?;
    }
    // Still usable (or, after the fatal error, a new endpoint is): one more datagram arrives.
    let fresh;
    let from = if dead {
        fresh = bound_on(DEV)?.0;
        &fresh
    } else {
        &a
    };
    x(from.send_unitdata(&sin(pb), b"after"), "t_sndudata after")?;
    loop {
        ready(&b, "t_rcvudata after the races")?;
        let r = x(b.recv_unitdata_parts(None, None, &mut data), "t_rcvudata")?;
        if &data[..r.data_len] == b"after" {
            return Ok(());
        }
    }
}
