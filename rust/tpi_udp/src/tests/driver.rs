//! Shared tests of the `udp` driver through a real Stream head (putmsg/getmsg), each endpoint a
//! Stream in its own perimeter, over [`FakeNet`](super::fake::FakeNet).

extern crate std;

use core::ops::Range;
use std::sync::Mutex;
use std::vec::Vec;

use super::super::net::{self, Inet4, Rx, RxIp};
use super::super::opt::{self, *};
use super::super::prim::{self, *};
use super::super::udp::{streamtab, UDP_ID, UDP_IOC_STATS, UDP_NAME, XTISO_ID, XTISO_NAME};
use super::fake::{self, FakeNet, FakeQueuedNet};
use streams_core::errno::Errno;
use streams_core::ktest::{Failure, TestResult};
use streams_core::msg::{Msg, M_CTL, M_DATA, M_DELAY, M_FLUSH, M_PCSIG};
use streams_core::perim::test::{settle, TestPerim};
use streams_core::sth::consts::*;
use streams_core::sth::tests::{get, put};
use streams_core::sth::{Block, IocArg, Stop, StrHead, StrIoctl, Stream};
use streams_core::stream::{
    ModuleInfo, OpenArgs, QCtx, QueueId, Registry, StreamModule, StreamTab,
};
use streams_core::sys::{Arc, Box};
use streams_core::{box_dyn, check, check_eq, check_ok, check_some, ktest_suite};

static UDP: StreamTab = streamtab::<FakeNet>(UDP_NAME, UDP_ID);
/// The same driver over queued ports (as `xtiso-udp`).
static QUEUED: StreamTab = streamtab::<FakeQueuedNet>(XTISO_NAME, XTISO_ID);

type Ep = Arc<TestPerim<StrHead>>;

fn open() -> Result<Ep, Failure> {
    open_tab(&UDP)
}

fn open_tab(tab: &'static StreamTab) -> Result<Ep, Failure> {
    let s = check_ok!(Stream::sth_new(tab));
    Ok(check_ok!(TestPerim::new_owned(s)))
}

fn close(e: &Ep) {
    e.op(Stream::sth_close);
    e.close_gate();
    fake::run_deferred();
}

/// Run what the endpoints' puts and the deferred jobs left, until nothing is left.
fn settle_all(eps: &[&Ep]) {
    for _ in 0..64 {
        let ps: [&TestPerim<StrHead>; 4] = core::array::from_fn(|i| &**eps[i.min(eps.len() - 1)]);
        let n = settle(&ps) + fake::run_deferred();
        if n == 0 {
            break;
        }
    }
}

fn send(e: &Ep, req: &Req<'_>, data: Option<&[u8]>) -> Result<(), Stop> {
    e.op(|s| put_req(s, req, data, 0))
}

/// putmsg of `req` (and `data`) on `s`, inside a lock hold; an M_PROTO in priority band
/// `band`.
fn put_req(s: &mut Stream, req: &Req<'_>, data: Option<&[u8]>, band: u8) -> Result<(), Stop> {
    let m = prim::encode_req(req).ok_or(Stop::Err(Errno::ENOSR))?;
    let hipri = m.db_type() == streams_core::msg::M_PCPROTO;
    let (band, flags) = match hipri {
        true => (0, MSG_HIPRI),
        false => (i32::from(band), MSG_BAND),
    };
    put(s, Some(m.rd()), data, band, flags)
}

/// putmsg of a T_UNITDATA_REQ to `dest` (any bytes: a `sockaddr_in` or not) with options
/// `opt` and data part `data`.
fn unitdata(e: &Ep, dest: &[u8], opt: &[u8], data: Option<&[u8]>) -> Result<(), Stop> {
    send(e, &Req::Unitdata { dest, opt }, data)
}

/// One T_UNITDATA_REQ to `to` per tag `i` of `tags`, carrying the bytes `[i; 3]`, in priority
/// band `band`.
fn numbered(e: &Ep, to: &Inet4, band: u8, tags: Range<u8>) -> TestResult {
    let dest = to.encode();
    for i in tags {
        let req = Req::Unitdata {
            dest: &dest,
            opt: &[],
        };
        check_ok!(e.op(|s| put_req(s, &req, Some(&[i; 3]), band)));
    }
    Ok(())
}

/// getmsg: control bytes and data bytes (EAGAIN when nothing is there).
fn recv(e: &Ep) -> Result<([u8; 256], usize, [u8; 256], usize), Stop> {
    let (_, c, d) = e.op(|s| get(s, 256, 256, 0, MSG_ANY))?;
    Ok((c.buf, c.n, d.buf, d.n))
}

fn addr(a: [u8; 4], port: u16) -> [u8; 16] {
    Inet4 { addr: a, port }.encode()
}

/// Bind `e` to `a`: the T_BIND_ACK's address.
fn bind(e: &Ep, a: [u8; 16]) -> Result<Inet4, Failure> {
    check_ok!(send(
        e,
        &Req::Bind {
            addr: &a,
            conind: 0
        },
        None
    ));
    settle_all(&[e]);
    let (c, n, _, _) = check_ok!(recv(e));
    match Ind::decode(&c[..n]) {
        Some(Ind::BindAck(b)) => Ok(check_some!(Inet4::decode(b))),
        _ => Err(Failure {
            file: file!(),
            line: line!(),
            what: "T_BIND_ACK",
        }),
    }
}

fn error_of(e: &Ep) -> Option<(i32, i32, i32)> {
    let (c, n, _, _) = recv(e).ok()?;
    match Ind::decode(&c[..n]) {
        Some(Ind::ErrorAck(p, t, u)) => Some((p, t, u)),
        _ => None,
    }
}

/// I_STR `cmd` on `e` with `len` (at most 64) zero bytes as its data, retried while the
/// answer is on its way: the answer's bytes, or the error the ioctl returned.
fn istr(e: &Ep, cmd: i32, len: usize) -> Result<Result<Vec<u8>, Stop>, Failure> {
    let data = match len {
        0 => None,
        _ => Some(check_ok!(Msg::from_bytes(
            M_DATA,
            check_some!([0u8; 64].get(..len))
        ))),
    };
    let mut ioc = StrIoctl::new(cmd, 0, len as i32, data);
    let reg = Registry::new();
    let mut r = Err(Stop::Block(Block::IoctlAck));
    for _ in 0..3 {
        r = e.op(|s| s.strioctl(&reg, I_STR, IocArg::Str(&mut ioc)));
        if r != Err(Stop::Block(Block::IoctlAck)) {
            break;
        }
    }
    if let Err(stop) = r {
        return Ok(Err(stop));
    }
    let ans = check_some!(ioc.answer.as_ref());
    Ok(Ok(ans.cont().unwrap_or(ans).rd().to_vec()))
}

/// The endpoint's counters (`UDP_IOC_STATS`).
fn stats(e: &Ep) -> Result<[u64; 7], Failure> {
    let ans = check_ok!(istr(e, UDP_IOC_STATS, 56)?);
    let mut out = [0u64; 7];
    for (o, w) in out.iter_mut().zip(ans.chunks_exact(8)) {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        *o = u64::from_ne_bytes(b);
    }
    Ok(out)
}

/// The endpoint's TPI state (`TS_*`), as its T_INFO_ACK reports it.
fn state(e: &Ep) -> Result<i32, Failure> {
    check_ok!(send(e, &Req::Info, None));
    let (c, n, _, _) = check_ok!(recv(e));
    match Ind::decode(&c[..n]) {
        Some(Ind::InfoAck(i)) => Ok(i.state),
        _ => Err(Failure {
            file: file!(),
            line: line!(),
            what: "T_INFO_ACK",
        }),
    }
}

/// T_BIND_REQ of `a`, run to its answer: T_ERROR_ACK's (TLI_error, UNIX_error), or `None`
/// for anything else (a T_BIND_ACK).
fn bind_refused(e: &Ep, a: &[u8]) -> Result<Option<(i32, i32)>, Failure> {
    check_ok!(send(e, &Req::Bind { addr: a, conind: 0 }, None));
    settle_all(&[e]);
    Ok(match error_of(e) {
        Some((p, t, u)) if p == T_BIND_REQ => Some((t, u)),
        _ => None,
    })
}

/// What a T_OPTMGMT_REQ of one option got: the T_OPTMGMT_ACK's MGMT_flags and the option it
/// returned (level, name, status, value), or the T_ERROR_ACK's TLI_error.
#[derive(Debug, PartialEq, Eq)]
enum OptAnswer {
    Ack(i32, (u32, u32, u32, Vec<u8>)),
    Error(i32),
}

/// T_OPTMGMT_REQ with `flags` of option (`level`, `name`) with `value`.
fn optmgmt1(e: &Ep, flags: i32, level: u32, name: u32, value: &[u8]) -> Result<OptAnswer, Failure> {
    let mut ob = check_some!(OptBuf::new());
    check!(opt::put(&mut ob, level, name, 0, value));
    check_ok!(send(
        e,
        &Req::Optmgmt {
            opt: ob.bytes(),
            flags
        },
        None
    ));
    let (c, n, _, _) = check_ok!(recv(e));
    match Ind::decode(&c[..n]) {
        Some(Ind::OptmgmtAck(o, f)) => {
            let (list, k) = check_ok!(parse::<2>(o));
            check_eq!(k, 1);
            let o = check_some!(list[0]);
            Ok(OptAnswer::Ack(
                f,
                (o.level, o.name, o.status, o.value.to_vec()),
            ))
        }
        Some(Ind::ErrorAck(T_OPTMGMT_REQ, t, _)) => Ok(OptAnswer::Error(t)),
        _ => Err(Failure {
            file: file!(),
            line: line!(),
            what: "T_OPTMGMT_ACK or T_ERROR_ACK",
        }),
    }
}

fn info_bind_addr_unbind_rebind() -> TestResult {
    let a = open()?;
    check_ok!(send(&a, &Req::Info, None));
    let (c, n, _, _) = check_ok!(recv(&a));
    let Some(Ind::InfoAck(i)) = Ind::decode(&c[..n]) else {
        return Err(Failure {
            file: file!(),
            line: line!(),
            what: "T_INFO_ACK",
        });
    };
    check_eq!((i.tsdu, i.serv, i.state, i.addr), (65507, T_CLTS, 0, 16));
    let got = bind(&a, addr([10, 1, 0, 1], 0))?;
    check!(got.port >= 40000);
    check_ok!(send(&a, &Req::Addr, None));
    let (c, n, _, _) = check_ok!(recv(&a));
    check_eq!(
        Ind::decode(&c[..n]),
        Some(Ind::AddrAck(&got.encode()[..], &[][..]))
    );
    // A second bind is out of state.
    check_eq!(bind_refused(&a, &[])?, Some((TOUTSTATE, 0)));
    check_ok!(send(&a, &Req::Unbind, None));
    settle_all(&[&a]);
    check_eq!(fake::bound_on([10, 1, 0, 1]), 0);
    let (c, n, _, _) = check_ok!(recv(&a));
    check_eq!(Ind::decode(&c[..n]), Some(Ind::OkAck(T_UNBIND_REQ)));
    check_eq!(bind(&a, addr([10, 1, 0, 1], 5000))?.port, 5000);
    // Busy, privileged, foreign, short.
    let b = open()?;
    check_eq!(
        bind_refused(&b, &addr([10, 1, 0, 1], 5000))?,
        Some((TADDRBUSY, 0))
    );
    check_eq!(
        bind_refused(&b, &addr([10, 1, 0, 1], 80))?,
        Some((TACCES, 0))
    );
    check_eq!(
        bind_refused(&b, &addr([8, 8, 8, 8], 5001))?,
        Some((TBADADDR, 0))
    );
    check_eq!(bind_refused(&b, &[2, 0, 1])?, Some((TBADADDR, 0)));
    check_ok!(b.op(|s| put(s, Some(&T_BIND_REQ.to_ne_bytes()), None, 0, MSG_BAND)));
    check_eq!(error_of(&b), Some((T_BIND_REQ, TSYSERR, Errno::EINVAL.0)));
    close(&a);
    close(&b);
    check_eq!(fake::bound_on([10, 1, 0, 1]), 0);
    Ok(())
}

fn two_endpoints_exchange_datagrams() -> TestResult {
    let (a, b) = (open()?, open()?);
    let aa = bind(&a, addr([10, 2, 0, 1], 6000))?;
    let ba = bind(&b, addr([10, 2, 0, 1], 6001))?;
    for (from, to, fa, ta, text) in [
        (&a, &b, aa, ba, &b"to b"[..]),
        (&b, &a, ba, aa, &b"back to a"[..]),
    ] {
        check_ok!(unitdata(from, &ta.encode(), &[], Some(text)));
        settle_all(&[&a, &b]);
        let (c, n, d, dn) = check_ok!(recv(to));
        // The options: the received header's TTL and TOS (the sender's defaults here).
        let ip = opt::rx_opts(&RxIp { tos: 0, ttl: 64 });
        check_eq!(
            Ind::decode(&c[..n]),
            Some(Ind::UnitdataInd(&fa.encode()[..], &ip[..]))
        );
        check_eq!(&d[..dn], text);
    }
    // Per-datagram options reach the port.
    let (ob, on) = {
        let mut b = check_some!(OptBuf::new());
        opt::put(&mut b, INET_IP, IP_TTL, 0, &[7]);
        let mut o = [0u8; 64];
        let n = streams_core::sys::copy_bytes(&mut o, b.bytes());
        (o, n)
    };
    check_ok!(unitdata(&a, &ba.encode(), &ob[..on], Some(b"x")));
    check_eq!(fake::last_tx([10, 2, 0, 1]).map(|t| t.ttl), Some(7));
    // ... and the receiver sees them in the IP header: its T_UNITDATA_IND says IP_TTL 7.
    settle_all(&[&a, &b]);
    let (c, n, _, _) = check_ok!(recv(&b));
    let ip = opt::rx_opts(&RxIp { tos: 0, ttl: 7 });
    check_eq!(
        Ind::decode(&c[..n]),
        Some(Ind::UnitdataInd(&aa.encode()[..], &ip[..]))
    );
    // Zero-length datagram.
    check_ok!(unitdata(&a, &ba.encode(), &[], None));
    settle_all(&[&a, &b]);
    let (_, _, _, dn) = check_ok!(recv(&b));
    check_eq!(dn, 0);
    let sa = stats(&a)?;
    let sb = stats(&b)?;
    check_eq!((sa[3], sb[0]), (3, 3)); // a sent 3, b received 3
    close(&a);
    close(&b);
    Ok(())
}

fn bad_input_is_answered() -> TestResult {
    let (a, b) = (open()?, open()?);
    let ba = bind(&b, addr([10, 3, 0, 1], 7000))?;
    check_ok!(send(&a, &Req::Other(T_CONN_REQ), None));
    check_eq!(error_of(&a), Some((T_CONN_REQ, TNOTSUPPORT, 0)));
    check_ok!(send(&a, &Req::Other(99), None));
    check_eq!(error_of(&a), Some((99, TNOTSUPPORT, 0)));
    check_ok!(send(&a, &Req::Unbind, None));
    check_eq!(error_of(&a), Some((T_UNBIND_REQ, TOUTSTATE, 0)));
    check_ok!(send(
        &a,
        &Req::Optmgmt {
            opt: &[1, 2, 3],
            flags: T_NEGOTIATE
        },
        None
    ));
    check_eq!(error_of(&a), Some((T_OPTMGMT_REQ, TBADOPT, 0)));
    check_ok!(send(
        &a,
        &Req::Optmgmt {
            opt: &[],
            flags: 0x77
        },
        None
    ));
    check_eq!(error_of(&a), Some((T_OPTMGMT_REQ, TBADFLAG, 0)));
    let _ = bind(&a, addr([10, 3, 0, 1], 0))?;
    // Bad destination, bad option: T_UDERROR_IND.
    check_ok!(unitdata(&a, &[1, 2, 3, 4, 5, 6, 7, 8], &[], Some(b"x")));
    let (c, n, _, _) = check_ok!(recv(&a));
    check!(matches!(
        Ind::decode(&c[..n]),
        Some(Ind::UderrorInd(_, _, TBADADDR))
    ));
    check_ok!(unitdata(&a, &addr([10, 3, 0, 1], 0), &[], Some(b"x")));
    let (c, n, _, _) = check_ok!(recv(&a));
    check!(matches!(
        Ind::decode(&c[..n]),
        Some(Ind::UderrorInd(_, _, TBADADDR))
    ));
    check_ok!(unitdata(&a, &ba.encode(), &[0; 16], Some(b"x")));
    let (c, n, _, _) = check_ok!(recv(&a));
    check!(matches!(
        Ind::decode(&c[..n]),
        Some(Ind::UderrorInd(_, _, TBADOPT))
    ));
    // Offsets outside the block.
    let mut raw = [0u8; 20];
    for (d, w) in raw.chunks_exact_mut(4).zip([T_UNITDATA_REQ, 16, 400, 0, 0]) {
        d.copy_from_slice(&w.to_ne_bytes());
    }
    check_ok!(a.op(|s| put(s, Some(&raw), Some(b"x"), 0, MSG_BAND)));
    let (c, n, _, _) = check_ok!(recv(&a));
    check!(matches!(
        Ind::decode(&c[..n]),
        Some(Ind::UderrorInd(_, _, TBADADDR))
    ));
    // ICMP port unreachable.
    fake::set_icmp([10, 3, 0, 1]);
    check_ok!(unitdata(&a, &addr([10, 3, 0, 9], 9), &[], Some(b"x")));
    settle_all(&[&a]);
    let (c, n, _, _) = check_ok!(recv(&a));
    check!(matches!(
        Ind::decode(&c[..n]),
        Some(Ind::UderrorInd(_, _, 111))
    ));
    check_eq!(stats(&a)?[5], 1);
    // Plain data, and short primitives: M_ERROR EPROTO, then every call fails.
    check_ok!(b.op(|s| put(s, None, Some(b"raw"), 0, MSG_BAND)));
    check_eq!(recv(&b).err(), Some(Stop::Err(Errno::EPROTO)));
    check_ok!(a.op(|s| put(s, Some(&[1, 2]), None, 0, MSG_BAND)));
    check_eq!(recv(&a).err(), Some(Stop::Err(Errno::EPROTO)));
    close(&a);
    close(&b);
    check_eq!(fake::bound_on([10, 3, 0, 1]), 0);
    Ok(())
}

fn unitdata_before_bind_is_fatal() -> TestResult {
    let a = open()?;
    check_ok!(unitdata(&a, &addr([10, 4, 0, 1], 1), &[], Some(b"x")));
    check_eq!(recv(&a).err(), Some(Stop::Err(Errno::EPROTO)));
    close(&a);
    Ok(())
}

/// A bound endpoint's T_UNITDATA_REQ shorter than its 20-byte header (19 bytes) is fatal:
/// M_ERROR EPROTO at the head, after which getmsg and putmsg fail EPROTO; nothing was sent.
/// A whole header that names no destination is only T_UDERROR_IND TBADADDR.
fn short_unitdata_when_bound_is_fatal() -> TestResult {
    let a = open()?;
    let src = [10, 27, 0, 1];
    bind(&a, addr(src, 0))?;
    let mut raw = [0u8; 20];
    for (d, w) in raw.chunks_exact_mut(4).zip([T_UNITDATA_REQ, 0, 0, 0, 0]) {
        d.copy_from_slice(&w.to_ne_bytes());
    }
    check_ok!(a.op(|s| put(s, Some(&raw), Some(b"x"), 0, MSG_BAND)));
    let (c, n, _, _) = check_ok!(recv(&a));
    check_eq!(
        Ind::decode(&c[..n]),
        Some(Ind::UderrorInd(&[][..], &[][..], TBADADDR))
    );
    check_ok!(a.op(|s| put(s, Some(&raw[..19]), Some(b"x"), 0, MSG_BAND)));
    check_eq!(recv(&a).err(), Some(Stop::Err(Errno::EPROTO)));
    check_eq!(
        unitdata(&a, &addr(src, 9), &[], Some(b"x")).err(),
        Some(Stop::Err(Errno::EPROTO))
    );
    check_eq!(fake::last_tx(src), None);
    close(&a);
    check_eq!(fake::bound_on(src), 0);
    Ok(())
}

fn flow_control_drops_are_counted() -> TestResult {
    let (a, b) = (open()?, open()?);
    let _ = bind(&a, addr([10, 5, 0, 1], 0))?;
    let ba = bind(&b, addr([10, 5, 0, 1], 8000))?;
    let chunk = [0x55u8; 200];
    let total = 2000u64;
    for _ in 0..total {
        check_ok!(unitdata(&a, &ba.encode(), &[], Some(&chunk)));
        settle_all(&[&a, &b]);
    }
    let s = stats(&b)?;
    check!(s[1] > 0); // dropped for flow control
    check_eq!(s[0] + s[1] + s[2], total);
    // What b holds is bounded by its queues' high-water marks (driver + head).
    let held = s[0] * 200;
    check!(held <= 2 * (opt::BUF_DEFAULT as u64) + 4096);
    let mut got = 0u64;
    while recv(&b).is_ok() {
        got += 1;
    }
    check_eq!(got, s[0]);
    close(&a);
    close(&b);
    Ok(())
}

/// The read put procedure is stepped over for data while TS_IDLE (`Pass::Flow`), but only
/// while the head has room: an endpoint nobody reads fills its head's read queue, then the
/// driver's (the put procedure queues once the head is full), then its datagrams are
/// dropped for flow control; the head never holds more than its high-water mark allows. And
/// once unbound, a T_UNITDATA_IND that reaches the driver (one its port put before the
/// unbind) goes to its put procedure, which drops it.
fn flow_and_state_bound_the_step_over() -> TestResult {
    let b = open()?;
    let local = bind(&b, addr([10, 5, 1, 1], 8200))?;
    let rx = check_some!(fake::rx_of(local));
    let ip = RxIp { tos: 0, ttl: 64 };
    let src = Inet4 {
        addr: [10, 5, 1, 2],
        port: 9,
    };
    for _ in 0..2000 {
        let data = check_ok!(Msg::from_bytes(M_DATA, &[0x5a; 200]));
        rx.datagram(src, ip, data);
        settle_all(&[&b]);
    }
    let s = stats(&b)?;
    check!(s[1] > 0);
    let (head, drv) = b.op(|st| {
        let (h, d) = (st.head_rq(), st.driver_rq());
        let count =
            |q: Option<QueueId>| q.and_then(|q| st.queue(q)).map(|q| (q.count(), q.hiwat()));
        (count(Some(h)), count(d))
    });
    let ((hn, hw), (dn, _)) = (check_some!(head), check_some!(drv));
    check!(dn > 0); // the driver queued once the head was full
    check!(hn <= hw + 200);
    // Unbound: what reaches the driver's read queue is dropped by its put procedure.
    check_ok!(send(&b, &Req::Unbind, None));
    settle_all(&[&b]);
    while recv(&b).is_ok() {}
    let before = stats(&b)?[6];
    let ind = check_some!(net::unitdata_ind(
        &rx.stats,
        src,
        Some(&ip),
        check_ok!(Msg::from_bytes(M_DATA, b"late"))
    ));
    check!(rx.rq.put(ind).is_ok());
    settle_all(&[&b]);
    check!(recv(&b).is_err());
    check_eq!(stats(&b)?[6], before + 1);
    close(&b);
    Ok(())
}

fn eagain_backenables_and_loses_nothing() -> TestResult {
    let (a, b) = (open()?, open()?);
    let _ = bind(&a, addr([10, 6, 0, 1], 0))?;
    let ba = bind(&b, addr([10, 6, 0, 2], 8100))?;
    fake::set_full([10, 6, 0, 1], true);
    numbered(&a, &ba, 0, 0..5)?;
    settle_all(&[&a, &b]);
    check!(recv(&b).is_err());
    fake::set_full([10, 6, 0, 1], false);
    settle_all(&[&a, &b]);
    for i in 0..5u8 {
        let (_, _, d, dn) = check_ok!(recv(&b));
        check_eq!(&d[..dn], &[i; 3]);
    }
    check_eq!(stats(&a)?[3], 5);
    close(&a);
    close(&b);
    Ok(())
}

fn options_through_the_driver() -> TestResult {
    let a = open()?;
    let mut ob = check_some!(OptBuf::new());
    opt::put(&mut ob, XTI_GENERIC, XTI_RCVBUF, 0, &4096u32.to_ne_bytes());
    opt::put(&mut ob, INET_IP, IP_REUSEADDR, 0, &T_YES.to_ne_bytes());
    check_ok!(send(
        &a,
        &Req::Optmgmt {
            opt: ob.bytes(),
            flags: T_NEGOTIATE
        },
        None
    ));
    let (c, n, _, _) = check_ok!(recv(&a));
    let Some(Ind::OptmgmtAck(o, f)) = Ind::decode(&c[..n]) else {
        return Err(Failure {
            file: file!(),
            line: line!(),
            what: "T_OPTMGMT_ACK",
        });
    };
    check_eq!(f, opt::T_SUCCESS as i32);
    check_eq!(check_ok!(parse::<4>(o)).1, 2);
    // XTI_RCVBUF is the driver read queue's high-water mark.
    let rq = check_some!(a.op(|s| s.driver_rq()));
    check_eq!(a.op(|s| s.queue(rq).map(|q| q.hiwat())), Some(4096));
    check_ok!(send(
        &a,
        &Req::Optmgmt {
            opt: &[],
            flags: T_CURRENT
        },
        None
    ));
    let (c, n, _, _) = check_ok!(recv(&a));
    check!(matches!(Ind::decode(&c[..n]), Some(Ind::OptmgmtAck(_, _))));
    close(&a);
    Ok(())
}

fn close_with_datagrams_in_flight() -> TestResult {
    let (a, b) = (open()?, open()?);
    let _ = bind(&a, addr([10, 7, 0, 1], 0))?;
    let ba = bind(&b, addr([10, 7, 0, 2], 8200))?;
    for _ in 0..10 {
        check_ok!(unitdata(&a, &ba.encode(), &[], Some(b"late")));
    }
    // b closes before its perimeter ran the puts; a bind in flight on a third endpoint too.
    close(&b);
    let c = open()?;
    check_ok!(send(
        &c,
        &Req::Bind {
            addr: &addr([10, 7, 0, 3], 0),
            conind: 0
        },
        None
    ));
    close(&c);
    settle_all(&[&a]);
    check_eq!(fake::bound_on([10, 7, 0, 2]), 0);
    check_eq!(fake::bound_on([10, 7, 0, 3]), 0);
    check_ok!(unitdata(&a, &ba.encode(), &[], Some(b"none")));
    close(&a);
    check_eq!(fake::bound_on([10, 7, 0, 1]), 0);
    Ok(())
}

fn allocation_failure_at_each_step() -> TestResult {
    for n in 0..24 {
        let g = streams_core::queue::tests::FaultGuard::fail_after(n);
        let Ok(s) = Stream::sth_new(&UDP) else {
            continue;
        };
        let Ok(a) = TestPerim::new_owned(s) else {
            continue;
        };
        let _ = send(
            &a,
            &Req::Bind {
                addr: &addr([10, 8, 0, 1], 0),
                conind: 0,
            },
            None,
        );
        settle_all(&[&a]);
        let _ = recv(&a);
        let _ = unitdata(&a, &addr([10, 8, 0, 1], 9), &[], Some(b"x"));
        let _ = send(
            &a,
            &Req::Optmgmt {
                opt: &[],
                flags: T_CURRENT,
            },
            None,
        );
        let _ = recv(&a);
        drop(g);
        close(&a);
    }
    check_eq!(fake::bound_on([10, 8, 0, 1]), 0);
    Ok(())
}

/// What `req` (no data part) got on `e` when every allocation after the first `n` fails
/// (`FaultGuard`), the bind it may start run under the same guard: whether the putmsg took
/// it, and the answer read afterwards: T_ERROR_ACK's (primitive, TLI_error, UNIX_error), or
/// (the answer's primitive, 0, 0) for anything else.
fn answer_short_of_memory(e: &Ep, req: &Req<'_>, n: usize) -> (bool, Option<(i32, i32, i32)>) {
    let put = {
        let _g = streams_core::queue::tests::FaultGuard::fail_after(n);
        let r = send(e, req, None);
        settle_all(&[e]);
        r.is_ok()
    };
    settle_all(&[e]);
    let got = recv(e).ok().and_then(|(c, k, _, _)| {
        let c = c.get(..k)?;
        match Ind::decode(c) {
            Some(Ind::ErrorAck(p, t, u)) => Some((p, t, u)),
            _ => Some((prim::prim_type(c)?, 0, 0)),
        }
    });
    (put, got)
}

/// No memory for an answer or for a bind's work: T_INFO_REQ, T_ADDR_REQ, T_OPTMGMT_REQ and
/// T_BIND_REQ are each answered T_ERROR_ACK TSYSERR/ENOSR when allocations fail after the
/// putmsg took the request, and with their acknowledgement once enough succeed; whatever
/// fails, a request the putmsg took is answered, one of the two; after a T_BIND_REQ's
/// ENOSR the endpoint is TS_UNBND with nothing bound.
fn no_memory_is_tsyserr_enosr() -> TestResult {
    let a = open()?;
    let host = [10, 25, 0, 1];
    let mut opt = check_some!(OptBuf::new());
    check!(opt::put(&mut opt, INET_IP, IP_TTL, 0, &[9]));
    let cases = [
        (Req::Info, T_INFO_ACK),
        (Req::Addr, T_ADDR_ACK),
        (
            Req::Optmgmt {
                opt: opt.bytes(),
                flags: T_NEGOTIATE,
            },
            T_OPTMGMT_ACK,
        ),
        (
            Req::Bind {
                addr: &addr(host, 0),
                conind: 0,
            },
            T_BIND_ACK,
        ),
    ];
    for (req, ack) in &cases {
        let ty = check_some!(prim::encode_req(req).and_then(|m| prim::prim_type(m.rd())));
        let (mut enosr, mut acked) = (0, 0);
        for n in 0..32 {
            let (put, got) = answer_short_of_memory(&a, req, n);
            match got {
                Some((p, TSYSERR, u)) if p == ty && u == Errno::ENOSR.0 => {
                    enosr += 1;
                    check!(put);
                    if ty == T_BIND_REQ {
                        check_eq!(state(&a)?, TS_UNBND);
                        check_eq!(fake::bound_on(host), 0);
                    }
                }
                Some((p, 0, 0)) if p == *ack => {
                    acked += 1;
                    if ty == T_BIND_REQ {
                        check_ok!(send(&a, &Req::Unbind, None));
                        settle_all(&[&a]);
                        let (c, k, _, _) = check_ok!(recv(&a));
                        check_eq!(Ind::decode(&c[..k]), Some(Ind::OkAck(T_UNBIND_REQ)));
                    }
                }
                None => check!(!put),
                _ => {
                    return Err(Failure {
                        file: file!(),
                        line: line!(),
                        what: "neither the acknowledgement nor TSYSERR/ENOSR",
                    })
                }
            }
        }
        check!(enosr > 0);
        check!(acked > 0);
    }
    close(&a);
    check_eq!(fake::bound_on(host), 0);
    Ok(())
}

/// A Stream without its perimeter (`Stream::set_perimeter`, which every Stream of the kernel
/// is given at open) gives the driver no `QRef` for the port's `Rx`: its T_BIND_REQ is
/// T_ERROR_ACK TSYSERR/ENXIO, nothing is bound, and the endpoint stays TS_UNBND.
fn bind_without_a_perimeter_is_tsyserr_enxio() -> TestResult {
    let host = [10, 26, 0, 1];
    let mut s = check_ok!(Stream::sth_new(&UDP));
    let bind = Req::Bind {
        addr: &addr(host, 0),
        conind: 0,
    };
    check_ok!(put_req(&mut s, &bind, None, 0));
    let (_, c, _) = check_ok!(get(&mut s, 256, 256, 0, MSG_ANY));
    check_eq!(
        Ind::decode(c.bytes()),
        Some(Ind::ErrorAck(T_BIND_REQ, TSYSERR, Errno::ENXIO.0))
    );
    check_eq!(fake::bound_on(host), 0);
    check_ok!(put_req(&mut s, &Req::Info, None, 0));
    let (_, c, _) = check_ok!(get(&mut s, 256, 256, 0, MSG_ANY));
    check!(matches!(Ind::decode(c.bytes()), Some(Ind::InfoAck(i)) if i.state == TS_UNBND));
    s.sth_close();
    Ok(())
}

/// What a direct port hands to `Rx::datagram` arrives as the T_UNITDATA_IND of exactly that
/// source and those TTL and TOS, datagram after datagram (the first, the same source again,
/// another address, port, TOS, TTL, and back); a datagram whose T_UNITDATA_IND cannot be
/// allocated is dropped and counted (no memory), and the next one arrives whole.
fn received_datagrams_carry_their_own_source_and_header() -> TestResult {
    let a = open()?;
    let local = bind(&a, addr([10, 13, 0, 1], 8300))?;
    let rx = check_some!(fake::rx_of(local));
    let s1 = Inet4 {
        addr: [10, 13, 0, 2],
        port: 9000,
    };
    let ip = RxIp { tos: 0, ttl: 64 };
    let cases = [
        (s1, ip),
        (s1, ip),
        (
            Inet4 {
                addr: [10, 13, 0, 3],
                ..s1
            },
            ip,
        ),
        (Inet4 { port: 9001, ..s1 }, ip),
        (s1, RxIp { tos: 0x10, ttl: 64 }),
        (s1, RxIp { tos: 0x10, ttl: 7 }),
        (s1, ip),
    ];
    for (i, (src, ip)) in cases.iter().enumerate() {
        let data = check_ok!(streams_core::msg::Msg::from_bytes(
            streams_core::msg::M_DATA,
            &[i as u8; 3]
        ));
        rx.datagram(*src, *ip, data);
        let (c, n, d, dn) = check_ok!(recv(&a));
        let o = opt::rx_opts(ip);
        check_eq!(
            Ind::decode(&c[..n]),
            Some(Ind::UnitdataInd(&src.encode()[..], &o[..]))
        );
        check_eq!(&d[..dn], &[i as u8; 3][..]);
    }
    let before = stats(&a)?;
    check_eq!(before[0], cases.len() as u64);
    // No memory for the T_UNITDATA_IND: dropped, counted, nothing arrives.
    let data = check_ok!(streams_core::msg::Msg::from_bytes(
        streams_core::msg::M_DATA,
        b"lost"
    ));
    {
        let _g = streams_core::queue::tests::FaultGuard::fail_after(0);
        rx.datagram(s1, ip, data);
    }
    check!(recv(&a).is_err());
    let after = stats(&a)?;
    check_eq!(after[2], before[2] + 1);
    check_eq!(after[0], before[0]);
    // The next one arrives.
    let data = check_ok!(streams_core::msg::Msg::from_bytes(
        streams_core::msg::M_DATA,
        b"next"
    ));
    rx.datagram(s1, ip, data);
    let (c, n, d, dn) = check_ok!(recv(&a));
    check_eq!(
        Ind::decode(&c[..n]),
        Some(Ind::UnitdataInd(&s1.encode()[..], &opt::rx_opts(&ip)[..]))
    );
    check_eq!(&d[..dn], b"next");
    check_eq!(stats(&a)?[0], before[0] + 1);
    close(&a);
    Ok(())
}

/// Over queued ports: datagrams wait in the port until the read service procedure takes
/// them, which it does only while the Stream above has room; the port drops (and the stats
/// count) what overflows it, and everything it held arrives as the reader reads.
fn queued_port_drains_as_the_reader_reads() -> TestResult {
    let (a, b) = (open_tab(&QUEUED)?, open_tab(&QUEUED)?);
    let aa = bind(&a, addr([10, 9, 0, 1], 0))?;
    let ba = bind(&b, addr([10, 9, 0, 2], 8200))?;
    // One datagram, with its source and, as over a direct port, the received header's TTL
    // and TOS as options.
    check_ok!(unitdata(&a, &ba.encode(), &[], Some(b"queued")));
    settle_all(&[&a, &b]);
    let (c, cn, d, dn) = check_ok!(recv(&b));
    check_eq!(&d[..dn], b"queued");
    let ip = opt::rx_opts(&RxIp { tos: 0, ttl: 64 });
    check_eq!(
        Ind::decode(&c[..cn]),
        Some(Ind::UnitdataInd(&aa.encode()[..], &ip[..]))
    );
    // A reader that does not read: the Stream fills to its marks, the port to its queue.
    let chunk = [0x66u8; 200];
    let total = 600u64;
    for _ in 0..total {
        check_ok!(unitdata(&a, &ba.encode(), &[], Some(&chunk)));
        settle_all(&[&a, &b]);
    }
    let s = stats(&b)?;
    let inside = s[0] - 1; // the first datagram was read
    check!(s[1] > 0);
    check!(inside * 200 <= 2 * (opt::BUF_DEFAULT as u64) + 4096);
    check_eq!(inside + s[1] + fake::QUEUE_CAP as u64, total);
    // Reading takes everything the Stream and the port held.
    let mut got = 0u64;
    for _ in 0..4 {
        while let Ok((_, _, d, dn)) = recv(&b) {
            check_eq!(&d[..dn], &chunk[..]);
            got += 1;
        }
        settle_all(&[&a, &b]);
    }
    check_eq!(got, total - s[1]);
    check_eq!(stats(&b)?[0], total - s[1] + 1);
    close(&a);
    close(&b);
    Ok(())
}

/// ICMP port unreachable for a datagram sent to no port: T_UDERROR_IND ECONNREFUSED to the
/// datagram's destination, counted, over a direct port (from `Rx::uderror`) and over a queued
/// one (from its error queue, taken by the read service procedure) alike.
fn icmp_error_over_both_kinds_of_port() -> TestResult {
    for (tab, src) in [(&UDP, [10, 10, 0, 1]), (&QUEUED, [10, 10, 0, 2])] {
        let a = open_tab(tab)?;
        bind(&a, addr(src, 0))?;
        fake::set_icmp(src);
        let dst = addr([10, 10, 0, 9], 9);
        check_ok!(unitdata(&a, &dst, &[], Some(b"x")));
        settle_all(&[&a]);
        let (c, n, _, _) = check_ok!(recv(&a));
        check_eq!(
            Ind::decode(&c[..n]),
            Some(Ind::UderrorInd(&dst[..], &[][..], 111))
        );
        check_eq!(stats(&a)?[5], 1);
        close(&a);
    }
    Ok(())
}

/// TS_WACK_BREQ lasts from the T_BIND_REQ until the bind, which runs after the lock hold,
/// is answered: in that same hold a T_INFO_REQ reports it, and a T_UNBIND_REQ, a second
/// T_BIND_REQ or a T_OPTMGMT_REQ is T_ERROR_ACK TOUTSTATE; after the hold come the T_BIND_ACK
/// and TS_IDLE.
fn bind_in_progress_is_ts_wack_breq() -> TestResult {
    let a = open()?;
    let here = addr([10, 19, 0, 1], 6300);
    let bind_req = Req::Bind {
        addr: &here,
        conind: 0,
    };
    // What each request of the hold got: T_INFO_ACK's state, or T_ERROR_ACK's fields.
    let got = a.op(|s| {
        put_req(s, &bind_req, None, 0).ok()?;
        let mut answer = |req: &Req<'_>| -> Option<(i32, i32, i32)> {
            put_req(s, req, None, 0).ok()?;
            let (_, c, _) = get(s, 256, 256, 0, MSG_ANY).ok()?;
            match Ind::decode(c.bytes())? {
                Ind::InfoAck(i) => Some((T_INFO_ACK, i.state, 0)),
                Ind::ErrorAck(p, t, u) => Some((p, t, u)),
                _ => None,
            }
        };
        Some([
            answer(&Req::Info)?,
            answer(&Req::Unbind)?,
            answer(&bind_req)?,
            answer(&Req::Optmgmt {
                opt: &[],
                flags: T_CURRENT,
            })?,
        ])
    });
    check_eq!(
        got,
        Some([
            (T_INFO_ACK, TS_WACK_BREQ, 0),
            (T_UNBIND_REQ, TOUTSTATE, 0),
            (T_BIND_REQ, TOUTSTATE, 0),
            (T_OPTMGMT_REQ, TOUTSTATE, 0),
        ])
    );
    settle_all(&[&a]);
    let (c, n, _, _) = check_ok!(recv(&a));
    check_eq!(Ind::decode(&c[..n]), Some(Ind::BindAck(&here[..])));
    check_eq!(state(&a)?, TS_IDLE);
    close(&a);
    Ok(())
}

/// No ephemeral port free on the address (other sockets hold them all): a bind to port 0 is
/// T_ERROR_ACK TNOADDR, and the endpoint is TS_UNBND with nothing bound; a named port of
/// that range is TADDRBUSY; once ports are free the same endpoint binds one.
fn bind_without_a_free_port_is_tnoaddr() -> TestResult {
    let a = open()?;
    let host = [10, 14, 0, 1];
    fake::set_ports_taken(host, true);
    check_eq!(bind_refused(&a, &addr(host, 0))?, Some((TNOADDR, 0)));
    check_eq!(state(&a)?, TS_UNBND);
    check_eq!(fake::bound_on(host), 0);
    check_eq!(bind_refused(&a, &addr(host, 40001))?, Some((TADDRBUSY, 0)));
    fake::set_ports_taken(host, false);
    check!(bind(&a, addr(host, 0))?.port >= 40000);
    check_eq!(state(&a)?, TS_IDLE);
    close(&a);
    check_eq!(fake::bound_on(host), 0);
    Ok(())
}

/// A bind the network refuses with an errno of its own (the kernel's socket creation or bind
/// failing; ENOMEM here): T_ERROR_ACK TSYSERR carrying that errno, TS_UNBND, nothing bound;
/// the endpoint binds once the network lets it.
fn bind_failing_in_the_network_is_tsyserr() -> TestResult {
    let a = open()?;
    let host = [10, 15, 0, 1];
    fake::set_bind_fail(host, Some(Errno::ENOMEM));
    check_eq!(
        bind_refused(&a, &addr(host, 6100))?,
        Some((TSYSERR, Errno::ENOMEM.0))
    );
    check_eq!(state(&a)?, TS_UNBND);
    check_eq!(fake::bound_on(host), 0);
    fake::set_bind_fail(host, None);
    check_eq!(bind(&a, addr(host, 6100))?.port, 6100);
    check_eq!(state(&a)?, TS_IDLE);
    close(&a);
    Ok(())
}

/// IP_REUSEADDR negotiated on (T_SUCCESS, T_YES) by two endpoints lets the second bind the
/// address the first holds; an endpoint without it gets TADDRBUSY there and stays TS_UNBND;
/// negotiated while unbound, it is used at that endpoint's next bind.
fn ip_reuseaddr_shares_a_bound_address() -> TestResult {
    let (a, b, c) = (open()?, open()?, open()?);
    let host = [10, 16, 0, 1];
    let here = addr(host, 6200);
    let yes = T_YES.to_ne_bytes();
    let on = OptAnswer::Ack(
        T_SUCCESS as i32,
        (INET_IP, IP_REUSEADDR, T_SUCCESS, yes.to_vec()),
    );
    for e in [&a, &b] {
        check_eq!(optmgmt1(e, T_NEGOTIATE, INET_IP, IP_REUSEADDR, &yes)?, on);
    }
    let first = bind(&a, here)?;
    check_eq!(bind(&b, here)?, first);
    check_eq!(bind_refused(&c, &here)?, Some((TADDRBUSY, 0)));
    check_eq!(state(&c)?, TS_UNBND);
    check_eq!(fake::bound_on(host), 2);
    check_eq!(optmgmt1(&c, T_NEGOTIATE, INET_IP, IP_REUSEADDR, &yes)?, on);
    check_eq!(bind(&c, here)?, first);
    check_eq!(fake::bound_on(host), 3);
    for e in [&a, &b, &c] {
        close(e);
    }
    check_eq!(fake::bound_on(host), 0);
    Ok(())
}

/// IP_BROADCAST on its own: T_CURRENT says T_NO (the default, T_SUCCESS); T_NEGOTIATE T_YES is
/// T_SUCCESS and T_CURRENT says T_YES after it; a value neither T_YES nor T_NO is T_FAILURE
/// and keeps T_YES; a value of the wrong size is T_ERROR_ACK TBADOPT. The negotiated value
/// goes to the port with each datagram, and a datagram's own IP_BROADCAST overrides it.
fn ip_broadcast_negotiated_and_current() -> TestResult {
    let a = open()?;
    let (yes, no) = (T_YES.to_ne_bytes(), T_NO.to_ne_bytes());
    let ack = |flags: u32, status: u32, v: &[u8]| {
        OptAnswer::Ack(flags as i32, (INET_IP, IP_BROADCAST, status, v.to_vec()))
    };
    let cur = |e: &Ep| optmgmt1(e, T_CURRENT, INET_IP, IP_BROADCAST, &[]);
    let neg = |e: &Ep, v: &[u8]| optmgmt1(e, T_NEGOTIATE, INET_IP, IP_BROADCAST, v);
    check_eq!(cur(&a)?, ack(T_SUCCESS, T_SUCCESS, &no));
    check_eq!(neg(&a, &yes)?, ack(T_SUCCESS, T_SUCCESS, &yes));
    check_eq!(cur(&a)?, ack(T_SUCCESS, T_SUCCESS, &yes));
    check_eq!(
        neg(&a, &7u32.to_ne_bytes())?,
        ack(T_FAILURE, T_FAILURE, &yes)
    );
    check_eq!(neg(&a, &[1])?, OptAnswer::Error(TBADOPT));
    check_eq!(cur(&a)?, ack(T_SUCCESS, T_SUCCESS, &yes));
    // To the port: the endpoint's value, then a datagram's own.
    let src = [10, 20, 0, 1];
    bind(&a, addr(src, 0))?;
    let to = addr([10, 20, 0, 9], 9);
    check_ok!(unitdata(&a, &to, &[], Some(b"x")));
    check_eq!(fake::last_tx(src).map(|t| t.broadcast), Some(true));
    let mut ob = check_some!(OptBuf::new());
    check!(opt::put(&mut ob, INET_IP, IP_BROADCAST, 0, &no));
    check_ok!(unitdata(&a, &to, ob.bytes(), Some(b"x")));
    check_eq!(fake::last_tx(src).map(|t| t.broadcast), Some(false));
    close(&a);
    Ok(())
}

/// XTI_DEBUG on its own: T_CURRENT says 0 (T_SUCCESS); T_NEGOTIATE of two words is T_SUCCESS
/// and keeps (answers, and T_CURRENT then says) the first; a value that is not whole words,
/// or more than four, is T_ERROR_ACK TBADOPT and changes nothing; an empty value is 0 again.
fn xti_debug_negotiated_and_current() -> TestResult {
    let a = open()?;
    let words = |w: &[u32]| w.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
    let ack = |v: u32| {
        OptAnswer::Ack(
            T_SUCCESS as i32,
            (XTI_GENERIC, XTI_DEBUG, T_SUCCESS, words(&[v])),
        )
    };
    let cur = |e: &Ep| optmgmt1(e, T_CURRENT, XTI_GENERIC, XTI_DEBUG, &[]);
    let neg = |e: &Ep, v: &[u8]| optmgmt1(e, T_NEGOTIATE, XTI_GENERIC, XTI_DEBUG, v);
    check_eq!(cur(&a)?, ack(0));
    check_eq!(neg(&a, &words(&[5, 9]))?, ack(5));
    check_eq!(cur(&a)?, ack(5));
    check_eq!(neg(&a, &[1, 2, 3])?, OptAnswer::Error(TBADOPT));
    check_eq!(
        neg(&a, &words(&[1, 2, 3, 4, 5]))?,
        OptAnswer::Error(TBADOPT)
    );
    check_eq!(cur(&a)?, ack(5));
    check_eq!(neg(&a, &[])?, ack(0));
    check_eq!(cur(&a)?, ack(0));
    close(&a);
    Ok(())
}

/// XTI_SNDBUF and XTI_RCVBUF reach the port (`fake::bufs_of`): an endpoint that negotiated
/// neither binds with the defaults (65536); values negotiated while unbound are the bind's;
/// negotiated while bound, the port gets the new value at once (`Port::set_bufs`), and a
/// value outside 2048..4 MiB is T_PARTSUCCESS with the clamped value, which is what the port
/// gets and T_CURRENT shows; T_CHECK changes nothing.
fn xti_bufs_reach_the_port() -> TestResult {
    let (a, b) = (open()?, open()?);
    let host = [10, 21, 0, 1];
    let ack = |status: u32, name: u32, v: u32| {
        OptAnswer::Ack(
            status as i32,
            (XTI_GENERIC, name, status, v.to_ne_bytes().to_vec()),
        )
    };
    let neg =
        |e: &Ep, name: u32, v: u32| optmgmt1(e, T_NEGOTIATE, XTI_GENERIC, name, &v.to_ne_bytes());
    let (d, max) = (BUF_DEFAULT as usize, BUF_MAX as usize);
    let al = bind(&a, addr(host, 0))?;
    check_eq!(fake::bufs_of(al), Some((d, d)));
    check_eq!(neg(&b, XTI_SNDBUF, 3000)?, ack(T_SUCCESS, XTI_SNDBUF, 3000));
    check_eq!(neg(&b, XTI_RCVBUF, 5000)?, ack(T_SUCCESS, XTI_RCVBUF, 5000));
    let bl = bind(&b, addr(host, 6400))?;
    check_eq!(fake::bufs_of(bl), Some((3000, 5000)));
    // Bound: each change reaches the port, clamped.
    check_eq!(
        neg(&a, XTI_SNDBUF, 10000)?,
        ack(T_SUCCESS, XTI_SNDBUF, 10000)
    );
    check_eq!(fake::bufs_of(al), Some((10000, d)));
    check_eq!(
        neg(&a, XTI_SNDBUF, 100)?,
        ack(T_PARTSUCCESS, XTI_SNDBUF, 2048)
    );
    check_eq!(fake::bufs_of(al), Some((2048, d)));
    check_eq!(
        neg(&a, XTI_SNDBUF, 8 << 20)?,
        ack(T_PARTSUCCESS, XTI_SNDBUF, BUF_MAX)
    );
    check_eq!(fake::bufs_of(al), Some((max, d)));
    check_eq!(
        neg(&a, XTI_RCVBUF, 1)?,
        ack(T_PARTSUCCESS, XTI_RCVBUF, 2048)
    );
    check_eq!(fake::bufs_of(al), Some((max, 2048)));
    check_eq!(
        neg(&a, XTI_RCVBUF, u32::MAX)?,
        ack(T_PARTSUCCESS, XTI_RCVBUF, BUF_MAX)
    );
    check_eq!(fake::bufs_of(al), Some((max, max)));
    check_eq!(
        optmgmt1(&a, T_CURRENT, XTI_GENERIC, XTI_SNDBUF, &[])?,
        ack(T_SUCCESS, XTI_SNDBUF, BUF_MAX)
    );
    check_eq!(
        optmgmt1(&a, T_CHECK, XTI_GENERIC, XTI_SNDBUF, &3000u32.to_ne_bytes())?,
        ack(T_SUCCESS, XTI_SNDBUF, 3000)
    );
    check_eq!(fake::bufs_of(al), Some((max, max)));
    close(&a);
    close(&b);
    check_eq!(fake::bound_on(host), 0);
    Ok(())
}

/// UDP_CHECKSUM reaches the port with each datagram (`Port::send`'s `TxOpts::checksum`): on
/// by default; a datagram's own T_NO turns it off for that datagram only; negotiated T_NO,
/// every datagram without the option goes without and a datagram's own T_YES turns it on; a
/// datagram's value neither T_YES nor T_NO, or not 4 bytes, is T_UDERROR_IND TBADOPT and
/// nothing is sent.
fn udp_checksum_reaches_the_port() -> TestResult {
    let a = open()?;
    let src = [10, 22, 0, 1];
    bind(&a, addr(src, 0))?;
    let to = addr([10, 22, 0, 9], 9);
    let sum = |v: &[u8]| -> Result<Vec<u8>, Failure> {
        let mut ob = check_some!(OptBuf::new());
        check!(opt::put(&mut ob, INET_UDP, UDP_CHECKSUM, 0, v));
        Ok(ob.bytes().to_vec())
    };
    let (yes, no) = (sum(&T_YES.to_ne_bytes())?, sum(&T_NO.to_ne_bytes())?);
    // What the port was given for one datagram with options `o`.
    let sent = |o: &[u8]| -> Result<Option<bool>, Failure> {
        check_ok!(unitdata(&a, &to, o, Some(b"x")));
        Ok(fake::last_tx(src).map(|t| t.checksum))
    };
    check_eq!(sent(&[])?, Some(true));
    check_eq!(sent(&no)?, Some(false));
    check_eq!(sent(&[])?, Some(true));
    check_eq!(
        optmgmt1(&a, T_NEGOTIATE, INET_UDP, UDP_CHECKSUM, &T_NO.to_ne_bytes())?,
        OptAnswer::Ack(
            T_SUCCESS as i32,
            (
                INET_UDP,
                UDP_CHECKSUM,
                T_SUCCESS,
                T_NO.to_ne_bytes().to_vec()
            )
        )
    );
    check_eq!(sent(&[])?, Some(false));
    check_eq!(sent(&yes)?, Some(true));
    check_eq!(sent(&[])?, Some(false));
    check_eq!(stats(&a)?[3], 6);
    for bad in [sum(&2u32.to_ne_bytes())?, sum(&[1])?] {
        check_ok!(unitdata(&a, &to, &bad, Some(b"x")));
        let (c, n, _, _) = check_ok!(recv(&a));
        check_eq!(
            Ind::decode(&c[..n]),
            Some(Ind::UderrorInd(&to[..], &[][..], TBADOPT))
        );
    }
    check_eq!(stats(&a)?[3..5], [6, 2]);
    close(&a);
    Ok(())
}

/// Flags of the M_FLUSH messages that came up through each `flushspy` (index: its `ID`; one
/// test each).
static FLUSHES_UP: [Mutex<Vec<u8>>; 3] = [
    Mutex::new(Vec::new()),
    Mutex::new(Vec::new()),
    Mutex::new(Vec::new()),
];

/// `flushspy`: a module that passes everything on and notes the flags of each M_FLUSH that
/// comes up from the driver.
struct FlushSpy<const ID: usize>;

impl<const ID: usize> StreamModule for FlushSpy<ID> {
    fn rput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        if mp.db_type() == M_FLUSH {
            if let Some(l) = FLUSHES_UP.get(ID) {
                let f = mp.rd().first().copied().unwrap_or(0);
                l.lock().unwrap_or_else(|e| e.into_inner()).push(f);
            }
        }
        cx.putnext(mp)
    }
}

fn open_flushspy<const ID: usize>(
    _: &mut QCtx<'_>,
    _: &OpenArgs,
) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(FlushSpy::<ID> => dyn StreamModule)?)
}

const fn flushspy<const ID: usize>(name: &'static str) -> StreamTab {
    StreamTab {
        info: ModuleInfo {
            mi_idnum: 0x51f0 + ID as u16,
            mi_idname: name,
            mi_minpsz: 0,
            mi_maxpsz: streams_core::queue::INFPSZ,
            mi_hiwat: 1000,
            mi_lowat: 100,
        },
        open: open_flushspy::<ID>,
    }
}

static FLUSHSPY0: StreamTab = flushspy::<0>("flushspy0");
static FLUSHSPY1: StreamTab = flushspy::<1>("flushspy1");
static FLUSHSPY2: StreamTab = flushspy::<2>("flushspy2");

/// I_PUSH `tab` (a `flushspy`) on `e`.
fn push_spy(e: &Ep, tab: &'static StreamTab) -> TestResult {
    let mut reg = Registry::new();
    check_ok!(reg.register_module(tab));
    check_ok!(e.op(|s| s.strioctl(&reg, I_PUSH, IocArg::Name(tab.info.mi_idname))));
    Ok(())
}

/// What `flushspy` `id` saw come up so far.
fn flushes_up(id: usize) -> Vec<u8> {
    FLUSHES_UP
        .get(id)
        .map(|l| l.lock().unwrap_or_else(|e| e.into_inner()).clone())
        .unwrap_or_default()
}

/// I_FLUSH `flags` on `e`: the head flushes itself and sends M_FLUSH down.
fn flush(e: &Ep, flags: u8) -> TestResult {
    check_ok!(e.op(|s| s.strioctl(&Registry::new(), I_FLUSH, IocArg::Int(i64::from(flags)))));
    Ok(())
}

/// Bytes on the driver's write queue, the driver's read queue and the head's read queue.
fn queued(e: &Ep) -> Result<(usize, usize, usize), Failure> {
    let q = e.op(|st| {
        let count = |q: Option<QueueId>| q.and_then(|q| st.queue(q)).map(|q| q.count());
        Some((
            count(st.driver_wq())?,
            count(st.driver_rq())?,
            count(Some(st.head_rq()))?,
        ))
    });
    Ok(check_some!(q))
}

/// Datagrams from `peer` delivered through `rx` (the port of `e`) until `e`'s head is full
/// and its driver read queue holds some.
fn fill_read_side(e: &Ep, rx: &Rx, peer: Inet4) -> TestResult {
    for _ in 0..200 {
        if queued(e)?.1 > 0 {
            return Ok(());
        }
        let data = check_ok!(Msg::from_bytes(M_DATA, &[0x3c; 4000]));
        rx.datagram(peer, RxIp { tos: 0, ttl: 64 }, data);
        settle_all(&[e]);
    }
    Err(Failure {
        file: file!(),
        line: line!(),
        what: "the driver read queue never held a datagram",
    })
}

/// M_FLUSH from above (I_FLUSH, through a `flushspy` above the driver): FLUSHW flushes the
/// driver's write queue (the datagrams waiting there for send buffer space are never sent)
/// and nothing comes back up; FLUSHR flushes the driver's read queue (what waited for room at
/// the head) and comes back up as M_FLUSH FLUSHR; FLUSHRW does both and comes back up as
/// FLUSHR alone. The endpoint then sends as before.
fn m_flush_from_above_flushes_the_driver_queues() -> TestResult {
    let (a, b) = (open()?, open()?);
    push_spy(&a, &FLUSHSPY0)?;
    let src = [10, 17, 0, 1];
    let al = bind(&a, addr(src, 0))?;
    let bl = bind(&b, addr([10, 17, 0, 2], 8500))?;
    let rx = check_some!(fake::rx_of(al));
    let peer = Inet4 {
        addr: [10, 17, 0, 3],
        port: 9,
    };
    // `n` datagrams to b waiting on a's write queue for send buffer space.
    let wait_to_send = |n: u8| -> TestResult {
        fake::set_full(src, true);
        numbered(&a, &bl, 0, 0..n)?;
        settle_all(&[&a, &b]);
        check!(queued(&a)?.0 > 0);
        Ok(())
    };
    wait_to_send(3)?;
    flush(&a, FLUSHW)?;
    settle_all(&[&a, &b]);
    check_eq!(queued(&a)?.0, 0);
    check_eq!(flushes_up(0), []);
    fake::set_full(src, false);
    settle_all(&[&a, &b]);
    check!(recv(&b).is_err());
    check_eq!(stats(&a)?[3], 0);

    fill_read_side(&a, &rx, peer)?;
    flush(&a, FLUSHR)?;
    settle_all(&[&a]);
    check_eq!(queued(&a)?, (0, 0, 0));
    check!(recv(&a).is_err());
    check_eq!(flushes_up(0), [FLUSHR]);

    wait_to_send(2)?;
    fill_read_side(&a, &rx, peer)?;
    flush(&a, FLUSHRW)?;
    settle_all(&[&a, &b]);
    check_eq!(queued(&a)?, (0, 0, 0));
    check_eq!(flushes_up(0), [FLUSHR, FLUSHR]);
    fake::set_full(src, false);
    settle_all(&[&a, &b]);
    check!(recv(&a).is_err());
    check!(recv(&b).is_err());

    check_ok!(unitdata(&a, &bl.encode(), &[], Some(b"after")));
    settle_all(&[&a, &b]);
    let (_, _, d, dn) = check_ok!(recv(&b));
    check_eq!(&d[..dn], b"after");
    check_eq!(stats(&a)?[3], 1);
    close(&a);
    close(&b);
    Ok(())
}

/// I_FLUSHBAND `flag` of band `band` on `e`: the head flushes that band of itself and sends
/// M_FLUSH FLUSHBAND down.
fn flush_band(e: &Ep, band: u8, flag: u8) -> TestResult {
    let arg = IocArg::Band {
        pri: band,
        flag: i32::from(flag),
    };
    check_ok!(e.op(|s| s.strioctl(&Registry::new(), I_FLUSHBAND, arg)));
    Ok(())
}

/// Bytes of priority band `band` on the driver's write queue of `e`.
fn driver_wq_band(e: &Ep, band: u8) -> Result<usize, Failure> {
    let n = e.op(|st| {
        st.driver_wq()
            .and_then(|q| st.queue(q))
            .map(|q| q.band_count(band))
    });
    Ok(check_some!(n))
}

/// M_FLUSH FLUSHBAND from above (I_FLUSHBAND, through a `flushspy`) flushes that band only
/// (`Udp::flush`): with datagrams of bands 0 and 1 waiting on the driver's write queue for
/// send buffer space, FLUSHW of band 1 takes those of band 1 and nothing comes back up; those
/// of band 0 are sent once there is room. With band-0 T_UNITDATA_INDs waiting on the
/// driver's read queue, FLUSHR of band 1 leaves them there and comes back up as
/// FLUSHR|FLUSHBAND; FLUSHR of band 0 then takes them.
fn m_flush_band_from_above_flushes_that_band_only() -> TestResult {
    let (a, b) = (open()?, open()?);
    push_spy(&a, &FLUSHSPY2)?;
    let src = [10, 23, 0, 1];
    let al = bind(&a, addr(src, 0))?;
    let bl = bind(&b, addr([10, 23, 0, 2], 8700))?;
    fake::set_full(src, true);
    numbered(&a, &bl, 0, 0..2)?;
    numbered(&a, &bl, 1, 10..13)?;
    settle_all(&[&a, &b]);
    // Each is 39 bytes: a 20-byte T_UNITDATA_REQ, its 16-byte address and 3 of data.
    check_eq!(driver_wq_band(&a, 1)?, 3 * 39);
    check_eq!(driver_wq_band(&a, 0)?, 2 * 39);
    flush_band(&a, 1, FLUSHW)?;
    settle_all(&[&a, &b]);
    check_eq!(driver_wq_band(&a, 1)?, 0);
    check_eq!(driver_wq_band(&a, 0)?, 2 * 39);
    check_eq!(flushes_up(2), []);
    fake::set_full(src, false);
    settle_all(&[&a, &b]);
    for i in 0..2u8 {
        let (_, _, d, dn) = check_ok!(recv(&b));
        check_eq!(&d[..dn], &[i; 3]);
    }
    check!(recv(&b).is_err());
    check_eq!(stats(&a)?[3], 2);

    // The read side: a's head full, its driver read queue holding some.
    let rx = check_some!(fake::rx_of(al));
    let peer = Inet4 {
        addr: [10, 23, 0, 3],
        port: 9,
    };
    fill_read_side(&a, &rx, peer)?;
    let held = queued(&a)?;
    check!(held.1 > 0);
    flush_band(&a, 1, FLUSHR)?;
    settle_all(&[&a]);
    check_eq!(queued(&a)?, held);
    check_eq!(flushes_up(2), [FLUSHR | FLUSHBAND]);
    flush_band(&a, 0, FLUSHR)?;
    settle_all(&[&a]);
    check_eq!(queued(&a)?, (0, 0, 0));
    check!(recv(&a).is_err());
    check_eq!(flushes_up(2), [FLUSHR | FLUSHBAND, FLUSHR | FLUSHBAND]);
    close(&a);
    close(&b);
    Ok(())
}

/// An M_IOCTL the driver does not know is M_IOCNAK EINVAL: I_STR of `'U' << 8 | 2` fails
/// EINVAL, and so does UDP_IOC_STATS without a buffer for the answer (no data part); the
/// endpoint answers UDP_IOC_STATS afterwards.
fn unknown_ioctl_is_einval() -> TestResult {
    let a = open()?;
    bind(&a, addr([10, 24, 0, 1], 0))?;
    check_eq!(
        istr(&a, UDP_IOC_STATS + 1, 8)?,
        Err(Stop::Err(Errno::EINVAL))
    );
    check_eq!(istr(&a, 0, 0)?, Err(Stop::Err(Errno::EINVAL)));
    check_eq!(istr(&a, UDP_IOC_STATS, 0)?, Err(Stop::Err(Errno::EINVAL)));
    check_eq!(check_ok!(istr(&a, UDP_IOC_STATS, 16)?).len(), 16);
    close(&a);
    Ok(())
}

/// Any other message from above (put into the driver's write queue: M_CTL, even one that
/// says what the binder's note says, M_DELAY, M_PCSIG) is freed: nothing comes up, nothing
/// is sent or queued, and the endpoint stays TS_IDLE and sends as before.
fn other_messages_from_above_are_freed() -> TestResult {
    let (a, b) = (open()?, open()?);
    let src = [10, 28, 0, 1];
    bind(&a, addr(src, 0))?;
    let bl = bind(&b, addr([10, 28, 0, 2], 8800))?;
    for (ty, bytes) in [
        (M_CTL, &b"tpiB"[..]),
        (M_DELAY, &[0u8; 4][..]),
        (M_PCSIG, &[2u8][..]),
    ] {
        let mp = check_ok!(Msg::from_bytes(ty, bytes));
        let wq = check_some!(a.op(|s| s.driver_wq()));
        a.op(|s| s.put(wq, mp));
        settle_all(&[&a, &b]);
        check_eq!(recv(&a).err(), Some(Stop::Err(Errno::EAGAIN)));
        check_eq!(queued(&a)?, (0, 0, 0));
    }
    check_eq!(fake::last_tx(src), None);
    check_eq!(state(&a)?, TS_IDLE);
    check_ok!(unitdata(&a, &bl.encode(), &[], Some(b"still")));
    settle_all(&[&a, &b]);
    let (_, _, d, dn) = check_ok!(recv(&b));
    check_eq!(&d[..dn], b"still");
    close(&a);
    close(&b);
    Ok(())
}

/// T_UNBIND_REQ sends M_FLUSH FLUSHRW up before its T_OK_ACK: the T_UNITDATA_INDs the head
/// held for the reader are gone (the T_OK_ACK is all there is to read), the queues are empty,
/// and the endpoint is TS_UNBND.
fn unbind_flushes_the_stream() -> TestResult {
    let a = open()?;
    push_spy(&a, &FLUSHSPY1)?;
    let al = bind(&a, addr([10, 18, 0, 1], 8600))?;
    let rx = check_some!(fake::rx_of(al));
    let peer = Inet4 {
        addr: [10, 18, 0, 2],
        port: 9,
    };
    for i in 0..3u8 {
        let data = check_ok!(Msg::from_bytes(M_DATA, &[i; 8]));
        rx.datagram(peer, RxIp { tos: 0, ttl: 64 }, data);
    }
    settle_all(&[&a]);
    check!(queued(&a)?.2 > 0);
    check_ok!(send(&a, &Req::Unbind, None));
    settle_all(&[&a]);
    let (c, n, _, _) = check_ok!(recv(&a));
    check_eq!(Ind::decode(&c[..n]), Some(Ind::OkAck(T_UNBIND_REQ)));
    check_eq!(recv(&a).err(), Some(Stop::Err(Errno::EAGAIN)));
    check_eq!(queued(&a)?, (0, 0, 0));
    check_eq!(flushes_up(1), [FLUSHRW]);
    check_eq!(state(&a)?, TS_UNBND);
    close(&a);
    Ok(())
}

ktest_suite!(TPI_UDP_SUITE, "tpi_udp":
    received_datagrams_carry_their_own_source_and_header,
    info_bind_addr_unbind_rebind,
    two_endpoints_exchange_datagrams,
    bad_input_is_answered,
    unitdata_before_bind_is_fatal,
    short_unitdata_when_bound_is_fatal,
    flow_control_drops_are_counted,
    flow_and_state_bound_the_step_over,
    eagain_backenables_and_loses_nothing,
    options_through_the_driver,
    close_with_datagrams_in_flight,
    allocation_failure_at_each_step,
    no_memory_is_tsyserr_enosr,
    bind_without_a_perimeter_is_tsyserr_enxio,
    queued_port_drains_as_the_reader_reads,
    icmp_error_over_both_kinds_of_port,
    bind_in_progress_is_ts_wack_breq,
    bind_without_a_free_port_is_tnoaddr,
    bind_failing_in_the_network_is_tsyserr,
    ip_reuseaddr_shares_a_bound_address,
    ip_broadcast_negotiated_and_current,
    xti_debug_negotiated_and_current,
    xti_bufs_reach_the_port,
    udp_checksum_reaches_the_port,
    m_flush_from_above_flushes_the_driver_queues,
    m_flush_band_from_above_flushes_that_band_only,
    unknown_ioctl_is_einval,
    other_messages_from_above_are_freed,
    unbind_flushes_the_stream,
);
