//! `FakeNet`: an in-memory network for the driver's tests. A port table (ephemeral ports from
//! 40000, TADDRBUSY, TBADADDR for addresses that are not 0.0.0.0, 127.0.0.1 or 10/8), `send`
//! delivering synchronously to the bound port's `Rx`, a "send buffer full" switch per source
//! address (EAGAIN, then `Rx::write_space` when switched off), an ICMP switch per source
//! address (`Rx::uderror` ECONNREFUSED for a datagram to no port), a transmit failure switch per
//! source address, and a list of deferred jobs. It records what the driver hands each port:
//! the transmit options of every datagram sent (`last_tx`) and the send and receive buffer
//! sizes (`bufs_of`: the bind's, then each `Port::set_bufs`); it keeps no buffers. Two
//! switches per local address model what other sockets of the host do to a bind there:
//! every port of the ephemeral range taken
//! (a bind to port 0 finds none free: TNOADDR), and a bind that fails with an errno (the
//! kernel's socket creation or bind failing: TSYSERR).
//! `FakeQueuedNet` is the same network with queued ports (`Port::QUEUED`, as XTI over
//! sockets): a datagram waits in its port's receive queue (at most [`QUEUE_CAP`], the rest
//! dropped and counted), an ICMP error in its error queue, and the port says `Rx::readable`.
//!
//! Its world is a `static` behind `std`'s `Mutex`: `Net::opener` takes no argument, so the
//! world must be reachable from a static, and the 6.12 kernel crate has no const-constructible
//! lock (nor may this crate use `unsafe`). So the driver suites run on the host only; see
//! `docs/tpi.md`. Tests run in parallel: each uses addresses of its own.

extern crate std;

use std::collections::VecDeque;
use std::sync::Mutex;
use std::vec::Vec;

use super::super::net::{BindError, BindReq, Inet4, Job, Net, Port, Received, Rx, RxIp, TxOpts};
use streams_core::errno::Errno;
use streams_core::msg::Msg;
use streams_core::perim::test::TestPerim;
use streams_core::sth::consts::{MSG_ANY, MSG_BAND, MSG_HIPRI};
use streams_core::sth::tests::{get, put};
use streams_core::sth::StrHead;
use streams_core::sys::Arc;

use super::super::prim::{Ind, Req};

struct Entry {
    id: u64,
    local: Inet4,
    reuse: bool,
    rx: Arc<Rx>,
    queue: Option<Arc<Mutex<RecvQueue>>>,
    /// XTI_SNDBUF and XTI_RCVBUF as the driver last gave them: at bind (`BindReq`), then
    /// with each `Port::set_bufs`.
    bufs: (usize, usize),
}

/// Datagrams a queued port holds; more are dropped.
pub const QUEUE_CAP: usize = 16;

/// A queued port's receive queue and error queue.
#[derive(Default)]
struct RecvQueue {
    dgrams: VecDeque<(Inet4, RxIp, Msg)>,
    errors: VecDeque<(Inet4, i32)>,
    dropped: u64,
}

struct World {
    ports: Vec<Entry>,
    next_id: u64,
    next_eph: u16,
    full: Vec<[u8; 4]>,
    waiting: Vec<(u64, [u8; 4])>,
    icmp: Vec<[u8; 4]>,
    deferred: Vec<Job>,
    tx: Vec<(Inet4, Inet4, TxOpts)>,
    fail: Vec<([u8; 4], Errno)>,
    taken: Vec<[u8; 4]>,
    bind_fail: Vec<([u8; 4], Errno)>,
}

/// The ephemeral port range (port 0 binds one of these).
const EPHEMERAL: core::ops::RangeInclusive<u16> = 40000..=60999;

static WORLD: Mutex<World> = Mutex::new(World {
    ports: Vec::new(),
    next_id: 1,
    next_eph: 40000,
    full: Vec::new(),
    waiting: Vec::new(),
    icmp: Vec::new(),
    deferred: Vec::new(),
    tx: Vec::new(),
    fail: Vec::new(),
    taken: Vec::new(),
    bind_fail: Vec::new(),
});

fn world() -> std::sync::MutexGuard<'static, World> {
    WORLD.lock().unwrap_or_else(|e| e.into_inner())
}

/// The in-memory network.
pub struct FakeNet;

/// A port of the in-memory network.
pub struct FakePort {
    id: u64,
    local: Inet4,
    rx: Arc<Rx>,
    queue: Option<Arc<Mutex<RecvQueue>>>,
}

fn local_addr(a: [u8; 4]) -> bool {
    a == [0; 4] || a == [127, 0, 0, 1] || a[0] == 10
}

impl Net for FakeNet {
    type Opener = ();
    type Port = FakePort;
    fn opener() -> Result<(), Errno> {
        Ok(())
    }
    fn privileged(_: &()) -> bool {
        false
    }
    fn bind(_: &(), req: &BindReq, rx: Rx) -> Result<FakePort, BindError> {
        bind(req, rx, false)
    }
    fn defer(job: Job) {
        world().deferred.push(job);
    }
}

/// Bind a port for `req` delivering to `rx`, `queued` or direct.
fn bind(req: &BindReq, rx: Rx, queued: bool) -> Result<FakePort, BindError> {
    if !local_addr(req.local.addr) {
        return Err(BindError::BadAddr);
    }
    let rx = streams_core::sys::new_arc(rx).map_err(|_| BindError::Sys(Errno::ENOSR))?;
    let mut w = world();
    if let Some((_, e)) = w.bind_fail.iter().find(|(x, _)| *x == req.local.addr) {
        return Err(BindError::Sys(*e));
    }
    let clash = |w: &World, l: Inet4| {
        let outside =
            EPHEMERAL.contains(&l.port) && w.taken.iter().any(|t| *t == l.addr || l.is_any());
        outside
            || w.ports.iter().any(|e| {
                e.local.port == l.port
                    && (e.local.addr == l.addr || e.local.is_any() || l.is_any())
                    && !(e.reuse && req.reuseaddr)
            })
    };
    let mut local = req.local;
    if local.port == 0 {
        let mut found = false;
        for _ in 0..1000 {
            local.port = w.next_eph;
            w.next_eph = if w.next_eph >= *EPHEMERAL.end() {
                *EPHEMERAL.start()
            } else {
                w.next_eph + 1
            };
            if !clash(&w, local) {
                found = true;
                break;
            }
        }
        if !found {
            return Err(BindError::NoAddr);
        }
    } else if clash(&w, local) {
        return Err(BindError::AddrBusy);
    }
    let id = w.next_id;
    w.next_id += 1;
    let queue = if queued {
        Some(Arc::new(Mutex::new(RecvQueue::default())))
    } else {
        None
    };
    w.ports.push(Entry {
        id,
        local,
        reuse: req.reuseaddr,
        rx: rx.clone(),
        queue: queue.clone(),
        bufs: (req.sndbuf, req.rcvbuf),
    });
    Ok(FakePort {
        id,
        local,
        rx,
        queue,
    })
}

/// The in-memory network with queued ports.
pub struct FakeQueuedNet;

/// A queued port of the in-memory network.
pub struct FakeQueuedPort(FakePort);

impl Net for FakeQueuedNet {
    type Opener = ();
    type Port = FakeQueuedPort;
    fn opener() -> Result<(), Errno> {
        Ok(())
    }
    fn privileged(_: &()) -> bool {
        false
    }
    fn bind(_: &(), req: &BindReq, rx: Rx) -> Result<FakeQueuedPort, BindError> {
        bind(req, rx, true).map(FakeQueuedPort)
    }
    fn defer(job: Job) {
        world().deferred.push(job);
    }
}

impl Port for FakeQueuedPort {
    const QUEUED: bool = true;
    fn local(&self) -> Inet4 {
        self.0.local
    }
    fn send(&self, dst: Inet4, data: &Msg, opts: &TxOpts) -> Result<(), Errno> {
        self.0.send(dst, data, opts)
    }
    fn set_bufs(&self, sndbuf: usize, rcvbuf: usize) {
        self.0.set_bufs(sndbuf, rcvbuf)
    }
    fn recv(&self) -> Option<Result<Received, Errno>> {
        let mut q = self
            .0
            .queue
            .as_ref()?
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some((dst, errno)) = q.errors.pop_front() {
            return Some(Ok(Received::Error(dst, errno)));
        }
        let (src, ip, data) = q.dgrams.pop_front()?;
        Some(Ok(Received::Datagram(src, Some(ip), data)))
    }
    fn dropped(&self) -> u64 {
        self.0
            .queue
            .as_ref()
            .map_or(0, |q| q.lock().unwrap_or_else(|e| e.into_inner()).dropped)
    }
}

impl Port for FakePort {
    fn local(&self) -> Inet4 {
        self.local
    }
    fn send(&self, dst: Inet4, data: &Msg, opts: &TxOpts) -> Result<(), Errno> {
        let (to, icmp) = {
            let mut w = world();
            if w.full.contains(&self.local.addr) {
                w.waiting.push((self.id, self.local.addr));
                return Err(Errno::EAGAIN);
            }
            if let Some((_, e)) = w.fail.iter().find(|(x, _)| *x == self.local.addr) {
                return Err(*e);
            }
            w.tx.push((self.local, dst, *opts));
            let to = w
                .ports
                .iter()
                .find(|e| {
                    e.local.port == dst.port && (e.local.addr == dst.addr || e.local.is_any())
                })
                .map(|e| (e.rx.clone(), e.queue.clone()));
            (to, w.icmp.contains(&self.local.addr))
        };
        match to {
            Some((rx, queue)) => {
                let copy = data.copymsg().map_err(|_| Errno::ENOSR)?;
                let mut src = self.local;
                if src.is_any() {
                    src.addr = dst.addr;
                }
                // What the receiver's IP header says: the sender's TOS and TTL (no router
                // between).
                let ip = RxIp {
                    tos: opts.tos,
                    ttl: opts.ttl,
                };
                match queue {
                    Some(q) => {
                        {
                            let mut q = q.lock().unwrap_or_else(|e| e.into_inner());
                            if q.dgrams.len() < QUEUE_CAP {
                                q.dgrams.push_back((src, ip, copy));
                            } else {
                                q.dropped += 1;
                            }
                        }
                        rx.readable();
                    }
                    None => rx.datagram(src, ip, copy),
                }
            }
            // A queued port keeps the error on its error queue (IP_RECVERR).
            None if icmp => match &self.queue {
                Some(q) => {
                    q.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .errors
                        .push_back((dst, 111));
                    self.rx.readable();
                }
                None => self.rx.uderror(dst, 111),
            },
            None => {}
        }
        Ok(())
    }
    fn set_bufs(&self, sndbuf: usize, rcvbuf: usize) {
        if let Some(e) = world().ports.iter_mut().find(|e| e.id == self.id) {
            e.bufs = (sndbuf, rcvbuf);
        }
    }
    // The world's lock is the only one `send` takes, and it delivers through the `Rx`.
    const EXPRESS: bool = true;
    fn send_unlocked(&self, dst: Inet4, data: &Msg, opts: &TxOpts) -> Option<Result<(), Errno>> {
        Some(self.send(dst, data, opts))
    }
}

impl Drop for FakePort {
    fn drop(&mut self) {
        world().ports.retain(|e| e.id != self.id);
    }
}

/// Switch the send buffers of source address `a` full (EAGAIN) or not (the ports that got
/// EAGAIN get `Rx::write_space`).
pub fn set_full(a: [u8; 4], full: bool) {
    let wake: Vec<Arc<Rx>> = {
        let mut w = world();
        if full {
            w.full.push(a);
            return;
        }
        w.full.retain(|x| *x != a);
        let ids: Vec<u64> = w
            .waiting
            .iter()
            .filter(|(_, x)| *x == a)
            .map(|(i, _)| *i)
            .collect();
        w.waiting.retain(|(_, x)| *x != a);
        w.ports
            .iter()
            .filter(|e| ids.contains(&e.id))
            .map(|e| e.rx.clone())
            .collect()
    };
    for rx in wake {
        rx.write_space();
    }
}

/// Make every send from source address `a` fail with `e` (a transmit error: the driver
/// answers T_UDERROR_IND), or succeed again with `None`.
pub fn set_fail(a: [u8; 4], e: Option<Errno>) {
    let mut w = world();
    w.fail.retain(|(x, _)| *x != a);
    if let Some(e) = e {
        w.fail.push((a, e));
    }
}

/// Take every port of the ephemeral range on local address `a` (as other sockets of the
/// host would: a bind there to port 0 gets `BindError::NoAddr`, to one of them
/// `BindError::AddrBusy`), or give them back.
pub fn set_ports_taken(a: [u8; 4], taken: bool) {
    let mut w = world();
    w.taken.retain(|x| *x != a);
    if taken {
        w.taken.push(a);
    }
}

/// Make every bind on local address `a` fail with `e` (`BindError::Sys`: the driver answers
/// T_ERROR_ACK TSYSERR with it), or succeed again with `None`.
pub fn set_bind_fail(a: [u8; 4], e: Option<Errno>) {
    let mut w = world();
    w.bind_fail.retain(|(x, _)| *x != a);
    if let Some(e) = e {
        w.bind_fail.push((a, e));
    }
}

/// Answer datagrams from `a` to no port with ICMP port unreachable.
pub fn set_icmp(a: [u8; 4]) {
    world().icmp.push(a);
}

/// Run the deferred jobs; how many ran.
pub fn run_deferred() -> usize {
    let jobs: Vec<Job> = core::mem::take(&mut world().deferred);
    let n = jobs.len();
    for j in jobs {
        j.run();
    }
    n
}

/// Ports bound on address `a`.
pub fn bound_on(a: [u8; 4]) -> usize {
    world().ports.iter().filter(|e| e.local.addr == a).count()
}

/// XTI_SNDBUF and XTI_RCVBUF of the port bound on `a`, as the driver gave them (at bind,
/// then `Port::set_bufs`).
pub fn bufs_of(a: Inet4) -> Option<(usize, usize)> {
    world().ports.iter().find(|e| e.local == a).map(|e| e.bufs)
}

/// The transmit options of the last datagram sent from `a`.
pub fn last_tx(a: [u8; 4]) -> Option<TxOpts> {
    world()
        .tx
        .iter()
        .rev()
        .find(|(s, _, _)| s.addr == a)
        .map(|(_, _, o)| *o)
}

/// Bind the endpoint of `p` (a Stream with the `udp` driver over this network) on `local`:
/// T_BIND_REQ, the bind run, its T_BIND_ACK taken. Whether it was acknowledged (the cost
/// harnesses' setup).
pub fn bind_endpoint(p: &TestPerim<StrHead>, local: Inet4) -> bool {
    let Some(req) = super::super::prim::encode_req(&Req::Bind {
        addr: &local.encode(),
        conind: 0,
    }) else {
        return false;
    };
    let flags = match req.db_type() == streams_core::msg::M_PCPROTO {
        true => MSG_HIPRI,
        false => MSG_BAND,
    };
    if p.op(|s| put(s, Some(req.rd()), None, 0, flags)).is_err() {
        return false;
    }
    while p.run_scheduled() || run_deferred() != 0 {}
    let Ok((_, c, _)) = p.op(|s| get(s, 256, 256, 0, MSG_ANY)) else {
        return false;
    };
    let ack = c.buf.get(..c.n).unwrap_or_default();
    matches!(Ind::decode(ack), Some(Ind::BindAck(_)))
}

/// The `Rx` of the port bound on `a` (the receive cost harness, `examples/udprxcost.rs`,
/// delivers through it as the kernel's receive hook does).
pub fn rx_of(a: Inet4) -> Option<Arc<Rx>> {
    world()
        .ports
        .iter()
        .find(|e| e.local == a)
        .map(|e| e.rx.clone())
}
