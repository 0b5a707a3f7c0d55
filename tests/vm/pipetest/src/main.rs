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
//! (development). A case that runs longer than 150 s fails (and the run goes on).
//! `pipetest --isastream FD` prints isastream(FD) (1/0) and exits 0 only for a Stream: the
//! pipeline suite asks it whether the shell's pipes really are STREAMS pipes.

mod posix;
mod sonly;
mod util;

use std::sync::{mpsc, Arc};
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
    ("4 MiB transfer, odd sizes, checksum", posix::large_transfer),
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

/// How long one case may take (the guest runs under TCG with KASAN: generous).
const CASE_LIMIT: Duration = Duration::from_secs(150);

/// Run `f` on its own thread; `Err` if it panics or outlives [`CASE_LIMIT`]. A hung case
/// (a system call that never returns) is left behind, blocked, and the next case runs:
/// one kernel hang costs one case, not the rest of the report. Process exit ends it.
fn run_case(f: Arc<dyn Fn() -> R + Send + Sync>) -> R {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let r = f();
        let _ = tx.send(r);
    });
    match rx.recv_timeout(CASE_LIMIT) {
        Ok(r) => r,
        Err(mpsc::RecvTimeoutError::Timeout) => Err(format!(
            "timed out after {} s (a system call hung; left blocked)",
            CASE_LIMIT.as_secs()
        )),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err("the case panicked".to_string()),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--isastream") {
        // For shell tests (pipeline suite): is this inherited descriptor a Stream?
        let fd = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(0);
        let r = streams::ffi::isastream(fd);
        println!("{r}");
        std::process::exit(i32::from(r != 1));
    }
    let linux_only = args.iter().any(|a| a == "--linux-only");
    if let Some(bad) = args.iter().find(|a| *a != "--linux-only") {
        eprintln!("usage: pipetest [--linux-only] | --isastream FD  (unknown argument {bad:?})");
        std::process::exit(2);
    }
    let impls: &[Impl] = if linux_only {
        &[Impl::Linux]
    } else {
        &[Impl::Linux, Impl::Streams]
    };
    type Run = (String, Arc<dyn Fn() -> R + Send + Sync>);
    let mut runs: Vec<Run> = Vec::new();
    for &(name, f) in COMMON {
        for &im in impls {
            runs.push((format!("{name} [{}]", im.name()), Arc::new(move || f(im))));
        }
    }
    if !linux_only {
        for &(name, f) in STREAMS_ONLY {
            runs.push((format!("{name} [streams]"), Arc::new(f)));
        }
    }
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
        let t0 = Instant::now();
        let r = run_case(f.clone());
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
