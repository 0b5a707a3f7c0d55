//! The network under the `udp` driver: the boundary between the TPI layer (this crate, no
//! kernel code) and the kernel side (a kernel UDP socket per bound endpoint, with an
//! encapsulation receive hook; glue in `rust/modules`).
//!
//! ```text
//!   Stream (under its lock)                         the network (kernel: softirq, process)
//!   udp wput ── T_UNITDATA_REQ ── Port::send ─────▶ IP (kernel: routed and built by the
//!                                                   port, as UDP tunnels send) or UDP socket
//!   udp rput ◀── gate ◀── QRef::put ◀── Rx::datagram / Rx::uderror ◀── encap rcv / ICMP
//!   udp rsrv ── Port::recv ◀──────────── (queued ports: the socket's receive queue)
//!   udp rsrv ◀── back-enable ◀───────── Rx::readable ◀── socket data ready (queued ports)
//!   udp wsrv ◀── back-enable ◀───────── Rx::write_space ◀── socket write space
//!   bind, unbind, close ── Job (after the unlock) ── Net::bind / drop(Port) (may sleep)
//! ```
//!
//! Two kinds of port: a *direct* one (the `udp` driver: the paper's STREAMS path) hands each
//! datagram to [`Rx::datagram`] and each ICMP error to [`Rx::uderror`] from the IP receive
//! path, so no socket receive queue sits between IP and the Stream; a *queued* one
//! ([`Port::QUEUED`], `xtiso-udp`: XTI over sockets) leaves datagrams in its socket's receive
//! queue and ICMP errors in its error queue and says [`Rx::readable`]; the driver's read
//! service procedure then takes them with [`Port::recv`] ([`Received`]) while the Stream
//! above has room, so the socket's receive buffer (XTI_RCVBUF) is where a slow reader's
//! datagrams wait and are dropped. Both kinds give the same T_UNITDATA_IND (with the
//! received IPv4 header's TTL and TOS as options) and T_UDERROR_IND.
//!
//! Contexts: [`Net::bind`] and the drop of a [`Port`] may sleep, so the driver never calls
//! them under the Stream lock: it hands them to a [`Job`] that runs after the lock hold
//! (`QCtx::run_later`), or, in the rare hold whose `Later` list is full, to [`Net::defer`].
//! [`Port::send`] and [`Port::set_bufs`] run under the Stream lock and never sleep;
//! [`Port::send_unlocked`] (the express send, `express.rs`) runs without it, with bottom
//! halves off, and never sleeps. [`Rx`] methods run in any context (softirq included): they
//! only put into the Stream's gate.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use streams_core::errno::Errno;
use streams_core::msg::Msg;
use streams_core::stream::{Perimeter, QRef};
use streams_core::sys::Arc;

use super::prim;

/// An IPv4 transport address: the address as on the wire (network order bytes), port in host
/// order.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct Inet4 {
    /// The IPv4 address, network order.
    pub addr: [u8; 4],
    /// The port, host order.
    pub port: u16,
}

/// What a T_BIND_REQ (plus the endpoint's options set before it) asks of the network.
#[derive(Clone, Copy, Debug)]
pub struct BindReq {
    /// The address asked for (port 0: an ephemeral port; INADDR_ANY: every local address).
    pub local: Inet4,
    /// IP_REUSEADDR.
    pub reuseaddr: bool,
    /// IP_BROADCAST.
    pub broadcast: bool,
    /// XTI_SNDBUF.
    pub sndbuf: usize,
    /// XTI_RCVBUF.
    pub rcvbuf: usize,
}

/// Why a bind failed, in TPI terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BindError {
    /// TADDRBUSY: the address is in use.
    AddrBusy,
    /// TACCES: not allowed (e.g. a port below 1024 without the privilege).
    Acces,
    /// TNOADDR: no ephemeral port left.
    NoAddr,
    /// TBADADDR: not an address of this host.
    BadAddr,
    /// TSYSERR with this errno.
    Sys(Errno),
}

impl BindError {
    /// The T_ERROR_ACK's `TLI_error` and `UNIX_error`.
    pub fn tpi(self) -> (i32, i32) {
        match self {
            BindError::AddrBusy => (prim::TADDRBUSY, 0),
            BindError::Acces => (prim::TACCES, 0),
            BindError::NoAddr => (prim::TNOADDR, 0),
            BindError::BadAddr => (prim::TBADADDR, 0),
            BindError::Sys(e) => (prim::TSYSERR, e.0),
        }
    }
}

/// Transmit options of one datagram (T_UNITDATA_REQ options over the endpoint's current ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxOpts {
    /// IP_TOS.
    pub tos: u8,
    /// IP_TTL.
    pub ttl: u8,
    /// UDP_CHECKSUM.
    pub checksum: bool,
    /// IP_BROADCAST.
    pub broadcast: bool,
}

/// What the IPv4 header of a received datagram said: the options of its T_UNITDATA_IND
/// (IP_TTL and IP_TOS at level INET_IP, status T_SUCCESS, as LfS's udp driver reports them;
/// [`super::opt::rx_opts`], [`super::prim::unitdata_ind_rx`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxIp {
    /// The header's type of service.
    pub tos: u8,
    /// The header's time to live, as it arrived.
    pub ttl: u8,
}

/// What a queued port's [`Port::recv`] takes from its socket: the next ICMP error, else the
/// next datagram.
#[derive(Debug)]
pub enum Received {
    /// A datagram from this source, what its IPv4 header said (`None` when the port could not
    /// tell: no options in its T_UNITDATA_IND), and its bytes as an M_DATA message.
    Datagram(Inet4, Option<RxIp>, Msg),
    /// An ICMP error (positive errno, e.g. ECONNREFUSED for port unreachable) for a datagram
    /// the port sent to this address: a T_UDERROR_IND.
    Error(Inet4, i32),
}

/// The network under the driver. Kernel: a kernel UDP socket per bound endpoint (glue in
/// `rust/modules`). Host tests: the in-memory `FakeNet` of `tests/fake.rs`.
pub trait Net: 'static {
    /// What an endpoint keeps of its opener (kernel: its network namespace, counted, and
    /// whether it may bind ports < 1024). Dropped in any context.
    type Opener: Send + Sync;
    /// A bound port.
    type Port: Port;
    /// Taken in the driver's open routine, in the opener's context; never sleeps.
    fn opener() -> Result<Self::Opener, Errno>;
    /// Whether the opener may bind ports below 1024 (CAP_NET_BIND_SERVICE, at open). The
    /// driver answers TACCES itself when not.
    fn privileged(o: &Self::Opener) -> bool;
    /// Bind. Process context, no Stream lock held, may sleep (so the driver defers it:
    /// TS_WACK_BREQ). `rx` is where the port delivers what it receives.
    fn bind(o: &Self::Opener, req: &BindReq, rx: Rx) -> Result<Self::Port, BindError>;
    /// Run `job` ([`Job::run`]) soon in process context holding no Stream lock (kernel: a
    /// work item). Called, under a Stream lock or in softirq context, only when the driver
    /// cannot leave the job to its lock hold's `Later` list (the list is full, or the list was
    /// dropped unfinished): rare, but the job binds or releases a port, which may sleep, so
    /// it must not run in place. Must not fail: if the work item cannot be allocated, run
    /// the job on a preallocated fallback (the job itself is already allocated).
    fn defer(job: Job);
}

/// A bound port of the network.
pub trait Port: Send + Sync {
    /// The bound address (the ephemeral port chosen when 0 was asked).
    fn local(&self) -> Inet4;
    /// Send one datagram with the bytes of `data` (the whole M_DATA chain) to `dst`. Called
    /// under the Stream lock: never sleeps. `Err(EAGAIN)`: no send buffer now; the port calls
    /// [`Rx::write_space`] when there is. Other errors: this datagram failed (the driver
    /// answers T_UDERROR_IND with the errno).
    fn send(&self, dst: Inet4, data: &Msg, opts: &TxOpts) -> Result<(), Errno>;
    /// Whether [`Port::send_unlocked`] may send (the driver publishes its express send,
    /// `express.rs`, only over such a port).
    const EXPRESS: bool = false;
    /// [`Port::send`] without the Stream lock (the express send, `perim/express_send.rs` in
    /// the core): called concurrently with other calls of itself, never with a call made
    /// under the Stream lock; never sleeps, never waits for the Stream lock, and what it
    /// delivers into the endpoint's own Stream goes through its gate ([`Rx`]). `None`: this
    /// datagram needs what only [`Port::send`] does (nothing was sent); the driver then sends
    /// it under the lock. Default: always `None`.
    fn send_unlocked(&self, _dst: Inet4, _data: &Msg, _opts: &TxOpts) -> Option<Result<(), Errno>> {
        None
    }
    /// XTI_SNDBUF / XTI_RCVBUF on a bound endpoint; never sleeps.
    fn set_bufs(&self, sndbuf: usize, rcvbuf: usize);
    /// Whether received datagrams and ICMP errors wait in the port's own queues for
    /// [`Port::recv`] (after [`Rx::readable`]) instead of arriving through [`Rx::datagram`]
    /// and [`Rx::uderror`].
    const QUEUED: bool = false;
    /// The next ICMP error of the port, else the next datagram of its receive queue; `None`
    /// when neither waits. Called by the driver's read service procedure under the Stream
    /// lock: never sleeps, allocates without sleeping. `Some(Err(_))`: a datagram was taken
    /// and lost (no memory for its message).
    fn recv(&self) -> Option<Result<Received, Errno>> {
        None
    }
    /// Datagrams the port itself dropped (a full receive queue); the driver reports them with
    /// its flow control drops.
    fn dropped(&self) -> u64 {
        0
    }
}
// Dropping a Port unbinds it. The drop MAY SLEEP: the driver drops it in process context
// holding no Stream lock (through a Job), and once the drop returns no Rx call for it runs.

/// Work the driver must do outside its Stream lock (bind a port, release one). Made by the
/// driver; [`Net::defer`] receives one only when it cannot run from the lock hold's `Later`
/// list.
pub struct Job(pub(crate) Arc<dyn Perimeter>);

impl Job {
    /// Do the work and let go of it. Process context, no Stream lock held; may sleep.
    pub fn run(self) {
        self.0.run(0);
    }
}

/// The endpoint's counters, readable with [`crate::UDP_IOC_STATS`]. Atomics: bumped from any
/// context.
#[derive(Default)]
pub struct Stats {
    /// Datagrams delivered into the Stream (T_UNITDATA_IND put).
    pub received: AtomicU64,
    /// Datagrams dropped because the read side was flow controlled (XTI_RCVBUF full).
    pub dropped_flow: AtomicU64,
    /// Datagrams dropped for want of memory (the T_UNITDATA_IND block).
    pub dropped_nomem: AtomicU64,
    /// Datagrams sent (`Port::send` succeeded).
    pub sent: AtomicU64,
    /// Datagrams that failed to send (answered with T_UDERROR_IND).
    pub send_errors: AtomicU64,
    /// T_UDERROR_IND delivered for ICMP errors.
    pub uderror: AtomicU64,
    /// Datagrams that arrived after the endpoint unbound or closed (dropped).
    pub dropped_closed: AtomicU64,
    /// The binding whose port may deliver (bumped at each unbind: a port being released
    /// delivers nothing more).
    pub(crate) binding: AtomicU32,
}

/// Number of u64 words of the [`crate::UDP_IOC_STATS`] answer.
pub const NSTATS: usize = 7;

impl Stats {
    /// The counters, in the order of the [`crate::UDP_IOC_STATS`] answer.
    pub fn words(&self) -> [u64; NSTATS] {
        [
            self.received.load(Relaxed),
            self.dropped_flow.load(Relaxed),
            self.dropped_nomem.load(Relaxed),
            self.sent.load(Relaxed),
            self.send_errors.load(Relaxed),
            self.uderror.load(Relaxed),
            self.dropped_closed.load(Relaxed),
        ]
    }
}

/// The T_UNITDATA_IND of a datagram from `src`, with `ip` as its options (none when the port
/// could not tell) and `data` linked behind it; `None` without memory for it (the datagram is
/// dropped and counted in `stats`). For both kinds of port ([`Rx::datagram`], and the driver's
/// read service procedure for a queued one).
pub(crate) fn unitdata_ind(stats: &Stats, src: Inet4, ip: Option<&RxIp>, data: Msg) -> Option<Msg> {
    let mp = match ip {
        // The common case, every datagram of a direct port: the fixed layout.
        Some(ip) => prim::unitdata_ind_rx(&src, ip),
        None => prim::unitdata_ind(&src.encode(), &[]),
    };
    let Some(mut mp) = mp else {
        drop(data);
        stats.dropped_nomem.fetch_add(1, Relaxed);
        return None;
    };
    mp.linkb(data);
    Some(mp)
}

/// The T_UDERROR_IND of an ICMP error (`errno`) for a datagram sent to `dst`; `None` without
/// memory for it (counted in `stats`). For both kinds of port, as [`unitdata_ind`].
pub(crate) fn uderror_ind(stats: &Stats, dst: Inet4, errno: i32) -> Option<Msg> {
    let mp = prim::uderror_ind(&dst.encode(), errno);
    if mp.is_none() {
        stats.dropped_nomem.fetch_add(1, Relaxed);
    }
    mp
}

/// What a port uses to deliver into the endpoint's Stream; made by the driver (a `QRef` to
/// the driver's read queue, one to its write queue, and the endpoint's counters). Every
/// method: any context (softirq included), never sleeps, never takes the Stream lock.
pub struct Rx {
    pub(crate) rq: QRef,
    pub(crate) wq: QRef,
    pub(crate) stats: Arc<Stats>,
    /// The binding this port belongs to ([`Stats::binding`] when made).
    pub(crate) binding: u32,
}

impl Rx {
    /// Whether this port's binding is still the endpoint's. An early filter, not the
    /// decision: what passes it while the unbind or close is under way is refused by the
    /// driver's read put procedure (not TS_IDLE) or by the closed gate, and counted the same,
    /// so it orders nothing and needs no barrier (`Relaxed`: a plain load on every
    /// architecture, once per datagram).
    fn live(&self) -> bool {
        self.stats.binding.load(Relaxed) == self.binding
    }

    /// Put `mp` up the Stream, or count it as dropped after close.
    fn put(&self, mp: Msg) -> bool {
        match self.rq.put(mp) {
            Ok(()) => true,
            Err(mp) => {
                drop(mp);
                self.stats.dropped_closed.fetch_add(1, Relaxed);
                false
            }
        }
    }

    /// A datagram from `src` whose IPv4 header said `ip`; `data` is its M_DATA (the kernel
    /// side makes it with esballoc over the skb). Builds the T_UNITDATA_IND, with `ip` as its
    /// options, and puts it. If the read side is flow controlled, or memory runs out, the
    /// datagram is dropped and the drop counted.
    pub fn datagram(&self, src: Inet4, ip: RxIp, data: Msg) {
        if !self.live() {
            drop(data);
            self.stats.dropped_closed.fetch_add(1, Relaxed);
            return;
        }
        if !self.rq.canput() {
            drop(data);
            self.stats.dropped_flow.fetch_add(1, Relaxed);
            return;
        }
        let Some(mp) = unitdata_ind(&self.stats, src, Some(&ip), data) else {
            return;
        };
        if self.put(mp) {
            self.stats.received.fetch_add(1, Relaxed);
        }
    }

    /// An ICMP error for a datagram this port sent to `dst` (e.g. ECONNREFUSED for port
    /// unreachable): T_UDERROR_IND with `ERROR_type` `errno`. Dropped (and counted as a flow
    /// drop) when the read side is flow controlled.
    pub fn uderror(&self, dst: Inet4, errno: i32) {
        if !self.live() {
            return;
        }
        if !self.rq.canput() {
            self.stats.dropped_flow.fetch_add(1, Relaxed);
            return;
        }
        let Some(mp) = uderror_ind(&self.stats, dst, errno) else {
            return;
        };
        if self.put(mp) {
            self.stats.uderror.fetch_add(1, Relaxed);
        }
    }

    /// A datagram the port dropped because it could not make its M_DATA block (the kernel
    /// side's esballoc over the skb failed): counted with the other memory drops.
    pub fn nomem(&self) {
        self.stats.dropped_nomem.fetch_add(1, Relaxed);
    }

    /// Datagrams or ICMP errors wait in the port's queues ([`Port::QUEUED`] ports):
    /// back-enable the driver's read queue, whose service procedure takes them with
    /// [`Port::recv`].
    pub fn readable(&self) {
        if self.live() {
            self.rq.backenable(0);
        }
    }

    /// Send buffer space again after an EAGAIN: back-enable the driver's write queue, whose
    /// service procedure sends what waits.
    pub fn write_space(&self) {
        self.wq.backenable(0);
    }
}
