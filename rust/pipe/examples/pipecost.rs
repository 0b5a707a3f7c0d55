//! Instruction-count harness for the pipe data path on the host (run under callgrind):
//! `cargo build --release -p streams_pipe --example pipecost` then
//! `valgrind --tool=callgrind target/release/examples/pipecost MODE N [SIZE]`, MODE `plain`
//! (write/read), `hold` (write hold on the writer, read fill and 4096-byte reads on the reader,
//! a read tried after each write, as perftest's non-blocking reader does) or `putmsg` (putmsg
//! of a data part and no control part, then getmsg of the data part into 4096 bytes with the
//! control part not processed, as `perftest --putmsg` does). A SIZE above 4096 is read
//! (`plain`) or received (`putmsg`) SIZE bytes at a time.
//! Each iteration writes at end 0 and reads at end 1 of a `TestPipe`, through the same core
//! code the kernel runs (the system call's platform half `sth::call`, Stream head, engine,
//! perimeters); only the platform (user copies, locks, waits) differs.
use pipe::tests::TestPipe;
use streams_core::sth::call;
use streams_core::sth::consts::{I_SRDOPT, I_SWROPT, RFILL, SNDHOLD};
use streams_core::sth::{IocArg, Part, SliceIo};
use streams_core::stream::Registry;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("plain");
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let size: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    let p = TestPipe::new().expect("pipe");
    let mut data = vec![7u8; size];
    // Reads take 4096 bytes, or a whole write when it is larger (else the pipe fills).
    let rlen = size.max(4096);
    let mut buf = vec![0u8; rlen];
    let mut got = 0usize;
    if mode == "hold" {
        // The bench's streams+H+w+F: write hold on the writer, read fill, 4096-byte reads.
        let r = Registry::new();
        p.end(0, |s| {
            s.strioctl(&r, I_SWROPT, IocArg::Int(i64::from(SNDHOLD)))
        })
        .expect("I_SWROPT");
        p.end(1, |s| {
            s.strioctl(&r, I_SRDOPT, IocArg::Int(i64::from(RFILL)))
        })
        .expect("I_SRDOPT");
    }
    for _ in 0..n {
        match mode {
            "plain" => {
                call::write(&p.call(0), &mut SliceIo(&mut data), size, true).expect("write");
                got += call::read(&p.call(1), &mut SliceIo(&mut buf), rlen, true).expect("read");
            }
            "hold" => {
                call::write(&p.call(0), &mut SliceIo(&mut data), size, true).expect("write");
                if let Ok(k) = call::read(&p.call(1), &mut SliceIo(&mut buf), 4096, true) {
                    got += k;
                }
            }
            "putmsg" => {
                let d = Part {
                    io: &mut SliceIo(&mut data),
                    len: i32::try_from(size).expect("size"),
                };
                call::putmsg(&p.call(0), None, Some(d), 0, 0, true).expect("putmsg");
                let b = Part {
                    io: &mut SliceIo(&mut buf),
                    len: i32::try_from(rlen).expect("rlen"),
                };
                let g = call::getmsg(&p.call(1), None, Some(b), 0, 0, true, |_| Ok(()));
                got += g.map(|g| g.data_len.max(0) as usize).expect("getmsg");
            }
            _ => panic!("mode"),
        }
    }
    println!("{mode}: {n} x {size} bytes, {got} read");
}
