//! Instruction-count harness for the `udp` driver's send path through the Stream head on the
//! host (run under callgrind): `cargo build --release -p streams_tpi_udp --example udptxcost`,
//! then `valgrind --tool=callgrind target/release/examples/udptxcost MODE N [SIZE]`.
//!
//! One endpoint (a Stream with the `udp` driver over `FakeNet`, in a `TestPerim`) is bound on
//! 127.0.0.1; each datagram is a putmsg (`sth::call::putmsg`, non-blocking) of a
//! T_UNITDATA_REQ to 127.0.0.1:9 with a data part of SIZE bytes (default 64), as perftest's
//! XTI sender's t_sndudata does. Nothing is bound on port 9, so `FakePort::send` (the host
//! stand-in for the kernel's transmit, `rstreams_udp_send`) only records the datagram:
//! callgrind's inclusive count of `FakePort::send` is the stand-in, the rest is the Stream
//! head, the perimeter and the driver. MODE `locked`: every putmsg takes the Stream lock
//! (the platform offers no express send); `express`: the platform offers it
//! (`HeadCall::send_express`, as the kernel's `StrFile` would), so after the first datagram
//! the driver sends without the lock (`perim/express_send.rs`); `turns`: as `express`, with a
//! getmsg (non-blocking, nothing to read) after each putmsg, as a request and its reply take
//! turns (the perimeter then does not arm: `perim` step 9's rule). Subtract a run with N = 0 for
//! the per-datagram count (docs/performance.md, "The TPI UDP send path").
use streams_core::errno::Errno;
use streams_core::msg::Msg;
use streams_core::perim::test::TestPerim;
use streams_core::sth::call::{self, HeadCall, HeadShared};
use streams_core::sth::consts::{MSG_ANY, MSG_BAND, MSG_HIPRI};
use streams_core::sth::tests::{get, never_sleeps, put};
use streams_core::sth::{Part, SliceIo, Stop, StrHead, Stream};
use streams_core::stream::StreamTab;
use streams_core::sys::Arc;
use tpi_udp::prim::{self, Ind, Req};
use tpi_udp::tests::fake::{self, FakeNet};
use tpi_udp::{streamtab, Inet4, UDP_ID, UDP_NAME};

static UDP: StreamTab = streamtab::<FakeNet>(UDP_NAME, UDP_ID);

/// The endpoint as the platform of a system call: each step a lock hold of its perimeter;
/// with `express`, putmsg may send without the lock.
struct Ep {
    p: Arc<TestPerim<StrHead>>,
    shared: HeadShared,
    express: bool,
}

impl HeadCall for Ep {
    fn run<R>(
        &self,
        nonblock: bool,
        _limit_ms: Option<u32>,
        op: impl FnMut(&mut Stream) -> Result<R, Stop>,
        cancel: impl FnOnce(&mut Stream),
    ) -> Result<R, Errno> {
        self.p.op(|s| never_sleeps(s, nonblock, op, cancel))
    }

    fn shared(&self) -> &HeadShared {
        &self.shared
    }

    fn send_express(&self, ctl: &mut Option<Msg>, data: &mut Option<Msg>) -> bool {
        self.express && self.p.send_express(ctl, data)
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("express");
    assert!(
        mode == "locked" || mode == "express" || mode == "turns",
        "mode: locked, express or turns"
    );
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let size: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(64);

    let s = Stream::sth_new(&UDP).expect("open");
    let ep = Ep {
        p: TestPerim::new_owned(s).expect("perimeter"),
        shared: HeadShared::new(),
        express: mode != "locked",
    };
    let local = Inet4 {
        addr: [127, 0, 0, 1],
        port: 7100,
    };
    let req = prim::encode_req(&Req::Bind {
        addr: &local.encode(),
        conind: 0,
    })
    .expect("T_BIND_REQ");
    let hipri = req.db_type() == streams_core::msg::M_PCPROTO;
    ep.p.op(|s| {
        put(
            s,
            Some(req.rd()),
            None,
            0,
            if hipri { MSG_HIPRI } else { MSG_BAND },
        )
    })
    .expect("bind");
    while ep.p.run_scheduled() || fake::run_deferred() != 0 {}
    let (_, c, _) =
        ep.p.op(|s| get(s, 256, 256, 0, MSG_ANY))
            .expect("T_BIND_ACK");
    assert!(matches!(Ind::decode(&c.buf[..c.n]), Some(Ind::BindAck(_))));

    let to = Inet4 {
        addr: [127, 0, 0, 1],
        port: 9,
    };
    let ud = prim::encode_req(&Req::Unitdata {
        dest: &to.encode(),
        opt: &[],
    })
    .expect("T_UNITDATA_REQ");
    let mut cbuf = ud.rd().to_vec();
    let mut dbuf = vec![7u8; size];
    let mut gbuf = [0u8; 256];
    for _ in 0..n {
        let c = Part {
            io: &mut SliceIo(&mut cbuf),
            len: ud.rd().len() as i32,
        };
        let d = Part {
            io: &mut SliceIo(&mut dbuf),
            len: size as i32,
        };
        call::putmsg(&ep, Some(c), Some(d), 0, 0, true).expect("putmsg");
        if mode == "turns" {
            // A request and its reply taking turns: a getmsg (nothing there) after each.
            let c = Part {
                io: &mut SliceIo(&mut gbuf),
                len: 256,
            };
            let r = call::getmsg(&ep, Some(c), None, 0, MSG_ANY, true, |_| Ok(()));
            assert_eq!(r.err(), Some(Errno::EAGAIN));
        }
    }
    let armed = ep.p.perim.express_send_armed();
    println!("{mode}: {n} datagrams of {size} bytes sent, armed at the end: {armed}");
}
