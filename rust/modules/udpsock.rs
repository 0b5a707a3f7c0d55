// SPDX-License-Identifier: GPL-2.0
//! [`KernelNet`]: the network under TPI UDP in `streams.ko` (`tpi_udp::Net`). Each bound
//! endpoint owns a kernel UDP socket ([`UdpPort`]) set up as in-kernel UDP tunnels set up
//! theirs (`strudp.c`): the socket owns the port, its encapsulation receive hook hands each
//! datagram straight to the endpoint's [`Rx`] in softirq context, and its ICMP hook hands it
//! the errors; no socket receive queue sits between IP and the Stream.
//!
//! ```text
//!  udp_rcv (softirq) ─▶ encap_rcv ─▶ rx_tramp: esballoc over the skb's payload ─▶ Rx::datagram
//!  T_UNITDATA_REQ (under the Stream lock) ─▶ UdpPort::send ─▶ kernel_sendmsg (MSG_DONTWAIT)
//!      EAGAIN ─▶ the driver waits ◀─ Rx::write_space ◀─ sk_write_space (an skb sent is freed)
//! ```
//!
//! Received data is not copied in the kernel: the M_DATA block is an esballoc'ed block over the
//! skb's payload, and its free routine frees the skb (one copy per byte, to user space at
//! getmsg). Transmit copies once into the skb (`kernel_sendmsg`), after the Stream head's copy
//! from user space.
//!
//! Contexts: [`KernelNet::opener`] runs in the opener's context (it takes the caller's network
//! namespace, counted, and whether it may bind ports below 1024); [`KernelNet::bind`] and the
//! drop of a [`UdpPort`] sleep (socket creation and release, an RCU grace period): process
//! context, holding no Stream lock, as the `Net` contract says. [`UdpPort::send`] never
//! sleeps (GFP_ATOMIC socket, MSG_DONTWAIT).

use core::ffi::{c_int, c_uint, c_void};

use kernel::prelude::*;

use crate::errno::Errno;
use crate::msg::{esballoc, ExtBuf, Msg, BPRI_MED};
use crate::tpi_udp::{BindError, BindReq, Inet4, Net, Port, Rx, TxOpts};

/// The callbacks `strudp.c` makes (`struct rstreams_udp_ops`).
#[repr(C)]
struct UdpOps {
    rx: unsafe extern "C" fn(*mut c_void, *mut c_void, u32, u16, *mut u8, c_uint),
    err: unsafe extern "C" fn(*mut c_void, u32, u16, c_int),
    write_space: unsafe extern "C" fn(*mut c_void),
}

/// `struct kvec`.
#[repr(C)]
struct Kvec {
    base: *const u8,
    len: usize,
}

extern "C" {
    // SAFETY (contract, strudp.c): `ops` callbacks run with `ctx` only until
    // `rstreams_udp_release` returns; `rx` hands over the skb (freed with `rstreams_skb_free`).
    fn rstreams_udp_bind(
        net: *mut c_void,
        addr: u32,
        port: u16,
        reuse: bool,
        broadcast: bool,
        sndbuf: c_int,
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
    ) -> c_int;
    fn rstreams_udp_set_sndbuf(u: *mut c_void, sndbuf: c_int);
    fn rstreams_skb_free(skb: *mut c_void);
    fn rstreams_net_get_current() -> *mut c_void;
    fn rstreams_net_put(net: *mut c_void);
    fn rstreams_net_may_bind_privileged(net: *mut c_void) -> bool;
}

static OPS: UdpOps = UdpOps {
    rx: rx_tramp,
    err: err_tramp,
    write_space: write_space_tramp,
};

/// The network of `streams.ko`'s `udp` driver.
pub(crate) struct KernelNet;

/// What an endpoint keeps of its opener: its network namespace and whether it may bind ports
/// below 1024 there.
///
/// # Invariants
/// `net` is a `struct net *` whose reference this value owns (dropped once, by `drop`).
pub(crate) struct Opener {
    net: *mut c_void,
    privileged: bool,
}

// SAFETY: a namespace reference may be used and dropped (`put_net`) from any context.
unsafe impl Send for Opener {}
// SAFETY: `&Opener` only reads the pointer; see `Send`.
unsafe impl Sync for Opener {}

impl Drop for Opener {
    fn drop(&mut self) {
        // SAFETY: `net` holds a reference owned by `self` (type invariant), given back once.
        unsafe { rstreams_net_put(self.net) }
    }
}

/// What the socket's callbacks reach: the endpoint's receive side.
struct PortCtx {
    rx: Rx,
}

/// A bound kernel UDP socket delivering into an endpoint's [`Rx`].
///
/// # Invariants
/// `sock` is a live `rstreams_udp_bind` socket whose callbacks use `ctx`'s address; it is
/// released only by `drop`, before `ctx` is freed (the fields drop after `Drop::drop`).
pub(crate) struct UdpPort {
    sock: *mut c_void,
    ctx: KBox<PortCtx>,
    local: Inet4,
}

// SAFETY: the socket is used only through `strudp.c`, callable from any thread; `PortCtx`
// holds an `Rx`, which is `Send + Sync`.
unsafe impl Send for UdpPort {}
// SAFETY: `send` and `set_bufs` may run concurrently with the callbacks (socket API locking).
unsafe impl Sync for UdpPort {}

impl Drop for UdpPort {
    fn drop(&mut self) {
        // SAFETY: `sock` is live (type invariant) and released once, here; the release waits
        // until no callback runs with `ctx` any more, so `ctx` may be freed afterwards.
        unsafe { rstreams_udp_release(self.sock) }
    }
}

impl Net for KernelNet {
    type Opener = Opener;
    type Port = UdpPort;

    fn opener() -> Result<Opener, Errno> {
        // SAFETY: called in the opener's task context (the driver's open routine).
        let net = unsafe { rstreams_net_get_current() };
        // SAFETY: `net` is the counted namespace just taken.
        let privileged = unsafe { rstreams_net_may_bind_privileged(net) };
        // INVARIANT: the reference taken above is the opener's.
        Ok(Opener { net, privileged })
    }

    fn privileged(o: &Opener) -> bool {
        o.privileged
    }

    fn bind(o: &Opener, req: &BindReq, rx: Rx) -> Result<UdpPort, BindError> {
        let ctx = KBox::new(PortCtx { rx }, GFP_KERNEL).map_err(|_| BindError::Sys(Errno::ENOSR))?;
        let ctxp = (&*ctx as *const PortCtx).cast_mut().cast::<c_void>();
        let mut sock: *mut c_void = core::ptr::null_mut();
        let (mut addr, mut port) = (0u32, 0u16);
        let sndbuf = c_int::try_from(req.sndbuf).unwrap_or(c_int::MAX);
        // SAFETY: `o.net` is a counted namespace (invariant of `Opener`); `OPS` is static;
        // `ctxp` stays valid until the socket is released (it is freed only after
        // `UdpPort::drop`, or below when the bind failed and no callback can run any more);
        // the out pointers are valid locals. Process context, no Stream lock (`Net` contract).
        let r = unsafe {
            rstreams_udp_bind(
                o.net,
                u32::from_ne_bytes(req.local.addr),
                req.local.port.to_be(),
                req.reuseaddr,
                req.broadcast,
                sndbuf,
                &OPS,
                ctxp,
                &mut sock,
                &mut addr,
                &mut port,
            )
        };
        if r != 0 {
            return Err(bind_error(-r));
        }
        let local = Inet4 {
            addr: addr.to_ne_bytes(),
            port: u16::from_be(port),
        };
        // INVARIANT: `sock` is the live socket whose callbacks use `ctx`.
        Ok(UdpPort { sock, ctx, local })
    }
}

/// A bind's errno in TPI terms.
fn bind_error(errno: i32) -> BindError {
    match errno {
        98 => BindError::AddrBusy,     // EADDRINUSE
        99 => BindError::NoAddr,       // EADDRNOTAVAIL
        13 | 1 => BindError::Acces,    // EACCES, EPERM
        22 | 97 => BindError::BadAddr, // EINVAL, EAFNOSUPPORT
        e => BindError::Sys(Errno(e)),
    }
}

/// Most message blocks sent without gathering them into one buffer first.
const NVEC: usize = 8;

impl Port for UdpPort {
    fn local(&self) -> Inet4 {
        self.local
    }

    fn send(&self, dst: Inet4, data: &Msg, opts: &TxOpts) -> Result<(), Errno> {
        let mut vec: [Kvec; NVEC] = core::array::from_fn(|_| Kvec {
            base: core::ptr::null(),
            len: 0,
        });
        let mut n = 0;
        let mut len = 0;
        let mut gathered = KVec::new();
        for b in data.blocks() {
            let bytes = b.rd();
            if bytes.is_empty() {
                continue;
            }
            len += bytes.len();
            if n < NVEC {
                vec[n] = Kvec {
                    base: bytes.as_ptr(),
                    len: bytes.len(),
                };
                n += 1;
            } else {
                n = NVEC + 1;
            }
        }
        if n > NVEC {
            // A long chain: gather it (GFP_ATOMIC, under the Stream lock).
            gathered = KVec::with_capacity(len, GFP_ATOMIC).map_err(|_| Errno::ENOSR)?;
            for b in data.blocks() {
                gathered
                    .extend_from_slice(b.rd(), GFP_ATOMIC)
                    .map_err(|_| Errno::ENOSR)?;
            }
            vec[0] = Kvec {
                base: gathered.as_ptr(),
                len,
            };
            n = 1;
        }
        let tos = if opts.tos != 0 { c_int::from(opts.tos) } else { -1 };
        let ttl = if opts.ttl != 0 { c_int::from(opts.ttl) } else { -1 };
        // SAFETY: `sock` is live (type invariant); `vec[..n]` points into `data` (or
        // `gathered`), both borrowed for the call; the call never sleeps (MSG_DONTWAIT,
        // GFP_ATOMIC socket).
        let r = unsafe {
            rstreams_udp_send(
                self.sock,
                u32::from_ne_bytes(dst.addr),
                dst.port.to_be(),
                vec.as_ptr(),
                n,
                len,
                tos,
                ttl,
                !opts.checksum,
            )
        };
        drop(gathered);
        if r < 0 {
            Err(Errno(-r))
        } else {
            Ok(())
        }
    }

    fn set_bufs(&self, sndbuf: usize, _rcvbuf: usize) {
        // The receive side has no socket buffer: the driver's read queue is the buffer.
        let sndbuf = c_int::try_from(sndbuf).unwrap_or(c_int::MAX);
        // SAFETY: `sock` is live (type invariant).
        unsafe { rstreams_udp_set_sndbuf(self.sock, sndbuf) }
    }
}

/// The esballoc free routine of a received payload: frees its skb.
fn free_skb(_buf: &'static mut [u8], skb: usize) {
    // SAFETY: `skb` is the skb `rx_tramp` was handed, whose payload the block was; esballoc
    // calls this exactly once, when the last block over it is freed.
    unsafe { rstreams_skb_free(skb as *mut c_void) }
}

/// `ops->rx`: a datagram, in softirq context.
///
/// # Safety
/// `ctx` is the `PortCtx` of a live `UdpPort` (strudp.c calls only while the socket's user data
/// is set, and `UdpPort::drop` waits for running callbacks before freeing `ctx`); `skb` is
/// handed over, linear and unshared, and `data[..len]` is its payload.
unsafe extern "C" fn rx_tramp(
    ctx: *mut c_void,
    skb: *mut c_void,
    saddr: u32,
    sport: u16,
    data: *mut u8,
    len: c_uint,
) {
    // SAFETY: see the function's contract.
    let c = unsafe { &*ctx.cast_const().cast::<PortCtx>() };
    let len = len as usize;
    // SAFETY: `data[..len]` is the payload of `skb`, which is ours alone until `free_skb`
    // frees it; the block made below is the only user of the bytes, and esballoc calls
    // `free_skb` exactly once, after the last user is gone.
    let buf: &'static mut [u8] = unsafe { core::slice::from_raw_parts_mut(data, len) };
    let src = Inet4 {
        addr: saddr.to_ne_bytes(),
        port: u16::from_be(sport),
    };
    let ext = ExtBuf {
        buf,
        free: free_skb,
        arg: skb as usize,
    };
    match esballoc(ext, BPRI_MED) {
        Ok(mut m) => {
            m.adj_wptr(len);
            c.rx.datagram(src, m);
        }
        Err(ext) => {
            free_skb(ext.buf, ext.arg);
            c.rx.nomem();
        }
    }
}

/// `ops->err`: an ICMP error for a datagram sent to `daddr:dport`, in softirq context.
///
/// # Safety
/// As for [`rx_tramp`] (`ctx`).
unsafe extern "C" fn err_tramp(ctx: *mut c_void, daddr: u32, dport: u16, err: c_int) {
    // SAFETY: see the function's contract.
    let c = unsafe { &*ctx.cast_const().cast::<PortCtx>() };
    let dst = Inet4 {
        addr: daddr.to_ne_bytes(),
        port: u16::from_be(dport),
    };
    c.rx.uderror(dst, err);
}

/// `ops->write_space`: send buffer space after an EAGAIN; any context but hard interrupts.
///
/// # Safety
/// As for [`rx_tramp`] (`ctx`).
unsafe extern "C" fn write_space_tramp(ctx: *mut c_void) {
    // SAFETY: see the function's contract.
    let c = unsafe { &*ctx.cast_const().cast::<PortCtx>() };
    c.rx.write_space();
}
