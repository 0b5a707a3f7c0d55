//! Instruction-count harness for the pipe data path on the host (run under callgrind):
//! `cargo build --release -p streams_pipe --example pipecost` then
//! `valgrind --tool=callgrind target/release/examples/pipecost MODE N [SIZE]`, MODE `plain`
//! (write/read), `hold` (write hold on the writer, read fill and 4096-byte reads on the reader,
//! a read tried after each write, as perftest's non-blocking reader does) or `putmsg` (putmsg
//! of a data part and no control part, then getmsg of the data part into 4096 bytes with the
//! control part not processed, as `perftest --putmsg` does), `putmsgctl` (the same with a
//! 40-byte control part, a T_UNITDATA_REQ's size, sent and retrieved), `burst` (write BURST messages,
//! then read them back one read(2) per message: the steady state of a writer that runs ahead
//! of its reader, whose Stream head queue holds a backlog) or `burstmsg` (the same with
//! putmsg and getmsg), or `backlog` (BURST messages wait at the reading head first; then
//! each iteration writes one and reads SIZE bytes, one message: the reader's enter puts the
//! new write up behind the backlog, as in the guest's pipe benchmark). For the burst modes N counts messages and BURST is the fourth argument
//! (default 16), so the instructions per message compare with `plain`; a burst ends early
//! where flow control refuses the writer (4096-byte messages: after 2). With `NODIRECT=1` in
//! the environment the reading end gets write hold (SNDHOLD), which only keeps its reads from
//! taking straight from the inbound list (`HeadProcs::direct_ok`): each enter then puts up
//! what it finds (in `plain`, a run of one message). In `plain` and `putmsg` a SIZE above
//! 4096 is read or received SIZE bytes at a time.
//! With `COUNTS=1` in the environment (not under callgrind: it adds a lock hold per
//! iteration) `hold` also prints, per 4096 bytes delivered, the puts across into the reading
//! end (`module_stat` of its twist read queue), the reads that returned data (each one a
//! reader wakeup in the bench, whose reader drains the head and sleeps in poll(2) until the
//! next message arrives) and the hold timer arms at the writing end (one per held message).
//! `xcpu` is `burst` on two threads, so on two slots of the message block cache (two CPUs in
//! the kernel): the main thread writes BURST messages, then a second thread reads them, in
//! turn (the blocks one thread allocates the other frees, as a pipe's writer and reader on two
//! CPUs). With `CACHESTATS=1` in the environment every mode ends by printing the block cache's
//! counters (`cache::stats`).
//! Each iteration writes at end 0 and reads at end 1 of a `TestPipe`, through the same core
//! code the kernel runs (the system call's platform half `sth::call`, Stream head, engine,
//! perimeters); only the platform (user copies, locks, waits) differs.
use pipe::tests::TestPipe;
use std::sync::mpsc::sync_channel;

use streams_core::errno::Errno;
use streams_core::msg::cache;
use streams_core::sth::call;
use streams_core::sth::consts::{I_SRDOPT, I_SWROPT, RFILL, SNDHOLD};
use streams_core::sth::Stream;
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
    let burst: usize = args
        .get(4)
        .and_then(|s| s.parse().ok())
        .unwrap_or(16)
        .max(1);
    let mut got = 0usize;
    let counts = std::env::var_os("COUNTS").is_some();
    let (mut reads, mut arms) = (0usize, 0usize);
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
    if std::env::var_os("NODIRECT").is_some() {
        // Write hold at the reading end: nothing is written there, its reads just stop taking
        // directly.
        let r = Registry::new();
        p.end(1, |s| {
            s.strioctl(&r, I_SWROPT, IocArg::Int(i64::from(SNDHOLD)))
        })
        .expect("I_SWROPT");
    }
    let cachestats = std::env::var_os("CACHESTATS").is_some();
    let print_stats = || {
        if cachestats {
            for (name, v) in cache::stats().fields() {
                println!("cache {name}: {v}");
            }
        }
    };
    if mode == "xcpu" {
        // Hand over in turn: the writer sends how many it wrote, the reader answers when it
        // has read them (0 ends the reader).
        let (to_reader, written_rx) = sync_channel::<usize>(0);
        let (to_writer, done_rx) = sync_channel::<usize>(0);
        let got = std::thread::scope(|sc| {
            let p = &p;
            let reader = sc.spawn(move || {
                let mut buf = vec![0u8; rlen];
                let mut got = 0usize;
                while let Ok(k) = written_rx.recv() {
                    if k == 0 {
                        break;
                    }
                    for _ in 0..k {
                        got += call::read(&p.call(1), &mut SliceIo(&mut buf), size, true)
                            .expect("read");
                    }
                    to_writer.send(k).expect("writer");
                }
                got
            });
            let mut moved = 0;
            while moved < n {
                let mut written = 0;
                for _ in 0..burst.min(n - moved) {
                    match call::write(&p.call(0), &mut SliceIo(&mut data), size, true) {
                        Ok(_) => written += 1,
                        Err(e) if e == Errno::EAGAIN => break,
                        Err(e) => panic!("write: {e:?}"),
                    }
                }
                assert!(written > 0, "the reader left the pipe full");
                moved += written;
                to_reader.send(written).expect("reader");
                done_rx.recv().expect("reader");
            }
            to_reader.send(0).expect("reader");
            reader.join().expect("reader")
        });
        println!("{mode}: {n} x {size} bytes in bursts of {burst} on two threads, {got} read");
        print_stats();
        return;
    }
    if mode == "burst" || mode == "burstmsg" {
        let msg = mode == "burstmsg";
        let mut moved = 0;
        while moved < n {
            // A write refused by flow control (EAGAIN: large messages fill the reader's
            // high-water mark before BURST) ends the burst, as the bench's writer waits there.
            let mut written = 0;
            for _ in 0..burst.min(n - moved) {
                let r = if msg {
                    let d = Part {
                        io: &mut SliceIo(&mut data),
                        len: i32::try_from(size).expect("size"),
                    };
                    call::putmsg(&p.call(0), None, Some(d), 0, 0, true).map(|_| ())
                } else {
                    call::write(&p.call(0), &mut SliceIo(&mut data), size, true).map(|_| ())
                };
                match r {
                    Ok(()) => written += 1,
                    Err(e) if e == Errno::EAGAIN => break,
                    Err(e) => panic!("write: {e:?}"),
                }
            }
            moved += written;
            for _ in 0..written {
                // Reads of SIZE bytes: each takes one message, as the bench's 1-byte reads do.
                if msg {
                    let b = Part {
                        io: &mut SliceIo(&mut buf),
                        len: i32::try_from(size).expect("size"),
                    };
                    let g = call::getmsg(&p.call(1), None, Some(b), 0, 0, true, |_| Ok(()));
                    got += g.map(|g| g.data_len.max(0) as usize).expect("getmsg");
                } else {
                    got +=
                        call::read(&p.call(1), &mut SliceIo(&mut buf), size, true).expect("read");
                }
            }
        }
        println!("{mode}: {n} x {size} bytes in bursts of {burst}, {got} read");
        print_stats();
        return;
    }
    if mode == "backlog" {
        // The steady state of a writer that runs ahead: BURST messages wait at the reading
        // head before the loop starts, so each read's enter finds the new write on the
        // inbound list behind a backlog (no direct take: it puts the write up) and the read
        // takes the oldest message from the head's queue.
        for _ in 0..burst {
            call::write(&p.call(0), &mut SliceIo(&mut data), size, true).expect("write");
            p.end(1, |_| ());
        }
    }
    for _ in 0..n {
        match mode {
            "plain" | "backlog" => {
                call::write(&p.call(0), &mut SliceIo(&mut data), size, true).expect("write");
                let len = if mode == "plain" { rlen } else { size };
                got += call::read(&p.call(1), &mut SliceIo(&mut buf), len, true).expect("read");
            }
            "hold" => {
                call::write(&p.call(0), &mut SliceIo(&mut data), size, true).expect("write");
                if let Ok(k) = call::read(&p.call(1), &mut SliceIo(&mut buf), 4096, true) {
                    got += k;
                    reads += 1;
                }
                if counts {
                    arms += usize::from(p.end(0, |s| s.sth_take_events().hold_timer));
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
            "putmsgctl" => {
                // As `putmsg` with a control part the size of a T_UNITDATA_REQ with a
                // sockaddr_in (24 + 16 bytes), retrieved into 64 bytes.
                let mut ctl = [7u8; 40];
                let mut cbuf = [0u8; 64];
                let c = Part {
                    io: &mut SliceIo(&mut ctl),
                    len: 40,
                };
                let d = Part {
                    io: &mut SliceIo(&mut data),
                    len: i32::try_from(size).expect("size"),
                };
                call::putmsg(&p.call(0), Some(c), Some(d), 0, 0, true).expect("putmsg");
                let cb = Part {
                    io: &mut SliceIo(&mut cbuf),
                    len: 64,
                };
                let b = Part {
                    io: &mut SliceIo(&mut buf),
                    len: i32::try_from(rlen).expect("rlen"),
                };
                let g = call::getmsg(&p.call(1), Some(cb), Some(b), 0, 0, true, |_| Ok(()));
                got += g.map(|g| g.data_len.max(0) as usize).expect("getmsg");
            }
            _ => panic!("mode"),
        }
    }
    println!("{mode}: {n} x {size} bytes, {got} read");
    print_stats();
    if counts {
        let puts = p.end(1, |s: &mut Stream| {
            pipe::twist_rq(s)
                .and_then(|q| s.mstat(q))
                .map_or(0, |m| m.ms_pcnt)
        });
        let per = |x: usize| x as f64 * 4096.0 / got.max(1) as f64;
        println!(
            "per 4096 bytes read: {:.2} puts across, {:.2} reads with data, {:.2} hold timer arms",
            per(puts),
            per(reads),
            per(arms)
        );
    }
}
