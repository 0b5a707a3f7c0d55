//! The `udp` driver's express send (`express.rs`; `perim/express_send.rs` in the core): a
//! T_UNITDATA_REQ sent through `sth::call::putmsg` without the Stream lock once a locked one
//! armed the perimeter, and the same answers as the locked path, in the same order.
//!
//! The differential case runs one script of requests (good datagrams, a bad address, a bad
//! option, an oversize TSDU, a transmit error, an ICMP error delivered into the sender's own
//! Stream during the send, T_OPTMGMT_REQ, a full send buffer, T_UNBIND_REQ, a datagram after
//! it) through an endpoint that arms and through one that cannot (a module pushed above the
//! driver), and compares what each sender and each receiver got. One case checks the
//! receive side's direct take of a T_UNITDATA_IND (its counts, and one a read(2) refuses).

extern crate std;

use std::vec::Vec;

use super::super::net::Inet4;
use super::super::opt::{self, *};
use super::super::prim::{self, *};
use super::super::udp::{streamtab, UDP_ID, UDP_NAME};
use super::fake::{self, FakeNet};
use streams_core::errno::Errno;
use streams_core::ktest::{Failure, TestResult};
use streams_core::msg::M_PCPROTO;
use streams_core::perim::test::{settle, TestPerim};
use streams_core::sth::call;
use streams_core::sth::consts::*;
use streams_core::sth::tests::{reg, PerimCall};
use streams_core::sth::{IocArg, Part, SliceIo, Stream};
use streams_core::stream::StreamTab;
use streams_core::{check, check_eq, check_ok, check_some, ktest_suite};

static UDP: StreamTab = streamtab::<FakeNet>(UDP_NAME, UDP_ID);

/// An endpoint as the platform of a system call whose putmsg may go express (as the
/// kernel's `StrFile`).
type Ep = PerimCall;

fn open() -> Result<Ep, Failure> {
    let s = check_ok!(Stream::sth_new(&UDP));
    Ok(PerimCall::new(check_ok!(TestPerim::new_owned(s)), true))
}

fn close(e: &Ep) {
    e.p.op(Stream::sth_close);
    e.p.close_gate();
    fake::run_deferred();
}

/// Run what the endpoints' puts and the deferred jobs left.
fn settle_all(a: &Ep, b: &Ep) {
    for _ in 0..64 {
        if settle(&[&*a.p, &*b.p]) + fake::run_deferred() == 0 {
            break;
        }
    }
}

/// putmsg of `req` (and `data`), non-blocking, through `sth::call::putmsg`.
fn putmsg(e: &Ep, req: &Req<'_>, data: Option<&[u8]>) -> Result<(), Errno> {
    let m = prim::encode_req(req).ok_or(Errno::ENOSR)?;
    let flags = if m.db_type() == M_PCPROTO {
        MSG_HIPRI
    } else {
        0
    };
    let mut c: Vec<u8> = m.rd().to_vec();
    let mut d: Vec<u8> = data.unwrap_or_default().to_vec();
    let (cl, dl) = (c.len() as i32, d.len() as i32);
    let (mut cio, mut dio) = (SliceIo(&mut c), SliceIo(&mut d));
    let ctl = Part {
        io: &mut cio,
        len: cl,
    };
    let data = data.map(|_| Part {
        io: &mut dio,
        len: dl,
    });
    call::putmsg(e, Some(ctl), data, 0, flags, true)
}

/// What an endpoint got, without the addresses (the two runs use their own).
#[derive(Debug, PartialEq, Eq)]
enum Ev {
    /// putmsg failed.
    PutErr(i32),
    /// T_UNITDATA_IND: data and options.
    Ind(Vec<u8>, Vec<u8>),
    UdErr(i32),
    OkAck(i32),
    ErrAck(i32, i32, i32),
    OptAck(i32),
    /// getmsg failed (M_ERROR).
    GetErr(i32),
    Other(Vec<u8>),
}

/// getmsg until nothing is there, appending what came to `out`.
fn drain(e: &Ep, out: &mut Vec<Ev>) {
    let (mut cb, mut db) = ([0u8; 256], std::vec![0u8; 70000]);
    for _ in 0..64 {
        let c = Part {
            io: &mut SliceIo(&mut cb),
            len: 256,
        };
        let d = Part {
            io: &mut SliceIo(&mut db),
            len: 70000,
        };
        match call::getmsg(e, Some(c), Some(d), 0, MSG_ANY, true, |_| Ok(())) {
            Err(Errno::EAGAIN) => return,
            Err(err) => {
                out.push(Ev::GetErr(err.0));
                return;
            }
            Ok(g) => {
                let ctl = cb.get(..g.ctl_len.max(0) as usize).unwrap_or_default();
                let data = db.get(..g.data_len.max(0) as usize).unwrap_or_default();
                out.push(match Ind::decode(ctl) {
                    Some(Ind::UnitdataInd(_, o)) => Ev::Ind(data.to_vec(), o.to_vec()),
                    Some(Ind::UderrorInd(_, _, err)) => Ev::UdErr(err),
                    Some(Ind::OkAck(p)) => Ev::OkAck(p),
                    Some(Ind::ErrorAck(p, t, u)) => Ev::ErrAck(p, t, u),
                    Some(Ind::OptmgmtAck(_, f)) => Ev::OptAck(f),
                    _ => Ev::Other(ctl.to_vec()),
                });
            }
        }
    }
}

fn addr(a: [u8; 4], port: u16) -> [u8; 16] {
    Inet4 { addr: a, port }.encode()
}

fn bind(e: &Ep, other: &Ep, a: [u8; 16]) -> TestResult {
    check_ok!(putmsg(
        e,
        &Req::Bind {
            addr: &a,
            conind: 0
        },
        None
    ));
    settle_all(e, other);
    let mut got = Vec::new();
    drain(e, &mut got);
    check!(matches!(got.as_slice(), [Ev::Other(_)])); // T_BIND_ACK
    Ok(())
}

/// What the script gave: the sender's events, the receiver's, and the datagrams sent
/// express.
struct Run {
    sender: Vec<Ev>,
    receiver: Vec<Ev>,
    /// The first 12 bytes of each datagram sent express.
    express: Vec<Vec<u8>>,
}

/// A sender `a` and a receiver `b` running the script, and what it gave so far.
struct Script {
    a: Ep,
    b: Ep,
    run: Run,
}

impl Script {
    /// One T_UNITDATA_REQ from `a` (a failed putmsg is one of `a`'s events), then what `b`
    /// got.
    fn send(&mut self, dest: &[u8], opt: &[u8], data: &[u8]) {
        let before = self.a.express_sends();
        if let Err(e) = putmsg(&self.a, &Req::Unitdata { dest, opt }, Some(data)) {
            self.run.sender.push(Ev::PutErr(e.0));
        }
        if self.a.express_sends() != before {
            let head = data.get(..data.len().min(12)).unwrap_or_default();
            self.run.express.push(head.to_vec());
        }
        settle_all(&self.a, &self.b);
        drain(&self.b, &mut self.run.receiver);
    }
}

/// The script, from sender 10.`net`.0.1 to receiver 10.`net`.0.2:9000; with `pushed`, a
/// pass-through module sits above the sender's driver (so it never arms).
fn script(net: u8, pushed: bool) -> Result<Run, Failure> {
    let (a, b) = (open()?, open()?);
    if pushed {
        let r = reg()?;
        check_ok!(a.p.op(|s| s.strioctl(&r, I_PUSH, IocArg::Name("pass"))));
    }
    let src = [10, net, 0, 1];
    bind(&a, &b, addr(src, 0))?;
    bind(&b, &a, addr([10, net, 0, 2], 9000))?;
    let run = Run {
        sender: Vec::new(),
        receiver: Vec::new(),
        express: Vec::new(),
    };
    let mut x = Script { a, b, run };
    let to = addr([10, net, 0, 2], 9000);
    let mut ttl9 = check_some!(OptBuf::new());
    opt::put(&mut ttl9, INET_IP, IP_TTL, 0, &[9]);
    x.send(&to, &[], b"d1");
    x.send(&to, &[], b"d2"); // a run of putmsgs: arms
    x.send(&to, &[], b"d3");
    x.send(&[1, 2, 3, 4, 5, 6, 7, 8], &[], b"bad address");
    x.send(&to, &[], b"d4");
    x.send(&addr([10, net, 0, 2], 0), &[], b"port 0");
    x.send(&to, &[0; 16], b"bad option");
    x.send(&to, ttl9.bytes(), b"d5 ttl 9");
    x.send(&to, &[], &std::vec![5u8; 65508]); // TBADDATA
                                              // ICMP port unreachable, put into the sender's own Stream during its send.
    fake::set_icmp(src);
    x.send(&addr([10, net, 0, 2], 9001), &[], b"to no port");
    x.send(&to, &[], b"d6");
    fake::set_fail(src, Some(Errno(101)));
    x.send(&to, &[], b"transmit error");
    fake::set_fail(src, None);
    let mut ttl7 = check_some!(OptBuf::new());
    opt::put(&mut ttl7, INET_IP, IP_TTL, 0, &[7]);
    let neg = Req::Optmgmt {
        opt: ttl7.bytes(),
        flags: T_NEGOTIATE,
    };
    check_ok!(putmsg(&x.a, &neg, None));
    x.send(&to, &[], b"d7 ttl 7");
    fake::set_full(src, true);
    x.send(&to, &[], b"d8 waits");
    x.send(&to, &[], b"d9 waits");
    fake::set_full(src, false);
    settle_all(&x.a, &x.b);
    drain(&x.b, &mut x.run.receiver);
    x.send(&to, &[], b"d10");
    x.send(&to, &[], b"d11");
    drain(&x.a, &mut x.run.sender);
    check_ok!(putmsg(&x.a, &Req::Unbind, None));
    settle_all(&x.a, &x.b);
    drain(&x.a, &mut x.run.sender);
    x.send(&to, &[], b"after unbind");
    drain(&x.a, &mut x.run.sender);
    x.send(&to, &[], b"after M_ERROR");
    close(&x.a);
    close(&x.b);
    Ok(x.run)
}

/// The same script through an endpoint that arms and one that cannot: the same primitives
/// out of both senders and into both receivers, in the same order; the first sent most of
/// its datagrams without the lock, the second none.
fn express_and_locked_answer_alike() -> TestResult {
    let x = script(40, false)?;
    let y = script(41, true)?;
    check_eq!(x.sender, y.sender);
    check_eq!(x.receiver, y.receiver);
    // d1 follows the bind's getmsg (no run of putmsgs, no arming used: not armed after it);
    // d2 follows d1 (a run: armed after it). The others follow a hold that disarmed,
    // something waiting on the inbound list (an answer), or were declined (the locked
    // putmsg that follows arms again). "d7 ttl 7" follows the T_OPTMGMT_REQ (an M_PROTO: it
    // armed, with the new options).
    let went: [&[u8]; 7] = [
        b"d3",
        b"d4",
        b"d5 ttl 9",
        b"to no port",
        b"transmit err",
        b"d7 ttl 7",
        b"d11",
    ];
    check_eq!(x.express, went.map(<[u8]>::to_vec).to_vec());
    check_eq!(y.express.len(), 0);
    // What the script must have produced, so that "alike" is not "both empty".
    let ind = |d: &[u8], ttl| Ev::Ind(d.to_vec(), rx_opts(ttl));
    let want = std::vec![
        ind(b"d1", 64),
        ind(b"d2", 64),
        ind(b"d3", 64),
        ind(b"d4", 64),
        ind(b"d5 ttl 9", 9),
        ind(b"d6", 64),
        ind(b"d7 ttl 7", 7),
        ind(b"d8 waits", 7),
        ind(b"d9 waits", 7),
        ind(b"d10", 7),
        ind(b"d11", 7),
    ];
    check_eq!(x.receiver, want);
    check!(x.sender.contains(&Ev::UdErr(101)));
    check!(x.sender.contains(&Ev::UdErr(111)));
    check!(x.sender.contains(&Ev::UdErr(TBADADDR)));
    check!(x.sender.contains(&Ev::UdErr(TBADOPT)));
    check!(x.sender.contains(&Ev::UdErr(TBADDATA)));
    check!(x.sender.contains(&Ev::OkAck(T_UNBIND_REQ)));
    check_eq!(x.sender.last(), Some(&Ev::PutErr(Errno::EPROTO.0)));
    Ok(())
}

/// Armed by a run of locked putmsgs, or after an arming that was used; disarmed by any
/// other hold (a getmsg); not armed again when the arming was not used (a request and its
/// reply taking turns); withdrawn by T_UNBIND_REQ: after it a datagram is the locked path's
/// protocol error, never sent.
fn armed_only_while_the_driver_would_send() -> TestResult {
    let (a, b) = (open()?, open()?);
    bind(&a, &b, addr([10, 42, 0, 1], 0))?;
    bind(&b, &a, addr([10, 42, 0, 2], 9000))?;
    let to = addr([10, 42, 0, 2], 9000);
    let ud = Req::Unitdata {
        dest: &to,
        opt: &[],
    };
    let mut got = Vec::new();
    // (datagram, sent express, armed after it)
    let step = |d: &[u8], express: bool, armed: bool| -> TestResult {
        let before = a.express_sends();
        check_ok!(putmsg(&a, &ud, Some(d)));
        check_eq!(a.express_sends() - before, usize::from(express));
        check_eq!(a.p.perim.express_send_armed(), armed);
        Ok(())
    };
    step(b"1", false, false)?; // after the bind's getmsg: no run yet
    step(b"2", false, true)?; // a run of two
    step(b"3", true, true)?;
    drain(&a, &mut got); // a getmsg: its enter disarms; the arming was used
    check!(!a.p.perim.express_send_armed());
    step(b"4", false, true)?;
    drain(&a, &mut got); // this arming was not used
    step(b"5", false, false)?; // a request and its reply taking turns: not armed
    drain(&a, &mut got);
    step(b"6", false, false)?;
    step(b"7", false, true)?; // a run again
    check_ok!(putmsg(&a, &Req::Unbind, None));
    check!(!a.p.perim.express_send_armed());
    check_eq!(putmsg(&a, &ud, Some(b"never")), Ok(()));
    check!(!a.p.perim.express_send_armed());
    check_eq!(a.express_sends(), 1);
    settle_all(&a, &b);
    let mut rx = Vec::new();
    drain(&b, &mut rx);
    let want: Vec<Ev> = [b"1", b"2", b"3", b"4", b"5", b"6", b"7"]
        .iter()
        .map(|d| Ev::Ind(d.to_vec(), rx_opts(64)))
        .collect();
    check_eq!(rx, want);
    drain(&a, &mut got);
    check_eq!(got.last(), Some(&Ev::GetErr(Errno::EPROTO.0)));
    close(&a);
    close(&b);
    Ok(())
}

/// The options of a T_UNITDATA_IND from a sender with TTL `ttl` and TOS 0.
fn rx_opts(ttl: u8) -> Vec<u8> {
    opt::rx_opts(&super::super::net::RxIp { tos: 0, ttl }).to_vec()
}

/// The receive side's direct take (`stream/direct.rs`: one M_PROTO message up the `udp`
/// driver's `Pass::Flow` read side): a getmsg that takes a T_UNITDATA_IND straight from the
/// inbound list counts it on the driver's and the head's read queues as the put-up would,
/// and one that a read(2) refuses (EBADMSG: an M_PROTO message in the normal read mode)
/// goes up to the head whole, for the getmsg after it. Against a receiver whose datagrams an
/// ordinary enter put up before each read.
fn a_direct_unitdata_ind_counts_as_put() -> TestResult {
    let (a, b, c) = (open()?, open()?, open()?);
    bind(&a, &b, addr([10, 43, 0, 1], 0))?;
    bind(&b, &a, addr([10, 43, 0, 2], 9000))?;
    bind(&c, &a, addr([10, 43, 0, 3], 9000))?;
    let mut got = [Vec::new(), Vec::new()];
    for (i, data) in [&b"x1"[..], b"x2", b"x3"].into_iter().enumerate() {
        for (k, (to, r)) in [([10, 43, 0, 2], &b), ([10, 43, 0, 3], &c)]
            .into_iter()
            .enumerate()
        {
            let dest = addr(to, 9000);
            check_ok!(putmsg(
                &a,
                &Req::Unitdata {
                    dest: &dest,
                    opt: &[]
                },
                Some(data)
            ));
            settle_all(&a, r);
            if k == 1 {
                r.p.op(|_| ()); // an ordinary enter puts the datagram up
            }
            if i == 1 {
                let mut buf = [0u8; 16];
                let n = call::read(r, &mut SliceIo(&mut buf), 16, true);
                check_eq!(n, Err(Errno::EBADMSG));
            }
            drain(r, &mut got[k]);
        }
    }
    let ind = |d: &[u8]| Ev::Ind(d.to_vec(), rx_opts(64));
    check_eq!(got[0], std::vec![ind(b"x1"), ind(b"x2"), ind(b"x3")]);
    check_eq!(got[0], got[1]);
    let counts = |e: &Ep| {
        e.p.op(|s| {
            let h = s.head_rq();
            let d = s.driver_rq().and_then(|d| s.mstat(d));
            (s.mstat(h), d)
        })
    };
    let ((hb, db), (hc, dc)) = (counts(&b), counts(&c));
    check_eq!(hb, hc);
    check_eq!(db, dc);
    // The T_BIND_ACK and the three datagrams, at least.
    check!(hb.map_or(0, |m| m.ms_pcnt) >= 4);
    check!(db.map_or(0, |m| m.ms_pcnt) >= 4);
    for e in [&a, &b, &c] {
        close(e);
    }
    Ok(())
}

ktest_suite!(TPI_UDP_EXPRESS_SUITE, "tpi_udp_express":
    a_direct_unitdata_ind_counts_as_put,
    express_and_locked_answer_alike,
    armed_only_while_the_driver_would_send,
);
