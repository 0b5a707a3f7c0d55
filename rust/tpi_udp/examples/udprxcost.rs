//! Instruction-count harness for the `udp` driver's receive path on the host (run under
//! callgrind): `cargo build --release -p streams_tpi_udp --example udprxcost`, then
//! `valgrind --tool=callgrind target/release/examples/udprxcost MODE N [SIZE [BURST]]`.
//!
//! One endpoint (a Stream with the `udp` driver over `FakeNet`, in a `TestPerim`) is bound on
//! 127.0.0.1; each datagram is an M_DATA block of SIZE bytes (default 64) handed to the
//! port's `Rx::datagram` as the kernel's receive hook hands its esballoc'ed block (from
//! 127.0.0.2:5000, TOS 0, TTL 64), and taken with `sth::call::getmsg` (I_GETPMSG: the
//! control part into 128 bytes, the data part into 65536, non-blocking) as perftest's XTI
//! receiver's t_rcvudata does. MODE `each`: one datagram, then one getmsg; `burst`: BURST
//! (default 16) datagrams, then one getmsg each, so the reader finds a backlog on the
//! inbound list as a lagging receiver does. Callgrind's inclusive count of
//! `tpi_udp::net::Rx::datagram` is the receive side alone. With `VARY=1` in the environment every datagram comes from
//! another source port (the T_UNITDATA_IND's address differs each time).
//!
//! The gate is lazy between the calls (nobody sleeps or polls on the host), so the puts
//! claim nothing: this counts the work per datagram, not the wakeup (docs/performance.md,
//! "The TPI UDP receive path").
use streams_core::errno::Errno;
use streams_core::msg::{Msg, M_DATA};
use streams_core::perim::test::TestPerim;
use streams_core::sth::call::{self, HeadCall, HeadShared};
use streams_core::sth::consts::{MSG_ANY, MSG_BAND, MSG_HIPRI};
use streams_core::sth::tests::{get, never_sleeps, put};
use streams_core::sth::{Part, SliceIo, Stop, StrHead, Stream};
use streams_core::stream::StreamTab;
use streams_core::sys::Arc;
use tpi_udp::prim::{self, Ind, Req};
use tpi_udp::tests::fake::{self, FakeNet};
use tpi_udp::{streamtab, Inet4, RxIp, UDP_ID, UDP_NAME};

static UDP: StreamTab = streamtab::<FakeNet>(UDP_NAME, UDP_ID);

/// The endpoint as the platform of a system call: each step a lock hold of its perimeter.
struct Ep {
    p: Arc<TestPerim<StrHead>>,
    shared: HeadShared,
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

    fn run_read<R>(
        &self,
        nonblock: bool,
        ready: impl Fn(&Stream) -> bool,
        op: impl FnMut(&mut Stream) -> Result<R, Stop>,
    ) -> Result<R, Errno> {
        self.p
            .op_read(ready, |s| never_sleeps(s, nonblock, op, |_| ()))
    }

    fn shared(&self) -> &HeadShared {
        &self.shared
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("each");
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let size: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(64);
    let burst: usize = args
        .get(4)
        .and_then(|s| s.parse().ok())
        .unwrap_or(16)
        .max(1);
    let vary = std::env::var_os("VARY").is_some();

    let s = Stream::sth_new(&UDP).expect("open");
    let ep = Ep {
        p: TestPerim::new_owned(s).expect("perimeter"),
        shared: HeadShared::new(),
    };
    let local = Inet4 {
        addr: [127, 0, 0, 1],
        port: 7000,
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
    let rx = fake::rx_of(local).expect("bound");

    let payload = vec![7u8; size];
    let mut cbuf = [0u8; 128];
    let mut dbuf = vec![0u8; 65536];
    let ip = RxIp { tos: 0, ttl: 64 };
    let mut src = Inet4 {
        addr: [127, 0, 0, 2],
        port: 5000,
    };
    let mut sent = 0usize;
    let mut got = 0usize;
    let mut take = |got: &mut usize| {
        let c = Part {
            io: &mut SliceIo(&mut cbuf),
            len: 128,
        };
        let d = Part {
            io: &mut SliceIo(&mut dbuf),
            len: 65536,
        };
        let g = call::getmsg(&ep, Some(c), Some(d), 0, MSG_ANY, true, |_| Ok(())).expect("getmsg");
        assert_eq!(g.data_len as usize, size);
        *got += 1;
    };
    while sent < n {
        let k = if mode == "each" {
            1
        } else {
            burst.min(n - sent)
        };
        for _ in 0..k {
            if vary {
                src.port = src.port.wrapping_add(1);
            }
            let data = Msg::from_bytes(M_DATA, &payload).expect("M_DATA");
            rx.datagram(src, ip, data);
        }
        sent += k;
        assert!(mode == "each" || mode == "burst", "mode: each or burst");
        for _ in 0..k {
            take(&mut got);
        }
    }
    println!("{mode}: {n} datagrams of {size} bytes, {got} taken");
}
