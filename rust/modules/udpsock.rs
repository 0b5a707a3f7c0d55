// SPDX-License-Identifier: GPL-2.0
//! [`UdpSocket`]: a kernel UDP socket (`strudp.c`) owned by a TPI UDP endpoint, and
//! [`NetNs`], the network namespace it lives in. The one wrapper of `strudp.c`; the transports
//! over it are in `udp.rs`.
//!
//! The socket is set up as in-kernel UDP tunnels set up theirs: its encapsulation receive
//! hook hands each datagram to [`UdpEvents::rx`] in softirq context, as a linear, unshared skb
//! whose payload becomes an esballoc'ed M_DATA block (freed with the skb: received data is not
//! copied in the kernel), and its ICMP hook calls [`UdpEvents::err`]; no socket receive queue
//! sits between IP and the Stream.
//!
//! A *queued* socket (`BindArgs::queued`, XTI over sockets) has no encapsulation hooks:
//! datagrams wait on its receive queue (its receive buffer is XTI_RCVBUF) and ICMP errors on
//! its error queue (IP_RECVERR), its data-ready and error-report callbacks call
//! [`UdpEvents::readable`], and the owner takes them with [`UdpSocket::recv`] (errors first;
//! a datagram with one copy, from the skb into a new message block, and with the TTL and TOS
//! of its IPv4 header from IP_RECVTTL and IP_RECVTOS).
//!
//! Sending never sleeps ([`UdpSocket::send`]; the caller holds its Stream lock). A direct
//! socket's datagrams do not go through the socket layer: `strudp.c` routes them (the route of
//! the last destination kept on the socket), builds their skb (one copy), UDP and IPv4 headers
//! as `udp_sendmsg` would, charges it to the socket's send buffer and hands it to
//! `ip_local_out`, as in-kernel UDP tunnels send; what that path does not do exactly as
//! `udp_sendmsg` (fragmentation, broadcast, multicast, route errors) and every datagram of a
//! queued socket go through the socket (`kernel_sendmsg`, MSG_DONTWAIT, GFP_ATOMIC). Either
//! way EAGAIN means the send buffer is full, and [`UdpEvents::write_space`] follows when it is
//! not.
//!
//! Contexts: [`NetNs::current`] takes the calling task's namespace; [`UdpSocket::bind`] and
//! the drop sleep (socket creation and release, an RCU grace
//! period): process context, holding no Stream lock.

use core::ffi::{c_int, c_uint, c_void};

use kernel::prelude::*;

use crate::errno::Errno;
use crate::msg::{esballoc, Bpri, ExtBuf, Msg, M_DATA};

/// The callbacks of `strudp.c` (`struct rstreams_udp_ops`).
#[repr(C)]
struct UdpOps {
    // SAFETY (contract): strudp.c calls `rx(ctx, skb, saddr, sport, tos, ttl, data, len)`
    // with the `ctx` given at bind, only while the socket is bound to it, handing `skb` over.
    rx: unsafe extern "C" fn(*mut c_void, *mut c_void, u32, u16, u8, u8, *mut u8, c_uint),
    // SAFETY (contract): as for `rx` (`ctx`); called from the UDP ICMP error path.
    err: unsafe extern "C" fn(*mut c_void, u32, u16, c_int),
    // SAFETY (contract): as for `rx` (`ctx`); called from the socket's write-space callback.
    write_space: unsafe extern "C" fn(*mut c_void),
    // SAFETY (contract): as for `rx` (`ctx`); called from a queued socket's data-ready and
    // error-report callbacks.
    readable: unsafe extern "C" fn(*mut c_void),
}

/// `struct kvec`.
#[repr(C)]
struct Kvec {
    base: *const u8,
    len: usize,
}

extern "C" {
    // SAFETY (contract, strudp.c): `ops` callbacks run with `ctx` only until
    // `rstreams_udp_release` returns; `rx` hands over the skb, which the
    // callee frees with `rstreams_skb_free`.
    fn rstreams_udp_bind(
        net: *mut c_void,
        addr: u32,
        port: u16,
        reuse: bool,
        broadcast: bool,
        sndbuf: c_int,
        queued: bool,
        rcvbuf: c_int,
        ops: *const UdpOps,
        ctx: *mut c_void,
        out: *mut *mut c_void,
        bound_addr: *mut u32,
        bound_port: *mut u16,
    ) -> c_int;
    fn rstreams_udp_release(u: *mut c_void);
    fn rstreams_udp_send(
        u: *mut c_void,
        daddr: u32,
        dport: u16,
        vec: *const Kvec,
        nvec: usize,
        len: usize,
        tos: c_int,
        ttl: c_int,
        nocheck: bool,
        direct_only: bool,
    ) -> c_int;
    fn rstreams_udp_set_sndbuf(u: *mut c_void, sndbuf: c_int);
    fn rstreams_udp_set_rcvbuf(u: *mut c_void, rcvbuf: c_int);
    fn rstreams_udp_next_len(u: *mut c_void) -> c_int;
    fn rstreams_udp_recv(
        u: *mut c_void,
        buf: *mut u8,
        len: usize,
        saddr: *mut u32,
        sport: *mut u16,
        tos: *mut c_int,
        ttl: *mut c_int,
    ) -> c_int;
    fn rstreams_udp_recv_err(u: *mut c_void, daddr: *mut u32, dport: *mut u16) -> c_int;
    fn rstreams_udp_drops(u: *mut c_void) -> c_uint;
    fn rstreams_skb_free(skb: *mut c_void);
    fn rstreams_net_get_current() -> *mut c_void;
    fn rstreams_net_put(net: *mut c_void);
    fn rstreams_net_may_bind_privileged(net: *mut c_void) -> bool;
}

/// What `rstreams_udp_send` returns, with `direct_only`, for a datagram it leaves to the
/// socket's path
/// (`RSTREAMS_UDP_SLOW` in `strudp.c`).
const UDP_SLOW: c_int = 1;

/// An IPv4 address as on the wire and a port in host order.
pub(crate) type SockAddr = ([u8; 4], u16);

/// A counted reference to a network namespace.
///
/// # Invariants
/// `net` is a `struct net *` whose reference this value owns (given back once, by `drop`).
pub(crate) struct NetNs {
    net: *mut c_void,
}

// SAFETY: a namespace reference may be used and dropped (`put_net`) from any context.
unsafe impl Send for NetNs {}
// SAFETY: `&NetNs` only passes the pointer to functions that may run concurrently.
unsafe impl Sync for NetNs {}

impl NetNs {
    /// The calling task's network namespace.
    pub(crate) fn current() -> NetNs {
        // SAFETY: task context (every caller is a system call's open routine).
        let net = unsafe { rstreams_net_get_current() };
        // INVARIANT: the reference just taken.
        NetNs { net }
    }

    /// Whether the calling task may bind ports below 1024 here (CAP_NET_BIND_SERVICE in the
    /// namespace's user namespace).
    pub(crate) fn may_bind_privileged(&self) -> bool {
        // SAFETY: `net` is counted (type invariant); task context as for `current`.
        unsafe { rstreams_net_may_bind_privileged(self.net) }
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        // SAFETY: `net` holds a reference owned by `self` (type invariant), given back once.
        unsafe { rstreams_net_put(self.net) }
    }
}

/// What a socket tells its owner. Every method runs in softirq context (or with bottom
/// halves off, or from an skb's destructor for `write_space`): it must not sleep or take a
/// Stream lock.
pub(crate) trait UdpEvents: Send + Sync {
    /// A datagram from `src` whose IPv4 header said `tos` and `ttl`: `data` is its payload
    /// as an M_DATA message.
    fn rx(&self, src: SockAddr, tos: u8, ttl: u8, data: Msg);
    /// A datagram was dropped because its message block could not be allocated.
    fn rx_nomem(&self);
    /// An ICMP error (positive errno) for a datagram sent to `dst`.
    fn err(&self, dst: SockAddr, errno: i32);
    /// Send buffer space after a send gave EAGAIN.
    fn write_space(&self);
    /// A queued socket has datagrams on its receive queue or errors on its error queue.
    fn readable(&self);
}

/// What a bind asks for.
pub(crate) struct BindArgs {
    pub(crate) local: SockAddr,
    pub(crate) reuse: bool,
    pub(crate) broadcast: bool,
    pub(crate) sndbuf: usize,
    /// Datagrams wait on the socket's receive queue for [`UdpSocket::recv`] (no
    /// encapsulation hooks).
    pub(crate) queued: bool,
    /// The receive buffer of a queued socket (SO_RCVBUF).
    pub(crate) rcvbuf: usize,
}

/// A bound kernel UDP socket calling the [`UdpEvents`] of type `E` it owns.
///
/// # Invariants
/// `sock` is a live `rstreams_udp_bind` socket whose callbacks use `_events`' address; it is
/// released only by `drop`, before `_events` is freed (fields drop after `Drop::drop`).
pub(crate) struct UdpSocket<E: UdpEvents> {
    sock: *mut c_void,
    /// Only the socket's callbacks use it (through the pointer given at bind).
    _events: Pin<KBox<E>>,
    local: SockAddr,
}

// SAFETY: the socket is used only through `strudp.c`, callable from any thread; `E` is
// `Send + Sync`.
unsafe impl<E: UdpEvents> Send for UdpSocket<E> {}
// SAFETY: `send` and `set_sndbuf` may run concurrently (socket API locking).
unsafe impl<E: UdpEvents> Sync for UdpSocket<E> {}

impl<E: UdpEvents> Drop for UdpSocket<E> {
    fn drop(&mut self) {
        // SAFETY: `sock` is live (type invariant) and released once, here; the release waits
        // until no callback runs with `events` any more, so it may be freed afterwards.
        unsafe { rstreams_udp_release(self.sock) }
    }
}

/// A datagram larger than the buffer measured for it (`UdpSocket::recv`).
const EMSGSIZE: Errno = Errno(90);

/// What [`UdpSocket::recv`] takes from a queued socket.
pub(crate) enum Received {
    /// A datagram from this source, the TOS and TTL of its IPv4 header (`None` if the socket
    /// did not say), and its payload as an M_DATA message.
    Datagram(SockAddr, Option<(u8, u8)>, Msg),
    /// An ICMP error (positive errno) for a datagram sent to this address.
    Error(SockAddr, i32),
}

/// Most message blocks sent without gathering them into one buffer first.
const NVEC: usize = 8;

impl<E: UdpEvents> UdpSocket<E> {
    /// A socket in `net` bound as `args` says, calling `events`. Process context, no Stream
    /// lock. The errno of a failed bind (EADDRINUSE, EADDRNOTAVAIL, EACCES, ENOMEM…).
    pub(crate) fn bind(net: &NetNs, args: &BindArgs, events: E) -> Result<Self, Errno> {
        let events = KBox::pin(events, GFP_KERNEL).map_err(|_| Errno::ENOMEM)?;
        let ctx = (&*events as *const E).cast_mut().cast::<c_void>();
        let mut sock: *mut c_void = core::ptr::null_mut();
        let (mut addr, mut port) = (0u32, 0u16);
        let sndbuf = c_int::try_from(args.sndbuf).unwrap_or(c_int::MAX);
        let rcvbuf = c_int::try_from(args.rcvbuf).unwrap_or(c_int::MAX);
        // SAFETY: `net.net` is counted (invariant of `NetNs`); the ops are static and match
        // `E`; `ctx` is pinned and freed only after the socket is released (by `drop`, or
        // here when the bind failed and no callback runs any more); the out pointers are
        // valid locals. Process context (this function's contract).
        let r = unsafe {
            rstreams_udp_bind(
                net.net,
                u32::from_ne_bytes(args.local.0),
                args.local.1.to_be(),
                args.reuse,
                args.broadcast,
                sndbuf,
                args.queued,
                rcvbuf,
                ops::<E>(),
                ctx,
                &mut sock,
                &mut addr,
                &mut port,
            )
        };
        if r != 0 {
            return Err(Errno(-r));
        }
        let local = (addr.to_ne_bytes(), u16::from_be(port));
        // INVARIANT: `sock` is the live socket whose callbacks use `events`.
        Ok(UdpSocket {
            sock,
            _events: events,
            local,
        })
    }

    /// The bound address (the ephemeral port chosen when 0 was asked).
    pub(crate) fn local(&self) -> SockAddr {
        self.local
    }

    /// Send the bytes of `data` (the whole chain) as one datagram to `dst`, with IP TOS and
    /// TTL when given, without a UDP checksum when `nocheck`: directly to IP for a direct
    /// socket when `strudp.c` can, else through the socket. Never sleeps.
    pub(crate) fn send(
        &self,
        dst: SockAddr,
        data: &Msg,
        tos: Option<u8>,
        ttl: Option<u8>,
        nocheck: bool,
    ) -> Result<(), Errno> {
        self.send_by(false, dst, data, tos, ttl, nocheck)
            .map(|_| ())
    }

    /// [`UdpSocket::send`] directly to IP only, for the express send (`perim/express_send.rs`:
    /// without the owner's Stream lock, perhaps by several tasks at once, with bottom halves
    /// off). `None`: the datagram needs the socket's path (`strudp.c` does not send it
    /// directly), nothing was sent. Never sleeps.
    pub(crate) fn send_express(
        &self,
        dst: SockAddr,
        data: &Msg,
        tos: Option<u8>,
        ttl: Option<u8>,
        nocheck: bool,
    ) -> Option<Result<(), Errno>> {
        match self.send_by(true, dst, data, tos, ttl, nocheck) {
            Ok(UDP_SLOW) => None,
            Ok(_) => Some(Ok(())),
            Err(e) => Some(Err(e)),
        }
    }

    /// Send as [`UdpSocket::send`], directly to IP only if `direct_only`
    /// (`rstreams_udp_send`): `Ok(0)` sent, `Ok(UDP_SLOW)` left to the socket's path (only
    /// with `direct_only`), or the error.
    fn send_by(
        &self,
        direct_only: bool,
        dst: SockAddr,
        data: &Msg,
        tos: Option<u8>,
        ttl: Option<u8>,
        nocheck: bool,
    ) -> Result<c_int, Errno> {
        let mut vec: [Kvec; NVEC] = core::array::from_fn(|_| Kvec {
            base: core::ptr::null(),
            len: 0,
        });
        let (mut n, mut len) = (0, 0);
        for b in data.blocks() {
            let bytes = b.rd();
            len += bytes.len();
            if let Some(v) = vec.get_mut(n).filter(|_| !bytes.is_empty()) {
                *v = Kvec {
                    base: bytes.as_ptr(),
                    len: bytes.len(),
                };
                n += 1;
            } else if !bytes.is_empty() {
                n = NVEC + 1;
            }
        }
        // A long chain is gathered into one buffer (GFP_ATOMIC: under the Stream lock, or
        // with bottom halves off).
        let gathered = if n > NVEC {
            let mut all = KVec::with_capacity(len, GFP_ATOMIC).map_err(|_| Errno::ENOSR)?;
            for b in data.blocks() {
                all.extend_from_slice(b.rd(), GFP_ATOMIC)
                    .map_err(|_| Errno::ENOSR)?;
            }
            vec[0] = Kvec {
                base: all.as_ptr(),
                len,
            };
            n = 1;
            Some(all)
        } else {
            None
        };
        // SAFETY: `sock` is live (type invariant); `vec[..n]` points into `data` or
        // `gathered`, both alive across the call, which never sleeps (with `direct_only` not
        // even the socket's path: safe without the owner's Stream lock).
        let r = unsafe {
            rstreams_udp_send(
                self.sock,
                u32::from_ne_bytes(dst.0),
                dst.1.to_be(),
                vec.as_ptr(),
                n,
                len,
                tos.map_or(-1, c_int::from),
                ttl.map_or(-1, c_int::from),
                nocheck,
                direct_only,
            )
        };
        drop(gathered);
        if r < 0 {
            Err(Errno(-r))
        } else {
            Ok(r)
        }
    }

    /// SO_SNDBUF. Never sleeps.
    pub(crate) fn set_sndbuf(&self, bytes: usize) {
        // SAFETY: `sock` is live (type invariant).
        unsafe { rstreams_udp_set_sndbuf(self.sock, c_int::try_from(bytes).unwrap_or(c_int::MAX)) }
    }

    /// SO_RCVBUF of a queued socket (nothing for a direct one). Never sleeps.
    pub(crate) fn set_rcvbuf(&self, bytes: usize) {
        // SAFETY: `sock` is live (type invariant).
        unsafe { rstreams_udp_set_rcvbuf(self.sock, c_int::try_from(bytes).unwrap_or(c_int::MAX)) }
    }

    /// The oldest ICMP error of a queued socket's error queue, else its next datagram (with
    /// its source, the TOS and TTL of its IPv4 header, its payload as an M_DATA message
    /// allocated without sleeping); `None` when neither waits (always, for a direct socket).
    /// `Some(Err(ENOSR))`: no memory for the message, the datagram is taken and dropped.
    /// Never sleeps. Callers take turns (the driver's read service procedure, under its
    /// Stream lock): two at once would still be safe, but one could find the datagram after
    /// the one it measured, and lose it as truncated (`Err(EMSGSIZE)`).
    pub(crate) fn recv(&self) -> Option<Result<Received, Errno>> {
        // An ICMP error sets the socket's error after queueing its report: when this took the
        // report in between, the error fails the next receive (consumed by it, the datagram
        // stays), so one retry takes what waits.
        for _ in 0..2 {
            if let Some(e) = self.recv_err() {
                return Some(Ok(e));
            }
            if let Ok(r) = self.recv_datagram() {
                return r;
            }
        }
        None
    }

    /// The oldest error of the error queue.
    fn recv_err(&self) -> Option<Received> {
        let (mut daddr, mut dport) = (0u32, 0u16);
        // SAFETY: `sock` is live (type invariant); the out pointers are valid locals.
        let r = unsafe { rstreams_udp_recv_err(self.sock, &mut daddr, &mut dport) };
        (r > 0).then(|| Received::Error((daddr.to_ne_bytes(), u16::from_be(dport)), r))
    }

    /// The next datagram of the receive queue, as for `recv`; `Err`: the socket's error,
    /// consumed (the datagram stays).
    fn recv_datagram(&self) -> Result<Option<Result<Received, Errno>>, Errno> {
        // SAFETY: `sock` is live (type invariant).
        let len = unsafe { rstreams_udp_next_len(self.sock) };
        let Ok(len) = usize::try_from(len) else {
            return Ok(None);
        };
        let (mut saddr, mut sport) = (0u32, 0u16);
        let (mut tos, mut ttl): (c_int, c_int) = (-1, -1);
        let taken = |r: c_int| match r {
            0.. => Ok(()),
            -11 => Err(None), // EAGAIN: none waits after all
            e => Err(Some(Errno(-e))),
        };
        let Ok(mut m) = Msg::with_type(M_DATA, len) else {
            // Take it anyway, into nothing: it is dropped and counted.
            // SAFETY: `sock` is live; a zero-length buffer; the out pointers are valid locals.
            let r = unsafe {
                rstreams_udp_recv(
                    self.sock,
                    core::ptr::null_mut(),
                    0,
                    &mut saddr,
                    &mut sport,
                    &mut tos,
                    &mut ttl,
                )
            };
            return match taken(r) {
                Ok(()) => Ok(Some(Err(Errno::ENOSR))),
                Err(None) => Ok(None),
                Err(Some(e)) => Err(e),
            };
        };
        let Some(buf) = m.spare_mut() else {
            return Ok(None);
        };
        let room = buf.len().min(len);
        // SAFETY: `sock` is live; `buf[..room]` is writable and alive across the call, which
        // writes at most `room` bytes; the out pointers are valid locals.
        let r = unsafe {
            rstreams_udp_recv(
                self.sock,
                buf.as_mut_ptr(),
                room,
                &mut saddr,
                &mut sport,
                &mut tos,
                &mut ttl,
            )
        };
        match taken(r) {
            Ok(()) => {}
            Err(None) => return Ok(None),
            Err(Some(e)) => return Err(e),
        }
        let n = usize::try_from(r).unwrap_or(0);
        if n > room {
            return Ok(Some(Err(EMSGSIZE)));
        }
        m.adj_wptr(n);
        let ip = u8::try_from(tos).ok().zip(u8::try_from(ttl).ok());
        let src = (saddr.to_ne_bytes(), u16::from_be(sport));
        Ok(Some(Ok(Received::Datagram(src, ip, m))))
    }

    /// Datagrams the socket dropped itself (receive buffer full, bad checksum).
    pub(crate) fn drops(&self) -> u64 {
        // SAFETY: `sock` is live (type invariant).
        u64::from(unsafe { rstreams_udp_drops(self.sock) })
    }
}

/// The static callback table for `E`.
fn ops<E: UdpEvents>() -> &'static UdpOps {
    struct Table<E>(core::marker::PhantomData<E>);
    impl<E: UdpEvents> Table<E> {
        const OPS: UdpOps = UdpOps {
            rx: rx_tramp::<E>,
            err: err_tramp::<E>,
            write_space: write_space_tramp::<E>,
            readable: readable_tramp::<E>,
        };
    }
    &Table::<E>::OPS
}

/// The esballoc free routine of a received payload: frees its skb.
fn free_skb(_buf: &'static mut [u8], skb: usize) {
    // SAFETY: `skb` is the skb `rx_tramp` was handed, whose payload the block was; esballoc
    // calls this exactly once, after the last block over it is freed.
    unsafe { rstreams_skb_free(skb as *mut c_void) }
}

/// `ops->rx`: a datagram, in softirq context.
///
/// # Safety
/// `ctx` is the events object of a live `UdpSocket<E>` (strudp.c calls only while the
/// socket's user data is set, and quiescing waits for running callbacks); `skb` is handed
/// over, linear and unshared, and `data[..len]` is its payload; `tos` and `ttl` are values
/// read from its IPv4 header.
#[allow(clippy::too_many_arguments)] // the C callback's signature
unsafe extern "C" fn rx_tramp<E: UdpEvents>(
    ctx: *mut c_void,
    skb: *mut c_void,
    saddr: u32,
    sport: u16,
    tos: u8,
    ttl: u8,
    data: *mut u8,
    len: c_uint,
) {
    // SAFETY: see the function's contract.
    let e = unsafe { &*ctx.cast_const().cast::<E>() };
    let len = len as usize;
    // SAFETY: `data[..len]` is the payload of `skb`, ours alone until `free_skb` frees it;
    // the block made below is the only user of the bytes, and esballoc calls `free_skb`
    // exactly once, after the last user is gone.
    let buf: &'static mut [u8] = unsafe { core::slice::from_raw_parts_mut(data, len) };
    let ext = ExtBuf {
        buf,
        free: free_skb,
        arg: skb as usize,
    };
    match esballoc(ext, Bpri::Med) {
        Ok(mut m) => {
            m.adj_wptr(len);
            e.rx((saddr.to_ne_bytes(), u16::from_be(sport)), tos, ttl, m);
        }
        Err(ext) => {
            free_skb(ext.buf, ext.arg);
            e.rx_nomem();
        }
    }
}

/// `ops->err`, in softirq context.
///
/// # Safety
/// As for [`rx_tramp`] (`ctx`).
unsafe extern "C" fn err_tramp<E: UdpEvents>(ctx: *mut c_void, daddr: u32, dport: u16, err: c_int) {
    // SAFETY: see the function's contract.
    let e = unsafe { &*ctx.cast_const().cast::<E>() };
    e.err((daddr.to_ne_bytes(), u16::from_be(dport)), err);
}

/// `ops->write_space`: any context but hard interrupts.
///
/// # Safety
/// As for [`rx_tramp`] (`ctx`).
unsafe extern "C" fn write_space_tramp<E: UdpEvents>(ctx: *mut c_void) {
    // SAFETY: see the function's contract.
    unsafe { &*ctx.cast_const().cast::<E>() }.write_space();
}

/// `ops->readable`: softirq context.
///
/// # Safety
/// As for [`rx_tramp`] (`ctx`).
unsafe extern "C" fn readable_tramp<E: UdpEvents>(ctx: *mut c_void) {
    // SAFETY: see the function's contract.
    unsafe { &*ctx.cast_const().cast::<E>() }.readable();
}
