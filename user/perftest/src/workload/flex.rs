//! pipeflex from the LKML "larger pipes" thread (seed 001): "a write process writes smaller
//! chunks continuously and the reader process generates a number between [0.5*r .. 1.5*r]
//! microseconds, and spends that time for computation after each pipe read. A parent process
//! clones 'c' child processes and 'c/2' pipes such that 2 processes share one pipe."
//!
//! Here: `--children` c (even) processes over c/2 channels, each made and sized as for the
//! other workloads; each writer writes `-s` byte chunks (the seed's `-s` in KiB) with blocking
//! writes, each reader reads up to `-s` bytes per call and then spins for a uniformly random
//! 0.5–1.5 × `--compute-us` µs (the seed's `-r`), for `-t` × `-i` seconds (the seed's `-t`).
//! At the end each writer stops, each reader drains without computing until end of file. The
//! figure of merit is the bytes the readers read in their measured time, per second, summed
//! over the pipes: how much data a pipe size lets through to a busy consumer.

use super::Workload;
use crate::csv::Row;
use crate::opts::Opts;
use crate::run::{cloexec_pipe, spawn, strip_os};
use std::io;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};
use streams::Stream;

/// xorshift64*: a small generator, seeded per reader.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [0.5 r, 1.5 r] microseconds.
    fn compute_time(&mut self, r_us: u64) -> Duration {
        let span = r_us.max(1);
        Duration::from_micros(r_us / 2 + self.next() % (span + 1))
    }
}

fn spin(d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

fn writer(o: &Opts, s: &Stream, secs: f64) -> Result<String, String> {
    let buf = vec![0x5a_u8; o.size];
    let start = Instant::now();
    let mut writes = 0u64;
    while start.elapsed().as_secs_f64() < secs {
        super::write_all(s, &buf)?;
        writes += 1;
    }
    Ok(format!(
        "W {writes} {} {}\n",
        writes * o.size as u64,
        start.elapsed().as_secs_f64()
    ))
}

fn reader(o: &Opts, s: &Stream, secs: f64, seed: u64) -> Result<String, String> {
    let mut buf = vec![0u8; o.size];
    let mut rng = Rng(seed | 1);
    let start = Instant::now();
    let (mut reads, mut bytes, mut elapsed) = (0u64, 0u64, None);
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if elapsed.is_none() {
                    reads += 1;
                    bytes += n as u64;
                    spin(rng.compute_time(o.compute_us));
                    let e = start.elapsed().as_secs_f64();
                    if e >= secs {
                        elapsed = Some(e);
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("read(): {}", strip_os(&e))),
        }
    }
    let secs = elapsed.unwrap_or_else(|| start.elapsed().as_secs_f64());
    Ok(format!("R {reads} {bytes} {secs}\n"))
}

/// Run it.
pub fn run(o: &Opts, warn: &mut dyn FnMut(String)) -> Result<Row, String> {
    let secs = o.time * f64::from(o.iterations);
    let pairs = (o.children / 2).max(1);
    let (res_r, res_w) = cloexec_pipe()?;
    let mut pids = Vec::new();
    let mut fail = None;
    for p in 0..pairs {
        let (rd, wr) = match super::channel(o, warn) {
            Ok(c) => c,
            Err(e) => {
                fail = Some(e);
                break;
            }
        };
        let (rd_fd, wr_fd) = (rd.raw(), wr.raw());
        let seed = (u64::from(std::process::id()) << 16) ^ u64::from(p) ^ 0x9e37_79b9_7f4a_7c15;
        for child in [
            spawn(res_w.as_raw_fd(), || {
                // SAFETY: the writer's end is not the reader's to keep open.
                unsafe { libc::close(wr_fd) };
                reader(o, &rd, secs, seed)
            }),
            spawn(res_w.as_raw_fd(), || {
                // SAFETY: nor the reader's end the writer's.
                unsafe { libc::close(rd_fd) };
                writer(o, &wr, secs)
            }),
        ] {
            match child {
                Ok(pid) => pids.push(pid),
                Err(e) => fail = Some(e),
            }
        }
        // The parent keeps no end: each reader must see end of file from its writer.
        drop((rd, wr));
        if fail.is_some() {
            break;
        }
    }
    drop(res_w);
    if let Some(e) = fail {
        for &p in &pids {
            // SAFETY: our own children.
            unsafe { libc::kill(p, libc::SIGKILL) };
            crate::run::wait(p);
        }
        return Err(e);
    }
    // Generous: the measured time, the drain, start-up under emulation.
    let text = super::wait_all(&pids, res_r, secs * 3.0 + 30.0, "flex")?.text;
    let (_, writes, _, _) = super::totals(&text, "W");
    let (n, reads, bytes, sum_secs) = super::totals(&text, "R");
    if n as u32 != pairs {
        return Err(format!("flex: {n} of {pairs} readers reported: {text:?}"));
    }
    let mean_secs = sum_secs / n as f64;
    Ok(super::row(
        Workload::Flex,
        o,
        writes,
        bytes as f64,
        mean_secs,
        reads,
        bytes,
    ))
}
