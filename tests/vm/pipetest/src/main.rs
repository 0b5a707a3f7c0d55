//! `pipetest`: pipe conformance in the test guest, for Linux pipes and STREAMS pipes.
//!
//! The POSIX cases ([`posix`]) are written once and run on both implementations
//! (`pipe2(2)` and libstreams' `s_pipe`, i.e. `/dev/streams/clone/pipe` + `I_PIPE`), so a
//! STREAMS pipe is held to exactly what a Linux pipe does where POSIX speaks. The STREAMS-only
//! cases ([`sonly`]) check the SVR4 behaviour on top (full duplex, messages, bands, modules,
//! M_FLUSH with `pipemod`). See `docs/pipes.md` for the behaviour ↔ case table.
//!
//! Output: `ok N name [impl]` / `not ok N name [impl]: why`, then `N passed, N failed`; exit
//! status 1 on any failure. Without the STREAMS pipe device every STREAMS case fails (the
//! suite is meant to pass only with the driver); `--linux-only` runs the Linux cases alone
//! (development). A case that runs longer than 120 s fails the whole run (watchdog).

mod posix;
mod sonly;
mod util;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use util::{Impl, R};

/// A case run on every implementation.
type Common = (&'static str, fn(Impl) -> R);
/// A STREAMS-only case.
type Only = (&'static str, fn() -> R);

const COMMON: &[Common] = &[
    (
        "PIPE_BUF writes from 4 forked writers are not interleaved",
        posix::pipe_buf_atomic,
    ),
    (
        "EOF after the last writer closes, after draining",
        posix::eof_after_last_writer,
    ),
    (
        "no reader: EPIPE (SIGPIPE ignored), SIGPIPE kills (default)",
        posix::epipe_and_sigpipe,
    ),
    (
        "O_NONBLOCK: read EAGAIN when empty, write EAGAIN when full",
        posix::nonblock_eagain,
    ),
    ("poll POLLIN/POLLOUT/POLLHUP/POLLERR", posix::poll_events),
    ("FIONREAD (and I_NREAD on STREAMS)", posix::fionread),
    ("fstat: S_ISFIFO on both ends", posix::fstat_fifo),
    ("isastream 0 (Linux) / 1 (STREAMS)", posix::isastream),
    (
        "blocked reader and blocked writer are woken",
        posix::blocking_woken,
    ),
    (
        "16 MiB transfer, odd sizes, checksum",
        posix::large_transfer,
    ),
];

const STREAMS_ONLY: &[Only] = &[
    ("full duplex: both ends read and write", sonly::full_duplex),
    (
        "message boundaries: putmsg/getmsg ctl+data, RMSGD",
        sonly::message_boundaries,
    ),
    (
        "bands: hipri, band 2 before band 0, getpmsg MSG_BAND",
        sonly::bands,
    ),
    (
        "I_PUSH/I_POP nullmod and pipemod on either end while data flows",
        sonly::push_pop_while_flowing,
    ),
    ("I_LIST/I_LOOK on each end", sonly::list_look),
    (
        "M_FLUSH across the pipe: FLUSHW needs pipemod (either end)",
        sonly::flush_pipemod,
    ),
    ("I_PIPE weld and its errors", sonly::i_pipe_weld),
];

/// Deadline of the running case (ms since start; 0 = none) and its label, for the watchdog.
static DEADLINE_MS: AtomicU64 = AtomicU64::new(0);
static CURRENT: Mutex<String> = Mutex::new(String::new());
const CASE_LIMIT: Duration = Duration::from_secs(120);

fn watchdog(start: Instant) {
    thread::spawn(move || loop {
        thread::sleep(Duration::from_millis(500));
        let d = DEADLINE_MS.load(Ordering::SeqCst);
        if d != 0 && start.elapsed().as_millis() as u64 > d {
            let name = CURRENT.lock().map(|s| s.clone()).unwrap_or_default();
            println!(
                "not ok {name}: timed out after {} s (hung?)",
                CASE_LIMIT.as_secs()
            );
            println!("pipetest aborted by the watchdog");
            std::process::exit(1);
        }
    });
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let linux_only = args.iter().any(|a| a == "--linux-only");
    if let Some(bad) = args.iter().find(|a| *a != "--linux-only") {
        eprintln!("usage: pipetest [--linux-only]  (unknown argument {bad:?})");
        std::process::exit(2);
    }
    let impls: &[Impl] = if linux_only {
        &[Impl::Linux]
    } else {
        &[Impl::Linux, Impl::Streams]
    };
    let mut runs: Vec<(String, Box<dyn Fn() -> R>)> = Vec::new();
    for &(name, f) in COMMON {
        for &im in impls {
            runs.push((format!("{name} [{}]", im.name()), Box::new(move || f(im))));
        }
    }
    if !linux_only {
        for &(name, f) in STREAMS_ONLY {
            runs.push((format!("{name} [streams]"), Box::new(f)));
        }
    }
    let start = Instant::now();
    watchdog(start);
    println!("1..{}", runs.len());
    if linux_only {
        println!("# --linux-only: STREAMS pipe cases not run");
    } else if !std::path::Path::new(streams::PIPE_DEVICE).exists() {
        println!(
            "# {} is absent: every STREAMS case will fail",
            streams::PIPE_DEVICE
        );
    }
    let (mut pass, mut fail) = (0, 0);
    for (i, (name, f)) in runs.iter().enumerate() {
        let label = format!("{} {name}", i + 1);
        if let Ok(mut c) = CURRENT.lock() {
            c.clone_from(&label);
        }
        let limit = start.elapsed() + CASE_LIMIT;
        DEADLINE_MS.store(limit.as_millis() as u64, Ordering::SeqCst);
        let t0 = Instant::now();
        let r = f();
        DEADLINE_MS.store(0, Ordering::SeqCst);
        let ms = t0.elapsed().as_millis();
        match r {
            Ok(()) => {
                pass += 1;
                println!("ok {label} ({ms} ms)");
            }
            Err(why) => {
                fail += 1;
                println!("not ok {label}: {why}");
            }
        }
    }
    println!("{pass} passed, {fail} failed");
    std::process::exit(i32::from(fail != 0));
}
