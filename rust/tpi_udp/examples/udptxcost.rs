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
//! (`HeadCall::send_express`, as the kernel's `StrFile` does), so after the first datagram
//! the driver sends without the lock (`perim/express_send.rs`); `turns`: as `express`, with a
//! getmsg (non-blocking, nothing to read) after each putmsg, as a request and its reply take
//! turns (the perimeter then does not arm: `perim` step 9's rule). Subtract a run with N = 0 for
//! the per-datagram count (docs/performance.md, "The TPI UDP send path").
use streams_core::errno::Errno;
use streams_core::perim::test::TestPerim;
use streams_core::sth::call;
use streams_core::sth::consts::MSG_ANY;
use streams_core::sth::tests::PerimCall;
use streams_core::sth::{Part, SliceIo, Stream};
use streams_core::stream::StreamTab;
use tpi_udp::prim::{self, Req};
use tpi_udp::tests::fake::{self, FakeNet};
use tpi_udp::{streamtab, Inet4, UDP_ID, UDP_NAME};

static UDP: StreamTab = streamtab::<FakeNet>(UDP_NAME, UDP_ID);

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
    let ep = PerimCall::new(
        TestPerim::new_owned(s).expect("perimeter"),
        mode != "locked",
    );
    let local = Inet4 {
        addr: [127, 0, 0, 1],
        port: 7100,
    };
    assert!(fake::bind_endpoint(&ep.p, local), "T_BIND_ACK");

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
    let express = ep.express_sends();
    println!("{mode}: {n} datagrams of {size} bytes sent, {express} of them express");
}
