//! The workloads besides the LfS writer/reader pair (`perftest --workload NAME`), each giving
//! one CSV row in the same columns ([`crate::csv::Row`]):
//!
//! * [`syscall`]: the system call floor, getppid(2) in a loop; `writes` are calls.
//! * [`devnull`]: the write floor, write(2) of `-s` bytes to /dev/null in a loop; `writes`
//!   are calls.
//! * [`bw`]: lmbench's bw_pipe as the LKML "larger pipes" thread used it (seed 001): a writer
//!   moves `--total` bytes (10 MB) through the channel in `-s` byte chunks to a reader reading
//!   `-s` bytes per call; the figure of merit is bytes/s.
//! * [`grep`]: the same thread's `cat 50mbfile | grep "$$$$"`: `cat FILE` and `grep -F
//!   PATTERN` (the system's programs, busybox in the guest) exec'd with the channel as cat's
//!   stdout and grep's stdin; the figure is the file's bytes over the wall time.
//! * [`flex`]: the thread's pipeflex: `--children` processes over half as many pipes, each
//!   writer writing `-s` byte chunks continuously, each reader reading up to `-s` bytes and
//!   then computing for a random 0.5–1.5 × `--compute-us` µs; bytes read per second.
//!
//! The channel is made exactly as for the writer/reader pair ([`crate::run::open_channel`]:
//! pipe(2), or a STREAMS pipe through libstreams, the call `libstreams_pipe.so` makes for an
//! interposed pipe(2)), sized by `--pipe-size` ([`crate::run::WaterMarks`]), and blocking.

pub mod bw;
pub mod devnull;
pub mod flex;
pub mod grep;
pub mod syscall;

use crate::csv::Row;
use crate::opts::Opts;
use crate::run::{open_channel, setup};
use std::fmt;
use std::io;
use streams::Stream;

/// A workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// getppid(2) in a loop.
    Syscall,
    /// write(2) to /dev/null in a loop.
    Devnull,
    /// bw_pipe.
    Bw,
    /// cat | grep.
    Grep,
    /// pipeflex.
    Flex,
}

impl Workload {
    /// Parse a workload name.
    pub fn parse(s: &str) -> Option<Workload> {
        match s {
            "syscall" => Some(Workload::Syscall),
            "devnull" => Some(Workload::Devnull),
            "bw" | "bw_pipe" => Some(Workload::Bw),
            "grep" => Some(Workload::Grep),
            "flex" | "pipeflex" => Some(Workload::Flex),
            _ => None,
        }
    }

    /// clap's value parser.
    pub fn parse_arg(s: &str) -> Result<Workload, String> {
        Workload::parse(s)
            .ok_or_else(|| format!("unknown workload {s:?} (syscall, devnull, bw, grep, flex)"))
    }

    /// The name, also the prefix of its labels.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Syscall => "syscall",
            Workload::Devnull => "devnull",
            Workload::Bw => "bw",
            Workload::Grep => "grep",
            Workload::Flex => "flex",
        }
    }

    /// The default label: `syscall` or `devnull`, else `NAME-KIND` and `-psSIZE` with
    /// `--pipe-size` (`bw-streams-ps16k`).
    pub fn label(self, o: &Opts) -> String {
        if !self.uses_channel() {
            return self.name().into();
        }
        let mut s = format!("{}-{}", self.name(), o.kind);
        if self == Workload::Grep && o.shell.is_some() {
            s.push_str("-sh");
        }
        if let Some(n) = o.pipe_size {
            s.push_str("-ps");
            s.push_str(&size_tag(n));
        }
        s
    }

    /// Whether it runs over the channel (the floors do not open one).
    pub fn uses_channel(self) -> bool {
        !matches!(self, Workload::Syscall | Workload::Devnull)
    }

    /// The CSV `size` of a run: the chunk size (`-s`) for bw, flex and the write floor, the
    /// pipe size for grep (its sweep variable; 0 = the default), 0 for the system call floor.
    pub fn row_size(self, o: &Opts) -> usize {
        match self {
            Workload::Syscall => 0,
            Workload::Devnull | Workload::Bw | Workload::Flex => o.size,
            Workload::Grep => o.pipe_size.map_or(0, |n| n as usize),
        }
    }

    /// Run it: one CSV row. Warnings go to `warn`.
    pub fn run(self, o: &Opts, warn: &mut dyn FnMut(String)) -> Result<Row, String> {
        match self {
            Workload::Syscall => Ok(syscall::run(o)),
            Workload::Devnull => devnull::run(o),
            Workload::Bw => bw::run(o, warn),
            Workload::Grep => grep::run(o, warn),
            Workload::Flex => flex::run(o, warn),
        }
    }
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `4k` for 4096, `64k` for 65536, else the bytes.
pub fn size_tag(n: u64) -> String {
    if n >= 1024 && n.is_multiple_of(1024) {
        format!("{}k", n / 1024)
    } else {
        n.to_string()
    }
}

/// The channel of a workload: opened, sized and set up as for the writer/reader pair, but
/// always blocking (cat, grep, bw_pipe and pipeflex use blocking pipes).
pub(crate) fn channel(o: &Opts, warn: &mut dyn FnMut(String)) -> Result<(Stream, Stream), String> {
    let (rd, wr) = open_channel(o.kind)?;
    let blocking = Opts {
        blocking: true,
        ..o.clone()
    };
    setup(&blocking, &rd, &wr, warn)?;
    Ok((rd, wr))
}

/// A row of workload `w` from totals: `units` operations (writes, calls, transfers) and
/// `bytes` moved in `secs`; `reads`/`read_bytes` as counted by the reader side.
pub(crate) fn row(
    w: Workload,
    o: &Opts,
    units: u64,
    bytes: f64,
    secs: f64,
    reads: u64,
    read_bytes: u64,
) -> Row {
    let per = |n: f64| if secs > 0.0 { n / secs } else { 0.0 };
    let rate = per(units as f64);
    Row {
        imp: o.impl_label(),
        size: w.row_size(o),
        seconds: secs,
        writes: units,
        writes_per_sec: rate,
        bytes_per_sec: per(bytes),
        delay_sec: if rate > 0.0 { 1.0 / rate } else { 0.0 },
        reads,
        read_bytes,
        reads_per_sec: per(reads as f64),
        lost: None,
        reordered: None,
    }
}

/// Write all of `buf` (a blocking write may return short, e.g. after a signal).
pub(crate) fn write_all(s: &Stream, mut buf: &[u8]) -> Result<(), String> {
    while !buf.is_empty() {
        match s.write(buf) {
            Ok(0) => return Err("write(): wrote nothing".into()),
            Ok(n) => buf = &buf[n..],
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("write(): {}", crate::run::strip_os(&e))),
        }
    }
    Ok(())
}

/// Sum the children's result lines `TAG a b secs` for `tag`: (count, a, b, sum of secs).
pub(crate) fn totals(text: &str, tag: &str) -> (usize, u64, u64, f64) {
    let mut t = (0, 0, 0, 0.0);
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.first() != Some(&tag) || f.len() < 4 {
            continue;
        }
        t.0 += 1;
        t.1 += f[1].parse::<u64>().unwrap_or(0);
        t.2 += f[2].parse::<u64>().unwrap_or(0);
        t.3 += f[3].parse::<f64>().unwrap_or(0.0);
    }
    t
}

/// What [`wait_all`] collected.
pub(crate) struct Waited {
    /// The children's result lines.
    pub(crate) text: String,
    /// Each child's wait status, in the order of the pids.
    pub(crate) status: Vec<libc::c_int>,
}

/// Wait for `pids` for at most `limit` seconds (then kill them all and fail, naming `what`);
/// read their result lines from `res_r` (every write end must be closed in the parent).
/// Fails if a child did not exit 0 unless `any_status`.
pub(crate) fn wait_status(
    pids: &[libc::pid_t],
    res_r: std::os::fd::OwnedFd,
    limit: f64,
    what: &str,
) -> Result<Waited, String> {
    crate::run::start_timer(limit)?;
    let mut status = vec![0; pids.len()];
    let mut timed_out = false;
    for (i, &pid) in pids.iter().enumerate() {
        loop {
            let mut st = 0;
            // SAFETY: waiting for our own child.
            let r = unsafe { libc::waitpid(pid, &mut st, 0) };
            if r == pid {
                status[i] = st;
                break;
            }
            let e = io::Error::last_os_error();
            if r < 0 && e.kind() == io::ErrorKind::Interrupted && crate::run::timer_fired() {
                if !timed_out {
                    timed_out = true;
                    for &p in pids {
                        // SAFETY: kill has no memory-safety preconditions. The pids are our
                        // children; one already reaped gets ESRCH (or, in theory, a reused pid
                        // would be hit: this failure path accepts that).
                        unsafe { libc::kill(p, libc::SIGKILL) };
                    }
                }
                continue;
            }
            if r < 0 && e.kind() != io::ErrorKind::Interrupted {
                crate::run::stop_timer();
                return Err(format!("waitpid(): {}", crate::run::strip_os(&e)));
            }
        }
    }
    crate::run::stop_timer();
    let mut text = String::new();
    use std::io::Read;
    let _ = std::fs::File::from(res_r).read_to_string(&mut text);
    if timed_out {
        return Err(format!(
            "{what}: did not finish in {limit} s (-t x -i); killed"
        ));
    }
    Ok(Waited { text, status })
}

/// [`wait_status`], every child having to exit 0.
pub(crate) fn wait_all(
    pids: &[libc::pid_t],
    res_r: std::os::fd::OwnedFd,
    limit: f64,
    what: &str,
) -> Result<Waited, String> {
    let w = wait_status(pids, res_r, limit, what)?;
    if w.status
        .iter()
        .any(|&st| !(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0))
    {
        return Err(format!("{what}: a child failed"));
    }
    Ok(w)
}
