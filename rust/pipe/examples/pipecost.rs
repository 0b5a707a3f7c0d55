//! Instruction-count harness for the pipe data path on the host (run under callgrind):
//! `cargo build --release -p streams_pipe --example pipecost` then
//! `valgrind --tool=callgrind target/release/examples/pipecost MODE N`.
//! Each iteration writes at end 0 and reads at end 1 of a `TestPipe`, through the same core
//! code the kernel runs (Stream head, engine, perimeters); only the platform differs.
use pipe::tests::TestPipe;
use streams_core::msg::{Msg, M_DATA};
use streams_core::sth::fast::Taken;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("plain");
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let size: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    let p = TestPipe::new().expect("pipe");
    let data = vec![7u8; size];
    let mut got = 0usize;
    for _ in 0..n {
        match mode {
            "plain" => {
                let mut slot = Some(Msg::from_bytes(M_DATA, &data).expect("msg"));
                p.end(0, |s| s.strwrite_prebuilt(&mut slot, true))
                    .expect("write");
                let mut t = Taken::new();
                got += p
                    .end(1, |s| s.strread_take(4096, true, &mut t))
                    .expect("read");
            }
            _ => panic!("mode"),
        }
    }
    println!("{mode}: {n} x {size} bytes, {got} read");
}
