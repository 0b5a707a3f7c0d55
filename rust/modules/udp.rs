// SPDX-License-Identifier: GPL-2.0
//! The networks of `streams.ko`'s TPI UDP drivers (`tpi_udp::Net`): [`KernelNet`] under `udp`
//! (`/dev/streams/clone/udp`, `/dev/udp`) and [`SocketNet`] under `xtiso-udp`
//! (`/dev/streams/clone/xtiso-udp`, XTI over sockets). Only the receive path differs.
//!
//! Each bound endpoint owns a kernel UDP socket ([`UdpSocket`], `udpsock.rs`). Under `udp`,
//! datagrams and ICMP errors come from its encapsulation hooks in softirq context and go
//! straight into the endpoint's `Rx` (`QRef::put` into the driver's read queue). Under
//! `xtiso-udp` the socket is an ordinary one (with IP_RECVERR, IP_RECVTTL, IP_RECVTOS):
//! datagrams wait on its receive queue and ICMP errors on its error queue, its data-ready and
//! error-report callbacks back-enable the driver's read queue (`Rx::readable`), and the read
//! service procedure takes them (`Port::recv`: kernel_recvmsg), so both drivers give the same
//! T_UNITDATA_IND options and T_UDERROR_IND. T_UNITDATA_REQ never sleeps: under `udp` the
//! datagram goes straight to IP (`strudp.c` routes it and builds its skb, as UDP tunnels send),
//! through the socket only for what that path does not handle; under `xtiso-udp` always
//! through the socket. The driver's jobs (bind, release a port) run after its Stream lock is
//! dropped; the rare one that cannot ([`KernelNet::defer`]) goes to the STREAMS runner's
//! workqueue as a work item of its own.

use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::workqueue::{impl_has_work, new_work, Work, WorkItem};

use crate::errno::Errno;
use crate::msg::Msg;
use crate::runq::RunQueue;
use crate::tpi_udp::{BindError, BindReq, Inet4, Job, Net, Port, Received, Rx, RxIp, TxOpts};
use crate::udpsock::{self, BindArgs, NetNs, SockAddr, UdpEvents, UdpSocket};

/// The network of the `udp` driver in the kernel.
pub(crate) struct KernelNet;

/// What an endpoint keeps of its opener.
pub(crate) struct Opener {
    /// The opener's network namespace: its ports are bound there.
    ns: NetNs,
    /// CAP_NET_BIND_SERVICE there, at open.
    privileged: bool,
}

/// The socket's callbacks: into the endpoint's `Rx`.
pub(crate) struct Events {
    rx: Rx,
}

fn inet(a: SockAddr) -> Inet4 {
    Inet4 {
        addr: a.0,
        port: a.1,
    }
}

impl UdpEvents for Events {
    fn rx(&self, src: SockAddr, tos: u8, ttl: u8, data: Msg) {
        self.rx.datagram(inet(src), RxIp { tos, ttl }, data)
    }
    fn rx_nomem(&self) {
        self.rx.nomem()
    }
    fn err(&self, dst: SockAddr, errno: i32) {
        self.rx.uderror(inet(dst), errno)
    }
    fn write_space(&self) {
        self.rx.write_space()
    }
    fn readable(&self) {
        self.rx.readable()
    }
}

/// A bound port: its socket.
pub(crate) struct KernelPort(UdpSocket<Events>);

/// The IP TTL the socket uses unless told otherwise (`net.ipv4.ip_default_ttl`'s default).
const DEFAULT_TTL: u8 = 64;

/// The TOS and TTL to set for `opts`: only what differs from the socket's own values.
fn tos_ttl(opts: &TxOpts) -> (Option<u8>, Option<u8>) {
    let tos = Some(opts.tos).filter(|t| *t != 0);
    let ttl = Some(opts.ttl).filter(|t| *t != 0 && *t != DEFAULT_TTL);
    (tos, ttl)
}

/// Send `data` to `dst` through `sock` with `opts` (both networks).
fn send(sock: &UdpSocket<Events>, dst: Inet4, data: &Msg, opts: &TxOpts) -> Result<(), Errno> {
    let (tos, ttl) = tos_ttl(opts);
    sock.send((dst.addr, dst.port), data, tos, ttl, !opts.checksum)
}

impl Port for KernelPort {
    fn local(&self) -> Inet4 {
        inet(self.0.local())
    }

    fn send(&self, dst: Inet4, data: &Msg, opts: &TxOpts) -> Result<(), Errno> {
        send(&self.0, dst, data, opts)
    }

    // Directly to IP only (`strudp.c`'s `rstreams_udp_xmit`, safe without the Stream lock);
    // what needs the socket's path is left to the locked send.
    const EXPRESS: bool = true;

    fn send_unlocked(&self, dst: Inet4, data: &Msg, opts: &TxOpts) -> Option<Result<(), Errno>> {
        let (tos, ttl) = tos_ttl(opts);
        self.0
            .send_express((dst.addr, dst.port), data, tos, ttl, !opts.checksum)
    }

    fn set_bufs(&self, sndbuf: usize, _rcvbuf: usize) {
        // The receive side has no socket buffer: the driver's read queue is the buffer.
        self.0.set_sndbuf(sndbuf)
    }
}

/// A bind's errno in TPI terms.
fn bind_error(e: Errno, req: &BindReq) -> BindError {
    const EACCES: i32 = 13;
    const EINVAL: i32 = 22;
    const EADDRINUSE: i32 = 98;
    const EADDRNOTAVAIL: i32 = 99;
    match e.0 {
        // No ephemeral port left is EADDRINUSE too.
        EADDRINUSE if req.local.port == 0 => BindError::NoAddr,
        EADDRINUSE => BindError::AddrBusy,
        EADDRNOTAVAIL | EINVAL => BindError::BadAddr,
        EACCES => BindError::Acces,
        _ => BindError::Sys(e),
    }
}

impl Net for KernelNet {
    type Opener = Opener;
    type Port = KernelPort;

    fn opener() -> Result<Opener, Errno> {
        let ns = NetNs::current();
        let privileged = ns.may_bind_privileged();
        Ok(Opener { ns, privileged })
    }

    fn privileged(o: &Opener) -> bool {
        o.privileged
    }

    fn bind(o: &Opener, req: &BindReq, rx: Rx) -> Result<KernelPort, BindError> {
        bind(o, req, rx, false).map(KernelPort)
    }

    fn defer(job: Job) {
        defer(job)
    }
}

/// A socket for `req` in the opener's namespace, `queued` or direct.
fn bind(o: &Opener, req: &BindReq, rx: Rx, queued: bool) -> Result<UdpSocket<Events>, BindError> {
    let args = BindArgs {
        local: (req.local.addr, req.local.port),
        reuse: req.reuseaddr,
        broadcast: req.broadcast,
        sndbuf: req.sndbuf,
        queued,
        rcvbuf: req.rcvbuf,
    };
    UdpSocket::bind(&o.ns, &args, Events { rx }).map_err(|e| bind_error(e, req))
}

/// The network of `xtiso-udp` (XTI over sockets): ordinary kernel UDP sockets, read from their
/// receive queues by the driver's read service procedure.
pub(crate) struct SocketNet;

/// A bound port of [`SocketNet`]: a queued socket.
pub(crate) struct SocketPort(UdpSocket<Events>);

impl Port for SocketPort {
    const QUEUED: bool = true;

    fn local(&self) -> Inet4 {
        inet(self.0.local())
    }

    fn send(&self, dst: Inet4, data: &Msg, opts: &TxOpts) -> Result<(), Errno> {
        send(&self.0, dst, data, opts)
    }

    fn set_bufs(&self, sndbuf: usize, rcvbuf: usize) {
        self.0.set_sndbuf(sndbuf);
        self.0.set_rcvbuf(rcvbuf);
    }

    fn recv(&self) -> Option<Result<Received, Errno>> {
        self.0.recv().map(|r| {
            r.map(|got| match got {
                udpsock::Received::Datagram(src, ip, m) => {
                    Received::Datagram(inet(src), ip.map(|(tos, ttl)| RxIp { tos, ttl }), m)
                }
                udpsock::Received::Error(dst, errno) => Received::Error(inet(dst), errno),
            })
        })
    }

    fn dropped(&self) -> u64 {
        self.0.drops()
    }
}

impl Net for SocketNet {
    type Opener = Opener;
    type Port = SocketPort;

    fn opener() -> Result<Opener, Errno> {
        KernelNet::opener()
    }

    fn privileged(o: &Opener) -> bool {
        o.privileged
    }

    fn bind(o: &Opener, req: &BindReq, rx: Rx) -> Result<SocketPort, BindError> {
        bind(o, req, rx, true).map(SocketPort)
    }

    fn defer(job: Job) {
        defer(job)
    }
}

/// `Net::defer` of both networks.
fn defer(job: Job) {
    match DeferredJob::new(job) {
        Ok(w) => {
            // A new item is never queued already; only an unloading module refuses, and
            // then no Stream (so no job) exists any more.
            let _ = RunQueue::enqueue(w);
        }
        Err(None) => {}
        Err(Some(job)) => {
            // No memory for the work item (GFP_ATOMIC): run it here. It binds or
            // releases a port, which may sleep; this is the one place that can, and only
            // when the kernel is out of atomic memory.
            pr_warn!("rstreams: udp: running a deferred job in place\n");
            job.run()
        }
    }
}

/// A job of the driver's, run by the STREAMS runner (process context, no Stream lock).
#[pin_data]
struct DeferredJob {
    #[pin]
    job: kernel::sync::SpinLock<Option<Job>>,
    #[pin]
    work: Work<DeferredJob>,
}

impl_has_work! {
    impl HasWork<Self> for DeferredJob { self.work }
}

impl WorkItem for DeferredJob {
    type Pointer = Arc<DeferredJob>;

    fn run(this: Arc<DeferredJob>) {
        let job = this.job.lock().take();
        if let Some(job) = job {
            job.run();
        }
    }
}

impl DeferredJob {
    /// A work item holding `job` (GFP_ATOMIC: the caller may hold a Stream lock or run in
    /// softirq context); the job back when there is no memory. (The initializer takes the job
    /// only once the allocation has succeeded, and cannot fail after that, so a failure always
    /// hands it back.)
    fn new(job: Job) -> Result<Arc<DeferredJob>, Option<Job>> {
        let cell = core::cell::Cell::new(Some(job));
        let slot = &cell;
        Arc::pin_init(
            pin_init!(DeferredJob {
                job <- kernel::new_spinlock!(slot.take(), "rstreams_udp_job"),
                work <- new_work!("rstreams_udp_job"),
            }),
            GFP_ATOMIC,
        )
        .map_err(|_| cell.take())
    }
}
