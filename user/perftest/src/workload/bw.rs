//! lmbench's bw_pipe, as the LKML "larger pipes" thread ran it (seed 001): move 10 MB
//! (`--total`) through the channel in chunks of `-s` bytes (the thread's 2–32 KiB) from a
//! writer child to a reader child that reads `-s` bytes per call. The reader times the
//! transfer from its first read to the last byte (so fork and start-up are not counted, nor
//! the first read's bytes); the figure of merit is bytes/s. A transfer that takes longer than
//! `-t` × `-i` seconds is killed and the run fails.

use super::Workload;
use crate::csv::Row;
use crate::opts::Opts;
use crate::run::{cloexec_pipe, spawn, strip_os};
use std::io;
use std::os::fd::AsRawFd;
use std::time::Instant;
use streams::Stream;

fn writer(o: &Opts, s: &Stream) -> Result<String, String> {
    let buf = vec![0x5a_u8; o.size];
    let (mut left, mut writes) = (o.total, 0u64);
    let start = Instant::now();
    while left > 0 {
        let n = (o.size as u64).min(left) as usize;
        super::write_all(s, &buf[..n])?;
        left -= n as u64;
        writes += 1;
    }
    Ok(format!(
        "W {writes} {} {}\n",
        o.total,
        start.elapsed().as_secs_f64()
    ))
}

fn reader(o: &Opts, s: &Stream) -> Result<String, String> {
    let mut buf = vec![0u8; o.size];
    let (mut got, mut reads, mut first) = (0u64, 0u64, None::<(Instant, u64)>);
    while got < o.total {
        match s.read(&mut buf) {
            Ok(0) => return Err(format!("end of file after {got} of {} bytes", o.total)),
            Ok(n) => {
                got += n as u64;
                reads += 1;
                first.get_or_insert((Instant::now(), got));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("read(): {}", strip_os(&e))),
        }
    }
    let (t0, before) = first.unwrap_or((Instant::now(), got));
    // "R reads bytes-timed secs": the bytes after the first read, over the time since it.
    Ok(format!(
        "R {} {} {}\n",
        reads.saturating_sub(1),
        got - before,
        t0.elapsed().as_secs_f64()
    ))
}

/// Run it.
pub fn run(o: &Opts, warn: &mut dyn FnMut(String)) -> Result<Row, String> {
    let (rd, wr) = super::channel(o, warn)?;
    let (res_r, res_w) = cloexec_pipe()?;
    let (rd_fd, wr_fd) = (rd.raw(), wr.raw());
    let limit = o.time * f64::from(o.iterations);
    let pids = [
        spawn(res_w.as_raw_fd(), || {
            // SAFETY: the writer's end is not the reader's to keep open.
            unsafe { libc::close(wr_fd) };
            reader(o, &rd)
        })?,
        spawn(res_w.as_raw_fd(), || {
            // SAFETY: nor the reader's end the writer's.
            unsafe { libc::close(rd_fd) };
            writer(o, &wr)
        })?,
    ];
    drop((rd, wr, res_w));
    let text = super::wait_all(&pids, res_r, limit, "bw")?.text;
    let (_, writes, _, _) = super::totals(&text, "W");
    let (n, reads, bytes, secs) = super::totals(&text, "R");
    if n != 1 {
        return Err(format!("bw: no result from the reader: {text:?}"));
    }
    let mut row = super::row(Workload::Bw, o, writes, bytes as f64, secs, reads, bytes);
    // Chunks per second over the timed part, the reader's count of them.
    row.writes_per_sec = bytes as f64 / o.size as f64 / secs.max(f64::MIN_POSITIVE);
    row.delay_sec = if row.writes_per_sec > 0.0 {
        1.0 / row.writes_per_sec
    } else {
        0.0
    };
    Ok(row)
}
